//! Looks: building a worker's view and delivering it to its supervisor. A trigger (the
//! pairing started, the worker stopped, a `look`, the timer) starts one build per pairing
//! on a blocking thread ([`crate::supervise::view::build`] reads the session file and
//! git); the result comes back as [`HubCommand::ViewBuilt`] and is delivered as the next
//! look, unless the cursor moved meanwhile (build again), it is an unchanged timer view
//! (skipped, at most three in a row) or the supervisor is away (withheld until it
//! returns). A trigger that arrives during a build runs after it.

use std::collections::HashMap;

use rusqlite::Connection;

use super::pairing_message;
use crate::clock::now_ms;
use crate::hub::{ConnId, HubCommand, HubError, HubResult, Out, State, atomically};
use crate::protocol::{
    DeliveryKind, ErrorCode, PairingChange, PairingId, PairingState, ServerMsg, View, ViewReason,
};
use crate::store::{self, messages::NewMessage, pairings::Stored};
use crate::supervise::rules;
use crate::supervise::view::{self, BuiltView, Cursor};

/// Runtime bookkeeping of pairings (not durable: rebuilt from the store as needed).
#[derive(Default)]
pub(in crate::hub) struct Supervision {
    /// Pairings with a view build in flight, and the trigger that arrived meanwhile.
    building: HashMap<PairingId, Option<ViewReason>>,
    /// When each pairing's next timer view is due (ms).
    next_timer: HashMap<PairingId, u64>,
}

/// A finished view build, back on the hub.
pub struct ViewDone {
    pub pairing: PairingId,
    pub reason: ViewReason,
    /// The look this view is (for `worker_view`: the current one, not advanced).
    pub look: u32,
    /// The cursor the build started from, to detect a build that raced another look.
    pub cursor_before: String,
    pub built: BuiltView,
    /// For `worker_view`: who asked (the view is returned, not delivered).
    pub reply: Option<(ConnId, u64)>,
}

impl State {
    pub(in crate::hub) fn forget(&mut self, pairing: PairingId) {
        self.supervision.next_timer.remove(&pairing);
    }

    /// Build and deliver a view (unless one is being built: then it runs after).
    pub(in crate::hub) fn trigger_view(
        &mut self,
        pairing: PairingId,
        reason: ViewReason,
        db: &Connection,
    ) {
        if let Some(again) = self.supervision.building.get_mut(&pairing) {
            // A stop or a look outranks a timer that is waiting.
            if again.is_none() || *again == Some(ViewReason::Timer) {
                *again = Some(reason);
            }
            return;
        }
        let result = store::pairings::get(db, pairing)
            .map_err(HubError::from)
            .and_then(|stored| match stored {
                Some(s) if s.pairing.state == PairingState::Active => {
                    self.start_build(&s, reason, None, db)
                }
                _ => Ok(()),
            });
        if let Err(err) = result {
            tracing::error!(%pairing, "starting a view failed: {}", err.message);
        }
    }

    /// Read what the build needs and run it on a blocking thread.
    pub(in crate::hub) fn start_build(
        &mut self,
        stored: &Stored,
        reason: ViewReason,
        reply: Option<(ConnId, u64)>,
        db: &Connection,
    ) -> HubResult<()> {
        let Some(tx) = self.self_tx.upgrade() else {
            return Ok(()); // Shutting down.
        };
        let worker = self.session_info(db, &stored.pairing.worker_id)?;
        let cursor: Cursor = serde_json::from_str(&stored.cursor).unwrap_or_default();
        let cursor_before = stored.cursor.clone();
        let goal = stored.pairing.goal.clone();
        let pairing = stored.pairing.id;
        let look = if reply.is_some() {
            stored.pairing.looks
        } else {
            stored.pairing.looks + 1
        };
        if reply.is_none() {
            self.supervision.building.insert(pairing, None);
        }
        tokio::task::spawn_blocking(move || {
            let input = view::ViewInput {
                cursor: &cursor,
                worker: view::WorkerFacts {
                    name: &worker.name,
                    status: &worker.status,
                    model: worker.model.as_deref(),
                    context_percent: worker.context_percent,
                    context_tokens: worker.context_tokens,
                    context_window: worker.context_window,
                    cwd: &worker.cwd,
                    repo: worker.repo.as_deref(),
                    branch: worker.branch.as_deref(),
                    session_file: worker.session_file.as_deref(),
                },
                goal: goal.as_deref(),
                look,
                reason,
                now: now_ms(),
            };
            let built = std::panic::catch_unwind(|| view::build(&input)).unwrap_or_else(|panic| {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!(%pairing, "building a view panicked: {what}");
                BuiltView {
                    text: format!(
                        "The view of {} could not be built (a bug in shepherd: {what}). Use worker_view, or let it run.",
                        input.worker.name
                    ),
                    entries: 0,
                    pending_tool_calls: input.cursor.pending.len() as u32,
                    unchanged: false,
                    cursor: input.cursor.clone(),
                }
            });
            let done = ViewDone {
                pairing,
                reason,
                look,
                cursor_before,
                built,
                reply,
            };
            let _ = tx.blocking_send(HubCommand::ViewBuilt(Box::new(done)));
        });
        Ok(())
    }

