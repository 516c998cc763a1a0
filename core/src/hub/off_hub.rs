//! Reads built off the hub: a listing that can be long (every session ever seen, every
//! ask) is queried, encoded and answered on a blocking thread with a read-only connection
//! of its own, so the hub goes on serving everyone else meanwhile. The read starts after
//! the batch that received the request has committed, so it sees everything the hub did
//! before it (a client's own `register` or `update` included); the answer comes back as an
//! encoded frame ([`HubCommand::Frame`]) and is matched by its request id as usual.
//!
//! Other blocking work (reading a user's files: an agent definition, session files)
//! runs with [`State::blocking_then`]: on a blocking thread of its own, never on the git
//! lane others queue behind, and the hub continues with its result
//! ([`HubCommand::Continue`]).

use std::path::PathBuf;

use bytes::Bytes;
use rusqlite::{Connection, OpenFlags};

use super::{ConnId, Cx, HubCommand, HubError, HubResult, Out, State, projects::GitDone};
use crate::protocol::{ServerMsg, frame};

/// What builds a read's answer from a read-only connection.
type Build = Box<dyn FnOnce(&Connection) -> HubResult<ServerMsg> + Send>;

/// A read to run off the hub: the request it answers and what builds the answer.
pub(super) struct ReadJob {
    conn: ConnId,
    id: u64,
    build: Build,
}

impl State {
    /// Answer `cx` with what `build` reads, off the hub, once this batch has committed.
    pub(super) fn read_off_hub(
        &self,
        cx: Cx,
        out: &mut Out,
        build: impl FnOnce(&Connection) -> HubResult<ServerMsg> + Send + 'static,
    ) {
        out.reads.push(ReadJob {
            conn: cx.conn,
            id: cx.id,
            build: Box::new(build),
        });
    }

    /// Run `work` on a blocking thread, then `then` on the hub with what it returned; an
    /// error `then` returns goes to `reply`. Nothing runs when the core is stopping.
    pub(super) fn blocking_then<T: Send + 'static>(
        &self,
        reply: Option<(ConnId, u64)>,
        work: impl FnOnce() -> T + Send + 'static,
        then: impl FnOnce(&mut State, T, &Connection, &mut Out) -> HubResult<()> + Send + 'static,
    ) {
        let Some(tx) = self.self_tx.upgrade() else {
            return; // Shutting down.
        };
        tokio::task::spawn_blocking(move || {
            let done = work();
            let _ = tx.blocking_send(HubCommand::Continue(Box::new(GitDone {
                reply,
                then: Box::new(move |state, db, out| then(state, done, db, out)),
            })));
        });
    }

    /// Start the batch's reads (after its commit). Without a database file (a store in
    /// memory) they run here, on the hub's connection.
    pub(super) fn run_reads(&self, reads: Vec<ReadJob>, db: &Connection, out: &mut Out) {
        let (Some(tx), Some(path)) = (self.self_tx.upgrade(), self.db_path.clone()) else {
            for job in reads {
                let bytes = answer(job.id, (job.build)(db));
                out.frames.push(super::Frame {
                    conn: job.conn,
                    bytes,
                    delivery: None,
                });
            }
            return;
        };
        for job in reads {
            let (tx, path) = (tx.clone(), path.clone());
            tokio::task::spawn_blocking(move || {
                let built = reader(&path)
                    .map_err(HubError::from)
                    .and_then(|db| (job.build)(&db));
                let bytes = answer(job.id, built);
                let _ = tx.blocking_send(HubCommand::Frame {
                    conn: job.conn,
                    bytes,
                });
            });
        }
    }
}

/// The encoded answer: the message built, or the error it met.
fn answer(id: u64, built: HubResult<ServerMsg>) -> Bytes {
    let msg = built.unwrap_or_else(|err| ServerMsg::Error {
        id: Some(id),
        code: err.code,
        message: err.message,
        details: err.details,
    });
    Bytes::from(frame::encode(&msg))
}

/// A read-only connection to the store at `path` (WAL: it reads beside the writer).
fn reader(path: &PathBuf) -> rusqlite::Result<Connection> {
    let db = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    db.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(db)
}
