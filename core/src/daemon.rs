//! # The daemon (`shepherd up`)
//!
//! Start-up in a fixed order: make the private state directory, take the state
//! directory's lock (a second core on the same state refuses, naming the running pid),
//! open and migrate the database, start the hub, bind the socket, accept. Shutdown
//! (Ctrl-C, SIGTERM, or the socket or database file removed or replaced under the core:
//! [`crate::watch`]) runs it backwards: stop accepting, close connections, let the hub
//! commit what it has, remove the socket if it is still this core's.

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::clock::now_ms;
use crate::config::{Config, ConfigError};
use crate::files;
use crate::framing::FrameBudget;
use crate::hub::{self, CoreFacts, HubCommand, HubHandle};
use crate::server::{self, ConnSettings, ServerError};
use crate::store::{Checkpointer, Store, StoreError};

/// Why the core could not start.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(
        "shepherd is already running (pid {pid}) on {state_dir}; stop it first, or use another state dir (SHEPHERD_STATE_DIR)"
    )]
    AlreadyRunning { pid: String, state_dir: PathBuf },
    #[error("cannot use lock file {path}: {source}")]
    Lock {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open the database {path} (to make it private, 0600): {source}")]
    DatabaseFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open the database {path}: {source}")]
    Store { path: PathBuf, source: StoreError },
    #[error(transparent)]
    Server(#[from] ServerError),
}

impl DaemonError {
    /// The message, and what to do when the disk is the cause: a full disk, or a file that
    /// would pass this process's file-size limit (`ulimit -f`).
    pub fn explained(&self) -> String {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(e) = cause {
            let io = e.downcast_ref::<std::io::Error>().map(std::io::Error::kind);
            let sqlite = e
                .downcast_ref::<rusqlite::Error>()
                .and_then(rusqlite::Error::sqlite_error_code);
            if io == Some(std::io::ErrorKind::StorageFull)
                || sqlite == Some(rusqlite::ErrorCode::DiskFull)
            {
                return format!("{self}: free space on that disk, then start the core again");
            }
            if io == Some(std::io::ErrorKind::FileTooLarge) {
                return format!(
                    "{self}: a file reached this process's file-size limit (`ulimit -f`): start the core without it"
                );
            }
            cause = e.source();
        }
        self.to_string()
    }
}

/// A started core.
pub struct Running {
    pub socket: PathBuf,
    pub state_dir: PathBuf,
    shutdown: CancellationToken,
    tracker: TaskTracker,
    hub: HubHandle,
    hub_task: tokio::task::JoinHandle<()>,
    checkpointer: Checkpointer,
    /// The socket and database paths, watched ([`crate::watch`]); `None` when inotify
    /// could not start (logged).
    watch: Option<crate::watch::Watch>,
    _lock: File,
}

/// Start the core and return once it accepts connections.
pub async fn start(config: Config) -> Result<Running, DaemonError> {
    // First: the lock file, the database's migrations and every later write past
    // `ulimit -f` fail rather than end the process.
    survive_file_size_limit();
    let state_dir = config.state_dir()?;
    let socket = config.socket_path()?;
    files::private_dir(&state_dir).map_err(server::ServerError::from)?;
    let lock = lock_state_dir(&state_dir)?;
    // Finding where workers run may run `tmux -V` (workers.backend = "auto", ~5 ms): let it
    // run while the database opens.
    let host = tokio::task::spawn_blocking({
        let (config, state_dir, socket) = (config.clone(), state_dir.clone(), socket.clone());
        move || worker_host(&config, &state_dir, &socket)
    });

    let db_path = state_dir.join("shepherd.db");
    crate::files::private_database(&db_path).map_err(|source| DaemonError::DatabaseFile {
        path: db_path.clone(),
        source,
    })?;
    let store =
        Store::open(&db_path, config.core.durability).map_err(|source| DaemonError::Store {
            path: db_path.clone(),
            source,
        })?;
    let store_id = store.store_id.clone();
    let limits = config.core.limits.clone();
    let facts = CoreFacts {
        started_at: now_ms(),
        state_dir: state_dir.clone(),
        socket: socket.clone(),
        limits: limits.clone(),
        supervise: config.core.supervise.clone(),
        results: config.core.results,
        workers: host.await.unwrap_or_else(|e| {
            tracing::warn!("managed workers are unavailable: finding their backend failed: {e}");
            None
        }),
        ask_card_after_secs: config.workers.ask_card_after_secs,
        max_workers_per_owner: config.workers.max_per_owner,
        max_live_workers: config.workers.max_live,
        integrate: config.projects.integrate,
        project_roots: config.projects.expanded_roots(),
        forget_sessions_after_days: config.core.forget_sessions_after_days,
        away_expiry_ms: config.roles.away_expiry_ms(),
        hosts: config.hosts.clone(),
        approvals: config.approvals.clone(),
        approvals_origin: config.approvals_origin(),
        approvals_layer: std::sync::Arc::new(crate::approvals::Layer::user(
            &config.approvals,
            &config.approvals_origin(),
        )),
        max_file_bytes: config.phone.max_file_bytes(),
    };
    let checkpointer = Checkpointer::spawn(&db_path);
    store.on_commit(checkpointer.waker());
    let (hub, hub_task) = hub::spawn(store, facts);

    let listener = server::bind(&socket, &state_dir).await?;
    crate::approvals::write_summary(&socket, &config.approvals);
    let settings = Arc::new(ConnSettings {
        store_id,
        max_frame: limits.max_frame_bytes,
        max_file_frame: config.phone.max_file_frame(),
        max_outbound: limits.max_outbound_frames,
        max_outbound_bytes: limits.max_outbound_bytes,
        hello_timeout: Duration::from_millis(config.core.hello_timeout_ms),
        frame_timeout: Duration::from_millis(limits.frame_timeout_ms),
        frame_budget: FrameBudget::new(
            limits
                .max_unfinished_frame_bytes
                .max(limits.max_frame_bytes)
                .max(config.phone.max_file_frame()),
        ),
        uid: files::own_uid(),
    });
    let max_open = server::connection_cap();
    warn_if_few_connections(max_open, limits.max_sessions);
    let shutdown = CancellationToken::new();
    let tracker = TaskTracker::new();
    tracker.spawn(server::serve(
        listener,
        hub.clone(),
        settings,
        shutdown.clone(),
        tracker.clone(),
        max_open,
    ));
    let watch = watch_files(&socket, &db_path);
    tracing::info!(socket = %socket.display(), state_dir = %state_dir.display(), pid = std::process::id(), "shepherd core accepting connections");
    Ok(Running {
        socket,
        state_dir,
        shutdown,
        tracker,
        hub,
        hub_task,
        checkpointer,
        watch,
        _lock: lock,
    })
}

impl Running {
    /// Serve until Ctrl-C or SIGTERM, or until the socket or the database file is removed,
    /// moved or replaced under the core ([`crate::watch`]); then call [`Running::stop`].
    pub async fn until_stopped(&mut self) {
        let lost = async {
            match &mut self.watch {
                Some(watch) => watch.lost().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = wait_for_signal() => {}
            why = lost => tracing::warn!(
                "stopping: {why}; the sessions wait for the next core, which starts on what is there now"
            ),
        }
    }

    /// Stop accepting, close every connection, let the hub finish, remove the socket.
    pub async fn stop(self) {
        // First, so that the sessions dropped below are not announced as endings.
        self.hub.send(HubCommand::Stopping).await;
        self.shutdown.cancel();
        self.tracker.close();
        if tokio::time::timeout(Duration::from_secs(5), self.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("some connections did not close within 5 s");
        }
        self.hub.send(HubCommand::Shutdown).await;
        drop(self.hub);
        let _ = self.hub_task.await;
        let checkpointer = self.checkpointer;
        let _ = tokio::task::spawn_blocking(move || checkpointer.stop()).await;
        // Only this core's own socket: another core may have bound the path since.
        let ours = self
            .watch
            .as_ref()
            .is_none_or(|w| w.still_holds(&self.socket));
        if ours {
            let _ = std::fs::remove_file(&self.socket);
        }
        tracing::info!("stopped");
    }
}

/// Take `<state_dir>/shepherd.lock` and write our pid into it.
fn lock_state_dir(state_dir: &std::path::Path) -> Result<File, DaemonError> {
    let path = state_dir.join("shepherd.lock");
    let err = |source| DaemonError::Lock {
        path: path.clone(),
        source,
    };
    let mut file = crate::files::open_private(&path).map_err(err)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut pid = String::new();
            let _ = file.read_to_string(&mut pid);
            let pid = pid.trim();
            return Err(DaemonError::AlreadyRunning {
                pid: if pid.is_empty() {
                    "unknown".into()
                } else {
                    pid.to_string()
                },
                state_dir: state_dir.to_path_buf(),
            });
        }
        Err(TryLockError::Error(e)) => return Err(err(e)),
    }
    file.set_len(0).map_err(err)?;
    file.rewind().map_err(err)?;
    writeln!(file, "{}", std::process::id()).map_err(err)?;
    file.flush().map_err(err)?;
    Ok(file)
}

