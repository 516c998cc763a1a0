//! Presence against the real daemon: what a session says about itself and what the core
//! derives (pid from the socket, repository context from git), the events subscribers
//! see, who may hold a session id, how sessions are named by selectors, the limits, and
//! the daemon's own lifecycle (one core per state dir, clean SIGTERM, private socket).

use std::io::{BufRead, BufReader};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use shepherd_core::client::Sent;
use shepherd_core::protocol::{
    AskId, ClientKind, ContextUsage, DeliveryKind, ErrorCode, Role, ServerMsg, SessionId,
    SessionInfo, SessionStatus, requests,
};
use shepherd_harness::{Core, Pi, error_code, error_details, next_event_where, registration};

const WAIT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------
// Helpers

/// Run git in `dir`, failing loudly.
fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=shepherd-test",
            "-c",
            "user.email=test@example.invalid",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .context("running git (is it installed?)")?;
    if !out.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8(out.stdout)?.trim().to_string())
}

/// A repository with one commit on `main` at `<base>/repo` (with a `src/` subdirectory)
/// and a linked worktree on branch `feature` at `<base>/wt`. Returns the canonical
/// paths of both and the commit id.
fn repo_with_worktree(base: &Path) -> Result<(PathBuf, PathBuf, String)> {
    let repo = base.join("repo");
    std::fs::create_dir_all(repo.join("src"))?;
    git(&repo, &["init", "-q", "-b", "main"])?;
    std::fs::write(repo.join("src/lib.rs"), "// test\n")?;
    git(&repo, &["add", "."])?;
    git(&repo, &["commit", "-q", "-m", "init"])?;
    let head = git(&repo, &["rev-parse", "HEAD"])?;
    git(&repo, &["worktree", "add", "-q", "-b", "feature", "../wt"])?;
    Ok((repo.canonicalize()?, base.join("wt").canonicalize()?, head))
}

/// `shepherd sessions [--all] --json`, as a map by id.
fn sessions_json(core: &Core, all: bool) -> Result<Vec<Value>> {
    let args: &[&str] = if all {
        &["sessions", "--all"]
    } else {
        &["sessions"]
    };
    let v = core.cli_json(args)?;
    Ok(v.as_array().context("sessions --json is an array")?.clone())
}

fn find<'a>(sessions: &'a [Value], id: &str) -> Result<&'a Value> {
    sessions
        .iter()
        .find(|s| s["id"] == id)
        .with_context(|| format!("session {id} not listed in {sessions:#?}"))
}

/// Wait for `session_left` of `id` on a subscribed client.
async fn await_left(sub: &mut shepherd_core::client::Client, id: &str) -> Result<SessionInfo> {
    match next_event_where(
        sub,
        WAIT,
        |m| matches!(m, ServerMsg::SessionLeft { session, .. } if session.id == id),
    )
    .await?
    {
        ServerMsg::SessionLeft { session, .. } => Ok(session),
        _ => unreachable!(),
    }
}

/// Send `text` to `to` from a fresh client of `kind`.
async fn send_from(
    core: &Core,
    kind: ClientKind,
    to: &str,
    text: &str,
) -> Result<Sent, shepherd_core::client::ClientError> {
    let mut client = core.client(kind).await.expect("client connects");
    client.send_to(to, text).await
}

/// The session id the core resolved `to` to.
async fn resolve(core: &Core, to: &str) -> Result<SessionId> {
    Ok(send_from(core, ClientKind::Cli, to, "where are you?")
        .await?
        .session_id)
}

/// `update` with a status and/or cwd; the session as stored.
async fn update(pi: &mut Pi, status: Option<&str>, cwd: Option<&Path>) -> Result<SessionInfo> {
    let status = status.map(SessionStatus::from);
    let cwd = cwd.map(|c| c.display().to_string());
    Ok(pi
        .client
        .call(requests::Update {
            status,
            cwd,
            ..Default::default()
        })
        .await?)
}

/// The name the test harness lists `entry`, a test of this module, under: the module's
/// path without the crate's name (`presence::holder_process_entry`), so that a copy of
/// this binary started with it and `--exact` runs that test alone.
fn this_modules_test(entry: &str) -> String {
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    format!("{module}::{entry}")
}

// ---------------------------------------------------------------------------------------
// A session held by another process: a copy of this test binary, started with
// `holder_process_entry` as its only test, registers and holds the session until its
// stdin closes.

const HOLD_SOCKET: &str = "SHEPHERD_TEST_HOLD_SOCKET";
const HOLD_SESSION: &str = "SHEPHERD_TEST_HOLD_SESSION";
const HOLD_READY: &str = "HOLDER-READY";

/// Not a test of its own: does nothing unless started by [`Holder::spawn`].
#[test]
fn holder_process_entry() {
    let (Some(socket), Some(session)) = (
        std::env::var_os(HOLD_SOCKET),
        std::env::var_os(HOLD_SESSION),
    ) else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let pi = rt.block_on(async {
        let session = session.to_str().unwrap().to_string();
        let reg = registration(&session, "held", Path::new("/tmp"));
        Pi::register_full(Path::new(&socket), reg).await.unwrap().0
    });
    println!("\n{HOLD_READY} {}", std::process::id());
    // Hold the registration until the parent closes our stdin (or dies).
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    drop(pi);
}

