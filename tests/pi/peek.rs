//! `shepherd peek` on a REAL Pi session (the scripted model runs one `bash` command per
//! prompt): after a command, the peek shows its output's last lines and the model's last
//! text; while a `sleep` runs, it names the command and how long it has been running (and
//! that grows); once the run is over nothing runs. A name no session has is refused,
//! saying how to list them; a diff of a session outside a repository is refused, saying so.

use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;
use shepherd_harness::fake_model::{FakeModel, bash_steps};
use shepherd_harness::pi_process::{PiOptions, PiSession};
use shepherd_harness::{Core, eventually};

const LONG: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peek_names_the_running_command_its_time_and_the_last_output() -> Result<()> {
    let core = Core::start().await?;
    let model = FakeModel::start(bash_steps(vec![
        (
            "STEP-ECHO".into(),
            "for n in $(seq 1 30); do echo PEEK-LINE-$n; done".into(),
        ),
        ("STEP-SLEEP".into(), "sleep 6".into()),
    ]))
    .await?;
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some("peeker".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    core.connected_session("peeker", LONG).await?;

    // After a command: its output's last lines and the model's last text.
    pi.prompt("STEP-ECHO").await?;
    pi.wait_settled(LONG).await?;
    let peek = eventually(LONG, "an idle peek with the output", || {
        let p = core.cli_json(&["peek", "peeker"]).ok()?;
        (p["status"] == "idle" && p["last_output"].is_object()).then_some(p)
    })
    .await
    .with_context(|| core.log())?;
    let tail = peek["last_output"]["tail"].as_str().unwrap_or_default();
    assert!(tail.ends_with("PEEK-LINE-30"), "{peek}");
    assert!(
        tail.contains("PEEK-LINE-16") && !tail.contains("PEEK-LINE-15\n"),
        "{peek}"
    );
    assert!(tail.starts_with("…(15 lines before)"), "{peek}");
    assert!(
        peek["last_text"]
            .as_str()
            .is_some_and(|t| t.contains("TOOL-SAID")),
        "{peek}"
    );
    assert!(peek.get("running").is_none(), "{peek}");

    // While `sleep` runs: the command, and for how long (which grows).
    pi.prompt("STEP-SLEEP").await?;
    let first = eventually(LONG, "a peek of the running sleep", || {
        let p = core.cli_json(&["peek", "peeker"]).ok()?;
        (p["running"]["args"] == "sleep 6" && p["status"] == "tool:bash").then_some(p)
    })
    .await
    .with_context(|| core.log())?;
    assert_eq!(first["running"]["tool"], "bash", "{first}");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let out = core.cli(&["peek", "peeker"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let later: Value = core.cli_json(&["peek", "peeker"])?;
    let (was, now) = (ms(&first), ms(&later));
    assert!(now >= was + 2000, "{was} then {now}");
    assert!(text.starts_with("peeker: running bash for "), "{text}");
    assert!(text.contains("\n  bash: sleep 6\n"), "{text}");

    // Over: nothing runs.
    pi.wait_settled(LONG).await?;
    let done = eventually(LONG, "an idle peek", || {
        let p = core.cli_json(&["peek", "peeker"]).ok()?;
        (p["status"] == "idle").then_some(p)
    })
    .await?;
    assert!(done.get("running").is_none(), "{done}");

    // No such session: refused, saying how to list them.
    let out = core.cli(&["peek", "nobody-here"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("no session matches \"nobody-here\""), "{err}");

    // A diff of a session outside any repository: refused, saying so.
    let out = core.cli(&["diff", "peeker"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("no diff of peeker") && err.contains("is not in a git repository"),
        "{err}"
    );
    pi.shutdown().await?;
    Ok(())
}

fn ms(peek: &Value) -> u64 {
    peek["status_for_ms"].as_u64().unwrap_or(0)
}
