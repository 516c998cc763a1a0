//! Stable wire error codes. Clients match on these strings; the human-readable `message`
//! beside them may change. Adding a code is compatible, renaming one is a protocol change.

use serde::{Deserialize, Serialize};

/// Every error the core can put in an `error` frame. Codes marked *closes* are followed by
/// the core closing the connection; the others leave it open.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The length prefix announces a body over the limit (*closes*).
    FrameTooLarge,
    /// The stream ended in the middle of a frame (*closes*).
    TruncatedFrame,
    /// The body is not UTF-8, not JSON, or not a JSON object (*closes*).
    MalformedFrame,
    /// A JSON object whose `type` is not a message of this protocol.
    UnknownType,
    /// A known message with missing or wrongly typed fields.
    InvalidMessage,
    /// The first message was not `hello` (*closes*).
    HelloRequired,
    /// No `hello` arrived in time (*closes*).
    HelloTimeout,
    /// `hello` named another protocol version (*closes*).
    ProtocolMismatch,
    /// A second `hello` on the same connection.
    AlreadyGreeted,
    /// The request needs a registered Pi session on this connection.
    NotRegistered,
    /// This kind of client may not make this request.
    Forbidden,
    /// The session id is held by another live connection.
    SessionTaken,
    /// The same Pi process registered this session on a new connection; this one is
    /// closed (*closes*).
    Replaced,
    /// No session matches the selector.
    UnknownSession,
    /// More than one session matches the selector.
    AmbiguousSession,
    /// No ask with that id.
    UnknownAsk,
    /// The ask already has its one answer.
    AlreadyAnswered,
    /// No approval with that id.
    UnknownApproval,
    /// The approval was decided already, or withdrawn: no longer waiting.
    AlreadyDecided,
    /// A configured limit (sessions, open asks, …) would be exceeded.
    LimitExceeded,
    /// A field's value is out of range (empty text, too many options, …).
    InvalidArgument,
    /// The client does not read its frames fast enough (*closes*; reconnect to resume).
    SlowConsumer,
    /// The core is shutting down (*closes*).
    ShuttingDown,
    /// The session is already in an active pairing (as supervisor or worker).
    AlreadyPaired,
    /// The session is in no active pairing.
    NotPaired,
    /// No session qualifies (no free worker or supervisor in that directory).
    NoCandidate,
    /// A goal given as a path could not be read; the message names the path.
    GoalUnreadable,
    /// A supervisor guard refused the verdict (no goal yet, the worker is still busy);
    /// the message says why and what to do.
    VerdictRefused,
    /// More verdicts in one look than allowed: the supervisor should end its turn.
    Runaway,
    /// The durable store failed; nothing from the request was accepted.
    StoreFailed,
    /// Another live bridge already serves this bot (`subscribe.serves`); the message names it.
    AlreadyServed,
    /// A bug in the core; the message says what failed.
    Internal,
    /// `unanswer`: the session may have read the answer already, so it stays answered.
    AlreadyDelivered,
    /// `set_role`: the role was not granted; `details.reason` says why
    /// (`not_a_repository`, `linked_worktree`, `held` with `details.holder`, `wrong_role`).
    RoleRefused,
    /// A managed-worker request was refused; `details.reason` says why (`not_direct_owner`,
    /// `no_pending_ask`, `agent_busy`, `agent_label_exists`, `agent_not_found`,
    /// `unknown_definition`, `definition_disabled`, `not_allowed_to_delegate`, `ask_pending`,
    /// `not_a_worker`, `bad_label`, `launch_failed`, `launch_mismatch`).
    WorkerRefused,
    /// A project work request was refused; `details.reason` says why (`not_manager`,
    /// `branch_assigned`, `checkout_occupied`, `no_assignment`, `retired`, `ambiguous`,
    /// `git`, `sha_mismatch`, `not_fast_forward`, `dirty_primary`, `primary_detached`,
    /// `primary_busy`, `branch_missing`, `bad_sha`, `ref_locked`, `primary_moved`, `integrate_denied`, `lead_stopping`,
    /// `launch_failed`, `launch_mismatch`); and the human's `new_session`,
    /// `continue_session` and `close_session` (`no_project`, `unknown_project`,
    /// `no_directory`, `not_a_repository`, `branch_exists`, `running`, `no_session_file`,
    /// `not_started`, `launch_failed`).
    ProjectRefused,
    /// A request for a linked host could not reach it: no host has that name, its link is
    /// not connected, or the link dropped before the host answered (then the host may have
    /// carried the request out: list again). `details.host` names it.
    HostUnreachable,
}

