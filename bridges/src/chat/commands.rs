//! # What the human types
//!
//! [`parse`] reads a chat message as a command (`/sessions` on Telegram, `!sessions` on
//! Matrix): the command word is case-insensitive (phones capitalise), Telegram's
//! `/cmd@botname` form is understood and a command addressed to another bot is not ours,
//! and `steer`'s text may span lines. Text that is no command (`/home/ada`, `!!`, plain
//! words) is `None`, so a bridge can treat it as a reply. An unknown command is
//! [`ChatCommand::Unknown`] and a known one used wrongly is [`ChatCommand::Usage`]: both
//! get an answer ([`super::render::unknown_command`], [`super::render::usage`]), never
//! silence. `stop [session] [then <text>]` interrupts a session's run (and may steer it);
//! `unpair` (and `supervise stop`) ends a pairing. The session commands (`supervise`,
//! `goal`, `look`, `peek`, `diff`, `stop`, `unpair`, `status`) may leave out the session inside a
//! session's topic or thread: [`SessionArgs::target`] decides, once the
//! place is known, whether the first word is a session or already the goal.
//! [`answer_text`] and [`reaction_option`] read a reply to an ask card: an option's number
//! or keycap reaction means that option, anything else is free text.

use shepherd_core::protocol::{Ask, AskRef, Role};

/// The keycap emoji for options 1 to 10: the reactions a Matrix user answers with (and
/// the keys an ask card shows).
pub const OPTION_KEYS: [&str; 10] = [
    "1\u{fe0f}\u{20e3}",
    "2\u{fe0f}\u{20e3}",
    "3\u{fe0f}\u{20e3}",
    "4\u{fe0f}\u{20e3}",
    "5\u{fe0f}\u{20e3}",
    "6\u{fe0f}\u{20e3}",
    "7\u{fe0f}\u{20e3}",
    "8\u{fe0f}\u{20e3}",
    "9\u{fe0f}\u{20e3}",
    "\u{1f51f}",
];

/// A command as the help and Telegram's `setMyCommands` list it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSpec {
    /// The word after the prefix (lowercase, `[a-z0-9_]`, as Telegram requires).
    pub name: &'static str,
    /// The arguments, as shown in the help.
    pub args: &'static str,
    /// What it does (1–256 characters for Telegram).
    pub about: &'static str,
}

/// Every command, in the order the help lists them.
pub const COMMANDS: [CommandSpec; 21] = [
    CommandSpec {
        name: "sessions",
        args: "",
        about: "list the sessions",
    },
    CommandSpec {
        name: "status",
        args: "[session]",
        about: "one session in detail, or shepherd itself",
    },
    CommandSpec {
        name: "peek",
        args: "[session]",
        about: "what a session is doing now: the command running and for how long, its last text and output",
    },
    CommandSpec {
        name: "diff",
        args: "[session]",
        about: "what a session changed: the stat, and the patch as a .diff file",
    },
    CommandSpec {
        name: "asks",
        args: "",
        about: "the open questions",
    },
    CommandSpec {
        name: "answer",
        args: "<ask> <text>",
        about: "answer an open question (a number picks that option)",
    },
    CommandSpec {
        name: "staff",
        args: "",
        about: "who reports to whom: chief, managers, leads (steer one from it)",
    },
    CommandSpec {
        name: "release",
        args: "manager <project> | chief",
        about: "take a role away from its holder, connected or away (it becomes a lead and is told)",
    },
    CommandSpec {
        name: "workers",
        args: "",
        about: "the managed workers under each owner, with state, age, tokens and cost (reply to a line to steer it)",
    },
    CommandSpec {
        name: "projects",
        args: "[all]",
        about: "project work: each repository's manager and assignments, with state, Lead, last update, ahead/behind, asks and cost",
    },
    CommandSpec {
        name: "hosts",
        args: "",
        about: "the other machines linked to this one: each link's state, round trip, sessions and open questions",
    },
    CommandSpec {
        name: "new",
        args: "<project> [--branch NAME] [--agent DEF] <task>",
        about: "start a Pi session on a task in a project (in a new worktree on a new branch with --branch, as an agent definition with --agent); /new alone offers the projects to choose from",
    },
    CommandSpec {
        name: "continue",
        args: "[session] [message]",
        about: "start an ended session again, same id, on its own session file; the message is its next one",
    },
    CommandSpec {
        name: "close",
        args: "<worker|session>",
        about: "close a managed worker (its label or #id; or reply to its line), or a session /new or /continue started",
    },
    CommandSpec {
        name: "steer",
        args: "<session> <text>",
        about: "tell a session what to do",
    },
    CommandSpec {
        name: "supervise",
        args: "<session> <goal>",
        about: "pair a free supervisor session with a session, toward a goal",
    },
    CommandSpec {
        name: "goal",
        args: "[session] <goal>",
        about: "change the goal of a session's pairing",
    },
    CommandSpec {
        name: "look",
        args: "[session]",
        about: "have the supervisor look at its worker now",
    },
    CommandSpec {
        name: "stop",
        args: "[session] [then <text>]",
        about: "interrupt a session's current run, then optionally steer it",
    },
    CommandSpec {
        name: "unpair",
        args: "[session]",
        about: "end a session's pairing (its supervisor stops looking)",
    },
    CommandSpec {
        name: "help",
        args: "",
        about: "this help",
    },
];

