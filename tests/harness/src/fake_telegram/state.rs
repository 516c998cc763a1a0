//! The fake's world: chats, messages, topics, the update queue, and the Bot API methods
//! that change them. Everything here is synchronous and runs under one lock; the HTTP
//! side (and `getUpdates`' waiting) lives in `server.rs`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, ensure};
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::html::{Formatted, utf16_len};
use super::limits::Limiter;
use super::{
    ApiCall, CallbackAnswer, ChatSpec, FakeTelegramOptions, FakeUser, Injected, InjectedCallback,
    MessageVersion, SentDocument, SentMessage, Topic, UpdateRecord, UserFile, UserFileKind,
    UserMessage,
};

/// Telegram's limits on text after entity parsing.
pub(crate) const MAX_TEXT: usize = 4096;
pub(crate) const MAX_CAPTION: usize = 1024;

/// An error as the Bot API reports it.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    pub code: u16,
    pub description: String,
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub(crate) fn bad(reason: impl AsRef<str>) -> ApiError {
        ApiError {
            code: 400,
            description: format!("Bad Request: {}", reason.as_ref()),
            retry_after: None,
        }
    }

    pub(crate) fn new(code: u16, description: impl Into<String>) -> ApiError {
        ApiError {
            code,
            description: description.into(),
            retry_after: None,
        }
    }

    pub(crate) fn too_many(retry_after: u64) -> ApiError {
        ApiError {
            code: 429,
            description: format!("Too Many Requests: retry after {retry_after}"),
            retry_after: Some(retry_after),
        }
    }

    pub(crate) fn to_json(&self) -> Value {
        let mut v = json!({"ok": false, "error_code": self.code, "description": self.description});
        if let Some(n) = self.retry_after {
            v["parameters"] = json!({"retry_after": n});
        }
        v
    }
}

/// An uploaded file part.
#[derive(Debug, Clone)]
pub(crate) struct Upload {
    pub file_name: Option<String>,
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
}

/// A request's parameters, from a JSON body or multipart form fields (where every value
/// is a string and objects are JSON text); accessors accept both forms, as Telegram does.
#[derive(Debug, Default)]
pub(crate) struct Params {
    pub fields: Map<String, Value>,
    pub files: HashMap<String, Upload>,
}

impl Params {
    pub(crate) fn get(&self, name: &str) -> Option<&Value> {
        self.fields.get(name).filter(|v| !v.is_null())
    }

