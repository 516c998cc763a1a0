//! Matrix as a relay [`Platform`]: everything about one Pi session goes into that
//! session's thread (`m.thread`) in the bridge's room; the first message about it (its
//! start when it registers, else a card, a report, a pairing's start) is the thread's
//! root. Posts go through the outbox (split
//! into messages, or one `.md` file), an ask's options are the bot's own keycap reactions
//! on its card, and `bridge.db` remembers threads, cards and which event is about which
//! session. What the human does in the room is read in [`super::room`].

use std::collections::HashMap;

use crate::chat::approvals::ApprovalRef;
use crate::chat::workers::WorkerRef;
use matrix_sdk::ruma::OwnedEventId;
use matrix_sdk::{Client, Room};
use shepherd_core::protocol::{Approval, ApprovalScope, Ask, AskRef, Peek, SessionInfo};
use tokio_util::sync::CancellationToken;

use super::decide::Known;
use super::outbox::{MatrixOp, MatrixOutbox};
use super::send::{self, InThread};
use super::store::{Card, MatrixStore};
use crate::chat::access::Allowlist;
use crate::chat::places;
use crate::chat::render::{AskCard, Rendered};
use crate::chat::typed::UNDO_KEY;
use crate::relay::Platform;

/// The Matrix side of the bridge: its room and its ways out.
/// The reaction on an integration's card that shows its Lead's diff.
pub const DIFF_KEY: &str = "🧾";

pub struct Matrix {
    pub client: Client,
    pub room: Room,
    /// The bot's own user id.
    pub me: String,
    pub store: MatrixStore,
    pub outbox: MatrixOutbox,
    pub allow: Allowlist<String>,
    /// The latest event the bot sent in each thread (by root), for the fallback reply.
    pub latest: HashMap<String, OwnedEventId>,
    /// A thread per session or per repository (`[matrix] threads`).
    pub places: shepherd_core::config::Places,
    pub shutdown: CancellationToken,
}

impl Known for MatrixStore {
    fn card(&self, event_id: &str) -> Option<(AskRef, bool)> {
        self.card_at(event_id)
            .ok()
            .flatten()
            .map(|c| (c.ask, c.answered))
    }
    fn open_card_in_thread(&self, root: &str) -> Option<AskRef> {
        MatrixStore::open_card_in_thread(self, root)
            .ok()
            .flatten()
            .map(|c| c.ask)
    }
    fn session_of_thread(&self, root: &str) -> Option<String> {
        MatrixStore::session_of_thread(self, root).ok().flatten()
    }
    fn about(&self, event_id: &str) -> Option<String> {
        MatrixStore::about(self, event_id).ok().flatten()
    }
    fn undo_offer(&self, event_id: &str) -> Option<AskRef> {
        MatrixStore::undo_offer(self, event_id).ok().flatten()
    }
    fn approval_card(&self, event_id: &str) -> Option<ApprovalRef> {
        self.approval_at(event_id).ok().flatten()
    }
    fn peek(&self, event_id: &str) -> Option<String> {
        self.peek_at(event_id).ok().flatten()
    }
}

/// How a peek is refreshed here, said on its last line.
pub const PEEK_HINT: &str = "react 🔄 to take it again";

/// An approval card's reactions: allow once, allow for the session, deny.
pub const APPROVAL_KEYS: [&str; 3] = ["✅", "🔁", "❌"];

/// What a reaction on an approval card decides: allow (`Some(scope)`) or deny (`None`);
/// another key decides nothing.
pub fn approval_decision(key: &str) -> Option<Option<ApprovalScope>> {
    match key.trim_end_matches('\u{fe0f}') {
        "✅" | "✔" | "👍" => Some(Some(ApprovalScope::Once)),
        "🔁" => Some(Some(ApprovalScope::Session)),
        "❌" | "👎" => Some(None),
        _ => None,
    }
}

