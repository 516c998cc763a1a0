// The messages of protocol 2 (core/src/protocol/messages.rs): every request a client sends
// (ClientMsg) and every response and event the core sends (ServerMsg), as strict
// discriminated unions on `type` over the records of wire/records.ts, with the list of each
// side's type names.

import type {
  AgentDef,
  Ask,
  ClientKind,
  ContextUsage,
  CoreStatus,
  Delivery,
  EdgeMessage,
  Json,
  Lease,
  LeaveReason,
  Pairing,
  PairingChange,
  Registration,
  Report,
  ReportsTo,
  ResultsMode,
  Role,
  SessionInfo,
  StaffMember,
  StaffView,
  UsageReport,
  Verdict,
  VerdictKind,
  View,
  WireErrorCode,
} from "./records.ts";
import {
  PROJECT_CLIENT_TYPES,
  PROJECT_SERVER_TYPES,
  type Assignment,
  type ProjectClientMsg,
  type ProjectServerMsg,
} from "./projects.ts";
import {
  WORKER_CLIENT_TYPES,
  WORKER_SERVER_TYPES,
  type Worker,
  type WorkerClientMsg,
  type WorkerServerMsg,
} from "./workers.ts";

export const PROTOCOL_VERSION = 2;

export type HelloMsg = { type: "hello"; id: number; protocol: number; client: ClientKind; client_name?: string | null };
export type RegisterMsg = { type: "register"; id: number; session: Registration };
export type UpdateMsg = {
  type: "update";
  id: number;
  name?: string | null;
  model?: string | null;
  context?: ContextUsage | null;
  status?: string | null;
  cwd?: string | null;
  role?: Role | null;
  session_file?: string | null;
};
/** `key`: an idempotency key; the same ask or report sent again with it is stored once. */
export type AskMsg = {
  type: "ask";
  id: number;
  question: string;
  options?: string[];
  details?: string | null;
  key?: string;
};
export type ReportMsg = { type: "report"; id: number; text: string; key?: string };
export type AnswerMsg = { type: "answer"; id: number; ask: number; text: string; by?: string | null };
export type SendMsg = { type: "send"; id: number; to: string; text: string; by?: string | null };
export type AckMsg = { type: "ack"; ids: number[] };
export type ListSessionsMsg = { type: "list_sessions"; id: number; all?: boolean };
export type ListAsksMsg = { type: "list_asks"; id: number; all?: boolean; ask?: number | null };
export type StatusMsg = { type: "status"; id: number };
/** `serves`: bridges only, the bot they serve (`telegram:@name`); one live bridge per bot. */
export type SubscribeMsg = { type: "subscribe"; id: number; serves?: string | null };
export type PingMsg = { type: "ping"; id: number };
export type SuperviseMsg = {
  type: "supervise";
  id: number;
  worker?: string | null;
  supervisor?: string | null;
  goal?: string | null;
  cwd?: string | null;
  by?: string | null;
};
export type UnpairMsg = { type: "unpair"; id: number; session?: string | null; by?: string | null };
export type SetGoalMsg = {
  type: "set_goal";
  id: number;
  goal: string;
  session?: string | null;
  cwd?: string | null;
  by?: string | null;
};
export type LookMsg = { type: "look"; id: number; session?: string | null; by?: string | null };
export type WorkerViewMsg = { type: "worker_view"; id: number };
export type VerdictMsg = { type: "verdict"; id: number; verdict: VerdictKind; text?: string };
export type ListPairingsMsg = { type: "list_pairings"; id: number; all?: boolean };
export type UnanswerMsg = { type: "unanswer"; id: number; ask: number; by?: string | null };
export type InterruptMsg = { type: "interrupt"; id: number; session: string; then?: string | null; by?: string | null };
/** The session closes this connection on purpose; `returning`: it comes straight back (/reload). */
export type ByeMsg = { type: "bye"; returning?: boolean };
/** A run's final assistant text; `results` is this session's own setting. */
export type ResultMsg = { type: "result"; id: number; text: string; results?: ResultsMode | null; key?: string };
export type ListReportsMsg = {
  type: "list_reports";
  id: number;
  session?: string | null;
  limit?: number | null;
  after?: number | null;
};
/** Take a role (`manager`, `chief`) or leave the one held (`lead`); the core grants it. */
export type SetRoleMsg = { type: "set_role"; id: number; role: Role; reclaim?: boolean };
export type ListRolesMsg = { type: "list_roles"; id: number };
/** The human's (cli, bridge): a Pi session never sends it; declared so the wire knows every type. */
export type ReleaseRoleMsg = { type: "release_role"; id: number; role: Role; project?: string; by?: string };
/** A Lead or Manager: non-blocking mail to whom it reports (the human gets a report). */
export type MessageSupervisorMsg = { type: "message_supervisor"; id: number; text: string };
/** A Lead or Manager: an ask addressed to whom it reports (the human when nobody). */
export type AskSupervisorMsg = {
  type: "ask_supervisor";
  id: number;
  question: string;
  options?: string[];
  details?: string | null;
  key?: string;
};
export type ListStaffMsg = { type: "list_staff"; id: number };
/** `session`: an exact session id among the caller's staff. */
export type InspectStaffMsg = { type: "inspect_staff"; id: number; session: string };
export type MessageStaffMsg = { type: "message_staff"; id: number; session: string; text: string };
export type ListPeersMsg = { type: "list_peers"; id: number };
export type MessagePeerMsg = { type: "message_peer"; id: number; session: string; text: string };
/** The agent definitions in effect for `cwd` (absolute; a Pi session leaves it out for its own). */
export type ListAgentsMsg = { type: "list_agents"; id: number; cwd?: string | null };
/** Tokens and cost: a Pi session's own tree, or (`session`) one session of it and its tree. */
export type UsageMsg = { type: "usage"; id: number; session?: string | null };

