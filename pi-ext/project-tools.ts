// Project work's glue to Pi: a Manager's tools delegate_project, resume_work, stop_lead and
// integrate_branch, and how a work assignment reads to the model (also in list_staff). The
// tools are registered once and inactive; roles.ts activates them only while the session holds
// the Manager role (MANAGER_TOOLS) and takes them away when it leaves. The core decides
// everything that matters (who is the Manager, which branches and checkouts exist, whether an
// integration fast-forwards, whether the human must approve it); this file turns its answers
// into short text the model can act on and its refusals into `<what>: <the core's reason>`
// with `details.reason` (isError), so the model can act on them. Delegation never blocks: the
// Lead's results come back by themselves as `assignment_update` messages (inbox.ts), one per
// completed Lead turn, and an integration the human decides as an `integration` message.
// Nothing here throws into Pi.

import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

import type { CoreClient } from "./client.ts";
import { guarded, notRunning, refusal, result, type ToolGlue } from "./tool-glue.ts";
import type { Assignment, Integration, Json } from "./wire.ts";

/** What this file needs from the extension's per-session state (session.ts). */
export interface ProjectSession {
  ctx: ExtensionContext;
  readonly client: CoreClient;
  log(line: string): void;
  recordError(context: string, e: unknown): void;
}

// ---- what the model reads ----------------------------------------------------------------

function ago(ms: number, now: number): string {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  if (s < 86_400) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86_400)}d ago`;
}

function firstLine(text: string, max = 120): string {
  const line = text.split("\n").find((l) => l.trim() !== "")?.trim() ?? "";
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** `7 ahead / 0 behind main`, or nothing when git could not tell. */
function aheadBehind(a: Assignment): string | null {
  if (a.ahead === null && a.behind === null) return null;
  return `${a.ahead ?? "?"} ahead / ${a.behind ?? "?"} behind`;
}

/** One assignment as a line the model can act on: the branch first (every tool takes it). */
export function assignmentLine(a: Assignment, now: number): string {
  const parts = [`branch ${a.branch}`, a.state, `Lead ${a.lead} (session ${a.session_id})`];
  if (a.current_branch !== null && a.current_branch !== a.branch) parts.push(`checkout now on ${a.current_branch}`);
  parts.push(
    a.last_update_at === null || a.last_update === null
      ? "no update yet"
      : `last update ${ago(a.last_update_at, now)}: "${firstLine(a.last_update)}"`,
  );
  const ab = aheadBehind(a);
  if (ab !== null) parts.push(ab);
  if (a.head !== null) parts.push(`head ${a.head.slice(0, 7)}`);
  if (a.open_asks > 0) parts.push(`${a.open_asks} open ask${a.open_asks === 1 ? "" : "s"}`);
  if (a.cleanup_pending) parts.push("integrated, checkout removal pending (integrate_branch again finishes it)");
  if (a.checkout_missing != null) parts.push(`checkout moved or missing: ${a.checkout_missing}`);
  parts.push(`checkout ${a.checkout}`);
  return `- ${parts.join(" · ")}`;
}

/** The assignments part of list_staff (a Manager's repository's, not retired). */
export function assignmentsText(assignments: readonly Assignment[], now: number): string {
  if (assignments.length === 0) return "No work assignments: delegate_project starts one (a branch, its own checkout and a Lead).";
  const lines = assignments.map((a) => assignmentLine(a, now));
  return `Work assignments (${assignments.length}); each tool takes the branch:\n${lines.join("\n")}`;
}

/** What the Lead is doing, in one sentence. */
function leadState(a: Assignment): string {
  switch (a.lead) {
    case "starting":
      return `its Lead (session ${a.session_id}) is starting`;
    case "running":
      return `its Lead (session ${a.session_id}) is running`;
    case "stopped":
      return `its Lead (session ${a.session_id}) is stopped`;
  }
}

/** After delegate_project. */
export function delegatedText(a: Assignment): string {
  return (
    `Delegated ${a.project}@${a.branch}: branch ${a.branch}, checkout ${a.checkout}; ${leadState(a)}, assignment ${a.state}. ` +
    `Its results come back by themselves as assignment updates, one per completed Lead turn: do not poll; end your ` +
    `turn or keep working. Steer it with message_staff {session: "${a.session_id}"}; stop_lead / resume_work pause and resume it.`
  );
}

/** After resume_work. */
export function resumedText(a: Assignment): string {
  return `${a.project}@${a.branch}: ${leadState(a)} in ${a.checkout} (assignment ${a.state}). Its updates keep coming as assignment updates.`;
}

/** After stop_lead. */
export function stoppedText(a: Assignment): string {
  return (
    `Stopped the Lead of ${a.project}@${a.branch}: the assignment is ${a.state}; its session (${a.session_id}), branch and ` +
    `checkout ${a.checkout} are kept. resume_work {branch: "${a.branch}"} starts the same session again.`
  );
}

/** After integrate_branch: the status and the core's message. */
export function integrationText(i: Integration): string {
  const what = `${i.assignment.project}@${i.assignment.branch} into ${i.primary_branch} at ${i.sha.slice(0, 7)}`;
  switch (i.status) {
    case "integrated":
      return `Integrated ${what}. ${i.message}`;
    case "cleanup_pending":
      return `Integrated ${what}, but the checkout is not removed yet (cleanup_pending). ${i.message} Call integrate_branch again with the same sha to finish.`;
    case "awaiting_approval": {
      const ask = i.ask_id === null ? "" : ` (question #${i.ask_id})`;
      return (
        `Integration of ${what} awaits the human's approval${ask}. ${i.message} The outcome arrives as a message ` +
        `"[shepherd] Integration outcome"; do not poll or call integrate_branch again for it.`
      );
    }
  }
}

