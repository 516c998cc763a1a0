//! Presence's own state: every connection (its client and, for a Pi, its session), the
//! registered sessions that are live, and the subscribers. Only presence changes it
//! (connect, register, disconnect, `subscribe`); the rest of the hub asks it who is there,
//! and sends events to the subscribers through it ([`Presence::broadcast`]).

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use tokio::sync::oneshot;

use crate::hub::{ConnHandle, ConnId, Frame, HubError, HubResult, Out};
use crate::protocol::{ClientKind, ErrorCode, MessageId, ServerMsg, SessionId, frame};

/// A connection as the hub tracks it.
pub(in crate::hub) struct Conn {
    pub(in crate::hub) handle: ConnHandle,
    pub(in crate::hub) close: Option<oneshot::Sender<ErrorCode>>,
    pub(in crate::hub) session: Option<SessionId>,
    /// The bot this bridge connection serves (`subscribe.serves`).
    pub(in crate::hub) serves: Option<String>,
    /// The session said `bye` on this connection (`Some(returning)`): its closing is on
    /// purpose, not a loss.
    pub(in crate::hub) bye: Option<bool>,
}

/// A registered session that is connected: its connection, its name, and where its
/// mailbox's delivery stands.
pub(in crate::hub) struct Live {
    pub(in crate::hub) conn: ConnId,
    pub(in crate::hub) name: String,
    /// Highest delivery id handed to this connection's writer.
    pub(in crate::hub) last_sent: MessageId,
    /// Mail is waiting in the store for room in the outbox: live deliveries are not sent
    /// (they would overtake it); the replay sends them in id order as the writer drains.
    pub(in crate::hub) replaying: bool,
    /// When this core saw the session's status last change (its registration, at first).
    pub(in crate::hub) status_since: u64,
}

impl Live {
    pub(super) fn new(conn: ConnId, name: String) -> Live {
        Live {
            conn,
            name,
            last_sent: MessageId::from(0),
            replaying: false,
            status_since: crate::clock::now_ms(),
        }
    }
}

/// Who is connected.
#[derive(Default)]
pub(in crate::hub) struct Presence {
    /// By connection id (the core's own numbers: a fast hash).
    pub(super) conns: rustc_hash::FxHashMap<ConnId, Conn>,
    /// Connected session id → its connection and display name (ids are the clients':
    /// a seeded hash).
    pub(super) live: HashMap<SessionId, Live, foldhash::fast::RandomState>,
    pub(super) subscribers: HashSet<ConnId>,
}

impl Presence {
    pub(in crate::hub) fn conn(&self, id: &ConnId) -> Option<&Conn> {
        self.conns.get(id)
    }

    /// Every connection, taken out (the hub is stopping).
    pub(in crate::hub) fn drain_conns(&mut self) -> impl Iterator<Item = Conn> + '_ {
        self.conns.drain().map(|(_, conn)| conn)
    }

    /// Whether `session` is registered on a connection now.
    pub(in crate::hub) fn is_live(&self, session: &SessionId) -> bool {
        self.live.contains_key(session)
    }

    /// The live session `session` (an id, or the text of one).
    pub(in crate::hub) fn live<Q>(&self, session: &Q) -> Option<&Live>
    where
        SessionId: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ?Sized,
    {
        self.live.get(session)
    }

    pub(in crate::hub) fn live_mut(&mut self, session: &SessionId) -> Option<&mut Live> {
        self.live.get_mut(session)
    }

    /// The sessions connected now.
    pub(in crate::hub) fn live_ids(&self) -> impl Iterator<Item = &SessionId> {
        self.live.keys()
    }

    pub(in crate::hub) fn has_subscribers(&self) -> bool {
        !self.subscribers.is_empty()
    }

    pub(in crate::hub) fn is_subscriber(&self, conn: &ConnId) -> bool {
        self.subscribers.contains(conn)
    }

    /// The session registered on `conn`, or why there is none.
    pub(in crate::hub) fn registered(&self, conn: ConnId) -> HubResult<&SessionId> {
        let entry = self.conns.get(&conn);
        match entry.and_then(|c| c.session.as_ref()) {
            Some(id) => Ok(id),
            None => {
                // Another kind of client is refused by the sender check already.
                let pi = entry.is_some_and(|c| c.handle.kind == ClientKind::Pi);
                let message = match pi {
                    true => "this connection has no registered session: send `register` first",
                    false => crate::protocol::senders::NO_SESSION.message,
                };
                Err(HubError::new(ErrorCode::NotRegistered, message))
            }
        }
    }

    /// Send one event to every subscriber, encoded once.
    pub(in crate::hub) fn broadcast(&self, msg: &ServerMsg, out: &mut Out) {
        self.broadcast_to(msg, |_| true, out)
    }

    /// Send one event to the subscribers whose kind of client `to` takes, encoded once.
    pub(in crate::hub) fn broadcast_to(
        &self,
        msg: &ServerMsg,
        to: impl Fn(ClientKind) -> bool,
        out: &mut Out,
    ) {
        if self.subscribers.is_empty() {
            return;
        }
        let bytes = Bytes::from(frame::encode(msg));
        let takes = |conn: &ConnId| self.conns.get(conn).is_some_and(|c| to(c.handle.kind));
        for conn in self.subscribers.iter().filter(|c| takes(c)) {
            out.frames.push(Frame {
                conn: *conn,
                bytes: bytes.clone(),
                delivery: None,
            });
        }
    }
}
