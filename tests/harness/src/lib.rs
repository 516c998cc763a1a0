//! # shepherd-harness
//!
//! The real-server test harness: every test gets its own temporary Pi agent directory and
//! runs the real `shepherd` binary on it (`shepherd up`), talks to it over the real
//! socket, and can kill it with SIGKILL and start it again on the same state. Nothing is
//! mocked on the shepherd side.
//!
//! - [`Core`]: a running daemon on a temp dir; restart, kill -9, run CLI commands.
//! - [`Pi`]: a client that registers as a Pi session and acknowledges deliveries.
//! - [`Raw`]: a bare socket for sending bytes the protocol forbids.
//! - [`fake_model`]: a scripted OpenAI-compatible model server for Pi.
//! - [`pi_process`]: a real Pi (pinned, on Node 22) in RPC mode with the extension.
//! - [`fake_telegram`]: a strict fake Telegram Bot API server for a real teloxide bot.
//! - [`synapse`]: a real Synapse homeserver (pinned, from PyPI) on a free loopback port.
//! - [`matrix_user`]: a "human" Matrix client (matrix-sdk, E2EE-capable) for Matrix tests.
//! - [`phone`]: the [`phone::Phone`] trait, so one phone scenario runs on both chats.

// matrix-sdk's sync future is deep: proving it `Send` for `tokio::spawn` (matrix_user)
// needs more than the default recursion limit.
#![recursion_limit = "256"]

pub mod fake_model;
pub mod fake_telegram;
pub mod git_repo;
pub mod matrix_user;
pub mod phone;
pub mod pi_process;
pub mod projects;
pub mod synapse;
pub mod workers;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use shepherd_core::client::{Client, Registered};
use shepherd_core::protocol::{ClientKind, Delivery, MessageId, Registration, ServerMsg};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