    pub(crate) fn int(&self, name: &str) -> Result<Option<i64>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .map(Some)
                .ok_or_else(|| ApiError::bad(format!("invalid {name} specified"))),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => s
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| ApiError::bad(format!("invalid {name} specified"))),
            Some(_) => Err(ApiError::bad(format!("invalid {name} specified"))),
        }
    }

    pub(crate) fn str(&self, name: &str) -> Option<String> {
        match self.get(name)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            other => Some(other.to_string()),
        }
    }

    pub(crate) fn bool(&self, name: &str) -> bool {
        match self.get(name) {
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => matches!(s.as_str(), "true" | "True" | "1"),
            Some(Value::Number(n)) => n.as_i64() == Some(1),
            _ => false,
        }
    }

    /// An object or array parameter (multipart sends them as JSON text).
    pub(crate) fn json(&self, name: &str, what: &str) -> Result<Option<Value>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => serde_json::from_str(s)
                .map(Some)
                .map_err(|_| ApiError::bad(format!("can't parse {what} JSON object"))),
            Some(v) => Ok(Some(v.clone())),
        }
    }

    pub(crate) fn chat_id(&self) -> Result<i64, ApiError> {
        match self.get("chat_id") {
            None => Err(ApiError::bad("chat_id is empty")),
            Some(Value::String(s)) if s.starts_with('@') => Err(ApiError::bad("chat not found")),
            Some(_) => self
                .int("chat_id")?
                .ok_or_else(|| ApiError::bad("chat_id is empty")),
        }
    }

    pub(crate) fn message_id(&self) -> Result<i32, ApiError> {
        self.int("message_id")?
            .map(|id| id as i32)
            .ok_or_else(|| ApiError::bad("message identifier is not specified"))
    }

    /// The parameters as logged: form fields as given, files as name and size.
    pub(crate) fn logged(&self) -> Value {
        let mut map = self.fields.clone();
        for (name, file) in &self.files {
            map.insert(
                name.clone(),
                json!({"file_name": file.file_name, "size": file.bytes.len()}),
            );
        }
        Value::Object(map)
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Content {
    Text(Formatted),
    Document {
        document: SentDocument,
        caption: Option<Formatted>,
    },
    TopicCreated {
        name: String,
        icon_color: i64,
    },
    /// A user's photo, in each size Telegram keeps (smallest first).
    Photo {
        sizes: Vec<SentDocument>,
        caption: Option<Formatted>,
    },
    /// A user's voice note.
    Voice {
        voice: SentDocument,
        caption: Option<Formatted>,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct Msg {
    pub id: i32,
    pub date: i64,
    /// The sender's user id (the bot's own for bot messages).
    pub from: i64,
    pub from_bot: bool,
    pub thread_id: Option<i32>,
    pub reply_to: Option<i32>,
    pub content: Content,
    /// The raw text or caption and parse mode the bot sent.
    pub raw: String,
    pub parse_mode: Option<String>,
    pub reply_markup: Option<Value>,
    pub edit_date: Option<i64>,
    pub edits: Vec<MessageVersion>,
    pub deleted: bool,
}

#[derive(Debug)]
pub(crate) struct ChatState {
    pub spec: ChatSpec,
    pub next_message_id: i32,
    pub messages: BTreeMap<i32, Msg>,
    pub topics: BTreeMap<i32, Topic>,
}

impl ChatState {
    pub(crate) fn is_forum(&self) -> bool {
        matches!(self.spec, ChatSpec::Forum { .. })
    }

    pub(crate) fn next_id(&mut self) -> i32 {
        let id = self.next_message_id;
        self.next_message_id += 1;
        id
    }

    pub(crate) fn json(&self) -> Value {
        match &self.spec {
            ChatSpec::Private { user } => {
                let mut v =
                    json!({"id": user.id, "type": "private", "first_name": user.first_name});
                if let Some(username) = &user.username {
                    v["username"] = json!(username);
                }
                v
            }
            ChatSpec::Forum { id, title } => {
                json!({"id": id, "type": "supergroup", "title": title, "is_forum": true})
            }
            ChatSpec::Supergroup { id, title } => {
                json!({"id": id, "type": "supergroup", "title": title})
            }
        }
    }

    /// A live (not deleted) message.
    pub(crate) fn live(&self, id: i32) -> Option<&Msg> {
        self.messages.get(&id).filter(|m| !m.deleted)
    }
}

#[derive(Debug)]
pub(crate) struct PendingCallback {
    pub created: Instant,
    pub answered: bool,
}

pub(crate) struct State {
    pub token: String,
    pub bot: FakeUser,
    pub strict_ampersand: bool,
    pub callback_timeout: Duration,
    pub chats: BTreeMap<i64, ChatState>,
    pub users: HashMap<i64, FakeUser>,
    pub limiter: Option<Limiter>,
    /// Unconfirmed updates, oldest first.
    pub queue: VecDeque<(u32, Value)>,
    /// Every update ever injected.
    pub update_log: Vec<UpdateRecord>,
    pub next_update_id: u32,
    /// Update types the bot asked for; `None` means Telegram's default.
    pub allowed_updates: Option<Vec<String>>,
    /// The long poll in flight: its id and the way to terminate it with a 409.
    pub long_poll: Option<(u64, oneshot::Sender<()>)>,
    pub next_poll_id: u64,
    pub conflict_cooldown: Duration,
    /// Before this, a 409 waits out the cooldown (the Bot API server's
    /// `next_get_updates_conflict_time_`).
    pub next_conflict_at: Option<Instant>,
    pub calls: Vec<ApiCall>,
    pub callbacks: HashMap<String, PendingCallback>,
    pub callback_answers: Vec<CallbackAnswer>,
    pub commands: BTreeMap<String, Value>,
    pub files: HashMap<String, SentDocument>,
    pub next_file: u64,
    pub started: Instant,
    /// Calls to answer with a server error instead: (lowercase method, status, how many).
    pub server_errors: Option<(String, u16, u32)>,
}

fn caption_json(v: &mut Value, caption: Option<&Formatted>) {
    if let Some(c) = caption {
        v["caption"] = json!(c.text);
        if !c.entities.is_empty() {
            v["caption_entities"] = json!(c.entities);
        }
    }
}

pub(crate) fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_secs() as i64)
}

/// Update types Telegram sends when `allowed_updates` was never set (or set to `[]`).
fn default_allowed(kind: &str) -> bool {
    !matches!(
        kind,
        "chat_member" | "message_reaction" | "message_reaction_count"
    )
}

impl State {
    pub(crate) fn new(opts: &FakeTelegramOptions) -> State {
        let bot_id = opts
            .token
            .split(':')
            .next()
            .and_then(|id| id.parse().ok())
            .unwrap_or(1);
        let bot = FakeUser {
            id: bot_id,
            first_name: opts.bot_first_name.clone(),
            username: Some(opts.bot_username.clone()),
        };
        let mut users: HashMap<i64, FakeUser> =
            opts.users.iter().map(|u| (u.id, u.clone())).collect();
        let mut chats = BTreeMap::new();
        for spec in &opts.chats {
            if let ChatSpec::Private { user } = spec {
                users.entry(user.id).or_insert_with(|| user.clone());
            }
            chats.insert(
                spec.id(),
                ChatState {
                    spec: spec.clone(),
                    next_message_id: 1,
                    messages: BTreeMap::new(),
                    topics: BTreeMap::new(),
                },
            );
        }
        State {
            token: opts.token.clone(),
            bot,
            strict_ampersand: opts.strict_ampersand,
            callback_timeout: opts.callback_answer_timeout,
            chats,
            users,
            limiter: opts.rate_limits.clone().map(Limiter::new),
            queue: VecDeque::new(),
            update_log: Vec::new(),
            next_update_id: opts.first_update_id,
            allowed_updates: None,
            long_poll: None,
            next_poll_id: 1,
            conflict_cooldown: opts.conflict_cooldown,
            next_conflict_at: None,
            calls: Vec::new(),
            callbacks: HashMap::new(),
            callback_answers: Vec::new(),
            commands: BTreeMap::new(),
            files: HashMap::new(),
            next_file: 1,
            started: Instant::now(),
            server_errors: None,
        }
    }

    pub(crate) fn user_json(&self, id: i64) -> Value {
        if id == self.bot.id {
            return json!({"id": id, "is_bot": true, "first_name": self.bot.first_name,
                "username": self.bot.username});
        }
        let user = self.users.get(&id).cloned().unwrap_or_else(|| FakeUser {
            id,
            first_name: format!("User{id}"),
            username: None,
        });
        let mut v = json!({"id": id, "is_bot": false, "first_name": user.first_name,
            "language_code": "en"});
        if let Some(username) = user.username {
            v["username"] = json!(username);
        }
        v
    }

    /// The Message object Telegram would return or deliver.
    pub(crate) fn message_json(&self, chat: &ChatState, m: &Msg, with_reply: bool) -> Value {
        let mut v = json!({
            "message_id": m.id,
            "from": self.user_json(m.from),
            "date": m.date,
            "chat": chat.json(),
        });
        if let Some(thread) = m.thread_id {
            v["message_thread_id"] = json!(thread);
            v["is_topic_message"] = json!(true);
        }
        match &m.content {
            Content::Text(f) => {
                v["text"] = json!(f.text);
                if !f.entities.is_empty() {
                    v["entities"] = json!(f.entities);
                }
            }
            Content::Document { document, caption } => {
                v["document"] = json!({
                    "file_id": document.file_id,
                    "file_unique_id": document.file_unique_id,
                    "file_name": document.file_name,
                    "mime_type": document.mime_type,
                    "file_size": document.bytes.len(),
                });
                if let Some(c) = caption {
                    v["caption"] = json!(c.text);
                    if !c.entities.is_empty() {
                        v["caption_entities"] = json!(c.entities);
                    }
                }
            }
            Content::TopicCreated { name, icon_color } => {
                v["forum_topic_created"] = json!({"name": name, "icon_color": icon_color});
            }
            Content::Photo { sizes, caption } => {
                v["photo"] = sizes
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        let side = 90 * (i + 1) * (i + 1);
                        json!({
                            "file_id": p.file_id, "file_unique_id": p.file_unique_id,
                            "width": side, "height": side * 3 / 4, "file_size": p.bytes.len(),
                        })
                    })
                    .collect();
                caption_json(&mut v, caption.as_ref());
            }
            Content::Voice { voice, caption } => {
                v["voice"] = json!({
                    "file_id": voice.file_id, "file_unique_id": voice.file_unique_id,
                    "duration": 3, "mime_type": voice.mime_type, "file_size": voice.bytes.len(),
                });
                caption_json(&mut v, caption.as_ref());
            }
        }
        if inline_markup(&m.reply_markup).is_some() {
            v["reply_markup"] = m.reply_markup.clone().unwrap_or_default();
        }
        if let Some(date) = m.edit_date {
            v["edit_date"] = json!(date);
        }
        if with_reply {
            // In a forum topic every message that replies to nothing else replies to the
            // topic's creation message, as on Telegram.
            let target = m.reply_to.or(m.thread_id.filter(|t| *t != m.id));
            if let Some(target) = target.and_then(|id| chat.messages.get(&id)) {
                v["reply_to_message"] = self.message_json(chat, target, false);
            }
        }
        v
    }

    pub(crate) fn sent_message(&self, chat_id: i64, m: &Msg) -> SentMessage {
        let (text, entities, document) = match &m.content {
            Content::Text(f) => (f.text.clone(), f.entities.clone(), None),
            Content::Document { document, caption } => {
                let c = caption.clone().unwrap_or_default();
                (c.text, c.entities, Some(document.clone()))
            }
            Content::TopicCreated { name, .. } => (name.clone(), Vec::new(), None),
            Content::Photo { sizes, caption } => {
                let c = caption.clone().unwrap_or_default();
                (c.text, c.entities, sizes.last().cloned())
            }
            Content::Voice { voice, caption } => {
                let c = caption.clone().unwrap_or_default();
                (c.text, c.entities, Some(voice.clone()))
            }
        };
        SentMessage {
            chat_id,
            message_id: m.id,
            from_bot: m.from_bot,
            from: m.from,
            thread_id: m.thread_id,
            reply_to: m.reply_to,
            raw: m.raw.clone(),
            parse_mode: m.parse_mode.clone(),
            text,
            entities,
            reply_markup: m.reply_markup.clone(),
            document,
            edits: m.edits.clone(),
            deleted: m.deleted,
            date: m.date,
            edit_date: m.edit_date,
        }
    }

    pub(crate) fn add_message(&mut self, chat_id: i64, mut msg: Msg) -> Value {
        let chat = self.chats.get_mut(&chat_id).expect("chat checked");
        msg.id = chat.next_id();
        let id = msg.id;
        chat.messages.insert(id, msg);
        let chat = &self.chats[&chat_id];
        self.message_json(chat, &chat.messages[&id], true)
    }

    // -----------------------------------------------------------------------------------
    // Updates.

    pub(crate) fn push_update(&mut self, kind: &str, payload: Value) -> u32 {
        let id = self.next_update_id;
        self.next_update_id += 1;
        let update = json!({"update_id": id, kind: payload});
        let allowed = match &self.allowed_updates {
            Some(list) if !list.is_empty() => list.iter().any(|k| k == kind),
            _ => default_allowed(kind),
        };
        self.update_log.push(UpdateRecord {
            update_id: id,
            kind: kind.to_string(),
            update: update.clone(),
            filtered: !allowed,
            deliveries: 0,
            confirmed: false,
        });
        if allowed {
            self.queue.push_back((id, update));
        }
        id
    }

    /// Apply `offset` as Telegram does: positive confirms every update below it, negative
    /// keeps only the last `-offset` updates.
    pub(crate) fn apply_offset(&mut self, offset: i64) {
        if offset > 0 {
            // An offset far in the future is an error inside Telegram, which then serves
            // from the head without confirming anything.
            if offset > self.next_update_id as i64 + 10 {
                return;
            }
            while self
                .queue
                .front()
                .is_some_and(|(id, _)| (*id as i64) < offset)
            {
                let (id, _) = self.queue.pop_front().expect("front");
                self.confirm(id);
            }
        } else if offset < 0 {
            let keep = (-offset) as usize;
            while self.queue.len() > keep {
                let (id, _) = self.queue.pop_front().expect("front");
                self.confirm(id);
            }
        }
    }

    fn confirm(&mut self, id: u32) {
        if let Some(r) = self.update_log.iter_mut().find(|r| r.update_id == id) {
            r.confirmed = true;
        }
    }

    /// Up to `limit` unconfirmed updates (after `apply_offset`), counted as delivered.
    pub(crate) fn take_updates(&mut self, limit: usize) -> Vec<Value> {
        let out: Vec<(u32, Value)> = self.queue.iter().take(limit).cloned().collect();
        for (id, _) in &out {
            if let Some(r) = self.update_log.iter_mut().find(|r| r.update_id == *id) {
                r.deliveries += 1;
            }
        }
        out.into_iter().map(|(_, u)| u).collect()
    }

    pub(crate) fn set_allowed_updates(&mut self, p: &Params) -> Result<(), ApiError> {
        if let Some(list) = p.json("allowed_updates", "allowed updates")? {
            let list = list
                .as_array()
                .ok_or_else(|| ApiError::bad("can't parse allowed updates JSON object"))?;
            self.allowed_updates = Some(
                list.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect(),
            );
        }
        Ok(())
    }

    pub(crate) fn get_updates_params(p: &Params) -> Result<(i64, usize, u64), ApiError> {
        let offset = p.int("offset")?.unwrap_or(0);
        let limit = p.int("limit")?.unwrap_or(100).clamp(1, 100) as usize;
        let timeout = p.int("timeout")?.unwrap_or(0).max(0) as u64;
        Ok((offset, limit, timeout))
    }
}

