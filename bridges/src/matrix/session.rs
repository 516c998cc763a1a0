//! # Logging in once, and the room
//!
//! Everything the Matrix bridge keeps lives in `<state dir>/matrix/` (mode 0700):
//! matrix-sdk's SQLite state and crypto store (`store/`, 0700 with 0600 files, encrypted
//! with a passphrase generated on first start and kept in `store-passphrase`, 0600), the
//! login session
//! (`session.json`, 0600: user id, device id, access token) and the bridge's own
//! `bridge.db`. The first start logs in with the password (or adopts the access token),
//! which creates the bot's device; every later start restores `session.json`, so the
//! device and its encryption keys stay the same. The room is the configured one (joined
//! when needed) or a private, encrypted room the bot creates once and invites the allowed
//! users to.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use matrix_sdk::authentication::matrix::MatrixSession;
use matrix_sdk::ruma::api::client::room::create_room::v3::{Request as CreateRoom, RoomPreset};
use matrix_sdk::ruma::api::error::ErrorKind;
use matrix_sdk::ruma::events::InitialStateEvent;
use matrix_sdk::ruma::events::room::encryption::RoomEncryptionEventContent;
use matrix_sdk::ruma::{OwnedRoomId, OwnedUserId, RoomAliasId, RoomId, RoomOrAliasId, UserId};
use matrix_sdk::{Client, Room, RoomState, SessionMeta, SessionTokens};
use shepherd_core::config::{MatrixConfig, read_secret};
use tokio_util::sync::CancellationToken;

use super::MatrixError;

/// Files under `<state dir>/matrix/`.
pub struct Paths {
    pub dir: PathBuf,
    pub store: PathBuf,
    pub passphrase: PathBuf,
    pub session: PathBuf,
    pub bridge_db: PathBuf,
}

impl Paths {
    pub fn new(state_dir: &Path) -> Paths {
        let dir = state_dir.join("matrix");
        Paths {
            store: dir.join("store"),
            passphrase: dir.join("store-passphrase"),
            session: dir.join("session.json"),
            bridge_db: dir.join("bridge.db"),
            dir,
        }
    }
}

/// Write `bytes` to `path` readable by the owner only, atomically.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// The SQLite databases matrix-sdk (matrix-sdk-sqlite 0.18) keeps in `store/`.
const STORE_DATABASES: [&str; 4] = [
    "matrix-sdk-state.sqlite3",
    "matrix-sdk-crypto.sqlite3",
    "matrix-sdk-event-cache.sqlite3",
    "matrix-sdk-media.sqlite3",
];

/// `dir` (and missing parents) created 0700, or made 0700 when group or others may use
/// it (a symlink is left as it is: it is not ours to change).
fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    if meta.is_dir() && meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Every regular file directly in `dir` that group or others may read made 0600.
fn private_files(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
            std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(())
}

/// Make matrix-sdk's store private before it is opened, whatever the umask: `matrix/` and
/// `store/` 0700 (created so, or tightened), each SQLite database matrix-sdk opens created
/// empty and 0600 first (SQLite gives a database's `-wal` and `-shm` its mode; matrix-sdk
/// would create them 0644), and any file an older version left looser made 0600.
pub fn private_store(paths: &Paths) -> std::io::Result<()> {
    private_dir(&paths.dir)?;
    private_dir(&paths.store)?;
    for name in STORE_DATABASES {
        shepherd_core::files::private_database(&paths.store.join(name))?;
    }
    private_files(&paths.store)
}

/// The store passphrase: read, or generated (32 random bytes, hex) and saved.
fn passphrase(paths: &Paths) -> Result<String, MatrixError> {
    let io = |source| MatrixError::State {
        path: paths.passphrase.clone(),
        source,
    };
    if let Ok(p) = std::fs::read_to_string(&paths.passphrase)
        && !p.trim().is_empty()
    {
        return Ok(p.trim().to_string());
    }
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(io)?;
    let p: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    write_private(&paths.passphrase, p.as_bytes()).map_err(io)?;
    Ok(p)
}