/// `env` as the borrowed pairs [`Core::start_with`] takes.
pub(crate) fn pairs<'e>(env: &'e [(&'static str, String)]) -> Vec<(&'e str, &'e str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// The `shepherd` binary under test: `$SHEPHERD_BIN`, else the one cargo built next to
/// the running test (`target/<profile>/shepherd`).
pub fn shepherd_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("SHEPHERD_BIN") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>");
    let bin = profile_dir.join("shepherd");
    assert!(
        bin.exists(),
        "{} is missing: build it with `cargo build` (cargo test builds it for the root package's tests)",
        bin.display()
    );
    bin
}

/// A `shepherd up` process on its own temporary agent directory.
pub struct Core {
    dir: tempfile::TempDir,
    child: Option<Child>,
    /// Extra environment for the daemon and CLI runs.
    env: Vec<(String, String)>,
    /// A socket path other than the default, so Pi sessions cannot find the core.
    hidden_socket: Option<PathBuf>,
}

impl Core {
    /// Start a core on a fresh temp dir and wait until it accepts.
    pub async fn start() -> Result<Core> {
        Core::start_with(&[]).await
    }

    /// Start with extra environment (`SHEPHERD_CORE__LIMITS__…` and the like).
    pub async fn start_with(env: &[(&str, &str)]) -> Result<Core> {
        let dir = tempfile::Builder::new().prefix("shp").tempdir_in("/tmp")?;
        let mut core = Core {
            dir,
            child: None,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            hidden_socket: None,
        };
        core.spawn().await?;
        Ok(core)
    }

    /// The Pi agent directory (`PI_CODING_AGENT_DIR`).
    pub fn agent_dir(&self) -> &Path {
        self.dir.path()
    }

    /// `<agent dir>/shepherd`.
    pub fn state_dir(&self) -> PathBuf {
        self.dir.path().join("shepherd")
    }

    pub fn socket(&self) -> PathBuf {
        match &self.hidden_socket {
            Some(path) => path.clone(),
            None => self.state_dir().join("shepherd.sock"),
        }
    }

    /// Restart on a socket Pi sessions do not know (`hidden`), or back on the default.
    /// While hidden, sessions stay disconnected but the CLI still reaches the core.
    pub async fn restart_hidden(&mut self, hidden: bool) -> Result<()> {
        if self.child.is_some() {
            self.terminate()?;
        }
        self.hidden_socket = hidden.then(|| self.dir.path().join("hidden.sock"));
        self.spawn().await
    }

    /// Where the daemon's stderr goes.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("core.log")
    }

    /// The daemon's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// The daemon's pid.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// A `shepherd` command with this core's environment.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(shepherd_bin());
        cmd.env("PI_CODING_AGENT_DIR", self.dir.path())
            .env_remove("SHEPHERD_SOCKET")
            .env_remove("SHEPHERD_CONFIG")
            .env_remove("SHEPHERD_STATE_DIR");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        if let Some(socket) = &self.hidden_socket {
            cmd.env("SHEPHERD_SOCKET", socket);
        }
        cmd
    }

    /// Run a CLI command to completion.
    pub fn cli(&self, args: &[&str]) -> Output {
        self.command()
            .args(args)
            .output()
            .expect("running shepherd")
    }

    /// Run a CLI command with `--json` and parse its stdout; fails on a non-zero exit.
    pub fn cli_json(&self, args: &[&str]) -> Result<Value> {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.cli(&all);
        if !out.status.success() {
            bail!(
                "shepherd {} failed ({}): {}",
                all.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        serde_json::from_slice(&out.stdout).context("CLI output is JSON")
    }

    async fn spawn(&mut self) -> Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())?;
        let child = self
            .command()
            .arg("up")
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("spawning shepherd up")?;
        self.child = Some(child);
        self.wait_ready().await
    }

    async fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                bail!(
                    "shepherd up exited ({status}) before accepting:\n{}",
                    self.log()
                );
            }
            if Client::connect(&self.socket(), ClientKind::Cli, "harness")
                .await
                .is_ok()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("shepherd up did not accept within 15 s:\n{}", self.log());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// SIGKILL the daemon (no clean shutdown) and reap it.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM the daemon and wait for it to exit; its exit status.
    pub fn terminate(&mut self) -> Result<std::process::ExitStatus> {
        let pid = self.pid().context("core is not running")?;
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status()?;
        assert!(status.success(), "kill -TERM failed");
        let exited = self
            .exited_within(Duration::from_secs(10))
            .context("after SIGTERM");
        if exited.is_err() {
            self.kill9();
        }
        exited
    }

    /// Wait (up to `timeout`) for the daemon to exit on its own; its exit status.
    pub fn exited_within(&mut self, timeout: Duration) -> Result<std::process::ExitStatus> {
        let child = self.child.as_mut().context("core is not running")?;
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = child.try_wait()? {
                self.child = None;
                return Ok(status);
            }
            if Instant::now() > deadline {
                bail!("shepherd did not exit within {timeout:?}:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Start the daemon again on the same state directory.
    pub async fn restart(&mut self) -> Result<()> {
        if self.child.is_some() {
            self.terminate()?;
        }
        self.spawn().await
    }

    /// The `[[hosts]]` entry (TOML) of a home core's config that links it to this core as
    /// host `name`, through `shepherd link` on this core's socket (run by a local command,
    /// as `ssh -T me@box shepherd link` would run it on another machine).
    pub fn host_entry(&self, name: &str) -> String {
        format!(
            "[[hosts]]\nname = \"{name}\"\ncommand = [{:?}, \"--socket\", {:?}, \"link\"]\n\n",
            shepherd_bin().display().to_string(),
            self.socket().display().to_string()
        )
    }

    /// A home core's config linking it to `links` (host name, core), each through
    /// [`Core::host_entry`]: the file (keep it while the core runs) and its path, for
    /// `SHEPHERD_CONFIG`.
    pub fn hosts_config(links: &[(&str, &Core)]) -> Result<(tempfile::NamedTempFile, String)> {
        let file = tempfile::NamedTempFile::new()?;
        let text: String = links
            .iter()
            .map(|(name, core)| core.host_entry(name))
            .collect();
        std::fs::write(file.path(), text)?;
        let path = file.path().display().to_string();
        Ok((file, path))
    }

    /// A greeted client of `kind`.
    pub async fn client(&self, kind: ClientKind) -> Result<Client> {
        Ok(Client::connect(&self.socket(), kind, "harness").await?)
    }

    /// Wait until the wall clock (the one the core reads) has moved past session `id`'s
    /// `last_seen`. An answer is "unseen" (and can be taken back) only when it was made
    /// after the session's last contact, compared in milliseconds: one made in the very
    /// millisecond the session left cannot be told from one it saw. A person's answer
    /// always comes later; a test that answers at once waits for this first.
    pub async fn past_last_seen(&self, id: &str) -> Result<()> {
        let mut client = self.client(ClientKind::Cli).await?;
        let sessions = client
            .call(shepherd_core::protocol::requests::ListSessions { id: 0, all: true })
            .await?;
        let last_seen = sessions
            .iter()
            .find(|s| s.id == id)
            .with_context(|| format!("session {id} is not listed"))?
            .last_seen;
        while shepherd_core::clock::now_ms() <= last_seen {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Ok(())
    }

    /// A registered Pi session with this id and name, cwd = the temp dir.
    pub async fn pi(&self, session_id: &str, name: &str) -> Result<Pi> {
        Pi::register(&self.socket(), session_id, name, self.dir.path()).await
    }

    /// A raw, un-greeted socket.
    pub async fn raw(&self) -> Result<Raw> {
        Ok(Raw {
            stream: UnixStream::connect(self.socket()).await?,
        })
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- shepherd core log ---\n{}", self.log());
        }
        self.kill9();
        // tmux-hosted workers outlive the core by design; not the test.
        let tmux = self.state_dir().join("tmux.sock");
        if tmux.exists() {
            let _ = std::process::Command::new("tmux")
                .arg("-S")
                .arg(&tmux)
                .arg("kill-server")
                .output();
        }
    }
}

/// A client registered as a Pi session.
pub struct Pi {
    pub client: Client,
    pub session_id: shepherd_core::protocol::SessionId,
    /// Deliveries announced by `registered` that arrive right after it.
    pub pending: u32,
}

impl Pi {
    /// Connect and register.
    pub async fn register(socket: &Path, session_id: &str, name: &str, cwd: &Path) -> Result<Pi> {
        let mut client = Client::connect(socket, ClientKind::Pi, "harness-pi").await?;
        let reply = client.register(registration(session_id, name, cwd)).await?;
        Ok(Pi {
            client,
            session_id: session_id.into(),
            pending: reply.pending,
        })
    }

    /// The next delivery (skipping other events), within `timeout`.
    pub async fn next_delivery(&mut self, timeout: Duration) -> Result<Delivery> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let msg = tokio::time::timeout_at(deadline, self.client.next_event())
                .await
                .context("no delivery in time")??;
            if let ServerMsg::Deliver { message } = msg {
                return Ok(message);
            }
        }
    }

    /// Acknowledge deliveries.
    pub async fn ack(&mut self, ids: &[MessageId]) -> Result<()> {
        self.client.ack(ids.to_vec()).await?;
        Ok(())
    }
}

