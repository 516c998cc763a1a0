//! One struct per client message (mini-redis style): what a request carries, named, so the
//! hub's handlers, the client's typed calls and the tests all take the same value. Each is
//! a newtype variant of [`ClientMsg`](super::ClientMsg) (`ClientMsg::Supervise(Supervise)`),
//! which serializes exactly like the struct's fields next to `type`.
//!
//! Every request has the `id` the response echoes; [`crate::client::Client::call`] sets it,
//! so callers leave it 0 (`..Default::default()`). `ack` is the one message without an id:
//! it gets no response.

use serde::{Deserialize, Serialize};

use super::{
    ApprovalId, ApprovalScope, AskId, ClientKind, ContextUsage, MessageId, Registration,
    ResultsMode, Role, SessionStatus, VerdictKind,
};

/// First message on every connection. Answered by `welcome`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub id: u64,
    pub protocol: u32,
    pub client: ClientKind,
    /// Free-form label: `telegram`, `shepherd-cli 0.1.0`, `pi-ext 0.1.0`.
    #[serde(default)]
    pub client_name: Option<String>,
}

/// Pi only: bind this connection to a Pi session. Answered by `registered`, then every
/// unacknowledged delivery for the session follows as `deliver` events.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Register {
    pub id: u64,
    pub session: Registration,
}

/// The repository context a request needs read before the hub handles it: the connection
/// task reads it (git discovery, off the hub) and hands it over with the request. Only the
/// requests marked `git` in `client_messages!` have one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitContext<'a> {
    /// None: most requests.
    None,
    /// The repository at this directory (a registration's or a move's cwd).
    Cwd(&'a str),
    /// The repository at the session's directory as the connection last knew it.
    SessionCwd,
}

impl Register {
    /// A registration reads the repository of the directory it names.
    pub fn git_context(&self) -> GitContext<'_> {
        GitContext::Cwd(&self.session.cwd)
    }
}

impl Update {
    /// A move reads its new directory's repository; a session gone idle reads its
    /// directory's again (it may have committed or switched branches).
    pub fn git_context(&self) -> GitContext<'_> {
        match (&self.cwd, &self.status) {
            (Some(cwd), _) => GitContext::Cwd(cwd),
            (None, Some(status)) if status.is_idle() => GitContext::SessionCwd,
            _ => GitContext::None,
        }
    }
}

/// Pi only: change what the session says about itself. Absent fields stay as they are.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Update {
    pub id: u64,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub context: Option<ContextUsage>,
    #[serde(default)]
    pub status: Option<SessionStatus>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub role: Option<Role>,
    #[serde(default)]
    pub session_file: Option<String>,
}

/// Pi only: open a question for whoever supervises the session. Answered by `asked`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Ask {
    pub id: u64,
    pub question: String,
    #[serde(default)]
    pub options: Vec<String>,
    #[serde(default)]
    pub details: Option<String>,
    /// An idempotency key the session chose (1-128 characters): an ask sent again with a
    /// key this session already used gets the ask it made then, not a second one (a
    /// queued ask resent after a lost reply). Omitted from the wire when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// Pi only: post information (no question) for whoever supervises the session. Answered
/// by `reported`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Report {
    pub id: u64,
    pub text: String,
    /// An idempotency key, as for `Ask`: a report sent again with it is stored once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// CLI and bridges: give an ask its one answer. Answered by `answered`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Answer {
    pub id: u64,
    pub ask: AskId,
    pub text: String,
    /// Bridges only: the human who answered (`telegram:@alice`). Ignored for the CLI.
    #[serde(default)]
    pub by: Option<String>,
    /// The linked host the ask is on (its `[[hosts]]` name): the core passes the answer on
    /// to that host's core, which applies it (absent: an ask of this core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// CLI and bridges: take an answer back and send its text to the session as a steer
