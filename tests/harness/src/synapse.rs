//! A real Synapse homeserver for the Matrix tests: the pinned `matrix-synapse` from PyPI
//! (installed into a venv under `target/test-deps/` by `scripts/synapse-deps.sh`), on a
//! temp dir with a generated config: `server_name: localhost`, one plain-HTTP client
//! listener on `127.0.0.1:<free port>`, sqlite, every `rc_*` rate limit raised, the cheapest
//! bcrypt, federation and presence off, open registration off (users are made with the
//! shared-secret admin API, [`Synapse::register`]). Killed on drop; on a failing test its
//! log tail is printed.
//!
//! [`Synapse::shared`] is one such server for the whole test binary (started by the first
//! test that asks, stopped with the binary's process): a test on it makes its own users
//! with [`unique`] names, and so its own rooms, and runs next to the others.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use crate::pi_process::repo_root;

pub use reqwest::Method;

/// Where the pinned Synapse is: the venv's python.
#[derive(Debug, Clone)]
pub struct SynapseDeps {
    pub python: PathBuf,
}

/// Locate (installing on first use) the pinned Synapse. Uses `$SHEPHERD_SYNAPSE_PYTHON`
/// (exported by `scripts/test.sh`), else runs `scripts/synapse-deps.sh --env`. Fails
/// loudly with the installer's reason; never skips.
pub fn synapse_deps() -> Result<SynapseDeps> {
    static DEPS: OnceLock<std::result::Result<SynapseDeps, String>> = OnceLock::new();
    DEPS.get_or_init(|| locate().map_err(|e| format!("{e:#}")))
        .clone()
        .map_err(|e| anyhow!("the pinned Synapse is not available: {e}"))
}

