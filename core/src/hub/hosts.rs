//! `list_hosts`: the linked hosts (`[[hosts]]`) as their links stand now. The links run
//! off the hub (`crate::hosts`); the hub reads the latest each one published and never
//! waits for a link.

use super::{Cx, HubResult, Out, State};
use crate::protocol::ServerMsg;

impl State {
    pub(super) fn list_hosts(&self, cx: Cx, out: &mut Out) -> HubResult<()> {
        let hosts = self.links.list();
        out.send(cx.conn, &ServerMsg::Hosts { id: cx.id, hosts });
        Ok(())
    }
}
