//! A fake Telegram Bot API server on 127.0.0.1 that refuses what Telegram refuses, for
//! end-to-end tests of a real teloxide bot (`Bot::new(fake.token()).set_api_url(url)`).
//!
//! It speaks the wire format teloxide expects (`POST /bot<token>/<Method>`, method names in
//! any case, JSON or multipart bodies, `{"ok":…}` envelopes) and enforces the rules a
//! bridge can get wrong: HTML parse mode exactly as tdlib parses it (`400 can't parse
//! entities: …` with Telegram's reasons and byte offsets), text length counted after entity
//! parsing in UTF-16 units (`message is too long`, `MESSAGE_TOO_LONG` for edits),
//! `message is not modified`, topics that must exist, 64-byte callback data, flood limits
//! (`429` with `retry_after`), `getUpdates` offsets, `allowed_updates` and long polling.
//! Two pollers conflict as on the real Bot API server (tdlib/telegram-bot-api): a poll that
//! is about to wait terminates the poll already waiting, which gets the `409`, and 409s
//! come at most once per `conflict_cooldown` (3 s there). The test side injects what users
//! do (messages, replies, topic posts, button presses), reads every message's current
//! state and edit history, documents, topics and renames, callback answers, the full call
//! log and each update's fate (delivered how often, confirmed), and waits on conditions
//! (`wait_for*`), woken by every change rather than sleep-polling.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use std::time::Duration;
//! use shepherd_harness::fake_telegram::*;
//!
//! let alice = FakeUser::new(42, "Alice");
//! let tg = FakeTelegram::start(
//!     FakeTelegramOptions::default()
//!         .private_chat(alice.clone())
//!         .forum(-100_123, "shepherd")
//!         .no_rate_limits(),
//! )
//! .await?;
//! // point the bot at tg.api_url() with tg.token(), then:
//! tg.inject_message(UserMessage::new(42, 42, "/sessions"))?;
//! let reply = tg
//!     .wait_for_message(42, Duration::from_secs(5), |m| m.text.contains("sessions"))
//!     .await?;
//! tg.press_button(42, reply.message_id, 42, "answer:1")?;
//! # Ok(()) }
//! ```

mod html;
mod limits;
mod methods;
mod server;
mod state;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail};
use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;

pub use html::{Formatted, parse_html, utf16_len, visible_text};
pub use limits::RateLimits;

use server::Shared;

/// A Telegram user (or the bot itself).
#[derive(Debug, Clone, PartialEq)]
pub struct FakeUser {
    pub id: i64,
    pub first_name: String,
    pub username: Option<String>,
}

impl FakeUser {
    pub fn new(id: i64, first_name: &str) -> FakeUser {
        FakeUser {
            id,
            first_name: first_name.to_string(),
            username: None,
        }
    }

    pub fn with_username(mut self, username: &str) -> FakeUser {
        self.username = Some(username.to_string());
        self
    }
}

/// A chat the bot is in.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatSpec {
    /// A private chat with a user; its id is the user's id.
    Private { user: FakeUser },
    /// A supergroup with topics enabled (`is_forum`); the id is negative (`-100…`).
    Forum { id: i64, title: String },
    /// A supergroup without topics.
    Supergroup { id: i64, title: String },
}

impl ChatSpec {
    pub fn id(&self) -> i64 {
        match self {
            ChatSpec::Private { user } => user.id,
            ChatSpec::Forum { id, .. } | ChatSpec::Supergroup { id, .. } => *id,
        }
    }
}

/// How the fake behaves. `Default` is a bot `@shepherd_test_bot` with no chats and
/// Telegram's own rate limits.
#[derive(Debug, Clone)]
pub struct FakeTelegramOptions {
    /// `<bot id>:<secret>`; the bot's user id is the number before the colon.
    pub token: String,
    pub bot_username: String,
    pub bot_first_name: String,
    pub chats: Vec<ChatSpec>,
    /// Users known by name (others appear as `User<id>`).
    pub users: Vec<FakeUser>,
    /// `None` turns flood limits off.
    pub rate_limits: Option<RateLimits>,
    /// Refuse a bare `&` in HTML (real Telegram shows it literally; see `html.rs`).
    pub strict_ampersand: bool,
    /// How long a callback query can be answered (Telegram: about 15 s).
    pub callback_answer_timeout: Duration,
    /// The first update's id.
    pub first_update_id: u32,
    /// Like the Bot API server, answer at most one 409 per this interval: a poll
    /// terminated sooner after the last 409 gets its 409 only after this delay.
    pub conflict_cooldown: Duration,
}

