//! # `shepherd stop` and `shepherd restart`
//!
//! `shepherd stop <session> [--then <text>]` interrupts a session instead: the core
//! delivers an `interrupt` (the extension aborts the session's current run, then steers it
//! with the text), and the reply says what the session was doing.
//!
//! Stopping the core (`shepherd stop` with no session) asks the running core to shut down the way Ctrl-C does (SIGTERM to the pid
//! the core gave in its `welcome`) and waits until its socket is gone, so a following
//! `shepherd up` finds the state directory free. Restarting stops the running core (if
//! any) and starts a new one in the background, as the Pi extension does: `shepherd up
//! --log-file` with this command's `--config`, `--socket` and environment, so the
//! configuration is read again exactly as `up` would read it; one `up` would refuse leaves
//! the running core alone. It waits until the new core accepts connections; when it fails
//! to start, the reason it wrote to its log is shown.

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use shepherd_core::client::{Client, ClientError};
use shepherd_core::protocol::{ClientKind, ErrorCode, requests};

use super::{Ctx, Failure, UpArgs, print, print_json};

/// How long a stopping core gets to remove its socket (it gives its connections and
/// bridges 5 s each).
const STOP_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a restarted core gets to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// Run `shepherd stop`.
pub async fn stop(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let (socket, state_dir) = places(ctx)?;
    let stopped = stop_running(&socket, &state_dir).await?;
    if ctx.json {
        print_json(&serde_json::json!({
            "stopped": stopped.is_some(),
            "pid": stopped,
            "socket": socket,
        }))?;
    } else {
        match stopped {
            Some(pid) => print(&format!("stopped the core (pid {pid})\n"))?,
            None => print(&format!(
                "no core is running on {}: nothing to stop\n",
                socket.display()
            ))?,
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Run `shepherd stop <session> [--then <text>]`: interrupt the session's current run.
pub async fn interrupt(ctx: &Ctx, session: &str, then: Option<&str>) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    // `gpu:train-7` names a session on a linked host.
    let (host, name) = super::split_host(session);
    let request = requests::Interrupt {
        session: name.to_string(),
        then: then.map(str::to_string),
        host: host.map(str::to_string),
        ..Default::default()
    };
    let reply = match conn.try_call(request).await? {
        Ok(reply) => reply,
        Err(ClientError::Remote {
            code,
            message,
            details,
        }) => return Err(super::send::explain(session, code, &message, details).into()),
        Err(e) => return Err(Failure::from_client(e, &conn.socket).into()),
    };
    if ctx.json {
        print_json(&serde_json::json!({
            "message_id": reply.message_id,
            "session_id": reply.session_id,
            "session_name": reply.session_name,
            "connected": reply.connected,
            "was": reply.was,
            "then": then,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let name = &reply.session_name;
    let steer = match then {
        Some(_) if reply.connected => "; the steer follows",
        Some(_) => "; the steer waits with it",
        None => "",
    };
    let line = if !reply.connected {
        format!("{name} is not connected: the interrupt waits for its return{steer}\n")
    } else if reply.was.is_idle() {
        let sent = if then.is_some() {
            "; the steer was sent"
        } else {
            ""
        };
        format!("{name} was idle: there was no run to stop{sent}\n")
    } else {
        format!("interrupting {name} (it was {}){steer}\n", reply.was)
    };
    print(&line)?;
    Ok(ExitCode::SUCCESS)
}

/// A connection to this machine's core, started first in the background (logging to the
/// state directory's `core.log`) when none answers: for `shepherd link`.
pub async fn connect_or_start(ctx: &Ctx) -> Result<tokio::net::UnixStream, Failure> {
    let (socket, state_dir) = places(ctx)?;
    if let Ok(stream) = tokio::net::UnixStream::connect(&socket).await {
        return Ok(stream);
    }
    make_state_dir(&state_dir)?;
    start_background(ctx, &socket, &state_dir.join("core.log")).await?;
    tokio::net::UnixStream::connect(&socket).await.map_err(|e| {
        Failure::new(
            "not_running",
            format!("cannot connect to the core on {}: {e}", socket.display()),
        )
    })
}

/// Make the state directory, private, when it is not there yet: the background core's log
/// goes in it, and a machine that never ran shepherd does not have it (`shepherd up` would
/// make it, but only after opening its log).
fn make_state_dir(state_dir: &Path) -> Result<(), Failure> {
    shepherd_core::files::private_dir(state_dir).map_err(|e| {
        Failure::new(
            "io",
            format!(
                "cannot make the state directory {}: {e}",
                state_dir.display()
            ),
        )
    })
}

/// Run `shepherd restart`.
pub async fn restart(ctx: &Ctx, args: &UpArgs) -> anyhow::Result<ExitCode> {
    // A configuration the new core would refuse leaves the running one alone.
    let untouched = |f: Failure| Failure {
        message: format!("{}; the running core, if any, was left running", f.message),
        ..f
    };
    let config = ctx.load_config().map_err(untouched)?.config;
    shepherd_bridges::validate(&config)
        .map_err(|e| untouched(Failure::new("invalid_config", e.to_string())))?;
    let (socket, state_dir) = places(ctx)?;
    let log = match &args.log_file {
        Some(Some(path)) => path.clone(),
        _ => state_dir.join("core.log"),
    };
    let stopped = stop_running(&socket, &state_dir).await?;
    make_state_dir(&state_dir)?;
    let pid = start_background(ctx, &socket, &log).await?;
    if ctx.json {
        print_json(&serde_json::json!({
            "stopped": stopped,
            "pid": pid,
            "socket": socket,
            "log": log,
        }))?;
    } else {
        let before = match stopped {
            Some(old) => format!("stopped the core (pid {old}); "),
            None => "no core was running; ".to_string(),
        };
        print(&format!(
            "{before}started the core (pid {pid}), logging to {}\n",
            log.display()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The socket and the state directory, as `up` would place them.
fn places(ctx: &Ctx) -> Result<(PathBuf, PathBuf), Failure> {
    let config = ctx.load_config()?.config;
    let place = |e: shepherd_core::config::ConfigError| {
        Failure::new("invalid_config", format!("cannot place the socket: {e}"))
    };
    Ok((
        config.socket_path().map_err(place)?,
        config.state_dir().map_err(place)?,
    ))
}

/// SIGTERM the core on `socket` and wait until the socket is gone and the state
/// directory's lock is free (the process has exited): its pid, or `None` when no core
/// answers there.
async fn stop_running(socket: &Path, state_dir: &Path) -> Result<Option<u32>, Failure> {
    let pid = match greet(socket).await {
        Ok(client) => client.welcome().pid,
        // A core of another protocol is what `restart` is for: it welcomed us with its
        // pid, or refused our hello and its pid is in the lock it holds.
        Err(ClientError::ProtocolMismatch { pid, .. }) => pid,
        Err(
            e @ ClientError::Remote {
                code: ErrorCode::ProtocolMismatch,
                ..
            },
        ) => match lock_holder(state_dir) {
            Some(pid) => pid,
            None => return Err(Failure::from_client(e, socket)),
        },
        Err(ClientError::NotRunning { .. }) => return Ok(None),
        Err(e) => return Err(Failure::from_client(e, socket)),
    };
    let target = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| Failure::new("protocol", format!("the core gave pid {pid}")))?;
    rustix::process::kill_process(target, rustix::process::Signal::TERM).map_err(|e| {
        Failure::new(
            "io",
            format!("cannot signal the core (pid {pid}) to stop: {e}"),
        )
    })?;
    let deadline = Instant::now() + STOP_TIMEOUT;
    while socket.exists() || lock_held(state_dir) {
        if Instant::now() > deadline {
            return Err(Failure::new(
                "timeout",
                format!(
                    "the core (pid {pid}) did not stop within {}s; its log says why, \
                     `kill -9 {pid}` ends it",
                    STOP_TIMEOUT.as_secs()
                ),
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(Some(pid))
}

/// Whether a process holds `<state dir>/shepherd.lock` (the core's, released when it
/// exits). A lock file that cannot be opened counts as free: there is nothing to wait for.
fn lock_held(state_dir: &Path) -> bool {
    match std::fs::File::open(state_dir.join("shepherd.lock")) {
        Ok(file) => matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock)),
        Err(_) => false,
    }
}

/// The pid written in `<state dir>/shepherd.lock` while a process holds it (the core).
fn lock_holder(state_dir: &Path) -> Option<u32> {
    if !lock_held(state_dir) {
        return None;
    }
    let text = std::fs::read_to_string(state_dir.join("shepherd.lock")).ok()?;
    text.trim().parse().ok()
}

async fn greet(socket: &Path) -> Result<Client, ClientError> {
    let name = concat!("shepherd-cli ", env!("CARGO_PKG_VERSION"));
    match tokio::time::timeout(
        super::REQUEST_TIMEOUT,
        Client::connect(socket, ClientKind::Cli, name),
    )
    .await
    {
        Ok(result) => result,
        Err(_) => Err(ClientError::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "no welcome in time",
        ))),
    }
}

/// Start `shepherd up --log-file <log>` detached (own process group, no terminal) and
/// wait until it accepts on `socket`: the new core's pid.
async fn start_background(ctx: &Ctx, socket: &Path, log: &Path) -> Result<u32, Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::new("io", format!("cannot find this shepherd binary: {e}")))?;
    let log_size = std::fs::metadata(log).map(|m| m.len()).unwrap_or(0);
    let mut cmd = std::process::Command::new(&exe);
    if let Some(config) = &ctx.config_path {
        cmd.arg("--config").arg(config);
    }
    if let Some(socket) = &ctx.socket {
        cmd.arg("--socket").arg(socket);
    }
    cmd.arg("up").arg("--log-file").arg(log);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd
        .spawn()
        .map_err(|e| Failure::new("io", format!("cannot start `{} up`: {e}", exe.display())))?;
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let reason = super::up::start_failure_in_log(log, log_size)
                .unwrap_or_else(|| format!("`shepherd up` exited ({status})"));
            return Err(Failure::new(
                "not_started",
                format!("the core did not start: {reason} (see {})", log.display()),
            ));
        }
        if let Ok(client) = greet(socket).await {
            return Ok(client.welcome().pid);
        }
        if Instant::now() > deadline {
            return Err(Failure::new(
                "timeout",
                format!(
                    "the new core (pid {}) does not accept connections after {}s; see {}",
                    child.id(),
                    START_TIMEOUT.as_secs(),
                    log.display()
                ),
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
