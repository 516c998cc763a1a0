//! # The socket server
//!
//! Binds the intercom socket safely (0600 socket; a directory shepherd creates, and its
//! own state directory, are made 0700; any other directory is used as it is unless others
//! could replace files in it; only a socket nothing answers on is removed as stale),
//! accepts connections, refuses peers with another uid (SO_PEERCRED) and runs one [`conn`]
//! task per connection. Every connection reads its `hello` at once; [`greeting`] bounds
//! how many may be silent (the oldest makes room), and the open-file limit bounds how many
//! may be open ([`connection_cap`]). Shutdown is a `CancellationToken`; every connection
//! task is tracked so the daemon can wait for them.

mod conn;
mod greeting;

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::net::UnixListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::files::{create_private, private_dir, shared_ok};
use crate::framing::FrameBudget;
use crate::hub::HubHandle;
use crate::protocol::{ErrorCode, ServerMsg, frame};
use greeting::Greeters;

/// Why the socket could not be served.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(
        "another shepherd core is already answering on {path}; stop it, or give this one another socket (SHEPHERD_SOCKET)"
    )]
    InUse { path: PathBuf },
    #[error(
        "{path} is not a socket; shepherd will not remove it: move it away, or choose another socket path (SHEPHERD_SOCKET)"
    )]
    NotASocket { path: PathBuf },
    #[error(transparent)]
    Private(#[from] crate::files::DirError),
    #[error("cannot listen on {path}: {source}")]
    Bind {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What every connection task needs to know.
pub struct ConnSettings {
    pub store_id: String,
    pub max_frame: usize,
    /// The frame limit of the human's clients and linked cores, who may send a file from
    /// the phone (`send_file`, up to `phone.max_file_mb`): at least `max_frame`.
    pub max_file_frame: usize,
    pub max_outbound: usize,
    /// Bytes queued for one client before its deliveries wait in the store and anything
    /// else closes it as a slow consumer (`core.limits.max_outbound_bytes`).
    pub max_outbound_bytes: usize,
    pub hello_timeout: Duration,
    /// How long a frame may take to arrive once its first byte has
    /// (`core.limits.frame_timeout_ms`).
    pub frame_timeout: Duration,
    /// Bytes that frames still arriving may hold, across every connection
    /// (`core.limits.max_unfinished_frame_bytes`).
    pub frame_budget: FrameBudget,
    pub uid: u32,
}

/// Most connections reading their `hello` at once: when one more is accepted, the oldest
/// of them is closed (`hello_timeout`) to make room. A peer that opens many and never says
/// hello holds at most this many buffers of at most [`MAX_HELLO_FRAME`] bytes, and a
/// client that says hello as it connects is answered however many stay silent. Large
/// enough that a burst of sessions reconnecting after a restart fits; a connection whose
/// hello is already in its socket buffer when it is told to leave is still welcomed.
pub const MAX_GREETING: usize = 256;

/// File descriptors kept for everything but connections (the database and its WAL, the
/// log, git discovery, session files, workers' pipes, and connections told to make room
/// that have not closed yet) when [`connection_cap`] is derived from the open-file limit.
const RESERVED_FDS: u64 = 256;

/// Largest frame before `hello` is answered (a hello is well under 1 KiB).
pub const MAX_HELLO_FRAME: usize = 16 * 1024;

/// Make the socket's directory ready: the state directory is already private; a
/// directory that does not exist yet is created 0700; any other is left as it is (see
/// [`shared_ok`]).
fn socket_dir(dir: &Path, state_dir: &Path) -> Result<(), ServerError> {
    if dir == state_dir {
        return Ok(private_dir(dir)?);
    }
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(create_private(dir)?);
    }
    Ok(shared_ok(dir)?)
}

/// Bind the socket at `path` with mode 0600. Something already at `path` is removed only
/// when it is a socket that nothing answers on (an earlier core's).
pub async fn bind(path: &Path, state_dir: &Path) -> Result<UnixListener, ServerError> {
    if let Some(dir) = path.parent() {
        socket_dir(dir, state_dir)?;
    }
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(ServerError::NotASocket {
                path: path.to_path_buf(),
            });
        }
        if tokio::net::UnixStream::connect(path).await.is_ok() {
            return Err(ServerError::InUse {
                path: path.to_path_buf(),
            });
        }
        tracing::info!(socket = %path.display(), "removing a stale socket left by an earlier core");
        let _ = std::fs::remove_file(path);
    }
    let bind_err = |source| ServerError::Bind {
        path: path.to_path_buf(),
        source,
    };
    let listener = UnixListener::bind(path).map_err(bind_err)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(bind_err)?;
    Ok(listener)
}

