//! The sender check: before a request reaches its handler, the hub holds its sender
//! against the request's declared [`Senders`] (client kind, then a Pi session's role) and
//! refuses anyone else with the declared refusal. Handlers never check who may send them;
//! they keep only the checks that also read the request's arguments or target.

use rusqlite::Connection;

use super::{Cx, HubError, HubResult, State};
use crate::protocol::senders::{Refusal, Senders};
use crate::protocol::{ClientKind, Role};
use crate::store;

fn refused(refusal: Refusal, role: Option<Role>) -> HubError {
    let err = HubError::new(refusal.code, refusal.message_for(role));
    match refusal.reason {
        Some(reason) => err.with_details(serde_json::json!({ "reason": reason })),
        None => err,
    }
}

impl State {
    /// Refuse the sender on `cx` unless `senders` admits it: its kind, and for a Pi
    /// session that declares roles, its role (which needs the session registered).
    pub(super) fn check_sender(&self, cx: Cx, senders: Senders, db: &Connection) -> HubResult<()> {
        if !senders.admits_kind(cx.kind) {
            return Err(refused(senders.other_kind, None));
        }
        if cx.kind != ClientKind::Pi || senders.roles.is_none() {
            return Ok(());
        }
        let role = self.sender_role(cx, db)?;
        match (senders.admits_role(role), senders.other_role) {
            (false, Some(refusal)) => Err(refused(refusal, Some(role))),
            _ => Ok(()),
        }
    }

    /// The role of the Pi session on `cx`: its lease's (Manager, Chief), else its own
    /// (Lead, or the supervisor hint).
    fn sender_role(&self, cx: Cx, db: &Connection) -> HubResult<Role> {
        let id = self.registered(cx.conn)?;
        if let Some(lease) = store::leases::held_by(db, id)? {
            return Ok(lease.role);
        }
        Ok(self.session_uncounted(db, id)?.role)
    }
}
