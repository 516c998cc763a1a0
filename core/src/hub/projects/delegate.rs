//! `delegate_project` (a branch and its linked worktree made on the git lane, then the
//! assignment recorded with its task as mail and its Lead launched), `resume_work` (the
//! same session relaunched in the same checkout) and `stop_lead` (the Lead and its
//! workers stopped, everything else kept).

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::{Actor, GitDone, GitJob, refused, tag};
use crate::clock::now_ms;
use crate::git::worktrees::{self, Checkout, Presence};
use crate::hub::launched::{Asker, Opened, Proc, new_session_id};
use crate::hub::{Cx, HubError, HubResult, Out, State, atomically};
use crate::protocol::requests::{DelegateProject, ResumeWork, StopLead};
use crate::protocol::{AssignmentState, ClientKind, DeliveryKind, Sender, ServerMsg, SessionId};
use crate::store::projects::{AssignmentRow, NewAssignment};
use crate::store::{self, messages::NewMessage};
use crate::workers::launch::SessionStart;

/// What a delegation carries from the request to its continuation.
struct Delegation {
    cx: Cx,
    manager: SessionId,
    manager_name: String,
    model: Option<String>,
    repo_id: String,
    project: String,
    task: String,
}

impl State {
    /// `delegate_project`: checks, then the branch and worktree on the git lane; the
    /// continuation records the assignment and launches its Lead.
    pub(in crate::hub) fn delegate_project(
        &mut self,
        cx: Cx,
        req: DelegateProject,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Opened { me, lease, .. } = self.opening(cx, Asker::Manager, &req.task, db)?;
        let lease = lease.expect("a Manager's opening has its lease");
        let repo_id = lease
            .repo_id
            .clone()
            .expect("a Manager lease names its repository");
        let branch = req
            .branch
            .as_deref()
            .map(str::trim)
            .filter(|b| !b.is_empty());
        if let Some(branch) = branch
            && let Some(row) = store::projects::open_by_branch(db, &repo_id, branch)?
        {
            return Err(assigned(&row));
        }
        let d = Delegation {
            cx,
            manager: me.id.clone(),
            manager_name: me.name.clone(),
            model: me.model.clone(),
            repo_id: repo_id.clone(),
            project: lease.project.clone().unwrap_or_else(|| me.name.clone()),
            task: req.task,
        };
        let branch = branch.map(str::to_string);
        let base = req.base.filter(|b| !b.trim().is_empty());
        let job: GitJob = Box::new(move || {
            let made = (|| {
                let primary = worktrees::primary_root(Path::new(&repo_id))?;
                let branch = match branch {
                    Some(b) => b,
                    None => worktrees::generate_branch(&primary, &d.task)?,
                };
                let checkout = worktrees::ensure_worktree(&primary, &branch, base.as_deref())?;
                Ok::<_, worktrees::WorktreeError>((primary, checkout))
            })()
            .map_err(|e| e.to_string());
            GitDone {
                reply: Some((cx.conn, cx.id)),
                then: Box::new(move |state, db, out| state.delegated(d, made, db, out)),
            }
        });
        out.git.push(job);
        Ok(())
    }

    /// The worktree exists (or could not be made): record the assignment and launch.
    fn delegated(
        &mut self,
        d: Delegation,
        made: Result<(PathBuf, Checkout), String>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let (primary, checkout) = made.map_err(|e| refused("git", with_lock_hint(e)))?;
        let lease = store::leases::held_by(db, &d.manager)?;
        if lease.is_none_or(|l| l.repo_id.as_deref() != Some(d.repo_id.as_str())) {
            return Err(refused(
                "not_manager",
                format!(
                    "this session stopped being the Manager of {} while the worktree was made; nothing was assigned (the worktree {} is kept)",
                    d.project,
                    checkout.path.display()
                ),
            ));
        }
        if let Some(row) = store::projects::open_by_branch(db, &d.repo_id, &checkout.branch)? {
            return Err(assigned(&row));
        }
        let path = checkout.path.to_string_lossy().to_string();
        self.check_unoccupied(&path, None, db)?;
        let ticket = self.ticket(None, db)?;
        let session_id = new_session_id();
        let now = now_ms();
        let text = format!(
            "Assignment from the manager of {} ({}) · branch {} · checkout {}\n\n{}",
            d.project, d.manager_name, checkout.branch, path, d.task
        );
        let from = Sender {
            kind: ClientKind::Pi,
            session_id: Some(d.manager.clone()),
            name: d.manager_name.clone(),
        };
        let row = atomically(db, || {
            let id = store::projects::insert(
                db,
                &NewAssignment {
                    repo_id: &d.repo_id,
                    project: &d.project,
                    primary_root: &primary.to_string_lossy(),
                    branch: &checkout.branch,
                    checkout: &path,
                    head: &checkout.head,
                    session_id: &session_id,
                    task: &d.task,
                    created_by: &d.manager_name,
                    created_by_id: Some(&d.manager),
                    backend: ticket.backend,
                    nonce: &ticket.nonce,
                    model: d.model.as_deref(),
                    now,
                },
            )?;
            self.mail(
                NewMessage::plain(&session_id, DeliveryKind::Task, &text, &from),
                db,
                out,
            )?;
            self.assignment_row(db, id)
        })?;
        tracing::info!(assignment = row.assignment.id.get(), tag = %tag(&row.assignment), checkout = %path, created = checkout.created, "assignment recorded; launching its Lead");
        self.assignment_changed(&row, out);
        let start = SessionStart::New {
            id: session_id.to_string(),
        };
        self.launch(
            &Proc::Lead(row),
            start,
            Some((d.cx.conn, d.cx.id)),
            true,
            out,
        );
        Ok(())
    }

