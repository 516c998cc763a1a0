//! # `shepherd doctor`
//!
//! Checks everything shepherd depends on and prints one line per check,
//! `ok` / `warn` / `FAIL`, each problem with the command or change that fixes it: the
//! config file, the state directory (yours, mode 0700), the database (opened read-only,
//! `PRAGMA quick_check`), the socket (mode 0600) and whether the core answers on it,
//! Node (Pi needs >= 22.19), Pi itself, and whether Pi loads the shepherd extension. The
//! config line names the `SHEPHERD_*` settings taken from the environment, and each chat
//! bridge gets a line saying where its settings come from (a secret by its source, never
//! its value) and whether `shepherd up` would accept them.
//! Exit status 1 when any check fails. Doctor never changes anything.

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use serde::Serialize;
use shepherd_core::config::{self, Config};
use shepherd_core::protocol::requests;

use super::format::duration;
use super::{Ctx, install, print, print_json};

/// The oldest Node that runs Pi.
const MIN_NODE: (u64, u64) = (22, 19);

/// How long `node --version` / `pi --version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(15);

const PI_PACKAGE: &str = "@earendil-works/pi-coding-agent";

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ok,
    Warn,
    Fail,
}

/// One line of the report (and one object of `--json`).
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub check: &'static str,
    pub status: Level,
    pub detail: String,
    pub fix: Option<String>,
}

