//! Records carried inside protocol messages. Field names are the wire names; optional
//! fields default so older peers and newer fields can meet.

use serde::{Deserialize, Serialize};

use super::{AskId, EndReason, MessageId, PairingId, SessionId, SessionStatus};

/// Unix time in milliseconds.
pub type Millis = u64;

/// What kind of program is on the other end of a connection.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientKind {
    /// A Pi session running the shepherd extension.
    Pi,
    /// A chat bridge (Telegram, Matrix) acting for the human.
    Bridge,
    /// The `shepherd` command line, acting for the human.
    Cli,
    /// Another machine's shepherd core linked to this one (`shepherd link`): it acts for
    /// the human, with what the CLI may do.
    Core,
}

impl ClientKind {
    /// The wire and database spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ClientKind::Pi => "pi",
            ClientKind::Bridge => "bridge",
            ClientKind::Cli => "cli",
            ClientKind::Core => "core",
        }
    }

    /// True for the clients that act for the human owner (CLI and bridges).
    pub fn is_human(self) -> bool {
        matches!(
            self,
            ClientKind::Bridge | ClientKind::Cli | ClientKind::Core
        )
    }
}

/// A session's place in the hierarchy (see DESIGN.md: Lead, Manager, Chief).
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// An ordinary session that owns its task.
    #[default]
    Lead,
    /// Coordinates one repository's worktree group.
    Manager,
    /// One per user runtime, over managers and unmanaged leads.
    Chief,
    /// A session that watches a worker toward a goal (`/supervise`). A free session with
    /// this role is what the human's `supervise <session> <goal>` pairs a worker with.
    Supervisor,
}

impl Role {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Lead => "lead",
            Role::Manager => "manager",
            Role::Chief => "chief",
            Role::Supervisor => "supervisor",
        }
    }
}

/// How full a session's context window is, as Pi reports it. Each part may be unknown
/// (Pi reports no token count right after a compaction).
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ContextUsage {
    #[serde(default)]
    pub tokens: Option<u64>,
    #[serde(default)]
    pub window: Option<u64>,
    #[serde(default)]
    pub percent: Option<f64>,
}

/// What a Pi session says about itself in `register`. The core ignores nothing silently:
/// every field is validated, and the pid is taken from the socket's peer credentials.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registration {
    /// Pi's exact session id (`ctx.sessionManager.getSessionId()`).
    pub session_id: SessionId,
    /// Display name (`/name`); the core falls back to the first 8 characters of the id.
    #[serde(default)]
    pub name: Option<String>,
    /// Working directory; the core derives the repository context from it.
    pub cwd: String,
    /// Informational only: the core records the peer's pid from the socket.
    #[serde(default)]
    pub pid: Option<u32>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub context: ContextUsage,
    /// `idle`, `thinking` or `tool:<name>`.
    #[serde(default)]
    pub status: SessionStatus,
    #[serde(default)]
    pub role: Role,
    /// Path of Pi's session file (JSONL), for supervisor views.
    #[serde(default)]
    pub session_file: Option<String>,
    /// A pi-subagents child (`PI_SUBAGENT_CHILD` set): never offered as a worker.
    #[serde(default)]
    pub subagent: bool,
    /// A managed worker's one-time launch nonce (`SHEPHERD_LAUNCH`): the core binds the
    /// session to its worker record only with it (and the launched process's pid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<String>,
}

/// A session as the core knows it; the records of `shepherd sessions --json`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub id: SessionId,
    pub name: String,
    pub cwd: String,
    /// The pid of the process on the socket (from SO_PEERCRED).
    pub pid: Option<u32>,
    pub model: Option<String>,
    pub status: SessionStatus,
    pub role: Role,
    pub connected: bool,
    pub context_tokens: Option<u64>,
    pub context_window: Option<u64>,
    pub context_percent: Option<f64>,
    /// Repository root (work tree) containing `cwd`, if any.
    pub repo: Option<String>,
    /// Current branch; `None` when detached or outside a repository.
    pub branch: Option<String>,
    /// HEAD commit id.
    pub head: Option<String>,
    /// Whether `cwd` is inside a linked worktree (not the main checkout).
    pub worktree: bool,
    /// The repository's identity: its canonical common git directory, the same for the
    /// primary checkout and every linked worktree. A Manager lease is held per `repo_id`.
    #[serde(default)]
    pub repo_id: Option<String>,
    /// The repository's name (its primary checkout's directory), for display.
    #[serde(default)]
    pub project: Option<String>,
    #[serde(default)]
    pub session_file: Option<String>,
    /// A pi-subagents child.
    #[serde(default)]
    pub subagent: bool,
    /// Open asks of this session.
    pub open_asks: u32,
    /// Messages accepted for this session and not yet acknowledged by it.
    pub pending_messages: u32,
    pub first_seen: Millis,
    pub last_seen: Millis,
    /// The linked host the session runs on (`[[hosts]]` name); absent for this core's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Where an ask is.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AskState {
    Open,
    Answered,
}

