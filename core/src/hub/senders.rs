//! The sender check: before a request reaches its handler, the hub holds its sender
//! against the request's declared [`Senders`] (client kind, then a Pi session's role) and
//! refuses anyone else with the declared refusal. Handlers never check who may send them;
//! they keep only the checks that also read the request's arguments or target.

use std::sync::Arc;

use rusqlite::Connection;

use super::{Cx, HubError, HubResult, State};
use crate::protocol::senders::{Refusal, Senders};
use crate::protocol::{ClientKind, ErrorCode, Role, SessionInfo};

fn refused(refusal: Refusal, role: Option<Role>) -> HubError {
    let err = HubError::new(refusal.code, refusal.message_for(role));
    match refusal.reason {
        Some(reason) => err.with_details(serde_json::json!({ "reason": reason })),
        None => err,
    }
}

impl State {
    /// Refuse the sender on `cx` unless `senders` admits it: its kind, and for a Pi
    /// session that declares roles, its role (which needs the session registered). For
    /// such a request the sender's record is read here, once, and handed back for the
    /// handler ([`Checked::me`]).
    pub(super) fn check_sender(
        &self,
        cx: Cx,
        senders: Senders,
        db: &Connection,
    ) -> HubResult<Checked> {
        if !senders.admits_kind(cx.kind) {
            return Err(refused(senders.other_kind, None));
        }
        if cx.kind != ClientKind::Pi || senders.roles.is_none() {
            return Ok(Checked(None));
        }
        // The stored role mirrors the lease: granting, releasing and expiring a lease
        // all record the holder's role (`record_role`), and `register` takes it from the
        // lease.
        let id = self.presence.registered(cx.conn)?;
        let me = self.session_record(db, id)?;
        match senders.role_refusal(me.role) {
            Some(refusal) => Err(refused(refusal, Some(me.role))),
            None => Ok(Checked(Some(me))),
        }
    }
}

/// What the sender check read: the Pi sender's record, for a request that declares roles
/// (shared with the records' cache, not copied; its `connected` is false).
pub(super) struct Checked(Option<Arc<SessionInfo>>);

impl Checked {
    /// The Pi sender's record, for a handler of a request that declares roles (the
    /// check read it for every Pi sender of such a request).
    pub(super) fn me(self) -> HubResult<Arc<SessionInfo>> {
        self.0.ok_or_else(|| {
            HubError::new(
                ErrorCode::Internal,
                "a role-limited request reached its handler without its sender's record",
            )
        })
    }

    /// The sender's record when a Pi session sent the request, `None` for a human's
    /// client (for requests that admit both).
    pub(super) fn pi(self) -> Option<Arc<SessionInfo>> {
        self.0
    }
}
