//! # Project work
//!
//! A Manager hands a branch-sized objective to a Lead the core launches in its own linked
//! worktree (a *work assignment*: repository + original branch → the exact Lead session
//! and its checkout). Each completed turn of that Lead comes back to the repository's
//! Manager *role* as an assignment update, durable and once, kept while no Manager holds
//! the lease; the Manager steers, pauses (`stop_lead`) and resumes (`resume_work`) it, and
//! when the work is accepted fast-forwards the primary branch and retires the worktree
//! (`integrate_branch`, approved by the human when `[projects] integrate = "ask"`).
//!
//! - [`git_lane`]: git work, one operation at a time off the hub, continued on the hub.
//! - [`delegate`]: `delegate_project`, `resume_work`, `stop_lead`.
//! - [`lead`]: the Lead's launch line, a failed launch, its exit told to the Manager
//!   role, each run's update to that role; the role's mail. Its process (launch, binding
//!   by nonce, exit, relaunch) goes through the lifecycle it shares with workers,
//!   `hub/launched/`.
//! - [`integrate`]: `integrate_branch`, its approval, cleanup and retirement.
//! - [`listing`]: `list_projects` and the assignments in `list_staff`.

mod delegate;
mod git_lane;
mod integrate;
mod lead;
mod listing;

pub use git_lane::GitDone;
pub(super) use git_lane::{GitJob, GitLane};
pub(in crate::hub) use lead::{ProjectMail, lead_spec};

use rusqlite::Connection;

use super::{Cx, HubError, HubResult, Out, State};
use crate::protocol::{
    Assignment, AssignmentId, ClientKind, ErrorCode, Lease, Role, ServerMsg, SessionInfo,
};
use crate::store::{self, projects::AssignmentRow};

pub(in crate::hub) fn refused(reason: &str, message: impl Into<String>) -> HubError {
    HubError::new(ErrorCode::ProjectRefused, message)
        .with_details(serde_json::json!({ "reason": reason }))
}

/// `app@feat/a`: how people name an assignment.
pub(in crate::hub) fn tag(a: &Assignment) -> String {
    format!("{}@{}", a.project, a.branch)
}

/// Who acts on an assignment request.
pub(in crate::hub) enum Actor {
    /// A Pi session holding its repository's Manager lease.
    Manager { me: Box<SessionInfo>, lease: Lease },
    /// The CLI or a bridge.
    Human,
}

impl State {
    /// The record of `row` as clients see it now.
    pub(in crate::hub) fn assignment_record(&self, row: &AssignmentRow) -> Assignment {
        row.record(self.presence.is_live(&row.assignment.session_id))
    }

    pub(in crate::hub) fn assignment_row(
        &self,
        db: &Connection,
        id: AssignmentId,
    ) -> HubResult<AssignmentRow> {
        store::projects::get(db, id)?
            .ok_or_else(|| HubError::new(ErrorCode::Internal, format!("assignment {id} is gone")))
    }

    /// Tell the subscribers an assignment changed.
    pub(in crate::hub) fn assignment_changed(&self, row: &AssignmentRow, out: &mut Out) {
        let assignment = self.assignment_record(row);
        self.presence.broadcast(
            &ServerMsg::AssignmentChanged {
                assignment: Box::new(assignment),
            },
            out,
        );
    }

    /// The Pi session on `cx` with the Manager lease of its repository.
    pub(in crate::hub) fn manager(
        &self,
        cx: Cx,
        db: &Connection,
    ) -> HubResult<(SessionInfo, Lease)> {
        let id = self.presence.registered(cx.conn)?.clone();
        let me = self.session_uncounted(db, &id)?;
        match store::leases::held_by(db, &me.id)? {
            Some(lease) if lease.role == Role::Manager && lease.repo_id.is_some() => {
                Ok((me, lease))
            }
            // The sender check admitted a Manager, and nothing ran since.
            _ => Err(HubError::new(
                ErrorCode::Internal,
                format!(
                    "session {} holds no Manager lease after the sender check",
                    me.id
                ),
            )),
        }
    }

    /// Who is asking: a Manager (Pi) or the human (CLI, bridge); the sender check refused
    /// other Pi sessions (`pi(manager else NOT_MANAGER)`).
    fn project_actor(&self, cx: Cx, db: &Connection) -> HubResult<Actor> {
        match cx.kind {
            ClientKind::Pi => {
                let (me, lease) = self.manager(cx, db)?;
                Ok(Actor::Manager {
                    me: Box::new(me),
                    lease,
                })
            }
            _ => Ok(Actor::Human),
        }
    }

    /// The open assignment of `branch` for this actor: a Manager's in its repository; the
    /// human's in the repository `repo` names (name, primary path or repo id), or the only
    /// one with that branch.
    fn assignment_for(
        &self,
        actor: &Actor,
        branch: &str,
        repo: Option<&str>,
        db: &Connection,
    ) -> HubResult<AssignmentRow> {
        let branch = branch.trim();
        if branch.is_empty() {
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                "branch must name an assigned branch (`shepherd projects` lists them)",
            ));
        }
        let rows = match actor {
            Actor::Manager { lease, .. } => {
                let repo_id = lease.repo_id.as_deref().unwrap_or_default();
                store::projects::open_by_branch(db, repo_id, branch)?
                    .into_iter()
                    .collect()
            }
            Actor::Human => {
                let rows = store::projects::open_by_branch_anywhere(db, branch)?;
                match repo {
                    Some(repo) => rows.into_iter().filter(|r| names_repo(r, repo)).collect(),
                    None => rows,
                }
            }
        };
        match rows.len() {
            1 => Ok(rows.into_iter().next().expect("one")),
            0 => {
                let project = match actor {
                    Actor::Manager { lease, .. } => lease.project.clone(),
                    Actor::Human => repo.map(str::to_string),
                };
                let where_ = project.map_or(String::new(), |p| format!(" in {p}"));
                let hint = match actor {
                    Actor::Manager { .. } => {
                        "list_staff lists your assignments; delegate_project starts one"
                    }
                    Actor::Human => "`shepherd projects` lists the assignments",
                };
                Err(refused(
                    "no_assignment",
                    format!("no open assignment for branch {branch:?}{where_}; {hint}"),
                ))
            }
            _ => {
                let names: Vec<String> =
                    rows.iter().map(|r| r.assignment.project.clone()).collect();
                Err(refused(
                    "ambiguous",
                    format!(
                        "branch {branch:?} is assigned in {}; name the repository (--repo {})",
                        names.join(", "),
                        names[0]
                    ),
                ))
            }
        }
    }
}

/// Whether `repo` (a name, a primary worktree path or a repo id) names `row`'s repository.
fn names_repo(row: &AssignmentRow, repo: &str) -> bool {
    let repo = repo.trim().trim_end_matches('/');
    let a = &row.assignment;
    a.project == repo
        || a.repo_id == repo
        || row.primary_root.trim_end_matches('/') == repo
        || std::fs::canonicalize(repo)
            .ok()
            .is_some_and(|p| p.to_string_lossy().trim_end_matches('/') == row.primary_root)
}