/// A question from a session that needs a decision.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ask {
    pub id: AskId,
    pub session_id: SessionId,
    pub session_name: String,
    pub question: String,
    #[serde(default)]
    pub options: Vec<String>,
    #[serde(default)]
    pub details: Option<String>,
    pub state: AskState,
    pub answer: Option<String>,
    /// Who answered, as a display label (`cli`, `telegram:@alice`, …).
    pub answered_by: Option<String>,
    pub created_at: Millis,
    pub answered_at: Option<Millis>,
    /// For `ask_supervisor`: the role the ask is addressed to (its holder may answer it;
    /// the human always can). Absent: the ask is for the human (`ask`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<AskTo>,
    /// The linked host the ask is on (`[[hosts]]` name), in the home core's listings and
    /// events for the CLI and the bridges; absent for this core's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl Ask {
    /// How a human names this ask: `17`, or `gpu:17` on a linked host.
    pub fn key(&self) -> super::AskRef {
        super::AskRef {
            host: self.host.clone(),
            id: self.id,
        }
    }
}

/// Whom an `ask_supervisor` ask is addressed to: a role (the Manager of one repository,
/// or the Chief), and the session that held it when the ask was opened or last handed
/// over. Whoever holds the role now may answer.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskTo {
    /// `manager` or `chief`.
    pub role: Role,
    /// For `manager`: the repository (`repo_id`) whose Manager it is for.
    #[serde(default)]
    pub repo_id: Option<String>,
    /// For `manager`: the repository's name, for display (`→ manager of app`).
    #[serde(default)]
    pub project: Option<String>,
    /// The session that held the role when the ask was opened or handed over.
    #[serde(default)]
    pub session_id: Option<SessionId>,
    #[serde(default)]
    pub session_name: Option<String>,
    /// For a managed worker's `ask_owner`: the worker. The ask is then for its owner
    /// (`session_id`) alone; `role` is the owner's role, for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<super::WorkerId>,
}

/// One role lease the core granted: the Manager of a repository, or the Chief.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lease {
    /// `manager` or `chief`.
    pub role: Role,
    /// For `manager`: the repository's identity and name.
    #[serde(default)]
    pub repo_id: Option<String>,
    #[serde(default)]
    pub project: Option<String>,
    pub session_id: SessionId,
    pub session_name: String,
    /// Whether the holder is connected now. A lease whose holder is away may be taken.
    pub connected: bool,
    pub since: Millis,
    /// The linked host it is on (`[[hosts]]` name), in a home core's listings and events;
    /// absent for this core's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Who a session reports to: its effective supervisor, computed by the core from the
/// leases when asked (the Manager of its repository, else the Chief, else the human).
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportsTo {
    /// `manager`, `chief` or `human`.
    pub to: Superior,
    #[serde(default)]
    pub session_id: Option<SessionId>,
    #[serde(default)]
    pub session_name: Option<String>,
}

impl ReportsTo {
    /// The human: nobody holds a role above the session.
    pub fn human() -> ReportsTo {
        ReportsTo {
            to: Superior::Human,
            session_id: None,
            session_name: None,
        }
    }
}

/// Whom a session's supervisor edge leads to.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Superior {
    Manager,
    Chief,
    Human,
}

/// A session in a staff tree (`list_staff`): the session and whom it reports to.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StaffMember {
    pub session: SessionInfo,
    pub reports_to: ReportsTo,
}

