// Client → core: every message a client sends, its union and its list of types.
//
// Generated from the Rust protocol types (core/src/protocol/) by
// core/src/protocol/wire_gen: do not edit. After changing a protocol type run
//   SHEPHERD_REGENERATE=1 cargo test -p shepherd-core --lib protocol::wire_gen
// (CI fails while a generated file is stale).

import type { Json } from "../fields.ts";
import type { ApprovalScope, ClientKind, EdgeKind, FileKind, ResultsMode, Role, VerdictKind } from "./names.ts";
import type { ContextUsage, HerdChief, Registration } from "./records.ts";
import type { ServerMsg } from "./server.ts";

/** First message on every connection. Answered by `welcome`. */
export interface HelloMsg {
  type: "hello";
  id: number;
  protocol: number;
  client: ClientKind;
  /** Free-form label: `telegram`, `shepherd-cli 0.1.0`, `pi-ext 0.1.0`. */
  client_name?: string | null;
}

/**
 * Pi only: bind this connection to a Pi session. Answered by `registered`, then every
 * unacknowledged delivery for the session follows as `deliver` events.
 */
export interface RegisterMsg {
  type: "register";
  id: number;
  session: Registration;
}

/** Pi only: change what the session says about itself. Absent fields stay as they are. */
export interface UpdateMsg {
  type: "update";
  id: number;
  name?: string | null;
  model?: string | null;
  context?: ContextUsage | null;
  status?: string | null;
  cwd?: string | null;
  role?: Role | null;
  session_file?: string | null;
}

/** Pi only: open a question for whoever supervises the session. Answered by `asked`. */
export interface AskMsg {
  type: "ask";
  id: number;
  question: string;
  options?: string[];
  details?: string | null;
  /**
   * An idempotency key the session chose (1-128 characters): an ask sent again with a
   * key this session already used gets the ask it made then, not a second one (a
   * queued ask resent after a lost reply). Omitted from the wire when `None`.
   */
  key?: string | null;
}

/**
 * Pi only: post information (no question) for whoever supervises the session. Answered
 * by `reported`.
 */
export interface ReportMsg {
  type: "report";
  id: number;
  text: string;
  /** An idempotency key, as for `Ask`: a report sent again with it is stored once. */
  key?: string | null;
}

/** CLI and bridges: give an ask its one answer. Answered by `answered`. */
export interface AnswerMsg {
  type: "answer";
  id: number;
  ask: number;
  text: string;
  /** Bridges only: the human who answered (`telegram:@alice`). Ignored for the CLI. */
  by?: string | null;
  /**
   * The linked host the ask is on (its `[[hosts]]` name): the core passes the answer on
   * to that host's core, which applies it (absent: an ask of this core).
   */
  host?: string | null;
}

/**
 * Send text to a session (exact id, unique id prefix or unique name). From the CLI or a
 * bridge it is a steer; from a Pi session, a message. Answered by `sent`.
 */
export interface SendMsg {
  type: "send";
  id: number;
  to: string;
  text: string;
  /** Bridges only: the human who wrote it. */
  by?: string | null;
  /**
   * The linked host the session is on (its `[[hosts]]` name): the core passes the text
   * on to that host's core, which steers the session (absent: a session of this core).
   */
  host?: string | null;
}

/** Answered by `sessions`. `all` adds sessions that are not connected. */
export interface ListSessionsMsg {
  type: "list_sessions";
  id: number;
  all?: boolean;
}

/** Answered by `asks`. `all` adds answered asks; `ask` narrows to that one. */
export interface ListAsksMsg {
  type: "list_asks";
  id: number;
  all?: boolean;
  /**
   * Just this ask, open or answered (none when the core has no such ask): what a
   * bridge needs to redraw one card, without listing every ask there ever was.
   */
  ask?: number | null;
  /**
   * With `ask`: the linked host the ask is on; the home core asks that host's core
   * (the asks come back with `host` set).
   */
  host?: string | null;
}

/** Answered by `core_status`. */
export interface StatusMsg {
  type: "status";
  id: number;
}

