//! Project work end to end with REAL Pi processes: a Manager (the pinned Pi with the
//! checkout's shepherd extension and its own scripted model) in a temp repository's primary
//! worktree, and the Lead the core launches (headless, on the core's scripted model) in its
//! own worktree. What the extension does is proven from what each model was shown:
//!
//! - the Manager's model is offered delegate_project, resume_work, stop_lead and
//!   integrate_branch only once it holds the Manager role; its delegate_project call returns
//!   at once with the branch, checkout and Lead session;
//! - the Lead is a Lead, not a worker: its model sees the task under the assignment header
//!   and has the writing tools and ask_supervisor, never ask_owner;
//! - the Lead's completed turn reaches the Manager's model exactly once as an assignment
//!   update; the Manager calls integrate_branch with the branch tip, which waits for the
//!   human (`[projects] integrate = "ask"`); `shepherd integrate` approves it, main is
//!   fast-forwarded, the worktree removed, and the Manager's model reads the outcome once;
//! - with the Manager gone, two turns of the Lead wait for the role; a new Pi that runs
//!   `/manager` gets both updates in ONE run (not a run per update), each once.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use shepherd_harness::eventually;
use shepherd_harness::fake_model::{FakeModel, ModelRequest, Reply};
use shepherd_harness::pi_process::{PiOptions, PiSession, user_messages_containing};
use shepherd_harness::projects::{repo as project_repo, rev};
use shepherd_harness::workers::worker_core;

const LONG: Duration = Duration::from_secs(90);

const PROJECT_TOOLS: [&str; 4] = [
    "delegate_project",
    "resume_work",
    "stop_lead",
    "integrate_branch",
];

fn offered(req: &ModelRequest, tool: &str) -> bool {
    req.tool_names().iter().any(|t| t == tool)
}

/// Whether the run that shows `needle` began with it: no assistant message between that
/// run's `agent_start` and the message carrying `needle` (Pi's RPC records).
fn run_began_with(records: &[Value], needle: &str) -> bool {
    let Some(at) = records
        .iter()
        .position(|r| r["type"] == "message_start" && r.to_string().contains(needle))
    else {
        return false;
    };
    records[..at]
        .iter()
        .rev()
        .take_while(|r| r["type"] != "agent_start")
        .all(|r| r["message"]["role"] != "assistant")
}

fn rev_parse(repo: &Path, what: &str) -> Option<String> {
    rev(repo, what).ok()
}

/// The Lead's model (the core's): commit a file, then end the turn.
fn lead_model(req: &ModelRequest) -> Reply {
    let (role, last) = req.last();
    if role == "tool" && req.transcript().contains("TASK-P") {
        return Reply::text("LEAD-DONE: committed feature.txt");
    }
    if last.contains("TASK-P") {
        return Reply::tool(
            "bash",
            json!({"command": "echo feature > feature.txt && git add feature.txt && \
                git -c user.name=lead -c user.email=lead@example.invalid -c commit.gpgsign=false \
                commit -q -m 'add feature.txt'"}),
        );
    }
    for turn in ["TURN-1", "TURN-2"] {
        if last.contains(turn) {
            return Reply::text(format!("UPDATE-{turn} done"));
        }
    }
    Reply::text("LEAD: nothing to do")
}