impl Default for FakeTelegramOptions {
    fn default() -> Self {
        FakeTelegramOptions {
            token: "123456789:AAFakeTokenForShepherdTests_0123456789".into(),
            bot_username: "shepherd_test_bot".into(),
            bot_first_name: "Shepherd".into(),
            chats: Vec::new(),
            users: Vec::new(),
            rate_limits: Some(RateLimits::telegram()),
            strict_ampersand: true,
            callback_answer_timeout: Duration::from_secs(15),
            first_update_id: 700_000_000,
            conflict_cooldown: Duration::from_secs(3),
        }
    }
}

impl FakeTelegramOptions {
    /// Add a private chat with `user`.
    pub fn private_chat(mut self, user: FakeUser) -> Self {
        self.chats.push(ChatSpec::Private { user });
        self
    }

    /// Add a forum supergroup (`id` negative).
    pub fn forum(mut self, id: i64, title: &str) -> Self {
        self.chats.push(ChatSpec::Forum {
            id,
            title: title.to_string(),
        });
        self
    }

    /// Add a supergroup without topics (`id` negative).
    pub fn supergroup(mut self, id: i64, title: &str) -> Self {
        self.chats.push(ChatSpec::Supergroup {
            id,
            title: title.to_string(),
        });
        self
    }

    /// Name a user who writes in groups.
    pub fn user(mut self, user: FakeUser) -> Self {
        self.users.push(user);
        self
    }

    pub fn rate_limits(mut self, limits: RateLimits) -> Self {
        self.rate_limits = Some(limits);
        self
    }

    pub fn no_rate_limits(mut self) -> Self {
        self.rate_limits = None;
        self
    }

    pub fn token(mut self, token: &str) -> Self {
        self.token = token.to_string();
        self
    }
}

/// A message a user sends (`chat_id` is the user's id for a private chat).
#[derive(Debug, Clone)]
pub struct UserMessage {
    pub chat_id: i64,
    pub from: i64,
    pub text: String,
    /// The forum topic it is posted in.
    pub thread_id: Option<i32>,
    /// The message it replies to (its topic is implied).
    pub reply_to: Option<i32>,
    /// A photo, document or voice note it carries (`text` is then its caption).
    pub file: Option<UserFile>,
}

/// What kind of file a user sends, as Telegram's apps send them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserFileKind {
    /// A compressed photo: Telegram keeps it in several sizes (`photo`, smallest first).
    Photo,
    /// A file sent as a file (`document`), with its name and type.
    Document,
    /// A recorded voice note (`voice`, OGG/Opus).
    Voice,
}

/// A file a user sends; the bot fetches it with `getFile` and the file download URL.
#[derive(Debug, Clone)]
pub struct UserFile {
    pub kind: UserFileKind,
    pub name: String,
    pub mime: String,
    pub bytes: Vec<u8>,
}

impl UserMessage {
    pub fn new(chat_id: i64, from: i64, text: &str) -> UserMessage {
        UserMessage {
            chat_id,
            from,
            text: text.to_string(),
            thread_id: None,
            reply_to: None,
            file: None,
        }
    }

    /// Send `file` with this message (its text the caption; empty: none).
    pub fn with_file(mut self, file: UserFile) -> Self {
        self.file = Some(file);
        self
    }

    pub fn in_topic(mut self, thread_id: i32) -> Self {
        self.thread_id = Some(thread_id);
        self
    }

    pub fn reply_to(mut self, message_id: i32) -> Self {
        self.reply_to = Some(message_id);
        self
    }
}

/// An injected user message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Injected {
    pub update_id: u32,
    pub message_id: i32,
}

/// An injected button press.
#[derive(Debug, Clone, PartialEq)]
pub struct InjectedCallback {
    pub update_id: u32,
    pub query_id: String,
}

/// A message as it is now (bot or user), with the bot's earlier versions.
#[derive(Debug, Clone, PartialEq)]
pub struct SentMessage {
    pub chat_id: i64,
    pub message_id: i32,
    pub from_bot: bool,
    pub from: i64,
    pub thread_id: Option<i32>,
    pub reply_to: Option<i32>,
    /// The text (or caption) exactly as sent, e.g. the HTML source.
    pub raw: String,
    pub parse_mode: Option<String>,
    /// What the user sees: tags removed, entities decoded, trimmed.
    pub text: String,
    pub entities: Vec<Value>,
    pub reply_markup: Option<Value>,
    pub document: Option<SentDocument>,
    /// Versions before each edit, oldest first.
    pub edits: Vec<MessageVersion>,
    pub deleted: bool,
    pub date: i64,
    pub edit_date: Option<i64>,
}