/** Receive presence, ask and report events on this connection. Answered by `subscribed`. */
export interface SubscribeMsg {
  type: "subscribe";
  id: number;
  /**
   * Bridges only: the bot this bridge serves (`telegram:@shepherd_bot`,
   * `matrix:@shepherd:example.org`). While this connection lives, another bridge that
   * claims the same bot is refused with `already_served`, so one bot never has two
   * pollers answering the same human.
   */
  serves?: string | null;
}

/** Answered by `pong`. */
export interface PingMsg {
  type: "ping";
  id: number;
}

/**
 * Start a pairing. From a Pi session: it becomes the supervisor of `worker` (exact id,
 * unique prefix or unique name; absent: the one free session in its cwd). From the CLI or
 * a bridge: `worker` is required and `supervisor` defaults to the one free
 * supervisor-role session in the worker's cwd. A `goal` that is one word containing `/`
 * or `.` is a file, read whole (relative to `cwd`, else the requester's or the worker's
 * cwd). Answered by `paired`.
 */
export interface SuperviseMsg {
  type: "supervise";
  id: number;
  worker?: string | null;
  supervisor?: string | null;
  goal?: string | null;
  /** CLI: the directory a goal path is relative to. */
  cwd?: string | null;
  /** Bridges only: the human who asked. */
  by?: string | null;
  /** The linked host the session is on: passed on to that host's core, as for `send`. */
  host?: string | null;
}

/**
 * End a pairing without a verdict. From a Pi session: its own pairing; from the CLI or a
 * bridge: the pairing of `session` (either side). Answered by `unpaired`.
 */
export interface UnpairMsg {
  type: "unpair";
  id: number;
  session?: string | null;
  by?: string | null;
  /** The linked host the session is on: passed on to that host's core, as for `send`. */
  host?: string | null;
}

/**
 * Change a pairing's goal in place (the steer history stays). `session` as for
 * [`Unpair`]. Answered by `goal_set`.
 */
export interface SetGoalMsg {
  type: "set_goal";
  id: number;
  goal: string;
  session?: string | null;
  cwd?: string | null;
  by?: string | null;
  /** The linked host the session is on: passed on to that host's core, as for `send`. */
  host?: string | null;
}

/**
 * Deliver a view to the supervisor now. `session` as for [`Unpair`]. Answered by
 * `look_requested`; the view follows as a `deliver` of kind `view`.
 */
export interface LookMsg {
  type: "look";
  id: number;
  session?: string | null;
  by?: string | null;
  /** The linked host the session is on: passed on to that host's core, as for `send`. */
  host?: string | null;
}

/**
 * Supervisor only: what the worker did since the last view, returned (not delivered) and
 * not counted as a look. Answered by `view`.
 */
export interface WorkerViewMsg {
  type: "worker_view";
  id: number;
}

/**
 * Supervisor only: the answer to the current look. Answered by `verdict_accepted`, or
 * refused by a guard (`verdict_refused`, `runaway`).
 */
export interface VerdictMsg {
  type: "verdict";
  id: number;
  verdict: VerdictKind;
  text?: string;
}

/** Answered by `pairings`. `all` adds ended pairings. */
export interface ListPairingsMsg {
  type: "list_pairings";
  id: number;
  all?: boolean;
  /** `cli`, `bridge`: a linked host's (the home core asks that host's core). */
  host?: string | null;
}

/**
 * CLI and bridges: take an answer back and send its text to the session as a steer
 * instead ("it was meant as a steer"), reopening the ask. Accepted only while the answer
 * cannot have reached the session (see `docs/PROTOCOL.md`). Answered by `unanswered`.
 */
export interface UnanswerMsg {
  type: "unanswer";
  id: number;
  ask: number;
  /** Bridges only: the human who took it back (`telegram:@alice`). Ignored for the CLI. */
  by?: string | null;
  /** The linked host the ask is on: passed on to that host's core, as for `answer`. */
  host?: string | null;
}

/**
 * CLI and bridges: abort the session's current run (`session`: exact id, unique id
 * prefix or unique name), then, if `then` is given, steer it with that text. Stored and
 * delivered like a steer (a `deliver` of kind `interrupt`, acknowledged), so a session
 * that is away gets it on its return. Answered by `interrupted`.
 */
