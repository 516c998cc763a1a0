//! # The process host
//!
//! One actor (a tokio task) owns every worker process the core started; [`Host`] is its
//! cheap, cloneable handle. No locks: the hub asks, the actor answers on a oneshot.
//!
//! Two backends ([`Backend`]):
//!
//! - **headless** (`host/headless.rs`): a `pi --mode rpc` child in its own process group,
//!   stdin piped and kept open (closing it aborts Pi's run and Pi exits), stdout drained
//!   (the last 50 lines kept for a lost worker's diagnosis: [`Host::capture`]), stderr
//!   appended to `<state dir>/workers/<worker>.log` (0600). Headless workers stop with the
//!   core: dropping every [`Host`] handle closes their stdin.
//! - **tmux** (`host/tmux.rs`): interactive Pi in a window named by the worker's label, in
//!   session `shepherd` of a private server (`tmux -S <state dir>/tmux.sock`, socket 0600),
//!   `remain-on-exit on`. tmux workers outlive the core; after a restart [`Host::adopt`]
//!   re-attaches to a pane that still runs. While any tmux worker lives, the actor polls
//!   `list-panes` every 2 s for dead or vanished panes.
//!
//! Measured with the pinned Pi 1.6: interactive Pi runs in a detached pane (no client
//! attached), and `#{pane_pid}` is the pid Pi's extension sees as `process.pid` (the
//! wrapper script `exec`s node).
//!
//! Every exit is reported once as [`HostEvent::Exited`] on the channel given to
//! [`Host::start`] (also the exits [`Host::stop`] causes). Events never block the actor:
//! when the channel is full, a task sends them.

mod headless;
mod tmux;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::config::{WorkerBackend, WorkersConfig};
use crate::workers::launch::{self, LaunchContext, LaunchSpec};

/// The tmux session on shepherd's private server whose windows are the workers.
pub const TMUX_SESSION: &str = tmux::SESSION;

/// How often live tmux panes are checked.
const TMUX_POLL: Duration = Duration::from_secs(2);

/// Where a worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// A `pi --mode rpc` child of the core.
    Headless,
    /// Interactive Pi in a window of shepherd's private tmux server.
    Tmux,
}

impl Backend {
    /// The backend `workers.backend` asks for: `auto` is tmux when `tmux -V` runs, else
    /// headless. An explicit `tmux` stays tmux even when it is missing (launching then
    /// says to install it or choose headless).
    pub fn resolve(config: &WorkersConfig) -> Backend {
        match config.backend {
            WorkerBackend::Tmux => Backend::Tmux,
            WorkerBackend::Headless => Backend::Headless,
            WorkerBackend::Auto if tmux::available() => Backend::Tmux,
            WorkerBackend::Auto => Backend::Headless,
        }
    }

    /// `"headless"` or `"tmux"` (the wire's `Worker.backend`).
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Headless => "headless",
            Backend::Tmux => "tmux",
        }
    }
}

impl std::str::FromStr for Backend {
    type Err = String;

    /// `"headless"` or `"tmux"` (as [`Backend::as_str`] wrote it, e.g. in the store).
    fn from_str(s: &str) -> Result<Backend, String> {
        match s {
            "headless" => Ok(Backend::Headless),
            "tmux" => Ok(Backend::Tmux),
            other => Err(format!(
                "unknown worker backend {other:?}: expected \"headless\" or \"tmux\""
            )),
        }
    }
}

/// What the host needs to know.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// The backend new workers get ([`Backend::resolve`]).
    pub backend: Backend,
    /// Argv prefix that runs Pi (`workers.pi`).
    pub pi: Vec<String>,
    /// The shepherd extension workers load (`Config::worker_extension`).
    pub extension: PathBuf,
    /// The core's state directory: `workers/` (prompts, logs) and `tmux.sock` live here.
    pub state_dir: PathBuf,
    /// The core's socket, given to workers as `SHEPHERD_SOCKET`.
    pub socket: PathBuf,
    /// More environment for every worker (tests: `PI_CODING_AGENT_DIR`, `PI_OFFLINE`).
    pub extra_env: Vec<(String, String)>,
}

