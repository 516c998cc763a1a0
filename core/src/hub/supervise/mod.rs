//! Supervision in the hub: pairing a supervisor session with a worker, the goal, the
//! verdicts and their guards, and the events both sides and the bridges see. Rules that
//! need no hub state live in [`crate::supervise::rules`]; building and delivering the
//! views (looks) is [`looks`].
//!
//! This module holds what every supervision request shares (the pairing a request is
//! about, who is acting, the events both sides and the bridges see) with `unpair`, `look`,
//! `list_pairings` and the reaction to a session's change; its children own starting a
//! pairing (`pairing`: `supervise`, finding both sides, the brief), the goal (`goal`:
//! resolving it, `set_goal`) and the verdicts with their guards (`verdicts`).

mod goal;
mod looks;
mod pairing;
mod verdicts;

pub(super) use looks::Supervision;
pub use looks::ViewDone;

use rusqlite::Connection;

use super::session_change::SessionChange;
use super::{ConnId, Cx, HubError, HubResult, Out, State, atomically};
use crate::clock::now_ms;
use crate::protocol::{
    ClientKind, DeliveryKind, EndReason, ErrorCode, Pairing, PairingChange, PairingId, Sender,
    ServerMsg, SessionId, Verdict, ViewReason, requests,
};
use crate::store::{self, messages::NewMessage, pairings::Stored};

/// Mail for one side of a pairing (a brief, a view, a steer), for [`State::mail`].
pub(super) fn pairing_message<'a>(
    to: &'a SessionId,
    kind: DeliveryKind,
    text: &'a str,
    from: &'a Sender,
    pairing: PairingId,
) -> NewMessage<'a> {
    NewMessage {
        recipient: to,
        kind,
        text,
        from,
        ask_id: None,
        question: None,
        pairing_id: Some(pairing),
        look: None,
        created_at: now_ms(),
        images: &[],
    }
}

fn not_paired(who: &str) -> HubError {
    HubError::new(
        ErrorCode::NotPaired,
        format!("{who} is in no active pairing; `shepherd pairings` lists them"),
    )
}

impl State {
    /// A pairing as it is now in the store (within the batch that just changed it).
    pub(super) fn pairing_now(&self, id: PairingId, db: &Connection) -> HubResult<Pairing> {
        let stored = store::pairings::get(db, id)?
            .ok_or_else(|| HubError::new(ErrorCode::Internal, format!("pairing {id} vanished")))?;
        Ok(self.pairing_record(&stored))
    }

    /// The wire record with live `connected` flags.
    pub(super) fn pairing_record(&self, stored: &Stored) -> Pairing {
        let mut p = stored.pairing.clone();
        p.supervisor_connected = self.presence.is_live(&p.supervisor_id);
        p.worker_connected = self.presence.is_live(&p.worker_id);
        p
    }

    /// Tell both sides (if connected) and every subscriber.
    pub(super) fn pairing_event(
        &self,
        change: PairingChange,
        pairing: &Pairing,
        verdict: Option<Verdict>,
        by: Option<String>,
        out: &mut Out,
    ) {
        self.pairing_event_except(change, pairing, verdict, by, None, out);
    }

    /// As [`Self::pairing_event`], but not to the session `except` (it caused the event
    /// and learned of it in its response).
    pub(super) fn pairing_event_except(
        &self,
        change: PairingChange,
        pairing: &Pairing,
        verdict: Option<Verdict>,
        by: Option<String>,
        except: Option<&str>,
        out: &mut Out,
    ) {
        // A pairing started or changed: its look timer needs the tick.
        self.timer
            .send_if_modified(|armed| !std::mem::replace(armed, true));
        let msg = ServerMsg::PairingEvent {
            change,
            pairing: pairing.clone(),
            verdict,
            by,
        };
        self.presence.broadcast(&msg, out);
        for side in [&pairing.supervisor_id, &pairing.worker_id] {
            if Some(side.as_str()) == except {
                continue;
            }
            if let Some(live) = self.presence.live(side)
                && !self.presence.is_subscriber(&live.conn)
            {
                out.send(live.conn, &msg);
            }
        }
    }

    pub(super) fn core_sender() -> Sender {
        Sender {
            kind: ClientKind::Cli,
            session_id: None,
            name: "shepherd".into(),
        }
    }

    /// Who is acting, as recorded: the session's name for Pi, else the human's label.
    fn actor(&self, conn: ConnId, kind: ClientKind, by: Option<String>) -> String {
        if kind == ClientKind::Pi
            && let Some(id) = self.presence.conn(&conn).and_then(|c| c.session.as_deref())
        {
            return self
                .presence
                .live(id)
                .map_or_else(|| id.to_string(), |l| l.name.clone());
        }
        self.human_label(conn, kind, by)
    }

