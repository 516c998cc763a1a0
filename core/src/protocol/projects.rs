//! Project work on the wire: a Manager's work assignments (a branch-sized objective a Lead
//! carries out in its own linked worktree), their states, the projects they group into for
//! `/projects`, and what an integration did. An assignment's handle is its repository and
//! its *original* branch; its executor is the exact Pi session the core launched for it.

use serde::{Deserialize, Serialize};

pub use super::ids::AssignmentId;
use super::{AskId, Lease, Millis, SessionId, UsageTotals, WorkerBackend};

/// The options of the human's question that approves an integration (`integrate =
/// "ask"`): approve it, or deny it (a reply other than an approval is the reason).
pub const INTEGRATION_OPTIONS: [&str; 2] = ["approve", "deny"];

/// The answers to that question that approve the integration (case aside); any other
/// denies it.
pub const APPROVE_ANSWERS: &[&str] = &["approve", "approved", "yes", "y", "ok", "👍"];

/// Where an assignment stands. Only a successful removal of its checkout (by shepherd, or
/// proved by a complete worktree inventory) retires it.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AssignmentState {
    /// Its Lead works on it (or is to be resumed after a crash or a restart).
    Active,
    /// `stop_lead` stopped its Lead; the session, branch and checkout are kept for
    /// `resume_work`.
    Paused,
    /// Over: integrated and its checkout removed, or its checkout is gone. The branch and
    /// the session are kept; a new delegation may reuse the branch.
    Retired,
}

impl AssignmentState {
    pub fn as_str(self) -> &'static str {
        match self {
            AssignmentState::Active => "active",
            AssignmentState::Paused => "paused",
            AssignmentState::Retired => "retired",
        }
    }

    /// Parse the stored form; anything unknown is `paused` (nothing runs, nothing is lost).
    pub fn parse(s: &str) -> AssignmentState {
        match s {
            "active" => AssignmentState::Active,
            "retired" => AssignmentState::Retired,
            _ => AssignmentState::Paused,
        }
    }
}

impl std::fmt::Display for AssignmentState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether an assignment's Lead runs.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeadState {
    /// Launched; its Pi session has not registered yet.
    Starting,
    /// Its session is connected.
    Running,
    /// No process: stopped, exited, or not yet relaunched.
    Stopped,
}

impl LeadState {
    pub fn as_str(self) -> &'static str {
        match self {
            LeadState::Starting => "starting",
            LeadState::Running => "running",
            LeadState::Stopped => "stopped",
        }
    }
}

impl std::fmt::Display for LeadState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A work assignment: one branch of one repository, carried out by one Lead session.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assignment {
    pub id: AssignmentId,
    /// The repository's identity (its canonical common git directory).
    pub repo_id: String,
    /// The repository's name (its primary worktree's directory).
    pub project: String,
    /// The branch it was created for; with `repo_id`, the handle. What the checkout has
    /// checked out now may differ (`current_branch`).
    pub branch: String,
    /// The branch checked out in the checkout when last seen (none: detached).
    #[serde(default)]
    pub current_branch: Option<String>,
    /// The linked worktree the Lead works in.
    pub checkout: String,
    /// The Lead's exact Pi session.
    pub session_id: SessionId,
    pub state: AssignmentState,
    pub lead: LeadState,
    pub backend: WorkerBackend,
    /// The Lead's process, while it has one.
    #[serde(default)]
    pub pid: Option<u32>,
    /// The task's first 200 characters.
    pub task: String,
    /// Who delegated it (the Manager's session name).
    pub created_by: String,
    #[serde(default)]
    pub created_by_id: Option<SessionId>,
    pub created_at: Millis,
    pub updated_at: Millis,
    /// The newest update's time and first 200 characters.
    #[serde(default)]
    pub last_update_at: Option<Millis>,
    #[serde(default)]
    pub last_update: Option<String>,
    /// The checkout's HEAD when last seen.
    #[serde(default)]
    pub head: Option<String>,
    /// Commits on the branch not on the primary branch, and the reverse (read from git
    /// for listings; none when git could not tell).
    #[serde(default)]
    pub ahead: Option<u32>,
    #[serde(default)]
    pub behind: Option<u32>,
    /// The Lead's open asks.
    #[serde(default)]
    pub open_asks: u32,
    /// Tokens and cost of the Lead's tree (the Lead and its workers), for listings.
    #[serde(default)]
    pub usage: Option<UsageTotals>,
    /// The sha the primary branch was fast-forwarded to, once integrated.
    #[serde(default)]
    pub integrated_sha: Option<String>,
    /// Integrated, but removing the checkout failed: `integrate_branch` with the same sha
    /// finishes it.
    #[serde(default)]
    pub cleanup_pending: bool,
    /// Listings: the checkout is not at its path but git still records it (moved, renamed
    /// or deleted by hand): what git records and how to repair it. The assignment is kept
    /// and git's records are not touched until git has forgotten the worktree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkout_missing: Option<String>,
    /// The linked host it is on (`[[hosts]]` name), in a home core's listings and events;
    /// absent for this core's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// One repository with project work, for `/projects` and `shepherd projects`.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Project {
    pub repo_id: String,
    pub project: String,
    /// The primary worktree's root.
    pub primary: String,
    /// The branch checked out there (the one integrations fast-forward).
    #[serde(default)]
    pub primary_branch: Option<String>,
    /// Its Manager lease, when one is held.
    #[serde(default)]
    pub manager: Option<Lease>,
    /// Its assignments that are not retired, oldest first.
    pub assignments: Vec<Assignment>,
    /// The linked host it is on (`[[hosts]]` name), in a home core's listings and events;
    /// absent for this core's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// How an `integrate_branch` ended.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntegrationStatus {
    /// The primary branch was fast-forwarded, the checkout removed, the assignment retired.
    Integrated,
    /// The primary branch was fast-forwarded but the checkout could not be removed; the
    /// same call again finishes it.
    CleanupPending,
    /// `[projects] integrate = "ask"`: the human was asked (`ask_id`); the outcome comes
    /// to the Manager as an `integration` delivery.
    AwaitingApproval,
}

impl IntegrationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            IntegrationStatus::Integrated => "integrated",
            IntegrationStatus::CleanupPending => "cleanup_pending",
            IntegrationStatus::AwaitingApproval => "awaiting_approval",
        }
    }
}

/// What an `integrate_branch` did.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Integration {
    pub status: IntegrationStatus,
    pub assignment: Assignment,
    /// The primary branch (fast-forwarded, or to be).
    pub primary_branch: String,
    pub sha: String,
    /// The approval ask the human answers (`awaiting_approval`).
    #[serde(default)]
    pub ask_id: Option<AskId>,
    /// What happened, in a sentence for the model and the phone.
    pub message: String,
}
