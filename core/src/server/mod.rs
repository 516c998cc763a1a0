//! # The socket server
//!
//! Binds the intercom socket safely (0700 directory, 0600 socket, a stale socket file
//! removed only when nothing answers on it), accepts connections, refuses peers with
//! another uid (SO_PEERCRED) and runs one [`conn`] task per connection. Shutdown is a
//! `CancellationToken`; every connection task is tracked so the daemon can wait for them.

mod conn;

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::net::UnixListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::hub::HubHandle;

/// Why the socket could not be served.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot create socket directory {path}: {source}")]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "socket directory {path} belongs to uid {owner}, not to you (uid {me}); choose another with SHEPHERD_SOCKET"
    )]
    NotOwner { path: PathBuf, owner: u32, me: u32 },
    #[error(
        "another shepherd core is already answering on {path}; stop it, or give this one another socket (SHEPHERD_SOCKET)"
    )]
    InUse { path: PathBuf },
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
    pub max_outbound: usize,
    pub hello_timeout: Duration,
    pub uid: u32,
}

/// The uid this process runs as.
pub fn own_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// Make `dir` exist as a private (0700) directory of ours.
pub fn private_dir(dir: &Path) -> Result<(), ServerError> {
    let err = |source| ServerError::Dir {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(err)?;
    let meta = std::fs::metadata(dir).map_err(err)?;
    let me = own_uid();
    if meta.uid() != me {
        return Err(ServerError::NotOwner {
            path: dir.to_path_buf(),
            owner: meta.uid(),
            me,
        });
    }
    if meta.mode() & 0o777 != 0o700 {
        tracing::warn!(dir = %dir.display(), mode = format!("{:o}", meta.mode() & 0o777), "socket directory was not private; setting it to 0700");
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(err)?;
    }
    Ok(())
}

/// Bind the socket at `path` with mode 0600.
pub async fn bind(path: &Path) -> Result<UnixListener, ServerError> {
    if let Some(dir) = path.parent() {
        private_dir(dir)?;
    }
    if path.exists() {
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

/// Accept connections until `shutdown` fires.
pub async fn serve(
    listener: UnixListener,
    hub: HubHandle,
    settings: Arc<ConnSettings>,
    shutdown: CancellationToken,
    tracker: TaskTracker,
) {
    let next_conn = AtomicU64::new(1);
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
        let id = next_conn.fetch_add(1, Ordering::Relaxed);
        let pid = cred.pid().and_then(|p| u32::try_from(p).ok());
        tracker.spawn(conn::run(
            id,
            stream,
            pid,
            hub.clone(),
            settings.clone(),
            shutdown.clone(),
        ));
    }
}