    /// The active pairing a request is about: the Pi session's own, or the one of the
    /// session the human named.
    fn pairing_for_request(
        &self,
        conn: ConnId,
        kind: ClientKind,
        session: Option<&str>,
        db: &Connection,
    ) -> HubResult<Stored> {
        if kind == ClientKind::Pi {
            let me = self.presence.registered(conn)?.clone();
            return store::pairings::active_for(db, &me)?.ok_or_else(|| not_paired("this session"));
        }
        let Some(selector) = session else {
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                "name the session (worker or supervisor) of the pairing",
            ));
        };
        let target = self.resolve(selector, db)?;
        store::pairings::active_for(db, &target.id)?.ok_or_else(|| not_paired(&target.name))
    }

    /// A Pi request that only the supervisor of its pairing may make.
    fn supervisor_pairing(&self, conn: ConnId, db: &Connection) -> HubResult<Stored> {
        let me = self.presence.registered(conn)?.clone();
        let stored =
            store::pairings::active_for(db, &me)?.ok_or_else(|| not_paired("this session"))?;
        if stored.pairing.supervisor_id != me {
            return Err(HubError::new(
                ErrorCode::Forbidden,
                "only the supervisor of a pairing can do this; this session is its worker",
            ));
        }
        Ok(stored)
    }

    pub(super) fn unpair(
        &mut self,
        cx: Cx,
        req: requests::Unpair,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Cx { conn, kind, id } = cx;
        let requests::Unpair { session, by, .. } = req;
        let stored = self.pairing_for_request(conn, kind, session.as_deref(), db)?;
        let by = self.actor(conn, kind, by);
        let pid = stored.pairing.id;
        let me = self.presence.conn(&conn).and_then(|c| c.session.clone());
        let ended = atomically(db, || {
            store::pairings::end(db, pid, EndReason::Stopped, &by, None, now_ms())?;
            let ended = self.pairing_now(pid, db)?;
            if me.as_deref() != Some(ended.supervisor_id.as_str()) {
                let text = format!(
                    "The pairing with {} ended: stopped by {by}. You no longer supervise it; your usual tools are back.",
                    ended.worker_name
                );
                self.mail(
                    pairing_message(
                        &ended.supervisor_id,
                        DeliveryKind::Brief,
                        &text,
                        &Self::core_sender(),
                        pid,
                    ),
                    db,
                    out,
                )?;
            }
            Ok(ended)
        })?;
        self.forget(pid);
        out.send(
            conn,
            &ServerMsg::Unpaired {
                id,
                pairing: ended.clone(),
            },
        );
        tracing::info!(pairing = %pid, by = %by, "pairing stopped");
        self.pairing_event(PairingChange::Ended, &ended, None, Some(by), out);
        Ok(())
    }

    pub(super) fn look(
        &mut self,
        cx: Cx,
        req: requests::Look,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Cx { conn, kind, id } = cx;
        let session = req.session;
        let stored = if kind == ClientKind::Pi {
            self.supervisor_pairing(conn, db)?
        } else {
            self.pairing_for_request(conn, kind, session.as_deref(), db)?
        };
        let pairing = self.pairing_record(&stored);
        out.send(
            conn,
            &ServerMsg::LookRequested {
                id,
                pairing: pairing.clone(),
            },
        );
        self.trigger_view(pairing.id, ViewReason::Look, db);
        Ok(())
    }

    pub(super) fn worker_view(&mut self, cx: Cx, db: &Connection) -> HubResult<()> {
        let stored = self.supervisor_pairing(cx.conn, db)?;
        self.start_build(&stored, ViewReason::Request, Some((cx.conn, cx.id)), db)
    }

    pub(super) fn list_pairings(
        &self,
        cx: Cx,
        req: requests::ListPairings,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let pairings = store::pairings::list(db, req.all)?
            .iter()
            .map(|s| self.pairing_record(s))
            .collect();
        out.send(
            cx.conn,
            &ServerMsg::Pairings {
                id: cx.id,
                pairings,
            },
        );
        Ok(())
    }

    /// A session registered, left, was renamed or changed status: if it is in an active
    /// pairing, tell the other side when it should hear, catch a returning supervisor up,
    /// and give a look when the worker stopped.
    pub(super) fn supervision_session_changed(
        &mut self,
        change: &SessionChange<'_>,
        db: &Connection,
        out: &mut Out,
    ) {
        if !(change.noticeable() || change.came_back() || change.stopped()) {
            return; // Nothing a pairing would do: spare the lookup (updates are frequent).
        }
        let session = change.session;
        let stored = match store::pairings::active_for(db, session) {
            Ok(Some(stored)) => stored,
            Ok(None) => return,
            Err(e) => {
                tracing::error!(session = %session, error = %e, "reading the session's pairing failed");
                return;
            }
        };
        let p = &stored.pairing;
        if change.noticeable() {
            let record = self.pairing_record(&stored);
            self.pairing_event_except(
                PairingChange::Presence,
                &record,
                None,
                None,
                Some(session),
                out,
            );
        }
        if change.came_back() && p.supervisor_id == *session {
            // The first view never went out (the core stopped first), or one view of what
            // changed while it was away (withheld views, a core restart).
            let reason = if p.looks == 0 {
                ViewReason::Paired
            } else {
                ViewReason::Timer
            };
            self.trigger_view(p.id, reason, db);
        }
        if p.worker_id == *session && change.stopped() {
            self.trigger_view(p.id, ViewReason::Stopped, db);
        }
    }
}
