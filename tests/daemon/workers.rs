//! Managed workers against the real core and REAL worker Pi processes (the pinned Pi on
//! Node 22 with the shepherd extension, launched by the core's worker host, talking to a
//! scripted fake model). The owner is a harness client registered as a Pi session, so
//! each step on the owner's side is exact: what it is mailed, when it acks.
//!
//! - a delegation answers at once (the worker is `starting`, its process runs); the result
//!   reaches the owner once as `agent_result`; the process stays until the owner acks it,
//!   then stops; the worker is `done` and its session file is kept;
//! - `ask_owner` blocks the worker until `reply_agent`; the same assignment goes on to one
//!   result; another owner cannot steer, reply to or close it (`not_direct_owner`);
//! - a registration that claims a worker's session without the launch nonce (or with a
//!   wrong one) is refused (`launch_mismatch`) and changes nothing;
//! - the core killed (-9) after storing a result and before the owner's ack: the owner,
//!   back, gets that same delivery once;
//! - a headless worker in the middle of a tool when the core stops is relaunched on its
//!   session file by the next core, told why, and delivers one result;
//! - closing a delegating worker closes its own worker first; both processes end;
//! - a worker killed from outside is `lost` (close and transcript only) and its owner is
//!   told once;
//! - a steer during a tool changes the assignment (one result); an interrupt cuts a long
//!   tool short and the same assignment goes on with its message;
//! - tmux workers keep running while the core restarts, bind again and deliver once;
//! - `continue_agent` starts a new generation on the saved session; `fork` starts from a
//!   copy (`parentSession` in the new file's header).
//! - live workers are bounded per owner and in total (`worker_limit`, naming the bound),
//!   counting launches still in flight; an ended worker frees its place;
//! - an owner that leaves for good (`bye {returning: false}`) has its workers closed, their
//!   own workers too; one that may come back (no `bye`, or `returning: true`) keeps them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::json;
use shepherd_core::protocol::{
    ClientMsg, DeliveryKind, ErrorCode, ServerMsg, Worker, WorkerId, WorkerState, requests,
};
use shepherd_harness::fake_model::{FakeModel, ModelRequest, Reply};
use shepherd_harness::workers::{
    listed, next_of_kind, owner, wait_state, work_dir, worker_core, worker_core_with, worker_pid,
};
use shepherd_harness::{Core, Pi, error_code, error_details, eventually, registration};

const LONG: Duration = Duration::from_secs(90);

/// What the workers' model does: answers by the marker in the newest user message.
fn worker_script(req: &ModelRequest) -> Reply {
    let all = req.transcript();
    let (role, last) = req.last();
    let has = |s: &str| all.contains(s);
    if role == "tool" && has("TASK-G") {
        return Reply::text("RESULT-G slept through a restart");
    }
    if role == "tool" {
        // A tool ran (a sleep that was not cut short, a delegation): say so and end.
        if has("TASK-F ") {
            return Reply::text("delegated the child; waiting for it");
        }
        return Reply::text(format!(
            "tool done: {}",
            last.chars().take(40).collect::<String>()
        ));
    }
    if last.contains("STEER-X") {
        return Reply::text("RESULT-S steered to X");
    }
    if last.contains("INT-Y") {
        return Reply::text("RESULT-I interrupted to Y");
    }
    if last.contains("TASK-G") {
        return Reply::tool("bash", json!({"command": "sleep 6"}));
    }
    if last.contains("TASK-S") {
        return Reply::tool("bash", json!({"command": "sleep 3"}));
    }
    if last.contains("TASK-I") {
        return Reply::tool("bash", json!({"command": "sleep 120"}));
    }
    if last.contains("interrupted by a restart") {
        return Reply::text("RESULT-E after the restart");
    }
    if last.contains("blue") {
        return Reply::text("RESULT-B the colour is blue");
    }
    if last.contains("TASK-A") {
        return Reply::text("RESULT-A three callers");
    }
    if last.contains("TASK-B") {
        return Reply::tool(
            "ask_owner",
            json!({"question": "Which colour, red or blue?"}),
        );
    }
    if last.contains("TASK-E") || last.contains("TASK-F-CHILD") {
        return Reply::tool("bash", json!({"command": "sleep 120"}));
    }
    if last.contains("TASK-F ") {
        return Reply::tool(
            "delegate_agent",
            json!({"definition": "implementer", "task": "TASK-F-CHILD look around", "label": "child"}),
        );
    }
    if last.contains("TASK-H") {
        return Reply::text("RESULT-H continued");
    }
    if last.contains("TASK-K") {
        return Reply::text("RESULT-K forked");
    }
    Reply::text("nothing to do")
}

