// Project work, Pi-free: the project fixtures read as the extension uses them (registered with
// an assignment, staff with assignments, the two delivery kinds starting a turn and how they
// read), the Manager's project tools only in the Manager role, and an assigned Lead (launched
// with a nonce, bound by `registered.assignment`): not a worker, its Lead tools back, its
// footer, its task's header and its results kept while the core is away.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { NotConnectedError } from "../client.ts";
import { formatDelivery, leadTaskHeader, startsTurn } from "../inbox.ts";
import { ResultSender } from "../result.ts";
import { LEAD_TOOLS, leadTools, MANAGER_TOOLS, ROLE_TOOLS, roleTools, STAFF_TOOLS } from "../roles.ts";
import { assignedLeadFromEnv, OWNER_TOOLS, WORKER_TOOLS, Workers, type WorkersHost } from "../workers.ts";
import { decodeClientMsg, decodeServerMsg, WireDecodeError, type Report } from "../wire.ts";
import { assignmentRecord, fixture } from "./worker-fixtures.ts";

const LEAD = ["read", "bash", "edit", "write", "grep", "ask_human", "report", ...LEAD_TOOLS, ...OWNER_TOOLS];
const ALL = [...LEAD, "find", "ls", ...STAFF_TOOLS, ...MANAGER_TOOLS, ...WORKER_TOOLS];

describe("project wire, as the extension reads it", () => {
  test("registered: the assignment of an assigned Lead; absent for every other session", () => {
    const bound = decodeServerMsg(fixture("server", "registered.assignment"));
    assert.ok(bound.type === "registered");
    assert.equal(bound.assignment?.branch, "feat/export");
    assert.equal(bound.assignment?.lead, "starting");
    assert.equal(bound.worker, undefined);
    const plain = decodeServerMsg(fixture("server", "registered"));
    assert.ok(plain.type === "registered");
    assert.equal("assignment" in plain, false, "absent stays absent (re-encodes unchanged)");
  });

  test("staff: a Manager's assignments; absent when there are none", () => {
    const staff = decodeServerMsg(fixture("server", "staff.assignments"));
    assert.ok(staff.type === "staff");
    assert.deepEqual(
      staff.assignments?.map((a) => [a.branch, a.state, a.lead]),
      [["feat/export", "paused", "stopped"]],
    );
    const plain = decodeServerMsg(fixture("server", "staff"));
    assert.ok(plain.type === "staff");
    assert.equal("assignments" in plain, false);
  });

  test("projects, integrations and the events carry their records", () => {
    const projects = decodeServerMsg(fixture("server", "projects"));
    assert.ok(projects.type === "projects");
    const p = projects.projects[0];
    assert.equal(p?.manager?.session_name, "app");
    assert.equal(p?.assignments[0]?.usage?.total_tokens, 68400);
    assert.equal(p?.assignments[0]?.ahead, 2);
    const waiting = decodeServerMsg(fixture("server", "integration"));
    assert.ok(waiting.type === "integration");
    assert.equal(waiting.integration.status, "awaiting_approval");
    assert.equal(waiting.integration.ask_id, 21);
    const done = decodeServerMsg(fixture("server", "integration.integrated"));
    assert.ok(done.type === "integration");
    assert.equal(done.integration.assignment.state, "retired");
    const update = decodeServerMsg(fixture("server", "assignment_update"));
    assert.ok(update.type === "assignment_update");
    assert.equal(update.message_id, 88);
    const changed = decodeServerMsg(fixture("server", "assignment_changed"));
    assert.ok(changed.type === "assignment_changed");
    assert.equal(changed.assignment.state, "paused");
  });

  test("the requests keep their optional fields absent when not given", () => {
    assert.deepEqual(decodeClientMsg('{"type":"delegate_project","id":1,"task":"t"}'), { type: "delegate_project", id: 1, task: "t" });
    assert.deepEqual(decodeClientMsg('{"type":"resume_work","id":2,"branch":"feat/a"}'), { type: "resume_work", id: 2, branch: "feat/a" });
    const full = decodeClientMsg(fixture("client", "delegate_project"));
    assert.ok(full.type === "delegate_project");
    assert.equal(full.branch, "feat/export");
    assert.equal(full.base, "main");
  });

  test("an assignment's states are closed sets; open_asks and cleanup_pending default", () => {
    const raw: Record<string, unknown> = JSON.parse(fixture("server", "assignment"));
    const inner = { ...(raw["assignment"] as Record<string, unknown>) };
    delete inner["open_asks"];
    delete inner["cleanup_pending"];
    const msg = decodeServerMsg(JSON.stringify({ ...raw, assignment: inner }));
    assert.ok(msg.type === "assignment");
    assert.equal(msg.assignment.open_asks, 0);
    assert.equal(msg.assignment.cleanup_pending, false);
    const bad = (field: string, value: unknown): void =>
      assert.throws(
        () => decodeServerMsg(JSON.stringify({ ...raw, assignment: { ...inner, [field]: value } })),
        (e: unknown) => e instanceof WireDecodeError && e.code === "invalid_message" && e.message.includes(`assignment.assignment.${field}`),
      );
    bad("state", "done");
    bad("lead", "sleeping");
    bad("backend", "docker");
  });
});

