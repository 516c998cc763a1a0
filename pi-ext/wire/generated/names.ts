// The closed sets of names of the protocol, each with its list, and the error codes.
//
// Generated from the Rust protocol types (core/src/protocol/) by
// core/src/protocol/wire_gen: do not edit. After changing a protocol type run
//   SHEPHERD_REGENERATE=1 cargo test -p shepherd-core --lib protocol::wire_gen
// (CI fails while a generated file is stale).

export const PROTOCOL_VERSION = 3;

/**
 * What kind of program is on the other end of a connection.
 *
 * - `pi`: A Pi session running the shepherd extension.
 * - `bridge`: A chat bridge (Telegram, Matrix) acting for the human.
 * - `cli`: The `shepherd` command line, acting for the human.
 * - `core`: Another machine's shepherd core linked to this one (`shepherd link`): it acts for
 *   the human, with what the CLI may do.
 */
export type ClientKind = "pi" | "bridge" | "cli" | "core";
export const CLIENT_KINDS: readonly ClientKind[] = ["pi", "bridge", "cli", "core"];

/**
 * A session's place in the hierarchy (see DESIGN.md: Lead, Manager, Chief).
 *
 * - `lead`: An ordinary session that owns its task.
 * - `manager`: Coordinates one repository's worktree group.
 * - `chief`: One per user runtime, over managers and unmanaged leads.
 * - `supervisor`: A session that watches a worker toward a goal (`/supervise`). A free session with
 *   this role is what the human's `supervise <session> <goal>` pairs a worker with.
 */
export type Role = "lead" | "manager" | "chief" | "supervisor";
export const ROLES: readonly Role[] = ["lead", "manager", "chief", "supervisor"];

/**
 * A supervisor's answer to one look.
 *
 * - `steer`: One concrete next action, delivered to the worker as a user message.
 * - `let_it_run`: The worker is on track: nothing to say.
 * - `done`: The goal is met: the pairing ends with the text as evidence.
 */
export type VerdictKind = "steer" | "let_it_run" | "done";
export const VERDICT_KINDS: readonly VerdictKind[] = ["steer", "let_it_run", "done"];

/**
 * The `results` setting: which runs' results reach the phones. On the wire and in the
 * config a string: `all` (default), `asks_only` (only runs in which the session asked the
 * human) or `off`.
 */
export type ResultsMode = "all" | "asks_only" | "off";
export const RESULTS_MODES: readonly ResultsMode[] = ["all", "asks_only", "off"];

/**
 * Which direct edge a message travelled.
 *
 * - `supervisor`: `message_supervisor`: a Lead or Manager to whom it reports.
 * - `staff`: `message_staff`: a Manager or Chief to one of its staff.
 * - `peer`: `message_peer`: Lead to Lead, Manager to Manager.
 */
export type EdgeKind = "supervisor" | "staff" | "peer";
export const EDGE_KINDS: readonly EdgeKind[] = ["supervisor", "staff", "peer"];

/**
 * How far an allow reaches.
 *
 * - `once`: This call only.
 * - `session`: This call, and the calls the same rule would ask about, until the session ends.
 */
export type ApprovalScope = "once" | "session";
export const APPROVAL_SCOPES: readonly ApprovalScope[] = ["once", "session"];

/**
 * What kind of file the human sent: it decides what the session is told.
 *
 * - `image`: A photo or an image file: the model sees it (PNG, JPEG, GIF or WebP).
 * - `file`: Any other file: the steer names where it was saved.
 * - `voice`: A voice note or audio file: saved like a file; the steer carries its transcript when
 *   the bridge made one (`[phone] transcribe`).
 */
export type FileKind = "image" | "file" | "voice";
export const FILE_KINDS: readonly FileKind[] = ["image", "file", "voice"];

/** Whether a pairing is still running. */
export type PairingState = "active" | "ended";
export const PAIRING_STATES: readonly PairingState[] = ["active", "ended"];

/**
 * Why a pairing ended.
 *
 * - `done`: The supervisor's `done` verdict.
 * - `stopped`: Stopped without a verdict (`unpair`: the human, or the supervisor's `/supervise stop`).
 */
export type EndReason = "done" | "stopped";
export const END_REASONS: readonly EndReason[] = ["done", "stopped"];

/**
 * How a worker's process is hosted.
 *
 * - `tmux`: A window of the core's private tmux server (`shepherd attach <label>`).
 * - `headless`: A `pi --mode rpc` child of the core.
 */
export type WorkerBackend = "tmux" | "headless";
export const WORKER_BACKENDS: readonly WorkerBackend[] = ["tmux", "headless"];

