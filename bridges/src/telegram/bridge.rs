//! Telegram as a relay [`Platform`]: a session's place is its forum topic (created when
//! the session first registers, or on first need; in a private chat or a group without topics, the chat itself, and messages
//! carry the session's name), posts go through the outbox (split below Telegram's limit,
//! or a `.md` document), an ask's options are inline buttons, and `telegram.db` remembers
//! topics, cards and which message is about which session. What the human writes is read
//! in [`super::updates`].

use teloxide::Bot;
use teloxide::payloads::EditForumTopicSetters;
use teloxide::prelude::Requester;
use teloxide::types::{
    ChatId, ForceReply, InlineKeyboardButton, InlineKeyboardMarkup, MessageId, ReplyMarkup,
    ThreadId,
};

use crate::chat::approvals::ApprovalRef;
use crate::chat::workers::WorkerRef;
use shepherd_core::protocol::{Approval, ApprovalScope, Ask, AskRef, Peek, SessionInfo, WorkerId};

use super::outbox::{OutboxOp, TelegramOutbox};
use super::store::{BridgeStore, Card};
use crate::chat::access::Allowlist;
use crate::chat::render::{self, AskCard, Rendered};
use crate::chat::typed::UNDO_LABEL;
use crate::chat::{places, split};
use crate::relay::Platform;

/// Telegram's message limit (after entity parsing).
pub const MAX_TEXT: usize = split::TELEGRAM_LIMIT;
/// More chunks than this and the content goes as a `.md` document.
pub const MAX_MESSAGES: usize = 3;

/// The Telegram side of the bridge: its chat and its ways out.
pub struct Telegram {
    pub bot: Bot,
    pub outbox: TelegramOutbox,
    pub store: BridgeStore,
    pub chat_id: i64,
    /// Who may use the bot, in which chat.
    pub allow: Allowlist<i64>,
    pub username: String,
    /// Whether the chat has forum topics: false for private chats, learned for groups.
    pub forum: Option<bool>,
    /// A topic per session or per repository (`[telegram] topics`).
    pub places: shepherd_core::config::Places,
}

impl Platform for Telegram {
    /// The topic's thread id.
    type Place = i32;
    const PREFIX: char = '/';
    const NAME: &'static str = "telegram";
    const UNDO_HINT: &'static str =
        "Meant as a steer? Tap the button below while the session has not read it.";
    const APPROVAL_HINT: &'static str =
        "tap a button, or reply to this card to deny it with your reply as the reason";

    fn has_card(&self, ask: &AskRef) -> bool {
        let cards = self.store.cards_of(ask).unwrap_or_default();
        cards.iter().any(|c| !c.answered)
    }

    fn open_cards(&self) -> Vec<AskRef> {
        let cards = self.store.open_cards().unwrap_or_default();
        cards.into_iter().map(|c| c.ask).collect()
    }

