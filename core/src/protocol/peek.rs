//! A peek on the wire: a bounded snapshot of what one session is doing now, for the human
//! (`shepherd peek`, a phone's `/peek`). The core builds it from the session's presence
//! (its status, and since when this core has seen it in that status) and the tail of its
//! session file (the call running, the last text the model wrote, the last tool output);
//! every text in it is already cut, so the whole fits one chat message.

use serde::{Deserialize, Serialize};

use super::{Millis, SessionId, SessionStatus};

/// What a session is doing now.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Peek {
    pub session_id: SessionId,
    pub name: String,
    /// The linked host the session runs on; absent for this core's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    pub cwd: String,
    pub connected: bool,
    pub status: SessionStatus,
    /// How long the session has been in `status`, as this core saw it change (milliseconds;
    /// absent when it is not connected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_for_ms: Option<u64>,
    /// The tool call running now: the newest call without a result, while the session is
    /// in a tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<PeekCall>,
    /// The newest text the model wrote (its end, when long).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_text: Option<String>,
    /// The newest finished tool call's output (its last lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_output: Option<PeekOutput>,
    /// Why something above is missing (no session file yet, a file that cannot be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// When the snapshot was taken.
    pub taken_at: Millis,
}

/// A tool call: its tool and its arguments on one line (the telling one, like `command`).
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeekCall {
    pub tool: String,
    pub args: String,
}

/// A finished tool call and the tail of what it returned.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeekOutput {
    pub call: PeekCall,
    /// The tool reported an error.
    pub error: bool,
    /// The output's last lines.
    pub tail: String,
}
