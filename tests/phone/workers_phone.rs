//! What the phone scenario of managed workers (`workers`) needs besides the phone: the
//! workers' scripted model, a core whose workers are REAL Pi
//! processes (the pinned Pi with the checkout's extension, headless, asks shown after
//! one second: `workers.ask_card_after_secs = 1`), the owner (a harness client
//! registered as a Pi session), delegating and waiting for a worker's state.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::json;
use shepherd_core::protocol::{DeliveryKind, Worker, WorkerId, WorkerState, requests};
use shepherd_harness::fake_model::{FakeModel, ModelRequest, Reply};
use shepherd_harness::phone::Phone;
use shepherd_harness::{Core, Pi};

pub const LONG: Duration = Duration::from_secs(90);

/// What the workers' model does, by the marker in the newest user message.
pub fn worker_script(req: &ModelRequest) -> Reply {
    let (role, last) = req.last();
    if role == "tool" {
        return Reply::text(format!(
            "tool done: {}",
            last.chars().take(40).collect::<String>()
        ));
    }
    if last.contains("STEER-NOW") {
        return Reply::text("RESULT-S steered from the phone");
    }
    if last.contains("blue") {
        return Reply::text("RESULT-B the colour is blue");
    }
    if last.contains("TASK-B") {
        return Reply::tool(
            "ask_owner",
            json!({"question": "Which colour, red or blue?"}),
        );
    }
    if last.contains("TASK-S") {
        return Reply::tool("bash", json!({"command": "sleep 12"}));
    }
    if last.contains("TASK-E") {
        return Reply::tool("bash", json!({"command": "sleep 120"}));
    }
    Reply::text("nothing to do")
}

/// The scripted model, with prices so that the workers' usage has a cost.
pub async fn model() -> Result<FakeModel> {
    Ok(FakeModel::start(worker_script)
        .await?
        .with_cost(3.0, 15.0, 0.0, 0.0))
}

/// A core whose bridge serves `phone` and whose workers run headless with the pinned Pi;
/// a Lead's worker asks reach the phones after one second.
pub async fn worker_core(model: &FakeModel, phone: &impl Phone) -> Result<Core> {
    let more = [("SHEPHERD_WORKERS__ASK_CARD_AFTER_SECS", "1")];
    shepherd_harness::workers::worker_core_for(model, "headless", phone, &more).await
}

pub use shepherd_harness::workers::{listed, next_of_kind, owner, wait_state, worker_pid};

pub async fn delegate(owner: &mut Pi, task: &str, label: &str) -> Result<Worker> {
    Ok(owner
        .client
        .call(requests::DelegateAgent {
            definition: "implementer".into(),
            task: task.into(),
            label: Some(label.into()),
            ..Default::default()
        })
        .await?)
}

/// Wait until the worker's session file has a usage record (its first model reply).
pub async fn wait_usage_written(core: &Core, id: WorkerId) -> Result<()> {
    let deadline = tokio::time::Instant::now() + LONG;
    loop {
        let w = listed(core, id)?;
        if let Some(file) = &w.session_file
            && std::fs::read_to_string(file).is_ok_and(|t| t.contains("\"usage\""))
        {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("worker {id}'s session file has no usage yet");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `12,345 tokens · $0.0123` as the phone shows a worker's own usage, read from the
/// core as the CLI (`usage {session}`).
pub fn usage_shown(core: &Core, w: &Worker) -> Result<String> {
    let report = core.cli_json(&["usage", w.session_id.as_str()])?;
    let row = report["sessions"]
        .as_array()
        .context("usage lists sessions")?
        .iter()
        .find(|s| s["session_id"] == w.session_id.as_str())
        .context("the worker's row")?
        .clone();
    let tokens = row["total_tokens"].as_u64().context("total_tokens")?;
    let cost = row["cost"].as_f64().context("cost")?;
    let digits = tokens.to_string();
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    Ok(format!("{grouped} tokens · ${cost:.4}"))
}

/// Before counting what the bridge said about `workers`: wait until each one's session has
/// left the core (its state changes came before that), then have the owner report
/// `marker`. The bridge posts in the order of the core's events, so once the caller has
/// seen the marker posted, anything said about these workers is in.
pub async fn report_after(
    core: &Core,
    boss: &mut Pi,
    workers: &[&Worker],
    marker: &str,
) -> Result<()> {
    for w in workers {
        core.disconnected(w.session_id.as_str(), LONG)
            .await
            .with_context(|| core.log())?;
    }
    boss.client.report(marker).await?;
    Ok(())
}

/// A worker whose process is killed (-9) at work: the core finds it `lost`.
pub async fn lose_a_worker(core: &Core, boss: &mut Pi, label: &str) -> Result<Worker> {
    let w = delegate(boss, "TASK-E wait a long time", label).await?;
    wait_usage_written(core, w.id).await?;
    let pid = worker_pid(core, w.id)?;
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()?;
    anyhow::ensure!(status.success(), "kill -9 {pid} failed");
    let lost = wait_state(core, w.id, WorkerState::Lost).await?;
    let told = next_of_kind(boss, DeliveryKind::AgentResult).await?;
    anyhow::ensure!(
        told.text.contains(&format!("agent={label}")) && told.text.contains("status=lost"),
        "{}",
        told.text
    );
    boss.ack(&[told.id]).await?;
    Ok(lost)
}
