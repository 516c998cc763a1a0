// The records of protocol 2 as TypeScript types (core/src/protocol/types.rs): sessions,
// asks, deliveries, reports, pairings, verdicts, views, the core's status, role leases and
// the direct edges between roles (whom a session reports to, staff, edge messages), the
// closed sets of names they use (roles, kinds, states, error codes) and JSON itself. Types and constant
// lists only; wire/decode.ts checks untrusted JSON against them.
//
// Field conventions, following serde on the Rust side:
// - Records the core sends are normalized: an `Option` field is `T | null` (absent reads as
//   null) and a defaulted list is always an array.
// - Client messages keep what they were built with: an optional field is either absent or,
//   where Rust accepts it, null. Fields Rust defaults without `Option` (ask.options,
//   register.session.context/status/role/subagent, list_*.all, verdict.text) must never be
//   null.
// - Unknown fields are dropped on decode (the protocol lets peers add optional fields).

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export type ClientKind = "pi" | "bridge" | "cli";
export const CLIENT_KINDS: readonly ClientKind[] = ["pi", "bridge", "cli"];

/**
 * `manager` and `chief` are granted by the core (set_role, from durable leases); a session
 * registers only with the hint `lead` or `supervisor` (free to supervise).
 */
export type Role = "lead" | "manager" | "chief" | "supervisor";
export const ROLES: readonly Role[] = ["lead", "manager", "chief", "supervisor"];

/** Context fill as Pi reports it; every part may be unknown (right after a compaction). */
export interface ContextUsage {
  tokens?: number | null;
  window?: number | null;
  percent?: number | null;
}

/** What a Pi session says about itself in `register`. Only session_id and cwd are required. */
export interface Registration {
  session_id: string;
  name?: string | null;
  cwd: string;
  pid?: number | null;
  model?: string | null;
  context?: ContextUsage;
  /** `idle`, `thinking` or `tool:<name>`. */
  status?: string;
  role?: Role;
  session_file?: string | null;
  /** A pi-subagents child (`PI_SUBAGENT_CHILD` set): never offered as a worker. */
  subagent?: boolean;
  /** A managed worker's one-time launch nonce (env `SHEPHERD_LAUNCH`); left out otherwise. */
  launch?: string | null;
}

/** A session as the core knows it. */
export interface SessionInfo {
  id: string;
  name: string;
  cwd: string;
  pid: number | null;
  model: string | null;
  status: string;
  role: Role;
  connected: boolean;
  context_tokens: number | null;
  context_window: number | null;
  context_percent: number | null;
  repo: string | null;
  branch: string | null;
  head: string | null;
  worktree: boolean;
  /** The repository's identity (its canonical common git dir), shared by its worktrees. */
  repo_id: string | null;
  /** The repository's name, for display (`manager · app`). */
  project: string | null;
  session_file: string | null;
  subagent: boolean;
  open_asks: number;
  pending_messages: number;
  first_seen: number;
  last_seen: number;
}

export type AskState = "open" | "answered";
export const ASK_STATES: readonly AskState[] = ["open", "answered"];

export interface Ask {
  id: number;
  session_id: string;
  session_name: string;
  question: string;
  options: string[];
  details: string | null;
  state: AskState;
  answer: string | null;
  answered_by: string | null;
  created_at: number;
  answered_at: number | null;
  /** For `ask_supervisor`: the role it is addressed to; absent for an ask to the human. */
  to?: AskTo;
}

/** Whom an `ask_supervisor` ask is addressed to: a role, and who held it then. */
export interface AskTo {
  role: Role;
  repo_id: string | null;
  project: string | null;
  session_id: string | null;
  session_name: string | null;
  /** For a managed worker's `ask_owner`: the worker's id; the ask is for its owner (`session_id`). */
  worker?: number;
}

/** A role lease the core granted: the Manager of a repository, or the Chief. */
export interface Lease {
  role: Role;
  repo_id: string | null;
  project: string | null;
  session_id: string;
  session_name: string;
  /** Whether the holder is connected now (a lease whose holder is away may be taken). */
  connected: boolean;
  since: number;
}

/** Whom a supervisor edge leads to. */
export type Superior = "manager" | "chief" | "human";
export const SUPERIORS: readonly Superior[] = ["manager", "chief", "human"];

/** A session's effective supervisor, computed by the core from the leases. */
export interface ReportsTo {
  to: Superior;
  session_id: string | null;
  session_name: string | null;
}