impl State {
    // -----------------------------------------------------------------------------------
    // The test's side: what users do.

    pub(crate) fn inject_message(&mut self, m: &UserMessage) -> anyhow::Result<Injected> {
        let chat = self
            .chats
            .get(&m.chat_id)
            .with_context(|| format!("no chat {} in the fake", m.chat_id))?;
        if let ChatSpec::Private { user } = &chat.spec {
            ensure!(
                user.id == m.from,
                "user {} cannot write in the private chat of user {}",
                m.from,
                user.id
            );
        }
        ensure!(m.from != self.bot.id, "the bot sends through the Bot API");
        let mut thread_id = match m.thread_id {
            Some(t) => {
                ensure!(
                    chat.is_forum() && chat.topics.get(&t).is_some_and(|t| !t.deleted),
                    "chat {} has no topic {t}",
                    m.chat_id
                );
                Some(t)
            }
            None => None,
        };
        if let Some(r) = m.reply_to {
            let target = chat
                .live(r)
                .with_context(|| format!("no message {r} in chat {} to reply to", m.chat_id))?;
            match thread_id {
                None => thread_id = target.thread_id,
                Some(t) => ensure!(
                    target.thread_id == Some(t),
                    "message {r} is not in topic {t}"
                ),
            }
        }
        // Telegram marks a leading /command as a bot_command entity.
        let mut entities = Vec::new();
        if m.text.starts_with('/') {
            let command = m.text.split_whitespace().next().unwrap_or("");
            entities
                .push(json!({"type": "bot_command", "offset": 0, "length": utf16_len(command)}));
        }
        let text = Formatted {
            text: m.text.clone(),
            entities,
        };
        let content = match &m.file {
            None => Content::Text(text),
            Some(file) => self.user_file(file, (!m.text.is_empty()).then_some(text)),
        };
        let msg = Msg {
            id: 0,
            date: unix_now(),
            from: m.from,
            from_bot: false,
            thread_id,
            reply_to: m.reply_to,
            content,
            raw: m.text.clone(),
            parse_mode: None,
            reply_markup: None,
            edit_date: None,
            edits: Vec::new(),
            deleted: false,
        };
        let message = self.add_message(m.chat_id, msg);
        let message_id = message["message_id"].as_i64().unwrap_or(0) as i32;
        let update_id = self.push_update("message", message);
        Ok(Injected {
            update_id,
            message_id,
        })
    }