/// What the host tells its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostEvent {
    /// A worker's process ended (by itself, killed from outside, or by [`Host::stop`]).
    /// `code`: its exit status; `None` when a signal ended it, or when it cannot be known:
    /// a tmux pane that was killed or vanished, or one whose status tmux did not record
    /// (tmux 3.3a loses an exited pane's status about one time in three, measured). So
    /// the code is a diagnosis, never the worker's outcome: that comes from its session.
    /// `nonce`: the launch's ([`LaunchSpec::nonce`], or the one given to
    /// [`Host::adopt`]), so an earlier launch's exit that arrives after a relaunch is
    /// told from the new process's.
    Exited {
        worker: i64,
        code: Option<i32>,
        nonce: String,
    },
}

/// A running worker process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launched {
    /// The process Pi runs in (the child; a tmux pane's `#{pane_pid}`). The extension
    /// that registers for this worker must be it or run below it.
    pub pid: u32,
    pub backend: Backend,
    /// The tmux pane id (`%3`), to [`Host::adopt`] it after a core restart.
    pub pane: Option<String>,
}

/// Why a worker could not be started or adopted. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error(
        "the worker process host has stopped (the core is shutting down); try again once it runs"
    )]
    Closed,
    #[error("worker {worker} already has a process; stop it before launching another")]
    AlreadyRunning { worker: i64 },
    #[error("workers.pi is empty: set it to the command that runs Pi, e.g. [\"pi\"]")]
    NoPi,
    #[error(
        "the worker's directory {cwd} is not a directory (tmux would start it elsewhere): create it, or delegate from an existing one"
    )]
    NoCwd { cwd: PathBuf },
    #[error(
        "cannot start {program} in {cwd}: {source}; check workers.pi (the command that runs Pi) and that the directory exists"
    )]
    Spawn {
        program: String,
        cwd: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "cannot write {path}: {source}; check the state directory's permissions and free space"
    )]
    Files {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("tmux {action} failed: {message}")]
    Tmux { action: String, message: String },
    #[error(
        "tmux pane {pane} is not on shepherd's tmux server ({socket}): the worker is gone; relaunch it from its session file"
    )]
    PaneNotFound { pane: String, socket: PathBuf },
}

impl HostError {
    fn files(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> HostError {
        let path = path.into();
        move |source| HostError::Files { path, source }
    }
}

/// The handle to the process host actor. Cloning is cheap; when the last handle is
/// dropped the actor ends, closing every headless worker's stdin (tmux workers run on).
#[derive(Debug, Clone)]
pub struct Host {
    tx: mpsc::Sender<Cmd>,
}

type Reply<T> = oneshot::Sender<T>;
/// Where a launch's outcome goes.
type LaunchReply = Reply<Result<Launched, HostError>>;

enum Cmd {
    Launch(Box<LaunchSpec>, LaunchReply),
    /// Worker, pane, the launch's nonce.
    Adopt(i64, String, String, LaunchReply),
    Stop(i64, Reply<Option<oneshot::Receiver<()>>>),
    Capture(i64, Reply<Capture>),
}

/// A capture now, or from a headless worker's task.
enum Capture {
    Now(Option<String>),
    Later(oneshot::Receiver<String>),
}

/// What the actor's own tasks tell it.
enum Notice {
    /// A headless worker's process ended; its stdout tail.
    HeadlessExited { worker: i64, run: u64, tail: String },
}

impl Host {
    /// Start the actor on the current tokio runtime (panics outside one). Exits are
    /// reported on `events`.
    pub fn start(cfg: HostConfig, events: mpsc::Sender<HostEvent>) -> Host {
        let (tx, rx) = mpsc::channel(64);
        // Unbounded: one notice per worker exit, and a worker task must never wait on the
        // actor while the actor waits on it.
        let (notice_tx, notice_rx) = mpsc::unbounded_channel();
        let actor = Actor {
            tmux: tmux::Tmux::new(&cfg.state_dir),
            cfg,
            events,
            notices: notice_tx,
            workers: HashMap::new(),
            runs: 0,
            after_stop: HashMap::new(),
        };
        tokio::spawn(actor.run(rx, notice_rx));
        Host { tx }
    }