/** One session in a staff list (`list_staff`), with whom it reports to. */
export interface StaffMember {
  session: SessionInfo;
  reports_to: ReportsTo;
}

/** Which direct edge a message travelled. */
export type EdgeKind = "supervisor" | "staff" | "peer";
export const EDGE_KINDS: readonly EdgeKind[] = ["supervisor", "staff", "peer"];

/** A message along a direct edge that touches a Manager or the Chief (`edge_message`). */
export interface EdgeMessage {
  kind: EdgeKind;
  from_id: string;
  from_name: string;
  from_role: Role;
  to_id: string;
  to_name: string;
  to_role: Role;
  text: string;
  message_id: number;
  created_at: number;
}

/** Token counts and cost (US dollars) summed from Pi's usage records (core/src/protocol/usage.rs). */
export interface UsageTotals {
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
  total_tokens: number;
  cost: number;
  records: number;
}

/** One session of a usage report; all zero and `error` set when its file could not be counted. */
export interface SessionUsage extends UsageTotals {
  session_id: string;
  name: string;
  file: string | null;
  error?: string;
}

/** One model's row (`provider/model`; null for usage Pi records without a model). */
export interface ModelUsage extends UsageTotals {
  model: string | null;
}

/** `usage`: each session once, per-model rows by cost, the total, and what could not be counted. */
export interface UsageReport {
  sessions: SessionUsage[];
  models: ModelUsage[];
  total: UsageTotals;
  complete: boolean;
  missing: { session_id: string; reason: string }[];
}

/** `inspect_staff`: a bounded view (≤ 16 KiB) of what a staff session did recently. */
export interface StaffView {
  session_id: string;
  session_name: string;
  text: string;
  entries: number;
}

/** Where an agent definition came from (`list_agents`), highest precedence first. */
export type DefSource = "project" | "global" | "bundled";
export const DEF_SOURCES: readonly DefSource[] = ["project", "global", "bundled"];

/** A Pi thinking level, as Pi's `--thinking` takes it. */
export type Thinking = "off" | "minimal" | "low" | "medium" | "high" | "xhigh";
export const THINKING_LEVELS: readonly Thinking[] = ["off", "minimal", "low", "medium", "high", "xhigh"];

/**
 * An agent definition as `list_agents` lists it. `tools` null: Pi's default set; empty: none.
 * `agents`: the definitions a worker of it may delegate to (empty: a leaf). A broken file
 * has `error` set (it names the file and the field) and is listed under its file name when
 * its `name` cannot be read.
 */
export interface AgentDef {
  name: string;
  description: string;
  source: DefSource;
  path: string | null;
  model: string | null;
  thinking: Thinking | null;
  tools: string[] | null;
  exclude_tools: string[];
  agents: string[];
  enabled: boolean;
  error: string | null;
}

/**
 * `view` and `brief` go to supervisors (docs/PROTOCOL.md, Supervision); `interrupt` aborts
 * the current run, then steers with its text when that is not empty. Roles (protocol 2):
 * `ask` (an ask addressed to this session's role, answered with `answer`),
 * `supervisor_message` (from a session reporting to this one), `staff_message` (a steer
 * from this session's Manager or Chief), `peer_message`; `notice` is information that
 * must not start a turn. Project work: `assignment_update` (to a Manager: one completed turn
 * of an assigned Lead) and `integration` (to a Manager: how an integration that waited for
 * the human ended); both start a turn.
 */
export type DeliveryKind =
  | "steer"
  | "message"
  | "answer"
  | "view"
  | "brief"
  | "interrupt"
  | "ask"
  | "supervisor_message"
  | "staff_message"
  | "peer_message"
  | "notice"
  | "task"
  | "agent_result"
  | "agent_ask"
  | "assignment_update"
  | "integration";
export const DELIVERY_KINDS: readonly DeliveryKind[] = [
  "steer",
  "message",
  "answer",
  "view",
  "brief",
  "interrupt",
  "ask",
  "supervisor_message",
  "staff_message",
  "peer_message",
  "notice",
  "task",
  "agent_result",
  "agent_ask",
  "assignment_update",
  "integration",
];

/** Why a session left (`session_left.reason`): it said `bye`, or its connection was lost. */
export type LeaveReason = "closed" | "lost";
export const LEAVE_REASONS: readonly LeaveReason[] = ["closed", "lost"];

/** Who sent a delivery, stamped by the core from the sender's connection. */
export interface Sender {
  kind: ClientKind;
  session_id: string | null;
  name: string;
}

