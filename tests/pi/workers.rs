//! Managed workers end to end with a REAL owner: a Pi session (the pinned Pi with the
//! shepherd extension and its own scripted model) uses the tools, and the core launches
//! REAL worker Pi processes (headless) on the workers' scripted model.
//!
//! (a) the owner's model calls `delegate_agent`; the tool returns at once (non-blocking:
//!     the owner's run ends before the worker's result exists); the result arrives in the
//!     owner's session exactly once as a delivery that starts a turn, the owner's model
//!     reads it, the worker process is gone and its session file is kept;
//! (b) the worker calls `ask_owner`; the owner's model receives the question and calls
//!     `reply_agent`; the same assignment continues to one result;
//! (c) the owner is killed before its worker's result exists and resumed later: the result
//!     reaches it once.
//!
//! "Once" is counted after a marker steer to the owner, sent later, has landed.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;
use shepherd_core::protocol::{Worker, WorkerState};
use shepherd_harness::fake_model::{FakeModel, ModelRequest, Reply};
use shepherd_harness::pi_process::{PiOptions, PiSession, user_messages_containing};
use shepherd_harness::workers::{work_dir, worker_core};
use shepherd_harness::{Core, eventually};

const LONG: Duration = Duration::from_secs(90);

/// The workers' model.
fn workers(req: &ModelRequest) -> Reply {
    let (role, last) = req.last();
    if last.contains("blue") {
        return Reply::text("WORKER-B says blue");
    }
    if last.contains("TASK-A") {
        return Reply::text("WORKER-A found three callers");
    }
    if last.contains("TASK-B") {
        return Reply::tool("ask_owner", json!({"question": "Red or blue?"}));
    }
    if last.contains("TASK-C") {
        return Reply::tool("bash", json!({"command": "sleep 4"}));
    }
    if role == "tool" && req.transcript().contains("TASK-C") {
        return Reply::text("WORKER-C done after sleeping");
    }
    Reply::text("nothing")
}

/// The owner's model: delegates when asked, answers its worker's question, reads results.
fn owner_model(req: &ModelRequest) -> Reply {
    let (role, last) = req.last();
    if role == "tool" {
        return Reply::text("OWNER: tool done, ending my turn");
    }
    if last.contains("Agent result") {
        return Reply::text("OWNER-READ-RESULT");
    }
    if last.contains("Agent question") {
        return Reply::tool("reply_agent", json!({"agent": "picker", "answer": "blue"}));
    }
    for (marker, task, label, definition) in [
        ("delegate A", "TASK-A find the callers", "finder", "scout"),
        ("delegate B", "TASK-B pick a colour", "picker", "scout"),
        ("delegate C", "TASK-C take your time", "slow", "implementer"),
    ] {
        if last.contains(marker) {
            return Reply::tool(
                "delegate_agent",
                json!({"definition": definition, "task": task, "label": label}),
            );
        }
    }
    Reply::text("OWNER: nothing")
}

async fn spawn_owner(
    core: &Core,
    model: &FakeModel,
    agent: &Path,
    args: &[String],
) -> Result<PiSession> {
    let mut opts = PiOptions::new(agent);
    opts.cwd = work_dir(core);
    opts.name = Some("owner".into());
    opts.args = args.to_vec();
    opts.env.push((
        "SHEPHERD_SOCKET".into(),
        core.socket().display().to_string(),
    ));
    let pi = PiSession::spawn(model, opts).await?;
    core.connected_session("owner", LONG).await?;
    Ok(pi)
}

fn workers_listed(core: &Core) -> Result<Vec<Worker>> {
    Ok(serde_json::from_value(
        core.cli_json(&["workers", "--all"])?,
    )?)
}

async fn worker_labelled(core: &Core, label: &str, state: WorkerState) -> Result<Worker> {
    eventually(LONG, &format!("worker {label} {state}"), || {
        workers_listed(core)
            .ok()?
            .into_iter()
            .find(|w| w.label == label && w.state == state)
    })
    .await
}

