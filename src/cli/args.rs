//! # What the command line accepts
//!
//! The clap derive types of `shepherd`: the global flags ([`Cli`]), every subcommand
//! ([`Command`]) with its help text, and each subcommand's arguments. Declarations only;
//! the parent module runs what they parse.
// The `///` comments here are the commands' `--help` text, written for the terminal: its
// `[telegram]` names a config section and `<agent dir>` a placeholder, not rustdoc markup.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Run and steer many Pi coding-agent sessions from your phone.
///
/// `shepherd up` starts the core; Pi sessions with the shepherd extension connect to it.
/// The other commands talk to the running core over its socket: list sessions and asks,
/// answer, steer, and have a supervisor session watch a worker (`shepherd supervise`).
#[derive(Debug, Parser)]
#[command(name = "shepherd", version, propagate_version = true)]
pub struct Cli {
    /// Config file (TOML). Default: $PI_CODING_AGENT_DIR/shepherd/config.toml when it
    /// exists; no file is needed.
    #[arg(
        long,
        global = true,
        env = "SHEPHERD_CONFIG",
        hide_env_values = true,
        value_name = "PATH"
    )]
    pub config: Option<PathBuf>,

    /// The core's socket. Overrides SHEPHERD_SOCKET and `core.socket` from the config.
    #[arg(long, global = true, value_name = "PATH")]
    pub socket: Option<PathBuf>,

    /// Print machine-readable JSON instead of text (errors too, as {"error": {...}}).
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start the core in the foreground (Ctrl-C or SIGTERM stops it cleanly).
    ///
    /// Logs go to stderr, filtered by RUST_LOG (default `info`); with --json they are
    /// JSON lines. A second `shepherd up` on the same state directory refuses and names
    /// the running pid.
    Up(UpArgs),
    /// Show the running core: versions, uptime, pid, paths, sessions, asks, bridges.
    Status,
    /// List Pi sessions (connected ones; --all adds those that went away).
    Sessions(SessionsArgs),
    /// List asks: questions sessions wait on (open ones; --all adds answered ones).
    Asks(AsksArgs),
    /// Answer an ask. The first answer wins; the asking session receives it.
    Answer(AnswerArgs),
    /// Steer a session: send it text it will see as coming from you.
    ///
    /// The session is named by exact id, unique id prefix or unique name. If it is not
    /// connected, the text waits until it reconnects.
    Send(SendArgs),
    /// Show what a session is doing now: its status and for how long, the tool call
    /// running (with its arguments), the last text the model wrote and the last lines of
    /// the last tool output. Read from its session file; changes nothing.
    #[command(
        after_help = "Examples:\n  shepherd peek fix-login\n  shepherd peek app@main\n  shepherd peek gpu:train-7"
    )]
    Peek {
        /// Exact session id, unique id prefix, unique name or `repo@branch`; `HOST:SESSION`
        /// for a session on a linked host.
        #[arg(value_name = "SESSION")]
        session: String,
    },
    /// Show what a session changed: from where its branch left the primary branch (in the
    /// primary checkout: its last commit) to its working tree now, new files included.
    ///
    /// The patch goes to stdout, so `shepherd diff fix-login | git apply` takes it into
    /// another checkout of the base commit; --stat shows the summary instead.
    #[command(
        after_help = "Examples:\n  shepherd diff fix-login\n  shepherd diff app@feat/login --stat\n  shepherd diff gpu:train-7 > train.diff"
    )]
    Diff {
        /// Exact session id, unique id prefix, unique name or `repo@branch`; `HOST:SESSION`
        /// for a session on a linked host.
        #[arg(value_name = "SESSION")]
        session: String,
        /// Only the summary: the files changed and their lines added and removed.
        #[arg(long)]
        stat: bool,
    },
    /// List supervisor/worker pairings (active ones; --all adds ended ones).
    ///
    /// Each row: id, worker, supervisor, goal, looks, steers, state (active, or how it
    /// ended and by whom) and which sides are connected.
    Pairings(PairingsArgs),
    /// Have a supervisor session watch a worker session toward a goal: start, change the
    /// goal, look now, stop.
    ///
    /// The supervisor is a second Pi session: at each look it reads what the worker did
    /// and steers it, lets it run, or says it is done. Steers and the end show up on your
    /// phone too.
    Supervise(SuperviseArgs),
    /// Check the installation: state directory, socket, core, database, config, Node,
    /// Pi and the shepherd extension, each with a fix.
    Doctor,
    /// Without a session: stop the running core the way Ctrl-C does, and wait until it is
    /// gone (with no core running it says so and succeeds). With a session: interrupt its
    /// current run (as Escape in Pi does), then steer it with --then.
    Stop(StopArgs),
    /// Stop the running core (if any) and start it again in the background, as the Pi
    /// extension starts it: `shepherd up --log-file` with this command's --config, --socket
    /// and environment (the config file is read again). Waits until the new core accepts
    /// connections, or shows why it did not start.
    Restart(UpArgs),
    /// Run only the chat bridges (the [telegram] and [matrix] sections), against a core that runs
    /// elsewhere. `shepherd up` already runs them with the core.
    Bot(UpArgs),
    /// Install the Pi extension: write it to <agent dir>/shepherd/pi-ext and add it to
    /// Pi's settings.json `packages`. Safe to run again (it updates an old copy).
    Install,
    /// List the role leases: the Manager of each repository and the Chief, who holds
    /// each, and whether the holder is connected or away.
    ///
    /// A Pi session takes a role with `/manager` (in a repository's primary checkout) or
    /// `/chief`, and leaves it with `/manager leave` or `/chief leave`. A lease whose holder
    /// is away may be taken by another session; one away longer than
    /// `[roles] away_expiry_hours` is released by the core. `shepherd roles release` takes
    /// a lease away from its holder, connected or away.
    Roles(RolesArgs),
    /// Show who reports to whom: the Chief, each Manager with the Leads of its repository,
    /// then the sessions that report to you; with state, branch, open asks and id.
    ///
    /// Lists every connected session and every lease holder. Steer one with
    /// `shepherd send <id> <text>`.
    Staff,
    /// List what sessions reported and the results of their runs (each run's final text),
    /// newest last: all sessions, or one.
    Reports(ReportsArgs),
    /// List the agent definitions a managed worker can be started from, and where each
    /// came from.
    ///
    /// `<dir>/.pi/agents/*.md` (project) overrides `<agent dir>/agents/*.md` (global),
    /// which overrides the bundled scout, implementer and reviewer. A file that cannot be
    /// used is listed at the end with its error (the file and the field).
    Agents(AgentsArgs),
    /// List the managed workers: each owner's workers (and theirs) with label, id,
    /// definition, state, age and task. `--all`: ended ones too.
    ///
    /// A Pi session starts a worker with its `delegate_agent` tool; the worker's result
    /// comes back to that session once.
    Workers(WorkersArgs),
    /// Close a managed worker (its own workers first): its process stops, a question it
    /// asked is abandoned, its Pi session file is kept. WORKER: its label or #id
    /// (`gpu#5` or `gpu:label` on a linked host). A session started with `shepherd new` or
    /// `shepherd continue` is closed the same way, by its name or id.
    Close {
        #[arg(value_name = "WORKER|SESSION")]
        worker: String,
    },
    /// Start a Pi session on a task: in a project's directory, or in a new linked worktree
    /// on a new branch (--branch). The task is its first message; it runs through the
    /// worker host (tmux or headless, as `[workers]` says) and shows on your phone like
    /// any session. Projects: the repositories sessions ran in, and those one level below
    /// `[projects] roots`.
    #[command(
        after_help = "Examples:\n  shepherd new app \"fix the flaky login test\"\n  shepherd new app --branch feat/export \"add CSV export\"\n  shepherd new app --agent reviewer \"review the open branch\"\n  shepherd new ~/src/app \"update the README\"\n  shepherd new gpu:trainer \"run the small config\""
    )]
    New {
        /// A project's name (`gpu:app` on a linked host) or a directory.
        #[arg(value_name = "PROJECT|DIR")]
        place: String,
        /// What to do; several words are joined with spaces.
        #[arg(required = true, value_name = "TASK")]
        task: Vec<String>,
        /// Work in a new linked worktree on this new branch.
        #[arg(long, value_name = "NAME")]
        branch: Option<String>,
        /// Start it as this agent definition (its model, thinking, tools and prompt), found
        /// as `delegate_agent` finds one (`shepherd agents` lists them).
        #[arg(long, value_name = "DEF")]
        agent: Option<String>,
    },
    /// Start an ended session again on its own session file, in its directory, with the
    /// same id; MESSAGE, when given, is its next message.
    #[command(
        after_help = "Examples:\n  shepherd continue fix-login\n  shepherd continue app@feat/export \"now the tests\""
    )]
    Continue {
        /// Exact session id, unique id prefix, unique name or `repo@branch`; `HOST:SESSION`
        /// for a session on a linked host.
        #[arg(value_name = "SESSION")]
        session: String,
        #[arg(value_name = "MESSAGE")]
        message: Vec<String>,
    },
    /// Open a tmux-hosted worker's window in this terminal (detach with the tmux prefix, then d).
    Attach {
        #[arg(value_name = "WORKER")]
        worker: String,
    },
    /// Tokens and cost from the Pi session files: per session, per model (highest cost
    /// first) and in total. Without a session, every session the core knows a session
    /// file of; with one, that session and the workers it owns.
    ///
    /// Sessions whose file cannot be read are listed as not counted, with the reason
    /// ("coverage incomplete"); nothing is estimated.
    Usage(UsageArgs),
    /// List project work: each repository's Manager and its work assignments.
    ///
    /// Per repository: name, primary worktree, primary branch, its Manager or "no
    /// manager"; per assignment: branch, state, Lead state, last update (age and first
    /// line), ahead/behind the primary branch, open asks, tokens and cost of the Lead's tree.
    ///
    /// Project work starts in Pi: `/manager` in a repository's primary worktree, then the
    /// Manager's `delegate_project` tool starts a Lead on a new branch in its own worktree.
    #[command(after_help = "Examples:\n  shepherd projects\n  shepherd projects --json")]
    Projects(ProjectsArgs),
    /// Integrate an assigned branch: fast-forward the primary branch to it, as the human.
    ///
    /// Approves a Manager's integrate_branch, or runs one on your own: REPO's primary
    /// branch is fast-forwarded to SHA, the branch's tip, then the branch's worktree is
    /// removed and the assignment retired (the branch is kept).
    ///
    /// Refused, with nothing changed, when SHA is not the branch's tip, the primary branch
    /// cannot be fast-forwarded to it, or the primary worktree has uncommitted changes. If
    /// removing the worktree fails, the same command again finishes it.
    #[command(
        after_help = "Examples:\n  shepherd integrate app feat/export 4b1d2c3e5f60718293a4b5c6d7e8f90a1b2c3d4e\n  shepherd integrate ~/src/app feat/export \"$(git -C ~/src/app rev-parse feat/export)\""
    )]
    Integrate(IntegrateArgs),
    /// Start an assignment's Lead again (the same Pi session in the same worktree).
    ///
    /// Says so when the Lead already runs. A retired (integrated) assignment cannot be
    /// resumed.
    #[command(
        after_help = "Examples:\n  shepherd resume feat/export\n  shepherd resume feat/export --repo app"
    )]
    Resume(LeadArgs),
    /// Stop an assignment's Lead and its workers; the assignment is paused.
    ///
    /// Its session, branch, worktree and uncommitted changes are kept; `shepherd resume`
    /// starts the same Lead again.
    #[command(
        after_help = "Examples:\n  shepherd stop-lead feat/export\n  shepherd stop-lead feat/export --repo ~/src/app"
    )]
    StopLead(LeadArgs),
    /// List the other machines' cores this one links to (`[[hosts]]`), or add one.
    ///
    /// Each row: the host, its link's state (connected, connecting since, failed with the
    /// reason ssh or the far core gave), the last round trip, the far core's version and
    /// protocol, its connected sessions and open asks, the link command. `shepherd
    /// sessions` lists the linked hosts' sessions too, in a HOST column.
    #[command(
        after_help = "Examples:\n  shepherd hosts\n  shepherd hosts add gpu -- ssh -T me@gpu-box shepherd link\n  shepherd hosts --json"
    )]
    Hosts(HostsArgs),
    /// The far end of a host link: start this machine's core if none runs, then join
    /// stdin and stdout to its socket until either side closes.
    ///
    /// Not run by hand: the home core's link command runs it (`ssh -T me@this-box shepherd
    /// link`).
    Link,
    /// Tool calls waiting for your decision (`[approvals]` rules that ask): each with its
    /// id, session, tool, the command or path, the rule and its age. `--all` adds the
    /// decided ones, with who decided. `check` tests the policy without an agent.
    #[command(
        after_help = "Examples:\n  shepherd approvals\n  shepherd approvals --all\n  shepherd approvals check -- bash \"git push origin main\"\n  shepherd approvals check --cwd ~/src/app -- write .env"
    )]
    Approvals(ApprovalsArgs),
    /// Print a shell completion script: `shepherd completions bash > ~/.local/share/bash-completion/completions/shepherd`.
    #[command(
        after_help = "Examples:\n  shepherd completions bash > ~/.local/share/bash-completion/completions/shepherd\n  shepherd completions zsh > ~/.zfunc/_shepherd\n  shepherd completions fish > ~/.config/fish/completions/shepherd.fish"
    )]
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `shepherd man | man -l -`.
    Man,
    /// Allow a held tool call: it runs. `--session`: the same rule stops asking that
    /// session until it ends.
    #[command(
        after_help = "Examples:\n  shepherd approve 4\n  shepherd approve 4 --session\n  shepherd approve gpu:4"
    )]
    Approve {
        /// The approval's id (`shepherd approvals` lists them; `gpu:4` on a linked host).
        #[arg(value_name = "ID")]
        approval: String,
        #[arg(long)]
        session: bool,
    },
    /// Deny a held tool call: it does not run; the reason, if given, is what the agent
    /// reads.
    #[command(
        after_help = "Examples:\n  shepherd deny 4\n  shepherd deny 4 push to a branch, not main"
    )]
    Deny {
        /// The approval's id (`gpu:4` on a linked host).
        #[arg(value_name = "ID")]
        approval: String,
        /// Why, for the agent (the rest of the line).
        #[arg(value_name = "REASON", trailing_var_arg = true)]
        reason: Vec<String>,
    },
}