/// A logged-in client: the persisted session restored, or a first login.
pub async fn connect(
    config: &MatrixConfig,
    paths: &Paths,
    shutdown: &CancellationToken,
) -> Result<Client, MatrixError> {
    let homeserver = config.homeserver.clone().unwrap_or_default();
    let user_id = parse_user(config.user_id.as_deref().unwrap_or_default())?;
    private_dir(&paths.dir).map_err(|source| MatrixError::State {
        path: paths.dir.clone(),
        source,
    })?;
    let saved = saved_session(paths, &user_id)?;
    if saved.is_none() && paths.store.exists() {
        // A store without its session belongs to a device we can no longer use: a new
        // login must start from an empty crypto store.
        tracing::warn!(store = %paths.store.display(), "matrix: no session.json; starting a fresh store for the new login");
        let _ = std::fs::remove_dir_all(&paths.store);
    }
    let client = open_client(&homeserver, paths, shutdown).await?;

    if let Some(session) = saved {
        let device = session.meta.device_id.clone();
        client
            .restore_session(session)
            .await
            .map_err(|e| MatrixError::Login(format!("restoring the saved session failed: {e}")))?;
        tracing::info!(user = %user_id, device = %device, "matrix: session restored");
        return Ok(client);
    }

    log_in(&client, config, &user_id, &homeserver, shutdown).await?;
    save_session(&client, paths, &user_id)?;
    Ok(client)
}

/// The login session saved by an earlier start (`session.json`), None on the first start;
/// refused when it is another user's.
fn saved_session(
    paths: &Paths,
    user_id: &OwnedUserId,
) -> Result<Option<MatrixSession>, MatrixError> {
    let saved: Option<MatrixSession> = match std::fs::read_to_string(&paths.session) {
        Ok(text) => Some(
            serde_json::from_str(&text).map_err(|e| MatrixError::BadSession {
                path: paths.session.clone(),
                reason: e.to_string(),
            })?,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(MatrixError::State {
                path: paths.session.clone(),
                source,
            });
        }
    };
    if let Some(s) = &saved
        && s.meta.user_id != *user_id
    {
        return Err(MatrixError::BadSession {
            path: paths.session.clone(),
            reason: format!(
                "it is {}'s session but matrix.user_id is {user_id}; delete {} (and its store/) to log in as {user_id}",
                s.meta.user_id,
                paths.dir.display()
            ),
        });
    }
    Ok(saved)
}

/// The client on the encrypted store (its passphrase made on first use), once the
/// homeserver answers; the store's files made private.
async fn open_client(
    homeserver: &str,
    paths: &Paths,
    shutdown: &CancellationToken,
) -> Result<Client, MatrixError> {
    let passphrase = passphrase(paths)?;
    private_store(paths).map_err(|source| MatrixError::State {
        path: paths.store.clone(),
        source,
    })?;
    let client = retry_network(shutdown, "reach the homeserver", || async {
        Client::builder()
            .homeserver_url(homeserver)
            .sqlite_store(&paths.store, Some(&passphrase))
            .build()
            .await
    })
    .await?
    .map_err(|e| MatrixError::Homeserver {
        url: homeserver.to_string(),
        reason: e.to_string(),
    })?;
    // A file matrix-sdk added that [`STORE_DATABASES`] does not name (a newer version):
    // private too. `store/` is 0700 meanwhile.
    if let Err(e) = private_files(&paths.store) {
        tracing::warn!(store = %paths.store.display(), "matrix: could not make the store's files private: {e}");
    }
    Ok(client)
}

/// The first login: with the password, else by adopting the access token (its device
/// asked of the homeserver); neither configured is [`MatrixError::NoCredentials`].
async fn log_in(
    client: &Client,
    config: &MatrixConfig,
    user_id: &OwnedUserId,
    homeserver: &str,
    shutdown: &CancellationToken,
) -> Result<(), MatrixError> {
    let password = read_secret(&config.password, &config.password_file)?;
    let token = read_secret(&config.access_token, &config.access_token_file)?;
    if let Some(password) = password {
        let login = retry_network(shutdown, "log in", || {
            client
                .matrix_auth()
                .login_username(user_id, &password)
                .initial_device_display_name(&config.device_name)
                .send()
        })
        .await?;
        if let Err(e) = login {
            return Err(match e.client_api_error_kind() {
                Some(ErrorKind::Forbidden) => MatrixError::Login(format!(
                    "the homeserver refused the password for {user_id}: check SHEPHERD_MATRIX_PASSWORD / matrix.password_file"
                )),
                _ => MatrixError::Login(format!("logging in as {user_id} failed: {e}")),
            });
        }
    } else if let Some(token) = token {
        let device = whoami_device(homeserver, user_id, &token).await?;
        let session = MatrixSession {
            meta: SessionMeta {
                user_id: user_id.clone(),
                device_id: device,
            },
            tokens: SessionTokens {
                access_token: token,
                refresh_token: None,
            },
        };
        client
            .restore_session(session)
            .await
            .map_err(|e| MatrixError::Login(format!("using the access token failed: {e}")))?;
    } else {
        return Err(MatrixError::NoCredentials);
    }
    Ok(())
}

