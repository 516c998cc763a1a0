//! What the human does in Telegram, read by the relay: a command, a reply to a card (an
//! answer), a reply to anything about a session (a steer), plain text in a session's topic
//! (its one open ask's answer, else a steer: `relay::typed`), a photo, document or voice
//! note for a session (`media`: its inbox and a steer), a button press (an option,
//! the undo of a typed answer, a `/workers` line's ✖ close, an integration card's 🧾 diff, a peek's 🔄 refresh (edited in
//! place), or a `/staff` line's ✍️ steer,
//! which asks what to say with
//! a forced reply). Senders and chats are checked against the allowlist
//! first; refusals go to the audit log. Each update ends in one of the relay's calls
//! ([`Relay::on_command`], [`Relay::reply_to_ask`], [`Relay::typed`], [`Relay::steer`],
//! [`Relay::undo`]).

use teloxide::payloads::AnswerCallbackQuerySetters;
use teloxide::prelude::Requester;
use teloxide::types::{CallbackQuery, Message, Update, UpdateKind, User};

use shepherd_core::protocol::{AskRef, ErrorCode};

use super::bridge::{
    PEEK_HINT, Telegram, parse_approval, parse_callback, parse_close, parse_diff, parse_peek,
    parse_steer, parse_undo, peek_keyboard,
};
use super::media::media_of;
use super::outbox::OutboxOp;
use crate::chat::access::{Decision, Refusal};
use crate::chat::commands;
use crate::chat::render::{self, Rendered};
use crate::chat::replies::already_answered_text;
use crate::relay::Relay;

