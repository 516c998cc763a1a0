// The /supervise command and the verdict results against a fake core on a real socket: the
// request each form sends, the picker after `ambiguous_session` resending the exact id, the
// core's refusals shown as it words them, pairing responses reaching supervision before the
// view behind them, and what the model reads after each verdict.

import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";

import type { ExtensionContext } from "@earendil-works/pi-coding-agent";

import { CoreClient } from "../client.ts";
import { loadConfig } from "../config.ts";
import { candidateLabels, candidatesOf, END_TURN, runSuperviseCommand, verdictAcceptedText, type SupervisorSession } from "../supervise-pi.ts";
import { parseSuperviseArgs } from "../supervise-args.ts";
import { Supervision } from "../supervision.ts";
import type { Ask, ClientMsg, Pairing } from "../wire.ts";
import { delivery, FakeCore } from "./fake-core.ts";
import { pairing, SUPERVISOR_ID } from "./pairings.ts";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function until(predicate: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 5));
  }
}

interface Rig {
  core: FakeCore;
  session: SupervisorSession;
  ctx: ExtensionContext;
  selects: Array<{ title: string; options: string[] }>;
  /** What the fake picker answers. */
  pick: (options: string[]) => string | undefined;
  events: string[];
}

async function rig(): Promise<Rig> {
  const core = new FakeCore();
  cleanups.push(() => core.dispose());
  await core.listen();
  const r: Rig = { core, session: undefined as never, ctx: undefined as never, selects: [], pick: (o) => o[0], events: [] };
  const fakeCtx = {
    cwd: "/home/ada/src/app",
    hasUI: true,
    ui: {
      select: async (title: string, options: string[]) => {
        r.selects.push({ title, options });
        return r.pick(options);
      },
      notify: () => undefined,
    },
    sessionManager: { getSessionId: () => SUPERVISOR_ID },
    abort: () => r.events.push("abort"),
  };
  r.ctx = fakeCtx as unknown as ExtensionContext;
  const seen: Pairing[] = [];
  const supervision = new Supervision({
    sessionId: () => SUPERVISOR_ID,
    activeTools: () => [],
    setActiveTools: () => undefined,
    entries: () => [],
    contextEntries: () => [],
    appendEntry: () => undefined,
    injectBrief: () => r.events.push("brief"),
    setFooter: () => undefined,
    policy: () => ({ text: "p", source: "built-in" }),
    notify: () => undefined,
    log: () => undefined,
  });
  const client = new CoreClient({
    socketPath: core.socketPath,
    clientName: "test",
    registration: () => ({ session_id: SUPERVISOR_ID, cwd: "/home/ada/src/app", role: "supervisor" }),
    onDeliver: (_store, d) => r.events.push(`deliver:${d.kind}`),
    onPairing: (p, response) => {
      seen.push(p);
      r.events.push(response);
      supervision.observe(p, response);
    },
    onPairingEvent: (e) => r.events.push(`event:${e.change}`),
    initialBackoffMs: 10,
  });
  cleanups.push(() => client.stop());
  client.start();
  await until(() => client.ready);
  r.session = {
    ctx: r.ctx,
    client,
    supervision,
    config: loadConfig({}),
    openAsks: new Map<number, Ask>(),
    log: () => undefined,
    recordError: () => undefined,
    refreshStatusLine: () => undefined,
  };
  return r;
}

function sent(core: FakeCore, type: ClientMsg["type"]): ClientMsg[] {
  return core.all.filter((m) => m.type === type);
}

