//! The Matrix bridge's actor: it owns the bridge state and reacts to two streams, the
//! core's events (asks, answers, reports, sessions, pairings) and the room's events
//! (commands, thread messages, replies, reactions, invites). Everything about one Pi
//! session goes into that session's thread; the first message about it (a card, a report,
//! a pairing's start) is the thread's root. What happens in a pairing goes into the
//! worker's thread, and so do the supervisor's asks. Requests to the core and sends to
//! the room are awaited here in order, so one event is fully handled before the next.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use matrix_sdk::ruma::{OwnedEventId, OwnedRoomId};
use matrix_sdk::{Client, Room};
use shepherd_core::client::{ClientError, Sent};
use shepherd_core::protocol::{
    Ask, AskState, ErrorCode, Pairing, PairingChange, Report, ServerMsg, SessionInfo, Verdict,
    requests,
};
use tokio_util::sync::CancellationToken;

use super::decide::{self, Action, Incoming, IncomingKind, Known};
use super::events::MatrixEvent;
use super::send::{self, InThread};
use super::store::{Card, MatrixStore};
use crate::chat::access::Allowlist;
use crate::chat::commands::{self, ChatCommand};
use crate::chat::pairing;
use crate::chat::render::{self, Rendered};
use crate::chat::replies::{already_answered_text, plain, steer_error};
use crate::chat::split;
use crate::core_link::{CommandReply, CoreEvent, CoreLink};
use crate::supervision::{ActivePairings, Here};

/// The bridge's state and its ways out.
pub struct Bridge {
    pub client: Client,
    pub room: Room,
    /// The bot's own user id.
    pub me: String,
    pub store: MatrixStore,
    pub core: CoreLink,
    pub allow: Allowlist<String>,
    pub sessions: HashMap<String, SessionInfo>,
    /// Who supervises whom now: a supervisor's asks go to its worker's thread.
    pub pairings: ActivePairings,
    /// The latest event the bot sent in each thread (by root), for the fallback reply.
    pub latest: HashMap<String, OwnedEventId>,
    pub audit_log: PathBuf,
    pub shutdown: CancellationToken,
}

impl Known for MatrixStore {
    fn card(&self, event_id: &str) -> Option<(u64, bool)> {
        self.card_at(event_id)
            .ok()
            .flatten()
            .map(|c| (c.ask_id, c.answered))
    }
    fn open_card_in_thread(&self, root: &str) -> Option<u64> {
        MatrixStore::open_card_in_thread(self, root)
            .ok()
            .flatten()
            .map(|c| c.ask_id)
    }
    fn session_of_thread(&self, root: &str) -> Option<String> {
        MatrixStore::session_of_thread(self, root).ok().flatten()
    }
    fn about(&self, event_id: &str) -> Option<String> {
        MatrixStore::about(self, event_id).ok().flatten()
    }
}

impl Bridge {
    // ---- the core's side -----------------------------------------------------------

    pub async fn on_core(&mut self, event: CoreEvent) {
        match event {
            CoreEvent::Connected => {
                if let Err(e) = self.resync().await {
                    tracing::warn!(error = %e, "matrix: resynchronising with the core failed");
                }
            }
            CoreEvent::Disconnected(why) => {
                tracing::warn!(%why, "matrix: lost the core; reconnecting")
            }
            CoreEvent::Event(msg) => match *msg {
                ServerMsg::AskOpened { ask } => self.post_card(&ask).await,
                ServerMsg::AskAnswered { ask } => self.close_cards(&ask).await,
                ServerMsg::ReportPosted { report } => self.post_report(&report).await,
                ServerMsg::SessionJoined { session }
                | ServerMsg::SessionChanged { session }
                | ServerMsg::SessionLeft { session } => {
                    self.sessions.insert(session.id.to_string(), session);
                }
                ServerMsg::PairingEvent {
                    change,
                    pairing,
                    verdict,
                    by,
                } => self.on_pairing(change, pairing, verdict, by).await,
                _ => {}
            },
        }
    }

