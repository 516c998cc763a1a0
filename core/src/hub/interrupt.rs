//! Interrupts: the human (CLI, a chat bridge) aborting a session's current run, optionally
//! followed by a steer. An interrupt is mail like a steer (a `deliver` of kind
//! `interrupt`, stored until acknowledged), so a session that is away gets it when it
//! returns; the extension aborts the run it is in and then injects the steer, if any.

use rusqlite::Connection;

use super::{Cx, HubResult, Out, State};
use crate::protocol::requests::Interrupt;
use crate::protocol::{DeliveryKind, ServerMsg, SessionStatus};
use crate::store::{self, messages::NewMessage};

impl State {
    /// `interrupt`: store the interrupt in the session's mailbox, deliver it if the
    /// session is connected, and answer `interrupted` with what the session was doing.
    pub(super) fn interrupt(
        &mut self,
        cx: Cx,
        req: Interrupt,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Cx { conn, kind, id } = cx;
        let then = req.then.map(|t| t.trim().to_string()).unwrap_or_default();
        let target = self.resolve(&req.session, db)?;
        let from = self.human_sender(conn, kind, req.by);
        let connected = self.presence.is_live(&target.id);
        let was = if connected {
            store::sessions::get(db, &self.unread, &target.id)?
                .map_or(SessionStatus::Idle, |s| s.status)
        } else {
            SessionStatus::Idle
        };
        let mailed = self.mail(
            NewMessage::plain(&target.id, DeliveryKind::Interrupt, &then, &from),
            db,
            out,
        )?;
        tracing::info!(session = %target.id, by = %from.name, %was, steer = !then.is_empty(), "interrupt");
        out.send(
            conn,
            &ServerMsg::Interrupted {
                id,
                message_id: mailed.id,
                session_id: target.id,
                session_name: target.name,
                connected: mailed.connected,
                was,
            },
        );
        Ok(())
    }
}