describe("project deliveries", () => {
  test("assignment_update and integration start a turn and say what to do", () => {
    const update = decodeServerMsg(fixture("server", "deliver.assignment_update"));
    assert.ok(update.type === "deliver");
    assert.equal(startsTurn(update.message.kind, update.message.text), true);
    const text = formatDelivery(update.message);
    assert.match(text, /^\[shepherd\] Assignment update from your Lead "app@feat\/export" \(0193a5c2-cccc-7b8a-9c3f-1e2d3c4b5a03\): /);
    assert.match(text, /one comes by itself after each turn the Lead completes; nothing to poll/);
    assert.match(text, /integrate_branch \{branch, sha\}/);
    assert.ok(text.endsWith(update.message.text), "the core's text whole, at the end");

    const integration = decodeServerMsg(fixture("server", "deliver.integration"));
    assert.ok(integration.type === "deliver");
    assert.equal(startsTurn(integration.message.kind, integration.message.text), true);
    assert.equal(
      formatDelivery(integration.message),
      `[shepherd] Integration outcome, decided by the human (via telegram:@ada):\n${integration.message.text}`,
    );
  });

  test("an assigned Lead's task names its branch, checkout and Manager, not ask_owner", () => {
    const task = decodeServerMsg(fixture("server", "deliver.task"));
    assert.ok(task.type === "deliver");
    const a = assignmentRecord();
    const text = formatDelivery(task.message, null, a);
    assert.ok(text.startsWith(leadTaskHeader(a)));
    assert.match(text, /Work assignment for app@feat\/export \(you are its Lead, working in the checkout \/home\/ada\/src\/app\.worktrees\/feat-export, delegated by the Manager "app"\)/);
    assert.match(text, /assignment update; use ask_supervisor/);
    assert.doesNotMatch(text, /ask_owner/);
    assert.match(formatDelivery(task.message), /ask_owner/, "a worker's task still says ask_owner");
  });
});

describe("the Manager's project tools", () => {
  test("only a Manager has them; a Lead and the Chief never", () => {
    for (const t of MANAGER_TOOLS) assert.ok(ROLE_TOOLS.manager.includes(t), t);
    assert.deepEqual(MANAGER_TOOLS, ["delegate_project", "resume_work", "stop_lead", "integrate_branch"]);
    const manager = roleTools("manager", LEAD);
    for (const t of MANAGER_TOOLS) assert.ok(manager.includes(t), t);
    const chief = roleTools("chief", LEAD);
    for (const t of MANAGER_TOOLS) assert.ok(!chief.includes(t), t);
    assert.deepEqual(leadTools([...LEAD, ...MANAGER_TOOLS]), LEAD);
  });
});