/// instead ("it was meant as a steer"), reopening the ask. Accepted only while the answer
/// cannot have reached the session (see `docs/PROTOCOL.md`). Answered by `unanswered`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Unanswer {
    pub id: u64,
    pub ask: AskId,
    /// Bridges only: the human who took it back (`telegram:@alice`). Ignored for the CLI.
    #[serde(default)]
    pub by: Option<String>,
    /// The linked host the ask is on: passed on to that host's core, as for `answer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Send text to a session (exact id, unique id prefix or unique name). From the CLI or a
/// bridge it is a steer; from a Pi session, a message. Answered by `sent`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Send {
    pub id: u64,
    pub to: String,
    pub text: String,
    /// Bridges only: the human who wrote it.
    #[serde(default)]
    pub by: Option<String>,
    /// The linked host the session is on (its `[[hosts]]` name): the core passes the text
    /// on to that host's core, which steers the session (absent: a session of this core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Pi only: these deliveries reached the model (or were dropped as duplicates). No
/// response, so no `id`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Ack {
    pub ids: Vec<MessageId>,
}

/// Answered by `sessions`. `all` adds sessions that are not connected.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListSessions {
    pub id: u64,
    #[serde(default)]
    pub all: bool,
}

/// Answered by `asks`. `all` adds answered asks; `ask` narrows to that one.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListAsks {
    pub id: u64,
    #[serde(default)]
    pub all: bool,
    /// Just this ask, open or answered (none when the core has no such ask): what a
    /// bridge needs to redraw one card, without listing every ask there ever was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<AskId>,
    /// With `ask`: the linked host the ask is on; the home core asks that host's core
    /// (the asks come back with `host` set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Answered by `core_status`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Status {
    pub id: u64,
}

/// Receive presence, ask and report events on this connection. Answered by `subscribed`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Subscribe {
    pub id: u64,
    /// Bridges only: the bot this bridge serves (`telegram:@shepherd_bot`,
    /// `matrix:@shepherd:example.org`). While this connection lives, another bridge that
    /// claims the same bot is refused with `already_served`, so one bot never has two
    /// pollers answering the same human.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serves: Option<String>,
}

/// Answered by `pong`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Ping {
    pub id: u64,
}

/// Start a pairing. From a Pi session: it becomes the supervisor of `worker` (exact id,
/// unique prefix or unique name; absent: the one free session in its cwd). From the CLI or
/// a bridge: `worker` is required and `supervisor` defaults to the one free
/// supervisor-role session in the worker's cwd. A `goal` that is one word containing `/`
/// or `.` is a file, read whole (relative to `cwd`, else the requester's or the worker's
/// cwd). Answered by `paired`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Supervise {
    pub id: u64,
    #[serde(default)]
    pub worker: Option<String>,
    #[serde(default)]
    pub supervisor: Option<String>,
    #[serde(default)]
    pub goal: Option<String>,
    /// CLI: the directory a goal path is relative to.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Bridges only: the human who asked.
    #[serde(default)]
    pub by: Option<String>,
    /// The linked host the session is on: passed on to that host's core, as for `send`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// End a pairing without a verdict. From a Pi session: its own pairing; from the CLI or a
/// bridge: the pairing of `session` (either side). Answered by `unpaired`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Unpair {
    pub id: u64,
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub by: Option<String>,
    /// The linked host the session is on: passed on to that host's core, as for `send`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Change a pairing's goal in place (the steer history stays). `session` as for
/// [`Unpair`]. Answered by `goal_set`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SetGoal {
    pub id: u64,
    pub goal: String,
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub by: Option<String>,
    /// The linked host the session is on: passed on to that host's core, as for `send`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Deliver a view to the supervisor now. `session` as for [`Unpair`]. Answered by
/// `look_requested`; the view follows as a `deliver` of kind `view`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Look {
    pub id: u64,
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub by: Option<String>,
    /// The linked host the session is on: passed on to that host's core, as for `send`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Supervisor only: what the worker did since the last view, returned (not delivered) and