    /// A user's file as Telegram holds it: each size of a photo (a thumbnail of other
    /// bytes first, so a bot that takes the wrong one gets the wrong bytes) is a file
    /// `getFile` knows.
    fn user_file(&mut self, file: &UserFile, caption: Option<Formatted>) -> Content {
        let mut stored = |bytes: Vec<u8>, name: &str| {
            let n = self.next_file;
            self.next_file += 1;
            let doc = SentDocument {
                file_id: format!("AgACAgfake{n:06}"),
                file_unique_id: format!("AQADfake{n:06}"),
                file_name: name.to_string(),
                mime_type: file.mime.clone(),
                bytes,
            };
            self.files.insert(doc.file_id.clone(), doc.clone());
            doc
        };
        match file.kind {
            UserFileKind::Photo => {
                let thumb = stored(b"thumbnail".to_vec(), "thumb.jpg");
                let full = stored(file.bytes.clone(), &file.name);
                Content::Photo {
                    sizes: vec![thumb, full],
                    caption,
                }
            }
            UserFileKind::Document => Content::Document {
                document: stored(file.bytes.clone(), &file.name),
                caption,
            },
            UserFileKind::Voice => Content::Voice {
                voice: stored(file.bytes.clone(), &file.name),
                caption,
            },
        }
    }