describe("/supervise against a fake core", () => {
  test("@target and a goal file: one supervise with the cwd; the pairing is seen before the view behind it", async () => {
    const r = await rig();
    r.core.responder = (msg) =>
      msg.type === "supervise"
        ? [
            { type: "paired", id: msg.id, pairing: pairing({ goal_file: "/home/ada/src/app/docs/GOAL.md" }) },
            { type: "deliver", message: delivery(1, "view", { kind: "view", pairing_id: 7, look: 1 }) },
          ]
        : undefined;
    const out = await runSuperviseCommand(r.session, parseSuperviseArgs("@fix-login docs/GOAL.md"), r.ctx);
    assert.deepEqual(sent(r.core, "supervise"), [{ type: "supervise", id: 3, cwd: "/home/ada/src/app", worker: "fix-login", goal: "docs/GOAL.md" }]);
    assert.match(out?.text ?? "", /supervising "fix-login" \(0193a5c2\), pairing 7\ngoal: .*\n\(read from \/home\/ada\/src\/app\/docs\/GOAL.md\)/);
    assert.deepEqual(r.events.slice(0, 3), ["paired", "brief", "deliver:view"]);
    assert.equal(r.session.supervision.supervising?.id, 7);
  });

  test("ambiguous: a picker over the candidates, then the exact id", async () => {
    const r = await rig();
    const candidates = [
      { id: "aaaaaaaa-1111", name: "fix-login", connected: true, cwd: "/home/ada/src/app" },
      { id: "bbbbbbbb-2222", name: "docs", connected: true, cwd: "/home/ada/src/app" },
    ];
    r.core.responder = (msg) => {
      if (msg.type !== "supervise") return undefined;
      if (msg.worker === undefined) {
        return [{ type: "error", id: msg.id, code: "ambiguous_session", message: "2 free sessions in /home/ada/src/app", details: { candidates } }];
      }
      return [{ type: "paired", id: msg.id, pairing: pairing({ worker_id: "bbbbbbbb-2222", worker_name: "docs" }) }];
    };
    r.pick = (options) => options[1];
    const out = await runSuperviseCommand(r.session, parseSuperviseArgs("Fix the docs."), r.ctx);
    assert.deepEqual(r.selects, [
      { title: "Supervise which session?", options: ["fix-login (aaaaaaaa) in /home/ada/src/app", "docs (bbbbbbbb) in /home/ada/src/app"] },
    ]);
    const requests = sent(r.core, "supervise");
    assert.equal(requests.length, 2);
    assert.deepEqual(requests[1], { type: "supervise", id: 4, cwd: "/home/ada/src/app", goal: "Fix the docs.", worker: "bbbbbbbb-2222" });
    assert.match(out?.text ?? "", /supervising "docs"/);
  });

  test("a cancelled picker sends nothing more", async () => {
    const r = await rig();
    r.core.responder = (msg) =>
      msg.type === "supervise"
        ? [{ type: "error", id: msg.id, code: "ambiguous_session", message: "2 sessions", details: { candidates: [{ id: "a", name: "a" }, { id: "b", name: "b" }] } }]
        : undefined;
    r.pick = () => undefined;
    const out = await runSuperviseCommand(r.session, parseSuperviseArgs(""), r.ctx);
    assert.equal(out?.text, "shepherd: /supervise cancelled");
    assert.equal(sent(r.core, "supervise").length, 1);
  });

  for (const code of ["no_candidate", "unknown_session", "already_paired", "invalid_argument", "goal_unreadable"]) {
    test(`${code}: the core's message reaches the caller`, async () => {
      const r = await rig();
      const text = `the core says ${code}: /home/ada/src/app/GOAL.md`;
      r.core.responder = (msg) => (msg.type === "supervise" ? [{ type: "error", id: msg.id, code, message: text, details: null }] : undefined);
      await assert.rejects(runSuperviseCommand(r.session, parseSuperviseArgs("GOAL.md"), r.ctx), (e: unknown) => {
        assert.ok(e instanceof Error && "coreMessage" in e);
        assert.equal(e.coreMessage, text);
        return true;
      });
      assert.equal(r.session.supervision.supervising, null);
    });
  }

  test("goal, look, stop and status send their requests", async () => {
    const r = await rig();
    const active = pairing({ looks: 2, steers: 1 });
    let listed: Pairing[] = [{ ...active, looks: 4 }];
    r.core.responder = (msg) => {
      switch (msg.type) {
        case "supervise":
          return [{ type: "paired", id: msg.id, pairing: active }];
        case "set_goal":
          return [{ type: "goal_set", id: msg.id, pairing: { ...active, goal: msg.goal } }];
        case "look":
          return [{ type: "look_requested", id: msg.id, pairing: active }];
        case "list_pairings":
          return [{ type: "pairings", id: msg.id, pairings: listed }];
        case "unpair":
          listed = [];
          return [{ type: "unpaired", id: msg.id, pairing: { ...active, state: "ended", end_reason: "stopped", ended_by: "supervisor" } }];
        default:
          return undefined;
      }
    };
    await runSuperviseCommand(r.session, parseSuperviseArgs(""), r.ctx);
    const goal = await runSuperviseCommand(r.session, parseSuperviseArgs("goal Keep the old flow."), r.ctx);
    assert.deepEqual(sent(r.core, "set_goal"), [{ type: "set_goal", id: 4, goal: "Keep the old flow.", cwd: "/home/ada/src/app" }]);
    assert.match(goal?.text ?? "", /Keep the old flow\./);
    const look = await runSuperviseCommand(r.session, parseSuperviseArgs("look"), r.ctx);
    assert.deepEqual(sent(r.core, "look"), [{ type: "look", id: 5 }]);
    assert.match(look?.text ?? "", /look requested/);
    const status = await runSuperviseCommand(r.session, parseSuperviseArgs("status"), r.ctx);
    assert.match(status?.text ?? "", /^shepherd: supervising "fix-login" \(0193a5c2\): pairing 7, worker connected\n[\s\S]*looks: 4, steers: 1$/);
    const stop = await runSuperviseCommand(r.session, parseSuperviseArgs("stop"), r.ctx);
    assert.deepEqual(sent(r.core, "unpair"), [{ type: "unpair", id: 7 }]);
    assert.equal(stop, null, "the supervisor's side is announced by supervision");
    assert.equal(r.session.supervision.supervising, null);
    const after = await runSuperviseCommand(r.session, parseSuperviseArgs("status"), r.ctx);
    assert.match(after?.text ?? "", /not in a pairing/);
  });
});

describe("helpers", () => {
  test("candidates are read defensively; labels stay distinct", () => {
    assert.deepEqual(candidatesOf(null), []);
    assert.deepEqual(candidatesOf({ candidates: [{ id: "x" }, { name: "no id" }, 3] }), [{ id: "x", name: "x", cwd: null, connected: null }]);
    const same = candidatesOf({ candidates: [{ id: "aaaaaaaa-1", name: "a", connected: false }, { id: "aaaaaaaa-2", name: "a", connected: false }] });
    assert.deepEqual(candidateLabels(same), ["a (aaaaaaaa-1) [not connected]", "a (aaaaaaaa-2) [not connected]"]);
  });

  test("every accepted verdict tells the model how to end its turn; a hint is appended", () => {
    for (const kind of ["steer", "let_it_run", "done"] as const) {
      assert.ok(verdictAcceptedText(kind, "fix-login", null).endsWith(END_TURN), kind);
    }
    assert.equal(
      verdictAcceptedText("steer", "fix-login", "This steer repeats most of steer 1."),
      `Steer sent to "fix-login". Verdict recorded. ${END_TURN}\nNote from shepherd: This steer repeats most of steer 1.`,
    );
  });
});