/// not counted as a look. Answered by `view`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct WorkerView {
    pub id: u64,
}

/// Supervisor only: the answer to the current look. Answered by `verdict_accepted`, or
/// refused by a guard (`verdict_refused`, `runaway`).
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub id: u64,
    pub verdict: VerdictKind,
    #[serde(default)]
    pub text: String,
}

/// Answered by `pairings`. `all` adds ended pairings.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListPairings {
    pub id: u64,
    #[serde(default)]
    pub all: bool,
    /// `cli`, `bridge`: a linked host's (the home core asks that host's core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// CLI and bridges: abort the session's current run (`session`: exact id, unique id
/// prefix or unique name), then, if `then` is given, steer it with that text. Stored and
/// delivered like a steer (a `deliver` of kind `interrupt`, acknowledged), so a session
/// that is away gets it on its return. Answered by `interrupted`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Interrupt {
    pub id: u64,
    pub session: String,
    #[serde(default)]
    pub then: Option<String>,
    /// Bridges only: the human who asked.
    #[serde(default)]
    pub by: Option<String>,
    /// The linked host the session is on: passed on to that host's core, as for `send`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Pi only: the session is closing this connection on purpose (Pi closed the session).
/// `returning`: it comes straight back on a new connection (Pi's `/reload`), so the
/// leaving is no ending. No response, so no `id`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Bye {
    #[serde(default)]
    pub returning: bool,
}

/// Pi only: the final assistant text of a run that just ended, kept with the reports as
/// `kind: result`. `results` is this session's own `results` setting (`SHEPHERD_RESULTS`
/// or `/shepherd results`); absent, the core's `core.results` decides whether it goes to
/// the bridges. Answered by `reported`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunResult {
    pub id: u64,
    pub text: String,
    #[serde(default)]
    pub results: Option<ResultsMode>,
    /// The run's idempotency key: a result sent again with it (its reply was lost) is the
    /// one kept then, not a second result (nor a second assignment update).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl RunResult {
    /// A run settled: an assigned Lead's update names its checkout's HEAD.
    pub fn git_context(&self) -> GitContext<'_> {
        GitContext::SessionCwd
    }
}

/// Kept reports and results, oldest first. `session` (id, unique id prefix or name)
/// narrows to one session; `after` to those with a larger id (a bridge catching up);
/// `limit` keeps the newest that many. Answered by `reports`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListReports {
    pub id: u64,
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default, deserialize_with = "super::ids::optional_store_id")]
    pub after: Option<u64>,
    /// `cli`, `bridge`: a linked host's reports (the home core asks that host's core; the
    /// reports come back with `host` set, their ids that core's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Pi only: take or leave a role. `manager`: become the Manager of the repository whose
/// primary worktree is the session's cwd (one per repository); `chief`: become the Chief
/// (one per core); `lead`: leave whichever role the session holds. The core grants roles:
/// refusals are `role_refused` with `details.reason` (`not_a_repository`,
/// `linked_worktree`, `held`, `wrong_role`, `released`, `herd_chief`). Answered by
/// `role_set`.
/// `reclaim`: the extension asks again for the role its session file says it held (after a
/// restart or a reconnect); refused (`released`) when the human released it, or it
/// expired, since: only an explicit `set_role` takes it back then.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SetRole {
    pub id: u64,
    pub role: Role,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reclaim: bool,
}

/// Anyone: the leases the core holds (`shepherd roles`). Answered by `roles`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListRoles {
    pub id: u64,
    /// `cli`, `bridge`: a linked host's (the home core asks that host's core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// The human only (`cli`, `bridge`): take a Manager or Chief lease away from whoever holds