/// A command from the chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatCommand {
    /// List the sessions.
    Sessions,
    /// One session (by selector: id, id prefix or name) or, without one, the core.
    Status(Option<String>),
    /// List the open asks.
    Asks,
    /// The staff tree: the Chief, the Managers, the Leads, each with whom it reports to.
    Staff,
    /// Take a lease away from its holder (`release manager <project>`, `release chief`).
    Release { role: Role, project: Option<String> },
    /// The managed workers, as each owner's tree.
    Workers,
    /// Project work: each repository's Manager and assignments (`all`: the retired ones
    /// too).
    Projects { all: bool },
    /// The linked hosts: each link's state, round trip, sessions and open asks.
    Hosts,
    /// Close a managed worker (its label or `#id`), or a session `new` or `continue`
    /// started; `None`: the worker whose line the command replies to, else the topic's
    /// session.
    Close(Option<String>),
    /// Start a Pi session on `task` in `project` (`None`: `/new` alone, which lists the
    /// projects), in a new worktree on `branch` when given, with agent definition `agent`
    /// when given.
    New {
        project: Option<String>,
        branch: Option<String>,
        agent: Option<String>,
        task: String,
    },
    /// Start an ended session again (the first argument, or the topic's), the rest its
    /// next message.
    Continue(SessionArgs),
    /// Send `text` to `session` as a steer.
    Steer { session: String, text: String },
    /// Answer ask `ask` (`7`, or `gpu:7` on a linked host) with `text` (an option's
    /// number picks that option).
    Answer { ask: AskRef, text: String },
    /// Pair a free supervisor with a session (the first argument, or the topic's), toward
    /// the rest as goal.
    Supervise(SessionArgs),
    /// Change the goal of a session's pairing.
    Goal(SessionArgs),
    /// Deliver a view to the supervisor now; `None`: the topic's session.
    Look(Option<String>),
    /// What a session is doing now; `None`: the topic's session.
    Peek(Option<String>),
    /// What a session changed; `None`: the topic's session.
    Diff(Option<String>),
    /// Interrupt a session's current run (`session`, else the topic's), then steer it
    /// with `then` if given.
    Stop {
        session: Option<String>,
        then: Option<String>,
    },
    /// End a session's pairing (`unpair`, `supervise stop`); `None`: the topic's session.
    Unpair(Option<String>),
    /// Show the help (`help`, and Telegram's `start`).
    Help,
    /// A known command without what it needs; reply with [`super::render::usage`].
    Usage(UsageError),
    /// A command word we do not know (as typed, without the prefix); reply with
    /// [`super::render::unknown_command`].
    Unknown(String),
}

/// What is wrong with a known command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsageError {
    /// `steer` with nothing after it.
    SteerWithoutSession,
    /// `steer <session>` without the text to send.
    SteerWithoutText { session: String },
    /// `supervise` with no session, outside a session's topic.
    SuperviseWithoutSession,
    /// `goal` without the goal (`session`: the one named, if any).
    GoalWithoutText { session: Option<String> },
    /// `look`, `stop` or `unpair` with no session, outside a session's topic.
    WithoutSession { command: &'static str },
    /// `answer` without an ask number or without the answer.
    AnswerWithoutAsk,
    /// `stop <session>` followed by something other than `then <text>`.
    StopWithoutThen { session: String },
    /// `close` naming no worker and replying to no worker's line.
    CloseWithoutWorker,
    /// `release` without `manager <project>` or `chief`.
    ReleaseWhat,
    /// `new <project>` without the task.
    NewWithoutTask { project: String },
    /// `continue` with no session, outside a session's topic.
    ContinueWithoutSession,
}

/// The arguments of a command that names a session and then gives text, where the
/// session may be left out inside that session's topic or thread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionArgs {
    /// The first argument, unquoted.
    pub first: String,
    /// Whether the first argument was quoted (then it is a session, wherever written).
    pub quoted: bool,
    /// What follows the first argument, trimmed.
    pub rest: String,
    /// Every argument, trimmed: the text when the first word is no session.
    pub all: String,
}

impl SessionArgs {
    fn parse(args: &str) -> SessionArgs {
        let (first, quoted, rest) = split_first(args);
        SessionArgs {
            quoted: quoted && !first.is_empty(),
            first,
            rest: rest.to_string(),
            all: args.to_string(),
        }
    }

    /// The session and the text. Outside a session's topic (`here` is `None`) the first
    /// argument is the session. Inside one, it is only when it is quoted or names a
    /// session exactly (`names_session`: an exact id or name); otherwise the topic's
    /// session is meant and every argument is text. `None`: no session at all.
    pub fn target(
        &self,
        here: Option<&str>,
        names_session: impl Fn(&str) -> bool,
    ) -> Option<(String, String)> {
        match here {
            Some(here) if self.first.is_empty() || !(self.quoted || names_session(&self.first)) => {
                Some((here.to_string(), self.all.clone()))
            }
            _ if self.first.is_empty() => None,
            _ => Some((self.first.clone(), self.rest.clone())),
        }
    }
}