/** Client → core (the managed-worker requests are in wire/workers.ts, project work in wire/projects.ts). */
export type ClientMsg =
  | WorkerClientMsg
  | ProjectClientMsg
  | HelloMsg
  | RegisterMsg
  | UpdateMsg
  | AskMsg
  | ReportMsg
  | AnswerMsg
  | SendMsg
  | AckMsg
  | ListSessionsMsg
  | ListAsksMsg
  | StatusMsg
  | SubscribeMsg
  | PingMsg
  | SuperviseMsg
  | UnpairMsg
  | SetGoalMsg
  | LookMsg
  | WorkerViewMsg
  | VerdictMsg
  | ListPairingsMsg
  | UnanswerMsg
  | InterruptMsg
  | ByeMsg
  | ResultMsg
  | ListReportsMsg
  | SetRoleMsg
  | ListRolesMsg
  | ReleaseRoleMsg
  | MessageSupervisorMsg
  | AskSupervisorMsg
  | ListStaffMsg
  | InspectStaffMsg
  | MessageStaffMsg
  | ListPeersMsg
  | MessagePeerMsg
  | ListAgentsMsg
  | UsageMsg;

export const CLIENT_TYPES: readonly ClientMsg["type"][] = [
  ...WORKER_CLIENT_TYPES,
  ...PROJECT_CLIENT_TYPES,
  "hello",
  "register",
  "update",
  "ask",
  "report",
  "answer",
  "send",
  "ack",
  "list_sessions",
  "list_asks",
  "status",
  "subscribe",
  "ping",
  "supervise",
  "unpair",
  "set_goal",
  "look",
  "worker_view",
  "verdict",
  "list_pairings",
  "unanswer",
  "interrupt",
  "bye",
  "result",
  "list_reports",
  "set_role",
  "list_roles",
  "release_role",
  "message_supervisor",
  "ask_supervisor",
  "list_staff",
  "inspect_staff",
  "message_staff",
  "list_peers",
  "message_peer",
  "list_agents",
  "usage",
];

