//! # Configuration
//!
//! Typed settings with one precedence order: built-in defaults < TOML file < `SHEPHERD_*`
//! environment < command-line flags (applied by the caller). No file is needed: the
//! embedded defaults run a complete core. Unknown keys are errors that name the key's
//! path, so a typo never silently does nothing. `config/shepherd.example.toml` documents
//! every setting and is parsed by a test.
//!
//! Environment: `SHEPHERD_CONFIG` (file), `SHEPHERD_SOCKET` (= `core.socket`),
//! `SHEPHERD_STATE_DIR` (= `core.state_dir`), `SHEPHERD_TELEGRAM_TOKEN` (=
//! `telegram.token`), and any setting as
//! `SHEPHERD_<SECTION>__<KEY>` with `__` between path parts
//! (`SHEPHERD_CORE__LIMITS__MAX_FRAME_BYTES=2097152`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::protocol::ResultsMode;

pub mod approvals;
mod hosts;
mod phone;

pub use approvals::ApprovalsConfig;
pub use hosts::{HostEntry, HostName, LinkCommand};
pub use phone::{MOST_FILE_MB, PhoneConfig};

/// Everything shepherd can be told.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub core: CoreConfig,
    /// The Telegram bridge; absent: no Telegram.
    pub telegram: Option<TelegramConfig>,
    /// The Matrix bridge; absent: no Matrix.
    pub matrix: Option<MatrixConfig>,
    /// Managed workers: how worker Pi processes are launched.
    pub workers: WorkersConfig,
    /// Project work: what a Manager's `integrate_branch` may do.
    pub projects: ProjectsConfig,
    /// Role leases: when an away holder loses its lease.
    pub roles: RolesConfig,
    /// Other machines' cores this one links to (`[[hosts]]`): one herd, one phone.
    pub hosts: Vec<HostEntry>,
    /// Which tool calls of the agents wait for the human's decision.
    pub approvals: ApprovalsConfig,
    /// What the phone may send a session besides text: files, voice notes.
    pub phone: PhoneConfig,
    /// The file this was read from (none: the built-in defaults and the environment).
    #[serde(skip)]
    pub file: Option<PathBuf>,
}

impl Config {
    /// Where `[approvals]` was written, for the rulings to name.
    pub fn approvals_origin(&self) -> String {
        match &self.file {
            Some(file) => file.display().to_string(),
            None => approvals::BUILT_IN.to_string(),
        }
    }
}

/// The `[roles]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RolesConfig {
    /// Hours a Manager or the Chief may stay away (disconnected) before the core releases
    /// its lease and tells it on its return; fractions allowed (`0.5`). 0: never.
    pub away_expiry_hours: f64,
}

impl Default for RolesConfig {
    fn default() -> Self {
        RolesConfig {
            away_expiry_hours: 72.0,
        }
    }
}

impl RolesConfig {
    /// `away_expiry_hours` in milliseconds; 0 (never) for 0 or a value that is not a
    /// positive number.
    pub fn away_expiry_ms(&self) -> u64 {
        let h = self.away_expiry_hours;
        if h.is_finite() && h > 0.0 {
            ((h * 3_600_000.0) as u64).max(1)
        } else {
            0
        }
    }
}

/// The `[projects]` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProjectsConfig {
    /// Whether a Manager's `integrate_branch` fast-forwards the primary branch: `ask` (the
    /// human approves each on the phone or with `shepherd integrate`), `allow` (at once) or
    /// `deny` (only the human integrates).
    pub integrate: IntegratePolicy,
    /// Directories whose repositories (one level below) `/new` and `shepherd new` offer
    /// besides the ones sessions have run in (`~` is the home directory).
    pub roots: Vec<PathBuf>,
}

impl ProjectsConfig {
    /// `roots` with `~` expanded.
    pub fn expanded_roots(&self) -> Vec<PathBuf> {
        self.roots.iter().map(|r| expand_home(r)).collect()
    }
}

/// `projects.integrate`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntegratePolicy {
    #[default]
    Ask,
    Allow,
    Deny,
}

/// The `[workers]` section: how the core launches managed worker Pi processes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkersConfig {
    /// Where workers run: `auto` (tmux when `tmux -V` runs, else headless), `tmux` (one
    /// window per worker on a private tmux server; they outlive the core) or `headless`
    /// (`pi --mode rpc` children of the core; they stop with it).
    pub backend: WorkerBackend,
    /// The command that runs Pi, as an argv prefix (`["pi"]`, or
    /// `["node", "/opt/pi/dist/bundle/cli.js"]`).
    pub pi: Vec<String>,
    /// The shepherd extension every worker loads with `-e` (workers start with `-ne`).
    /// Default: the installed one, `<agent dir>/shepherd/pi-ext/index.ts`.
    pub extension: Option<PathBuf>,
    /// Seconds a Lead-owned worker's question to its owner waits before it is also shown
    /// on the phones as an ask card (a Manager's or the Chief's workers' show at once).
    pub ask_card_after_secs: u64,
    /// Live workers (starting, working, blocked or settling: a process exists or is
    /// being started) one owner session may have; one more `delegate_agent` or
    /// `continue_agent` is refused (`worker_limit`) until one ends.
    pub max_per_owner: usize,
    /// Live workers of all owners together, the same way (each is a Pi process).
    pub max_live: usize,
}