/// Which direct edge a message travelled.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// `message_supervisor`: a Lead or Manager to whom it reports.
    Supervisor,
    /// `message_staff`: a Manager or Chief to one of its staff.
    Staff,
    /// `message_peer`: Lead to Lead, Manager to Manager.
    Peer,
}

/// A message between sessions along a direct edge, as the bridges see it
/// (`edge_message`): supervisor and staff edges that touch a Manager or a Chief.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EdgeMessage {
    pub kind: EdgeKind,
    pub from_id: SessionId,
    pub from_name: String,
    pub from_role: Role,
    pub to_id: SessionId,
    pub to_name: String,
    pub to_role: Role,
    pub text: String,
    pub message_id: MessageId,
    pub created_at: Millis,
}

/// What `inspect_staff` returns: a bounded view of what a staff session did recently,
/// built from its session file by the supervisor view builder.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StaffView {
    pub session_id: SessionId,
    pub session_name: String,
    /// The rendered view (at most 16 KiB).
    pub text: String,
    /// Session-file entries it covers.
    pub entries: u32,
}

/// Where an agent definition came from (`list_agents`), highest precedence first.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DefSource {
    /// `<cwd>/.pi/agents/*.md`: overrides the global and bundled ones of the same name.
    Project,
    /// `<agent dir>/agents/*.md`: overrides the bundled ones.
    Global,
    /// Shipped inside shepherd (`scout`, `implementer`, `reviewer`).
    Bundled,
}

impl DefSource {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DefSource::Project => "project",
            DefSource::Global => "global",
            DefSource::Bundled => "bundled",
        }
    }
}

/// A Pi thinking level, as Pi's `--thinking` takes it.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Thinking {
    Off,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
}

impl Thinking {
    /// The wire name, which is also Pi's `--thinking` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Thinking::Off => "off",
            Thinking::Minimal => "minimal",
            Thinking::Low => "low",
            Thinking::Medium => "medium",
            Thinking::High => "high",
            Thinking::Xhigh => "xhigh",
        }
    }
}

/// One agent definition as `list_agents` lists it: what a managed worker started from it
/// runs with, and where it was read. A broken file is listed too, with `error` set (what
/// is wrong and in which file); its `name` is the frontmatter's when readable, else the
/// file name without `.md`, and the other fields are then their defaults. The prompt (the
/// file's body) is not sent.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentDef {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub source: DefSource,
    /// The file it was read from; null for a bundled definition.
    #[serde(default)]
    pub path: Option<String>,
    /// Pi's `--model`; null: the worker gets Pi's default.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub thinking: Option<Thinking>,
    /// The tools the worker may use; null: Pi's default set; empty: none.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Tools taken away from the set above.
    #[serde(default)]
    pub exclude_tools: Vec<String>,
    /// The definitions a worker of this one may delegate to; empty: a leaf.
    #[serde(default)]
    pub agents: Vec<String>,
    #[serde(default = "enabled_default")]
    pub enabled: bool,
    /// Why the file cannot be used (it names the file and the field); null when it can.
    #[serde(default)]
    pub error: Option<String>,
}

fn enabled_default() -> bool {
    true
}

/// Why a message is in a session's mailbox.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryKind {
    /// The human (CLI, chat) steering the session.
    Steer,
    /// Another session writing to this one.
    Message,
    /// The answer to one of this session's asks.
    Answer,
    /// To a supervisor: what its worker did since the last look. The only delivery that
    /// should start a supervisor turn.
    View,
    /// To a supervisor: context that must not start a turn (the pairing's brief, a goal
    /// change, the pairing's end).
    Brief,
    /// The human interrupting the session: abort its current run, then (when `text` is
    /// not empty) steer it with `text`.
    Interrupt,
    /// To a Manager or Chief: an ask addressed to its role (`ask_id`, `question`); answer
    /// it with `answer`. Starts a turn.
    Ask,
    /// To a Manager or Chief: `message_supervisor` from a session that reports to it.
    SupervisorMessage,
    /// To a Lead or Manager: `message_staff` from its Manager or the Chief; a steer.
    StaffMessage,
    /// `message_peer` from a Lead to a Lead or a Manager to a Manager.
    PeerMessage,
    /// Information that must not start a turn (an ask addressed to this session's role
    /// was answered by someone else; the session's role changed).
    Notice,
    /// To a managed worker: its assignment. Starts a turn.
    Task,
    /// To a worker's owner: the worker's one final result
    /// (`Agent result · agent=… · definition=… · session=…`). Starts a turn.
    AgentResult,
    /// To a worker's owner: the worker's `ask_owner` (`ask_id`, `question`); answer it with
    /// `reply_agent`. Starts a turn.
    AgentAsk,
    /// To a repository's Manager role: an assigned Lead finished a turn
    /// (`Assignment update · app@feat/a · head=…`, then its final text). Kept while no
    /// Manager holds the lease; the next one gets it. Starts a turn.
    AssignmentUpdate,
    /// To a Manager: how an `integrate_branch` that waited for the human ended (approved
    /// and integrated, or denied with the human's reason). Starts a turn.
    Integration,
}