#[tokio::test]
async fn a_manager_delegates_hears_the_update_and_integrates_with_approval() -> Result<()> {
    let lead = FakeModel::start(lead_model).await?;
    let core = worker_core(&lead, "headless").await?;
    let root = tempfile::tempdir()?;
    let repo = project_repo(&core, "app")?;
    let start = rev_parse(&repo, "main").context("main")?;

    let repo_for_model = repo.clone();
    let manager = FakeModel::start(move |req| {
        let (role, last) = req.last();
        if role == "tool" {
            return Reply::text("MANAGER: noted");
        }
        if last.contains("[shepherd] Integration outcome") {
            return Reply::text("MANAGER-SAW-INTEGRATION");
        }
        if last.contains("[shepherd] Assignment update from your Lead") {
            let sha = rev_parse(&repo_for_model, "feat/a").unwrap_or_default();
            return Reply::tool("integrate_branch", json!({"branch": "feat/a", "sha": sha}));
        }
        if last.contains("DELEGATE-P") && offered(req, "delegate_project") {
            return Reply::tool(
                "delegate_project",
                json!({"task": "TASK-P add a feature file and commit it", "branch": "feat/a"}),
            );
        }
        Reply::text("MANAGER: nothing")
    })
    .await?;
    let agent = root.path().join("agent-mgr");
    let mut opts = PiOptions::new(&agent);
    opts.cwd = repo.clone();
    opts.name = Some("app-mgr".into());
    opts.env.push((
        "SHEPHERD_SOCKET".into(),
        core.socket().display().to_string(),
    ));
    let mut pi = PiSession::spawn(&manager, opts).await?;
    core.connected_session("app-mgr", LONG).await?;

    // As a Lead, the project tools are not offered.
    pi.prompt("TOOLS-as-lead").await?;
    pi.wait_settled(LONG).await?;
    let as_lead = manager
        .requests()
        .into_iter()
        .find(|r| r.last().1.contains("TOOLS-as-lead"))
        .context("the model saw the prompt")?;
    for tool in PROJECT_TOOLS {
        assert!(!offered(&as_lead, tool), "a Lead is not offered {tool}");
    }

    pi.prompt("/manager").await?;
    eventually(LONG, "app-mgr to be the Manager", || {
        core.session_named("app-mgr")
            .filter(|s| s["role"] == "manager")
    })
    .await?;

    // delegate_project returns at once with the branch, checkout and Lead session.
    pi.prompt("DELEGATE-P please").await?;
    let delegated = eventually(LONG, "delegate_project's result", || {
        manager
            .requests()
            .into_iter()
            .find(|r| r.last().0 == "tool" && r.last().1.contains("Delegated app@feat/a"))
    })
    .await
    .with_context(|| core.log())?;
    for tool in PROJECT_TOOLS {
        assert!(offered(&delegated, tool), "a Manager is offered {tool}");
    }
    let result = delegated.last().1;
    assert!(result.contains("branch feat/a"), "{result}");
    assert!(result.contains("app.worktrees/feat-a"), "{result}");
    assert!(result.contains("one per completed Lead turn"), "{result}");

    // The Lead: a Lead's tools and the assignment's header, never a worker's.
    let first = eventually(LONG, "the Lead's first model request", || {
        lead.requests()
            .into_iter()
            .find(|r| r.transcript().contains("TASK-P"))
    })
    .await
    .with_context(|| core.log())?;
    assert!(
        first
            .transcript()
            .contains("[shepherd] Work assignment for app@feat/a (you are its Lead"),
        "{}",
        first.transcript()
    );
    for tool in [
        "bash",
        "edit",
        "write",
        "ask_supervisor",
        "message_supervisor",
    ] {
        assert!(offered(&first, tool), "the Lead has {tool}");
    }
    assert!(!offered(&first, "ask_owner"), "the Lead is not a worker");

    // The update reaches the Manager, which asks to integrate; the human approves.
    let waiting = eventually(LONG, "integrate_branch's result", || {
        manager
            .requests()
            .into_iter()
            .find(|r| r.last().0 == "tool" && r.last().1.contains("awaits the human's approval"))
    })
    .await
    .with_context(|| core.log())?;
    let tip = rev_parse(&repo, "feat/a").context("feat/a")?;
    assert_ne!(tip, start);
    assert!(
        waiting.last().1.contains(&format!(
            "Integration of app@feat/a into main at {}",
            &tip[..7]
        )),
        "{}",
        waiting.last().1
    );
    assert_eq!(rev_parse(&repo, "main").as_deref(), Some(start.as_str()));
    let out = core
        .command()
        .args(["integrate", "app", "feat/a", &tip])
        .output()?;
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        core.log()
    );
    assert_eq!(rev_parse(&repo, "main").as_deref(), Some(tip.as_str()));
    eventually(LONG, "the Manager's model reading the outcome", || {
        manager
            .requests()
            .into_iter()
            .find(|r| r.last().1.contains("[shepherd] Integration outcome"))
    })
    .await
    .with_context(|| core.log())?;
    assert!(
        !repo
            .parent()
            .context("the repository's parent")?
            .join("app.worktrees")
            .join("feat-a")
            .exists(),
        "the worktree was removed"
    );

    // Exactly once each, in the Manager's session.
    pi.wait_settled(LONG).await?;
    let file = pi.session_file().await?;
    assert_eq!(
        user_messages_containing(&file, "Assignment update from your Lead")?,
        1
    );
    assert_eq!(
        user_messages_containing(&file, "[shepherd] Integration outcome")?,
        1
    );
    assert!(!core.log_has_panic());
    Ok(())
}

