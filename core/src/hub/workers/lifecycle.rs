//! What happens to a worker between requests: its Pi session registers with the launch
//! nonce (bound, or refused: fail closed), its run's final text becomes its one result,
//! its owner's ack of that result ends it, its process exiting early loses it, and a core
//! restart adopts its tmux pane or relaunches its headless process on its session file.

use rusqlite::Connection;

use super::HostOp;
use super::host_ops::LaunchDone;
use super::requests::{launch_spec, new_nonce, refused};
use crate::clock::now_ms;
use crate::hub::{HubError, HubResult, Out, State, atomically, presence::process_alive};
use crate::protocol::{
    Ask, ClientKind, DeliveryKind, ErrorCode, MessageId, Registration, Sender, ServerMsg,
    SessionId, WorkerBackend, WorkerId, WorkerState,
};
use crate::store::workers::WorkerRow;
use crate::store::{self, messages::NewMessage};
use crate::workers::launch::{ProcKey, SessionStart};

/// How a worker's owner reads a result: the header line, then the text.
fn result_text(row: &WorkerRow, status: &str, text: &str) -> String {
    format!(
        "Agent result · agent={} · definition={} · session={} · status={status}\n\n{text}",
        row.worker.label, row.worker.definition, row.worker.session_id
    )
}

fn worker_sender(row: &WorkerRow) -> Sender {
    Sender {
        kind: ClientKind::Pi,
        session_id: Some(row.worker.session_id.clone()),
        name: row.worker.label.clone(),
    }
}

impl State {
    /// At `register`: the worker this session is, if it is one, proved by the launch
    /// nonce and the launched process's pid. A registration that claims a worker's session
    /// without both is refused and changes nothing (`launch_mismatch`); a second live
    /// process on a worker's session is refused (`session_taken`).
    pub(in crate::hub) fn check_worker_launch(
        &self,
        reg: &Registration,
        pid: Option<u32>,
        db: &Connection,
    ) -> HubResult<Option<WorkerRow>> {
        let row = store::workers::live_by_session(db, &reg.session_id)?;
        let Some(row) = row else {
            if reg.launch.is_some() {
                return Err(refused(
                    "launch_mismatch",
                    format!(
                        "no managed worker waits for session {} (its worker ended); this process was launched for it and should exit",
                        reg.session_id
                    ),
                ));
            }
            return Ok(None);
        };
        let mismatch = |why: &str| {
            tracing::warn!(worker = row.worker.id.get(), session = %reg.session_id, pid = ?pid, "refused a registration as a managed worker: {why}");
            refused(
                "launch_mismatch",
                format!(
                    "session {} belongs to managed worker {} ({why}); only the process shepherd launched for it may register",
                    reg.session_id, row.worker.label
                ),
            )
        };
        use crate::workers::proc::{LaunchProof, prove_launch};
        match prove_launch(
            reg.launch.as_deref(),
            &row.nonce,
            pid,
            row.pid,
            row.bound_pid,
            process_alive,
        ) {
            Ok(()) => {}
            Err(LaunchProof::Taken(bound)) => {
                return Err(HubError::new(
                    ErrorCode::SessionTaken,
                    format!(
                        "worker {}'s session is already open in process {bound}; one live generation per session",
                        row.worker.label
                    ),
                ));
            }
            Err(proof) => return Err(mismatch(proof.why())),
        }
        Ok(Some(row))
    }

