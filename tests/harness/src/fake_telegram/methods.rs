//! The Bot API methods other than `getUpdates`, checked the way Telegram checks them.

use serde_json::{Value, json};
use tokio::time::Instant;

use super::html::{self, Formatted, utf16_len};
use super::state::{
    ApiError, ChatState, Content, MAX_CAPTION, MAX_TEXT, Msg, Params, State, inline_markup,
    unix_now,
};
use super::{CallbackAnswer, MessageVersion, SentDocument, Topic};

type ApiResult = Result<Value, ApiError>;

/// Topic icon colors Telegram allows; the first is its default.
const TOPIC_COLORS: [i64; 6] = [7322096, 16766590, 13338331, 9367192, 16749490, 16478047];

impl State {
    fn chat(&self, id: i64) -> Result<&ChatState, ApiError> {
        self.chats
            .get(&id)
            .ok_or_else(|| ApiError::bad("chat not found"))
    }

    fn chat_mut(&mut self, id: i64) -> Result<&mut ChatState, ApiError> {
        self.chats
            .get_mut(&id)
            .ok_or_else(|| ApiError::bad("chat not found"))
    }

    fn rate_limit(&mut self, chat_id: i64, now: Instant, is_edit: bool) -> Result<(), ApiError> {
        match &mut self.limiter {
            Some(l) if !is_edit || l.counts_edits() => {
                l.take(chat_id, now).map_err(ApiError::too_many)
            }
            _ => Ok(()),
        }
    }

    /// Text after parse mode and trimming, or Telegram's refusal.
    fn format(
        &self,
        raw: &str,
        parse_mode: Option<&str>,
        entities: Option<Value>,
    ) -> Result<Formatted, ApiError> {
        let mode = parse_mode.unwrap_or("").to_ascii_lowercase();
        let formatted = match mode.as_str() {
            "" | "none" => Formatted {
                text: raw.to_string(),
                entities: match entities {
                    Some(Value::Array(list)) => list,
                    _ => Vec::new(),
                },
            },
            "html" => html::parse_html(raw, self.strict_ampersand)
                .map_err(|reason| ApiError::bad(format!("can't parse entities: {reason}")))?,
            // The fake does not parse Markdown: the text is kept as sent.
            "markdown" | "markdownv2" => Formatted {
                text: raw.to_string(),
                entities: Vec::new(),
            },
            _ => return Err(ApiError::bad("unsupported parse_mode")),
        };
        html::trim(formatted).ok_or_else(|| ApiError::bad("text must be non-empty"))
    }

    /// `reply_markup`, checked as Telegram checks inline keyboards.
    fn markup(p: &Params) -> Result<Option<Value>, ApiError> {
        let Some(markup) = p.json("reply_markup", "reply keyboard markup")? else {
            return Ok(None);
        };
        if !markup.is_object() {
            return Err(ApiError::bad(
                "can't parse reply keyboard markup JSON object",
            ));
        }
        if let Some(rows) = markup.get("inline_keyboard") {
            let rows = rows
                .as_array()
                .ok_or_else(|| ApiError::bad("field \"inline_keyboard\" of the InlineKeyboardMarkup should be an Array of Arrays"))?;
            for row in rows {
                let row = row.as_array().ok_or_else(|| {
                    ApiError::bad("field \"inline_keyboard\" of the InlineKeyboardMarkup should be an Array of Arrays")
                })?;
                for button in row {
                    check_button(button)?;
                }
            }
        }
        Ok(Some(markup))
    }

    /// The forum topic a message goes to, checked.
    fn thread(chat: &ChatState, p: &Params) -> Result<Option<i32>, ApiError> {
        let Some(thread) = p.int("message_thread_id")? else {
            return Ok(None);
        };
        if thread == 0 {
            return Ok(None);
        }
        let thread = thread as i32;
        match chat.topics.get(&thread) {
            Some(t) if chat.is_forum() && !t.deleted => Ok(Some(thread)),
            _ => Err(ApiError::bad("message thread not found")),
        }
    }