function assignmentDetails(a: Assignment): Record<string, Json> {
  return { assignment: a.id, branch: a.branch, checkout: a.checkout, session_id: a.session_id, state: a.state, lead: a.lead };
}

// ---- tools ---------------------------------------------------------------------------------

const NOT_RUNNING = notRunning({ reason: "not_running" });

const BRANCH = "The assignment's branch, as list_staff shows it (the branch it was delegated on).";

/** Registers the Manager's project tools (inactive; roles.ts activates them for a Manager). */
export function registerProjectTools(pi: ExtensionAPI, current: () => ProjectSession | null): void {
  const glue: ToolGlue<ProjectSession> = { current, notRunning: NOT_RUNNING, refusal };
  pi.registerTool({
    name: "delegate_project",
    label: "Delegate a project",
    description:
      "Manager only: hand a branch-sized objective (a feature, a fix: work for a whole branch) to a new Lead, which " +
      "the core starts in its own linked worktree of this repository on a new branch (from `base`, default the " +
      "primary branch's HEAD). Returns once the Lead's process started, never after the work. Its results come back " +
      "automatically as assignment updates, one per completed Lead turn: do not poll. Refused when the branch already " +
      "has an assignment (use resume_work) or its checkout is in use. For small bounded tasks use delegate_agent.",
    promptSnippet: "Start a Lead on a branch-sized objective in its own worktree; its updates arrive as messages",
    parameters: Type.Object({
      task: Type.String({ minLength: 1, description: "The objective, self-contained: what to build or fix, constraints, how to know it is done." }),
      branch: Type.Optional(Type.String({ minLength: 1, description: "The new branch's name (default: work/<slug of the task>)." })),
      base: Type.Optional(Type.String({ minLength: 1, description: "Branch, tag or commit to start from (default: the primary branch's HEAD)." })),
    }),
    defaultActive: false,
    execute: guarded(glue, "delegate_project", "Not delegated", async (s, params) => {
      const a = await s.client.delegateProject(params.task, params.branch ?? null, params.base ?? null);
      s.log(`delegate_project: ${a.project}@${a.branch} → Lead ${a.session_id} (${a.lead})`);
      return result(delegatedText(a), assignmentDetails(a));
    }),
  });

  pi.registerTool({
    name: "resume_work",
    label: "Resume a Lead",
    description:
      "Manager only: start an assignment's Lead again (after stop_lead, a crash or a restart): the same Pi session in " +
      "the same checkout, on whatever branch it has checked out. When it already runs, says so. A retired " +
      "(integrated) assignment cannot be resumed.",
    parameters: Type.Object({ branch: Type.String({ minLength: 1, description: BRANCH }) }),
    defaultActive: false,
    execute: guarded(glue, "resume_work", "Not resumed", async (s, params) => {
      const a = await s.client.leadAction("resume", params.branch);
      return result(resumedText(a), assignmentDetails(a));
    }),
  });

  pi.registerTool({
    name: "stop_lead",
    label: "Stop a Lead",
    description:
      "Manager only: stop an assignment's Lead and its workers, e.g. to pause work or before reviewing a stable " +
      "branch. The assignment becomes paused; its session, branch, checkout and uncommitted changes are kept; " +
      "resume_work starts it again.",
    parameters: Type.Object({ branch: Type.String({ minLength: 1, description: BRANCH }) }),
    defaultActive: false,
    execute: guarded(glue, "stop_lead", "Not stopped", async (s, params) => {
      const a = await s.client.leadAction("stop", params.branch);
      return result(stoppedText(a), assignmentDetails(a));
    }),
  });

  pi.registerTool({
    name: "integrate_branch",
    label: "Integrate a branch",
    description:
      "Manager only: after reviewing an assignment's branch, fast-forward the primary branch to it, then remove its " +
      "checkout and retire the assignment (the branch is kept). Give the branch tip's full sha you reviewed (`git " +
      "rev-parse <branch>`); a different tip, a non-fast-forward or a dirty primary worktree is refused and nothing " +
      "changes. The human may have to approve it first: then the outcome arrives later as an integration message.",
    parameters: Type.Object({
      branch: Type.String({ minLength: 1, description: BRANCH }),
      sha: Type.String({ minLength: 7, description: "The branch tip's commit sha you reviewed (full, from git rev-parse)." }),
    }),
    defaultActive: false,
    execute: guarded(glue, "integrate_branch", "Not integrated", async (s, params) => {
      const i = await s.client.integrateBranch(params.branch, params.sha);
      s.log(`integrate_branch ${params.branch} ${params.sha}: ${i.status}`);
      return result(integrationText(i), {
        status: i.status,
        ask_id: i.ask_id,
        sha: i.sha,
        primary_branch: i.primary_branch,
        ...assignmentDetails(i.assignment),
      });
    }),
  });
}