impl UsageError {
    /// The command concerned.
    pub fn command(&self) -> &'static str {
        match self {
            UsageError::SteerWithoutSession | UsageError::SteerWithoutText { .. } => "steer",
            UsageError::SuperviseWithoutSession => "supervise",
            UsageError::GoalWithoutText { .. } => "goal",
            UsageError::WithoutSession { command } => command,
            UsageError::AnswerWithoutAsk => "answer",
            UsageError::StopWithoutThen { .. } => "stop",
            UsageError::CloseWithoutWorker => "close",
            UsageError::ReleaseWhat => "release",
            UsageError::NewWithoutTask { .. } => "new",
            UsageError::ContinueWithoutSession => "continue",
        }
    }

    /// What is missing, in a sentence.
    pub fn problem(&self) -> String {
        match self {
            UsageError::SteerWithoutSession => {
                "Steer which session, and with what? Name the session, then the text.".into()
            }
            UsageError::SteerWithoutText { session } => {
                format!("What should I tell {session}? Put the text after the session.")
            }
            UsageError::SuperviseWithoutSession => "Supervise which session? Name it, then \
                 the goal (or write the command in the session's topic)."
                .into(),
            UsageError::GoalWithoutText {
                session: Some(session),
            } => {
                format!("What should {session} achieve? Put the goal after the session.")
            }
            UsageError::GoalWithoutText { session: None } => {
                "What is the goal? Write it after the command.".into()
            }
            UsageError::WithoutSession { command } => {
                format!("Which session? Name it (or write {command} in the session's topic).")
            }
            UsageError::AnswerWithoutAsk => {
                "Answer which ask, with what? Give the ask's number (the card shows it), then the answer.".into()
            }
            UsageError::StopWithoutThen { session } => format!(
                "After the session, stop takes only `then` and what to do next; {session:?} \
                 was read as the session (quote a name with spaces)."
            ),
            UsageError::CloseWithoutWorker => "Close which worker? Name it (its label or #id), \
                 or reply with the command to its line in the workers list."
                .into(),
            UsageError::ReleaseWhat => "Release which role? `manager` and the repository's \
                 project name, or `chief` (staff shows who holds which)."
                .into(),
            UsageError::NewWithoutTask { project } => {
                format!("What should the new session in {project} do? Put the task after the project.")
            }
            UsageError::ContinueWithoutSession => "Continue which session? Name it (or write \
                 the command in its topic)."
                .into(),
        }
    }

    /// The command's usage without the prefix, with the session filled in when known:
    /// `steer <session> <text>`, `steer fix-login <text>`.
    pub fn synopsis(&self) -> String {
        match self {
            UsageError::SteerWithoutSession => "steer <session> <text>".into(),
            UsageError::SteerWithoutText { session } => {
                format!("steer {} <text>", quote_if_spaced(session))
            }
            UsageError::SuperviseWithoutSession => "supervise <session> <goal>".into(),
            UsageError::GoalWithoutText {
                session: Some(session),
            } => {
                format!("goal {} <goal>", quote_if_spaced(session))
            }
            UsageError::GoalWithoutText { session: None } => "goal [session] <goal>".into(),
            UsageError::WithoutSession { command } => format!("{command} <session>"),
            UsageError::AnswerWithoutAsk => "answer <ask> <text>".into(),
            UsageError::StopWithoutThen { .. } => "stop [session] [then <text>]".into(),
            UsageError::CloseWithoutWorker => "close <worker>".into(),
            UsageError::ReleaseWhat => "release manager <project> | chief".into(),
            UsageError::NewWithoutTask { project } => {
                format!(
                    "new {} [--branch NAME] [--agent DEF] <task>",
                    quote_if_spaced(project)
                )
            }
            UsageError::ContinueWithoutSession => "continue <session> [message]".into(),
        }
    }

    /// A complete example without the prefix.
    pub fn example(&self) -> String {
        let session = match self {
            UsageError::SteerWithoutText { session }
            | UsageError::GoalWithoutText {
                session: Some(session),
            } => quote_if_spaced(session),
            _ => "fix-login".to_string(),
        };
        match self {
            UsageError::SteerWithoutSession | UsageError::SteerWithoutText { .. } => {
                format!("steer {session} run the tests again, then commit")
            }
            UsageError::SuperviseWithoutSession => {
                format!("supervise {session} login works and its tests pass")
            }
            UsageError::GoalWithoutText { .. } => {
                format!("goal {session} docs/login-plan.md")
            }
            UsageError::WithoutSession { command } => format!("{command} {session}"),
            UsageError::AnswerWithoutAsk => "answer 7 2".into(),
            UsageError::StopWithoutThen { .. } => {
                format!("stop {session} then run the tests first")
            }
            UsageError::CloseWithoutWorker => "close scout-1".into(),
            UsageError::ReleaseWhat => "release manager app".into(),
            UsageError::NewWithoutTask { project } => format!(
                "new {} --branch fix/login fix the flaky login test",
                quote_if_spaced(project)
            ),
            UsageError::ContinueWithoutSession => "continue fix-login run the tests again".into(),
        }
    }
}

/// `session` as a command's first argument that reads back as that session: bare when
/// it has no spaces and does not start with a quote, else in the first quote pair whose
/// closing quote it does not contain (`"my s"`, `“say "hi"”`), else bare if that reads
/// back (a session parsed bare may start with a quote and hold every closing quote).
fn quote_if_spaced(session: &str) -> String {
    let reads_back = |written: &String| {
        let line = format!("{written} x");
        let (first, _, rest) = split_first(&line);
        first == session && rest == "x"
    };
    let starts_quoted = QUOTES.iter().any(|(open, _)| session.starts_with(*open));
    let bare = (!session.contains(char::is_whitespace)).then(|| session.to_string());
    let quoted = QUOTES
        .into_iter()
        .filter(|(_, close)| !session.contains(*close))
        .map(|(open, close)| format!("{open}{session}{close}"));
    bare.clone()
        .filter(|_| !starts_quoted)
        .into_iter()
        .chain(quoted)
        .chain(bare)
        .find(reads_back)
        .unwrap_or_else(|| format!("{}{session}{}", QUOTES[0].0, QUOTES[0].1))
}

fn is_word_byte(b: &u8) -> bool {
    b.is_ascii_alphanumeric() || *b == b'_'
}

