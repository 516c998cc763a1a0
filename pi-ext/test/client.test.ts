// The core connection against a fake core on a real Unix socket: handshake, registration,
// requests (the role requests too), deliveries arriving in the same chunk as `registered`, reconnect and
// re-registration after the core goes away, and the refusals that stop or slow retries.

import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";

import { CoreClient, CoreError, NotConnectedError, type CoreClientOptions, type Phase, type Problem } from "../client.ts";
import { PROTOCOL_VERSION, type Delivery, type Pairing, type PairingEventMsg, type Registration, type ServerMsg, type Worker } from "../wire.ts";
import { delivery, FakeCore, sessionInfo } from "./fake-core.ts";
import { ended, pairing } from "./pairings.ts";
import { workerRecord as workerRecordFromFixture } from "./worker-fixtures.ts";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Harness {
  core: FakeCore;
  client: CoreClient;
  deliveries: Array<{ storeId: string; delivery: Delivery }>;
  problems: Problem[];
  phases: Phase[];
  registrations: number;
}

async function harness(opts: { listen?: boolean; registration?: () => Registration; client?: Partial<CoreClientOptions> } = {}): Promise<Harness> {
  const core = new FakeCore();
  cleanups.push(() => core.dispose());
  if (opts.listen ?? true) await core.listen();
  const h: Harness = { core, client: undefined as never, deliveries: [], problems: [], phases: [], registrations: 0 };
  const client = new CoreClient({
    socketPath: core.socketPath,
    clientName: "shepherd-pi-ext test",
    registration: () => {
      h.registrations++;
      return opts.registration?.() ?? { session_id: "sess-1", cwd: "/tmp", name: "fix-login", status: "idle", role: "lead" };
    },
    onDeliver: (storeId, d) => h.deliveries.push({ storeId, delivery: d }),
    onProblem: (p) => h.problems.push(p),
    onPhase: (p) => h.phases.push(p),
    initialBackoffMs: 10,
    maxBackoffMs: 40,
    handshakeTimeoutMs: 2000,
    ...opts.client,
  });
  h.client = client;
  cleanups.push(() => client.stop());
  return h;
}