/** A stand-in for Pi's tool switches. */
class FakeTools implements WorkersHost {
  active: string[];
  footers: Array<string | null> = [];
  logs: string[] = [];
  constructor(active: string[]) {
    this.active = active;
  }
  activeTools(): string[] {
    return [...this.active];
  }
  setActiveTools(names: string[]): void {
    this.active = [...names];
  }
  allTools(): string[] {
    return [...ALL];
  }
  setFooter(text: string | null): void {
    this.footers.push(text);
  }
  log(line: string): void {
    this.logs.push(line);
  }
}

describe("an assigned Lead", () => {
  test("launched with SHEPHERD_ASSIGNMENT: a Lead from the start, bound by its assignment", () => {
    assert.equal(assignedLeadFromEnv({ SHEPHERD_ASSIGNMENT: "3" }), true);
    assert.equal(assignedLeadFromEnv({ SHEPHERD_ASSIGNMENT: "" }), false);
    assert.equal(assignedLeadFromEnv({}), false);
    const pi = new FakeTools([...LEAD]);
    const w = new Workers(pi, "nonce-lead", true);
    w.start();
    assert.equal(w.isWorker, false);
    assert.equal(w.launched, true);
    assert.deepEqual(pi.active, LEAD, "never held to a worker's tools");
    assert.equal(pi.footers.at(-1), "lead (assignment not bound yet)");
    w.registered(undefined, assignmentRecord());
    assert.deepEqual(pi.active, LEAD);
    assert.equal(pi.footers.at(-1), "lead · app@feat/export");
    // Without SHEPHERD_LAUNCH the variable means nothing.
    assert.equal(new Workers(new FakeTools([...LEAD]), null, true).launched, false);
  });

  test("launched with a nonce only, bound by its assignment: not a worker, its Lead tools back, its footer", () => {
    const pi = new FakeTools([...LEAD]);
    const w = new Workers(pi, "nonce-lead");
    w.start();
    assert.equal(w.isWorker, true, "until the core says what it is, a launched session is held to a worker's set");
    assert.ok(!pi.active.includes("ask_human"));
    w.registered(undefined, assignmentRecord());
    assert.equal(w.isWorker, false);
    assert.equal(w.launched, true);
    assert.equal(w.record, null);
    assert.equal(w.assignment?.branch, "feat/export");
    assert.deepEqual(pi.active, LEAD, "exactly the tools it had, without ask_owner");
    assert.equal(pi.footers.at(-1), "lead · app@feat/export");
    assert.ok(!pi.logs.some((l) => l.includes("sent neither")), "no worker record is not a problem for an assigned Lead");
    assert.match(w.describe() ?? "", /^Lead of the work assignment app@feat\/export \(checkout \/home\/ada\/src\/app\.worktrees\/feat-export/);
    // Registering again (a reconnect) keeps what the session has now.
    pi.active = [...LEAD, "find"];
    w.registered(undefined, assignmentRecord({ lead: "running" }));
    assert.deepEqual(pi.active, [...LEAD, "find"]);
    assert.equal(w.assignment?.lead, "running");
  });

  test("its result is kept while the core is away and sent once registered", async () => {
    const pi = new FakeTools([...LEAD]);
    const w = new Workers(pi, "nonce-lead");
    w.start();
    w.registered(undefined, assignmentRecord());
    const sent: string[] = [];
    let away = true;
    const results = new ResultSender({
      send: (text) => {
        if (away) return Promise.reject(new NotConnectedError("core away"));
        sent.push(text);
        return Promise.resolve({ id: 1, announced: false } as Report);
      },
      mode: () => null,
      supervising: () => false,
      keepUnsent: () => w.launched,
      log: () => undefined,
    });
    results.started();
    results.message({ role: "assistant", content: [{ type: "text", text: "Export done, tests green." }], stopReason: "stop" });
    await results.settled(false);
    assert.deepEqual(sent, []);
    away = false;
    await results.resend();
    assert.deepEqual(sent, ["Export done, tests green."]);
    await results.resend();
    assert.deepEqual(sent, ["Export done, tests green."], "once");
  });
});
