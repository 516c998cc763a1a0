//! Sessions the human starts on the wire: `new_session` starts a Pi session in a project's
//! directory (or a new linked worktree on a new branch) with the human's task as its first
//! message, `continue_session` starts an ended session again on its own session file, and
//! `close_session` stops one of them; `list_started` lists them. Each is answered with the
//! [`StartedSession`] record:
//! the process the core launched through its worker host (headless or tmux, as for
//! assignments' Leads) for that session.

use serde::{Deserialize, Serialize};

use super::{Millis, SessionId, WorkerBackend};

/// Where a started session's process stands.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartedState {
    /// Launched; its Pi session has not registered yet.
    Starting,
    /// Its Pi session registered.
    Running,
    /// Its process is gone (closed, exited, or could not be started again).
    Ended,
}

impl StartedState {
    pub fn as_str(self) -> &'static str {
        match self {
            StartedState::Starting => "starting",
            StartedState::Running => "running",
            StartedState::Ended => "ended",
        }
    }

    /// The stored form; anything else reads as ended (nothing to stop).
    pub fn parse(s: &str) -> StartedState {
        match s {
            "starting" => StartedState::Starting,
            "running" => StartedState::Running,
            _ => StartedState::Ended,
        }
    }
}

/// A session the human started (or continued) through the core.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartedSession {
    /// The launch's record id (one per start).
    pub id: u64,
    pub session_id: SessionId,
    /// The name the session starts with (its project and branch, or the ended session's).
    pub name: String,
    pub cwd: String,
    /// The branch made for it (`new_session` with `branch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The task's (or continuing message's) first 200 characters.
    pub task: String,
    pub backend: WorkerBackend,
    pub state: StartedState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Who started it (`cli`, `telegram:@ada`).
    pub by: String,
    pub created_at: Millis,
    pub updated_at: Millis,
    /// The linked host it runs on; absent for this core's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Its tmux pane (`%3`) when it runs in tmux: `shepherd attach` opens it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pane: Option<String>,
    /// The agent definition it was started with (`new_session`'s `agent`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}
