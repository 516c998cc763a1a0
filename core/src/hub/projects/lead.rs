//! An assignment's Lead: its launch line, its process starting and ending, its session
//! registering with the launch nonce (fail closed, as for workers), each run's final text
//! becoming one update for the repository's Manager role, and a core restart adopting or
//! relaunching it. Project mail goes to the Manager lease's holder, or waits in the role's
//! mailbox for the next one.

use rusqlite::Connection;

use super::{refused, tag};
use crate::clock::now_ms;
use crate::git::RepoContext;
use crate::hub::mail::Mailed;
use crate::hub::presence::process_alive;
use crate::hub::workers::HostOp;
use crate::hub::workers::host_ops::LaunchDone;
use crate::hub::{HubError, HubResult, Out, State};
use crate::protocol::{
    AssignmentId, AssignmentState, ClientKind, DeliveryKind, ErrorCode, Registration, Role, Sender,
    ServerMsg, SessionId, WorkerBackend,
};
use crate::store::projects::{AssignmentRow, Process};
use crate::store::{self, messages::NewMessage};
use crate::workers::launch::{LaunchSpec, ProcKey, SessionStart};

/// What an assigned Lead is told about its work, appended to its system prompt.
fn lead_prompt(row: &AssignmentRow) -> String {
    let a = &row.assignment;
    format!(
        "You are a Lead on a work assignment from the Manager of the repository {project}: \
         branch {branch}, in your own linked worktree {checkout} (the primary worktree is {primary}; \
         do not work there). Commit your work on {branch}. The final text of each of your runs \
         is sent to the Manager as an assignment update, so end each run with what you did, \
         what is left and the commit it is at. Use message_supervisor for blockers and risks \
         and ask_supervisor for questions the Manager must answer.",
        project = a.project,
        branch = a.branch,
        checkout = a.checkout,
        primary = row.primary_root,
    )
}

/// The host's window label of a Lead: `lead-<branch>`, in tmux's terms.
fn lead_label(row: &AssignmentRow) -> String {
    let slug: String = row
        .assignment
        .branch
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(26)
        .collect();
    format!("lead-{slug}")
}

/// Mail for a repository's Manager role ([`State::project_mail`]): what it is, about
/// which assignment if any, and from whom.
pub(in crate::hub) struct ProjectMail<'a> {
    pub repo_id: &'a str,
    pub assignment: Option<AssignmentId>,
    pub kind: DeliveryKind,
    pub text: &'a str,
    pub from: &'a Sender,
}

impl State {
    /// The spec that starts `row`'s Lead from `start`: a plain Pi (all tools, the
    /// Manager's model) in the checkout.
    pub(in crate::hub) fn lead_spec(&self, row: &AssignmentRow, start: SessionStart) -> LaunchSpec {
        LaunchSpec {
            worker: ProcKey::Lead(row.assignment.id).raw(),
            label: lead_label(row),
            cwd: row.assignment.checkout.clone().into(),
            start,
            model: row.model.clone(),
            thinking: None,
            tools: None,
            exclude_tools: Vec::new(),
            system_prompt: Some(lead_prompt(row)),
            nonce: row.nonce.clone(),
        }
    }

    /// A Lead's launch (or adoption) finished.
    pub(in crate::hub) fn lead_launched(
        &mut self,
        id: AssignmentId,
        done: LaunchDone,
        db: &Connection,
        out: &mut Out,
    ) {
        let first = self.projects.first_launch.remove(&id);
        let result = self.try_lead_launched(id, first, &done, db, out);
        match (result, done.reply) {
            (Ok(()), _) => {}
            (Err(err), Some((conn, rid))) => out.error(conn, Some(rid), err),
            (Err(err), None) => {
                tracing::warn!(assignment = id.get(), "a Lead's launch: {}", err.message)
            }
        }
    }

    fn try_lead_launched(
        &mut self,
        id: AssignmentId,
        first: bool,
        done: &LaunchDone,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let row = self.assignment_row(db, id)?;
        match &done.result {
            Ok(launched) => {
                store::projects::set_process(
                    db,
                    id,
                    launched.pid,
                    launched.pane.as_deref(),
                    now_ms(),
                )?;
                let row = self.assignment_row(db, id)?;
                tracing::info!(
                    assignment = id.get(),
                    pid = launched.pid,
                    "Lead process started"
                );
                self.assignment_changed(&row, out);
                if let Some((conn, rid)) = done.reply {
                    let assignment = self.assignment_record(&row);
                    out.send(
                        conn,
                        &ServerMsg::AssignmentIs {
                            id: rid,
                            assignment: Box::new(assignment),
                        },
                    );
                }
                Ok(())
            }
            Err(e) if first => {
                // Nothing started: the delegation did not happen (its worktree is kept
                // and reused by the next delegation of the branch).
                tracing::warn!(assignment = id.get(), error = %e, "a new Lead could not be started; the assignment is undone");
                if store::projects::delete(db, id, &row.assignment.session_id)? > 0 {
                    self.backlog.forget_all();
                }
                let mut gone = self.assignment_record(&row);
                gone.state = AssignmentState::Retired;
                self.broadcast(
                    &ServerMsg::AssignmentChanged {
                        assignment: Box::new(gone),
                    },
                    out,
                );
                Err(refused(
                    "launch_failed",
                    format!(
                        "the Lead's Pi could not be started: {e} (check [workers] pi in the config); nothing was assigned, the worktree {} is kept",
                        row.assignment.checkout
                    ),
                ))
            }
            Err(e) => {
                tracing::warn!(assignment = id.get(), error = %e, "a Lead could not be started or found again");
                store::projects::stopped(db, id, now_ms())?;
                let row = self.assignment_row(db, id)?;
                self.assignment_changed(&row, out);
                Err(refused(
                    "launch_failed",
                    format!(
                        "the Lead of {} could not be started: {e}; resume_work tries again",
                        tag(&row.assignment)
                    ),
                ))
            }
        }
    }