/// Say so when the open-file limit allows fewer connections than sessions are allowed.
fn warn_if_few_connections(max_open: usize, max_sessions: usize) {
    if max_open < max_sessions {
        tracing::warn!(
            max_open,
            max_sessions,
            "the open-file limit (ulimit -n) allows fewer connections than core.limits.max_sessions; raise it to serve that many sessions"
        );
    }
}

/// Watch the socket and database paths ([`crate::watch`]); `None` (logged) when inotify
/// cannot start.
fn watch_files(socket: &std::path::Path, db: &std::path::Path) -> Option<crate::watch::Watch> {
    match crate::watch::Watch::start(&[(socket, "the socket"), (db, "the database")]) {
        Ok(watch) => Some(watch),
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch the socket and database files: a core whose state directory is deleted goes on serving the sessions it has");
            None
        }
    }
}

/// A write past the core's file-size limit (`ulimit -f`) raises SIGXFSZ, whose default is
/// to kill the process. Listened for instead, the write fails (EFBIG): the store refuses
/// the batch as it does on a full disk, nothing accepted is lost, and the core keeps
/// serving until the limit is raised. Logged at most once a minute.
fn survive_file_size_limit() {
    use tokio::signal::unix::{SignalKind, signal};
    let xfsz = SignalKind::from_raw(rustix::process::Signal::XFSZ.as_raw());
    let mut raised = match signal(xfsz) {
        Ok(raised) => raised,
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGXFSZ: a file past `ulimit -f` ends the core");
            return;
        }
    };
    tokio::spawn(async move {
        let mut told: Option<std::time::Instant> = None;
        while raised.recv().await.is_some() {
            if told.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                told = Some(std::time::Instant::now());
                tracing::error!(
                    "a file reached this process's file-size limit (`ulimit -f`): writes past it fail until the limit is raised (`prlimit --pid {} --fsize=unlimited`) or the core restarts without it",
                    std::process::id()
                );
            }
        }
    });
}