    /// The message a send replies to, from `reply_parameters` or `reply_to_message_id`.
    fn reply_target(chat: &ChatState, p: &Params) -> Result<Option<i32>, ApiError> {
        let (id, allow_missing) = match p.json("reply_parameters", "reply parameters")? {
            Some(rp) => {
                if rp
                    .get("chat_id")
                    .is_some_and(|c| c.as_i64() != Some(chat.spec.id()))
                {
                    return Err(ApiError::bad(
                        "replying to messages in other chats is not supported by the fake",
                    ));
                }
                (
                    rp.get("message_id").and_then(Value::as_i64),
                    rp.get("allow_sending_without_reply")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                )
            }
            None => (
                p.int("reply_to_message_id")?,
                p.bool("allow_sending_without_reply"),
            ),
        };
        let Some(id) = id else { return Ok(None) };
        match chat.live(id as i32) {
            Some(_) => Ok(Some(id as i32)),
            None if allow_missing => Ok(None),
            None => Err(ApiError::bad("message to be replied not found")),
        }
    }

    /// Run one method other than `getUpdates`. `method` is lower case.
    pub(crate) fn call(&mut self, method: &str, p: &Params, now: Instant) -> ApiResult {
        if let Some((failing, status, left)) = &mut self.server_errors
            && failing == method
            && *left > 0
        {
            *left -= 1;
            let status = *status;
            return Err(ApiError::new(status, "Internal Server Error"));
        }
        match method {
            "getme" => Ok(self.get_me()),
            "getwebhookinfo" => Ok(json!({
                "url": "", "has_custom_certificate": false,
                "pending_update_count": self.queue.len(),
            })),
            "deletewebhook" => {
                if p.bool("drop_pending_updates") {
                    self.queue.clear();
                }
                Ok(json!(true))
            }
            "sendmessage" => self.send_message(p, now),
            "editmessagetext" => self.edit_message_text(p, now),
            "editmessagereplymarkup" => self.edit_reply_markup(p, now),
            "deletemessage" => self.delete_message(p),
            "answercallbackquery" => self.answer_callback(p, now),
            "createforumtopic" => self.create_topic(p),
            "editforumtopic" => self.edit_topic(p),
            "closeforumtopic" | "reopenforumtopic" | "deleteforumtopic" => {
                self.topic_state(method, p)
            }
            "senddocument" => self.send_document(p, now),
            "getfile" => self.get_file(p),
            "setmycommands" => self.set_commands(p),
            "getmycommands" => Ok(self
                .commands
                .get(&command_scope(p)?)
                .cloned()
                .unwrap_or_else(|| json!([]))),
            "deletemycommands" => {
                self.commands.remove(&command_scope(p)?);
                Ok(json!(true))
            }
            "sendchataction" => {
                let chat = self.chat(p.chat_id()?)?;
                Self::thread(chat, p)?;
                Ok(json!(true))
            }
            "getchat" => self.get_chat(p),
            _ => Err(ApiError::new(404, "Not Found")),
        }
    }

    fn get_me(&self) -> Value {
        let mut me = self.user_json(self.bot.id);
        for (k, v) in [
            ("can_join_groups", true),
            ("can_read_all_group_messages", false),
            ("supports_inline_queries", false),
            ("can_connect_to_business", false),
            ("has_main_web_app", false),
        ] {
            me[k] = json!(v);
        }
        me
    }

    fn get_chat(&self, p: &Params) -> ApiResult {
        let chat = self.chat(p.chat_id()?)?;
        let mut v = chat.json();
        v["accent_color_id"] = json!(0);
        v["max_reaction_count"] = json!(11);
        v["accepted_gift_types"] = json!({"unlimited_gifts": false, "limited_gifts": false,
            "unique_gifts": false, "premium_subscription": false});
        Ok(v)
    }

    fn send_message(&mut self, p: &Params, now: Instant) -> ApiResult {
        let chat_id = p.chat_id()?;
        let raw = p.str("text").unwrap_or_default();
        if raw.is_empty() {
            return Err(ApiError::bad("message text is empty"));
        }
        let parse_mode = p.str("parse_mode");
        let formatted =
            self.format(&raw, parse_mode.as_deref(), p.json("entities", "entities")?)?;
        if utf16_len(&formatted.text) > MAX_TEXT {
            return Err(ApiError::bad("message is too long"));
        }
        let markup = Self::markup(p)?;
        let chat = self.chat(chat_id)?;
        let mut thread_id = Self::thread(chat, p)?;
        let reply_to = Self::reply_target(chat, p)?;
        if thread_id.is_none()
            && let Some(target) = reply_to.and_then(|id| chat.live(id))
        {
            thread_id = target.thread_id;
        }
        self.rate_limit(chat_id, now, false)?;
        let msg = Msg {
            id: 0,
            date: unix_now(),
            from: self.bot.id,
            from_bot: true,
            thread_id,
            reply_to,
            content: Content::Text(formatted),
            raw,
            parse_mode,
            reply_markup: markup,
            edit_date: None,
            edits: Vec::new(),
            deleted: false,
        };
        Ok(self.add_message(chat_id, msg))
    }

