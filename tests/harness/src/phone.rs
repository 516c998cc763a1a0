//! # One phone scenario, two phones
//!
//! A [`Phone`] is a human's chat with shepherd's bot as a test drives it: what the core
//! needs to reach it (its environment), what the bot said (and where: the session's
//! forum topic on Telegram, its thread on Matrix), and what the human does (a command, a
//! reply to one of the bot's messages, a line's action). A scenario written once against
//! the trait runs against both phones:
//!
//! - [`TelegramPhone`]: the strict fake Bot API ([`crate::fake_telegram`]) with a forum
//!   and one allowed user, Ada;
//! - [`MatrixPhone`]: a real Synapse (the test binary's shared one,
//!   [`crate::synapse::Synapse::shared`]) with a bot account and an Ada of the phone's own,
//!   Ada a real matrix-sdk client ([`crate::matrix_user`]) that accepts the bot's invite.
//!
//! What differs between the chats stays in the implementations: Telegram's `/` commands
//! and inline buttons, Matrix's `!` commands and replies.

use std::time::Duration;

use anyhow::{Context, Result, bail};

pub use crate::fake_telegram::UserFileKind;
use crate::fake_telegram::{
    FakeTelegram, FakeTelegramOptions, FakeUser, SentMessage, UserFile, UserMessage,
};
use crate::matrix_user::{MatrixUser, Message};
use crate::synapse::{Synapse, unique};
use crate::{Bot, Core};

/// How long a phone waits for the bot.
pub const PHONE_WAIT: Duration = Duration::from_secs(60);

/// A message the bot posted, as the phone shows it now.
#[derive(Debug, Clone)]
pub struct Said {
    /// The message's id in its chat (Telegram's message id, Matrix's event id).
    pub id: String,
    /// What the human reads: plain text.
    pub text: String,
    /// Where it is: the forum topic (Telegram) or thread (Matrix); `None` in the main
    /// timeline.
    pub place: Option<String>,
    /// Whether the bot has edited it since it was posted.
    pub edited: bool,
    /// Inline buttons as `(label, callback data)` (Telegram only).
    pub buttons: Vec<(String, String)>,
    /// The bot's own reactions on it (Matrix only: an ask's options, ↩️).
    pub marks: Vec<String>,
    /// The name of the file it carries (a Telegram document, a Matrix `m.file`), if any.
    pub file: Option<String>,
}

/// A human's chat with the bot; see the module docs.
#[allow(async_fn_in_trait)]
pub trait Phone {
    /// Which chat this is, for messages: `telegram`, `matrix`.
    fn name(&self) -> &'static str;

