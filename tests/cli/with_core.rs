//! The `shepherd` command line against the real core (`shepherd up` on a temp agent
//! dir, via the harness): fake Pi sessions register over the socket with the intercom
//! client, and the CLI's JSON and tables, answers, steers and `--follow` are checked
//! from the outside, as a user sees them.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;
use shepherd_core::client::Client;
use shepherd_core::protocol::{
    ClientKind, ContextUsage, DeliveryKind, Registration, Role, requests,
};
use shepherd_harness::{Core, Pi};
use tokio::io::{AsyncBufReadExt, BufReader};

const WAIT: Duration = Duration::from_secs(10);

/// Register a Pi session with everything a session reports filled in.
async fn register(core: &Core, id: &str, name: &str, cwd: &Path, role: Role) -> Result<Client> {
    let mut client = Client::connect(&core.socket(), ClientKind::Pi, "cli-test").await?;
    client
        .register(Registration {
            session_id: id.into(),
            name: Some(name.into()),
            cwd: cwd.display().to_string(),
            pid: None,
            model: Some("fake/fake-model".into()),
            context: ContextUsage {
                tokens: Some(41_234),
                window: Some(200_000),
                percent: Some(20.6),
            },
            status: "tool:bash".into(),
            role,
            session_file: None,
            subagent: false,
            launch: None,
        })
        .await?;
    Ok(client)
}

