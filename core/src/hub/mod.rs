//! # The hub
//!
//! One actor, a task on the daemon's current-thread runtime, owns all routing state (which
//! connection is which session, who subscribes) and the only writing database connection.
//! Connection tasks send it [`HubCommand`]s over a bounded channel; it never shares state behind a lock.
//!
//! **Group commit.** The hub takes every command waiting in its inbox (up to
//! [`MAX_BATCH`]), handles them inside one SQLite transaction, commits, and only then
//! sends the responses and deliveries those commands produced. Nothing is acknowledged
//! before it is durable, and under load one commit covers hundreds of messages. If the
//! commit fails, every request of the batch gets `store_failed` and nothing is sent.
//!
//! This file holds the actor's loop and its group commit, its inbox and its state; `base`
//! the shared types every feature uses (`Cx`, `HubError`, `Out`: what a batch produces);
//! `dispatch` hands each command and request to its feature
//! (after `senders` has checked the request's sender against its declaration),
//! `failed` answers a batch the store failed, `flush` hands a committed batch's frames to
//! the connections' writers; `presence` owns who is connected (connections, live
//! sessions, the bridges' subscriptions) and the broadcast to subscribers; every
//! feature owns its requests in a module of its own.

mod agents;
mod approvals;
mod asks;
mod base;
mod dispatch;
mod failed;
mod fits;
mod flush;
mod forget;
mod herd;
mod hosts;
mod inbox;
mod interrupt;
mod keys;
mod launched;
mod mail;
mod names;
mod off_hub;
mod peek;
pub(crate) mod presence;
mod projects;
mod records;
mod release;
mod reports;
mod resolve;
pub(crate) mod roles;
mod senders;
mod session_change;
mod started;
mod supervise;
mod trouble;
mod unanswer;
mod usage;
mod workers;

pub use supervise::ViewDone;

pub(crate) use base::HubError;
use base::{Cx, Frame, HubResult, Out, atomically};

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use bytes::Bytes;
use rusqlite::Connection;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::{mpsc, oneshot};

use crate::config::{Limits, SuperviseConfig};
use crate::git::RepoContext;
use crate::protocol::{ClientKind, ClientMsg, ErrorCode, ResultsMode, ServerMsg};
use crate::store::{self, Store};

/// Most commands handled in one transaction.
pub const MAX_BATCH: usize = 1024;

/// Identifies one accepted connection for the lifetime of the core.
pub type ConnId = u64;

/// What the hub needs to talk to a connection.
pub struct ConnHandle {
    pub kind: ClientKind,
    pub client_name: String,
    /// Peer pid from SO_PEERCRED.
    pub pid: Option<u32>,
    /// Encoded frames for the connection's writer task.
    pub outbox: mpsc::Sender<Bytes>,
    /// The socket's write half, shared with that writer: a frame that finds the outbox
    /// empty may be written by the hub at once ([`ConnHandle::write_now`]).
    pub socket: Arc<OwnedWriteHalf>,
    /// Set by the hub while a mailbox replay waits for room: the writer then reports
    /// [`HubCommand::Drained`] once its queue is empty.
    pub drain_wanted: Arc<AtomicBool>,
    /// Bytes in the outbox and being written (added by whoever queues a frame, taken off
    /// by the writer once written): bounded by `core.limits.max_outbound_bytes`.
    pub queued_bytes: Arc<AtomicUsize>,
    pub connected_at: u64,
}

impl ConnHandle {
    /// Queue a frame for the writer, counted in `queued_bytes` before the writer can take
    /// it off; `full`: refuse it as if the outbox were full (the byte bound is reached).
    fn queue(&self, bytes: Bytes, full: bool) -> Result<(), mpsc::error::TrySendError<Bytes>> {
        if full {
            return Err(mpsc::error::TrySendError::Full(bytes));
        }
        let len = bytes.len();
        self.queued_bytes.fetch_add(len, Ordering::AcqRel);
        self.outbox.try_send(bytes).inspect_err(|_| {
            self.queued_bytes.fetch_sub(len, Ordering::AcqRel);
        })
    }

