//! # shepherd-bridges
//!
//! The phone side of shepherd: chat bridges that relay what needs a human (asks, reports,
//! status) to a chat and carry answers, steers and commands back. Each bridge is just
//! another client of the core's socket (client kind `bridge`); `shepherd up` runs the
//! configured bridges in the core's process, on the same code path.
//!
//! # Layout
//!
//! - [`chat`]: what the bridges share, independent of any platform: what an ask card, a
//!   report or a status says, HTML rendering and escaping, splitting long text at safe
//!   boundaries, command parsing, and who may speak.
//! - [`core_link`]: the bridge side of the intercom: events (subscribed, reconnecting)
//!   and one method per request to the core.
//! - [`relay`]: one bridge's state and behaviour for any platform (`Relay<P: Platform>`):
//!   the core's events rendered once for every phone, resync, command answering,
//!   pairings, answers and steers.
//! - [`local_db`]: a bridge's own SQLite file: private, with append-only migrations.
//! - [`outbox`]: the actor every send goes through (order, pacing, coalesced edits).
//! - `telegram`: the Telegram platform (teloxide): topics, buttons, polling. Cargo
//!   feature `telegram`.
//! - `matrix`: the Matrix platform (matrix-sdk): threads, reactions, encrypted rooms.
//!   Cargo feature `matrix`.
//! - [`compiled`]: which of the two this build carries (both by default), and the refusal
//!   of a configured bridge that is compiled out.

// matrix-sdk's futures are deep: proving them `Send` for `tokio::spawn` needs more than
// the default recursion limit (128).
#![recursion_limit = "256"]

pub mod chat;
pub mod compiled;
pub mod core_link;
pub mod local_db;
#[cfg(feature = "matrix")]
pub mod matrix;
pub mod outbox;
pub mod relay;
#[cfg(feature = "telegram")]
pub mod telegram;

use std::path::Path;

pub use compiled::{BridgeKind, Compiled, compiled_out};
use shepherd_core::config::Config;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Why a configured bridge cannot start.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[cfg(feature = "telegram")]
    #[error("[telegram]: {0}")]
    Telegram(#[from] telegram::TelegramError),
    #[cfg(feature = "matrix")]
    #[error("[matrix]: {0}")]
    Matrix(#[from] matrix::MatrixError),
    /// The config asks for a bridge this build does not carry (a cargo feature left out).
    #[error(
        "[{name}]: this shepherd was built without {title} support: rebuild with `cargo build --release --features {name}` (default features include it), or remove the [{name}] section (and {env} from the environment)",
        name = .0.name(),
        title = .0.title(),
        env = .0.env(),
    )]
    NotBuilt(BridgeKind),
}

/// Check every configured bridge's settings, so `shepherd up` refuses a broken
/// configuration before it starts anything: a bridge this build lacks first
/// ([`compiled_out`]), then each bridge's own checks.
pub fn validate(config: &Config) -> Result<(), BridgeError> {
    if let Some(missing) = compiled_out(config, Compiled::THIS_BUILD) {
        return Err(missing);
    }
    #[cfg(feature = "telegram")]
    if let Some(telegram) = &config.telegram {
        telegram::validate(telegram)?;
    }
    #[cfg(feature = "matrix")]
    if let Some(matrix) = &config.matrix {
        matrix::validate(matrix)?;
    }
    Ok(())
}

/// The configured bridges, running as tasks until `shutdown`.
pub struct Bridges {
    tracker: TaskTracker,
    names: Vec<&'static str>,
    /// Why a bridge stopped on its own (one line per bridge, `telegram: …`).
    failures: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl Bridges {
    /// Start every configured bridge against the core at `socket`. A configured bridge
    /// this build lacks (which [`validate`] refuses first) stops at once, saying so in
    /// [`Bridges::all_failed`].
    #[cfg_attr(
        not(any(feature = "telegram", feature = "matrix")),
        allow(unused_variables, unused_mut)
    )]
    pub fn spawn(
        config: &Config,
        socket: &Path,
        state_dir: &Path,
        shutdown: CancellationToken,
    ) -> Bridges {
        let tracker = TaskTracker::new();
        let mut names = Vec::new();
        let (failed, failures) = tokio::sync::mpsc::unbounded_channel();
        for kind in compiled::configured(config) {
            if !Compiled::THIS_BUILD.has(kind) {
                let why = BridgeError::NotBuilt(kind);
                tracing::error!("{} bridge not started: {why}", kind.name());
                let _ = failed.send(why.to_string());
            }
        }
        #[cfg(feature = "telegram")]
        if let Some(telegram) = config.telegram.clone() {
            names.push("telegram");
            let (socket, state_dir) = (socket.to_path_buf(), state_dir.to_path_buf());
            let (shutdown, failed, phone) =
                (shutdown.clone(), failed.clone(), config.phone.clone());
            tracker.spawn(async move {
                if let Err(e) = telegram::run(telegram, phone, socket, state_dir, shutdown).await {
                    tracing::error!("telegram bridge stopped: {e}");
                    let _ = failed.send(format!("telegram: {e}"));
                }
            });
        }
        #[cfg(feature = "matrix")]
        if let Some(matrix) = config.matrix.clone() {
            names.push("matrix");
            let (socket, state_dir) = (socket.to_path_buf(), state_dir.to_path_buf());
            let (shutdown, failed, phone) =
                (shutdown.clone(), failed.clone(), config.phone.clone());
            tracker.spawn(async move {
                if let Err(e) = matrix::run(matrix, phone, socket, state_dir, shutdown).await {
                    tracing::error!("matrix bridge stopped: {e}");
                    let _ = failed.send(format!("matrix: {e}"));
                }
            });
        }
        tracker.close();
        Bridges {
            tracker,
            names,
            failures,
        }
    }

    /// Names of the bridges started.
    pub fn names(&self) -> &[&'static str] {
        &self.names
    }

    /// Wait for every bridge to stop (after `shutdown`).
    pub async fn join(self) {
        self.tracker.wait().await;
    }

    /// Wait until every bridge has stopped on its own (without `shutdown`: each failed),
    /// and say why, one line per bridge.
    pub async fn all_failed(&mut self) -> Vec<String> {
        self.tracker.wait().await;
        let mut why = Vec::new();
        while let Ok(line) = self.failures.try_recv() {
            why.push(line);
        }
        why
    }
}
