//! # The Matrix bridge
//!
//! Relays asks (cards with numbered options and the bot's own 1️⃣ 2️⃣ … reactions),
//! reports and status to one Matrix room, one thread (`m.thread`) per Pi session, and
//! carries answers (a reply in the thread, or a reaction on the card), steers and `!`
//! commands back to the core. Built on matrix-sdk with its SQLite state and crypto store,
//! so encrypted rooms work and a restart keeps the same device ([`session`]). The bot
//! syncs once before it registers any handler, so history is never answered; then it
//! syncs until shutdown, its handlers forwarding events to one actor, a [`Relay`] over
//! [`bridge::Matrix`] (threads, posts, cards), that also receives the core's events; the
//! room's events are read in [`room`]. Decisions are pure ([`decide`]); sends go through
//! the bridge's outbox ([`outbox`]: in order, paced, off the actor) and are retried with
//! rate limits waited out ([`send`]); the bridge's own mapping of events to asks and
//! sessions is in `bridge.db` ([`store`]).

pub mod bridge;
pub mod decide;
pub mod events;
mod media;
pub mod outbox;
pub mod room;
pub mod send;
pub mod session;
pub mod store;

use std::path::PathBuf;
use std::time::Duration;

use matrix_sdk::config::SyncSettings;
use matrix_sdk::ruma::api::client::filter::FilterDefinition;
use matrix_sdk::ruma::api::error::ErrorKind;
use shepherd_core::config::{ConfigError, MatrixConfig, read_secret};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::chat::access::Allowlist;
use crate::core_link::{self, CoreEvent, CoreLink};
use crate::relay::Relay;
use session::NetworkError;