impl Check {
    fn ok(check: &'static str, detail: impl Into<String>) -> Check {
        Check {
            check,
            status: Level::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    fn warn(check: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            check,
            status: Level::Warn,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    fn fail(check: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            check,
            status: Level::Fail,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    /// `FAIL  socket: … — fix`.
    fn line(&self) -> String {
        let label = match self.status {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Fail => "FAIL",
        };
        match &self.fix {
            Some(fix) => format!("{label:<4}  {}: {} — {fix}\n", self.check, self.detail),
            None => format!("{label:<4}  {}: {}\n", self.check, self.detail),
        }
    }
}

/// Run `shepherd doctor`.
pub async fn run(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let checks = run_checks(ctx).await;
    if ctx.json {
        print_json(&checks)?;
    } else {
        print(&checks.iter().map(Check::line).collect::<String>())?;
    }
    let failed = checks.iter().any(|c| c.status == Level::Fail);
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Every check, in the order a problem is best fixed.
pub async fn run_checks(ctx: &Ctx) -> Vec<Check> {
    let mut checks = Vec::new();
    let (config, check) = config_check(ctx);
    let config_ok = check.status == Level::Ok;
    checks.push(check);
    if let Ok(loaded) = ctx.load_config_raw()
        && let (Some(exposed), Some(file)) = (loaded.exposed_secrets(), &loaded.file)
    {
        let fix = format!("chmod 600 {}", file.display());
        checks.push(Check::warn("config secrets", exposed, fix));
    }
    for exposed in config.exposed_secret_files() {
        let fix = format!("chmod 600 {}", exposed.path.display());
        checks.push(Check::warn("secret file", exposed.to_string(), fix));
    }
    if config_ok {
        checks.extend(bridge_checks(&config));
        checks.extend(host_checks(&config));
        checks.extend(transcribe_check(&config));
    }
    let uid = rustix::process::getuid().as_raw();
    match config.state_dir() {
        Ok(dir) => {
            checks.push(state_dir_check(&dir, uid));
            checks.push(database_check(&dir.join("shepherd.db")));
            checks.extend(disk_check(&dir));
        }
        Err(e) => checks.push(Check::fail(
            "state dir",
            e.to_string(),
            "set HOME or PI_CODING_AGENT_DIR",
        )),
    }
    if let Ok(socket) = config.socket_path() {
        checks.push(socket_check(&socket, uid));
        if std::fs::symlink_metadata(&socket).is_ok() {
            checks.push(core_check(ctx).await);
        }
    }
    checks.push(node_check().await);
    checks.push(pi_check().await);
    checks.push(extension_check());
    checks
}

/// The config file, and the configuration the other checks use (defaults plus the
/// environment's paths when the file is broken, so they still look in the right place).
fn config_check(ctx: &Ctx) -> (Config, Check) {
    match ctx.load_config_raw() {
        Ok(loaded) => {
            let from_env = env_settings();
            let detail = match (&loaded.file, from_env.is_empty()) {
                (Some(file), true) => format!("{} parses", file.display()),
                (Some(file), false) => format!(
                    "{} parses; from the environment: {}",
                    file.display(),
                    from_env.join(", ")
                ),
                (None, true) => "none: running on defaults".to_string(),
                (None, false) => format!(
                    "none: defaults plus the environment: {}",
                    from_env.join(", ")
                ),
            };
            (loaded.config, Check::ok("config", detail))
        }
        Err(error) => {
            let mut config = Config::default();
            let env_path = |var: &str| {
                std::env::var_os(var)
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            };
            config.core.state_dir = env_path("SHEPHERD_STATE_DIR");
            config.core.socket = env_path("SHEPHERD_SOCKET");
            ctx.apply_flags(&mut config);
            let check = Check::fail(
                "config",
                error.to_string(),
                "fix it; config/shepherd.example.toml documents every setting",
            );
            (config, check)
        }
    }
}

/// The `SHEPHERD_*` variables that are settings (names only: some hold secrets).
fn env_settings() -> Vec<String> {
    let mut names: Vec<String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
        .filter(|(k, v)| {
            !v.is_empty()
                && k.strip_prefix("SHEPHERD_").is_some_and(|rest| {
                    rest.contains("__")
                        || [
                            "SOCKET",
                            "STATE_DIR",
                            "TELEGRAM_TOKEN",
                            "MATRIX_PASSWORD",
                            "MATRIX_ACCESS_TOKEN",
                        ]
                        .contains(&rest)
                })
        })
        .map(|(k, _)| k)
        .collect();
    names.sort();
    names
}

fn env_set(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| !v.is_empty())
}

/// Where a secret comes from, never its value: the variable, the file, or the config file.
fn secret_source(
    what: &str,
    var: &str,
    value: &Option<String>,
    file: &Option<PathBuf>,
) -> Option<String> {
    if env_set(var) {
        Some(format!("{what} from {var}"))
    } else if let Some(file) = file {
        Some(format!("{what} from {}", file.display()))
    } else if value.as_deref().is_some_and(|v| !v.trim().is_empty()) {
        Some(format!("{what} in the config file"))
    } else {
        None
    }
}

fn users(n: usize) -> String {
    match n {
        0 => "no allowed users".to_string(),
        1 => "1 allowed user".to_string(),
        n => format!("{n} allowed users"),
    }
}

/// One line per configured chat bridge: where its settings come from (the config file, the
/// environment, or the environment alone) and whether `up` would accept them. Secrets are
/// named by their source, never shown.
fn bridge_checks(config: &Config) -> Vec<Check> {
    let mut checks = Vec::new();
    if let Some(t) = &config.telegram {
        let mut parts = vec![
            secret_source("token", "SHEPHERD_TELEGRAM_TOKEN", &t.token, &t.token_file)
                .unwrap_or_else(|| "no token".into()),
            users(t.allowed_users.len()),
        ];
        if t.chat_id.is_none() {
            parts.push("no chat_id".into());
        }
        #[cfg(feature = "telegram")]
        if shepherd_bridges::telegram::pairing_mode(t) {
            parts.push(
                "pairing mode: serves nobody, tells whoever writes to the bot their user id".into(),
            );
        }
        checks.push(bridge_check(
            "telegram",
            parts,
            only(config, |c| c.matrix = None),
        ));
    }
    if let Some(m) = &config.matrix {
        let mut parts = vec![m.user_id.clone().unwrap_or_else(|| "no user_id".into())];
        let secret = secret_source(
            "password",
            "SHEPHERD_MATRIX_PASSWORD",
            &m.password,
            &m.password_file,
        )
        .or_else(|| {
            secret_source(
                "access token",
                "SHEPHERD_MATRIX_ACCESS_TOKEN",
                &m.access_token,
                &m.access_token_file,
            )
        });
        parts.push(secret.unwrap_or_else(|| "no credentials".into()));
        parts.push(users(m.allowed_users.len()));
        checks.push(bridge_check(
            "matrix",
            parts,
            only(config, |c| c.telegram = None),
        ));
    }
    if checks.is_empty() {
        checks.push(Check::ok(
            "bridges",
            "none configured (a [telegram] or [matrix] section, or SHEPHERD_TELEGRAM_TOKEN, adds one)",
        ));
    }
    checks
}

/// `up`'s check of the bridges, on `config` with the others removed by `keep`.
fn only(config: &Config, keep: impl FnOnce(&mut Config)) -> Result<(), String> {
    let mut one = config.clone();
    keep(&mut one);
    shepherd_bridges::validate(&one).map_err(|e| e.to_string())
}

fn bridge_check(name: &'static str, parts: Vec<String>, valid: Result<(), String>) -> Check {
    let detail = parts.join(", ");
    match valid {
        Ok(()) => Check::ok(name, detail),
        Err(why) => Check::fail(name, detail, why),
    }
}

fn state_dir_check(dir: &Path, uid: u32) -> Check {
    const CHECK: &str = "state dir";
    let shown = dir.display();
    let meta = match std::fs::metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Check::fail(
                CHECK,
                format!("{shown} does not exist"),
                "start the core once with `shepherd up`; it creates the directory (mode 0700)",
            );
        }
        Err(e) => {
            return Check::fail(
                CHECK,
                format!("cannot read {shown}: {e}"),
                "check the permissions of its parent directories",
            );
        }
    };
    if !meta.is_dir() {
        return Check::fail(
            CHECK,
            format!("{shown} is not a directory"),
            "move it away or set core.state_dir to another path",
        );
    }
    if meta.uid() != uid {
        return Check::fail(
            CHECK,
            format!(
                "{shown} belongs to uid {}, not to you (uid {uid})",
                meta.uid()
            ),
            format!("`chown {uid} {shown}` or set core.state_dir to a directory of yours"),
        );
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode != 0o700 {
        return Check::fail(
            CHECK,
            format!("{shown} has mode {mode:04o}, not 0700"),
            format!("`chmod 700 {shown}`"),
        );
    }
    Check::ok(CHECK, format!("{shown} (yours, mode 0700)"))
}

fn database_check(path: &Path) -> Check {
    use rusqlite::{Connection, OpenFlags};
    const CHECK: &str = "database";
    let shown = path.display();
    if !path.exists() {
        return Check::warn(
            CHECK,
            format!("{shown} does not exist yet"),
            "`shepherd up` creates it",
        );
    }
    // A read-only connection to a WAL database creates the `-wal`/`-shm` files when they
    // are missing (a core that stopped cleanly removed them). Doctor changes nothing: with
    // no core writing, open the file as immutable instead (no side files, no locks).
    let side = |ext: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(ext);
        PathBuf::from(name).exists()
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let opened = if side("-wal") || side("-shm") {
        Connection::open_with_flags(path, flags)
    } else {
        let uri = format!("file:{}?immutable=1", uri_escape(&path.to_string_lossy()));
        Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI)
    };
    let result = opened.and_then(|db| {
        db.busy_timeout(Duration::from_secs(5))?;
        let rows: Vec<String> = db
            .prepare("PRAGMA quick_check")?
            .query_map([], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    });
    match result {
        Ok(rows) if rows == ["ok"] => {
            let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            Check::ok(CHECK, format!("{shown} (quick_check ok, {})", bytes(size)))
        }
        Ok(rows) => Check::fail(
            CHECK,
            format!("{shown} is damaged: {}", rows.join("; ")),
            "stop the core, move the file aside (the core starts a fresh one) or restore \
             a backup",
        ),
        Err(e) => Check::fail(
            CHECK,
            format!("cannot read {shown}: {e}"),
            "check that the file is yours and readable (mode 0600), or move it aside",
        ),
    }
}

/// A path made safe for an SQLite `file:` URI.
fn uri_escape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            _ => out.push(c),
        }
    }
    out
}

