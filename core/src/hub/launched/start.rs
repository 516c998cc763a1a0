//! A launched process from its launch to its end: the launch queued for after the commit,
//! the host's answer (the pid recorded; a failed first launch undoes its request, a failed
//! relaunch or adoption loses the process), an exit nobody asked for (lost: its owner or
//! its Manager role told once), and a relaunch on the same session with a fresh nonce
//! (`resume_work`, a core restart: a tmux pane that outlived the core is adopted instead).

use rusqlite::Connection;

use super::host_ops::LaunchDone;
use super::{HostOp, Proc, new_nonce};
use crate::clock::now_ms;
use crate::hub::projects::tag;
use crate::hub::{ConnId, HubResult, Out, State};
use crate::protocol::{AssignmentState, DeliveryKind, ServerMsg, StartedState, WorkerState};
use crate::store::projects::Process;
use crate::store::{self, messages::NewMessage};
use crate::workers::launch::{ProcKey, SessionStart};

/// What a process relaunched after a core restart is told when it resumes its session.
const RESTARTED: &str = "Your run was interrupted by a restart of shepherd. Continue your assignment where you left off.";

impl Proc {
    /// Whether a process relaunched after a restart is told why: a worker when it resumes
    /// its session file, a Lead when Pi recorded one.
    fn told_on_restart(&self) -> bool {
        match self {
            Proc::Worker(_) => self.session_file().is_some(),
            Proc::Lead(row) => row.session_file.is_some(),
            Proc::Started(row) => row.session_file.is_some(),
        }
    }

    /// Whether a core restart relaunches (or adopts) it: a worker still on its task, an
    /// active assignment's Lead that had a process.
    fn recovers(&self) -> bool {
        match self {
            Proc::Worker(row) => !matches!(
                row.worker.state,
                WorkerState::Settling | WorkerState::Lost | WorkerState::Unknown
            ),
            Proc::Lead(row) => {
                row.assignment.state == AssignmentState::Active && row.process != Process::None
            }
            Proc::Started(row) => row.started.state != StartedState::Ended,
        }
    }
}

impl State {
    /// Queue `proc`'s launch from `start` for after the commit. `reply`: the request that
    /// waits for it; `first`: the request made the record, so a failure undoes it.
    pub(in crate::hub) fn launch(
        &mut self,
        proc: &Proc,
        start: SessionStart,
        reply: Option<(ConnId, u64)>,
        first: bool,
        out: &mut Out,
    ) {
        if first {
            self.launches.first.insert(proc.key());
        }
        out.host.push(HostOp::Launch {
            spec: Box::new(proc.spec(start)),
            reply,
        });
    }

    /// The host started (or adopted) a process, or could not.
    pub(in crate::hub) fn proc_launched(
        &mut self,
        done: LaunchDone,
        db: &Connection,
        out: &mut Out,
    ) {
        let first = self.launches.first.remove(&done.key);
        if let Err(err) = self.try_launched(first, &done, db, out) {
            match done.reply {
                Some((conn, id)) => out.error(conn, Some(id), err),
                None => tracing::warn!(key = ?done.key, "a launch: {}", err.message),
            }
        }
    }

    fn try_launched(
        &mut self,
        first: bool,
        done: &LaunchDone,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let proc = self.proc_record(done.key, db)?;
        let launched = match (&done.result, proc) {
            (Ok(launched), _) => launched,
            // Nothing was started: the request that made the record did not happen.
            (Err(e), Proc::Worker(row)) if first => {
                return Err(self.worker_launch_undone(&row, e, db, out)?);
            }
            (Err(e), Proc::Lead(row)) if first => {
                return Err(self.lead_launch_undone(&row, e, db, out)?);
            }
            (Err(e), Proc::Started(row)) if first => {
                return Err(self.started_launch_undone(&row, e, db)?);
            }
            (Err(e), Proc::Started(row)) => {
                tracing::warn!(started = row.started.id, error = %e, "a started session could not be started again");
                store::started::ended(db, row.started.id, now_ms())?;
                return Ok(());
            }
            (Err(e), Proc::Worker(row)) => {
                tracing::warn!(worker = row.worker.id.get(), error = %e, "worker could not be restarted or found again");
                let why = format!("it could not be started again: {e}");
                return self.worker_lost(&row, &why, db, out);
            }
            (Err(e), Proc::Lead(row)) => return self.lead_relaunch_failed(&row, e, db, out),
        };
        let now = now_ms();
        let (pid, pane) = (launched.pid, launched.pane.as_deref());
        match done.key {
            ProcKey::Worker(id) => store::workers::set_process(db, id, pid, pane, now)?,
            ProcKey::Lead(id) => store::projects::set_process(db, id, pid, pane, now)?,
            ProcKey::Started(id) => store::started::set_process(db, id, pid, pane, now)?,
        }
        let proc = self.proc_record(done.key, db)?;
        let reply = match &proc {
            Proc::Worker(row) => {
                tracing::info!(worker = row.worker.id.get(), pid, "worker process started");
                done.reply.map(|(conn, id)| {
                    let worker = row.worker.clone();
                    (conn, ServerMsg::WorkerIs { id, worker })
                })
            }
            Proc::Lead(row) => {
                tracing::info!(
                    assignment = row.assignment.id.get(),
                    pid,
                    "Lead process started"
                );
                done.reply.map(|(conn, id)| {
                    let assignment = Box::new(self.assignment_record(row));
                    (conn, ServerMsg::AssignmentIs { id, assignment })
                })
            }
            Proc::Started(row) => {
                tracing::info!(
                    started = row.started.id,
                    pid,
                    "started session's process started"
                );
                done.reply.map(|(conn, id)| {
                    let started = Box::new(row.started.clone());
                    (conn, ServerMsg::SessionStarted { id, started })
                })
            }
        };
        if let Some((conn, msg)) = reply {
            out.send(conn, &msg);
        }
        self.proc_changed(&proc, out);
        Ok(())
    }

