//! Approvals with a REAL Pi: the core's `[approvals]` asks for `touch …` commands; the
//! scripted model runs one per prompt. A held call does not run until `shepherd approve`
//! (its file absent before, present once after); `shepherd deny` with a reason blocks it
//! and the model's tool result carries the reason; an allow for the session lets the next
//! matching call through with no new approval; with the core stopped, a call is blocked
//! saying why (fail closed: the policy is on).

use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;
use shepherd_harness::fake_model::{FakeModel, bash_steps};
use shepherd_harness::pi_process::{PiOptions, PiSession};
use shepherd_harness::{Core, eventually};

const LONG: Duration = Duration::from_secs(60);

const POLICY: &str = r#"
[approvals]
[[approvals.rules]]
tool = "bash"
match = "touch *"
decision = "ask"
[[approvals.rules]]
tool = "bash"
match = "tee *"
decision = "ask"
"#;

/// The pending approvals as the CLI lists them, once there are `n`.
async fn pending(core: &Core, n: usize) -> Result<Vec<Value>> {
    eventually(LONG, "approvals pending", || {
        let list = core.cli_json(&["approvals"]).ok()?;
        let list = list.as_array()?.clone();
        (list.len() == n).then_some(list)
    })
    .await
}

fn run(core: &Core, args: &[&str]) -> Result<()> {
    let out = core.cli(args);
    anyhow::ensure!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

#[tokio::test]
async fn a_held_call_runs_only_once_approved_and_a_denial_reaches_the_model() -> Result<()> {
    let config = tempfile::NamedTempFile::new()?;
    std::fs::write(config.path(), POLICY)?;
    let mut core =
        Core::start_with(&[("SHEPHERD_CONFIG", &config.path().display().to_string())]).await?;
    let files = tempfile::tempdir()?;
    // From the fifth step on, a command another rule asks about (the session's allow
    // covers the first rule by then).
    let steps = (1..=7)
        .map(|n| {
            let verb = if n >= 5 { "tee" } else { "touch" };
            let file = files.path().join(format!("file-{n}"));
            (
                format!("STEP-{n}"),
                format!("{verb} {} < /dev/null", file.display()),
            )
        })
        .collect();
    let model = FakeModel::start(bash_steps(steps)).await?;
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some("toucher".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    core.connected_session("toucher", LONG).await?;
    let file = |n: u32| files.path().join(format!("file-{n}"));

    // Held until approved: the file appears only after `shepherd approve`.
    pi.prompt("STEP-1").await?;
    let held = pending(&core, 1).await?;
    assert_eq!(held[0]["tool"], "bash");
    assert!(
        held[0]["subject"]
            .as_str()
            .unwrap_or("")
            .starts_with("touch "),
        "{}",
        held[0]
    );
    assert_eq!(held[0]["session_name"], "toucher");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !file(1).exists(),
        "the held call ran before it was approved"
    );
    run(&core, &["approve", &held[0]["id"].to_string()])?;
    pi.wait_settled(LONG).await?;
    assert!(file(1).exists(), "the approved call did not run");

    // Denied with a reason: never runs; the model reads the reason.
    let asked = model.requests().len();
    pi.prompt("STEP-2").await?;
    let held = pending(&core, 1).await?;
    run(
        &core,
        &["deny", &held[0]["id"].to_string(), "not", "that", "file"],
    )?;
    pi.wait_settled(LONG).await?;
    assert!(!file(2).exists(), "the denied call ran");
    let seen = model.requests()[asked..]
        .iter()
        .any(|r| r.transcript().contains("Denied by cli: not that file"));
    assert!(seen, "the model never read the denial");

    // Allowed for the session: the next matching call needs no approval.
    pi.prompt("STEP-3").await?;
    let held = pending(&core, 1).await?;
    run(&core, &["approve", &held[0]["id"].to_string(), "--session"])?;
    pi.wait_settled(LONG).await?;
    assert!(file(3).exists());
    pi.prompt("STEP-4").await?;
    pi.wait_settled(LONG).await?;
    assert!(
        file(4).exists(),
        "the session's allow did not cover the next call"
    );
    let all = core.cli_json(&["approvals", "--all"])?;
    assert_eq!(all.as_array().map(Vec::len), Some(3), "{all}");

    // Held across a kill -9 of the core: the extension asks again for the same call once it
    // is back, finds the same approval, and the call runs once it is approved.
    pi.prompt("STEP-5").await?;
    let held = pending(&core, 1).await?;
    core.kill9();
    core.restart().await?;
    core.connected_session("toucher", LONG).await?;
    let again = pending(&core, 1).await?;
    assert_eq!(again[0]["id"], held[0]["id"], "asked twice");
    run(&core, &["approve", &held[0]["id"].to_string()])?;
    pi.wait_settled(LONG).await?;
    assert!(
        file(5).exists(),
        "the call approved after the restart did not run"
    );
    let all = core.cli_json(&["approvals", "--all"])?;
    assert_eq!(all.as_array().map(Vec::len), Some(4), "{all}");

    // The run stopped while its call waits (`shepherd stop`): the approval is withdrawn,
    // the call never runs, and a late decision is told it no longer waits.
    pi.prompt("STEP-6").await?;
    let held = pending(&core, 1).await?;
    run(&core, &["stop", "toucher"])?;
    let id = held[0]["id"].to_string();
    eventually(LONG, "the approval withdrawn", || {
        let all = core.cli_json(&["approvals", "--all"]).ok()?;
        let row = all
            .as_array()?
            .iter()
            .find(|a| a["id"] == held[0]["id"])?
            .clone();
        (row["state"] == "withdrawn").then_some(())
    })
    .await?;
    pi.wait_settled(LONG).await?;
    assert!(!file(6).exists(), "the withdrawn call ran");
    let late = core.cli(&["approve", &id]);
    assert!(
        String::from_utf8_lossy(&late.stderr).contains("no longer waiting: withdrawn"),
        "{late:?}"
    );

    // The core stopped: the policy is on, so the call is blocked, saying why.
    core.terminate()?;
    let asked = model.requests().len();
    pi.prompt("STEP-7").await?;
    pi.wait_settled(LONG).await?;
    assert!(
        !file(7).exists(),
        "a call ran while the policy could not rule on it"
    );
    let blocked = model.requests()[asked..]
        .iter()
        .any(|r| r.transcript().contains("could not rule on this call"));
    assert!(blocked, "the model was not told why the call was blocked");
    pi.shutdown().await.context("pi shutdown")?;
    Ok(())
}

/// A managed worker's held call: its owner is told (a notice naming the approval) and
/// decides it with `approve_agent`; the call runs, the worker's result follows, and the
/// human's late decision is refused naming the owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workers_held_call_is_decided_by_its_owner() -> Result<()> {
    use shepherd_core::protocol::{DeliveryKind, WorkerState, requests};
    use shepherd_harness::workers::{next_of_kind, owner, wait_state, worker_core_with};

    let config = tempfile::NamedTempFile::new()?;
    std::fs::write(config.path(), POLICY)?;
    let config_path = config.path().display().to_string();
    let files = tempfile::tempdir()?;
    let marker = files.path().join("made-by-worker");
    let model = FakeModel::start(bash_steps(vec![(
        "TASK-T".into(),
        format!("touch {}", marker.display()),
    )]))
    .await?;
    let core = worker_core_with(&model, "headless", &[("SHEPHERD_CONFIG", &config_path)]).await?;
    let mut boss = owner(&core, "0193a5c2-0000-7000-8000-00000000b055", "boss").await?;
    let w = boss
        .client
        .call(requests::DelegateAgent {
            definition: "implementer".into(),
            task: "TASK-T make the marker".into(),
            label: Some("maker".into()),
            ..Default::default()
        })
        .await?;
    let notice = next_of_kind(&mut boss, DeliveryKind::Notice).await?;
    boss.ack(&[notice.id]).await?;
    assert!(
        notice.text.contains("Your worker maker") && notice.text.contains("approve_agent"),
        "{}",
        notice.text
    );
    let pending = core.cli_json(&["approvals"])?;
    let id = pending[0]["id"].as_u64().context("a pending approval")?;
    assert!(
        notice.text.contains(&format!("approval #{id}")),
        "{}",
        notice.text
    );
    assert!(!marker.exists(), "the worker's held call ran");
    let decided = boss
        .client
        .call(requests::ApproveAgent {
            agent: "maker".into(),
            approval: id.into(),
            allow: true,
            ..Default::default()
        })
        .await?;
    assert_eq!(decided.decided_by.as_deref(), Some("owner boss"));
    let result = next_of_kind(&mut boss, DeliveryKind::AgentResult).await?;
    boss.ack(&[result.id]).await?;
    assert!(result.text.contains("TOOL-SAID"), "{}", result.text);
    assert!(marker.exists(), "the approved call did not run");
    wait_state(&core, w.id, WorkerState::Done).await?;
    let late = core.cli(&["deny", &id.to_string()]);
    assert!(
        String::from_utf8_lossy(&late.stderr).contains("no longer waiting: allowed by owner boss"),
        "{late:?}"
    );
    Ok(())
}
