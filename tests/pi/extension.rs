//! End to end with a REAL Pi (the pinned version on Node 22, from `scripts/test-deps.sh`)
//! loading the shepherd extension, the real `shepherd` daemon and CLI, and a scripted
//! fake model. The four scenarios of the extension issue:
//!
//! 1. the model calls `ask_human`; the CLI lists and answers it; the next model request
//!    holds the answer, and the session file holds it once;
//! 2. a steer sent while Pi is inside a slow tool lands after the tool and before the next
//!    model call;
//! 3. kill -9 and restart of the core mid-session: Pi keeps running, reconnects, and a
//!    steer sent while it was disconnected is delivered exactly once (counted once a
//!    marker steer sent after one more restart has arrived);
//! 4. no core and no binary on PATH: Pi works normally and shows one notice;
//!
//! and scenario 1 across machines: the Pi session beside a core linked to the home core,
//! answered and steered from home's CLI.

use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use shepherd_harness::Core;
use shepherd_harness::eventually;
use shepherd_harness::fake_model::{FakeModel, ModelRequest, Reply};
use shepherd_harness::pi_process::{PiOptions, PiSession, user_messages_containing};

const LONG: Duration = Duration::from_secs(60);

/// The session as `shepherd sessions --json` shows it, once connected.
async fn connected_session(core: &Core, name: &str) -> Result<Value> {
    core.connected_session(name, LONG).await
}

fn has_tool_result(req: &ModelRequest) -> bool {
    req.messages().last().is_some_and(|m| m["role"] == "tool")
}

