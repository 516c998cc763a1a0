// The records inside messages, as the core writes them (decoders.ts reads them).
//
// Generated from the Rust protocol types (core/src/protocol/) by
// core/src/protocol/wire_gen: do not edit. After changing a protocol type run
//   SHEPHERD_REGENERATE=1 cargo test -p shepherd-core --lib protocol::wire_gen
// (CI fails while a generated file is stale).

import type {
  ApprovalScope,
  ApprovalState,
  AskState,
  AssignmentState,
  ClientKind,
  DefSource,
  DeliveryKind,
  EdgeKind,
  EndReason,
  IntegrationStatus,
  LeadState,
  LinkState,
  PairingState,
  ReportKind,
  Role,
  StartedState,
  Superior,
  Thinking,
  VerdictKind,
  ViewReason,
  WorkerAction,
  WorkerBackend,
  WorkerState,
} from "./names.ts";

/**
 * How full a session's context window is, as Pi reports it. Each part may be unknown
 * (Pi reports no token count right after a compaction).
 */
export interface ContextUsage {
  tokens?: number | null;
  window?: number | null;
  percent?: number | null;
}

/**
 * What a Pi session says about itself in `register`. The core ignores nothing silently:
 * every field is validated, and the pid is taken from the socket's peer credentials.
 */
export interface Registration {
  /** Pi's exact session id (`ctx.sessionManager.getSessionId()`). */
  session_id: string;
  /** Display name (`/name`); the core falls back to the first 8 characters of the id. */
  name?: string | null;
  /** Working directory; the core derives the repository context from it. */
  cwd: string;
  /** Informational only: the core records the peer's pid from the socket. */
  pid?: number | null;
  model?: string | null;
  context?: ContextUsage;
  /** `idle`, `thinking` or `tool:<name>`. */
  status?: string;
  role?: Role;
  /** Path of Pi's session file (JSONL), for supervisor views. */
  session_file?: string | null;
  /** A pi-subagents child (`PI_SUBAGENT_CHILD` set): never offered as a worker. */
  subagent?: boolean;
  /**
   * A managed worker's one-time launch nonce (`SHEPHERD_LAUNCH`): the core binds the
   * session to its worker record only with it (and the launched process's pid).
   */
  launch?: string | null;
}

/**
 * The herd's Chief, as the home core tells each linked core (`link_herd`): mail a linked
 * host's Manager (or a Lead with no Manager there) sends up goes to this session.
 */
export interface HerdChief {
  session_id: string;
  session_name: string;
}

/** A session as the core knows it; the records of `shepherd sessions --json`. */
export interface SessionInfo {
  id: string;
  name: string;
  cwd: string;
  /** The pid of the process on the socket (from SO_PEERCRED). */
  pid: number | null;
  model: string | null;
  status: string;
  role: Role;
  connected: boolean;
  context_tokens: number | null;
  context_window: number | null;
  context_percent: number | null;
  /** Repository root (work tree) containing `cwd`, if any. */
  repo: string | null;
  /** Current branch; `None` when detached or outside a repository. */
  branch: string | null;
  /** HEAD commit id. */
  head: string | null;
  /** Whether `cwd` is inside a linked worktree (not the main checkout). */
  worktree: boolean;
  /**
   * The repository's identity: its canonical common git directory, the same for the
   * primary checkout and every linked worktree. A Manager lease is held per `repo_id`.
   */
  repo_id: string | null;
  /** The repository's name (its primary checkout's directory), for display. */
  project: string | null;
  session_file: string | null;
  /** A pi-subagents child. */
  subagent: boolean;
  /** Open asks of this session. */
  open_asks: number;
  /** Messages accepted for this session and not yet acknowledged by it. */
  pending_messages: number;
  first_seen: number;
  last_seen: number;
  /** The linked host the session runs on (`[[hosts]]` name); absent for this core's own. */
  host?: string;
}

/**
 * A supervisor session watching a worker session toward a goal. Held by the core, so it
 * survives `/reload`, resume and core restarts.
 */
