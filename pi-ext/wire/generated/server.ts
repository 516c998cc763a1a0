// Core → client: every response, error and event, its union and its list of types.
//
// Generated from the Rust protocol types (core/src/protocol/) by
// core/src/protocol/wire_gen: do not edit. After changing a protocol type run
//   SHEPHERD_REGENERATE=1 cargo test -p shepherd-core --lib protocol::wire_gen
// (CI fails while a generated file is stale).

import type { Json } from "../fields.ts";
import type { LeaveReason, Role, Ruling, WireErrorCode } from "./names.ts";
import type {
  AgentDef,
  Approval,
  Ask,
  Assignment,
  CoreStatus,
  Delivery,
  EdgeMessage,
  HostLink,
  HostMail,
  Integration,
  Lease,
  Pairing,
  Peek,
  Project,
  Report,
  ReportsTo,
  SavedFile,
  SessionDiff,
  SessionInfo,
  StaffMember,
  StaffView,
  StartedSession,
  UsageReport,
  Verdict,
  View,
  Worker,
} from "./records.ts";

/** Response to `hello`. */
export interface WelcomeMsg {
  type: "welcome";
  id: number;
  protocol: number;
  core_version: string;
  /** Identifies the database; delivery ids are unique within one store. */
  store_id: string;
  /** The core's pid. */
  pid: number;
}

/** Response to `register`: the session as stored, and how many deliveries follow. */
export interface RegisteredMsg {
  type: "registered";
  id: number;
  session: SessionInfo;
  pending: number;
  /**
   * Active pairings this session is in (as supervisor or worker), with whether
   * the other side is connected.
   */
  pairings: Pairing[];
  /**
   * Set when this session is a managed worker the core launched (bound by its
   * launch nonce): its record, so the extension offers `ask_owner`.
   */
  worker?: Worker;
  /**
   * Set when this session is the Lead the core launched for a work assignment
   * (bound by its launch nonce): its assignment.
   */
  assignment?: Assignment;
}

/** Response to `update`. */
export interface UpdatedMsg {
  type: "updated";
  id: number;
  session: SessionInfo;
}

/** Response to `ask`: the ask is stored and announced. */
export interface AskedMsg {
  type: "asked";
  id: number;
  ask: Ask;
}

/** Response to `report`. */
export interface ReportedMsg {
  type: "reported";
  id: number;
  report: Report;
}

/** Response to `answer`: this answer won and is on its way to the session. */
export interface AnsweredMsg {
  type: "answered";
  id: number;
  ask: Ask;
}

/**
 * Response to `send`: stored, and delivered now if the session is connected, else
 * on its next connection.
 */
export interface SentMsg {
  type: "sent";
  id: number;
  message_id: number;
  session_id: string;
  session_name: string;
  connected: boolean;
}

/** Response to `list_sessions`. */
export interface SessionsMsg {
  type: "sessions";
  id: number;
  sessions: SessionInfo[];
}

/** Response to `list_asks`. */
export interface AsksMsg {
  type: "asks";
  id: number;
  asks: Ask[];
}

/**
 * Response to `request_approval`: `allow` or `deny` at once (`rule` says why), or
 * `pending` with the approval that holds the call.
 */
export interface ApprovalRulingMsg {
  type: "approval_ruling";
  id: number;
  ruling: Ruling;
  rule: string;
  approval: Approval | null;
}

/** Response to `decide_approval` and `withdraw_approval`. */
export interface ApprovalMsg {
  type: "approval";
  id: number;
  approval: Approval;
}

/** Response to `list_approvals`. */
export interface ApprovalsMsg {
  type: "approvals";
  id: number;
  approvals: Approval[];
}

/** Response to `status`. */
export interface CoreStatusMsg {
  type: "core_status";
  id: number;
  status: CoreStatus;
}

/** Response to `subscribe`. */
export interface SubscribedMsg {
  type: "subscribed";
  id: number;
}

/** Response to `ping`. */
export interface PongMsg {
  type: "pong";
  id: number;
}

/** Response to `supervise`. */
export interface PairedMsg {
  type: "paired";
  id: number;
  pairing: Pairing;
}

