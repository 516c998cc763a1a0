// Roles' glue to Pi: the `/manager` and `/chief` commands (and their `leave`), and the tools of
// the direct edges: message_supervisor, ask_supervisor, list_peers, message_peer (a Lead's and a
// Manager's), list_staff, inspect_staff, message_staff, answer_staff (a Manager's and the
// Chief's; a Manager's list_staff also lists its work assignments, as project-tools.ts words
// them). Every tool is registered once; roles.ts decides which are active (the staff tools
// start inactive, so a Lead's model never sees them). The core decides everything that matters
// (who holds a role, whom a session reports to, who is whose staff); this file turns its
// answers and refusals into text for the human or the model. Targets are exact session ids,
// as list_staff and list_peers show them. Nothing here throws into Pi.

import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

import { CoreError } from "./client.ts";
import type { HumanSession } from "./human-tools.ts";
import { assignmentsText } from "./project-tools.ts";
import type { Roles, StaffRole } from "./roles.ts";
import { askItem, askParameters, commandFailed, commandSession, guarded, message, notRunning, result, show, type ToolGlue, type ToolText } from "./tool-glue.ts";
import type { Ask, ReportsTo, SessionInfo, StaffMember } from "./wire.ts";

/** What this file needs from the extension's per-session state (session.ts): human-tools.ts's, and the role. */
export interface RoleSession extends HumanSession {
  readonly roles: Roles;
}

// ---- what the model reads ----------------------------------------------------------------

/** `manager "app" (id)`, `the Chief "boss" (id)`, `the human`. */
export function superiorText(to: ReportsTo): string {
  if (to.to === "human") return "the human";
  const who = to.session_name === null ? "" : ` "${to.session_name}"`;
  const id = to.session_id === null ? "" : ` (${to.session_id})`;
  return `your ${to.to === "manager" ? "Manager" : "Chief"}${who}${id}`;
}

/** After message_supervisor. */
export function routedText(r: { to: ReportsTo; messageId: number | null; reportId: number | null; connected: boolean }): string {
  if (r.to.to === "human") {
    const id = r.reportId === null ? "" : ` #${r.reportId}`;
    return `No Manager or Chief is above you now, so it went to the human as report${id}. No answer comes back.`;
  }
  const away = r.connected ? "" : " It is not connected right now; it gets the message when it returns.";
  return `Sent to ${superiorText(r.to)}.${away} No answer comes back unless they message you.`;
}

/** After ask_supervisor. */
export function askedText(ask: Ask): string {
  const to = ask.to;
  const whom =
    to === undefined
      ? "the human (no Manager or Chief is above you now)"
      : `the ${to.role === "manager" && to.project !== null ? `manager of ${to.project}` : to.role}${to.session_name === null ? "" : ` ("${to.session_name}")`}`;
  return (
    `Question #${ask.id} was sent to ${whom}. The answer will arrive as a new message beginning with ` +
    `"[shepherd] Answer to your question #${ask.id}". End your turn now; do not wait or poll for it.`
  );
}

function ago(ms: number, now: number): string {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  return `${Math.round(s / 3600)}h ago`;
}

/** One session as a line the model can act on: the exact id first. */
export function sessionLine(s: SessionInfo, now: number): string {
  const parts = [`${s.id}`, `"${s.name}"`, s.role];
  if (s.host !== undefined) parts.push(`on host ${s.host}`);
  if (s.project !== null) parts.push(`project ${s.project}`);
  if (s.branch !== null) parts.push(`branch ${s.branch}`);
  parts.push(s.connected ? s.status : "not connected");
  parts.push(`last active ${ago(s.last_seen, now)}`);
  parts.push(`${s.open_asks} open ask${s.open_asks === 1 ? "" : "s"}`);
  if (s.context_percent !== null) parts.push(`context ${Math.round(s.context_percent)}%`);
  return `- ${parts.join(" · ")}`;
}

export function staffText(members: readonly StaffMember[], now: number): string {
  if (members.length === 0) return "No staff right now: no session reports to you.";
  const lines = members.map((m) => sessionLine(m.session, now));
  return `Your staff (${members.length}); use the exact id with inspect_staff and message_staff:\n${lines.join("\n")}`;
}

export function peersText(sessions: readonly SessionInfo[], now: number): string {
  if (sessions.length === 0) return "No peers connected right now.";
  const lines = sessions.map((s) => sessionLine(s, now));
  return `Your peers (${sessions.length}); use the exact id with message_peer:\n${lines.join("\n")}`;
}

// ---- tools ---------------------------------------------------------------------------------

const NOT_RUNNING = notRunning({});

/** `<what>: <the reason>`, with `details.refused` (the core's code, or `not_connected`). */
function refusal(what: string, e: unknown): ToolText {
  const code = e instanceof CoreError ? e.code : "not_connected";
  return result(`${what}: ${message(e)}`, { refused: code }, true);
}