    /// The bot's own live message for an edit.
    fn editable(&self, p: &Params) -> Result<(i64, i32), ApiError> {
        if p.get("inline_message_id").is_some() {
            return Err(ApiError::bad(
                "inline messages are not supported by the fake",
            ));
        }
        let chat_id = p.chat_id()?;
        let id = p.message_id()?;
        let chat = self.chat(chat_id)?;
        let msg = chat
            .live(id)
            .ok_or_else(|| ApiError::bad("message to edit not found"))?;
        if !msg.from_bot || matches!(msg.content, Content::TopicCreated { .. }) {
            return Err(ApiError::bad("message can't be edited"));
        }
        Ok((chat_id, id))
    }

    fn edit_message_text(&mut self, p: &Params, now: Instant) -> ApiResult {
        let raw = p.str("text").unwrap_or_default();
        if raw.is_empty() {
            return Err(ApiError::bad("message text is empty"));
        }
        let (chat_id, id) = self.editable(p)?;
        let parse_mode = p.str("parse_mode");
        let formatted =
            self.format(&raw, parse_mode.as_deref(), p.json("entities", "entities")?)?;
        if utf16_len(&formatted.text) > MAX_TEXT {
            return Err(ApiError::bad("MESSAGE_TOO_LONG"));
        }
        // Without reply_markup the edit removes the keyboard, as on Telegram.
        let markup = Self::markup(p)?;
        let msg = &self.chats[&chat_id].messages[&id];
        let Content::Text(current) = &msg.content else {
            return Err(ApiError::bad("there is no text in the message to edit"));
        };
        if *current == formatted && inline_markup(&msg.reply_markup) == inline_markup(&markup) {
            return Err(not_modified());
        }
        self.rate_limit(chat_id, now, true)?;
        let msg = self
            .chats
            .get_mut(&chat_id)
            .and_then(|c| c.messages.get_mut(&id))
            .expect("checked");
        msg.edits.push(version(msg));
        msg.content = Content::Text(formatted);
        msg.raw = raw;
        msg.parse_mode = parse_mode;
        msg.reply_markup = markup;
        msg.edit_date = Some(unix_now());
        let chat = &self.chats[&chat_id];
        Ok(self.message_json(chat, &chat.messages[&id], true))
    }

    fn edit_reply_markup(&mut self, p: &Params, now: Instant) -> ApiResult {
        let (chat_id, id) = self.editable(p)?;
        let markup = Self::markup(p)?;
        let msg = &self.chats[&chat_id].messages[&id];
        if inline_markup(&msg.reply_markup) == inline_markup(&markup) {
            return Err(not_modified());
        }
        self.rate_limit(chat_id, now, true)?;
        let msg = self
            .chats
            .get_mut(&chat_id)
            .and_then(|c| c.messages.get_mut(&id))
            .expect("checked");
        msg.edits.push(version(msg));
        msg.reply_markup = markup;
        msg.edit_date = Some(unix_now());
        let chat = &self.chats[&chat_id];
        Ok(self.message_json(chat, &chat.messages[&id], true))
    }

    fn delete_message(&mut self, p: &Params) -> ApiResult {
        let chat_id = p.chat_id()?;
        let id = p.message_id()?;
        let chat = self.chat_mut(chat_id)?;
        match chat.messages.get_mut(&id).filter(|m| !m.deleted) {
            Some(m) if matches!(m.content, Content::TopicCreated { .. }) => {
                Err(ApiError::bad("message can't be deleted"))
            }
            Some(m) => {
                m.deleted = true;
                Ok(json!(true))
            }
            None => Err(ApiError::bad("message to delete not found")),
        }
    }