#[tokio::test]
async fn ask_human_answered_from_the_cli_reaches_the_model_once() -> Result<()> {
    let core = Core::start().await?;
    let model = FakeModel::start(|req| {
        let transcript = req.transcript();
        if transcript.contains("ANSWER-ship-it") {
            Reply::text("Thanks, shipping.")
        } else if has_tool_result(req) {
            Reply::text("I asked; waiting for the answer.")
        } else {
            Reply::tool(
                "ask_human",
                json!({"question": "Deploy to staging now?", "options": ["yes", "no"]}),
            )
        }
    })
    .await?;
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some("e2e-asker".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    connected_session(&core, "e2e-asker").await?;

    pi.prompt("Please ask me before deploying.").await?;
    pi.wait_settled(LONG).await?;
    let ask = eventually(LONG, "the ask to be listed", || {
        let asks = core.cli_json(&["asks"]).ok()?;
        asks.as_array()?.first().cloned()
    })
    .await?;
    assert_eq!(ask["question"], "Deploy to staging now?");
    assert_eq!(ask["session_name"], "e2e-asker");
    assert_eq!(ask["options"], json!(["yes", "no"]));
    let asked_requests = model.requests().len();

    let id = ask["id"].to_string();
    let out = core.cli(&["answer", &id, "ANSWER-ship-it"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let requests = model.wait_requests(asked_requests + 1, LONG).await?;
    let next = &requests[asked_requests];
    assert!(
        next.transcript().contains("ANSWER-ship-it"),
        "answer not shown to the model: {:?}",
        next.last()
    );
    pi.wait_settled(LONG).await?;
    let file = pi.session_file().await?;
    assert_eq!(user_messages_containing(&file, "ANSWER-ship-it")?, 1);
    let asks = core.cli_json(&["asks", "--all"])?;
    assert_eq!(asks[0]["state"], "answered");
    pi.shutdown().await?;
    Ok(())
}

/// Scenario 1 across machines: the Pi session runs beside another core ("far"), linked
/// to the home core through `shepherd link`; the human answers from home's CLI, naming the
/// ask `far:<id>`, and steers it as `far:<name>`; the model sees each once.
#[tokio::test]
async fn ask_human_on_a_linked_host_answered_from_home_reaches_the_model_once() -> Result<()> {
    let far = Core::start().await?;
    let model = FakeModel::start(|req| {
        let transcript = req.transcript();
        if transcript.contains("STEER-from-home") {
            Reply::text("Steered.")
        } else if transcript.contains("ANSWER-from-home") {
            Reply::text("Thanks, shipping.")
        } else if has_tool_result(req) {
            Reply::text("I asked; waiting for the answer.")
        } else {
            Reply::tool("ask_human", json!({"question": "Ship from the far box?"}))
        }
    })
    .await?;
    let mut opts = PiOptions::new(far.agent_dir());
    opts.name = Some("e2e-far".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    connected_session(&far, "e2e-far").await?;
    let (_config, config_path) = Core::hosts_config(&[("far", &far)])?;
    let home = Core::start_with(&[("SHEPHERD_CONFIG", &config_path)]).await?;

    pi.prompt("Ask me before shipping.").await?;
    pi.wait_settled(LONG).await?;
    let ask = eventually(LONG, "the far ask listed at home", || {
        let asks = home.cli_json(&["asks"]).ok()?;
        asks.as_array()?
            .iter()
            .find(|a| a["host"] == "far")
            .cloned()
    })
    .await?;
    assert_eq!(ask["question"], "Ship from the far box?");
    let asked_requests = model.requests().len();
    let named = format!("far:{}", ask["id"]);
    let out = home.cli(&["answer", &named, "ANSWER-from-home"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = model.wait_requests(asked_requests + 1, LONG).await?;
    assert!(
        requests[asked_requests]
            .transcript()
            .contains("ANSWER-from-home"),
        "answer not shown to the model: {:?}",
        requests[asked_requests].last()
    );
    pi.wait_settled(LONG).await?;

    let steered_requests = model.requests().len();
    let out = home.cli(&["send", "far:e2e-far", "STEER-from-home"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    model.wait_requests(steered_requests + 1, LONG).await?;
    pi.wait_settled(LONG).await?;
    let file = pi.session_file().await?;
    assert_eq!(user_messages_containing(&file, "ANSWER-from-home")?, 1);
    assert_eq!(user_messages_containing(&file, "STEER-from-home")?, 1);
    assert_eq!(far.cli_json(&["asks", "--all"])?[0]["state"], "answered");
    pi.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn a_steer_during_a_slow_tool_lands_after_it_and_before_the_next_model_call() -> Result<()> {
    let core = Core::start().await?;
    let model = FakeModel::start(|req| {
        if has_tool_result(req) || req.transcript().contains("STEER-slow-42") {
            Reply::text("Done.")
        } else {
            Reply::tool("bash", json!({"command": "sleep 3; echo slept"}))
        }
    })
    .await?;
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some("e2e-slow".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    connected_session(&core, "e2e-slow").await?;

    pi.prompt("Run the slow command.").await?;
    pi.wait_for(LONG, |r| r["type"] == "tool_execution_start")
        .await?;
    let out = core.cli(&["send", "e2e-slow", "STEER-slow-42"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    pi.wait_settled(LONG).await?;

    let requests = model.requests();
    assert_eq!(
        requests.len(),
        2,
        "one call for the tool, one after it: {:?}",
        requests.iter().map(|r| r.last()).collect::<Vec<_>>()
    );
    let after = requests[1].messages();
    let tool_at = after
        .iter()
        .position(|m| m["role"] == "tool")
        .context("tool result in second request")?;
    let steer_at = after
        .iter()
        .position(|m| m["role"] == "user" && m.to_string().contains("STEER-slow-42"))
        .context("steer in the request after the tool")?;
    assert!(steer_at > tool_at, "the steer comes after the tool result");
    assert!(
        after[tool_at].to_string().contains("slept"),
        "the tool ran to completion"
    );
    let file = pi.session_file().await?;
    assert_eq!(user_messages_containing(&file, "STEER-slow-42")?, 1);
    pi.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn core_kill9_and_restart_mid_session_delivers_a_queued_steer_once() -> Result<()> {
    let mut core = Core::start().await?;
    let model = FakeModel::start(|req| {
        let (_, last) = req.last();
        Reply::text(format!(
            "ack: {}",
            last.chars().take(40).collect::<String>()
        ))
    })
    .await?;
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some("e2e-survivor".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    let before = connected_session(&core, "e2e-survivor").await?;

    pi.prompt("hello").await?;
    pi.wait_settled(LONG).await?;

    core.kill9();
    // Pi keeps running without the core.
    pi.prompt("still here?").await?;
    pi.wait_settled(LONG).await?;

    // Back, but on a socket the extension does not know: the session stays disconnected
    // while the steer is sent, so it can only arrive through the stored mailbox.
    core.restart_hidden(true).await?;
    let sent = core.cli_json(&[
        "send",
        before["id"].as_str().unwrap(),
        "STEER-after-crash-7",
    ])?;
    assert_eq!(sent["connected"], false, "{sent}");
    core.kill9();
    core.restart_hidden(false).await?;
    connected_session(&core, "e2e-survivor").await?;
    let n = eventually(LONG, "the steer to reach the model", || {
        let requests = model.requests();
        let with: Vec<_> = requests
            .iter()
            .filter(|r| r.last().1.contains("STEER-after-crash-7"))
            .collect();
        (!with.is_empty()).then_some(with.len())
    })
    .await?;
    assert_eq!(n, 1);
    pi.wait_settled(LONG).await?;
    // Give a duplicate every chance to show up: reconnect once more, then send a marker.
    // The core delivers a session's mail in order (what the registration replays first),
    // so a steer delivered again would be in the session file before the marker is.
    core.restart().await?;
    connected_session(&core, "e2e-survivor").await?;
    let marker = core.cli_json(&["send", before["id"].as_str().unwrap(), "MARKER-after-9"])?;
    assert_eq!(marker["connected"], true, "{marker}");
    let file = pi.session_file().await?;
    eventually(LONG, "the marker in the session file", || {
        (user_messages_containing(&file, "MARKER-after-9").ok()? > 0).then_some(())
    })
    .await?;
    pi.wait_settled(LONG).await?;
    assert_eq!(user_messages_containing(&file, "STEER-after-crash-7")?, 1);
    assert_eq!(user_messages_containing(&file, "MARKER-after-9")?, 1);
    eventually(
        LONG,
        "both deliveries acknowledged (pending_messages 0)",
        || {
            let sessions = core.cli_json(&["sessions"]).ok()?;
            (sessions[0]["pending_messages"] == 0).then_some(())
        },
    )
    .await?;
    pi.shutdown().await?;
    Ok(())
}

/// The state directory deleted under a running core, to start afresh: the core stops (it
/// does not go on serving this session from a deleted database), Pi goes on working
/// without it, and once the next core starts on a fresh directory the session registers
/// there by itself and a steer reaches the model.
#[tokio::test]
async fn a_deleted_state_directory_moves_the_session_to_the_next_core() -> Result<()> {
    let mut core = Core::start().await?;
    let model = FakeModel::start(|_| Reply::text("fine")).await?;
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some("e2e-afresh".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    let before = connected_session(&core, "e2e-afresh").await?;

    std::fs::remove_dir_all(core.state_dir())?;
    let status = core.exited_within(Duration::from_secs(5))?;
    assert!(status.success(), "{status}");
    pi.prompt("still here?").await?;
    pi.wait_settled(LONG).await?;

    core.restart().await?;
    let after = connected_session(&core, "e2e-afresh").await?;
    assert_eq!(
        after["id"], before["id"],
        "the same session, registered again"
    );
    core.cli_json(&["send", "e2e-afresh", "STEER-on-the-next-core"])?;
    eventually(LONG, "the steer to reach the model", || {
        model
            .requests()
            .iter()
            .any(|r| r.last().1.contains("STEER-on-the-next-core"))
            .then_some(())
    })
    .await?;
    pi.wait_settled(LONG).await?;
    pi.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn without_a_core_or_binary_pi_works_and_shows_one_notice() -> Result<()> {
    let dir = tempfile::Builder::new().prefix("shp").tempdir_in("/tmp")?;
    let model = FakeModel::start(|_| Reply::text("plain answer")).await?;
    let mut opts = PiOptions::new(dir.path());
    opts.env.retain(|(k, _)| k != "SHEPHERD_AUTOSTART"); // autostart on, but no binary
    let mut pi = PiSession::spawn(&model, opts).await?;
    pi.prompt("hi").await?;
    pi.wait_settled(LONG).await?;
    pi.prompt("again").await?;
    pi.wait_settled(LONG).await?;
    assert_eq!(model.requests().len(), 2);
    let notices: Vec<Value> = pi
        .records()
        .into_iter()
        .filter(|r| r["type"] == "extension_ui_request" && r["method"] == "notify")
        .filter(|r| r.to_string().to_lowercase().contains("shepherd"))
        .collect();
    assert_eq!(notices.len(), 1, "exactly one notice: {notices:?}");
    pi.shutdown().await?;
    Ok(())
}

/// Presence, `report`, the footer and `/shepherd`, seen from outside: the core knows the
/// session's model, status while a tool runs, and context fill after a turn; a report
/// reaches subscribers; the footer counts open asks; `/shepherd` names the session.
#[tokio::test]
async fn presence_report_footer_and_the_shepherd_command() -> Result<()> {
    let core = Core::start().await?;
    let mut sub = core.subscriber().await?;
    let model = FakeModel::start(|req| {
        let transcript = req.transcript();
        let reported = req.body["messages"]
            .to_string()
            .contains("REPORT-build-green");
        if has_tool_result(req) && reported {
            Reply::tool("ask_human", json!({"question": "Merge it?"}))
        } else if has_tool_result(req) {
            Reply::text("done")
        } else if transcript.contains("report please") {
            Reply::tool("report", json!({"text": "REPORT-build-green"}))
        } else {
            Reply::tool("bash", json!({"command": "sleep 2"}))
        }
    })
    .await?;
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some("e2e-presence".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    let session = connected_session(&core, "e2e-presence").await?;
    assert_eq!(session["model"], "fake/fake-model");
    assert!(session["pid"].as_u64().is_some());

    pi.prompt("sleep a little").await?;
    pi.wait_for(LONG, |r| r["type"] == "tool_execution_start")
        .await?;
    let busy = eventually(LONG, "status tool:bash", || {
        let s = core.cli_json(&["sessions"]).ok()?;
        let s = s
            .as_array()?
            .iter()
            .find(|s| s["name"] == "e2e-presence")?
            .clone();
        (s["status"] == "tool:bash").then_some(s)
    })
    .await?;
    assert_eq!(busy["connected"], true);
    pi.wait_settled(LONG).await?;
    let idle = eventually(LONG, "status idle with a context fill", || {
        let s = core.cli_json(&["sessions"]).ok()?;
        let s = s
            .as_array()?
            .iter()
            .find(|s| s["name"] == "e2e-presence")?
            .clone();
        (s["status"] == "idle" && s["context_tokens"].as_u64().is_some()).then_some(s)
    })
    .await?;
    assert!(idle["context_percent"].as_f64().is_some(), "{idle}");

    // The first run's final text is its result; the report tool's text is a report.
    let result = shepherd_harness::next_event_where(&mut sub, LONG, |m| {
        matches!(m, shepherd_core::protocol::ServerMsg::ReportPosted { .. })
    })
    .await?;
    let shepherd_core::protocol::ServerMsg::ReportPosted { report: result } = result else {
        unreachable!()
    };
    assert_eq!(
        (result.kind, result.text.as_str()),
        (shepherd_core::protocol::ReportKind::Result, "done")
    );
    pi.prompt("report please").await?;
    let report = shepherd_harness::next_event_where(&mut sub, LONG, |m| {
        matches!(m, shepherd_core::protocol::ServerMsg::ReportPosted { .. })
    })
    .await?;
    let shepherd_core::protocol::ServerMsg::ReportPosted { report } = report else {
        unreachable!()
    };
    assert_eq!(report.text, "REPORT-build-green");
    assert_eq!(report.kind, shepherd_core::protocol::ReportKind::Report);
    assert_eq!(report.session_name, "e2e-presence");
    pi.wait_settled(LONG).await?;
    eventually(LONG, "the footer to count the open ask", || {
        pi.records()
            .iter()
            .any(|r| {
                r["method"] == "setStatus"
                    && r["statusText"]
                        .as_str()
                        .is_some_and(|t| t.contains("1 open ask"))
            })
            .then_some(())
    })
    .await?;

    pi.prompt("/shepherd").await?;
    let id = session["id"].as_str().unwrap().to_string();
    let shown = pi
        .wait_for(LONG, |r| {
            r["method"] == "notify" && r["message"].as_str().is_some_and(|m| m.contains(&id))
        })
        .await?;
    let text = shown["message"].as_str().unwrap();
    assert!(
        text.contains("e2e-presence") && text.contains("Merge it?"),
        "{text}"
    );
    pi.shutdown().await?;
    Ok(())
}

/// Print mode (`pi -p`): the extension registers, the run completes with the model's
/// text on stdout, and Pi exits 0 without hanging on the open socket.
#[tokio::test]
async fn print_mode_registers_and_exits_cleanly() -> Result<()> {
    let core = Core::start().await?;
    let mut sub = core.subscriber().await?;
    let model = FakeModel::start(|_| Reply::text("PRINTED-REPLY")).await?;
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some("e2e-print".into());
    let mut cmd = PiSession::pi_command(&model, &opts, "text")?;
    cmd.args(["-p", "say something"]);
    let out = tokio::time::timeout(LONG, cmd.output())
        .await
        .context("pi -p hung")??;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("PRINTED-REPLY"));
    let joined = shepherd_harness::next_event_where(&mut sub, LONG, |m| {
        matches!(m, shepherd_core::protocol::ServerMsg::SessionJoined { session } if session.name == "e2e-print")
    })
    .await;
    assert!(joined.is_ok(), "the print-mode session registered");
    Ok(())
}