/// `text` as a command with `prefix`, or `None` when it is no command or a Telegram
/// command for another bot (`/cmd@other_bot`, when `bot_username` is known; with or
/// without its `@`).
pub fn parse(text: &str, prefix: char, bot_username: Option<&str>) -> Option<ChatCommand> {
    let rest = text.trim_start().strip_prefix(prefix)?;
    let word_len = rest.bytes().take_while(is_word_byte).count();
    if word_len == 0 {
        return None;
    }
    let (word, mut after) = rest.split_at(word_len);
    if let Some(address) = after.strip_prefix('@') {
        let len = address.bytes().take_while(is_word_byte).count();
        if len == 0 {
            return None;
        }
        let (target, tail) = address.split_at(len);
        if let Some(me) = bot_username
            && !target.eq_ignore_ascii_case(me.trim_start_matches('@'))
        {
            return None;
        }
        after = tail;
    }
    if !(after.is_empty() || after.starts_with(char::is_whitespace)) {
        return None;
    }
    let args = after.trim();
    Some(match word.to_ascii_lowercase().as_str() {
        "sessions" => ChatCommand::Sessions,
        "status" => ChatCommand::Status(Some(unquote(args)).filter(|s| !s.is_empty())),
        "asks" => ChatCommand::Asks,
        "staff" => ChatCommand::Staff,
        "release" => release(args),
        "workers" => ChatCommand::Workers,
        "projects" => ChatCommand::Projects {
            all: args.eq_ignore_ascii_case("all"),
        },
        "hosts" => ChatCommand::Hosts,
        "close" => ChatCommand::Close(Some(unquote(args)).filter(|s| !s.is_empty())),
        "new" => new_session(args),
        "continue" => ChatCommand::Continue(SessionArgs::parse(args)),
        "steer" => steer(args),
        "answer" => answer(args),
        "supervise" => supervise(args),
        "goal" if args.is_empty() => {
            ChatCommand::Usage(UsageError::GoalWithoutText { session: None })
        }
        "goal" => ChatCommand::Goal(SessionArgs::parse(args)),
        "look" => ChatCommand::Look(Some(unquote(args)).filter(|s| !s.is_empty())),
        "peek" => ChatCommand::Peek(Some(unquote(args)).filter(|s| !s.is_empty())),
        "diff" => ChatCommand::Diff(Some(unquote(args)).filter(|s| !s.is_empty())),
        "stop" => stop(args),
        "unpair" => ChatCommand::Unpair(Some(unquote(args)).filter(|s| !s.is_empty())),
        "help" | "start" => ChatCommand::Help,
        _ => ChatCommand::Unknown(word.to_string()),
    })
}

/// `release`'s arguments: `manager <project>` or `chief`.
fn release(args: &str) -> ChatCommand {
    let (role, _, rest) = split_first(args);
    let project = unquote(rest);
    match (role.to_ascii_lowercase().as_str(), project.is_empty()) {
        ("manager", false) => ChatCommand::Release {
            role: Role::Manager,
            project: Some(project),
        },
        ("chief", true) => ChatCommand::Release {
            role: Role::Chief,
            project: None,
        },
        _ => ChatCommand::Usage(UsageError::ReleaseWhat),
    }
}

/// `supervise`'s arguments; `supervise stop [session]` ends the pairing, as `unpair`.
fn supervise(args: &str) -> ChatCommand {
    let parsed = SessionArgs::parse(args);
    if !parsed.quoted && parsed.first.eq_ignore_ascii_case("stop") {
        return ChatCommand::Unpair(Some(unquote(&parsed.rest)).filter(|s| !s.is_empty()));
    }
    ChatCommand::Supervise(parsed)
}

/// `stop`'s arguments: `[session] [then <text>]`. The steer after `then` may span lines;
/// a session named `then` must be quoted.
fn stop(args: &str) -> ChatCommand {
    let then_text = |rest: &str| -> Option<String> {
        let word = rest.get(..4)?;
        let after = &rest[4..];
        (word.eq_ignore_ascii_case("then")
            && (after.is_empty() || after.starts_with(char::is_whitespace)))
        .then(|| after.trim().to_string())
    };
    if let Some(text) = then_text(args) {
        return ChatCommand::Stop {
            session: None,
            then: Some(text).filter(|t| !t.is_empty()),
        };
    }
    let (session, rest) = first_argument(args);
    let then = then_text(rest).filter(|t| !t.is_empty());
    let session = Some(session).filter(|s| !s.is_empty());
    if then.is_none() && !rest.is_empty() {
        return ChatCommand::Usage(UsageError::StopWithoutThen {
            session: session.unwrap_or_default(),
        });
    }
    ChatCommand::Stop { session, then }
}

/// `steer`'s arguments: a session (quoted when it has spaces), then the text, which may
/// span lines.
fn steer(args: &str) -> ChatCommand {
    let (session, text) = first_argument(args);
    if session.is_empty() {
        return ChatCommand::Usage(UsageError::SteerWithoutSession);
    }
    if text.is_empty() {
        return ChatCommand::Usage(UsageError::SteerWithoutText { session });
    }
    ChatCommand::Steer {
        session,
        text: text.to_string(),
    }
}

/// `answer`'s arguments: the ask's number (`7` or `#7`; `gpu:7` on a linked host), then
/// the answer.
fn answer(args: &str) -> ChatCommand {
    let (ask, text) = first_argument(args);
    match ask.trim_start_matches('#').parse::<AskRef>() {
        Ok(ask) if !text.is_empty() => ChatCommand::Answer {
            ask,
            text: text.to_string(),
        },
        _ => ChatCommand::Usage(UsageError::AnswerWithoutAsk),
    }
}

/// Quote pairs a phone may type: straight, curly, guillemets.
const QUOTES: [(char, char); 4] = [('"', '"'), ('“', '”'), ('„', '“'), ('«', '»')];

/// The first argument of `args` (quoted, or up to whitespace) and the trimmed rest.
fn first_argument(args: &str) -> (String, &str) {
    let (first, _, rest) = split_first(args);
    (first, rest)
}