/** ask_supervisor while the core is away: queued in the session, sent once when it is back. */
export const QUEUED_ASK =
  "Queued, will be sent when shepherd is back: the shepherd core is not reachable right now " +
  "(starting or restarting), so the question waits in this session and goes to your supervisor " +
  "exactly once when it reconnects. The answer will arrive as a new message beginning with " +
  "\"[shepherd] Answer to your question\". End your turn now; do not wait or poll for it.";

const EXACT_ID = "The exact session id, as list_staff shows it (no names or prefixes).";
const EXACT_PEER_ID = "The exact session id, as list_peers shows it (no names or prefixes).";

/** Registers the commands and tools; `current` is the live session, or null. */
export function registerRoles(pi: ExtensionAPI, current: () => RoleSession | null): void {
  const glue: ToolGlue<RoleSession> = { current, notRunning: NOT_RUNNING, refusal };
  for (const role of ["manager", "chief"] as const satisfies readonly StaffRole[]) {
    const what =
      role === "manager"
        ? "Become the Manager of this repository (run in its primary worktree; one per repository); `/manager leave` returns to Lead"
        : "Become the Chief (one per core; Managers and Leads with no Manager report to it); `/chief leave` returns to Lead";
    pi.registerCommand(role, {
      description: what,
      handler: async (args, ctx) => {
        const s = commandSession(current, ctx);
        if (s === null) return;
        const word = args.trim().toLowerCase();
        if (word !== "" && word !== "leave") {
          show(ctx, `shepherd: usage: /${role} (take the role) or /${role} leave`, "warning");
          return;
        }
        try {
          const out = await s.roles.command(role, word === "leave");
          s.log(`/${role}${word === "" ? "" : ` ${word}`}: ${out.text}`);
          show(ctx, out.text, out.level);
        } catch (e) {
          commandFailed(s, ctx, `/${role}`, e);
        }
      },
    });
  }

  pi.registerTool({
    name: "message_supervisor",
    label: "Message your supervisor",
    description:
      "Send a message (progress, a finding, a warning) to whoever supervises this session: your repository's " +
      "Manager, else the Chief, else the human. Non-blocking: returns at once and no answer comes back. " +
      "Use ask_supervisor when you need a decision.",
    promptSnippet: "Tell your supervisor (Manager, Chief or the human) something, without asking",
    parameters: Type.Object({ message: Type.String({ minLength: 1, description: "What to tell your supervisor." }) }),
    execute: guarded(glue, "message_supervisor", "Not sent", async (s, params) => {
      const routed = await s.client.messageSupervisor(params.message);
      return result(routedText(routed), { to: routed.to.to, message_id: routed.messageId, report_id: routed.reportId });
    }),
  });

  pi.registerTool({
    name: "ask_supervisor",
    label: "Ask your supervisor",
    description:
      "Ask whoever supervises this session (your repository's Manager, else the Chief, else the human) a " +
      "question that needs their decision. Non-blocking: the question is sent at once and this tool returns " +
      "immediately; the answer arrives later as a new message beginning with \"[shepherd] Answer to your " +
      "question #<id>\". After calling it, end your turn: do not wait, poll or guess the answer.",
    promptSnippet: "Ask your supervisor (Manager, Chief or the human) a question; the answer arrives later as a message",
    promptGuidelines: ["After calling ask_supervisor, end your turn and wait for the answer message."],
    parameters: askParameters("Short answers to pick from (at most 10, each at most 100 characters).", "Context needed to decide."),
    async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
      const s = current();
      if (s === null) return NOT_RUNNING;
      s.ctx = ctx;
      const item = askItem(params, true);
      try {
        const sent = await s.sendOrQueue(item, () => s.client.askSupervisor(item.question, item.options, item.details, item.key));
        if ("queued" in sent) {
          s.log(`ask_supervisor ${item.key} queued`);
          return {
            ...result(QUEUED_ASK, { askId: null, queued: item.key }),
            terminate: true,
          };
        }
        const ask = sent.sent;
        s.openAsks.set(ask.id, ask);
        s.refreshStatusLine();
        s.log(`ask_supervisor: ask ${ask.id} to ${ask.to?.role ?? "the human"}`);
        const out = result(askedText(ask), { askId: ask.id, to: ask.to?.role ?? "human" });
        return { ...out, terminate: true };
      } catch (e) {
        s.recordError("ask_supervisor", e);
        return refusal("Not sent (nobody has seen this question)", e);
      }
    },
  });

  pi.registerTool({
    name: "list_peers",
    label: "List peers",
    description:
      "List the connected sessions you may message as peers (Leads for a Lead, Managers for a Manager), each " +
      "with its exact session id, name, branch and state.",
    parameters: Type.Object({}),
    execute: guarded(glue, "list_peers", "No list", async (s, _params) => {
      const peers = await s.client.listPeers();
      return result(peersText(peers, Date.now()), { peers: peers.map((p) => p.id) });
    }),
  });

  pi.registerTool({
    name: "message_peer",
    label: "Message a peer",
    description:
      "Send a message to a peer session (a Lead to a Lead, a Manager to a Manager), e.g. to coordinate changes " +
      "to shared files. The target is an exact session id from list_peers. Non-blocking; no answer comes back " +
      "unless they message you.",
    parameters: Type.Object({
      session: Type.String({ minLength: 1, description: EXACT_PEER_ID }),
      message: Type.String({ minLength: 1, description: "What to tell them." }),
    }),
    execute: guarded(glue, "message_peer", "Not sent", async (s, params) => {
      const sent = await s.client.messagePeer(params.session, params.message);
      const away = sent.connected ? "" : " (not connected right now; it gets it when it returns)";
      return result(`Sent to "${sent.session_name}" (${sent.session_id})${away}.`, { message_id: sent.message_id });
    }),
  });

  pi.registerTool({
    name: "list_staff",
    label: "List staff",
    description:
      "Manager or Chief only: list the sessions that report to you (a Manager: the Leads in its repository's " +
      "worktrees; the Chief: the Managers, and Leads with no Manager), each with its exact session id, name, " +
      "branch, state, last activity, open asks and context fill; for a Manager also its work assignments (branch, " +
      "state, Lead, last update, ahead/behind the primary branch).",
    parameters: Type.Object({}),
    defaultActive: false,
    execute: guarded(glue, "list_staff", "No list", async (s, _params) => {
      const { members, assignments } = await s.client.listStaff();
      const now = Date.now();
      // A Manager's list also has its repository's work assignments (the core sends them to a Manager only).
      const text =
        s.roles.role === "manager" || assignments.length > 0
          ? `${staffText(members, now)}\n\n${assignmentsText(assignments, now)}`
          : staffText(members, now);
      return result(text, { staff: members.map((m) => m.session.id), assignments: assignments.map((a) => a.branch) });
    }),
  });

  pi.registerTool({
    name: "inspect_staff",
    label: "Inspect staff",
    description:
      "Manager or Chief only: a bounded view (at most 16 KiB) of what one of your staff did recently: " +
      "messages, tool calls and results, errors, files and commits. The target is an exact session id from list_staff.",
    parameters: Type.Object({ session: Type.String({ minLength: 1, description: EXACT_ID }) }),
    defaultActive: false,
    execute: guarded(glue, "inspect_staff", "No view", async (s, params) => {
      const view = await s.client.inspectStaff(params.session);
      return result(view.text, { session_id: view.session_id, entries: view.entries });
    }),
  });

  pi.registerTool({
    name: "message_staff",
    label: "Message staff",
    description:
      "Manager or Chief only: steer one of your staff: the message arrives in that session as a steer from you " +
      "and starts its turn. The target is an exact session id from list_staff.",
    parameters: Type.Object({
      session: Type.String({ minLength: 1, description: EXACT_ID }),
      message: Type.String({ minLength: 1, description: "The instruction, as you would say it to them." }),
    }),
    defaultActive: false,
    execute: guarded(glue, "message_staff", "Not sent", async (s, params) => {
      const sent = await s.client.messageStaff(params.session, params.message);
      const away = sent.connected ? "" : " It is not connected right now; it gets the message when it returns.";
      return result(`Sent to "${sent.session_name}" (${sent.session_id}).${away}`, { message_id: sent.message_id });
    }),
  });

  pi.registerTool({
    name: "answer_staff",
    label: "Answer staff",
    description:
      "Manager or Chief only: answer a question one of your staff asked you with ask_supervisor (it arrived as " +
      "a message \"[shepherd] Question #<id> for you\"). The first answer wins: the human may have answered it " +
      "already, and then this is refused saying by whom.",
    parameters: Type.Object({
      ask: Type.Integer({ minimum: 1, description: "The question's number (#<id> in the message)." }),
      answer: Type.String({ minLength: 1, description: "Your answer, as they should read it." }),
      host: Type.Optional(
        Type.String({ minLength: 1, description: "For a question from a linked host: that host, as the message names it (`gpu` in ask gpu:17)." }),
      ),
    }),
    defaultActive: false,
    execute: guarded(glue, "answer_staff", "Not answered", async (s, params) => {
      const ask = await s.client.answer(params.ask, params.answer, params.host);
      const named = ask.host === undefined ? `#${ask.id}` : `${ask.host}:${ask.id}`;
      return result(`Answered question ${named} from "${ask.session_name}"; they get your answer as a message.`, { ask: ask.id });
    }),
  });
}