    /// The host saw a Lead's process end.
    pub(in crate::hub) fn lead_exited(
        &mut self,
        id: AssignmentId,
        code: Option<i32>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        if self.stopping {
            return Ok(()); // Headless Leads die with the core; the next core relaunches them.
        }
        let Some(row) = store::projects::get(db, id)? else {
            return Ok(());
        };
        if row.process == Process::None {
            return Ok(());
        }
        store::projects::stopped(db, id, now_ms())?;
        let row = self.assignment_row(db, id)?;
        tracing::info!(assignment = id.get(), tag = %tag(&row.assignment), code = ?code, "an assignment's Lead exited");
        self.assignment_changed(&row, out);
        // Not stopped by anyone: its Manager must know the work stands still.
        let a = &row.assignment;
        let how = code.map_or("it was killed".to_string(), |c| format!("exit code {c}"));
        let body = format!(
            "Assignment update · {} · the Lead's process ended on its own ({how})\n\nThe assignment, its session, branch and worktree are kept. resume_work {{branch: {:?}}} starts the same session again.",
            tag(a),
            a.branch
        );
        let from = Self::core_sender();
        self.project_mail(
            ProjectMail {
                repo_id: &a.repo_id,
                assignment: Some(a.id),
                kind: DeliveryKind::AssignmentUpdate,
                text: &body,
                from: &from,
            },
            db,
            out,
        )?;
        Ok(())
    }

    /// At `register`: the assignment this session is the Lead of, proved by the launch
    /// nonce and the launched process. A registration that claims an assigned Lead's
    /// session without both is refused (`launch_mismatch`); a second live process is
    /// refused (`session_taken`). Two open assignments naming one session fail closed.
    pub(in crate::hub) fn check_lead_launch(
        &self,
        reg: &Registration,
        pid: Option<u32>,
        db: &Connection,
    ) -> HubResult<Option<AssignmentRow>> {
        let rows = store::projects::open_by_session(db, &reg.session_id)?;
        let row = match rows.len() {
            0 => return Ok(None),
            1 => rows.into_iter().next().expect("one"),
            _ => {
                return Err(refused(
                    "launch_mismatch",
                    format!(
                        "session {} is named by more than one assignment; refusing it until `shepherd projects` shows one",
                        reg.session_id
                    ),
                ));
            }
        };
        let mismatch = |why: &str| {
            tracing::warn!(assignment = row.assignment.id.get(), session = %reg.session_id, pid = ?pid, "refused a registration as an assignment's Lead: {why}");
            refused(
                "launch_mismatch",
                format!(
                    "session {} is the Lead of the assignment {} ({why}); only the process shepherd launched for it may register: resume_work {{branch: {:?}}} (or `shepherd resume {}`) starts it",
                    reg.session_id,
                    tag(&row.assignment),
                    row.assignment.branch,
                    row.assignment.branch
                ),
            )
        };
        use crate::workers::proc::{LaunchProof, prove_launch};
        match prove_launch(
            reg.launch.as_deref(),
            &row.nonce,
            pid,
            row.assignment.pid,
            row.bound_pid,
            process_alive,
        ) {
            Ok(()) => {}
            Err(LaunchProof::Taken(bound)) => {
                return Err(HubError::new(
                    ErrorCode::SessionTaken,
                    format!(
                        "the Lead of {} is already open in process {bound}; one process per session",
                        tag(&row.assignment)
                    ),
                ));
            }
            Err(proof) => return Err(mismatch(proof.why())),
        }
        Ok(Some(row))
    }

    /// After a Lead's registration was accepted: bind it.
    pub(in crate::hub) fn bind_lead(
        &mut self,
        row: &AssignmentRow,
        pid: Option<u32>,
        session_file: Option<&str>,
        db: &Connection,
    ) -> HubResult<AssignmentRow> {
        store::projects::bind(db, row.assignment.id, pid, session_file, now_ms())?;
        tracing::info!(assignment = row.assignment.id.get(), pid = ?pid, "Lead bound");
        self.assignment_row(db, row.assignment.id)
    }

