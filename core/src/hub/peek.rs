//! The human's looks at one session: `peek`, a snapshot of what it is doing now, and
//! `diff`, what it changed. The session is found as `send` finds it ([`State::resolve`]);
//! for a peek, presence gives its status and since when and the rest is read from its
//! session file ([`crate::peek::build`]); a diff is read with git from its directory
//! ([`crate::git::diff::changes`]); both on a blocking thread, never on the hub. A session
//! on a linked host is looked at by that host's core (`host`).

use rusqlite::Connection;

use super::{Cx, HubError, HubResult, Out, State};
use crate::clock::now_ms;
use crate::protocol::{ErrorCode, ServerMsg, SessionDiff, requests};

impl State {
    pub(super) fn peek(&mut self, cx: Cx, req: requests::Peek, db: &Connection) -> HubResult<()> {
        let mut info = self.resolve_info(&req.session, db)?;
        let target_id = info.id.clone();
        let live = self.presence.live(&target_id);
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

    pub(super) fn diff(&mut self, cx: Cx, req: requests::Diff, db: &Connection) -> HubResult<()> {
        let info = self.resolve_info(&req.session, db)?;
        let reply = (cx.conn, cx.id);
        self.blocking_then(
            Some(reply),
            move || {
                let changes = crate::git::diff::changes(std::path::Path::new(&info.cwd));
                (info, changes)
            },
            move |_, (info, changes), _, out: &mut Out| {
                let changes = changes.map_err(|why| {
                    HubError::new(
                        ErrorCode::InvalidArgument,
                        format!("no diff of {}: {why}", info.name),
                    )
                })?;
                let patch = String::from_utf8(changes.patch);
                let complete = changes.complete && patch.is_ok();
                let patch =
                    patch.unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                let diff = Box::new(SessionDiff {
                    session_id: info.id,
                    name: info.name,
                    host: None,
                    root: changes.root,
                    branch: changes.branch,
                    base_name: changes.base_name,
                    base: changes.base,
                    files: changes.files as u64,
                    insertions: changes.insertions as u64,
                    deletions: changes.deletions as u64,
                    stat: changes.stat,
                    patch,
                    complete,
                });
                out.send(reply.0, &ServerMsg::Diffed { id: reply.1, diff });
                Ok(())
            },
        );
        Ok(())
    }
}