/// Wait until `want` deliveries in the owner's session `file` carry `needle` (each is one
/// `shepherd-delivery` entry), and check there are no more once a marker steer sent after
/// them is in too: the core delivers a session's mail in order, so another delivery of
/// `needle` already sent would land first.
async fn count_in(core: &Core, file: &Path, needle: &str, want: usize) -> Result<()> {
    static MARKERS: AtomicUsize = AtomicUsize::new(0);
    eventually(
        LONG,
        &format!("{want}× {needle:?} in {}", file.display()),
        || (user_messages_containing(file, needle).ok()? >= want).then_some(()),
    )
    .await?;
    let marker = format!("MARKER-{}", MARKERS.fetch_add(1, Ordering::Relaxed));
    let out = core.cli(&["send", "owner", &marker]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eventually(LONG, &format!("{marker} in {}", file.display()), || {
        (user_messages_containing(file, &marker).ok()? > 0).then_some(())
    })
    .await?;
    assert_eq!(user_messages_containing(file, needle)?, want, "{needle}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_owner_delegates_and_reads_one_result() -> Result<()> {
    let wmodel = FakeModel::start(workers).await?;
    let core = worker_core(&wmodel, "headless").await?;
    let omodel = FakeModel::start(owner_model).await?;
    let agent = tempfile::tempdir()?;
    let mut owner = spawn_owner(&core, &omodel, agent.path(), &[]).await?;
    owner.prompt("please delegate A").await?;
    owner.wait_settled(LONG).await?;
    // The tool returned before the work was done: the reply said so, and it is not a result.
    let tool_reply = omodel
        .requests()
        .into_iter()
        .find(|r| r.last().0 == "tool")
        .context("the owner's model saw the tool's reply")?;
    assert!(
        tool_reply.last().1.contains("finder"),
        "{}",
        tool_reply.last().1
    );
    assert!(
        !tool_reply.transcript().contains("WORKER-A"),
        "delegating waited for the work"
    );

    let file = owner.session_file().await?;
    count_in(&core, &file, "WORKER-A found three callers", 1).await?;
    eventually(LONG, "the owner's model to read the result", || {
        omodel
            .requests()
            .into_iter()
            .find(|r| r.last().1.contains("Agent result") && r.last().1.contains("agent=finder"))
    })
    .await?;
    let done = worker_labelled(&core, "finder", WorkerState::Done).await?;
    let kept = done.session_file.context("a session file")?;
    assert!(std::fs::read_to_string(&kept)?.contains("WORKER-A found three callers"));

    // Usage over the owner's tree: the owner and its worker, each once, summing to the total.
    let usage = core.cli_json(&["usage", "owner"])?;
    let sessions = usage["sessions"].as_array().context("sessions")?;
    let ids: Vec<&str> = sessions
        .iter()
        .filter_map(|s| s["session_id"].as_str())
        .collect();
    assert_eq!(ids.len(), 2, "{usage}");
    assert!(ids.contains(&done.session_id.as_str()), "{usage}");
    assert_eq!(usage["complete"], true, "{usage}");
    let sum: u64 = sessions
        .iter()
        .map(|s| s["total_tokens"].as_u64().unwrap())
        .sum();
    assert!(sum > 0);
    assert_eq!(
        usage["total"]["total_tokens"].as_u64(),
        Some(sum),
        "{usage}"
    );
    owner.shutdown().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_owner_answers_its_workers_question() -> Result<()> {
    let wmodel = FakeModel::start(workers).await?;
    let core = worker_core(&wmodel, "headless").await?;
    let omodel = FakeModel::start(owner_model).await?;
    let agent = tempfile::tempdir()?;
    let mut owner = spawn_owner(&core, &omodel, agent.path(), &[]).await?;
    owner.prompt("please delegate B").await?;
    let file = owner.session_file().await?;
    count_in(&core, &file, "Red or blue?", 1).await?;
    // While it waits for the answer, `shepherd sessions` names it as a worker.
    let listed = String::from_utf8_lossy(&core.cli(&["sessions", "--all"]).stdout).into_owned();
    let row = listed
        .lines()
        .find(|l| l.contains("picker (worker of "))
        .with_context(|| format!("no worker row in\n{listed}"))?;
    assert!(row.contains(" worker "), "{listed}");
    count_in(&core, &file, "WORKER-B says blue", 1).await?;
    let done = worker_labelled(&core, "picker", WorkerState::Done).await?;
    let text = std::fs::read_to_string(done.session_file.context("file")?)?;
    assert_eq!(
        text.matches("TASK-B pick a colour").count(),
        1,
        "one assignment"
    );
    // The worker's model got the owner's answer.
    assert!(
        wmodel
            .requests()
            .iter()
            .any(|r| r.last().1.contains("blue") && r.transcript().contains("TASK-B")),
        "the answer reached the worker"
    );
    owner.shutdown().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_killed_before_the_result_gets_it_once_when_resumed() -> Result<()> {
    let wmodel = FakeModel::start(workers).await?;
    let core = worker_core(&wmodel, "headless").await?;
    let omodel = FakeModel::start(owner_model).await?;
    let agent = tempfile::tempdir()?;
    let mut owner = spawn_owner(&core, &omodel, agent.path(), &[]).await?;
    owner.prompt("please delegate C").await?;
    owner.wait_settled(LONG).await?;
    let file = owner.session_file().await?;
    owner.kill().await?;
    // The result exists while the owner is away; it waits for it.
    worker_labelled(&core, "slow", WorkerState::Settling).await?;
    assert_eq!(user_messages_containing(&file, "WORKER-C done")?, 0);
    let owner = spawn_owner(
        &core,
        &omodel,
        agent.path(),
        &["--session".into(), file.display().to_string()],
    )
    .await?;
    count_in(&core, &file, "WORKER-C done after sleeping", 1).await?;
    worker_labelled(&core, "slow", WorkerState::Done).await?;
    owner.shutdown().await?;
    Ok(())
}