    /// [`Self::queue`], or, when nothing is queued or being written and no replay waits
    /// for the writer to drain, write the frame on the socket now (what the socket does
    /// not take at once is queued for the writer, behind nothing). Saves the hand-off to
    /// the writer task for the lone frame of a quiet connection. The check and the write
    /// happen without an await on the daemon's one thread, so no frame is queued between.
    fn write_now(&self, bytes: Bytes, full: bool) -> Result<(), mpsc::error::TrySendError<Bytes>> {
        if full
            || self.queued_bytes.load(Ordering::Acquire) != 0
            || self.drain_wanted.load(Ordering::Acquire)
        {
            return self.queue(bytes, full);
        }
        match self.socket.try_write(&bytes) {
            Ok(n) if n == bytes.len() => Ok(()),
            Ok(n) => self.queue(bytes.slice(n..), false),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => self.queue(bytes, false),
            // The peer is gone: its reader ends the connection.
            Err(_) => Ok(()),
        }
    }
}

/// The hub's inbox.
pub enum HubCommand {
    /// A connection said a valid `hello`. `close` tells it to close with a code.
    Connect {
        conn: ConnId,
        handle: ConnHandle,
        close: oneshot::Sender<ErrorCode>,
    },
    /// A request (or `ack`) from a greeted connection. `repo` is filled in by the
    /// connection task for `register` and `update` that need it.
    Request {
        conn: ConnId,
        msg: Box<ClientMsg>,
        repo: Option<RepoContext>,
    },
    /// The connection's writer emptied its queue after the hub asked (`drain_wanted`).
    Drained { conn: ConnId },
    /// The connection is gone.
    Disconnect { conn: ConnId },
    /// A supervisor view finished building (on a blocking thread).
    ViewBuilt(Box<ViewDone>),
    /// Work done off the hub (a staff view, the agent definitions) is ready: send this response to `conn`.
    /// Work done off the hub (a staff view, a usage report) is ready: send this response to `conn`.
    Respond { conn: ConnId, msg: Box<ServerMsg> },
    /// Time to forget sessions unseen for long ([`forget`]).
    Forget,
    /// An answer built and encoded off the hub (a long listing), for connection `conn`.
    Frame { conn: ConnId, bytes: Bytes },
    /// A linked host's event, its `host` set, for this core's bridges and CLI watchers.
    HostEvent(Box<ServerMsg>),
    /// Mail between this core and a linked one, from its link.
    LinkNews(Box<crate::hosts::LinkNews>),
    /// Once a second: start timer views that are due.
    Tick,
    /// A launched process (a worker's or a Lead's) started (or failed to), or was found
    /// again after a restart.
    ProcLaunched(Box<launched::host_ops::LaunchDone>),
    /// A launched process ended (`code`: its exit code; none when killed by a signal;
    /// `nonce`: its launch's).
    ProcExited {
        key: crate::workers::launch::ProcKey,
        code: Option<i32>,
        nonce: String,
    },
    /// Project git work finished on the git lane: continue on the hub.
    GitDone(Box<projects::GitDone>),
    /// A process stopped (or did not within its bound) for work that waited for it.
    Stopped(Box<launched::host_ops::StopDone>),
    /// Blocking work that is no git (reading an agent definition, summing session files)
    /// finished on a blocking thread: continue on the hub ([`State::blocking_then`]).
    Continue(Box<projects::GitDone>),
    /// Sent once at start: adopt or relaunch the workers a previous core left.
    RecoverWorkers,
    /// A Lead-owned worker's question has waited `workers.ask_card_after_secs`: announce
    /// it to the bridges if it is still open.
    AskCardDue { ask: crate::protocol::AskId },
    /// A pending approval has waited `approvals.timeout_secs`: `approvals.on_timeout`
    /// decides it if nobody has.
    ApprovalDue {
        approval: crate::protocol::ApprovalId,
    },
    /// The core is about to close every connection: sessions that drop from now on are
    /// not ending (they come back to the next core), so their leaving has no reason.
    Stopping,
    /// Close every connection and stop.
    Shutdown,
}

/// Cheap, cloneable access to the hub.
#[derive(Clone)]
pub struct HubHandle {
    tx: mpsc::Sender<HubCommand>,
}

impl HubHandle {
    /// Send a command; false when the hub has stopped.
    pub async fn send(&self, cmd: HubCommand) -> bool {
        self.tx.send(cmd).await.is_ok()
    }
}