    /// The one open assignment `session` is the Lead of (none, or ambiguous: none).
    pub(in crate::hub) fn assigned_lead(
        &self,
        session: &SessionId,
        db: &Connection,
    ) -> HubResult<Option<AssignmentRow>> {
        let mut rows = store::projects::open_by_session(db, session)?;
        if rows.len() > 1 {
            tracing::warn!(session = %session, "a session is named by several assignments; treating it as unassigned");
            return Ok(None);
        }
        Ok(rows.pop())
    }

    /// A run of `session` ended with `text`: for an assigned Lead, one update to its
    /// repository's Manager role. Returns whether the session is an assigned Lead.
    pub(in crate::hub) fn lead_run_result(
        &mut self,
        session: &SessionId,
        text: &str,
        repo: Option<RepoContext>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<bool> {
        let Some(row) = self.assigned_lead(session, db)? else {
            return Ok(false);
        };
        if row.assignment.state != AssignmentState::Active {
            return Ok(true);
        }
        let a = &row.assignment;
        // The checkout's state as the connection read it when the run settled.
        let repo = repo.filter(|r| r.root.as_deref() == Some(a.checkout.as_str()));
        let current = repo.as_ref().and_then(|r| r.branch.clone());
        let head = repo
            .as_ref()
            .and_then(|r| r.head.clone())
            .or(a.head.clone());
        let short = head
            .as_deref()
            .map_or("?".to_string(), |h| h[..h.len().min(7)].to_string());
        let body = format!(
            "Assignment update · {} · branch {} · head {short}\n\n{text}",
            tag(a),
            current.as_deref().unwrap_or("(detached)"),
        );
        let from = Sender {
            kind: ClientKind::Pi,
            session_id: Some(a.session_id.clone()),
            name: tag(a),
        };
        let now = now_ms();
        let mailed = self.project_mail(
            ProjectMail {
                repo_id: &a.repo_id,
                assignment: Some(a.id),
                kind: DeliveryKind::AssignmentUpdate,
                text: &body,
                from: &from,
            },
            db,
            out,
        )?;
        store::projects::updated(db, a.id, text, current.as_deref(), head.as_deref(), now)?;
        let row = self.assignment_row(db, a.id)?;
        tracing::info!(assignment = a.id.get(), tag = %tag(a), message = %mailed.id, "assignment update for the Manager role");
        let assignment = self.assignment_record(&row);
        self.broadcast(
            &ServerMsg::AssignmentUpdated {
                assignment: Box::new(assignment),
                text: text.to_string(),
                message_id: mailed.id,
            },
            out,
        );
        Ok(true)
    }

    /// Mail for a repository's Manager role: to the lease's holder, or into the role's
    /// mailbox until a Manager takes the lease. Tagged so a new holder gets what the old
    /// one never read, and so retiring `assignment` drops what is still pending about it.
    pub(in crate::hub) fn project_mail(
        &self,
        mail: ProjectMail<'_>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<Mailed> {
        let ProjectMail {
            repo_id,
            assignment,
            kind,
            text,
            from,
        } = mail;
        let recipient = match store::leases::get(db, Role::Manager, Some(repo_id))? {
            Some(lease) => lease.session_id,
            None => store::projects::role_mailbox(repo_id),
        };
        // Not delivered until tagged: the tag and the mail commit together.
        let mailed = self.mail(NewMessage::plain(&recipient, kind, text, from), db, out)?;
        store::projects::tag_mail(db, mailed.id, assignment, repo_id)?;
        Ok(mailed)
    }

    /// A session took the Manager lease of `repo_id`: the role's unread project mail is
    /// now its own (from the role's mailbox, or from a holder that never read it).
    pub(in crate::hub) fn project_mail_to_holder(
        &mut self,
        holder: &SessionId,
        repo_id: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let moved = store::projects::readdress_role_mail(db, repo_id, holder)?;
        if moved == 0 {
            return Ok(());
        }
        tracing::info!(holder = %holder, moved, "the Manager role's project mail handed to its new holder");
        self.backlog.forget_all();
        // Older ids than the connection was given: replay the mailbox from its start (the
        // extension drops ids it has seen).
        if let Some(live) = self.live.get_mut(holder) {
            live.last_sent = crate::protocol::MessageId::from(0);
        }
        self.replay(holder, db, out)
    }

    /// At start-up: Leads a previous core left are found again (tmux) or relaunched on
    /// their session (headless, or a launch that never happened).
    pub(in crate::hub) fn recover_leads(
        &mut self,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        for row in store::projects::list_open(db, None)? {
            if row.assignment.state != AssignmentState::Active || row.process == Process::None {
                continue;
            }
            if row.assignment.backend == WorkerBackend::Tmux
                && let Some(pane) = &row.pane
            {
                out.host.push(HostOp::Adopt {
                    key: ProcKey::Lead(row.assignment.id),
                    pane: pane.clone(),
                });
                continue;
            }
            if row.session_file.is_some() {
                let text = "Your run was interrupted by a restart of shepherd. Continue your assignment where you left off.";
                let from = Self::core_sender();
                self.mail(
                    NewMessage::plain(&row.assignment.session_id, DeliveryKind::Steer, text, &from),
                    db,
                    out,
                )?;
            }
            self.relaunch_lead(&row, None, db, out)?;
        }
        Ok(())
    }
}