fn locate() -> Result<SynapseDeps> {
    if let Some(python) = std::env::var_os("SHEPHERD_SYNAPSE_PYTHON").filter(|v| !v.is_empty()) {
        let python = PathBuf::from(python);
        if !python.exists() {
            bail!(
                "SHEPHERD_SYNAPSE_PYTHON={} does not exist",
                python.display()
            );
        }
        return Ok(SynapseDeps { python });
    }
    let script = repo_root().join("scripts/synapse-deps.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg("--env")
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    if !out.status.success() {
        bail!(
            "{} failed:\n{}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8(out.stdout)?;
    let python = text
        .lines()
        .find_map(|l| l.strip_prefix("SHEPHERD_SYNAPSE_PYTHON="))
        .map(|v| PathBuf::from(v.trim().trim_matches('\'').trim_matches('"')))
        .context("SHEPHERD_SYNAPSE_PYTHON missing from synapse-deps.sh --env output")?;
    Ok(SynapseDeps { python })
}

/// `SHEPHERD_SKIP_E2E=1`: for local iteration only (CI never sets it). Tests that need
/// Synapse return early, saying so on stderr.
pub fn skip_e2e() -> bool {
    let skip = std::env::var("SHEPHERD_SKIP_E2E").is_ok_and(|v| v == "1");
    if skip {
        eprintln!("SHEPHERD_SKIP_E2E=1: skipping a test that needs Synapse");
    }
    skip
}

/// The server name of every test homeserver.
pub const SERVER_NAME: &str = "localhost";

/// A running Synapse on its own temp dir, or a handle on the binary's shared one.
pub struct Synapse {
    dir: PathBuf,
    /// The temp dir of a Synapse of this test's own (removed on drop); `None` on the
    /// shared one, whose watcher removes its dir.
    _own_dir: Option<tempfile::TempDir>,
    child: Option<Child>,
    port: u16,
    shared_secret: String,
    http: reqwest::Client,
}

impl Synapse {
    /// Generate a config and signing key in a fresh temp dir, start Synapse and wait until
    /// `/_matrix/client/versions` answers.
    pub async fn start() -> Result<Synapse> {
        let deps = synapse_deps()?;
        let mut dir = tempfile::Builder::new().prefix("synapse").tempdir()?;
        let shared_secret = random_hex(32);
        let http = http_client()?;
        let mut last_err = None;
        // A free port can be taken between probing and Synapse binding it: retry then.
        for _ in 0..3 {
            let port = free_port()?;
            let mut synapse = Synapse {
                dir: dir.path().to_path_buf(),
                _own_dir: Some(dir),
                child: None,
                port,
                shared_secret: shared_secret.clone(),
                http: http.clone(),
            };
            synapse.write_config()?;
            synapse.generate_keys(&deps.python).await?;
            match synapse.spawn(&deps.python).await {
                Ok(()) => return Ok(synapse),
                Err(e) => {
                    let in_use = synapse.log().contains("Address already in use");
                    if let Some(mut child) = synapse.child.take() {
                        let _ = child.kill().await;
                    }
                    if !in_use {
                        return Err(e);
                    }
                    last_err = Some(e);
                    dir = tempfile::Builder::new().prefix("synapse").tempdir()?;
                }
            }
        }
        Err(last_err.unwrap_or_else(|| anyhow!("Synapse did not start")))
    }

    /// The binary's shared Synapse, started by the first caller: a handle with its own
    /// HTTP client. Users and rooms on it are shared by every test of the binary, so a
    /// test makes its own ([`unique`] localparts). The server stops when the binary's
    /// process ends, however it ends: a watcher shell holds a pipe from this process and
    /// kills Synapse (and removes its dir) when the pipe closes.
    pub async fn shared() -> Result<Synapse> {
        static SHARED: tokio::sync::OnceCell<Shared> = tokio::sync::OnceCell::const_new();
        let shared = SHARED.get_or_try_init(Shared::start).await?;
        Ok(Synapse {
            dir: shared.dir.clone(),
            _own_dir: None,
            child: None,
            port: shared.port,
            shared_secret: shared.secret.clone(),
            http: http_client()?,
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The server name (`localhost`): MXIDs are `@<user>:localhost`.
    pub fn server_name(&self) -> &'static str {
        SERVER_NAME
    }

    /// `@<localpart>:localhost`.
    pub fn user_id(&self, localpart: &str) -> String {
        format!("@{localpart}:{SERVER_NAME}")
    }

    /// The temp dir holding the config, database, media and log.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.join("homeserver.log")
    }

    /// The homeserver's log so far (its stdout/stderr appended).
    pub fn log(&self) -> String {
        let mut log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        log.push_str(&std::fs::read_to_string(self.dir.join("stdio.log")).unwrap_or_default());
        log
    }

    /// The last `lines` lines of the log.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = self.log();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Register a user with the shared-secret admin API; returns the user's MXID.
    pub async fn register(&self, localpart: &str, password: &str, admin: bool) -> Result<String> {
        Ok(self.register_full(localpart, password, admin).await?.0)
    }

    /// Register a user; returns the MXID and the access token of the device the
    /// registration created.
    pub async fn register_full(
        &self,
        localpart: &str,
        password: &str,
        admin: bool,
    ) -> Result<(String, String)> {
        let url = format!("{}/_synapse/admin/v1/register", self.url());
        let nonce: Value = self
            .http
            .get(&url)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let nonce = nonce["nonce"].as_str().context("no nonce")?.to_string();
        let mut mac = Hmac::<sha1::Sha1>::new_from_slice(self.shared_secret.as_bytes())
            .map_err(|e| anyhow!("{e}"))?;
        mac.update(nonce.as_bytes());
        mac.update(b"\0");
        mac.update(localpart.as_bytes());
        mac.update(b"\0");
        mac.update(password.as_bytes());
        mac.update(b"\0");
        mac.update(if admin { b"admin" } else { b"notadmin" });
        let digest = hex(&mac.finalize().into_bytes());
        let resp = self
            .http
            .post(&url)
            .json(&json!({
                "nonce": nonce,
                "username": localpart,
                "password": password,
                "admin": admin,
                "mac": digest,
            }))
            .send()
            .await?;
        let status = resp.status();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("registering {localpart}: {status} {body}");
        }
        Ok((
            body["user_id"].as_str().context("no user_id")?.to_string(),
            body["access_token"]
                .as_str()
                .context("no access_token")?
                .to_string(),
        ))
    }

    /// Log in with a password over the client API (`m.login.password`); the access token.
    pub async fn login(&self, localpart: &str, password: &str) -> Result<String> {
        let body = self
            .api(
                reqwest::Method::POST,
                "/_matrix/client/v3/login",
                None,
                Some(json!({
                    "type": "m.login.password",
                    "identifier": {"type": "m.id.user", "user": localpart},
                    "password": password,
                    "initial_device_display_name": "synapse harness",
                })),
            )
            .await?;
        Ok(body["access_token"]
            .as_str()
            .context("no access_token")?
            .to_string())
    }

    /// A client-API (or admin-API) call with an optional bearer token; the JSON reply,
    /// or an error naming the status and body.
    pub async fn api(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Result<Value> {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.url()));
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await?;
        let status = resp.status();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("{method} {path}: {status} {body}");
        }
        Ok(body)
    }

    /// The device ids of `user_id`, through the admin API (`admin_token` must be an
    /// admin's access token).
    pub async fn devices(&self, admin_token: &str, user_id: &str) -> Result<Vec<String>> {
        let body = self
            .api(
                reqwest::Method::GET,
                &format!("/_synapse/admin/v2/users/{user_id}/devices"),
                Some(admin_token),
                None,
            )
            .await?;
        Ok(body["devices"]
            .as_array()
            .context("no devices array")?
            .iter()
            .filter_map(|d| d["device_id"].as_str().map(str::to_string))
            .collect())
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }

    fn write_config(&self) -> Result<()> {
        let dir = &self.dir;
        let d = dir.display();
        let port = self.port;
        let log_config = format!(
            r#"version: 1
formatters:
  precise:
    format: '%(asctime)s - %(name)s - %(lineno)d - %(levelname)s - %(request)s - %(message)s'
handlers:
  file:
    class: logging.FileHandler
    formatter: precise
    filename: {d}/homeserver.log
    encoding: utf8
loggers:
  synapse.storage.SQL:
    level: WARNING
root:
  level: INFO
  handlers: [file]
disable_existing_loggers: false
"#
        );
        std::fs::write(dir.join("log.config"), log_config)?;
        // Generous rate limits everywhere: tests send bursts and log in often. The cheapest
        // password hashing bcrypt allows (`bcrypt_rounds`, default 12): every test
        // registers and logs in several users, and each hash at 12 costs a few hundred ms.
        let lots = "{per_second: 10000, burst_count: 100000}";
        let config = format!(
            r#"# Generated by shepherd-harness (tests/harness/src/synapse.rs).
server_name: "{SERVER_NAME}"
public_baseurl: "http://127.0.0.1:{port}/"
pid_file: "{d}/homeserver.pid"
listeners:
  - port: {port}
    bind_addresses: ["127.0.0.1"]
    type: http
    tls: false
    x_forwarded: false
    resources:
      - names: [client]
        compress: false
database:
  name: sqlite3
  args:
    database: "{d}/homeserver.db"
log_config: "{d}/log.config"
media_store_path: "{d}/media_store"
signing_key_path: "{d}/{SERVER_NAME}.signing.key"
registration_shared_secret: "{secret}"
macaroon_secret_key: "{macaroon}"
form_secret: "{form}"
enable_registration: false
bcrypt_rounds: 4
report_stats: false
trusted_key_servers: []
suppress_key_server_warning: true
federation_domain_whitelist: []
presence:
  enabled: false
url_preview_enabled: false
enable_metrics: false
rc_message: {lots}
rc_registration: {lots}
rc_registration_token_validity: {lots}
rc_login:
  address: {lots}
  account: {lots}
  failed_attempts: {lots}
rc_admin_redaction: {lots}
rc_joins:
  local: {lots}
  remote: {lots}
rc_joins_per_room: {lots}
rc_3pid_validation: {lots}
rc_invites:
  per_room: {lots}
  per_user: {lots}
  per_issuer: {lots}
rc_third_party_invite: {lots}
rc_room_creation: {lots}
rc_reports: {lots}
rc_key_requests: {lots}
rc_presence:
  per_user: {lots}
rc_delayed_event_mgmt: {lots}
rc_media_create: {lots}
rc_user_directory: {lots}
rc_send_to_device: {lots}
rc_federation:
  window_size: 1000
  sleep_limit: 10000
  sleep_delay: 0
  reject_limit: 10000
  concurrent: 1000
"#,
            secret = self.shared_secret,
            macaroon = random_hex(32),
            form = random_hex(32),
        );
        std::fs::write(dir.join("homeserver.yaml"), config)?;
        Ok(())
    }

    fn base_command(&self, python: &Path) -> Command {
        let mut cmd = Command::new(python);
        cmd.args(["-m", "synapse.app.homeserver", "--config-path"])
            .arg(self.dir.join("homeserver.yaml"))
            .current_dir(&self.dir)
            .env("SYNAPSE_ASYNC_IO_REACTOR", "0")
            .env_remove("http_proxy")
            .env_remove("https_proxy")
            .env_remove("HTTP_PROXY")
            .env_remove("HTTPS_PROXY")
            .stdin(Stdio::null());
        cmd
    }

    async fn generate_keys(&self, python: &Path) -> Result<()> {
        let out = self
            .base_command(python)
            .arg("--generate-keys")
            .output()
            .await
            .with_context(|| format!("running {}", python.display()))?;
        if !out.status.success() {
            bail!(
                "synapse --generate-keys failed ({}):\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }

    async fn spawn(&mut self, python: &Path) -> Result<()> {
        let stdio = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("stdio.log"))?;
        let child = self
            .base_command(python)
            .stdout(stdio.try_clone()?)
            .stderr(stdio)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {} -m synapse.app.homeserver", python.display()))?;
        let mut child = child;
        let answered = {
            let mut exited = || child.try_wait().ok().flatten().map(|s| s.to_string());
            self.answers(&mut exited).await
        };
        self.child = Some(child);
        answered
    }

    /// Wait until Synapse answers `/_matrix/client/versions`; fail at once when `exited`
    /// says how its process ended.
    async fn answers(&self, exited: &mut impl FnMut() -> Option<String>) -> Result<()> {
        let url = format!("{}/_matrix/client/versions", self.url());
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = exited() {
                bail!(
                    "Synapse exited ({status}) before answering; last log lines:\n{}",
                    self.log_tail(40)
                );
            }
            if let Ok(resp) = self.http.get(&url).send().await
                && resp.status().is_success()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "Synapse did not answer {url} within 60 s; last log lines:\n{}",
                    self.log_tail(40)
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Synapse {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "--- synapse log (last 60 lines of {}) ---\n{}",
                self.log_path().display(),
                self.log_tail(60)
            );
        }
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
    }
}

/// The shared server ([`Synapse::shared`]): where it is, and the watcher shell whose stdin
/// pipe this process holds until it ends.
struct Shared {
    dir: PathBuf,
    port: u16,
    secret: String,
    _watcher: std::sync::Mutex<std::process::Child>,
}

/// Runs Synapse (`$0 "$@"`) and waits for it; a second shell waits for this process's
/// end (its stdin, a pipe from the test binary, closing), then stops Synapse and removes
/// its dir.
const WATCHER: &str = r#"exec 3<&0
"$0" "$@" </dev/null &
synapse=$!
(
    read -r _ <&3
    kill "$synapse" 2>/dev/null
    while kill -0 "$synapse" 2>/dev/null; do sleep 0.1; done
    rm -rf "$SYNAPSE_DIR"
) &
wait "$synapse"
"#;

impl Shared {
    async fn start() -> Result<Shared> {
        let deps = synapse_deps()?;
        let secret = random_hex(32);
        let mut last_err = None;
        for attempt in 0..3 {
            let dir = std::env::temp_dir().join(format!(
                "synapse-shared-{}-{attempt}-{}",
                std::process::id(),
                random_hex(4)
            ));
            std::fs::create_dir_all(&dir)?;
            let synapse = Synapse {
                dir: dir.clone(),
                _own_dir: None,
                child: None,
                port: free_port()?,
                shared_secret: secret.clone(),
                http: http_client()?,
            };
            synapse.write_config()?;
            synapse.generate_keys(&deps.python).await?;
            let stdio = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("stdio.log"))?;
            let command = synapse.base_command(&deps.python);
            let std = command.as_std();
            let mut watcher = std::process::Command::new("sh");
            watcher
                .arg("-c")
                .arg(WATCHER)
                .arg(std.get_program())
                .args(std.get_args())
                .current_dir(&dir)
                .env("SYNAPSE_DIR", &dir)
                .env("SYNAPSE_ASYNC_IO_REACTOR", "0")
                .env_remove("http_proxy")
                .env_remove("https_proxy")
                .env_remove("HTTP_PROXY")
                .env_remove("HTTPS_PROXY")
                .stdin(Stdio::piped())
                .stdout(stdio.try_clone()?)
                .stderr(stdio);
            let mut child = watcher.spawn().with_context(|| {
                format!(
                    "starting {} -m synapse.app.homeserver",
                    deps.python.display()
                )
            })?;
            let mut exited = || child.try_wait().ok().flatten().map(|s| s.to_string());
            match synapse.answers(&mut exited).await {
                Ok(()) => {
                    return Ok(Shared {
                        dir,
                        port: synapse.port,
                        secret,
                        _watcher: std::sync::Mutex::new(child),
                    });
                }
                Err(e) => {
                    let in_use = synapse.log().contains("Address already in use");
                    let _ = child.kill();
                    if !in_use {
                        return Err(e);
                    }
                    last_err = Some(e);
                }
            }
        }
        Err(last_err.unwrap_or_else(|| anyhow!("the shared Synapse did not start")))
    }
}

/// `localpart` made unique in this test binary (`ada` → `ada-7`): users of their own for
/// each test on the [`Synapse::shared`] server.
pub fn unique(localpart: &str) -> String {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{localpart}-{n}")
}

fn http_client() -> Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .no_proxy()
        .build()?)
}

fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    getrandom_fill(&mut buf);
    hex(&buf)
}

fn getrandom_fill(buf: &mut [u8]) {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(buf))
        .expect("reading /dev/urandom");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