    /// A build finished but its batch could not use the store: forget it (the next
    /// trigger or timer builds again) and fail a waiting `worker_view`.
    pub(in crate::hub) fn view_failed(&mut self, done: ViewDone, out: &mut Out) {
        match done.reply {
            Some((conn, id)) => out.error(
                conn,
                Some(id),
                HubError::new(ErrorCode::StoreFailed, "the database failed; retry"),
            ),
            None => {
                self.supervision.building.remove(&done.pairing);
            }
        }
    }

    /// A build finished: answer `worker_view`, or deliver the view as the next look.
    pub(in crate::hub) fn view_built(&mut self, done: ViewDone, db: &Connection, out: &mut Out) {
        if let Some((conn, id)) = done.reply {
            let view = View {
                pairing_id: done.pairing,
                look: done.look,
                reason: ViewReason::Request,
                text: done.built.text,
                entries: done.built.entries,
                pending_tool_calls: done.built.pending_tool_calls,
                unchanged: done.built.unchanged,
                created_at: now_ms(),
            };
            out.send(conn, &ServerMsg::View { id, view });
            return;
        }
        let again = self.supervision.building.remove(&done.pairing).flatten();
        if let Err(err) = self.deliver_view(&done, db, out) {
            tracing::error!(
                pairing = %done.pairing,
                "delivering a view failed: {}",
                err.message
            );
        }
        if let Some(reason) = again {
            self.trigger_view(done.pairing, reason, db);
        }
    }

    fn deliver_view(&mut self, done: &ViewDone, db: &Connection, out: &mut Out) -> HubResult<()> {
        let Some(stored) = store::pairings::get(db, done.pairing)? else {
            return Ok(());
        };
        if stored.pairing.state != PairingState::Active {
            return Ok(());
        }
        if stored.cursor != done.cursor_before {
            // Another look moved the cursor meanwhile: build again from there.
            self.trigger_view(done.pairing, done.reason, db);
            return Ok(());
        }
        let now = now_ms();
        let interval = self.facts.supervise.look_interval_secs * 1000;
        if interval > 0 {
            self.supervision
                .next_timer
                .insert(done.pairing, now + interval);
        }
        if done.reason == ViewReason::Timer
            && rules::skip_timer_view(done.built.unchanged, stored.timer_skips)
        {
            store::pairings::record_skip(db, done.pairing)?;
            tracing::debug!(
                pairing = %done.pairing,
                "timer view skipped: nothing changed"
            );
            return Ok(());
        }
        if !self.presence.is_live(&stored.pairing.supervisor_id) {
            // Nobody would read it: keep the cursor where it is; the supervisor gets one
            // view of everything when it returns (`supervisor_returned`).
            tracing::debug!(pairing = %done.pairing, "supervisor away: view withheld");
            return Ok(());
        }
        let look = stored.pairing.looks + 1;
        let cursor = serde_json::to_string(&done.built.cursor)
            .map_err(|e| HubError::new(ErrorCode::Internal, format!("cursor: {e}")))?;
        atomically(db, || {
            store::pairings::record_look(
                db,
                done.pairing,
                &cursor,
                done.built.pending_tool_calls,
                now,
            )?;
            let core = Self::core_sender();
            let view = NewMessage {
                look: Some(look),
                ..pairing_message(
                    &stored.pairing.supervisor_id,
                    DeliveryKind::View,
                    &done.built.text,
                    &core,
                    done.pairing,
                )
            };
            self.mail(view, db, out)
        })?;
        let pairing = self.pairing_now(done.pairing, db)?;
        tracing::info!(pairing = %done.pairing, look, reason = ?done.reason, entries = done.built.entries, "view delivered");
        self.pairing_event(PairingChange::Look, &pairing, None, None, out);
        Ok(())
    }

    /// The periodic timer: start a timer view for every pairing that is due.
    pub(in crate::hub) fn tick(&mut self, db: &Connection) {
        let interval = self.facts.supervise.look_interval_secs * 1000;
        if interval == 0 {
            return;
        }
        let active = match store::pairings::active(db) {
            Ok(active) => active,
            Err(e) => {
                tracing::error!(error = %e, "listing active pairings failed");
                return;
            }
        };
        if active.is_empty() {
            // Nothing to time: sleep until a pairing event arms the tick again.
            tracing::debug!("no active pairing: the look timer sleeps");
            self.timer
                .send_if_modified(|armed| std::mem::replace(armed, false));
            return;
        }
        let now = now_ms();
        for stored in active {
            let p = &stored.pairing;
            let due = *self
                .supervision
                .next_timer
                .entry(p.id)
                .or_insert_with(|| p.last_look_at.unwrap_or(p.created_at) + interval);
            if now >= due && !self.supervision.building.contains_key(&p.id) {
                self.supervision.next_timer.insert(p.id, now + interval);
                self.trigger_view(p.id, ViewReason::Timer, db);
            }
        }
    }
}
