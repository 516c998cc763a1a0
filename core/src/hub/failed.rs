//! A batch the store failed: when its transaction cannot begin, every request of the
//! batch and every result that needed recording gets `store_failed` (presence, frames and
//! responses built off the hub still go through, so they stay right); when its commit
//! fails, nothing was kept, so every request it handled gets `store_failed` and nothing
//! else is sent.

use rusqlite::Connection;

use super::trouble::{Trouble, trouble};
use super::{ConnId, HubCommand, HubError, Out, State};
use crate::protocol::ErrorCode;
use crate::workers::launch::ProcKey;

impl State {
    /// Answer a batch whose transaction could not begin (`e`); true when it asked to
    /// shut down.
    pub(super) fn fail_batch(
        &mut self,
        batch: &mut Vec<HubCommand>,
        e: &rusqlite::Error,
        db: &Connection,
    ) -> bool {
        let t = trouble(e, self.db_path.as_deref());
        self.health.failed(&t);
        let mut stop = false;
        let mut failed = Out::default();
        for cmd in batch.drain(..) {
            stop |= self.fail_command(cmd, &t, db, &mut failed);
        }
        self.flush(failed);
        stop
    }

    /// Fail the requests a batch handled: its commit failed (`e`) and was rolled back.
    pub(super) fn fail_commit(&mut self, requests: Vec<(ConnId, u64)>, e: &rusqlite::Error) {
        let t = trouble(e, self.db_path.as_deref());
        self.health.failed(&t);
        let mut failed = Out::default();
        for (conn, id) in requests {
            let err = HubError::new(
                ErrorCode::StoreFailed,
                format!("{}: nothing was kept; {}", t.what, t.todo),
            );
            failed.error(conn, Some(id), err);
        }
        self.flush(failed);
    }

    /// One command of a batch whose transaction could not begin (`t`: why); true for
    /// `Shutdown`.
    fn fail_command(
        &mut self,
        cmd: HubCommand,
        t: &Trouble,
        db: &Connection,
        failed: &mut Out,
    ) -> bool {
        let refuse = |failed: &mut Out, reply: Option<(ConnId, u64)>, message: String| {
            if let Some((conn, id)) = reply {
                failed.error(
                    conn,
                    Some(id),
                    HubError::new(ErrorCode::StoreFailed, message),
                );
            }
        };
        match cmd {
            HubCommand::Shutdown => return true,
            HubCommand::Request { conn, msg, .. } => {
                let reply = msg.request_id().map(|id| (conn, id));
                refuse(
                    failed,
                    reply,
                    format!("{}: nothing was done; {}", t.what, t.todo),
                );
            }
            // Presence must stay right even when the store is failing.
            cmd @ (HubCommand::Connect { .. }
            | HubCommand::Disconnect { .. }
            | HubCommand::Drained { .. }
            | HubCommand::Stopping) => self.handle(cmd, db, failed),
            HubCommand::ViewBuilt(done) => self.view_failed(*done, failed),
            cmd @ (HubCommand::Respond { .. }
            | HubCommand::Frame { .. }
            | HubCommand::HostEvent(_)) => self.handle(cmd, db, failed),
            // The next tick (or pass) tries again.
            HubCommand::Tick | HubCommand::Forget => {}
            // Mail between the cores stays kept where it was sent from: it goes again
            // when the link next comes up.
            HubCommand::LinkNews(news) => {
                tracing::error!(?news, "mail between the cores waits: {}", t.what);
            }
            // Without a store nothing about workers can change: say so, retry later.
            HubCommand::ProcLaunched(done) => {
                tracing::error!(key = ?done.key, "a launch finished while the store failed");
                let what = match done.key {
                    ProcKey::Worker(w) => format!("close it with `shepherd close {w}`"),
                    ProcKey::Lead(_) => {
                        "`shepherd projects` shows it once the database works".to_string()
                    }
                    ProcKey::Started(_) => {
                        "`shepherd sessions` shows it once it registers".to_string()
                    }
                };
                refuse(
                    failed,
                    done.reply,
                    format!(
                        "{}; the process was started but could not be recorded: {what}",
                        t.what
                    ),
                );
            }
            HubCommand::ProcExited { key, .. } => {
                tracing::error!(
                    ?key,
                    "a launched process exited while the store failed; its record shows its last state"
                );
            }
            HubCommand::Continue(done) => {
                let message = format!("{}: nothing was done; {}", t.what, t.todo);
                refuse(failed, done.reply, message);
            }
            HubCommand::GitDone(done) => {
                tracing::error!("a git operation finished while the store failed");
                refuse(
                    failed,
                    done.reply,
                    format!(
                        "{}; the git work was done but not recorded: {}",
                        t.what, t.todo
                    ),
                );
            }
            HubCommand::Stopped(done) => {
                tracing::error!("a process stopped while the store failed");
                refuse(
                    failed,
                    done.reply,
                    format!(
                        "{}; the process was stopped but nothing after it was done: {}",
                        t.what, t.todo
                    ),
                );
            }
            HubCommand::RecoverWorkers => {
                tracing::error!("cannot recover workers: the store failed");
            }
            HubCommand::AskCardDue { ask } => {
                tracing::error!(%ask, "a worker's question was not shown on the phones: the store failed");
            }
            HubCommand::ApprovalDue { approval } => {
                tracing::error!(%approval, "an approval's timeout was not applied: the store failed; it stays pending");
            }
        }
        false
    }
}