impl Platform for Matrix {
    /// The thread's root event.
    type Place = String;
    const PREFIX: char = '!';
    const NAME: &'static str = "matrix";
    const UNDO_HINT: &'static str =
        "Meant as a steer? React with ↩️ to this message while the session has not read it.";
    const APPROVAL_HINT: &'static str = "react ✅ to allow it once, 🔁 to allow it for this session, ❌ to deny it; or reply to deny it with your reply as the reason";

    fn has_card(&self, ask: &AskRef) -> bool {
        let cards = self.store.cards_of(ask).unwrap_or_default();
        cards.iter().any(|c| !c.answered)
    }

    fn open_cards(&self) -> Vec<AskRef> {
        let cards = self.store.open_cards().unwrap_or_default();
        cards.into_iter().map(|c| c.ask).collect()
    }

    /// The session's thread, if it has one in this room.
    async fn place_of(&mut self, session_id: &str, info: Option<&SessionInfo>) -> Option<String> {
        let key = places::place_key(session_id, info, self.places);
        if key != session_id && self.placed(session_id).as_deref() != Some(key.as_str()) {
            // Remembered: its later news (and a restart's) find the repository's thread.
            let remembered = format!("placed:{session_id}:{}", self.room.room_id());
            self.remember(self.store.set_meta(&remembered, &key));
        }
        self.thread_root(session_id)
    }

    /// Post rendered content: split into messages, or one `.md` file when it would take
    /// more than a few. In `place`'s thread, or starting `about`'s thread when it has none.
    async fn post(
        &mut self,
        place: Option<String>,
        rendered: Rendered,
        about: Option<&str>,
        what: &str,
    ) {
        let mut thread = place.and_then(|root| self.in_thread(&root));
        match send::chunks(&rendered.html) {
            Some(chunks) => {
                for (html, plain) in chunks {
                    let op = MatrixOp::Message {
                        html,
                        plain,
                        thread: thread.clone(),
                    };
                    match self.outbox.send(op).await {
                        Ok(id) => self.sent(&id, &mut thread, about),
                        Err(e) => tracing::error!(error = %e, "matrix: could not post a {what}"),
                    }
                }
            }
            None => {
                let first = rendered.plain.lines().next().unwrap_or_default();
                let op = MatrixOp::File {
                    file_name: format!("{what}.md"),
                    bytes: rendered.plain.clone().into_bytes(),
                    caption: crate::chat::format::truncate(first, 300),
                    thread_root: thread.as_ref().map(|t| t.root.clone()),
                };
                match self.outbox.send(op).await {
                    Ok(id) => self.sent(&id, &mut thread, about),
                    Err(e) => {
                        tracing::error!(error = %e, "matrix: could not post a {what} as a file")
                    }
                }
            }
        }
    }

    /// One message in `place`'s thread (or the main timeline); a reply to it steers
    /// `session`. It never becomes a thread's root.
    async fn post_line(&mut self, place: Option<String>, line: Rendered, session: &str) {
        let mut thread = place.and_then(|root| self.in_thread(&root));
        let op = MatrixOp::Message {
            html: line.html,
            plain: line.plain,
            thread: thread.clone(),
        };
        match self.outbox.send(op).await {
            Ok(id) => {
                if let Some(t) = thread.as_mut() {
                    t.latest = id.clone();
                    self.latest.insert(t.root.to_string(), id.clone());
                }
                self.remember(self.store.set_about(id.as_str(), session));
            }
            Err(e) => tracing::error!(error = %e, "matrix: could not post a line"),
        }
    }

    async fn post_staff(
        &mut self,
        place: Option<String>,
        head: Rendered,
        lines: Vec<crate::relay::commands::StaffLine>,
    ) {
        self.post(place.clone(), head, None, "reply").await;
        for l in lines {
            self.post_line(place.clone(), l.line, &l.session).await;
        }
    }

    async fn post_choices(
        &mut self,
        place: Option<String>,
        head: Rendered,
        choices: Vec<(String, String)>,
    ) {
        self.post(place.clone(), head, None, "choices").await;
        for (label, target) in choices {
            self.post_line(place.clone(), crate::chat::replies::plain(label), &target)
                .await;
        }
    }

