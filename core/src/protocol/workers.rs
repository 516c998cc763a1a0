//! Managed workers on the wire: the worker record every listing and reply carries, its
//! states (a projection that says what is safe to do, not the raw process state) and the
//! actions a caller may take on it now. The core re-checks every action when it is asked
//! for; `available_actions` says what it would accept at the time of the listing.

use serde::{Deserialize, Serialize};

pub use super::ids::WorkerId;
use super::{AskId, Millis, SessionId};

/// What a worker is doing, as far as its owner can act on it.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerState {
    /// Launched; its Pi session has not registered yet.
    Starting,
    /// Registered and on its assignment.
    Working,
    /// Waiting: an `ask_owner` is pending (or it waits on its own workers).
    Blocked,
    /// Its result is stored and on its way to the owner; the process is stopped once the
    /// owner has it.
    Settling,
    /// Something registered that the core could not prove is this worker; no actions.
    Unknown,
    /// The process is gone before a result: only `close` and `transcript`.
    Lost,
    /// The owner got its result; the process is stopped (the Pi session file is kept).
    Done,
    /// Closed by its owner or the human before a result.
    Closed,
}

impl WorkerState {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerState::Starting => "starting",
            WorkerState::Working => "working",
            WorkerState::Blocked => "blocked",
            WorkerState::Settling => "settling",
            WorkerState::Unknown => "unknown",
            WorkerState::Lost => "lost",
            WorkerState::Done => "done",
            WorkerState::Closed => "closed",
        }
    }

    /// Parse the stored form; anything else is `unknown` (fail closed).
    pub fn parse(s: &str) -> WorkerState {
        match s {
            "starting" => WorkerState::Starting,
            "working" => WorkerState::Working,
            "blocked" => WorkerState::Blocked,
            "settling" => WorkerState::Settling,
            "lost" => WorkerState::Lost,
            "done" => WorkerState::Done,
            "closed" => WorkerState::Closed,
            _ => WorkerState::Unknown,
        }
    }

    /// Over: the worker holds no process and no label any more.
    pub fn is_ended(self) -> bool {
        matches!(self, WorkerState::Done | WorkerState::Closed)
    }

    /// What may be done with a worker in this state.
    pub fn actions(self) -> Vec<WorkerAction> {
        use WorkerAction::*;
        match self {
            WorkerState::Starting => vec![Close, Transcript],
            WorkerState::Working => vec![Steer, Interrupt, Close, Inspect, Transcript],
            WorkerState::Blocked => vec![Reply, Steer, Close, Inspect, Transcript],
            WorkerState::Settling => vec![Inspect, Transcript],
            WorkerState::Unknown => vec![],
            WorkerState::Lost => vec![Close, Transcript],
            WorkerState::Done | WorkerState::Closed => vec![Transcript],
        }
    }
}

impl std::fmt::Display for WorkerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Something an owner may do with a worker.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerAction {
    Steer,
    Interrupt,
    Reply,
    Close,
    Inspect,
    Transcript,
}

impl WorkerAction {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerAction::Steer => "steer",
            WorkerAction::Interrupt => "interrupt",
            WorkerAction::Reply => "reply",
            WorkerAction::Close => "close",
            WorkerAction::Inspect => "inspect",
            WorkerAction::Transcript => "transcript",
        }
    }
}

/// How a worker's process is hosted.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerBackend {
    /// A window of the core's private tmux server (`shepherd attach <label>`).
    Tmux,
    /// A `pi --mode rpc` child of the core.
    Headless,
}

impl WorkerBackend {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerBackend::Tmux => "tmux",
            WorkerBackend::Headless => "headless",
        }
    }

    pub fn parse(s: &str) -> Option<WorkerBackend> {
        match s {
            "tmux" => Some(WorkerBackend::Tmux),
            "headless" => Some(WorkerBackend::Headless),
            _ => None,
        }
    }
}

/// A managed worker: one Pi session the core launched for an owner, on one assignment.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Worker {
    pub id: WorkerId,
    /// `^[a-z][a-z0-9_-]{0,31}$`, unique among the owner's live workers.
    pub label: String,
    /// The agent definition it runs.
    pub definition: String,
    pub owner_id: SessionId,
    pub owner_name: String,
    /// When the owner is itself a worker: that worker's id.
    #[serde(default)]
    pub parent_worker: Option<WorkerId>,
    /// The worker's Pi session (chosen by the core at launch).
    pub session_id: SessionId,
    #[serde(default)]
    pub session_file: Option<String>,
    pub cwd: String,
    pub backend: WorkerBackend,
    pub state: WorkerState,
    /// What the caller may do now (the core re-checks on every call).
    pub available_actions: Vec<WorkerAction>,
    /// The worker's `ask_owner` waiting for a reply.
    #[serde(default)]
    pub pending_ask: Option<AskId>,
    /// The assignment's first 200 characters.
    pub task: String,
    /// Whether the worker may start workers of its own (its definition lists `agents`).
    #[serde(default)]
    pub delegates: bool,
    pub created_at: Millis,
    pub updated_at: Millis,
    /// The linked host it is on (`[[hosts]]` name), in a home core's listings and events;
    /// absent for this core's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}