    fn answer_callback(&mut self, p: &Params, now: Instant) -> ApiResult {
        let id = p
            .str("callback_query_id")
            .ok_or_else(|| ApiError::bad("callback_query_id is empty"))?;
        let timeout = self.callback_timeout;
        let expired = || {
            ApiError::bad("query is too old and response timeout expired or query ID is invalid")
        };
        let pending = self.callbacks.get_mut(&id).ok_or_else(expired)?;
        if pending.answered || now.saturating_duration_since(pending.created) > timeout {
            return Err(expired());
        }
        pending.answered = true;
        let after = now.saturating_duration_since(pending.created);
        self.callback_answers.push(CallbackAnswer {
            query_id: id,
            text: p.str("text"),
            show_alert: p.bool("show_alert"),
            url: p.str("url"),
            after,
        });
        Ok(json!(true))
    }

    fn forum(&mut self, p: &Params) -> Result<&mut ChatState, ApiError> {
        let chat = self.chat_mut(p.chat_id()?)?;
        if !chat.is_forum() {
            return Err(ApiError::bad("the chat is not a forum"));
        }
        Ok(chat)
    }

    fn create_topic(&mut self, p: &Params) -> ApiResult {
        let name = p.str("name").unwrap_or_default();
        check_topic_name(&name)?;
        let icon_color = p.int("icon_color")?.unwrap_or(TOPIC_COLORS[0]);
        if !TOPIC_COLORS.contains(&icon_color) {
            return Err(ApiError::bad("invalid icon_color specified"));
        }
        let bot_id = self.bot.id;
        let chat = self.forum(p)?;
        // The topic's id is the id of its creation message, as on Telegram.
        let id = chat.next_id();
        chat.messages.insert(
            id,
            Msg {
                id,
                date: unix_now(),
                from: bot_id,
                from_bot: true,
                thread_id: Some(id),
                reply_to: None,
                content: Content::TopicCreated {
                    name: name.clone(),
                    icon_color,
                },
                raw: name.clone(),
                parse_mode: None,
                reply_markup: None,
                edit_date: None,
                edits: Vec::new(),
                deleted: false,
            },
        );
        let chat_id = p.chat_id()?;
        chat.topics.insert(
            id,
            Topic {
                chat_id,
                thread_id: id,
                name: name.clone(),
                icon_color,
                renames: Vec::new(),
                closed: false,
                deleted: false,
            },
        );
        Ok(json!({"message_thread_id": id, "name": name, "icon_color": icon_color}))
    }

