//! Supervision end to end with two REAL Pi processes (the pinned Pi on Node 22, each
//! loading the shepherd extension and talking to its own scripted fake model), the real
//! core and the real CLI:
//!
//! 1. pairing by roll call (`/supervise <goal>` with one free session in the cwd); the
//!    first view starts a supervisor turn with only the supervisor tools and read-only
//!    tools; its `steer` lands in the worker's session as a user message; `done` is
//!    refused while the worker is inside a tool and accepted after; the tools come back;
//! 2. a core kill -9 and restart keeps the pairing (both sides return, a look still
//!    reaches the supervisor), and `/supervise stop` restores the writing tools;
//! 3. the supervisor's context after 10 looks, with and without pruning (printed, and
//!    pruning must keep it clearly smaller).

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use shepherd_harness::Core;
use shepherd_harness::eventually;
use shepherd_harness::fake_model::{FakeModel, ModelRequest, Reply};
use shepherd_harness::pi_process::{PiOptions, PiSession, user_messages_containing};

const LONG: Duration = Duration::from_secs(60);

fn session(core: &Core, name: &str) -> Option<Value> {
    core.session_named(name)
}

async fn connected(core: &Core, name: &str) -> Result<Value> {
    core.connected_session(name, LONG).await
}

fn pairings(core: &Core, all: bool) -> Vec<Value> {
    let args: &[&str] = if all {
        &["pairings", "--all"]
    } else {
        &["pairings"]
    };
    core.cli_json(args)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

fn last_is_tool_result(req: &ModelRequest) -> bool {
    req.messages().last().is_some_and(|m| m["role"] == "tool")
}

fn offered(req: &ModelRequest, tool: &str) -> bool {
    req.tool_names().iter().any(|t| t == tool)
}

/// Two Pi sessions in one directory, each with its own agent dir and model, one core.
struct Pair {
    worker: PiSession,
    supervisor: PiSession,
    /// Kept alive for the worker.
    _worker_model: FakeModel,
    supervisor_model: FakeModel,
    _dirs: tempfile::TempDir,
}

async fn start_pair(
    core: &Core,
    worker_model: FakeModel,
    supervisor_model: FakeModel,
    supervisor_env: &[(&str, &str)],
) -> Result<Pair> {
    let dirs = tempfile::tempdir()?;
    let cwd = dirs.path().join("project");
    std::fs::create_dir_all(&cwd)?;
    let opts = |agent: &Path, name: &str| {
        let mut o = PiOptions::new(agent);
        o.cwd = cwd.clone();
        o.name = Some(name.into());
        o.env.push((
            "SHEPHERD_SOCKET".into(),
            core.socket().display().to_string(),
        ));
        o
    };
    let worker = PiSession::spawn(&worker_model, opts(core.agent_dir(), "worker")).await?;
    connected(core, "worker").await?;
    let mut sup_opts = opts(&dirs.path().join("supervisor-agent"), "boss");
    for (k, v) in supervisor_env {
        sup_opts.env.push(((*k).into(), (*v).into()));
    }
    let supervisor = PiSession::spawn(&supervisor_model, sup_opts).await?;
    connected(core, "boss").await?;
    Ok(Pair {
        worker,
        supervisor,
        _worker_model: worker_model,
        supervisor_model,
        _dirs: dirs,
    })
}

/// Prompt the supervisor (queued after whatever it is doing) and return the model request
/// that carries the prompt.
async fn ask_later(pair: &mut Pair, text: &str) -> Result<ModelRequest> {
    pair.supervisor
        .command(json!({"type": "prompt", "message": text, "streamingBehavior": "followUp"}))
        .await?;
    eventually(LONG, &format!("a model request with {text:?}"), || {
        pair.supervisor_model
            .requests()
            .into_iter()
            .find(|r| r.last().1.contains(text))
    })
    .await
}

#[tokio::test]
async fn roll_call_view_steer_and_done_with_its_guard() -> Result<()> {
    let core = Core::start().await?;
    let worker_model = FakeModel::start(|req| {
        let (role, last) = req.last();
        if role == "tool" {
            Reply::text("The suite ran.")
        } else if last.contains("STEER-run-tests") {
            Reply::tool("bash", json!({"command": "sleep 4; echo tests-passed"}))
        } else {
            Reply::text("I wrote hello.txt as asked.")
        }
    })
    .await?;
    // The supervisor judges each view by what it shows: a worker inside its tool gets an
    // (early, refused) done, a finished suite a done, a fresh pairing one steer.
    let supervisor_model = FakeModel::start(|req| {
        if !offered(req, "steer") {
            return Reply::text("Plain answer, no supervision tools here.");
        }
        if last_is_tool_result(req) {
            return Reply::text("Verdict given.");
        }
        let (_, view) = req.last();
        if view.contains("tests-passed") {
            Reply::tool("done", json!({"evidence": "EVIDENCE-final: tests-passed"}))
        } else if view.contains("status tool:bash") {
            Reply::tool("done", json!({"evidence": "EVIDENCE-early"}))
        } else if !req.transcript().contains("Steer sent to") {
            Reply::tool(
                "steer",
                json!({"text": "STEER-run-tests: run the test suite now"}),
            )
        } else {
            Reply::tool("let_it_run", json!({"reason": "the suite is running"}))
        }
    })
    .await?;
    let mut pair = start_pair(&core, worker_model, supervisor_model, &[]).await?;
    pair.worker.prompt("Write hello.txt").await?;
    pair.worker.wait_settled(LONG).await?;
    eventually(LONG, "the worker to be idle", || {
        session(&core, "worker").filter(|s| s["status"] == "idle")
    })
    .await?;

    // Roll call: the worker is the one free session in this cwd.
    pair.supervisor
        .prompt("/supervise Make the test suite pass")
        .await?;
    let pairing = eventually(LONG, "the pairing", || pairings(&core, false).pop()).await?;
    assert_eq!(pairing["worker_name"], "worker");
    assert_eq!(pairing["supervisor_name"], "boss");
    assert_eq!(pairing["goal"], "Make the test suite pass");

    // The first view starts a supervisor turn, with the supervisor's tools only.
    let first = pair.supervisor_model.wait_requests(1, LONG).await?[0].clone();
    assert!(
        first.transcript().contains("I wrote hello.txt"),
        "the view shows the worker's work: {}",
        first.transcript()
    );
    for tool in [
        "worker_view",
        "set_goal",
        "steer",
        "let_it_run",
        "done",
        "read",
    ] {
        assert!(
            offered(&first, tool),
            "{tool} offered: {:?}",
            first.tool_names()
        );
    }
    for tool in ["bash", "edit", "write"] {
        assert!(
            !offered(&first, tool),
            "{tool} removed: {:?}",
            first.tool_names()
        );
    }

    // The steer lands in the worker as a user message and starts its turn: a slow tool.
    let worker_file = pair.worker.session_file().await?;
    eventually(LONG, "the worker inside its tool", || {
        session(&core, "worker").filter(|s| s["status"] == "tool:bash")
    })
    .await?;
    assert_eq!(
        user_messages_containing(&worker_file, "STEER-run-tests")?,
        1
    );

    // A look now: the supervisor says done, and the core refuses it (a tool is running).
    let out = core.cli(&["supervise", "look", "worker"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let refusal = eventually(LONG, "done to be refused", || {
        pair.supervisor_model.requests().into_iter().find(|r| {
            r.messages()
                .last()
                .is_some_and(|m| m["role"] == "tool" && m.to_string().contains("refused"))
        })
    })
    .await?;
    assert!(
        refusal.transcript().contains("bash"),
        "names the running tool: {}",
        refusal.last().1
    );
    assert_eq!(pairings(&core, false).len(), 1, "still paired");

    // The worker finishes and stops: the next view gets a done that is accepted.
    let ended = eventually(LONG, "the pairing to end with done", || {
        pairings(&core, true)
            .into_iter()
            .find(|p| p["state"] == "ended")
    })
    .await?;
    assert_eq!(ended["end_reason"], "done");
    assert_eq!(ended["evidence"], "EVIDENCE-final: tests-passed");
    assert!(
        pair.supervisor_model
            .requests()
            .iter()
            .any(|r| { !last_is_tool_result(r) && r.last().1.contains("tests-passed") }),
        "a view showed the tool's result before done was accepted"
    );

    // The writing tools are back once the pairing ended.
    let after = ask_later(&mut pair, "What can you do now?").await?;
    assert!(
        offered(&after, "bash") && offered(&after, "edit"),
        "{:?}",
        after.tool_names()
    );
    assert!(!offered(&after, "steer"), "{:?}", after.tool_names());
    assert_eq!(
        user_messages_containing(&worker_file, "STEER-run-tests")?,
        1,
        "once"
    );
    Ok(())
}

#[tokio::test]
async fn a_core_restart_keeps_the_pairing_and_stop_restores_the_tools() -> Result<()> {
    let mut core = Core::start().await?;
    let worker_model = FakeModel::start(|_| Reply::text("Working.")).await?;
    let supervisor_model = FakeModel::start(|req| {
        if !offered(req, "steer") || last_is_tool_result(req) {
            Reply::text("Noted.")
        } else {
            Reply::tool("let_it_run", json!({"reason": "on track"}))
        }
    })
    .await?;
    let mut pair = start_pair(&core, worker_model, supervisor_model, &[]).await?;
    pair.supervisor
        .prompt("/supervise @worker Keep the build green")
        .await?;
    pair.supervisor_model.wait_requests(2, LONG).await?;
    let id = eventually(LONG, "the pairing", || pairings(&core, false).pop()).await?["id"].clone();

    core.kill9();
    core.restart().await?;
    let back = eventually(LONG, "both sides back and paired", || {
        pairings(&core, false)
            .pop()
            .filter(|p| p["worker_connected"] == true && p["supervisor_connected"] == true)
    })
    .await?;
    assert_eq!(back["id"], id);
    assert_eq!(back["goal"], "Keep the build green");

    // A look after the restart still reaches the supervisor, still supervising.
    pair.supervisor.wait_settled(LONG).await?;
    let before = pair.supervisor_model.requests().len();
    let out = core.cli(&["supervise", "look", "worker"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let look = pair
        .supervisor_model
        .wait_requests(before + 1, LONG)
        .await?[before]
        .clone();
    assert!(
        offered(&look, "let_it_run") && !offered(&look, "bash"),
        "{:?}",
        look.tool_names()
    );
    pair.supervisor.wait_settled(LONG).await?;

    // /supervise stop: the pairing ends and the writing tools come back.
    pair.supervisor.prompt("/supervise stop").await?;
    let ended = eventually(LONG, "the pairing to stop", || {
        pairings(&core, true)
            .into_iter()
            .find(|p| p["state"] == "ended")
    })
    .await?;
    assert_eq!(ended["end_reason"], "stopped");
    assert_eq!(ended["ended_by"], "boss");
    let after = ask_later(&mut pair, "Back to work.").await?;
    assert!(
        offered(&after, "bash") && offered(&after, "write"),
        "{:?}",
        after.tool_names()
    );
    assert!(!offered(&after, "steer") && !offered(&after, "done"));
    let _ = pair.worker.records();
    Ok(())
}

/// Pair, give the worker ten turns of long output, let the supervisor answer each look
/// with reasoning and `let_it_run`; return the size of its last model request's messages.
async fn context_after_ten_looks(prune: bool) -> Result<usize> {
    let core = Core::start().await?;
    let worker_model = FakeModel::start(|req| {
        let (_, last) = req.last();
        let body =
            format!("Progress on {last}: ") + &*"edited parser.rs and ran the tests; ".repeat(60);
        Reply::text(body)
    })
    .await?;
    let supervisor_model = FakeModel::start(|req| {
        if !offered(req, "steer") || last_is_tool_result(req) {
            Reply::text("Let it run.")
        } else {
            Reply::tool("let_it_run", json!({"reason": "steady progress"}))
                .with_reasoning("The worker is editing the parser and running tests; ".repeat(20))
        }
    })
    .await?;
    let env: &[(&str, &str)] = if prune {
        &[]
    } else {
        &[("SHEPHERD_PRUNE", "0")]
    };
    let mut pair = start_pair(&core, worker_model, supervisor_model, env).await?;
    pair.supervisor
        .prompt("/supervise @worker Finish the parser port")
        .await?;
    // Look 1 is the pairing's; looks 2..=10 follow the worker's turns.
    pair.supervisor_model.wait_requests(2, LONG).await?;
    pair.supervisor.wait_settled(LONG).await?;
    for step in 2..=10 {
        let before = pair.supervisor_model.requests().len();
        pair.worker.prompt(&format!("step {step}")).await?;
        pair.worker.wait_settled(LONG).await?;
        pair.supervisor_model
            .wait_requests(before + 2, LONG)
            .await?;
        pair.supervisor.wait_settled(LONG).await?;
    }
    let looks = pairings(&core, false).pop().context("still paired")?["looks"].as_u64();
    assert_eq!(looks, Some(10));
    let last_look = pair
        .supervisor_model
        .requests()
        .into_iter()
        .rev()
        .find(|r| !last_is_tool_result(r))
        .context("a look request")?;
    Ok(serde_json::to_string(last_look.messages())?.len())
}

#[tokio::test]
async fn supervisor_context_after_ten_looks_stays_flat_with_pruning() -> Result<()> {
    let unpruned = context_after_ten_looks(false).await?;
    let pruned = context_after_ten_looks(true).await?;
    println!(
        "supervisor context after 10 looks: {unpruned} bytes of messages without pruning, {pruned} with pruning ({:.0}%)",
        100.0 * pruned as f64 / unpruned as f64
    );
    assert!(
        pruned * 10 < unpruned * 7,
        "pruning keeps the context clearly smaller: {pruned} vs {unpruned}"
    );
    Ok(())
}

/// Entries of a session file that are the extension's policy brief.
fn policy_briefs(file: &Path) -> Result<usize> {
    let text = std::fs::read_to_string(file)?;
    let mut n = 0;
    for line in text.lines() {
        let entry: Value = serde_json::from_str(line)?;
        if entry["type"] == "custom_message"
            && entry["customType"] == "shepherd-brief"
            && entry["details"]["policy"] == true
        {
            n += 1;
        }
    }
    Ok(n)
}

#[tokio::test]
async fn the_cli_pairs_a_busy_supervisor_role_session_and_its_brief_survives_an_abort() -> Result<()>
{
    let core = Core::start().await?;
    let worker_model = FakeModel::start(|_| Reply::text("Working.")).await?;
    let supervisor_model = FakeModel::start(|req| {
        if last_is_tool_result(req) {
            Reply::text("Done with that.")
        } else if offered(req, "steer") {
            Reply::tool("let_it_run", json!({"reason": "fine"}))
        } else {
            Reply::tool("bash", json!({"command": "sleep 3; echo slow-done"}))
        }
    })
    .await?;
    let ext_log = core.agent_dir().join("boss-ext.log");
    let ext_log_env = ext_log.display().to_string();
    let mut pair = start_pair(
        &core,
        worker_model,
        supervisor_model,
        &[
            ("SHEPHERD_ROLE", "supervisor"),
            ("SHEPHERD_EXT_LOG", ext_log_env.as_str()),
        ],
    )
    .await?;
    // The supervisor-role session is busy in a slow tool when the human pairs it.
    pair.supervisor.prompt("Run the slow check.").await?;
    eventually(LONG, "the supervisor inside its tool", || {
        session(&core, "boss").filter(|s| s["status"] == "tool:bash")
    })
    .await?;
    let out = core.cli(&[
        "supervise",
        "start",
        "worker",
        "Keep",
        "the",
        "docs",
        "current",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The human presses Escape on that slow check right after the extension has the brief
    // (it queues it as it logs that it supervises): the brief must survive it (it waits for
    // a turn boundary or the end of the run, not in Pi's steering queue, which an abort
    // clears), land once, and reach the first look's request.
    eventually(
        LONG,
        "the supervisor's extension to take the pairing",
        || {
            std::fs::read_to_string(&ext_log)
                .ok()?
                .contains("supervision: supervising worker")
                .then_some(())
        },
    )
    .await?;
    pair.supervisor.command(json!({"type": "abort"})).await?;
    let look = eventually(LONG, "the first look", || {
        pair.supervisor_model
            .requests()
            .into_iter()
            .find(|r| offered(r, "steer") && !last_is_tool_result(r))
    })
    .await?;
    assert!(
        look.transcript().contains("You now supervise session")
            && look.transcript().contains("Keep the docs current"),
        "{}",
        look.transcript()
    );
    pair.supervisor.wait_settled(LONG).await?;
    let file = pair.supervisor.session_file().await?;
    assert_eq!(policy_briefs(&file)?, 1);
    Ok(())
}