/// A bare connection for malformed input.
pub struct Raw {
    pub stream: UnixStream,
}

impl Raw {
    pub async fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.stream.write_all(bytes).await?;
        Ok(())
    }

    /// Write one frame with a correct length prefix around `body`.
    pub async fn write_frame(&mut self, body: &[u8]) -> Result<()> {
        let mut buf = (body.len() as u32).to_be_bytes().to_vec();
        buf.extend_from_slice(body);
        self.write(&buf).await
    }

    /// Write a JSON value as one frame.
    pub async fn send(&mut self, value: &Value) -> Result<()> {
        self.write_frame(value.to_string().as_bytes()).await
    }

    /// Read one frame as JSON, or `None` when the core closed the connection.
    pub async fn read(&mut self, timeout: Duration) -> Result<Option<Value>> {
        tokio::time::timeout(timeout, async {
            let mut header = [0u8; 4];
            match self.stream.read_exact(&mut header).await {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(None),
                Err(e) => return Err(e.into()),
            }
            let mut body = vec![0u8; u32::from_be_bytes(header) as usize];
            self.stream.read_exact(&mut body).await?;
            Ok(Some(serde_json::from_slice(&body)?))
        })
        .await
        .context("no frame in time")?
    }

    /// Half-close: the core sees end of stream.
    pub async fn shutdown_write(&mut self) -> Result<()> {
        self.stream.shutdown().await?;
        Ok(())
    }

    /// Say hello as `kind` and return the welcome.
    pub async fn hello(&mut self, kind: &str) -> Result<Value> {
        self.send(&serde_json::json!({"type": "hello", "id": 1, "protocol": shepherd_core::protocol::PROTOCOL_VERSION, "client": kind}))
            .await?;
        self.read(Duration::from_secs(5))
            .await?
            .context("closed before welcome")
    }
}

// ---------------------------------------------------------------------------------------
// Helpers for the core_* integration tests: full registrations, error codes out of
// `anyhow` errors, waiting for one event, syncing after an `ack`.

/// A registration with the harness defaults for everything but id, name and cwd (the
/// payload's `pid` is left out: the core takes the peer's pid from the socket).
pub fn registration(session_id: &str, name: &str, cwd: &Path) -> Registration {
    Registration {
        session_id: session_id.into(),
        name: Some(name.to_string()),
        cwd: cwd.display().to_string(),
        pid: None,
        model: Some("fake/fake-model".into()),
        context: Default::default(),
        status: "idle".into(),
        role: Default::default(),
        session_file: None,
        subagent: false,
        launch: None,
    }
}

/// The wire error code inside a failed request's error, if the core sent one.
pub fn error_code(err: &anyhow::Error) -> Option<shepherd_core::protocol::ErrorCode> {
    err.downcast_ref::<shepherd_core::client::ClientError>()
        .and_then(shepherd_core::client::ClientError::code)
}

/// The `details` of the core's error frame inside a failed request's error.
pub fn error_details(err: &anyhow::Error) -> Option<Value> {
    match err.downcast_ref::<shepherd_core::client::ClientError>() {
        Some(shepherd_core::client::ClientError::Remote { details, .. }) => details.clone(),
        _ => None,
    }
}