export interface Pairing {
  id: number;
  supervisor_id: string;
  supervisor_name: string;
  worker_id: string;
  worker_name: string;
  /** The worker's working directory when the pairing started. */
  cwd: string;
  /** What the worker should achieve; `None` until one is set (`steer` is refused then). */
  goal: string | null;
  /** The file the goal was read from, when it was given as a path. */
  goal_file: string | null;
  state: PairingState;
  /** Views delivered so far. */
  looks: number;
  /** Steers the supervisor gave so far. */
  steers: number;
  created_at: number;
  last_look_at: number | null;
  ended_at: number | null;
  /** `done` (the supervisor's verdict) or `stopped` (a `/supervise stop`, the human). */
  end_reason: EndReason | null;
  /** Who ended it (`supervisor`, `cli`, `telegram:@alice`, …). */
  ended_by: string | null;
  /** For `done`: the supervisor's evidence. */
  evidence: string | null;
  supervisor_connected: boolean;
  worker_connected: boolean;
  /**
   * The linked host it is on (`[[hosts]]` name), in a home core's listings and events;
   * absent for this core's own.
   */
  host?: string;
}

/** A managed worker: one Pi session the core launched for an owner, on one assignment. */
export interface Worker {
  id: number;
  /** `^[a-z][a-z0-9_-]{0,31}$`, unique among the owner's live workers. */
  label: string;
  /** The agent definition it runs. */
  definition: string;
  owner_id: string;
  owner_name: string;
  /** When the owner is itself a worker: that worker's id. */
  parent_worker: number | null;
  /** The worker's Pi session (chosen by the core at launch). */
  session_id: string;
  session_file: string | null;
  cwd: string;
  backend: WorkerBackend;
  state: WorkerState;
  /** What the caller may do now (the core re-checks on every call). */
  available_actions: WorkerAction[];
  /** The worker's `ask_owner` waiting for a reply. */
  pending_ask: number | null;
  /** The assignment's first 200 characters. */
  task: string;
  /** Whether the worker may start workers of its own (its definition lists `agents`). */
  delegates: boolean;
  created_at: number;
  updated_at: number;
  /**
   * The linked host it is on (`[[hosts]]` name), in a home core's listings and events;
   * absent for this core's own.
   */
  host?: string;
}

/** Token counts and cost summed over usage records. */
export interface UsageTotals {
  /** Input tokens (Pi's `input`: not read from a cache). */
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
  /** The sum of Pi's `totalTokens`. */
  total_tokens: number;
  /** US dollars: the sum of Pi's `cost.total` (Pi computes it from its model prices). */
  cost: number;
  /** How many usage records were summed. */
  records: number;
}

/** A work assignment: one branch of one repository, carried out by one Lead session. */
export interface Assignment {
  id: number;
  /** The repository's identity (its canonical common git directory). */
  repo_id: string;
  /** The repository's name (its primary worktree's directory). */
  project: string;
  /**
   * The branch it was created for; with `repo_id`, the handle. What the checkout has
   * checked out now may differ (`current_branch`).
   */
  branch: string;
  /** The branch checked out in the checkout when last seen (none: detached). */
  current_branch: string | null;
  /** The linked worktree the Lead works in. */
  checkout: string;
  /** The Lead's exact Pi session. */
  session_id: string;
  state: AssignmentState;
  lead: LeadState;
  backend: WorkerBackend;
  /** The Lead's process, while it has one. */
  pid: number | null;
  /** The task's first 200 characters. */
  task: string;
  /** Who delegated it (the Manager's session name). */
  created_by: string;
  created_by_id: string | null;
  created_at: number;
  updated_at: number;
  /** The newest update's time and first 200 characters. */
  last_update_at: number | null;
  last_update: string | null;
  /** The checkout's HEAD when last seen. */
  head: string | null;
  /**
   * Commits on the branch not on the primary branch, and the reverse (read from git
   * for listings; none when git could not tell).
   */
  ahead: number | null;
  behind: number | null;
  /** The Lead's open asks. */
  open_asks: number;
  /** Tokens and cost of the Lead's tree (the Lead and its workers), for listings. */
  usage: UsageTotals | null;
  /** The sha the primary branch was fast-forwarded to, once integrated. */
  integrated_sha: string | null;
  /**
   * Integrated, but removing the checkout failed: `integrate_branch` with the same sha
   * finishes it.
   */
  cleanup_pending: boolean;
  /**
   * Listings: the checkout is not at its path but git still records it (moved, renamed
   * or deleted by hand): what git records and how to repair it. The assignment is kept
   * and git's records are not touched until git has forgotten the worktree.
   */
  checkout_missing?: string;
  /**
   * The linked host it is on (`[[hosts]]` name), in a home core's listings and events;
   * absent for this core's own.
   */
  host?: string;
}

