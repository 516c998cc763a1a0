//! Nothing said is lost, with a REAL Pi: while the core is down, the model calls
//! `ask_human` and `report`; the tools say they are queued, the session keeps them, and
//! when the core comes up the extension sends each exactly once: one ask appears (and is
//! answered from the CLI, reaching the model), one report; restarting the core again sends
//! nothing twice. Each "not twice" is counted after a marker report the model makes next
//! has been stored: one connection's requests are handled in order, so anything the
//! extension sent before the marker is in by then.

use std::time::Duration;

use anyhow::Result;
use serde_json::json;
use shepherd_harness::fake_model::{FakeModel, ModelRequest, Reply};
use shepherd_harness::pi_process::{PiOptions, PiSession};
use shepherd_harness::{Core, eventually};

const LONG: Duration = Duration::from_secs(60);

/// The reports the core stored, read from its database (read-only, beside the running core).
fn reports(core: &Core) -> Result<Vec<String>> {
    let db = rusqlite::Connection::open_with_flags(
        core.state_dir().join("shepherd.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )?;
    // Reports only: the run after the answer ends with a result ("Going."), kept beside them.
    let mut stmt = db.prepare("SELECT text FROM reports WHERE kind = 'report' ORDER BY id")?;
    let texts = stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(texts)
}

/// The `MARKER-<n>` word in a prompt, if any.
fn marker_in(text: &str) -> Option<&str> {
    text.split_whitespace().find(|w| w.starts_with("MARKER-"))
}

/// Prompt `MARKER-<n>`: the model reports `REPORT-MARKER-<n>`, directly (the outbox is
/// empty and the core is up), and the run ends.
async fn marker_report(pi: &mut PiSession, n: u32) -> Result<()> {
    pi.prompt(&format!("MARKER-{n}")).await?;
    pi.wait_settled(LONG).await
}

fn tool_results(req: &ModelRequest) -> usize {
    req.messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .count()
}

#[tokio::test]
async fn ask_human_while_the_core_is_down_is_sent_once_when_it_is_back() -> Result<()> {
    let mut core = Core::start().await?;
    core.terminate()?;
    let model = FakeModel::start(|req| {
        let (role, last) = req.last();
        if role == "user"
            && let Some(marker) = marker_in(&last)
        {
            return Reply::tool("report", json!({"text": format!("REPORT-{marker}")}));
        }
        if role == "tool" && marker_in(&req.last_user_text()).is_some() {
            return Reply::text("Reported the marker.");
        }
        if req.transcript().contains("ANSWER-go") {
            Reply::text("Going.")
        } else {
            match tool_results(req) {
                0 => Reply::tool("report", json!({"text": "REPORT-offline progress"})),
                1 => Reply::tool(
                    "ask_human",
                    json!({"question": "Ship while offline?", "options": ["go", "wait"]}),
                ),
                _ => Reply::text("Asked; waiting."),
            }
        }
    })
    .await?;
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some("outboxer".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    pi.prompt("report, then ask me").await?;
    pi.wait_settled(LONG).await?;
    // (ask_human ends the turn: its result is in the session, not in a model request.)
    let session_file = pi.session_file().await?;
    let text = std::fs::read_to_string(&session_file)?;
    assert_eq!(
        text.matches("Queued, will be sent when shepherd is back")
            .count(),
        2,
        "both tools say they are queued: {text}"
    );
    assert_eq!(
        text.matches("\"shepherd-outbox\"").count(),
        2,
        "both kept in the session"
    );

    // The core comes up: exactly one ask and one report appear.
    core.restart().await?;
    core.connected_session("outboxer", LONG).await?;
    let ask = eventually(LONG, "the queued ask to arrive", || {
        let asks = core.cli_json(&["asks"]).ok()?;
        asks.as_array()?.first().cloned()
    })
    .await?;
    assert_eq!(ask["question"], "Ship while offline?");
    assert_eq!(ask["session_name"], "outboxer");
    eventually(LONG, "the queued report to be stored", || {
        (reports(&core).ok()? == ["REPORT-offline progress"]).then_some(())
    })
    .await?;
    eventually(LONG, "both queued items recorded as sent", || {
        let text = std::fs::read_to_string(&session_file).ok()?;
        (text.matches("\"shepherd-outbox\"").count() == 4).then_some(())
    })
    .await?;
    marker_report(&mut pi, 1).await?;
    assert_eq!(
        reports(&core)?,
        ["REPORT-offline progress", "REPORT-MARKER-1"],
        "one report, then the marker"
    );
    let asks = core.cli_json(&["asks", "--all"])?;
    assert_eq!(
        asks.as_array().map(Vec::len),
        Some(1),
        "one ask, not two: {asks:#}"
    );

    // It is answerable, and the answer reaches the model.
    let before = model.requests().len();
    let out = core.cli(&["answer", &ask["id"].to_string(), "ANSWER-go"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = model.wait_requests(before + 1, LONG).await?;
    assert!(requests[before].transcript().contains("ANSWER-go"));
    pi.wait_settled(LONG).await?;

    // Another restart sends nothing again (the session recorded both as sent).
    core.restart().await?;
    core.connected_session("outboxer", LONG).await?;
    marker_report(&mut pi, 2).await?;
    let asks = core.cli_json(&["asks", "--all"])?;
    assert_eq!(asks.as_array().map(Vec::len), Some(1), "{asks:#}");
    assert_eq!(
        reports(&core)?,
        [
            "REPORT-offline progress",
            "REPORT-MARKER-1",
            "REPORT-MARKER-2"
        ],
        "one report, not two"
    );
    let session_file = pi.session_file().await?;
    let text = std::fs::read_to_string(&session_file)?;
    assert_eq!(
        text.matches("\"shepherd-outbox\"").count(),
        4,
        "two queued, two sent"
    );
    pi.shutdown().await?;
    Ok(())
}
