//! `shepherd projects`, `integrate`, `resume` and `stop-lead` against the real core.
//!
//! (a) Without project work: the help texts carry examples, missing arguments are usage
//!     errors (exit 2), `projects` says how project work starts and `--json` is `[]`, and
//!     `integrate`, `resume` and `stop-lead` of an unknown branch print the core's refusal
//!     and exit non-zero (`--json`: the error's code).
//! (b) End to end with a REAL Lead: a raw client takes the Manager role in a temp
//!     repository's primary worktree and delegates `feat/a`; the core launches the pinned Pi
//!     (headless, scripted model) in the new worktree, the Lead commits and ends its turn,
//!     and the Manager gets one assignment update. `shepherd projects` shows the assignment
//!     (one commit ahead) with its Manager; `stop-lead` pauses it, `resume` starts the same
//!     session again; `integrate` with a wrong sha is refused and changes nothing, with the
//!     tip's sha it fast-forwards main, removes the worktree and retires the assignment.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use shepherd_core::protocol::{
    Assignment, AssignmentState, DeliveryKind, LeadState, Project, requests,
};
use shepherd_harness::fake_model::{FakeModel, ModelRequest, Reply};
use shepherd_harness::projects::{manager, repo as project_repo, rev as rev_parse};
use shepherd_harness::workers::{next_of_kind, worker_core};
use shepherd_harness::{Core, eventually};

const LONG: Duration = Duration::from_secs(90);

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn cli(core: &Core, args: &[&str]) -> Output {
    core.command()
        .env("COLUMNS", "200")
        .args(args)
        .output()
        .expect("running shepherd")
}

/// `shepherd <args>`; fails the test on a non-zero exit.
fn run(core: &Core, args: &[&str]) -> String {
    let out = cli(core, args);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// `shepherd <args> --json` that must fail: the error object it prints.
fn refused(core: &Core, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = cli(core, &all);
    assert_eq!(out.status.code(), Some(1), "{all:?} should fail");
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with("shepherd: "), "{stderr}");
    let body: Value = serde_json::from_slice(&out.stdout).expect("an error object on stdout");
    body["error"].clone()
}

#[tokio::test]
async fn help_argument_errors_and_no_project_work() -> Result<()> {
    let core = Core::start().await?;
    for (cmd, example) in [
        ("projects", "shepherd projects --json"),
        ("integrate", "shepherd integrate app feat/export 4b1d2c3"),
        ("resume", "shepherd resume feat/export --repo app"),
        ("stop-lead", "shepherd stop-lead feat/export"),
    ] {
        let help = run(&core, &[cmd, "--help"]);
        assert!(help.contains("Examples:"), "{cmd}: {help}");
        assert!(help.contains(example), "{cmd}: {help}");
    }
    let summary = run(&core, &["--help"]);
    for cmd in ["projects", "integrate", "resume", "stop-lead"] {
        assert!(summary.contains(&format!("  {cmd} ")), "{summary}");
    }
    for args in [
        &["integrate", "app", "feat/a"][..],
        &["resume"][..],
        &["stop-lead"][..],
        &["projects", "extra"][..],
    ] {
        let out = cli(&core, args);
        assert_eq!(out.status.code(), Some(2), "{args:?} is a usage error");
        assert!(text(&out.stderr).contains("Usage: shepherd"), "{args:?}");
    }

    assert_eq!(core.cli_json(&["projects"])?, json!([]));
    let none = run(&core, &["projects"]);
    assert!(
        none.starts_with("no project work yet: run `/manager`"),
        "says how project work starts: {none}"
    );
    assert!(none.contains("delegate_project"), "{none}");

    let err = refused(&core, &["integrate", "app", "feat/a", "4b1d2c3"]);
    assert_eq!(err["code"], "project_refused", "{err}");
    assert_eq!(err["details"]["reason"], "no_assignment", "{err}");
    let err = refused(&core, &["integrate", "app", "feat/a", "not-a-sha"]);
    assert_eq!(err["code"], "invalid_argument", "{err}");
    assert!(
        err["message"].as_str().unwrap_or("").contains("sha"),
        "{err}"
    );
    for cmd in ["resume", "stop-lead"] {
        let err = refused(&core, &[cmd, "feat/a", "--repo", "app"]);
        assert_eq!(err["code"], "project_refused", "{cmd}: {err}");
        assert_eq!(err["details"]["reason"], "no_assignment", "{cmd}: {err}");
    }
    assert!(!core.log_has_panic());
    Ok(())
}

/// The Lead's model: commit a file, then end the turn with a line of text.
fn lead_model(req: &ModelRequest) -> Reply {
    let (role, last) = req.last();
    if role == "tool" && req.transcript().contains("TASK-P") {
        return Reply::text("LEAD-DONE: committed feature.txt on feat/a");
    }
    if last.contains("TASK-P") {
        return Reply::tool(
            "bash",
            json!({"command": "echo feature > feature.txt && git add feature.txt && \
                git -c user.name=lead -c user.email=lead@example.invalid -c commit.gpgsign=false \
                commit -q -m 'add feature.txt'"}),
        );
    }
    Reply::text("LEAD: nothing to do")
}

fn projects(core: &Core) -> Result<Vec<Project>> {
    Ok(serde_json::from_value(core.cli_json(&["projects"])?)?)
}

fn the_assignment(core: &Core) -> Result<Assignment> {
    projects(core)?
        .into_iter()
        .flat_map(|p| p.assignments)
        .find(|a| a.branch == "feat/a")
        .context("feat/a not listed")
}

