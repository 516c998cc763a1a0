//! # `list_agents`
//!
//! The agent definitions in effect for a cwd ([`crate::agents::effective`]). Reading them
//! touches the disk, so the hub only decides the cwd (the request's, else a Pi session's
//! own) and hands the reading to a blocking thread, which answers with
//! [`HubCommand::Respond`] (as `inspect_staff` does).

use std::path::PathBuf;

use rusqlite::Connection;

use super::{Cx, HubCommand, HubError, HubResult, State};
use crate::protocol::requests::ListAgents;
use crate::protocol::{ClientKind, ErrorCode, ServerMsg};
use crate::{agents, config};

impl State {
    /// `list_agents`: answered with `agents` from a blocking thread.
    pub(super) fn list_agents(
        &mut self,
        cx: Cx,
        req: ListAgents,
        db: &Connection,
    ) -> HubResult<()> {
        let cwd = match req.cwd {
            Some(cwd) => {
                let path = PathBuf::from(&cwd);
                if !path.is_absolute() {
                    return Err(HubError::new(
                        ErrorCode::InvalidArgument,
                        format!("cwd {cwd:?} is not an absolute path; send the full path"),
                    ));
                }
                Some(path)
            }
            None if cx.kind == ClientKind::Pi => {
                let me = self.presence.registered(cx.conn)?.clone();
                Some(PathBuf::from(self.session_uncounted(db, &me)?.cwd))
            }
            None => None,
        };
        let Some(tx) = self.self_tx.upgrade() else {
            return Ok(()); // Shutting down.
        };
        let (conn, id) = (cx.conn, cx.id);
        tokio::task::spawn_blocking(move || {
            let msg = match config::agent_dir() {
                Ok(agent_dir) => ServerMsg::Agents {
                    id,
                    agents: agents::effective(cwd.as_deref(), &agent_dir),
                },
                Err(e) => ServerMsg::Error {
                    id: Some(id),
                    code: ErrorCode::Internal,
                    message: format!(
                        "the core cannot find Pi's agent dir ({e}); set PI_CODING_AGENT_DIR or \
                         HOME for the core and restart it"
                    ),
                    details: None,
                },
            };
            let _ = tx.blocking_send(HubCommand::Respond {
                conn,
                msg: Box::new(msg),
            });
        });
        Ok(())
    }
}