/// `shepherd approvals`.
#[derive(Debug, Args)]
pub struct ApprovalsArgs {
    /// Also the decided and withdrawn ones (newest first).
    #[arg(long)]
    pub all: bool,
    #[command(subcommand)]
    pub action: Option<ApprovalsAction>,
}

#[derive(Debug, Subcommand)]
pub enum ApprovalsAction {
    /// Which rule decides a tool call, and what it decides (allow, ask or deny), without
    /// running an agent: your config's rules, then its preset's, then its default, and
    /// the project's `.pi/shepherd.toml` (which may only tighten them).
    Check {
        /// The session's directory (default: this one); its git worktree's project file
        /// applies.
        #[arg(long, value_name = "DIR")]
        cwd: Option<std::path::PathBuf>,
        /// The tool: `bash`, `write`, `edit`, `read`, or another tool's name.
        #[arg(value_name = "TOOL")]
        tool: String,
        /// `bash`: the command; `write`, `edit`, `read`: the path; another tool: its
        /// arguments as one JSON object.
        #[arg(
            value_name = "ARG",
            trailing_var_arg = true,
            allow_hyphen_values = true
        )]
        args: Vec<String>,
    },
}

/// `shepherd hosts`.
#[derive(Debug, Args)]
pub struct HostsArgs {
    #[command(subcommand)]
    pub action: Option<HostsAction>,
}