struct Holder {
    child: Child,
    pid: u32,
}

impl Holder {
    fn spawn(core: &Core, session_id: &str) -> Result<Holder> {
        let mut child = Command::new(std::env::current_exe()?)
            .arg(this_modules_test("holder_process_entry"))
            .args(["--exact", "--nocapture", "--test-threads=1", "-q"])
            .env(HOLD_SOCKET, core.socket())
            .env(HOLD_SESSION, session_id)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout = child.stdout.take().context("holder stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let pid = loop {
            let Some(line) = lines.next() else {
                let status = child.wait()?;
                bail!("holder exited ({status}) before registering");
            };
            let line = line?;
            if let Some(rest) = line.split(HOLD_READY).nth(1) {
                break rest.trim().parse::<u32>()?;
            }
        };
        assert_eq!(pid, child.id(), "the holder is the spawned process");
        // Keep draining its stdout so that its test harness can finish writing.
        std::thread::spawn(move || lines.for_each(drop));
        Ok(Holder { child, pid })
    }

    /// Close its stdin: it drops its connection and exits; reap it.
    fn release(mut self) -> Result<()> {
        drop(self.child.stdin.take());
        let status = self.child.wait()?;
        assert!(status.success(), "holder exited with {status}");
        Ok(())
    }

    /// SIGKILL it and reap it.
    fn kill9(mut self) -> Result<()> {
        self.child.kill()?;
        self.child.wait()?;
        Ok(())
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------
// What `sessions --json` shows

#[tokio::test]
async fn sessions_json_shows_the_registration_the_peer_pid_and_the_repository() -> Result<()> {
    let core = Core::start().await?;
    let (repo, wt, head) = repo_with_worktree(core.agent_dir())?;
    let plain = core.agent_dir().join("plain");
    std::fs::create_dir(&plain)?;

    // The main checkout, from a subdirectory, lying about its pid.
    let mut reg = registration("0193a5c2-main", "fix-login", &repo.join("src"));
    reg.pid = Some(1);
    reg.model = Some("anthropic/claude-sonnet-4".into());
    reg.context = ContextUsage {
        tokens: Some(41234),
        window: Some(200000),
        percent: Some(20.6),
    };
    reg.status = "thinking".into();
    reg.role = Role::Manager;
    reg.session_file = Some("/tmp/s.jsonl".into());
    let (_main, registered) = Pi::register_full(&core.socket(), reg).await?;
    assert_eq!(registered.pid, Some(std::process::id()));
    assert_eq!(registered.repo.as_deref(), repo.to_str());

    // The linked worktree.
    let mut reg = registration("0193a5c2-wt", "feature-work", &wt);
    reg.status = "tool:bash".into();
    let (_wt, _) = Pi::register_full(&core.socket(), reg).await?;

    // Outside any repository.
    let (_plain, _) =
        Pi::register_full(&core.socket(), registration("plain-1", "plain", &plain)).await?;

    let sessions = sessions_json(&core, false)?;
    assert_eq!(sessions.len(), 3, "{sessions:#?}");

    let s = find(&sessions, "0193a5c2-main")?;
    assert_eq!(s["name"], "fix-login");
    assert_eq!(s["cwd"], repo.join("src").to_str().unwrap());
    assert_eq!(
        s["pid"],
        std::process::id(),
        "pid is the peer's, not the payload's"
    );
    assert_eq!(s["model"], "anthropic/claude-sonnet-4");
    assert_eq!(s["status"], "thinking");
    assert_eq!(s["context_tokens"], 41234);
    assert_eq!(s["context_window"], 200000);
    assert_eq!(s["context_percent"], 20.6);
    assert_eq!(
        s["role"], "lead",
        "registering cannot claim a role the core grants (set_role does)"
    );
    assert_eq!(s["connected"], true);
    let repo_id = std::fs::canonicalize(repo.join(".git"))?;
    assert_eq!(s["repo_id"], repo_id.to_str().unwrap());
    assert_eq!(s["project"], repo.file_name().unwrap().to_str().unwrap());
    assert_eq!(s["repo"], repo.to_str().unwrap());
    assert_eq!(s["branch"], "main");
    assert_eq!(s["head"], head.as_str());
    assert_eq!(s["worktree"], false);
    assert_eq!(s["session_file"], "/tmp/s.jsonl");
    assert_eq!(s["open_asks"], 0);
    assert_eq!(s["pending_messages"], 0);

    let s = find(&sessions, "0193a5c2-wt")?;
    assert_eq!(s["name"], "feature-work");
    assert_eq!(s["status"], "tool:bash");
    assert_eq!(s["role"], "lead", "role defaults to lead");
    assert_eq!(s["repo"], wt.to_str().unwrap());
    assert_eq!(s["branch"], "feature");
    assert_eq!(s["head"], head.as_str());
    assert_eq!(s["worktree"], true);
    assert_eq!(
        s["repo_id"],
        repo_id.to_str().unwrap(),
        "one repository, one id"
    );
    assert_eq!(s["context_percent"], Value::Null);

    let s = find(&sessions, "plain-1")?;
    assert_eq!(s["repo"], Value::Null);
    assert_eq!(s["branch"], Value::Null);
    assert_eq!(s["head"], Value::Null);
    assert_eq!(s["worktree"], false);
    Ok(())
}

#[tokio::test]
async fn repository_context_follows_cwd_changes_and_returns_to_idle() -> Result<()> {
    let core = Core::start().await?;
    let (repo, wt, _) = repo_with_worktree(core.agent_dir())?;
    let (mut pi, info) =
        Pi::register_full(&core.socket(), registration("ctx-1", "ctx", &repo)).await?;
    assert_eq!(info.branch.as_deref(), Some("main"));

    // A new branch is seen when the status returns to idle, not while busy.
    git(&repo, &["checkout", "-q", "-b", "topic"])?;
    let session = update(&mut pi, Some("thinking"), None).await?;
    assert_eq!(session.status, "thinking");
    assert_eq!(
        session.branch.as_deref(),
        Some("main"),
        "not refreshed while busy"
    );
    let session = update(&mut pi, Some("idle"), None).await?;
    assert_eq!(session.branch.as_deref(), Some("topic"));

    // Detached HEAD: no branch, HEAD still known.
    git(&repo, &["checkout", "-q", "--detach"])?;
    let session = update(&mut pi, Some("idle"), None).await?;
    assert_eq!(session.branch, None);
    assert_eq!(session.head, Some(git(&repo, &["rev-parse", "HEAD"])?));

    // Moving into the worktree changes everything about the repository.
    let session = update(&mut pi, None, Some(&wt)).await?;
    assert_eq!(session.repo.as_deref(), wt.to_str());
    assert_eq!(session.branch.as_deref(), Some("feature"));
    assert!(session.worktree);
    let listed = sessions_json(&core, false)?;
    assert_eq!(find(&listed, "ctx-1")?["worktree"], true);
    assert_eq!(find(&listed, "ctx-1")?["cwd"], wt.to_str().unwrap());
    Ok(())
}

/// A `cwd` the core refused must not be used later: the next refresh of the repository
/// context (status back to `idle`) reads the session's stored cwd, not the refused one.
/// The refused relative path climbs to `/` from wherever the daemon runs and then into
/// a real repository, so using it by mistake shows.
#[tokio::test]
async fn a_refused_cwd_never_becomes_the_repository_context() -> Result<()> {
    let core = Core::start().await?;
    let plain = core.agent_dir().join("plain");
    std::fs::create_dir(&plain)?;
    let (repo, _, _) = repo_with_worktree(core.agent_dir())?;
    let relative = format!(
        "{}{}",
        "../".repeat(64),
        repo.to_str().context("utf-8 path")?.trim_start_matches('/')
    );

    // Refused by `update`.
    let (mut pi, info) =
        Pi::register_full(&core.socket(), registration("cwd-1", "cwd", &plain)).await?;
    assert_eq!(info.repo, None);
    let err = pi
        .client
        .call(requests::Update {
            cwd: Some(relative),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::InvalidArgument), "{err}");
    let session = update(&mut pi, Some("idle"), None).await?;
    assert_eq!(session.cwd, plain.to_str().unwrap());
    assert_eq!(
        (session.repo, session.branch),
        (None, None),
        "the repository of a cwd that was refused"
    );

    // Refused by a second `register` for another session on the same connection.
    let (mut pi, _) =
        Pi::register_full(&core.socket(), registration("cwd-2", "cwd2", &plain)).await?;
    let err = pi
        .client
        .register(registration("cwd-3", "other", &repo))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::InvalidArgument), "{err}");
    let session = update(&mut pi, Some("idle"), None).await?;
    assert_eq!(session.cwd, plain.to_str().unwrap());
    assert_eq!(
        (session.repo, session.branch),
        (None, None),
        "the repository of a registration that was refused"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Events

#[tokio::test]
async fn subscribers_see_join_change_and_leave_in_order() -> Result<()> {
    let core = Core::start().await?;
    let mut early = core.subscriber().await?;

    let mut reg = registration("ev-1", "watched", core.agent_dir());
    reg.status = "thinking".into();
    let (mut pi, _) = Pi::register_full(&core.socket(), reg).await?;

    let joined = early.next_event().await?;
    let ServerMsg::SessionJoined { session } = joined else {
        bail!("expected session_joined, got {joined:?}")
    };
    assert_eq!(session.id, "ev-1");
    assert_eq!(session.name, "watched");
    assert_eq!(session.status, "thinking");
    assert_eq!(session.pid, Some(std::process::id()));
    assert!(session.connected);

    // A subscriber that joins now sees only what happens from now on.
    let mut late = core.subscriber().await?;

    pi.client
        .call(requests::Update {
            id: 0,
            name: Some("renamed".into()),
            model: Some("other/model".into()),
            context: Some(ContextUsage {
                tokens: Some(150000),
                window: Some(200000),
                percent: Some(75.0),
            }),
            status: Some("tool:edit".into()),
            cwd: None,
            role: Some(Role::Supervisor),
            session_file: None,
        })
        .await?;

    // An invalid update changes nothing and announces nothing.
    let bad = pi
        .client
        .call(requests::Update {
            status: Some("sleeping".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Some(ErrorCode::InvalidArgument));

    drop(pi);

    for sub in [&mut early, &mut late] {
        let changed = sub.next_event().await?;
        let ServerMsg::SessionChanged { session } = changed else {
            bail!("expected session_changed, got {changed:?}")
        };
        assert_eq!(session.id, "ev-1");
        assert_eq!(session.name, "renamed");
        assert_eq!(session.model.as_deref(), Some("other/model"));
        assert_eq!(session.status, "tool:edit");
        assert_eq!(session.context_percent, Some(75.0));
        assert_eq!(session.context_tokens, Some(150000));
        assert_eq!(session.role, Role::Supervisor);
        assert!(session.connected);

        let left = sub.next_event().await?;
        let ServerMsg::SessionLeft { session, .. } = left else {
            bail!("expected session_left right after the change, got {left:?}")
        };
        assert_eq!(session.id, "ev-1");
        assert_eq!(session.name, "renamed");
        assert!(!session.connected);
        assert_eq!(session.status, "idle", "a departed session is idle");
    }

    // And the stored record agrees.
    let all = sessions_json(&core, true)?;
    let s = find(&all, "ev-1")?;
    assert_eq!(s["connected"], false);
    assert_eq!(s["name"], "renamed");
    assert_eq!(s["role"], "supervisor");
    assert!(sessions_json(&core, false)?.is_empty());
    Ok(())
}

#[tokio::test]
async fn subscribers_see_asks_answers_and_reports_with_the_stamped_session() -> Result<()> {
    let core = Core::start().await?;
    let mut pi = core.pi("evr-1", "reporter").await?;
    let mut sub = core.subscriber().await?;

    let report = pi.client.report("tests pass").await?;
    let event = sub.next_event().await?;
    let ServerMsg::ReportPosted { report: posted } = event else {
        bail!("expected report_posted, got {event:?}")
    };
    assert_eq!(posted, report);
    assert_eq!(
        (
            posted.session_id.as_str(),
            posted.session_name.as_str(),
            posted.text.as_str()
        ),
        ("evr-1", "reporter", "tests pass")
    );

    let ask = pi
        .client
        .call(requests::Ask {
            id: 0,
            question: "Ship it?".into(),
            options: vec!["yes".into(), "no".into()],
            details: Some("CI is green".into()),
            key: None,
        })
        .await?;
    let event = sub.next_event().await?;
    let ServerMsg::AskOpened { ask: opened } = event else {
        bail!("expected ask_opened, got {event:?}")
    };
    assert_eq!(opened, ask);
    assert_eq!(opened.session_name, "reporter");
    assert_eq!(opened.details.as_deref(), Some("CI is green"));

    let out = core.cli(&["answer", &ask.id.to_string(), "yes"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let event = sub.next_event().await?;
    let ServerMsg::AskAnswered { ask: answered } = event else {
        bail!("expected ask_answered, got {event:?}")
    };
    assert_eq!(answered.id, ask.id);
    assert_eq!(answered.answer.as_deref(), Some("yes"));
    assert_eq!(answered.answered_by.as_deref(), Some("cli"));
    assert!(answered.answered_at.is_some());
    let d = pi.next_delivery(WAIT).await?;
    assert_eq!(d.kind, DeliveryKind::Answer);
    assert_eq!(d.question.as_deref(), Some("Ship it?"));
    assert_eq!(d.from.name, "cli");
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Who may hold a session id

#[tokio::test]
async fn a_session_held_by_a_live_process_is_refused_naming_its_pid() -> Result<()> {
    let core = Core::start().await?;
    let mut sub = core.subscriber().await?;
    let holder = Holder::spawn(&core, "held-1")?;
    assert_ne!(holder.pid, std::process::id());

    let err = Pi::register(&core.socket(), "held-1", "thief", core.agent_dir())
        .await
        .err()
        .context("a second live registration must be refused")?;
    assert_eq!(error_code(&err), Some(ErrorCode::SessionTaken), "{err:#}");
    assert_eq!(
        error_details(&err).context("details")?["pid"],
        holder.pid,
        "{err:#}"
    );
    assert!(
        err.to_string().contains(&holder.pid.to_string()),
        "the message names the holder's pid: {err}"
    );

    // The holder keeps the session, untouched.
    let listed = sessions_json(&core, false)?;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["pid"], holder.pid);
    assert_eq!(listed[0]["name"], "held");
    assert_eq!(listed[0]["connected"], true);

    // Once the holder's connection is gone, the id can be taken over.
    holder.release()?;
    await_left(&mut sub, "held-1").await?;
    let (_pi, info) = Pi::register_full(
        &core.socket(),
        registration("held-1", "taker", core.agent_dir()),
    )
    .await?;
    assert_eq!(info.pid, Some(std::process::id()));
    assert_eq!(info.name, "taker");
    let listed = sessions_json(&core, false)?;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["pid"], std::process::id());
    Ok(())
}

#[tokio::test]
async fn a_killed_holder_is_taken_over_at_once() -> Result<()> {
    let core = Core::start().await?;
    let holder = Holder::spawn(&core, "held-2")?;
    let pid = holder.pid;
    holder.kill9()?;
    // No waiting for the core to notice: the holder's process is gone.
    let (mut pi, info) = Pi::register_full(
        &core.socket(),
        registration("held-2", "taker", core.agent_dir()),
    )
    .await?;
    assert_eq!(info.pid, Some(std::process::id()));
    assert_ne!(info.pid, Some(pid));
    // The new holder gets its mail.
    let sent = send_from(&core, ClientKind::Cli, "held-2", "still there?").await?;
    assert!(
        matches!(
            sent,
            Sent {
                connected: true,
                ..
            }
        ),
        "{sent:?}"
    );
    let d = pi.next_delivery(WAIT).await?;
    assert_eq!(d.text, "still there?");
    Ok(())
}

#[tokio::test]
async fn the_same_process_registering_again_replaces_the_old_connection() -> Result<()> {
    let core = Core::start().await?;
    let mut sub = core.subscriber().await?;
    let mut old = core.pi("reload-1", "before-reload").await?;
    let joined = sub.next_event().await?;
    assert!(
        matches!(joined, ServerMsg::SessionJoined { .. }),
        "{joined:?}"
    );

    let mut new = core.pi("reload-1", "after-reload").await?;
    // The old connection is told why and closed.
    let msg = old.client.next_event().await?;
    let ServerMsg::Error { code, id, .. } = msg else {
        bail!("expected replaced, got {msg:?}")
    };
    assert_eq!((code, id), (ErrorCode::Replaced, None));
    let closed = tokio::time::timeout(WAIT, old.client.next_event()).await?;
    assert!(closed.is_err(), "the old connection closes: {closed:?}");

    // Subscribers see a change, not a leave and a join.
    let changed = sub.next_event().await?;
    let ServerMsg::SessionChanged { session } = changed else {
        bail!("expected session_changed, got {changed:?}")
    };
    assert_eq!(session.name, "after-reload");
    assert!(session.connected);

    let listed = sessions_json(&core, false)?;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["name"], "after-reload");
    send_from(&core, ClientKind::Cli, "reload-1", "to the new one").await?;
    assert_eq!(new.next_delivery(WAIT).await?.text, "to the new one");

    // Registering the same id again on the same connection refreshes it; another id
    // is refused.
    new.client
        .register(registration("reload-1", "refreshed", core.agent_dir()))
        .await?;
    let err = new
        .client
        .register(registration("reload-2", "other", core.agent_dir()))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::InvalidArgument), "{err}");
    let listed = sessions_json(&core, true)?;
    assert_eq!(listed.len(), 1, "{listed:#?}");
    assert_eq!(listed[0]["name"], "refreshed");
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Selectors

#[tokio::test]
async fn selectors_resolve_exact_id_prefix_and_name_and_list_candidates() -> Result<()> {
    let core = Core::start().await?;
    let mut sub = core.subscriber().await?;
    let dir = core.agent_dir();
    let mut alpha = core.pi("0193aaaa-1111", "alpha").await?;
    let _beta = core.pi("0193aaaa-2222", "beta").await?;
    let dup1 = core.pi("0193bbbb-3333", "dup").await?;
    let dup2 = core.pi("0193cccc-4444", "dup").await?;
    // A name that is also an id prefix: the prefix wins (documented order).
    let _tricky = Pi::register_full(&core.socket(), registration("zz-5555", "0193c", dir)).await?;

    assert_eq!(resolve(&core, "0193aaaa-2222").await?, "0193aaaa-2222");
    assert_eq!(resolve(&core, "alpha").await?, "0193aaaa-1111");
    assert_eq!(resolve(&core, "0193b").await?, "0193bbbb-3333");
    assert_eq!(resolve(&core, "0193aaaa-1").await?, "0193aaaa-1111");
    assert_eq!(resolve(&core, "0193c").await?, "0193cccc-4444");
    assert_eq!(resolve(&core, "zz").await?, "zz-5555");

    // The steers went where the core said.
    let texts: Vec<String> = {
        let mut v = Vec::new();
        for _ in 0..2 {
            v.push(alpha.next_delivery(WAIT).await?.text);
        }
        v
    };
    assert_eq!(texts, ["where are you?", "where are you?"]);

    // Ambiguous id prefix.
    let err = send_from(&core, ClientKind::Cli, "0193aaaa", "x")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::AmbiguousSession), "{err}");
    let shepherd_core::client::ClientError::Remote { details, .. } = err else {
        unreachable!()
    };
    let mut cands: Vec<(String, String, bool)> = details.context("details")?["candidates"]
        .as_array()
        .context("candidates")?
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["name"].as_str().unwrap().to_string(),
                c["connected"].as_bool().unwrap(),
            )
        })
        .collect();
    cands.sort();
    assert_eq!(
        cands,
        [
            ("0193aaaa-1111".to_string(), "alpha".to_string(), true),
            ("0193aaaa-2222".to_string(), "beta".to_string(), true)
        ]
    );

    // Ambiguous name, over the CLI: exit 1, the code and the candidates in --json.
    let out = core.cli(&["send", "dup", "hello", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let body: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(body["error"]["code"], "ambiguous_session", "{body:#}");
    let mut ids: Vec<&str> = body["error"]["details"]["candidates"]
        .as_array()
        .context("candidates")?
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, ["0193bbbb-3333", "0193cccc-4444"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("0193bbbb-3333") && stderr.contains("0193cccc-4444"),
        "{stderr}"
    );

    // Unknown.
    let err = send_from(&core, ClientKind::Cli, "nobody", "x")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::UnknownSession), "{err}");

    // A connected session wins a name shared with a departed one...
    drop(dup2);
    await_left(&mut sub, "0193cccc-4444").await?;
    assert_eq!(resolve(&core, "dup").await?, "0193bbbb-3333");
    // ...and when neither is connected, the name is ambiguous again.
    drop(dup1);
    await_left(&mut sub, "0193bbbb-3333").await?;
    let err = send_from(&core, ClientKind::Cli, "dup", "x")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::AmbiguousSession), "{err}");
    let shepherd_core::client::ClientError::Remote { details, .. } = err else {
        unreachable!()
    };
    let cands = details.context("details")?["candidates"].clone();
    assert_eq!(cands.as_array().map(Vec::len), Some(2), "{cands}");
    assert!(
        cands
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["connected"] == false),
        "{cands}"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Limits

