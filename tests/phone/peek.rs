//! `/peek` (Matrix `!peek`) on both phones, with a REAL Pi whose scripted model runs a
//! `sleep`: written in the session's topic or thread, the peek names the command and how
//! long it has run; its refresh (Telegram's button, Matrix's 🔄 reaction) edits it in place
//! with a later time; `/status` there names the running command too.

use std::time::Duration;

use anyhow::{Context, Result};
use shepherd_harness::Core;
use shepherd_harness::fake_model::{FakeModel, bash_steps};
use shepherd_harness::phone::{MatrixPhone, Phone, TelegramPhone};
use shepherd_harness::pi_process::{PiOptions, PiSession};
use shepherd_harness::synapse::skip_e2e;

const LONG: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_telegram_peek_names_the_running_command_and_refreshes_in_place() -> Result<()> {
    peek_on(TelegramPhone::start().await?).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_matrix_peek_names_the_running_command_and_refreshes_in_place() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    peek_on(MatrixPhone::start().await?).await
}

async fn peek_on(mut phone: impl Phone) -> Result<()> {
    let core = Core::start_for(&phone, &[]).await?;
    phone.ready().await?;
    let model =
        FakeModel::start(bash_steps(vec![("STEP-SLEEP".into(), "sleep 12".into())])).await?;
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some("sleeper".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    core.connected_session("sleeper", LONG).await?;
    let place = phone.place_of("sleeper").await?;
    let p = phone.prefix();

    pi.prompt("STEP-SLEEP").await?;
    shepherd_harness::eventually(LONG, "the sleep to run", || {
        let peek = core.cli_json(&["peek", "sleeper"]).ok()?;
        (peek["running"]["args"] == "sleep 12" && peek["status"] == "tool:bash").then_some(())
    })
    .await
    .with_context(|| core.log())?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    phone.type_in(&place, &format!("{p}peek")).await?;
    let peek = phone
        .bot_says(|m| m.text.starts_with("👀 sleeper: running bash for "))
        .await
        .with_context(|| core.log())?;
    assert_eq!(phone.thread_of(&peek), place, "in the session's place");
    assert!(peek.text.contains("bash:\nsleep 12"), "{}", peek.text);
    let seconds = |text: &str| -> u64 {
        let after = text.split("running bash for ").nth(1).unwrap_or("");
        after
            .split('s')
            .next()
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    };
    let first = seconds(&peek.text);
    assert!(first >= 1, "{}", peek.text);

    // Refreshed in place, later.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    phone.refresh(&peek).await?;
    let again = phone
        .bot_says(|m| m.id == peek.id && m.edited && seconds(&m.text) >= first + 2)
        .await?;
    assert!(again.text.contains("sleep 12"), "{}", again.text);

    // `/status` in the place names the command and how long it runs.
    phone.type_in(&place, &format!("{p}status")).await?;
    let status = phone
        .bot_says(|m| phone.thread_of(m) == place && m.text.contains("now: running bash for "))
        .await?;
    assert!(status.text.contains(": sleep 12"), "{}", status.text);

    // No session here and none named: the usage, not silence.
    phone.command("peek").await?;
    phone
        .bot_says(|m| m.text.contains("Which session?") && m.text.contains("peek"))
        .await?;
    pi.wait_settled(LONG).await?;
    pi.shutdown().await?;
    Ok(())
}
