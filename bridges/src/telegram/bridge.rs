//! The Telegram bridge's actor: it owns the bridge state and reacts to two streams, the
//! core's events (asks, answers, reports, sessions, pairings) and Telegram's updates
//! (commands, replies, button presses). Requests to the core and to Telegram are awaited
//! here in order, so one update is fully handled before the next. What happens in a
//! pairing is posted in the worker's topic (in a private chat, naming the worker), and a
//! supervisor's asks go there too.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

use shepherd_core::client::{ClientError, Sent};
use shepherd_core::protocol::{
    Ask, ErrorCode, Pairing, PairingChange, Report, ServerMsg, SessionInfo, Verdict, requests,
};
use teloxide::Bot;
use teloxide::payloads::{AnswerCallbackQuerySetters, EditForumTopicSetters};
use teloxide::prelude::Requester;
use teloxide::types::{
    CallbackQuery, ChatId, InlineKeyboardButton, InlineKeyboardMarkup, Message, MessageId,
    ThreadId, Update, UpdateKind, User,
};

use super::outbox::{OutboxHandle, OutboxOp};
use super::store::{BridgeStore, Card};
use crate::chat::commands::{self, ChatCommand};
use crate::chat::pairing;
use crate::chat::render::{self, Rendered};
use crate::chat::replies::{already_answered_text, plain, steer_error};
use crate::chat::split;
use crate::core_link::{CommandReply, CoreEvent, CoreLink};
use crate::supervision::{ActivePairings, Here};

/// Telegram's message limit (after entity parsing).
pub const MAX_TEXT: usize = 4096;
/// More chunks than this and the content goes as a `.md` document.
pub const MAX_MESSAGES: usize = 3;

/// The bridge's state and its ways out.
pub struct Bridge {
    pub bot: Bot,
    pub outbox: OutboxHandle,
    pub store: BridgeStore,
    pub core: CoreLink,
    pub chat_id: i64,
    pub allowed_users: Vec<i64>,
    pub username: String,
    /// Whether the chat has forum topics: false for private chats, learned for groups.
    pub forum: Option<bool>,
    pub sessions: HashMap<String, SessionInfo>,
    /// Who supervises whom now: a supervisor's asks go to its worker's topic.
    pub pairings: ActivePairings,
    pub audit_log: PathBuf,
}

impl Bridge {
    // ---- the core's side -----------------------------------------------------------