    async fn ask<T>(&self, cmd: impl FnOnce(Reply<T>) -> Cmd) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(cmd(tx)).await.ok()?;
        rx.await.ok()
    }

    /// Start `spec`'s worker on the configured backend: write its prompt file, spawn Pi
    /// (headless) or open its tmux window. Returns once the process exists (not once Pi
    /// has registered). A worker whose process is being stopped is launched once that
    /// process has exited (a relaunch right after a stop). A worker id with a process
    /// already gets
    /// [`HostError::AlreadyRunning`]; a missing cwd [`HostError::NoCwd`]; a Pi command
    /// that is not found or not executable [`HostError::Spawn`] (checked before tmux
    /// runs it: tmux would only show a dead pane with status 1).
    pub async fn launch(&self, spec: LaunchSpec) -> Result<Launched, HostError> {
        self.ask(|tx| Cmd::Launch(Box::new(spec), tx))
            .await
            .unwrap_or(Err(HostError::Closed))
    }

    /// Stop a worker: headless, close its stdin (Pi aborts the run and exits), wait up
    /// to 5 s, then SIGTERM its process group, 2 s later SIGKILL; tmux, kill its pane.
    /// Returns once the process is gone and its [`HostEvent::Exited`] is sent; the host
    /// then forgets the worker. Idempotent: an unknown or already stopped worker is a
    /// no-op.
    pub async fn stop(&self, worker: i64) {
        if let Some(Some(done)) = self.ask(|tx| Cmd::Stop(worker, tx)).await {
            let _ = done.await;
        }
    }

    /// What the worker shows: tmux, the pane's last 80 lines (`capture-pane -p -J`, a dead
    /// pane's too); headless, the last 50 lines Pi wrote to stdout (also after it exited,
    /// until [`Host::stop`]). At most 16 KiB (the end kept). `None`: no such worker, or
    /// its pane is gone.
    pub async fn capture(&self, worker: i64) -> Option<String> {
        match self.ask(|tx| Cmd::Capture(worker, tx)).await? {
            Capture::Now(text) => text,
            Capture::Later(rx) => rx.await.ok(),
        }
    }

    /// After a core restart: take tmux pane `pane` (`%3`) back as worker `worker`'s,
    /// launched with `nonce` (its exit carries it). A live pane is watched again; a dead
    /// one (the worker ended while the core was away) is adopted and its
    /// [`HostEvent::Exited`] sent at once, so it can still be captured and then stopped.
    /// A pane that is not on shepherd's tmux server is [`HostError::PaneNotFound`].
    pub async fn adopt(
        &self,
        worker: i64,
        pane: String,
        nonce: String,
    ) -> Result<Launched, HostError> {
        self.ask(|tx| Cmd::Adopt(worker, pane, nonce, tx))
            .await
            .unwrap_or(Err(HostError::Closed))
    }
}

/// One worker the actor knows.
enum Entry {
    Headless {
        run: u64,
        ctl: mpsc::Sender<headless::Ctl>,
        stopping: bool,
    },
    /// Its process ended by itself; kept for [`Host::capture`] until stopped.
    HeadlessExited { tail: String },
    Tmux {
        pane: String,
        dead: bool,
        /// Its launch's nonce.
        nonce: String,
    },
}

struct Actor {
    cfg: HostConfig,
    tmux: tmux::Tmux,
    events: mpsc::Sender<HostEvent>,
    notices: mpsc::UnboundedSender<Notice>,
    workers: HashMap<i64, Entry>,
    /// Headless runs started (tells a stale exit notice from a relaunch's).
    runs: u64,
    /// Launches for a worker whose previous process is being stopped: started once it has
    /// exited (a relaunch right after a stop must not find it still there).
    after_stop: HashMap<i64, Vec<(LaunchSpec, LaunchReply)>>,
}

