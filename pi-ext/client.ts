// The requests the extension makes of the shepherd core, one typed method each, over the
// connection connection.ts keeps (hello, registration, reconnects, dispatch): asks, reports,
// results and presence updates; the supervision requests (supervise, unpair, set_goal, look,
// worker_view, verdict, list_pairings); the role requests (set_role, list_roles and the direct
// edges: message_supervisor, ask_supervisor, list_staff, inspect_staff, message_staff,
// list_peers, message_peer, and `answer` for answer_staff); the managed-worker requests
// (list_agents, delegate_agent, continue_agent, list_workers, steer/interrupt/reply/close_agent,
// inspect_agent, read_agent_transcript, and a worker's ask_owner); a Manager's project requests
// (delegate_project, resume_work, stop_lead, integrate_branch); a tool call's approval
// (request_approval, withdraw_approval); and the acks of deliveries.
// Each resolves with what the core answered, or fails with CoreError (the core refused it) or
// NotConnectedError (no registered connection, or it closed before the answer).

import { CoreConnection } from "./connection.ts";
import type {
  AgentDef,
  Approval,
  Ask,
  Assignment,
  ContextUsage,
  Integration,
  Json,
  Lease,
  Pairing,
  Report,
  ReportsTo,
  ResultsMode,
  Role,
  SentMsg,
  SessionInfo,
  StaffMember,
  StaffView,
  UsageReport,
  Verdict,
  VerdictKind,
  Ruling,
  View,
  Worker,
} from "./wire.ts";

export {
  CoreError,
  NotConnectedError,
  type CoreClientOptions,
  type CoreInfo,
  type PairingResponse,
  type Phase,
  type Problem,
} from "./connection.ts";

/** Fields `update` may change; absent ones stay as they are on the core. */
export interface PresenceUpdate {
  name?: string;
  model?: string;
  context?: ContextUsage;
  status?: string;
  cwd?: string;
  role?: Role;
  session_file?: string;
}

/** An ask's fields as the wire has them (ask, ask_supervisor): options, details and key only when given. */
function askFields(question: string, options: string[], details: string | null, key: string | undefined) {
  return {
    question,
    ...(options.length > 0 ? { options } : {}),
    ...(details !== null ? { details } : {}),
    ...(key !== undefined ? { key } : {}),
  };
}

export class CoreClient extends CoreConnection {
  // ---- requests ------------------------------------------------------------------------

  /** `key`: an idempotency key (the core stores a keyed ask once, however often sent). */
  async ask(question: string, options: string[], details: string | null, key?: string): Promise<Ask> {
    const res = await this.request((id) => ({ type: "ask", id, ...askFields(question, options, details, key) }));
    return res.ask;
  }

  async report(text: string, key?: string): Promise<Report> {
    const res = await this.request((id) => ({ type: "report", id, text, ...(key !== undefined ? { key } : {}) }));
    return res.report;
  }

  /** A run's final text; `results` is this session's own setting (null: the core's); `key` makes a resend harmless. */
  async result(text: string, results: ResultsMode | null, key: string | null = null): Promise<Report> {
    const res = await this.request(
      (id) => ({ type: "result", id, text, ...(results !== null ? { results } : {}), ...(key !== null ? { key } : {}) }),
    );
    return res.report;
  }

  /** This session's asks that are still open (the core lists every session's). */
  async openAsks(): Promise<Ask[]> {
    const res = await this.request((id) => ({ type: "list_asks", id, all: false }));
    const mine = this.session?.id;
    return res.asks.filter((a) => a.state === "open" && a.session_id === mine);
  }

  /** Send presence changes; a no-op while not registered (the next register carries them). */
  async update(fields: PresenceUpdate): Promise<void> {
    if (!this.ready) return;
    const res = await this.request((id) => ({ type: "update", id, ...fields }));
    this.rememberSession(res.session);
  }

  // ---- supervision -----------------------------------------------------------------------

  /** Become the supervisor of `worker` (absent: the one free session in this cwd). */
  async supervise(request: { worker?: string; goal?: string; cwd: string }): Promise<Pairing> {
    const res = await this.request((id) => ({ type: "supervise", id, ...request }));
    return res.pairing;
  }

  /** End this session's pairing without a verdict. */
  async unpair(): Promise<Pairing> {
    const res = await this.request((id) => ({ type: "unpair", id }));
    return res.pairing;
  }

  /** Replace the pairing's goal (text, or a path relative to `cwd`). */
  async setGoal(goal: string, cwd: string): Promise<Pairing> {
    const res = await this.request((id) => ({ type: "set_goal", id, goal, cwd }));
    return res.pairing;
  }

  /** Ask for a view now; it arrives as a `view` delivery. */
  async look(): Promise<Pairing> {
    const res = await this.request((id) => ({ type: "look", id }));
    return res.pairing;
  }

