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

mod agents;
mod asks;
mod fits;
mod forget;
mod interrupt;
mod keys;
mod mail;
mod names;
mod off_hub;
pub(crate) mod presence;
mod projects;
mod release;
mod reports;
mod resolve;
pub(crate) mod roles;
mod session_change;
mod supervise;
mod unanswer;
mod usage;
mod workers;

pub use supervise::ViewDone;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use bytes::Bytes;
use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use crate::config::{Limits, SuperviseConfig};
use crate::git::RepoContext;
use crate::protocol::requests::{ListAsks, Subscribe};
use crate::protocol::{
    ClientKind, ClientMsg, Delivery, ErrorCode, MessageId, ResultsMode, ServerMsg, SessionId, frame,
};
use crate::store::{self, Store};
use crate::workers::launch::ProcKey;

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
    /// Once a second: start timer views that are due.
    Tick,
    /// A worker's process started (or failed to), or was found again after a restart.
    WorkerLaunched(Box<workers::host_ops::LaunchDone>),
    /// A worker's process ended (`code`: its exit code; none when killed by a signal).
    WorkerExited {
        worker: crate::protocol::WorkerId,
        code: Option<i32>,
    },
    /// An assignment's Lead process ended.
    LeadExited {
        assignment: crate::protocol::AssignmentId,
        code: Option<i32>,
    },
    /// Project git work finished on the git lane: continue on the hub.
    GitDone(Box<projects::GitDone>),
    /// A process stopped (or did not within its bound) for work that waited for it.
    Stopped(Box<workers::host_ops::StopDone>),
    /// Blocking work that is no git (reading an agent definition, summing session files)
    /// finished on a blocking thread: continue on the hub ([`State::blocking_then`]).
    Continue(Box<projects::GitDone>),
    /// Sent once at start: adopt or relaunch the workers a previous core left.
    RecoverWorkers,
    /// A Lead-owned worker's question has waited `workers.ask_card_after_secs`: announce
    /// it to the bridges if it is still open.
    AskCardDue { ask: crate::protocol::AskId },
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
    /// `core.forget_sessions_after_days` (0: never).
    pub forget_sessions_after_days: u64,
    /// `roles.away_expiry_hours` in milliseconds (0: never).
    pub away_expiry_ms: u64,
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
    let host = workers::host_ops::start_host(facts.workers.as_ref(), tx.downgrade());
    // First of all: adopt or relaunch the workers a previous core left.
    let _ = tx.try_send(HubCommand::RecoverWorkers);
    if facts.forget_sessions_after_days > 0 || facts.away_expiry_ms > 0 {
        tokio::spawn(forget::timer(tx.downgrade()));
    }
    let hub = Hub {
        state: State {
            db_path: store
                .conn
                .path()
                .filter(|p| !p.is_empty())
                .map(PathBuf::from),
            conns: HashMap::new(),
            live: HashMap::new(),
            subscribers: HashSet::new(),
            facts,
            supervision: supervise::Supervision::default(),
            timer,
            self_tx: tx.downgrade(),
            stopping: false,
            backlog: mail::Backlog::default(),
            workers: workers::Workers::default(),
            host,
            git: projects::GitLane::start(tx.downgrade()),
            projects: projects::Projects::default(),
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

/// A connection as the hub tracks it.
struct Conn {
    handle: ConnHandle,
    close: Option<oneshot::Sender<ErrorCode>>,
    session: Option<SessionId>,
    /// The bot this bridge connection serves (`subscribe.serves`).
    serves: Option<String>,
    /// The session said `bye` on this connection (`Some(returning)`): its closing is on
    /// purpose, not a loss.
    bye: Option<bool>,
}

/// Routing state: everything but the database.
struct State {
    /// The database file, for reads off the hub (`None`: a store in memory).
    db_path: Option<PathBuf>,
    conns: HashMap<ConnId, Conn>,
    /// Connected session id → its connection and display name.
    live: HashMap<SessionId, Live>,
    subscribers: HashSet<ConnId>,
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
    /// How much unread mail each session has, counted once and kept up to date.
    backlog: mail::Backlog,
    /// Managed workers: what the hot paths must not query for.
    workers: workers::Workers,
    /// Starts and stops workers' processes; `None` when it could not start (delegating is
    /// then refused with the reason).
    host: Option<workers::host_ops::HostLink>,
    /// Project work's git operations, one at a time off the hub.
    git: projects::GitLane,
    /// Project work: what the hot paths must not query for.
    projects: projects::Projects,
}

struct Live {
    conn: ConnId,
    name: String,
    /// Highest delivery id handed to this connection's writer.
    last_sent: MessageId,
    /// Mail is waiting in the store for room in the outbox: live deliveries are not sent
    /// (they would overtake it); the replay sends them in id order as the writer drains.
    replaying: bool,
}

impl Live {
    fn new(conn: ConnId, name: String) -> Live {
        Live {
            conn,
            name,
            last_sent: MessageId::from(0),
            replaying: false,
        }
    }
}

/// One encoded frame for one connection.
struct Frame {
    conn: ConnId,
    bytes: Bytes,
    /// Set for `deliver` frames: whose mailbox, which id. Deliveries are durable, so when
    /// the outbox is full they wait in the store instead of cutting the session off.
    delivery: Option<(SessionId, MessageId)>,
}

/// What a batch produced, sent only after its commit.
#[derive(Default)]
struct Out {
    frames: Vec<Frame>,
    /// Requests handled in this batch, to fail them if the commit fails.
    requests: Vec<(ConnId, u64)>,
    closes: Vec<(ConnId, ErrorCode)>,
    /// Process work for the worker host, started after the commit.
    host: Vec<workers::HostOp>,
    /// Git work for the project lane, started after the commit.
    git: Vec<projects::GitJob>,
    /// Listings to read off the hub, started after the commit.
    reads: Vec<off_hub::ReadJob>,
}

impl Out {
    fn send(&mut self, conn: ConnId, msg: &ServerMsg) {
        let bytes = Bytes::from(frame::encode(msg));
        self.frames.push(Frame {
            conn,
            bytes,
            delivery: None,
        });
    }

    fn deliver(&mut self, conn: ConnId, session_id: &SessionId, message: Delivery) {
        let id = message.id;
        let bytes = Bytes::from(frame::encode(&ServerMsg::Deliver { message }));
        self.frames.push(Frame {
            conn,
            bytes,
            delivery: Some((session_id.clone(), id)),
        });
    }

    fn error(&mut self, conn: ConnId, id: Option<u64>, err: HubError) {
        let msg = ServerMsg::Error {
            id,
            code: err.code,
            message: err.message,
            details: err.details,
        };
        self.send(conn, &msg);
    }
}

/// A request that failed, as the client will see it.
#[derive(Debug)]
pub(crate) struct HubError {
    code: ErrorCode,
    message: String,
    details: Option<serde_json::Value>,
}

impl HubError {
    fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        HubError {
            code,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = Some(details);
        self
    }
}

impl From<rusqlite::Error> for HubError {
    fn from(e: rusqlite::Error) -> Self {
        tracing::error!(error = %e, "store query failed");
        HubError::new(ErrorCode::StoreFailed, format!("the database failed: {e}"))
    }
}

type HubResult<T> = Result<T, HubError>;

/// Who sent the request a handler is answering: the connection, its kind of client and
/// the request id the response echoes (0 for `ack`, which gets none). Handlers take this
/// plus the request's struct from [`crate::protocol::requests`].
#[derive(Debug, Clone, Copy)]
struct Cx {
    conn: ConnId,
    kind: ClientKind,
    id: u64,
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
        for (_, conn) in self.state.conns.drain() {
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
        let mut out = Out::default();
        let mut stop = false;
        if let Err(e) = self
            .db
            .prepare_cached(store::BEGIN_BATCH)
            .and_then(|mut s| s.execute([]))
        {
            tracing::error!(error = %e, "cannot begin a transaction");
            let mut failed = Out::default();
            for cmd in batch.drain(..) {
                match cmd {
                    HubCommand::Shutdown => stop = true,
                    HubCommand::Request { conn, msg, .. } => {
                        if let Some(id) = msg.request_id() {
                            let err = HubError::new(
                                ErrorCode::StoreFailed,
                                format!("the database failed ({e}); retry"),
                            );
                            failed.error(conn, Some(id), err);
                        }
                    }
                    // Presence must stay right even when the store is failing.
                    cmd @ (HubCommand::Connect { .. }
                    | HubCommand::Disconnect { .. }
                    | HubCommand::Drained { .. }
                    | HubCommand::Stopping) => self.state.handle(cmd, &self.db, &mut failed),
                    HubCommand::ViewBuilt(done) => self.state.view_failed(*done, &mut failed),
                    cmd @ (HubCommand::Respond { .. } | HubCommand::Frame { .. }) => {
                        self.state.handle(cmd, &self.db, &mut failed)
                    }
                    // The next tick (or pass) tries again.
                    HubCommand::Tick | HubCommand::Forget => {}
                    // Without a store nothing about workers can change: say so, retry later.
                    HubCommand::WorkerLaunched(done) => {
                        tracing::error!(
                            key = ?done.key,
                            "a launch finished while the store failed"
                        );
                        if let Some((conn, id)) = done.reply {
                            let what = match done.key {
                                ProcKey::Worker(w) => format!("close it with `shepherd close {w}`"),
                                ProcKey::Lead(_) => {
                                    "`shepherd projects` shows it once the database works"
                                        .to_string()
                                }
                            };
                            failed.error(conn, Some(id), HubError::new(ErrorCode::StoreFailed, format!("the database failed ({e}); the process was started but could not be recorded: {what}")));
                        }
                    }
                    HubCommand::LeadExited { assignment, .. } => {
                        tracing::error!(
                            assignment,
                            "an assignment's Lead exited while the store failed"
                        );
                    }
                    HubCommand::Continue(done) => {
                        if let Some((conn, id)) = done.reply {
                            failed.error(
                                conn,
                                Some(id),
                                HubError::new(
                                    ErrorCode::StoreFailed,
                                    format!("the database failed ({e}); nothing was done: retry"),
                                ),
                            );
                        }
                    }
                    HubCommand::GitDone(done) => {
                        tracing::error!("a git operation finished while the store failed");
                        if let Some((conn, id)) = done.reply {
                            failed.error(conn, Some(id), HubError::new(ErrorCode::StoreFailed, format!("the database failed ({e}); the git work was done but not recorded: retry")));
                        }
                    }
                    HubCommand::Stopped(done) => {
                        tracing::error!("a process stopped while the store failed");
                        if let Some((conn, id)) = done.reply {
                            failed.error(conn, Some(id), HubError::new(ErrorCode::StoreFailed, format!("the database failed ({e}); the process was stopped but nothing after it was done: retry")));
                        }
                    }
                    HubCommand::WorkerExited { worker, .. } => {
                        tracing::error!(
                            worker,
                            "a worker exited while the store failed; it shows its last state"
                        );
                    }
                    HubCommand::RecoverWorkers => {
                        tracing::error!("cannot recover workers: the store failed");
                    }
                    HubCommand::AskCardDue { ask } => {
                        tracing::error!(%ask, "a worker's question was not shown on the phones: the store failed");
                    }
                }
            }
            self.state.flush(failed);
            return stop;
        }
        for cmd in batch.drain(..) {
            match cmd {
                HubCommand::Shutdown => stop = true,
                cmd => self.state.handle(cmd, &self.db, &mut out),
            }
        }
        match self
            .db
            .prepare_cached("COMMIT")
            .and_then(|mut s| s.execute([]))
        {
            Ok(_) => {
                let reads = std::mem::take(&mut out.reads);
                self.state.run_reads(reads, &self.db, &mut out);
                self.state.flush(out)
            }
            Err(e) => {
                tracing::error!(error = %e, "group commit failed; failing the batch");
                let _ = self.db.execute_batch("ROLLBACK");
                self.state.backlog.forget_all();
                let mut failed = Out::default();
                for (conn, id) in out.requests {
                    let err = HubError::new(
                        ErrorCode::StoreFailed,
                        format!("the database could not commit ({e}); nothing was kept: retry"),
                    );
                    failed.error(conn, Some(id), err);
                }
                self.state.flush(failed);
            }
        }
        stop
    }
}

impl State {
    fn handle(&mut self, cmd: HubCommand, db: &Connection, out: &mut Out) {
        match cmd {
            HubCommand::Connect {
                conn,
                handle,
                close,
            } => self.connect(conn, handle, close),
            HubCommand::Disconnect { conn } => self.disconnect(conn, db, out),
            HubCommand::Drained { conn } => {
                let session = self.conns.get(&conn).and_then(|c| c.session.clone());
                if let Some(session) = session
                    && let Err(err) = self.replay(&session, db, out)
                {
                    tracing::error!(session = %session, "replaying the mailbox failed: {}", err.message);
                }
            }
            HubCommand::Request { conn, msg, repo } => {
                let id = msg.request_id();
                if let Some(id) = id {
                    out.requests.push((conn, id));
                }
                if let Err(err) = self.request(conn, *msg, repo, db, out) {
                    if id.is_none() {
                        tracing::warn!(conn, code = %err.code, "{}", err.message);
                    }
                    out.error(conn, id, err);
                }
            }
            HubCommand::ViewBuilt(done) => self.view_built(*done, db, out),
            HubCommand::Respond { conn, msg } => out.send(conn, &msg),
            HubCommand::Frame { conn, bytes } => out.frames.push(Frame {
                conn,
                bytes,
                delivery: None,
            }),
            HubCommand::Tick => self.tick(db),
            HubCommand::Forget => {
                self.forget_unseen(db);
                self.expire_away_leases_logged(db, out);
            }
            HubCommand::WorkerLaunched(done) => match done.key {
                ProcKey::Worker(worker) => self.worker_launched(worker, *done, db, out),
                ProcKey::Lead(assignment) => self.lead_launched(assignment, *done, db, out),
            },
            HubCommand::LeadExited { assignment, code } => {
                if let Err(err) = self.lead_exited(assignment, code, db, out) {
                    tracing::error!(assignment, "handling a Lead's exit failed: {}", err.message);
                }
            }
            HubCommand::GitDone(done) | HubCommand::Continue(done) => self.git_done(*done, db, out),
            HubCommand::Stopped(done) => self.stopped(*done, db, out),
            HubCommand::WorkerExited { worker, code } => {
                if let Err(err) = self.worker_exited(worker, code, db, out) {
                    tracing::error!(worker, "handling a worker's exit failed: {}", err.message);
                }
            }
            HubCommand::RecoverWorkers => {
                self.recover_integrations(out);
                if let Err(err) = self.recover_workers(db, out) {
                    tracing::error!("recovering workers failed: {}", err.message);
                }
                if let Err(err) = self.recover_leads(db, out) {
                    tracing::error!("recovering assignments' Leads failed: {}", err.message);
                }
            }
            HubCommand::AskCardDue { ask } => self.ask_card_due(ask, db, out),
            HubCommand::Stopping => self.stopping = true,
            HubCommand::Shutdown => {}
        }
    }

    /// Hand one request to its handler: one line per message type.
    fn request(
        &mut self,
        conn: ConnId,
        msg: ClientMsg,
        repo: Option<RepoContext>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let kind = self.conns.get(&conn).map(|c| c.handle.kind);
        let Some(kind) = kind else {
            return Ok(()); // Raced with its own disconnect: nobody to answer.
        };
        let cx = Cx {
            conn,
            kind,
            id: msg.request_id().unwrap_or_default(),
        };
        match msg {
            ClientMsg::Hello(_) => Err(HubError::new(
                ErrorCode::AlreadyGreeted,
                "this connection already said hello",
            )),
            ClientMsg::Register(req) => self.register(cx, req, repo.unwrap_or_default(), db, out),
            ClientMsg::Update(req) => self.update(cx, req, repo, db, out),
            ClientMsg::Ask(req) => self.ask(cx, req, db, out),
            ClientMsg::Report(req) => self.report(cx, req, db, out),
            ClientMsg::Answer(req) => self.answer(cx, req, db, out),
            ClientMsg::Send(req) => self.send_text(cx, req, db, out),
            ClientMsg::Ack(req) => self.ack(cx, req, db, out),
            ClientMsg::ListSessions(req) => self.list_sessions(cx, req, db, out),
            ClientMsg::ListAsks(req) => self.list_asks(cx, req, db, out),
            ClientMsg::Status(_) => self.status(cx, db, out),
            ClientMsg::Subscribe(req) => self.subscribe(cx, req, out),
            ClientMsg::Ping(_) => Self::ping(cx, out),
            ClientMsg::Supervise(req) => self.supervise(cx, req, db, out),
            ClientMsg::Unpair(req) => self.unpair(cx, req, db, out),
            ClientMsg::SetGoal(req) => self.set_goal(cx, req, db, out),
            ClientMsg::Look(req) => self.look(cx, req, db, out),
            ClientMsg::WorkerView(_) => self.worker_view(cx, db),
            ClientMsg::Verdict(req) => self.verdict(cx, req, db, out),
            ClientMsg::ListPairings(req) => self.list_pairings(cx, req, db, out),
            ClientMsg::Unanswer(req) => self.unanswer(cx, req, db, out),
            ClientMsg::Interrupt(req) => self.interrupt(cx, req, db, out),
            ClientMsg::Bye(req) => self.bye(cx, req),
            ClientMsg::RunResult(req) => self.run_result(cx, req, repo, db, out),
            ClientMsg::ListReports(req) => self.list_reports(cx, req, db, out),
            ClientMsg::SetRole(req) => self.set_role(cx, req, db, out),
            ClientMsg::ListRoles(req) => self.list_roles(cx, req, db, out),
            ClientMsg::ReleaseRole(req) => self.release_role(cx, req, db, out),
            ClientMsg::MessageSupervisor(req) => self.message_supervisor(cx, req, db, out),
            ClientMsg::AskSupervisor(req) => self.ask_supervisor(cx, req, db, out),
            ClientMsg::ListStaff(req) => self.list_staff(cx, req, db, out),
            ClientMsg::InspectStaff(req) => self.inspect_staff(cx, req, db),
            ClientMsg::MessageStaff(req) => self.message_staff(cx, req, db, out),
            ClientMsg::ListPeers(req) => self.list_peers(cx, req, db, out),
            ClientMsg::MessagePeer(req) => self.message_peer(cx, req, db, out),
            ClientMsg::DelegateAgent(req) => self.delegate_agent(cx, req, db, out),
            ClientMsg::ContinueAgent(req) => self.continue_agent(cx, req, db, out),
            ClientMsg::ListWorkers(req) => self.list_workers(cx, req, db, out),
            ClientMsg::SteerAgent(req) => self.steer_agent(cx, req, db, out),
            ClientMsg::InterruptAgent(req) => self.interrupt_agent(cx, req, db, out),
            ClientMsg::ReplyAgent(req) => self.reply_agent(cx, req, db, out),
            ClientMsg::CloseAgent(req) => self.close_agent(cx, req, db, out),
            ClientMsg::InspectAgent(req) => self.inspect_agent(cx, req, db),
            ClientMsg::ReadAgentTranscript(req) => self.read_agent_transcript(cx, req, db),
            ClientMsg::AskOwner(req) => self.ask_owner(cx, req, db, out),
            ClientMsg::ListAgents(req) => self.list_agents(cx, req, db),
            ClientMsg::Usage(req) => self.usage(cx, req, db),
            ClientMsg::DelegateProject(req) => self.delegate_project(cx, req, db, out),
            ClientMsg::ResumeWork(req) => self.resume_work(cx, req, db, out),
            ClientMsg::StopLead(req) => self.stop_lead(cx, req, db, out),
            ClientMsg::IntegrateBranch(req) => self.integrate_branch(cx, req, db, out),
            ClientMsg::ListProjects(req) => self.list_projects(cx, req, db, out),
        }
    }

    fn list_asks(&self, cx: Cx, req: ListAsks, db: &Connection, out: &mut Out) -> HubResult<()> {
        if req.all {
            // Every ask ever asked can be many: read off the hub.
            let id = cx.id;
            self.read_off_hub(cx, out, move |db| {
                let asks = store::asks::list(db, true)?;
                Ok(ServerMsg::Asks { id, asks })
            });
            return Ok(());
        }
        let asks = store::asks::list(db, false)?;
        out.send(cx.conn, &ServerMsg::Asks { id: cx.id, asks });
        Ok(())
    }

    fn ping(cx: Cx, out: &mut Out) -> HubResult<()> {
        out.send(cx.conn, &ServerMsg::Pong { id: cx.id });
        Ok(())
    }

    fn subscribe(&mut self, cx: Cx, req: Subscribe, out: &mut Out) -> HubResult<()> {
        if let Some(bot) = req.serves {
            self.claim_bot(cx, bot)?;
        }
        self.subscribers.insert(cx.conn);
        out.send(cx.conn, &ServerMsg::Subscribed { id: cx.id });
        Ok(())
    }

    /// Bind `bot` to this bridge connection, unless another live connection serves it.
    fn claim_bot(&mut self, cx: Cx, bot: String) -> HubResult<()> {
        if cx.kind != ClientKind::Bridge {
            return Err(HubError::new(
                ErrorCode::Forbidden,
                "only a bridge serves a bot; subscribe without `serves`",
            ));
        }
        let bot = bot.trim().to_string();
        if bot.is_empty() || bot.len() > 256 {
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                "serves must name the bot in 1 to 256 bytes (telegram:@name, matrix:@user:server)",
            ));
        }
        let holder = self
            .conns
            .iter()
            .find(|(id, c)| **id != cx.conn && c.serves.as_deref() == Some(bot.as_str()));
        if let Some((_, holder)) = holder {
            let h = &holder.handle;
            let pid = h
                .pid
                .map_or_else(|| "pid unknown".to_string(), |p| format!("pid {p}"));
            return Err(HubError::new(
                ErrorCode::AlreadyServed,
                format!(
                    "{bot} is already served by the bridge `{}` ({pid}, connected {}); \
                     one bot takes one bridge: stop that one first (`shepherd status` lists bridges)",
                    h.client_name,
                    crate::human::ago(h.connected_at, crate::clock::now_ms()),
                ),
            ));
        }
        if let Some(conn) = self.conns.get_mut(&cx.conn) {
            conn.serves = Some(bot);
        }
        Ok(())
    }

    /// Send one event to every subscriber, encoded once.
    fn broadcast(&self, msg: &ServerMsg, out: &mut Out) {
        if self.subscribers.is_empty() {
            return;
        }
        let bytes = Bytes::from(frame::encode(msg));
        for conn in &self.subscribers {
            out.frames.push(Frame {
                conn: *conn,
                bytes: bytes.clone(),
                delivery: None,
            });
        }
    }

    /// Hand frames to connection writers. A delivery that finds the outbox full waits in
    /// the store (the session switches to replay); any other frame that finds it full
    /// closes that connection as a slow consumer.
    fn flush(&mut self, mut out: Out) {
        let git_jobs = std::mem::take(&mut out.git);
        if !git_jobs.is_empty() {
            self.git.run(git_jobs);
        }
        let host_ops = std::mem::take(&mut out.host);
        if !host_ops.is_empty() {
            let host = self.host.as_ref().map(|h| &h.host);
            workers::host_ops::run(host, host_ops, &self.self_tx);
        }
        for (conn, code) in out.closes {
            if let Some(close) = self.conns.get_mut(&conn).and_then(|c| c.close.take()) {
                let _ = close.send(code);
            }
        }
        // Sessions whose outbox filled during this flush: nothing more for them now, so
        // deliveries never overtake each other.
        let mut stalled: HashSet<SessionId> = HashSet::new();
        let max_bytes = self.facts.limits.max_outbound_bytes;
        for frame in out.frames {
            let Some(conn) = self.conns.get_mut(&frame.conn) else {
                continue;
            };
            // Over the byte bound unless nothing is queued (one large frame always goes).
            let len = frame.bytes.len();
            let queued = conn.handle.queued_bytes.load(Ordering::Acquire);
            let over = queued > 0 && queued.saturating_add(len) > max_bytes;
            let Some((session, id)) = frame.delivery else {
                match conn.handle.queue(frame.bytes, over) {
                    Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        if let Some(close) = conn.close.take() {
                            tracing::warn!(
                                conn = frame.conn,
                                client = %conn.handle.client_name,
                                "client is not reading its frames; disconnecting it (slow_consumer)"
                            );
                            let _ = close.send(ErrorCode::SlowConsumer);
                        }
                    }
                }
                continue;
            };
            let Some(live) = self.live.get_mut(&session) else {
                continue;
            };
            if live.conn != frame.conn || id <= live.last_sent || stalled.contains(&session) {
                continue;
            }
            match conn.handle.queue(frame.bytes, over) {
                Ok(()) => live.last_sent = id,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    live.replaying = true;
                    conn.handle.drain_wanted.store(true, Ordering::Release);
                    stalled.insert(session);
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {}
            }
        }
    }
}

/// Run `f` so that either all of its writes happen or none do.
fn atomically<T>(db: &Connection, f: impl FnOnce() -> HubResult<T>) -> HubResult<T> {
    db.execute_batch("SAVEPOINT request")?;
    match f() {
        Ok(value) => {
            db.execute_batch("RELEASE request")?;
            Ok(value)
        }
        Err(err) => {
            db.execute_batch("ROLLBACK TO request; RELEASE request")?;
            Err(err)
        }
    }
}
