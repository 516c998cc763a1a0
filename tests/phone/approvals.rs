//! Held tool calls on the phones, end to end with a REAL Pi (the scripted model runs one
//! `touch` per prompt; the core's `[approvals]` asks for each): the card shows in the
//! session's place with the command and the rule; the call does not run until the human
//! decides there (its file absent before, present once after); on Telegram also a reply
//! to the card denies it with the reply as the reason the model reads, and "Allow for this
//! session" lets the next matching call through with no card. Matrix (real Synapse): the
//! same for one approval, decided by its reaction.

use std::time::Duration;

use anyhow::{Context, Result};
use shepherd_harness::Core;
use shepherd_harness::fake_model::{FakeModel, bash_steps};
use shepherd_harness::phone::{MatrixPhone, Phone, Tap, TelegramPhone};
use shepherd_harness::pi_process::{PiOptions, PiSession};
use shepherd_harness::synapse::skip_e2e;

const LONG: Duration = Duration::from_secs(60);

const POLICY: &str = r#"
[approvals]
[[approvals.rules]]
tool = "bash"
match = "touch *"
decision = "ask"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_telegram_a_held_call_is_allowed_denied_and_allowed_for_the_session() -> Result<()> {
    approvals_on(TelegramPhone::start().await?, true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_matrix_a_held_call_runs_once_its_reaction_allows_it() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    approvals_on(MatrixPhone::start().await?, false).await
}

async fn approvals_on(mut phone: impl Phone, full: bool) -> Result<()> {
    let config = tempfile::NamedTempFile::new()?;
    std::fs::write(config.path(), POLICY)?;
    let config_path = config.path().display().to_string();
    let core = Core::start_for(&phone, &[("SHEPHERD_CONFIG", &config_path)]).await?;
    phone.ready().await?;
    let files = tempfile::tempdir()?;
    let steps = (1..=4)
        .map(|n| {
            let file = files.path().join(format!("file-{n}"));
            (format!("STEP-{n}"), format!("touch {}", file.display()))
        })
        .collect();
    let model = FakeModel::start(bash_steps(steps)).await?;
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some("toucher".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    core.connected_session("toucher", LONG).await?;
    let place = phone.place_of("toucher").await?;
    let file = |n: u32| files.path().join(format!("file-{n}"));
    let card_for = |n: u32| {
        let wanted = format!("file-{n}");
        move |m: &shepherd_harness::phone::Said| {
            m.text.contains("waits for approval") && m.text.contains(&wanted) && !m.edited
        }
    };

    // The card in the session's place; the call runs only once allowed there.
    pi.prompt("STEP-1").await?;
    let card = phone
        .bot_says(card_for(1))
        .await
        .with_context(|| core.log())?;
    assert_eq!(phone.thread_of(&card), place, "in the session's place");
    assert!(card.text.contains("asked by rule 1 of"), "{}", card.text);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!file(1).exists(), "the held call ran before it was decided");
    phone.decide(&card, Tap::Once).await?;
    let by = format!("allowed once by {}", phone.human());
    phone
        .bot_says(|m| m.id == card.id && m.edited && m.text.contains(&by))
        .await?;
    pi.wait_settled(LONG).await?;
    assert!(file(1).exists(), "the allowed call did not run");
    if !full {
        pi.shutdown().await?;
        return Ok(());
    }

    // A reply to the card denies it: the reply is the reason the model reads.
    let asked = model.requests().len();
    pi.prompt("STEP-2").await?;
    let card = phone.bot_says(card_for(2)).await?;
    phone.reply(&card, "not that file").await?;
    phone
        .bot_says(|m| m.id == card.id && m.edited && m.text.contains("not that file"))
        .await?;
    pi.wait_settled(LONG).await?;
    assert!(!file(2).exists(), "the denied call ran");
    let read = model.requests()[asked..]
        .iter()
        .any(|r| r.transcript().contains("not that file"));
    assert!(read, "the model never read the reason");

    // Allowed for the session: the next matching call runs with no card.
    pi.prompt("STEP-3").await?;
    let card = phone.bot_says(card_for(3)).await?;
    phone.decide(&card, Tap::Session).await?;
    pi.wait_settled(LONG).await?;
    assert!(file(3).exists());
    pi.prompt("STEP-4").await?;
    pi.wait_settled(LONG).await?;
    assert!(
        file(4).exists(),
        "the session's allow did not cover the next call"
    );
    assert_eq!(
        phone.count_said("waits for approval"),
        3,
        "no card for the fourth"
    );
    pi.shutdown().await?;
    Ok(())
}

/// A held call on a linked host: its card reaches the home core's phone in the far
/// session's place, named `#far:1`; the button decides it on the far core, once; the home
/// CLI lists it with its host and is refused a second decision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_telegram_a_linked_hosts_held_call_is_decided_from_the_home_phone() -> Result<()> {
    let mut phone = TelegramPhone::start().await?;
    let config = tempfile::NamedTempFile::new()?;
    std::fs::write(config.path(), POLICY)?;
    let far =
        Core::start_with(&[("SHEPHERD_CONFIG", &config.path().display().to_string())]).await?;
    let (_hosts, hosts_path) = Core::hosts_config(&[("far", &far)])?;
    let home = Core::start_for(&phone, &[("SHEPHERD_CONFIG", &hosts_path)]).await?;
    phone.ready().await?;
    let files = tempfile::tempdir()?;
    let marker = files.path().join("far-file");
    let model = FakeModel::start(bash_steps(vec![(
        "STEP-FAR".into(),
        format!("touch {}", marker.display()),
    )]))
    .await?;
    let mut opts = PiOptions::new(far.agent_dir());
    opts.name = Some("far-toucher".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    far.connected_session("far-toucher", LONG).await?;
    let place = phone.place_of("far · far-toucher").await?;

    pi.prompt("STEP-FAR").await?;
    let card = phone
        .bot_says(|m| m.text.contains("waits for approval #far:") && !m.edited)
        .await
        .with_context(|| home.log())?;
    assert_eq!(phone.thread_of(&card), place, "in the far session's place");
    assert!(!marker.exists(), "the held call ran");
    let listed = home.cli_json(&["approvals"])?;
    assert_eq!(listed[0]["host"], "far", "{listed}");
    phone.decide(&card, Tap::Once).await?;
    phone
        .bot_says(|m| m.id == card.id && m.edited && m.text.contains("allowed once by"))
        .await?;
    pi.wait_settled(LONG).await?;
    assert!(marker.exists(), "the allowed call did not run");
    let id = listed[0]["id"].as_u64().context("its id")?;
    let late = home.cli(&["deny", &format!("far:{id}")]);
    assert!(
        String::from_utf8_lossy(&late.stderr).contains("no longer waiting"),
        "{late:?}"
    );
    assert_eq!(
        far.cli_json(&["approvals", "--all"])?[0]["state"],
        "allowed"
    );
    pi.shutdown().await?;
    Ok(())
}
