//! `shepherd new` and `shepherd continue` from the command line, with REAL Pi sessions the
//! core launches in tmux: `new DIR TASK` starts one in that directory (no branch, no
//! repository needed) whose first run gets the task; `shepherd close` ends it and
//! `continue NAME MESSAGE` brings the same session back on its own file, with its
//! conversation and the message. Bad places are refused, saying why.

use std::time::Duration;

use anyhow::{Context, Result};
use shepherd_harness::fake_model::{FakeModel, ModelRequest, Reply};
use shepherd_harness::workers::worker_core;
use shepherd_harness::{Core, eventually};

const LONG: Duration = Duration::from_secs(90);

fn script(req: &ModelRequest) -> Reply {
    let (_, last) = req.last();
    if last.contains("CLI-TASK") {
        return Reply::text("CLI-RESULT started");
    }
    if last.contains("CLI-MORE") {
        return Reply::text("CLI-RESULT continued");
    }
    Reply::text("nothing to do")
}

fn run(core: &Core, args: &[&str]) -> Result<String> {
    let out = core.cli(args);
    anyhow::ensure!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn refusal(core: &Core, args: &[&str]) -> String {
    let out = core.cli(args);
    assert!(!out.status.success(), "{args:?} should be refused");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shepherd_new_starts_a_session_in_a_directory_and_continue_brings_it_back() -> Result<()> {
    let model = FakeModel::start(script).await?;
    let core = worker_core(&model, "tmux").await?;
    let dir = tempfile::tempdir()?;
    let dir_path = dir.path().canonicalize()?;
    let place = dir_path.display().to_string();

    let said = run(&core, &["new", &place, "CLI-TASK", "write", "the", "notes"])?;
    assert!(said.starts_with("started "), "{said}");
    assert!(said.contains("tmux"), "{said}");
    let session = eventually(LONG, "the new session to connect", || {
        let list = core.cli_json(&["sessions"]).ok()?;
        list.as_array()?
            .iter()
            .find(|s| s["cwd"] == place.as_str())
            .cloned()
    })
    .await
    .with_context(|| core.log())?;
    let (id, name) = (
        session["id"].as_str().context("id")?.to_string(),
        session["name"].as_str().context("name")?.to_string(),
    );
    eventually(LONG, "the first run", || {
        model
            .requests()
            .iter()
            .any(|r| r.transcript().contains("CLI-TASK write the notes"))
            .then_some(())
    })
    .await?;

    // `shepherd attach` opens its tmux pane (a tmux on PATH that records its arguments
    // stands in for the terminal this test has not got).
    let shim = tempfile::tempdir()?;
    let args_file = shim.path().join("args");
    std::fs::write(
        shim.path().join("tmux"),
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > {}\n",
            args_file.display()
        ),
    )?;
    std::fs::set_permissions(
        shim.path().join("tmux"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )?;
    let path = format!(
        "{}:{}",
        shim.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let attached = core
        .command()
        .args(["attach", &name])
        .env("PATH", &path)
        .output()?;
    assert!(
        attached.status.success(),
        "{}",
        String::from_utf8_lossy(&attached.stderr)
    );
    let args = std::fs::read_to_string(&args_file)?;
    let panes = std::process::Command::new("tmux")
        .arg("-S")
        .arg(core.state_dir().join("tmux.sock"))
        .args(["list-panes", "-a", "-F", "#{pane_id}"])
        .output()?;
    let pane = String::from_utf8_lossy(&panes.stdout).trim().to_string();
    assert!(pane.starts_with('%'), "one pane: {pane:?}");
    assert!(
        args.contains(&format!("attach-session\n-t\n{pane}\n")),
        "{args}"
    );

    let closed = run(&core, &["close", &name])?;
    assert!(closed.starts_with("closed "), "{closed}");
    eventually(LONG, "the session to leave", || {
        let list = core.cli_json(&["sessions"]).ok()?;
        (!list.as_array()?.iter().any(|s| s["id"] == id.as_str())).then_some(())
    })
    .await?;
    let again = refusal(&core, &["close", &name]);
    assert!(
        again.contains("was not started by shepherd (or has ended)"),
        "{again}"
    );

    let continued = run(&core, &["continue", &name, "CLI-MORE", "go", "on"])?;
    assert!(continued.starts_with("continuing "), "{continued}");
    let back = core.connected_session(&name, LONG).await?;
    assert_eq!(back["id"], id.as_str(), "the same session");
    eventually(LONG, "the continued run", || {
        model.requests().last().and_then(|r| {
            let t = r.transcript();
            (t.contains("CLI-TASK") && t.contains("CLI-MORE go on")).then_some(())
        })
    })
    .await?;
    let running = refusal(&core, &["continue", &name]);
    assert!(
        running.contains("is running (connected now): steer it instead"),
        "{running}"
    );

    // Bad places, each refused with why.
    let nowhere = refusal(&core, &["new", "/no/such/dir", "x"]);
    assert!(
        nowhere.contains("/no/such/dir is not a directory"),
        "{nowhere}"
    );
    let no_repo = refusal(&core, &["new", &place, "--branch", "feat/x", "x"]);
    assert!(
        no_repo.contains("is not in a git repository: a new branch needs one"),
        "{no_repo}"
    );
    let unknown = refusal(&core, &["new", "nosuchproject", "x"]);
    assert!(
        unknown.contains("no project \"nosuchproject\""),
        "{unknown}"
    );
    run(&core, &["close", &name])?;
    Ok(())
}
