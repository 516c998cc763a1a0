//! # The outbox
//!
//! Every message and edit the bridge sends to Telegram goes through one actor that keeps
//! them in order and within Telegram's limits: at most `per_chat_per_second` messages a
//! second to one chat, `per_group_per_minute` a minute to a group, `global_per_second`
//! overall. An edit of a message whose previous edit is still queued replaces it (rapid
//! edits coalesce). A 429 is waited out (`retry_after`) and the same operation retried, so
//! nothing is lost or reordered; network errors are retried with backoff. A message
//! Telegram refuses for its content is sent again as plain text; what still fails is
//! reported to whoever queued it and logged.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use teloxide::payloads::{EditMessageTextSetters, SendDocumentSetters, SendMessageSetters};
use teloxide::prelude::Requester;
use teloxide::types::{ChatId, InlineKeyboardMarkup, InputFile, MessageId, ParseMode, ThreadId};
use teloxide::{ApiError, Bot, RequestError};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Telegram's rate limits, as the outbox applies them.
#[derive(Debug, Clone, Copy)]
pub struct RateLimits {
    pub per_chat_per_second: u32,
    pub per_group_per_minute: u32,
    pub global_per_second: u32,
}

/// What to send.
#[derive(Debug)]
pub enum OutboxOp {
    /// A message; the reply gets its id.
    Send {
        chat: i64,
        thread: Option<i32>,
        html: String,
        plain: String,
        keyboard: Option<InlineKeyboardMarkup>,
        reply: Option<oneshot::Sender<Result<i32, String>>>,
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
        reply: Option<oneshot::Sender<Result<i32, String>>>,
    },
}

impl OutboxOp {
    fn chat(&self) -> i64 {
        match self {
            OutboxOp::Send { chat, .. }
            | OutboxOp::Edit { chat, .. }
            | OutboxOp::Document { chat, .. } => *chat,
        }
    }
}

/// Cheap handle to the outbox.
#[derive(Clone)]
pub struct OutboxHandle {
    tx: mpsc::UnboundedSender<OutboxOp>,
}

impl OutboxHandle {
    /// Queue an operation (never blocks; order is kept).
    pub fn push(&self, op: OutboxOp) {
        if self.tx.send(op).is_err() {
            tracing::warn!("telegram outbox is closed; dropping an operation at shutdown");
        }
    }

    /// Send a message and wait for its id.
    pub async fn send(
        &self,
        chat: i64,
        thread: Option<i32>,
        html: String,
        plain: String,
        keyboard: Option<InlineKeyboardMarkup>,
    ) -> Result<i32, String> {
        let (tx, rx) = oneshot::channel();
        self.push(OutboxOp::Send {
            chat,
            thread,
            html,
            plain,
            keyboard,
            reply: Some(tx),
        });
        rx.await
            .unwrap_or_else(|_| Err("the outbox stopped".into()))
    }

    /// Send a document and wait for its message id.
    pub async fn document(
        &self,
        chat: i64,
        thread: Option<i32>,
        file_name: String,
        bytes: Vec<u8>,
        caption_html: String,
    ) -> Result<i32, String> {
        let (tx, rx) = oneshot::channel();
        self.push(OutboxOp::Document {
            chat,
            thread,
            file_name,
            bytes,
            caption_html,
            reply: Some(tx),
        });
        rx.await
            .unwrap_or_else(|_| Err("the outbox stopped".into()))
    }
}

/// Start the outbox actor.
pub fn spawn(bot: Bot, limits: RateLimits, shutdown: CancellationToken) -> OutboxHandle {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(
        Outbox {
            bot,
            limits,
            queue: VecDeque::new(),
            sent: Sent::default(),
        }
        .run(rx, shutdown),
    );
    OutboxHandle { tx }
}

/// Send times, for the sliding-window limits.
#[derive(Default)]
struct Sent {
    per_chat: HashMap<i64, VecDeque<Instant>>,
    global: VecDeque<Instant>,
}

struct Outbox {
    bot: Bot,
    limits: RateLimits,
    queue: VecDeque<OutboxOp>,
    sent: Sent,
}