fn bytes(n: u64) -> String {
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{:.1} KiB", n as f64 / 1024.0),
        1_048_576..1_073_741_824 => format!("{:.1} MiB", n as f64 / 1_048_576.0),
        _ => format!("{:.1} GiB", n as f64 / 1_073_741_824.0),
    }
}

/// Below this much free space the core's writes are about to fail.
const DISK_LOW: u64 = 64 << 20;
/// Below this much they fail now, or soon (a commit of large mail, the WAL's growth).
const DISK_FULL: u64 = 4 << 20;

/// The free space on the disk holding the state directory (or that will hold it: its
/// nearest existing parent): every request that changes something is refused
/// (`store_failed`) while it is full. `None` when it cannot be read.
fn disk_check(dir: &Path) -> Option<Check> {
    const CHECK: &str = "disk";
    let existing = dir.ancestors().find(|p| p.exists())?;
    let stat = rustix::fs::statvfs(existing).ok()?;
    let free = stat.f_bavail.saturating_mul(stat.f_frsize);
    let shown = dir.display();
    let detail = format!("{} free on the disk holding {shown}", bytes(free));
    let fix =
        "free space on that disk: the core refuses every change (`store_failed`) while it is full";
    Some(if free < DISK_FULL {
        Check::fail(CHECK, detail, fix)
    } else if free < DISK_LOW {
        Check::warn(CHECK, detail, fix)
    } else {
        Check::ok(CHECK, detail)
    })
}