#[tokio::test]
async fn max_sessions_refuses_only_the_extra_session() -> Result<()> {
    let core = Core::start_with(&[("SHEPHERD_CORE__LIMITS__MAX_SESSIONS", "2")]).await?;
    let mut sub = core.subscriber().await?;
    let mut one = core.pi("lim-1", "one").await?;
    let mut two = core.pi("lim-2", "two").await?;

    let mut third = core.client(ClientKind::Pi).await?;
    let err = third
        .register(registration("lim-3", "three", core.agent_dir()))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::LimitExceeded), "{err}");
    let shepherd_core::client::ClientError::Remote { details, .. } = &err else {
        unreachable!()
    };
    let details = details.clone().context("details")?;
    assert_eq!(details["limit"], "max_sessions");
    assert_eq!(details["max"], 2);

    // The refused client's connection still works, and the others are untouched.
    third.ping().await?;
    send_from(&core, ClientKind::Cli, "one", "a").await?;
    send_from(&core, ClientKind::Cli, "two", "b").await?;
    assert_eq!(one.next_delivery(WAIT).await?.text, "a");
    assert_eq!(two.next_delivery(WAIT).await?.text, "b");
    let status = core.cli_json(&["status"])?;
    assert_eq!(status["sessions_connected"], 2);
    assert_eq!(
        status["sessions_known"], 2,
        "the refused session was not stored"
    );

    // A refresh of a held session is not a new one.
    one.sync().await?;
    one.client
        .register(registration("lim-1", "one", core.agent_dir()))
        .await?;

    // When one leaves, the third fits, on the same connection that was refused.
    drop(two);
    await_left(&mut sub, "lim-2").await?;
    third
        .register(registration("lim-3", "three", core.agent_dir()))
        .await?;
    assert_eq!(core.cli_json(&["status"])?["sessions_connected"], 2);
    Ok(())
}