/// Facts about this core that responses report.
#[derive(Clone)]
pub struct CoreFacts {
    pub started_at: u64,
    pub state_dir: PathBuf,
    pub socket: PathBuf,
    pub limits: Limits,
    pub supervise: SuperviseConfig,
    /// `core.results`: which runs' results reach the bridges, unless a session says.
    pub results: ResultsMode,
    /// How managed workers are launched (`[workers]`); `None`: this core launches none.
    pub workers: Option<crate::workers::host::HostConfig>,
    /// `workers.ask_card_after_secs`: a Lead-owned worker's `ask_owner` still open after
    /// this long is announced to the bridges (`ask_opened`) as a card.
    pub ask_card_after_secs: u64,
    /// `workers.max_per_owner` and `workers.max_live`: how many live workers one owner,
    /// and all owners together, may have (`hub/workers/bounds.rs`).
    pub max_workers_per_owner: usize,
    pub max_live_workers: usize,
    /// `projects.integrate`: what a Manager's `integrate_branch` may do.
    pub integrate: crate::config::IntegratePolicy,
    /// `projects.roots`: where `new_session` also finds projects (home expanded).
    pub project_roots: Vec<PathBuf>,
    /// `core.forget_sessions_after_days` (0: never).
    pub forget_sessions_after_days: u64,
    /// `roles.away_expiry_hours` in milliseconds (0: never).
    pub away_expiry_ms: u64,
    /// `[[hosts]]`: the other machines' cores this one links to.
    pub hosts: Vec<crate::config::HostEntry>,
    /// `[approvals]`: which tool calls wait for the human, and the file it was written in
    /// (`the built-in defaults` without one).
    pub approvals: crate::config::ApprovalsConfig,
    pub approvals_origin: String,
    /// The same rules as a policy layer, compiled once for every ruling.
    pub approvals_layer: std::sync::Arc<crate::approvals::Layer>,
    /// `phone.max_file_mb` in bytes: the largest file `send_file` saves.
    pub max_file_bytes: u64,
}

/// Start the hub task. The returned join handle ends after `Shutdown` (or when every
/// handle is dropped).
///
/// The hub is a task, not a thread: on the daemon's current-thread runtime, reading a
/// frame, handling it, committing and writing the response happen without waking another
/// thread (each wake-up costs tens of microseconds on small machines). Its SQLite work
/// is short (one group commit per batch), so it does not starve the connection tasks.
pub fn spawn(store: Store, facts: CoreFacts) -> (HubHandle, tokio::task::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel(16 * 1024);
    // Armed at start so the first tick looks for pairings left active by a previous run.
    let (timer, armed) = tokio::sync::watch::channel(true);
    if facts.supervise.look_interval_secs > 0 {
        tokio::spawn(tick(tx.downgrade(), armed));
    }
    let host = launched::host_ops::start_host(facts.workers.as_ref(), tx.downgrade());
    // First of all: adopt or relaunch the workers a previous core left.
    let _ = tx.try_send(HubCommand::RecoverWorkers);
    if facts.forget_sessions_after_days > 0 || facts.away_expiry_ms > 0 {
        tokio::spawn(forget::timer(tx.downgrade()));
    }
    let chief = store::leases::get(&store.conn, crate::protocol::Role::Chief, None)
        .ok()
        .flatten()
        .map(|l| crate::protocol::HerdChief {
            session_id: l.session_id,
            session_name: l.session_name,
        });
    let cursor = |host: &str| {
        store::host_mail::report_cursor(&store.conn, host)
            .ok()
            .flatten()
    };
    let (links, answered) =
        crate::hosts::Links::start(&facts.hosts, &store.store_id, chief, cursor);
    tokio::spawn(hosts::relay_from_links(answered, tx.downgrade()));
    let hub = Hub {
        state: State {
            db_path: store
                .conn
                .path()
                .filter(|p| !p.is_empty())
                .map(PathBuf::from),
            presence: presence::Presence::default(),
            facts,
            supervision: supervise::Supervision::default(),
            timer,
            self_tx: tx.downgrade(),
            stopping: false,
            unread: store.unread,
            workers: workers::Workers::default(),
            host,
            git: projects::GitLane::start(tx.downgrade()),
            launches: launched::Launches::default(),
            links,
            herd: herd::HerdLink::load(&store.conn),
            records: records::Records::watch(&store.conn),
            health: trouble::Health::default(),
        },
        db: store.conn,
    };
    let task = tokio::spawn(hub.run(rx));
    (HubHandle { tx }, task)
}

/// Send [`HubCommand::Tick`] once a second while the hub runs and the timer is armed
/// ([`State::timer`]: some pairing is active). Disarmed, it sleeps until armed again, so
/// an idle core without pairings does not wake up for it.
async fn tick(hub: mpsc::WeakSender<HubCommand>, mut armed: tokio::sync::watch::Receiver<bool>) {
    loop {
        if armed.wait_for(|armed| *armed).await.is_err() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let Some(tx) = hub.upgrade() else { break };
        if tx.send(HubCommand::Tick).await.is_err() {
            break;
        }
    }
}