/// [`first_argument`], and whether the first argument was quoted.
/// `new <project> [--branch NAME] [--agent DEF] <task>`; `new` alone offers the projects.
fn new_session(args: &str) -> ChatCommand {
    let (project, _, rest) = split_first(args);
    if project.is_empty() {
        return ChatCommand::New {
            project: None,
            branch: None,
            agent: None,
            task: String::new(),
        };
    }
    // `--branch NAME` and `--agent NAME`, in either order, before the task.
    let mut rest = rest.trim_start();
    let (mut branch, mut agent) = (None, None);
    'flags: loop {
        for flag in ["--branch", "-b", "--agent"] {
            if let Some(after) = rest.strip_prefix(flag)
                && after.starts_with(char::is_whitespace)
            {
                let (name, _, tail) = split_first(after.trim_start());
                let name = Some(name).filter(|n| !n.is_empty());
                match flag {
                    "--agent" => agent = name,
                    _ => branch = name,
                }
                rest = tail.trim_start();
                continue 'flags;
            }
        }
        break;
    }
    if rest.trim().is_empty() {
        return ChatCommand::Usage(UsageError::NewWithoutTask { project });
    }
    ChatCommand::New {
        project: Some(project),
        branch,
        agent,
        task: rest.trim().to_string(),
    }
}

fn split_first(args: &str) -> (String, bool, &str) {
    for (open, close) in QUOTES {
        if let Some(inner) = args.strip_prefix(open)
            && let Some(end) = inner.find(close)
        {
            let session = inner[..end].trim().to_string();
            return (session, true, inner[end + close.len_utf8()..].trim());
        }
    }
    match args.find(char::is_whitespace) {
        Some(end) => (args[..end].to_string(), false, args[end..].trim()),
        None => (args.to_string(), false, ""),
    }
}

/// `args` without the quotes around it, if it is quoted as a whole.
fn unquote(args: &str) -> String {
    for (open, close) in QUOTES {
        if let Some(inner) = args.strip_prefix(open).and_then(|a| a.strip_suffix(close)) {
            return inner.trim().to_string();
        }
    }
    args.to_string()
}

/// The answer a reply to `ask`'s card gives: an option's number (`2`, `#2`, `2.`, `2️⃣`)
/// or its text in any case means that option exactly as written; anything else is the
/// reply's text, trimmed. `None` for an empty reply.
pub fn answer_text(ask: &Ask, reply: &str) -> Option<String> {
    let reply = reply.trim();
    if reply.is_empty() {
        return None;
    }
    let number = reply
        .trim_start_matches('#')
        .trim_end_matches(['.', ')'])
        .parse::<usize>()
        .ok()
        .or_else(|| key_index(reply).map(|i| i + 1));
    if let Some(option) = number
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| ask.options.get(i))
    {
        return Some(option.clone());
    }
    let lower = reply.to_lowercase();
    let same = ask
        .options
        .iter()
        .find(|o| o.trim().to_lowercase() == lower);
    Some(same.cloned().unwrap_or_else(|| reply.to_string()))
}

/// The option a reaction (`1️⃣`, with or without its variation selector) chooses on
/// `ask`'s card.
pub fn reaction_option(ask: &Ask, key: &str) -> Option<String> {
    key_index(key.trim()).and_then(|i| ask.options.get(i).cloned())
}

