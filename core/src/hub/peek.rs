//! `peek`: the human's snapshot of what one session is doing now. The session is found as
//! `send` finds it ([`State::resolve`]); presence gives its status and since when; the
//! rest is read from its session file on a blocking thread ([`crate::peek::build`]), never
//! on the hub. A session on a linked host is peeked by that host's core (`host`).

use rusqlite::Connection;

use super::{Cx, HubError, HubResult, Out, State};
use crate::clock::now_ms;
use crate::protocol::{ErrorCode, ServerMsg, requests};
use crate::store;

impl State {
    pub(super) fn peek(&mut self, cx: Cx, req: requests::Peek, db: &Connection) -> HubResult<()> {
        let target = self.resolve(&req.session, db)?;
        let Some(mut info) = store::sessions::get_uncounted(db, &target.id)? else {
            return Err(HubError::new(
                ErrorCode::UnknownSession,
                format!("no session {:?}", req.session),
            ));
        };
        let live = self.presence.live(&target.id);
        info.connected = live.is_some();
        let now = now_ms();
        let status_for = live.map(|l| now.saturating_sub(l.status_since));
        let reply = (cx.conn, cx.id);
        self.blocking_then(
            Some(reply),
            move || crate::peek::build(&info, status_for, now),
            move |_, peek, _, out: &mut Out| {
                let peek = Box::new(peek);
                out.send(reply.0, &ServerMsg::Peeked { id: reply.1, peek });
                Ok(())
            },
        );
        Ok(())
    }
}