/// it, connected or away (`shepherd roles release`, a chat's `/release`). `project` names
/// the repository of a Manager lease (its project name or its `repo_id`). The holder
/// becomes a Lead and is told by a `notice` in its mailbox (at once, or when it returns).
/// Refusals: `forbidden` (`details.reason: human_only`) from a Pi session, `role_refused`
/// with `details.reason: not_held` (and `details.leases`) when nobody holds it. Answered
/// by `role_released`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ReleaseRole {
    pub id: u64,
    pub role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// The chat user acting, for a bridge (the holder is told who released its role).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The linked host whose lease it is (the human's CLI or a bridge): passed on to that
    /// host's core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Pi only (a Lead or a Manager): non-blocking mail to the session's effective supervisor
/// (its repository's Manager, else the Chief, else the human, who gets it as a report).
/// Answered by `routed`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MessageSupervisor {
    pub id: u64,
    pub text: String,
}

/// Pi only (a Lead or a Manager): an ask addressed to the session's effective supervisor
/// (or the human when there is none); fields as for [`Ask`]. The supervisor gets it as a
/// `deliver` of kind `ask` and answers with `answer`; the human can answer it too.
/// Answered by `asked` (`ask.to` says whom it went to).
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AskSupervisor {
    pub id: u64,
    pub question: String,
    #[serde(default)]
    pub options: Vec<String>,
    #[serde(default)]
    pub details: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// A Manager or the Chief: its direct staff; the CLI and bridges: every connected session
/// and every lease holder, each with whom it reports to. Answered by `staff`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListStaff {
    pub id: u64,
}

/// A Manager or the Chief: a bounded view (≤ 16 KiB) of what one of its staff did
/// recently. `session` is an exact session id. Answered by `staff_view`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InspectStaff {
    pub id: u64,
    pub session: String,
}

/// A Manager or the Chief: steer one of its staff (exact session id). Answered by `sent`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MessageStaff {
    pub id: u64,
    pub session: String,
    pub text: String,
}

/// Any client: the agent definitions a managed worker can be started from, as they are
/// in effect for `cwd` (`<cwd>/.pi/agents/` over `<agent dir>/agents/` over the bundled
/// ones), broken files included with their error. `cwd` is an absolute path; a Pi
/// session leaves it out for its own cwd; the CLI passes its own; without one (a bridge)
/// only the global and bundled definitions count. Answered by `agents`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListAgents {
    pub id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// Pi only (a Lead or a Manager): the connected sessions it may message as peers (Leads
/// for a Lead, Managers for a Manager). Answered by `sessions`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListPeers {
    pub id: u64,
}

/// Pi only (a Lead or a Manager): mail to a peer (exact session id). Answered by `sent`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MessagePeer {
    pub id: u64,
    pub session: String,
    pub text: String,
}

/// Pi only: hand bounded work to a new managed worker running `definition` (an agent
/// definition; `list_agents` names them). Returns once the worker is recorded, its task
/// stored in its mailbox and its process started, never after the work: the result comes
/// back later as an `agent_result` delivery. `label` (`^[a-z][a-z0-9_-]{0,31}$`, unique
/// among this session's live workers) defaults to the definition's name with a number;
/// `fork` starts from a copy of a saved session (its file path or id). Answered by `worker`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DelegateAgent {
    pub id: u64,
    pub definition: String,
    pub task: String,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub fork: Option<String>,
}

/// Pi only: a new generation on a saved worker session (its file path or id), with a new
/// task, in the session's own directory and with its definition read again. Refused while
/// the session has a live generation. Answered by `worker`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ContinueAgent {
    pub id: u64,
    pub session: String,
    pub task: String,
}

/// The workers a caller may see: for a Pi session its own tree (its workers and theirs);
/// for the CLI and bridges every live worker. `all`: ended ones too. Answered by
/// `workers`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListWorkers {
    pub id: u64,
    #[serde(default)]
    pub all: bool,
    /// `cli`, `bridge`: a linked host's (the home core asks that host's core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Steer a worker's current assignment (at-least-once; no second result). `agent`: the