/** Response to `unpair`. */
export interface UnpairedMsg {
  type: "unpaired";
  id: number;
  pairing: Pairing;
}

/** Response to `set_goal`. */
export interface GoalSetMsg {
  type: "goal_set";
  id: number;
  pairing: Pairing;
}

/** Response to `look`. */
export interface LookRequestedMsg {
  type: "look_requested";
  id: number;
  pairing: Pairing;
}

/** Response to `worker_view`. */
export interface ViewMsg {
  type: "view";
  id: number;
  view: View;
}

/** Response to `verdict`. `hint` is set when a steer repeats a recent one. */
export interface VerdictAcceptedMsg {
  type: "verdict_accepted";
  id: number;
  pairing: Pairing;
  verdict: Verdict;
  hint: string | null;
}

/** Response to `list_pairings`. */
export interface PairingsMsg {
  type: "pairings";
  id: number;
  pairings: Pairing[];
}

/**
 * Response to `unanswer`: the ask is open again and its former answer is queued
 * for the session as steer `message_id`.
 */
export interface UnansweredMsg {
  type: "unanswered";
  id: number;
  ask: Ask;
  message_id: number;
  session_name: string;
}

/**
 * Response to `interrupt`: stored, and delivered now if the session is connected,
 * else on its next connection. `was`: the session's status when it was asked
 * (`idle`: there was no run to abort; the steer still goes).
 */
export interface InterruptedMsg {
  type: "interrupted";
  id: number;
  message_id: number;
  session_id: string;
  session_name: string;
  connected: boolean;
  was: string;
}

/** Response to `list_reports`: oldest first. */
export interface ReportsMsg {
  type: "reports";
  id: number;
  reports: Report[];
}

/**
 * Response to `set_role`: the session with its new role, the role it had, and the
 * lease it now holds (none after leaving a role).
 */
export interface RoleSetMsg {
  type: "role_set";
  id: number;
  session: SessionInfo;
  previous: Role;
  lease: Lease | null;
}

/** Response to `list_roles`. */
export interface RolesMsg {
  type: "roles";
  id: number;
  leases: Lease[];
}

/**
 * Response to `release_role`: the lease as it was (its holder, connected or not),
 * now free.
 */
export interface RoleReleasedMsg {
  type: "role_released";
  id: number;
  lease: Lease;
}

/**
 * Response to `message_supervisor`: whom it went to, and as what (`message_id`
 * for a session's mailbox, `report_id` when it went to the human as a report).
 */
export interface RoutedMsg {
  type: "routed";
  id: number;
  to: ReportsTo;
  message_id: number | null;
  report_id: number | null;
  connected: boolean;
}

/** Response to `list_staff`. */
export interface StaffMsg {
  type: "staff";
  id: number;
  members: StaffMember[];
  /**
   * A Manager: its repository's assignments (not retired); the CLI and bridges:
   * every one.
   */
  assignments?: Assignment[];
}

/** Response to `inspect_staff`. */
export interface StaffViewMsg {
  type: "staff_view";
  id: number;
  view: StaffView;
}

/**
 * Response to `delegate_agent`, `continue_agent`, `steer_agent`,
 * `interrupt_agent`, `reply_agent` and `close_agent`: the worker as it is now.
 */
export interface WorkerMsg {
  type: "worker";
  id: number;
  worker: Worker;
}

/** Response to `list_workers`: by owner, then id. */
export interface WorkersMsg {
  type: "workers";
  id: number;
  workers: Worker[];
}

/** Response to `list_started`. */
export interface StartedSessionsMsg {
  type: "started_sessions";
  id: number;
  started: StartedSession[];
}

/** Response to `new_session`, `continue_session` and `close_session`. */
export interface SessionStartedMsg {
  type: "session_started";
  id: number;
  started: StartedSession;
}

/** Response to `diff`. */
export interface DiffedMsg {
  type: "diffed";
  id: number;
  diff: SessionDiff;
}

/** Response to `send_file`: saved, and the steer that names it stored. */
export interface FileSentMsg {
  type: "file_sent";
  id: number;
  file: SavedFile;
}

