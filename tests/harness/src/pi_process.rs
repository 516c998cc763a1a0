//! A real Pi process for end-to-end tests: the pinned Pi on Node 22 (installed by
//! `scripts/test-deps.sh`, cached under `target/test-deps/`), in RPC mode, with the
//! shepherd extension loaded and a [`FakeModel`] as its
//! provider. Tests drive it with RPC commands on stdin and watch its JSONL events.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::Notify;

use crate::fake_model::FakeModel;

/// Where the pinned Node and Pi are.
#[derive(Debug, Clone)]
pub struct PiDeps {
    pub node_bin_dir: PathBuf,
    pub pi: PathBuf,
    pub ext: PathBuf,
}

/// The repository root (for scripts and the extension).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

/// Locate (installing on first use) the pinned Node 22 and Pi. Uses the `SHEPHERD_*`
/// variables that `scripts/test.sh` exports, else runs `scripts/test-deps.sh --env`.
/// Fails loudly with the installer's reason; never skips.
pub fn pi_deps() -> Result<PiDeps> {
    static DEPS: OnceLock<std::result::Result<PiDeps, String>> = OnceLock::new();
    DEPS.get_or_init(|| locate().map_err(|e| format!("{e:#}")))
        .clone()
        .map_err(|e| anyhow!("the pinned Pi is not available: {e}"))
}

fn locate() -> Result<PiDeps> {
    let from_env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let (Some(node_bin_dir), Some(pi), Some(ext)) = (
        from_env("SHEPHERD_NODE_BIN_DIR"),
        from_env("SHEPHERD_PI"),
        from_env("SHEPHERD_PI_EXT"),
    ) {
        return Ok(PiDeps {
            node_bin_dir,
            pi,
            ext,
        });
    }
    let script = repo_root().join("scripts/test-deps.sh");
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
    let get = |key: &str| -> Result<PathBuf> {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .map(|v| PathBuf::from(v.trim().trim_matches('\'').trim_matches('"')))
            .with_context(|| format!("{key} missing from test-deps.sh --env output"))
    };
    Ok(PiDeps {
        node_bin_dir: get("SHEPHERD_NODE_BIN_DIR")?,
        pi: get("SHEPHERD_PI")?,
        ext: get("SHEPHERD_PI_EXT")?,
    })
}

/// How to start a Pi.
#[derive(Debug, Clone)]
pub struct PiOptions {
    /// `PI_CODING_AGENT_DIR`.
    pub agent_dir: PathBuf,
    /// Working directory of the session.
    pub cwd: PathBuf,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// Directories put before Node's on PATH (e.g. one holding `shepherd`).
    pub path_prepend: Vec<PathBuf>,
    /// Session name (`--name`).
    pub name: Option<String>,
    /// Load the checkout's extension with `-e` (false: only what Pi's settings load,
    /// e.g. after `shepherd install`).
    pub extension_flag: bool,
    /// More arguments for `pi` (e.g. `--session <file>` to resume a session).
    pub args: Vec<String>,
}

impl PiOptions {
    pub fn new(agent_dir: &Path) -> PiOptions {
        let cwd = agent_dir.join("work");
        PiOptions {
            agent_dir: agent_dir.to_path_buf(),
            cwd,
            env: vec![("SHEPHERD_AUTOSTART".into(), "0".into())],
            path_prepend: Vec::new(),
            name: None,
            extension_flag: true,
            args: Vec::new(),
        }
    }
}

#[derive(Default)]
struct Events {
    records: Mutex<Vec<Value>>,
    changed: Notify,
}

/// A running `pi --mode rpc` with the shepherd extension.
pub struct PiSession {
    child: Child,
    stdin: Option<ChildStdin>,
    events: Arc<Events>,
    cursor: usize,
    next_id: u64,
    stderr_path: PathBuf,
}

impl PiSession {
    /// A `pi` command against `model` in `mode` (`rpc`, `print`, …), with the options'
    /// environment; stdio is left to the caller.
    pub fn pi_command(model: &FakeModel, opts: &PiOptions, mode: &str) -> Result<Command> {
        let deps = pi_deps()?;
        std::fs::create_dir_all(&opts.agent_dir)?;
        std::fs::create_dir_all(&opts.cwd)?;
        std::fs::write(
            opts.agent_dir.join("models.json"),
            serde_json::to_vec_pretty(&model.models_json())?,
        )?;
        let mut path: Vec<PathBuf> = opts.path_prepend.clone();
        path.push(deps.node_bin_dir.clone());
        path.extend(["/usr/local/bin", "/usr/bin", "/bin"].map(PathBuf::from));
        let mut cmd = Command::new(&deps.pi);
        cmd.args([
            "--mode",
            mode,
            "--provider",
            "fake",
            "--model",
            "fake-model",
        ]);
        if opts.extension_flag {
            cmd.arg("-e").arg(&deps.ext);
        }
        if let Some(name) = &opts.name {
            cmd.arg("--name").arg(name);
        }
        cmd.args(&opts.args);
        cmd.current_dir(&opts.cwd)
            .env_clear()
            .env("HOME", &opts.agent_dir)
            .env("PATH", std::env::join_paths(&path)?)
            .env("PI_CODING_AGENT_DIR", &opts.agent_dir)
            .env("PI_OFFLINE", "1")
            .kill_on_drop(true);
        for (k, v) in &opts.env {
            cmd.env(k, v);
        }
        Ok(cmd)
    }