/// Keep the new login's session in `session.json` (0600) for every later start.
fn save_session(client: &Client, paths: &Paths, user_id: &OwnedUserId) -> Result<(), MatrixError> {
    let session = client
        .matrix_auth()
        .session()
        .ok_or_else(|| MatrixError::Login("no session after logging in".into()))?;
    let json = serde_json::to_vec_pretty(&session).expect("a session serialises");
    write_private(&paths.session, &json).map_err(|source| MatrixError::State {
        path: paths.session.clone(),
        source,
    })?;
    tracing::info!(user = %user_id, device = %session.meta.device_id, "matrix: logged in; session saved");
    Ok(())
}

/// The device an access token belongs to (`/account/whoami`).
async fn whoami_device(
    homeserver: &str,
    user_id: &OwnedUserId,
    token: &str,
) -> Result<matrix_sdk::ruma::OwnedDeviceId, MatrixError> {
    let probe = Client::builder()
        .homeserver_url(homeserver)
        .build()
        .await
        .map_err(|e| MatrixError::Homeserver {
            url: homeserver.into(),
            reason: e.to_string(),
        })?;
    probe
        .restore_session(MatrixSession {
            meta: SessionMeta {
                user_id: user_id.clone(),
                device_id: "SHEPHERDPROBE".into(),
            },
            tokens: SessionTokens {
                access_token: token.to_string(),
                refresh_token: None,
            },
        })
        .await
        .map_err(|e| MatrixError::Login(e.to_string()))?;
    let who = probe.whoami().await.map_err(|e| {
        MatrixError::Login(format!(
            "the homeserver refused the access token: {e}; check SHEPHERD_MATRIX_ACCESS_TOKEN"
        ))
    })?;
    if who.user_id != *user_id {
        return Err(MatrixError::Login(format!(
            "the access token belongs to {}, not matrix.user_id {user_id}",
            who.user_id
        )));
    }
    who.device_id.ok_or_else(|| {
        MatrixError::Login("the access token has no device; use a password login instead".into())
    })
}

pub fn parse_user(id: &str) -> Result<OwnedUserId, MatrixError> {
    UserId::parse(id).map_err(|_| MatrixError::BadId {
        what: "user id",
        value: id.to_string(),
    })
}

/// The room to use: the configured one (joined if needed), or the one the bot created
/// earlier (`created`, from `bridge.db`), or a new private room with the allowed users
/// invited; and whether it is new (the caller remembers its id).
pub async fn room(
    client: &Client,
    config: &MatrixConfig,
    created: Option<String>,
) -> Result<(Room, bool), MatrixError> {
    if let Some(wanted) = config.room.as_deref().map(str::trim) {
        let id_or_alias = RoomOrAliasId::parse(wanted).map_err(|_| MatrixError::BadId {
            what: "room (an id !… or an alias #…)",
            value: wanted.to_string(),
        })?;
        let room_id: Option<OwnedRoomId> =
            if let Ok(alias) = <&RoomAliasId>::try_from(&*id_or_alias) {
                client
                    .resolve_room_alias(alias)
                    .await
                    .ok()
                    .map(|r| r.room_id)
            } else {
                <&RoomId>::try_from(&*id_or_alias)
                    .ok()
                    .map(ToOwned::to_owned)
            };
        if let Some(room) = room_id.as_deref().and_then(|id| client.get_room(id))
            && room.state() == RoomState::Joined
        {
            return Ok((room, false));
        }
        return client
            .join_room_by_id_or_alias(&id_or_alias, &[])
            .await
            .map(|room| (room, false))
            .map_err(|e| MatrixError::Room(format!(
                "cannot join {wanted}: {e}; invite {} to the room (from an allowed user) or check matrix.room",
                client.user_id().map(ToString::to_string).unwrap_or_default()
            )));
    }
    if let Some(id) = created
        && let Ok(id) = RoomId::parse(&id)
        && let Some(room) = client.get_room(&id)
        && room.state() == RoomState::Joined
    {
        return Ok((room, false));
    }
    let mut invite = Vec::new();
    for user in &config.allowed_users {
        invite.push(parse_user(user)?);
    }
    let mut request = CreateRoom::new();
    request.name = Some("shepherd".into());
    request.topic = Some("Questions and reports from your Pi sessions".into());
    request.preset = Some(RoomPreset::PrivateChat);
    request.invite = invite;
    // Encrypted: what the sessions say (code, paths, plans) stays between the devices.
    request.initial_state = vec![
        InitialStateEvent::with_empty_state_key(
            RoomEncryptionEventContent::with_recommended_defaults(),
        )
        .to_raw_any(),
    ];
    let room = client
        .create_room(request)
        .await
        .map_err(|e| MatrixError::Room(format!("cannot create the room: {e}")))?;
    tracing::info!(room = %room.room_id(), "matrix: created a private room and invited the allowed users");
    Ok((room, true))
}