/**
 * Whom an `ask_supervisor` ask is addressed to: a role (the Manager of one repository,
 * or the Chief), and the session that held it when the ask was opened or last handed
 * over. Whoever holds the role now may answer.
 */
export interface AskTo {
  /** `manager` or `chief`. */
  role: Role;
  /** For `manager`: the repository (`repo_id`) whose Manager it is for. */
  repo_id: string | null;
  /** For `manager`: the repository's name, for display (`→ manager of app`). */
  project: string | null;
  /** The session that held the role when the ask was opened or handed over. */
  session_id: string | null;
  session_name: string | null;
  /**
   * For a managed worker's `ask_owner`: the worker. The ask is then for its owner
   * (`session_id`) alone; `role` is the owner's role, for display.
   */
  worker?: number;
}

/** A question from a session that needs a decision. */
export interface Ask {
  id: number;
  session_id: string;
  session_name: string;
  question: string;
  options: string[];
  details: string | null;
  state: AskState;
  answer: string | null;
  /** Who answered, as a display label (`cli`, `telegram:@alice`, …). */
  answered_by: string | null;
  created_at: number;
  answered_at: number | null;
  /**
   * For `ask_supervisor`: the role the ask is addressed to (its holder may answer it;
   * the human always can). Absent: the ask is for the human (`ask`).
   */
  to?: AskTo;
  /**
   * The linked host the ask is on (`[[hosts]]` name), in the home core's listings and
   * events for the CLI and the bridges; absent for this core's own.
   */
  host?: string;
}

/**
 * Information a session posted for whoever supervises it: a report (the `report` tool)
 * or a run's result (its final assistant text, sent by the extension when the run ends).
 */
export interface Report {
  id: number;
  session_id: string;
  session_name: string;
  text: string;
  created_at: number;
  /** `report` or `result`. Absent (older cores): `report`. */
  kind: ReportKind;
  /**
   * Whether it went to the subscribed bridges (`report_posted`). False only for a
   * result the `results` setting held back (`off`, or `asks_only` for a run without an
   * ask); it is kept and listed all the same. Absent: true.
   */
  announced: boolean;
  /**
   * The linked host the session is on (`[[hosts]]` name), in a home core's
   * `report_posted` to its bridges and CLI; absent for this core's own.
   */
  host?: string;
}

/** One tool call held for a decision. */
export interface Approval {
  id: number;
  session_id: string;
  session_name: string;
  /**
   * The tool (`bash`, `write`, …) and what the policy matched: the command, the path,
   * or the arguments as JSON (at most 4 KiB shown).
   */
  tool: string;
  subject: string;
  /** The rule that asked (`rule 1 of the careful preset in …`). */
  rule: string;
  /** The session's directory. */
  cwd: string;
  /** Pi's id of the held call. */
  tool_call_id: string;
  state: ApprovalState;
  /** For an allow: once or for the session. */
  scope?: ApprovalScope;
  /** Who decided (`cli`, `telegram:@ada`), or why it was withdrawn. */
  decided_by?: string;
  /** A denial's reason, which the model reads. */
  reason?: string;
  created_at: number;
  decided_at?: number;
  /**
   * The linked host the session is on (`[[hosts]]` name), in a home core's listings
   * and events; absent for this core's own. Its id is that core's.
   */
  host?: string;
}

/** A connected chat bridge, as `status` lists it. */
export interface BridgeInfo {
  name: string;
  pid: number | null;
  connected_since: number;
}

/** What `shepherd status` shows. */
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

/**
 * What the worker did since the previous view, compacted by the core from its session
 * file (no model calls).
 */