    pub async fn on_core(&mut self, event: CoreEvent) {
        match event {
            CoreEvent::Connected => {
                if let Err(e) = self.resync().await {
                    tracing::warn!(error = %e, "telegram: resynchronising with the core failed");
                }
            }
            CoreEvent::Disconnected(why) => {
                tracing::warn!(%why, "telegram: lost the core; reconnecting")
            }
            CoreEvent::Event(msg) => match *msg {
                ServerMsg::AskOpened { ask } => self.post_card(&ask).await,
                ServerMsg::AskAnswered { ask } => self.close_cards(&ask).await,
                ServerMsg::ReportPosted { report } => self.post_report(&report).await,
                ServerMsg::SessionJoined { session } | ServerMsg::SessionChanged { session } => {
                    self.session_changed(session).await
                }
                ServerMsg::SessionLeft { session } => {
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
        let rendered = render::ask_card(ask, session.as_ref());
        let keyboard = option_keyboard(ask);
        let home = self.pairings.home_of(&ask.session_id).to_string();
        let thread = self.topic_for(&home).await;
        match self
            .outbox
            .send(
                self.chat_id,
                thread,
                rendered.html,
                rendered.plain,
                keyboard,
            )
            .await
        {
            Ok(message_id) => {
                let card = Card {
                    ask_id: ask.id.get(),
                    chat_id: self.chat_id,
                    message_id,
                    answered: false,
                };
                self.remember(self.store.add_card(&card));
                self.remember(
                    self.store
                        .set_about(self.chat_id, message_id, &ask.session_id),
                );
            }
            Err(e) => {
                tracing::error!(ask = %ask.id, error = %e, "telegram: could not post the ask card")
            }
        }
    }

    /// Edit every card of an answered ask to show the answer and who gave it.
    async fn close_cards(&mut self, ask: &Ask) {
        let session = self.sessions.get(ask.session_id.as_str()).cloned();
        let rendered = render::answered_card_with(ask, session.as_ref());
        for card in self.store.cards_of(ask.id.get()).unwrap_or_default() {
            if card.answered {
                continue;
            }
            self.outbox.push(OutboxOp::Edit {
                chat: card.chat_id,
                message: card.message_id,
                html: rendered.html.clone(),
                plain: rendered.plain.clone(),
                keyboard: None,
            });
            self.remember(self.store.mark_answered(card.chat_id, card.message_id));
        }
    }

    async fn post_report(&mut self, report: &Report) {
        let session = self.sessions.get(report.session_id.as_str()).cloned();
        let rendered = render::report(report, session.as_ref());
        let thread = self.topic_for(&report.session_id).await;
        self.post(thread, rendered, Some(&report.session_id), "report")
            .await;
    }

    /// A pairing changed: remember who supervises whom, and post what the human wants to
    /// see in the worker's topic.
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
        let thread = self.topic_for(&pairing.worker_id).await;
        self.post(thread, rendered, Some(&pairing.worker_id), "pairing")
            .await;
    }

    /// Whether what is posted in `session`'s topic shows in `thread` (of this chat): its
    /// own topic, or anywhere in a chat without topics.
    fn shows_in(&self, session: &str, thread: Option<i32>) -> bool {
        match self.forum {
            Some(false) => true,
            Some(true) => {
                thread.is_some()
                    && self
                        .store
                        .topic(session, self.chat_id)
                        .ok()
                        .flatten()
                        .map(|(t, _)| t)
                        == thread
            }
            None => false,
        }
    }

    async fn session_changed(&mut self, session: SessionInfo) {
        let renamed = self
            .sessions
            .get(session.id.as_str())
            .is_some_and(|old| render::topic_name(old) != render::topic_name(&session));
        self.sessions
            .insert(session.id.to_string(), session.clone());
        if !renamed || self.forum != Some(true) {
            return;
        }
        if let Ok(Some((thread, name))) = self.store.topic(&session.id, self.chat_id) {
            let new_name = render::topic_name(&session);
            if new_name != name {
                let req = self
                    .bot
                    .edit_forum_topic(ChatId(self.chat_id), ThreadId(MessageId(thread)))
                    .name(new_name.clone());
                match req.await {
                    Ok(_) => self.remember(self.store.set_topic(
                        &session.id,
                        self.chat_id,
                        thread,
                        &new_name,
                    )),
                    Err(e) => {
                        tracing::warn!(error = %e, "telegram: could not rename the session's topic")
                    }
                }
            }
        }
    }

    /// The forum topic of a session, created on first need; `None` outside forums.
    async fn topic_for(&mut self, session_id: &str) -> Option<i32> {
        if self.forum == Some(false) {
            return None;
        }
        if let Ok(Some((thread, _))) = self.store.topic(session_id, self.chat_id) {
            return Some(thread);
        }
        let name = match self.sessions.get(session_id) {
            Some(s) => render::topic_name(s),
            None => session_id.chars().take(32).collect(),
        };
        match self
            .bot
            .create_forum_topic(ChatId(self.chat_id), name.clone())
            .await
        {
            Ok(topic) => {
                self.forum = Some(true);
                let thread = topic.thread_id.0.0;
                self.remember(
                    self.store
                        .set_topic(session_id, self.chat_id, thread, &name),
                );
                Some(thread)
            }
            Err(e) => {
                tracing::info!(error = %e, "telegram: the chat has no forum topics; messages carry the session's name");
                self.forum = Some(false);
                None
            }
        }
    }

    /// Post rendered content: split below Telegram's limit, or as a `.md` document when it
    /// would take more than a few messages. Remembers which session it is about.
    async fn post(
        &mut self,
        thread: Option<i32>,
        rendered: Rendered,
        about: Option<&str>,
        what: &str,
    ) {
        let ids = if split::as_document(&rendered.html, MAX_TEXT, MAX_MESSAGES) {
            let caption = rendered.html.lines().next().unwrap_or_default().to_string();
            let caption = split::split_html(&caption, 1000)
                .into_iter()
                .next()
                .unwrap_or_default();
            let bytes = rendered.plain.clone().into_bytes();
            vec![
                self.outbox
                    .document(self.chat_id, thread, format!("{what}.md"), bytes, caption)
                    .await,
            ]
        } else {
            let mut ids = Vec::new();
            for chunk in split::split_html(&rendered.html, MAX_TEXT) {
                let plain = chunk.clone();
                ids.push(
                    self.outbox
                        .send(self.chat_id, thread, chunk, plain, None)
                        .await,
                );
            }
            ids
        };
        for id in ids {
            match (id, about) {
                (Ok(id), Some(session)) => {
                    self.remember(self.store.set_about(self.chat_id, id, session))
                }
                (Ok(_), None) => {}
                (Err(e), _) => tracing::error!(error = %e, "telegram: could not post a {what}"),
            }
        }
    }

    async fn say(&mut self, thread: Option<i32>, rendered: Rendered) {
        self.post(thread, rendered, None, "reply").await;
    }

    // ---- Telegram's side -----------------------------------------------------------

    pub async fn on_update(&mut self, update: Update) {
        match update.kind {
            UpdateKind::Message(msg) => self.on_message(msg).await,
            UpdateKind::CallbackQuery(query) => self.on_callback(query).await,
            _ => {}
        }
    }

    /// Whether a user in a chat may use the bot; refusals go to the audit log.
    fn admit(&self, user: Option<&User>, chat: i64, what: &str) -> bool {
        let user_id = user.map(|u| u.id.0 as i64);
        let allowed_user = user_id.is_some_and(|id| self.allowed_users.contains(&id));
        if allowed_user && chat == self.chat_id {
            return true;
        }
        let reason = if !allowed_user {
            "user not in telegram.allowed_users"
        } else {
            "chat is not telegram.chat_id"
        };
        tracing::warn!(target: "audit", user = ?user_id, chat, what, reason, "telegram: ignored");
        let line = serde_json::json!({
            "time_ms": shepherd_core::store::now_ms(),
            "bridge": "telegram",
            "user": user_id,
            "username": user.and_then(|u| u.username.clone()),
            "chat": chat,
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
        false
    }

    async fn on_message(&mut self, msg: Message) {
        if !self.admit(msg.from.as_ref(), msg.chat.id.0, "message") {
            return;
        }
        let Some(text) = msg.text().map(str::to_string) else {
            return;
        };
        let thread = msg.thread_id.map(|t| t.0.0);
        let by = who(msg.from.as_ref());
        if let Some(command) = commands::parse(&text, '/', Some(&self.username)) {
            // The session this is written about: its topic's, else the message replied to.
            let topic = thread.and_then(|t| self.store.session_of_topic(self.chat_id, t).ok()?);
            let replied = msg
                .reply_to_message()
                .filter(|r| r.id.0 != thread.unwrap_or(0))
                .and_then(|r| self.store.about(self.chat_id, r.id.0).ok()?);
            let here = topic.or(replied);
            self.on_command(command, thread, here.as_deref(), &by).await;
            return;
        }
        // A reply to a card answers it; a reply to anything about a session steers it.
        if let Some(replied) = msg.reply_to_message()
            && replied.id.0 != thread.unwrap_or(0)
        {
            let replied_id = replied.id.0;
            if let Ok(Some(card)) = self.store.card_at(self.chat_id, replied_id) {
                self.answer(card.ask_id, &text, &by, thread).await;
                return;
            }
            if let Ok(Some(session)) = self.store.about(self.chat_id, replied_id) {
                self.steer(&session, &text, &by, thread).await;
                return;
            }
        }
        if let Some(t) = thread
            && let Ok(Some(session)) = self.store.session_of_topic(self.chat_id, t)
        {
            self.steer(&session, &text, &by, thread).await;
            return;
        }
        let help = render::help('/');
        let note = "To steer a session, reply to one of its messages or use /steer &lt;session&gt; &lt;text&gt;.";
        self.say(
            thread,
            Rendered {
                html: format!("{note}\n\n{}", help.html),
                plain: help.plain,
            },
        )
        .await;
    }

    async fn on_command(
        &mut self,
        command: ChatCommand,
        thread: Option<i32>,
        session: Option<&str>,
        by: &str,
    ) {
        let here = Here { session, by };
        match self.core.answer_command(command, '/', here).await {
            CommandReply::Say(reply) => self.say(thread, reply).await,
            CommandReply::Steer { session, text } => self.steer(&session, &text, by, thread).await,
            CommandReply::Pairing {
                pairing,
                reply,
                announced,
            } => {
                self.pairings.apply(&pairing);
                // The worker's topic gets the same from the core's pairing_event.
                if !(announced && self.shows_in(&pairing.worker_id, thread)) {
                    self.say(thread, reply).await;
                }
            }
        }
    }

    async fn on_callback(&mut self, query: CallbackQuery) {
        let chat = query.message.as_ref().map(|m| m.chat().id.0).unwrap_or(0);
        if !self.admit(Some(&query.from), chat, "button") {
            let _ = self.bot.answer_callback_query(query.id.clone()).await;
            return;
        }
        let by = who(Some(&query.from));
        let parsed = query.data.as_deref().and_then(parse_callback);
        let text = match parsed {
            Some((ask_id, option)) => match self.option_text(ask_id, option).await {
                Some(answer) => match self
                    .core
                    .call(requests::Answer {
                        id: 0,
                        ask: ask_id.into(),
                        text: answer.clone(),
                        by: Some(by.clone()),
                    })
                    .await
                {
                    Ok(_) => format!("Answered: {answer}"),
                    Err(e) if e.code() == Some(ErrorCode::AlreadyAnswered) => {
                        already_answered_text(&e)
                    }
                    Err(e) => format!("Not answered: {e}"),
                },
                None => "That option no longer exists.".to_string(),
            },
            None => "Unknown button.".to_string(),
        };
        let _ = self
            .bot
            .answer_callback_query(query.id.clone())
            .text(text)
            .await;
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

    /// The text of option `index` of an ask.
    async fn option_text(&mut self, ask_id: u64, index: usize) -> Option<String> {
        self.ask(ask_id).await?.options.get(index).cloned()
    }

    async fn answer(&mut self, ask_id: u64, text: &str, by: &str, thread: Option<i32>) {
        // `2`, `#2`, `2️⃣` or an option's text picks that option; anything else is free text.
        let answer = match self.ask(ask_id).await {
            Some(ask) => {
                commands::answer_text(&ask, text).unwrap_or_else(|| text.trim().to_string())
            }
            None => text.trim().to_string(),
        };
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
            Ok(_) => {} // The card edit (from the ask_answered event) is the confirmation.
            Err(e) if e.code() == Some(ErrorCode::AlreadyAnswered) => {
                self.say(thread, plain(already_answered_text(&e))).await;
            }
            Err(e) => self.say(thread, plain(format!("Not answered: {e}"))).await,
        }
    }

    async fn steer(&mut self, session: &str, text: &str, by: &str, thread: Option<i32>) {
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
                let id = self
                    .outbox
                    .send(self.chat_id, thread, r.html, r.plain, None)
                    .await;
                if let Ok(id) = id {
                    self.remember(self.store.set_about(self.chat_id, id, &session_id));
                }
                return;
            }
            Err(e) => plain(steer_error(&e)),
        };
        self.say(thread, reply).await;
    }

    fn remember(&self, result: rusqlite::Result<()>) {
        if let Err(e) = result {
            tracing::error!(error = %e, "telegram: could not save the bridge state");
        }
    }
}

/// `telegram:@alice` / `telegram:Alice (123)`: who acted, for the core's records.
fn who(user: Option<&User>) -> String {
    match user {
        Some(u) => match &u.username {
            Some(name) => format!("telegram:@{name}"),
            None => format!("telegram:{} ({})", u.first_name, u.id.0),
        },
        None => "telegram".to_string(),
    }
}

/// Buttons for an ask's options: `a:<ask>:<index>`, two per row.
fn option_keyboard(ask: &Ask) -> Option<InlineKeyboardMarkup> {
    if ask.options.is_empty() {
        return None;
    }
    let buttons: Vec<InlineKeyboardButton> = ask
        .options
        .iter()
        .enumerate()
        .map(|(i, o)| InlineKeyboardButton::callback(o.clone(), format!("a:{}:{i}", ask.id)))
        .collect();
    Some(InlineKeyboardMarkup::new(
        buttons.chunks(2).map(<[_]>::to_vec),
    ))
}

fn parse_callback(data: &str) -> Option<(u64, usize)> {
    let mut parts = data.split(':');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some("a"), Some(ask), Some(index), None) => Some((ask.parse().ok()?, index.parse().ok()?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callback_data_round_trips() {
        assert_eq!(parse_callback("a:12:1"), Some((12, 1)));
        assert_eq!(parse_callback("a:12"), None);
        assert_eq!(parse_callback("x:1:2"), None);
        assert_eq!(parse_callback("a:1:2:3"), None);
    }
}