/// Why the Matrix bridge cannot run.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    #[error(
        "matrix.homeserver is missing: set it to your homeserver's URL (https://matrix.example.org)"
    )]
    NoHomeserver,
    #[error("matrix.user_id is missing: set it to the bot's Matrix id (@shepherd:example.org)")]
    NoUserId,
    #[error(
        "matrix.allowed_users is empty, so nobody could use the bot: add your Matrix id (@you:example.org)"
    )]
    NoAllowedUsers,
    #[error(
        "no Matrix credentials: set SHEPHERD_MATRIX_PASSWORD (or matrix.password_file) for the first login, \
         or SHEPHERD_MATRIX_ACCESS_TOKEN (or matrix.access_token_file)"
    )]
    NoCredentials,
    #[error("matrix.{what} {value:?} is not valid")]
    BadId { what: &'static str, value: String },
    #[error("another bridge serves this Matrix user: {0}")]
    AlreadyServed(String),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot use the homeserver {url}: {reason} (check matrix.homeserver)")]
    Homeserver { url: String, reason: String },
    #[error("matrix login: {0}")]
    Login(String),
    #[error(
        "the saved Matrix session was rejected by the homeserver (logged out or device deleted): \
         delete {0} to log in again as a new device"
    )]
    SessionRevoked(PathBuf),
    #[error("the saved Matrix session {path} is unusable: {reason}")]
    BadSession { path: PathBuf, reason: String },
    #[error("matrix room: {0}")]
    Room(String),
    #[error("cannot use the bridge state {path}: {source}")]
    State {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open the bridge state {path}: {source}")]
    Store {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(transparent)]
    Open(#[from] crate::local_db::OpenError),
    #[error("shutting down")]
    Shutdown,
}

/// Check the configuration before anything starts.
pub fn validate(config: &MatrixConfig) -> Result<(), MatrixError> {
    let set = |v: &Option<String>| v.as_deref().is_some_and(|v| !v.trim().is_empty());
    if !set(&config.homeserver) {
        return Err(MatrixError::NoHomeserver);
    }
    if !set(&config.user_id) {
        return Err(MatrixError::NoUserId);
    }
    session::parse_user(config.user_id.as_deref().unwrap_or_default().trim())?;
    if config.allowed_users.is_empty() {
        return Err(MatrixError::NoAllowedUsers);
    }
    for user in &config.allowed_users {
        session::parse_user(user)?;
    }
    let password = read_secret(&config.password, &config.password_file)?;
    let token = read_secret(&config.access_token, &config.access_token_file)?;
    if password.is_none() && token.is_none() {
        return Err(MatrixError::NoCredentials);
    }
    Ok(())
}

/// Run the bridge until `shutdown`: log in (or restore the session), sync once, find the
/// room, then relay between the room and the core at `socket`, keeping state under
/// `state_dir/matrix/`.
pub async fn run(
    config: MatrixConfig,
    phone: shepherd_core::config::PhoneConfig,
    socket: PathBuf,
    state_dir: PathBuf,
    shutdown: CancellationToken,
) -> Result<(), MatrixError> {
    match run_inner(config, phone, socket, state_dir, shutdown).await {
        Err(MatrixError::Shutdown) => Ok(()),
        other => other,
    }
}

/// The first sync, retried with backoff until it succeeds (true) or shepherd shuts down
/// (false); a revoked session is an error.
async fn first_sync(
    client: &matrix_sdk::Client,
    settings: &SyncSettings,
    paths: &session::Paths,
    shutdown: &CancellationToken,
) -> Result<bool, MatrixError> {
    let mut backoff = Duration::from_millis(500);
    loop {
        let result = tokio::select! {
            _ = shutdown.cancelled() => return Ok(false),
            // No long poll: with a saved token the server would otherwise hold this sync
            // up to 30 s and count whatever arrives meanwhile as history.
            r = client.sync_once(settings.clone().timeout(Duration::ZERO)) => r,
        };
        match result {
            Ok(_) => return Ok(true),
            Err(e) if matches!(e.client_api_error_kind(), Some(ErrorKind::UnknownToken(_))) => {
                return Err(MatrixError::SessionRevoked(paths.session.clone()));
            }
            Err(e) => {
                let level_network = e.is_network();
                tracing::warn!(error = %e, network = level_network, "matrix: first sync failed; retrying");
                tokio::select! {
                    _ = shutdown.cancelled() => return Ok(false),
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
        }
    }
}

async fn run_inner(
    config: MatrixConfig,
    phone: shepherd_core::config::PhoneConfig,
    socket: PathBuf,
    state_dir: PathBuf,
    shutdown: CancellationToken,
) -> Result<(), MatrixError> {
    validate(&config)?;
    let paths = session::Paths::new(&state_dir);
    let client = session::connect(&config, &paths, &shutdown).await?;
    let store = store::MatrixStore::open(&paths.bridge_db)?;

    // One sync before any handler exists: what happened before now is never answered.
    // The sync token is kept in matrix-sdk's store, so this continues where the last run
    // stopped.
    let filter = FilterDefinition::with_lazy_loading();
    let settings = SyncSettings::default().filter(filter.into());
    if !first_sync(&client, &settings, &paths, &shutdown).await? {
        return Ok(()); // Shut down meanwhile.
    }
    let created = store.meta("room_id").ok().flatten();
    let (room, new) = session::room(&client, &config, created).await?;
    if new && let Err(source) = store.set_meta("room_id", room.room_id().as_str()) {
        return Err(MatrixError::Store {
            path: paths.bridge_db.clone(),
            source,
        });
    }
    let me = client
        .user_id()
        .map(ToString::to_string)
        .unwrap_or_default();
    tracing::info!(user = %me, room = %room.room_id(), "matrix bridge started");

    // Claim the bot's user with the core before syncing: two bridges syncing one user
    // would both answer every command.
    let (core_tx, mut core_rx) = mpsc::channel(1024);
    tokio::spawn(core_link::forward_events(
        socket.clone(),
        "matrix".into(),
        format!("matrix:{me}"),
        core_tx,
        shutdown.clone(),
    ));
    let Some(connected) = core_link::first_contact(&mut core_rx)
        .await
        .map_err(MatrixError::AlreadyServed)?
    else {
        return Ok(());
    };

    let (matrix_tx, mut matrix_rx) = mpsc::channel(1024);
    events::register(&client, matrix_tx);
    let sync_task = tokio::spawn(sync_forever(
        client.clone(),
        settings,
        paths.session.clone(),
        shutdown.clone(),
    ));

    let allow = Allowlist::new(
        config.allowed_users.iter().map(|u| u.trim().to_string()),
        [room.room_id().to_string()],
    )
    .chat_noun("room");
    let matrix = bridge::Matrix {
        client,
        outbox: outbox::spawn(room.clone(), shutdown.clone()),
        room,
        me,
        store,
        allow,
        latest: Default::default(),
        places: config.threads,
        shutdown: shutdown.clone(),
    };
    let core = CoreLink::new(&socket, "matrix");
    let mut bridge = Relay::new(matrix, core, state_dir.join("audit.log"), phone);
    bridge.on_core(connected).await;
    let mut sync_task = sync_task;
    let result = loop {
        tokio::select! {
            _ = shutdown.cancelled() => break Ok(()),
            Some(event) = core_rx.recv() => match event {
                CoreEvent::Refused(why) => break Err(MatrixError::AlreadyServed(why)),
                event => bridge.on_core(event).await,
            },
            Some(event) = matrix_rx.recv() => bridge.on_matrix(event).await,
            done = &mut sync_task => break match done {
                Ok(r) => r,
                Err(e) => Err(MatrixError::Login(format!("the sync task failed: {e}"))),
            },
        }
    };
    tracing::info!("matrix bridge shut down");
    result
}

/// Sync until shutdown; errors are retried with backoff, except a revoked session.
async fn sync_forever(
    client: matrix_sdk::Client,
    settings: SyncSettings,
    session_file: PathBuf,
    shutdown: CancellationToken,
) -> Result<(), MatrixError> {
    let settings = settings.timeout(Duration::from_secs(30));
    let mut backoff = Duration::from_millis(500);
    loop {
        let result = tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            r = client.sync(settings.clone()) => r,
        };
        match result {
            Ok(()) => return Ok(()),
            Err(e) if matches!(e.client_api_error_kind(), Some(ErrorKind::UnknownToken(_))) => {
                return Err(MatrixError::SessionRevoked(session_file));
            }
            Err(e) => {
                tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "matrix: sync failed; retrying");
                tokio::select! {
                    _ = shutdown.cancelled() => return Ok(()),
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> MatrixConfig {
        MatrixConfig {
            homeserver: Some("http://127.0.0.1:8008".into()),
            user_id: Some("@bot:localhost".into()),
            password: Some("secret".into()),
            allowed_users: vec!["@ada:localhost".into()],
            ..Default::default()
        }
    }

    #[test]
    fn validation_says_what_to_set() {
        assert!(validate(&config()).is_ok());
        let mut c = config();
        c.homeserver = None;
        assert!(matches!(validate(&c), Err(MatrixError::NoHomeserver)));
        let mut c = config();
        c.user_id = Some("bot".into());
        assert!(matches!(validate(&c), Err(MatrixError::BadId { .. })));
        let mut c = config();
        c.allowed_users.clear();
        assert!(matches!(validate(&c), Err(MatrixError::NoAllowedUsers)));
        let mut c = config();
        c.password = None;
        let e = validate(&c).unwrap_err();
        assert!(e.to_string().contains("SHEPHERD_MATRIX_PASSWORD"), "{e}");
        c.access_token = Some("tok".into());
        assert!(validate(&c).is_ok());
    }
}