export interface InterruptMsg {
  type: "interrupt";
  id: number;
  session: string;
  then?: string | null;
  /** Bridges only: the human who asked. */
  by?: string | null;
  /** The linked host the session is on: passed on to that host's core, as for `send`. */
  host?: string | null;
}

/**
 * Pi only: the final assistant text of a run that just ended, kept with the reports as
 * `kind: result`. `results` is this session's own `results` setting (`SHEPHERD_RESULTS`
 * or `/shepherd results`); absent, the core's `core.results` decides whether it goes to
 * the bridges. Answered by `reported`.
 */
export interface ResultMsg {
  type: "result";
  id: number;
  text: string;
  results?: ResultsMode | null;
  /**
   * The run's idempotency key: a result sent again with it (its reply was lost) is the
   * one kept then, not a second result (nor a second assignment update).
   */
  key?: string | null;
}

/**
 * Kept reports and results, oldest first. `session` (id, unique id prefix or name)
 * narrows to one session; `after` to those with a larger id (a bridge catching up);
 * `limit` keeps the newest that many. Answered by `reports`.
 */
export interface ListReportsMsg {
  type: "list_reports";
  id: number;
  session?: string | null;
  limit?: number | null;
  after?: number | null;
  /**
   * `cli`, `bridge`: a linked host's reports (the home core asks that host's core; the
   * reports come back with `host` set, their ids that core's).
   */
  host?: string | null;
}

/**
 * Pi only: take or leave a role. `manager`: become the Manager of the repository whose
 * primary worktree is the session's cwd (one per repository); `chief`: become the Chief
 * (one per core); `lead`: leave whichever role the session holds. The core grants roles:
 * refusals are `role_refused` with `details.reason` (`not_a_repository`,
 * `linked_worktree`, `held`, `wrong_role`, `released`, `herd_chief`). Answered by
 * `role_set`.
 * `reclaim`: the extension asks again for the role its session file says it held (after a
 * restart or a reconnect); refused (`released`) when the human released it, or it
 * expired, since: only an explicit `set_role` takes it back then.
 */
export interface SetRoleMsg {
  type: "set_role";
  id: number;
  role: Role;
  reclaim?: boolean;
}

/** Anyone: the leases the core holds (`shepherd roles`). Answered by `roles`. */
export interface ListRolesMsg {
  type: "list_roles";
  id: number;
  /** `cli`, `bridge`: a linked host's (the home core asks that host's core). */
  host?: string | null;
}

/**
 * The human only (`cli`, `bridge`): take a Manager or Chief lease away from whoever holds
 * it, connected or away (`shepherd roles release`, a chat's `/release`). `project` names
 * the repository of a Manager lease (its project name or its `repo_id`). The holder
 * becomes a Lead and is told by a `notice` in its mailbox (at once, or when it returns).
 * Refusals: `forbidden` (`details.reason: human_only`) from a Pi session, `role_refused`
 * with `details.reason: not_held` (and `details.leases`) when nobody holds it. Answered
 * by `role_released`.
 */
export interface ReleaseRoleMsg {
  type: "release_role";
  id: number;
  role: Role;
  project?: string | null;
  /** The chat user acting, for a bridge (the holder is told who released its role). */
  by?: string | null;
  /**
   * The linked host whose lease it is (the human's CLI or a bridge): passed on to that
   * host's core.
   */
  host?: string | null;
}

/**
 * Pi only (a Lead or a Manager): non-blocking mail to the session's effective supervisor
 * (its repository's Manager, else the Chief, else the human, who gets it as a report).
 * Answered by `routed`.
 */
export interface MessageSupervisorMsg {
  type: "message_supervisor";
  id: number;
  text: string;
}

/**
 * Pi only (a Lead or a Manager): an ask addressed to the session's effective supervisor
 * (or the human when there is none); fields as for [`Ask`]. The supervisor gets it as a
 * `deliver` of kind `ask` and answers with `answer`; the human can answer it too.
 * Answered by `asked` (`ask.to` says whom it went to).
 */
export interface AskSupervisorMsg {
  type: "ask_supervisor";
  id: number;
  question: string;
  options?: string[];
  details?: string | null;
  key?: string | null;
}

