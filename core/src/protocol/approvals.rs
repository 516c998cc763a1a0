//! Tool-call approvals on the wire: a session's `request_approval` for one tool call is
//! ruled by the policy (`[approvals]`, `crate::approvals`): `allow` and `deny` answer at
//! once; `ask` keeps an [`Approval`] in the store, pending until the first
//! `decide_approval` (the human's CLI or a bridge) allows it (once, or for the rest of the
//! session) or denies it (with the reason the model reads). A request again for the same
//! tool call (after a reconnect) finds the same approval: one call, one approval, one
//! decision.

use serde::{Deserialize, Serialize};

pub use super::ids::ApprovalId;
use super::{Millis, SessionId};

/// Where an approval stands.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    /// Waiting for a decision; the call is held.
    Pending,
    /// Allowed: the call runs.
    Allowed,
    /// Denied: the call is blocked, with `reason` when one was given.
    Denied,
    /// The session stopped waiting (it left, or its run was stopped) before a decision.
    Withdrawn,
}

impl ApprovalState {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalState::Pending => "pending",
            ApprovalState::Allowed => "allowed",
            ApprovalState::Denied => "denied",
            ApprovalState::Withdrawn => "withdrawn",
        }
    }

    pub fn parse(s: &str) -> ApprovalState {
        match s {
            "allowed" => ApprovalState::Allowed,
            "denied" => ApprovalState::Denied,
            "withdrawn" => ApprovalState::Withdrawn,
            _ => ApprovalState::Pending,
        }
    }
}

/// How far an allow reaches.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalScope {
    /// This call only.
    #[default]
    Once,
    /// This call, and the calls the same rule would ask about, until the session ends.
    Session,
}

/// One tool call held for a decision.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Approval {
    pub id: ApprovalId,
    pub session_id: SessionId,
    pub session_name: String,
    /// The tool (`bash`, `write`, …) and what the policy matched: the command, the path,
    /// or the arguments as JSON (at most 4 KiB shown).
    pub tool: String,
    pub subject: String,
    /// The rule that asked (`rule 1 of the careful preset in …`).
    pub rule: String,
    /// The session's directory.
    pub cwd: String,
    /// Pi's id of the held call.
    pub tool_call_id: String,
    pub state: ApprovalState,
    /// For an allow: once or for the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ApprovalScope>,
    /// Who decided (`cli`, `telegram:@ada`), or why it was withdrawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// A denial's reason, which the model reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub created_at: Millis,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<Millis>,
    /// The linked host the session is on (`[[hosts]]` name), in a home core's listings
    /// and events; absent for this core's own. Its id is that core's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl Approval {
    /// How a human names it: `4`, or `gpu:4` on a linked host.
    pub fn reference(&self) -> String {
        match &self.host {
            Some(host) => format!("{host}:{}", self.id),
            None => self.id.to_string(),
        }
    }
}

/// How a `request_approval` was ruled.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ruling {
    /// The call runs.
    Allow,
    /// The call is blocked (`rule` says by which rule, or `approval.reason` why).
    Deny,
    /// The call waits: `approval` is pending until `approval_changed` says otherwise.
    Pending,
}