impl Actor {
    async fn run(
        mut self,
        mut rx: mpsc::Receiver<Cmd>,
        mut notices: mpsc::UnboundedReceiver<Notice>,
    ) {
        let mut poll = tokio::time::interval(TMUX_POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                cmd = rx.recv() => match cmd {
                    Some(cmd) => self.command(cmd).await,
                    None => break,
                },
                Some(notice) = notices.recv() => self.notice(notice).await,
                _ = poll.tick(), if self.tmux_live() => self.poll_tmux().await,
            }
        }
        // Dropping the entries closes every headless worker's control channel: each
        // closes its Pi's stdin and ends.
    }

    fn tmux_live(&self) -> bool {
        self.workers
            .values()
            .any(|e| matches!(e, Entry::Tmux { dead: false, .. }))
    }

    fn emit(&self, event: HostEvent) {
        emit(&self.events, event);
    }

    async fn command(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::Launch(spec, reply) => {
                let stopping = matches!(
                    self.workers.get(&spec.worker),
                    Some(Entry::Headless { stopping: true, .. })
                );
                if stopping {
                    self.after_stop
                        .entry(spec.worker)
                        .or_default()
                        .push((*spec, reply));
                    return;
                }
                let result = self.launch(*spec).await;
                let _ = reply.send(result);
            }
            Cmd::Adopt(worker, pane, nonce, reply) => {
                let result = self.adopt(worker, pane, nonce).await;
                let _ = reply.send(result);
            }
            Cmd::Stop(worker, reply) => {
                let wait = self.stop(worker).await;
                let _ = reply.send(wait);
            }
            Cmd::Capture(worker, reply) => {
                let capture = self.capture(worker).await;
                let _ = reply.send(capture);
            }
        }
    }

    async fn launch(&mut self, spec: LaunchSpec) -> Result<Launched, HostError> {
        let running = match self.workers.get(&spec.worker) {
            Some(Entry::Headless { .. }) => true,
            Some(Entry::Tmux { dead, .. }) => !dead,
            _ => false,
        };
        if running {
            return Err(HostError::AlreadyRunning {
                worker: spec.worker,
            });
        }
        if self.cfg.pi.is_empty() {
            return Err(HostError::NoPi);
        }
        if !spec.cwd.is_dir() {
            return Err(HostError::NoCwd { cwd: spec.cwd });
        }
        let backend = self.cfg.backend;
        let cmd = launch::build(
            &spec,
            LaunchContext {
                pi: &self.cfg.pi,
                extension: &self.cfg.extension,
                socket: &self.cfg.socket,
                state_dir: &self.cfg.state_dir,
                rpc: backend == Backend::Headless,
                extra_env: &self.cfg.extra_env,
            },
        );
        let dir = launch::private_workers_dir(&self.cfg.state_dir)
            .map_err(HostError::files(launch::workers_dir(&self.cfg.state_dir)))?;
        if let Some((path, _)) = &cmd.prompt {
            launch::write_prompt(&cmd).map_err(HostError::files(path))?;
        }
        match backend {
            Backend::Headless => {
                self.runs += 1;
                let run = self.runs;
                let log = dir.join(format!("{}.log", spec.worker));
                let spawned = headless::spawn(
                    &cmd,
                    &log,
                    headless::Watch {
                        worker: spec.worker,
                        run,
                        nonce: spec.nonce.clone(),
                        events: self.events.clone(),
                        notices: self.notices.clone(),
                    },
                )?;
                self.workers.insert(
                    spec.worker,
                    Entry::Headless {
                        run,
                        ctl: spawned.ctl,
                        stopping: false,
                    },
                );
                Ok(Launched {
                    pid: spawned.pid,
                    backend,
                    pane: None,
                })
            }
            Backend::Tmux => {
                let program = &cmd.argv[0];
                if let Err(source) = tmux::runnable(program) {
                    return Err(HostError::Spawn {
                        program: program.to_string_lossy().into_owned(),
                        cwd: spec.cwd,
                        source,
                    });
                }
                let pane = self.tmux.open_window(&spec.label, &cmd).await?;
                // An earlier, dead pane of this worker id is replaced.
                if let Some(Entry::Tmux { pane: old, .. }) = self.workers.remove(&spec.worker) {
                    self.tmux.kill_pane(&old).await;
                }
                self.workers.insert(
                    spec.worker,
                    Entry::Tmux {
                        pane: pane.id.clone(),
                        dead: false,
                        nonce: spec.nonce.clone(),
                    },
                );
                Ok(Launched {
                    pid: pane.pid,
                    backend,
                    pane: Some(pane.id),
                })
            }
        }
    }

    async fn adopt(
        &mut self,
        worker: i64,
        pane: String,
        nonce: String,
    ) -> Result<Launched, HostError> {
        if let Some(entry) = self.workers.get(&worker) {
            let same = matches!(entry, Entry::Tmux { pane: p, .. } if *p == pane);
            if !same {
                return Err(HostError::AlreadyRunning { worker });
            }
        }
        let panes = self.tmux.list_panes(std::slice::from_ref(&pane)).await?;
        let Some(found) = panes.into_iter().find(|p| p.id == pane) else {
            return Err(HostError::PaneNotFound {
                pane,
                socket: self.tmux.socket().to_path_buf(),
            });
        };
        let was_dead = matches!(
            self.workers.get(&worker),
            Some(Entry::Tmux { dead: true, .. })
        );
        self.workers.insert(
            worker,
            Entry::Tmux {
                pane: found.id.clone(),
                dead: found.dead.is_some(),
                nonce: nonce.clone(),
            },
        );
        if let Some(code) = found.dead
            && !was_dead
        {
            self.emit(HostEvent::Exited {
                worker,
                code,
                nonce,
            });
        }
        Ok(Launched {
            pid: found.pid,
            backend: Backend::Tmux,
            pane: Some(found.id),
        })
    }

    async fn stop(&mut self, worker: i64) -> Option<oneshot::Receiver<()>> {
        match self.workers.remove(&worker)? {
            Entry::Headless { run, ctl, .. } => {
                let (done_tx, done_rx) = oneshot::channel();
                if ctl.send(headless::Ctl::Stop(done_tx)).await.is_err() {
                    // Its task has ended (the exit notice is on its way): nothing to wait for.
                    return None;
                }
                self.workers.insert(
                    worker,
                    Entry::Headless {
                        run,
                        ctl,
                        stopping: true,
                    },
                );
                Some(done_rx)
            }
            Entry::HeadlessExited { .. } => None,
            Entry::Tmux { pane, dead, nonce } => {
                self.tmux.kill_pane(&pane).await;
                if !dead {
                    self.emit(HostEvent::Exited {
                        worker,
                        code: None,
                        nonce,
                    });
                }
                None
            }
        }
    }

    async fn capture(&mut self, worker: i64) -> Capture {
        match self.workers.get(&worker) {
            None => Capture::Now(None),
            Some(Entry::HeadlessExited { tail }) => Capture::Now(Some(tail.clone())),
            Some(Entry::Headless { ctl, .. }) => {
                let (tx, rx) = oneshot::channel();
                match ctl.send(headless::Ctl::Capture(tx)).await {
                    Ok(()) => Capture::Later(rx),
                    Err(_) => Capture::Now(None),
                }
            }
            Some(Entry::Tmux { pane, .. }) => {
                let pane = pane.clone();
                Capture::Now(self.tmux.capture(&pane).await)
            }
        }
    }

    async fn notice(&mut self, notice: Notice) {
        match notice {
            Notice::HeadlessExited { worker, run, tail } => {
                let current = matches!(self.workers.get(&worker), Some(Entry::Headless { run: r, .. }) if *r == run);
                if !current {
                    return;
                }
                let stopping = matches!(
                    self.workers.get(&worker),
                    Some(Entry::Headless { stopping: true, .. })
                );
                if stopping {
                    self.workers.remove(&worker);
                    // Launches that waited for this stop start now, in order.
                    for (spec, reply) in self.after_stop.remove(&worker).unwrap_or_default() {
                        let result = self.launch(spec).await;
                        let _ = reply.send(result);
                    }
                } else {
                    self.workers.insert(worker, Entry::HeadlessExited { tail });
                }
            }
        }
    }

    async fn poll_tmux(&mut self) {
        let watched: Vec<String> = self
            .workers
            .values()
            .filter_map(|e| match e {
                Entry::Tmux {
                    pane, dead: false, ..
                } => Some(pane.clone()),
                _ => None,
            })
            .collect();
        let panes = match self.tmux.list_panes(&watched).await {
            Ok(panes) => panes,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list shepherd's tmux panes; trying again");
                return;
            }
        };
        let mut exits = Vec::new();
        for (worker, entry) in &mut self.workers {
            let Entry::Tmux { pane, dead, nonce } = entry else {
                continue;
            };
            if *dead {
                continue;
            }
            match panes.iter().find(|p| p.id == *pane) {
                Some(p) => {
                    if let Some(code) = p.dead {
                        *dead = true;
                        exits.push((*worker, code, nonce.clone()));
                    }
                }
                None => {
                    // No server, no session, or the window was killed: gone.
                    *dead = true;
                    exits.push((*worker, None, nonce.clone()));
                }
            }
        }
        for (worker, code, nonce) in exits {
            self.emit(HostEvent::Exited {
                worker,
                code,
                nonce,
            });
        }
    }
}