/**
 * A Manager or the Chief: its direct staff; the CLI and bridges: every connected session
 * and every lease holder, each with whom it reports to. Answered by `staff`.
 */
export interface ListStaffMsg {
  type: "list_staff";
  id: number;
}

/**
 * A Manager or the Chief: a bounded view (≤ 16 KiB) of what one of its staff did
 * recently. `session` is an exact session id. Answered by `staff_view`.
 */
export interface InspectStaffMsg {
  type: "inspect_staff";
  id: number;
  session: string;
}

/** A Manager or the Chief: steer one of its staff (exact session id). Answered by `sent`. */
export interface MessageStaffMsg {
  type: "message_staff";
  id: number;
  session: string;
  text: string;
}

/**
 * Pi only (a Lead or a Manager): the connected sessions it may message as peers (Leads
 * for a Lead, Managers for a Manager). Answered by `sessions`.
 */
export interface ListPeersMsg {
  type: "list_peers";
  id: number;
}

/** Pi only (a Lead or a Manager): mail to a peer (exact session id). Answered by `sent`. */
export interface MessagePeerMsg {
  type: "message_peer";
  id: number;
  session: string;
  text: string;
}

/**
 * Pi only: hand bounded work to a new managed worker running `definition` (an agent
 * definition; `list_agents` names them). Returns once the worker is recorded, its task
 * stored in its mailbox and its process started, never after the work: the result comes
 * back later as an `agent_result` delivery. `label` (`^[a-z][a-z0-9_-]{0,31}$`, unique
 * among this session's live workers) defaults to the definition's name with a number;
 * `fork` starts from a copy of a saved session (its file path or id). Answered by `worker`.
 */
export interface DelegateAgentMsg {
  type: "delegate_agent";
  id: number;
  definition: string;
  task: string;
  label?: string | null;
  fork?: string | null;
}

/**
 * Pi only: a new generation on a saved worker session (its file path or id), with a new
 * task, in the session's own directory and with its definition read again. Refused while
 * the session has a live generation. Answered by `worker`.
 */
export interface ContinueAgentMsg {
  type: "continue_agent";
  id: number;
  session: string;
  task: string;
}

/**
 * The workers a caller may see: for a Pi session its own tree (its workers and theirs);
 * for the CLI and bridges every live worker. `all`: ended ones too. Answered by
 * `workers`.
 */
export interface ListWorkersMsg {
  type: "list_workers";
  id: number;
  all?: boolean;
  /** `cli`, `bridge`: a linked host's (the home core asks that host's core). */
  host?: string | null;
}

/**
 * Steer a worker's current assignment (at-least-once; no second result). `agent`: the
 * label (a Pi owner: one of its direct workers) or, for the human, a worker id or a
 * label that names one live worker. Answered by `worker`.
 */
export interface SteerAgentMsg {
  type: "steer_agent";
  id: number;
  agent: string;
  message: string;
  /**
   * The linked host the worker is on (the human's CLI or a bridge): passed on to that
   * host's core, whose worker ids and labels `agent` names.
   */
  host?: string | null;
}

/**
 * Abort what a worker is doing and continue the same assignment with `message`.
 * Answered by `worker`.
 */
export interface InterruptAgentMsg {
  type: "interrupt_agent";
  id: number;
  agent: string;
  message: string;
}

/**
 * Answer a worker's pending `ask_owner`; the same assignment continues. Answered by
 * `worker`.
 */
export interface ReplyAgentMsg {
  type: "reply_agent";
  id: number;
  agent: string;
  answer: string;
}

/**
 * Close a worker (its own workers first): the process stops, a pending ask is abandoned,
 * the Pi session file is kept. Answered by `worker`.
 */
export interface CloseAgentMsg {
  type: "close_agent";
  id: number;
  agent: string;
  /**
   * The linked host the worker is on: passed on to that host's core, as for
   * `steer_agent`.
   */
  host?: string | null;
}

/**
 * A bounded live view (≤ 16 KiB) of what a worker did recently. Answered by
 * `agent_text`.
 */
export interface InspectAgentMsg {
  type: "inspect_agent";
  id: number;
  agent: string;
}

/** A worker's saved conversation (≤ 16 KiB, newest kept). Answered by `agent_text`. */
export interface ReadAgentTranscriptMsg {
  type: "read_agent_transcript";
  id: number;
  agent: string;
}