/**
 * What a worker is doing, as far as its owner can act on it.
 *
 * - `starting`: Launched; its Pi session has not registered yet.
 * - `working`: Registered and on its assignment.
 * - `blocked`: Waiting: an `ask_owner` is pending (or it waits on its own workers).
 * - `settling`: Its result is stored and on its way to the owner; the process is stopped once the
 *   owner has it.
 * - `unknown`: Something registered that the core could not prove is this worker; no actions.
 * - `lost`: The process is gone before a result: only `close` and `transcript`.
 * - `done`: The owner got its result; the process is stopped (the Pi session file is kept).
 * - `closed`: Closed by its owner or the human before a result.
 */
export type WorkerState = "starting" | "working" | "blocked" | "settling" | "unknown" | "lost" | "done" | "closed";
export const WORKER_STATES: readonly WorkerState[] = [
  "starting",
  "working",
  "blocked",
  "settling",
  "unknown",
  "lost",
  "done",
  "closed",
];

/** Something an owner may do with a worker. */
export type WorkerAction = "steer" | "interrupt" | "reply" | "close" | "inspect" | "transcript";
export const WORKER_ACTIONS: readonly WorkerAction[] = [
  "steer",
  "interrupt",
  "reply",
  "close",
  "inspect",
  "transcript",
];

/**
 * Where an assignment stands. Only a successful removal of its checkout (by shepherd, or
 * proved by a complete worktree inventory) retires it.
 *
 * - `active`: Its Lead works on it (or is to be resumed after a crash or a restart).
 * - `paused`: `stop_lead` stopped its Lead; the session, branch and checkout are kept for
 *   `resume_work`.
 * - `retired`: Over: integrated and its checkout removed, or its checkout is gone. The branch and
 *   the session are kept; a new delegation may reuse the branch.
 */
export type AssignmentState = "active" | "paused" | "retired";
export const ASSIGNMENT_STATES: readonly AssignmentState[] = ["active", "paused", "retired"];

/**
 * Whether an assignment's Lead runs.
 *
 * - `starting`: Launched; its Pi session has not registered yet.
 * - `running`: Its session is connected.
 * - `stopped`: No process: stopped, exited, or not yet relaunched.
 */
export type LeadState = "starting" | "running" | "stopped";
export const LEAD_STATES: readonly LeadState[] = ["starting", "running", "stopped"];

/** Where an ask is. */
export type AskState = "open" | "answered";
export const ASK_STATES: readonly AskState[] = ["open", "answered"];

/**
 * What a kept [`Report`] is. On the wire a string: `report` or `result`.
 *
 * - `report`: Posted by the session with the `report` tool.
 * - `result`: A run's final assistant text.
 */
export type ReportKind = "report" | "result";
export const REPORT_KINDS: readonly ReportKind[] = ["report", "result"];

/**
 * How a `request_approval` was ruled.
 *
 * - `allow`: The call runs.
 * - `deny`: The call is blocked (`rule` says by which rule, or `approval.reason` why).
 * - `pending`: The call waits: `approval` is pending until `approval_changed` says otherwise.
 */
export type Ruling = "allow" | "deny" | "pending";
export const RULINGS: readonly Ruling[] = ["allow", "deny", "pending"];

/**
 * Where an approval stands.
 *
 * - `pending`: Waiting for a decision; the call is held.
 * - `allowed`: Allowed: the call runs.
 * - `denied`: Denied: the call is blocked, with `reason` when one was given.
 * - `withdrawn`: The session stopped waiting (it left, or its run was stopped) before a decision.
 */
export type ApprovalState = "pending" | "allowed" | "denied" | "withdrawn";
export const APPROVAL_STATES: readonly ApprovalState[] = ["pending", "allowed", "denied", "withdrawn"];

/**
 * Why a view was built.
 *
 * - `paired`: The pairing just started.
 * - `stopped`: The worker stopped (its turn ended).
 * - `timer`: The periodic timer.
 * - `look`: Someone asked for a look (`/supervise look`, `/look` from the phone).
 * - `request`: The supervisor's `worker_view` tool (returned, not delivered).
 */
export type ViewReason = "paired" | "stopped" | "timer" | "look" | "request";
export const VIEW_REASONS: readonly ViewReason[] = ["paired", "stopped", "timer", "look", "request"];

/** Whom a session's supervisor edge leads to. */
export type Superior = "manager" | "chief" | "human";
export const SUPERIORS: readonly Superior[] = ["manager", "chief", "human"];

/**
 * Where a started session's process stands.
 *
 * - `starting`: Launched; its Pi session has not registered yet.
 * - `running`: Its Pi session registered.
 * - `ended`: Its process is gone (closed, exited, or could not be started again).
 */