export interface View {
  pairing_id: number;
  /** The look number this view is (for `request`: the current look, not advanced). */
  look: number;
  reason: ViewReason;
  /** The rendered view: what the supervisor reads. */
  text: string;
  /** Session-file entries covered by this view. */
  entries: number;
  /** Tool calls of the worker that have no result yet. */
  pending_tool_calls: number;
  /** Nothing happened since the previous view. */
  unchanged: boolean;
  created_at: number;
}

/** One verdict, as stored and as shown to the human. */
export interface Verdict {
  kind: VerdictKind;
  text: string;
  /** The look it answered (0 before the first view). */
  look: number;
  created_at: number;
}

/** One role lease the core granted: the Manager of a repository, or the Chief. */
export interface Lease {
  /** `manager` or `chief`. */
  role: Role;
  /** For `manager`: the repository's identity and name. */
  repo_id: string | null;
  project: string | null;
  session_id: string;
  session_name: string;
  /** Whether the holder is connected now. A lease whose holder is away may be taken. */
  connected: boolean;
  since: number;
  /**
   * The linked host it is on (`[[hosts]]` name), in a home core's listings and events;
   * absent for this core's own.
   */
  host?: string;
}

/**
 * Who a session reports to: its effective supervisor, computed by the core from the
 * leases when asked (the Manager of its repository, else the Chief, else the human).
 */
export interface ReportsTo {
  /** `manager`, `chief` or `human`. */
  to: Superior;
  session_id: string | null;
  session_name: string | null;
}

/** A session in a staff tree (`list_staff`): the session and whom it reports to. */
export interface StaffMember {
  session: SessionInfo;
  reports_to: ReportsTo;
}

/**
 * What `inspect_staff` returns: a bounded view of what a staff session did recently,
 * built from its session file by the supervisor view builder.
 */
export interface StaffView {
  session_id: string;
  session_name: string;
  /** The rendered view (at most 16 KiB). */
  text: string;
  /** Session-file entries it covers. */
  entries: number;
}

/** A session the human started (or continued) through the core. */
export interface StartedSession {
  /** The launch's record id (one per start). */
  id: number;
  session_id: string;
  /** The name the session starts with (its project and branch, or the ended session's). */
  name: string;
  cwd: string;
  /** The branch made for it (`new_session` with `branch`). */
  branch?: string;
  /** The task's (or continuing message's) first 200 characters. */
  task: string;
  backend: WorkerBackend;
  state: StartedState;
  pid?: number;
  /** Who started it (`cli`, `telegram:@ada`). */
  by: string;
  created_at: number;
  updated_at: number;
  /** The linked host it runs on; absent for this core's own. */
  host?: string;
  /** Its tmux pane (`%3`) when it runs in tmux: `shepherd attach` opens it. */
  pane?: string;
  /** The agent definition it was started with (`new_session`'s `agent`), if any. */
  agent?: string;
}

/** What a session changed. */
export interface SessionDiff {
  session_id: string;
  name: string;
  /** The linked host the session runs on; absent for this core's own. */
  host?: string;
  /** The work tree's root. */
  root: string;
  /** The session's branch; absent on a detached HEAD. */
  branch?: string;
  /**
   * What the changes are measured from: the primary checkout's branch (`main`), or
   * `HEAD` for a session in the primary checkout (its uncommitted changes).
   */
  base_name: string;
  /** The commit the patch applies to. */
  base: string;
  files: number;
  insertions: number;
  deletions: number;
  /** `git diff --stat`'s lines. */
  stat: string;
  /** The unified diff (`git apply` takes it at `base` when `complete`). */
  patch: string;
  /**
   * False when the patch was cut to fit a message, or holds text that is not UTF-8
   * (shown replaced): it does not apply then.
   */
  complete: boolean;
}

/** A file the core saved for a session (`file_sent`). */
export interface SavedFile {
  session_id: string;
  session_name: string;
  /** Absolute path it was saved to (a new name when the one sent was taken). */
  path: string;
  bytes: number;
  /** The steer that names it; absent when the request asked for none (`steer: false`). */
  message_id?: number;
  /** Whether the session was connected (the steer delivered now, else on its return). */
  connected: boolean;
}

/** A tool call: its tool and its arguments on one line (the telling one, like `command`). */
export interface PeekCall {
  tool: string;
  args: string;
}