impl Default for WorkersConfig {
    fn default() -> Self {
        WorkersConfig {
            backend: WorkerBackend::Auto,
            pi: vec!["pi".into()],
            extension: None,
            ask_card_after_secs: 300,
            max_per_owner: 16,
            max_live: 64,
        }
    }
}

/// `workers.backend`: which process host runs workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerBackend {
    /// tmux when `tmux -V` runs, else headless.
    Auto,
    Tmux,
    Headless,
}

/// The `[matrix]` section.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MatrixConfig {
    /// Homeserver URL (`https://matrix.example.org`). Required.
    pub homeserver: Option<String>,
    /// The bot's Matrix id (`@shepherd:example.org`). Required.
    pub user_id: Option<String>,
    /// Password login (first start only; the session is persisted). Prefer
    /// `password_file` or `SHEPHERD_MATRIX_PASSWORD`.
    pub password: Option<String>,
    pub password_file: Option<PathBuf>,
    /// An existing access token instead of a password (`SHEPHERD_MATRIX_ACCESS_TOKEN`).
    pub access_token: Option<String>,
    pub access_token_file: Option<PathBuf>,
    /// The device's display name.
    pub device_name: String,
    /// Matrix ids allowed to use the bot. Required.
    pub allowed_users: Vec<String>,
    /// Room id (`!…`) or alias (`#…`); none: the bot creates a private room and invites
    /// the allowed users.
    pub room: Option<String>,
    /// A thread per session (`per_session`) or per repository (`per_project`, each
    /// message naming its session).
    pub threads: Places,
}

/// Where a bridge puts a session's messages: its own topic or thread, or its repository's
/// (shared by every session working there; a session outside any repository keeps its own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Places {
    #[default]
    PerSession,
    PerProject,
}

impl Default for MatrixConfig {
    fn default() -> Self {
        MatrixConfig {
            homeserver: None,
            user_id: None,
            password: None,
            password_file: None,
            access_token: None,
            access_token_file: None,
            device_name: "shepherd".into(),
            allowed_users: Vec::new(),
            room: None,
            threads: Places::PerSession,
        }
    }
}

impl std::fmt::Debug for MatrixConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redact = |s: &Option<String>| s.as_ref().map(|_| "<redacted>");
        f.debug_struct("MatrixConfig")
            .field("homeserver", &self.homeserver)
            .field("user_id", &self.user_id)
            .field("password", &redact(&self.password))
            .field("password_file", &self.password_file)
            .field("access_token", &redact(&self.access_token))
            .field("access_token_file", &self.access_token_file)
            .field("device_name", &self.device_name)
            .field("allowed_users", &self.allowed_users)
            .field("room", &self.room)
            .field("threads", &self.threads)
            .finish()
    }
}

/// A secret from its value or its file (surrounding whitespace ignored).
pub fn read_secret(
    value: &Option<String>,
    file: &Option<PathBuf>,
) -> Result<Option<String>, ConfigError> {
    if let Some(v) = value.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
        return Ok(Some(v.to_string()));
    }
    if let Some(path) = file {
        let path = expand_home(path);
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::ReadSecret {
            path: path.clone(),
            source,
        })?;
        let v = text.trim();
        if !v.is_empty() {
            return Ok(Some(v.to_string()));
        }
    }
    Ok(None)
}

/// The `[telegram]` section.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelegramConfig {
    /// The bot token from @BotFather. Prefer `token_file` or `SHEPHERD_TELEGRAM_TOKEN`:
    /// secrets do not belong in a config file others may read.
    pub token: Option<String>,
    /// A file holding the token (surrounding whitespace ignored).
    pub token_file: Option<PathBuf>,
    /// Numeric Telegram user ids allowed to use the bot. Required.
    pub allowed_users: Vec<i64>,
    /// The chat the bot posts to: a private chat with you (your user id) or a
    /// forum-enabled supergroup (negative id). Required.
    pub chat_id: Option<i64>,
    /// Bot API server. Default: Telegram's.
    pub api_url: Option<String>,
    /// How fast the bridge sends (Telegram's own limits by default).
    pub limits: TelegramLimits,
    /// A forum topic per session (`per_session`) or per repository (`per_project`, each
    /// message naming its session).
    pub topics: Places,
}

/// The `[telegram.limits]` section: the bridge's outbox never sends faster than this.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelegramLimits {
    pub per_chat_per_second: u32,
    pub per_group_per_minute: u32,
    pub global_per_second: u32,
}

impl Default for TelegramLimits {
    fn default() -> Self {
        TelegramLimits {
            per_chat_per_second: 1,
            per_group_per_minute: 20,
            global_per_second: 30,
        }
    }
}

impl std::fmt::Debug for TelegramConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramConfig")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("token_file", &self.token_file)
            .field("allowed_users", &self.allowed_users)
            .field("chat_id", &self.chat_id)
            .field("api_url", &self.api_url)
            .field("limits", &self.limits)
            .field("topics", &self.topics)
            .finish()
    }
}