    async fn post_worker_line(
        &mut self,
        place: Option<String>,
        line: Rendered,
        worker: &WorkerRef,
    ) {
        // About `#<id>` (`gpu#<id>`): a reply steers that worker, `!close` in reply closes it.
        self.post_line(place, line, &worker.to_string()).await;
    }

    async fn post_card(&mut self, place: Option<String>, home: &str, ask: &Ask, card: AskCard) {
        let mut thread = place.and_then(|root| self.in_thread(&root));
        let op = MatrixOp::Message {
            html: card.html,
            plain: card.plain,
            thread: thread.clone(),
        };
        let event_id = match self.outbox.send(op).await {
            Ok(id) => id,
            Err(e) => {
                tracing::error!(ask = %ask.key(), error = %e, "matrix: could not post the ask card");
                return;
            }
        };
        self.sent(&event_id, &mut thread, Some(home));
        let root = thread.map_or_else(|| event_id.to_string(), |t| t.root.to_string());
        self.remember(self.store.add_card(&Card {
            event_id: event_id.to_string(),
            ask: ask.key(),
            session_id: ask.session_id.to_string(),
            thread_root: root,
            answered: false,
        }));
        // The option keys as the bot's own reactions: the human taps one to answer; on an
        // integration's card, 🧾 shows its Lead's diff.
        let diff = crate::chat::projects::integration_target(ask).map(|_| DIFF_KEY);
        for key in card.options.iter().filter_map(|o| o.key).chain(diff) {
            self.outbox.push(MatrixOp::React {
                event: event_id.clone(),
                key: key.to_string(),
            });
        }
    }

    /// The card in the session's thread, with the decisions as the bot's own reactions.
    async fn post_approval(&mut self, place: Option<String>, approval: &Approval, card: Rendered) {
        let mut thread = place.and_then(|root| self.in_thread(&root));
        let op = MatrixOp::Message {
            html: card.html,
            plain: card.plain,
            thread: thread.clone(),
        };
        let event_id = match self.outbox.send(op).await {
            Ok(id) => id,
            Err(e) => {
                tracing::error!(approval = %approval.id, error = %e, "matrix: could not post the approval card");
                return;
            }
        };
        self.sent(&event_id, &mut thread, Some(approval.session_id.as_str()));
        self.remember(
            self.store
                .add_approval_card(event_id.as_str(), &ApprovalRef::of(approval)),
        );
        for key in APPROVAL_KEYS {
            self.outbox.push(MatrixOp::React {
                event: event_id.clone(),
                key: key.to_string(),
            });
        }
    }

    /// Edit every card of an approval that ended (`m.replace`).
    async fn close_approval(&mut self, approval: &Approval, ended: Rendered) {
        for card in self
            .store
            .approval_cards_of(&ApprovalRef::of(approval))
            .unwrap_or_default()
        {
            let Ok(event) = OwnedEventId::try_from(card.as_str()) else {
                continue;
            };
            self.outbox.push(MatrixOp::Edit {
                event,
                html: ended.html.clone(),
                plain: ended.plain.clone(),
            });
            self.remember(self.store.close_approval_card(&card));
        }
    }

    async fn post_peek(&mut self, place: Option<String>, peek: &Peek) {
        let mut thread = place.and_then(|root| self.in_thread(&root));
        let rendered = crate::chat::peek::peek(peek, PEEK_HINT);
        let op = MatrixOp::Message {
            html: rendered.html,
            plain: rendered.plain,
            thread: thread.clone(),
        };
        let event_id = match self.outbox.send(op).await {
            Ok(id) => id,
            Err(e) => {
                tracing::error!(session = %peek.session_id, error = %e, "matrix: could not post the peek");
                return;
            }
        };
        self.sent(&event_id, &mut thread, None);
        let target = crate::chat::peek::target(peek);
        self.remember(self.store.add_peek(event_id.as_str(), &target));
        self.outbox.push(MatrixOp::React {
            event: event_id,
            key: "🔄".to_string(),
        });
    }

