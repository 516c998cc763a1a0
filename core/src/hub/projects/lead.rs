//! An assignment's Lead, beyond the launched-process lifecycle it shares with workers
//! (`hub/launched/`: launch, bind by nonce, exit, relaunch): its launch line, a failed
//! launch (a first one undoes the delegation), its process ending on its own told to the
//! Manager role, and each run's final text becoming one update for that role. Project mail
//! goes to the Manager lease's holder, or waits in the role's mailbox for the next one.

use rusqlite::Connection;

use super::{refused, tag};
use crate::clock::now_ms;
use crate::git::RepoContext;
use crate::hub::mail::Mailed;
use crate::hub::{HubError, HubResult, Out, State};
use crate::protocol::{
    Assignment, AssignmentId, AssignmentState, ClientKind, DeliveryKind, Role, Sender, ServerMsg,
    SessionId,
};
use crate::store::projects::AssignmentRow;
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

/// The spec that starts `row`'s Lead from `start`: a plain Pi (all tools, the Manager's
/// model) in the checkout.
pub(in crate::hub) fn lead_spec(row: &AssignmentRow, start: SessionStart) -> LaunchSpec {
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

impl State {
    /// A new assignment's first launch failed: nothing started, so the delegation did not
    /// happen (its worktree is kept and reused by the next delegation of the branch).
    /// Returns the refusal for its request.
    pub(in crate::hub) fn lead_launch_undone(
        &mut self,
        row: &AssignmentRow,
        e: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<HubError> {
        let id = row.assignment.id;
        tracing::warn!(assignment = id.get(), error = %e, "a new Lead could not be started; the assignment is undone");
        store::projects::delete(db, &self.unread, id, &row.assignment.session_id)?;
        let mut gone = self.assignment_record(row);
        gone.state = AssignmentState::Retired;
        self.presence.broadcast(
            &ServerMsg::AssignmentChanged {
                assignment: Box::new(gone),
            },
            out,
        );
        Ok(refused(
            "launch_failed",
            format!(
                "the Lead's Pi could not be started: {e} (check [workers] pi in the config); nothing was assigned, the worktree {} is kept",
                row.assignment.checkout
            ),
        ))
    }

    /// A Lead's relaunch (or adoption) failed: it has no process; `resume_work` tries
    /// again.
    pub(in crate::hub) fn lead_relaunch_failed(
        &mut self,
        row: &AssignmentRow,
        e: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let id = row.assignment.id;
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

    /// A Lead's process ended with nobody stopping it (`how`: its exit code, or killed):
    /// it has no process, and its Manager role is told the work stands still.
    pub(in crate::hub) fn lead_lost(
        &mut self,
        row: &AssignmentRow,
        how: &str,
        code: Option<i32>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let id = row.assignment.id;
        store::projects::stopped(db, id, now_ms())?;
        let row = self.assignment_row(db, id)?;
        tracing::info!(assignment = id.get(), tag = %tag(&row.assignment), code = ?code, "an assignment's Lead exited");
        self.assignment_changed(&row, out);
        let a = &row.assignment;
        let body = format!(
            "Assignment update · {} · the Lead's process ended on its own ({how})\n\nThe assignment, its session, branch and worktree are kept. resume_work {{branch: {:?}}} starts the same session again.",
            tag(a),
            a.branch
        );
        self.assignment_update(a, &body, &Self::core_sender(), db, out)?;
        Ok(())
    }

    /// One assignment update about `a` for its repository's Manager role.
    fn assignment_update(
        &self,
        a: &Assignment,
        body: &str,
        from: &Sender,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<Mailed> {
        let mail = ProjectMail {
            repo_id: &a.repo_id,
            assignment: Some(a.id),
            kind: DeliveryKind::AssignmentUpdate,
            text: body,
            from,
        };
        self.project_mail(mail, db, out)
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
        let mailed = self.assignment_update(a, &body, &from, db, out)?;
        store::projects::updated(db, a.id, text, current.as_deref(), head.as_deref(), now)?;
        let row = self.assignment_row(db, a.id)?;
        tracing::info!(assignment = a.id.get(), tag = %tag(a), message = %mailed.id, "assignment update for the Manager role");
        let assignment = self.assignment_record(&row);
        self.presence.broadcast(
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
        let moved = store::projects::readdress_role_mail(db, &self.unread, repo_id, holder)?;
        if moved == 0 {
            return Ok(());
        }
        tracing::info!(holder = %holder, moved, "the Manager role's project mail handed to its new holder");
        // Older ids than the connection was given: replay the mailbox from its start (the
        // extension drops ids it has seen).
        if let Some(live) = self.presence.live_mut(holder) {
            live.last_sent = crate::protocol::MessageId::from(0);
        }
        self.replay(holder, db, out)
    }
}