/** A finished tool call and the tail of what it returned. */
export interface PeekOutput {
  call: PeekCall;
  /** The tool reported an error. */
  error: boolean;
  /** The output's last lines. */
  tail: string;
}

/** What a session is doing now. */
export interface Peek {
  session_id: string;
  name: string;
  /** The linked host the session runs on; absent for this core's own. */
  host?: string;
  cwd: string;
  connected: boolean;
  status: string;
  /**
   * How long the session has been in `status`, as this core saw it change (milliseconds;
   * absent when it is not connected).
   */
  status_for_ms?: number;
  /**
   * The tool call running now: the newest call without a result, while the session is
   * in a tool.
   */
  running?: PeekCall;
  /** The newest text the model wrote (its end, when long). */
  last_text?: string;
  /** The newest finished tool call's output (its last lines). */
  last_output?: PeekOutput;
  /** Why something above is missing (no session file yet, a file that cannot be read). */
  note?: string;
  /** When the snapshot was taken. */
  taken_at: number;
}

/**
 * One agent definition as `list_agents` lists it: what a managed worker started from it
 * runs with, and where it was read. A broken file is listed too, with `error` set (what
 * is wrong and in which file); its `name` is the frontmatter's when readable, else the
 * file name without `.md`, and the other fields are then their defaults. The prompt (the
 * file's body) is not sent.
 */
export interface AgentDef {
  name: string;
  description: string;
  source: DefSource;
  /** The file it was read from; null for a bundled definition. */
  path: string | null;
  /** Pi's `--model`; null: the worker gets Pi's default. */
  model: string | null;
  thinking: Thinking | null;
  /** The tools the worker may use; null: Pi's default set; empty: none. */
  tools: string[] | null;
  /** Tools taken away from the set above. */
  exclude_tools: string[];
  /** The definitions a worker of this one may delegate to; empty: a leaf. */
  agents: string[];
  enabled: boolean;
  /** Why the file cannot be used (it names the file and the field); null when it can. */
  error: string | null;
}

/** One session of a usage report. */
export interface SessionUsage {
  session_id: string;
  name: string;
  /** The session file read; null when the core knows none. */
  file: string | null;
  /** Input tokens (Pi's `input`: not read from a cache). */
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
  /** The sum of Pi's `totalTokens`. */
  total_tokens: number;
  /** US dollars: the sum of Pi's `cost.total` (Pi computes it from its model prices). */
  cost: number;
  /** How many usage records were summed. */
  records: number;
  /** Why this session's usage could not be counted. */
  error?: string;
  /** The linked host the session is on, in a home core's answers; absent for its own. */
  host?: string;
}

/** One model's row of a usage report. */
export interface ModelUsage {
  /**
   * `provider/model`; null for usage Pi records without naming a model (compaction and
   * branch summaries, tool results).
   */
  model: string | null;
  /** Input tokens (Pi's `input`: not read from a cache). */
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
  /** The sum of Pi's `totalTokens`. */
  total_tokens: number;
  /** US dollars: the sum of Pi's `cost.total` (Pi computes it from its model prices). */
  cost: number;
  /** How many usage records were summed. */
  records: number;
}

/** A session whose usage is not in the report, and why. */
export interface MissingUsage {
  session_id: string;
  reason: string;
}

/**
 * What `usage` answers: each session once, rows per model sorted by cost (highest
 * first), the total, and whether every session in scope could be counted.
 */
export interface UsageReport {
  sessions: SessionUsage[];
  models: ModelUsage[];
  total: UsageTotals;
  /** False when a session in scope could not be read: see `missing`. */
  complete: boolean;
  missing: MissingUsage[];
}

/** What an `integrate_branch` did. */
export interface Integration {
  status: IntegrationStatus;
  assignment: Assignment;
  /** The primary branch (fast-forwarded, or to be). */
  primary_branch: string;
  sha: string;
  /** The approval ask the human answers (`awaiting_approval`). */
  ask_id: number | null;
  /** What happened, in a sentence for the model and the phone. */
  message: string;
}

