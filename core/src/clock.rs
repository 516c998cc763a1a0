//! # The clock
//!
//! Wall time in the protocol's unit, Unix milliseconds: every stored timestamp, `created_at`,
//! `last_seen` and age shown to a person comes from [`now_ms`]. Timers (the hub's tick, the
//! look interval, retries) use `tokio::time`, which a test pauses with
//! `tokio::time::pause()`; for the wall clock a test on one thread can stop and move time
//! with [`frozen`], so "ten minutes later" needs no sleeping.

use std::cell::Cell;

thread_local! {
    /// A test's stopped clock on this thread (never set outside tests).
    static FROZEN: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> u64 {
    if let Some(at) = FROZEN.with(Cell::get) {
        return at;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Stop this thread's wall clock at `at` until the returned guard is dropped; move it with
/// [`FrozenClock::advance`]. For tests: code under test reads [`now_ms`] as usual.
pub fn frozen(at: u64) -> FrozenClock {
    let previous = FROZEN.with(|f| f.replace(Some(at)));
    FrozenClock { previous }
}

/// A stopped clock (see [`frozen`]); the clock runs again when it is dropped.
#[must_use = "the clock runs again when this is dropped"]
pub struct FrozenClock {
    previous: Option<u64>,
}

impl FrozenClock {
    /// Move the stopped clock forward by `ms`.
    pub fn advance(&self, ms: u64) {
        FROZEN.with(|f| f.set(f.get().map(|at| at + ms)));
    }
}

impl Drop for FrozenClock {
    fn drop(&mut self) {
        FROZEN.with(|f| f.set(self.previous));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frozen_clock_stands_still_moves_by_hand_and_runs_again_when_dropped() {
        let before = now_ms();
        {
            let clock = frozen(1_000);
            assert_eq!(now_ms(), 1_000);
            clock.advance(600_000);
            assert_eq!(now_ms(), 601_000);
        }
        assert!(now_ms() >= before);
    }
}
