//! Workers are bounded and follow their owner.
//!
//! A new worker (`delegate_agent`, `continue_agent`) is refused with `worker_refused` /
//! `worker_limit` when its owner already has `workers.max_per_owner` live workers, or all
//! owners together `workers.max_live`. "Live" is a worker with a process or one being
//! started (`store::workers::count_running`: not `lost`, `done` or `closed`). The rows are
//! counted when the hub decides, and an accepted worker's row (`starting`) is written in
//! that same handling, before its launch: launches still in flight count, and requests
//! that arrive together cannot overshoot (the hub handles one at a time).
//!
//! An owner session that leaves for good (`bye {returning: false}`, then its connection
//! closes: the session-change event, `hub/session_change.rs`) has its live workers closed as `close_agent` closes them (their own workers
//! first, a pending ask abandoned, unread mail withdrawn, the process stopped); one that
//! may come back (`bye {returning: true}`, a connection that drops without `bye`, a core
//! that stops) keeps them. Only Pi sessions own workers (`delegate_agent` refuses the CLI
//! and the bridges): the human closes workers by hand and never causes a cascade.

use rusqlite::Connection;
use serde_json::json;

use crate::hub::session_change::{ChangeKind, SessionChange};
use crate::hub::{HubError, HubResult, Out, State, atomically};
use crate::protocol::{ErrorCode, SessionId};
use crate::store;

/// The refusal when `limit` (`max_per_owner` or `max_live`) is reached.
fn worker_limit(limit: &str, live: usize, max: usize, message: String) -> HubError {
    HubError::new(ErrorCode::WorkerRefused, message).with_details(json!({
        "reason": "worker_limit",
        "limit": format!("workers.{limit}"),
        "live": live,
        "max": max,
    }))
}

impl State {
    /// Refuse one more worker for `owner` when it, or the core, has as many live workers
    /// as allowed; the refusal names the bound, the count and how to change it.
    pub(in crate::hub) fn check_worker_bounds(
        &self,
        owner: &SessionId,
        db: &Connection,
    ) -> HubResult<()> {
        let max = self.facts.max_workers_per_owner;
        let live = store::workers::count_running(db, Some(owner))?;
        if live >= max {
            return Err(worker_limit(
                "max_per_owner",
                live,
                max,
                format!(
                    "this session has {live} live workers, the most one owner may have (workers.max_per_owner = {max}); \
                     wait for a result or close one (close_agent), or raise [workers] max_per_owner in the config \
                     (SHEPHERD_WORKERS__MAX_PER_OWNER)"
                ),
            ));
        }
        let max = self.facts.max_live_workers;
        let live = store::workers::count_running(db, None)?;
        if live >= max {
            return Err(worker_limit(
                "max_live",
                live,
                max,
                format!(
                    "{live} workers are live on this core, the most allowed (workers.max_live = {max}); \
                     wait for one to end (`shepherd workers` lists them, `shepherd close` closes one), \
                     or raise [workers] max_live in the config (SHEPHERD_WORKERS__MAX_LIVE)"
                ),
            ));
        }
        Ok(())
    }

    /// A session change, as managed workers hear it: an owner that left for good (said
    /// goodbye) takes its workers with it; one that was lost may come back to them.
    pub(in crate::hub) fn workers_session_changed(
        &mut self,
        change: &SessionChange<'_>,
        db: &Connection,
        out: &mut Out,
    ) {
        if change.kind != (ChangeKind::Left { closed: true }) {
            return;
        }
        let owner = change.session;
        let closed = self.session_uncounted(db, owner).and_then(|info| {
            atomically(db, || self.owner_left_for_good(owner, &info.name, db, out))
        });
        if let Err(err) = closed {
            tracing::error!(session = %owner, "closing the workers of an owner that left failed: {}", err.message);
        }
    }

    /// `owner` (named `name`) left for good: close every live worker it owns, each with
    /// its own workers first. Returns how many it closed directly.
    fn owner_left_for_good(
        &mut self,
        owner: &SessionId,
        name: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<usize> {
        let rows = store::workers::owned_by(db, owner, false)?;
        if rows.is_empty() {
            return Ok(0);
        }
        tracing::info!(owner = %owner, name, workers = rows.len(), "owner left for good: closing its workers");
        let by = format!("{name} (its owner, who left)");
        for row in &rows {
            self.close_tree(row, &by, db, out)?;
        }
        Ok(rows.len())
    }
}