    fn topic<'a>(chat: &'a mut ChatState, p: &Params) -> Result<&'a mut Topic, ApiError> {
        let thread = p
            .int("message_thread_id")?
            .ok_or_else(|| ApiError::bad("message thread not found"))?;
        chat.topics
            .get_mut(&(thread as i32))
            .filter(|t| !t.deleted)
            .ok_or_else(|| ApiError::bad("message thread not found"))
    }

    fn edit_topic(&mut self, p: &Params) -> ApiResult {
        let name = p.str("name");
        if let Some(name) = &name {
            check_topic_name(name)?;
        }
        let emoji_changed = p.get("icon_custom_emoji_id").is_some();
        let chat = self.forum(p)?;
        let topic = Self::topic(chat, p)?;
        match name {
            Some(name) if name != topic.name => {
                let old = std::mem::replace(&mut topic.name, name);
                topic.renames.push(old);
                Ok(json!(true))
            }
            _ if emoji_changed => Ok(json!(true)),
            _ => Err(ApiError::bad("TOPIC_NOT_MODIFIED")),
        }
    }

    fn topic_state(&mut self, method: &str, p: &Params) -> ApiResult {
        let chat = self.forum(p)?;
        let topic = Self::topic(chat, p)?;
        match method {
            "closeforumtopic" if topic.closed => Err(ApiError::bad("TOPIC_NOT_MODIFIED")),
            "reopenforumtopic" if !topic.closed => Err(ApiError::bad("TOPIC_NOT_MODIFIED")),
            "closeforumtopic" => {
                topic.closed = true;
                Ok(json!(true))
            }
            "reopenforumtopic" => {
                topic.closed = false;
                Ok(json!(true))
            }
            _ => {
                topic.deleted = true;
                let thread = topic.thread_id;
                for m in chat.messages.values_mut() {
                    if m.thread_id == Some(thread) {
                        m.deleted = true;
                    }
                }
                Ok(json!(true))
            }
        }
    }

    fn send_document(&mut self, p: &Params, now: Instant) -> ApiResult {
        let chat_id = p.chat_id()?;
        let document = self.document_param(p)?;
        let raw = p.str("caption").unwrap_or_default();
        let parse_mode = p.str("parse_mode");
        let caption = if raw.is_empty() {
            None
        } else {
            match self.format(
                &raw,
                parse_mode.as_deref(),
                p.json("caption_entities", "caption entities")?,
            ) {
                Ok(c) => Some(c),
                // An all-whitespace caption is no caption.
                Err(e) if e.description.ends_with("text must be non-empty") => None,
                Err(e) => return Err(e),
            }
        };
        if caption
            .as_ref()
            .is_some_and(|c| utf16_len(&c.text) > MAX_CAPTION)
        {
            return Err(ApiError::bad("message caption is too long"));
        }
        let markup = Self::markup(p)?;
        let chat = self.chat(chat_id)?;
        let thread_id = Self::thread(chat, p)?;
        let reply_to = Self::reply_target(chat, p)?;
        self.rate_limit(chat_id, now, false)?;
        self.files
            .insert(document.file_id.clone(), document.clone());
        let msg = Msg {
            id: 0,
            date: unix_now(),
            from: self.bot.id,
            from_bot: true,
            thread_id,
            reply_to,
            content: Content::Document { document, caption },
            raw,
            parse_mode,
            reply_markup: markup,
            edit_date: None,
            edits: Vec::new(),
            deleted: false,
        };
        Ok(self.add_message(chat_id, msg))
    }

    /// The `document` parameter: a file part, `attach://<part>`, or a known file_id.
    fn document_param(&mut self, p: &Params) -> Result<SentDocument, ApiError> {
        let upload =
            match (p.files.get("document"), p.str("document")) {
                (Some(upload), _) => upload.clone(),
                (None, Some(value)) => {
                    match value.strip_prefix("attach://") {
                        Some(part) => p.files.get(part).cloned().ok_or_else(|| {
                            ApiError::bad("wrong file identifier/HTTP URL specified")
                        })?,
                        None => {
                            return self.files.get(&value).cloned().ok_or_else(|| {
                                ApiError::bad("wrong file identifier/HTTP URL specified")
                            });
                        }
                    }
                }
                (None, None) => return Err(ApiError::bad("there is no document in the request")),
            };
        if upload.bytes.is_empty() {
            return Err(ApiError::bad("file must be non-empty"));
        }
        let n = self.next_file;
        self.next_file += 1;
        let file_name = upload
            .file_name
            .clone()
            .unwrap_or_else(|| "document".into());
        let mime_type = match upload.content_type.as_deref() {
            Some(ct) if ct != "application/octet-stream" => ct.to_string(),
            _ => mime_for(&file_name).to_string(),
        };
        Ok(SentDocument {
            file_id: format!("BQACAgfake{n:06}"),
            file_unique_id: format!("AgADfake{n:06}"),
            file_name,
            mime_type,
            bytes: upload.bytes,
        })
    }

    fn set_commands(&mut self, p: &Params) -> ApiResult {
        let commands = p
            .json("commands", "commands")?
            .ok_or_else(|| ApiError::bad("can't parse commands JSON object"))?;
        let list = commands
            .as_array()
            .ok_or_else(|| ApiError::bad("can't parse commands JSON object"))?;
        if list.len() > 100 {
            return Err(ApiError::bad("too many commands specified"));
        }
        for c in list {
            let command = c["command"].as_str().unwrap_or("");
            let command = command.strip_prefix('/').unwrap_or(command);
            let valid = (1..=32).contains(&command.len())
                && command
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            if !valid {
                return Err(ApiError::bad("BOT_COMMAND_INVALID"));
            }
            let description = c["description"].as_str().unwrap_or("");
            if !(1..=256).contains(&description.chars().count()) {
                return Err(ApiError::bad("BOT_COMMAND_DESCRIPTION_INVALID"));
            }
        }
        self.commands.insert(command_scope(p)?, commands);
        Ok(json!(true))
    }
}

/// The most a bot may download through the cloud Bot API.
const MAX_DOWNLOAD: usize = 20 << 20;