impl TelegramConfig {
    /// The token: `token` (or `SHEPHERD_TELEGRAM_TOKEN`), else the contents of
    /// `token_file`.
    pub fn resolve_token(&self) -> Result<String, ConfigError> {
        if let Some(token) = self
            .token
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            return Ok(token.to_string());
        }
        if let Some(path) = &self.token_file {
            let path = expand_home(path);
            let text =
                std::fs::read_to_string(&path).map_err(|source| ConfigError::ReadSecret {
                    path: path.clone(),
                    source,
                })?;
            let token = text.trim();
            if !token.is_empty() {
                return Ok(token.to_string());
            }
        }
        Err(ConfigError::Invalid {
            origin: "telegram".into(),
            key: "telegram.token".into(),
            message:
                "no bot token: set SHEPHERD_TELEGRAM_TOKEN or telegram.token_file (from @BotFather)"
                    .into(),
        })
    }
}

/// The `[core]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CoreConfig {
    /// Database, lock and (by default) socket directory. Default:
    /// `$PI_CODING_AGENT_DIR/shepherd` (`~/.pi/agent/shepherd`).
    pub state_dir: Option<PathBuf>,
    /// Socket path. Default: `<state_dir>/shepherd.sock`.
    pub socket: Option<PathBuf>,
    /// How hard each commit is pushed to disk.
    pub durability: Durability,
    /// How long a new connection has to say `hello`.
    pub hello_timeout_ms: u64,
    pub limits: Limits,
    pub supervise: SuperviseConfig,
    /// Which runs' results (a run's final text) reach the phones: `all`, `asks_only`
    /// (runs in which the session asked the human) or `off`. A session's own
    /// `SHEPHERD_RESULTS` wins.
    pub results: ResultsMode,
    /// Days after which a session that was not seen, and that nothing refers to any more
    /// (no open ask, unread mail, role, active pairing, live worker or assignment), is
    /// forgotten with its history (asks, mail, reports). 0: never.
    pub forget_sessions_after_days: u64,
}

/// The `[core.supervise]` section: supervisor pairings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SuperviseConfig {
    /// Seconds between timer views of a pairing (an unchanged one is skipped, at most
    /// three times in a row). 0 turns the timer off.
    pub look_interval_secs: u64,
}

impl Default for SuperviseConfig {
    fn default() -> Self {
        SuperviseConfig {
            look_interval_secs: 30 * 60,
        }
    }
}

impl Default for CoreConfig {
    fn default() -> Self {
        CoreConfig {
            state_dir: None,
            socket: None,
            durability: Durability::Normal,
            hello_timeout_ms: 10_000,
            limits: Limits::default(),
            supervise: SuperviseConfig::default(),
            results: ResultsMode::All,
            forget_sessions_after_days: 90,
        }
    }
}

/// SQLite's `synchronous` setting for the WAL database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// Survives a crash of the core (kill -9); the last commits may be lost on power
    /// failure. No fsync per commit.
    Normal,
    /// Also survives power failure: fsync on every group commit.
    Full,
}

/// The `[core.limits]` section. Exceeding one is an explicit error to that client only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Largest frame body accepted from a Pi session, in bytes (the human's clients may send
    /// a file from the phone: up to `phone.max_file_mb` in base64).
    pub max_frame_bytes: usize,
    /// Most sessions connected at once.
    pub max_sessions: usize,
    /// Most open asks per session.
    pub max_open_asks_per_session: usize,
    /// Frames queued for one client before it is disconnected as too slow.
    pub max_outbound_frames: usize,
    /// Bytes queued for one client: beyond it its deliveries wait in the store (and follow
    /// as it reads), and any other frame disconnects it as too slow. One frame larger than
    /// this still goes when nothing else is queued.
    pub max_outbound_bytes: usize,
    /// Most messages one session may have waiting unread (it is away, or not reading):
    /// more mail to it is refused with `limit_exceeded`, so one absent session cannot
    /// grow the store without bound.
    pub max_pending_per_session: usize,
    /// Milliseconds a frame may take to arrive once its first byte has; a connection whose
    /// frame stalls half-sent longer is closed (`truncated_frame`).
    pub frame_timeout_ms: u64,
    /// Bytes that frames still arriving may hold, across every connection (at least
    /// `max_frame_bytes`, and the frame of a `phone.max_file_mb` file): a connection whose unfinished frame would take more is closed
    /// (`frame_too_large`).
    pub max_unfinished_frame_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frame_bytes: crate::protocol::frame::DEFAULT_MAX_FRAME,
            max_sessions: 1024,
            max_open_asks_per_session: 16,
            max_outbound_frames: 4096,
            max_outbound_bytes: 8 * 1024 * 1024,
            max_pending_per_session: 10_000,
            frame_timeout_ms: 30_000,
            max_unfinished_frame_bytes: 64 * 1024 * 1024,
        }
    }
}

