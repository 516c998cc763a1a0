//! Stopping a launched process, one step for managed workers and assignments' Leads:
//! first the live workers it owns (each stopped the same way, all the way down), then its
//! record's own ending (a worker is closed: its pending ask abandoned, its unread mail
//! withdrawn; a Lead's assignment records that its process stopped), then the process
//! itself, queued for after the commit ([`HostOp::Stop`]), or with a wait for its exit
//! ([`HostOp::StopThen`]) when what follows must not race it (removing its checkout).
//! The host's stop is idempotent: a process already gone, or never started, is no error.

use rusqlite::Connection;

use super::{HostOp, Proc};
use crate::clock::now_ms;
use crate::hub::{ConnId, HubResult, Out, State};
use crate::store;
use crate::store::workers::WorkerRow;

/// How [`State::stop_proc`] waits for the process's exit: at most `bound`, then `then`
/// (with `reply`, the request that asked, answered when it is done).
pub(in crate::hub) struct StopWait {
    pub bound: std::time::Duration,
    pub reply: Option<(ConnId, u64)>,
    pub then: super::host_ops::AfterStop,
}

impl Proc {
    /// The live workers this process's session started: a worker's children, a Lead's
    /// workers.
    fn owned_workers(&self, db: &Connection) -> rusqlite::Result<Vec<WorkerRow>> {
        match self {
            Proc::Worker(row) => store::workers::children(db, row.worker.id),
            Proc::Lead(row) => store::workers::owned_by(db, &row.assignment.session_id, false),
            Proc::Started(row) => store::workers::owned_by(db, &row.started.session_id, false),
        }
    }

    /// The pids a stop waits for: the launched process and the one that registered.
    fn pids(&self) -> Vec<u32> {
        [self.launched_pid(), self.bound_pid()]
            .into_iter()
            .flatten()
            .collect()
    }
}

impl State {
    /// Stop `proc`, its workers first; `by` names who stopped it. With `wait`, its
    /// continuation runs once the process has exited (or its bound ran out).
    pub(in crate::hub) fn stop_proc(
        &mut self,
        proc: &Proc,
        by: &str,
        wait: Option<StopWait>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        for worker in proc.owned_workers(db)? {
            self.stop_proc(&Proc::Worker(worker), by, None, db, out)?;
        }
        match proc {
            Proc::Worker(row) => self.worker_closed(row, by, db, out)?,
            Proc::Lead(row) => store::projects::stopped(db, row.assignment.id, now_ms())?,
            Proc::Started(row) => store::started::ended(db, row.started.id, now_ms())?,
        }
        let key = proc.key();
        out.host.push(match wait {
            None => HostOp::Stop { key },
            Some(StopWait { bound, reply, then }) => HostOp::StopThen {
                key,
                pids: proc.pids(),
                bound,
                reply,
                then,
            },
        });
        Ok(())
    }
}
