//! # The outbox: one actor per bridge that sends in order, paced
//!
//! Every message, edit, reaction and file a bridge sends goes through one actor, so the
//! bridge's own actor never waits out a rate limit unless it needs what the send returns
//! (a message's id). The outbox keeps the order of what was queued, paces sends to the
//! platform's limits (sliding windows: overall and per chat), and lets a newer edit of a
//! message replace one still queued (rapid edits coalesce). How one operation is sent,
//! and retried until it goes or cannot (429 `retry_after`, `M_LIMIT_EXCEEDED`, network
//! errors), is the platform's [`Courier`]: `telegram/outbox.rs`, `matrix/outbox.rs`.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::hash::Hash;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// At most `max` sends in any `span` (0: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub max: u32,
    pub span: Duration,
}

/// How one platform sends one operation.
pub trait Courier: Send + 'static {
    /// What to send.
    type Op: Send + 'static;
    /// Where it goes (pacing is per chat).
    type Chat: Eq + Hash + Clone + Send + 'static;
    /// What a send returns (a message id).
    type Sent: Send + 'static;

    /// The platform's name, for logs.
    const NAME: &'static str;

    fn chat(op: &Self::Op) -> Self::Chat;

    /// Whether `new` makes the queued `old` pointless (a newer edit of the same message).
    fn replaces(new: &Self::Op, old: &Self::Op) -> bool;

    /// The limits of all sends together.
    fn global(&self) -> Vec<Window>;

    /// The limits of sends to `chat`.
    fn per_chat(&self, chat: &Self::Chat) -> Vec<Window>;

    /// Send `op`, retrying what can be retried; `Err` says why it did not go.
    fn deliver(&mut self, op: &Self::Op)
    -> impl Future<Output = Result<Self::Sent, String>> + Send;
}

/// An operation and who waits for its result.
struct Queued<C: Courier> {
    op: C::Op,
    reply: Option<oneshot::Sender<Result<C::Sent, String>>>,
}

/// Cheap handle to an outbox.
pub struct Outbox<C: Courier> {
    tx: mpsc::UnboundedSender<Queued<C>>,
}

impl<C: Courier> Clone for Outbox<C> {
    fn clone(&self) -> Self {
        Outbox {
            tx: self.tx.clone(),
        }
    }
}

impl<C: Courier> Outbox<C> {
    /// Start the actor, sending with `courier` until `shutdown`.
    pub fn spawn(courier: C, shutdown: CancellationToken) -> Outbox<C> {
        let (tx, rx) = mpsc::unbounded_channel();
        let actor = Actor {
            courier,
            queue: VecDeque::new(),
            sent: Sent::default(),
        };
        tokio::spawn(actor.run(rx, shutdown));
        Outbox { tx }
    }

    /// Queue an operation (never blocks; order is kept).
    pub fn push(&self, op: C::Op) {
        self.queue(Queued { op, reply: None });
    }

    /// Queue an operation and wait for its result.
    pub async fn send(&self, op: C::Op) -> Result<C::Sent, String> {
        let (tx, rx) = oneshot::channel();
        self.queue(Queued {
            op,
            reply: Some(tx),
        });
        rx.await
            .unwrap_or_else(|_| Err("the outbox stopped".into()))
    }

    fn queue(&self, queued: Queued<C>) {
        if self.tx.send(queued).is_err() {
            tracing::warn!(
                "{} outbox is closed; dropping an operation at shutdown",
                C::NAME
            );
        }
    }
}

/// Send times, for the sliding windows.
struct Sent<K> {
    per_chat: HashMap<K, VecDeque<Instant>>,
    global: VecDeque<Instant>,
}

impl<K> Default for Sent<K> {
    fn default() -> Self {
        Sent {
            per_chat: HashMap::new(),
            global: VecDeque::new(),
        }
    }
}

/// How many send times are kept per chat and overall (enough for every window).
const KEPT: usize = 64;

struct Actor<C: Courier> {
    courier: C,
    queue: VecDeque<Queued<C>>,
    sent: Sent<C::Chat>,
}

impl<C: Courier> Actor<C> {
    async fn run(
        mut self,
        mut rx: mpsc::UnboundedReceiver<Queued<C>>,
        shutdown: CancellationToken,
    ) {
        loop {
            if self.queue.is_empty() {
                let queued = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    q = rx.recv() => q,
                };
                match queued {
                    Some(q) => self.enqueue(q),
                    None => return,
                }
            }
            while let Ok(q) = rx.try_recv() {
                self.enqueue(q);
            }
            let Some(queued) = self.queue.pop_front() else {
                continue;
            };
            let chat = C::chat(&queued.op);
            let wait = self.wait_for_slot(&chat);
            if !wait.is_zero() {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(wait) => {}
                }
            }
            self.record(chat);
            let result = tokio::select! {
                _ = shutdown.cancelled() => return,
                r = self.courier.deliver(&queued.op) => r,
            };
            if let Some(reply) = queued.reply {
                let _ = reply.send(result);
            }
        }
    }

    /// Queue an operation; one nobody waits for may replace a queued one it supersedes.
    fn enqueue(&mut self, queued: Queued<C>) {
        if queued.reply.is_none()
            && let Some(slot) = self
                .queue
                .iter_mut()
                .find(|q| q.reply.is_none() && C::replaces(&queued.op, &q.op))
        {
            *slot = queued;
            return;
        }
        self.queue.push_back(queued);
    }

    /// How long until sending to `chat` stays within every limit.
    fn wait_for_slot(&mut self, chat: &C::Chat) -> Duration {
        let now = Instant::now();
        let mut wait = Duration::ZERO;
        for w in self.courier.global() {
            wait = wait.max(window(&mut self.sent.global, w, now));
        }
        let windows = self.courier.per_chat(chat);
        let times = self.sent.per_chat.entry(chat.clone()).or_default();
        for w in windows {
            wait = wait.max(window(times, w, now));
        }
        wait
    }

    fn record(&mut self, chat: C::Chat) {
        let now = Instant::now();
        self.sent.global.push_back(now);
        let times = self.sent.per_chat.entry(chat).or_default();
        times.push_back(now);
        while times.len() > KEPT {
            times.pop_front();
        }
        while self.sent.global.len() > KEPT {
            self.sent.global.pop_front();
        }
    }
}

/// How long until one more send fits `w`, given the send `times` (older ones dropped).
fn window(times: &mut VecDeque<Instant>, w: Window, now: Instant) -> Duration {
    while times
        .front()
        .is_some_and(|t| now.duration_since(*t) >= w.span)
    {
        times.pop_front();
    }
    if w.max > 0 && times.len() >= w.max as usize {
        let oldest = times[times.len() - w.max as usize];
        return w.span.saturating_sub(now.duration_since(oldest));
    }
    Duration::ZERO
}
