// The Manager's project tools against a fake Pi and a fake core client: their exact names,
// registered inactive (roles.ts activates them for a Manager), what each sends to the core and
// tells the model (branch, checkout, Lead session, state; the integration's status and the
// core's message), refusals as the core words them (isError, details.reason), and list_staff
// listing the assignments.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";

import { CoreError, NotConnectedError, type CoreClient } from "../client.ts";
import { assignmentLine, assignmentsText, integrationText, registerProjectTools, type ProjectSession } from "../project-tools.ts";
import { registerRoles, type RoleSession } from "../role-tools.ts";
import type { Roles } from "../roles.ts";
import { decodeServerMsg, type Integration } from "../wire.ts";
import { assignmentRecord, fixture } from "./worker-fixtures.ts";

const NOW = 1_764_757_200_000;

interface ToolResultLike {
  content: Array<{ type: string; text: string }>;
  details: Record<string, unknown>;
  isError?: boolean;
}

interface RegisteredTool {
  name: string;
  description: string;
  defaultActive?: boolean;
  parameters: { properties: Record<string, unknown>; required?: string[] };
  execute(id: string, params: unknown, signal: unknown, onUpdate: unknown, ctx: ExtensionContext): Promise<ToolResultLike>;
}

class FakePi {
  readonly tools = new Map<string, RegisteredTool>();
  registerTool(tool: RegisteredTool): void {
    this.tools.set(tool.name, tool);
  }
  registerCommand(): void {}
  tool(name: string): RegisteredTool {
    const t = this.tools.get(name);
    assert.ok(t !== undefined, `tool ${name} registered`);
    return t;
  }
}

/** A fake core client: records calls, answers from `answer` (an Error is thrown). */
class FakeClient {
  calls: Array<{ method: string; args: unknown[] }> = [];
  answer: (method: string, args: unknown[]) => unknown = () => undefined;
  #call(method: string, args: unknown[]): Promise<never> {
    this.calls.push({ method, args });
    const out = this.answer(method, args);
    return out instanceof Error ? Promise.reject(out) : Promise.resolve(out as never);
  }
  delegateProject(...args: unknown[]): Promise<never> {
    return this.#call("delegateProject", args);
  }
  leadAction(...args: unknown[]): Promise<never> {
    return this.#call("leadAction", args);
  }
  integrateBranch(...args: unknown[]): Promise<never> {
    return this.#call("integrateBranch", args);
  }
  listStaff(): Promise<never> {
    return this.#call("listStaff", []);
  }
}

function integration(name: "integration" | "integration.integrated"): Integration {
  const msg = decodeServerMsg(fixture("server", name));
  assert.ok(msg.type === "integration");
  return msg.integration;
}

function harness(): { pi: FakePi; client: FakeClient; run: (tool: string, params: unknown) => Promise<ToolResultLike>; errors: string[] } {
  const pi = new FakePi();
  const client = new FakeClient();
  const errors: string[] = [];
  const ctx = { hasUI: false } as unknown as ExtensionContext;
  const session: ProjectSession & RoleSession = {
    ctx,
    client: client as unknown as CoreClient,
    roles: { role: "manager" } as unknown as Roles,
    openAsks: new Map(),
    sendOrQueue: () => Promise.reject(new Error("not used")),
    log: () => undefined,
    recordError: (context) => errors.push(context),
    refreshStatusLine: () => undefined,
  };
  registerProjectTools(pi as unknown as ExtensionAPI, () => session);
  registerRoles(pi as unknown as ExtensionAPI, () => session);
  return { pi, client, errors, run: (tool, params) => pi.tool(tool).execute("call-1", params, undefined, undefined, ctx) };
}

const text = (r: ToolResultLike): string => r.content.map((c) => c.text).join("");

