//! # The `shepherd` command line
//!
//! Argument parsing (clap derive; the declarations are in `args.rs`), the context every
//! command shares (global flags, configuration, a greeted connection to the core with a
//! timeout on every request) and the one error type a command reports to the user,
//! [`Failure`]: a stable code for `--json`, a message that says what happened and what to
//! do. Each command lives in its own module; `main` only parses, dispatches and turns the
//! outcome into an exit code.

pub mod agents;
pub mod answer;
pub mod approvals;
mod args;
pub mod asks;
pub mod doctor;
pub mod format;
pub mod help_files;
pub mod hosts;
pub mod install;
pub mod integrate;
pub mod lead;
pub mod lifecycle;
pub mod pairings;
pub mod peek;
pub mod projects;
pub mod reports;
pub mod roles;
pub mod send;
pub mod sessions;
pub mod started;
pub mod status;
pub mod supervise;
pub mod table;
pub mod up;
pub mod usage;
pub mod workers;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use serde::Serialize;
use shepherd_core::client::{Client, ClientError, Request};
use shepherd_core::config::{Config, ConfigError, Loaded};
use shepherd_core::protocol::{ClientKind, ErrorCode};

pub use args::{
    AgentsArgs, AnswerArgs, ApprovalsAction, AskRef, AsksArgs, Cli, Command, HostsAction,
    IntegrateArgs, LeadArgs, PairingsArgs, ReportsArgs, RolesAction, SendArgs, SessionsArgs,
    StopArgs, SuperviseAction, UpArgs, UsageArgs,
};
pub use args::{host_and_session, split_host};

/// Whether a record on `host` (`None`: this core's own) is what `--host wanted` asks for
/// (`here`: this core's own).
pub fn on_host(host: Option<&str>, wanted: &str) -> bool {
    match host {
        None => wanted == "here",
        Some(host) => host == wanted,
    }
}

/// How long the CLI waits for the core to connect or to answer one request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Table width when stdout is not a terminal and `COLUMNS` is unset.
const DEFAULT_WIDTH: usize = 120;

/// Run the parsed command line to an exit code (0 ok, 1 failed; clap exits 2 on usage
/// errors before we get here).
pub fn main(cli: Cli) -> ExitCode {
    let ctx = Ctx {
        json: cli.json,
        config_path: cli.config.clone(),
        socket: cli.socket.clone(),
    };
    let outcome = match cli.command {
        Command::Up(args) => up::run(&ctx, &args),
        Command::Install => install::run(&ctx),
        Command::Bot(args) => up::run_bot(&ctx, &args),
        command => match client_runtime() {
            Ok(rt) => rt.block_on(dispatch(&ctx, command)),
            Err(e) => Err(e),
        },
    };
    match outcome {
        Ok(code) => code,
        Err(err) => report(&ctx, &err),
    }
}

