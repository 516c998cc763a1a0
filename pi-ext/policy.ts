// The supervisor's policy and the brief that anchors it. The policy is the text that tells a
// supervising model how to behave; it comes from `<cwd>/.pi/SUPERVISOR.md`, else
// `<agent dir>/SUPERVISOR.md`, else the built-in one below. The brief is what the extension
// itself puts into the supervisor's context (a "shepherd-brief" custom message that never
// starts a turn) when a pairing starts and when a reload, resume or compaction left the
// context without it: the policy, the worker and the goal. File reading is injected so the
// lookup order can be tested without touching the disk.

import { readFileSync } from "node:fs";
import { join } from "node:path";

import type { Pairing } from "./wire.ts";

/** A policy file larger than this is cut (it is read into every supervisor's context). */
export const MAX_POLICY_BYTES = 64 * 1024;

export const BUILTIN_POLICY = `You supervise another coding-agent session (the worker) toward the goal below. You do not do the work yourself.

How a look goes:
1. A "[shepherd] Look N" message shows what the worker did since the previous look: its messages, tool calls and their results, errors, files and commits changed. Read it against the goal. Use read, grep, find or ls only to check a claim in the view.
2. Answer with exactly ONE verdict tool, then end your turn with one short line:
   - steer: the worker is off track, stuck, looping or about to make a mistake. Give ONE concrete next action it can do now ("Run the SSO tests before refactoring further."), not a lecture, not a list. Do not repeat a steer it already got; if it did not work, say something different or let it run.
   - let_it_run: the worker is making progress. Say nothing to it. This is the usual verdict.
   - done: the goal is met. Only with evidence from the views (tests that passed, the commit, the output that shows it), which you put in the tool's text. Never on the worker's word alone.
3. worker_view fetches the newest progress without waiting for the next look; set_goal changes the goal when the human asks for it.

Rules:
- Never write code, edit files or run commands for the worker; you have no tools for that on purpose.
- A view with a tool call still running, or nothing new, usually means let_it_run.
- If you need a decision only the human can make (the goal is unclear, a trade-off, a risk), do not guess: end your turn with a plain-text question to the human, a line ending with "?". It is sent to their phone and the answer comes back as a message.
- Keep every reply short. The worker never sees your replies, only your steers.`;

/** Where the policy came from: a file path, or "built-in". */
export interface Policy {
  text: string;
  source: string;
}

/** The policy files to try, in order. */
export function policyCandidates(cwd: string, agentDir: string): string[] {
  return [join(cwd, ".pi", "SUPERVISOR.md"), join(agentDir, "SUPERVISOR.md")];
}

/** Reads a file's text, or returns null when it is missing or unreadable. */
export type ReadText = (path: string) => string | null;

export const readTextFile: ReadText = (path) => {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
};

/** The first non-empty policy file, else the built-in policy. */
export function loadPolicy(cwd: string, agentDir: string, read: ReadText = readTextFile): Policy {
  for (const path of policyCandidates(cwd, agentDir)) {
    const text = read(path);
    if (text === null || text.trim() === "") continue;
    const bytes = Buffer.from(text, "utf8");
    const cut = bytes.length > MAX_POLICY_BYTES ? `${bytes.subarray(0, MAX_POLICY_BYTES).toString("utf8")}\n[… cut at ${MAX_POLICY_BYTES} bytes]` : text;
    return { text: cut.trim(), source: path };
  }
  return { text: BUILTIN_POLICY, source: "built-in" };
}

/** The worker as the model should name it. */
export function workerLabel(p: Pairing): string {
  return `"${p.worker_name}" (${p.worker_id.slice(0, 8)})`;
}

/** The goal line(s) of a brief or a status. */
export function goalText(p: Pairing): string {
  if (p.goal === null) {
    return "(none yet: steer is refused until a goal is set; ask the human for one, or let it run)";
  }
  return p.goal_file === null ? p.goal : `${p.goal}\n(read from ${p.goal_file})`;
}

/** The brief the extension injects when a pairing starts or has to be re-anchored. */
export function briefText(p: Pairing, policy: Policy, reanchor: boolean): string {
  const opening = reanchor
    ? `[shepherd] You are still supervising session ${workerLabel(p)} (pairing ${p.id}, ${p.looks} looks and ${p.steers} steers so far).`
    : `[shepherd] You now supervise session ${workerLabel(p)} in ${p.cwd} (pairing ${p.id}).`;
  return [
    opening,
    "",
    "## Goal",
    goalText(p),
    "",
    `## Policy (${policy.source})`,
    policy.text,
    "",
    "Your tools while supervising: worker_view, steer, let_it_run, done, set_goal, and read/grep/find/ls if you had them. Wait for the next look; do not start work now.",
  ].join("\n");
}