async fn ask(pi: &mut Pi, question: &str) -> Result<AskId> {
    let q = question.to_string();
    Ok(pi.client.ask(q).await?.id)
}

#[tokio::test]
async fn max_open_asks_is_per_session_and_frees_up_when_answered() -> Result<()> {
    let core =
        Core::start_with(&[("SHEPHERD_CORE__LIMITS__MAX_OPEN_ASKS_PER_SESSION", "2")]).await?;
    let mut a = core.pi("asks-a", "a").await?;
    let mut b = core.pi("asks-b", "b").await?;
    let first = ask(&mut a, "one?").await?;
    ask(&mut a, "two?").await?;
    let err = ask(&mut a, "three?").await.unwrap_err();
    assert_eq!(error_code(&err), Some(ErrorCode::LimitExceeded), "{err:#}");
    let details = error_details(&err).context("details")?;
    assert_eq!(details["limit"], "max_open_asks_per_session");
    assert_eq!(details["max"], 2);

    // Another session is not affected.
    ask(&mut b, "b one?").await?;
    ask(&mut b, "b two?").await?;

    let open = core.cli_json(&["asks"])?;
    assert_eq!(open.as_array().map(Vec::len), Some(4), "{open:#}");
    let listed = sessions_json(&core, false)?;
    assert_eq!(find(&listed, "asks-a")?["open_asks"], 2);

    // Answering one makes room again.
    let out = core.cli(&["answer", &first.to_string(), "yes"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = a.next_delivery(WAIT).await?;
    assert_eq!((d.kind, d.ask_id), (DeliveryKind::Answer, Some(first)));
    ask(&mut a, "three, now?").await?;
    let err = ask(&mut a, "four?").await.unwrap_err();
    assert_eq!(error_code(&err), Some(ErrorCode::LimitExceeded), "{err:#}");
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The daemon itself

#[tokio::test]
async fn a_second_up_on_the_same_state_dir_refuses_naming_the_pid() -> Result<()> {
    let core = Core::start().await?;
    let pid = core.pid().context("running")?;
    let out = core.cli_within(&["up"], Duration::from_secs(20)).await?;
    assert_eq!(out.status.code(), Some(1), "the second core must refuse");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("pid {pid}")),
        "names the running pid {pid}: {stderr}"
    );
    // The first one is still the one serving.
    let status = core.cli_json(&["status"])?;
    assert_eq!(status["pid"], pid);
    assert!(core.socket().exists());
    Ok(())
}

#[tokio::test]
async fn sigterm_closes_clients_exits_zero_and_removes_the_socket() -> Result<()> {
    let mut core = Core::start().await?;
    let mut pi = core.pi("term-1", "term").await?;
    pi.sync().await?;
    let started = Instant::now();
    let status = core.terminate()?;
    assert!(status.success(), "exit status {status}");
    assert_eq!(status.code(), Some(0));
    assert!(started.elapsed() < Duration::from_secs(8));
    assert!(!core.socket().exists(), "the socket is removed");

    // The connected session was told before the connection closed.
    let msg = tokio::time::timeout(WAIT, pi.client.next_event()).await??;
    let ServerMsg::Error { code, .. } = msg else {
        bail!("expected shutting_down, got {msg:?}")
    };
    assert_eq!(code, ErrorCode::ShuttingDown);
    assert!(pi.client.next_event().await.is_err(), "then closed");
    assert!(!core.log_has_panic(), "{}", core.log());

    // Restarting on the same state finds the session it knew.
    core.restart().await?;
    let all = sessions_json(&core, true)?;
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["id"], "term-1");
    assert_eq!(all[0]["connected"], false);
    Ok(())
}