async fn dispatch(ctx: &Ctx, command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Up(_) | Command::Bot(_) | Command::Install => {
            unreachable!("run without the client runtime")
        }
        Command::Status => status::run(ctx).await,
        Command::Sessions(args) => sessions::run(ctx, &args).await,
        Command::Asks(args) => asks::run(ctx, &args).await,
        Command::Answer(args) => answer::run(ctx, &args).await,
        Command::Send(args) => send::run(ctx, &args).await,
        Command::Peek { session } => peek::run(ctx, &session).await,
        Command::New {
            place,
            task,
            branch,
            agent,
        } => started::new(ctx, &place, &task.join(" "), branch, agent).await,
        Command::Continue { session, message } => {
            started::continue_(ctx, &session, &message.join(" ")).await
        }
        Command::Diff { session, stat } => peek::diff(ctx, &session, stat).await,
        Command::Pairings(args) => pairings::run(ctx, &args).await,
        Command::Supervise(args) => supervise::run(ctx, &args.action).await,
        Command::Doctor => doctor::run(ctx).await,
        Command::Stop(StopArgs {
            session: Some(session),
            then,
        }) => lifecycle::interrupt(ctx, &session, then.as_deref()).await,
        Command::Stop(_) => lifecycle::stop(ctx).await,
        Command::Restart(args) => lifecycle::restart(ctx, &args).await,
        Command::Reports(args) => reports::run(ctx, &args).await,
        Command::Roles(args) => match args.action {
            None => roles::roles(ctx, args.host.as_deref()).await,
            Some(RolesAction::Release { role, project }) => {
                roles::release(ctx, &role, project.as_deref()).await
            }
        },
        Command::Staff => roles::staff(ctx).await,
        Command::Agents(args) => agents::run(ctx, &args).await,
        Command::Workers(args) => workers::list(ctx, args.all, args.host.as_deref()).await,
        Command::Close { worker } => workers::close(ctx, &worker).await,
        Command::Attach { worker } => workers::attach(ctx, &worker).await,
        Command::Usage(args) => usage::run(ctx, &args).await,
        Command::Projects(args) => projects::run(ctx, args.host.as_deref(), args.all).await,
        Command::Integrate(args) => integrate::run(ctx, &args).await,
        Command::Resume(args) => lead::resume(ctx, &args).await,
        Command::StopLead(args) => lead::stop(ctx, &args).await,
        Command::Hosts(args) => match args.action {
            None => hosts::list(ctx).await,
            Some(HostsAction::Add { name, command }) => hosts::add(ctx, &name, &command),
        },
        Command::Link => hosts::link(ctx).await,
        Command::Completions { shell } => help_files::completions(shell),
        Command::Man => help_files::man(),
        Command::Approvals(args) => match args.action {
            None => approvals::list(ctx, args.all).await,
            Some(ApprovalsAction::Check { cwd, tool, args }) => {
                approvals::check(ctx, cwd.as_deref(), &tool, &args)
            }
        },
        Command::Approve { approval, session } => {
            approvals::decide(ctx, &approval, true, session, None).await
        }
        Command::Deny { approval, reason } => {
            let reason = Some(reason.join(" ")).filter(|r| !r.trim().is_empty());
            approvals::decide(ctx, &approval, false, false, reason).await
        }
    }
}

fn client_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// Print a failed command's error (stderr, and as JSON on stdout with --json) and give
/// its exit code. A closed stdout (`shepherd sessions | head`) is not an error.
fn report(ctx: &Ctx, err: &anyhow::Error) -> ExitCode {
    if let Some(io) = err.downcast_ref::<std::io::Error>()
        && io.kind() == std::io::ErrorKind::BrokenPipe
    {
        return ExitCode::SUCCESS;
    }
    let failure = err.downcast_ref::<Failure>();
    // The text may carry the core's words (an error's message): no escape sequence or
    // other control character of theirs reaches the terminal.
    let message = format::strip_controls(&format!("{err:#}"));
    if ctx.json {
        let body = serde_json::json!({"error": {
            "code": failure.map_or("failed", |f| f.code.as_str()),
            "message": message,
            "details": failure.and_then(|f| f.details.clone()),
        }});
        let _ = writeln!(std::io::stdout(), "{body:#}");
    }
    eprintln!("shepherd: {message}");
    ExitCode::FAILURE
}

/// Why a command failed, in words a person can act on, plus a stable code for `--json`
/// (the core's error code when the core refused, else a CLI code such as `not_running`).
#[derive(Debug, Clone)]
pub struct Failure {
    pub code: String,
    pub message: String,
    pub details: Option<serde_json::Value>,
}

impl Failure {
    /// A failure with a CLI code and no details.
    pub fn new(code: &str, message: impl Into<String>) -> Failure {
        Failure {
            code: code.to_string(),
            message: message.into(),
            details: None,
        }
    }

    /// The core's refusal, with a hint on what to do for the codes that need one.
    pub fn remote(code: ErrorCode, message: &str, details: Option<serde_json::Value>) -> Failure {
        let hint = match code {
            ErrorCode::ProtocolMismatch => {
                " — this shepherd and the running core differ: restart the core with this \
                 version (`shepherd restart`), or upgrade this shepherd if the core is newer"
            }
            ErrorCode::ShuttingDown => " — the core is stopping: start it again with `shepherd up`",
            // The core's words say what was kept and done when they can.
            ErrorCode::StoreFailed if message.contains("nothing was") => {
                " — `shepherd doctor` checks the database and the disk it is on"
            }
            ErrorCode::StoreFailed => {
                " — nothing was kept; `shepherd doctor` checks the database and the disk it is on"
            }
            ErrorCode::Internal => {
                " — a bug in the shepherd core; its log (stderr of `shepherd up`) has more"
            }
            ErrorCode::LimitExceeded => " — see [core.limits] in config/shepherd.example.toml",
            _ => "",
        };
        Failure {
            code: code.as_str().to_string(),
            message: format!("{message}{hint}"),
            details,
        }
    }