/// Why the configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read the secret file {path} (a `*_file` setting): {source}")]
    ReadSecret {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path} is not valid TOML: {message}")]
    Syntax { path: PathBuf, message: String },
    #[error("{origin}: `{key}`: {message}")]
    Invalid {
        origin: String,
        key: String,
        message: String,
    },
    #[error(
        "environment variable {var} names no setting (`{key}`); see config/shepherd.example.toml"
    )]
    UnknownEnv { var: String, key: String },
    #[error("cannot find your home directory: set HOME or PI_CODING_AGENT_DIR")]
    NoHome,
}

/// A configuration plus where it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// The file read, if any.
    pub file: Option<PathBuf>,
    /// The secrets written in that file (`telegram.token`, …), by key.
    pub file_secrets: Vec<String>,
}

impl Loaded {
    /// When the config file holds a secret and group or others may read it: what to say
    /// (which secrets, and the mode). The fix is `chmod 600` on [`Loaded::file`].
    pub fn exposed_secrets(&self) -> Option<String> {
        use std::os::unix::fs::PermissionsExt;
        let file = self.file.as_ref()?;
        if self.file_secrets.is_empty() {
            return None;
        }
        let mode = std::fs::metadata(file).ok()?.permissions().mode() & 0o777;
        (mode & 0o077 != 0).then(|| {
            format!(
                "the config file {} holds {} and others can read it (mode {mode:04o})",
                file.display(),
                self.file_secrets.join(", "),
            )
        })
    }
}

/// A file the configuration names as holding a secret (`telegram.token_file`, …) that
/// group or others may read. The fix is `chmod 600` on [`ExposedFile::path`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExposedFile {
    /// The setting that names it (`telegram.token_file`).
    pub key: &'static str,
    pub path: PathBuf,
    pub mode: u32,
}

impl std::fmt::Display for ExposedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} holds a secret and others can read it (mode {:04o})",
            self.key,
            self.path.display(),
            self.mode
        )
    }
}

impl Config {
    /// The secret files named (`telegram.token_file`, `matrix.password_file`,
    /// `matrix.access_token_file`) that group or others may read. A file that cannot be
    /// read is not listed here: reading the secret says so.
    pub fn exposed_secret_files(&self) -> Vec<ExposedFile> {
        use std::os::unix::fs::PermissionsExt;
        let mut named: Vec<(&'static str, &Path)> = Vec::new();
        if let Some(path) = self.telegram.as_ref().and_then(|t| t.token_file.as_deref()) {
            named.push(("telegram.token_file", path));
        }
        if let Some(m) = &self.matrix {
            if let Some(path) = m.password_file.as_deref() {
                named.push(("matrix.password_file", path));
            }
            if let Some(path) = m.access_token_file.as_deref() {
                named.push(("matrix.access_token_file", path));
            }
        }
        named
            .into_iter()
            .filter_map(|(key, path)| {
                let path = expand_home(path);
                let mode = std::fs::metadata(&path).ok()?.permissions().mode() & 0o777;
                (mode & 0o077 != 0).then_some(ExposedFile { key, path, mode })
            })
            .collect()
    }
}

/// The secret keys set in a parsed file (`telegram.token`, `matrix.password`).
fn secrets_in(table: &toml::Table) -> Vec<String> {
    let mut found = Vec::new();
    for (section, value) in table {
        if let Some(section_table) = value.as_table() {
            for key in SECRET_KEYS {
                if section_table.contains_key(key) {
                    found.push(format!("{section}.{key}"));
                }
            }
        }
    }
    found
}

/// Pi's agent directory: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
pub fn agent_dir() -> Result<PathBuf, ConfigError> {
    if let Some(dir) = std::env::var_os("PI_CODING_AGENT_DIR").filter(|d| !d.is_empty()) {
        return Ok(expand_home(Path::new(&dir)));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or(ConfigError::NoHome)?;
    Ok(PathBuf::from(home).join(".pi").join("agent"))
}

/// Where the config file is looked for when neither `--config` nor `SHEPHERD_CONFIG`
/// names one: `<agent dir>/shepherd/config.toml`.
pub fn default_config_path() -> Result<PathBuf, ConfigError> {
    Ok(agent_dir()?.join("shepherd").join("config.toml"))
}

pub fn expand_home(path: &Path) -> PathBuf {
    match path.strip_prefix("~") {
        Ok(rest) => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(rest),
            None => path.to_path_buf(),
        },
        Err(_) => path.to_path_buf(),
    }
}

impl Config {
    /// Load from `explicit` (the `--config` flag), else `SHEPHERD_CONFIG`, else the default
    /// location if that file exists; then apply the environment.
    pub fn load(explicit: Option<&Path>) -> Result<Loaded, ConfigError> {
        let env_path = std::env::var_os("SHEPHERD_CONFIG")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from);
        let (file, table) = match explicit.map(Path::to_path_buf).or(env_path) {
            Some(path) => {
                let table = read_table(&path)?;
                (Some(path), table)
            }
            None => {
                let path = default_config_path()?;
                if path.exists() {
                    let table = read_table(&path)?;
                    (Some(path), table)
                } else {
                    (None, toml::Table::new())
                }
            }
        };
        let origin = match &file {
            Some(path) => path.display().to_string(),
            None => "defaults".to_string(),
        };
        let file_secrets = secrets_in(&table);
        let mut table = table;
        let from_env = apply_env(&mut table, std::env::vars())?;
        let mut config = from_table(table, &origin, &from_env)?;
        config.file = file.clone();
        Ok(Loaded {
            config,
            file,
            file_secrets,
        })
    }