#[tokio::test]
async fn socket_is_0600_in_a_0700_directory_even_after_a_loose_chmod() -> Result<()> {
    let mut core = Core::start().await?;
    let mode = |p: &Path| -> Result<u32> { Ok(std::fs::metadata(p)?.permissions().mode() & 0o777) };
    assert_eq!(mode(&core.socket())?, 0o600);
    assert_eq!(mode(&core.state_dir())?, 0o700);
    assert!(std::fs::metadata(core.socket())?.file_type().is_socket());

    // Someone loosened the directory: the next start makes it private again.
    core.terminate()?;
    std::fs::set_permissions(core.state_dir(), std::fs::Permissions::from_mode(0o755))?;
    core.restart().await?;
    assert_eq!(mode(&core.state_dir())?, 0o700);
    assert_eq!(mode(&core.socket())?, 0o600);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Another user on the socket (SO_PEERCRED): a copy of this test binary, run as `nobody`
// through `setpriv`, connects and says hello; the core must close without a welcome.

const PEER_SOCKET: &str = "SHEPHERD_TEST_FOREIGN_PEER_SOCKET";
const PEER_RESULT: &str = "PEER-RESULT";

/// Not a test of its own: does nothing unless started by the test below.
#[test]
fn foreign_peer_entry() {
    use std::io::{Read, Write};
    let Some(socket) = std::env::var_os(PEER_SOCKET) else {
        return;
    };
    let result = match std::os::unix::net::UnixStream::connect(&socket) {
        Err(e) => format!("connect-failed {e}"),
        Ok(mut stream) => {
            let body = br#"{"type":"hello","id":1,"protocol":1,"client":"cli"}"#;
            let mut frame = (body.len() as u32).to_be_bytes().to_vec();
            frame.extend_from_slice(body);
            let _ = stream.write_all(&frame);
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut buf = [0u8; 4096];
            match stream.read(&mut buf) {
                Ok(0) => "closed".to_string(),
                Ok(n) => format!("answered {}", String::from_utf8_lossy(&buf[4.min(n)..n])),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => "closed".into(),
                Err(e) => format!("read-failed {e}"),
            }
        }
    };
    println!("\n{PEER_RESULT} {result}");
}

#[tokio::test]
async fn a_peer_with_another_uid_is_closed_and_logged() -> Result<()> {
    if effective_uid() != 0 {
        eprintln!(
            "NOT RUN: a_peer_with_another_uid_is_closed_and_logged needs root to connect as \
             another user (setpriv); run the tests as root to cover SO_PEERCRED"
        );
        return Ok(());
    }
    let core = Core::start().await?;
    let mut by = core.pi("uid-bystander", "bystander").await?;
    // Let `nobody` reach the socket, so that only the peer-uid check stands in its way.
    for dir in [core.agent_dir().to_path_buf(), core.state_dir()] {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
    }
    std::fs::set_permissions(core.socket(), std::fs::Permissions::from_mode(0o666))?;

    let out = tokio::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(std::env::current_exe()?)
        .arg(this_modules_test("foreign_peer_entry"))
        .args(["--exact", "--nocapture", "--test-threads=1", "-q"])
        .env(PEER_SOCKET, core.socket())
        .output()
        .await
        .context("running setpriv (util-linux)")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result = stdout
        .lines()
        .find_map(|l| l.split(PEER_RESULT).nth(1))
        .with_context(|| {
            format!(
                "no result from the foreign peer: {stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })?
        .trim()
        .to_string();
    assert_eq!(result, "closed", "a peer with uid 65534 must get nothing");
    let log = core.log();
    let refused = log
        .lines()
        .find(|l| l.contains("refused a connection from another user"))
        .with_context(|| format!("the refusal is logged:\n{log}"))?;
    assert!(refused.contains("65534"), "{refused}");

    // The owner is still served.
    by.sync().await?;
    let status = core.cli_json(&["status"])?;
    assert_eq!(status["sessions_connected"], 1);
    Ok(())
}

fn effective_uid() -> u32 {
    // The effective uid, as `id -u` reports it.
    let out = Command::new("id").arg("-u").output().expect("id -u");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("a uid")
}

/// Ctrl-C (SIGINT) stops the core as cleanly as SIGTERM: exit 0, socket removed.
#[tokio::test]
async fn sigint_exits_zero_and_removes_the_socket() -> Result<()> {
    let core = Core::start().await?; // only for its command environment
    let dir = tempfile::Builder::new().prefix("shp").tempdir_in("/tmp")?;
    let socket = dir.path().join("shepherd").join("shepherd.sock");
    let mut cmd = tokio::process::Command::from(core.command());
    let child = cmd
        .arg("up")
        .env("PI_CODING_AGENT_DIR", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id().context("pid")?;
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut pi = loop {
        if let Ok(pi) = Pi::register(&socket, "int-1", "int", dir.path()).await {
            break pi;
        }
        assert!(Instant::now() < deadline, "the core did not accept in 15 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(pi.client.welcome().pid, pid);
    let killed = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()?;
    assert!(killed.success());
    let out = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .context("the core did not stop within 10 s of SIGINT")??;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!socket.exists(), "the socket is removed");
    let msg = pi.client.next_event().await?;
    assert!(
        matches!(
            msg,
            ServerMsg::Error {
                code: ErrorCode::ShuttingDown,
                ..
            }
        ),
        "{msg:?}"
    );
    Ok(())
}

/// Move sessions' `last_seen` back by `days` in the core's database (as if that long passed).
fn age(core: &Core, ids: &[&str], days: u64) -> Result<()> {
    let db = rusqlite::Connection::open(core.state_dir().join("shepherd.db"))?;
    db.busy_timeout(Duration::from_secs(5))?;
    for id in ids {
        db.execute(
            "UPDATE sessions SET last_seen = last_seen - ?1 WHERE id = ?2",
            rusqlite::params![(days * 24 * 3600 * 1000) as i64, id],
        )?;
    }
    Ok(())
}

/// `core.forget_sessions_after_days`: a session unseen for longer, that nothing refers to
/// any more, is forgotten with its history (its asks and reports go too, so no listing
/// names it); one that still has an open ask, and one seen recently, are kept.
#[tokio::test]
async fn sessions_unseen_for_long_are_forgotten_with_their_history() -> Result<()> {
    let mut core = Core::start_with(&[("SHEPHERD_CORE__FORGET_SESSIONS_AFTER_DAYS", "2")]).await?;
    let mut cli = core.client(ClientKind::Cli).await?;
    let mut done = core.pi("old-done", "done").await?;
    let asked = done.client.ask("Ship it?").await?;
    cli.answer(asked.id, "yes").await?;
    let answer = done.next_delivery(Duration::from_secs(10)).await?;
    done.ack(&[answer.id]).await?;
    done.client.report("shipped").await?;
    drop(done);
    let mut asking = core.pi("old-asking", "asking").await?;
    asking.client.ask("Still waiting?").await?;
    drop(asking);
    drop(core.pi("recent", "recent").await?);
    let ids = |v: &Value, field: &str| -> Vec<String> {
        let mut ids: Vec<String> = v
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|x| x[field].as_str().map(str::to_string))
            .collect();
        ids.sort();
        ids
    };
    eventually_left(&core, "old-asking").await?;
    age(&core, &["old-done", "old-asking"], 3)?;
    core.restart().await?;
    let sessions = core.cli_json(&["sessions", "--all"])?;
    assert_eq!(
        ids(&sessions, "id"),
        ["old-asking", "recent"],
        "{sessions:#}"
    );
    let asks = core.cli_json(&["asks", "--all"])?;
    assert_eq!(ids(&asks, "session_id"), ["old-asking"], "{asks:#}");
    let reports = core.cli_json(&["reports"])?;
    assert_eq!(
        ids(&reports, "session_id"),
        Vec::<String>::new(),
        "{reports:#}"
    );
    Ok(())
}

/// Wait until `id` is no longer connected (its connection was dropped).
async fn eventually_left(core: &Core, id: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let connected = core.cli_json(&["sessions"])?;
        if !ids_of(&connected).iter().any(|x| x == id) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{id} still connected: {connected:#}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn ids_of(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x["id"].as_str().map(str::to_string))
        .collect()
}