#[tokio::test]
async fn a_new_manager_gets_the_backlog_in_one_run_each_update_once() -> Result<()> {
    use shepherd_core::protocol::{DeliveryKind, ServerMsg, requests};
    use shepherd_harness::projects::{manager as raw_manager, wait_assignment};
    use shepherd_harness::workers::next_of_kind;

    let lead = FakeModel::start(lead_model).await?;
    let core = worker_core(&lead, "headless").await?;
    let root = tempfile::tempdir()?;
    let repo = project_repo(&core, "app")?;

    // A first Manager delegates, reads the first update, and dies.
    let mut first = raw_manager(&core, &repo, "0193a5c2-0000-7000-8000-0000000bac01").await?;
    let a = first
        .client
        .call(requests::DelegateProject {
            task: "TASK-P add a feature file".into(),
            branch: Some("feat/b".into()),
            ..Default::default()
        })
        .await?;
    let d = next_of_kind(&mut first, DeliveryKind::AssignmentUpdate).await?;
    first.ack(&[d.id]).await?;
    drop(first);
    wait_assignment(&core, "feat/b", "running", |a| {
        a.lead == shepherd_core::protocol::LeadState::Running
    })
    .await?;

    // Two turns of the Lead while no Manager reads them.
    let mut events = core.subscriber().await?;
    let mut cli = core
        .client(shepherd_core::protocol::ClientKind::Cli)
        .await?;
    for turn in ["TURN-1", "TURN-2"] {
        cli.call(requests::Send {
            to: a.session_id.to_string(),
            text: turn.into(),
            ..Default::default()
        })
        .await?;
        shepherd_harness::next_event_where(
            &mut events,
            LONG,
            |m| matches!(m, ServerMsg::AssignmentUpdated { text, .. } if text.contains(turn)),
        )
        .await?;
    }

    // A new Manager: a real Pi in the primary worktree runs /manager.
    let manager = FakeModel::start(|req: &ModelRequest| {
        let seen = req.transcript();
        let n = ["UPDATE-TURN-1", "UPDATE-TURN-2"]
            .iter()
            .filter(|u| seen.contains(*u))
            .count();
        Reply::text(format!("MANAGER-B read {n} updates"))
    })
    .await?;
    let agent = root.path().join("agent-mgr-b");
    let mut opts = PiOptions::new(&agent);
    opts.cwd = repo.clone();
    opts.name = Some("app-mgr-b".into());
    opts.env.push((
        "SHEPHERD_SOCKET".into(),
        core.socket().display().to_string(),
    ));
    let mut pi = PiSession::spawn(&manager, opts).await?;
    core.connected_session("app-mgr-b", LONG).await?;
    let before = pi.records().len();
    pi.prompt("/manager").await?;
    eventually(LONG, "the new Manager's model reading both updates", || {
        manager.requests().into_iter().find(|r| {
            r.transcript().contains("UPDATE-TURN-1") && r.transcript().contains("UPDATE-TURN-2")
        })
    })
    .await
    .with_context(|| core.log())?;
    pi.wait_settled(LONG).await?;
    // Then a steer from the human: the core sends a session's mail in order, so an update
    // delivered again, or one that would start a run of its own, lands before it.
    let out = core.cli(&["send", "app-mgr-b", "MARKER-after-the-backlog"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eventually(LONG, "the new Manager's model reading the marker", || {
        manager
            .requests()
            .into_iter()
            .find(|r| r.last().1.contains("MARKER-after-the-backlog"))
    })
    .await?;
    pi.wait_settled(LONG).await?;
    let records = &pi.records()[before..];
    let runs = records
        .iter()
        .filter(|r| r["type"] == "agent_start")
        .count();
    assert_eq!(runs, 2, "one run for the whole backlog, then the marker's");
    assert!(
        run_began_with(records, "MARKER-after-the-backlog"),
        "the marker started a run of its own: nothing was running"
    );
    let file = pi.session_file().await?;
    assert_eq!(user_messages_containing(&file, "UPDATE-TURN-1")?, 1);
    assert_eq!(user_messages_containing(&file, "UPDATE-TURN-2")?, 1);
    assert_eq!(
        user_messages_containing(&file, "LEAD-DONE")?,
        0,
        "the update the first Manager read is not delivered again"
    );
    assert!(!core.log_has_panic());
    Ok(())
}