impl Relay<Telegram> {
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
        let decision = match user_id {
            Some(id) => self.platform.allow.allows(&id, &chat),
            None => Decision::Refused {
                why: Refusal::User,
                reason: format!("no sender (chat {chat})"),
            },
        };
        let Decision::Refused { reason, .. } = decision else {
            return true;
        };
        tracing::warn!(target: "audit", user = ?user_id, chat, what, %reason, "telegram: ignored");
        self.audit(serde_json::json!({
            "user": user_id,
            "username": user.and_then(|u| u.username.clone()),
            "chat": chat,
            "what": what,
            "reason": reason,
        }));
        false
    }

    async fn on_message(&mut self, msg: Message) {
        if !self.admit(msg.from.as_ref(), msg.chat.id.0, "message") {
            return;
        }
        let thread = msg.thread_id.map(|t| t.0.0);
        let by = who(msg.from.as_ref());
        let (chat, store) = (self.platform.chat_id, &self.platform.store);
        if let Some(media) = media_of(&msg) {
            // The session it is sent to: its topic's, else the message replied to.
            let topic = thread.and_then(|t| store.session_of_topic(chat, t).ok()?);
            let replied = msg
                .reply_to_message()
                .filter(|r| r.id.0 != thread.unwrap_or(0))
                .and_then(|r| store.about(chat, r.id.0).ok()?);
            let session = replied.or(topic);
            self.on_media(&msg, media, session, &by, thread).await;
            return;
        }
        let Some(text) = msg.text().map(str::to_string) else {
            return;
        };
        if let Some(command) = commands::parse(&text, '/', Some(&self.platform.username)) {
            // The session this is written about: its topic's, else the message replied to.
            let topic = thread.and_then(|t| store.session_of_topic(chat, t).ok()?);
            let replied = msg
                .reply_to_message()
                .filter(|r| r.id.0 != thread.unwrap_or(0))
                .and_then(|r| store.about(chat, r.id.0).ok()?);
            // `/close` replying to a `/workers` line closes that worker, even in a topic.
            let here = match command {
                commands::ChatCommand::Close(None) if replied.is_some() => replied,
                _ => topic.or(replied),
            };
            self.on_command(command, thread, here.as_deref(), &by).await;
            return;
        }
        // A reply to a card answers it; a reply to anything about a session steers it.
        if let Some(replied) = msg.reply_to_message()
            && replied.id.0 != thread.unwrap_or(0)
        {
            let replied_id = replied.id.0;
            // A reply to an approval card denies it, with the reply as the reason.
            if let Ok(Some(approval)) = store.approval_at(chat, replied_id) {
                let scope = shepherd_core::protocol::ApprovalScope::Once;
                self.decide_approval(approval, false, scope, Some(&text), &by, thread)
                    .await;
                return;
            }
            if let Ok(Some(card)) = store.card_at(chat, replied_id) {
                self.reply_to_ask(&card.ask, &text, &by, thread).await;
                return;
            }
            if let Ok(Some(session)) = store.about(chat, replied_id) {
                self.steer(&session, &text, &by, thread).await;
                return;
            }
        }
        // Plain text in a session's topic: its one open ask's answer, else a steer.
        if let Some(t) = thread
            && let Ok(Some(session)) = store.session_of_topic(chat, t)
        {
            self.typed(&session, &text, &by, thread).await;
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

    /// A peek's 🔄 Refresh: take it again and edit it in place.
    async fn peek_button(&mut self, query: &CallbackQuery, target: &str) {
        let chat = query.message.as_ref().map(|m| m.chat().id.0).unwrap_or(0);
        let bot = self.platform.bot.clone();
        let text = match (self.refreshed_peek(target).await, query.message.as_ref()) {
            (Ok(peek), Some(m)) => {
                let rendered = crate::chat::peek::peek(&peek, PEEK_HINT);
                self.platform.outbox.push(OutboxOp::Edit {
                    chat,
                    message: m.id().0,
                    html: rendered.html,
                    plain: rendered.plain,
                    keyboard: Some(peek_keyboard(target)),
                });
                "Refreshed.".to_string()
            }
            (Ok(_), None) => "That message is too old to edit: send /peek again.".to_string(),
            (Err(said), _) => said.plain,
        };
        let short = crate::chat::format::truncate(&text, 190);
        let _ = bot
            .answer_callback_query(query.id.clone())
            .text(short)
            .await;
    }

    async fn on_callback(&mut self, query: CallbackQuery) {
        let chat = query.message.as_ref().map(|m| m.chat().id.0).unwrap_or(0);
        let bot = self.platform.bot.clone();
        if !self.admit(Some(&query.from), chat, "button") {
            let _ = bot.answer_callback_query(query.id.clone()).await;
            return;
        }
        let by = who(Some(&query.from));
        if let Some(session) = query.data.as_deref().and_then(parse_steer) {
            // A `/staff` line: ask what to tell the session; the reply steers it.
            let thread = thread_of(&query);
            let name = self
                .sessions
                .get(session)
                .map_or(session.to_string(), |s| s.name.clone());
            let _ = bot.answer_callback_query(query.id.clone()).await;
            self.platform.ask_for_steer(thread, session, &name).await;
            return;
        }
        if let Some(worker) = query.data.as_deref().and_then(parse_close) {
            // A `/workers` line's ✖ close: close that worker as the human.
            let thread = thread_of(&query);
            let said = match self
                .core
                .close_agent(&worker.agent(), worker.host.as_deref())
                .await
            {
                Ok(w) => crate::chat::workers::closed(&w),
                Err(e) => crate::chat::replies::refused(e),
            };
            let short = crate::chat::format::truncate(&said.plain, 190);
            let _ = bot
                .answer_callback_query(query.id.clone())
                .text(short)
                .await;
            self.say(thread, said).await;
            return;
        }
        if let Some(target) = query.data.as_deref().and_then(parse_peek) {
            let target = target.to_string();
            self.peek_button(&query, &target).await;
            return;
        }
        if let Some(target) = query.data.as_deref().and_then(parse_diff) {
            // An integration card's 🧾 diff: the Lead's changes, as /diff shows them.
            let target = target.to_string();
            let _ = bot.answer_callback_query(query.id.clone()).await;
            let command = commands::ChatCommand::Diff(Some(target));
            self.on_command(command, thread_of(&query), None, &by).await;
            return;
        }
        if let Some((approval, allow)) = query.data.as_deref().and_then(parse_approval) {
            self.approval_button(&query, approval, allow, &by).await;
            return;
        }
        if let Some(ask) = query.data.as_deref().and_then(parse_undo) {
            let said = self.undo(&ask, &by).await;
            // The offer becomes what happened, without its button.
            if let Some(m) = query.message.as_ref() {
                self.platform.outbox.push(OutboxOp::Edit {
                    chat,
                    message: m.id().0,
                    html: said.html.clone(),
                    plain: said.plain.clone(),
                    keyboard: None,
                });
            }
            let short = crate::chat::format::truncate(&said.plain, 190);
            let _ = bot
                .answer_callback_query(query.id.clone())
                .text(short)
                .await;
            return;
        }
        let parsed = query.data.as_deref().and_then(parse_callback);
        let text = match parsed {
            Some((ask, option)) => match self.option_text(&ask, option).await {
                Some(answer) => match self.core.answer(&ask, &answer, &by).await {
                    Ok(()) => format!("Answered: {answer}"),
                    Err(e) if e.code() == Some(ErrorCode::AlreadyAnswered) => {
                        already_answered_text(&e)
                    }
                    Err(e) => format!("Not answered: {e}"),
                },
                None => "That option no longer exists.".to_string(),
            },
            None => "Unknown button.".to_string(),
        };
        let _ = bot.answer_callback_query(query.id.clone()).text(text).await;
    }

    /// An approval card's button: allow (`Some(scope)`) or deny, as `by`; the button's
    /// answer says which, or why the core refused it.
    async fn approval_button(
        &mut self,
        query: &CallbackQuery,
        approval: crate::chat::approvals::ApprovalRef,
        allow: Option<shepherd_core::protocol::ApprovalScope>,
        by: &str,
    ) {
        let thread = thread_of(query);
        let scope = allow.unwrap_or_default();
        let refused = self
            .decide_approval(approval, allow.is_some(), scope, None, by, thread)
            .await;
        let text = refused.unwrap_or_else(|| match allow {
            Some(_) => "Allowed.".to_string(),
            None => "Denied.".to_string(),
        });
        let short = crate::chat::format::truncate(&text, 190);
        let bot = self.platform.bot.clone();
        let _ = bot
            .answer_callback_query(query.id.clone())
            .text(short)
            .await;
    }

    /// The text of option `index` of an ask.
    async fn option_text(&mut self, ask: &AskRef, index: usize) -> Option<String> {
        self.ask(ask).await?.options.get(index).cloned()
    }
}

/// The forum topic a button's message is in.
fn thread_of(query: &CallbackQuery) -> Option<i32> {
    query
        .message
        .as_ref()
        .and_then(|m| m.regular_message())
        .and_then(|m| m.thread_id)
        .map(|t| t.0.0)
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