  /** What the worker did since the last view, returned (not delivered, not a look). */
  async workerView(): Promise<View> {
    const res = await this.request((id) => ({ type: "worker_view", id }));
    return res.view;
  }

  async verdict(verdict: VerdictKind, text: string): Promise<{ pairing: Pairing; verdict: Verdict; hint: string | null }> {
    const res = await this.request((id) => ({ type: "verdict", id, verdict, text }));
    return { pairing: res.pairing, verdict: res.verdict, hint: res.hint };
  }

  /** Active pairings (every session's). */
  async listPairings(): Promise<Pairing[]> {
    const res = await this.request((id) => ({ type: "list_pairings", id, all: false }));
    return res.pairings;
  }

  // ---- roles and direct edges ------------------------------------------------------------

  /**
   * Take a role (`manager`, `chief`) or leave the one held (`lead`): the session as it is
   * now. `reclaim`: asking again for the role the session file says it held (refused as
   * `released` if the human released it, or it expired, meanwhile).
   */
  async setRole(role: Role, reclaim = false): Promise<{ session: SessionInfo; previous: Role }> {
    const res = await this.request((id) => (reclaim ? { type: "set_role", id, role, reclaim } : { type: "set_role", id, role }));
    this.rememberSession(res.session);
    return { session: res.session, previous: res.previous };
  }

  /** Every lease the core holds: who is the Manager of which repository, who is the Chief. */
  async listRoles(): Promise<Lease[]> {
    const res = await this.request((id) => ({ type: "list_roles", id }));
    return res.leases;
  }

  /** Mail to whom this session reports (the human gets it as a report). */
  async messageSupervisor(text: string): Promise<{ to: ReportsTo; messageId: number | null; reportId: number | null; connected: boolean }> {
    const res = await this.request((id) => ({ type: "message_supervisor", id, text }));
    return { to: res.to, messageId: res.message_id, reportId: res.report_id, connected: res.connected };
  }

  /** An ask addressed to whom this session reports (`ask.to`; absent: the human). */
  async askSupervisor(question: string, options: string[], details: string | null, key?: string): Promise<Ask> {
    const res = await this.request((id) => ({ type: "ask_supervisor", id, ...askFields(question, options, details, key) }));
    return res.ask;
  }

  /** A Manager's or the Chief's direct staff, and (a Manager) its repository's work assignments. */
  async listStaff(): Promise<{ members: StaffMember[]; assignments: Assignment[] }> {
    const res = await this.request((id) => ({ type: "list_staff", id }));
    return { members: res.members, assignments: res.assignments ?? [] };
  }

  /** What one of this session's staff did recently (exact session id). */
  async inspectStaff(session: string): Promise<StaffView> {
    const res = await this.request((id) => ({ type: "inspect_staff", id, session }));
    return res.view;
  }

  /** Steer one of this session's staff (exact session id). */
  async messageStaff(session: string, text: string): Promise<Omit<SentMsg, "type" | "id">> {
    const res = await this.request((id) => ({ type: "message_staff", id, session, text }));
    return { message_id: res.message_id, session_id: res.session_id, session_name: res.session_name, connected: res.connected };
  }

  /** The connected sessions this one may message as peers. */
  async listPeers(): Promise<SessionInfo[]> {
    const res = await this.request((id) => ({ type: "list_peers", id }));
    return res.sessions;
  }

  /** Mail to a peer (exact session id). */
  async messagePeer(session: string, text: string): Promise<Omit<SentMsg, "type" | "id">> {
    const res = await this.request((id) => ({ type: "message_peer", id, session, text }));
    return { message_id: res.message_id, session_id: res.session_id, session_name: res.session_name, connected: res.connected };
  }

  /** Answer an ask addressed to the role this session holds (answer_staff); `host`: the
   * linked host the ask is on (the herd's Chief answering a question from there). */
  async answer(ask: number, text: string, host?: string): Promise<Ask> {
    const res = await this.request((id) => (host === undefined ? { type: "answer", id, ask, text } : { type: "answer", id, ask, text, host }));
    return res.ask;
  }

  // ---- managed workers ------------------------------------------------------------------

  /** Tokens and cost over this session and the workers it owns (each session once). */
  async usage(): Promise<UsageReport> {
    const res = await this.request((id) => ({ type: "usage", id }));
    return res.report;
  }

  /** The agent definitions in effect for this session's cwd (broken files with their error). */
  async listAgents(): Promise<AgentDef[]> {
    const res = await this.request((id) => ({ type: "list_agents", id }));
    return res.agents;
  }