#[derive(Debug, Subcommand)]
pub enum HostsAction {
    /// Add a host to the config file: its name, then `--` and the command whose stdin and
    /// stdout reach that machine's `shepherd link`. `shepherd restart` links it.
    Add {
        /// How listings name the host: lowercase letters, digits and `-` (`gpu`).
        #[arg(value_name = "NAME")]
        name: String,
        /// The link command and its arguments (no shell), after `--`.
        #[arg(value_name = "CMD", last = true, required = true)]
        command: Vec<String>,
    },
}

/// `shepherd integrate`.
#[derive(Debug, Args)]
pub struct IntegrateArgs {
    /// The repository: its name (as `shepherd projects` shows it) or a path in it.
    #[arg(value_name = "REPO")]
    pub repo: String,
    /// The assigned branch.
    #[arg(value_name = "BRANCH")]
    pub branch: String,
    /// The branch's tip, as you reviewed it (`git rev-parse <branch>`).
    #[arg(value_name = "SHA")]
    pub sha: String,
    /// When the checkout holds what its branch does not (changes, untracked or ignored
    /// files, a nested repository), remove it anyway: its directory is moved aside whole,
    /// next to where it was, and git forgets it. Nothing is deleted.
    #[arg(long)]
    pub remove_anyway: bool,
}

