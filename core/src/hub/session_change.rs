//! Session changes: the one internal event presence raises when a Pi session registers,
//! changes (status, name) or leaves. Every feature that keeps state about sessions hears
//! it from [`State::session_changed`], in a fixed order (supervision, then managed
//! workers), so presence never needs to know who cares. What registration itself checks
//! (a launched process's nonce, expired leases) is part of answering `register`, not a
//! reaction to it, and stays there.

use rusqlite::Connection;

use super::{Out, State};
use crate::protocol::{SessionId, SessionStatus};

/// What happened to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ChangeKind {
    /// It registered: on a new connection, or again on its live one (`rejoined`).
    Registered { rejoined: bool },
    /// It described itself anew (`update`); `renamed` when its name changed.
    Updated { renamed: bool },
    /// Its connection closed; `closed` when it said goodbye for good (`bye`), not lost
    /// or coming straight back.
    Left { closed: bool },
}

/// One change of one session, with its status before (when known) and now.
#[derive(Debug, Clone, Copy)]
pub(super) struct SessionChange<'a> {
    pub session: &'a SessionId,
    pub kind: ChangeKind,
    pub was: Option<&'a SessionStatus>,
    pub now: &'a SessionStatus,
}

impl SessionChange<'_> {
    /// The session went from working to idle: a turn ended (leaving mid-turn counts).
    pub(super) fn stopped(&self) -> bool {
        self.was.is_some_and(|was| !was.is_idle()) && self.now.is_idle()
    }

    /// It registered on a new connection: it was away (or the core restarted).
    pub(super) fn came_back(&self) -> bool {
        self.kind == ChangeKind::Registered { rejoined: false }
    }

    /// Others should hear of it: it connected, left or was renamed.
    pub(super) fn noticeable(&self) -> bool {
        match self.kind {
            ChangeKind::Registered { rejoined } => !rejoined,
            ChangeKind::Updated { renamed } => renamed,
            ChangeKind::Left { .. } => true,
        }
    }
}

impl State {
    /// Tell every feature of a session change, in this order. Each handles its own
    /// failures (logged): the change itself has happened and was answered.
    pub(super) fn session_changed(
        &mut self,
        change: &SessionChange<'_>,
        db: &Connection,
        out: &mut Out,
    ) {
        self.supervision_session_changed(change, db, out);
        self.workers_session_changed(change, db, out);
    }
}