fn key_index(key: &str) -> Option<usize> {
    let bare = |k: &str| k.replace('\u{fe0f}', "");
    let key = bare(key);
    OPTION_KEYS.iter().position(|k| bare(k) == key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::examples;

    fn cmd(text: &str) -> Option<ChatCommand> {
        parse(text, '/', Some("shep_bot"))
    }

    #[test]
    fn the_readme_shows_every_command_on_both_phones() {
        let readme = include_str!("../../../README.md");
        for c in COMMANDS {
            for prefix in ['/', '!'] {
                let shown = format!("`{prefix}{}", c.name);
                assert!(readme.contains(&shown), "README.md does not show {shown}`");
            }
        }
    }

    #[test]
    fn simple_commands_in_any_case_and_spacing() {
        assert_eq!(cmd("/sessions"), Some(ChatCommand::Sessions));
        assert_eq!(cmd("  /Sessions  "), Some(ChatCommand::Sessions));
        assert_eq!(cmd("/ASKS"), Some(ChatCommand::Asks));
        assert_eq!(cmd("/help"), Some(ChatCommand::Help));
        assert_eq!(cmd("/start"), Some(ChatCommand::Help));
        assert_eq!(cmd("/status"), Some(ChatCommand::Status(None)));
        assert_eq!(
            cmd("/status   fix-login  "),
            Some(ChatCommand::Status(Some("fix-login".into())))
        );
        assert_eq!(
            cmd("/status “my session”"),
            Some(ChatCommand::Status(Some("my session".into())))
        );
        assert_eq!(
            parse("!status 3f2a", '!', None),
            Some(ChatCommand::Status(Some("3f2a".into())))
        );
    }

    #[test]
    fn telegram_bot_addressing() {
        assert_eq!(cmd("/sessions@shep_bot"), Some(ChatCommand::Sessions));
        assert_eq!(cmd("/sessions@Shep_Bot"), Some(ChatCommand::Sessions));
        assert_eq!(
            parse("/asks@shep_bot", '/', Some("@shep_bot")),
            Some(ChatCommand::Asks)
        );
        assert_eq!(cmd("/sessions@other_bot"), None);
        assert_eq!(cmd("/frobnicate@other_bot"), None);
        assert_eq!(
            cmd("/status@shep_bot fix-login"),
            Some(ChatCommand::Status(Some("fix-login".into())))
        );
        // Without a known name, any address is taken as ours.
        assert_eq!(parse("/asks@whoever", '/', None), Some(ChatCommand::Asks));
        assert_eq!(cmd("/asks@"), None);
    }

    #[test]
    fn text_that_is_no_command() {
        for text in [
            "hello",
            "",
            "/",
            "/ sessions",
            "!sessions",
            "/home/ada/src",
            "/sessions/x",
            "/sessions:",
            "a /sessions",
        ] {
            assert_eq!(cmd(text), None, "{text:?}");
        }
        assert_eq!(parse("!!", '!', None), None);
        assert_eq!(parse("/sessions", '!', None), None);
        assert_eq!(parse("!important: do it", '!', None), None);
    }

    #[test]
    fn unknown_commands_are_named() {
        assert_eq!(
            cmd("/frobnicate now"),
            Some(ChatCommand::Unknown("frobnicate".into()))
        );
        assert_eq!(
            parse("!Wat", '!', None),
            Some(ChatCommand::Unknown("Wat".into()))
        );
    }

    #[test]
    fn steer_takes_a_session_and_multiline_text() {
        assert_eq!(
            cmd("/steer fix-login run the tests\nthen commit  "),
            Some(ChatCommand::Steer {
                session: "fix-login".into(),
                text: "run the tests\nthen commit".into()
            })
        );
        assert_eq!(
            cmd("/steer@shep_bot fix-login\n\n  first line\n  second"),
            Some(ChatCommand::Steer {
                session: "fix-login".into(),
                text: "first line\n  second".into()
            })
        );
        assert_eq!(
            parse("!steer \"my session\" go on", '!', None),
            Some(ChatCommand::Steer {
                session: "my session".into(),
                text: "go on".into()
            })
        );
        assert_eq!(
            parse("!steer “my session” go", '!', None),
            Some(ChatCommand::Steer {
                session: "my session".into(),
                text: "go".into()
            })
        );
    }

    #[test]
    fn steer_without_arguments_says_what_is_missing() {
        assert_eq!(
            cmd("/steer"),
            Some(ChatCommand::Usage(UsageError::SteerWithoutSession))
        );
        assert_eq!(
            cmd("/steer   \n "),
            Some(ChatCommand::Usage(UsageError::SteerWithoutSession))
        );
        let missing = cmd("/steer fix-login  ");
        let Some(ChatCommand::Usage(err)) = missing else {
            panic!("{missing:?}");
        };
        assert_eq!(
            err,
            UsageError::SteerWithoutText {
                session: "fix-login".into()
            }
        );
        assert_eq!(err.command(), "steer");
        assert_eq!(err.synopsis(), "steer fix-login <text>");
        assert!(err.problem().contains("fix-login"));
        let spaced = UsageError::SteerWithoutText {
            session: "my s".into(),
        };
        assert_eq!(spaced.synopsis(), "steer \"my s\" <text>");
        assert!(
            UsageError::SteerWithoutSession
                .example()
                .starts_with("steer fix-login ")
        );
    }

    fn args(first: &str, quoted: bool, rest: &str, all: &str) -> SessionArgs {
        SessionArgs {
            first: first.into(),
            quoted,
            rest: rest.into(),
            all: all.into(),
        }
    }

    #[test]
    fn pairing_commands_parse() {
        assert_eq!(
            cmd("/supervise fix-login make login work\nwith tests"),
            Some(ChatCommand::Supervise(args(
                "fix-login",
                false,
                "make login work\nwith tests",
                "fix-login make login work\nwith tests"
            )))
        );
        assert_eq!(
            parse("!Supervise “my s” docs/plan.md", '!', None),
            Some(ChatCommand::Supervise(args(
                "my s",
                true,
                "docs/plan.md",
                "“my s” docs/plan.md"
            )))
        );
        assert_eq!(
            cmd("/supervise"),
            Some(ChatCommand::Supervise(SessionArgs::default()))
        );
        assert_eq!(
            cmd("/goal@shep_bot ship it"),
            Some(ChatCommand::Goal(args("ship", false, "it", "ship it")))
        );
        assert_eq!(
            cmd("/goal  "),
            Some(ChatCommand::Usage(UsageError::GoalWithoutText {
                session: None
            }))
        );
        assert_eq!(cmd("/look"), Some(ChatCommand::Look(None)));
        assert_eq!(cmd("/peek"), Some(ChatCommand::Peek(None)));
        assert_eq!(
            cmd("/new app -b feat/x"),
            Some(ChatCommand::Usage(UsageError::NewWithoutTask {
                project: "app".into()
            }))
        );
        assert_eq!(cmd("/diff"), Some(ChatCommand::Diff(None)));
        assert_eq!(
            cmd("/diff app@main"),
            Some(ChatCommand::Diff(Some("app@main".into())))
        );
        assert_eq!(
            cmd("/Peek \"fix login\""),
            Some(ChatCommand::Peek(Some("fix login".into())))
        );
        assert_eq!(
            cmd("/look fix-login"),
            Some(ChatCommand::Look(Some("fix-login".into())))
        );
        assert_eq!(
            parse("!unpair \"my s\"", '!', None),
            Some(ChatCommand::Unpair(Some("my s".into())))
        );
        assert_eq!(cmd("/UNPAIR"), Some(ChatCommand::Unpair(None)));
        assert_eq!(
            cmd("/supervise stop"),
            Some(ChatCommand::Unpair(None)),
            "/supervise stop still ends a pairing"
        );
        assert_eq!(
            cmd("/supervise stop fix-login"),
            Some(ChatCommand::Unpair(Some("fix-login".into())))
        );
    }

    #[test]
    fn new_commands_parse() {
        assert_eq!(
            cmd("/new app --branch feat/x add the export\nand its tests"),
            Some(ChatCommand::New {
                project: Some("app".into()),
                branch: Some("feat/x".into()),
                agent: None,
                task: "add the export\nand its tests".into()
            })
        );
        assert_eq!(
            cmd("/new app --agent reviewer -b feat/y look it over"),
            Some(ChatCommand::New {
                project: Some("app".into()),
                branch: Some("feat/y".into()),
                agent: Some("reviewer".into()),
                task: "look it over".into()
            })
        );
        assert_eq!(
            cmd("/new app fix it"),
            Some(ChatCommand::New {
                project: Some("app".into()),
                branch: None,
                agent: None,
                task: "fix it".into()
            })
        );
        assert_eq!(
            cmd("/new"),
            Some(ChatCommand::New {
                project: None,
                branch: None,
                agent: None,
                task: String::new()
            })
        );
    }

    #[test]
    fn stop_interrupts_with_an_optional_steer() {
        let stop = |session: Option<&str>, then: Option<&str>| {
            Some(ChatCommand::Stop {
                session: session.map(str::to_string),
                then: then.map(str::to_string),
            })
        };
        assert_eq!(cmd("/STOP"), stop(None, None));
        assert_eq!(
            cmd("/stop then run the tests\nand commit"),
            stop(None, Some("run the tests\nand commit"))
        );
        assert_eq!(cmd("/stop Then rebase"), stop(None, Some("rebase")));
        assert_eq!(cmd("/stop fix-login"), stop(Some("fix-login"), None));
        assert_eq!(
            cmd("/stop fix-login then rebase"),
            stop(Some("fix-login"), Some("rebase"))
        );
        assert_eq!(
            parse("!stop \"my s\" then go", '!', None),
            stop(Some("my s"), Some("go"))
        );
        assert_eq!(cmd("/stop thence"), stop(Some("thence"), None));
        assert_eq!(cmd("/stop then"), stop(None, None));
        assert_eq!(
            cmd("/stop fix-login now please"),
            Some(ChatCommand::Usage(UsageError::StopWithoutThen {
                session: "fix-login".into()
            }))
        );
    }

    #[test]
    fn the_session_may_be_left_out_in_its_topic() {
        let known = |s: &str| s == "fix-login" || s == "3f2a9c1b-0000";
        let parsed = |text: &str| match cmd(text) {
            Some(ChatCommand::Supervise(a) | ChatCommand::Goal(a)) => a,
            other => panic!("{other:?}"),
        };
        // Outside a topic the first word is the session, known or not.
        assert_eq!(
            parsed("/supervise fix-login make it work").target(None, known),
            Some(("fix-login".into(), "make it work".into()))
        );
        assert_eq!(
            parsed("/goal make it work").target(None, known),
            Some(("make".into(), "it work".into()))
        );
        assert_eq!(parsed("/supervise").target(None, known), None);
        // In a topic, a first word that names no session is part of the goal.
        assert_eq!(
            parsed("/goal make it work").target(Some("s-topic"), known),
            Some(("s-topic".into(), "make it work".into()))
        );
        assert_eq!(
            parsed("/supervise").target(Some("s-topic"), known),
            Some(("s-topic".into(), String::new()))
        );
        // ... but an exact session name or id, or a quoted word, is a session.
        assert_eq!(
            parsed("/supervise fix-login make it work").target(Some("s-topic"), known),
            Some(("fix-login".into(), "make it work".into()))
        );
        assert_eq!(
            parsed("/goal 3f2a9c1b-0000 docs/plan.md").target(Some("s-topic"), known),
            Some(("3f2a9c1b-0000".into(), "docs/plan.md".into()))
        );
        assert_eq!(
            parsed("/goal \"other\" be done").target(Some("s-topic"), known),
            Some(("other".into(), "be done".into()))
        );
    }

    #[test]
    fn answer_takes_an_ask_number_then_the_text() {
        assert_eq!(
            parse("/answer 7 2", '/', None),
            Some(ChatCommand::Answer {
                ask: AskRef::here(7.into()),
                text: "2".into()
            })
        );
        assert_eq!(
            parse("/answer gpu:7 yes", '/', None),
            Some(ChatCommand::Answer {
                ask: AskRef {
                    host: Some("gpu".into()),
                    id: 7.into()
                },
                text: "yes".into()
            })
        );
        assert_eq!(
            parse("!answer #12 ship it\nnow", '!', None),
            Some(ChatCommand::Answer {
                ask: AskRef::here(12.into()),
                text: "ship it\nnow".into()
            })
        );
        for bad in ["/answer", "/answer 7", "/answer seven yes"] {
            assert_eq!(
                parse(bad, '/', None),
                Some(ChatCommand::Usage(UsageError::AnswerWithoutAsk)),
                "{bad}"
            );
        }
        assert_eq!(
            UsageError::AnswerWithoutAsk.synopsis(),
            "answer <ask> <text>"
        );
    }

    #[test]
    fn a_usage_example_names_the_session_as_typed() {
        // A session quoted with curly quotes may hold a straight one; its example quotes
        // it so that it reads back whole.
        let typed = cmd("/steer „\" x“");
        let Some(ChatCommand::Usage(err)) = typed else {
            panic!("{typed:?}");
        };
        assert_eq!(
            err,
            UsageError::SteerWithoutText {
                session: "\" x".into()
            }
        );
        assert_eq!(err.synopsis(), "steer “\" x” <text>");
        let example = cmd(&format!("/{}", err.example()));
        assert!(
            matches!(&example, Some(ChatCommand::Steer { session, .. }) if session == "\" x"),
            "{example:?}"
        );
        // A session read bare may start with a quote and hold every closing quote
        // (found by the chat_command fuzzer): its example writes it bare.
        let typed = cmd("/steer \"\u{1}!»1\u{20e3}.”“\t");
        let Some(ChatCommand::Usage(err)) = typed else {
            panic!("{typed:?}");
        };
        assert_eq!(
            err,
            UsageError::SteerWithoutText {
                session: "\"\u{1}!»1\u{20e3}.”“".into()
            }
        );
        let example = cmd(&format!("/{}", err.example()));
        assert!(
            matches!(&example, Some(ChatCommand::Steer { session, .. }) if session == "\"\u{1}!»1\u{20e3}.”“"),
            "{example:?}"
        );
        for session in ["my s", "\"quoted\"", "«a»", "say \"hi\" now"] {
            let err = UsageError::GoalWithoutText {
                session: Some(session.into()),
            };
            let Some(ChatCommand::Goal(args)) = cmd(&format!("/{}", err.example())) else {
                panic!("{session:?}: {}", err.example());
            };
            assert_eq!(args.first, session, "{}", err.example());
        }
    }

    #[test]
    fn pairing_usage_errors_say_what_is_missing() {
        let e = UsageError::GoalWithoutText {
            session: Some("my s".into()),
        };
        assert_eq!(e.command(), "goal");
        assert_eq!(e.synopsis(), "goal \"my s\" <goal>");
        assert!(e.problem().contains("my s"), "{}", e.problem());
        assert_eq!(e.example(), "goal \"my s\" docs/login-plan.md");
        let e = UsageError::WithoutSession { command: "look" };
        assert_eq!(e.command(), "look");
        assert_eq!(e.synopsis(), "look <session>");
        assert_eq!(e.example(), "look fix-login");
        assert_eq!(
            UsageError::SuperviseWithoutSession.synopsis(),
            "supervise <session> <goal>"
        );
        assert!(
            UsageError::SuperviseWithoutSession
                .example()
                .starts_with("supervise fix-login ")
        );
    }

    #[test]
    fn the_command_table_suits_telegram() {
        for c in COMMANDS {
            assert!(c.name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
            assert!((1..=256).contains(&c.about.len()));
            assert!(parse(&format!("/{}", c.name), '/', None).is_some());
        }
    }

    fn ask(options: &[&str]) -> Ask {
        Ask {
            options: options.iter().map(|o| o.to_string()).collect(),
            ..examples::ask()
        }
    }

    #[test]
    fn release_parses_a_manager_with_its_project_or_the_chief() {
        assert_eq!(
            parse("/release manager app", '/', None),
            Some(ChatCommand::Release {
                role: Role::Manager,
                project: Some("app".into())
            })
        );
        assert_eq!(
            parse("!Release Chief", '!', None),
            Some(ChatCommand::Release {
                role: Role::Chief,
                project: None
            })
        );
        for wrong in [
            "/release",
            "/release manager",
            "/release chief app",
            "/release lead x",
        ] {
            assert_eq!(
                parse(wrong, '/', None),
                Some(ChatCommand::Usage(UsageError::ReleaseWhat)),
                "{wrong}"
            );
        }
        let usage = UsageError::ReleaseWhat;
        assert_eq!(usage.command(), "release");
        assert!(usage.problem().contains("chief"), "{}", usage.problem());
    }

    #[test]
    fn workers_and_close_parse() {
        assert_eq!(parse("/workers", '/', None), Some(ChatCommand::Workers));
        assert_eq!(parse("!workers", '!', None), Some(ChatCommand::Workers));
        assert_eq!(
            parse("/projects", '/', None),
            Some(ChatCommand::Projects { all: false })
        );
        assert_eq!(
            parse("!Projects all", '!', None),
            Some(ChatCommand::Projects { all: true })
        );
        assert_eq!(parse("/hosts", '/', None), Some(ChatCommand::Hosts));
        assert_eq!(parse("!hosts", '!', None), Some(ChatCommand::Hosts));
        assert_eq!(
            parse("/close #5", '/', None),
            Some(ChatCommand::Close(Some("#5".into())))
        );
        assert_eq!(
            parse("!close \"scout-1\"", '!', None),
            Some(ChatCommand::Close(Some("scout-1".into())))
        );
        assert_eq!(parse("/close", '/', None), Some(ChatCommand::Close(None)));
        let usage = UsageError::CloseWithoutWorker;
        assert_eq!(usage.command(), "close");
        assert_eq!(usage.synopsis(), "close <worker>");
        assert!(usage.problem().contains("reply"), "{}", usage.problem());
    }

    #[test]
    fn replies_choose_options_by_number_or_text() {
        let a = ask(&["Yes, deploy", "No", "Wait an hour"]);
        assert_eq!(answer_text(&a, "2").as_deref(), Some("No"));
        assert_eq!(answer_text(&a, " #3 ").as_deref(), Some("Wait an hour"));
        assert_eq!(answer_text(&a, "1.").as_deref(), Some("Yes, deploy"));
        assert_eq!(answer_text(&a, "2️⃣").as_deref(), Some("No"));
        assert_eq!(answer_text(&a, "no").as_deref(), Some("No"));
        assert_eq!(answer_text(&a, "4").as_deref(), Some("4"));
        assert_eq!(
            answer_text(&a, " only on Friday\n").as_deref(),
            Some("only on Friday")
        );
        assert_eq!(answer_text(&a, "  \n"), None);
        assert_eq!(answer_text(&ask(&[]), "1").as_deref(), Some("1"));
    }

    #[test]
    fn reactions_choose_options() {
        let a = ask(&["a", "b"]);
        assert_eq!(reaction_option(&a, "1️⃣").as_deref(), Some("a"));
        assert_eq!(reaction_option(&a, "2\u{20e3}").as_deref(), Some("b"));
        assert_eq!(reaction_option(&a, "3️⃣"), None);
        assert_eq!(reaction_option(&a, "👍"), None);
        let ten = ask(&["1", "2", "3", "4", "5", "6", "7", "8", "9", "ten"]);
        assert_eq!(reaction_option(&ten, "🔟").as_deref(), Some("ten"));
    }
}
