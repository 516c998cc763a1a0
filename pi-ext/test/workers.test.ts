// Managed workers, Pi-free: the worker fixtures read as the extension uses them (registered
// with and without a worker record, ask.to.worker, the new delivery kinds), the tool set of a
// leaf worker, a delegating worker and an owner (and of a Manager or Chief, who own workers
// too), ask_owner's "only tool call of its message" rule, and how a task, a worker's result,
// its question and its owner's answer are headed for the model.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { formatDelivery, Inbox, startsTurn, taskHeader, type DeliveryMessage, type InboxHost } from "../inbox.ts";
import { LEAD_TOOLS, MANAGER_TOOLS, ROLE_TOOLS, roleTools, STAFF_TOOLS } from "../roles.ts";
import { decodeClientMsg, decodeServerMsg, WireDecodeError, type Delivery } from "../wire.ts";
import {
  launchFromEnv,
  NOT_FOR_WORKERS,
  otherToolCalls,
  OWNER_TOOLS,
  ownerTools,
  toolCallsOf,
  Workers,
  workerTools,
  WORKER_TOOLS,
  type WorkersHost,
} from "../workers.ts";
import { delivery } from "./fake-core.ts";
import { fixture, workerRecord } from "./worker-fixtures.ts";

/** What a plain Lead has, with the extension's tools as they register (ask_owner inactive). */
const LEAD = ["read", "bash", "edit", "write", "grep", "ask_human", "report", ...LEAD_TOOLS, ...OWNER_TOOLS];
/** Every tool registered in the session (Pi's getAllTools). */
const ALL = [...LEAD, "find", "ls", ...STAFF_TOOLS, ...WORKER_TOOLS, "worker_view", "steer", "let_it_run", "done", "set_goal"];

describe("worker wire, as the extension reads it", () => {
  test("registered: the worker record when bound, nothing for any other session", () => {
    const bound = decodeServerMsg(fixture("server", "registered.worker"));
    assert.ok(bound.type === "registered");
    assert.equal(bound.worker?.label, "scout-1");
    assert.equal(bound.worker?.delegates, false);
    assert.deepEqual(bound.worker?.available_actions, ["steer", "interrupt", "close", "inspect", "transcript"]);
    const plain = decodeServerMsg(fixture("server", "registered"));
    assert.ok(plain.type === "registered");
    assert.equal("worker" in plain, false, "absent stays absent (re-encodes unchanged)");
  });

  test("register carries the launch nonce; ask_owner's ask names the worker in ask.to", () => {
    const reg = decodeClientMsg(fixture("client", "register.worker"));
    assert.ok(reg.type === "register");
    assert.equal(reg.session.launch, "9c1f0e2d3b4a59687f6e5d4c3b2a19080f1e2d3c4b5a6978");
    const asked = decodeServerMsg(fixture("server", "asked.owner"));
    assert.ok(asked.type === "asked");
    assert.equal(asked.ask.to?.worker, 7);
    assert.equal(asked.ask.to?.session_name, "fix-login");
    const human = decodeServerMsg(fixture("server", "asked.supervisor"));
    assert.ok(human.type === "asked");
    assert.equal(human.ask.to !== undefined && "worker" in human.ask.to, false);
  });

  test("the new delivery kinds decode and start a turn", () => {
    for (const [name, kind] of [
      ["deliver.task", "task"],
      ["deliver.agent_result", "agent_result"],
      ["deliver.agent_ask", "agent_ask"],
    ] as const) {
      const msg = decodeServerMsg(fixture("server", name));
      assert.ok(msg.type === "deliver");
      assert.equal(msg.message.kind, kind);
      assert.equal(startsTurn(kind, msg.message.text), true, kind);
    }
  });

  test("a worker record: `delegates` defaults to false; states and actions are closed sets", () => {
    const raw: Record<string, unknown> = JSON.parse(fixture("server", "worker"));
    const inner = { ...(raw["worker"] as Record<string, unknown>) };
    delete inner["delegates"];
    const msg = decodeServerMsg(JSON.stringify({ ...raw, worker: inner }));
    assert.ok(msg.type === "worker");
    assert.equal(msg.worker.delegates, false);
    const bad = (field: string, value: unknown): void =>
      assert.throws(
        () => decodeServerMsg(JSON.stringify({ ...raw, worker: { ...inner, [field]: value } })),
        (e: unknown) => e instanceof WireDecodeError && e.code === "invalid_message" && e.message.includes(`worker.worker.${field}`),
      );
    bad("state", "sleeping");
    bad("available_actions", ["delegate"]);
    bad("backend", "docker");
  });

  test("delegate_agent keeps label and fork absent when not given", () => {
    const msg = decodeClientMsg('{"type":"delegate_agent","id":1,"definition":"scout","task":"t"}');
    assert.deepEqual(msg, { type: "delegate_agent", id: 1, definition: "scout", task: "t" });
  });
});