    /// Start Pi in RPC mode against `model`.
    pub async fn spawn(model: &FakeModel, opts: PiOptions) -> Result<PiSession> {
        let deps = pi_deps()?;
        let stderr_path = opts
            .agent_dir
            .join(format!("pi-{}.stderr", std::process::id()));
        let mut cmd = Self::pi_command(model, &opts, "rpc")?;
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&stderr_path)?;
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", deps.pi.display()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().context("pi stdout")?;
        let events = Arc::new(Events::default());
        let sink = events.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).split(b'\n');
            while let Ok(Some(line)) = lines.next_segment().await {
                let line = line.strip_suffix(b"\r").unwrap_or(&line);
                if let Ok(value) = serde_json::from_slice::<Value>(line) {
                    sink.records.lock().unwrap().push(value);
                    sink.changed.notify_waiters();
                }
            }
            sink.changed.notify_waiters();
        });
        Ok(PiSession {
            child,
            stdin,
            events,
            cursor: 0,
            next_id: 1,
            stderr_path,
        })
    }

    /// What Pi wrote to stderr.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// Every stdout record so far.
    pub fn records(&self) -> Vec<Value> {
        self.events.records.lock().unwrap().clone()
    }

    /// Send an RPC command and wait for its response; fails on `success: false`.
    pub async fn command(&mut self, mut cmd: Value) -> Result<Value> {
        let id = format!("t{}", self.next_id);
        self.next_id += 1;
        cmd["id"] = json!(id);
        let stdin = self.stdin.as_mut().context("pi stdin closed")?;
        stdin.write_all(format!("{cmd}\n").as_bytes()).await?;
        stdin.flush().await?;
        let response = self
            .find_from(0, Duration::from_secs(30), |r| {
                r["type"] == "response" && r["id"] == id.as_str()
            })
            .await?;
        if response["success"] != true {
            bail!("pi rejected {cmd}: {response}");
        }
        Ok(response)
    }

    /// Send a prompt (starts a run).
    pub async fn prompt(&mut self, text: &str) -> Result<Value> {
        self.command(json!({"type": "prompt", "message": text}))
            .await
    }

    /// The next record after the cursor that matches; moves the cursor past it.
    pub async fn wait_for(
        &mut self,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Result<Value> {
        let from = self.cursor;
        let (index, value) = self.find_indexed(from, timeout, &pred).await?;
        self.cursor = index + 1;
        Ok(value)
    }

    /// Wait for `agent_settled` (Pi will not continue on its own).
    pub async fn wait_settled(&mut self, timeout: Duration) -> Result<()> {
        self.wait_for(timeout, |r| r["type"] == "agent_settled")
            .await
            .map(|_| ())
    }

    async fn find_from(
        &self,
        from: usize,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Result<Value> {
        self.find_indexed(from, timeout, &pred)
            .await
            .map(|(_, v)| v)
    }

    async fn find_indexed(
        &self,
        from: usize,
        timeout: Duration,
        pred: &dyn Fn(&Value) -> bool,
    ) -> Result<(usize, Value)> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.events.changed.notified();
            {
                let records = self.events.records.lock().unwrap();
                if let Some((i, v)) = records.iter().enumerate().skip(from).find(|(_, v)| pred(v)) {
                    return Ok((i, v.clone()));
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                let records = self.records();
                let tail: Vec<String> = records
                    .iter()
                    .rev()
                    .take(12)
                    .map(|r| r["type"].to_string())
                    .collect();
                bail!(
                    "no matching Pi record within {timeout:?}; last record types (newest first): {tail:?}\n--- pi stderr ---\n{}",
                    self.stderr()
                );
            }
        }
    }

    /// The session file Pi writes (from `get_state`).
    pub async fn session_file(&mut self) -> Result<PathBuf> {
        let state = self.command(json!({"type": "get_state"})).await?;
        state["data"]["sessionFile"]
            .as_str()
            .map(PathBuf::from)
            .with_context(|| format!("no sessionFile in {state}"))
    }

    /// Kill Pi at once (SIGKILL: no `session_shutdown`, as in a crash) and wait for it.
    pub async fn kill(mut self) -> Result<()> {
        self.child.kill().await?;
        Ok(())
    }

    /// Close stdin (orderly shutdown) and wait for exit.
    pub async fn shutdown(mut self) -> Result<std::process::ExitStatus> {
        drop(self.stdin.take());
        match tokio::time::timeout(Duration::from_secs(15), self.child.wait()).await {
            Ok(status) => Ok(status?),
            Err(_) => {
                let _ = self.child.kill().await;
                bail!("pi did not exit within 15 s of closing stdin")
            }
        }
    }
}

/// How many entries of a Pi session file put `needle` in front of the model as the user:
/// plain user messages, and the extension's delivery messages (`custom_message` entries,
/// which Pi sends to the model with role `user`).
pub fn user_messages_containing(session_file: &Path, needle: &str) -> Result<usize> {
    let text = std::fs::read_to_string(session_file)
        .with_context(|| format!("reading {}", session_file.display()))?;
    let mut count = 0;
    for line in text.lines() {
        let entry: Value = serde_json::from_str(line)?;
        let user_message = entry["type"] == "message" && entry["message"]["role"] == "user";
        let delivery =
            entry["type"] == "custom_message" && entry["customType"] == "shepherd-delivery";
        if (user_message || delivery) && entry.to_string().contains(needle) {
            count += 1;
        }
    }
    Ok(count)
}