/// The next event for which `pred` holds, skipping others, within `timeout`.
pub async fn next_event_where(
    client: &mut Client,
    timeout: Duration,
    mut pred: impl FnMut(&ServerMsg) -> bool,
) -> Result<ServerMsg> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let msg = tokio::time::timeout_at(deadline, client.next_event())
            .await
            .context("no matching event in time")??;
        if pred(&msg) {
            return Ok(msg);
        }
    }
}

impl Pi {
    /// Connect and register with a full registration; also returns the stored session.
    pub async fn register_full(
        socket: &Path,
        session: Registration,
    ) -> Result<(Pi, shepherd_core::protocol::SessionInfo)> {
        let session_id = session.session_id.clone();
        let mut client = Client::connect(socket, ClientKind::Pi, "harness-pi").await?;
        let Registered {
            pending, session, ..
        } = client.register(session).await?;
        let pi = Pi {
            client,
            session_id,
            pending,
        };
        Ok((pi, session))
    }

    /// A `ping` round trip: every frame this client sent before it (an `ack` too) has
    /// been handled and committed by the core when this returns.
    pub async fn sync(&mut self) -> Result<()> {
        Ok(self.client.ping().await?)
    }
}

impl Core {
    /// A greeted CLI client that has subscribed to presence, ask and report events.
    pub async fn subscriber(&self) -> Result<Client> {
        let mut client = self.client(ClientKind::Cli).await?;
        client.subscribe().await?;
        Ok(client)
    }

    /// Run a CLI command (or a second `shepherd up`) to completion, killing it when it
    /// takes longer than `timeout`.
    pub async fn cli_within(&self, args: &[&str], timeout: Duration) -> Result<Output> {
        let mut cmd = tokio::process::Command::from(self.command());
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        tokio::time::timeout(timeout, cmd.output())
            .await
            .with_context(|| format!("shepherd {} did not finish in {timeout:?}", args.join(" ")))?
            .context("running shepherd")
    }

    /// Whether the daemon's log shows a Rust panic.
    pub fn log_has_panic(&self) -> bool {
        self.log().contains("panicked")
    }
}

/// Poll `f` until it returns `Some`, or fail after `timeout` naming `what`.
pub async fn eventually<T>(
    timeout: Duration,
    what: &str,
    mut f: impl FnMut() -> Option<T>,
) -> Result<T> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Ok(v);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

impl Core {
    /// The connected session named `name`, as `shepherd sessions --json` shows it.
    pub fn session_named(&self, name: &str) -> Option<Value> {
        let sessions = self.cli_json(&["sessions"]).ok()?;
        sessions
            .as_array()?
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
    }

    /// Wait until the session named `name` is connected; returns it.
    pub async fn connected_session(&self, name: &str, timeout: Duration) -> Result<Value> {
        eventually(timeout, &format!("session {name} to connect"), || {
            self.session_named(name)
        })
        .await
    }

    /// Wait until the session `id` is gone from `shepherd sessions --json` (connected
    /// sessions only): the core has handled its leaving and sent the events it causes, so
    /// anything a client does afterwards comes after them.
    pub async fn disconnected(&self, id: &str, timeout: Duration) -> Result<()> {
        eventually(timeout, &format!("session {id} to disconnect"), || {
            let sessions = self.cli_json(&["sessions"]).ok()?;
            (!sessions.as_array()?.iter().any(|s| s["id"] == id)).then_some(())
        })
        .await
    }
}

/// `shepherd bot` (the chat bridges alone) against a running [`Core`], with the bridges'
/// environment given only to it: the bridge can go down and come back while the core
/// keeps running. Killed (SIGKILL) when dropped.
pub struct Bot {
    child: Option<Child>,
    log: PathBuf,
}

impl Core {
    /// Start `shepherd bot` with `env` (the bridge settings), logging to `<dir>/bot.log`.
    pub fn spawn_bot(&self, env: &[(&str, &str)]) -> Result<Bot> {
        let log_path = self.dir.path().join("bot.log");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)?;
        let mut cmd = self.command();
        cmd.arg("bot")
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().context("spawning shepherd bot")?;
        Ok(Bot {
            child: Some(child),
            log: log_path,
        })
    }
}

impl Bot {
    /// Everything every `shepherd bot` of this core logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILL it (no clean shutdown) and reap it.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Bot {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- shepherd bot log ---\n{}", self.log());
        }
        self.kill9();
    }
}

/// The pid of the `shepherd link` process on `socket` (a home core's link to the core
/// there), found in `/proc`.
pub fn link_pid(socket: &Path) -> Option<u32> {
    let socket = socket.display().to_string();
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            let has = |word: &str| args.contains(&word.as_bytes());
            (has("link") && has(&socket)).then_some(pid)
        })
}