impl State {
    /// `getFile`: a file's path for the download URL; Telegram refuses an unknown id and a
    /// file over 20 MB.
    fn get_file(&self, p: &Params) -> ApiResult {
        let id = p
            .str("file_id")
            .ok_or_else(|| ApiError::bad("file_id is empty"))?;
        let file = self
            .files
            .get(&id)
            .ok_or_else(|| ApiError::bad("invalid file_id"))?;
        if file.bytes.len() > MAX_DOWNLOAD {
            return Err(ApiError::bad("file is too big"));
        }
        Ok(json!({
            "file_id": file.file_id,
            "file_unique_id": file.file_unique_id,
            "file_size": file.bytes.len(),
            "file_path": file_path(file),
        }))
    }

    /// The bytes behind a download path `getFile` gave.
    pub(crate) fn download(&self, path: &str) -> Option<Vec<u8>> {
        self.files
            .values()
            .find(|f| file_path(f) == path)
            .map(|f| f.bytes.clone())
    }
}

/// Where a file downloads from: `documents/file_<n>.<ext>`, as Telegram names them.
fn file_path(file: &SentDocument) -> String {
    let ext = file.file_name.rsplit_once('.').map_or("", |(_, e)| e);
    format!("documents/{}.{ext}", file.file_unique_id)
}

fn not_modified() -> ApiError {
    ApiError::bad(
        "message is not modified: specified new message content and reply markup are exactly \
         the same as a current content and reply markup of the message",
    )
}

fn version(m: &Msg) -> MessageVersion {
    let (text, entities) = match &m.content {
        Content::Text(f) => (f.text.clone(), f.entities.clone()),
        Content::Document { caption, .. } => {
            let c = caption.clone().unwrap_or_default();
            (c.text, c.entities)
        }
        Content::TopicCreated { name, .. } => (name.clone(), Vec::new()),
        Content::Photo { caption, .. } | Content::Voice { caption, .. } => {
            let c = caption.clone().unwrap_or_default();
            (c.text, c.entities)
        }
    };
    MessageVersion {
        raw: m.raw.clone(),
        parse_mode: m.parse_mode.clone(),
        text,
        entities,
        reply_markup: m.reply_markup.clone(),
    }
}

fn check_button(button: &Value) -> Result<(), ApiError> {
    let text = button.get("text").and_then(Value::as_str);
    if text.is_none() {
        return Err(ApiError::bad(
            "can't parse inline keyboard button: Field \"text\" must be of type String",
        ));
    }
    const ACTIONS: [&str; 9] = [
        "callback_data",
        "url",
        "web_app",
        "login_url",
        "switch_inline_query",
        "switch_inline_query_current_chat",
        "switch_inline_query_chosen_chat",
        "copy_text",
        "pay",
    ];
    if !ACTIONS.iter().any(|a| button.get(*a).is_some()) {
        return Err(ApiError::bad(
            "can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard",
        ));
    }
    if let Some(data) = button.get("callback_data") {
        let len = data.as_str().map_or(0, str::len);
        if !(1..=64).contains(&len) {
            return Err(ApiError::bad("BUTTON_DATA_INVALID"));
        }
    }
    if let Some(url) = button.get("url") {
        let url = url.as_str().unwrap_or("");
        let ok = ["http://", "https://", "tg://"]
            .iter()
            .any(|s| url.starts_with(s) && url.len() > s.len());
        if !ok {
            return Err(ApiError::bad("BUTTON_URL_INVALID"));
        }
    }
    Ok(())
}

fn check_topic_name(name: &str) -> Result<(), ApiError> {
    match name.chars().count() {
        0 => Err(ApiError::bad("TOPIC_TITLE_EMPTY")),
        1..=128 => Ok(()),
        _ => Err(ApiError::bad("TOPIC_TITLE_TOO_LONG")),
    }
}

/// Commands are stored per scope and language, as Telegram does.
fn command_scope(p: &Params) -> Result<String, ApiError> {
    let scope = match p.json("scope", "BotCommandScope")? {
        None => "default".to_string(),
        Some(s) if s["type"] == "default" => "default".to_string(),
        Some(s) => s.to_string(),
    };
    let lang = p.str("language_code").unwrap_or_default();
    Ok(if lang.is_empty() {
        scope
    } else {
        format!("{scope}/{lang}")
    })
}

/// The MIME type Telegram infers from a file name.
fn mime_for(file_name: &str) -> &'static str {
    let ext = file_name
        .rsplit('.')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    match ext.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" | "log" => "text/plain",
        "json" => "application/json",
        "html" | "htm" => "text/html",
        "csv" => "text/csv",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "diff" | "patch" => "text/x-diff",
        _ => "application/octet-stream",
    }
}
