//! # Connections still greeting
//!
//! Every accepted connection reads its `hello` at once, in its own task: none waits for
//! another, so a client that says hello as it connects is answered however many
//! connections stay silent. What silent connections can hold is bounded by their number
//! instead: once [`MAX_GREETING`](super::MAX_GREETING) connections are greeting, the accept
//! loop closes the oldest of them (it has had the longest chance) to make room for the
//! newest. The accept loop alone owns the queue ([`Greeters`]); a connection holds its
//! [`Ticket`], marks it done when its greeting is over, and is told to leave through it.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

/// One connection's place among those greeting.
#[derive(Debug, Default)]
pub(super) struct Ticket {
    done: AtomicBool,
    evict: CancellationToken,
}

impl Ticket {
    /// Fires when the accept loop needs this connection's place.
    pub(super) fn evicted(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.evict.cancelled()
    }

    /// The greeting is over (welcomed or closed): the place is free.
    pub(super) fn finish(&self) {
        self.done.store(true, Ordering::Release);
    }

    fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }
}

/// The connections greeting, oldest first, owned by the accept loop.
pub(super) struct Greeters {
    queue: VecDeque<Arc<Ticket>>,
    bound: usize,
}

impl Greeters {
    pub(super) fn new(bound: usize) -> Greeters {
        Greeters {
            queue: VecDeque::with_capacity(bound),
            bound: bound.max(1),
        }
    }

    /// A place for a connection just accepted; when every place is taken, the oldest
    /// greeter is told to leave first.
    pub(super) fn admit(&mut self) -> Arc<Ticket> {
        self.forget_done();
        if self.queue.len() >= self.bound {
            self.evict_oldest();
        }
        let ticket = Arc::new(Ticket::default());
        self.queue.push_back(ticket.clone());
        ticket
    }

    /// Tell the oldest connection still greeting to leave; false when none is greeting.
    pub(super) fn evict_oldest(&mut self) -> bool {
        self.forget_done();
        match self.queue.pop_front() {
            Some(oldest) => {
                oldest.evict.cancel();
                true
            }
            None => false,
        }
    }

    /// Connections greeting now.
    #[cfg(test)]
    fn len(&mut self) -> usize {
        self.forget_done();
        self.queue.len()
    }

    fn forget_done(&mut self) {
        self.queue.retain(|ticket| !ticket.is_done());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_greeter_leaves_for_a_new_one_when_every_place_is_taken() {
        let mut greeters = Greeters::new(3);
        let first = greeters.admit();
        let second = greeters.admit();
        let third = greeters.admit();
        assert_eq!(greeters.len(), 3);
        assert!(!first.evict.is_cancelled());

        let fourth = greeters.admit();
        assert!(first.evict.is_cancelled(), "the oldest makes room");
        assert!(!second.evict.is_cancelled() && !third.evict.is_cancelled());
        assert!(!fourth.evict.is_cancelled());
        assert_eq!(greeters.len(), 3);
    }

    #[test]
    fn a_finished_greeting_frees_its_place() {
        let mut greeters = Greeters::new(2);
        let first = greeters.admit();
        let second = greeters.admit();
        second.finish();
        let third = greeters.admit();
        assert!(!first.evict.is_cancelled(), "a place was free");
        assert_eq!(greeters.len(), 2);
        // Asked for room (too many connections): the oldest still greeting leaves.
        assert!(greeters.evict_oldest());
        assert!(first.evict.is_cancelled());
        assert!(!third.evict.is_cancelled());
        third.finish();
        assert!(!greeters.evict_oldest(), "nobody is greeting");
    }
}