impl DeliveryKind {
    /// The wire and database spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryKind::Steer => "steer",
            DeliveryKind::Message => "message",
            DeliveryKind::Answer => "answer",
            DeliveryKind::View => "view",
            DeliveryKind::Brief => "brief",
            DeliveryKind::Interrupt => "interrupt",
            DeliveryKind::Ask => "ask",
            DeliveryKind::SupervisorMessage => "supervisor_message",
            DeliveryKind::StaffMessage => "staff_message",
            DeliveryKind::PeerMessage => "peer_message",
            DeliveryKind::Notice => "notice",
            DeliveryKind::Task => "task",
            DeliveryKind::AgentResult => "agent_result",
            DeliveryKind::AgentAsk => "agent_ask",
            DeliveryKind::AssignmentUpdate => "assignment_update",
            DeliveryKind::Integration => "integration",
        }
    }
}

/// Who sent a delivery, stamped by the core from the sender's connection.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sender {
    pub kind: ClientKind,
    /// The sending session's id, for `kind: pi`.
    #[serde(default)]
    pub session_id: Option<SessionId>,
    /// Display label (session name, `cli`, `telegram:@alice`).
    pub name: String,
}

/// One message for a session. `id` is unique within the store (`store_id` in `welcome`)
/// and increases in delivery order, so a receiver can drop anything it has seen.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    pub id: MessageId,
    pub kind: DeliveryKind,
    pub text: String,
    pub from: Sender,
    /// For `kind: answer`: the ask this answers, and its question.
    #[serde(default)]
    pub ask_id: Option<AskId>,
    #[serde(default)]
    pub question: Option<String>,
    /// For `view` and `brief`, and for steers from a supervisor: the pairing.
    #[serde(default)]
    pub pairing_id: Option<PairingId>,
    /// For `view`: the look's number within the pairing (1, 2, …).
    #[serde(default)]
    pub look: Option<u32>,
    pub created_at: Millis,
    /// Images the model is to see with the text (a photo the human sent from the phone),
    /// read from their files by the extension; absent: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<super::DeliveredImage>,
}

/// Information a session posted for whoever supervises it: a report (the `report` tool)
/// or a run's result (its final assistant text, sent by the extension when the run ends).
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub id: u64,
    pub session_id: SessionId,
    pub session_name: String,
    pub text: String,
    pub created_at: Millis,
    /// `report` or `result`. Absent (older cores): `report`.
    #[serde(default)]
    pub kind: ReportKind,
    /// Whether it went to the subscribed bridges (`report_posted`). False only for a
    /// result the `results` setting held back (`off`, or `asks_only` for a run without an
    /// ask); it is kept and listed all the same. Absent: true.
    #[serde(default = "announced_default")]
    pub announced: bool,
    /// The linked host the session is on (`[[hosts]]` name), in a home core's
    /// `report_posted` to its bridges and CLI; absent for this core's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

fn announced_default() -> bool {
    true
}

/// What a kept [`Report`] is. On the wire a string: `report` or `result`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportKind {
    /// Posted by the session with the `report` tool.
    #[default]
    Report,
    /// A run's final assistant text.
    Result,
}

