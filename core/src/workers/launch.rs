//! # A worker's launch line
//!
//! [`LaunchSpec`] (what the hub decided: which session, model, tools, prompt) becomes the
//! argv and environment of one Pi process by [`build`], a pure function; [`write_prompt`]
//! writes the system prompt file it names. The line is
//!
//! ```text
//! <pi…> [--mode rpc] (--session-id <uuid> | --session <file> | --fork <src> --session-id <uuid>)
//!       [--model m] [--thinking t] [--tools a,b,ask_owner] [--exclude-tools x,y]
//!       -ne -e <extension> [--append-system-prompt <state dir>/workers/<id>.prompt]
//! ```
//!
//! with `SHEPHERD_LAUNCH=<nonce>`, `SHEPHERD_AUTOSTART=0`, `SHEPHERD_SOCKET=<core socket>`,
//! and `SHEPHERD_WORKER=1` with `SHEPHERD_WORKER_ID=<id>` (a worker) or
//! `SHEPHERD_ASSIGNMENT=<id>` (an assignment's Lead) added to the inherited environment.
//! The task is never on argv: it is a durable `task` delivery.
//!
//! ## Tool selection, as measured with the pinned Pi 1.6.0
//!
//! Measured with a probe extension that registers `ask_owner` and `other_tool` and logs
//! `pi.getActiveTools()` / `pi.getAllTools()` at `session_start` (`-ne -e probe.ts`):
//!
//! | flags | active tools | all tools |
//! |---|---|---|
//! | (none) | read, bash, edit, write, ask_owner, other_tool | + powershell, grep, find, ls |
//! | `--tools read,bash` | read, bash | read, bash |
//! | `--tools read,ask_owner` | read, ask_owner | read, ask_owner |
//! | `--tools 'read,ask_*'` | read, ask_owner | read, ask_owner |
//! | `--exclude-tools ask_owner` | read, bash, edit, write, other_tool | ask_owner gone |
//! | `--tools read,ask_owner --exclude-tools ask_owner` | read | read |
//! | `--tools +other_tool` | the defaults + other_tool, ask_owner | all |
//! | `--no-builtin-tools` | ask_owner, other_tool | all |
//! | `--no-tools` | (none) | (none) |
//!
//! So `--tools` and `--exclude-tools` filter **extension-registered tools too**, and a tool
//! they filter is removed from the registry: the extension's own
//! `pi.setActiveTools([...active, "ask_owner"])` at `session_start` did not bring it back
//! (`--tools read` still gave `read` only). `-ne` drops discovered extensions; an explicit
//! `-e` still loads. Therefore [`build`] always adds the mandatory worker tools
//! ([`MANDATORY_TOOLS`]) to an explicit `--tools` list (as `+name` when the list is only
//! `+name`/`-name` edits, which Pi does not let mix with plain names) and never passes
//! them in `--exclude-tools`; an empty list means "no tools but the mandatory ones"
//! (never `--no-tools`, which would remove them as well).

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::protocol::{AssignmentId, WorkerId};

/// Tools every worker keeps whatever its definition says: a worker must be able to ask
/// its owner.
pub const MANDATORY_TOOLS: &[&str] = &["ask_owner"];

/// What a host process is for. The host keys processes by an `i64` ([`LaunchSpec::worker`]):
/// a worker's id as is, an assignment's Lead as the assignment id negated, a session the
/// human started as its record's id plus [`STARTED_BASE`], negated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProcKey {
    Worker(WorkerId),
    Lead(AssignmentId),
    /// A session the human started (`new_session`, `continue_session`): its record's id.
    Started(u64),
}

/// Where the host keys of started sessions begin (below every assignment's).
pub const STARTED_BASE: i64 = 1 << 48;

impl ProcKey {
    /// The key the host uses.
    pub fn raw(self) -> i64 {
        match self {
            ProcKey::Worker(id) => id.get() as i64,
            ProcKey::Lead(id) => -(id.get() as i64),
            ProcKey::Started(id) => -(STARTED_BASE + id as i64),
        }
    }

    pub fn of(raw: i64) -> ProcKey {
        if raw <= -STARTED_BASE {
            ProcKey::Started((-raw - STARTED_BASE) as u64)
        } else if raw < 0 {
            ProcKey::Lead(AssignmentId::new(raw.unsigned_abs()))
        } else {
            ProcKey::Worker(WorkerId::new(raw as u64))
        }
    }
}