    /// The forum topic of a session, created on first need; `None` outside forums.
    async fn place_of(&mut self, session_id: &str, info: Option<&SessionInfo>) -> Option<i32> {
        if self.forum == Some(false) {
            return None;
        }
        let key = places::place_key(session_id, info, self.places);
        if key != session_id && self.placed(session_id).as_deref() != Some(key.as_str()) {
            // Remembered: its later news (and a restart's) find the repository's topic.
            let remembered = format!("placed:{session_id}:{}", self.chat_id);
            self.remember(self.store.set_meta(&remembered, &key));
        }
        let session_id = key.as_str();
        if let Ok(Some((thread, _))) = self.store.topic(session_id, self.chat_id) {
            return Some(thread);
        }
        let name = match (places::project_place_name(session_id), info) {
            (Some(project), _) => project,
            (None, Some(s)) => render::topic_name(s),
            (None, None) => session_id.chars().take(32).collect(),
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
            let document = OutboxOp::Document {
                chat: self.chat_id,
                thread,
                file_name: format!("{what}.md"),
                bytes: rendered.plain.clone().into_bytes(),
                caption_html: caption,
            };
            vec![self.outbox.send(document).await]
        } else {
            let mut ids = Vec::new();
            for chunk in split::split_html(&rendered.html, MAX_TEXT) {
                let plain = chunk.clone();
                ids.push(self.send(thread, chunk, plain, None).await);
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

    /// One message in `thread`; a reply to it steers `session`, and so does a reply to
    /// what its button (`s:<session>`) asks.
    async fn post_line(&mut self, thread: Option<i32>, line: Rendered, session: &str) {
        let data = format!("s:{session}");
        let keyboard = (data.len() <= 64).then(|| {
            InlineKeyboardMarkup::new([[InlineKeyboardButton::callback(STEER_LABEL, data)]])
        });
        match self.send(thread, line.html, line.plain, keyboard).await {
            Ok(id) => self.remember(self.store.set_about(self.chat_id, id, session)),
            Err(e) => tracing::error!(error = %e, "telegram: could not post a line"),
        }
    }

    async fn post_staff(
        &mut self,
        thread: Option<i32>,
        head: Rendered,
        lines: Vec<crate::relay::commands::StaffLine>,
    ) {
        // One message, the tree, with a ✍️ button per session.
        let buttons = lines
            .iter()
            .map(|l| {
                let label = format!("✍️ {}", crate::chat::format::truncate(&l.name, 30));
                (label, l.session.to_string())
            })
            .collect();
        let tree = lines.into_iter().fold(head, |tree, l| tree.then(l.line));
        self.post_choices(thread, tree, buttons).await;
    }

    async fn post_choices(
        &mut self,
        thread: Option<i32>,
        head: Rendered,
        choices: Vec<(String, String)>,
    ) {
        let keyboard = ask_keyboard(choices.into_iter());
        if let Err(e) = self.send(thread, head.html, head.plain, keyboard).await {
            tracing::error!(error = %e, "telegram: could not post a message with buttons");
        }
    }

    async fn post_worker_line(&mut self, thread: Option<i32>, line: Rendered, worker: &WorkerRef) {
        let keyboard = InlineKeyboardMarkup::new([[InlineKeyboardButton::callback(
            CLOSE_LABEL,
            format!("x:{worker}"),
        )]]);
        match self
            .send(thread, line.html, line.plain, Some(keyboard))
            .await
        {
            Ok(id) => self.remember(self.store.set_about(self.chat_id, id, &worker.to_string())),
            Err(e) => tracing::error!(error = %e, "telegram: could not post a worker's line"),
        }
    }

    async fn post_card(&mut self, thread: Option<i32>, _home: &str, ask: &Ask, card: AskCard) {
        let keyboard = option_keyboard(ask);
        match self.send(thread, card.html, card.plain, keyboard).await {
            Ok(message_id) => {
                let card = Card {
                    ask: ask.key(),
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
                tracing::error!(ask = %ask.key(), error = %e, "telegram: could not post the ask card")
            }
        }
    }

    async fn post_approval(&mut self, thread: Option<i32>, approval: &Approval, card: Rendered) {
        let keyboard = approval_keyboard(&ApprovalRef::of(approval));
        match self
            .send(thread, card.html, card.plain, Some(keyboard))
            .await
        {
            Ok(message_id) => {
                self.remember(self.store.add_approval_card(
                    self.chat_id,
                    message_id,
                    &ApprovalRef::of(approval),
                ));
            }
            Err(e) => {
                tracing::error!(approval = %approval.id, error = %e, "telegram: could not post the approval card")
            }
        }
    }

    async fn close_approval(&mut self, approval: &Approval, ended: Rendered) {
        for (chat, message) in self
            .store
            .approval_cards_of(&ApprovalRef::of(approval))
            .unwrap_or_default()
        {
            self.outbox.push(OutboxOp::Edit {
                chat,
                message,
                html: ended.html.clone(),
                plain: ended.plain.clone(),
                keyboard: None,
            });
            self.remember(self.store.close_approval_card(chat, message));
        }
    }

    async fn post_peek(&mut self, thread: Option<i32>, peek: &Peek) {
        let rendered = crate::chat::peek::peek(peek, PEEK_HINT);
        let keyboard = peek_keyboard(&crate::chat::peek::target(peek));
        if let Err(e) = self
            .send(thread, rendered.html, rendered.plain, Some(keyboard))
            .await
        {
            tracing::error!(session = %peek.session_id, error = %e, "telegram: could not post the peek");
        }
    }

    async fn post_file(&mut self, thread: Option<i32>, name: String, bytes: Vec<u8>) {
        let document = OutboxOp::Document {
            chat: self.chat_id,
            thread,
            file_name: name,
            bytes,
            caption_html: String::new(),
        };
        if let Err(e) = self.outbox.send(document).await {
            tracing::error!(error = %e, "telegram: could not post a file");
        }
    }

    async fn close_place(&mut self, session: &str) {
        let Ok(Some((thread, _))) = self.store.topic(session, self.chat_id) else {
            return;
        };
        if !self
            .store
            .set_topic_closed(session, self.chat_id, true)
            .unwrap_or(false)
        {
            return;
        }
        let closing = self
            .bot
            .close_forum_topic(ChatId(self.chat_id), ThreadId(MessageId(thread)));
        if let Err(e) = closing.await {
            tracing::warn!(session, error = %e, "telegram: could not close the topic");
        }
    }

    async fn reopen_place(&mut self, session: &str) -> bool {
        let Ok(Some((thread, _))) = self.store.topic(session, self.chat_id) else {
            return false;
        };
        if !self
            .store
            .set_topic_closed(session, self.chat_id, false)
            .unwrap_or(false)
        {
            return false;
        }
        let reopening = self
            .bot
            .reopen_forum_topic(ChatId(self.chat_id), ThreadId(MessageId(thread)));
        if let Err(e) = reopening.await {
            tracing::warn!(session, error = %e, "telegram: could not reopen the topic");
        }
        true
    }

    fn open_places(&self) -> Vec<String> {
        self.store.open_topics(self.chat_id).unwrap_or_default()
    }

    fn open_approvals(&self) -> Vec<ApprovalRef> {
        self.store.open_approvals().unwrap_or_default()
    }

    async fn close_cards(&mut self, ask: &Ask, answered: Rendered) {
        for card in self.store.cards_of(&ask.key()).unwrap_or_default() {
            if card.answered {
                continue;
            }
            self.outbox.push(OutboxOp::Edit {
                chat: card.chat_id,
                message: card.message_id,
                html: answered.html.clone(),
                plain: answered.plain.clone(),
                keyboard: None,
            });
            self.remember(self.store.mark_answered(card.chat_id, card.message_id));
        }
    }

    /// Said with an undo button (`u:<ask>`); a reply to it steers the session.
    async fn offer_undo(
        &mut self,
        thread: Option<i32>,
        session: &str,
        ask: &AskRef,
        said: Rendered,
    ) {
        let button = InlineKeyboardButton::callback(UNDO_LABEL, format!("u:{ask}"));
        let keyboard = InlineKeyboardMarkup::new([[button]]);
        match self
            .send(thread, said.html, said.plain, Some(keyboard))
            .await
        {
            Ok(id) => self.remember(self.store.set_about(self.chat_id, id, session)),
            Err(e) => {
                tracing::error!(ask = %ask, error = %e, "telegram: could not say what answered the ask")
            }
        }
    }

    async fn mark_cards(&mut self, ask: &Ask, rendered: Rendered, buttons: bool) {
        for card in self.store.cards_of(&ask.key()).unwrap_or_default() {
            if card.answered {
                continue;
            }
            self.outbox.push(OutboxOp::Edit {
                chat: card.chat_id,
                message: card.message_id,
                html: rendered.html.clone(),
                plain: rendered.plain.clone(),
                keyboard: if buttons { option_keyboard(ask) } else { None },
            });
        }
    }

    /// A forum topic not created yet (never outside forums).
    fn needs_place(&self, session: &str) -> bool {
        let key = self.place_key_of(session);
        self.forum != Some(false) && !matches!(self.store.topic(&key, self.chat_id), Ok(Some(_)))
    }

    /// Confirmed where it was written; a reply to the confirmation steers again.
    async fn steered(&mut self, thread: Option<i32>, session: &str, confirmation: Rendered) {
        let id = self
            .send(thread, confirmation.html, confirmation.plain, None)
            .await;
        if let Ok(id) = id {
            self.remember(self.store.set_about(self.chat_id, id, session));
        }
    }

    fn place_key_of(&self, session: &str) -> String {
        self.placed(session).unwrap_or_else(|| session.to_string())
    }

    fn last_said(&self, key: &str) -> Option<String> {
        let key = format!("said:{key}:{}", self.chat_id);
        self.store.meta(&key).ok().flatten()
    }

    fn set_last_said(&mut self, key: &str, said: &str) {
        let key = format!("said:{key}:{}", self.chat_id);
        self.remember(self.store.set_meta(&key, said));
    }

    fn last_report(&self, store: &str) -> Option<u64> {
        self.store
            .last_report(store, self.chat_id)
            .unwrap_or_else(|e| {
                tracing::error!(error = %e, "telegram: could not read the last report posted");
                None
            })
    }

    fn set_last_report(&mut self, store: &str, id: u64) {
        self.remember(self.store.set_last_report(store, self.chat_id, id));
    }

    /// Whether what is posted in `session`'s topic (its own, or its repository's with
    /// `per_project`) shows in `thread` (of this chat): that topic, or anywhere in a chat
    /// without topics.
    fn shows_in(&self, session: &str, thread: Option<&i32>) -> bool {
        let key = self.place_key_of(session);
        let session = key.as_str();
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
                        .as_ref()
                        == thread
            }
            None => false,
        }
    }

    /// A session whose topic name changed (renamed, took or left a role) renames its
    /// topic; compared with the name the topic was given, so a change missed while the
    /// bridge was away is caught at the resync.
    async fn session_changed(&mut self, _old: Option<&SessionInfo>, session: &SessionInfo) {
        // A stored topic means a forum, also before this run has learned it.
        if self.forum == Some(false) {
            return;
        }
        if let Ok(Some((thread, name))) = self.store.topic(&session.id, self.chat_id) {
            let new_name = render::topic_name(session);
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
}

impl Telegram {
    /// The repository's place key `session` was put in (`per_project`), if it was.
    fn placed(&self, session: &str) -> Option<String> {
        let key = format!("placed:{session}:{}", self.chat_id);
        self.store.meta(&key).ok().flatten()
    }

    /// Send one message to the chat and wait for its id.
    async fn send(
        &mut self,
        thread: Option<i32>,
        html: String,
        plain: String,
        keyboard: Option<InlineKeyboardMarkup>,
    ) -> Result<i32, String> {
        let op = OutboxOp::Send {
            chat: self.chat_id,
            thread,
            html,
            plain,
            keyboard: keyboard.map(ReplyMarkup::InlineKeyboard),
        };
        self.outbox.send(op).await
    }

    /// A `/staff` line's button was tapped: ask what to tell `session`, with a forced
    /// reply (the app opens the reply at once); the reply steers it.
    pub(super) async fn ask_for_steer(&mut self, thread: Option<i32>, session: &str, name: &str) {
        // A `/new` choice: what the new session is to do.
        let prompt = match session.strip_prefix(crate::chat::projects::NEW_TARGET) {
            Some(project) => crate::chat::projects::task_prompt(project),
            None => render::steer_prompt(name),
        };
        let op = OutboxOp::Send {
            chat: self.chat_id,
            thread,
            html: prompt.html,
            plain: prompt.plain,
            keyboard: Some(ReplyMarkup::ForceReply(
                ForceReply::new().input_field_placeholder(Some(format!(
                    "what {} should do",
                    crate::chat::format::truncate(name, 40)
                ))),
            )),
        };
        match self.outbox.send(op).await {
            Ok(id) => self.remember(self.store.set_about(self.chat_id, id, session)),
            Err(e) => tracing::error!(error = %e, "telegram: could not ask what to steer with"),
        }
    }

    pub(super) fn remember(&self, result: rusqlite::Result<()>) {
        if let Err(e) = result {
            tracing::error!(error = %e, "telegram: could not save the bridge state");
        }
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
        .map(|(i, o)| InlineKeyboardButton::callback(o.clone(), format!("a:{}:{i}", ask.key())))
        .collect();
    let mut rows: Vec<Vec<InlineKeyboardButton>> = buttons.chunks(2).map(<[_]>::to_vec).collect();
    // An integration's card: its Lead's diff, as /diff shows it. Telegram keeps callback
    // data to 64 bytes: a longer target gets no button (/diff does the same).
    if let Some(data) = crate::chat::projects::integration_target(ask)
        .map(|target| format!("d:{target}"))
        .filter(|data| data.len() <= 64)
    {
        rows.push(vec![InlineKeyboardButton::callback(DIFF_LABEL, data)]);
    }
    Some(InlineKeyboardMarkup::new(rows))
}

/// A button per (label, target), two a row, each asking what to tell its target with a
/// forced reply (`s:<target>`, as a `/staff` line's ✍️). Telegram keeps callback data to 64
/// bytes: a longer target gets no button. None without buttons.
fn ask_keyboard(choices: impl Iterator<Item = (String, String)>) -> Option<InlineKeyboardMarkup> {
    let buttons: Vec<InlineKeyboardButton> = choices
        .map(|(label, target)| (label, format!("s:{target}")))
        .filter(|(_, data)| data.len() <= 64)
        .map(|(label, data)| InlineKeyboardButton::callback(label, data))
        .collect();
    (!buttons.is_empty()).then(|| InlineKeyboardMarkup::new(buttons.chunks(2).map(<[_]>::to_vec)))
}

/// An integration card's button that shows the Lead's diff.
pub const DIFF_LABEL: &str = "🧾 diff";

/// The target of an integration card's diff button.
pub(super) fn parse_diff(data: &str) -> Option<&str> {
    data.strip_prefix("d:").filter(|t| !t.is_empty())
}

/// How a peek is refreshed here, said on its last line.
pub(super) const PEEK_HINT: &str = "🔄 Refresh takes it again";

/// A peek's button: `k:<target>` (`k:gpu:<session id>` on a linked host). Telegram keeps
/// callback data to 64 bytes: a target too long for it (a very long host name) gets no
/// button, and `/peek` again does the same.
pub(super) fn peek_keyboard(target: &str) -> InlineKeyboardMarkup {
    let data = format!("k:{target}");
    match data.len() <= 64 {
        true => InlineKeyboardMarkup::new([[InlineKeyboardButton::callback("🔄 Refresh", data)]]),
        false => InlineKeyboardMarkup::default(),
    }
}

/// The target of a peek's refresh button.
pub(super) fn parse_peek(data: &str) -> Option<&str> {
    data.strip_prefix("k:").filter(|t| !t.is_empty())
}

/// An approval card's buttons: `p:<id>:o` (allow once), `p:<id>:s` (allow for the
/// session), `p:<id>:d` (deny); `<id>` is `gpu:4` on a linked host.
fn approval_keyboard(id: &ApprovalRef) -> InlineKeyboardMarkup {
    InlineKeyboardMarkup::new([
        vec![
            InlineKeyboardButton::callback("✅ Allow once", format!("p:{id}:o")),
            InlineKeyboardButton::callback("✅ Allow for this session", format!("p:{id}:s")),
        ],
        vec![InlineKeyboardButton::callback(
            "⛔ Deny",
            format!("p:{id}:d"),
        )],
    ])
}

/// The approval and decision of an approval card's button: allow (`Some(scope)`) or deny
/// (`None`).
pub(super) fn parse_approval(data: &str) -> Option<(ApprovalRef, Option<ApprovalScope>)> {
    let (id, what) = data.strip_prefix("p:")?.rsplit_once(':')?;
    let id = ApprovalRef::parse(id)?;
    let decision = match what {
        "o" => Some(ApprovalScope::Once),
        "s" => Some(ApprovalScope::Session),
        "d" => None,
        _ => return None,
    };
    Some((id, decision))
}

/// The label of a `/staff` line's button.
pub const STEER_LABEL: &str = "✍️ steer";

/// The button on a `/workers` line: closes that worker.
pub const CLOSE_LABEL: &str = "✖ close";

/// The worker of a `/workers` line's close button (`x:#<id>`, `x:gpu#<id>` on a linked
/// host; `x:<id>` from before hosts).
pub(super) fn parse_close(data: &str) -> Option<WorkerRef> {
    let about = data.strip_prefix("x:")?;
    match about.parse::<WorkerId>() {
        Ok(id) => Some(WorkerRef { host: None, id }),
        Err(_) => crate::chat::workers::worker_ref(about),
    }
}

/// The session of a `/staff` line's button (`s:<session>`).
pub(super) fn parse_steer(data: &str) -> Option<&str> {
    data.strip_prefix("s:").filter(|s| !s.is_empty())
}

/// The ask of an undo button's callback data (`u:<ask>`; `u:gpu:12` on a linked host).
pub(super) fn parse_undo(data: &str) -> Option<AskRef> {
    data.strip_prefix("u:")?.parse().ok()
}

/// The ask and option index of a button's callback data (`a:<ask>:<index>`; the ask is
/// `gpu:12` on a linked host).
pub(super) fn parse_callback(data: &str) -> Option<(AskRef, usize)> {
    let (ask, index) = data.strip_prefix("a:")?.rsplit_once(':')?;
    Some((ask.parse().ok()?, index.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callback_data_round_trips() {
        let here = |id: u64| AskRef::here(id.into());
        let gpu = |id: u64| AskRef {
            host: Some("gpu".into()),
            id: id.into(),
        };
        assert_eq!(parse_callback("a:12:1"), Some((here(12), 1)));
        assert_eq!(parse_peek("k:gpu:0193a5c2"), Some("gpu:0193a5c2"));
        assert_eq!(parse_peek("k:"), None);
        assert_eq!(parse_callback("k:12:1"), None);
        let long = format!(
            "{}:{}",
            "h".repeat(40),
            "0193a5c2-7d1e-7b8a-9c3f-1e2d3c4b5a69"
        );
        assert!(
            peek_keyboard(&long).inline_keyboard.is_empty(),
            "over 64 bytes: no button"
        );
        assert_eq!(
            peek_keyboard("0193a5c2-7d1e-7b8a-9c3f-1e2d3c4b5a69")
                .inline_keyboard
                .len(),
            1
        );
        assert_eq!(parse_callback("a:gpu:12:1"), Some((gpu(12), 1)));
        assert_eq!(parse_callback("a:12"), None);
        assert_eq!(parse_callback("x:1:2"), None);
        assert_eq!(parse_callback("a:1:2:3"), None);
        assert_eq!(parse_callback("a:GPU:2:3"), None);
        assert_eq!(parse_undo("u:12"), Some(here(12)));
        assert_eq!(parse_undo("u:gpu:12"), Some(gpu(12)));
        assert_eq!(parse_callback("u:12"), None);
        assert_eq!(parse_undo("a:12:1"), None);
        assert_eq!(parse_steer("s:3f2a-77"), Some("3f2a-77"));
        assert_eq!(parse_steer("s:"), None);
        assert_eq!(parse_callback("s:12"), None);
    }
}