/// `shepherd resume` and `shepherd stop-lead`.
#[derive(Debug, Args)]
pub struct LeadArgs {
    /// The assigned branch.
    #[arg(value_name = "BRANCH")]
    pub branch: String,
    /// The repository (name or path), when the branch is assigned in more than one.
    #[arg(long, value_name = "REPO")]
    pub repo: Option<String>,
}

/// `shepherd workers`.
#[derive(Debug, Args)]
pub struct WorkersArgs {
    /// Also list workers that ended (done or closed).
    #[arg(long)]
    pub all: bool,
    /// A linked host's workers (its core's, through the link), instead of this machine's.
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
}

/// `shepherd agents`.
#[derive(Debug, Args)]
pub struct AgentsArgs {
    /// The directory whose project definitions (`DIR/.pi/agents`) count; default: this one.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

/// `shepherd usage`.
#[derive(Debug, Args)]
pub struct UsageArgs {
    /// Only this session and its workers: exact id, unique id prefix, or unique name;
    /// `HOST:SESSION` for a session on a linked host.
    #[arg(value_name = "SESSION")]
    pub session: Option<String>,
    /// A linked host's usage (its core's, through the link), instead of this machine's.
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
}

/// `shepherd projects`.
#[derive(Debug, Args)]
pub struct ProjectsArgs {
    /// A linked host's project work (its core's, through the link), instead of this
    /// machine's.
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Retired work too: each integrated assignment with its sha and date, and those
    /// retired without integration.
    #[arg(long)]
    pub all: bool,
}

/// `shepherd reports`.
#[derive(Debug, Args)]
pub struct ReportsArgs {
    /// Only this session's: exact id, unique id prefix, or unique name; `HOST:SESSION`
    /// for a session on a linked host.
    #[arg(value_name = "SESSION")]
    pub session: Option<String>,
    /// A linked host's reports (its core's, through the link), instead of this machine's.
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Show the newest this many.
    #[arg(long, short = 'n', default_value_t = 20, value_name = "N")]
    pub limit: u32,
}

/// `shepherd up`.
#[derive(Debug, Args)]
pub struct UpArgs {
    /// Append logs to a file instead of stderr; without a value, `<state dir>/core.log`
    /// (what the Pi extension uses when it starts the core in the background). A file over
    /// 10 MiB is moved to `<file>.1` first.
    #[arg(long, value_name = "PATH", num_args = 0..=1)]
    pub log_file: Option<Option<PathBuf>>,
}

/// `shepherd sessions`.
#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Also list sessions that are not connected.
    #[arg(long)]
    pub all: bool,
    /// Only the sessions on this linked host (`shepherd hosts` names them), or `here` for
    /// this core's own.
    #[arg(long, value_name = "NAME", conflicts_with = "follow")]
    pub host: Option<String>,
    /// After the list, print a line for every session that joins, changes, takes or
    /// leaves a role, or leaves, until Ctrl-C.
    #[arg(long, short)]
    pub follow: bool,
}