/// Which Pi session the worker runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionStart {
    /// A fresh session with this id (`--session-id`).
    New { id: String },
    /// A saved session, by its file path (`--session <file>`: an id from another cwd
    /// makes Pi ask on the terminal, so always the path).
    Resume { file: PathBuf },
    /// A new session `id` forked from `source` (a session file path or id).
    Fork { source: String, id: String },
}

/// Everything about one worker launch that the hub decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchSpec {
    /// The worker (generation) id.
    pub worker: i64,
    /// Its label (the tmux window's name).
    pub label: String,
    /// Working directory of the process.
    pub cwd: PathBuf,
    pub start: SessionStart,
    /// `--model` (`provider/id[:thinking]`); none: Pi's default.
    pub model: Option<String>,
    /// `--thinking`.
    pub thinking: Option<String>,
    /// `--tools` allowlist; none: Pi's default tools. The mandatory tools are added.
    pub tools: Option<Vec<String>>,
    /// `--exclude-tools`; the mandatory tools are never excluded.
    pub exclude_tools: Vec<String>,
    /// Appended to Pi's system prompt (through a 0600 file).
    pub system_prompt: Option<String>,
    /// The one-time launch nonce the extension presents when it registers.
    pub nonce: String,
}

/// Where the launch's fixed parts come from.
#[derive(Debug, Clone, Copy)]
pub struct LaunchContext<'a> {
    /// Argv prefix that runs Pi (`["pi"]`).
    pub pi: &'a [String],
    /// The shepherd extension (`-e`).
    pub extension: &'a Path,
    /// The core's socket (`SHEPHERD_SOCKET`).
    pub socket: &'a Path,
    /// The state directory (prompt files go to `<state dir>/workers/`).
    pub state_dir: &'a Path,
    /// Headless (`--mode rpc`) rather than interactive.
    pub rpc: bool,
    /// More environment for every worker (after the shepherd variables).
    pub extra_env: &'a [(String, String)],
}

/// One process to start: `argv[0]` with `argv[1..]`, in `cwd`, with `env` added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub argv: Vec<OsString>,
    pub env: Vec<(String, OsString)>,
    pub cwd: PathBuf,
    /// The system prompt file `argv` names, and what it must hold ([`write_prompt`]).
    pub prompt: Option<(PathBuf, String)>,
}

/// `<state dir>/workers`: prompt files and headless workers' stderr logs (0700).
pub fn workers_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("workers")
}

/// The system prompt file of worker `worker`.
pub fn prompt_path(state_dir: &Path, worker: i64) -> PathBuf {
    workers_dir(state_dir).join(format!("{worker}.prompt"))
}

/// The argv and environment of `spec` (no I/O).
pub fn build(spec: &LaunchSpec, cx: LaunchContext<'_>) -> Launch {
    let mut argv: Vec<OsString> = cx.pi.iter().map(OsString::from).collect();
    let mut arg = |a: &str| argv.push(a.into());
    if cx.rpc {
        arg("--mode");
        arg("rpc");
    }
    match &spec.start {
        SessionStart::New { id } => {
            arg("--session-id");
            arg(id);
        }
        SessionStart::Resume { file } => {
            arg("--session");
            argv.push(file.into());
        }
        SessionStart::Fork { source, id } => {
            arg("--fork");
            arg(source);
            arg("--session-id");
            arg(id);
        }
    }
    let mut arg = |a: &str| argv.push(a.into());
    if let Some(model) = &spec.model {
        arg("--model");
        arg(model);
    }
    if let Some(thinking) = &spec.thinking {
        arg("--thinking");
        arg(thinking);
    }
    if let Some(tools) = &spec.tools {
        arg("--tools");
        arg(&tools_list(tools));
    }
    let excluded: Vec<&str> = spec
        .exclude_tools
        .iter()
        .map(String::as_str)
        .filter(|t| !MANDATORY_TOOLS.contains(t))
        .collect();
    if !excluded.is_empty() {
        arg("--exclude-tools");
        arg(&excluded.join(","));
    }
    arg("-ne");
    arg("-e");
    argv.push(cx.extension.into());
    let prompt = spec.system_prompt.as_ref().map(|text| {
        let path = prompt_path(cx.state_dir, spec.worker);
        (path, text.clone())
    });
    if let Some((path, _)) = &prompt {
        argv.push("--append-system-prompt".into());
        argv.push(path.into());
    }
    let mut env: Vec<(String, OsString)> = vec![
        ("SHEPHERD_LAUNCH".into(), spec.nonce.clone().into()),
        ("SHEPHERD_AUTOSTART".into(), "0".into()),
        ("SHEPHERD_SOCKET".into(), cx.socket.into()),
    ];
    match ProcKey::of(spec.worker) {
        ProcKey::Worker(id) => {
            env.push(("SHEPHERD_WORKER".into(), "1".into()));
            env.push(("SHEPHERD_WORKER_ID".into(), id.to_string().into()));
        }
        ProcKey::Lead(id) => env.push(("SHEPHERD_ASSIGNMENT".into(), id.to_string().into())),
        // A session of the human's own: no worker, no assignment, only its launch nonce.
        ProcKey::Started(_) => {}
    }
    env.extend(cx.extra_env.iter().map(|(k, v)| (k.clone(), v.into())));
    Launch {
        argv,
        env,
        cwd: spec.cwd.clone(),
        prompt,
    }
}