    async fn post_file(&mut self, place: Option<String>, name: String, bytes: Vec<u8>) {
        let mut thread = place.and_then(|root| self.in_thread(&root));
        let op = MatrixOp::File {
            file_name: name,
            bytes,
            caption: String::new(),
            thread_root: thread.as_ref().map(|t| t.root.clone()),
        };
        match self.outbox.send(op).await {
            Ok(id) => self.sent(&id, &mut thread, None),
            Err(e) => tracing::error!(error = %e, "matrix: could not post a file"),
        }
    }

    async fn close_place(&mut self, session: &str) {
        if self.placed(session).is_some() {
            return; // A repository's thread: others may still work there.
        }
        let room = self.room.room_id().to_string();
        self.remember(
            self.store
                .set_thread_ended(session, &room, true)
                .map(|_| ()),
        );
    }

    async fn reopen_place(&mut self, session: &str) -> bool {
        if self.placed(session).is_some() {
            return false;
        }
        let room = self.room.room_id().to_string();
        self.store
            .set_thread_ended(session, &room, false)
            .unwrap_or(false)
    }

    fn open_places(&self) -> Vec<String> {
        let room = self.room.room_id().to_string();
        self.store.open_threads(&room).unwrap_or_default()
    }

    fn open_approvals(&self) -> Vec<ApprovalRef> {
        self.store.open_approvals().unwrap_or_default()
    }

    /// Edit every card of an answered ask (`m.replace`).
    async fn close_cards(&mut self, ask: &Ask, answered: Rendered) {
        for card in self.store.cards_of(&ask.key()).unwrap_or_default() {
            if card.answered {
                continue;
            }
            let Ok(event) = OwnedEventId::try_from(card.event_id.as_str()) else {
                continue;
            };
            self.outbox.push(MatrixOp::Edit {
                event,
                html: answered.html.clone(),
                plain: answered.plain.clone(),
            });
            self.remember(self.store.mark_answered(&card.event_id));
        }
    }

    /// Said in the thread, with the bot's own ↩️ on it: the human taps it to undo.
    async fn offer_undo(
        &mut self,
        place: Option<String>,
        session: &str,
        ask: &AskRef,
        said: Rendered,
    ) {
        let mut thread = place.and_then(|root| self.in_thread(&root));
        let op = MatrixOp::Message {
            html: said.html,
            plain: said.plain,
            thread: thread.clone(),
        };
        match self.outbox.send(op).await {
            Ok(event) => {
                self.sent(&event, &mut thread, Some(session));
                self.remember(self.store.set_undo_offer(event.as_str(), ask));
                self.outbox.push(MatrixOp::React {
                    event,
                    key: UNDO_KEY.to_string(),
                });
            }
            Err(e) => {
                tracing::error!(ask = %ask, error = %e, "matrix: could not say what answered the ask")
            }
        }
    }

    /// Edit every open card of the ask (`m.replace`); without `buttons` the bot takes its
    /// option reactions back (redacts them), with them it adds them again.
    async fn mark_cards(&mut self, ask: &Ask, rendered: Rendered, buttons: bool) {
        let keys: Vec<String> = crate::chat::render::ask_card(ask, None)
            .options
            .iter()
            .filter_map(|o| o.key.map(str::to_string))
            .collect();
        for card in self.store.cards_of(&ask.key()).unwrap_or_default() {
            if card.answered {
                continue;
            }
            let Ok(event) = OwnedEventId::try_from(card.event_id.as_str()) else {
                continue;
            };
            self.outbox.push(MatrixOp::Edit {
                event: event.clone(),
                html: rendered.html.clone(),
                plain: rendered.plain.clone(),
            });
            if buttons {
                for key in &keys {
                    self.outbox.push(MatrixOp::React {
                        event: event.clone(),
                        key: key.clone(),
                    });
                }
            } else if !keys.is_empty() {
                self.outbox.push(MatrixOp::Unreact {
                    event,
                    me: self.me.clone(),
                });
            }
        }
    }

