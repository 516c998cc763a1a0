//! # Sending to Telegram
//!
//! Telegram's [`Courier`] for the bridge's [`Outbox`]: the
//! operations (a message, an edit, a document) and how one is sent. The outbox keeps them
//! in order and within Telegram's limits: at most `per_chat_per_second` messages a second
//! to one chat, `per_group_per_minute` a minute to a group, `global_per_second` overall;
//! an edit of a message whose previous edit is still queued replaces it (rapid edits
//! coalesce). Here a 429 is waited out (`retry_after`) and the same operation retried, so
//! nothing is lost or reordered; network errors are retried with backoff. A message
//! Telegram refuses for its content is sent again as plain text; what still fails is
//! reported to whoever queued it and logged.

use std::time::Duration;

use teloxide::payloads::{EditMessageTextSetters, SendDocumentSetters, SendMessageSetters};
use teloxide::prelude::Requester;
use teloxide::types::{
    ChatId, InlineKeyboardMarkup, InputFile, MessageId, ParseMode, ReplyMarkup, ThreadId,
};
use teloxide::{ApiError, Bot, RequestError};

use crate::outbox::{Courier, Outbox, Window};

/// Telegram's rate limits, as the outbox applies them.
#[derive(Debug, Clone, Copy)]
pub struct RateLimits {
    pub per_chat_per_second: u32,
    pub per_group_per_minute: u32,
    pub global_per_second: u32,
}

/// The bridge's outbox to Telegram.
pub type TelegramOutbox = Outbox<TelegramCourier>;

/// What to send.
#[derive(Debug)]
pub enum OutboxOp {
    /// A message; its id is the result.
    Send {
        chat: i64,
        thread: Option<i32>,
        html: String,
        plain: String,
        /// Inline buttons, or a forced reply (the app opens a reply to the message).
        keyboard: Option<ReplyMarkup>,
    },
    /// Replace a message's text (and buttons; `None` removes them).
    Edit {
        chat: i64,
        message: i32,
        html: String,
        plain: String,
        keyboard: Option<InlineKeyboardMarkup>,
    },
    /// A file (long content).
    Document {
        chat: i64,
        thread: Option<i32>,
        file_name: String,
        bytes: Vec<u8>,
        caption_html: String,
    },
}

/// Sends to Telegram with `bot`, within `limits`.
pub struct TelegramCourier {
    pub bot: Bot,
    pub limits: RateLimits,
}

/// Start the outbox actor.
pub fn spawn(
    bot: Bot,
    limits: RateLimits,
    shutdown: tokio_util::sync::CancellationToken,
) -> TelegramOutbox {
    Outbox::spawn(TelegramCourier { bot, limits }, shutdown)
}

impl Courier for TelegramCourier {
    type Op = OutboxOp;
    type Chat = i64;
    type Sent = i32;
    const NAME: &'static str = "telegram";

    fn chat(op: &OutboxOp) -> i64 {
        match op {
            OutboxOp::Send { chat, .. }
            | OutboxOp::Edit { chat, .. }
            | OutboxOp::Document { chat, .. } => *chat,
        }
    }

    fn replaces(new: &OutboxOp, old: &OutboxOp) -> bool {
        matches!(
            (new, old),
            (OutboxOp::Edit { chat, message, .. }, OutboxOp::Edit { chat: c, message: m, .. })
                if chat == c && message == m
        )
    }

    fn global(&self) -> Vec<Window> {
        vec![Window {
            max: self.limits.global_per_second,
            span: Duration::from_secs(1),
        }]
    }

    fn per_chat(&self, chat: &i64) -> Vec<Window> {
        let mut windows = vec![Window {
            max: self.limits.per_chat_per_second,
            span: Duration::from_secs(1),
        }];
        if *chat < 0 {
            windows.push(Window {
                max: self.limits.per_group_per_minute,
                span: Duration::from_secs(60),
            });
        }
        windows
    }