/** One repository with project work, for `/projects` and `shepherd projects`. */
export interface Project {
  repo_id: string;
  project: string;
  /** The primary worktree's root. */
  primary: string;
  /** The branch checked out there (the one integrations fast-forward). */
  primary_branch: string | null;
  /** Its Manager lease, when one is held. */
  manager: Lease | null;
  /** Its assignments that are not retired, oldest first. */
  assignments: Assignment[];
  /**
   * The linked host it is on (`[[hosts]]` name), in a home core's listings and events;
   * absent for this core's own.
   */
  host?: string;
}

/** One linked host, as the home core sees its link. */
export interface HostLink {
  /** The host's name in this core's config (`gpu`). */
  name: string;
  /** The link command, as configured. */
  command: string[];
  state: LinkState;
  /** When the link entered its state (ms since the epoch). */
  since: number;
  /**
   * Why the last attempt failed: the far core's refusal, or the link command's own last
   * words (ssh's host key or authentication error, `shepherd: command not found`).
   */
  error: string | null;
  /** The last `ping` round trip over the link, in microseconds. */
  rtt_us: number | null;
  /** The far core's version and protocol, from its `welcome`. */
  core_version: string | null;
  protocol: number | null;
  /** The far core's connected sessions and open asks, as mirrored here. */
  sessions: number;
  open_asks: number;
  /** How many times the link was (re)established since this core started. */
  connects: number;
}

/** Who sent a delivery, stamped by the core from the sender's connection. */
export interface Sender {
  kind: ClientKind;
  /** The sending session's id, for `kind: pi`. */
  session_id: string | null;
  /** Display label (session name, `cli`, `telegram:@alice`). */
  name: string;
}

/**
 * An image a delivery carries: the file it was saved to, read by the extension when it
 * hands the delivery to the model.
 */
export interface DeliveredImage {
  /** Absolute path of the saved image. */
  path: string;
  /** Its type: `image/png`, `image/jpeg`, `image/gif` or `image/webp`. */
  mime: string;
}

/**
 * One message for a session. `id` is unique within the store (`store_id` in `welcome`)
 * and increases in delivery order, so a receiver can drop anything it has seen.
 */
export interface Delivery {
  id: number;
  kind: DeliveryKind;
  text: string;
  from: Sender;
  /** For `kind: answer`: the ask this answers, and its question. */
  ask_id: number | null;
  question: string | null;
  /** For `view` and `brief`, and for steers from a supervisor: the pairing. */
  pairing_id: number | null;
  /** For `view`: the look's number within the pairing (1, 2, …). */
  look: number | null;
  created_at: number;
  /**
   * Images the model is to see with the text (a photo the human sent from the phone),
   * read from their files by the extension; absent: none.
   */
  images?: DeliveredImage[];
}

/**
 * A message between sessions along a direct edge, as the bridges see it
 * (`edge_message`): supervisor and staff edges that touch a Manager or a Chief.
 */
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

/**
 * Mail along an edge between two cores: up from a linked host's Manager or Lead to the
 * herd's Chief (`kind: supervisor`), down from the Chief to one of its staff on a linked
 * host (`kind: staff`), or between peers on different hosts (`kind: peer`, through the
 * home core). Up it travels as the event `host_mail`, down as the request
 * `deliver_host_mail`. The sending core keeps it until the receiving core has stored it
 * (acknowledged by `id`); the receiving core stores each `id` of each origin once.
 */
export interface HostMail {
  /** The sending core's id for it. */
  id: number;
  kind: EdgeKind;
  from_id: string;
  from_name: string;
  from_role: Role;
  /**
   * Up, for a peer: the session as its sender named it (`gpu:lead-b`, or an exact id);
   * else its id.
   */
  to_id: string;
  to_name: string;
  text: string;
  created_at: number;
  /** The linked host the sender is on, when the home core passes peer mail on. */
  from_host?: string;
  /**
   * Not mail from a session: shepherd telling the receiver its own mail was not
   * delivered (`text` says why).
   */
  notice?: boolean;
  /**
   * Up, `kind: supervisor`: a question for the herd's Chief (`ask_supervisor`), kept
   * and answered on the sender's core; the Chief answers it with `answer_staff {ask,
   * host}`.
   */
  ask?: Ask;
}