/**
 * A managed worker only: ask its owner a question. The only and last tool call of its
 * turn; one pending at a time; no timeout. Answered by `asked`; the reply arrives as an
 * `answer` delivery.
 */
export interface AskOwnerMsg {
  type: "ask_owner";
  id: number;
  question: string;
}

/**
 * Any client: the agent definitions a managed worker can be started from, as they are
 * in effect for `cwd` (`<cwd>/.pi/agents/` over `<agent dir>/agents/` over the bundled
 * ones), broken files included with their error. `cwd` is an absolute path; a Pi
 * session leaves it out for its own cwd; the CLI passes its own; without one (a bridge)
 * only the global and bundled definitions count. Answered by `agents`.
 */
export interface ListAgentsMsg {
  type: "list_agents";
  id: number;
  cwd?: string | null;
}

/**
 * Tokens and cost from Pi's session files. A Pi session: without `session`, itself and
 * the workers it owns (their trees); with it, the exact id of a session of that tree, and
 * that session's tree.
 * The CLI and bridges: with `session` (exact id, unique id prefix or unique name) that
 * session's tree; without, every session the core knows a session file of. Answered by
 * `usage`.
 */
export interface UsageMsg {
  type: "usage";
  id: number;
  session?: string | null;
  /** `cli`, `bridge`: a linked host's (the home core asks that host's core). */
  host?: string | null;
}

/**
 * A Manager (holding its repository's lease) only: hand a branch-sized task to a new Lead
 * in its own linked worktree. `branch` (default: generated from the task) is created at
 * `base` (a branch or sha; default the primary branch's HEAD) unless it exists; the
 * worktree is created or an unoccupied one reused. Refused when the branch already has an
 * assignment (`resume_work` it) or another live session works in that checkout. Answered
 * by `assignment` once the Lead's process started; the task is its first message.
 */
export interface DelegateProjectMsg {
  type: "delegate_project";
  id: number;
  task: string;
  branch?: string | null;
  base?: string | null;
}

/**
 * Relaunch an assignment's Lead: the same session in the same checkout, without switching
 * branches; the running Lead when it already runs. A retired assignment is not revived. A
 * Manager names its repository's `branch`; the CLI and bridges may add `repo` (name or
 * path) when the branch is assigned in more than one repository. Answered by `assignment`.
 */
export interface ResumeWorkMsg {
  type: "resume_work";
  id: number;
  branch: string;
  repo?: string | null;
}

/**
 * Stop an assignment's Lead and its workers, keeping the assignment (now `paused`), the
 * session, the branch, the checkout and its git state. Answered by `assignment`.
 */
export interface StopLeadMsg {
  type: "stop_lead";
  id: number;
  branch: string;
  repo?: string | null;
}

/**
 * Fast-forward the primary branch to `sha`, the assigned `branch`'s tip, then remove the
 * checkout and retire the assignment. From a Manager, `[projects] integrate` decides:
 * `ask` (the human approves on the phone or with `shepherd integrate`), `allow`, `deny`.
 * From the CLI or a bridge (the human) it runs at once, and settles a pending approval.
 * Answered by `integration`. The checkout is removed only when it holds nothing but what
 * the branch has; else the assignment stays `cleanup_pending` with what is in the way.
 * `remove_anyway` (the human's only; refused from a Manager) then moves the checkout
 * aside whole, next to where it was, instead of keeping it: nothing is deleted.
 */
export interface IntegrateBranchMsg {
  type: "integrate_branch";
  id: number;
  branch: string;
  sha: string;
  repo?: string | null;
  remove_anyway?: boolean;
}

/**
 * Repositories with assignments (not retired), each with its assignments, ahead/behind
 * and the Leads' usage read from git and the session files. A Manager sees its own
 * repository. Answered by `projects`.
 */
export interface ListProjectsMsg {
  type: "list_projects";
  id: number;
  /** `cli`, `bridge`: a linked host's (the home core asks that host's core). */
  host?: string | null;
  /**
   * The retired assignments too (integrated, with their sha, or retired without),
   * after the open ones.
   */
  all?: boolean;
}