/// label (a Pi owner: one of its direct workers) or, for the human, a worker id or a
/// label that names one live worker. Answered by `worker`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SteerAgent {
    pub id: u64,
    pub agent: String,
    pub message: String,
    /// The linked host the worker is on (the human's CLI or a bridge): passed on to that
    /// host's core, whose worker ids and labels `agent` names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Abort what a worker is doing and continue the same assignment with `message`.
/// Answered by `worker`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InterruptAgent {
    pub id: u64,
    pub agent: String,
    pub message: String,
}

/// Answer a worker's pending `ask_owner`; the same assignment continues. Answered by
/// `worker`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ReplyAgent {
    pub id: u64,
    pub agent: String,
    pub answer: String,
}

/// Close a worker (its own workers first): the process stops, a pending ask is abandoned,
/// the Pi session file is kept. Answered by `worker`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CloseAgent {
    pub id: u64,
    pub agent: String,
    /// The linked host the worker is on: passed on to that host's core, as for
    /// `steer_agent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// The human only: what session `session` (a selector, as for `send`) is doing now: its
/// status and for how long, the call running, the last text and tool output. Answered by
/// `peeked`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Peek {
    pub id: u64,
    pub session: String,
    /// The linked host the session is on: passed on to that host's core, as for `send`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// The human only: start a Pi session with `task` as its first message, in `cwd` (a
/// directory, absolute) or in `project`'s primary checkout (a repository name as
/// `list_projects` knows it, or one under `[projects] roots`); with `branch`, in a new
/// linked worktree on that new branch. Answered by `session_started`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NewSession {
    pub id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    pub task: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// An agent definition (as for `delegate_agent`, found from the session's directory):
    /// its model, thinking level, tools and prompt for the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Bridges only: the human who asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The linked host to start it on: passed on to that host's core, as for `send`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// The human only: start session `session` (a selector, as for `send`), which has ended,
/// again on its own session file in its directory, with `message` as its next message when
/// given. Answered by `session_started`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ContinueSession {
    pub id: u64,
    pub session: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Bridges only: the human who asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The linked host the session is on: passed on to that host's core, as for `send`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// The human only: the sessions the core started for the human, the newest first: the
/// live ones, or (`all`) the newest 200 of every state. Answered by `started_sessions`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListStarted {
    pub id: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
}

/// The human only: stop the process of a session the core started for the human
/// (`new_session`, `continue_session`). Answered by `session_started` (its state `ended`).
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CloseSession {
    pub id: u64,
    pub session: String,
    /// Bridges only: the human who asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The linked host the session is on: passed on to that host's core, as for `send`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// The human only: what session `session` (a selector, as for `send`) changed: from where
/// its branch left the primary branch to its working tree now. Answered by `diffed`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Diff {
    pub id: u64,
    pub session: String,
    /// The linked host the session is on: passed on to that host's core, as for `send`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// The human only (a bridge): a file sent in session `to`'s place (a selector, as for
/// `send`), saved under its directory in `.shepherd/inbox/` and, with `steer`, named in a
/// steer to it (an image carried for the model to see). Answered by `file_sent`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SendFile {
    pub id: u64,
    pub to: String,
    /// The file's name as sent (its last path component is kept; a new name when taken).
    pub name: String,
    /// Its media type as the platform gave it (`image/jpeg`), when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    #[serde(default)]
    pub kind: super::FileKind,
    /// The bytes, in standard base64; at most `[phone] max_file_mb` once decoded.
    pub data: String,
    /// What the human wrote with it (a caption), or a voice note's transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Whether to steer the session with it (false: the bridge answers an ask with it).
    #[serde(default = "steer_default")]
    pub steer: bool,
    /// The human who sent it.
    #[serde(default)]
    pub by: Option<String>,
    /// The linked host the session is on: passed on to that host's core, as for `send`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

fn steer_default() -> bool {
    true
}

/// A bounded live view (≤ 16 KiB) of what a worker did recently. Answered by
/// `agent_text`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InspectAgent {
    pub id: u64,
    pub agent: String,
}