export type StartedState = "starting" | "running" | "ended";
export const STARTED_STATES: readonly StartedState[] = ["starting", "running", "ended"];

/**
 * Where an agent definition came from (`list_agents`), highest precedence first.
 *
 * - `project`: `<cwd>/.pi/agents/*.md`: overrides the global and bundled ones of the same name.
 * - `global`: `<agent dir>/agents/*.md`: overrides the bundled ones.
 * - `bundled`: Shipped inside shepherd (`scout`, `implementer`, `reviewer`).
 */
export type DefSource = "project" | "global" | "bundled";
export const DEF_SOURCES: readonly DefSource[] = ["project", "global", "bundled"];

/** A Pi thinking level, as Pi's `--thinking` takes it. */
export type Thinking = "off" | "minimal" | "low" | "medium" | "high" | "xhigh";
export const THINKINGS: readonly Thinking[] = ["off", "minimal", "low", "medium", "high", "xhigh"];

/**
 * How an `integrate_branch` ended.
 *
 * - `integrated`: The primary branch was fast-forwarded, the checkout removed, the assignment retired.
 * - `cleanup_pending`: The primary branch was fast-forwarded but the checkout could not be removed; the
 *   same call again finishes it.
 * - `awaiting_approval`: `[projects] integrate = "ask"`: the human was asked (`ask_id`); the outcome comes
 *   to the Manager as an `integration` delivery.
 */
export type IntegrationStatus = "integrated" | "cleanup_pending" | "awaiting_approval";
export const INTEGRATION_STATUSES: readonly IntegrationStatus[] = [
  "integrated",
  "cleanup_pending",
  "awaiting_approval",
];

/**
 * Where a link to a host stands.
 *
 * - `connecting`: The link command runs (or is about to run again) and the far core has not greeted
 *   it yet.
 * - `connected`: The far core greeted this one and its sessions are mirrored here.
 * - `failed`: The link command or the far core refused; `error` says why (it is tried again
 *   after a pause).
 */
export type LinkState = "connecting" | "connected" | "failed";
export const LINK_STATES: readonly LinkState[] = ["connecting", "connected", "failed"];

/**
 * Why a message is in a session's mailbox.
 *
 * - `steer`: The human (CLI, chat) steering the session.
 * - `message`: Another session writing to this one.
 * - `answer`: The answer to one of this session's asks.
 * - `view`: To a supervisor: what its worker did since the last look. The only delivery that
 *   should start a supervisor turn.
 * - `brief`: To a supervisor: context that must not start a turn (the pairing's brief, a goal
 *   change, the pairing's end).
 * - `interrupt`: The human interrupting the session: abort its current run, then (when `text` is
 *   not empty) steer it with `text`.
 * - `ask`: To a Manager or Chief: an ask addressed to its role (`ask_id`, `question`); answer
 *   it with `answer`. Starts a turn.
 * - `supervisor_message`: To a Manager or Chief: `message_supervisor` from a session that reports to it.
 * - `staff_message`: To a Lead or Manager: `message_staff` from its Manager or the Chief; a steer.
 * - `peer_message`: `message_peer` from a Lead to a Lead or a Manager to a Manager.
 * - `notice`: Information that must not start a turn (an ask addressed to this session's role
 *   was answered by someone else; the session's role changed).
 * - `task`: To a managed worker: its assignment. Starts a turn.
 * - `agent_result`: To a worker's owner: the worker's one final result
 *   (`Agent result · agent=… · definition=… · session=…`). Starts a turn.
 * - `agent_ask`: To a worker's owner: the worker's `ask_owner` (`ask_id`, `question`); answer it with
 *   `reply_agent`. Starts a turn.
 * - `assignment_update`: To a repository's Manager role: an assigned Lead finished a turn
 *   (`Assignment update · app@feat/a · head=…`, then its final text). Kept while no
 *   Manager holds the lease; the next one gets it. Starts a turn.
 * - `integration`: To a Manager: how an `integrate_branch` that waited for the human ended (approved
 *   and integrated, or denied with the human's reason). Starts a turn.
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

/**
 * How a session's connection ended, in `session_left`: it said goodbye (`bye`, Pi closed
 * the session) or the connection was lost without one (Pi exited or crashed).
 *
 * - `closed`: The session said `bye`: Pi closed it (quit, or switched to another session).
 * - `lost`: The connection closed without a `bye`.
 */
export type LeaveReason = "closed" | "lost";
export const LEAVE_REASONS: readonly LeaveReason[] = ["closed", "lost"];

/** The stable error codes (core/src/protocol/error_code.rs). */
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
  "unknown_approval",
  "already_decided",
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
  "host_unreachable",
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