    /// After a worker's registration was accepted: bind it and put it to work.
    pub(in crate::hub) fn bind_worker(
        &mut self,
        row: &WorkerRow,
        pid: Option<u32>,
        session_file: Option<&str>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<WorkerRow> {
        let now = now_ms();
        store::workers::bind(db, row.worker.id, pid, session_file, now)?;
        if row.worker.state == WorkerState::Starting {
            store::workers::set_state(db, row.worker.id, WorkerState::Working, now)?;
        }
        let row = self.worker_record(db, row.worker.id)?;
        tracing::info!(worker = row.worker.id.get(), label = %row.worker.label, pid = ?pid, "worker bound");
        self.worker_changed(row.worker.clone(), out);
        Ok(row)
    }

    /// A run of `session` ended with `text` (`result`): for a worker on its assignment with
    /// nothing pending, that is its one result, mailed to its owner. Returns whether the
    /// session is a managed worker (its results are its owner's, not the phone's).
    pub(in crate::hub) fn worker_run_result(
        &mut self,
        session: &SessionId,
        text: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<bool> {
        let Some(row) = store::workers::live_by_session(db, session)? else {
            return Ok(false);
        };
        if row.worker.state != WorkerState::Working
            || row.worker.pending_ask.is_some()
            || row.result_message.is_some()
        {
            tracing::debug!(worker = row.worker.id.get(), state = %row.worker.state, "a worker's run ended; not its result");
            return Ok(true);
        }
        // A delegating worker finishes only after its own workers have.
        if !store::workers::children(db, row.worker.id)?.is_empty() {
            tracing::info!(
                worker = row.worker.id.get(),
                "a delegating worker's run ended while its workers are live; not its result yet"
            );
            return Ok(true);
        }
        let message = result_text(&row, "completed", text);
        let now = now_ms();
        let id = atomically(db, || {
            let mailed = self.mail(
                NewMessage::plain(
                    &row.worker.owner_id,
                    DeliveryKind::AgentResult,
                    &message,
                    &worker_sender(&row),
                ),
                db,
                out,
            )?;
            if !store::workers::set_result(db, row.worker.id, mailed.id, now)? {
                return Err(HubError::new(
                    ErrorCode::Internal,
                    format!("worker {} already has a result", row.worker.id),
                ));
            }
            Ok(mailed.id)
        })?;
        self.workers.awaiting_ack.insert(id, row.worker.id);
        tracing::info!(worker = row.worker.id.get(), message = %id, "worker result stored for its owner");
        let row = self.worker_record(db, row.worker.id)?;
        self.worker_changed(row.worker, out);
        Ok(true)
    }

    /// The owner acknowledged deliveries: a worker's result among them ends the worker.
    pub(in crate::hub) fn worker_results_acked(
        &mut self,
        owner: &SessionId,
        ids: &[MessageId],
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        if self.workers.awaiting_ack.is_empty() {
            return Ok(());
        }
        for id in ids {
            let Some(&worker) = self.workers.awaiting_ack.get(id) else {
                continue;
            };
            let Some(row) = store::workers::get(db, worker)? else {
                continue;
            };
            if &row.worker.owner_id != owner {
                continue; // Only the owner's ack of its own delivery counts.
            }
            self.workers.awaiting_ack.remove(id);
            store::workers::set_state(db, worker, WorkerState::Done, now_ms())?;
            out.host.push(HostOp::Stop {
                key: ProcKey::Worker(worker),
            });
            let row = self.worker_record(db, worker)?;
            tracing::info!(%worker, label = %row.worker.label, "worker result acknowledged; stopping it");
            self.worker_changed(row.worker, out);
        }
        Ok(())
    }

    /// An ask was answered (by `reply_agent`, `answer` or the phone): a worker waiting on
    /// it goes back to work.
    pub(in crate::hub) fn worker_ask_answered(
        &mut self,
        ask: &Ask,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Some(worker) = ask.to.as_ref().and_then(|t| t.worker) else {
            return Ok(());
        };
        let Some(row) = store::workers::get(db, worker)? else {
            return Ok(());
        };
        if row.worker.pending_ask != Some(ask.id) {
            return Ok(());
        }
        let now = now_ms();
        store::workers::set_pending_ask(db, worker, None, now)?;
        if row.worker.state == WorkerState::Blocked {
            store::workers::set_state(db, worker, WorkerState::Working, now)?;
        }
        let row = self.worker_record(db, worker)?;
        self.worker_changed(row.worker, out);
        Ok(())
    }

    /// Close `row` and, first, every live worker it owns: stop the processes, abandon a
    /// pending ask, withdraw mail not yet read. `by` names who closed it.
    pub(in crate::hub) fn close_tree(
        &mut self,
        row: &WorkerRow,
        by: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        for child in store::workers::children(db, row.worker.id)? {
            self.close_tree(&child, by, db, out)?;
        }
        let now = now_ms();
        if let Some(ask) = row.worker.pending_ask
            && store::asks::answer(db, ask, "(the worker was closed)", by, now)?
        {
            store::messages::withdraw_asks(db, ask)?;
            if let Some(ask) = store::asks::get(db, ask)? {
                self.broadcast(&ServerMsg::AskAnswered { ask }, out);
            }
        }
        if store::messages::drop_pending(db, &row.worker.session_id)? > 0 {
            self.backlog.forget_all();
        }
        store::workers::set_state(db, row.worker.id, WorkerState::Closed, now)?;
        // A settling worker (closed because its owner left) no longer waits for the ack;
        // its result stays in the owner's mailbox.
        if let Some(result) = row.result_message {
            self.workers.awaiting_ack.remove(&result);
        }
        out.host.push(HostOp::Stop {
            key: ProcKey::Worker(row.worker.id),
        });
        tracing::info!(worker = row.worker.id.get(), label = %row.worker.label, by, "worker closed");
        let closed = self.worker_record(db, row.worker.id)?;
        self.worker_changed(closed.worker, out);
        Ok(())
    }

    /// A launch (or adoption) of a worker (`worker`) finished.
    pub(in crate::hub) fn worker_launched(
        &mut self,
        worker: WorkerId,
        done: LaunchDone,
        db: &Connection,
        out: &mut Out,
    ) {
        if let Err(err) = self.try_worker_launched(worker, &done, db, out)
            && let Some((conn, id)) = done.reply
        {
            out.error(conn, Some(id), err);
        }
    }

    fn try_worker_launched(
        &mut self,
        worker: WorkerId,
        done: &LaunchDone,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let row = self.worker_record(db, worker)?;
        match &done.result {
            Ok(launched) => {
                store::workers::set_process(
                    db,
                    row.worker.id,
                    launched.pid,
                    launched.pane.as_deref(),
                    now_ms(),
                )?;
                let row = self.worker_record(db, row.worker.id)?;
                tracing::info!(
                    worker = row.worker.id.get(),
                    pid = launched.pid,
                    "worker process started"
                );
                if let Some((conn, id)) = done.reply {
                    out.send(
                        conn,
                        &ServerMsg::WorkerIs {
                            id,
                            worker: row.worker.clone(),
                        },
                    );
                }
                self.worker_changed(row.worker, out);
                Ok(())
            }
            Err(e) if done.reply.is_some() => {
                // Nothing was started: the delegation did not happen.
                tracing::warn!(worker = row.worker.id.get(), error = %e, "worker launch failed");
                store::workers::set_state(db, row.worker.id, WorkerState::Closed, now_ms())?;
                if store::messages::drop_pending(db, &row.worker.session_id)? > 0 {
                    self.backlog.forget_all();
                }
                let row = self.worker_record(db, row.worker.id)?;
                self.worker_changed(row.worker, out);
                Err(refused(
                    "launch_failed",
                    format!(
                        "the worker's Pi could not be started: {e} (check [workers] pi in the config)"
                    ),
                ))
            }
            Err(e) => {
                tracing::warn!(worker = row.worker.id.get(), error = %e, "worker could not be restarted or found again");
                self.worker_lost(
                    &row,
                    &format!("it could not be started again: {e}"),
                    db,
                    out,
                )
            }
        }
    }

    /// The host saw a worker's process exit.
    pub(in crate::hub) fn worker_exited(
        &mut self,
        worker: WorkerId,
        code: Option<i32>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        if self.stopping {
            return Ok(()); // Headless workers die with the core; the next core relaunches them.
        }
        let Some(row) = store::workers::get(db, worker)? else {
            return Ok(());
        };
        match row.worker.state {
            WorkerState::Done | WorkerState::Closed | WorkerState::Settling | WorkerState::Lost => {
                Ok(())
            }
            _ => {
                let how = code.map_or("it was killed".to_string(), |c| format!("exit code {c}"));
                self.worker_lost(&row, &format!("its process ended ({how})"), db, out)
            }
        }
    }

    /// Mark a worker lost and tell its owner, once.
    fn worker_lost(
        &mut self,
        row: &WorkerRow,
        why: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let now = now_ms();
        store::workers::set_state(db, row.worker.id, WorkerState::Lost, now)?;
        if !row.told_lost {
            store::workers::set_told_lost(db, row.worker.id)?;
            let text = result_text(
                row,
                "lost",
                &format!(
                    "Worker {} stopped before its result: {why}. Its session is kept: continue_agent {{session: \"{}\", task}} starts it again, close_agent {{agent: \"{}\"}} clears it.",
                    row.worker.label, row.worker.session_id, row.worker.label
                ),
            );
            self.mail(
                NewMessage::plain(
                    &row.worker.owner_id,
                    DeliveryKind::AgentResult,
                    &text,
                    &worker_sender(row),
                ),
                db,
                out,
            )?;
        }
        tracing::warn!(worker = row.worker.id.get(), label = %row.worker.label, why, "worker lost");
        let row = self.worker_record(db, row.worker.id)?;
        self.worker_changed(row.worker, out);
        Ok(())
    }

    /// At start-up: tmux workers are found again (they outlived the core); headless ones
    /// died with the previous core and are relaunched on their session, told why.
    pub(in crate::hub) fn recover_workers(
        &mut self,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        for row in store::workers::list(db, false)? {
            match row.worker.state {
                WorkerState::Settling => {
                    if let Some(id) = row.result_message {
                        self.workers.awaiting_ack.insert(id, row.worker.id);
                    }
                }
                WorkerState::Lost | WorkerState::Unknown => {}
                _ => self.recover_worker(&row, db, out)?,
            }
        }
        Ok(())
    }

    fn recover_worker(&mut self, row: &WorkerRow, db: &Connection, out: &mut Out) -> HubResult<()> {
        if row.worker.backend == WorkerBackend::Tmux
            && let Some(pane) = &row.pane
        {
            out.host.push(HostOp::Adopt {
                key: ProcKey::Worker(row.worker.id),
                pane: pane.clone(),
            });
            return Ok(());
        }
        let now = now_ms();
        let file = row
            .worker
            .session_file
            .clone()
            .filter(|f| std::path::Path::new(f).is_file());
        let nonce = new_nonce();
        store::workers::relaunching(db, row.worker.id, &nonce, now)?;
        let start = match &file {
            Some(f) => SessionStart::Resume { file: f.into() },
            None => SessionStart::New {
                id: row.worker.session_id.to_string(),
            },
        };
        if file.is_some() {
            let text = "Your run was interrupted by a restart of shepherd. Continue your assignment where you left off.";
            let from = Self::core_sender();
            self.mail(
                NewMessage::plain(&row.worker.session_id, DeliveryKind::Steer, text, &from),
                db,
                out,
            )?;
        }
        let row = self.worker_record(db, row.worker.id)?;
        tracing::info!(
            worker = row.worker.id.get(),
            resume = file.is_some(),
            "relaunching a worker after a restart"
        );
        out.host.push(HostOp::Launch {
            spec: Box::new(launch_spec(&row, start)),
            reply: None,
        });
        Ok(())
    }
}
