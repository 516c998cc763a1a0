//! Mail: steers from the human and messages between sessions. Each is stored in the
//! receiver's mailbox before the sender hears `sent`, delivered at once when the receiver
//! is connected, and delivered again on each registration until acknowledged.

use rusqlite::Connection;

use super::{Cx, HubError, HubResult, Out, State};
use crate::clock::now_ms;
use crate::protocol::requests::{Ack, Send};
use crate::protocol::{Delivery, DeliveryKind, ErrorCode, ServerMsg};
use crate::protocol::{MessageId, SessionId};
use crate::store::{self, messages::NewMessage};

/// More than the bytes of a `deliver` frame besides its strings' contents: its keys, kind
/// names, quotes and numbers (measured: under 300).
const FRAME_OVERHEAD_MOST: usize = 1024;

/// Whether `m`'s `deliver` frame is within `max` bytes by a bound, without encoding it:
/// JSON writes a byte of a string as at most 6 (`\u001f`), and the rest of the frame is
/// under [`FRAME_OVERHEAD_MOST`]. False says only "measure it".
fn surely_fits(m: &NewMessage<'_>, max: usize) -> bool {
    let strings = [
        Some(m.text),
        m.question,
        Some(m.from.name.as_str()),
        m.from.session_id.as_deref(),
    ];
    let bytes: usize = strings.iter().flatten().map(|s| s.len()).sum();
    bytes.saturating_mul(6).saturating_add(FRAME_OVERHEAD_MOST) <= max
}

/// Mail that is stored: its delivery id, and whether its recipient is connected now.
pub(super) struct Mailed {
    pub id: MessageId,
    pub connected: bool,
}

impl State {
    pub(super) fn send_text(
        &mut self,
        cx: Cx,
        req: Send,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Cx { conn, kind, id } = cx;
        let Send { to, text, by, .. } = req;
        if text.trim().is_empty() {
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                "message text must not be empty",
            ));
        }
        let from = self.human_sender(conn, kind, by);
        let target = self.resolve(&to, db)?;
        let delivery = self.mail(
            NewMessage::plain(&target.id, DeliveryKind::Steer, &text, &from),
            db,
            out,
        )?;
        out.send(
            conn,
            &ServerMsg::Sent {
                id,
                message_id: delivery.id,
                session_id: target.id,
                session_name: target.name,
                connected: delivery.connected,
            },
        );
        Ok(())
    }

    /// The one way mail enters a mailbox: refuse it if its `deliver` frame would not fit,
    /// store it, and hand it to the recipient's connection if there is one (else it waits
    /// for the next registration). Every sender (steers, messages, answers, views, briefs)
    /// comes through here.
    pub(super) fn mail(
        &self,
        message: NewMessage<'_>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<Mailed> {
        self.check_fits(&message)?;
        let recipient = message.recipient;
        let max = self.facts.limits.max_pending_per_session as u64;
        let pending = self.unread.count(recipient);
        if pending >= max {
            return Err(HubError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "{recipient} already has {pending} messages it has not read, the most allowed (core.limits.max_pending_per_session); it reads them when it is back, then there is room again"
                ),
            )
            .with_details(serde_json::json!({
                "limit": "max_pending_per_session", "max": max, "session": recipient,
            })));
        }
        let delivery = store::messages::insert(db, &self.unread, message)?;
        let id = delivery.id;
        let connected = self.deliver(recipient, delivery, out);
        Ok(Mailed { id, connected })
    }

    /// Refuse mail whose `deliver` frame would exceed the frame limit: the receiver could
    /// never read it, and it would block that mailbox for good.
    fn check_fits(&self, m: &NewMessage<'_>) -> HubResult<()> {
        if surely_fits(m, self.facts.limits.max_frame_bytes) {
            return Ok(());
        }
        let probe = m.delivery(MessageId::from(u64::MAX));
        self.check_frame(
            &ServerMsg::Deliver { message: probe },
            0,
            "this message",
            "send less text, or put it in a file and send its path",
        )
    }

    /// Queue a stored delivery for its session if connected; true if it is. While the
    /// session's mailbox is being replayed, the replay sends it in order instead.
    pub(super) fn deliver(&self, session_id: &SessionId, message: Delivery, out: &mut Out) -> bool {
        match self.presence.live(session_id) {
            Some(live) => {
                if !live.replaying {
                    out.deliver(live.conn, session_id, message);
                }
                true
            }
            None => false,
        }
    }

    /// Send the next chunk of a session's stored, unacknowledged mail (after the last id
    /// its connection was given), small enough to fit the outbox. While more remains the
    /// session stays in replay and the writer reports when it has drained.
    pub(super) fn replay(
        &mut self,
        session_id: &SessionId,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let chunk = (self.facts.limits.max_outbound_frames / 2).max(1);
        let Some(live) = self.presence.live_mut(session_id) else {
            return Ok(());
        };
        let bytes = (self.facts.limits.max_outbound_bytes / 2).max(1);
        // Cut by count or by bytes: more may remain (an empty next chunk ends the replay).
        let (batch, more) = store::messages::pending_after(
            db,
            &self.unread,
            session_id,
            live.last_sent,
            chunk,
            bytes,
        )?;
        live.replaying = more;
        let conn = live.conn;
        if more && let Some(c) = self.presence.conn(&conn) {
            c.handle
                .drain_wanted
                .store(true, std::sync::atomic::Ordering::Release);
        }
        for message in batch {
            out.deliver(conn, session_id, message);
        }
        Ok(())
    }

    pub(super) fn ack(
        &mut self,
        cx: Cx,
        req: Ack,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let session_id = self.presence.registered(cx.conn)?;
        store::messages::ack(db, &self.unread, session_id, &req.ids, now_ms())?;
        self.worker_results_acked(cx.conn, &req.ids, db, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ClientKind, Sender, frame};

    /// The bound is never below the real size, even for strings JSON escapes the most and
    /// the largest numbers.
    #[test]
    fn a_message_that_surely_fits_does_fit() {
        let text = "\u{1}".repeat(300);
        let question = "\"".repeat(50);
        let from = Sender {
            kind: ClientKind::Pi,
            session_id: Some(SessionId::from("\u{1f}".repeat(40).as_str())),
            name: "\\".repeat(40),
        };
        let recipient = SessionId::from("someone");
        let m = NewMessage {
            ask_id: Some(crate::protocol::AskId::from(u64::MAX)),
            question: Some(&question),
            pairing_id: Some(u64::MAX.into()),
            look: Some(u32::MAX),
            created_at: u64::MAX,
            ..NewMessage::plain(&recipient, DeliveryKind::SupervisorMessage, &text, &from)
        };
        let size = frame::encode(&ServerMsg::Deliver {
            message: m.delivery(MessageId::from(u64::MAX)),
        })
        .len()
            - frame::HEADER_LEN;
        let bound = (300 + 50 + 40 + 40) * 6 + FRAME_OVERHEAD_MOST;
        assert!(size <= bound, "{size} > {bound}");
        assert!(surely_fits(&m, bound));
        assert!(!surely_fits(&m, bound - 1));
        // The part besides the strings, measured, is well under its bound.
        assert!(size - (300 * 6 + 50 * 2 + 40 * 6 + 40 * 2) < FRAME_OVERHEAD_MOST / 2);
    }
}