impl SentMessage {
    /// Inline buttons as `(text, callback_data)`, row by row, flattened (url buttons have
    /// an empty `callback_data`).
    pub fn buttons(&self) -> Vec<(String, String)> {
        self.reply_markup
            .as_ref()
            .and_then(|m| m.get("inline_keyboard"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_array)
            .flatten()
            .map(|b| {
                (
                    b["text"].as_str().unwrap_or("").to_string(),
                    b["callback_data"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }
}

/// One earlier version of an edited message.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageVersion {
    pub raw: String,
    pub parse_mode: Option<String>,
    pub text: String,
    pub entities: Vec<Value>,
    pub reply_markup: Option<Value>,
}

/// An uploaded document.
#[derive(Debug, Clone, PartialEq)]
pub struct SentDocument {
    pub file_id: String,
    pub file_unique_id: String,
    pub file_name: String,
    pub mime_type: String,
    pub bytes: Vec<u8>,
}

/// A forum topic; `renames` holds its earlier names, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Topic {
    pub chat_id: i64,
    pub thread_id: i32,
    pub name: String,
    pub icon_color: i64,
    pub renames: Vec<String>,
    pub closed: bool,
    pub deleted: bool,
}

/// One Bot API call as the fake answered it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiCall {
    /// Position in the log (calls are logged when answered).
    pub seq: usize,
    /// Canonical spelling (`sendMessage`) whatever case the bot used.
    pub method: String,
    /// Parameters as received (multipart fields are strings; files are name and size).
    pub params: Value,
    pub status: u16,
    /// The whole JSON body returned.
    pub response: Value,
    /// When it arrived, since the fake started.
    pub at: Duration,
    /// How long it took to answer (long polls wait).
    pub took: Duration,
}

/// How the bot answered a button press.
#[derive(Debug, Clone, PartialEq)]
pub struct CallbackAnswer {
    pub query_id: String,
    pub text: Option<String>,
    pub show_alert: bool,
    pub url: Option<String>,
    /// Time from the press to the answer.
    pub after: Duration,
}

/// The fate of one injected update.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateRecord {
    pub update_id: u32,
    /// `message` or `callback_query`.
    pub kind: String,
    pub update: Value,
    /// Dropped because the bot's `allowed_updates` excludes its kind.
    pub filtered: bool,
    /// How many `getUpdates` answers carried it (more than 1 is a redelivery).
    pub deliveries: u32,
    /// The bot confirmed it (a later `offset`).
    pub confirmed: bool,
}

/// Refusals so far, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ErrorCounts {
    pub bad_request: usize,
    pub unauthorized: usize,
    pub not_found: usize,
    pub conflict: usize,
    pub too_many_requests: usize,
}