impl ErrorCode {
    /// Whether the core closes the connection after sending this code.
    pub fn closes_connection(self) -> bool {
        matches!(
            self,
            ErrorCode::FrameTooLarge
                | ErrorCode::TruncatedFrame
                | ErrorCode::MalformedFrame
                | ErrorCode::HelloRequired
                | ErrorCode::HelloTimeout
                | ErrorCode::ProtocolMismatch
                | ErrorCode::Replaced
                | ErrorCode::SlowConsumer
                | ErrorCode::ShuttingDown
        )
    }

    /// The code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        ALL.iter().find(|c| c.0 == self).map_or("internal", |c| c.1)
    }

    /// Every code, in documentation order.
    pub fn all() -> impl Iterator<Item = ErrorCode> {
        ALL.iter().map(|c| c.0)
    }
}

const ALL: &[(ErrorCode, &str)] = &[
    (ErrorCode::FrameTooLarge, "frame_too_large"),
    (ErrorCode::TruncatedFrame, "truncated_frame"),
    (ErrorCode::MalformedFrame, "malformed_frame"),
    (ErrorCode::UnknownType, "unknown_type"),
    (ErrorCode::InvalidMessage, "invalid_message"),
    (ErrorCode::HelloRequired, "hello_required"),
    (ErrorCode::HelloTimeout, "hello_timeout"),
    (ErrorCode::ProtocolMismatch, "protocol_mismatch"),
    (ErrorCode::AlreadyGreeted, "already_greeted"),
    (ErrorCode::NotRegistered, "not_registered"),
    (ErrorCode::Forbidden, "forbidden"),
    (ErrorCode::SessionTaken, "session_taken"),
    (ErrorCode::Replaced, "replaced"),
    (ErrorCode::UnknownSession, "unknown_session"),
    (ErrorCode::AmbiguousSession, "ambiguous_session"),
    (ErrorCode::UnknownAsk, "unknown_ask"),
    (ErrorCode::AlreadyAnswered, "already_answered"),
    (ErrorCode::UnknownApproval, "unknown_approval"),
    (ErrorCode::AlreadyDecided, "already_decided"),
    (ErrorCode::LimitExceeded, "limit_exceeded"),
    (ErrorCode::InvalidArgument, "invalid_argument"),
    (ErrorCode::SlowConsumer, "slow_consumer"),
    (ErrorCode::ShuttingDown, "shutting_down"),
    (ErrorCode::AlreadyPaired, "already_paired"),
    (ErrorCode::NotPaired, "not_paired"),
    (ErrorCode::NoCandidate, "no_candidate"),
    (ErrorCode::GoalUnreadable, "goal_unreadable"),
    (ErrorCode::VerdictRefused, "verdict_refused"),
    (ErrorCode::Runaway, "runaway"),
    (ErrorCode::StoreFailed, "store_failed"),
    (ErrorCode::AlreadyServed, "already_served"),
    (ErrorCode::Internal, "internal"),
    (ErrorCode::AlreadyDelivered, "already_delivered"),
    (ErrorCode::RoleRefused, "role_refused"),
    (ErrorCode::WorkerRefused, "worker_refused"),
    (ErrorCode::ProjectRefused, "project_refused"),
    (ErrorCode::HostUnreachable, "host_unreachable"),
];

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_serde_names() {
        for (code, name) in ALL {
            assert_eq!(serde_json::to_value(code).unwrap(), *name);
            assert_eq!(code.as_str(), *name);
        }
    }
}