/// `shepherd asks`.
#[derive(Debug, Args)]
pub struct AsksArgs {
    /// Show this one ask in full instead of the list: session, times, the whole question
    /// wrapped to the terminal (COLUMNS, else the terminal's width, else 80), its options,
    /// details and answer.
    #[arg(value_name = "ASK")]
    pub ask: Option<u64>,
    /// Also list answered asks.
    #[arg(long, conflicts_with = "ask")]
    pub all: bool,
    /// Only the asks on this linked host (`shepherd hosts` names them), or `here` for
    /// this core's own.
    #[arg(long, value_name = "NAME", conflicts_with = "ask")]
    pub host: Option<String>,
}

/// `shepherd answer`.
#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// The ask's number (the ID column of `shepherd asks`); `HOST:NUMBER` for a linked
    /// host's ask (`gpu:17`).
    #[arg(value_name = "ASK")]
    pub ask: AskRef,
    /// The answer; several words are joined with spaces. A number alone picks that option
    /// (1 is the first) when the ask has options.
    #[arg(required = true, value_name = "TEXT")]
    pub text: Vec<String>,
    /// Send the text as it is, even a number for an ask with options.
    #[arg(long = "text")]
    pub literal: bool,
}

/// `shepherd send`.
#[derive(Debug, Args)]
pub struct SendArgs {
    /// Exact session id, unique id prefix, or unique name; `HOST:SESSION` for a session on
    /// a linked host (`gpu:train-7`).
    #[arg(value_name = "SESSION")]
    pub session: String,
    /// What to tell it; several words are joined with spaces.
    #[arg(required = true, value_name = "TEXT")]
    pub text: Vec<String>,
}