    /// The environment that points `shepherd up` at this phone's bot account.
    fn env(&self) -> Vec<(&'static str, String)>;

    /// Once the core runs: wait until its bridge is here (polling, or in the room).
    async fn ready(&mut self) -> Result<()>;

    /// After a restart of the bridge: wait until it serves the chat again, its log (`log`)
    /// saying it started `starts` times. Telegram: at once (what the human sends
    /// meanwhile waits on the server for the next poll); Matrix: once it has synced (what
    /// was said before that is history, which it does not answer).
    async fn bridge_back(&self, log: impl Fn() -> String, starts: usize) -> Result<()>;

    /// The bot's account as the core names the bridge's identity (`telegram:@<bot>`,
    /// `matrix:<bot's MXID>`).
    fn bot_account(&self) -> String;

    /// The human as the core records who acted (`telegram:@ada`, `matrix:@ada-3:localhost`).
    fn human(&self) -> &str;

    /// The first of the bot's messages (as it is now) for which `pred` holds.
    async fn bot_says(&self, pred: impl Fn(&Said) -> bool) -> Result<Said>;

    /// Everything the bot has said so far, as it is now, oldest first.
    fn all_said(&self) -> Vec<Said>;

    /// How many of the bot's messages contain `what`.
    fn count_said(&self, what: &str) -> usize {
        self.all_said()
            .iter()
            .filter(|m| m.text.contains(what))
            .count()
    }

    /// Where the bot talks about the session named `name` (its topic or thread).
    async fn place_of(&self, name: &str) -> Result<String>;

    /// What starts a command in this chat: `/` (Telegram) or `!` (Matrix).
    fn prefix(&self) -> char;

    /// Send a chat command, `command` without its prefix (`workers` → `/workers`).
    async fn command(&self, command: &str) -> Result<()>;

    /// Type `text` in `place` (a session's topic or thread) without replying to anything.
    async fn type_in(&self, place: &str, text: &str) -> Result<()>;

    /// The place of `m`'s conversation: its topic or thread, or `m` itself when it starts
    /// one.
    fn thread_of(&self, m: &Said) -> String {
        m.place.clone().unwrap_or_else(|| m.id.clone())
    }

    /// Whether `m` is the bot's offer to take back the typed answer to ask `ask`, ready
    /// to be used (Telegram: its undo button; Matrix: the bot's own ↩️ on it).
    fn offers_undo(&self, m: &Said, ask: u64) -> bool;

    /// Take a typed answer back from the bot's offer; what the bot answers (and, on
    /// Telegram, once the offer has become that answer without its button).
    async fn undo(&self, offer: &Said) -> Result<String>;

    /// Reply to one of the bot's messages with `text`.
    async fn reply(&self, to: &Said, text: &str) -> Result<()>;

    /// Reply to one of the bot's messages from inside its place, as the apps do there
    /// (Telegram: in its topic; Matrix: in its thread, a reply falling back to it).
    async fn reply_in_place(&self, to: &Said, text: &str) -> Result<()>;

    /// The bot's messages that contain `what`, as where each is (see [`Said::place`]).
    fn places_said(&self, what: &str) -> Vec<Option<String>> {
        self.all_said()
            .into_iter()
            .filter(|m| m.text.contains(what))
            .map(|m| m.place)
            .collect()
    }

    /// Wait until the bot has said `what` `times` times.
    async fn wait_said_times(&self, what: &str, times: usize) -> Result<()> {
        let deadline = tokio::time::Instant::now() + PHONE_WAIT;
        while self.count_said(what) < times {
            if tokio::time::Instant::now() > deadline {
                bail!(
                    "{}: {what:?} said {} times, not {times}, within {PHONE_WAIT:?}",
                    self.name(),
                    self.count_said(what)
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(())
    }

    /// Whether the places the bot makes have names (Telegram's forum topics do; Matrix's
    /// threads do not).
    fn names_places(&self) -> bool;

    /// The names of the places the bot made (Telegram's forum topics; Matrix's threads
    /// have none).
    fn place_names(&self) -> Vec<String>;

    /// Whether `place` is closed now, where places close (Telegram's forum topics:
    /// `Some`); `None` where they do not (Matrix's threads).
    fn place_closed(&self, place: &str) -> Option<bool>;

    /// Wait until `place`'s name is one for which `named` holds, where places have names
    /// (Telegram's topics); at once where they have none (Matrix's threads).
    async fn place_named(&self, place: &str, named: impl Fn(&str) -> bool) -> Result<()>;

    /// The lines of the `/staff` tree whose header is `tree`, once there are `n` (Telegram:
    /// the tree's own lines, one message; Matrix: a message each after it).
    async fn staff_lines(&self, tree: &Said, n: usize) -> Result<Vec<String>>;

    /// Steer session `name` from the `/staff` tree whose header is `tree` (Telegram: its
    /// `✍️ name` button, then the reply to the prompt it brings up; Matrix: a reply to the
    /// session's line).
    async fn steer_from_staff(&self, tree: &Said, name: &str, text: &str) -> Result<()>;

    /// Whether `m` is a card still waiting for its answer (Telegram: it has buttons;
    /// Matrix: it was never edited).
    fn is_open_card(&self, m: &Said) -> bool;

    /// Check that the card offers exactly `options` to choose from (Telegram: its
    /// buttons; Matrix: numbered lines, and the bot's keycap reactions once they are on).
    async fn offers(&self, card: &Said, options: &[&str]) -> Result<()>;

    /// Choose the card's option number `n` (1-based) as the human would: its button, or
    /// its keycap reaction; what the chat shows the human at once (Telegram: the button's
    /// answer; Matrix: nothing, `None`).
    async fn choose(&self, card: &Said, n: usize) -> Result<Option<String>>;

    /// Close the worker a `/workers` line shows (Telegram: its `✖ close` button; Matrix:
    /// `!close` in reply); what the bot answers.
    async fn close_worker(&self, line: &Said) -> Result<String>;

    /// Decide a held tool call's card as the human would (Telegram: its button; Matrix:
    /// its reaction, once the bot put it there).
    async fn decide(&self, card: &Said, tap: Tap) -> Result<()>;

    /// Take a peek again (Telegram: its `🔄 Refresh` button; Matrix: its 🔄 reaction, once
    /// the bot put it there); the peek is then edited in place.
    async fn refresh(&self, peek: &Said) -> Result<()>;

    /// The bytes of the file `m` carries ([`Said::file`]), as the human downloads them.
    async fn file_bytes(&self, m: &Said) -> Result<Vec<u8>>;

    /// Choose `label` among the choices `list` offers (`/new` alone's projects): the
    /// message to reply to with what to do (Telegram: the prompt its button brings up;
    /// Matrix: that choice's line).
    async fn pick_choice(&self, list: &Said, label: &str) -> Result<Said>;

    /// Ask for the diff an integration's card offers (Telegram: its `🧾 diff` button;
    /// Matrix: its 🧾 reaction, once the bot put it there).
    async fn diff_from_card(&self, card: &Said) -> Result<()>;

    /// Send `file` in `place` (a session's topic or thread), as the phone's app sends it.
    async fn send_file(&self, place: &str, file: PhoneFile) -> Result<()>;
}

/// A file the human sends from the phone: a photo, a document or a voice note.
#[derive(Debug, Clone)]
pub struct PhoneFile {
    pub kind: UserFileKind,
    pub name: String,
    pub mime: String,
    pub bytes: Vec<u8>,
    /// Written with it (empty: nothing).
    pub caption: String,
}

/// A decision on an approval card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tap {
    Once,
    Session,
    Deny,
}

impl Core {
    /// Start a core whose bridge serves `phone` (its [`Phone::env`]), with `more`
    /// environment.
    pub async fn start_for(phone: &impl Phone, more: &[(&str, &str)]) -> Result<Core> {
        let env = phone.env();
        let mut all = crate::pairs(&env);
        all.extend_from_slice(more);
        Core::start_with(&all).await
    }

    /// Start the bridge for `phone` as its own `shepherd bot` next to this core (which
    /// runs none), with `more` environment.
    pub fn spawn_bot_for(&self, phone: &impl Phone, more: &[(&str, &str)]) -> Result<Bot> {
        let env = phone.env();
        let mut all = crate::pairs(&env);
        all.extend_from_slice(more);
        self.spawn_bot(&all)
    }
}

/// The fake Telegram's forum.
const FORUM: i64 = -1_001_234_567;
/// Ada's Telegram user id.
const ADA_TELEGRAM: i64 = 4242;

/// A forum (or Ada's private chat with the bot) on the strict fake Bot API; see the
/// module docs.
pub struct TelegramPhone {
    pub tg: FakeTelegram,
    /// The chat the bot posts to: the forum, or Ada's private chat.
    chat: i64,
}

impl TelegramPhone {
    /// The bot in a forum: a topic per session.
    pub async fn start() -> Result<TelegramPhone> {
        let ada = FakeUser::new(ADA_TELEGRAM, "Ada").with_username("ada");
        let opts = FakeTelegramOptions::default()
            .user(ada)
            .forum(FORUM, "shepherd")
            .no_rate_limits();
        Ok(TelegramPhone {
            tg: FakeTelegram::start(opts).await?,
            chat: FORUM,
        })
    }

    /// The bot in Ada's private chat: no topics, everything in one timeline.
    pub async fn start_private() -> Result<TelegramPhone> {
        let ada = FakeUser::new(ADA_TELEGRAM, "Ada").with_username("ada");
        let opts = FakeTelegramOptions::default()
            .user(ada.clone())
            .private_chat(ada)
            .no_rate_limits();
        Ok(TelegramPhone {
            tg: FakeTelegram::start(opts).await?,
            chat: ADA_TELEGRAM,
        })
    }

    fn said(m: &SentMessage) -> Said {
        Said {
            id: m.message_id.to_string(),
            text: m.text.clone(),
            place: m.thread_id.map(|t| t.to_string()),
            edited: !m.edits.is_empty(),
            buttons: m.buttons(),
            marks: Vec::new(),
            file: m.document.as_ref().map(|d| d.file_name.clone()),
        }
    }

    /// Press button `n` (1-based) of `m` as it was when seen (perhaps stale by now): what
    /// the button answers, or `None` when Telegram refuses the press (the message has no
    /// buttons any more).
    pub async fn press_as_seen(&self, m: &Said, n: usize) -> Result<Option<String>> {
        let (_, data) = m
            .buttons
            .get(n - 1)
            .with_context(|| format!("no button {n} on {:?}", m.buttons))?;
        let Ok(press) = self
            .tg
            .press_button(self.chat, Self::message_id(m)?, ADA_TELEGRAM, data)
        else {
            return Ok(None);
        };
        let answer = self
            .tg
            .wait_for_callback_answer(&press.query_id, PHONE_WAIT)
            .await?;
        Ok(Some(answer.text.unwrap_or_default()))
    }

    /// The fake's record of a message the bot sent (its entities, markup, …).
    pub fn message(&self, said: &Said) -> Result<SentMessage> {
        let id = Self::message_id(said)?;
        self.tg
            .messages(self.chat)
            .into_iter()
            .find(|m| m.message_id == id)
            .with_context(|| format!("no message {id}"))
    }

    /// Press `m`'s button labelled `label` as Ada; the answer the bot gave the press.
    async fn press(&self, m: &Said, label: &str) -> Result<crate::fake_telegram::CallbackAnswer> {
        let (_, data) = m
            .buttons
            .iter()
            .find(|b| b.0 == label)
            .with_context(|| format!("no button {label:?} on {:?}", m.buttons))?;
        let press = self
            .tg
            .press_button(self.chat, Self::message_id(m)?, ADA_TELEGRAM, data)?;
        self.tg
            .wait_for_callback_answer(&press.query_id, PHONE_WAIT)
            .await
    }

    fn message_id(said: &Said) -> Result<i32> {
        said.id
            .parse()
            .with_context(|| format!("not a Telegram message id: {}", said.id))
    }
}

impl Phone for TelegramPhone {
    fn name(&self) -> &'static str {
        "telegram"
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("SHEPHERD_TELEGRAM_TOKEN", self.tg.token().to_string()),
            (
                "SHEPHERD_TELEGRAM__ALLOWED_USERS",
                format!("[{ADA_TELEGRAM}]"),
            ),
            ("SHEPHERD_TELEGRAM__CHAT_ID", self.chat.to_string()),
            ("SHEPHERD_TELEGRAM__API_URL", self.tg.api_url()),
            (
                "SHEPHERD_TELEGRAM__LIMITS__PER_CHAT_PER_SECOND",
                "200".into(),
            ),
            (
                "SHEPHERD_TELEGRAM__LIMITS__PER_GROUP_PER_MINUTE",
                "10000".into(),
            ),
            ("SHEPHERD_TELEGRAM__LIMITS__GLOBAL_PER_SECOND", "200".into()),
        ]
    }

    async fn ready(&mut self) -> Result<()> {
        self.tg
            .wait_for("the bridge's first long poll", PHONE_WAIT, |tg| {
                tg.long_poll_waiting().then_some(())
            })
            .await
    }

    async fn bridge_back(&self, _log: impl Fn() -> String, _starts: usize) -> Result<()> {
        Ok(())
    }

    fn bot_account(&self) -> String {
        format!("telegram:@{}", FakeTelegramOptions::default().bot_username)
    }

    fn human(&self) -> &str {
        "telegram:@ada"
    }

    async fn bot_says(&self, pred: impl Fn(&Said) -> bool) -> Result<Said> {
        let m = self
            .tg
            .wait_for_message(self.chat, PHONE_WAIT, |m| pred(&Self::said(m)))
            .await?;
        Ok(Self::said(&m))
    }

    fn all_said(&self) -> Vec<Said> {
        self.tg.messages(self.chat).iter().map(Self::said).collect()
    }

    async fn place_of(&self, name: &str) -> Result<String> {
        let topic = self
            .tg
            .wait_for(&format!("the topic of {name}"), PHONE_WAIT, |tg| {
                tg.topics(self.chat)
                    .into_iter()
                    .find(|t| t.name.contains(name))
            })
            .await?;
        Ok(topic.thread_id.to_string())
    }

    fn prefix(&self) -> char {
        '/'
    }

    async fn type_in(&self, place: &str, text: &str) -> Result<()> {
        let topic: i32 = place
            .parse()
            .with_context(|| format!("not a Telegram topic: {place}"))?;
        self.tg
            .inject_message(UserMessage::new(self.chat, ADA_TELEGRAM, text).in_topic(topic))?;
        Ok(())
    }

    async fn send_file(&self, place: &str, file: PhoneFile) -> Result<()> {
        let topic: i32 = place
            .parse()
            .with_context(|| format!("not a Telegram topic: {place}"))?;
        let PhoneFile {
            kind,
            name,
            mime,
            bytes,
            caption,
        } = file;
        let message = UserMessage::new(self.chat, ADA_TELEGRAM, &caption)
            .in_topic(topic)
            .with_file(UserFile {
                kind,
                name,
                mime,
                bytes,
            });
        self.tg.inject_message(message)?;
        Ok(())
    }

    fn offers_undo(&self, m: &Said, ask: u64) -> bool {
        m.buttons == [(UNDO_LABEL.to_string(), format!("u:{ask}"))]
    }

    async fn undo(&self, offer: &Said) -> Result<String> {
        let data = only_button(offer, UNDO_LABEL)?;
        let id = Self::message_id(offer)?;
        let press = self.tg.press_button(self.chat, id, ADA_TELEGRAM, data)?;
        let answer = self
            .tg
            .wait_for_callback_answer(&press.query_id, PHONE_WAIT)
            .await?;
        self.tg
            .wait_for_message(self.chat, PHONE_WAIT, |m| {
                m.message_id == id && !m.edits.is_empty() && m.buttons().is_empty()
            })
            .await
            .context("the offer becomes what happened, without its button")?;
        Ok(answer.text.unwrap_or_default())
    }

    async fn command(&self, command: &str) -> Result<()> {
        let text = format!("/{command}");
        self.tg
            .inject_message(UserMessage::new(self.chat, ADA_TELEGRAM, &text))?;
        Ok(())
    }

    async fn reply(&self, to: &Said, text: &str) -> Result<()> {
        let message =
            UserMessage::new(self.chat, ADA_TELEGRAM, text).reply_to(Self::message_id(to)?);
        self.tg.inject_message(message)?;
        Ok(())
    }

    async fn reply_in_place(&self, to: &Said, text: &str) -> Result<()> {
        let mut message =
            UserMessage::new(self.chat, ADA_TELEGRAM, text).reply_to(Self::message_id(to)?);
        if let Some(topic) = &to.place {
            message = message.in_topic(topic.parse().context("a Telegram topic")?);
        }
        self.tg.inject_message(message)?;
        Ok(())
    }

    fn names_places(&self) -> bool {
        true
    }

    fn place_closed(&self, place: &str) -> Option<bool> {
        let topics = self.tg.topics(self.chat);
        Some(
            topics
                .iter()
                .any(|t| t.thread_id.to_string() == place && t.closed),
        )
    }

    fn place_names(&self) -> Vec<String> {
        self.tg
            .topics(self.chat)
            .into_iter()
            .map(|t| t.name)
            .collect()
    }

    async fn place_named(&self, place: &str, named: impl Fn(&str) -> bool) -> Result<()> {
        self.tg
            .wait_for(&format!("topic {place} renamed"), PHONE_WAIT, |tg| {
                tg.topics(self.chat)
                    .into_iter()
                    .find(|t| t.thread_id.to_string() == place && named(&t.name))
            })
            .await?;
        Ok(())
    }

    async fn staff_lines(&self, tree: &Said, n: usize) -> Result<Vec<String>> {
        // The header's two lines (the counts, how to steer), then one per session.
        let lines: Vec<String> = tree.text.lines().skip(2).map(str::to_string).collect();
        if lines.len() != n {
            bail!("{} staff lines, not {n}: {}", lines.len(), tree.text);
        }
        Ok(lines)
    }

    async fn steer_from_staff(&self, tree: &Said, name: &str, text: &str) -> Result<()> {
        self.press(tree, &format!("✍️ {name}")).await?;
        let prompt = self
            .tg
            .wait_for_message(self.chat, PHONE_WAIT, |m| {
                m.text.contains(&format!("What should {name} do?"))
            })
            .await?;
        // The app opens the reply at once.
        let forced = prompt
            .reply_markup
            .as_ref()
            .map(|m| m["force_reply"].clone());
        if forced != Some(serde_json::json!(true)) {
            bail!("the prompt does not force a reply: {prompt:?}");
        }
        let reply = UserMessage::new(self.chat, ADA_TELEGRAM, text).reply_to(prompt.message_id);
        self.tg.inject_message(reply)?;
        Ok(())
    }

    fn is_open_card(&self, m: &Said) -> bool {
        !m.buttons.is_empty()
    }

    async fn offers(&self, card: &Said, options: &[&str]) -> Result<()> {
        // The options' buttons (`a:`), not the others a card may have (an integration's diff).
        let labels: Vec<&str> = card
            .buttons
            .iter()
            .filter(|b| b.1.starts_with("a:"))
            .map(|b| b.0.as_str())
            .collect();
        if labels != options {
            bail!(
                "the card's buttons are {labels:?}, not {options:?}: {}",
                card.text
            );
        }
        Ok(())
    }

    async fn choose(&self, card: &Said, n: usize) -> Result<Option<String>> {
        let (_, data) = card
            .buttons
            .get(n - 1)
            .with_context(|| format!("no button {n} on {:?}", card.buttons))?;
        let press = self
            .tg
            .press_button(self.chat, Self::message_id(card)?, ADA_TELEGRAM, data)?;
        let answer = self
            .tg
            .wait_for_callback_answer(&press.query_id, PHONE_WAIT)
            .await?;
        Ok(Some(answer.text.unwrap_or_default()))
    }

    async fn decide(&self, card: &Said, tap: Tap) -> Result<()> {
        let label = match tap {
            Tap::Once => "✅ Allow once",
            Tap::Session => "✅ Allow for this session",
            Tap::Deny => "⛔ Deny",
        };
        let (_, data) = card
            .buttons
            .iter()
            .find(|(l, _)| l == label)
            .with_context(|| format!("no {label:?} button on {:?}", card.buttons))?;
        let press = self
            .tg
            .press_button(self.chat, Self::message_id(card)?, ADA_TELEGRAM, data)?;
        self.tg
            .wait_for_callback_answer(&press.query_id, PHONE_WAIT)
            .await?;
        Ok(())
    }

    async fn file_bytes(&self, m: &Said) -> Result<Vec<u8>> {
        let sent = self
            .tg
            .message(self.chat, Self::message_id(m)?)
            .context("no such message")?;
        Ok(sent
            .document
            .context("the message carries no document")?
            .bytes)
    }

    async fn refresh(&self, peek: &Said) -> Result<()> {
        let data = only_button(peek, "🔄 Refresh")?;
        let press = self
            .tg
            .press_button(self.chat, Self::message_id(peek)?, ADA_TELEGRAM, data)?;
        self.tg
            .wait_for_callback_answer(&press.query_id, PHONE_WAIT)
            .await?;
        Ok(())
    }

    async fn pick_choice(&self, list: &Said, label: &str) -> Result<Said> {
        self.press(list, label).await?;
        let before = Self::message_id(list)?;
        self.bot_says(|m| {
            m.text.starts_with("✍️ What should") && m.id.parse::<i32>().is_ok_and(|id| id > before)
        })
        .await
    }

    async fn diff_from_card(&self, card: &Said) -> Result<()> {
        self.press(card, "🧾 diff").await?;
        Ok(())
    }

    async fn close_worker(&self, line: &Said) -> Result<String> {
        let data = only_button(line, "✖ close")?;
        let press = self
            .tg
            .press_button(self.chat, Self::message_id(line)?, ADA_TELEGRAM, data)?;
        let answer = self
            .tg
            .wait_for_callback_answer(&press.query_id, PHONE_WAIT)
            .await?;
        Ok(answer.text.unwrap_or_default())
    }
}

/// The callback data of `m`'s one button, which must be labelled `label` (Telegram).
fn only_button<'m>(m: &'m Said, label: &str) -> Result<&'m str> {
    match m.buttons.as_slice() {
        [(only, data)] if only == label => Ok(data),
        buttons => bail!(
            "{:?} should have one button, {label:?}, not {buttons:?}",
            m.text
        ),
    }
}