    /// Refuse when a live session other than `except` works in `checkout` (no second
    /// writer), or another open assignment has it.
    pub(in crate::hub) fn check_unoccupied(
        &self,
        checkout: &str,
        except: Option<&SessionId>,
        db: &Connection,
    ) -> HubResult<()> {
        if let Some(other) = store::projects::open_by_checkout(db, checkout)?
            && Some(&other.assignment.session_id) != except
        {
            return Err(refused(
                "checkout_occupied",
                format!(
                    "the checkout {checkout} belongs to the assignment {} (its Lead is session {}); resume_work {:?} instead",
                    tag(&other.assignment),
                    other.assignment.session_id,
                    other.assignment.branch
                ),
            ));
        }
        let inside = |cwd: &str| cwd == checkout || cwd.starts_with(&format!("{checkout}/"));
        for id in self.presence.live_ids() {
            if Some(id) == except {
                continue;
            }
            let info = self.session_uncounted(db, id)?;
            if inside(&info.cwd) {
                return Err(refused(
                    "checkout_occupied",
                    format!(
                        "{} ({}) works in {checkout}: one writer per checkout; stop that session or choose another branch",
                        info.name, info.id
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `resume_work`: the running Lead, or the same session relaunched in its checkout
    /// once git's inventory shows the checkout is still there.
    pub(in crate::hub) fn resume_work(
        &mut self,
        cx: Cx,
        req: ResumeWork,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let actor = self.project_actor(cx, db)?;
        let row = match self.assignment_for(&actor, &req.branch, req.repo.as_deref(), db) {
            Ok(row) => row,
            Err(e) => return Err(self.retired_or(e, &actor, &req.branch, db)?),
        };
        if self.answered_running(cx, &row, out) {
            return Ok(());
        }
        self.host_backend()?;
        let (primary, checkout, branch, id) = (
            PathBuf::from(&row.primary_root),
            PathBuf::from(&row.assignment.checkout),
            row.assignment.branch.clone(),
            row.assignment.id,
        );
        let job: GitJob = Box::new(move || {
            let presence = worktrees::checkout_presence_of(&primary, &checkout, Some(&branch));
            GitDone {
                reply: Some((cx.conn, cx.id)),
                then: Box::new(move |state, db, out| {
                    state.resume_checked(cx, id, presence, db, out)
                }),
            }
        });
        out.git.push(job);
        Ok(())
    }

    fn resume_checked(
        &mut self,
        cx: Cx,
        id: crate::protocol::AssignmentId,
        presence: Presence,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let row = self.assignment_row(db, id)?;
        match presence {
            Presence::Present => {}
            Presence::Absent => {
                self.retire(
                    &row,
                    "its checkout is gone (git no longer records it)",
                    db,
                    out,
                )?;
                return Err(refused(
                    "retired",
                    format!(
                        "the checkout {} is gone, so the assignment {} was retired (branch and session kept); delegate_project may reuse the branch",
                        row.assignment.checkout,
                        tag(&row.assignment)
                    ),
                ));
            }
            Presence::Moved(moved) => {
                return Err(refused(
                    "checkout_moved",
                    format!("{moved}; nothing was started"),
                ));
            }
            Presence::Unknown(why) => {
                return Err(refused(
                    "git",
                    format!(
                        "git could not tell whether the checkout {} is there ({why}); nothing was started",
                        row.assignment.checkout
                    ),
                ));
            }
        }
        if row.assignment.state == AssignmentState::Retired {
            return Err(refused("retired", "the assignment was retired meanwhile"));
        }
        if self.answered_running(cx, &row, out) {
            return Ok(());
        }
        if self.presence.is_live(&row.assignment.session_id) {
            return Err(refused(
                "lead_stopping",
                format!(
                    "the Lead of {} is still stopping (its process has not exited yet); resume_work again in a few seconds",
                    tag(&row.assignment)
                ),
            ));
        }
        self.check_unoccupied(
            &row.assignment.checkout,
            Some(&row.assignment.session_id),
            db,
        )?;
        self.relaunch(&Proc::Lead(row), Some((cx.conn, cx.id)), db, out)
    }

    /// A Lead that runs (or is starting) is what `resume_work` answers with: answered.
    fn answered_running(&self, cx: Cx, row: &AssignmentRow, out: &mut Out) -> bool {
        let record = self.assignment_record(row);
        if record.lead == crate::protocol::LeadState::Stopped {
            return false;
        }
        let assignment = Box::new(record);
        out.send(
            cx.conn,
            &ServerMsg::AssignmentIs {
                id: cx.id,
                assignment,
            },
        );
        true
    }

    /// `stop_lead`: stop the Lead and its workers; the assignment is paused.
    pub(in crate::hub) fn stop_lead(
        &mut self,
        cx: Cx,
        req: StopLead,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let actor = self.project_actor(cx, db)?;
        let row = self.assignment_for(&actor, &req.branch, req.repo.as_deref(), db)?;
        let by = match &actor {
            Actor::Manager { me, .. } => format!("the manager {}", me.name),
            Actor::Human => self.human_label(cx.conn, cx.kind, None),
        };
        self.stop_proc(&Proc::Lead(row.clone()), &by, None, db, out)?;
        store::projects::set_state(db, row.assignment.id, AssignmentState::Paused, now_ms())?;
        let row = self.assignment_row(db, row.assignment.id)?;
        tracing::info!(assignment = row.assignment.id.get(), tag = %tag(&row.assignment), by, "Lead stopped; assignment paused");
        self.assignment_changed(&row, out);
        let assignment = self.assignment_record(&row);
        out.send(
            cx.conn,
            &ServerMsg::AssignmentIs {
                id: cx.id,
                assignment: Box::new(assignment),
            },
        );
        Ok(())
    }

    /// `err` (no open assignment), or why when the branch's newest assignment is retired.
    fn retired_or(
        &self,
        err: HubError,
        actor: &Actor,
        branch: &str,
        db: &Connection,
    ) -> HubResult<HubError> {
        let repo = match actor {
            Actor::Manager { lease, .. } => lease.repo_id.clone(),
            Actor::Human => None,
        };
        if let Some(row) = store::projects::newest_by_branch(db, repo.as_deref(), branch.trim())?
            && row.assignment.state == AssignmentState::Retired
        {
            return Ok(refused(
                "retired",
                format!(
                    "the assignment {} is retired{}; a retired assignment is not revived: delegate_project {{branch: {:?}}} starts a new one on the kept branch",
                    tag(&row.assignment),
                    row.assignment
                        .integrated_sha
                        .as_deref()
                        .map_or(String::new(), |s| format!(
                            " (integrated at {})",
                            &s[..s.len().min(7)]
                        )),
                    row.assignment.branch
                ),
            ));
        }
        Ok(err)
    }
}

fn assigned(row: &AssignmentRow) -> HubError {
    refused(
        "branch_assigned",
        format!(
            "branch {} already has an assignment ({}, Lead session {}, {}); resume_work {{branch: {:?}}} continues it",
            row.assignment.branch,
            tag(&row.assignment),
            row.assignment.session_id,
            row.assignment.state,
            row.assignment.branch
        ),
    )
}

/// A git error about a lock file says what a person does about it.
fn with_lock_hint(message: String) -> String {
    let Some(end) = message.find(".lock") else {
        return message;
    };
    let start = message[..end].rfind('\'').map_or(0, |i| i + 1);
    let lock = &message[start..end + ".lock".len()];
    format!(
        "{message}. Another git command holds {lock}, or one was interrupted: when no git command runs in that repository, remove {lock} and try again"
    )
}