/// `shepherd roles`.
#[derive(Debug, Args)]
pub struct RolesArgs {
    #[command(subcommand)]
    pub action: Option<RolesAction>,
    /// A linked host's leases (its core's, through the link), instead of this machine's.
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
}

/// What `shepherd roles` does besides listing.
#[derive(Debug, Subcommand)]
pub enum RolesAction {
    /// Take a lease away from its holder, connected or away: `release manager <project>`
    /// or `release chief`.
    ///
    /// The holder becomes a Lead and is told (at once when connected, else when it
    /// returns); the role is free for the next `/manager` or `/chief`.
    Release {
        /// `manager` or `chief`.
        role: String,
        /// For `manager`: the repository's project name (as `shepherd roles` shows it).
        project: Option<String>,
    },
}

/// `shepherd pairings`.
#[derive(Debug, Args)]
pub struct PairingsArgs {
    /// Also list ended pairings.
    #[arg(long)]
    pub all: bool,
}

/// `shepherd supervise`.
#[derive(Debug, Args)]
pub struct SuperviseArgs {
    #[command(subcommand)]
    pub action: SuperviseAction,
}

/// What `shepherd supervise` does.
#[derive(Debug, Subcommand)]
pub enum SuperviseAction {
    /// Pair a supervisor with a worker session, optionally toward a goal.
    ///
    /// Without --supervisor, the core takes the free session with role `supervisor` in
    /// the worker's directory (the most recently seen), or says there is none. A goal
    /// that is one word with `/` or `.` is a file, read relative to this directory.
    Start(SuperviseStartArgs),
    /// End the pairing a session is in (either side).
    Stop(SessionArg),
    /// Replace the goal of the pairing a session is in (the steer history stays).
    ///
    /// A goal that is one word with `/` or `.` is a file, read relative to this
    /// directory.
    Goal(SuperviseGoalArgs),
    /// Have the supervisor look at its worker now (it gets a view of what the worker did
    /// since its last look).
    Look(SessionArg),
}