describe("project tools", () => {
  test("registered under their exact names, inactive, each saying when to use it", () => {
    const { pi } = harness();
    for (const name of ["delegate_project", "resume_work", "stop_lead", "integrate_branch"]) {
      assert.equal(pi.tool(name).defaultActive, false, name);
    }
    assert.deepEqual(Object.keys(pi.tool("delegate_project").parameters.properties), ["task", "branch", "base"]);
    assert.deepEqual(pi.tool("delegate_project").parameters.required, ["task"]);
    assert.deepEqual(Object.keys(pi.tool("integrate_branch").parameters.properties), ["branch", "sha"]);
    assert.match(pi.tool("delegate_project").description, /branch-sized objective/);
    assert.match(pi.tool("delegate_project").description, /its own linked worktree/);
    assert.match(pi.tool("delegate_project").description, /automatically as assignment updates, one per completed Lead turn/);
    assert.match(pi.tool("integrate_branch").description, /after reviewing/);
    assert.match(pi.tool("integrate_branch").description, /branch tip's full sha/);
    assert.match(pi.tool("integrate_branch").description, /outcome arrives later as an integration message/);
  });

  test("delegate_project: sends task, branch and base; says branch, checkout, Lead session and state", async () => {
    const h = harness();
    h.client.answer = () => assignmentRecord();
    const r = await h.run("delegate_project", { task: "Add CSV export", branch: "feat/export" });
    assert.deepEqual(h.client.calls, [{ method: "delegateProject", args: ["Add CSV export", "feat/export", null] }]);
    assert.equal(r.isError, undefined);
    assert.match(
      text(r),
      /^Delegated app@feat\/export: branch feat\/export, checkout \/home\/ada\/src\/app\.worktrees\/feat-export; its Lead \(session 0193a5c2-cccc-7b8a-9c3f-1e2d3c4b5a03\) is starting, assignment active\./,
    );
    assert.match(text(r), /one per completed Lead turn: do not poll/);
    assert.deepEqual(r.details, {
      assignment: 3,
      branch: "feat/export",
      checkout: "/home/ada/src/app.worktrees/feat-export",
      session_id: "0193a5c2-cccc-7b8a-9c3f-1e2d3c4b5a03",
      state: "active",
      lead: "starting",
    });
  });

  test("a refusal returns the core's message and reason, as an error the model can act on", async () => {
    const h = harness();
    h.client.answer = () =>
      new CoreError("project_refused", "feat/export already has an assignment (Lead stopped); use resume_work {branch: \"feat/export\"}.", {
        reason: "branch_assigned",
      });
    const r = await h.run("delegate_project", { task: "again", branch: "feat/export" });
    assert.equal(r.isError, true);
    assert.equal(text(r), 'Not delegated: feat/export already has an assignment (Lead stopped); use resume_work {branch: "feat/export"}.');
    assert.deepEqual(r.details, { refused: "project_refused", reason: "branch_assigned" });
    assert.deepEqual(h.errors, ["delegate_project"]);

    h.client.answer = () => new NotConnectedError("core away");
    const away = await h.run("stop_lead", { branch: "feat/export" });
    assert.equal(away.isError, true);
    assert.match(text(away), /^Not stopped: the shepherd core is not reachable right now/);
  });

  test("resume_work and stop_lead: the Lead's state after", async () => {
    const h = harness();
    h.client.answer = (_m, args) =>
      args[0] === "resume" ? assignmentRecord({ lead: "running" }) : assignmentRecord({ state: "paused", lead: "stopped", pid: null });
    const resumed = await h.run("resume_work", { branch: "feat/export" });
    assert.equal(
      text(resumed),
      "app@feat/export: its Lead (session 0193a5c2-cccc-7b8a-9c3f-1e2d3c4b5a03) is running in /home/ada/src/app.worktrees/feat-export (assignment active). Its updates keep coming as assignment updates.",
    );
    const stopped = await h.run("stop_lead", { branch: "feat/export" });
    assert.match(text(stopped), /^Stopped the Lead of app@feat\/export: the assignment is paused; its session \(0193a5c2-cccc-7b8a-9c3f-1e2d3c4b5a03\), branch and checkout/);
    assert.match(text(stopped), /resume_work \{branch: "feat\/export"\} starts the same session again/);
    assert.deepEqual(
      h.client.calls.map((c) => c.args),
      [
        ["resume", "feat/export"],
        ["stop", "feat/export"],
      ],
    );
  });

  test("integrate_branch: waiting for the human, integrated, cleanup pending", async () => {
    const h = harness();
    h.client.answer = () => integration("integration");
    const sha = "4b1d2c3e5f60718293a4b5c6d7e8f90a1b2c3d4e";
    const waiting = await h.run("integrate_branch", { branch: "feat/export", sha });
    assert.deepEqual(h.client.calls.at(-1), { method: "integrateBranch", args: ["feat/export", sha] });
    assert.match(text(waiting), /^Integration of app@feat\/export into main at 4b1d2c3 awaits the human's approval \(question #21\)\. Waiting for the human/);
    assert.match(text(waiting), /arrives as a message "\[shepherd\] Integration outcome"/);
    assert.equal(waiting.details["status"], "awaiting_approval");
    assert.equal(waiting.details["ask_id"], 21);

    h.client.answer = () => integration("integration.integrated");
    const done = await h.run("integrate_branch", { branch: "feat/export", sha });
    assert.equal(
      text(done),
      "Integrated app@feat/export into main at 4b1d2c3. main fast-forwarded to 4b1d2c3; the checkout /home/ada/src/app.worktrees/feat-export was removed and the assignment retired (branch feat/export kept).",
    );
    assert.equal(done.details["state"], "retired");

    const pending = integrationText({ ...integration("integration.integrated"), status: "cleanup_pending", message: "Removing the checkout failed: busy." });
    assert.match(pending, /not removed yet \(cleanup_pending\)\. Removing the checkout failed: busy\. Call integrate_branch again with the same sha to finish\.$/);
  });

  test("list_staff lists the assignments: branch, state, Lead, last update, ahead/behind", async () => {
    const h = harness();
    const staff = decodeServerMsg(fixture("server", "staff.assignments"));
    assert.ok(staff.type === "staff");
    h.client.answer = () => ({ members: staff.members, assignments: staff.assignments ?? [] });
    const r = await h.run("list_staff", {});
    assert.match(text(r), /^Your staff \(1\);/);
    assert.match(text(r), /\n\nWork assignments \(1\); each tool takes the branch:\n- branch feat\/export · paused · Lead stopped \(session 0193a5c2-cccc/);
    assert.deepEqual(r.details["assignments"], ["feat/export"]);

    h.client.answer = () => ({ members: [], assignments: [] });
    assert.match(text(await h.run("list_staff", {})), /No work assignments: delegate_project starts one/);
  });

  test("an assignment's line", () => {
    const a = assignmentRecord({
      lead: "running",
      last_update_at: NOW - 300_000,
      last_update: "CSV export works.\nNext: escaping.",
      ahead: 2,
      behind: 0,
      open_asks: 1,
    });
    assert.equal(
      assignmentLine(a, NOW),
      '- branch feat/export · active · Lead running (session 0193a5c2-cccc-7b8a-9c3f-1e2d3c4b5a03) · last update 5m ago: "CSV export works." · ' +
        "2 ahead / 0 behind · head 9f3c2b1 · 1 open ask · checkout /home/ada/src/app.worktrees/feat-export",
    );
    assert.match(assignmentLine(assignmentRecord(), NOW), /· no update yet ·/);
    assert.match(assignmentLine(assignmentRecord({ current_branch: "wip" }), NOW), /checkout now on wip/);
    assert.match(assignmentsText([], NOW), /^No work assignments/);
  });
});