/**
 * The hosts this core links to (`[[hosts]]`), each with where its link stands, its
 * round trip and the far core's sessions and open asks. Answered by `hosts`.
 */
export interface ListHostsMsg {
  type: "list_hosts";
  id: number;
}

/**
 * A home core to a core it links to: who the herd's Chief is now (`None`: there is
 * none). Mail a Manager here (or a Lead with no Manager here) sends to its supervisor
 * goes to that Chief, over this link, while it lasts. Answered by `herd_linked`.
 */
export interface LinkHerdMsg {
  type: "link_herd";
  id: number;
  chief?: HerdChief | null;
}

/**
 * A home core to a core it links to: store mail for a session here: the herd's Chief's
 * to one of its staff (`kind: staff`), or a peer's (`kind: peer`); a
 * [`super::HostMail`], its fields flat. `origin` is the home
 * core's `store_id`: each `mail_id` of an origin is stored once. Answered by
 * `host_mail_stored` (also when it was stored before).
 */
export interface DeliverHostMailMsg {
  type: "deliver_host_mail";
  id: number;
  origin: string;
  /** The home core's id for the mail. */
  mail_id: number;
  kind: EdgeKind;
  from_id: string;
  from_name: string;
  from_role: Role;
  to_id: string;
  to_name: string;
  text: string;
  created_at: number;
  from_host?: string | null;
  notice?: boolean;
}

/**
 * Pi only: one tool call of the session, before it runs, for the approval policy. The
 * policy's `allow` or `deny` answers at once; its `ask` keeps a pending approval (the
 * same one when this call, `tool_call_id`, was asked about before). Answered by
 * `approval_ruling`.
 */
export interface RequestApprovalMsg {
  type: "request_approval";
  id: number;
  tool: string;
  /** The call's arguments, as the model gave them. */
  input: Json;
  tool_call_id: string;
}

/**
 * CLI and bridges: decide a pending approval: allow it (`scope`: this call, or the rule's
 * calls for the rest of the session) or deny it (`reason`: what the model reads). The
 * first decision wins. Answered by `approval`.
 */
export interface DecideApprovalMsg {
  type: "decide_approval";
  id: number;
  approval: number;
  allow: boolean;
  scope?: ApprovalScope;
  reason?: string | null;
  /** Bridges only: the human who decided. */
  by?: string | null;
  /**
   * The linked host the approval is on: passed on to that host's core, which decides
   * it by its own rules (the ids are its own).
   */
  host?: string | null;
}

/**
 * Pi only: the session stops waiting for one of its pending approvals (its run was
 * stopped). Answered by `approval`.
 */
export interface WithdrawApprovalMsg {
  type: "withdraw_approval";
  id: number;
  approval: number;
}

/**
 * The pending approvals; `all` adds the decided and withdrawn ones (newest first, at
 * most 200). Answered by `approvals`.
 */
export interface ListApprovalsMsg {
  type: "list_approvals";
  id: number;
  all?: boolean;
  /** `cli`, `bridge`: a linked host's (the home core asks that host's core). */
  host?: string | null;
}

/**
 * The human only: what session `session` (a selector, as for `send`) is doing now: its
 * status and for how long, the call running, the last text and tool output. Answered by
 * `peeked`.
 */
export interface PeekMsg {
  type: "peek";
  id: number;
  session: string;
  /** The linked host the session is on: passed on to that host's core, as for `send`. */
  host?: string | null;
}

/**
 * The human only: what session `session` (a selector, as for `send`) changed: from where
 * its branch left the primary branch to its working tree now. Answered by `diffed`.
 */
export interface DiffMsg {
  type: "diff";
  id: number;
  session: string;
  /** The linked host the session is on: passed on to that host's core, as for `send`. */
  host?: string | null;
}

/**
 * The human only (a bridge): a file sent in session `to`'s place (a selector, as for
 * `send`), saved under its directory in `.shepherd/inbox/` and, with `steer`, named in a
 * steer to it (an image carried for the model to see). Answered by `file_sent`.
 */