    /// Parse TOML text (used for files and by tests).
    pub fn from_toml(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let table: toml::Table =
            text.parse()
                .map_err(|e: toml::de::Error| ConfigError::Syntax {
                    path: PathBuf::from(origin),
                    message: e.message().to_string(),
                })?;
        from_table(table, origin, &[])
    }

    /// The state directory after defaults.
    pub fn state_dir(&self) -> Result<PathBuf, ConfigError> {
        match &self.core.state_dir {
            Some(dir) => Ok(expand_home(dir)),
            None => Ok(agent_dir()?.join("shepherd")),
        }
    }

    /// The extension workers load after defaults: `workers.extension`, else the installed
    /// `<agent dir>/shepherd/pi-ext/index.ts`.
    pub fn worker_extension(&self) -> Result<PathBuf, ConfigError> {
        match &self.workers.extension {
            Some(path) => Ok(expand_home(path)),
            None => Ok(agent_dir()?
                .join("shepherd")
                .join("pi-ext")
                .join("index.ts")),
        }
    }

    /// The socket path after defaults.
    pub fn socket_path(&self) -> Result<PathBuf, ConfigError> {
        match &self.core.socket {
            Some(path) => Ok(expand_home(path)),
            None => Ok(self.state_dir()?.join("shepherd.sock")),
        }
    }
}

fn read_table(path: &Path) -> Result<toml::Table, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    text.parse().map_err(|e: toml::de::Error| {
        let line = e
            .span()
            .map(|span| text[..span.start].lines().count().max(1))
            .map(|l| format!(" (line {l})"))
            .unwrap_or_default();
        ConfigError::Syntax {
            path: path.to_path_buf(),
            message: format!("{}{line}", e.message().trim_end()),
        }
    })
}

/// Settings set from the environment: (dotted key, the variable that set it).
type FromEnv = [(String, String)];

fn from_table(table: toml::Table, origin: &str, from_env: &FromEnv) -> Result<Config, ConfigError> {
    let config = deserialize(table, origin, from_env)?;
    if let Some(name) = hosts::duplicate_name(&config.hosts) {
        return Err(ConfigError::Invalid {
            origin: origin.to_string(),
            key: "hosts".to_string(),
            message: format!("two hosts are named `{name}`: give each [[hosts]] its own name"),
        });
    }
    if let Some((key, message)) = config.phone.problem() {
        return Err(ConfigError::Invalid {
            origin: origin.to_string(),
            key: key.to_string(),
            message,
        });
    }
    Ok(config)
}

fn deserialize(
    table: toml::Table,
    origin: &str,
    from_env: &FromEnv,
) -> Result<Config, ConfigError> {
    serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
        let key = e.path().to_string();
        // toml appends "in `section`" on a line of its own; the key path already says it.
        let message = e.into_inner().to_string();
        let mut message = message.lines().next().unwrap_or_default().to_string();
        let origin = match env_origin(&key, &message, from_env) {
            Some(var) => format!("environment variable {var}"),
            None => origin.to_string(),
        };
        if is_secret_key(&key) {
            // serde quotes the offending value (`invalid type: integer `42``): not for a secret.
            let expected = message
                .split_once("expected ")
                .map(|(_, what)| format!(" (expected {what})"))
                .unwrap_or_default();
            message =
                format!("not a valid value{expected}; the value is not shown: it is a secret");
        }
        ConfigError::Invalid {
            origin,
            key,
            message,
        }
    })
}

/// The variable behind a bad setting: the one that set `key` (or a value inside it), or,
/// for `unknown field \`x\`` at `key`, the one that set `key.x`.
fn env_origin<'a>(key: &str, message: &str, from_env: &'a FromEnv) -> Option<&'a str> {
    let inside = |path: &str| {
        key == path
            || key
                .strip_prefix(path)
                .is_some_and(|rest| rest.starts_with(['.', '[']))
    };
    let unknown = message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split('`').next());
    from_env
        .iter()
        .find(|(path, _)| {
            inside(path)
                || unknown.is_some_and(|field| {
                    let parent = if key == "." {
                        String::new()
                    } else {
                        format!("{key}.")
                    };
                    *path == format!("{parent}{field}")
                })
        })
        .map(|(_, var)| var.as_str())
}

/// Settings whose values are secrets: never parsed as TOML from the environment, never
/// quoted in an error.
const SECRET_KEYS: [&str; 3] = ["token", "password", "access_token"];

/// Whether a dotted key path (`telegram.token`, `matrix.password[0]`) names a secret.
fn is_secret_key(path: &str) -> bool {
    path.split(['.', '['])
        .any(|part| SECRET_KEYS.contains(&part.trim_end_matches(']')))
}