    /// Run one op to completion: wait out 429s, retry network errors, fall back to plain
    /// text when Telegram cannot parse our HTML.
    async fn deliver(&mut self, op: &OutboxOp) -> Result<i32, String> {
        let mut backoff = Duration::from_millis(500);
        let mut plain_fallback = false;
        loop {
            match self.attempt(op, plain_fallback).await {
                Ok(id) => return Ok(id),
                Err(RequestError::RetryAfter(secs)) => {
                    let wait = secs.duration();
                    tracing::info!(
                        wait_s = wait.as_secs(),
                        "telegram rate limit (429): waiting before retrying"
                    );
                    tokio::time::sleep(wait).await;
                }
                Err(RequestError::Network(e)) => {
                    tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "telegram unreachable; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(60));
                }
                Err(e) if server_trouble(&e) => {
                    tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "telegram's servers failed (5xx); retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(60));
                }
                Err(RequestError::Api(ApiError::MessageNotModified)) => return Ok(0),
                Err(RequestError::Api(ApiError::CantParseEntities(reason))) if !plain_fallback => {
                    tracing::error!(%reason, "telegram could not parse our HTML; sending plain text instead");
                    plain_fallback = true;
                }
                Err(e) => {
                    tracing::error!(error = %e, chat = Self::chat(op), "telegram refused a message");
                    return Err(format!("telegram refused it: {e}"));
                }
            }
        }
    }
}

/// Whether `e` is the Bot API's servers failing (an HTTP 5xx) rather than a refusal of the
/// message: teloxide keeps no status code, so a 5xx shows as its JSON description or, from
/// a proxy, as a body that is not JSON. Retried like a network error, never dropped.
fn server_trouble(e: &RequestError) -> bool {
    const SERVER_ERRORS: &[&str] = &[
        "Internal Server Error",
        "Bad Gateway",
        "Service Unavailable",
        "Gateway Timeout",
    ];
    match e {
        RequestError::InvalidJson { .. } => true,
        RequestError::Api(ApiError::Unknown(description)) => {
            SERVER_ERRORS.iter().any(|s| description.contains(s))
        }
        _ => false,
    }
}

impl TelegramCourier {
    async fn attempt(&self, op: &OutboxOp, plain: bool) -> Result<i32, RequestError> {
        match op {
            OutboxOp::Send {
                chat,
                thread,
                html,
                plain: text,
                keyboard,
            } => {
                let mut req = if plain {
                    self.bot.send_message(ChatId(*chat), text.clone())
                } else {
                    self.bot
                        .send_message(ChatId(*chat), html.clone())
                        .parse_mode(ParseMode::Html)
                };
                if let Some(t) = thread {
                    req = req.message_thread_id(ThreadId(MessageId(*t)));
                }
                if let Some(k) = keyboard {
                    req = req.reply_markup(k.clone());
                }
                Ok(req.await?.id.0)
            }
            OutboxOp::Edit {
                chat,
                message,
                html,
                plain: text,
                keyboard,
            } => {
                let mut req = if plain {
                    self.bot
                        .edit_message_text(ChatId(*chat), MessageId(*message), text.clone())
                } else {
                    self.bot
                        .edit_message_text(ChatId(*chat), MessageId(*message), html.clone())
                        .parse_mode(ParseMode::Html)
                };
                if let Some(k) = keyboard {
                    req = req.reply_markup(k.clone());
                }
                Ok(req.await?.id.0)
            }
            OutboxOp::Document {
                chat,
                thread,
                file_name,
                bytes,
                caption_html,
            } => {
                let file = InputFile::memory(bytes.clone()).file_name(file_name.clone());
                let mut req = self.bot.send_document(ChatId(*chat), file);
                if !caption_html.is_empty() && !plain {
                    req = req
                        .caption(caption_html.clone())
                        .parse_mode(ParseMode::Html);
                }
                if let Some(t) = thread {
                    req = req.message_thread_id(ThreadId(MessageId(*t)));
                }
                Ok(req.await?.id.0)
            }
        }
    }
}
