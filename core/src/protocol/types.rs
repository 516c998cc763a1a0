//! Records carried inside protocol messages. Field names are the wire names; optional
//! fields default so older peers and newer fields can meet.

use serde::{Deserialize, Serialize};

/// Unix time in milliseconds.
pub type Millis = u64;

/// What kind of program is on the other end of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientKind {
    /// A Pi session running the shepherd extension.
    Pi,
    /// A chat bridge (Telegram, Matrix) acting for the human.
    Bridge,
    /// The `shepherd` command line, acting for the human.
    Cli,
}

impl ClientKind {
    /// True for the clients that act for the human owner (CLI and bridges).
    pub fn is_human(self) -> bool {
        matches!(self, ClientKind::Bridge | ClientKind::Cli)
    }
}

/// A session's place in the hierarchy (see DESIGN.md: Lead, Manager, Chief).
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
}

impl Role {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Lead => "lead",
            Role::Manager => "manager",
            Role::Chief => "chief",
        }
    }
}

/// How full a session's context window is, as Pi reports it. Each part may be unknown
/// (Pi reports no token count right after a compaction).
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registration {
    /// Pi's exact session id (`ctx.sessionManager.getSessionId()`).
    pub session_id: String,
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
    #[serde(default = "idle")]
    pub status: String,
    #[serde(default)]
    pub role: Role,
    /// Path of Pi's session file (JSONL), for supervisor views.
    #[serde(default)]
    pub session_file: Option<String>,
}

fn idle() -> String {
    "idle".into()
}

/// A session as the core knows it; the records of `shepherd sessions --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub id: String,
    pub name: String,
    pub cwd: String,
    /// The pid of the process on the socket (from SO_PEERCRED).
    pub pid: Option<u32>,
    pub model: Option<String>,
    pub status: String,
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
    #[serde(default)]
    pub session_file: Option<String>,
    /// Open asks of this session.
    pub open_asks: u32,
    /// Messages accepted for this session and not yet acknowledged by it.
    pub pending_messages: u32,
    pub first_seen: Millis,
    pub last_seen: Millis,
}

/// Where an ask is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AskState {
    Open,
    Answered,
}

/// A question from a session that needs a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ask {
    pub id: u64,
    pub session_id: String,
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
}

/// Why a message is in a session's mailbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryKind {
    /// The human (CLI, chat) steering the session.
    Steer,
    /// Another session writing to this one.
    Message,
    /// The answer to one of this session's asks.
    Answer,
}

/// Who sent a delivery, stamped by the core from the sender's connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sender {
    pub kind: ClientKind,
    /// The sending session's id, for `kind: pi`.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Display label (session name, `cli`, `telegram:@alice`).
    pub name: String,
}

/// One message for a session. `id` is unique within the store (`store_id` in `welcome`)
/// and increases in delivery order, so a receiver can drop anything it has seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    pub id: u64,
    pub kind: DeliveryKind,
    pub text: String,
    pub from: Sender,
    /// For `kind: answer`: the ask this answers, and its question.
    #[serde(default)]
    pub ask_id: Option<u64>,
    #[serde(default)]
    pub question: Option<String>,
    pub created_at: Millis,
}

/// Information a session posted for whoever supervises it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub id: u64,
    pub session_id: String,
    pub session_name: String,
    pub text: String,
    pub created_at: Millis,
}

/// A connected chat bridge, as `status` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BridgeInfo {
    pub name: String,
    pub pid: Option<u32>,
    pub connected_since: Millis,
}

/// What `shepherd status` shows.
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
