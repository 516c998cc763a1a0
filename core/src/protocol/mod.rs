//! # The intercom protocol
//!
//! The contract between the core and every client (Pi extension, chat bridge, CLI, tests).
//! Plain serde types and pure framing helpers: no tokio, no database, no network, so every
//! part of shepherd (and the TypeScript extension, through the golden fixtures in
//! `tests/fixtures/protocol/`) shares one definition. `docs/PROTOCOL.md` is the prose
//! version of this module; change both together.
//!
//! - [`frame`]: 4-byte big-endian length + UTF-8 JSON object.
//! - [`hot_frames`]: the two frames every routed message costs (`deliver`, `sent`), written
//!   by hand into the bytes serde writes; how the hub encodes what it sends.
//! - [`messages`]: [`ClientMsg`] (client → core) and [`ServerMsg`] (core → client),
//!   internally tagged by `type`.
//! - [`requests`]: one struct per client message (`ClientMsg::Supervise(Supervise)`).
//! - [`senders`]: who may send each request (client kinds, a Pi session's roles) and how
//!   everyone else is refused, as the message table declares it.
//! - [`types`]: the records inside messages (sessions, asks, deliveries, reports).
//! - [`ids`]: session, ask, pairing and message ids as newtypes.
//! - [`status`]: domain values sent as strings (session status, pairing end reason, why a
//!   session left).
//! - [`workers`]: the managed worker record, its states and actions.
//! - [`projects`]: project work: assignments, projects, integrations.
//! - [`hosts`]: linked hosts (other machines' cores) and where their links stand.
//! - [`usage`]: the usage report (tokens and cost from session files).
//! - [`peek`]: a bounded snapshot of what one session is doing now.
//! - [`diff`]: what a session changed, as a stat and a patch.
//! - [`started`]: sessions the human starts, continues and closes through the core.
//! - [`error_code`]: the stable error codes a client can match on.

pub mod approvals;
pub mod diff;
pub mod error_code;
pub mod files;
pub mod frame;
pub mod hosts;
pub mod hot_frames;
pub mod ids;
pub mod messages;
pub mod peek;
pub mod projects;
pub mod requests;
pub mod senders;
pub mod started;
pub mod status;
pub mod types;
pub mod usage;
#[cfg(test)]
mod wire_gen;
pub mod workers;

pub use approvals::{Approval, ApprovalId, ApprovalScope, ApprovalState, Ruling};
pub use diff::SessionDiff;
pub use error_code::ErrorCode;
pub use files::{DeliveredImage, FileKind, SavedFile};
pub use hosts::{
    AskRef, HerdChief, HostLink, HostMail, LinkState, MAX_HOST_NAME, is_host_name, split_host,
};
pub use ids::{AskId, IdError, MAX_ID, MessageId, PairingId, SessionId, short_id};
pub use messages::{ClientMsg, ServerMsg};
pub use peek::{Peek, PeekCall, PeekOutput};
pub use projects::{
    Assignment, AssignmentId, AssignmentState, Integration, IntegrationStatus, LeadState, Project,
};
pub use started::{StartedSession, StartedState};
pub use status::{EndReason, LeaveReason, SessionStatus};
pub use types::*;
pub use usage::{MissingUsage, ModelUsage, SessionUsage, UsageReport, UsageTotals};
pub use workers::{Worker, WorkerAction, WorkerBackend, WorkerId, WorkerState};

/// Version of the intercom protocol. Client and core must agree exactly; `hello` with any
/// other version is refused with [`ErrorCode::ProtocolMismatch`] naming both versions.
pub const PROTOCOL_VERSION: u32 = 3;
