//! The checks a request that starts a process makes, in one order for all three
//! (`delegate_project`, `delegate_agent`, `continue_agent`):
//!
//! 1. [`State::opening`], before anything else: who asks (a registered Pi session; for
//!    project work, one holding its repository's Manager lease), the task's text, and what
//!    the asker's own state allows (a worker delegates only the definitions its own lists
//!    and continues no saved session); project work checks the host here too, so no
//!    worktree is made for a Lead that cannot be launched.
//! 2. The request's own checks (its definition read, or its branch and worktree made, off
//!    the hub), repeated on the hub with what the store says then.
//! 3. [`State::ticket`], just before the record is written: the host can launch, the
//!    bounds on live workers allow one more (for a worker's owner), and a fresh nonce.
//!
//! Each refusal keeps its request's code and text.

use rusqlite::Connection;

use super::new_nonce;
use crate::hub::workers::requests::{check_text, refused};
use crate::hub::{Cx, HubResult, State};
use crate::protocol::{Lease, SessionId, SessionInfo, WorkerBackend};
use crate::store::{self, workers::WorkerRow};

/// Who may start a process, and what their own state must allow.
pub(in crate::hub) enum Asker<'a> {
    /// A Pi session holding its repository's Manager lease (`delegate_project`).
    Manager,
    /// A Pi session delegating `definition` (`delegate_agent`): a worker may start only the
    /// definitions its own definition lists.
    Owner { definition: &'a str },
    /// A Pi session continuing a saved worker session (`continue_agent`): a worker may not.
    Continuer,
}

/// Who asked, as the opening checks found them.
pub(in crate::hub) struct Opened {
    pub me: SessionInfo,
    /// The Manager's lease, for project work.
    pub lease: Option<Lease>,
    /// The worker the asking session is, when it is one (it delegates further).
    pub parent: Option<WorkerRow>,
}

/// What a launch goes ahead with: the host's backend and the record's fresh nonce.
pub(in crate::hub) struct Ticket {
    pub backend: WorkerBackend,
    pub nonce: String,
}

impl State {
    /// The first checks of a request that starts a process: the asker, the task, the
    /// asker's state (see the module).
    pub(in crate::hub) fn opening(
        &self,
        cx: Cx,
        asker: Asker<'_>,
        task: &str,
        db: &Connection,
    ) -> HubResult<Opened> {
        let (me, lease) = match asker {
            Asker::Manager => {
                let (me, lease) = self.manager(cx, db)?;
                (me, Some(lease))
            }
            Asker::Owner { .. } | Asker::Continuer => (self.me(cx, db)?, None),
        };
        check_text("task", task)?;
        let parent = match asker {
            Asker::Manager => {
                self.host_backend()?;
                None
            }
            Asker::Owner { .. } | Asker::Continuer => store::workers::live_by_session(db, &me.id)?,
        };
        match (&asker, &parent) {
            (Asker::Owner { definition }, Some(parent)) => check_may_delegate(parent, definition)?,
            (Asker::Continuer, Some(_)) => {
                return Err(refused(
                    "not_allowed_to_delegate",
                    "a worker cannot continue saved sessions; ask your owner",
                ));
            }
            _ => {}
        }
        Ok(Opened { me, lease, parent })
    }

    /// The last checks before a launch's record is written: the host can launch, and
    /// `owner` (a worker's) is within the bounds on live workers; then a fresh nonce.
    pub(in crate::hub) fn ticket(
        &self,
        owner: Option<&SessionId>,
        db: &Connection,
    ) -> HubResult<Ticket> {
        let backend = self.host_backend()?;
        if let Some(owner) = owner {
            self.check_worker_bounds(owner, db)?;
        }
        Ok(Ticket {
            backend,
            nonce: new_nonce(),
        })
    }
}

/// A worker delegating further (`parent`) may start only the definitions its own lists;
/// a leaf (its definition lists none) may start none.
fn check_may_delegate(parent: &WorkerRow, definition: &str) -> HubResult<()> {
    let allowed = &parent.launch.agents;
    if !parent.worker.delegates || !allowed.iter().any(|a| a == definition) {
        return Err(refused(
            "not_allowed_to_delegate",
            if parent.worker.delegates {
                format!(
                    "definition {:?} may delegate only to: {}",
                    parent.worker.definition,
                    allowed.join(", ")
                )
            } else {
                format!(
                    "this worker ({}) is a leaf: its definition lists no agents it may delegate to",
                    parent.worker.definition
                )
            },
        ));
    }
    Ok(())
}