/// `shepherd supervise start`.
#[derive(Debug, Args)]
pub struct SuperviseStartArgs {
    /// The session to watch: exact id, unique id prefix, or unique name.
    #[arg(value_name = "WORKER")]
    pub worker: String,
    /// What the worker should achieve, or a file holding it; several words are joined
    /// with spaces. Without one, steers wait until `supervise goal` sets it.
    #[arg(value_name = "GOAL")]
    pub goal: Vec<String>,
    /// The supervisor session (exact id, unique id prefix, or unique name) instead of
    /// the one the core would pick.
    #[arg(long, value_name = "SESSION")]
    pub supervisor: Option<String>,
}

/// `shepherd supervise goal`.
#[derive(Debug, Args)]
pub struct SuperviseGoalArgs {
    /// Either side of the pairing: exact id, unique id prefix, or unique name.
    #[arg(value_name = "SESSION")]
    pub session: String,
    /// The new goal, or a file holding it; several words are joined with spaces.
    #[arg(required = true, value_name = "GOAL")]
    pub goal: Vec<String>,
}

/// `shepherd stop [session] [--then <text>]`.
#[derive(Debug, Args)]
pub struct StopArgs {
    /// The session whose run to interrupt (exact id, unique id prefix or unique name;
    /// `HOST:NAME` on a linked host); without one, the core itself stops.
    #[arg(value_name = "SESSION")]
    pub session: Option<String>,
    /// After the interrupt, steer the session with this text.
    #[arg(long, value_name = "TEXT", requires = "session")]
    pub then: Option<String>,
}

/// A session argument alone.
#[derive(Debug, Args)]
pub struct SessionArg {
    /// Either side of the pairing: exact id, unique id prefix, or unique name.
    #[arg(value_name = "SESSION")]
    pub session: String,
}

pub use shepherd_core::protocol::{AskRef, split_host};

/// The linked host a listing is for and the session it names there: from `session`
/// written `HOST:NAME`, or `--host`; both, naming two hosts, are refused.
pub fn host_and_session(
    session: Option<&str>,
    host: Option<&str>,
) -> Result<(Option<String>, Option<String>), String> {
    let (named, session) = match session.map(split_host) {
        Some((named, name)) => (named, Some(name.to_string())),
        None => (None, None),
    };
    match (named, host) {
        (Some(a), Some(b)) if a != b => Err(format!(
            "the session names host {a} and --host says {b}: give one of them"
        )),
        (a, b) => Ok((a.or(b).map(str::to_string), session)),
    }
}

#[cfg(test)]
mod tests {
    use super::host_and_session;

    #[test]
    fn a_listing_names_its_host_once() {
        let some = |s: &str| Some(s.to_string());
        assert_eq!(host_and_session(None, None), Ok((None, None)));
        assert_eq!(
            host_and_session(Some("gpu:train-7"), None),
            Ok((some("gpu"), some("train-7")))
        );
        assert_eq!(
            host_and_session(Some("train-7"), Some("gpu")),
            Ok((some("gpu"), some("train-7")))
        );
        assert_eq!(
            host_and_session(Some("gpu:train-7"), Some("gpu")),
            Ok((some("gpu"), some("train-7")))
        );
        let both = host_and_session(Some("gpu:train-7"), Some("box")).unwrap_err();
        assert!(both.contains("give one of them"), "{both}");
    }
}
