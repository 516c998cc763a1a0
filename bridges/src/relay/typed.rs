//! # Text typed in a session's place
//!
//! Plain text in a session's topic or thread (no reply, no command) means what the human
//! most likely meant, the same on every platform: with exactly one open ask shown there
//! (the session's own, or its supervisor's while it supervises it) it answers that ask
//! (an option's number picks the option, as a reply to the card does) and the reply offers
//! to take it back ("it was meant as a steer": [`Relay::undo`], the core's `unanswer`);
//! with several it asks which one and sends nothing; with none it steers.

use shepherd_core::protocol::{Ask, AskRef, ErrorCode};

use super::{Platform, Relay};
use crate::chat::commands as chat_commands;
use crate::chat::render::Rendered;
use crate::chat::replies::{already_answered_text, plain};
use crate::chat::typed;

impl<P: Platform> Relay<P> {
    /// Text `by` typed at `place`, the place of `session`.
    pub async fn typed(&mut self, session: &str, text: &str, by: &str, place: Option<P::Place>) {
        let session = match self.here_session(session) {
            Ok(session) => session,
            Err(which) => return self.say(place, which).await,
        };
        let session = session.as_str();
        let open = match self.core.asks(false).await {
            Ok(asks) => asks,
            Err(e) => {
                let said = format!("Not sent (the open questions could not be read): {e}");
                self.say(place, plain(said)).await;
                return;
            }
        };
        let here: Vec<Ask> = open
            .into_iter()
            .filter(|a| self.pairings.home_of(&a.session_id) == session)
            .collect();
        match here.as_slice() {
            [] => self.steer(session, text, by, place).await,
            [ask] => {
                let ask = ask.clone();
                self.typed_answer(session, &ask, text, by, place).await;
            }
            several => {
                let name = self
                    .sessions
                    .get(session)
                    .map_or(session, |s| s.name.as_str());
                let reply = typed::which_ask(name, several, P::PREFIX);
                self.say(place, reply).await;
            }
        }
    }

    /// Answer the one open ask with what was typed, and offer the undo.
    async fn typed_answer(
        &mut self,
        session: &str,
        ask: &Ask,
        text: &str,
        by: &str,
        place: Option<P::Place>,
    ) {
        let answer =
            chat_commands::answer_text(ask, text).unwrap_or_else(|| text.trim().to_string());
        match self.core.answer(&ask.key(), &answer, by).await {
            Ok(()) => {
                let reply = typed::typed_answer(ask, &answer, P::UNDO_HINT);
                self.platform
                    .offer_undo(place, session, &ask.key(), reply)
                    .await;
            }
            Err(e) if e.code() == Some(ErrorCode::AlreadyAnswered) => {
                self.say(place, plain(already_answered_text(&e))).await;
            }
            Err(e) => self.say(place, plain(format!("Not answered: {e}"))).await,
        }
    }

    /// "It was meant as a steer": take ask `ask`'s answer back; what to say about it.
    pub async fn undo(&mut self, ask: &AskRef, by: &str) -> Rendered {
        match self.core.unanswer(ask, by).await {
            Ok(u) => typed::undone(&u),
            Err(e) => typed::undo_refused(&e),
        }
    }
}