/// A worker's saved conversation (≤ 16 KiB, newest kept). Answered by `agent_text`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ReadAgentTranscript {
    pub id: u64,
    pub agent: String,
}

/// A managed worker only: ask its owner a question. The only and last tool call of its
/// turn; one pending at a time; no timeout. Answered by `asked`; the reply arrives as an
/// `answer` delivery.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AskOwner {
    pub id: u64,
    pub question: String,
}

/// Tokens and cost from Pi's session files. A Pi session: without `session`, itself and
/// the workers it owns (their trees); with it, the exact id of a session of that tree, and
/// that session's tree.
/// The CLI and bridges: with `session` (exact id, unique id prefix or unique name) that
/// session's tree; without, every session the core knows a session file of. Answered by
/// `usage`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// `cli`, `bridge`: a linked host's (the home core asks that host's core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// A Manager (holding its repository's lease) only: hand a branch-sized task to a new Lead
/// in its own linked worktree. `branch` (default: generated from the task) is created at
/// `base` (a branch or sha; default the primary branch's HEAD) unless it exists; the
/// worktree is created or an unoccupied one reused. Refused when the branch already has an
/// assignment (`resume_work` it) or another live session works in that checkout. Answered
/// by `assignment` once the Lead's process started; the task is its first message.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DelegateProject {
    pub id: u64,
    pub task: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
}

/// Relaunch an assignment's Lead: the same session in the same checkout, without switching
/// branches; the running Lead when it already runs. A retired assignment is not revived. A
/// Manager names its repository's `branch`; the CLI and bridges may add `repo` (name or
/// path) when the branch is assigned in more than one repository. Answered by `assignment`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResumeWork {
    pub id: u64,
    pub branch: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
}

/// Stop an assignment's Lead and its workers, keeping the assignment (now `paused`), the
/// session, the branch, the checkout and its git state. Answered by `assignment`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StopLead {
    pub id: u64,
    pub branch: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
}

/// Fast-forward the primary branch to `sha`, the assigned `branch`'s tip, then remove the
/// checkout and retire the assignment. From a Manager, `[projects] integrate` decides:
/// `ask` (the human approves on the phone or with `shepherd integrate`), `allow`, `deny`.
/// From the CLI or a bridge (the human) it runs at once, and settles a pending approval.
/// Answered by `integration`. The checkout is removed only when it holds nothing but what
/// the branch has; else the assignment stays `cleanup_pending` with what is in the way.
/// `remove_anyway` (the human's only; refused from a Manager) then moves the checkout
/// aside whole, next to where it was, instead of keeping it: nothing is deleted.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct IntegrateBranch {
    pub id: u64,
    pub branch: String,
    pub sha: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remove_anyway: bool,
}

/// Repositories with assignments (not retired), each with its assignments, ahead/behind
/// and the Leads' usage read from git and the session files. A Manager sees its own
/// repository. Answered by `projects`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListProjects {
    pub id: u64,
    /// `cli`, `bridge`: a linked host's (the home core asks that host's core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The retired assignments too (integrated, with their sha, or retired without),
    /// after the open ones.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
}

/// The hosts this core links to (`[[hosts]]`), each with where its link stands, its
/// round trip and the far core's sessions and open asks. Answered by `hosts`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListHosts {
    pub id: u64,
}

/// A home core to a core it links to: who the herd's Chief is now (`None`: there is
/// none). Mail a Manager here (or a Lead with no Manager here) sends to its supervisor
/// goes to that Chief, over this link, while it lasts. Answered by `herd_linked`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LinkHerd {
    pub id: u64,
    #[serde(default)]
    pub chief: Option<super::HerdChief>,
}