/// The bot's own reaction a human taps to take a typed answer back.
const UNDO_KEY: &str = "↩️";
/// The label of Telegram's button for the same.
const UNDO_LABEL: &str = "↩️ undo: it was meant as a steer";

/// A room on a real Synapse (the test binary's shared one, with a bot and an Ada of this
/// phone's own); see the module docs.
pub struct MatrixPhone {
    pub synapse: Synapse,
    pub ada: MatrixUser,
    /// The bot's MXID (`@bot-3:localhost`).
    pub bot: String,
    /// `matrix:` and Ada's MXID, as the core records her.
    human: String,
    /// The room the bot invited Ada to (known once [`Phone::ready`]).
    pub room: String,
}

impl MatrixPhone {
    pub async fn start() -> Result<MatrixPhone> {
        let synapse = Synapse::shared().await?;
        let bot = synapse
            .register(&unique("bot"), "bot-password", false)
            .await?;
        let ada_name = unique("ada");
        let ada_id = synapse.register(&ada_name, "ada-password", false).await?;
        let ada = MatrixUser::login(&synapse.url(), &ada_name, "ada-password").await?;
        Ok(MatrixPhone {
            synapse,
            ada,
            bot,
            human: format!("matrix:{ada_id}"),
            room: String::new(),
        })
    }