/// A running fake Bot API server.
pub struct FakeTelegram {
    addr: SocketAddr,
    token: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeTelegram {
    /// Serve on a free loopback port.
    pub async fn start(opts: FakeTelegramOptions) -> Result<FakeTelegram> {
        let mut ids: Vec<i64> = opts.chats.iter().map(ChatSpec::id).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != opts.chats.len() {
            bail!("two chats share an id");
        }
        for chat in &opts.chats {
            match chat {
                ChatSpec::Private { user } if user.id <= 0 => {
                    bail!("a private chat's id is its user's positive id")
                }
                ChatSpec::Forum { id, .. } | ChatSpec::Supergroup { id, .. } if *id >= 0 => {
                    bail!("group chat ids are negative")
                }
                _ => {}
            }
        }
        let shared = Arc::new(Shared {
            state: std::sync::Mutex::new(state::State::new(&opts)),
            changed: watch::channel(0).0,
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let app = server::router(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FakeTelegram {
            addr,
            token: opts.token,
            shared,
            task,
        })
    }

    /// For `Bot::set_api_url`: `http://127.0.0.1:<port>`.
    pub fn api_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    /// The bot's user id (the token's number).
    pub fn bot_id(&self) -> i64 {
        self.shared.lock().bot.id
    }

    // -----------------------------------------------------------------------------------
    // Users' side.

    /// A user sends a text message; it is queued as an update for `getUpdates`.
    pub fn inject_message(&self, message: UserMessage) -> Result<Injected> {
        let injected = self.shared.lock().inject_message(&message)?;
        self.shared.touch();
        Ok(injected)
    }

    /// A user presses the inline button carrying `data` on the bot's message. Fails when
    /// the message has no such button (Telegram could not deliver that press).
    pub fn press_button(
        &self,
        chat_id: i64,
        message_id: i32,
        from: i64,
        data: &str,
    ) -> Result<InjectedCallback> {
        let injected =
            self.shared
                .lock()
                .press_button(chat_id, message_id, from, data, Instant::now())?;
        self.shared.touch();
        Ok(injected)
    }

    /// What a second bot instance does to this one: a waiting `getUpdates` is terminated
    /// with 409 Conflict. Whether one was waiting.
    pub fn terminate_long_poll(&self) -> bool {
        let slot = self.shared.lock().long_poll.take();
        match slot {
            Some((_, terminate)) => terminate.send(()).is_ok(),
            None => false,
        }
    }

    /// Whether a `getUpdates` long poll is waiting right now.
    pub fn long_poll_waiting(&self) -> bool {
        self.shared.lock().long_poll.is_some()
    }

    /// Answer the next `times` calls to `method` (`sendMessage`) with HTTP `status` (a 5xx,
    /// as Telegram's servers do when they are in trouble), doing nothing.
    pub fn fail_next(&self, method: &str, status: u16, times: u32) {
        self.shared.lock().server_errors = Some((method.to_ascii_lowercase(), status, times));
    }

    /// Change the flood limits from now on (`None`: off).
    pub fn set_rate_limits(&self, limits: Option<RateLimits>) {
        self.shared.lock().limiter = limits.map(limits::Limiter::new);
    }

    // -----------------------------------------------------------------------------------
    // What happened.

    /// Every message in a chat (the bot's and users'), in order, deleted ones included.
    pub fn chat_messages(&self, chat_id: i64) -> Vec<SentMessage> {
        let st = self.shared.lock();
        st.chats.get(&chat_id).map_or_else(Vec::new, |chat| {
            chat.messages
                .values()
                .filter(|m| !matches!(m.content, state::Content::TopicCreated { .. }))
                .map(|m| st.sent_message(chat_id, m))
                .collect()
        })
    }

    /// The bot's messages in a chat, as they are now, in order (deleted ones included,
    /// flagged).
    pub fn messages(&self, chat_id: i64) -> Vec<SentMessage> {
        self.chat_messages(chat_id)
            .into_iter()
            .filter(|m| m.from_bot)
            .collect()
    }

    /// The bot's messages in one topic.
    pub fn topic_messages(&self, chat_id: i64, thread_id: i32) -> Vec<SentMessage> {
        self.messages(chat_id)
            .into_iter()
            .filter(|m| m.thread_id == Some(thread_id))
            .collect()
    }

    pub fn message(&self, chat_id: i64, message_id: i32) -> Option<SentMessage> {
        self.chat_messages(chat_id)
            .into_iter()
            .find(|m| m.message_id == message_id)
    }

    /// Every call, in the order they were answered.
    pub fn calls(&self) -> Vec<ApiCall> {
        self.shared.lock().calls.clone()
    }

    /// Calls to one method (any spelling).
    pub fn calls_to(&self, method: &str) -> Vec<ApiCall> {
        let method = server::canonical(method);
        self.shared
            .lock()
            .calls
            .iter()
            .filter(|c| c.method == method)
            .cloned()
            .collect()
    }

    /// Calls answered with this HTTP status.
    pub fn status_count(&self, status: u16) -> usize {
        self.shared
            .lock()
            .calls
            .iter()
            .filter(|c| c.status == status)
            .count()
    }

    pub fn error_counts(&self) -> ErrorCounts {
        ErrorCounts {
            bad_request: self.status_count(400),
            unauthorized: self.status_count(401),
            not_found: self.status_count(404),
            conflict: self.status_count(409),
            too_many_requests: self.status_count(429),
        }
    }

    /// Topics in a chat, by creation.
    pub fn topics(&self, chat_id: i64) -> Vec<Topic> {
        self.shared
            .lock()
            .chats
            .get(&chat_id)
            .map_or_else(Vec::new, |c| c.topics.values().cloned().collect())
    }

    pub fn callback_answers(&self) -> Vec<CallbackAnswer> {
        self.shared.lock().callback_answers.clone()
    }

    /// The command list for the default scope and no language, as set by `setMyCommands`.
    pub fn commands(&self) -> Option<Value> {
        self.shared.lock().commands.get("default").cloned()
    }

    /// Every update injected so far and what became of it.
    pub fn updates(&self) -> Vec<UpdateRecord> {
        self.shared.lock().update_log.clone()
    }

    /// Updates queued and not yet confirmed by the bot.
    pub fn pending_updates(&self) -> usize {
        self.shared.lock().queue.len()
    }

    /// The `allowed_updates` the bot last asked for.
    pub fn allowed_updates(&self) -> Option<Vec<String>> {
        self.shared.lock().allowed_updates.clone()
    }

    // -----------------------------------------------------------------------------------
    // Waiting.

    /// Wait until `probe` returns `Some`, re-checking after every change to the fake
    /// (never on a timer). The error names `what` and the last calls.
    pub async fn wait_for<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut probe: impl FnMut(&FakeTelegram) -> Option<T>,
    ) -> Result<T> {
        let deadline = Instant::now() + timeout;
        let mut changed = self.shared.changed.subscribe();
        loop {
            if let Some(found) = probe(self) {
                return Ok(found);
            }
            let woke = tokio::time::timeout_at(deadline, changed.changed()).await;
            if woke.is_err() {
                let calls = self.calls();
                let recent: Vec<String> = calls
                    .iter()
                    .rev()
                    .filter(|c| c.method != "getUpdates" || c.status != 200)
                    .take(12)
                    .map(|c| format!("{} {} {}", c.method, c.status, c.params))
                    .collect();
                bail!(
                    "fake Telegram: no {what} within {timeout:?}; last calls (newest first):\n{}",
                    recent.join("\n")
                );
            }
        }
    }

    /// The first bot message in `chat_id` (live, current state) matching `pred`.
    pub async fn wait_for_message(
        &self,
        chat_id: i64,
        timeout: Duration,
        pred: impl Fn(&SentMessage) -> bool,
    ) -> Result<SentMessage> {
        self.wait_for(&format!("bot message in chat {chat_id}"), timeout, |tg| {
            tg.messages(chat_id)
                .into_iter()
                .find(|m| !m.deleted && pred(m))
        })
        .await
    }

    /// Wait until the bot has `n` live messages in `chat_id`; returns them.
    pub async fn wait_for_messages(
        &self,
        chat_id: i64,
        n: usize,
        timeout: Duration,
    ) -> Result<Vec<SentMessage>> {
        self.wait_for(
            &format!("{n} bot messages in chat {chat_id}"),
            timeout,
            |tg| {
                let live: Vec<_> = tg
                    .messages(chat_id)
                    .into_iter()
                    .filter(|m| !m.deleted)
                    .collect();
                (live.len() >= n).then_some(live)
            },
        )
        .await
    }

    /// The first call to `method` matching `pred`.
    pub async fn wait_for_call(
        &self,
        method: &str,
        timeout: Duration,
        pred: impl Fn(&ApiCall) -> bool,
    ) -> Result<ApiCall> {
        self.wait_for(&format!("{method} call"), timeout, |tg| {
            tg.calls_to(method).into_iter().find(|c| pred(c))
        })
        .await
    }

    /// Wait until the bot has confirmed `update_id` (polled with a later offset).
    pub async fn wait_confirmed(&self, update_id: u32, timeout: Duration) -> Result<()> {
        self.wait_for(
            &format!("confirmation of update {update_id}"),
            timeout,
            |tg| {
                tg.updates()
                    .iter()
                    .any(|u| u.update_id == update_id && u.confirmed)
                    .then_some(())
            },
        )
        .await
    }

    /// Wait until the bot answers the callback query `query_id`.
    pub async fn wait_for_callback_answer(
        &self,
        query_id: &str,
        timeout: Duration,
    ) -> Result<CallbackAnswer> {
        self.wait_for(&format!("answer to callback {query_id}"), timeout, |tg| {
            tg.callback_answers()
                .into_iter()
                .find(|a| a.query_id == query_id)
        })
        .await
    }
}

impl Drop for FakeTelegram {
    fn drop(&mut self) {
        self.task.abort();
    }
}