impl ReportKind {
    /// The wire and database spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ReportKind::Report => "report",
            ReportKind::Result => "result",
        }
    }

    /// The kind a stored spelling names (anything unknown reads as `report`).
    pub fn parse(s: &str) -> ReportKind {
        match s {
            "result" => ReportKind::Result,
            _ => ReportKind::Report,
        }
    }
}

/// The `results` setting: which runs' results reach the phones. On the wire and in the
/// config a string: `all` (default), `asks_only` (only runs in which the session asked the
/// human) or `off`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultsMode {
    #[default]
    All,
    AsksOnly,
    Off,
}

/// A connected chat bridge, as `status` lists it.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BridgeInfo {
    pub name: String,
    pub pid: Option<u32>,
    pub connected_since: Millis,
}

/// What `shepherd status` shows.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoreStatus {
    pub core_version: String,
    pub protocol: u32,
    pub pid: u32,
    pub started_at: Millis,
    pub uptime_ms: u64,
    pub state_dir: String,
    pub socket: String,
    pub sessions_connected: u32,
    pub sessions_known: u32,
    pub open_asks: u32,
    pub bridges: Vec<BridgeInfo>,
}

/// Whether a pairing is still running.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PairingState {
    Active,
    Ended,
}

/// A supervisor session watching a worker session toward a goal. Held by the core, so it
/// survives `/reload`, resume and core restarts.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pairing {
    pub id: PairingId,
    pub supervisor_id: SessionId,
    pub supervisor_name: String,
    pub worker_id: SessionId,
    pub worker_name: String,
    /// The worker's working directory when the pairing started.
    pub cwd: String,
    /// What the worker should achieve; `None` until one is set (`steer` is refused then).
    pub goal: Option<String>,
    /// The file the goal was read from, when it was given as a path.
    pub goal_file: Option<String>,
    pub state: PairingState,
    /// Views delivered so far.
    pub looks: u32,
    /// Steers the supervisor gave so far.
    pub steers: u32,
    pub created_at: Millis,
    pub last_look_at: Option<Millis>,
    pub ended_at: Option<Millis>,
    /// `done` (the supervisor's verdict) or `stopped` (a `/supervise stop`, the human).
    pub end_reason: Option<EndReason>,
    /// Who ended it (`supervisor`, `cli`, `telegram:@alice`, …).
    pub ended_by: Option<String>,
    /// For `done`: the supervisor's evidence.
    pub evidence: Option<String>,
    pub supervisor_connected: bool,
    pub worker_connected: bool,
    /// The linked host it is on (`[[hosts]]` name), in a home core's listings and events;
    /// absent for this core's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// A supervisor's answer to one look.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// One concrete next action, delivered to the worker as a user message.
    Steer,
    /// The worker is on track: nothing to say.
    LetItRun,
    /// The goal is met: the pairing ends with the text as evidence.
    Done,
}

/// One verdict, as stored and as shown to the human.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub kind: VerdictKind,
    pub text: String,
    /// The look it answered (0 before the first view).
    pub look: u32,
    pub created_at: Millis,
}

/// Why a view was built.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ViewReason {
    /// The pairing just started.
    Paired,
    /// The worker stopped (its turn ended).
    Stopped,
    /// The periodic timer.
    Timer,
    /// Someone asked for a look (`/supervise look`, `/look` from the phone).
    Look,
    /// The supervisor's `worker_view` tool (returned, not delivered).
    Request,
}

/// What the worker did since the previous view, compacted by the core from its session
/// file (no model calls).
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct View {
    pub pairing_id: PairingId,
    /// The look number this view is (for `request`: the current look, not advanced).
    pub look: u32,
    pub reason: ViewReason,
    /// The rendered view: what the supervisor reads.
    pub text: String,
    /// Session-file entries covered by this view.
    pub entries: u32,
    /// Tool calls of the worker that have no result yet.
    pub pending_tool_calls: u32,
    /// Nothing happened since the previous view.
    pub unchanged: bool,
    pub created_at: Millis,
}

/// What changed about a pairing, in a `pairing_event`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PairingChange {
    Started,
    /// The goal changed.
    Goal,
    /// The supervisor gave a verdict (`verdict` is set); `done` is followed by `ended`.
    Verdict,
    /// A view was delivered to the supervisor.
    Look,
    Ended,
    /// One side connected, disconnected or was renamed.
    Presence,
}