fn socket_check(socket: &Path, uid: u32) -> Check {
    const CHECK: &str = "socket";
    let shown = socket.display();
    let meta = match std::fs::symlink_metadata(socket) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Check::fail(
                CHECK,
                format!("{shown} does not exist: the core is not running"),
                "start it with `shepherd up`",
            );
        }
        Err(e) => {
            return Check::fail(
                CHECK,
                format!("cannot read {shown}: {e}"),
                "check the permissions of the state directory",
            );
        }
    };
    if !meta.file_type().is_socket() {
        return Check::fail(
            CHECK,
            format!("{shown} is not a socket"),
            "remove it (or set core.socket elsewhere), then `shepherd up`",
        );
    }
    if meta.uid() != uid {
        return Check::fail(
            CHECK,
            format!(
                "{shown} belongs to uid {}, not to you (uid {uid})",
                meta.uid()
            ),
            "stop that core, or point --socket / SHEPHERD_SOCKET at your own",
        );
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode != 0o600 {
        return Check::fail(
            CHECK,
            format!("{shown} has mode {mode:04o}, not 0600"),
            format!("`chmod 600 {shown}`, and restart the core so it creates it right"),
        );
    }
    Check::ok(CHECK, format!("{shown} (yours, mode 0600)"))
}

async fn core_check(ctx: &Ctx) -> Check {
    const CHECK: &str = "core";
    let status = async {
        let mut conn = ctx.connect().await?;
        conn.call(requests::Status::default()).await
    };
    match status.await {
        Ok(s) => {
            let detail = format!(
                "shepherd {} (protocol {}), pid {}, up {}, {} session(s) connected, {} open \
                 ask(s)",
                s.core_version,
                s.protocol,
                s.pid,
                duration(s.uptime_ms),
                s.sessions_connected,
                s.open_asks
            );
            let cli = env!("CARGO_PKG_VERSION");
            if s.core_version != cli {
                Check::warn(
                    CHECK,
                    format!("{detail}; this CLI is {cli}"),
                    "restart the core with this version (stop it, then `shepherd up`)",
                )
            } else {
                Check::ok(CHECK, detail)
            }
        }
        Err(f) if f.code == "not_running" => Check::fail(
            CHECK,
            "nothing answers on the socket (a core that stopped without cleaning up)",
            "start it with `shepherd up`",
        ),
        Err(f) => Check::fail(
            CHECK,
            f.message,
            "see the core's log (stderr of `shepherd up`)",
        ),
    }
}