struct Hub {
    db: Connection,
    state: State,
}

/// Routing state: everything but the database.
struct State {
    /// The database file, for reads off the hub (`None`: a store in memory).
    db_path: Option<PathBuf>,
    /// Who is connected: connections, live sessions, subscribers.
    presence: presence::Presence,
    facts: CoreFacts,
    supervision: supervise::Supervision,
    /// Whether the once-a-second tick runs: disarmed by a tick that finds no active
    /// pairing, armed again by any pairing event.
    timer: tokio::sync::watch::Sender<bool>,
    /// The hub's own inbox, for work it hands to blocking threads (view builds). Weak, so
    /// the hub still stops when every other handle is gone.
    self_tx: mpsc::WeakSender<HubCommand>,
    /// The core is shutting down ([`HubCommand::Stopping`]): disconnects are no endings.
    stopping: bool,
    /// Which mail each session has not read (the store's index of it, kept in memory).
    unread: store::unread::Unread,
    /// Managed workers: what the hot paths must not query for.
    workers: workers::Workers,
    /// Starts and stops workers' processes; `None` when it could not start (delegating is
    /// then refused with the reason).
    host: Option<launched::host_ops::HostLink>,
    /// Project work's git operations, one at a time off the hub.
    git: projects::GitLane,
    /// Launched processes (workers, Leads): what the hot paths must not query for.
    launches: launched::Launches,
    /// Linked hosts (`[[hosts]]`): each link's state and its far core's mirrored sessions.
    links: crate::hosts::Links,
    /// This core as a linked host: its home core's link and the herd's Chief it named.
    herd: herd::HerdLink,
    /// Session records read once, until the `sessions` table changes.
    records: records::Records,
    /// Whether commits are failing, for the log ([`trouble::Health`]).
    health: trouble::Health,
}

impl Hub {
    async fn run(mut self, mut rx: mpsc::Receiver<HubCommand>) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        let mut stopping = false;
        while !stopping {
            let Some(first) = rx.recv().await else {
                break;
            };
            batch.push(first);
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(cmd) => batch.push(cmd),
                    Err(_) => break,
                }
            }
            stopping = self.process(&mut batch);
        }
        for conn in self.state.presence.drain_conns() {
            if let Some(close) = conn.close {
                let _ = close.send(ErrorCode::ShuttingDown);
            }
        }
        tracing::debug!("hub stopped");
    }

    /// Handle one batch in one transaction; true when asked to shut down. The begin
    /// ([`store::BEGIN_BATCH`]) and `COMMIT` are cached statements: this runs for every
    /// batch.
    fn process(&mut self, batch: &mut Vec<HubCommand>) -> bool {
        self.state.records.batch_begins();
        if let Err(e) = self
            .db
            .prepare_cached(store::BEGIN_BATCH)
            .and_then(|mut s| s.execute([]))
        {
            let stop = self.state.fail_batch(batch, &e, &self.db);
            // What those commands wrote, each statement on its own, is read back: the
            // store is failing, and a statement that failed took its rows back.
            self.state.unread.batch_failed(&self.db);
            return stop;
        }
        let mut out = Out::default();
        let mut stop = false;
        for cmd in batch.drain(..) {
            match cmd {
                HubCommand::Shutdown => stop = true,
                cmd => {
                    let (undone, mark) = (base::undone(), self.state.unread.mark());
                    self.state.handle(cmd, &self.db, &mut out);
                    if base::undone() != undone {
                        self.state.unread.settle(&self.db, mark);
                    }
                }
            }
        }
        if stop && let Err(e) = store::unread::keep_floor(&self.db, &self.state.unread) {
            tracing::warn!(error = %e, "cannot keep where unread mail starts; the next start reads the whole mailbox");
        }
        match self
            .db
            .prepare_cached("COMMIT")
            .and_then(|mut s| s.execute([]))
        {
            Ok(_) => {
                self.state.unread.committed();
                self.state.health.committed();
                let reads = std::mem::take(&mut out.reads);
                self.state.run_reads(reads, &self.db, &mut out);
                self.state.flush(out)
            }
            Err(e) => {
                let _ = self.db.execute_batch("ROLLBACK");
                self.state.unread.batch_failed(&self.db);
                self.state.fail_commit(out.requests, &e);
            }
        }
        stop
    }
}
