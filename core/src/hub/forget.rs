//! Forgetting sessions unseen for a long time (`core.forget_sessions_after_days`): at start
//! and every hour, sessions last seen before the cutoff that are not connected and that
//! nothing refers to any more (no open ask by or for them, no unread mail, no role, no
//! active pairing, no live worker, no assignment that is not retired) are forgotten with
//! their history, a bounded number per pass so the hub never stalls on it. What remains
//! is consistent: no listing names a session that is gone. The same hourly tick expires the
//! leases of holders away too long (`hub/release.rs`).

use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::mpsc;

use super::{HubCommand, State};
use crate::clock::now_ms;
use crate::store;

/// Sessions forgotten per pass; a full pass asks for another at once.
const PER_PASS: usize = 500;

/// Between passes.
const EVERY: Duration = Duration::from_secs(3600);

/// Send [`HubCommand::Forget`] now and then every hour while the hub runs (forgetting
/// sessions and expiring away holders' leases).
pub(super) async fn timer(hub: mpsc::WeakSender<HubCommand>) {
    loop {
        let Some(tx) = hub.upgrade() else { break };
        if tx.send(HubCommand::Forget).await.is_err() {
            break;
        }
        drop(tx);
        tokio::time::sleep(EVERY).await;
    }
}

impl State {
    /// One pass: forget up to [`PER_PASS`] sessions; more remain: another pass follows.
    pub(super) fn forget_unseen(&mut self, db: &Connection) {
        let days = self.facts.forget_sessions_after_days;
        if days == 0 {
            return;
        }
        let cutoff = now_ms().saturating_sub(days.saturating_mul(24 * 3600 * 1000));
        let result = (|| -> rusqlite::Result<usize> {
            let candidates = store::sessions::forgettable(db, &self.unread, cutoff, PER_PASS)?;
            let mut forgotten = 0;
            // Connected for that long without a word: still here, not forgotten.
            for id in candidates.iter().filter(|id| !self.presence.is_live(id)) {
                store::sessions::forget(db, &self.unread, id)?;
                forgotten += 1;
            }
            Ok(forgotten)
        })();
        match result {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(
                    sessions = n,
                    days,
                    "forgot sessions unseen for {days} days that nothing refers to"
                );
                if n == PER_PASS
                    && let Some(tx) = self.self_tx.upgrade()
                {
                    let _ = tx.try_send(HubCommand::Forget);
                }
            }
            Err(e) => {
                super::base::writes_undone();
                tracing::error!(error = %e, "forgetting unseen sessions failed")
            }
        }
    }
}
