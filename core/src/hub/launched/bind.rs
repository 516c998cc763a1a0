//! A launched process's session registering: the record whose session it claims (an
//! open assignment's Lead, then a live worker), proved by the launch nonce and the
//! launched pid ([`prove_launch`]). A registration that claims such a session without both
//! is refused and changes nothing (`launch_mismatch`: fail closed); a second live process
//! on it is refused (`session_taken`). An accepted one binds the record to its process.

use rusqlite::Connection;

use super::Proc;
use crate::clock::now_ms;
use crate::hub::projects::{self, tag};
use crate::hub::workers::requests as workers;
use crate::hub::{HubError, HubResult, Out, State};
use crate::protocol::{ErrorCode, Registration, SessionId, WorkerState};
use crate::store;
use crate::workers::proc::{LaunchProof, process_alive, prove_launch};

impl Proc {
    /// The refusal of a registration that is not the process launched for this record.
    fn mismatch(&self, session: &SessionId, why: &str) -> HubError {
        match self {
            Proc::Worker(row) => workers::refused(
                "launch_mismatch",
                format!(
                    "session {session} belongs to managed worker {} ({why}); only the process shepherd launched for it may register",
                    row.worker.label
                ),
            ),
            Proc::Started(row) => HubError::new(
                ErrorCode::SessionTaken,
                format!(
                    "session {session} ({}) was started by shepherd for {} ({why}); only the process shepherd launched for it may register until it ends: `shepherd close {}` ends it",
                    row.started.name, row.started.by, row.started.name
                ),
            ),
            Proc::Lead(row) => projects::refused(
                "launch_mismatch",
                format!(
                    "session {session} is the Lead of the assignment {} ({why}); only the process shepherd launched for it may register: resume_work {{branch: {:?}}} (or `shepherd resume {}`) starts it",
                    tag(&row.assignment),
                    row.assignment.branch,
                    row.assignment.branch
                ),
            ),
        }
    }

    /// The refusal of a registration while another live process (`bound`) holds it.
    fn taken(&self, bound: u32) -> HubError {
        let message = match self {
            Proc::Worker(row) => format!(
                "worker {}'s session is already open in process {bound}; one live generation per session",
                row.worker.label
            ),
            Proc::Lead(row) => format!(
                "the Lead of {} is already open in process {bound}; one process per session",
                tag(&row.assignment)
            ),
            Proc::Started(row) => format!(
                "session {} is already open in process {bound}; one process per session",
                row.started.name
            ),
        };
        HubError::new(ErrorCode::SessionTaken, message)
    }
}

impl State {
    /// At `register`: the launched process this session is, if it is one, proved by the
    /// launch nonce and the registering pid.
    pub(in crate::hub) fn check_launch(
        &self,
        reg: &Registration,
        pid: Option<u32>,
        db: &Connection,
    ) -> HubResult<Option<Proc>> {
        let Some(proc) = self.claimed_by(reg, db)? else {
            return Ok(None);
        };
        match prove_launch(
            reg.launch.as_deref(),
            proc.nonce(),
            pid,
            proc.launched_pid(),
            proc.bound_pid(),
            process_alive,
        ) {
            Ok(()) => Ok(Some(proc)),
            Err(LaunchProof::Taken(bound)) => Err(proc.taken(bound)),
            Err(proof) => {
                let why = proof.why();
                tracing::warn!(key = ?proc.key(), session = %reg.session_id, pid = ?pid, "refused a registration as a launched process: {why}");
                Err(proc.mismatch(&reg.session_id, why))
            }
        }
    }

    /// The record whose session `reg` claims: an open assignment's Lead, else a live
    /// worker. Two open assignments naming one session fail closed, and so does a launch
    /// nonce for a session no worker waits for any more.
    fn claimed_by(&self, reg: &Registration, db: &Connection) -> HubResult<Option<Proc>> {
        let mut leads = store::projects::open_by_session(db, &reg.session_id)?;
        match leads.len() {
            0 => {}
            1 => return Ok(leads.pop().map(Proc::Lead)),
            _ => {
                return Err(projects::refused(
                    "launch_mismatch",
                    format!(
                        "session {} is named by more than one assignment; refusing it until `shepherd projects` shows one",
                        reg.session_id
                    ),
                ));
            }
        }
        if let Some(row) = store::started::live_by_session(db, &reg.session_id)? {
            return Ok(Some(Proc::Started(row)));
        }
        match store::workers::live_by_session(db, &reg.session_id)? {
            Some(row) => Ok(Some(Proc::Worker(row))),
            None if reg.launch.is_some() => Err(workers::refused(
                "launch_mismatch",
                format!(
                    "no managed worker waits for session {} (its worker ended); this process was launched for it and should exit",
                    reg.session_id
                ),
            )),
            None => Ok(None),
        }
    }

    /// After the registration was accepted: bind the record to its process (a worker
    /// starts working, and its subscribers are told; a Lead's record changes with its
    /// session's presence, so `register` tells them once the session is bound).
    pub(in crate::hub) fn bind_launch(
        &mut self,
        proc: &Proc,
        pid: Option<u32>,
        session_file: Option<&str>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<Proc> {
        let now = now_ms();
        match proc {
            Proc::Worker(row) => {
                store::workers::bind(db, row.worker.id, pid, session_file, now)?;
                if row.worker.state == WorkerState::Starting {
                    store::workers::set_state(db, row.worker.id, WorkerState::Working, now)?;
                }
            }
            Proc::Lead(row) => {
                store::projects::bind(db, row.assignment.id, pid, session_file, now)?
            }
            Proc::Started(row) => store::started::bind(db, row.started.id, pid, session_file, now)?,
        }
        let proc = self.proc_record(proc.key(), db)?;
        match &proc {
            Proc::Worker(row) => {
                tracing::info!(worker = row.worker.id.get(), label = %row.worker.label, pid = ?pid, "worker bound");
                self.worker_changed(row.worker.clone(), out);
            }
            Proc::Lead(row) => {
                tracing::info!(assignment = row.assignment.id.get(), pid = ?pid, "Lead bound")
            }
            Proc::Started(row) => {
                tracing::info!(started = row.started.id, pid = ?pid, "started session bound")
            }
        }
        Ok(proc)
    }
}
