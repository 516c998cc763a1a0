// The approval gate against a scripted core: allow and deny at once, a held call released
// by its approval_changed (and only its own), a re-ask after a reconnect finding the
// decision, the run stopped while waiting (withdrawn), and an unreachable core decided by
// the summary beside the socket (fail closed when a policy is on).

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { ApprovalGate, readSummary, type ApprovalCore, type Summary } from "../approvals.ts";
import { NotConnectedError } from "../client.ts";
import type { Approval, Json, Ruling } from "../wire.ts";

function approval(id: number, fields: Partial<Approval> = {}): Approval {
  return {
    id,
    session_id: "s",
    session_name: "fix-login",
    tool: "bash",
    subject: "git push",
    rule: "rule 1 of config.toml (tool bash, match \"git push*\", ask)",
    cwd: "/src/app",
    tool_call_id: `call-${id}`,
    state: "pending",
    created_at: 0,
    ...fields,
  };
}

type Answer = { ruling: Ruling; rule: string; approval: Approval | null } | Error;

/** A core that answers each request_approval with the next scripted answer. */
function core(answers: Answer[], withdrawn: number[] = []): ApprovalCore & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    requestApproval(_tool: string, _input: Json, toolCallId: string) {
      asked.push(toolCallId);
      const next = answers.shift();
      if (next === undefined) return Promise.reject(new Error("nothing scripted"));
      return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
    },
    withdrawApproval(id: number) {
      withdrawn.push(id);
      return Promise.resolve(approval(id, { state: "withdrawn", decided_by: "withdrawn: the session stopped waiting" }));
    },
  };
}

const quiet = () => {};
const none = (): Summary | null => null;

describe("ApprovalGate", () => {
  test("allow runs the call, deny blocks it naming the rule", async () => {
    const gate = new ApprovalGate(
      core([
        { ruling: "allow", rule: "no rule matches", approval: null },
        { ruling: "deny", rule: "rule 2 of config.toml (tool bash, regex \"rm -rf\", deny)", approval: null },
      ]),
      none,
      quiet,
    );
    assert.equal(await gate.check("bash", "c1", { command: "ls" }), undefined);
    const denied = await gate.check("bash", "c2", { command: "rm -rf /" });
    assert.equal(denied?.block, true);
    assert.match(denied?.reason ?? "", /rule 2 of config\.toml/);
  });

  test("a held call waits for its own decision; a denial's reason reaches the model", async () => {
    const gate = new ApprovalGate(core([{ ruling: "pending", rule: "r", approval: approval(4) }]), none, quiet);
    const held = gate.check("bash", "call-4", { command: "git push" });
    await new Promise((r) => setImmediate(r));
    assert.equal(gate.waiting, 1);
    gate.decided(approval(5, { state: "allowed" }));
    gate.decided(approval(4, { state: "pending" }));
    assert.equal(gate.waiting, 1, "another approval's decision, or none, releases nothing");
    gate.decided(approval(4, { state: "denied", decided_by: "telegram:@ada", reason: "push to a branch" }));
    const verdict = await held;
    assert.equal(verdict?.reason, "Denied by telegram:@ada: push to a branch. The call did not run.");
    assert.equal(gate.waiting, 0);
  });

  test("a decision that arrives before the call starts to wait still releases it", async () => {
    let release: (v: { ruling: Ruling; rule: string; approval: Approval | null }) => void = () => {};
    const core: ApprovalCore = {
      requestApproval: () => new Promise((resolve) => (release = resolve)),
      withdrawApproval: () => Promise.reject(new Error("not asked")),
    };
    const gate = new ApprovalGate(core, none, quiet);
    const held = gate.check("bash", "call-11", { command: "git push" });
    // The response and the decision in one read: the decision is dispatched first.
    release({ ruling: "pending", rule: "r", approval: approval(11) });
    gate.decided(approval(11, { state: "allowed", decided_by: "cli" }));
    const late = new Promise<string>((resolve) => setTimeout(() => resolve("still waiting"), 2000).unref());
    assert.equal(await Promise.race([held, late]), undefined);
    assert.equal(gate.waiting, 0);
  });

  test("after a reconnect the same call is asked about again and its decision found", async () => {
    const scripted = core([
      { ruling: "pending", rule: "r", approval: approval(7) },
      { ruling: "allow", rule: "r", approval: approval(7, { state: "allowed", decided_by: "cli" }) },
    ]);
    const gate = new ApprovalGate(scripted, none, quiet);
    const held = gate.check("bash", "call-7", { command: "git push" });
    await new Promise((r) => setImmediate(r));
    await gate.reattach();
    assert.equal(await held, undefined);
    assert.deepEqual(scripted.asked, ["call-7", "call-7"]);
  });

  test("stopping the run withdraws the approval and blocks the call", async () => {
    const withdrawn: number[] = [];
    const gate = new ApprovalGate(core([{ ruling: "pending", rule: "r", approval: approval(9) }], withdrawn), none, quiet);
    const stop = new AbortController();
    const held = gate.check("bash", "call-9", { command: "git push" }, stop.signal);
    await new Promise((r) => setImmediate(r));
    stop.abort();
    const verdict = await held;
    assert.deepEqual(withdrawn, [9]);
    assert.match(verdict?.reason ?? "", /withdrawn/);
  });

  test("an unreachable core: blocked when a policy is on, unless it says allow; nothing changes without one", async () => {
    const away = () => [new NotConnectedError("not connected")] as Answer[];
    const on = new ApprovalGate(core(away()), () => ({ active: true, whenUnreachable: "deny" }), quiet);
    const blocked = await on.check("bash", "c", { command: "ls" });
    assert.match(blocked?.reason ?? "", /could not rule on this call/);
    const lenient = new ApprovalGate(core(away()), () => ({ active: true, whenUnreachable: "allow" }), quiet);
    assert.equal(await lenient.check("bash", "c", { command: "ls" }), undefined);
    const never = new ApprovalGate(core(away()), none, quiet);
    assert.equal(await never.check("bash", "c", { command: "ls" }), undefined);
    const off = new ApprovalGate(core(away()), () => ({ active: false, whenUnreachable: "deny" }), quiet);
    assert.equal(await off.check("bash", "c", { command: "ls" }), undefined);
  });
});

describe("readSummary", () => {
  test("reads the file beside the socket; none is no policy; a bad one fails closed", () => {
    const files: Record<string, string> = { "/run/approvals.json": '{"active":true,"when_unreachable":"allow"}\n' };
    const read = (p: string) => {
      const text = files[p];
      if (text === undefined) throw Object.assign(new Error("missing"), { code: "ENOENT" });
      return text;
    };
    assert.deepEqual(readSummary("/run/shepherd.sock", read), { active: true, whenUnreachable: "allow" });
    assert.equal(readSummary("/elsewhere/shepherd.sock", read), null);
    files["/run/approvals.json"] = "{not json";
    assert.deepEqual(readSummary("/run/shepherd.sock", read), { active: true, whenUnreachable: "deny" });
  });
});
