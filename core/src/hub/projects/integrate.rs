//! `integrate_branch`: fast-forward the primary branch to an assigned branch's accepted
//! sha, then remove the checkout (guarded) and retire the assignment. A Manager's call
//! follows `[projects] integrate`: `ask` opens an approval ask from the Manager's session
//! to the human (approve runs it, any other answer denies it with that text as the reason;
//! the Manager hears the outcome as an `integration` delivery), `allow` runs it, `deny`
//! refuses it. The human's call (CLI, bridge) runs at once. Every refusal changes nothing.
//! The checkout is removed only after the Lead's process has exited (the host's stop is
//! waited for, bounded) and only when it holds nothing but what its branch has; otherwise
//! the primary branch stays advanced and the assignment `cleanup_pending`, naming what is
//! in the way, and the same call again finishes it. The human's `remove_anyway` moves the
//! checkout aside whole instead (never a Manager's choice).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;

use super::{Actor, GitDone, GitJob, refused, tag};
use crate::clock::now_ms;
use crate::config::IntegratePolicy;
use crate::git::integrate::{self as git_integrate, Plan, Refusal};
use crate::git::worktrees::{self, Presence, RemoveError, Removed};
use crate::hub::launched::host_ops::AfterStop;
use crate::hub::launched::{Proc, StopWait};
use crate::hub::{ConnId, Cx, HubError, HubResult, Out, State};
use crate::protocol::requests::IntegrateBranch;
use crate::protocol::{
    AssignmentId, AssignmentState, ClientKind, DeliveryKind, ErrorCode, Integration,
    IntegrationStatus, Sender, ServerMsg,
};
use crate::store;
use crate::store::projects::{Approval, AssignmentRow};

// The answers that approve an integration (anything else denies it).
use crate::protocol::projects::{APPROVE_ANSWERS as APPROVALS, INTEGRATION_OPTIONS};

/// One integration on its way through the git lane.
struct Run {
    id: AssignmentId,
    branch: String,
    sha: String,
    /// The request waiting for the outcome (`integrate_branch` allowed, or the human's).
    reply: Option<(ConnId, u64)>,
    /// Who approved or ran it.
    by: String,
    /// Whether the Manager hears the outcome as an `integration` delivery (it waited for
    /// the human).
    tell_manager: bool,
    /// The human chose to remove the checkout anyway (it is moved aside whole).
    anyway: bool,
}

/// How long the removal waits for the Lead's process to exit after stopping it (a
/// headless Lead gets 5 s to end its run, then SIGTERM, 2 s later SIGKILL).
const LEAD_EXIT_BOUND: Duration = Duration::from_secs(15);

fn refusal_reason(r: &Refusal) -> &'static str {
    match r {
        Refusal::ShaMismatch { .. } => "sha_mismatch",
        Refusal::NotFastForward { .. } => "not_fast_forward",
        Refusal::DirtyPrimary { .. } => "dirty_primary",
        Refusal::PrimaryDetached => "primary_detached",
        Refusal::PrimaryBusy { .. } => "primary_busy",
        Refusal::BranchMissing { .. } => "branch_missing",
        Refusal::BadSha(_) => "bad_sha",
        Refusal::RefLocked { .. } => "ref_locked",
        Refusal::PrimaryMoved { .. } => "primary_moved",
        Refusal::Undone { .. } | Refusal::Git(_) => "git",
    }
}

/// Where a running integration keeps its journal (see [`git_integrate::recover`]).
fn journal_dir(state_dir: &std::path::Path) -> PathBuf {
    state_dir.join("integrating")
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(7)]
}

