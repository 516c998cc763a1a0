//! Flood limits: a token bucket per chat, a one-minute window per group and a one-second
//! window for the whole bot. Refusals carry the whole seconds to wait, as Telegram's
//! `retry_after` does (at least 1).

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

/// Telegram's published limits are about 1 message a second per chat (short bursts
/// pass), 20 a minute per group and 30 a second overall. Tests usually raise them so they
/// stay fast, or turn them off with `FakeTelegramOptions::rate_limits = None`.
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimits {
    /// Sustained messages a second in one chat.
    pub per_chat_per_sec: f64,
    /// How many messages one chat may send back to back before the rate applies.
    pub per_chat_burst: u32,
    /// Messages a minute in one group or supergroup (negative chat id).
    pub per_group_per_min: u32,
    /// Messages a second over all chats.
    pub global_per_sec: u32,
    /// Whether `editMessageText`/`editMessageReplyMarkup` count like sends (they do on
    /// Telegram).
    pub count_edits: bool,
}

impl RateLimits {
    /// About what Telegram enforces.
    pub fn telegram() -> RateLimits {
        RateLimits {
            per_chat_per_sec: 1.0,
            per_chat_burst: 3,
            per_group_per_min: 20,
            global_per_sec: 30,
            count_edits: true,
        }
    }
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits::telegram()
    }
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

#[derive(Debug)]
pub(crate) struct Limiter {
    limits: RateLimits,
    chats: HashMap<i64, Bucket>,
    groups: HashMap<i64, VecDeque<Instant>>,
    global: VecDeque<Instant>,
}

fn whole_seconds(d: Duration) -> u64 {
    (d.as_secs_f64().ceil() as u64).max(1)
}

impl Limiter {
    pub(crate) fn new(limits: RateLimits) -> Limiter {
        Limiter {
            limits,
            chats: HashMap::new(),
            groups: HashMap::new(),
            global: VecDeque::new(),
        }
    }

    pub(crate) fn counts_edits(&self) -> bool {
        self.limits.count_edits
    }

    /// Take one message from every budget that applies to `chat_id`, or the seconds to
    /// wait when one of them is exhausted (nothing is taken then).
    pub(crate) fn take(&mut self, chat_id: i64, now: Instant) -> Result<(), u64> {
        let limits = &self.limits;
        let mut wait = Duration::ZERO;

        let bucket = self.chats.entry(chat_id).or_insert(Bucket {
            tokens: limits.per_chat_burst.max(1) as f64,
            at: now,
        });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * limits.per_chat_per_sec)
            .min(limits.per_chat_burst.max(1) as f64);
        bucket.at = now;
        if bucket.tokens < 1.0 {
            let rate = limits.per_chat_per_sec.max(f64::MIN_POSITIVE);
            wait = wait.max(Duration::from_secs_f64(
                ((1.0 - bucket.tokens) / rate).min(3600.0),
            ));
        }

        let minute = Duration::from_secs(60);
        let group = (chat_id < 0).then(|| {
            let window = self.groups.entry(chat_id).or_default();
            while window
                .front()
                .is_some_and(|t| now.saturating_duration_since(*t) >= minute)
            {
                window.pop_front();
            }
            window
        });
        let per_group = limits.per_group_per_min.max(1) as usize;
        if let Some(window) = &group
            && window.len() >= per_group
        {
            let oldest = window[window.len() - per_group];
            wait = wait.max(minute.saturating_sub(now.saturating_duration_since(oldest)));
        }

        let second = Duration::from_secs(1);
        while self
            .global
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= second)
        {
            self.global.pop_front();
        }
        let global = limits.global_per_sec.max(1) as usize;
        if self.global.len() >= global {
            let oldest = self.global[self.global.len() - global];
            wait = wait.max(second.saturating_sub(now.saturating_duration_since(oldest)));
        }

        if !wait.is_zero() {
            return Err(whole_seconds(wait));
        }
        bucket.tokens -= 1.0;
        if let Some(window) = group {
            window.push_back(now);
        }
        self.global.push_back(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(per_sec: f64, burst: u32, group: u32, global: u32) -> RateLimits {
        RateLimits {
            per_chat_per_sec: per_sec,
            per_chat_burst: burst,
            per_group_per_min: group,
            global_per_sec: global,
            count_edits: true,
        }
    }

    #[test]
    fn per_chat_burst_then_rate() {
        let mut l = Limiter::new(limits(1.0, 3, 1000, 1000));
        let t = Instant::now();
        for _ in 0..3 {
            l.take(7, t).unwrap();
        }
        assert_eq!(l.take(7, t), Err(1));
        // Another chat has its own bucket.
        l.take(8, t).unwrap();
        l.take(7, t + Duration::from_millis(1000)).unwrap();
        assert_eq!(l.take(7, t + Duration::from_millis(1100)), Err(1));
        let mut slow = Limiter::new(limits(0.2, 1, 1000, 1000));
        slow.take(1, t).unwrap();
        assert_eq!(slow.take(1, t), Err(5));
    }

    #[test]
    fn per_group_minute_window() {
        let mut l = Limiter::new(limits(100.0, 100, 5, 1000));
        let t = Instant::now();
        for i in 0..5 {
            l.take(-100, t + Duration::from_secs(i)).unwrap();
        }
        assert_eq!(l.take(-100, t + Duration::from_secs(10)), Err(50));
        // Private chats have no group budget.
        for _ in 0..10 {
            l.take(42, t).unwrap();
        }
        l.take(-100, t + Duration::from_secs(60)).unwrap();
    }

    #[test]
    fn global_second_window() {
        let mut l = Limiter::new(limits(100.0, 100, 1000, 4));
        let t = Instant::now();
        for chat in 0..4 {
            l.take(chat, t).unwrap();
        }
        assert_eq!(l.take(99, t + Duration::from_millis(300)), Err(1));
        l.take(99, t + Duration::from_millis(1000)).unwrap();
    }
}
