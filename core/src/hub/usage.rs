//! `usage`: tokens and cost from Pi's session files over a scope of sessions. The hub only
//! decides the scope (who asks, which session's tree) and looks up each session's name
//! and file; the files are read and summed on a blocking thread ([`crate::usage::build`])
//! and the report comes back as [`HubCommand::Respond`], like a staff view.

use rusqlite::Connection;

use super::{Cx, HubCommand, HubError, HubResult, State};
use crate::protocol::requests::Usage;
use crate::protocol::{ClientKind, ErrorCode, ServerMsg, SessionId};
use crate::store;
use crate::usage::{self, Scoped};

/// The sessions whose usage counts as `session`'s: the session itself first, then the
/// sessions of the managed workers it owns, transitively (each at most once).
/// Ended workers count too: their sessions' tokens were spent for this owner.
pub(crate) fn owned_sessions(
    db: &Connection,
    session: &SessionId,
) -> rusqlite::Result<Vec<SessionId>> {
    let mut tree = vec![session.clone()];
    for row in store::workers::tree_of(db, session, true)? {
        if !tree.contains(&row.worker.session_id) {
            tree.push(row.worker.session_id);
        }
    }
    Ok(tree)
}

/// Each session's name and file as the store knows them (a session it does not know is
/// reported as such). A worker the sessions table does not know takes its name and file from
/// the workers table.
pub(super) fn scope_of(db: &Connection, ids: Vec<SessionId>) -> rusqlite::Result<Vec<Scoped>> {
    let mut scope = Vec::with_capacity(ids.len());
    for id in ids {
        let known = store::sessions::get_uncounted(db, &id)?;
        let worker = match &known {
            Some(s) if s.session_file.is_some() => None,
            _ => store::workers::newest_by_session(db, &id)?,
        };
        scope.push(Scoped {
            name: known
                .as_ref()
                .map(|s| s.name.clone())
                .or(worker.as_ref().map(|w| w.worker.label.clone())),
            file: known
                .and_then(|s| s.session_file)
                .or(worker.and_then(|w| w.worker.session_file)),
            id,
        });
    }
    Ok(scope)
}

impl State {
    /// `usage`: decide the scope, then build the report off the hub.
    pub(super) fn usage(&mut self, cx: Cx, req: Usage, db: &Connection) -> HubResult<()> {
        let selector = req.session.as_deref().map(str::trim);
        let ids: Vec<SessionId> = match (cx.kind, selector) {
            (ClientKind::Pi, None) => {
                let me = self.presence.registered(cx.conn)?.clone();
                owned_sessions(db, &me)?
            }
            (ClientKind::Pi, Some(session)) => {
                // From a session, targets are exact ids, and only its own tree exists.
                let me = self.presence.registered(cx.conn)?.clone();
                let target = SessionId::from(session);
                if !owned_sessions(db, &me)?.contains(&target) {
                    return Err(HubError::new(
                        ErrorCode::UnknownSession,
                        format!(
                            "no session {session:?} in your tree (you and the workers you \
                             own, by exact id); ask without `session` for your whole tree"
                        ),
                    ));
                }
                owned_sessions(db, &target)?
            }
            (_, Some(selector)) => {
                let target = self.resolve(selector, db)?;
                owned_sessions(db, &target.id)?
            }
            (_, None) => {
                let scope: Vec<Scoped> = store::sessions::with_files(db)?
                    .into_iter()
                    .map(|(id, name, file)| Scoped {
                        id,
                        name: Some(name),
                        file: Some(file),
                    })
                    .collect();
                return self.report_off_hub(cx, scope);
            }
        };
        let scope = scope_of(db, ids)?;
        self.report_off_hub(cx, scope)
    }

    /// Read and sum the scope's files on a blocking thread; the reply goes to `cx`.
    fn report_off_hub(&self, cx: Cx, scope: Vec<Scoped>) -> HubResult<()> {
        let Some(tx) = self.self_tx.upgrade() else {
            return Ok(()); // Shutting down.
        };
        let (conn, id) = (cx.conn, cx.id);
        tokio::task::spawn_blocking(move || {
            let report = usage::build(&scope);
            let msg = ServerMsg::UsageReported { id, report };
            let _ = tx.blocking_send(HubCommand::Respond {
                conn,
                msg: Box::new(msg),
            });
        });
        Ok(())
    }
}