    /// After (re)connecting: learn the sessions, post cards for open asks that have none,
    /// and close cards whose ask was answered while we were away.
    async fn resync(&mut self) -> Result<(), ClientError> {
        let snapshot = self.core.snapshot().await?;
        self.sessions = snapshot.sessions;
        self.pairings.reset(snapshot.pairings);
        for card in self.store.open_cards().unwrap_or_default() {
            if let Some(ask) = snapshot.answered.get(&card.ask_id) {
                self.close_cards(ask).await;
            }
        }
        for ask in &snapshot.open {
            if self
                .store
                .cards_of(ask.id.get())
                .unwrap_or_default()
                .is_empty()
            {
                self.post_card(ask).await;
            }
        }
        Ok(())
    }

    /// The session's thread, if it has one in this room.
    fn thread_of(&self, session_id: &str) -> Option<InThread> {
        let root = self
            .store
            .thread(session_id, self.room.room_id().as_str())
            .ok()
            .flatten()?;
        self.in_thread(&root)
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
                    self.remember(self.store.set_thread(
                        session,
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

    async fn post_card(&mut self, ask: &Ask) {
        if !self
            .store
            .cards_of(ask.id.get())
            .unwrap_or_default()
            .is_empty()
        {
            return; // Already shown (an event after a resync).
        }
        let session = self.sessions.get(ask.session_id.as_str()).cloned();
        let card = render::ask_card(ask, session.as_ref());
        let home = self.pairings.home_of(&ask.session_id).to_string();
        let mut thread = self.thread_of(&home);
        let sent = send::message(
            &self.room,
            &self.shutdown,
            &card.html,
            &card.plain,
            thread.as_ref(),
        )
        .await;
        let event_id = match sent {
            Ok(id) => id,
            Err(e) => {
                tracing::error!(ask = %ask.id, error = %e, "matrix: could not post the ask card");
                return;
            }
        };
        self.sent(&event_id, &mut thread, Some(&home));
        let root = thread.map_or_else(|| event_id.to_string(), |t| t.root.to_string());
        self.remember(self.store.add_card(&Card {
            event_id: event_id.to_string(),
            ask_id: ask.id.get(),
            session_id: ask.session_id.to_string(),
            thread_root: root,
            answered: false,
        }));
        // The option keys as the bot's own reactions: the human taps one to answer.
        for key in card.options.iter().filter_map(|o| o.key) {
            if let Err(e) = send::react(&self.room, &self.shutdown, &event_id, key).await {
                tracing::warn!(ask = %ask.id, error = %e, "matrix: could not add an option reaction");
            }
        }
    }

    /// Edit every card of an answered ask (`m.replace`) to show the answer and who gave it.
    async fn close_cards(&mut self, ask: &Ask) {
        let session = self.sessions.get(ask.session_id.as_str()).cloned();
        let rendered = render::answered_card_with(ask, session.as_ref());
        for card in self.store.cards_of(ask.id.get()).unwrap_or_default() {
            if card.answered {
                continue;
            }
            let Ok(event_id) = OwnedEventId::try_from(card.event_id.as_str()) else {
                continue;
            };
            match send::edit(
                &self.room,
                &self.shutdown,
                &event_id,
                &rendered.html,
                &rendered.plain,
            )
            .await
            {
                Ok(_) => self.remember(self.store.mark_answered(&card.event_id)),
                Err(e) => {
                    tracing::error!(ask = %ask.id, error = %e, "matrix: could not edit the card")
                }
            }
        }
    }

    async fn post_report(&mut self, report: &Report) {
        let session = self.sessions.get(report.session_id.as_str()).cloned();
        let rendered = render::report(report, session.as_ref());
        let thread = self.thread_of(&report.session_id);
        self.post(rendered, thread, Some(&report.session_id), "report")
            .await;
    }

    /// A pairing changed: remember who supervises whom, and post what the human wants to
    /// see in the worker's thread.
    async fn on_pairing(
        &mut self,
        change: PairingChange,
        pairing: Pairing,
        verdict: Option<Verdict>,
        by: Option<String>,
    ) {
        self.pairings.apply(&pairing);
        let Some(rendered) = pairing::event(change, &pairing, verdict.as_ref(), by.as_deref())
        else {
            return;
        };
        let thread = self.thread_of(&pairing.worker_id);
        self.post(rendered, thread, Some(&pairing.worker_id), "pairing")
            .await;
    }

    /// Post rendered content: split into messages, or one `.md` file when it would take
    /// more than a few. In `thread`, or starting `about`'s thread when it has none.
    async fn post(
        &mut self,
        rendered: Rendered,
        mut thread: Option<InThread>,
        about: Option<&str>,
        what: &str,
    ) {
        match send::chunks(&rendered.html) {
            Some(chunks) => {
                for (html, plain) in chunks {
                    match send::message(&self.room, &self.shutdown, &html, &plain, thread.as_ref())
                        .await
                    {
                        Ok(id) => self.sent(&id, &mut thread, about),
                        Err(e) => tracing::error!(error = %e, "matrix: could not post a {what}"),
                    }
                }
            }
            None => {
                let first = rendered.plain.lines().next().unwrap_or_default();
                let caption = crate::chat::format::truncate(first, 300);
                let root = thread.as_ref().map(|t| t.root.clone());
                let result = send::file(
                    &self.room,
                    &self.shutdown,
                    &format!("{what}.md"),
                    rendered.plain.clone().into_bytes(),
                    &caption,
                    root.as_deref(),
                )
                .await;
                match result {
                    Ok(id) => self.sent(&id, &mut thread, about),
                    Err(e) => {
                        tracing::error!(error = %e, "matrix: could not post a {what} as a file")
                    }
                }
            }
        }
    }

    /// Reply in a thread (by root) or the main timeline.
    async fn say(&mut self, thread: Option<&str>, rendered: Rendered) {
        let thread = thread.and_then(|root| self.in_thread(root));
        self.post(rendered, thread, None, "reply").await;
    }

    // ---- the room's side -----------------------------------------------------------

    pub async fn on_matrix(&mut self, event: MatrixEvent) {
        match event {
            MatrixEvent::Invite { room, inviter } => self.on_invite(room, inviter),
            MatrixEvent::Incoming(incoming) => {
                let action = decide::decide(&incoming, &self.me, &self.allow, &self.store);
                self.act(action, &incoming).await;
            }
        }
    }

    /// Join rooms allowed users invite the bot to; refuse (and audit) other invites.
    fn on_invite(&mut self, room: OwnedRoomId, inviter: String) {
        if !self.allow.allows_user(&inviter) {
            self.audit(
                &inviter,
                room.as_str(),
                "invite",
                &format!("inviter {inviter} is not in allowed_users"),
            );
            return;
        }
        tracing::info!(%room, %inviter, "matrix: joining a room an allowed user invited the bot to");
        let (client, shutdown) = (self.client.clone(), self.shutdown.clone());
        // Synapse may send the invite before the bot can join: retry for a while.
        tokio::spawn(async move {
            let mut delay = Duration::from_secs(1);
            loop {
                match client.join_room_by_id(&room).await {
                    Ok(_) => return,
                    Err(e) if delay > Duration::from_secs(300) => {
                        tracing::warn!(%room, error = %e, "matrix: could not join the room");
                        return;
                    }
                    Err(_) => {}
                }
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(delay) => {}
                }
                delay *= 2;
            }
        });
    }

    async fn act(&mut self, action: Action, incoming: &Incoming) {
        let by = decide::who(&incoming.sender);
        match action {
            Action::Ignore => {}
            Action::Refuse { reason } => {
                let what = match incoming.kind {
                    IncomingKind::Text { .. } => "message",
                    IncomingKind::Reaction { .. } => "reaction",
                };
                self.audit(&incoming.sender, &incoming.room, what, &reason);
            }
            Action::Command { command, thread } => {
                self.on_command(command, thread.as_deref(), &by).await
            }
            Action::Answer {
                ask_id,
                text,
                thread,
            } => {
                // `2`, `#2`, `2️⃣` or an option's text picks that option; anything else is
                // free text.
                let answer = match self.ask(ask_id).await {
                    Some(ask) => commands::answer_text(&ask, &text).unwrap_or(text),
                    None => text,
                };
                self.answer(ask_id, answer, &by, thread.as_deref()).await;
            }
            Action::React { ask_id, key, card } => {
                let Some(ask) = self.ask(ask_id).await else {
                    return;
                };
                let Some(answer) = commands::reaction_option(&ask, &key) else {
                    return; // Not an option key (a 👍, say).
                };
                if ask.state == AskState::Answered {
                    return; // A late tap on an answered card: the card already says so.
                }
                let thread = self
                    .store
                    .card_at(&card)
                    .ok()
                    .flatten()
                    .map(|c| c.thread_root);
                self.answer(ask_id, answer, &by, thread.as_deref()).await;
            }
            Action::Steer {
                session,
                text,
                thread,
            } => self.steer(&session, &text, &by, thread.as_deref()).await,
            Action::Help { thread } => {
                let help = render::help('!');
                let note = "To answer a question or steer a session, write in its thread, or use !steer &lt;session&gt; &lt;text&gt;.";
                let rendered = Rendered {
                    html: format!("{note}\n\n{}", help.html),
                    plain: format!("{}\n\n{}", split::text_of(note), help.plain),
                };
                self.say(thread.as_deref(), rendered).await;
            }
        }
    }

    /// Write a refusal to the audit log (one JSON line) and the log.
    fn audit(&self, user: &str, room: &str, what: &str, reason: &str) {
        tracing::warn!(target: "audit", user, room, what, reason, "matrix: ignored");
        let line = serde_json::json!({
            "time_ms": shepherd_core::store::now_ms(),
            "bridge": "matrix",
            "user": user,
            "room": room,
            "what": what,
            "reason": reason,
        });
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.audit_log)
        {
            let _ = writeln!(f, "{line}");
        }
    }

    async fn on_command(&mut self, command: ChatCommand, thread: Option<&str>, by: &str) {
        // In a session's thread, the pairing commands may leave out the session.
        let session = thread.and_then(|root| self.store.session_of_thread(root).ok()?);
        let here = Here {
            session: session.as_deref(),
            by,
        };
        match self.core.answer_command(command, '!', here).await {
            CommandReply::Say(reply) => self.say(thread, reply).await,
            CommandReply::Steer { session, text } => self.steer(&session, &text, by, thread).await,
            CommandReply::Pairing {
                pairing,
                reply,
                announced,
            } => {
                self.pairings.apply(&pairing);
                // Written in the worker's thread: the core's pairing_event says it there.
                let worker_thread = self
                    .store
                    .thread(&pairing.worker_id, self.room.room_id().as_str())
                    .ok()
                    .flatten();
                if !(announced && thread.is_some() && worker_thread.as_deref() == thread) {
                    self.say(thread, reply).await;
                }
            }
        }
    }

    /// An ask, from the core.
    async fn ask(&mut self, ask_id: u64) -> Option<Ask> {
        let reply = self
            .core
            .call(requests::ListAsks { id: 0, all: true })
            .await
            .ok()?;
        reply.into_iter().find(|a| a.id == ask_id)
    }

    async fn answer(&mut self, ask_id: u64, answer: String, by: &str, thread: Option<&str>) {
        let result = self
            .core
            .call(requests::Answer {
                id: 0,
                ask: ask_id.into(),
                text: answer.clone(),
                by: Some(by.to_string()),
            })
            .await;
        match result {
            Ok(_) => {} // The card's edit (from the ask_answered event) is the confirmation.
            Err(e) if e.code() == Some(ErrorCode::AlreadyAnswered) => {
                self.say(thread, plain(already_answered_text(&e))).await;
            }
            Err(e) => self.say(thread, plain(format!("Not answered: {e}"))).await,
        }
    }

    async fn steer(&mut self, session: &str, text: &str, by: &str, thread: Option<&str>) {
        let result = self
            .core
            .call(requests::Send {
                id: 0,
                to: session.to_string(),
                text: text.to_string(),
                by: Some(by.to_string()),
            })
            .await;
        let reply = match result {
            Ok(Sent {
                session_name,
                connected,
                session_id,
                ..
            }) => {
                let how = if connected {
                    "delivered"
                } else {
                    "queued until it reconnects"
                };
                let r = plain(format!("➡️ steered {session_name}: {how}"));
                // In the thread it was written in, else in the session's own thread.
                let thread = match thread {
                    Some(root) => self.in_thread(root),
                    None => self.thread_of(&session_id),
                };
                self.post(r, thread, Some(&session_id), "reply").await;
                return;
            }
            Err(e) => plain(steer_error(&e)),
        };
        self.say(thread, reply).await;
    }

    fn remember(&self, result: rusqlite::Result<()>) {
        if let Err(e) = result {
            tracing::error!(error = %e, "matrix: could not save the bridge state");
        }
    }
}
