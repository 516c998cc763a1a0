//! `unanswer`: "that was meant as a steer". A human takes an answer back; the ask opens
//! again and the answer's text goes to the session as a steer instead. Honest only while
//! the answer cannot have reached the session, so it is accepted only when its mailbox row
//! was never handed to a connection: not acknowledged, the session not connected now, and
//! not connected since the answer was made (registering sets `last_seen`, and answering a
//! connected session touches it, so `created_at > last_seen` means it never saw the row,
//! across core restarts too). Otherwise it is refused with `already_delivered` and the ask
//! stays answered; the human can still steer.

use rusqlite::Connection;

use super::{Cx, HubError, HubResult, Out, State, atomically};
use crate::clock::now_ms;
use crate::protocol::{AskState, DeliveryKind, ErrorCode, Sender, ServerMsg, requests};
use crate::store::{self, messages::NewMessage};

impl State {
    pub(super) fn unanswer(
        &mut self,
        cx: Cx,
        req: requests::Unanswer,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Cx { conn, kind, id } = cx;
        let ask_id = req.ask;
        let ask = store::asks::get(db, ask_id)?.ok_or_else(|| {
            HubError::new(
                ErrorCode::UnknownAsk,
                format!("there is no ask {ask_id}; `shepherd asks --all` lists them"),
            )
        })?;
        let (Some(answer), AskState::Answered) = (ask.answer.clone(), ask.state) else {
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "ask {ask_id} is open: there is no answer to take back; answer it or steer the session"
                ),
            ));
        };
        let row = store::messages::answer_of(db, ask_id)?;
        let last_seen =
            store::sessions::get(db, &self.unread, &ask.session_id)?.map_or(0, |s| s.last_seen);
        let unseen = row
            .as_ref()
            .is_some_and(|r| !r.acked && r.created_at > last_seen)
            && !self.presence.is_live(&ask.session_id);
        let Some(row) = row.filter(|_| unseen) else {
            return Err(HubError::new(
                ErrorCode::AlreadyDelivered,
                format!(
                    "{} may have read the answer to ask {ask_id} already, so it stays answered; to send the text as a steer too, use `shepherd send {} <text>` (or /steer in the chat)",
                    ask.session_name, ask.session_name
                ),
            )
            .with_details(serde_json::json!({ "session": ask.session_id, "answer": answer })));
        };
        let label = self.human_label(conn, kind, req.by);
        let from = Sender {
            kind,
            session_id: None,
            name: label.clone(),
        };
        let now = now_ms();
        let mailed = atomically(db, || {
            if !store::messages::retract(db, &self.unread, row.id)?
                || !store::asks::reopen(db, ask_id)?
            {
                return Err(HubError::new(
                    ErrorCode::Internal,
                    format!("ask {ask_id} changed while its answer was taken back"),
                ));
            }
            self.mail(
                NewMessage {
                    created_at: now,
                    ..NewMessage::plain(&ask.session_id, DeliveryKind::Steer, &answer, &from)
                },
                db,
                out,
            )
        })?;
        let ask = store::asks::get(db, ask_id)?.expect("exists");
        tracing::info!(ask = %ask.id, by = %label, steer = %mailed.id, "answer taken back as a steer");
        out.send(
            conn,
            &ServerMsg::Unanswered {
                id,
                ask: ask.clone(),
                message_id: mailed.id,
                session_name: ask.session_name.clone(),
            },
        );
        // Open again: subscribers show it as they show a new ask.
        self.presence.broadcast(&ServerMsg::AskOpened { ask }, out);
        Ok(())
    }
}