/// The `--tools` value: the definition's list plus the mandatory tools. A list of only
/// `+name`/`-name` edits stays one (`+ask_owner` added, `-ask_owner` dropped); a plain
/// allowlist gets the plain names.
fn tools_list(tools: &[String]) -> String {
    let edits = !tools.is_empty() && tools.iter().all(|t| t.starts_with(['+', '-']));
    let mut out: Vec<String> = Vec::new();
    for tool in tools {
        let name = tool.trim_start_matches(['+', '-']);
        if edits && tool.starts_with('-') && MANDATORY_TOOLS.contains(&name) {
            continue;
        }
        if !out.contains(tool) {
            out.push(tool.clone());
        }
    }
    for tool in MANDATORY_TOOLS {
        let entry = if edits {
            format!("+{tool}")
        } else {
            (*tool).to_string()
        };
        if !out.contains(&entry) {
            out.push(entry);
        }
    }
    out.join(",")
}

/// Create `<state dir>/workers` 0700 (tightened if looser).
pub fn private_workers_dir(state_dir: &Path) -> std::io::Result<PathBuf> {
    let dir = workers_dir(state_dir);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    let mode = std::fs::metadata(&dir)?.permissions().mode() & 0o777;
    if mode != 0o700 {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(dir)
}

/// Write the launch's system prompt file (0600, replacing an older one), if it has one.
pub fn write_prompt(launch: &Launch) -> std::io::Result<()> {
    let Some((path, text)) = &launch.prompt else {
        return Ok(());
    };
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_keys_round_trip_through_the_hosts_key() {
        let worker = ProcKey::Worker(WorkerId::new(7));
        let lead = ProcKey::Lead(AssignmentId::new(7));
        assert_eq!((worker.raw(), lead.raw()), (7, -7));
        assert_eq!(ProcKey::of(worker.raw()), worker);
        assert_eq!(ProcKey::of(lead.raw()), lead);
        for id in [1, 7, 1 << 40] {
            let started = ProcKey::Started(id);
            assert!(started.raw() < -(1 << 47));
            assert_eq!(ProcKey::of(started.raw()), started);
        }
        let far_lead = ProcKey::Lead(AssignmentId::new((1 << 48) - 1));
        assert_eq!(ProcKey::of(far_lead.raw()), far_lead);
    }

    fn spec() -> LaunchSpec {
        LaunchSpec {
            worker: 7,
            label: "scout-1".into(),
            cwd: "/work/app".into(),
            start: SessionStart::New {
                id: "0193e0a0-0000-7000-8000-000000000001".into(),
            },
            model: None,
            thinking: None,
            tools: None,
            exclude_tools: Vec::new(),
            system_prompt: None,
            nonce: "n-123".into(),
        }
    }

    fn argv(spec: &LaunchSpec, rpc: bool) -> Vec<String> {
        let pi = ["node".to_string(), "/pi/cli.js".to_string()];
        let extra = [("PI_OFFLINE".to_string(), "1".to_string())];
        let launch = build(
            spec,
            LaunchContext {
                pi: &pi,
                extension: Path::new("/ext/index.ts"),
                socket: Path::new("/state/shepherd.sock"),
                state_dir: Path::new("/state"),
                rpc,
                extra_env: &extra,
            },
        );
        launch
            .argv
            .iter()
            .map(|a| a.to_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn a_fresh_headless_worker() {
        assert_eq!(
            argv(&spec(), true).join(" "),
            "node /pi/cli.js --mode rpc --session-id 0193e0a0-0000-7000-8000-000000000001 -ne -e /ext/index.ts"
        );
        assert_eq!(
            argv(&spec(), false).join(" "),
            "node /pi/cli.js --session-id 0193e0a0-0000-7000-8000-000000000001 -ne -e /ext/index.ts",
            "tmux runs Pi interactive: no --mode"
        );
    }

    #[test]
    fn resume_and_fork_name_their_sessions() {
        let resume = LaunchSpec {
            start: SessionStart::Resume {
                file: "/s/a b.jsonl".into(),
            },
            ..spec()
        };
        let args = argv(&resume, true);
        assert_eq!(args[4..6], ["--session", "/s/a b.jsonl"]);
        let fork = LaunchSpec {
            start: SessionStart::Fork {
                source: "/s/src.jsonl".into(),
                id: "new-id".into(),
            },
            ..spec()
        };
        assert_eq!(
            argv(&fork, true)[4..8],
            ["--fork", "/s/src.jsonl", "--session-id", "new-id"]
        );
    }

    #[test]
    fn everything_set() {
        let full = LaunchSpec {
            model: Some("fake/fake-model".into()),
            thinking: Some("low".into()),
            tools: Some(vec!["read".into(), "bash".into()]),
            exclude_tools: vec!["write".into(), "ask_owner".into()],
            system_prompt: Some("Be brief.".into()),
            ..spec()
        };
        let pi = ["pi".to_string()];
        let launch = build(
            &full,
            LaunchContext {
                pi: &pi,
                extension: Path::new("/ext/index.ts"),
                socket: Path::new("/state/shepherd.sock"),
                state_dir: Path::new("/state"),
                rpc: true,
                extra_env: &[("PI_OFFLINE".into(), "1".into())],
            },
        );
        let args: Vec<&str> = launch.argv.iter().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(
            args.join(" "),
            "pi --mode rpc --session-id 0193e0a0-0000-7000-8000-000000000001 \
             --model fake/fake-model --thinking low --tools read,bash,ask_owner \
             --exclude-tools write -ne -e /ext/index.ts \
             --append-system-prompt /state/workers/7.prompt"
        );
        assert_eq!(
            launch.prompt,
            Some(("/state/workers/7.prompt".into(), "Be brief.".into()))
        );
        let env: Vec<(&str, &str)> = launch
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.to_str().unwrap()))
            .collect();
        assert_eq!(
            env,
            [
                ("SHEPHERD_LAUNCH", "n-123"),
                ("SHEPHERD_AUTOSTART", "0"),
                ("SHEPHERD_SOCKET", "/state/shepherd.sock"),
                ("SHEPHERD_WORKER", "1"),
                ("SHEPHERD_WORKER_ID", "7"),
                ("PI_OFFLINE", "1"),
            ]
        );
        assert_eq!(launch.cwd, Path::new("/work/app"));
    }

    #[test]
    fn the_mandatory_tools_survive_every_tool_policy() {
        let list =
            |tools: &[&str]| tools_list(&tools.iter().map(|t| t.to_string()).collect::<Vec<_>>());
        assert_eq!(list(&[]), "ask_owner", "no tools: only ask_owner");
        assert_eq!(list(&["read", "ask_owner"]), "read,ask_owner");
        assert_eq!(list(&["read", "read"]), "read,ask_owner");
        assert_eq!(list(&["+grep", "-write"]), "+grep,-write,+ask_owner");
        assert_eq!(list(&["-ask_owner", "+grep"]), "+grep,+ask_owner");
        assert_eq!(list(&["ask_*"]), "ask_*,ask_owner");
    }

    #[test]
    fn the_prompt_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let launch = Launch {
            argv: Vec::new(),
            env: Vec::new(),
            cwd: dir.path().into(),
            prompt: Some((prompt_path(dir.path(), 3), "secret plan".into())),
        };
        private_workers_dir(dir.path()).unwrap();
        write_prompt(&launch).unwrap();
        let path = prompt_path(dir.path(), 3);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "secret plan");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&workers_dir(dir.path())), 0o700);
        // Rewritten (a relaunch), it stays private and holds the new text only.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let shorter = Launch {
            prompt: Some((path.clone(), "new".into())),
            ..launch
        };
        write_prompt(&shorter).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(mode(&path), 0o600);
    }
}