/// Overlay `SHEPHERD_*` variables onto the parsed file.
fn apply_env(
    table: &mut toml::Table,
    vars: impl Iterator<Item = (String, String)>,
) -> Result<Vec<(String, String)>, ConfigError> {
    let mut from_env = Vec::new();
    for (var, value) in vars {
        let Some(rest) = var.strip_prefix("SHEPHERD_") else {
            continue;
        };
        let path: Vec<String> = match rest {
            "SOCKET" => vec!["core".into(), "socket".into()],
            "STATE_DIR" => vec!["core".into(), "state_dir".into()],
            "TELEGRAM_TOKEN" => vec!["telegram".into(), "token".into()],
            "MATRIX_PASSWORD" => vec!["matrix".into(), "password".into()],
            "MATRIX_ACCESS_TOKEN" => vec!["matrix".into(), "access_token".into()],
            _ if rest.contains("__") => rest.split("__").map(str::to_lowercase).collect(),
            // Other SHEPHERD_* variables (SHEPHERD_CONFIG, test switches) are not settings.
            _ => continue,
        };
        if path.iter().any(String::is_empty) {
            let key = path.join(".");
            return Err(ConfigError::UnknownEnv { var, key });
        }
        // A secret is text as it is: `SHEPHERD_MATRIX_PASSWORD=1234` is not a number.
        let parsed = if path
            .last()
            .is_some_and(|k| SECRET_KEYS.contains(&k.as_str()))
        {
            toml::Value::String(value)
        } else {
            parse_env_value(&value)
        };
        insert_path(table, &path, parsed);
        from_env.push((path.join("."), var));
    }
    Ok(from_env)
}

/// A TOML scalar or array when the text is one (`42`, `true`, `[1, 2]`), else a string.
fn parse_env_value(value: &str) -> toml::Value {
    let probe = format!("v = {value}");
    match probe.parse::<toml::Table>() {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(value.into())),
        Err(_) => toml::Value::String(value.to_string()),
    }
}

