//! The hub's shared base types: what a handler is given ([`Cx`]: who sent the request),
//! what it returns ([`HubResult`], a [`HubError`] the client will see), what a batch
//! produces and sends only after its commit ([`Out`]: frames, closes, process, git and
//! read work), and [`atomically`], one request's writes as a savepoint.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use rusqlite::Connection;

use super::{ConnId, launched, off_hub, projects};
use crate::protocol::{
    ClientKind, Delivery, ErrorCode, MessageId, ServerMsg, SessionId, hot_frames,
};

/// One encoded frame for one connection.
pub(in crate::hub) struct Frame {
    pub(in crate::hub) conn: ConnId,
    pub(in crate::hub) bytes: Bytes,
    /// Set for `deliver` frames: whose mailbox, which id. Deliveries are durable, so when
    /// the outbox is full they wait in the store instead of cutting the session off.
    pub(in crate::hub) delivery: Option<(SessionId, MessageId)>,
}

/// What a batch produced, sent only after its commit.
#[derive(Default)]
pub(in crate::hub) struct Out {
    pub(in crate::hub) frames: Vec<Frame>,
    /// Requests handled in this batch, to fail them if the commit fails.
    pub(in crate::hub) requests: Vec<(ConnId, u64)>,
    pub(in crate::hub) closes: Vec<(ConnId, ErrorCode)>,
    /// Process work for the worker host, started after the commit.
    pub(in crate::hub) host: Vec<launched::HostOp>,
    /// Git work for the project lane, started after the commit.
    pub(in crate::hub) git: Vec<projects::GitJob>,
    /// Requests for linked hosts, handed to their links after the commit.
    pub(in crate::hub) forwards: Vec<(String, crate::hosts::Forward)>,
    /// Mail for linked hosts and acknowledgements of theirs, handed to their links after
    /// the commit.
    pub(in crate::hub) to_far: Vec<(String, crate::hosts::ToFar)>,
    /// Listings to read off the hub, started after the commit.
    pub(in crate::hub) reads: Vec<off_hub::ReadJob>,
}

impl Out {
    pub(in crate::hub) fn send(&mut self, conn: ConnId, msg: &ServerMsg) {
        let bytes = Bytes::from(hot_frames::encode(msg));
        self.frames.push(Frame {
            conn,
            bytes,
            delivery: None,
        });
    }

    pub(in crate::hub) fn deliver(
        &mut self,
        conn: ConnId,
        session_id: &SessionId,
        message: Delivery,
    ) {
        let id = message.id;
        let bytes = Bytes::from(hot_frames::encode(&ServerMsg::Deliver { message }));
        self.frames.push(Frame {
            conn,
            bytes,
            delivery: Some((session_id.clone(), id)),
        });
    }

    pub(in crate::hub) fn error(&mut self, conn: ConnId, id: Option<u64>, err: HubError) {
        let msg = ServerMsg::Error {
            id,
            code: err.code,
            message: err.message,
            details: err.details,
        };
        self.send(conn, &msg);
    }
}

/// A request that failed, as the client will see it.
#[derive(Debug)]
pub(crate) struct HubError {
    pub(in crate::hub) code: ErrorCode,
    pub(in crate::hub) message: String,
    pub(in crate::hub) details: Option<serde_json::Value>,
}

impl HubError {
    pub(in crate::hub) fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        HubError {
            code,
            message: message.into(),
            details: None,
        }
    }

    pub(in crate::hub) fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = Some(details);
        self
    }
}

impl From<rusqlite::Error> for HubError {
    fn from(e: rusqlite::Error) -> Self {
        // A failed statement takes back what it changed so far.
        writes_undone();
        tracing::error!(error = %e, "store query failed");
        HubError::new(ErrorCode::StoreFailed, format!("the database failed: {e}"))
    }
}

pub(in crate::hub) type HubResult<T> = Result<T, HubError>;

/// Who sent the request a handler is answering: the connection, its kind of client and
/// the request id the response echoes (0 for `ack`, which gets none). Handlers take this
/// plus the request's struct from [`crate::protocol::requests`].
#[derive(Debug, Clone, Copy)]
pub(in crate::hub) struct Cx {
    pub(in crate::hub) conn: ConnId,
    pub(in crate::hub) kind: ClientKind,
    pub(in crate::hub) id: u64,
}

/// Run `f` so that either all of its writes happen or none do.
pub(in crate::hub) fn atomically<T>(
    db: &Connection,
    f: impl FnOnce() -> HubResult<T>,
) -> HubResult<T> {
    db.execute_batch("SAVEPOINT request")?;
    match f() {
        Ok(value) => {
            db.execute_batch("RELEASE request")?;
            Ok(value)
        }
        Err(err) => {
            writes_undone();
            db.execute_batch("ROLLBACK TO request; RELEASE request")?;
            Err(err)
        }
    }
}

/// Times the database took back writes it had made (a savepoint rolled back, a statement
/// that failed); the hub compares it before and after each command, and when it moved,
/// the unread index reads back what the command changed (`store::unread`). Counted for
/// the whole process: another hub's rollback only costs this one a needless re-read.
static UNDONE: AtomicU64 = AtomicU64::new(0);

/// Note that writes were taken back (see [`UNDONE`]).
pub(in crate::hub) fn writes_undone() {
    UNDONE.fetch_add(1, Ordering::Relaxed);
}

/// How many times writes were taken back so far (see [`UNDONE`]).
pub(in crate::hub) fn undone() -> u64 {
    UNDONE.load(Ordering::Relaxed)
}
