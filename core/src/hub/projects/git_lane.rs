//! The git lane: project work's git operations (worktrees, fast-forwards, inventories)
//! run one at a time on one blocking thread, never on the hub, in the order the hub queued
//! them. Each job returns a continuation the hub runs with the result
//! ([`HubCommand::GitDone`]), so a delegation's worktree and its record, or an
//! integration's fast-forward and the assignment's retirement, follow each other without
//! the hub ever waiting for git.

use std::sync::mpsc as std_mpsc;

use rusqlite::Connection;
use tokio::sync::mpsc;

use crate::hub::{ConnId, HubCommand, HubResult, Out, State};

/// What the hub does with a git job's result. An error is sent to `reply`.
pub(in crate::hub) type Then =
    Box<dyn FnOnce(&mut State, &Connection, &mut Out) -> HubResult<()> + Send>;

/// A finished git job: the request waiting for it, and the continuation.
pub struct GitDone {
    pub(in crate::hub) reply: Option<(ConnId, u64)>,
    pub(in crate::hub) then: Then,
}

/// Work for the lane: runs on its thread, returns what the hub does next.
pub(in crate::hub) type GitJob = Box<dyn FnOnce() -> GitDone + Send>;

/// The lane's handle; its thread ends when the handle is dropped.
pub(in crate::hub) struct GitLane {
    tx: std_mpsc::Sender<GitJob>,
}

impl GitLane {
    pub(in crate::hub) fn start(hub: mpsc::WeakSender<HubCommand>) -> GitLane {
        let (tx, rx) = std_mpsc::channel::<GitJob>();
        std::thread::Builder::new()
            .name("shepherd-git".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    let done = job();
                    let Some(hub) = hub.upgrade() else { break };
                    if hub
                        .blocking_send(HubCommand::GitDone(Box::new(done)))
                        .is_err()
                    {
                        break;
                    }
                }
            })
            .expect("the git lane's thread starts");
        GitLane { tx }
    }

    /// Queue jobs, in order.
    pub(in crate::hub) fn run(&self, jobs: Vec<GitJob>) {
        for job in jobs {
            if self.tx.send(job).is_err() {
                tracing::error!("the git lane has stopped; project git work is not done");
            }
        }
    }
}

impl State {
    /// A git job finished: run its continuation, answering its request on failure.
    pub(in crate::hub) fn git_done(&mut self, done: GitDone, db: &Connection, out: &mut Out) {
        let then = done.then;
        if let Err(err) = crate::hub::atomically(db, || then(self, db, out)) {
            match done.reply {
                Some((conn, id)) => out.error(conn, Some(id), err),
                None => tracing::warn!("project git work: {}", err.message),
            }
        }
    }
}