/** Response to `peek`. */
export interface PeekedMsg {
  type: "peeked";
  id: number;
  peek: Peek;
}

/** Response to `inspect_agent` and `read_agent_transcript`. */
export interface AgentTextMsg {
  type: "agent_text";
  id: number;
  worker: Worker;
  text: string;
}

/** Response to `list_agents`: the effective definitions by name, then the broken files. */
export interface AgentsMsg {
  type: "agents";
  id: number;
  agents: AgentDef[];
}

/** Response to `usage`. */
export interface UsageReplyMsg {
  type: "usage";
  id: number;
  report: UsageReport;
}

/**
 * Response to `delegate_project`, `resume_work` and `stop_lead`: the assignment
 * as it is now.
 */
export interface AssignmentMsg {
  type: "assignment";
  id: number;
  assignment: Assignment;
}

/** Response to `integrate_branch`. */
export interface IntegrationMsg {
  type: "integration";
  id: number;
  integration: Integration;
}

/** Response to `list_projects`: by repository name. */
export interface ProjectsMsg {
  type: "projects";
  id: number;
  projects: Project[];
}

/** Response to `list_hosts`: in the config's order. */
export interface HostsMsg {
  type: "hosts";
  id: number;
  hosts: HostLink[];
}

/** Response to `link_herd`. */
export interface HerdLinkedMsg {
  type: "herd_linked";
  id: number;
}

/** Response to `deliver_host_mail`: the mail is stored here (now, or before). */
export interface HostMailStoredMsg {
  type: "host_mail_stored";
  id: number;
  mail_id: number;
}

/** A request failed, or (without `id`) the connection did. */
export interface ErrorMsg {
  type: "error";
  id: number | null;
  code: WireErrorCode;
  message: string;
  details: Json;
}

/** Event to a Pi session: a message for it. Acknowledge with `ack`. */
export interface DeliverMsg {
  type: "deliver";
  message: Delivery;
}

/** Event to subscribers: a session connected. */
export interface SessionJoinedMsg {
  type: "session_joined";
  session: SessionInfo;
}

/** Event to subscribers: a connected session changed (status, name, model, …). */
export interface SessionChangedMsg {
  type: "session_changed";
  session: SessionInfo;
}

/**
 * Event to subscribers: a session's connection closed. `reason`: `closed` (it said
 * `bye`) or `lost` (no goodbye); absent when it said it comes straight back (a
 * `/reload`). `last_status`: what it was doing until then (`session.status` is
 * already `idle`).
 */
export interface SessionLeftMsg {
  type: "session_left";
  session: SessionInfo;
  reason?: LeaveReason;
  last_status?: string;
}

/** Event to subscribers: a session opened an ask. */
export interface AskOpenedMsg {
  type: "ask_opened";
  ask: Ask;
}

/** Event to subscribers: an ask got its answer. */
export interface AskAnsweredMsg {
  type: "ask_answered";
  ask: Ask;
}

/** Event to subscribers: a session posted a report. */
export interface ReportPostedMsg {
  type: "report_posted";
  report: Report;
}

/**
 * Event to subscribers: a session took or left a role (`session.role` is the new
 * one).
 */
export interface RoleChangedMsg {
  type: "role_changed";
  session: SessionInfo;
  previous: Role;
}

/**
 * Event to subscribers: a message along a supervisor or staff edge that touches a
 * Manager or the Chief.
 */
export interface EdgeMessageMsg {
  type: "edge_message";
  message: EdgeMessage;
}

/**
 * Event to a home core's CLI and bridge subscribers: a link dropped after it was
 * up (its sessions are unreachable, not gone), or came back after such a drop.
 */
export interface HostLinkMsg {
  type: "host_link";
  link: HostLink;
}

/**
 * Event to a linked home core (client kind `core`): mail up to the herd's Chief.
 * Sent again after each `subscribe` until `host_mail_ack` names its id.
 */
export interface HostMailMsg {
  type: "host_mail";
  mail: HostMail;
}

/** Event to subscribers: a managed worker was started, changed state or ended. */
export interface WorkerChangedMsg {
  type: "worker_changed";
  worker: Worker;
}