    /// The bot's messages after `first` in the same place, oldest first.
    fn lines_after(&self, first: &Said) -> Vec<Said> {
        self.all_said()
            .into_iter()
            .skip_while(|m| m.id != first.id)
            .skip(1)
            .filter(|m| m.place == first.place)
            .collect()
    }

    /// The message as Ada's client has it (its HTML, relations, …).
    pub fn message(&self, said: &Said) -> Result<Message> {
        self.ada
            .messages(&self.room)
            .into_iter()
            .find(|m| m.event_id == said.id)
            .with_context(|| format!("no event {}", said.id))
    }

    /// Ada's MXID.
    pub fn ada_id(&self) -> &str {
        self.human.trim_start_matches("matrix:")
    }

    fn said(&self, m: &Message) -> Said {
        Said {
            id: m.event_id.clone(),
            text: m.body().to_string(),
            place: m.thread_root().map(str::to_string),
            edited: m.edits > 0,
            buttons: Vec::new(),
            marks: m
                .reaction_keys_by(&self.bot)
                .into_iter()
                .map(str::to_string)
                .collect(),
            file: (m.content["msgtype"] == "m.file").then(|| {
                let name = m.content["filename"].as_str().unwrap_or(m.body());
                name.to_string()
            }),
        }
    }
}