export type WelcomeMsg = { type: "welcome"; id: number; protocol: number; core_version: string; store_id: string; pid: number };
export type RegisteredMsg = {
  type: "registered";
  id: number;
  session: SessionInfo;
  pending: number;
  /** Active pairings this session is in, on either side. */
  pairings: Pairing[];
  /** Set when this session is a managed worker the core launched and bound (by its launch nonce). */
  worker?: Worker;
  /** Set when this session is the Lead the core launched for a work assignment (bound by its launch nonce). */
  assignment?: Assignment;
};
export type UpdatedMsg = { type: "updated"; id: number; session: SessionInfo };
export type AskedMsg = { type: "asked"; id: number; ask: Ask };
export type ReportedMsg = { type: "reported"; id: number; report: Report };
export type AnsweredMsg = { type: "answered"; id: number; ask: Ask };
export type SentMsg = {
  type: "sent";
  id: number;
  message_id: number;
  session_id: string;
  session_name: string;
  connected: boolean;
};
export type SessionsMsg = { type: "sessions"; id: number; sessions: SessionInfo[] };
export type AsksMsg = { type: "asks"; id: number; asks: Ask[] };
export type CoreStatusMsg = { type: "core_status"; id: number; status: CoreStatus };
export type SubscribedMsg = { type: "subscribed"; id: number };
export type PongMsg = { type: "pong"; id: number };
export type ErrorMsg = { type: "error"; id: number | null; code: WireErrorCode; message: string; details: Json };
export type DeliverMsg = { type: "deliver"; message: Delivery };
export type SessionJoinedMsg = { type: "session_joined"; session: SessionInfo };
export type SessionChangedMsg = { type: "session_changed"; session: SessionInfo };
export type SessionLeftMsg = {
  type: "session_left";
  session: SessionInfo;
  /** `closed` (it said bye) or `lost`; absent when it comes straight back (/reload). */
  reason?: LeaveReason;
  /** What it was doing until it left. */
  last_status?: string;
};
export type AskOpenedMsg = { type: "ask_opened"; ask: Ask };
export type AskAnsweredMsg = { type: "ask_answered"; ask: Ask };
export type ReportPostedMsg = { type: "report_posted"; report: Report };
export type PairedMsg = { type: "paired"; id: number; pairing: Pairing };
export type UnpairedMsg = { type: "unpaired"; id: number; pairing: Pairing };
export type GoalSetMsg = { type: "goal_set"; id: number; pairing: Pairing };
export type LookRequestedMsg = { type: "look_requested"; id: number; pairing: Pairing };
export type ViewMsg = { type: "view"; id: number; view: View };
export type VerdictAcceptedMsg = {
  type: "verdict_accepted";
  id: number;
  pairing: Pairing;
  verdict: Verdict;
  /** Set when a steer repeats a recent one. */
  hint: string | null;
};
export type PairingsMsg = { type: "pairings"; id: number; pairings: Pairing[] };
export type UnansweredMsg = { type: "unanswered"; id: number; ask: Ask; message_id: number; session_name: string };
export type InterruptedMsg = {
  type: "interrupted";
  id: number;
  message_id: number;
  session_id: string;
  session_name: string;
  connected: boolean;
  /** The session's status when asked (`idle`: no run to abort). */
  was: string;
};
export type ReportsMsg = { type: "reports"; id: number; reports: Report[] };
export type PairingEventMsg = {
  type: "pairing_event";
  change: PairingChange;
  pairing: Pairing;
  verdict: Verdict | null;
  by: string | null;
};
/** `set_role`'s reply: the session with its new role, the role it had, the lease it holds now. */
export type RoleSetMsg = { type: "role_set"; id: number; session: SessionInfo; previous: Role; lease: Lease | null };
export type RolesMsg = { type: "roles"; id: number; leases: Lease[] };
export type RoleReleasedMsg = { type: "role_released"; id: number; lease: Lease };
/** `message_supervisor`'s reply: whom it went to (`message_id` to a session, `report_id` to the human). */
export type RoutedMsg = {
  type: "routed";
  id: number;
  to: ReportsTo;
  message_id: number | null;
  report_id: number | null;
  connected: boolean;
};
/** `assignments`: a Manager's repository's (not retired); absent when there are none. */
export type StaffMsg = { type: "staff"; id: number; members: StaffMember[]; assignments?: Assignment[] };
export type StaffViewMsg = { type: "staff_view"; id: number; view: StaffView };
/** `list_agents`' reply: the effective definitions by name, then the broken files. */
export type AgentsMsg = { type: "agents"; id: number; agents: AgentDef[] };
export type UsageReportMsg = { type: "usage"; id: number; report: UsageReport };
/** Event to subscribers: a session took or left a role. */
export type RoleChangedMsg = { type: "role_changed"; session: SessionInfo; previous: Role };
/** Event to subscribers: a supervisor or staff edge message touching a Manager or the Chief. */
export type EdgeMessageMsg = { type: "edge_message"; message: EdgeMessage };

/** Core → client: responses (with the request's id) and events (without); the worker replies are in wire/workers.ts, project work's in wire/projects.ts. */
export type ServerMsg =
  | WorkerServerMsg
  | ProjectServerMsg
  | WelcomeMsg
  | RegisteredMsg
  | UpdatedMsg
  | AskedMsg
  | ReportedMsg
  | AnsweredMsg
  | SentMsg
  | SessionsMsg
  | AsksMsg
  | CoreStatusMsg
  | SubscribedMsg
  | PongMsg
  | ErrorMsg
  | DeliverMsg
  | SessionJoinedMsg
  | SessionChangedMsg
  | SessionLeftMsg
  | AskOpenedMsg
  | AskAnsweredMsg
  | ReportPostedMsg
  | PairedMsg
  | UnpairedMsg
  | GoalSetMsg
  | LookRequestedMsg
  | ViewMsg
  | VerdictAcceptedMsg
  | PairingsMsg
  | PairingEventMsg
  | UnansweredMsg
  | InterruptedMsg
  | ReportsMsg
  | RoleSetMsg
  | RoleReleasedMsg
  | RolesMsg
  | RoutedMsg
  | StaffMsg
  | StaffViewMsg
  | AgentsMsg
  | UsageReportMsg
  | RoleChangedMsg
  | EdgeMessageMsg;

export const SERVER_TYPES: readonly ServerMsg["type"][] = [
  ...WORKER_SERVER_TYPES,
  ...PROJECT_SERVER_TYPES,
  "welcome",
  "registered",
  "updated",
  "asked",
  "reported",
  "answered",
  "sent",
  "sessions",
  "asks",
  "core_status",
  "subscribed",
  "pong",
  "error",
  "deliver",
  "session_joined",
  "session_changed",
  "session_left",
  "ask_opened",
  "ask_answered",
  "report_posted",
  "paired",
  "unpaired",
  "goal_set",
  "look_requested",
  "view",
  "verdict_accepted",
  "pairings",
  "pairing_event",
  "unanswered",
  "interrupted",
  "reports",
  "role_set",
  "roles",
  "role_released",
  "routed",
  "staff",
  "staff_view",
  "agents",
  "usage",
  "role_changed",
  "edge_message",
];

/** The id of the request a server message answers; null for events and connection errors. */
export function responseId(msg: ServerMsg): number | null {
  return "id" in msg ? msg.id : null;
}