impl State {
    pub(in crate::hub) fn integrate_branch(
        &mut self,
        cx: Cx,
        req: IntegrateBranch,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let actor = self.project_actor(cx, db)?;
        let sha = req.sha.trim().to_ascii_lowercase();
        if sha.len() < 7 || sha.len() > 40 || !sha.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "sha must be the branch tip's commit id (7 to 40 hex digits), got {:?}",
                    req.sha
                ),
            ));
        }
        if req.remove_anyway && matches!(actor, Actor::Manager { .. }) {
            return Err(refused(
                "remove_anyway_human",
                "removing a checkout anyway is the human's choice (`shepherd integrate <repo> <branch> <sha> --remove-anyway`), never a Manager's; nothing changed",
            ));
        }
        let row = self.assignment_for(&actor, &req.branch, req.repo.as_deref(), db)?;
        let retry = row.assignment.cleanup_pending
            && row
                .assignment
                .integrated_sha
                .as_deref()
                .is_some_and(|s| s.starts_with(&sha));
        let run = |by: String, tell_manager: bool| Run {
            id: row.assignment.id,
            branch: row.assignment.branch.clone(),
            sha: sha.clone(),
            reply: Some((cx.conn, cx.id)),
            by,
            tell_manager,
            anyway: req.remove_anyway,
        };
        match &actor {
            Actor::Manager { me, .. } if !retry => match self.facts.integrate {
                IntegratePolicy::Deny => Err(refused(
                    "integrate_denied",
                    format!(
                        "[projects] integrate = \"deny\": only the human integrates ({} at {}: `shepherd integrate {} {} {}`); nothing changed",
                        tag(&row.assignment),
                        short(&sha),
                        row.assignment.project,
                        row.assignment.branch,
                        sha
                    ),
                )),
                IntegratePolicy::Allow => {
                    self.queue_integration(
                        &row,
                        run(format!("the manager {}", me.name), false),
                        out,
                    );
                    Ok(())
                }
                IntegratePolicy::Ask => {
                    self.queue_approval(cx, &row, &sha, me.id.clone(), out);
                    Ok(())
                }
            },
            Actor::Manager { me, .. } => {
                self.queue_integration(&row, run(format!("the manager {}", me.name), false), out);
                Ok(())
            }
            // The Manager hears of its branch integrated by the human, asked or not.
            Actor::Human => {
                let by = self.human_label(cx.conn, cx.kind, None);
                self.settle_approvals(&row, &format!("integrated by {by}"), db, out)?;
                self.queue_integration(&row, run(by, true), out);
                Ok(())
            }
        }
    }

    /// Check the integration on the git lane, then open the approval ask.
    fn queue_approval(
        &mut self,
        cx: Cx,
        row: &AssignmentRow,
        sha: &str,
        manager: crate::protocol::SessionId,
        out: &mut Out,
    ) {
        let primary = PathBuf::from(&row.primary_root);
        let (branch, sha, id) = (
            row.assignment.branch.clone(),
            sha.to_string(),
            row.assignment.id,
        );
        let job: GitJob = Box::new(move || {
            let plan = git_integrate::plan(&primary, &branch, &sha);
            GitDone {
                reply: Some((cx.conn, cx.id)),
                then: Box::new(move |state, db, out| {
                    state.ask_approval(cx, id, manager, plan, db, out)
                }),
            }
        });
        out.git.push(job);
    }

    fn ask_approval(
        &mut self,
        cx: Cx,
        id: AssignmentId,
        manager: crate::protocol::SessionId,
        plan: Result<Plan, Refusal>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let row = self.assignment_row(db, id)?;
        let plan =
            plan.map_err(|r| refused(refusal_reason(&r), format!("{r}; nothing changed")))?;
        let a = &row.assignment;
        let question = format!(
            "Integrate {} into {} at {}? {} commit{} · {}",
            tag(a),
            plan.primary_branch,
            short(&plan.to),
            plan.commits.len() + plan.more,
            if plan.commits.len() + plan.more == 1 {
                ""
            } else {
                "s"
            },
            plan.diffstat.trim()
        );
        let mut details = plan.commits.join("\n");
        if plan.more > 0 {
            details.push_str(&format!("\n… and {} more", plan.more));
        }
        details.push_str("\nApprove to fast-forward; reply with a reason to deny.");
        let options = INTEGRATION_OPTIONS.map(str::to_string).to_vec();
        let ask_id = store::asks::insert(
            db,
            &manager,
            &question,
            &options,
            Some(&details),
            None,
            now_ms(),
        )?;
        store::projects::add_approval(
            db,
            &Approval {
                ask_id,
                assignment_id: id,
                sha: plan.to.clone(),
                manager_id: manager,
            },
        )?;
        let ask = store::asks::get(db, ask_id)?.expect("just inserted");
        tracing::info!(ask = %ask_id, tag = %tag(a), sha = %plan.to, "integration waits for the human's approval");
        self.presence.broadcast(&ServerMsg::AskOpened { ask }, out);
        let integration = Integration {
            status: IntegrationStatus::AwaitingApproval,
            assignment: self.assignment_record(&row),
            primary_branch: plan.primary_branch.clone(),
            sha: plan.to.clone(),
            ask_id: Some(ask_id),
            message: format!(
                "Waiting for the human to approve fast-forwarding {} to {} ({} commits); the outcome comes as an integration message.",
                plan.primary_branch,
                short(&plan.to),
                plan.commits.len() + plan.more
            ),
        };
        out.send(
            cx.conn,
            &ServerMsg::Integrated {
                id: cx.id,
                integration: Box::new(integration),
            },
        );
        Ok(())
    }

    /// The human answered an approval ask: approve runs it, anything else denies it.
    pub(in crate::hub) fn approval_answered(
        &mut self,
        approval: Approval,
        text: &str,
        by: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        store::projects::drop_approval(db, approval.ask_id)?;
        let Some(row) = store::projects::get(db, approval.assignment_id)? else {
            return Ok(());
        };
        let approved = APPROVALS.contains(&text.trim().to_lowercase().as_str());
        if approved && row.assignment.state != AssignmentState::Retired {
            tracing::info!(tag = %tag(&row.assignment), by, "integration approved");
            let run = Run {
                id: row.assignment.id,
                branch: row.assignment.branch.clone(),
                sha: approval.sha,
                reply: None,
                by: by.to_string(),
                tell_manager: true,
                anyway: false,
            };
            self.queue_integration(&row, run, out);
            return Ok(());
        }
        let reason = match text.trim() {
            t if t.eq_ignore_ascii_case("deny") || t.eq_ignore_ascii_case("denied") => {
                "(no reason given)".to_string()
            }
            t => t.to_string(),
        };
        tracing::info!(tag = %tag(&row.assignment), by, "integration denied");
        let body = format!(
            "Integration of {} at {} denied by {by}: {reason}\nNothing changed; the assignment stays {}.",
            tag(&row.assignment),
            short(&approval.sha),
            row.assignment.state
        );
        self.tell_manager(&row, &body, by, db, out)
    }

    /// The human integrates directly: open approval asks for this assignment are settled.
    /// Returns whether any was waiting.
    fn settle_approvals(
        &mut self,
        row: &AssignmentRow,
        text: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<bool> {
        let approvals = store::projects::approvals_of(db, row.assignment.id)?;
        for a in &approvals {
            store::projects::drop_approval(db, a.ask_id)?;
            if store::asks::answer(db, a.ask_id, text, "shepherd", now_ms())? {
                store::messages::withdraw_asks(db, &self.unread, a.ask_id)?;
                if let Some(ask) = store::asks::get(db, a.ask_id)? {
                    self.presence
                        .broadcast(&ServerMsg::AskAnswered { ask }, out);
                }
            }
        }
        Ok(!approvals.is_empty())
    }

    /// Fast-forward on the git lane; the continuation stops the Lead and removes the
    /// checkout.
    fn queue_integration(&mut self, row: &AssignmentRow, run: Run, out: &mut Out) {
        let primary = PathBuf::from(&row.primary_root);
        let journal = journal_dir(&self.facts.state_dir).join(format!("{}.json", run.id));
        let job: GitJob = Box::new(move || {
            let result = git_integrate::fast_forward(&primary, &run.branch, &run.sha, &journal);
            GitDone {
                reply: run.reply,
                then: Box::new(move |state, db, out| state.fast_forwarded(run, result, db, out)),
            }
        });
        out.git.push(job);
    }

    fn fast_forwarded(
        &mut self,
        run: Run,
        result: Result<Plan, Refusal>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let row = self.assignment_row(db, run.id)?;
        let plan = match result {
            Ok(plan) => plan,
            Err(r) => {
                let message = format!("{r}; nothing changed");
                if run.tell_manager {
                    let body = format!(
                        "Integration of {} at {} (approved by {}) was refused: {message}",
                        tag(&row.assignment),
                        short(&run.sha),
                        run.by
                    );
                    self.tell_manager(&row, &body, &run.by, db, out)?;
                }
                return Err(refused(refusal_reason(&r), message));
            }
        };
        let now = now_ms();
        store::projects::integrated(db, run.id, &plan.to, true, now)?;
        tracing::info!(tag = %tag(&row.assignment), sha = %plan.to, primary = %plan.primary_branch, by = %run.by, "primary branch fast-forwarded");
        let row = self.assignment_row(db, run.id)?;
        // The checkout is removed only once the Lead's process has exited: it must not
        // write into a directory being removed.
        let (by, reply) = (run.by.clone(), run.reply);
        let then: AfterStop = Box::new(move |state, db, out, exited| {
            state.lead_stopped_for_cleanup(run, plan, exited, db, out)
        });
        let wait = StopWait {
            bound: LEAD_EXIT_BOUND,
            reply,
            then,
        };
        self.stop_proc(&Proc::Lead(row.clone()), &by, Some(wait), db, out)?;
        let row = self.assignment_row(db, row.assignment.id)?;
        self.assignment_changed(&row, out);
        Ok(())
    }

    /// The Lead is gone (or did not exit in time): remove the checkout on the git lane.
    fn lead_stopped_for_cleanup(
        &mut self,
        run: Run,
        plan: Plan,
        exited: bool,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let row = self.assignment_row(db, run.id)?;
        if !exited {
            let why = format!(
                "the Lead's process had not exited {} s after it was stopped, and nothing is removed while it may still write there",
                LEAD_EXIT_BOUND.as_secs()
            );
            return self.integration_outcome(&row, &plan, Err(why), &run, db, out);
        }
        if let Err(e) = self.check_unoccupied(
            &row.assignment.checkout,
            Some(&row.assignment.session_id),
            db,
        ) {
            return self.integration_outcome(&row, &plan, Err(e.message), &run, db, out);
        }
        let primary = PathBuf::from(&row.primary_root);
        let checkout = PathBuf::from(&row.assignment.checkout);
        let branch = row.assignment.branch.clone();
        let anyway = run.anyway;
        let job: GitJob = Box::new(move || {
            let removed = remove_checkout(&primary, &checkout, &branch, anyway);
            GitDone {
                reply: run.reply,
                then: Box::new(move |state, db, out| {
                    let row = state.assignment_row(db, run.id)?;
                    state.integration_outcome(&row, &plan, removed, &run, db, out)
                }),
            }
        });
        out.git.push(job);
        Ok(())
    }

    /// After the removal (or why it could not be done): retire, or `cleanup_pending`.
    fn integration_outcome(
        &mut self,
        row: &AssignmentRow,
        plan: &Plan,
        removed: Result<Removed, String>,
        run: &Run,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let a = &row.assignment;
        let (status, message) = match removed {
            Ok(Removed { kept }) => {
                self.retire(row, "integrated", db, out)?;
                let how = match kept {
                    None => "was removed".to_string(),
                    Some(kept) => format!(
                        "was removed anyway: git no longer records it, and its directory, with everything that was in the way, was moved to {} (nothing deleted; delete it yourself when you no longer need it)",
                        kept.display()
                    ),
                };
                (
                    IntegrationStatus::Integrated,
                    format!(
                        "{} fast-forwarded to {}{}; the checkout {} {how} and the assignment retired (branch {} kept).",
                        plan.primary_branch,
                        short(&plan.to),
                        if plan.already {
                            " (it was already there)"
                        } else {
                            ""
                        },
                        a.checkout,
                        a.branch
                    ),
                )
            }
            Err(why) => {
                tracing::warn!(tag = %tag(a), why, "integrated, but the checkout was not removed");
                (
                    IntegrationStatus::CleanupPending,
                    format!(
                        "{} fast-forwarded to {}, but the checkout {} was not removed: {why}. Fix that, then integrate_branch {{branch: {:?}, sha: {:?}}} again to finish; or the human keeps it all and removes the checkout anyway: `shepherd integrate {} {} {} --remove-anyway` moves it aside whole (nothing deleted).",
                        plan.primary_branch,
                        short(&plan.to),
                        a.checkout,
                        a.branch,
                        plan.to,
                        a.project,
                        a.branch,
                        plan.to
                    ),
                )
            }
        };
        let row = self.assignment_row(db, a.id)?;
        if run.tell_manager {
            let body = format!(
                "Integration of {} approved by {}: {message}",
                tag(a),
                run.by
            );
            self.tell_manager(&row, &body, &run.by, db, out)?;
        }
        if let Some((conn, id)) = run.reply {
            let integration = Integration {
                status,
                assignment: self.assignment_record(&row),
                primary_branch: plan.primary_branch.clone(),
                sha: plan.to.clone(),
                ask_id: None,
                message,
            };
            out.send(
                conn,
                &ServerMsg::Integrated {
                    id,
                    integration: Box::new(integration),
                },
            );
        }
        Ok(())
    }

    /// At start, before any other git work: finish or undo the integrations a previous core
    /// was killed in the middle of (their journals), and tell each one's Manager role.
    pub(in crate::hub) fn recover_integrations(&mut self, out: &mut Out) {
        let dir = journal_dir(&self.facts.state_dir);
        let job: GitJob = Box::new(move || {
            let journals: Vec<PathBuf> = match std::fs::read_dir(&dir) {
                Ok(entries) => entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "json"))
                    .collect(),
                Err(_) => Vec::new(),
            };
            let recovered: Vec<_> = journals
                .iter()
                .map(|journal| {
                    let id: Option<AssignmentId> = journal
                        .file_stem()
                        .and_then(|s| s.to_str())
                        .and_then(|s| s.parse().ok());
                    (id, git_integrate::recover(journal))
                })
                .collect();
            GitDone {
                reply: None,
                then: Box::new(move |state, db, out| {
                    for (id, r) in recovered {
                        state.integration_recovered(id, r, db, out)?;
                    }
                    Ok(())
                }),
            }
        });
        out.git.push(job);
    }

    fn integration_recovered(
        &mut self,
        id: Option<AssignmentId>,
        recovered: Result<git_integrate::Recovered, String>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        use git_integrate::Recovered;
        let row = match id {
            Some(id) => store::projects::get(db, id)?,
            None => None,
        };
        let what = row
            .as_ref()
            .map(|r| tag(&r.assignment))
            .unwrap_or_else(|| "an assignment".to_string());
        let body = match recovered {
            Err(why) => {
                tracing::error!(
                    why,
                    "an interrupted integration could not be finished or undone"
                );
                format!(
                    "The integration of {what} was interrupted by a restart of shepherd and could not be undone: {why}. Check the primary worktree with `git status`."
                )
            }
            Ok(Recovered::Finished { primary, to }) => {
                tracing::warn!(primary = %primary.display(), to, "an interrupted integration had finished");
                format!(
                    "The integration of {what} was interrupted by a restart of shepherd after the branch moved to {}: it is complete. Call integrate_branch again to remove the checkout and retire the assignment.",
                    short(&to)
                )
            }
            Ok(Recovered::Undone {
                primary,
                from,
                to,
                kept,
            }) => {
                tracing::warn!(primary = %primary.display(), from, to, ?kept, "an interrupted integration was undone");
                format!(
                    "The integration of {what} at {} was interrupted by a restart of shepherd and undone: the primary branch is still at {} with its files as they were{}. Integrate again when ready.",
                    short(&to),
                    short(&from),
                    if kept.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " (changed by someone meanwhile and kept as they are: {})",
                            kept.join(", ")
                        )
                    }
                )
            }
            Ok(Recovered::Left { primary }) => {
                tracing::warn!(primary = %primary.display(), "an interrupted integration: the branch has moved since; nothing touched");
                return Ok(());
            }
        };
        match row {
            Some(row) => self.tell_manager(&row, &body, "shepherd", db, out),
            None => Ok(()),
        }
    }

    /// Mail the repository's Manager role an `integration` delivery (kept after the
    /// assignment retires: it is about the repository, not the assignment's work).
    fn tell_manager(
        &mut self,
        row: &AssignmentRow,
        body: &str,
        by: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let from = Sender {
            kind: ClientKind::Cli,
            session_id: None,
            name: by.to_string(),
        };
        self.project_mail(
            super::ProjectMail {
                repo_id: &row.assignment.repo_id,
                assignment: None,
                kind: DeliveryKind::Integration,
                text: body,
                from: &from,
            },
            db,
            out,
        )?;
        Ok(())
    }

    /// Retire `row`: pending project mail about it is dropped, open approvals settled.
    pub(in crate::hub) fn retire(
        &mut self,
        row: &AssignmentRow,
        why: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        self.settle_approvals(
            row,
            &format!("(the assignment was retired: {why})"),
            db,
            out,
        )?;
        if row.process != store::projects::Process::None {
            self.stop_proc(&Proc::Lead(row.clone()), "shepherd", None, db, out)?;
        }
        store::projects::retire(db, &self.unread, row.assignment.id, now_ms())?;
        let row = self.assignment_row(db, row.assignment.id)?;
        tracing::info!(tag = %tag(&row.assignment), why, "assignment retired");
        self.assignment_changed(&row, out);
        Ok(())
    }
}

/// Remove `checkout` (on the git lane): only when it holds nothing but what its branch has,
/// or moved aside whole when `anyway`. A checkout git no longer lists is done only when its
/// absence is verified; a moved one is left as it is, with how to repair it.
fn remove_checkout(
    primary: &Path,
    checkout: &Path,
    branch: &str,
    anyway: bool,
) -> Result<Removed, String> {
    match worktrees::remove_worktree(primary, checkout, anyway) {
        Ok(removed) => Ok(removed),
        Err(RemoveError::NotAWorktree(_)) => {
            match worktrees::checkout_presence_of(primary, checkout, Some(branch)) {
                Presence::Absent => Ok(Removed { kept: None }),
                Presence::Present => Err("git does not list it as a linked worktree".to_string()),
                Presence::Moved(moved) => Err(moved.to_string()),
                Presence::Unknown(why) => Err(format!("git could not list the worktrees: {why}")),
            }
        }
        Err(e) => Err(e.to_string()),
    }
}