impl Phone for MatrixPhone {
    fn name(&self) -> &'static str {
        "matrix"
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("SHEPHERD_MATRIX__HOMESERVER", self.synapse.url()),
            ("SHEPHERD_MATRIX__USER_ID", self.bot.clone()),
            ("SHEPHERD_MATRIX_PASSWORD", "bot-password".to_string()),
            (
                "SHEPHERD_MATRIX__ALLOWED_USERS",
                format!("[\"{}\"]", self.ada_id()),
            ),
        ]
    }

    async fn ready(&mut self) -> Result<()> {
        self.room = self.ada.accept_invite(None, PHONE_WAIT).await?;
        self.ada
            .wait_for_member(&self.room, &self.bot, PHONE_WAIT)
            .await?;
        Ok(())
    }

    async fn bridge_back(&self, log: impl Fn() -> String, starts: usize) -> Result<()> {
        let deadline = tokio::time::Instant::now() + PHONE_WAIT;
        while log().matches("matrix bridge started").count() < starts {
            if tokio::time::Instant::now() > deadline {
                bail!("the Matrix bridge did not start (#{starts}):\n{}", log());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    fn bot_account(&self) -> String {
        format!("matrix:{}", self.bot)
    }

    fn human(&self) -> &str {
        &self.human
    }

    async fn bot_says(&self, pred: impl Fn(&Said) -> bool) -> Result<Said> {
        let m = self
            .ada
            .wait_for_message(&self.room, PHONE_WAIT, |m| {
                m.sender == self.bot && pred(&self.said(m))
            })
            .await?;
        Ok(self.said(&m))
    }

    fn all_said(&self) -> Vec<Said> {
        self.ada
            .messages(&self.room)
            .iter()
            .filter(|m| m.sender == self.bot)
            .map(|m| self.said(m))
            .collect()
    }

    async fn place_of(&self, name: &str) -> Result<String> {
        let started = self
            .bot_says(|m| m.text.contains(&format!("▶️ {name}")) && m.text.contains("started"))
            .await?;
        Ok(started.place.unwrap_or(started.id))
    }

    fn prefix(&self) -> char {
        '!'
    }

    async fn type_in(&self, place: &str, text: &str) -> Result<()> {
        // As Element sends it: in the thread, a falling-back reply to its root.
        self.ada
            .send_thread_reply(&self.room, place, place, text)
            .await?;
        Ok(())
    }

    async fn send_file(&self, place: &str, file: PhoneFile) -> Result<()> {
        let msgtype = match file.kind {
            UserFileKind::Photo => "m.image",
            UserFileKind::Document => "m.file",
            UserFileKind::Voice => "m.audio",
        };
        let caption = (!file.caption.is_empty()).then_some(file.caption.as_str());
        let media = crate::matrix_user::Media {
            msgtype,
            name: &file.name,
            mime: &file.mime,
            bytes: &file.bytes,
        };
        self.ada
            .send_file_in_thread(&self.room, place, media, caption)
            .await?;
        Ok(())
    }

    fn offers_undo(&self, m: &Said, _ask: u64) -> bool {
        m.marks.iter().any(|k| k == UNDO_KEY)
    }

    async fn undo(&self, offer: &Said) -> Result<String> {
        let before: Vec<String> = self
            .ada
            .messages(&self.room)
            .into_iter()
            .map(|m| m.event_id)
            .collect();
        self.ada.react(&self.room, &offer.id, UNDO_KEY).await?;
        // The bot's answer, said in the offer's thread.
        let answer = self
            .bot_says(|m| {
                !before.contains(&m.id)
                    && m.place == offer.place
                    && (m.text.contains("Not undone") || m.text.contains("is open again"))
            })
            .await?;
        Ok(answer.text)
    }

    async fn command(&self, command: &str) -> Result<()> {
        self.ada
            .send_text(&self.room, &format!("!{command}"))
            .await?;
        Ok(())
    }

    async fn reply(&self, to: &Said, text: &str) -> Result<()> {
        self.ada.send_reply(&self.room, &to.id, text).await?;
        Ok(())
    }

    async fn reply_in_place(&self, to: &Said, text: &str) -> Result<()> {
        self.ada
            .send_thread_reply(&self.room, &self.thread_of(to), &to.id, text)
            .await?;
        Ok(())
    }

    fn names_places(&self) -> bool {
        false
    }

    fn place_closed(&self, _place: &str) -> Option<bool> {
        None
    }

    fn place_names(&self) -> Vec<String> {
        Vec::new()
    }

    async fn place_named(&self, _place: &str, _named: impl Fn(&str) -> bool) -> Result<()> {
        Ok(())
    }

    async fn staff_lines(&self, tree: &Said, n: usize) -> Result<Vec<String>> {
        let deadline = tokio::time::Instant::now() + PHONE_WAIT;
        loop {
            let lines = self.lines_after(tree);
            if lines.len() >= n {
                return Ok(lines.into_iter().take(n).map(|m| m.text).collect());
            }
            if tokio::time::Instant::now() > deadline {
                bail!("{} staff lines after {:?}, not {n}", lines.len(), tree.text);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn steer_from_staff(&self, tree: &Said, name: &str, text: &str) -> Result<()> {
        let line = self
            .lines_after(tree)
            .into_iter()
            .find(|m| m.text.contains(&format!(" {name} ·")))
            .with_context(|| format!("no staff line of {name}"))?;
        self.reply(&line, text).await
    }

    fn is_open_card(&self, m: &Said) -> bool {
        !m.edited
    }

    async fn offers(&self, card: &Said, options: &[&str]) -> Result<()> {
        for (i, option) in options.iter().enumerate() {
            let line = format!("{}. {option}", i + 1);
            if !card.text.contains(&line) {
                bail!("{line:?} is not on the card: {}", card.text);
            }
        }
        let keys: Vec<String> = (1..=options.len()).map(keycap).collect();
        self.bot_says(|m| m.id == card.id && keys.iter().all(|k| m.marks.contains(k)))
            .await?;
        Ok(())
    }

    async fn choose(&self, card: &Said, n: usize) -> Result<Option<String>> {
        let key = keycap(n);
        self.bot_says(|m| m.id == card.id && m.marks.contains(&key))
            .await?;
        self.ada.react(&self.room, &card.id, &key).await?;
        Ok(None)
    }

    async fn decide(&self, card: &Said, tap: Tap) -> Result<()> {
        let key = match tap {
            Tap::Once => "✅",
            Tap::Session => "🔁",
            Tap::Deny => "❌",
        };
        self.bot_says(|m| m.id == card.id && m.marks.iter().any(|k| k == key))
            .await?;
        self.ada.react(&self.room, &card.id, key).await?;
        Ok(())
    }

    async fn file_bytes(&self, m: &Said) -> Result<Vec<u8>> {
        use matrix_sdk::media::{MediaFormat, MediaRequestParameters};
        use matrix_sdk::ruma::events::room::MediaSource;
        let message = self
            .ada
            .messages(&self.room)
            .into_iter()
            .find(|x| x.event_id == m.id)
            .context("no such event")?;
        let content = &message.content;
        let source = match content["url"].as_str() {
            Some(url) => MediaSource::Plain(url.into()),
            None => {
                MediaSource::Encrypted(Box::new(serde_json::from_value(content["file"].clone())?))
            }
        };
        let request = MediaRequestParameters {
            source,
            format: MediaFormat::File,
        };
        Ok(self
            .ada
            .client
            .media()
            .get_media_content(&request, false)
            .await?)
    }

    async fn pick_choice(&self, list: &Said, label: &str) -> Result<Said> {
        let after: Vec<String> = self.all_said().into_iter().map(|m| m.id).collect();
        let at = after.iter().position(|id| *id == list.id).unwrap_or(0);
        let earlier: std::collections::HashSet<String> = after[..at].iter().cloned().collect();
        self.bot_says(|m| m.text == label && m.id != list.id && !earlier.contains(&m.id))
            .await
    }

    async fn diff_from_card(&self, card: &Said) -> Result<()> {
        self.bot_says(|m| m.id == card.id && m.marks.iter().any(|k| k == "🧾"))
            .await?;
        self.ada.react(&self.room, &card.id, "🧾").await?;
        Ok(())
    }

    async fn refresh(&self, peek: &Said) -> Result<()> {
        self.bot_says(|m| m.id == peek.id && m.marks.iter().any(|k| k == "🔄"))
            .await?;
        self.ada.react(&self.room, &peek.id, "🔄").await?;
        Ok(())
    }

    async fn close_worker(&self, line: &Said) -> Result<String> {
        self.reply(line, "!close").await?;
        let closed = self.bot_says(|m| m.text.contains("closed worker")).await?;
        Ok(closed.text)
    }
}

/// The keycap emoji of `n` (1-9): how Matrix numbers an option.
fn keycap(n: usize) -> String {
    format!("{n}\u{fe0f}\u{20e3}")
}