export interface SendFileMsg {
  type: "send_file";
  id: number;
  to: string;
  /** The file's name as sent (its last path component is kept; a new name when taken). */
  name: string;
  /** Its media type as the platform gave it (`image/jpeg`), when it gave one. */
  mime?: string | null;
  kind?: FileKind;
  /** The bytes, in standard base64; at most `[phone] max_file_mb` once decoded. */
  data: string;
  /** What the human wrote with it (a caption), or a voice note's transcript. */
  text?: string | null;
  /** Whether to steer the session with it (false: the bridge answers an ask with it). */
  steer?: boolean;
  /** The human who sent it. */
  by?: string | null;
  /** The linked host the session is on: passed on to that host's core, as for `send`. */
  host?: string | null;
}

/**
 * The human only: start a Pi session with `task` as its first message, in `cwd` (a
 * directory, absolute) or in `project`'s primary checkout (a repository name as
 * `list_projects` knows it, or one under `[projects] roots`); with `branch`, in a new
 * linked worktree on that new branch. Answered by `session_started`.
 */
export interface NewSessionMsg {
  type: "new_session";
  id: number;
  cwd?: string | null;
  project?: string | null;
  task: string;
  branch?: string | null;
  /**
   * An agent definition (as for `delegate_agent`, found from the session's directory):
   * its model, thinking level, tools and prompt for the session.
   */
  agent?: string | null;
  /** Bridges only: the human who asked. */
  by?: string | null;
  /** The linked host to start it on: passed on to that host's core, as for `send`. */
  host?: string | null;
}

/**
 * The human only: start session `session` (a selector, as for `send`), which has ended,
 * again on its own session file in its directory, with `message` as its next message when
 * given. Answered by `session_started`.
 */
export interface ContinueSessionMsg {
  type: "continue_session";
  id: number;
  session: string;
  message?: string | null;
  /** Bridges only: the human who asked. */
  by?: string | null;
  /** The linked host the session is on: passed on to that host's core, as for `send`. */
  host?: string | null;
}

/**
 * The human only: stop the process of a session the core started for the human
 * (`new_session`, `continue_session`). Answered by `session_started` (its state `ended`).
 */
export interface CloseSessionMsg {
  type: "close_session";
  id: number;
  session: string;
  /** Bridges only: the human who asked. */
  by?: string | null;
  /** The linked host the session is on: passed on to that host's core, as for `send`. */
  host?: string | null;
}

/**
 * The human only: the sessions the core started for the human, the newest first: the
 * live ones, or (`all`) the newest 200 of every state. Answered by `started_sessions`.
 */
export interface ListStartedMsg {
  type: "list_started";
  id: number;
  all?: boolean;
}

/**
 * Pi only, a worker's owner: decide a pending approval of one of its workers (`agent`: its
 * label or `#id`, as for `steer_agent`), as the human could; the first decision wins.
 * Answered by `approval`.
 */
export interface ApproveAgentMsg {
  type: "approve_agent";
  id: number;
  agent: string;
  approval: number;
  allow: boolean;
  scope?: ApprovalScope;
  reason?: string | null;
}

/**
 * Pi only: these deliveries reached the model (or were dropped as duplicates). No
 * response, so no `id`.
 */
export interface AckMsg {
  type: "ack";
  ids: number[];
}

/**
 * Pi only: the session is closing this connection on purpose (Pi closed the session).
 * `returning`: it comes straight back on a new connection (Pi's `/reload`), so the
 * leaving is no ending. No response, so no `id`.
 */
export interface ByeMsg {
  type: "bye";
  returning?: boolean;
}

/**
 * A home core to a core it links to: these `host_mail` ids (events this core sent) are
 * stored at home; forget them. No response.
 */
export interface HostMailAckMsg {
  type: "host_mail_ack";
  ids: number[];
}