/** One message for a session; `id` is unique within the store named by `welcome.store_id`. */
export interface Delivery {
  id: number;
  kind: DeliveryKind;
  text: string;
  from: Sender;
  ask_id: number | null;
  question: string | null;
  /** For `view` and `brief`, and for steers from a supervisor: the pairing. */
  pairing_id: number | null;
  /** For `view`: the look's number within the pairing (1, 2, …). */
  look: number | null;
  created_at: number;
}

export type ReportKind = "report" | "result";
export const REPORT_KINDS: readonly ReportKind[] = ["report", "result"];

/** The `results` setting: which runs' results reach the phones. */
export type ResultsMode = "all" | "asks_only" | "off";
export const RESULTS_MODES: readonly ResultsMode[] = ["all", "asks_only", "off"];

export interface Report {
  id: number;
  session_id: string;
  session_name: string;
  text: string;
  created_at: number;
  /** `report` (the report tool) or `result` (a run's final text); absent from older cores: `report`. */
  kind: ReportKind;
  /** Whether the bridges were told (false: a result the `results` setting held back); absent: true. */
  announced: boolean;
}

export interface BridgeInfo {
  name: string;
  pid: number | null;
  connected_since: number;
}

export interface CoreStatus {
  core_version: string;
  protocol: number;
  pid: number;
  started_at: number;
  uptime_ms: number;
  state_dir: string;
  socket: string;
  sessions_connected: number;
  sessions_known: number;
  open_asks: number;
  bridges: BridgeInfo[];
}

export type PairingState = "active" | "ended";
export const PAIRING_STATES: readonly PairingState[] = ["active", "ended"];

/** A supervisor session watching a worker session toward a goal; held by the core. */
export interface Pairing {
  id: number;
  supervisor_id: string;
  supervisor_name: string;
  worker_id: string;
  worker_name: string;
  cwd: string;
  goal: string | null;
  goal_file: string | null;
  state: PairingState;
  looks: number;
  steers: number;
  created_at: number;
  last_look_at: number | null;
  ended_at: number | null;
  /** `done` or `stopped`. */
  end_reason: string | null;
  ended_by: string | null;
  evidence: string | null;
  supervisor_connected: boolean;
  worker_connected: boolean;
}

export type VerdictKind = "steer" | "let_it_run" | "done";
export const VERDICT_KINDS: readonly VerdictKind[] = ["steer", "let_it_run", "done"];

export interface Verdict {
  kind: VerdictKind;
  text: string;
  /** The look it answered (0 before the first view). */
  look: number;
  created_at: number;
}

export type ViewReason = "paired" | "stopped" | "timer" | "look" | "request";
export const VIEW_REASONS: readonly ViewReason[] = ["paired", "stopped", "timer", "look", "request"];

/** What the worker did since the previous view, compacted by the core. */
export interface View {
  pairing_id: number;
  look: number;
  reason: ViewReason;
  text: string;
  entries: number;
  pending_tool_calls: number;
  unchanged: boolean;
  created_at: number;
}

export type PairingChange = "started" | "goal" | "verdict" | "look" | "ended" | "presence";
export const PAIRING_CHANGES: readonly PairingChange[] = ["started", "goal", "verdict", "look", "ended", "presence"];

/** Stable error codes (core/src/protocol/error_code.rs). */
export const ERROR_CODES = [
  "frame_too_large",
  "truncated_frame",
  "malformed_frame",
  "unknown_type",
  "invalid_message",
  "hello_required",
  "hello_timeout",
  "protocol_mismatch",
  "already_greeted",
  "not_registered",
  "forbidden",
  "session_taken",
  "replaced",
  "unknown_session",
  "ambiguous_session",
  "unknown_ask",
  "already_answered",
  "limit_exceeded",
  "invalid_argument",
  "slow_consumer",
  "shutting_down",
  "already_paired",
  "not_paired",
  "no_candidate",
  "goal_unreadable",
  "verdict_refused",
  "runaway",
  "store_failed",
  "already_served",
  "internal",
  "already_delivered",
  "role_refused",
  "worker_refused",
  "project_refused",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];
/** A code this client may not know yet: new codes are a compatible protocol change. */
export type WireErrorCode = ErrorCode | (string & {});

/** Codes after which the core closes the connection. */
export const CLOSING_ERROR_CODES: ReadonlySet<string> = new Set<ErrorCode>([
  "frame_too_large",
  "truncated_frame",
  "malformed_frame",
  "hello_required",
  "hello_timeout",
  "protocol_mismatch",
  "replaced",
  "slow_consumer",
  "shutting_down",
]);
