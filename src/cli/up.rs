//! # `shepherd up`
//!
//! Runs the core in the foreground, with the chat bridges the configuration names: sets
//! up logging (tracing to stderr or `--log-file`, filtered by `RUST_LOG`, default `info`;
//! JSON lines with `--json`), checks the bridges' settings, starts the core
//! ([`shepherd_core::daemon::start`]) and then the bridges as tasks on the same
//! single-threaded runtime, and serves until Ctrl-C or SIGTERM. `shepherd bot` runs the
//! bridges alone against a core that runs elsewhere. Whatever cannot start exits 1 with
//! the reason.

use std::process::ExitCode;

use shepherd_bridges::Bridges;
use shepherd_core::files;
use tokio_util::sync::CancellationToken;
use tracing_subscriber::EnvFilter;

use super::{Ctx, Failure, UpArgs};

/// Run `shepherd up`. With `--log-file`, a failure to start is also written to the log
/// file as one line ([`START_FAILED`]), so whoever started the core in the background
/// (the Pi extension, `shepherd restart`) can tell the user why.
pub fn run(ctx: &Ctx, args: &UpArgs) -> anyhow::Result<ExitCode> {
    let outcome = serve(ctx, args);
    if let (Err(err), Some(path)) = (&outcome, &args.log_file) {
        record_start_failure(ctx, path.as_deref(), err);
    }
    outcome
}

/// What a start-up failure's log line says before the reason.
pub const START_FAILED: &str = "the core did not start: ";

/// Append `<time> ERROR shepherd up: the core did not start: <reason>` (one line; a JSON
/// line with `--json`) to the log file `up` was given, or, when the configuration that
/// names it cannot be read, to `<state dir>/core.log` as the environment alone places it.
/// Written directly, not through tracing, so no `RUST_LOG` filter can hide it.
fn record_start_failure(ctx: &Ctx, path: Option<&std::path::Path>, err: &anyhow::Error) {
    let reason = one_line(&format!("{err:#}"));
    let path = match path {
        Some(path) => path.to_path_buf(),
        None => {
            let config = match ctx.load_config_raw() {
                Ok(loaded) => loaded.config,
                Err(_) => env_only_config(),
            };
            match config.state_dir() {
                Ok(dir) => {
                    if shepherd_core::files::private_dir(&dir).is_err() {
                        return;
                    }
                    dir.join("core.log")
                }
                Err(_) => return,
            }
        }
    };
    let now = super::format::now_ms();
    let line = if ctx.json {
        serde_json::json!({
            "timestamp": super::format::rfc3339(now),
            "level": "ERROR",
            "fields": {"message": format!("{START_FAILED}{reason}")},
            "target": "shepherd::cli::up",
        })
        .to_string()
    } else {
        format!(
            "{} ERROR shepherd up: {START_FAILED}{reason}",
            super::format::rfc3339(now)
        )
    };
    let written = files::open_private_log(&path)
        .and_then(|(mut f, _)| std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "shepherd: could not write the start-up error to {}: {e}",
            path.display()
        );
    }
}

/// The settings the environment alone gives (`SHEPHERD_STATE_DIR`), for placing the log
/// when the configuration itself is what failed.
fn env_only_config() -> shepherd_core::config::Config {
    let mut config = shepherd_core::config::Config::default();
    config.core.state_dir = std::env::var_os("SHEPHERD_STATE_DIR")
        .filter(|d| !d.is_empty())
        .map(std::path::PathBuf::from);
    config
}