    /// The running core welcomed this CLI with protocol `core`, not ours: which versions,
    /// and what to do (the older side is the one to replace).
    pub fn protocol_mismatch(core: u32, core_version: &str, pid: u32) -> Failure {
        let ours = shepherd_core::protocol::PROTOCOL_VERSION;
        let this = env!("CARGO_PKG_VERSION");
        let todo = if core < ours {
            "the core is older: restart it with this version (`shepherd restart`)"
        } else {
            "this shepherd is older than the core: upgrade it to the core's version, \
             or restart the core with this one (`shepherd restart`)"
        };
        Failure {
            code: "protocol_mismatch".to_string(),
            message: format!(
                "the running shepherd core {core_version} (pid {pid}) speaks intercom protocol \
                 {core}, this shepherd {this} speaks protocol {ours}; {todo}"
            ),
            details: Some(serde_json::json!({
                "core_protocol": core,
                "core_version": core_version,
                "pid": pid,
                "protocol": ours,
            })),
        }
    }

    /// A client error while talking to the core on `socket`.
    pub fn from_client(err: ClientError, socket: &std::path::Path) -> Failure {
        match err {
            ClientError::NotRunning { .. } => Failure::new("not_running", err.to_string()),
            ClientError::Remote {
                code,
                message,
                details,
            } => Failure::remote(code, &message, details),
            ClientError::ProtocolMismatch {
                core,
                core_version,
                pid,
            } => Failure::protocol_mismatch(core, &core_version, pid),
            ClientError::Closed => Failure::new(
                "closed",
                "the core closed the connection (is it stopping?): check with `shepherd status`",
            ),
            ClientError::Unexpected { request, reply } => Failure::new(
                "protocol",
                format!(
                    "the core answered `{request}` with `{reply}`: this shepherd and the core \
                     differ; restart the core with this version (`shepherd up`)"
                ),
            ),
            ClientError::Protocol(detail) => Failure::new(
                "protocol",
                format!(
                    "unexpected reply from the core ({detail}): this shepherd and the core \
                     differ; restart the core with this version (`shepherd up`)"
                ),
            ),
            ClientError::Io(e) => Failure::new(
                "io",
                format!(
                    "cannot talk to the core on {}: {e}; `shepherd doctor` checks the socket",
                    socket.display()
                ),
            ),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// What every command gets: global flags, and from them the configuration and a
/// connection to the core.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub json: bool,
    pub config_path: Option<PathBuf>,
    pub socket: Option<PathBuf>,
}

impl Ctx {
    /// The configuration (defaults < file < environment), with `--socket` applied last.
    pub fn load_config(&self) -> Result<Loaded, Failure> {
        self.load_config_raw().map_err(|e| {
            Failure::new(
                "invalid_config",
                format!(
                    "{e} — fix it; config/shepherd.example.toml documents every setting \
                     (`shepherd doctor` checks the rest)"
                ),
            )
        })
    }

    /// [`Ctx::load_config`] with the library's error, for callers that explain it
    /// themselves.
    pub fn load_config_raw(&self) -> Result<Loaded, ConfigError> {
        let mut loaded = Config::load(self.config_path.as_deref())?;
        self.apply_flags(&mut loaded.config);
        Ok(loaded)
    }

    /// Put command-line flags (the highest precedence) onto a configuration.
    pub fn apply_flags(&self, config: &mut Config) {
        if let Some(socket) = &self.socket {
            config.core.socket = Some(socket.clone());
        }
    }

    /// Load the configuration and connect to the core as the CLI.
    pub async fn connect(&self) -> Result<Connection, Failure> {
        let loaded = self.load_config()?;
        let socket = loaded
            .config
            .socket_path()
            .map_err(|e| Failure::new("invalid_config", format!("cannot place the socket: {e}")))?;
        let name = concat!("shepherd-cli ", env!("CARGO_PKG_VERSION"));
        let client = tokio::time::timeout(
            REQUEST_TIMEOUT,
            Client::connect(&socket, ClientKind::Cli, name),
        )
        .await
        .map_err(|_| timed_out(&socket))?
        .map_err(|e| Failure::from_client(e, &socket))?;
        Ok(Connection { client, socket })
    }
}

fn timed_out(socket: &std::path::Path) -> Failure {
    Failure::new(
        "timeout",
        format!(
            "the core on {} did not answer within {}s: it may be stuck; check its log, \
             restart it (`shepherd up`), `shepherd doctor` checks the rest",
            socket.display(),
            REQUEST_TIMEOUT.as_secs()
        ),
    )
}

/// A greeted CLI connection to the core.
pub struct Connection {
    pub client: Client,
    pub socket: PathBuf,
}

impl Connection {
    /// Send one request and wait (at most [`REQUEST_TIMEOUT`]) for its reply. An error
    /// response is returned as the client's `Remote` error for the caller to explain; use
    /// [`Connection::call`] when the generic explanation will do.
    pub async fn try_call<R: Request>(
        &mut self,
        request: R,
    ) -> Result<Result<R::Reply, ClientError>, Failure> {
        tokio::time::timeout(REQUEST_TIMEOUT, self.client.call(request))
            .await
            .map_err(|_| timed_out(&self.socket))
    }

    /// Send one request; any error becomes a [`Failure`].
    pub async fn call<R: Request>(&mut self, request: R) -> Result<R::Reply, Failure> {
        let socket = self.socket.clone();
        self.try_call(request)
            .await?
            .map_err(|e| Failure::from_client(e, &socket))
    }

    /// A listing: `host`'s alone when one is named (`--host`), else this core's and every
    /// connected linked host's (records marked with their host). Linked hosts it could
    /// not hear from are named on stderr with why, so nothing is left out silently.
    pub async fn herd_list<R, T>(
        &mut self,
        host: Option<&str>,
        make: impl Fn(Option<String>) -> R,
    ) -> Result<Vec<T>, Failure>
    where
        R: Request<Reply = Vec<T>>,
    {
        if host.is_some() {
            return self.call(make(host.map(str::to_string))).await;
        }
        self.herd_merged(make, |all, more| all.extend(more)).await
    }

    /// This core's answer to `make(None)` with each connected linked host's answer to
    /// `make(Some(host))` `merge`d in; the hosts it could not hear from are named on
    /// stderr with why.
    pub async fn herd_merged<R: Request>(
        &mut self,
        make: impl Fn(Option<String>) -> R,
        merge: impl FnMut(&mut R::Reply, R::Reply),
    ) -> Result<R::Reply, Failure> {
        let socket = self.socket.clone();
        let asked = self.client.across_hosts_merged(make, merge);
        let (whole, missing) = tokio::time::timeout(REQUEST_TIMEOUT, asked)
            .await
            .map_err(|_| timed_out(&socket))?
            .map_err(|e| Failure::from_client(e, &socket))?;
        for (name, why) in &missing {
            eprintln!("host {name} is left out ({why}); `shepherd hosts` shows its link");
        }
        Ok(whole)
    }
}

/// Print a value as pretty JSON on stdout.
pub fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

/// Print text on stdout as is.
pub fn print(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// The width tables are fitted into: `COLUMNS`, else the terminal's, else 120.
pub fn terminal_width() -> usize {
    width_or(DEFAULT_WIDTH)
}

/// The width running text is wrapped to: `COLUMNS`, else the terminal's, else 80.
pub fn text_width() -> usize {
    width_or(80)
}

fn width_or(default: usize) -> usize {
    if let Some(cols) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
    {
        return cols;
    }
    let stdout = std::io::stdout();
    if stdout.is_terminal()
        && let Ok(size) = rustix::termios::tcgetwinsize(&stdout)
        && size.ws_col > 0
    {
        return usize::from(size.ws_col);
    }
    default
}

/// Replace this process with `tmux` on the workers' private server, running `args`.
fn tmux_attach(ctx: &Ctx, args: &[&str]) -> anyhow::Result<ExitCode> {
    let loaded = ctx.load_config()?;
    let state_dir = loaded
        .config
        .state_dir()
        .map_err(|e| Failure::new("config", e.to_string()))?;
    use std::os::unix::process::CommandExt;
    let err = std::process::Command::new("tmux")
        .arg("-S")
        .arg(state_dir.join("tmux.sock"))
        .args(args)
        .exec();
    Err(Failure::new("tmux", format!("cannot run tmux: {err}; is it installed?")).into())
}
