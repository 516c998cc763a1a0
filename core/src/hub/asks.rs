//! Asks: a session's questions for whoever supervises it and the one answer each gets
//! (reports, information posted without a question, are kept in `reports.rs`). The
//! winning answer travels back to the asking session through its mailbox, like any other
//! delivery.

use rusqlite::Connection;

use super::{Cx, HubError, HubResult, Out, State, atomically};
use crate::clock::now_ms;
use crate::protocol::{AskState, ClientKind, DeliveryKind, ErrorCode, Sender, ServerMsg, requests};
use crate::store::{self, messages::NewMessage};

const MAX_OPTIONS: usize = 10;
const MAX_OPTION_CHARS: usize = 100;

fn invalid(message: impl Into<String>) -> HubError {
    HubError::new(ErrorCode::InvalidArgument, message)
}

/// An idempotency key is 1-128 characters without control characters.
pub(super) fn check_key(key: Option<&str>) -> HubResult<()> {
    match key {
        Some(k) if k.is_empty() || k.chars().count() > 128 || k.chars().any(char::is_control) => {
            Err(invalid(
                "key must be 1-128 characters without control characters",
            ))
        }
        _ => Ok(()),
    }
}

/// The label recorded as the human who acted: `cli`, or what the bridge says.
pub(super) fn human_label(kind: ClientKind, client_name: &str, by: Option<String>) -> String {
    match kind {
        ClientKind::Bridge => by
            .filter(|b| !b.trim().is_empty())
            .unwrap_or_else(|| client_name.to_string()),
        _ => "cli".to_string(),
    }
}

impl State {
    pub(super) fn ask(
        &mut self,
        cx: Cx,
        req: requests::Ask,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Cx { conn, id, .. } = cx;
        let requests::Ask {
            question,
            options,
            details,
            key,
            ..
        } = req;
        let session_id = self.registered(conn)?.clone();
        check_key(key.as_deref())?;
        // Sent again (a queued ask resent after a lost reply): the ask made then.
        if let Some(key) = &key
            && let Some(ask) = store::asks::by_key(db, &session_id, key)?
        {
            tracing::info!(ask = %ask.id, session = %session_id, "ask sent again with its key; not repeated");
            out.send(conn, &ServerMsg::Asked { id, ask });
            return Ok(());
        }
        if question.trim().is_empty() {
            return Err(invalid("question must not be empty"));
        }
        if options.len() > MAX_OPTIONS {
            return Err(invalid(format!(
                "at most {MAX_OPTIONS} options, got {}",
                options.len()
            )));
        }
        if let Some(bad) = options
            .iter()
            .find(|o| o.trim().is_empty() || o.chars().count() > MAX_OPTION_CHARS)
        {
            return Err(invalid(format!(
                "each option must be 1-{MAX_OPTION_CHARS} characters, got {bad:?}"
            )));
        }
        let max = self.facts.limits.max_open_asks_per_session;
        if store::asks::open_count(db, &session_id)? as usize >= max {
            return Err(HubError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "this session already has {max} open asks, the most allowed (core.limits.max_open_asks_per_session); wait for answers"
                ),
            )
            .with_details(serde_json::json!({ "limit": "max_open_asks_per_session", "max": max })));
        }
        let ask_id = store::asks::insert(
            db,
            &session_id,
            &question,
            &options,
            details.as_deref(),
            key.as_deref(),
            now_ms(),
        )?;
        let ask = store::asks::get(db, ask_id)?.expect("just inserted");
        tracing::info!(ask = %ask.id, session = %session_id, "ask opened");
        out.send(
            conn,
            &ServerMsg::Asked {
                id,
                ask: ask.clone(),
            },
        );
        self.broadcast(&ServerMsg::AskOpened { ask }, out);
        Ok(())
    }

    pub(super) fn answer(
        &mut self,
        cx: Cx,
        req: requests::Answer,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Cx { conn, kind, id } = cx;
        let requests::Answer {
            ask: ask_id,
            text,
            by,
            ..
        } = req;
        if !kind.is_human() {
            return Err(HubError::new(
                ErrorCode::Forbidden,
                "Pi sessions cannot answer asks; the human answers them (CLI or chat)",
            ));
        }
        if text.trim().is_empty() {
            return Err(invalid("answer text must not be empty"));
        }
        let client_name = self
            .conns
            .get(&conn)
            .map(|c| c.handle.client_name.clone())
            .unwrap_or_default();
        let label = human_label(kind, &client_name, by);
        let ask = store::asks::get(db, ask_id)?.ok_or_else(|| {
            HubError::new(
                ErrorCode::UnknownAsk,
                format!("there is no ask {ask_id}; `shepherd asks` lists the open ones"),
            )
        })?;
        if ask.state == AskState::Answered {
            return Err(already_answered(&ask));
        }
        let now = now_ms();
        let from = Sender {
            kind,
            session_id: None,
            name: label.clone(),
        };
        atomically(db, || {
            if !store::asks::answer(db, ask_id, &text, &label, now)? {
                let ask = store::asks::get(db, ask_id)?.expect("exists");
                return Err(already_answered(&ask));
            }
            let mailed = self.mail(
                NewMessage {
                    recipient: &ask.session_id,
                    kind: DeliveryKind::Answer,
                    text: &text,
                    from: &from,
                    ask_id: Some(ask_id),
                    question: Some(&ask.question),
                    pairing_id: None,
                    look: None,
                    created_at: now,
                },
                db,
                out,
            )?;
            // Handed to a connected session: `unanswer` must know it may have been read.
            if mailed.connected {
                store::sessions::touch(db, &ask.session_id, now)?;
            }
            Ok(mailed)
        })?;
        let ask = store::asks::get(db, ask_id)?.expect("exists");
        tracing::info!(ask = %ask.id, by = %label, "ask answered");
        out.send(
            conn,
            &ServerMsg::Answered {
                id,
                ask: ask.clone(),
            },
        );
        self.broadcast(&ServerMsg::AskAnswered { ask }, out);
        Ok(())
    }
}

fn already_answered(ask: &crate::protocol::Ask) -> HubError {
    let by = ask.answered_by.clone().unwrap_or_default();
    HubError::new(
        ErrorCode::AlreadyAnswered,
        format!(
            "ask {} was already answered by {by}: {:?}",
            ask.id,
            ask.answer.as_deref().unwrap_or_default()
        ),
    )
    .with_details(serde_json::json!({
        "answered_by": ask.answered_by,
        "answered_at": ask.answered_at,
        "answer": ask.answer,
    }))
}
