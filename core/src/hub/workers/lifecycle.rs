//! What happens to a worker between requests, beyond the launched-process lifecycle it
//! shares with Leads (`hub/launched/`: launch, bind, exit, relaunch): its run's final text
//! becomes its one result, its owner's ack of that result ends it, an answer to its ask
//! puts it back to work, closing it closes its own workers first; a failed first launch
//! undoes the delegation and a lost process is told to its owner once.

use rusqlite::Connection;

use super::requests::refused;
use crate::clock::now_ms;
use crate::hub::launched::{HostOp, Proc};
use crate::hub::{ConnId, HubError, HubResult, Out, State, atomically};
use crate::protocol::{
    Ask, ClientKind, DeliveryKind, ErrorCode, MessageId, Sender, ServerMsg, SessionId, WorkerState,
};
use crate::store::workers::WorkerRow;
use crate::store::{self, messages::NewMessage};
use crate::workers::launch::ProcKey;

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

    /// The session on `conn` acknowledged deliveries: a worker's result among them ends
    /// the worker when that session is its owner. Nothing is looked up (not even who the
    /// session is) while no result waits for an ack.
    pub(in crate::hub) fn worker_results_acked(
        &mut self,
        conn: ConnId,
        ids: &[MessageId],
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        if self.workers.awaiting_ack.is_empty() {
            return Ok(());
        }
        let owner = self.presence.registered(conn)?.clone();
        for id in ids {
            let Some(&worker) = self.workers.awaiting_ack.get(id) else {
                continue;
            };
            let Some(row) = store::workers::get(db, worker)? else {
                continue;
            };
            if row.worker.owner_id != owner {
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

    /// Close `row` and, first, every live worker it owns, and stop their processes
    /// ([`State::stop_proc`]). `by` names who closed it.
    pub(in crate::hub) fn close_tree(
        &mut self,
        row: &WorkerRow,
        by: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        self.stop_proc(&Proc::Worker(row.clone()), by, None, db, out)
    }

    /// A worker's record closed, as [`State::stop_proc`] ends it: a pending ask
    /// abandoned, mail it has not read withdrawn, its state `closed`.
    pub(in crate::hub) fn worker_closed(
        &mut self,
        row: &WorkerRow,
        by: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let now = now_ms();
        if let Some(ask) = row.worker.pending_ask
            && store::asks::answer(db, ask, "(the worker was closed)", by, now)?
        {
            store::messages::withdraw_asks(db, &self.unread, ask)?;
            if let Some(ask) = store::asks::get(db, ask)? {
                self.presence
                    .broadcast(&ServerMsg::AskAnswered { ask }, out);
            }
        }
        store::messages::drop_pending(db, &self.unread, &row.worker.session_id)?;
        store::workers::set_state(db, row.worker.id, WorkerState::Closed, now)?;
        // A settling worker (closed because its owner left) no longer waits for the ack;
        // its result stays in the owner's mailbox.
        if let Some(result) = row.result_message {
            self.workers.awaiting_ack.remove(&result);
        }
        tracing::info!(worker = row.worker.id.get(), label = %row.worker.label, by, "worker closed");
        let closed = self.worker_record(db, row.worker.id)?;
        self.worker_changed(closed.worker, out);
        Ok(())
    }

    /// A new worker's first launch failed: nothing was started, so the delegation did not
    /// happen (the row is closed, its task withdrawn). Returns the refusal for its request.
    pub(in crate::hub) fn worker_launch_undone(
        &mut self,
        row: &WorkerRow,
        e: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<HubError> {
        tracing::warn!(worker = row.worker.id.get(), error = %e, "worker launch failed");
        store::workers::set_state(db, row.worker.id, WorkerState::Closed, now_ms())?;
        store::messages::drop_pending(db, &self.unread, &row.worker.session_id)?;
        let row = self.worker_record(db, row.worker.id)?;
        self.worker_changed(row.worker, out);
        Ok(refused(
            "launch_failed",
            format!("the worker's Pi could not be started: {e} (check [workers] pi in the config)"),
        ))
    }

    /// Mark a worker lost and tell its owner, once.
    pub(in crate::hub) fn worker_lost(
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
}