/** Event to subscribers: an assignment was created or changed (state, Lead, cleanup). */
export interface AssignmentChangedMsg {
  type: "assignment_changed";
  assignment: Assignment;
}

/**
 * Event to subscribers: an assigned Lead finished a turn; `text` is its final text,
 * also mailed to the repository's Manager role as `assignment_update`.
 */
export interface AssignmentUpdateMsg {
  type: "assignment_update";
  assignment: Assignment;
  text: string;
  message_id: number;
}

/**
 * Event to subscribers and to both sessions of the pairing: something changed.
 * Event to subscribers, and to the session whose call it holds: an approval was
 * opened, decided or withdrawn.
 */
export interface ApprovalChangedMsg {
  type: "approval_changed";
  approval: Approval;
}

export interface PairingEventMsg {
  type: "pairing_event";
  change: Json;
  pairing: Pairing;
  verdict: Verdict | null;
  /** Who caused it (`supervisor`, `cli`, `telegram:@alice`), when not the core. */
  by: string | null;
}

export type ServerMsg =
  | WelcomeMsg
  | RegisteredMsg
  | UpdatedMsg
  | AskedMsg
  | ReportedMsg
  | AnsweredMsg
  | SentMsg
  | SessionsMsg
  | AsksMsg
  | ApprovalRulingMsg
  | ApprovalMsg
  | ApprovalsMsg
  | CoreStatusMsg
  | SubscribedMsg
  | PongMsg
  | PairedMsg
  | UnpairedMsg
  | GoalSetMsg
  | LookRequestedMsg
  | ViewMsg
  | VerdictAcceptedMsg
  | PairingsMsg
  | UnansweredMsg
  | InterruptedMsg
  | ReportsMsg
  | RoleSetMsg
  | RolesMsg
  | RoleReleasedMsg
  | RoutedMsg
  | StaffMsg
  | StaffViewMsg
  | WorkerMsg
  | WorkersMsg
  | StartedSessionsMsg
  | SessionStartedMsg
  | DiffedMsg
  | FileSentMsg
  | PeekedMsg
  | AgentTextMsg
  | AgentsMsg
  | UsageReplyMsg
  | AssignmentMsg
  | IntegrationMsg
  | ProjectsMsg
  | HostsMsg
  | HerdLinkedMsg
  | HostMailStoredMsg
  | ErrorMsg
  | DeliverMsg
  | SessionJoinedMsg
  | SessionChangedMsg
  | SessionLeftMsg
  | AskOpenedMsg
  | AskAnsweredMsg
  | ReportPostedMsg
  | RoleChangedMsg
  | EdgeMessageMsg
  | HostLinkMsg
  | HostMailMsg
  | WorkerChangedMsg
  | AssignmentChangedMsg
  | AssignmentUpdateMsg
  | ApprovalChangedMsg
  | PairingEventMsg;

export const SERVER_TYPES: readonly ServerMsg["type"][] = [
  "welcome",
  "registered",
  "updated",
  "asked",
  "reported",
  "answered",
  "sent",
  "sessions",
  "asks",
  "approval_ruling",
  "approval",
  "approvals",
  "core_status",
  "subscribed",
  "pong",
  "paired",
  "unpaired",
  "goal_set",
  "look_requested",
  "view",
  "verdict_accepted",
  "pairings",
  "unanswered",
  "interrupted",
  "reports",
  "role_set",
  "roles",
  "role_released",
  "routed",
  "staff",
  "staff_view",
  "worker",
  "workers",
  "started_sessions",
  "session_started",
  "diffed",
  "file_sent",
  "peeked",
  "agent_text",
  "agents",
  "usage",
  "assignment",
  "integration",
  "projects",
  "hosts",
  "herd_linked",
  "host_mail_stored",
  "error",
  "deliver",
  "session_joined",
  "session_changed",
  "session_left",
  "ask_opened",
  "ask_answered",
  "report_posted",
  "role_changed",
  "edge_message",
  "host_link",
  "host_mail",
  "worker_changed",
  "assignment_changed",
  "assignment_update",
  "approval_changed",
  "pairing_event",
];