describe("tool sets", () => {
  test("an owner: the owner tools, never ask_owner", () => {
    assert.deepEqual(ownerTools([...LEAD, "ask_owner"]), LEAD);
    assert.deepEqual(ownerTools(LEAD), LEAD);
  });

  test("a leaf worker: ask_owner, no owner tools, nothing that reaches the human or a role", () => {
    const tools = workerTools(LEAD, ALL, false);
    assert.deepEqual(tools, ["read", "bash", "edit", "write", "grep", "ask_owner"]);
  });

  test("a delegating worker: ask_owner and the owner tools", () => {
    const tools = workerTools(["read", "grep"], ALL, true);
    assert.deepEqual(tools, ["read", "grep", "ask_owner", ...OWNER_TOOLS]);
  });

  test("only tools that exist are activated (Pi's --tools removes the others)", () => {
    assert.deepEqual(workerTools(["read", "ask_owner"], ["read", "ask_owner"], true), ["read", "ask_owner"]);
    assert.deepEqual(workerTools(["read"], ["read"], false), ["read"]);
  });

  test("what a worker never has is ask_human, report and the roles' tools", () => {
    assert.deepEqual([...NOT_FOR_WORKERS].sort(), ["ask_human", "report", ...LEAD_TOOLS, ...STAFF_TOOLS, ...MANAGER_TOOLS].sort());
  });

  test("a Manager and the Chief own workers too: they keep the owner tools", () => {
    for (const role of ["manager", "chief"] as const) {
      for (const t of OWNER_TOOLS) assert.ok(ROLE_TOOLS[role].includes(t), `${role} ${t}`);
      assert.ok(!roleTools(role, LEAD).includes("ask_owner"));
    }
  });

  test("launchFromEnv: set, empty, unset", () => {
    assert.equal(launchFromEnv({ SHEPHERD_LAUNCH: "abc" }), "abc");
    assert.equal(launchFromEnv({ SHEPHERD_LAUNCH: " " }), null);
    assert.equal(launchFromEnv({}), null);
  });
});

/** A stand-in for Pi's tool switches. */
class FakeTools implements WorkersHost {
  active: string[];
  all: string[];
  sets = 0;
  footers: Array<string | null> = [];
  constructor(active: string[] = [...LEAD], all: string[] = [...ALL]) {
    this.active = active;
    this.all = all;
  }
  activeTools(): string[] {
    return [...this.active];
  }
  setActiveTools(names: string[]): void {
    this.sets++;
    this.active = [...names];
  }
  allTools(): string[] {
    return [...this.all];
  }
  setFooter(text: string | null): void {
    this.footers.push(text);
  }
  log(): void {}
}

describe("Workers", () => {
  test("not launched as a worker: an owner, whatever registered says", () => {
    const pi = new FakeTools([...LEAD, "ask_owner"]);
    const w = new Workers(pi, null);
    w.start();
    assert.equal(w.isWorker, false);
    assert.deepEqual(pi.active, LEAD);
    w.registered(undefined);
    assert.equal(w.record, null);
    assert.equal(w.describe(), null);
    assert.deepEqual(pi.active, LEAD);
    assert.deepEqual(pi.footers, [], "an owner's footer is left alone");
  });

  test("launched: a leaf until the record says it delegates; the record is kept", () => {
    const pi = new FakeTools();
    const w = new Workers(pi, "nonce-1");
    w.start();
    assert.equal(w.isWorker, true);
    assert.deepEqual(pi.active, ["read", "bash", "edit", "write", "grep", "ask_owner"]);
    assert.match(w.describe() ?? "", /not bound/);
    w.registered(workerRecord({ delegates: true }));
    assert.equal(w.record?.label, "scout-1");
    assert.deepEqual(pi.active, ["read", "bash", "edit", "write", "grep", "ask_owner", ...OWNER_TOOLS]);
    assert.equal(w.describe(), 'managed worker scout-1 (definition scout, owner "fix-login", blocked, may delegate)');
    assert.deepEqual(pi.footers.slice(0, 2), ["worker (not bound yet)", "worker scout-1 · owner fix-login"]);
    // Registering again with the same record changes nothing.
    const sets = pi.sets;
    w.registered(workerRecord({ delegates: true }));
    assert.equal(pi.sets, sets);
    // A leaf record takes the owner tools away again.
    w.registered(workerRecord({ delegates: false }));
    assert.deepEqual(pi.active, ["read", "bash", "edit", "write", "grep", "ask_owner"]);
  });
});