#[tokio::test]
async fn delegate_then_projects_resume_and_integrate_through_the_cli() -> Result<()> {
    let model = FakeModel::start(lead_model).await?;
    let core = worker_core(&model, "headless").await?;
    let repo = project_repo(&core, "app")?;
    let start = rev_parse(&repo, "main")?;
    let mut mgr = manager(&core, &repo, "cp-mgr-0001").await?;
    let a = mgr
        .client
        .call(requests::DelegateProject {
            task: "TASK-P add a feature file and commit it".into(),
            branch: Some("feat/a".into()),
            ..Default::default()
        })
        .await
        .with_context(|| core.log())?;
    assert_eq!(a.branch, "feat/a");
    assert_eq!(a.project, "app");
    assert_eq!(a.state, AssignmentState::Active);
    let checkout = Path::new(&a.checkout).to_path_buf();
    assert!(checkout.is_dir(), "the worktree exists: {}", a.checkout);

    // The Lead's completed turn reaches the Manager once, as an assignment update.
    let update = next_of_kind(&mut mgr, DeliveryKind::AssignmentUpdate)
        .await
        .with_context(|| core.log())?;
    assert!(update.text.contains("LEAD-DONE"), "{}", update.text);
    assert!(update.text.contains("app@feat/a"), "{}", update.text);
    mgr.ack(&[update.id]).await?;

    let tip = rev_parse(&repo, "feat/a")?;
    assert_ne!(tip, start, "the Lead committed on feat/a");
    let listed = eventually(LONG, "feat/a one commit ahead, with its update", || {
        let a = the_assignment(&core).ok()?;
        (a.ahead == Some(1) && a.last_update.is_some()).then_some(a)
    })
    .await?;
    assert_eq!(listed.behind, Some(0));
    assert_eq!(listed.session_id, a.session_id);
    let all = projects(&core)?;
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].project, "app");
    assert_eq!(all[0].primary_branch.as_deref(), Some("main"));
    assert_eq!(
        all[0].manager.as_ref().map(|l| l.session_name.as_str()),
        Some("app-manager")
    );
    let table = run(&core, &["projects"]);
    assert!(table.starts_with("app · "), "{table}");
    assert!(table.contains("manager app-manager (connected)"), "{table}");
    let row = table
        .lines()
        .find(|l| l.starts_with("feat/a"))
        .with_context(|| format!("no feat/a row: {table}"))?;
    for cell in ["active", "1/0", "LEAD-DONE"] {
        assert!(row.contains(cell), "{cell} in {row}");
    }

    // stop-lead pauses it; resume starts the same session in the same checkout.
    let stopped = run(&core, &["stop-lead", "feat/a", "--repo", "app"]);
    assert!(
        stopped.starts_with("app@feat/a: Lead stopping")
            || stopped.starts_with("app@feat/a: Lead stopped"),
        "{stopped}"
    );
    assert!(stopped.contains("assignment paused"), "{stopped}");
    assert!(
        stopped.contains("`shepherd resume feat/a` starts it again"),
        "{stopped}"
    );
    eventually(LONG, "the Lead stopped", || {
        let a = the_assignment(&core).ok()?;
        (a.lead == LeadState::Stopped && a.state == AssignmentState::Paused).then_some(())
    })
    .await
    .with_context(|| core.log())?;
    // Until its process has exited, resume says so.
    eventually(LONG, "the Lead's process gone", || {
        let sessions = core.cli_json(&["sessions", "--all"]).ok()?;
        let lead = sessions
            .as_array()?
            .iter()
            .find(|s| s["id"] == a.session_id.as_str())?
            .clone();
        (lead["connected"] == false).then_some(())
    })
    .await
    .with_context(|| core.log())?;
    let resumed: Assignment =
        serde_json::from_value(core.cli_json(&["resume", "feat/a", "--repo", "app"])?)?;
    assert_eq!(resumed.session_id, a.session_id);
    assert_eq!(resumed.checkout, a.checkout);
    assert_eq!(resumed.state, AssignmentState::Active);
    eventually(LONG, "the resumed Lead running again", || {
        let a = the_assignment(&core).ok()?;
        (a.lead == LeadState::Running).then_some(())
    })
    .await
    .with_context(|| core.log())?;

    // A wrong sha is refused and changes nothing.
    let err = refused(&core, &["integrate", "app", "feat/a", &start]);
    assert_eq!(err["code"], "project_refused", "{err}");
    assert_eq!(err["details"]["reason"], "sha_mismatch", "{err}");
    assert_eq!(rev_parse(&repo, "main")?, start);
    assert!(checkout.is_dir());

    // The tip's sha integrates: main fast-forwarded, the worktree gone, the branch kept.
    let done = run(&core, &["integrate", "app", "feat/a", &tip]);
    assert!(
        done.starts_with(&format!("integrated app@feat/a into main at {}", &tip[..7])),
        "{done}\n{}",
        core.log()
    );
    assert_eq!(rev_parse(&repo, "main")?, tip);
    assert!(!checkout.exists(), "the worktree was removed");
    assert_eq!(rev_parse(&repo, "feat/a")?, tip, "the branch is kept");
    assert!(
        projects(&core)?.iter().all(|p| p.assignments.is_empty()),
        "retired assignments are not listed"
    );
    assert!(!core.log_has_panic());
    Ok(())
}