impl Outbox {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<OutboxOp>, shutdown: CancellationToken) {
        loop {
            if self.queue.is_empty() {
                let op = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    op = rx.recv() => op,
                };
                match op {
                    Some(op) => self.enqueue(op),
                    None => return,
                }
            }
            while let Ok(op) = rx.try_recv() {
                self.enqueue(op);
            }
            let Some(op) = self.queue.pop_front() else {
                continue;
            };
            let wait = self.wait_for_slot(op.chat());
            if !wait.is_zero() {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(wait) => {}
                }
            }
            self.record(op.chat());
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = self.execute(op) => {}
            }
        }
    }

    /// Queue an op; an edit replaces a queued edit of the same message.
    fn enqueue(&mut self, op: OutboxOp) {
        if let OutboxOp::Edit { chat, message, .. } = &op {
            let (chat, message) = (*chat, *message);
            if let Some(slot) = self.queue.iter_mut().find(
                |q| matches!(q, OutboxOp::Edit { chat: c, message: m, .. } if *c == chat && *m == message),
            ) {
                *slot = op;
                return;
            }
        }
        self.queue.push_back(op);
    }

    /// How long until sending to `chat` stays within every limit.
    fn wait_for_slot(&mut self, chat: i64) -> Duration {
        let now = Instant::now();
        let mut wait = Duration::ZERO;
        let mut window = |times: &mut VecDeque<Instant>, max: u32, span: Duration| {
            while times
                .front()
                .is_some_and(|t| now.duration_since(*t) >= span)
            {
                times.pop_front();
            }
            if max > 0 && times.len() >= max as usize {
                let oldest = times[times.len() - max as usize];
                wait = wait.max(span.saturating_sub(now.duration_since(oldest)));
            }
        };
        window(
            &mut self.sent.global,
            self.limits.global_per_second,
            Duration::from_secs(1),
        );
        let times = self.sent.per_chat.entry(chat).or_default();
        window(
            times,
            self.limits.per_chat_per_second,
            Duration::from_secs(1),
        );
        if chat < 0 {
            window(
                times,
                self.limits.per_group_per_minute,
                Duration::from_secs(60),
            );
        }
        wait
    }

    fn record(&mut self, chat: i64) {
        let now = Instant::now();
        self.sent.global.push_back(now);
        let times = self.sent.per_chat.entry(chat).or_default();
        times.push_back(now);
        while times.len() > 64 {
            times.pop_front();
        }
        while self.sent.global.len() > 64 {
            self.sent.global.pop_front();
        }
    }

    /// Run one op to completion: wait out 429s, retry network errors, fall back to plain
    /// text when Telegram cannot parse our HTML.
    async fn execute(&mut self, op: OutboxOp) {
        let mut backoff = Duration::from_millis(500);
        let mut plain_fallback = false;
        loop {
            let result = self.attempt(&op, plain_fallback).await;
            match result {
                Ok(id) => {
                    reply(op, Ok(id));
                    return;
                }
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
                Err(RequestError::Api(ApiError::MessageNotModified)) => {
                    reply(op, Ok(0));
                    return;
                }
                Err(RequestError::Api(ApiError::CantParseEntities(reason))) if !plain_fallback => {
                    tracing::error!(%reason, "telegram could not parse our HTML; sending plain text instead");
                    plain_fallback = true;
                }
                Err(e) => {
                    tracing::error!(error = %e, chat = op.chat(), "telegram refused a message");
                    reply(op, Err(format!("telegram refused it: {e}")));
                    return;
                }
            }
        }
    }

    async fn attempt(&self, op: &OutboxOp, plain: bool) -> Result<i32, RequestError> {
        match op {
            OutboxOp::Send {
                chat,
                thread,
                html,
                plain: text,
                keyboard,
                ..
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
                ..
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

fn reply(op: OutboxOp, result: Result<i32, String>) {
    match op {
        OutboxOp::Send {
            reply: Some(tx), ..
        }
        | OutboxOp::Document {
            reply: Some(tx), ..
        } => {
            let _ = tx.send(result);
        }
        _ => {}
    }
}