/// Most connections open at once: the process's open-file limit (`ulimit -n`, soft) less
/// [`RESERVED_FDS`], and never fewer than [`MAX_GREETING`]. The soft limit is raised to
/// the hard one first (as far as the system allows), since the common soft default (1024)
/// is less than `core.limits.max_sessions`.
pub fn connection_cap() -> usize {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if let (Some(soft), Some(hard)) = (limit.current, limit.maximum)
        && soft < hard
    {
        let raised = Rlimit {
            current: Some(hard),
            maximum: Some(hard),
        };
        match setrlimit(Resource::Nofile, raised) {
            Ok(()) => limit = getrlimit(Resource::Nofile),
            Err(e) => tracing::debug!(error = %e, "cannot raise the open-file limit"),
        }
    }
    match limit.current {
        Some(soft) => usize::try_from(soft.saturating_sub(RESERVED_FDS))
            .unwrap_or(usize::MAX)
            .max(MAX_GREETING),
        None => usize::MAX,
    }
}

/// Counts one open connection while it lives.
pub(crate) struct Open(Arc<AtomicUsize>);

impl Open {
    fn new(count: &Arc<AtomicUsize>) -> Open {
        count.fetch_add(1, Ordering::AcqRel);
        Open(count.clone())
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Accept connections until `shutdown` fires. At most `max_open` are open: beyond it the
/// oldest connection still greeting is closed to make room, and when every open
/// connection has said hello the newcomer is refused (`limit_exceeded`).
pub async fn serve(
    listener: UnixListener,
    hub: HubHandle,
    settings: Arc<ConnSettings>,
    shutdown: CancellationToken,
    tracker: TaskTracker,
    max_open: usize,
) {
    let next_conn = AtomicU64::new(1);
    let open = Arc::new(AtomicUsize::new(0));
    let mut greeters = Greeters::new(MAX_GREETING);
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors and the like: log, breathe, keep serving.
                tracing::error!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let cred = match stream.peer_cred() {
            Ok(cred) => cred,
            Err(e) => {
                tracing::warn!(error = %e, "refused a connection whose peer credentials cannot be read");
                continue;
            }
        };
        if cred.uid() != settings.uid {
            tracing::warn!(peer_uid = cred.uid(), peer_pid = ?cred.pid(), "refused a connection from another user");
            continue;
        }
        if open.load(Ordering::Acquire) >= max_open && !greeters.evict_oldest() {
            refuse_full(&stream, max_open);
            continue;
        }
        let id = next_conn.fetch_add(1, Ordering::Relaxed);
        let pid = cred.pid().and_then(|p| u32::try_from(p).ok());
        let place = greeters.admit();
        tracker.spawn(conn::run(
            conn::Accepted {
                id,
                stream,
                pid,
                place,
                open: Open::new(&open),
            },
            hub.clone(),
            settings.clone(),
            shutdown.clone(),
        ));
    }
}

/// Tell a connection there is no room for it (every one of `max_open` has said hello),
/// without waiting on it: the error goes into the empty socket buffer, then it is closed.
fn refuse_full(stream: &tokio::net::UnixStream, max_open: usize) {
    tracing::warn!(
        max_open,
        "refused a connection: every place is taken by a greeted client"
    );
    let msg = format!(
        "the core has {max_open} connections open, all it can hold under its open-file limit (ulimit -n); close some clients or raise the limit, then reconnect"
    );
    let refusal = ServerMsg::Error {
        id: None,
        code: ErrorCode::LimitExceeded,
        message: msg,
        details: Some(serde_json::json!({ "limit": "connections", "max": max_open })),
    };
    let _ = stream.try_write(&frame::encode(&refusal));
}
