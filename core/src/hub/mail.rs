//! Mail: steers from the human and messages between sessions. Each is stored in the
//! receiver's mailbox before the sender hears `sent`, delivered at once when the receiver
//! is connected, and delivered again on each registration until acknowledged.

use rusqlite::Connection;

use super::asks::human_label;
use super::{ConnId, HubError, HubResult, Out, State};
use crate::protocol::{ClientKind, Delivery, DeliveryKind, ErrorCode, Sender, ServerMsg};
use crate::store::{self, now_ms};

impl State {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn send_text(
        &mut self,
        conn: ConnId,
        kind: ClientKind,
        id: u64,
        to: &str,
        text: String,
        by: Option<String>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        if text.trim().is_empty() {
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                "message text must not be empty",
            ));
        }
        let (from, delivery_kind) = if kind == ClientKind::Pi {
            let session_id = self.registered(conn)?.to_string();
            let name = self
                .live
                .get(&session_id)
                .map_or_else(|| session_id.clone(), |l| l.name.clone());
            let sender = Sender {
                kind,
                session_id: Some(session_id),
                name,
            };
            (sender, DeliveryKind::Message)
        } else {
            let client_name = self
                .conns
                .get(&conn)
                .map(|c| c.handle.client_name.clone())
                .unwrap_or_default();
            let sender = Sender {
                kind,
                session_id: None,
                name: human_label(kind, &client_name, by),
            };
            (sender, DeliveryKind::Steer)
        };
        let target = self.resolve(to, db)?;
        if from.session_id.as_deref() == Some(target.id.as_str()) {
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                "a session cannot send to itself",
            ));
        }
        let delivery = store::messages::insert(
            db,
            store::messages::NewMessage {
                recipient: &target.id,
                kind: delivery_kind,
                text: &text,
                from: &from,
                ask_id: None,
                question: None,
                created_at: now_ms(),
            },
        )?;
        let message_id = delivery.id;
        let connected = self.deliver(&target.id, delivery, out);
        out.send(
            conn,
            &ServerMsg::Sent {
                id,
                message_id,
                session_id: target.id,
                session_name: target.name,
                connected,
            },
        );
        Ok(())
    }

    /// Queue a stored delivery for its session if connected; true if it was.
    pub(super) fn deliver(&self, session_id: &str, message: Delivery, out: &mut Out) -> bool {
        match self.live.get(session_id) {
            Some(live) => {
                out.send(live.conn, &ServerMsg::Deliver { message });
                true
            }
            None => false,
        }
    }

    pub(super) fn ack(&mut self, conn: ConnId, ids: &[u64], db: &Connection) -> HubResult<()> {
        let session_id = self.registered(conn)?;
        store::messages::ack(db, session_id, ids, now_ms())?;
        Ok(())
    }
}