/// `text` on one line: each line trimmed, joined with a space.
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The reason of the last start-up failure written to `log` at or after byte `from` (the
/// log's size before the start; a log rotated meanwhile is read from its beginning).
pub fn start_failure_in_log(log: &std::path::Path, from: u64) -> Option<String> {
    let bytes = std::fs::read(log).ok()?;
    let from = usize::try_from(from).unwrap_or(0);
    let tail = if from <= bytes.len() {
        &bytes[from..]
    } else {
        &bytes[..]
    };
    let text = String::from_utf8_lossy(tail);
    text.lines().rev().find_map(|line| {
        let (_, reason) = line.split_once(START_FAILED)?;
        let reason = match serde_json::from_str::<serde_json::Value>(line) {
            Ok(v) => v["fields"]["message"]
                .as_str()
                .and_then(|m| m.split_once(START_FAILED))
                .map(|(_, r)| r.to_string())?,
            Err(_) => reason.to_string(),
        };
        Some(reason)
    })
}

fn serve(ctx: &Ctx, args: &UpArgs) -> anyhow::Result<ExitCode> {
    let loaded = ctx.load_config()?;
    let log_file = match &args.log_file {
        None => None,
        Some(path) => Some(open_log_file(path.as_deref(), &loaded.config)?),
    };
    start_logging(ctx.json, log_file)?;
    match &loaded.file {
        Some(file) => tracing::info!(config = %file.display(), "configuration read"),
        None => tracing::info!("no config file: running on defaults"),
    }
    warn_exposed_secrets(&loaded);
    // One thread: the hub, connection readers and writers run without cross-thread
    // wake-ups (benches/core/ measured this halving the round trip).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("shepherd-core")
        .build()
        .map_err(|e| Failure::new("runtime", format!("cannot start the runtime: {e}")))?;
    let config = loaded.config;
    shepherd_bridges::validate(&config)
        .map_err(|e| Failure::new("invalid_config", e.to_string()))?;
    let served = runtime.block_on(async {
        let mut running = shepherd_core::daemon::start(config.clone())
            .await
            .map_err(|e| Failure::new("daemon", e.explained()))?;
        let shutdown = CancellationToken::new();
        let bridges = Bridges::spawn(
            &config,
            &running.socket,
            &running.state_dir,
            shutdown.clone(),
        );
        running.until_stopped().await;
        tracing::info!("shutting down");
        stop_bridges(bridges, shutdown).await;
        running.stop().await;
        Ok::<_, Failure>(())
    });
    // Dropping the runtime would wait for every blocking task: one stuck in a read (a
    // user's file on a hung mount) would keep the core from ever exiting after SIGTERM.
    // The store is closed by now; give such tasks a moment, then leave them.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    served?;
    Ok(ExitCode::SUCCESS)
}

/// Warn (never showing a value) when the config file holds a secret or names a secret
/// file (`telegram.token_file`, …) that group or others can read, with the fix.
fn warn_exposed_secrets(loaded: &shepherd_core::config::Loaded) {
    if let (Some(exposed), Some(file)) = (loaded.exposed_secrets(), &loaded.file) {
        tracing::warn!("{exposed}: run `chmod 600 {}`", file.display());
    }
    for exposed in loaded.config.exposed_secret_files() {
        tracing::warn!("{exposed}: run `chmod 600 {}`", exposed.path.display());
    }
}

/// Run `shepherd bot`: only the bridges, against a running core.
pub fn run_bot(ctx: &Ctx, args: &UpArgs) -> anyhow::Result<ExitCode> {
    let loaded = ctx.load_config()?;
    let log_file = match &args.log_file {
        None => None,
        Some(path) => Some(open_log_file(path.as_deref(), &loaded.config)?),
    };
    start_logging(ctx.json, log_file)?;
    warn_exposed_secrets(&loaded);
    let config = loaded.config;
    if config.telegram.is_none() && config.matrix.is_none() {
        return Err(Failure::new(
            "no_bridge",
            "no chat bridge is configured: add a [telegram] or [matrix] section (see config/shepherd.example.toml)",
        )
        .into());
    }
    shepherd_bridges::validate(&config)
        .map_err(|e| Failure::new("invalid_config", e.to_string()))?;
    let socket = config
        .socket_path()
        .map_err(|e| Failure::new("config", e.to_string()))?;
    let state_dir = config
        .state_dir()
        .map_err(|e| Failure::new("config", e.to_string()))?;
    shepherd_core::files::private_dir(&state_dir).map_err(|e| Failure::new("io", e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new("runtime", format!("cannot start the runtime: {e}")))?;
    runtime.block_on(async {
        let shutdown = CancellationToken::new();
        let mut bridges = Bridges::spawn(&config, &socket, &state_dir, shutdown.clone());
        tracing::info!(bridges = ?bridges.names(), socket = %socket.display(), "bridges running");
        tokio::select! {
            _ = shepherd_core::daemon::wait_for_signal() => {
                stop_bridges(bridges, shutdown).await;
                Ok(ExitCode::SUCCESS)
            }
            why = bridges.all_failed() => Err(Failure::new("bridge_stopped", why.join("; ")).into()),
        }
    })
}

async fn stop_bridges(bridges: Bridges, shutdown: CancellationToken) {
    shutdown.cancel();
    if tokio::time::timeout(std::time::Duration::from_secs(5), bridges.join())
        .await
        .is_err()
    {
        tracing::warn!("a bridge did not stop within 5 s");
    }
}

/// A log file over this size at start-up is moved to `<name>.1` (replacing an older one),
/// so an autostarted core's log stays bounded across restarts.
const MAX_LOG_BYTES: u64 = 10 * 1024 * 1024;

/// Move `path` to `<path>.1` when it is larger than `max`. Failing to rotate is not a
/// reason not to start: the log is then appended to as before.
fn rotate_if_large(path: &std::path::Path, max: u64) {
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    if meta.len() <= max {
        return;
    }
    let mut old = path.as_os_str().to_owned();
    old.push(".1");
    if let Err(e) = std::fs::rename(path, &old) {
        eprintln!(
            "shepherd: could not rotate the log file {} ({e}); appending to it",
            path.display()
        );
    }
}

/// The log file to append to: `path`, else `<state dir>/core.log` (the state directory is
/// created private, as the daemon makes it). One over 10 MiB is rotated first.
fn open_log_file(
    path: Option<&std::path::Path>,
    config: &shepherd_core::config::Config,
) -> Result<LogFile, Failure> {
    let path = match path {
        Some(path) => path.to_path_buf(),
        None => {
            let dir = config
                .state_dir()
                .map_err(|e| Failure::new("config", e.to_string()))?;
            shepherd_core::files::private_dir(&dir)
                .map_err(|e| Failure::new("io", e.to_string()))?;
            dir.join("core.log")
        }
    };
    let cannot = |e: std::io::Error| {
        Failure::new(
            "io",
            format!("cannot open the log file {}: {e}", path.display()),
        )
    };
    // Tightened before it is rotated, so `<name>.1` is private too.
    let loosened = files::tighten_log(&path).map_err(cannot)?;
    rotate_if_large(&path, MAX_LOG_BYTES);
    let (file, _) = files::open_private_log(&path).map_err(cannot)?;
    Ok(LogFile {
        file,
        loosened: loosened.map(|mode| (path.clone(), mode)),
    })
}

/// The log file `up` or `bot` appends to, and the mode it had when an older version left
/// it readable by others (said once logging is set up).
struct LogFile {
    file: std::fs::File,
    loosened: Option<(std::path::PathBuf, u32)>,
}

/// Set up logging (to the log file when there is one) and say if the log file had to be
/// made private.
fn start_logging(json: bool, log: Option<LogFile>) -> Result<(), Failure> {
    let (file, loosened) = match log {
        Some(LogFile { file, loosened }) => (Some(file), loosened),
        None => (None, None),
    };
    init_logging(json, file)?;
    if let Some((path, mode)) = loosened {
        tracing::warn!(
            "the log file {} was readable by others (mode {mode:04o}); it is now 0600",
            path.display()
        );
    }
    Ok(())
}

/// tracing to stderr (or the log file); `RUST_LOG` picks what is shown (default `info`).
fn init_logging(json: bool, file: Option<std::fs::File>) -> Result<(), Failure> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => EnvFilter::try_new(&spec).map_err(|e| {
            Failure::new(
                "invalid_log_filter",
                format!(
                    "RUST_LOG={spec:?} is not a log filter ({e}); try RUST_LOG=info or \
                     RUST_LOG=shepherd_core=debug"
                ),
            )
        })?,
        _ => EnvFilter::new("info"),
    };
    let to_terminal = file.is_none() && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let colour = colour_wanted(to_terminal, std::env::var_os("NO_COLOR").as_deref());
    let writer = match file {
        Some(file) => {
            tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::sync::Mutex::new(file))
        }
        None => tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::io::stderr),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(colour);
    let installed = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
    installed.map_err(|e| Failure::new("logging", format!("cannot set up logging: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_log_is_moved_aside_once_and_a_small_one_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("core.log");
        std::fs::write(&log, "small\n").unwrap();
        rotate_if_large(&log, 100);
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "small\n");
        std::fs::write(&log, "x".repeat(101)).unwrap();
        std::fs::write(dir.path().join("core.log.1"), "older").unwrap();
        rotate_if_large(&log, 100);
        assert!(!log.exists());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("core.log.1"))
                .unwrap()
                .len(),
            101
        );
        rotate_if_large(&dir.path().join("missing.log"), 100);
    }
}

/// Colour only on a terminal, and never when `NO_COLOR` is set to anything non-empty
/// (<https://no-color.org>).
fn colour_wanted(to_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    to_terminal && no_color.is_none_or(|value| value.is_empty())
}

#[cfg(test)]
mod colour_tests {
    use super::colour_wanted;
    use std::ffi::OsStr;

    #[test]
    fn no_color_turns_colour_off_on_a_terminal() {
        assert!(colour_wanted(true, None));
        assert!(colour_wanted(true, Some(OsStr::new(""))));
        assert!(!colour_wanted(true, Some(OsStr::new("1"))));
        assert!(!colour_wanted(false, None));
    }
}