/// Run `attempt` until it gets past network errors (backoff up to 30 s), or shutdown.
async fn retry_network<T, E, F, Fut>(
    shutdown: &CancellationToken,
    what: &str,
    mut attempt: F,
) -> Result<Result<T, E>, MatrixError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
    E: std::fmt::Display + NetworkError,
{
    let mut backoff = Duration::from_millis(500);
    loop {
        let result = tokio::select! {
            _ = shutdown.cancelled() => return Err(MatrixError::Shutdown),
            r = attempt() => r,
        };
        match result {
            Err(e) if e.is_network() => {
                tracing::warn!(error = %e, "matrix: cannot {what} yet; retrying");
                tokio::select! {
                    _ = shutdown.cancelled() => return Err(MatrixError::Shutdown),
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
            other => return Ok(other),
        }
    }
}

/// Errors worth retrying: the homeserver could not be reached.
pub trait NetworkError {
    fn is_network(&self) -> bool;
}

impl NetworkError for matrix_sdk::Error {
    fn is_network(&self) -> bool {
        matches!(self, matrix_sdk::Error::Http(h) if matches!(**h, matrix_sdk::HttpError::Reqwest(_)))
    }
}

impl NetworkError for matrix_sdk::ClientBuildError {
    fn is_network(&self) -> bool {
        matches!(self, matrix_sdk::ClientBuildError::Http(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    /// matrix-sdk opens its store on the prepared directory: every directory 0700 and
    /// every file 0600 under a 022 umask (matrix-sdk alone makes `store/` 0755 and its
    /// databases 0644), and a store an older version left loose is tightened.
    #[tokio::test]
    async fn the_matrix_store_is_private_whatever_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path());
        let old = rustix_umask(0o022);
        // An older version's store: loose directories and files.
        std::fs::create_dir_all(&paths.store).unwrap();
        std::fs::set_permissions(&paths.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&paths.store, std::fs::Permissions::from_mode(0o755)).unwrap();
        let stray = paths.store.join("matrix-sdk-state.sqlite3-wal");
        std::fs::write(&stray, b"").unwrap();
        std::fs::set_permissions(&stray, std::fs::Permissions::from_mode(0o644)).unwrap();

        private_store(&paths).unwrap();
        let client = Client::builder()
            .homeserver_url("http://127.0.0.1:9")
            .sqlite_store(&paths.store, Some("passphrase"))
            .build()
            .await
            .unwrap();
        assert_eq!(mode(&paths.dir), 0o700);
        assert_eq!(mode(&paths.store), 0o700);
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&paths.store).unwrap() {
            let path = entry.unwrap().path();
            files.push((path.file_name().unwrap().to_owned(), mode(&path)));
        }
        drop(client);
        rustix_umask(old);
        for name in STORE_DATABASES {
            assert!(
                files.iter().any(|(f, _)| f == name),
                "{name} in {files:?}: matrix-sdk renamed its databases"
            );
        }
        assert!(
            files
                .iter()
                .any(|(f, _)| f.to_string_lossy().ends_with("-wal")),
            "matrix-sdk opened its databases in WAL mode: {files:?}"
        );
        assert!(files.iter().all(|(_, m)| *m == 0o600), "{files:?}");
    }

    /// Set the process's umask; the old one. (022 is the usual one: setting it cannot
    /// disturb the other tests.)
    fn rustix_umask(mask: u32) -> u32 {
        rustix::process::umask(rustix::fs::Mode::from_raw_mode(mask)).as_raw_mode()
    }

    #[test]
    fn secrets_are_written_for_the_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path());
        std::fs::create_dir_all(&paths.dir).unwrap();
        write_private(&paths.session, b"{}").unwrap();
        let mode = std::fs::metadata(&paths.session)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // The store passphrase is generated once, then read back.
        let first = passphrase(&paths).unwrap();
        assert_eq!(first.len(), 64);
        assert_eq!(passphrase(&paths).unwrap(), first);
        let mode = std::fs::metadata(&paths.passphrase)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