export type ClientMsg =
  | HelloMsg
  | RegisterMsg
  | UpdateMsg
  | AskMsg
  | ReportMsg
  | AnswerMsg
  | SendMsg
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
  | DelegateAgentMsg
  | ContinueAgentMsg
  | ListWorkersMsg
  | SteerAgentMsg
  | InterruptAgentMsg
  | ReplyAgentMsg
  | CloseAgentMsg
  | InspectAgentMsg
  | ReadAgentTranscriptMsg
  | AskOwnerMsg
  | ListAgentsMsg
  | UsageMsg
  | DelegateProjectMsg
  | ResumeWorkMsg
  | StopLeadMsg
  | IntegrateBranchMsg
  | ListProjectsMsg
  | ListHostsMsg
  | LinkHerdMsg
  | DeliverHostMailMsg
  | RequestApprovalMsg
  | DecideApprovalMsg
  | WithdrawApprovalMsg
  | ListApprovalsMsg
  | PeekMsg
  | DiffMsg
  | SendFileMsg
  | NewSessionMsg
  | ContinueSessionMsg
  | CloseSessionMsg
  | ListStartedMsg
  | ApproveAgentMsg
  | AckMsg
  | ByeMsg
  | HostMailAckMsg;

export const CLIENT_TYPES: readonly ClientMsg["type"][] = [
  "hello",
  "register",
  "update",
  "ask",
  "report",
  "answer",
  "send",
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
  "delegate_agent",
  "continue_agent",
  "list_workers",
  "steer_agent",
  "interrupt_agent",
  "reply_agent",
  "close_agent",
  "inspect_agent",
  "read_agent_transcript",
  "ask_owner",
  "list_agents",
  "usage",
  "delegate_project",
  "resume_work",
  "stop_lead",
  "integrate_branch",
  "list_projects",
  "list_hosts",
  "link_herd",
  "deliver_host_mail",
  "request_approval",
  "decide_approval",
  "withdraw_approval",
  "list_approvals",
  "peek",
  "diff",
  "send_file",
  "new_session",
  "continue_session",
  "close_session",
  "list_started",
  "approve_agent",
  "ack",
  "bye",
  "host_mail_ack",
];

/** The messages the core answers: every client message but the notices. */
export type RequestMsg = Exclude<ClientMsg, AckMsg | ByeMsg | HostMailAckMsg>;

/**
 * Each request's reply: the `type` of the response the core answers it with (or an
 * `error`), as the request's declaration in the Rust table names it.
 */
export const REPLY_TYPES = {
  hello: "welcome",
  register: "registered",
  update: "updated",
  ask: "asked",
  report: "reported",
  answer: "answered",
  send: "sent",
  list_sessions: "sessions",
  list_asks: "asks",
  status: "core_status",
  subscribe: "subscribed",
  ping: "pong",
  supervise: "paired",
  unpair: "unpaired",
  set_goal: "goal_set",
  look: "look_requested",
  worker_view: "view",
  verdict: "verdict_accepted",
  list_pairings: "pairings",
  unanswer: "unanswered",
  interrupt: "interrupted",
  result: "reported",
  list_reports: "reports",
  set_role: "role_set",
  list_roles: "roles",
  release_role: "role_released",
  message_supervisor: "routed",
  ask_supervisor: "asked",
  list_staff: "staff",
  inspect_staff: "staff_view",
  message_staff: "sent",
  list_peers: "sessions",
  message_peer: "sent",
  delegate_agent: "worker",
  continue_agent: "worker",
  list_workers: "workers",
  steer_agent: "worker",
  interrupt_agent: "worker",
  reply_agent: "worker",
  close_agent: "worker",
  inspect_agent: "agent_text",
  read_agent_transcript: "agent_text",
  ask_owner: "asked",
  list_agents: "agents",
  usage: "usage",
  delegate_project: "assignment",
  resume_work: "assignment",
  stop_lead: "assignment",
  integrate_branch: "integration",
  list_projects: "projects",
  list_hosts: "hosts",
  link_herd: "herd_linked",
  deliver_host_mail: "host_mail_stored",
  request_approval: "approval_ruling",
  decide_approval: "approval",
  withdraw_approval: "approval",
  list_approvals: "approvals",
  peek: "peeked",
  diff: "diffed",
  send_file: "file_sent",
  new_session: "session_started",
  continue_session: "session_started",
  close_session: "session_started",
  list_started: "started_sessions",
  approve_agent: "approval",
} as const satisfies Record<RequestMsg["type"], ServerMsg["type"]>;

/** The response that answers a request of type `T`. */
export type ReplyOf<T extends RequestMsg["type"]> = Extract<ServerMsg, { type: (typeof REPLY_TYPES)[T] }>;