/// A home core to a core it links to: store mail for a session here: the herd's Chief's
/// to one of its staff (`kind: staff`), or a peer's (`kind: peer`); a
/// [`super::HostMail`], its fields flat. `origin` is the home
/// core's `store_id`: each `mail_id` of an origin is stored once. Answered by
/// `host_mail_stored` (also when it was stored before).
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeliverHostMail {
    pub id: u64,
    pub origin: String,
    /// The home core's id for the mail.
    pub mail_id: u64,
    pub kind: super::EdgeKind,
    pub from_id: super::SessionId,
    pub from_name: String,
    pub from_role: super::Role,
    pub to_id: super::SessionId,
    pub to_name: String,
    pub text: String,
    pub created_at: super::Millis,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_host: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub notice: bool,
}

impl DeliverHostMail {
    /// `mail` from the core whose `store_id` is `origin`, as its request.
    pub fn of(origin: &str, mail: super::HostMail) -> DeliverHostMail {
        DeliverHostMail {
            id: 0,
            origin: origin.to_string(),
            mail_id: mail.id,
            kind: mail.kind,
            from_id: mail.from_id,
            from_name: mail.from_name,
            from_role: mail.from_role,
            to_id: mail.to_id,
            to_name: mail.to_name,
            text: mail.text,
            created_at: mail.created_at,
            from_host: mail.from_host,
            notice: mail.notice,
        }
    }

    /// The mail the request carries.
    pub fn mail(&self) -> super::HostMail {
        super::HostMail {
            id: self.mail_id,
            kind: self.kind,
            from_id: self.from_id.clone(),
            from_name: self.from_name.clone(),
            from_role: self.from_role,
            to_id: self.to_id.clone(),
            to_name: self.to_name.clone(),
            text: self.text.clone(),
            created_at: self.created_at,
            from_host: self.from_host.clone(),
            notice: self.notice,
            ask: None,
        }
    }
}

/// A home core to a core it links to: these `host_mail` ids (events this core sent) are
/// stored at home; forget them. No response.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HostMailAck {
    pub ids: Vec<u64>,
}

/// Pi only: one tool call of the session, before it runs, for the approval policy. The
/// policy's `allow` or `deny` answers at once; its `ask` keeps a pending approval (the
/// same one when this call, `tool_call_id`, was asked about before). Answered by
/// `approval_ruling`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RequestApproval {
    pub id: u64,
    pub tool: String,
    /// The call's arguments, as the model gave them.
    pub input: serde_json::Value,
    pub tool_call_id: String,
}

/// CLI and bridges: decide a pending approval: allow it (`scope`: this call, or the rule's
/// calls for the rest of the session) or deny it (`reason`: what the model reads). The
/// first decision wins. Answered by `approval`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DecideApproval {
    pub id: u64,
    pub approval: ApprovalId,
    pub allow: bool,
    #[serde(default)]
    pub scope: ApprovalScope,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Bridges only: the human who decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The linked host the approval is on: passed on to that host's core, which decides
    /// it by its own rules (the ids are its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Pi only: the session stops waiting for one of its pending approvals (its run was
/// stopped). Answered by `approval`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct WithdrawApproval {
    pub id: u64,
    pub approval: ApprovalId,
}

/// The pending approvals; `all` adds the decided and withdrawn ones (newest first, at
/// most 200). Answered by `approvals`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListApprovals {
    pub id: u64,
    #[serde(default)]
    pub all: bool,
    /// `cli`, `bridge`: a linked host's (the home core asks that host's core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Pi only, a worker's owner: decide a pending approval of one of its workers (`agent`: its
/// label or `#id`, as for `steer_agent`), as the human could; the first decision wins.
/// Answered by `approval`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ApproveAgent {
    pub id: u64,
    pub agent: String,
    pub approval: ApprovalId,
    pub allow: bool,
    #[serde(default)]
    pub scope: ApprovalScope,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
