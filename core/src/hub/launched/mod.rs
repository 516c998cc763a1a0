//! # Launched processes: one lifecycle for managed workers and assignments' Leads
//!
//! A managed worker and an assignment's Lead are both a Pi process the core launches for
//! a record it wrote first, keyed on the host by [`ProcKey`]. They go through the same
//! steps, here, once:
//!
//! - [`opening`]: the checks a request that starts one makes before anything is written
//!   (`delegate_project`, `delegate_agent`, `continue_agent`): who asks, the task, the
//!   host, the bounds, a fresh nonce.
//! - [`start`]: a launch queued for after the commit ([`HostOp::Launch`]); the host's
//!   answer recorded (the pid and pane), or its failure: a first launch is undone (the
//!   request did not happen), a relaunch loses the process; a process that exits on its
//!   own is lost (its owner, or its Manager role, told once); a relaunch on the same
//!   session with a fresh nonce (`resume_work`, a core restart), or an adoption of a tmux
//!   pane that outlived the core.
//! - [`bind`]: its session registering, proved by the launch nonce and the launched pid
//!   (fail closed), then bound.
//! - [`stop`]: its workers stopped first, then its record's ending, then the process,
//!   at once or with a wait for its exit (`stop_lead`, `close_agent`, an owner leaving for
//!   good, the bounds, an integration, a retirement).
//! - [`host_ops`]: the process work handed to the host after the hub's commit.
//!
//! A session the human started (`new_session`, `continue_session`: [`Proc::Started`]) is
//! the third kind: no owner and no assignment, its task plain mail from the human.
//!
//! What differs is data in [`Proc`]: a worker has an owner (its results and its loss go to
//! that session) and a state machine of its own (one launch per generation, a restart
//! relaunches it); a Lead has an assignment (a worktree, a branch, the repository's Manager
//! role for its updates) and is launched again and again on one session (`resume_work`,
//! `stop_lead`). What each does with its result and its asks stays with its feature
//! (`hub/workers/`, `hub/projects/`).

mod bind;
pub(super) mod host_ops;
mod opening;
mod start;
mod stop;

pub(super) use host_ops::HostOp;
pub(in crate::hub) use opening::{Asker, Opened};
pub(in crate::hub) use stop::StopWait;

use std::collections::HashSet;

use rusqlite::Connection;

use crate::hub::{HubError, HubResult, Out, State};
use crate::protocol::{ErrorCode, SessionId, StartedState, WorkerBackend, WorkerState};
use crate::store::projects::{AssignmentRow, Process};
use crate::store::started::StartedRow;
use crate::store::workers::WorkerRow;
use crate::workers::launch::{LaunchSpec, ProcKey, SessionStart};

/// A launched process's record: a managed worker's generation, or an assignment (its Lead).
pub(in crate::hub) enum Proc {
    Worker(WorkerRow),
    Lead(AssignmentRow),
    Started(StartedRow),
}

/// The hub's own state about launches (the rows are the truth).
#[derive(Default)]
pub(in crate::hub) struct Launches {
    /// First launches on their way: a failure undoes the request that made the record.
    first: HashSet<ProcKey>,
}

impl Proc {
    pub(in crate::hub) fn key(&self) -> ProcKey {
        match self {
            Proc::Worker(row) => ProcKey::Worker(row.worker.id),
            Proc::Lead(row) => ProcKey::Lead(row.assignment.id),
            Proc::Started(row) => ProcKey::Started(row.started.id),
        }
    }

    fn session(&self) -> &SessionId {
        match self {
            Proc::Worker(row) => &row.worker.session_id,
            Proc::Lead(row) => &row.assignment.session_id,
            Proc::Started(row) => &row.started.session_id,
        }
    }

    /// The nonce its next registration must present (empty: none may).
    fn nonce(&self) -> &str {
        match self {
            Proc::Worker(row) => &row.nonce,
            Proc::Lead(row) => &row.nonce,
            Proc::Started(row) => &row.nonce,
        }
    }

    /// The process the host launched (headless: the child; tmux: the pane's process).
    fn launched_pid(&self) -> Option<u32> {
        match self {
            Proc::Worker(row) => row.pid,
            Proc::Lead(row) => row.assignment.pid,
            Proc::Started(row) => row.started.pid,
        }
    }