describe("ask_owner: the only tool call of its message", () => {
  const assistant = (...calls: Array<[string, string]>) => ({
    role: "assistant",
    content: [{ type: "text", text: "let me ask" }, ...calls.map(([id, name]) => ({ type: "toolCall", id, name, arguments: {} }))],
  });

  test("tool calls are read from an assistant message only", () => {
    assert.deepEqual(toolCallsOf(assistant(["c1", "ask_owner"], ["c2", "bash"])), [
      { id: "c1", name: "ask_owner" },
      { id: "c2", name: "bash" },
    ]);
    assert.deepEqual(toolCallsOf({ role: "user", content: [{ type: "toolCall", id: "x", name: "y" }] }), []);
    assert.deepEqual(toolCallsOf({ role: "assistant", content: "plain" }), []);
  });

  test("alone: allowed; beside others: their names; unseen: left to the core", () => {
    const calls = toolCallsOf(assistant(["c1", "ask_owner"], ["c2", "bash"], ["c3", "read"]));
    assert.deepEqual(otherToolCalls(calls, "c1"), ["bash", "read"]);
    assert.deepEqual(otherToolCalls(toolCallsOf(assistant(["c1", "ask_owner"])), "c1"), []);
    assert.deepEqual(otherToolCalls(calls, "c9"), []);
  });

  test("Workers follows the last assistant message (tool results and user messages do not reset it)", () => {
    const w = new Workers(new FakeTools(), "n");
    w.message(assistant(["c1", "ask_owner"], ["c2", "bash"]));
    w.message({ role: "toolResult", content: [] });
    assert.deepEqual(w.othersBeside("c1"), ["bash"]);
    w.message(assistant(["c3", "ask_owner"]));
    assert.deepEqual(w.othersBeside("c3"), []);
    assert.deepEqual(w.othersBeside("c1"), [], "an old message's call is not judged by the new one");
  });
});

describe("worker deliveries, as the model reads them", () => {
  const owner = { kind: "pi" as const, session_id: "0193a5c2-7d1e-7b8a-9c3f-1e2d3c4b5a69", name: "fix-login" };

  test("a task names the owner, the worker and how it ends", () => {
    const d = delivery(880, "Find every caller of login()", { kind: "task", from: owner });
    assert.equal(
      formatDelivery(d, workerRecord()),
      '[shepherd] Task from "fix-login" (you are managed worker scout-1, definition scout). Work on it; your final ' +
        "answer (plain text, no tool call) is your result and goes to your owner. If you must ask, call ask_owner as " +
        "the only tool call of your turn.\n\nFind every caller of login()",
    );
    assert.match(taskHeader(owner, null), /^\[shepherd\] Task from "fix-login" \(you are a managed worker\)\./);
  });

  test("a worker's result and question, to its owner", () => {
    const result = decodeServerMsg(fixture("server", "deliver.agent_result"));
    assert.ok(result.type === "deliver");
    const text = formatDelivery(result.message);
    assert.match(text, /^\[shepherd\] Result from your managed worker "scout-1" \(it comes once; nothing to poll\)\. Use it in your work:\nAgent result · agent=scout-1/);
    const ask = decodeServerMsg(fixture("server", "deliver.agent_ask"));
    assert.ok(ask.type === "deliver");
    assert.match(
      formatDelivery(ask.message),
      /^\[shepherd\] Question #12 from your managed worker "scout-1", which waits until you answer\. Answer it with reply_agent \{agent: "scout-1", answer\}:\nAgent question/,
    );
  });

  test("an answer to a worker comes from its owner; to anyone else from their supervisor", () => {
    const d = delivery(900, "Yes, include the CLI", { kind: "answer", from: owner, ask_id: 12, question: "CLI too?" });
    assert.match(formatDelivery(d, workerRecord()), /^\[shepherd\] Answer to your question #12, from your owner "fix-login" \(0193a5c2-/);
    assert.match(formatDelivery(d), /from your supervisor, the fix-login/);
  });

  test("a steer or interrupt from the owner says so; from the human as before", () => {
    const w = workerRecord({ owner_id: owner.session_id });
    assert.equal(
      formatDelivery(delivery(901, "skip tests/", { kind: "steer", from: owner }), w),
      `[shepherd] Steer from your owner "fix-login" (${owner.session_id}):\nskip tests/`,
    );
    assert.equal(
      formatDelivery(delivery(902, "src/ only", { kind: "interrupt", from: owner }), w),
      `[shepherd] Your owner "fix-login" (${owner.session_id}) stopped your run. Do this instead:\nsrc/ only`,
    );
    const human = { kind: "bridge" as const, session_id: null, name: "telegram" };
    assert.equal(formatDelivery(delivery(903, "stop", { kind: "steer", from: human }), w), "[shepherd] Steer from the human (via telegram):\nstop");
    assert.match(formatDelivery(delivery(904, "x", { kind: "steer", from: owner })), /^\[shepherd\] Steer from session "fix-login"/);
  });

  test("the inbox heads a task with the session's worker record", () => {
    const sent: DeliveryMessage[] = [];
    const host: InboxHost = {
      entries: () => [],
      durable: () => true,
      idle: () => true,
      send: (m) => sent.push(m),
      ack: () => undefined,
      now: () => 0,
      worker: () => workerRecord(),
    };
    const inbox = new Inbox(host);
    const task: Delivery = delivery(880, "do it", { kind: "task", from: owner });
    inbox.receive("store-1", task);
    assert.equal(sent.length, 1);
    assert.match(String(sent[0]?.content ?? ""), /you are managed worker scout-1, definition scout/);
  });
});