    /// The host saw a process exit. One nobody stopped is lost (its owner, or its
    /// repository's Manager role, told once); while the core stops, none is (headless
    /// processes die with the core and the next one relaunches them). The exit of an
    /// earlier launch (its `nonce` is not the row's: a stopped Lead's exit that arrives
    /// after `resume_work` relaunched it) is no news about the process running now.
    pub(in crate::hub) fn proc_exited(
        &mut self,
        key: ProcKey,
        code: Option<i32>,
        nonce: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        if self.stopping {
            return Ok(());
        }
        let Some(proc) = self.proc_row(key, db)? else {
            return Ok(());
        };
        if !proc.expects_process() {
            return Ok(());
        }
        if nonce != proc.nonce() {
            tracing::debug!(
                ?key,
                "an earlier launch's process exited; the current one runs on"
            );
            return Ok(());
        }
        let how = code.map_or("it was killed".to_string(), |c| format!("exit code {c}"));
        match proc {
            Proc::Worker(row) => {
                self.worker_lost(&row, &format!("its process ended ({how})"), db, out)
            }
            Proc::Lead(row) => self.lead_lost(&row, &how, code, db, out),
            // The human's own session: its ending is its presence's news.
            Proc::Started(row) => {
                tracing::info!(started = row.started.id, %how, "a started session's process ended");
                store::started::ended(db, row.started.id, now_ms())?;
                Ok(())
            }
        }
    }

    /// Start `proc`'s process again on its session (its file when Pi wrote one and it is
    /// still there) with a fresh nonce; a paused assignment is active again. `reply`: the
    /// request that waits for it (`resume_work`).
    pub(in crate::hub) fn relaunch(
        &mut self,
        proc: &Proc,
        reply: Option<(ConnId, u64)>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let (nonce, now) = (new_nonce(), now_ms());
        match proc {
            Proc::Worker(row) => store::workers::relaunching(db, row.worker.id, &nonce, now)?,
            Proc::Lead(row) => {
                store::projects::launching(db, row.assignment.id, &nonce, now)?;
                if row.assignment.state != AssignmentState::Active {
                    let active = AssignmentState::Active;
                    store::projects::set_state(db, row.assignment.id, active, now)?;
                }
            }
            Proc::Started(row) => store::started::relaunching(db, row.started.id, &nonce, now)?,
        }
        let proc = self.proc_record(proc.key(), db)?;
        let start = match proc.session_file() {
            Some(file) => SessionStart::Resume { file: file.into() },
            None => SessionStart::New {
                id: proc.session().to_string(),
            },
        };
        let resume = matches!(start, SessionStart::Resume { .. });
        match &proc {
            Proc::Worker(row) => {
                tracing::info!(
                    worker = row.worker.id.get(),
                    resume,
                    "relaunching a worker after a restart"
                );
            }
            Proc::Lead(row) => {
                tracing::info!(assignment = row.assignment.id.get(), tag = %tag(&row.assignment), resume, "relaunching an assignment's Lead");
                self.assignment_changed(row, out);
            }
            Proc::Started(row) => {
                tracing::info!(
                    started = row.started.id,
                    resume,
                    "relaunching a started session"
                );
            }
        }
        self.launch(&proc, start, reply, false, out);
        Ok(())
    }

    /// After a core restart: `proc`'s tmux pane, which outlived the core, is adopted;
    /// otherwise its process is relaunched on its session and told why.
    fn recover(&mut self, proc: &Proc, db: &Connection, out: &mut Out) -> HubResult<()> {
        if let Some(pane) = proc.tmux_pane() {
            out.host.push(HostOp::Adopt {
                key: proc.key(),
                pane: pane.to_string(),
                nonce: proc.nonce().to_string(),
            });
            return Ok(());
        }
        if proc.told_on_restart() {
            let from = Self::core_sender();
            let steer = NewMessage::plain(proc.session(), DeliveryKind::Steer, RESTARTED, &from);
            self.mail(steer, db, out)?;
        }
        self.relaunch(proc, None, db, out)
    }

    /// At start-up: the workers a previous core left are adopted or relaunched; a
    /// settling one waits for its owner's ack again.
    pub(in crate::hub) fn recover_workers(
        &mut self,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        for row in store::workers::list(db, false)? {
            if row.worker.state == WorkerState::Settling
                && let Some(id) = row.result_message
            {
                self.workers.awaiting_ack.insert(id, row.worker.id);
            }
            let proc = Proc::Worker(row);
            if proc.recovers() {
                self.recover(&proc, db, out)?;
            }
        }
        Ok(())
    }

    /// At start-up: the sessions the human started that a previous core left are adopted
    /// (tmux) or relaunched on their session (headless).
    pub(in crate::hub) fn recover_started(
        &mut self,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        for row in store::started::live(db)? {
            self.recover(&Proc::Started(row), db, out)?;
        }
        Ok(())
    }

    /// At start-up: the Leads a previous core left are adopted or relaunched (headless,
    /// or a launch that never happened).
    pub(in crate::hub) fn recover_leads(
        &mut self,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        for row in store::projects::list_open(db, None)? {
            let proc = Proc::Lead(row);
            if proc.recovers() {
                self.recover(&proc, db, out)?;
            }
        }
        Ok(())
    }
}