/// Send `event` without waiting: when the channel is full, a task waits for room.
fn emit(events: &mpsc::Sender<HostEvent>, event: HostEvent) {
    match events.try_send(event) {
        Ok(()) => {}
        Err(mpsc::error::TrySendError::Full(event)) => {
            let events = events.clone();
            tokio::spawn(async move {
                let _ = events.send(event).await;
            });
        }
        Err(mpsc::error::TrySendError::Closed(_)) => {}
    }
}

/// The end of `text` that fits `max` bytes, cut at a line start when one is near (else at
/// a char boundary).
fn tail_bytes(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let rest = &text[start..];
    match rest.find('\n') {
        Some(nl) if nl + 1 < rest.len() => &rest[nl + 1..],
        _ => rest,
    }
}

/// Most bytes [`Host::capture`] returns.
pub const CAPTURE_MAX_BYTES: usize = 16 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_keep_the_end_at_a_line_start() {
        assert_eq!(tail_bytes("abc", 10), "abc");
        assert_eq!(tail_bytes("one\ntwo\nthree", 9), "three");
        assert_eq!(tail_bytes("ééé", 3), "é");
        assert_eq!(tail_bytes("abcdef", 3), "def");
    }

    #[test]
    fn backends_read_back_what_they_write() {
        for backend in [Backend::Headless, Backend::Tmux] {
            assert_eq!(backend.as_str().parse::<Backend>(), Ok(backend));
        }
        assert!("screen".parse::<Backend>().unwrap_err().contains("screen"));
    }

    #[test]
    fn explicit_backends_resolve_as_asked() {
        let mut cfg = WorkersConfig {
            backend: WorkerBackend::Headless,
            ..WorkersConfig::default()
        };
        assert_eq!(Backend::resolve(&cfg), Backend::Headless);
        cfg.backend = WorkerBackend::Tmux;
        assert_eq!(Backend::resolve(&cfg), Backend::Tmux);
        cfg.backend = WorkerBackend::Auto;
        let expected = if tmux::available() {
            Backend::Tmux
        } else {
            Backend::Headless
        };
        assert_eq!(Backend::resolve(&cfg), expected);
    }
}
