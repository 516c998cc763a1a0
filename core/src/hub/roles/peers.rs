//! A session's peers: connected Leads for a Lead, Managers for a Manager (the Chief has
//! none), on a home core the linked hosts' too; `list_peers` and the exact-id lookup that
//! refuses anyone else as unknown.

use std::sync::Arc;

use rusqlite::Connection;

use super::are_peers;
use crate::hub::{Cx, HubError, HubResult, Out, State};
use crate::protocol::requests::ListPeers;
use crate::protocol::{ErrorCode, ServerMsg, SessionId, SessionInfo};

impl State {
    /// The sessions `me` may message as peers: connected Leads for a Lead, Managers for a
    /// Manager.
    fn peers_of(&self, me: &SessionInfo, db: &Connection) -> HubResult<Vec<SessionInfo>> {
        let mut peers = Vec::new();
        for id in self.presence.live_ids() {
            if self.my_peer(me, id.as_str(), db).is_ok() {
                // With its counts (open asks), which my_peer does not read.
                peers.push(self.session_info(db, id)?);
            }
        }
        peers.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(peers)
    }

    /// One connected peer of `me` by exact id; anyone else is unknown to it.
    pub(super) fn my_peer(
        &self,
        me: &SessionInfo,
        id: &str,
        db: &Connection,
    ) -> HubResult<Arc<SessionInfo>> {
        let id = SessionId::from(id);
        let target = match self.presence.is_live(&id) && id != me.id {
            true => self.records.get(db, &id)?,
            false => None,
        };
        let peer = |s: &SessionInfo| !s.subagent && are_peers(me.role, s.role);
        // Connected (checked above), though the shared record says `connected: false`.
        match target {
            Some(t) if peer(&t) => Ok(t),
            _ => Err(HubError::new(
                ErrorCode::UnknownSession,
                format!("no connected peer {id:?}; list_peers shows their exact ids"),
            )),
        }
    }

    /// `list_peers`.
    pub(in crate::hub) fn list_peers(
        &self,
        cx: Cx,
        _req: ListPeers,
        me: Arc<SessionInfo>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let mut sessions = self.peers_of(&me, db)?;
        // On a home core, the linked hosts' connected peers too, each with its host.
        sessions.extend(self.peers_on_hosts(&me));
        out.send(
            cx.conn,
            &ServerMsg::Sessions {
                id: cx.id,
                sessions,
            },
        );
        Ok(())
    }
}