async fn node_check() -> Check {
    const CHECK: &str = "node";
    let fix = format!(
        "install Node 22 (>= {}.{}) and put it first on PATH",
        MIN_NODE.0, MIN_NODE.1
    );
    let Some(path) = which("node") else {
        return Check::fail(CHECK, "not found on PATH", fix);
    };
    let version = match version_of(&path).await {
        Ok(v) => v,
        Err(e) => return Check::fail(CHECK, format!("{}: {e}", path.display()), fix),
    };
    match parse_version(&version) {
        Some((major, minor, _)) if (major, minor) >= MIN_NODE => {
            Check::ok(CHECK, format!("{version} ({})", path.display()))
        }
        Some(_) => Check::fail(
            CHECK,
            format!(
                "{version} ({}) is too old: Pi needs >= {}.{}",
                path.display(),
                MIN_NODE.0,
                MIN_NODE.1
            ),
            fix,
        ),
        None => Check::warn(
            CHECK,
            format!("cannot read the version {version:?} of {}", path.display()),
            fix,
        ),
    }
}

async fn pi_check() -> Check {
    const CHECK: &str = "pi";
    let install = format!("npm install -g {PI_PACKAGE}");
    let Some(path) = which("pi") else {
        return Check::fail(CHECK, "not found on PATH", install);
    };
    match version_of(&path).await {
        Ok(version) => Check::ok(CHECK, format!("{version} ({})", path.display())),
        Err(e) => Check::fail(
            CHECK,
            format!("`{} --version` failed: {e}", path.display()),
            format!(
                "Pi needs Node >= {}.{}: install Node 22, then {install}",
                MIN_NODE.0, MIN_NODE.1
            ),
        ),
    }
}

/// Whether Pi's `<agent dir>/settings.json` loads the shepherd extension (a `packages`
/// entry resolving to a directory whose package.json is the extension), and whether the
/// copy `shepherd install` wrote is the one this binary carries.
fn extension_check() -> Check {
    const CHECK: &str = "extension";
    let fix = "run `shepherd install`";
    let agent_dir = match config::agent_dir() {
        Ok(dir) => dir,
        Err(e) => return Check::fail(CHECK, e.to_string(), fix),
    };
    let settings_path = agent_dir.join("settings.json");
    let settings = match install::read_settings(&settings_path) {
        Ok(settings) => settings,
        Err(e) => return Check::fail(CHECK, e.message, "fix the file (Pi cannot read it either)"),
    };
    let configured = install::configured_extensions(&settings, &agent_dir);
    let ours = install::extension_dir(&agent_dir);
    let ours = std::fs::canonicalize(&ours).unwrap_or(ours);
    let listed: Vec<String> = configured.iter().map(|p| p.display().to_string()).collect();
    match configured.len() {
        0 => Check::fail(
            CHECK,
            format!(
                "Pi does not load the shepherd extension (no `packages` entry in {})",
                settings_path.display()
            ),
            fix,
        ),
        1 if configured[0] == ours => match install::stale_files(&ours) {
            stale if stale.is_empty() => {
                Check::ok(CHECK, format!("Pi loads it from {}", ours.display()))
            }
            stale => Check::warn(
                CHECK,
                format!(
                    "the copy in {} is not this version's ({} differ)",
                    ours.display(),
                    stale.join(", ")
                ),
                fix,
            ),
        },
        1 => Check::ok(CHECK, format!("Pi loads it from {}", listed[0])),
        _ => Check::warn(
            CHECK,
            format!(
                "Pi loads {} copies ({}); each would connect",
                listed.len(),
                listed.join(", ")
            ),
            "keep one: `pi remove <path>` the others",
        ),
    }
}