async fn delegate(owner: &mut Pi, definition: &str, task: &str, label: &str) -> Result<Worker> {
    Ok(owner
        .client
        .call(requests::DelegateAgent {
            definition: definition.into(),
            task: task.into(),
            label: Some(label.into()),
            ..Default::default()
        })
        .await?)
}

fn alive(pid: u32) -> bool {
    // A zombie is gone for our purpose: it no longer runs.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.split(") ")
                .nth(1)
                .is_some_and(|rest| rest.starts_with('Z'))
        })
        .unwrap_or(false)
}

async fn wait_gone(pid: u32) -> Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while alive(pid) {
        if tokio::time::Instant::now() > deadline {
            bail!("process {pid} still runs");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

fn session_file(w: &Worker) -> Result<PathBuf> {
    Ok(PathBuf::from(
        w.session_file
            .clone()
            .context("the worker has a session file")?,
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_reaches_its_owner_once_and_the_process_stops_after_the_ack() -> Result<()> {
    let model = FakeModel::start(worker_script).await?;
    let core = worker_core(&model, "headless").await?;
    let mut app = owner(&core, "owner-a", "app").await?;
    let started = std::time::Instant::now();
    let w = delegate(&mut app, "scout", "TASK-A find the callers", "finder").await?;
    let answered_in = started.elapsed();
    assert_eq!(w.state, WorkerState::Starting, "{w:?}");
    assert_eq!(
        (w.label.as_str(), w.definition.as_str()),
        ("finder", "scout")
    );
    assert!(
        answered_in < Duration::from_secs(5),
        "delegating waited {answered_in:?}"
    );
    let pid = worker_pid(&core, w.id)?;
    assert!(alive(pid));

    let result = next_of_kind(&mut app, DeliveryKind::AgentResult).await?;
    assert!(
        result.text.starts_with(&format!(
            "Agent result · agent=finder · definition=scout · session={} · status=completed",
            w.session_id
        )),
        "{}",
        result.text
    );
    assert!(
        result.text.ends_with("RESULT-A three callers"),
        "{}",
        result.text
    );
    let settling = listed(&core, w.id)?;
    assert_eq!(settling.state, WorkerState::Settling);
    assert!(alive(pid), "the process waits for the owner's ack");

    app.ack(&[result.id]).await?;
    let done = wait_state(&core, w.id, WorkerState::Done).await?;
    wait_gone(pid).await?;
    let file = session_file(&done)?;
    let kept = std::fs::read_to_string(&file)?;
    assert!(
        kept.contains("RESULT-A three callers"),
        "the session file is kept"
    );

    // Nothing is mailed twice: the owner, back on a new connection, has nothing pending.
    drop(app);
    let again = owner(&core, "owner-a", "app").await?;
    assert_eq!(again.pending, 0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_owner_blocks_until_its_owner_replies_and_only_its_owner_may() -> Result<()> {
    let model = FakeModel::start(worker_script).await?;
    let core = worker_core(&model, "headless").await?;
    let mut app = owner(&core, "owner-b", "app").await?;
    let mut other = owner(&core, "owner-b2", "other").await?;
    let w = delegate(&mut app, "scout", "TASK-B pick a colour", "picker").await?;

    let asked = next_of_kind(&mut app, DeliveryKind::AgentAsk).await?;
    assert_eq!(
        asked.question.as_deref(),
        Some("Which colour, red or blue?")
    );
    assert!(asked.text.contains("reply_agent"), "{}", asked.text);
    let ask_id = asked.ask_id.context("agent_ask carries its ask")?;
    app.ack(&[asked.id]).await?;
    let blocked = wait_state(&core, w.id, WorkerState::Blocked).await?;
    assert_eq!(blocked.pending_ask, Some(ask_id));
    assert!(
        blocked
            .available_actions
            .contains(&shepherd_core::protocol::WorkerAction::Reply)
    );

    // Another session names it by its session id: not its owner.
    for attempt in [
        other
            .client
            .call(requests::SteerAgent {
                agent: w.session_id.to_string(),
                message: "stop".into(),
                ..Default::default()
            })
            .await
            .map(|_| ()),
        other
            .client
            .call(requests::ReplyAgent {
                agent: w.session_id.to_string(),
                answer: "red".into(),
                ..Default::default()
            })
            .await
            .map(|_| ()),
        other
            .client
            .call(requests::CloseAgent {
                agent: w.session_id.to_string(),
                ..Default::default()
            })
            .await
            .map(|_| ()),
    ] {
        let err = anyhow::Error::from(attempt.expect_err("refused"));
        assert_eq!(error_code(&err), Some(ErrorCode::WorkerRefused), "{err:#}");
        assert_eq!(error_details(&err).unwrap()["reason"], "not_direct_owner");
    }
    // By label, the other session has no such worker.
    let err = other
        .client
        .call(requests::SteerAgent {
            agent: "picker".into(),
            message: "stop".into(),
            ..Default::default()
        })
        .await
        .expect_err("refused");
    let err = anyhow::Error::from(err);
    assert_eq!(error_details(&err).unwrap()["reason"], "agent_not_found");

    let replied = app
        .client
        .call(requests::ReplyAgent {
            agent: "picker".into(),
            answer: "blue".into(),
            ..Default::default()
        })
        .await?;
    assert_eq!(replied.state, WorkerState::Working);
    assert_eq!(replied.pending_ask, None);
    // A second reply has nothing to answer.
    let err = anyhow::Error::from(
        app.client
            .call(requests::ReplyAgent {
                agent: "picker".into(),
                answer: "red".into(),
                ..Default::default()
            })
            .await
            .expect_err("nothing pending"),
    );
    assert_eq!(error_details(&err).unwrap()["reason"], "no_pending_ask");

    let result = next_of_kind(&mut app, DeliveryKind::AgentResult).await?;
    assert!(
        result.text.ends_with("RESULT-B the colour is blue"),
        "{}",
        result.text
    );
    app.ack(&[result.id]).await?;
    wait_state(&core, w.id, WorkerState::Done).await?;
    // The worker's session holds the question's answer once, in the same assignment.
    let text = std::fs::read_to_string(session_file(&listed(&core, w.id)?)?)?;
    assert_eq!(
        text.matches("TASK-B pick a colour").count(),
        1,
        "one assignment"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_registration_of_a_workers_session_gets_nothing() -> Result<()> {
    let model = FakeModel::start(worker_script).await?;
    let core = worker_core(&model, "headless").await?;
    let mut app = owner(&core, "owner-c", "app").await?;
    let w = delegate(&mut app, "implementer", "TASK-E keep busy", "busy").await?;
    wait_state(&core, w.id, WorkerState::Working).await?;
    for launch in [None, Some("not-the-nonce".to_string())] {
        let mut reg = registration(w.session_id.as_str(), "impostor", &work_dir(&core));
        reg.launch = launch.clone();
        let err = Pi::register_full(&core.socket(), reg)
            .await
            .err()
            .with_context(|| format!("registered with launch {launch:?}"))?;
        assert_eq!(error_code(&err), Some(ErrorCode::WorkerRefused), "{err:#}");
        assert_eq!(error_details(&err).unwrap()["reason"], "launch_mismatch");
    }
    // A launch nonce for a session no worker waits for is refused too.
    let mut reg = registration("not-a-worker", "x", &work_dir(&core));
    reg.launch = Some("abc".into());
    let err = Pi::register_full(&core.socket(), reg)
        .await
        .err()
        .context("refused")?;
    assert_eq!(error_details(&err).unwrap()["reason"], "launch_mismatch");
    // The worker is untouched and still its owner's.
    let still = listed(&core, w.id)?;
    assert_eq!(still.state, WorkerState::Working);
    let closed = app
        .client
        .call(requests::CloseAgent {
            agent: "busy".into(),
            ..Default::default()
        })
        .await?;
    assert_eq!(closed.state, WorkerState::Closed);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_core_killed_between_result_and_ack_delivers_the_result_once() -> Result<()> {
    let model = FakeModel::start(worker_script).await?;
    let mut core = worker_core(&model, "headless").await?;
    let mut app = owner(&core, "owner-d", "app").await?;
    let w = delegate(&mut app, "scout", "TASK-A once more", "once").await?;
    let first = next_of_kind(&mut app, DeliveryKind::AgentResult).await?;
    drop(app);
    core.kill9();
    core.restart().await?;
    let mut app = owner(&core, "owner-d", "app").await?;
    assert_eq!(app.pending, 1, "the unacked result waits");
    let again = next_of_kind(&mut app, DeliveryKind::AgentResult).await?;
    assert_eq!(again.id, first.id, "the same delivery, not a second result");
    assert_eq!(again.text, first.text);
    app.ack(&[again.id]).await?;
    wait_state(&core, w.id, WorkerState::Done).await?;
    app.sync().await?;
    drop(app);
    let back = owner(&core, "owner-d", "app").await?;
    assert_eq!(back.pending, 0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_headless_worker_is_relaunched_after_a_restart_and_delivers_one_result() -> Result<()> {
    let model = FakeModel::start(worker_script).await?;
    let mut core = worker_core(&model, "headless").await?;
    let mut app = owner(&core, "owner-e", "app").await?;
    let w = delegate(&mut app, "implementer", "TASK-E sleep on it", "sleeper").await?;
    let pid = worker_pid(&core, w.id)?;
    // Wait until the worker runs its sleep (the model asked for it).
    let deadline = tokio::time::Instant::now() + LONG;
    while !model
        .requests()
        .iter()
        .any(|r| r.transcript().contains("TASK-E sleep on it"))
    {
        if tokio::time::Instant::now() > deadline {
            bail!("the worker never asked its model:\n{}", core.log());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // ...and is inside it: the core has its session's status as running bash.
    eventually(LONG, "the worker's status tool:bash", || {
        let sessions = core.cli_json(&["sessions"]).ok()?;
        sessions
            .as_array()?
            .iter()
            .any(|s| s["id"] == w.session_id.as_str() && s["status"] == "tool:bash")
            .then_some(())
    })
    .await
    .with_context(|| core.log())?;
    drop(app);
    core.terminate()?;
    wait_gone(pid).await?;
    core.restart().await?;
    let mut app = owner(&core, "owner-e", "app").await?;
    let result = next_of_kind(&mut app, DeliveryKind::AgentResult).await?;
    assert!(
        result.text.ends_with("RESULT-E after the restart"),
        "{}",
        result.text
    );
    assert!(core.log().contains("relaunching a worker after a restart"));
    app.ack(&[result.id]).await?;
    let done = wait_state(&core, w.id, WorkerState::Done).await?;
    assert_eq!(done.session_id, w.session_id, "the same session, resumed");
    let text = std::fs::read_to_string(session_file(&done)?)?;
    assert_eq!(text.matches("interrupted by a restart").count(), 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_a_delegating_worker_closes_its_worker_first() -> Result<()> {
    let model = FakeModel::start(worker_script).await?;
    let core = worker_core(&model, "headless").await?;
    let mut app = owner(&core, "owner-f", "app").await?;
    let parent = delegate(&mut app, "lead-scout", "TASK-F split the work", "boss").await?;
    assert!(parent.delegates);
    let deadline = tokio::time::Instant::now() + LONG;
    let child = loop {
        let all: Vec<Worker> = serde_json::from_value(core.cli_json(&["workers"])?)?;
        if let Some(c) = all.into_iter().find(|c| c.parent_worker == Some(parent.id)) {
            break c;
        }
        if tokio::time::Instant::now() > deadline {
            bail!("the parent never delegated:\n{}", core.log());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(child.label, "child");
    assert!(!child.delegates, "a worker's worker is a leaf");
    wait_state(&core, child.id, WorkerState::Working).await?;
    let (ppid, cpid) = (worker_pid(&core, parent.id)?, worker_pid(&core, child.id)?);
    let closed = app
        .client
        .call(requests::CloseAgent {
            agent: "boss".into(),
            ..Default::default()
        })
        .await?;
    assert_eq!(closed.state, WorkerState::Closed);
    assert_eq!(listed(&core, child.id)?.state, WorkerState::Closed);
    wait_gone(cpid).await?;
    wait_gone(ppid).await?;
    let log = core.log();
    let closed_lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("worker closed"))
        .collect();
    assert_eq!(closed_lines.len(), 2, "{log}");
    assert!(
        closed_lines[0].contains(&format!("worker={}", child.id)),
        "the child first: {closed_lines:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_and_fork_start_from_a_saved_worker_session() -> Result<()> {
    let model = FakeModel::start(worker_script).await?;
    let core = worker_core(&model, "headless").await?;
    let mut app = owner(&core, "owner-h", "app").await?;
    let w = delegate(&mut app, "scout", "TASK-A first", "keeper").await?;
    let r = next_of_kind(&mut app, DeliveryKind::AgentResult).await?;
    // While the first generation is live, continuing it is refused.
    let err = anyhow::Error::from(
        app.client
            .call(requests::ContinueAgent {
                session: w.session_id.to_string(),
                task: "TASK-H".into(),
                ..Default::default()
            })
            .await
            .expect_err("live generation"),
    );
    assert_eq!(
        error_details(&err).unwrap()["reason"],
        "agent_busy",
        "{err:#}"
    );
    app.ack(&[r.id]).await?;
    let done = wait_state(&core, w.id, WorkerState::Done).await?;
    let file = session_file(&done)?;

    let next = app
        .client
        .call(requests::ContinueAgent {
            session: w.session_id.to_string(),
            task: "TASK-H go on".into(),
            ..Default::default()
        })
        .await?;
    assert_ne!(next.id, w.id, "a new generation");
    assert_eq!(
        (next.session_id.clone(), next.label.clone()),
        (w.session_id.clone(), "keeper".into())
    );
    let r = next_of_kind(&mut app, DeliveryKind::AgentResult).await?;
    assert!(r.text.ends_with("RESULT-H continued"), "{}", r.text);
    app.ack(&[r.id]).await?;
    wait_state(&core, next.id, WorkerState::Done).await?;
    let text = std::fs::read_to_string(&file)?;
    assert!(text.contains("RESULT-A first") || text.contains("RESULT-A three callers"));
    assert!(
        text.contains("RESULT-H continued"),
        "one file, both generations"
    );

    let fork = app
        .client
        .call(requests::DelegateAgent {
            definition: "scout".into(),
            task: "TASK-K from a copy".into(),
            label: Some("copy".into()),
            fork: Some(file.display().to_string()),
            ..Default::default()
        })
        .await?;
    assert_ne!(fork.session_id, w.session_id);
    let r = next_of_kind(&mut app, DeliveryKind::AgentResult).await?;
    assert!(r.text.ends_with("RESULT-K forked"), "{}", r.text);
    app.ack(&[r.id]).await?;
    let forked = wait_state(&core, fork.id, WorkerState::Done).await?;
    let header = std::fs::read_to_string(session_file(&forked)?)?;
    let first: serde_json::Value = serde_json::from_str(header.lines().next().unwrap())?;
    assert_eq!(
        first["parentSession"].as_str().map(Path::new),
        Some(file.as_path()),
        "{first}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_say_what_is_missing() -> Result<()> {
    let model = FakeModel::start(worker_script).await?;
    let core = worker_core(&model, "headless").await?;
    let mut app = owner(&core, "owner-r", "app").await?;
    let cases: Vec<(requests::DelegateAgent, &str)> = vec![
        (
            requests::DelegateAgent {
                definition: "nope".into(),
                task: "x".into(),
                ..Default::default()
            },
            "unknown_definition",
        ),
        (
            requests::DelegateAgent {
                definition: "scout".into(),
                task: "x".into(),
                label: Some("Bad Label".into()),
                ..Default::default()
            },
            "bad_label",
        ),
    ];
    for (req, reason) in cases {
        let err = anyhow::Error::from(app.client.call(req).await.expect_err("refused"));
        assert_eq!(error_details(&err).unwrap()["reason"], reason, "{err:#}");
    }
    let w = delegate(&mut app, "implementer", "TASK-E hold the label", "dup").await?;
    let err = delegate(&mut app, "implementer", "TASK-E again", "dup")
        .await
        .expect_err("taken");
    assert_eq!(
        error_details(&err).unwrap()["reason"],
        "agent_label_exists",
        "{err:#}"
    );
    assert!(err.to_string().contains(&format!("#{}", w.id)), "{err:#}");
    // ask_owner from a session that is not a worker.
    let err = anyhow::Error::from(
        app.client
            .call(requests::AskOwner {
                question: "?".into(),
                ..Default::default()
            })
            .await
            .expect_err("not a worker"),
    );
    assert_eq!(error_details(&err).unwrap()["reason"], "not_a_worker");
    // The human closes it by label.
    let out = core.cli(&["close", "dup"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("closed worker dup"));
    // And sees it in the list of ended workers.
    let all: Vec<Worker> = serde_json::from_value(core.cli_json(&["workers", "--all"])?)?;
    assert!(
        all.iter()
            .any(|x| x.id == w.id && x.state == WorkerState::Closed)
    );
    Ok(())
}

/// Wait until the workers' model has been asked about `marker`.
async fn wait_model_saw(model: &FakeModel, core: &Core, marker: &str) -> Result<()> {
    let deadline = tokio::time::Instant::now() + LONG;
    while !model
        .requests()
        .iter()
        .any(|r| r.transcript().contains(marker))
    {
        if tokio::time::Instant::now() > deadline {
            bail!("the model never saw {marker:?}:\n{}", core.log());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_during_a_tool_changes_the_assignment_and_an_interrupt_cuts_it_short() -> Result<()>
{
    let model = FakeModel::start(worker_script).await?;
    let core = worker_core(&model, "headless").await?;
    let mut app = owner(&core, "owner-s", "app").await?;
    let s = delegate(&mut app, "implementer", "TASK-S sleep a little", "steered").await?;
    let i = delegate(&mut app, "implementer", "TASK-I sleep long", "cut").await?;
    wait_model_saw(&model, &core, "TASK-S sleep a little").await?;
    wait_model_saw(&model, &core, "TASK-I sleep long").await?;
    let steered = app
        .client
        .call(requests::SteerAgent {
            agent: "steered".into(),
            message: "STEER-X instead".into(),
            ..Default::default()
        })
        .await?;
    assert_eq!(steered.id, s.id);
    let started = std::time::Instant::now();
    app.client
        .call(requests::InterruptAgent {
            agent: "cut".into(),
            message: "INT-Y now".into(),
            ..Default::default()
        })
        .await?;
    let mut texts = Vec::new();
    for _ in 0..2 {
        let r = next_of_kind(&mut app, DeliveryKind::AgentResult).await?;
        app.ack(&[r.id]).await?;
        texts.push(r.text);
    }
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the interrupt did not wait for the sleep"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.contains("agent=steered") && t.ends_with("RESULT-S steered to X")),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.contains("agent=cut") && t.ends_with("RESULT-I interrupted to Y")),
        "{texts:?}"
    );
    wait_state(&core, s.id, WorkerState::Done).await?;
    wait_state(&core, i.id, WorkerState::Done).await?;
    // Each assignment produced its one result: the steer made no second one.
    let file = std::fs::read_to_string(session_file(&listed(&core, s.id)?)?)?;
    assert_eq!(file.matches("TASK-S sleep a little").count(), 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tmux_workers_keep_running_over_a_core_restart() -> Result<()> {
    let model = FakeModel::start(worker_script).await?;
    let mut core = worker_core(&model, "tmux").await?;
    let mut app = owner(&core, "owner-g", "app").await?;
    let w = delegate(&mut app, "implementer", "TASK-G sleep through it", "napper").await?;
    assert_eq!(w.backend, shepherd_core::protocol::WorkerBackend::Tmux);
    wait_state(&core, w.id, WorkerState::Working).await?;
    let pid = worker_pid(&core, w.id)?;
    wait_model_saw(&model, &core, "TASK-G sleep through it").await?;
    drop(app);
    core.terminate()?;
    assert!(alive(pid), "a tmux worker outlives the core");
    core.restart().await?;
    let mut app = owner(&core, "owner-g", "app").await?;
    let r = next_of_kind(&mut app, DeliveryKind::AgentResult).await?;
    assert!(
        r.text.ends_with("RESULT-G slept through a restart"),
        "{}",
        r.text
    );
    assert!(alive(pid), "the same process");
    assert!(
        !core.log().contains("relaunching a worker"),
        "{}",
        core.log()
    );
    app.ack(&[r.id]).await?;
    wait_state(&core, w.id, WorkerState::Done).await?;
    wait_gone(pid).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_dies_on_its_own_is_lost_and_its_owner_is_told_once() -> Result<()> {
    let model = FakeModel::start(worker_script).await?;
    let core = worker_core(&model, "headless").await?;
    let mut app = owner(&core, "owner-l", "app").await?;
    let w = delegate(&mut app, "implementer", "TASK-I sleep long", "doomed").await?;
    wait_model_saw(&model, &core, "TASK-I sleep long").await?;
    let pid = worker_pid(&core, w.id)?;
    // SIGKILL from outside: no goodbye, no result.
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()?;
    let lost = wait_state(&core, w.id, WorkerState::Lost).await?;
    assert_eq!(
        lost.available_actions,
        vec![
            shepherd_core::protocol::WorkerAction::Close,
            shepherd_core::protocol::WorkerAction::Transcript
        ]
    );
    let told = next_of_kind(&mut app, DeliveryKind::AgentResult).await?;
    assert!(told.text.contains("agent=doomed"), "{}", told.text);
    assert!(told.text.contains("status=lost"), "{}", told.text);
    assert!(told.text.contains("continue_agent"), "{}", told.text);
    app.ack(&[told.id]).await?;
    // Told once: nothing else arrives, and the owner, back, has nothing pending.
    assert!(app.next_delivery(Duration::from_secs(2)).await.is_err());
    drop(app);
    assert_eq!(owner(&core, "owner-l", "app").await?.pending, 0);
    // Steering a lost worker is refused with what it can do.
    let mut app = owner(&core, "owner-l2", "app2").await?;
    let err = anyhow::Error::from(
        app.client
            .call(requests::SteerAgent {
                agent: w.session_id.to_string(),
                message: "hello?".into(),
                ..Default::default()
            })
            .await
            .expect_err("not its owner"),
    );
    assert_eq!(error_details(&err).unwrap()["reason"], "not_direct_owner");
    // The human closes it; the owner is not told twice.
    let out = core.cli(&["close", "doomed"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(listed(&core, w.id)?.state, WorkerState::Closed);
    Ok(())
}

/// Send `delegate_agent` requests (id, label, task) without waiting, then collect every
/// answer: the workers accepted and the refusals, by request id.
async fn delegate_at_once(
    owner: &mut Pi,
    reqs: &[(u64, &str, &str)],
) -> Result<(Vec<(u64, Worker)>, Vec<(u64, anyhow::Error)>)> {
    for (id, label, task) in reqs {
        let msg = ClientMsg::DelegateAgent(requests::DelegateAgent {
            id: *id,
            definition: "implementer".into(),
            task: (*task).into(),
            label: Some((*label).into()),
            ..Default::default()
        });
        owner.client.send(&msg).await?;
    }
    let (mut accepted, mut refused) = (Vec::new(), Vec::new());
    let ours = |id: &u64| reqs.iter().any(|r| r.0 == *id);
    while accepted.len() + refused.len() < reqs.len() {
        let msg = tokio::time::timeout(LONG, owner.client.next_event())
            .await
            .context("waiting for the delegations' answers")??;
        match msg {
            ServerMsg::WorkerIs { id, worker } if ours(&id) => accepted.push((id, worker)),
            ServerMsg::Error {
                id: Some(id),
                code,
                message,
                details,
            } if ours(&id) => refused.push((
                id,
                anyhow::Error::from(shepherd_core::client::ClientError::Remote {
                    code,
                    message,
                    details,
                }),
            )),
            _ => {}
        }
    }
    Ok((accepted, refused))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_workers_are_bounded_per_owner_and_in_total() -> Result<()> {
    let model = FakeModel::start(worker_script).await?;
    let core = worker_core_with(
        &model,
        "headless",
        &[
            ("SHEPHERD_WORKERS__MAX_PER_OWNER", "2"),
            ("SHEPHERD_WORKERS__MAX_LIVE", "3"),
        ],
    )
    .await?;
    let mut app = owner(&core, "owner-m", "app").await?;
    // Three delegations at once: whichever is decided third (each reads its definition off
    // the hub first, so not necessarily the third sent) is refused while the first two
    // still launch.
    let (accepted, refused) = delegate_at_once(
        &mut app,
        &[
            (1001, "m1", "TASK-E hold one"),
            (1002, "m2", "TASK-E hold two"),
            (1003, "m3", "TASK-E hold three"),
        ],
    )
    .await?;
    let ids: Vec<u64> = accepted.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids.len(), 2, "two accepted: {ids:?}; refused: {refused:?}");
    assert_eq!(refused.len(), 1, "{refused:?}");
    let (id, err) = &refused[0];
    assert!(
        [1001, 1002, 1003].contains(id) && !ids.contains(id),
        "one of the three is refused: {err:#}"
    );
    assert_eq!(error_code(err), Some(ErrorCode::WorkerRefused), "{err:#}");
    assert_eq!(
        error_details(err).unwrap(),
        json!({"reason": "worker_limit", "limit": "workers.max_per_owner", "live": 2, "max": 2}),
        "{err:#}"
    );
    let text = format!("{err:#}");
    assert!(
        text.contains("max_per_owner") && text.contains("SHEPHERD_WORKERS__MAX_PER_OWNER"),
        "{text}"
    );

    // Another owner: its first worker fits (3 live), its second is over the core's bound.
    let mut other = owner(&core, "owner-m2", "other").await?;
    let b1 = delegate(&mut other, "implementer", "TASK-E hold four", "b1").await?;
    let err = delegate(&mut other, "implementer", "TASK-E hold five", "b2")
        .await
        .expect_err("over workers.max_live");
    assert_eq!(
        error_details(&err).unwrap(),
        json!({"reason": "worker_limit", "limit": "workers.max_live", "live": 3, "max": 3}),
        "{err:#}"
    );
    assert!(
        format!("{err:#}").contains("SHEPHERD_WORKERS__MAX_LIVE"),
        "{err:#}"
    );

    // Live workers count, not past ones: closing one makes room.
    let (_, m1) = &accepted[0];
    let pid = worker_pid(&core, m1.id)?;
    app.client
        .call(requests::CloseAgent {
            agent: m1.label.clone(),
            ..Default::default()
        })
        .await?;
    let b2 = delegate(&mut other, "implementer", "TASK-E hold five", "b2").await?;
    assert_eq!(b2.state, WorkerState::Starting);
    wait_gone(pid).await?;
    let live: Vec<Worker> = serde_json::from_value(core.cli_json(&["workers"])?)?;
    let mut live: Vec<WorkerId> = live.iter().map(|w| w.id).collect();
    live.sort();
    assert_eq!(live, vec![accepted[1].1.id, b1.id, b2.id]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_that_leaves_for_good_takes_its_workers_and_one_that_may_return_keeps_them()
-> Result<()> {
    let model = FakeModel::start(worker_script).await?;
    let core = worker_core(&model, "headless").await?;
    let mut quitter = owner(&core, "owner-q", "quitter").await?;
    let mut dropper = owner(&core, "owner-d", "dropper").await?;
    let mut reloader = owner(&core, "owner-r", "reloader").await?;

    // The quitter's workers: one that delegated a worker of its own, one whose result
    // waits for the quitter's ack.
    let boss = delegate(&mut quitter, "lead-scout", "TASK-F split the work", "boss").await?;
    let done = delegate(&mut quitter, "scout", "TASK-A find the callers", "finder").await?;
    let d = delegate(&mut dropper, "implementer", "TASK-E hold on", "kept").await?;
    let r = delegate(&mut reloader, "implementer", "TASK-E hold on", "kept").await?;
    let result = next_of_kind(&mut quitter, DeliveryKind::AgentResult).await?;
    assert!(result.text.contains("agent=finder"), "{}", result.text);
    wait_state(&core, done.id, WorkerState::Settling).await?;
    let deadline = tokio::time::Instant::now() + LONG;
    let child = loop {
        let all: Vec<Worker> = serde_json::from_value(core.cli_json(&["workers"])?)?;
        if let Some(c) = all.into_iter().find(|c| c.parent_worker == Some(boss.id)) {
            break c;
        }
        if tokio::time::Instant::now() > deadline {
            bail!("the boss never delegated:\n{}", core.log());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for w in [&boss, &child, &d, &r] {
        wait_state(&core, w.id, WorkerState::Working).await?;
    }
    let pid = |w: &Worker| worker_pid(&core, w.id);
    let gone = [pid(&boss)?, pid(&child)?, pid(&done)?];
    let (dpid, rpid) = (pid(&d)?, pid(&r)?);

    // Owners that may come back: a connection lost without `bye`, and a `/reload`.
    drop(dropper);
    core.disconnected("owner-d", LONG).await?;
    reloader
        .client
        .send(&ClientMsg::Bye(requests::Bye { returning: true }))
        .await?;
    drop(reloader);
    core.disconnected("owner-r", LONG).await?;
    // Their leaving was handled (in the same step as any cascade would be): still working.
    assert_eq!(listed(&core, d.id)?.state, WorkerState::Working);
    assert_eq!(listed(&core, r.id)?.state, WorkerState::Working);

    // An owner that leaves for good: every worker it owns is closed, their own too.
    quitter
        .client
        .send(&ClientMsg::Bye(requests::Bye { returning: false }))
        .await?;
    drop(quitter);
    core.disconnected("owner-q", LONG).await?;
    for w in [&boss, &child, &done] {
        assert_eq!(listed(&core, w.id)?.state, WorkerState::Closed, "{w:?}");
    }
    for p in gone {
        wait_gone(p).await?;
    }
    assert!(
        core.log()
            .contains("owner left for good: closing its workers"),
        "{}",
        core.log()
    );
    // The others' workers still run.
    assert_eq!(listed(&core, d.id)?.state, WorkerState::Working);
    assert_eq!(listed(&core, r.id)?.state, WorkerState::Working);
    assert!(alive(dpid) && alive(rpid));

    // The result the quitter did not ack is still its mail if it comes back; acking it
    // now changes nothing about the closed worker.
    let mut back = owner(&core, "owner-q", "quitter").await?;
    let again = next_of_kind(&mut back, DeliveryKind::AgentResult).await?;
    assert_eq!(again.id, result.id);
    back.ack(&[again.id]).await?;
    back.sync().await?;
    assert_eq!(listed(&core, done.id)?.state, WorkerState::Closed);
    Ok(())
}