async function until(predicate: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("CoreClient", () => {
  test("says hello with the protocol version as a pi client, then registers", async () => {
    const h = await harness();
    h.client.start();
    await until(() => h.client.ready);
    const [hello, register] = h.core.all;
    assert.deepEqual(hello, { type: "hello", id: 1, protocol: PROTOCOL_VERSION, client: "pi", client_name: "shepherd-pi-ext test" });
    assert.deepEqual(register, {
      type: "register",
      id: 2,
      session: { session_id: "sess-1", cwd: "/tmp", name: "fix-login", status: "idle", role: "lead" },
    });
    assert.equal(h.client.info?.storeId, "store-1");
    assert.equal(h.client.session?.id, "sess-1");
    assert.deepEqual(h.phases.slice(0, 4), ["connecting", "handshaking", "registering", "ready"]);
  });

  test("registered hands over the session's pairings; pairing events reach the extension", async () => {
    const h = await harness();
    const got: { pairings: Pairing[][]; events: PairingEventMsg[] } = { pairings: [], events: [] };
    const client = new CoreClient({
      socketPath: h.core.socketPath,
      clientName: "test",
      registration: () => ({ session_id: "sess-1", cwd: "/tmp" }),
      onDeliver: () => undefined,
      onRegistered: (_info, _session, _pending, pairings) => got.pairings.push(pairings),
      onPairingEvent: (e) => got.events.push(e),
    });
    cleanups.push(() => client.stop());
    h.core.pairings = [pairing()];
    client.start();
    await until(() => client.ready);
    assert.deepEqual(got.pairings, [[pairing()]]);
    const conn = h.core.registered();
    assert.ok(conn !== undefined);
    const event: PairingEventMsg = { type: "pairing_event", change: "ended", pairing: ended(pairing(), "done", "supervisor", "ok"), verdict: null, by: "watch-login" };
    h.core.send(conn, event);
    await until(() => got.events.length === 1);
    assert.deepEqual(got.events, [event]);
  });

  test("pending deliveries that arrive in the same chunk as `registered` are all handed over", async () => {
    const h = await harness();
    h.core.pending = [delivery(40, "one"), delivery(41, "two"), delivery(42, "three")];
    h.client.start();
    await until(() => h.deliveries.length === 3);
    assert.deepEqual(
      h.deliveries.map((d) => [d.storeId, d.delivery.id]),
      [
        ["store-1", 40],
        ["store-1", 41],
        ["store-1", 42],
      ],
    );
  });

  test("requests: ask, report, update, open asks; errors become CoreError", async () => {
    const h = await harness();
    h.client.start();
    await until(() => h.client.ready);
    const ask = await h.client.ask("Squash?", ["squash", "keep"], "3 commits");
    assert.equal(ask.question, "Squash?");
    assert.deepEqual(h.core.all.at(-1), { type: "ask", id: 3, question: "Squash?", options: ["squash", "keep"], details: "3 commits" });
    await h.client.ask("Plain?", [], null);
    assert.deepEqual(h.core.all.at(-1), { type: "ask", id: 4, question: "Plain?" }, "empty options and null details are left out");
    const report = await h.client.report("tests pass");
    assert.equal(report.text, "tests pass");
    await h.client.update({ status: "tool:bash", context: { tokens: 5, window: 10, percent: 50 } });
    assert.deepEqual(h.core.all.at(-1), { type: "update", id: 6, status: "tool:bash", context: { tokens: 5, window: 10, percent: 50 } });
    const open = await h.client.openAsks();
    assert.deepEqual(
      open.map((a) => a.question),
      ["Squash?", "Plain?"],
    );
    h.core.responder = (msg) =>
      msg.type === "report" ? [{ type: "error", id: msg.id, code: "invalid_argument", message: "empty text", details: null }] : undefined;
    await assert.rejects(h.client.report(""), (e: unknown) => e instanceof CoreError && e.code === "invalid_argument");
    assert.ok(h.client.ready, "a refused request keeps the connection");
  });

  test("role requests: each one's frame, and its reply read back", async () => {
    const h = await harness();
    h.client.start();
    await until(() => h.client.ready);
    const me = sessionInfo("sess-1", "fix-login");
    const lease = { role: "manager" as const, repo_id: "/src/app/.git", project: "app", session_id: "sess-1", session_name: "app", connected: true, since: 1 };
    const boss = { to: "manager" as const, session_id: "mgr-1", session_name: "app" };
    const sent = { message_id: 9, session_id: "peer-1", session_name: "peer", connected: false };
    const opened = { id: 12, session_id: "sess-1", session_name: "fix-login", question: "Rebase?", options: [], details: null, state: "open" as const, answer: null, answered_by: null, created_at: 1, answered_at: null };
    h.core.responder = (msg): ServerMsg[] | undefined => {
      switch (msg.type) {
        case "set_role":
          return [{ type: "role_set", id: msg.id, session: { ...me, role: msg.role }, previous: "lead", lease }];
        case "list_roles":
          return [{ type: "roles", id: msg.id, leases: [lease] }];
        case "message_supervisor":
          return [{ type: "routed", id: msg.id, to: boss, message_id: 52, report_id: null, connected: true }];
        case "ask_supervisor":
          return [{ type: "asked", id: msg.id, ask: { ...opened, to: { role: "manager", repo_id: "/src/app/.git", project: "app", session_id: "mgr-1", session_name: "app" } } }];
        case "list_staff":
          return [{ type: "staff", id: msg.id, members: [{ session: me, reports_to: boss }] }];
        case "inspect_staff":
          return [{ type: "staff_view", id: msg.id, view: { session_id: msg.session, session_name: "w", text: "did things", entries: 3 } }];
        case "list_peers":
          return [{ type: "sessions", id: msg.id, sessions: [me] }];
        case "message_staff":
        case "message_peer":
          return [{ type: "sent", id: msg.id, ...sent }];
        case "answer":
          return [{ type: "answered", id: msg.id, ask: { ...opened, state: "answered", answer: msg.text } }];
        default:
          return undefined;
      }
    };
    const set = await h.client.setRole("manager");
    assert.equal(set.session.role, "manager");
    assert.equal(h.client.session?.role, "manager", "the client's picture of the session follows");
    assert.deepEqual(h.core.all.at(-1), { type: "set_role", id: 3, role: "manager" });
    assert.deepEqual(await h.client.listRoles(), [lease]);
    assert.deepEqual(await h.client.messageSupervisor("db needed"), { to: boss, messageId: 52, reportId: null, connected: true });
    assert.deepEqual(h.core.all.at(-1), { type: "message_supervisor", id: 5, text: "db needed" });
    const ask = await h.client.askSupervisor("Rebase?", [], null, "ask:k1");
    assert.equal(ask.to?.session_id, "mgr-1");
    assert.deepEqual(h.core.all.at(-1), { type: "ask_supervisor", id: 6, question: "Rebase?", key: "ask:k1" });
    assert.equal((await h.client.listStaff()).members[0]?.reports_to.to, "manager");
    assert.equal((await h.client.inspectStaff("w-1")).text, "did things");
    assert.deepEqual(h.core.all.at(-1), { type: "inspect_staff", id: 8, session: "w-1" });
    assert.deepEqual(await h.client.messageStaff("w-1", "stop"), sent);
    assert.deepEqual(h.core.all.at(-1), { type: "message_staff", id: 9, session: "w-1", text: "stop" });
    assert.equal((await h.client.listPeers()).length, 1);
    assert.deepEqual(await h.client.messagePeer("peer-1", "hi"), sent);
    assert.deepEqual(h.core.all.at(-1), { type: "message_peer", id: 11, session: "peer-1", text: "hi" });
    assert.equal((await h.client.answer(12, "rebase")).answer, "rebase");
    assert.deepEqual(h.core.all.at(-1), { type: "answer", id: 12, ask: 12, text: "rebase" });
    h.core.responder = (msg) =>
      msg.type === "set_role"
        ? [{ type: "error", id: msg.id, code: "role_refused", message: "held by x", details: { reason: "held", holder: { id: "x", name: "x" } } }]
        : undefined;
    await assert.rejects(h.client.setRole("chief"), (e: unknown) => e instanceof CoreError && e.code === "role_refused" && e.coreMessage === "held by x");
  });

  test("managed workers: register with the launch nonce, the worker record handed over, each request's frame and reply", async () => {
    const w = workerRecordFromFixture();
    let registeredWorker: Worker | undefined;
    const h = await harness({
      registration: () => ({ session_id: w.session_id, cwd: "/tmp", launch: "nonce-1" }),
      client: { onRegistered: (_info, _session, _pending, _pairings, worker) => (registeredWorker = worker) },
    });
    const me = sessionInfo(w.session_id, "scout-1");
    const ask = { id: 12, session_id: w.session_id, session_name: "scout-1", question: "CLI?", options: [], details: null, state: "open" as const, answer: null, answered_by: null, created_at: 1, answered_at: null, to: { role: "lead" as const, repo_id: null, project: null, session_id: "owner", session_name: "app", worker: 7 } };
    const def = { name: "scout", description: "", source: "bundled" as const, path: null, model: null, thinking: null, tools: null, exclude_tools: [], agents: [], enabled: true, error: null };
    h.core.responder = (msg): ServerMsg[] | undefined => {
      switch (msg.type) {
        case "register":
          return [{ type: "registered", id: msg.id, session: me, pending: 0, pairings: [], worker: w }];
        case "list_agents":
          return [{ type: "agents", id: msg.id, agents: [def] }];
        case "list_workers":
          return [{ type: "workers", id: msg.id, workers: [w] }];
        case "delegate_agent":
        case "continue_agent":
        case "steer_agent":
        case "interrupt_agent":
        case "reply_agent":
        case "close_agent":
          return [{ type: "worker", id: msg.id, worker: w }];
        case "inspect_agent":
        case "read_agent_transcript":
          return [{ type: "agent_text", id: msg.id, worker: w, text: msg.type }];
        case "ask_owner":
          return [{ type: "asked", id: msg.id, ask }];
        default:
          return undefined;
      }
    };
    h.client.start();
    await until(() => h.client.ready);
    assert.deepEqual(h.core.all[1], { type: "register", id: 2, session: { session_id: w.session_id, cwd: "/tmp", launch: "nonce-1" } });
    assert.deepEqual(registeredWorker, w);
    assert.deepEqual(await h.client.listAgents(), [def]);
    assert.deepEqual(h.core.all.at(-1), { type: "list_agents", id: 3 });
    assert.deepEqual(await h.client.listWorkers(true), [w]);
    assert.deepEqual(h.core.all.at(-1), { type: "list_workers", id: 4, all: true });
    assert.deepEqual(await h.client.delegateAgent("scout", "find", null, null), w);
    assert.deepEqual(h.core.all.at(-1), { type: "delegate_agent", id: 5, definition: "scout", task: "find" });
    await h.client.delegateAgent("scout", "find", "s-2", "/s.jsonl");
    assert.deepEqual(h.core.all.at(-1), { type: "delegate_agent", id: 6, definition: "scout", task: "find", label: "s-2", fork: "/s.jsonl" });
    await h.client.continueAgent("/s.jsonl", "more");
    assert.deepEqual(h.core.all.at(-1), { type: "continue_agent", id: 7, session: "/s.jsonl", task: "more" });
    await h.client.workerAction("steer", "scout-1", "a");
    await h.client.workerAction("interrupt", "scout-1", "b");
    await h.client.workerAction("reply", "scout-1", "c");
    await h.client.workerAction("close", "scout-1", "");
    assert.deepEqual(h.core.all.slice(-4), [
      { type: "steer_agent", id: 8, agent: "scout-1", message: "a" },
      { type: "interrupt_agent", id: 9, agent: "scout-1", message: "b" },
      { type: "reply_agent", id: 10, agent: "scout-1", answer: "c" },
      { type: "close_agent", id: 11, agent: "scout-1" },
    ]);
    assert.deepEqual(await h.client.agentText("inspect", "scout-1"), { worker: w, text: "inspect_agent" });
    assert.deepEqual(await h.client.agentText("transcript", "scout-1"), { worker: w, text: "read_agent_transcript" });
    assert.deepEqual((await h.client.askOwner("CLI?")).to?.worker, 7);
    assert.deepEqual(h.core.all.at(-1), { type: "ask_owner", id: 14, question: "CLI?" });
  });

  test("a worker registration the core refuses (launch_mismatch): reported, retried slowly", async () => {
    const h = await harness({ client: { slowRetryMs: 60_000 } });
    h.core.responder = (msg) =>
      msg.type === "register"
        ? [{ type: "error", id: msg.id, code: "worker_refused", message: "no managed worker waits for session sess-1", details: { reason: "launch_mismatch" } }]
        : undefined;
    h.client.start();
    await until(() => h.problems.length > 0 && h.client.phase === "waiting");
    assert.equal(h.problems[0]?.message, "the shepherd core refused this managed worker's registration: no managed worker waits for session sess-1");
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(h.registrations, 1, "not retried at the fast backoff");
  });

  test("acks go only to a registered connection of the same store", async () => {
    const h = await harness();
    assert.equal(h.client.ack("store-1", [1]), false, "not connected");
    h.client.start();
    await until(() => h.client.ready);
    assert.equal(h.client.ack("other-store", [1]), false);
    assert.equal(h.client.ack("store-1", []), false);
    assert.equal(h.client.ack("store-1", [1, 2]), true);
    await h.core.until(() => h.core.all.some((m) => m.type === "ack"));
    assert.deepEqual(h.core.all.at(-1), { type: "ack", ids: [1, 2] });
  });

  test("requests while not connected fail at once with the reason", async () => {
    const h = await harness({ listen: false });
    h.client.start();
    await until(() => h.problems.length > 0);
    await assert.rejects(h.client.ask("q", [], null), (e: unknown) => e instanceof NotConnectedError && /not connected/.test(e.message));
    await h.client.update({ status: "idle" }); // silently skipped: the next register carries it
  });

  test("no core yet: reports it unreachable, keeps trying, connects when the core comes up", async () => {
    const h = await harness({ listen: false });
    h.client.start();
    await until(() => h.problems.length >= 2);
    const first = h.problems[0];
    assert.ok(first?.kind === "unreachable");
    assert.equal(first.errno, "ENOENT");
    assert.equal(first.attempt, 1);
    await h.core.listen();
    await until(() => h.client.ready);
    assert.equal(h.client.failures, 0);
    assert.equal(h.client.lastError, null);
  });

  test("after the core dies and comes back: reconnects, registers again with fresh presence, gets pending deliveries", async () => {
    let status = "idle";
    const h = await harness({ registration: () => ({ session_id: "sess-1", cwd: "/tmp", status }) });
    h.client.start();
    await until(() => h.client.ready);
    await h.core.kill();
    await until(() => !h.client.ready);
    await assert.rejects(h.client.report("x"), NotConnectedError);
    status = "thinking";
    h.core.storeId = "store-1";
    h.core.pending = [delivery(7, "sent while you were away")];
    await h.core.listen();
    await until(() => h.deliveries.length === 1);
    assert.ok(h.client.ready);
    assert.equal(h.registrations, 2);
    const registers = h.core.all.filter((m) => m.type === "register");
    assert.equal(registers.length, 2);
    const last = registers.at(-1);
    assert.equal(last?.type === "register" ? last.session.status : "", "thinking");
  });

  test("a request in flight when the connection drops fails instead of hanging", async () => {
    const h = await harness();
    h.client.start();
    await until(() => h.client.ready);
    h.core.responder = (msg, conn) => {
      if (msg.type === "report") conn.socket.destroy();
      return msg.type === "report" ? [] : undefined;
    };
    await assert.rejects(h.client.report("x"), NotConnectedError);
  });

  test("protocol mismatch: reported, retried slowly, never registers", async () => {
    const h = await harness();
    h.core.protocol = PROTOCOL_VERSION + 1;
    h.client.start();
    await until(() => h.problems.some((p) => p.kind === "protocol_mismatch"));
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(h.core.all.filter((m) => m.type === "hello").length, 1, "waits well past the normal backoff");
    assert.ok(!h.core.all.some((m) => m.type === "register"));
  });

  test("session_taken: reported, connection closed, retried", async () => {
    const h = await harness();
    h.core.responder = (msg) =>
      msg.type === "register" ? [{ type: "error", id: msg.id, code: "session_taken", message: "held by pid 99", details: { pid: 99 } }] : undefined;
    h.client.start();
    await until(() => h.problems.some((p) => p.kind === "session_taken"));
    assert.ok(!h.client.ready);
    await until(() => h.client.phase === "waiting");
  });

  test("replaced: the connection stays down (a newer instance of this process took over)", async () => {
    const h = await harness();
    h.client.start();
    await until(() => h.client.ready);
    const conn = h.core.registered();
    assert.ok(conn !== undefined);
    h.core.send(conn, { type: "error", id: null, code: "replaced", message: "newer connection", details: null });
    await until(() => h.client.phase === "replaced");
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(h.core.connections.length, 1, "no reconnect");
    assert.ok(h.problems.some((p) => p.kind === "replaced"));
  });

  test("unknown message types from a newer core are ignored; malformed frames reconnect", async () => {
    const h = await harness();
    h.client.start();
    await until(() => h.client.ready);
    const conn = h.core.registered();
    assert.ok(conn !== undefined);
    const body = Buffer.from('{"type":"future_event","x":1}');
    const header = Buffer.alloc(4);
    header.writeUInt32BE(body.length, 0);
    conn.socket.write(Buffer.concat([header, body]));
    h.core.send(conn, { type: "deliver", message: delivery(3, "after the unknown one") });
    await until(() => h.deliveries.length === 1);
    assert.ok(h.client.ready);
    const bad = Buffer.from("not json");
    header.writeUInt32BE(bad.length, 0);
    conn.socket.write(Buffer.concat([header, bad]));
    await until(() => h.core.connections.length === 2 && h.client.ready);
  });

  test("stop() closes for good", async () => {
    const h = await harness();
    h.client.start();
    await until(() => h.client.ready);
    h.client.stop();
    assert.equal(h.client.phase, "stopped");
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(h.core.connections.length, 1);
    await assert.rejects(h.client.ask("q", [], null), NotConnectedError);
  });

  test("stop({returning}) says bye first (closed, or coming straight back), only when registered", async () => {
    const closing = await harness();
    closing.client.start();
    await until(() => closing.client.ready);
    closing.client.stop({ returning: false });
    await until(() => closing.core.byes.length === 1);
    assert.deepEqual(closing.core.byes, [false]);
    assert.deepEqual(closing.core.all.at(-1), { type: "bye", returning: false });

    const reloading = await harness();
    reloading.client.start();
    await until(() => reloading.client.ready);
    reloading.client.stop({ returning: true });
    await until(() => reloading.core.byes.length === 1);
    assert.deepEqual(reloading.core.byes, [true]);

    const offline = await harness({ listen: false });
    offline.client.start();
    offline.client.stop({ returning: false });
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(offline.core.byes, [], "no connection: nobody to tell");
  });
});
