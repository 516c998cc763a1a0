//! # `shepherd up`
//!
//! Runs the core in the foreground: sets up logging (tracing to stderr, filtered by
//! `RUST_LOG`, default `info`; JSON lines with `--json`), builds a multi-threaded tokio
//! runtime and hands the configuration to [`shepherd_core::daemon::run`], which serves
//! until Ctrl-C or SIGTERM. A core that cannot start exits 1 with the reason.

use std::process::ExitCode;

use tracing_subscriber::EnvFilter;

use super::{Ctx, Failure, UpArgs};

/// Run `shepherd up`.
pub fn run(ctx: &Ctx, args: &UpArgs) -> anyhow::Result<ExitCode> {
    let loaded = ctx.load_config()?;
    let log_file = match &args.log_file {
        None => None,
        Some(path) => Some(open_log_file(path.as_deref(), &loaded.config)?),
    };
    init_logging(ctx.json, log_file)?;
    match &loaded.file {
        Some(file) => tracing::info!(config = %file.display(), "configuration read"),
        None => tracing::info!("no config file: running on defaults"),
    }
    // One thread: the hub, connection readers and writers run without cross-thread
    // wake-ups (benches/core.rs measured this halving the round trip).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("shepherd-core")
        .build()
        .map_err(|e| Failure::new("runtime", format!("cannot start the runtime: {e}")))?;
    runtime
        .block_on(shepherd_core::daemon::run(loaded.config))
        .map_err(|e| Failure::new("daemon", e.to_string()))?;
    Ok(ExitCode::SUCCESS)
}

/// The log file to append to: `path`, else `<state dir>/core.log` (the state directory is
/// created private, as the daemon makes it).
fn open_log_file(
    path: Option<&std::path::Path>,
    config: &shepherd_core::config::Config,
) -> Result<std::fs::File, Failure> {
    let path = match path {
        Some(path) => path.to_path_buf(),
        None => {
            let dir = config
                .state_dir()
                .map_err(|e| Failure::new("config", e.to_string()))?;
            shepherd_core::server::private_dir(&dir)
                .map_err(|e| Failure::new("io", e.to_string()))?;
            dir.join("core.log")
        }
    };
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| {
            Failure::new(
                "io",
                format!("cannot open the log file {}: {e}", path.display()),
            )
        })
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
    let writer = match file {
        Some(file) => {
            tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::sync::Mutex::new(file))
        }
        None => tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::io::stderr),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(to_terminal);
    let installed = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
    installed.map_err(|e| Failure::new("logging", format!("cannot set up logging: {e}")))
}