fn insert_path(table: &mut toml::Table, path: &[String], value: toml::Value) {
    let (last, parents) = path.split_last().expect("path is never empty");
    let mut current = table;
    for part in parents {
        let entry = current
            .entry(part.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !entry.is_table() {
            *entry = toml::Value::Table(toml::Table::new());
        }
        current = entry.as_table_mut().expect("just made a table");
    }
    current.insert(last.clone(), value);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Iterator<Item = (String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn example_file_parses_and_matches_defaults() {
        let text = include_str!("../../../config/shepherd.example.toml");
        let config = Config::from_toml(text, "shepherd.example.toml").unwrap();
        let mut expected = Config::default();
        // The example spells out the default paths; everything else equals the defaults.
        expected.core.state_dir = config.core.state_dir.clone();
        expected.core.socket = config.core.socket.clone();
        assert_eq!(config.core, expected.core);
        // The example spells out the default extension path too.
        expected.workers.extension = config.workers.extension.clone();
        assert!(expected.workers.extension.is_some());
        assert_eq!(config.workers, expected.workers);
        assert_eq!(config.approvals, expected.approvals);
        // Its bridge sections are commented out: the embedded default has none.
        assert_eq!(config.telegram, None);
        assert_eq!(config.matrix, None);
    }

    /// The commented-out bridge sections are valid too: uncommented, they parse.
    #[test]
    fn example_bridge_sections_parse_when_uncommented() {
        let text = include_str!("../../../config/shepherd.example.toml");
        let uncommented: String = text
            .lines()
            .map(|line| match line.strip_prefix("# ") {
                Some(rest) if rest.starts_with('[') || rest.contains(" = ") => rest,
                _ => line,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let config = Config::from_toml(&uncommented, "uncommented example").unwrap();
        let telegram = config.telegram.expect("a [telegram] section");
        assert_eq!(telegram.topics, Places::PerSession);
        assert_eq!(
            config.matrix.as_ref().map(|m| m.threads),
            Some(Places::PerSession)
        );
        assert_eq!(telegram.allowed_users, [123456789]);
        assert_eq!(telegram.chat_id, Some(123456789));
        assert!(telegram.token_file.is_some());
        assert!(!format!("{telegram:?}").contains("secret"));
        // The example's approval rules and preset are valid rules.
        assert_eq!(config.approvals.preset, Some(approvals::Preset::Careful));
        assert_eq!(config.approvals.rules.len(), 2);
        let matrix = config.matrix.expect("a [matrix] section");
        assert_eq!(matrix.allowed_users, ["@ada:example.org"]);
        assert_eq!(
            matrix.homeserver.as_deref(),
            Some("https://matrix.example.org")
        );
    }

    #[test]
    fn away_expiry_takes_whole_or_fractional_hours_and_zero_is_never() {
        let ms = |text: &str| {
            Config::from_toml(text, "x.toml")
                .unwrap()
                .roles
                .away_expiry_ms()
        };
        assert_eq!(ms(""), 72 * 3_600_000);
        assert_eq!(ms("[roles]\naway_expiry_hours = 2\n"), 2 * 3_600_000);
        assert_eq!(ms("[roles]\naway_expiry_hours = 0.5\n"), 1_800_000);
        assert_eq!(ms("[roles]\naway_expiry_hours = 0\n"), 0);
        assert_eq!(ms("[roles]\naway_expiry_hours = -1\n"), 0);
    }

    #[test]
    fn the_phone_section_says_what_is_wrong() {
        let ok = Config::from_toml(
            "[phone]\nmax_file_mb = 5\ntranscribe = [\"whisper-cli\", \"-f\", \"{file}\"]\n",
            "x.toml",
        )
        .unwrap();
        assert_eq!(ok.phone.max_file_bytes(), 5 * 1024 * 1024);
        assert!(ok.phone.max_file_frame() > 5 * 1024 * 1024 * 4 / 3);
        let no_file = Config::from_toml("[phone]\ntranscribe = [\"whisper-cli\"]\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(
            no_file.contains("phone.transcribe") && no_file.contains("{file}"),
            "{no_file}"
        );
        let huge = Config::from_toml("[phone]\nmax_file_mb = 500\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(
            huge.contains("phone.max_file_mb") && huge.contains("1 to 100"),
            "{huge}"
        );
        assert_eq!(Config::default().phone.max_file_mb, 20);
    }

    #[test]
    fn the_workers_section_parses_and_defaults() {
        let config = Config::from_toml(
            "[workers]\nbackend = \"headless\"\npi = [\"node\", \"/opt/pi/cli.js\"]\n\
             extension = \"/opt/ext/index.ts\"\nask_card_after_secs = 60\n\
             max_per_owner = 4\nmax_live = 8\n",
            "x.toml",
        )
        .unwrap();
        assert_eq!(
            config.workers,
            WorkersConfig {
                backend: WorkerBackend::Headless,
                pi: vec!["node".into(), "/opt/pi/cli.js".into()],
                extension: Some("/opt/ext/index.ts".into()),
                ask_card_after_secs: 60,
                max_per_owner: 4,
                max_live: 8,
            }
        );
        assert_eq!(
            config.worker_extension().unwrap(),
            Path::new("/opt/ext/index.ts")
        );
        let err = Config::from_toml("[workers]\nbackend = \"screen\"\n", "x.toml").unwrap_err();
        assert!(err.to_string().contains("workers.backend"), "{err}");

        let mut table = toml::Table::new();
        let vars = env(&[
            ("SHEPHERD_WORKERS__BACKEND", "tmux"),
            ("SHEPHERD_WORKERS__PI", "[\"pi\", \"--offline\"]"),
            ("SHEPHERD_WORKERS__MAX_LIVE", "3"),
        ]);
        let from_env = apply_env(&mut table, vars).unwrap();
        let config = from_table(table, "t", &from_env).unwrap();
        assert_eq!(config.workers.backend, WorkerBackend::Tmux);
        assert_eq!(config.workers.pi, ["pi", "--offline"]);
        assert_eq!(config.workers.ask_card_after_secs, 300);
        assert_eq!(config.workers.max_live, 3);
        assert_eq!(config.workers.max_per_owner, 16);
    }

    #[test]
    fn token_never_shows_in_debug_output() {
        let config = Config::from_toml("[telegram]\ntoken = \"123:secret\"\n", "t").unwrap();
        let telegram = config.telegram.unwrap();
        assert!(!format!("{telegram:?}").contains("secret"));
        assert_eq!(telegram.resolve_token().unwrap(), "123:secret");
    }

    #[test]
    fn unknown_keys_name_their_path() {
        let err = Config::from_toml("[core.limits]\nmax_frame = 3\n", "x.toml").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("core.limits"), "{text}");
        assert!(text.contains("max_frame"), "{text}");
        let err = Config::from_toml("[core]\nhello_timeout_ms = \"soon\"\n", "x.toml").unwrap_err();
        assert!(err.to_string().contains("core.hello_timeout_ms"), "{err}");
    }

    #[test]
    fn env_overrides_file_values() {
        let mut table: toml::Table = "[core.limits]\nmax_sessions = 5\n".parse().unwrap();
        let vars = env(&[
            ("SHEPHERD_CORE__LIMITS__MAX_SESSIONS", "7"),
            ("SHEPHERD_SOCKET", "/tmp/s.sock"),
            ("SHEPHERD_CONFIG", "ignored.toml"),
            ("SHEPHERD_SKIP_E2E", "1"),
            ("OTHER", "x"),
        ]);
        let from_env = apply_env(&mut table, vars).unwrap();
        let config = from_table(table, "t", &from_env).unwrap();
        assert_eq!(config.core.limits.max_sessions, 7);
        assert_eq!(
            config.core.socket.as_deref(),
            Some(Path::new("/tmp/s.sock"))
        );
    }

    #[test]
    fn secrets_are_never_quoted_in_errors_and_stay_text_from_the_environment() {
        for text in [
            "[telegram]\ntoken = 987654321\n",
            "[telegram]\ntoken = [\"987654321\"]\n",
            "[matrix]\npassword = 987654321\n",
            "[matrix]\naccess_token = { x = \"987654321\" }\n",
        ] {
            let err = Config::from_toml(text, "x.toml").unwrap_err().to_string();
            assert!(!err.contains("987654321"), "{err}");
            assert!(
                err.contains("the value is not shown: it is a secret"),
                "{err}"
            );
        }
        let err = Config::from_toml("[telegram]\ntoken = 123:987654321\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("987654321"), "syntax errors too: {err}");

        let mut table = toml::Table::new();
        let vars = env(&[
            ("SHEPHERD_MATRIX_PASSWORD", "987654321"),
            ("SHEPHERD_TELEGRAM_TOKEN", "[1, 2]"),
            ("SHEPHERD_MATRIX__ACCESS_TOKEN", "\"quoted\""),
        ]);
        let from_env = apply_env(&mut table, vars).unwrap();
        let config = from_table(table, "environment", &from_env).unwrap();
        let matrix = config.matrix.unwrap();
        assert_eq!(matrix.password.as_deref(), Some("987654321"));
        assert_eq!(
            matrix.access_token.as_deref(),
            Some("\"quoted\""),
            "quotes kept"
        );
        assert_eq!(config.telegram.unwrap().token.as_deref(), Some("[1, 2]"));
    }

    #[test]
    fn env_with_unknown_key_is_an_error() {
        let mut table = toml::Table::new();
        let from_env = apply_env(&mut table, env(&[("SHEPHERD_CORE__NOPE", "1")])).unwrap();
        let err = from_table(table, "/home/u/config.toml", &from_env).unwrap_err();
        assert!(err.to_string().contains("nope"), "{err}");
        assert!(
            err.to_string()
                .starts_with("environment variable SHEPHERD_CORE__NOPE: "),
            "{err}"
        );
    }

    #[test]
    fn a_secret_in_a_file_others_can_read_is_reported() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "[telegram]\ntoken = \"1:SECRET\"\nchat_id = 1\n").unwrap();
        let table = read_table(&path).unwrap();
        let loaded = Loaded {
            config: from_table(table.clone(), "t", &[]).unwrap(),
            file: Some(path.clone()),
            file_secrets: secrets_in(&table),
        };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let said = loaded.exposed_secrets().expect("0644 is exposed");
        assert!(
            said.contains("telegram.token") && said.contains("0644"),
            "{said}"
        );
        assert!(!said.contains("SECRET"), "never the value: {said}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(loaded.exposed_secrets(), None);
        // No secret in the file: its mode is nobody's business.
        let plain = Loaded {
            file_secrets: Vec::new(),
            ..loaded
        };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(plain.exposed_secrets(), None);
    }

    #[test]
    fn a_secret_file_others_can_read_is_reported() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        let password = dir.path().join("password");
        std::fs::write(&token, "1:SECRET\n").unwrap();
        std::fs::write(&password, "SECRET\n").unwrap();
        let config = Config {
            telegram: Some(TelegramConfig {
                token_file: Some(token.clone()),
                ..TelegramConfig::default()
            }),
            matrix: Some(MatrixConfig {
                password_file: Some(password.clone()),
                access_token_file: Some(dir.path().join("missing")),
                ..MatrixConfig::default()
            }),
            ..Config::default()
        };
        let set = |p: &Path, mode| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        set(&token, 0o644);
        set(&password, 0o600);
        let exposed = config.exposed_secret_files();
        assert_eq!(
            exposed,
            vec![ExposedFile {
                key: "telegram.token_file",
                path: token.clone(),
                mode: 0o644
            }]
        );
        let said = exposed[0].to_string();
        assert!(
            said.contains("telegram.token_file") && said.contains("0644"),
            "{said}"
        );
        assert!(!said.contains("SECRET"), "never the value: {said}");
        set(&token, 0o600);
        set(&password, 0o640);
        let keys: Vec<_> = config
            .exposed_secret_files()
            .iter()
            .map(|e| e.key)
            .collect();
        assert_eq!(keys, ["matrix.password_file"]);
        set(&password, 0o400);
        assert_eq!(config.exposed_secret_files(), vec![]);
    }

    #[test]
    fn a_bad_value_from_the_environment_names_the_variable_not_the_file() {
        let mut table: toml::Table = "[core]\nhello_timeout_ms = 5000\n".parse().unwrap();
        let vars = env(&[
            ("SHEPHERD_CORE__LIMITS__MAX_FRAME_BYTES", "lots"),
            ("SHEPHERD_TELEGRAM__ALLOWED_USERS", "[\"ada\"]"),
        ]);
        let from_env = apply_env(&mut table, vars).unwrap();
        let err = from_table(table, "/home/u/config.toml", &from_env).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("environment variable SHEPHERD_"),
            "blames the variable, not the file: {text}"
        );
        // A file's own bad value still names the file.
        let table: toml::Table = "[core]\nhello_timeout_ms = \"soon\"\n".parse().unwrap();
        let err = from_table(table, "/home/u/config.toml", &[]).unwrap_err();
        assert!(
            err.to_string().starts_with("/home/u/config.toml: "),
            "{err}"
        );
    }
}