    pub(crate) fn press_button(
        &mut self,
        chat_id: i64,
        message_id: i32,
        from: i64,
        data: &str,
        now: Instant,
    ) -> anyhow::Result<InjectedCallback> {
        let chat = self
            .chats
            .get(&chat_id)
            .with_context(|| format!("no chat {chat_id} in the fake"))?;
        if let ChatSpec::Private { user } = &chat.spec {
            ensure!(
                user.id == from,
                "user {from} cannot see the private chat of user {}",
                user.id
            );
        }
        let msg = chat
            .live(message_id)
            .with_context(|| format!("no message {message_id} in chat {chat_id}"))?;
        ensure!(msg.from_bot, "message {message_id} is not the bot's");
        let buttons: Vec<&str> = inline_markup(&msg.reply_markup)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_array)
            .flatten()
            .filter_map(|b| b.get("callback_data").and_then(Value::as_str))
            .collect();
        ensure!(
            buttons.contains(&data),
            "message {message_id} has no button with callback_data {data:?} (it has {buttons:?})"
        );
        let message = self.message_json(chat, msg, true);
        let query_id = format!("{}{:08}", self.bot.id, self.next_update_id);
        let payload = json!({
            "id": query_id,
            "from": self.user_json(from),
            "message": message,
            "chat_instance": format!("{}", (chat_id as i128 * 7919).abs()),
            "data": data,
        });
        self.callbacks.insert(
            query_id.clone(),
            PendingCallback {
                created: now,
                answered: false,
            },
        );
        let update_id = self.push_update("callback_query", payload);
        Ok(InjectedCallback {
            update_id,
            query_id,
        })
    }
}

/// The part of a markup that a message shows (only inline keyboards stay attached).
pub(crate) fn inline_markup(markup: &Option<Value>) -> Option<&Value> {
    markup
        .as_ref()
        .and_then(|m| m.get("inline_keyboard"))
        .filter(|rows| rows.as_array().is_some_and(|r| !r.is_empty()))
}