/// Wait for Ctrl-C or SIGTERM.
pub async fn wait_for_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGTERM; only Ctrl-C stops the core");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// How this core launches managed workers (`[workers]`); `None` (logged) when the
/// extension's place cannot be found, and delegating is then refused with the reason.
fn worker_host(
    config: &crate::config::Config,
    state_dir: &std::path::Path,
    socket: &std::path::Path,
) -> Option<crate::workers::host::HostConfig> {
    let extension = match config.worker_extension() {
        Ok(path) => path,
        Err(e) => {
            tracing::warn!("managed workers are unavailable: {e}");
            return None;
        }
    };
    Some(crate::workers::host::HostConfig {
        backend: crate::workers::host::Backend::resolve(&config.workers),
        pi: config.workers.pi.clone(),
        extension,
        state_dir: state_dir.to_path_buf(),
        socket: socket.to_path_buf(),
        extra_env: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A start-up that failed for want of disk says what to do, whichever layer saw it.
    #[test]
    fn a_full_disk_at_start_says_to_free_space() {
        let lock = DaemonError::Lock {
            path: PathBuf::from("/state/shepherd.lock"),
            source: std::io::Error::from_raw_os_error(28),
        };
        assert!(
            lock.explained()
                .ends_with(": free space on that disk, then start the core again"),
            "{}",
            lock.explained()
        );
        let full = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        );
        let store = DaemonError::Store {
            path: PathBuf::from("/state/shepherd.db"),
            source: StoreError::Sqlite(full),
        };
        assert!(
            store
                .explained()
                .starts_with("cannot open the database /state/shepherd.db: ")
                && store.explained().ends_with("then start the core again"),
            "{}",
            store.explained()
        );
        let other = DaemonError::Lock {
            path: PathBuf::from("/state/shepherd.lock"),
            source: std::io::Error::from_raw_os_error(13),
        };
        assert_eq!(other.explained(), other.to_string());
    }
}