  /** Start a worker on `task`; resolves once the core accepted it (never after the work). */
  async delegateAgent(definition: string, task: string, label: string | null, fork: string | null): Promise<Worker> {
    const res = await this.request(
      (id) => ({
        type: "delegate_agent",
        id,
        definition,
        task,
        ...(label !== null ? { label } : {}),
        ...(fork !== null ? { fork } : {}),
      }),
    );
    return res.worker;
  }

  /** A new generation on a saved worker session (its file path or id). */
  async continueAgent(session: string, task: string): Promise<Worker> {
    const res = await this.request((id) => ({ type: "continue_agent", id, session, task }));
    return res.worker;
  }

  /** This session's tree of workers (`all`: ended ones too). */
  async listWorkers(all = false): Promise<Worker[]> {
    const res = await this.request((id) => ({ type: "list_workers", id, all }));
    return res.workers;
  }

  /** steer_agent, interrupt_agent, reply_agent, close_agent: the worker as it is now. */
  async workerAction(
    action: "steer" | "interrupt" | "reply" | "close",
    agent: string,
    text: string,
  ): Promise<Worker> {
    const res = await this.request((id) => {
      switch (action) {
        case "steer":
          return { type: "steer_agent", id, agent, message: text };
        case "interrupt":
          return { type: "interrupt_agent", id, agent, message: text };
        case "reply":
          return { type: "reply_agent", id, agent, answer: text };
        case "close":
          return { type: "close_agent", id, agent };
      }
    });
    return res.worker;
  }

  /** inspect_agent (a live view) or read_agent_transcript (the saved conversation), ≤ 16 KiB. */
  async agentText(what: "inspect" | "transcript", agent: string): Promise<{ worker: Worker; text: string }> {
    const res = await this.request(
      (id) => (what === "inspect" ? { type: "inspect_agent", id, agent } : { type: "read_agent_transcript", id, agent }),
    );
    return { worker: res.worker, text: res.text };
  }

  /** A managed worker's question to its owner (`ask.to.worker` set); the reply comes as an answer. */
  async askOwner(question: string): Promise<Ask> {
    const res = await this.request((id) => ({ type: "ask_owner", id, question }));
    return res.ask;
  }

  // ---- project work (a Manager) ----------------------------------------------------------

  /** A branch + linked worktree + a Lead launched there on `task`; resolves once the Lead's process started. */
  async delegateProject(task: string, branch: string | null, base: string | null): Promise<Assignment> {
    const res = await this.request(
      (id) => ({
        type: "delegate_project",
        id,
        task,
        ...(branch !== null ? { branch } : {}),
        ...(base !== null ? { base } : {}),
      }),
    );
    return res.assignment;
  }

  /** resume_work (relaunch the same Lead session in its checkout) or stop_lead (pause it). */
  async leadAction(action: "resume" | "stop", branch: string): Promise<Assignment> {
    const res = await this.request(
      (id) => (action === "resume" ? { type: "resume_work", id, branch } : { type: "stop_lead", id, branch }),
    );
    return res.assignment;
  }

  /** Fast-forward the primary branch to `sha`, the assigned branch's tip (or ask the human to approve it). */
  async integrateBranch(branch: string, sha: string): Promise<Integration> {
    const res = await this.request((id) => ({ type: "integrate_branch", id, branch, sha }));
    return res.integration;
  }

  /** The approval policy's ruling on one tool call (the same approval when asked again). */
  async requestApproval(tool: string, input: Json, toolCallId: string): Promise<{ ruling: Ruling; rule: string; approval: Approval | null }> {
    const res = await this.request((id) => ({ type: "request_approval", id, tool, input, tool_call_id: toolCallId }));
    return { ruling: res.ruling, rule: res.rule, approval: res.approval };
  }

  /** A worker's owner decides one of that worker's held tool calls. */
  async approveAgent(agent: string, approval: number, decision: "allow" | "allow_session" | "deny", reason: string | null): Promise<Approval> {
    const res = await this.request((id) => ({
      type: "approve_agent",
      id,
      agent,
      approval,
      allow: decision !== "deny",
      scope: decision === "allow_session" ? "session" : "once",
      ...(reason !== null ? { reason } : {}),
    }));
    return res.approval;
  }

  /** Stop waiting for one of this session's pending approvals. */
  async withdrawApproval(approval: number): Promise<Approval> {
    const res = await this.request((id) => ({ type: "withdraw_approval", id, approval }));
    return res.approval;
  }

  /**
   * Acknowledge deliveries of `storeId`. Sent only on a registered connection to that same
   * store: an ack that cannot be sent is harmless (the core delivers again, and the
   * duplicate is acked then). Returns whether it was sent.
   */
  ack(storeId: string, ids: number[]): boolean {
    if (!this.ready || this.info?.storeId !== storeId || ids.length === 0) return false;
    return this.write({ type: "ack", ids });
  }

}