/// A git repository at `<dir>/app` on branch `feature/x`, and a subdirectory of it.
fn git_repo(dir: &Path) -> Result<std::path::PathBuf> {
    let app = dir.join("app");
    let status = std::process::Command::new("git")
        .args(["init", "-q", "-b", "feature/x"])
        .arg(&app)
        .status()
        .context("running git init")?;
    assert!(status.success());
    std::fs::create_dir_all(app.join("sub"))?;
    Ok(app)
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

fn run(core: &Core, args: &[&str]) -> Output {
    core.command()
        .env("COLUMNS", "250")
        .args(args)
        .output()
        .unwrap()
}

/// `shepherd sessions --json` (connected, or `--all`) until `pred` holds.
async fn sessions_until(core: &Core, all: bool, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let args: &[&str] = if all {
        &["sessions", "--all"]
    } else {
        &["sessions"]
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let list = core.cli_json(args).unwrap();
        let list = list.as_array().unwrap().clone();
        if pred(&list) {
            return list;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never true: {list:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn sessions_json_and_table() -> Result<()> {
    let core = Core::start().await?;
    // None yet: each listing says which it is, the connected ones with where the rest are.
    assert_eq!(
        text(&run(&core, &["sessions"]).stdout),
        "no sessions connected (--all also lists sessions that went away)\n"
    );
    assert_eq!(
        text(&run(&core, &["sessions", "--all"]).stdout),
        "no sessions known: none has connected to this core yet\n"
    );
    let tmp = tempfile::tempdir()?;
    let app = git_repo(tmp.path())?;
    let mut one = register(
        &core,
        "sess-aaaa-1111",
        "fix-login",
        &app.join("sub"),
        Role::Lead,
    )
    .await?;
    // The core grants the Manager role (from the repository's primary worktree).
    one.call(shepherd_core::protocol::requests::SetRole {
        id: 0,
        role: Role::Manager,
        ..Default::default()
    })
    .await?;
    let two = register(
        &core,
        "sess-aaaa-2222",
        "fix-logout",
        tmp.path(),
        Role::Lead,
    )
    .await?;

    let list = core.cli_json(&["sessions"])?;
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2, "{list:?}");
    let s = list.iter().find(|s| s["id"] == "sess-aaaa-1111").unwrap();
    assert_eq!(s["name"], "fix-login");
    assert_eq!(s["cwd"], app.join("sub").display().to_string());
    assert_eq!(s["pid"], std::process::id(), "the pid is the socket peer's");
    assert_eq!(s["model"], "fake/fake-model");
    assert_eq!(s["status"], "tool:bash");
    assert_eq!(s["context_percent"], 20.6);
    assert_eq!(s["role"], "manager");
    assert_eq!(s["connected"], true);
    assert_eq!(s["repo"], app.display().to_string());
    assert_eq!(s["branch"], "feature/x");
    for key in [
        "context_tokens",
        "context_window",
        "head",
        "worktree",
        "open_asks",
        "pending_messages",
        "first_seen",
        "last_seen",
    ] {
        assert!(s.get(key).is_some(), "{key} missing in {s}");
    }
    let other = list.iter().find(|s| s["id"] == "sess-aaaa-2222").unwrap();
    assert_eq!(other["repo"], Value::Null);

    let out = run(&core, &["sessions"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    for header in [
        "ID",
        "NAME",
        "STATUS",
        "MODEL",
        "CTX%",
        "ROLE",
        "REPO@BRANCH",
        "CWD",
        "SEEN",
    ] {
        assert!(lines[0].contains(header), "{header} missing:\n{table}");
    }
    let row = lines.iter().find(|l| l.contains("fix-login")).unwrap();
    // The two ids share their first 10 characters: the table shows their ends, which tell
    // them apart (and select them).
    assert!(row.starts_with("aaa-1111  "), "{row}");
    assert!(row.contains("app@feature/x"), "{row}");
    assert!(row.contains("21%") && row.contains("manager"), "{row}");
    assert!(row.ends_with("connected"), "{row}");

    drop(two);
    sessions_until(&core, false, |l| l.len() == 1).await;
    let all = core.cli_json(&["sessions", "--all"])?;
    let gone = all
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "sess-aaaa-2222")
        .expect("--all keeps the disconnected session");
    assert_eq!(gone["connected"], false);
    let table = text(&run(&core, &["sessions", "--all"]).stdout);
    let row = table.lines().find(|l| l.contains("fix-logout")).unwrap();
    assert!(row.ends_with("just now") || row.ends_with("s ago"), "{row}");
    Ok(())
}

#[tokio::test]
async fn status_shows_the_counts() -> Result<()> {
    let core = Core::start().await?;
    let _pi = register(
        &core,
        "sess-status-1",
        "worker",
        core.agent_dir(),
        Role::Lead,
    )
    .await?;
    let status = core.cli_json(&["status"])?;
    assert_eq!(status["sessions_connected"], 1);
    assert_eq!(status["sessions_known"], 1);
    assert_eq!(status["open_asks"], 0);
    assert_eq!(
        status["protocol"],
        shepherd_core::protocol::PROTOCOL_VERSION
    );
    assert_eq!(status["pid"], core.pid().unwrap());
    assert_eq!(status["core_version"], env!("CARGO_PKG_VERSION"));

    let out = run(&core, &["status"]);
    assert!(out.status.success());
    let block = text(&out.stdout);
    for line in [
        format!("core       shepherd {}", env!("CARGO_PKG_VERSION")),
        format!("protocol   {}", shepherd_core::protocol::PROTOCOL_VERSION),
        format!("pid        {}", core.pid().unwrap()),
        "sessions   1 connected, 1 known".to_string(),
        "open asks  0".to_string(),
        "bridges    none".to_string(),
    ] {
        assert!(
            block.contains(&format!("{line}\n")),
            "{line:?} missing:\n{block}"
        );
    }
    assert!(block.contains("uptime     "), "{block}");
    Ok(())
}

#[tokio::test]
async fn asks_and_answering_twice() -> Result<()> {
    let core = Core::start().await?;
    let mut pi = core.pi("sess-ask-cli", "asker").await?;
    let ask = pi
        .client
        .call(requests::Ask {
            question: "Squash the 14 commits before merging into main, or keep them?".into(),
            options: vec!["squash".into(), "keep".into()],
            ..Default::default()
        })
        .await?;
    let n = ask.id.to_string();

    let asks = core.cli_json(&["asks"])?;
    let a = &asks[0];
    assert_eq!(a["id"], ask.id.get());
    assert_eq!(a["session_id"], "sess-ask-cli");
    assert_eq!(a["session_name"], "asker");
    assert_eq!(a["options"], serde_json::json!(["squash", "keep"]));
    assert_eq!(a["state"], "open");
    assert_eq!(a["answer"], Value::Null);
    assert_eq!(a["answered_by"], Value::Null);

    let table = text(&run(&core, &["asks"]).stdout);
    let lines: Vec<&str> = table.lines().collect();
    for header in [
        "ID", "SESSION", "STATE", "QUESTION", "OPTIONS", "ANSWER", "BY", "FOR",
    ] {
        assert!(lines[0].contains(header), "{header} missing:\n{table}");
    }
    assert!(
        lines[1].contains("asker") && lines[1].contains("open"),
        "{table}"
    );
    assert!(lines[1].contains("1) squash  2) keep"), "{table}");
    // A narrow terminal cuts the question, not the id or the state.
    let narrow = core.command().env("COLUMNS", "60").arg("asks").output()?;
    for line in text(&narrow.stdout).lines() {
        assert!(line.chars().count() <= 60, "{line:?}");
    }
    assert!(text(&narrow.stdout).contains('…'));

    let out = run(&core, &["answer", &n, "squash", "them"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("answered ask {n} for asker (sess-ask-cli) — delivered now\n")
    );
    let delivery = pi.next_delivery(WAIT).await?;
    assert_eq!(delivery.kind, DeliveryKind::Answer);
    assert_eq!(delivery.text, "squash them");
    assert_eq!(delivery.ask_id, Some(ask.id));

    let again = run(&core, &["answer", &n, "keep"]);
    assert_eq!(again.status.code(), Some(1));
    let err = text(&again.stderr);
    assert!(
        err.contains(&format!("ask {n} was already answered by cli at ")),
        "{err}"
    );
    assert!(err.trim_end().ends_with(": squash them"), "{err}");
    let again = core
        .command()
        .args(["answer", &n, "keep", "--json"])
        .output()?;
    assert_eq!(again.status.code(), Some(1));
    let body: Value = serde_json::from_slice(&again.stdout)?;
    assert_eq!(body["error"]["code"], "already_answered");
    assert_eq!(body["error"]["details"]["answer"], "squash them");

    assert_eq!(
        text(&run(&core, &["asks"]).stdout),
        "no open asks (--all also lists answered ones)\n"
    );
    let all = core.cli_json(&["asks", "--all"])?;
    assert_eq!(all[0]["state"], "answered");
    assert_eq!(all[0]["answer"], "squash them");
    assert_eq!(all[0]["answered_by"], "cli");
    let table = text(&run(&core, &["asks", "--all"]).stdout);
    assert!(
        table
            .lines()
            .nth(1)
            .unwrap()
            .ends_with("squash them  cli  you"),
        "{table}"
    );

    let unknown = run(&core, &["answer", "9999", "x"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        text(&unknown.stderr).contains("there is no ask 9999"),
        "{}",
        text(&unknown.stderr)
    );
    Ok(())
}

#[tokio::test]
async fn send_steers_and_explains_bad_selectors() -> Result<()> {
    let core = Core::start().await?;
    let mut a = core.pi("alpha-0001", "worker-a").await?;
    let b = core.pi("alpha-0002", "worker-b").await?;

    let out = run(&core, &["send", "worker-a", "run", "the", "tests"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "sent to worker-a (alpha-0001) — delivered now\n"
    );
    let delivery = a.next_delivery(WAIT).await?;
    assert_eq!(delivery.kind, DeliveryKind::Steer);
    assert_eq!(delivery.text, "run the tests");
    assert_eq!(delivery.from.name, "cli");

    let ambiguous = run(&core, &["send", "alpha", "hi"]);
    assert_eq!(ambiguous.status.code(), Some(1));
    let err = text(&ambiguous.stderr);
    assert!(err.contains("\"alpha\" matches several sessions"), "{err}");
    assert!(err.contains("alpha-0001  worker-a  connected"), "{err}");
    assert!(err.contains("alpha-0002  worker-b  connected"), "{err}");
    let json = core
        .command()
        .args(["send", "alpha", "hi", "--json"])
        .output()?;
    let body: Value = serde_json::from_slice(&json.stdout)?;
    assert_eq!(body["error"]["code"], "ambiguous_session");
    assert_eq!(
        body["error"]["details"]["candidates"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    let unknown = run(&core, &["send", "nobody", "hi"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        text(&unknown.stderr).contains("no session matches \"nobody\""),
        "{}",
        text(&unknown.stderr)
    );

    drop(b);
    sessions_until(&core, false, |l| l.len() == 1).await;
    let queued = core.cli_json(&["send", "alpha-0002", "later"])?;
    assert_eq!(queued["session_id"], "alpha-0002");
    assert_eq!(queued["session_name"], "worker-b");
    assert_eq!(queued["connected"], false);
    assert!(queued["message_id"].is_u64());
    let out = run(&core, &["send", "worker-b", "and", "this"]);
    assert_eq!(
        text(&out.stdout),
        "sent to worker-b (alpha-0002) — queued until it reconnects\n"
    );
    let mut b = core.pi("alpha-0002", "worker-b").await?;
    assert_eq!(b.next_delivery(WAIT).await?.text, "later");
    assert_eq!(b.next_delivery(WAIT).await?.text, "and this");
    Ok(())
}

#[tokio::test]
async fn follow_prints_presence_events() -> Result<()> {
    let core = Core::start().await?;
    let mut cmd = tokio::process::Command::from(core.command());
    let mut child = cmd
        .args(["sessions", "--follow", "--json"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || -> Result<Value> {
        let line = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .context("no line from --follow")??
            .context("--follow ended")?;
        Ok(serde_json::from_str(&line)?)
    };
    assert_eq!(next().await?, serde_json::json!([]), "the list comes first");

    let pi: Pi = core.pi("sess-follow", "watched").await?;
    let joined = next().await?;
    assert_eq!(joined["type"], "session_joined");
    assert_eq!(joined["session"]["name"], "watched");
    drop(pi);
    let left = loop {
        let event = next().await?;
        if event["type"] == "session_left" {
            break event;
        }
        assert_eq!(event["type"], "session_changed", "{event}");
    };
    assert_eq!(left["session"]["id"], "sess-follow");
    assert_eq!(left["session"]["connected"], false);
    child.kill().await?;
    Ok(())
}

#[tokio::test]
async fn follow_prints_human_lines() -> Result<()> {
    let core = Core::start().await?;
    let _known = core.pi("sess-there", "already-there").await?;
    let mut cmd = tokio::process::Command::from(core.command());
    let mut child = cmd
        .env("COLUMNS", "200")
        .args(["sessions", "--follow"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || -> Result<String> {
        tokio::time::timeout(WAIT, lines.next_line())
            .await
            .context("no line from --follow")??
            .context("--follow ended")
    };
    assert!(next().await?.starts_with("ID"), "the table comes first");
    assert!(next().await?.contains("already-there"));
    let _pi = core.pi("sess-new", "newcomer").await?;
    let joined = next().await?;
    assert!(
        joined.contains(" joined ") && joined.contains("newcomer"),
        "{joined}"
    );
    child.kill().await?;
    Ok(())
}

#[tokio::test]
async fn doctor_with_a_running_core() -> Result<()> {
    let core = Core::start().await?;
    let out = core.cli(&["doctor", "--json"]);
    let checks: Vec<Value> = serde_json::from_slice(&out.stdout)?;
    for name in ["config", "state dir", "database", "disk", "socket", "core"] {
        let check = checks.iter().find(|c| c["check"] == name).unwrap();
        assert_eq!(check["status"], "ok", "{check}");
    }
    let disk = checks.iter().find(|c| c["check"] == "disk").unwrap();
    let holding = format!("free on the disk holding {}", core.state_dir().display());
    assert!(
        disk["detail"].as_str().unwrap().ends_with(&holding),
        "{disk}"
    );
    let core_line = checks.iter().find(|c| c["check"] == "core").unwrap();
    assert!(
        core_line["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("pid {}", core.pid().unwrap())),
        "{core_line}"
    );
    Ok(())
}

#[tokio::test]
async fn a_second_up_names_the_running_pid() -> Result<()> {
    let core = Core::start().await?;
    let out = core.cli(&["up"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("already running (pid {})", core.pid().unwrap())),
        "{err}"
    );
    Ok(())
}