/// Each linked host's link command can be run here: its program is on PATH (or, given as
/// a path, is an executable file). Whether the far end answers, `shepherd hosts` shows.
fn host_checks(config: &Config) -> Vec<Check> {
    config
        .hosts
        .iter()
        .map(|host| {
            let program = &host.command.argv()[0];
            match find_program(program) {
                Some(path) => Check::ok(
                    "host",
                    format!("{}: its link command runs {}", host.name, path.display()),
                ),
                None => Check::fail(
                    "host",
                    format!("{}: its link command's program `{program}` is not found", host.name),
                    "install it, or fix the command of that [[hosts]] entry (`shepherd hosts` shows each link)",
                ),
            }
        })
        .collect()
}

/// `[phone] transcribe`, when set: whether its program can run here.
fn transcribe_check(config: &Config) -> Option<Check> {
    let program = config.phone.transcribe.first()?;
    Some(match find_program(program) {
        Some(path) => Check::ok(
            "transcribe",
            format!("voice notes are turned into text by {}", path.display()),
        ),
        None => Check::fail(
            "transcribe",
            format!(
                "[phone] transcribe's program `{program}` is not found: voice notes will be saved and named, not turned into text"
            ),
            "install it, or fix [phone] transcribe",
        ),
    })
}

/// `program` as a command runs it: a path when it has a `/`, else the first on PATH.
fn find_program(program: &str) -> Option<PathBuf> {
    match program.contains('/') {
        true => Some(PathBuf::from(program)).filter(|p| executable(p)),
        false => which(program),
    }
}

/// The first executable `name` on PATH.
fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|candidate| executable(candidate))
}

/// Whether `path` is a file someone may execute.
fn executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The trimmed first line of `<program> --version`.
async fn version_of(program: &Path) -> Result<String, String> {
    let run = tokio::process::Command::new(program)
        .arg("--version")
        .env("PI_OFFLINE", "1")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(VERSION_TIMEOUT, run).await {
        Err(_) => return Err(format!("no answer within {}s", VERSION_TIMEOUT.as_secs())),
        Ok(Err(e)) => return Err(e.to_string()),
        Ok(Ok(output)) => output,
    };
    let first_line = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes)
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_string()
    };
    if output.status.success() {
        Ok(first_line(&output.stdout))
    } else {
        let stderr = first_line(&output.stderr);
        Err(format!("exit {}: {stderr}", output.status))
    }
}

/// `v22.19.0` → `(22, 19, 0)`.
fn parse_version(text: &str) -> Option<(u64, u64, u64)> {
    let mut parts = text.trim().trim_start_matches('v').splitn(3, '.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch = parts
        .next()
        .and_then(|p| p.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    Some((major, minor, patch))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_check_leaves_no_side_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("odd ?#% name.db");
        {
            let db = rusqlite::Connection::open(&path).unwrap();
            db.pragma_update(None, "journal_mode", "wal").unwrap();
            db.execute("CREATE TABLE t (x)", []).unwrap();
        }
        let before: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        let check = database_check(&path);
        assert_eq!(check.status, Level::Ok, "{check:?}");
        let after: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(before.len(), after.len(), "doctor created files");

        std::fs::write(&path, b"not a database at all, just some bytes").unwrap();
        assert_eq!(database_check(&path).status, Level::Fail);
    }

    #[test]
    fn versions_parse() {
        assert_eq!(parse_version("v22.19.0"), Some((22, 19, 0)));
        assert_eq!(parse_version("v20.11.1\n"), Some((20, 11, 1)));
        assert_eq!(parse_version("23.1.0-nightly"), Some((23, 1, 0)));
        assert_eq!(parse_version("garbage"), None);
    }

    #[test]
    fn lines_read_as_documented() {
        let c = Check::fail("socket", "gone", "start it with `shepherd up`");
        assert_eq!(
            c.line(),
            "FAIL  socket: gone — start it with `shepherd up`\n"
        );
        assert_eq!(Check::ok("pi", "1.6.0").line(), "ok    pi: 1.6.0\n");
    }
}