    /// The process whose session registered with the nonce.
    fn bound_pid(&self) -> Option<u32> {
        match self {
            Proc::Worker(row) => row.bound_pid,
            Proc::Lead(row) => row.bound_pid,
            Proc::Started(row) => row.bound_pid,
        }
    }

    /// The tmux pane to adopt after a restart, for a tmux process that has one.
    fn tmux_pane(&self) -> Option<&str> {
        let (backend, pane) = match self {
            Proc::Worker(row) => (row.worker.backend, &row.pane),
            Proc::Lead(row) => (row.assignment.backend, &row.pane),
            Proc::Started(row) => (row.started.backend, &row.pane),
        };
        pane.as_deref().filter(|_| backend == WorkerBackend::Tmux)
    }

    /// The session file Pi wrote, when it is still there: a relaunch resumes it.
    fn session_file(&self) -> Option<&str> {
        let file = match self {
            Proc::Worker(row) => row.worker.session_file.as_deref(),
            Proc::Lead(row) => row.session_file.as_deref(),
            Proc::Started(row) => row.session_file.as_deref(),
        };
        file.filter(|f| std::path::Path::new(f).is_file())
    }

    /// Whether its process is expected to run, so that an exit now loses it.
    fn expects_process(&self) -> bool {
        match self {
            Proc::Worker(row) => !matches!(
                row.worker.state,
                WorkerState::Done | WorkerState::Closed | WorkerState::Settling | WorkerState::Lost
            ),
            Proc::Lead(row) => row.process != Process::None,
            Proc::Started(row) => row.started.state != StartedState::Ended,
        }
    }

    /// The spec that starts its process from `start`.
    fn spec(&self, start: SessionStart) -> LaunchSpec {
        match self {
            Proc::Worker(row) => crate::hub::workers::launch_spec(row, start),
            Proc::Lead(row) => crate::hub::projects::lead_spec(row, start),
            Proc::Started(row) => crate::hub::started::spec(row, start),
        }
    }
}

impl State {
    /// The record of `key`, if it still has one.
    pub(in crate::hub) fn proc_row(
        &self,
        key: ProcKey,
        db: &Connection,
    ) -> HubResult<Option<Proc>> {
        Ok(match key {
            ProcKey::Worker(id) => crate::store::workers::get(db, id)?.map(Proc::Worker),
            ProcKey::Lead(id) => crate::store::projects::get(db, id)?.map(Proc::Lead),
            ProcKey::Started(id) => crate::store::started::get(db, id)?.map(Proc::Started),
        })
    }

    /// The record of `key`, which must exist.
    fn proc_record(&self, key: ProcKey, db: &Connection) -> HubResult<Proc> {
        self.proc_row(key, db)?.ok_or_else(|| {
            HubError::new(
                ErrorCode::Internal,
                format!("{key:?} vanished from the store"),
            )
        })
    }

    /// Tell the subscribers its record changed.
    fn proc_changed(&self, proc: &Proc, out: &mut Out) {
        match proc {
            Proc::Worker(row) => self.worker_changed(row.worker.clone(), out),
            Proc::Lead(row) => self.assignment_changed(row, out),
            // Its session's own presence tells the subscribers.
            Proc::Started(_) => {}
        }
    }

    /// The backend new processes get, once the host can launch them.
    pub(in crate::hub) fn host_backend(&self) -> HubResult<WorkerBackend> {
        let Some(link) = &self.host else {
            return Err(crate::hub::workers::requests::refused(
                "launch_failed",
                "this core launches no workers (it was started without a worker host)",
            ));
        };
        if !link.extension.is_file() {
            return Err(crate::hub::workers::requests::refused(
                "launch_failed",
                format!(
                    "the shepherd extension workers load is not at {}: run `shepherd install`, or set [workers] extension",
                    link.extension.display()
                ),
            ));
        }
        Ok(match link.backend {
            crate::workers::host::Backend::Tmux => WorkerBackend::Tmux,
            crate::workers::host::Backend::Headless => WorkerBackend::Headless,
        })
    }
}

/// A random hex string of `bytes` bytes.
fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).expect("the OS random source works");
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// A fresh UUID (version 4) for a new Pi session.
pub(in crate::hub) fn new_session_id() -> SessionId {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the OS random source works");
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    SessionId::from(
        format!(
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        )
        .as_str(),
    )
}

/// A one-time launch nonce.
fn new_nonce() -> String {
    random_hex(24)
}
