//! # `shepherd up`
//!
//! Runs the core in the foreground: sets up logging (tracing to stderr, filtered by
//! `RUST_LOG`, default `info`; JSON lines with `--json`), builds a multi-threaded tokio
//! runtime and hands the configuration to [`shepherd_core::daemon::run`], which serves
//! until Ctrl-C or SIGTERM. A core that cannot start exits 1 with the reason.

use std::process::ExitCode;

use tracing_subscriber::EnvFilter;

use super::{Ctx, Failure};

/// Run `shepherd up`.
pub fn run(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let loaded = ctx.load_config()?;
    init_logging(ctx.json)?;
    match &loaded.file {
        Some(file) => tracing::info!(config = %file.display(), "configuration read"),
        None => tracing::info!("no config file: running on defaults"),
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("shepherd-core")
        .build()
        .map_err(|e| Failure::new("runtime", format!("cannot start the runtime: {e}")))?;
    runtime
        .block_on(shepherd_core::daemon::run(loaded.config))
        .map_err(|e| Failure::new("daemon", e.to_string()))?;
    Ok(ExitCode::SUCCESS)
}

/// tracing to stderr; `RUST_LOG` picks what is shown (default `info`).
fn init_logging(json: bool) -> Result<(), Failure> {
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
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let installed = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
    installed.map_err(|e| Failure::new("logging", format!("cannot set up logging: {e}")))
}