    /// No thread in this room yet.
    fn needs_place(&self, session: &str) -> bool {
        self.thread_root(session).is_none()
    }

    /// In the thread it was written in, else in the session's own thread.
    async fn steered(&mut self, place: Option<String>, session: &str, confirmation: Rendered) {
        let place = place.or_else(|| self.thread_root(session));
        self.post(place, confirmation, Some(session), "reply").await;
    }

    fn place_key_of(&self, session: &str) -> String {
        self.placed(session).unwrap_or_else(|| session.to_string())
    }

    fn last_said(&self, key: &str) -> Option<String> {
        let key = format!("said:{key}:{}", self.room.room_id());
        self.store.meta(&key).ok().flatten()
    }

    fn set_last_said(&mut self, key: &str, said: &str) {
        let key = format!("said:{key}:{}", self.room.room_id());
        self.remember(self.store.set_meta(&key, said));
    }

    fn last_report(&self, store: &str) -> Option<u64> {
        let key = format!("last_report:{store}:{}", self.room.room_id());
        match self.store.meta(&key) {
            Ok(v) => v.and_then(|v| v.parse().ok()),
            Err(e) => {
                tracing::error!(error = %e, "matrix: could not read the last report posted");
                None
            }
        }
    }

    fn set_last_report(&mut self, store: &str, id: u64) {
        let key = format!("last_report:{store}:{}", self.room.room_id());
        self.remember(self.store.set_meta(&key, &id.to_string()));
    }

    /// Written in the worker's thread: the core's news shows there.
    fn shows_in(&self, session: &str, place: Option<&String>) -> bool {
        place.is_some() && self.thread_root(session).as_ref() == place
    }
}

impl Matrix {
    /// The root of the session's thread in this room (its repository's, `per_project`), if
    /// it has one.
    pub(super) fn thread_root(&self, session_id: &str) -> Option<String> {
        let key = self.place_key_of(session_id);
        self.store
            .thread(&key, self.room.room_id().as_str())
            .ok()
            .flatten()
    }

    /// The repository's place key `session` was put in (`per_project`), if it was.
    fn placed(&self, session: &str) -> Option<String> {
        let key = format!("placed:{session}:{}", self.room.room_id());
        self.store.meta(&key).ok().flatten()
    }

    /// Where to reply in the thread starting at `root`.
    fn in_thread(&self, root: &str) -> Option<InThread> {
        let root = OwnedEventId::try_from(root).ok()?;
        let latest = self
            .latest
            .get(root.as_str())
            .cloned()
            .unwrap_or(root.clone());
        Some(InThread { root, latest })
    }

    /// Record a sent event: in its thread (as the latest), or as the root of `about`'s
    /// new thread when it has none yet; and what session it is about.
    fn sent(&mut self, id: &OwnedEventId, thread: &mut Option<InThread>, about: Option<&str>) {
        match thread {
            Some(t) => {
                t.latest = id.clone();
                self.latest.insert(t.root.to_string(), id.clone());
            }
            None => {
                if let Some(session) = about {
                    // The session's own thread, or its repository's (`per_project`).
                    let key = self.place_key_of(session);
                    self.remember(self.store.set_thread(
                        &key,
                        self.room.room_id().as_str(),
                        id.as_str(),
                    ));
                    *thread = Some(InThread {
                        root: id.clone(),
                        latest: id.clone(),
                    });
                }
            }
        }
        if let Some(session) = about {
            self.remember(self.store.set_about(id.as_str(), session));
        }
    }

    pub(super) fn remember(&self, result: rusqlite::Result<()>) {
        if let Err(e) = result {
            tracing::error!(error = %e, "matrix: could not save the bridge state");
        }
    }
}
