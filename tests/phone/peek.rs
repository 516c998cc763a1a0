//! The human's looks at one session from the phone, on both phones. `/peek` (Matrix
//! `!peek`), with a REAL Pi whose scripted model runs a `sleep`: written in the session's
//! topic or thread, the peek names the command and how long it has run; its refresh
//! (Telegram's button, Matrix's 🔄 reaction) edits it in place with a later time; `/status`
//! there names the running command too. `/diff` of a session in a linked worktree: the
//! stat, and the patch as a file that applies to a clean clone.

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

/// `/diff` in a worktree session's topic or thread: the stat in the message and the whole
/// patch as a `.diff` file that `git apply --check` accepts in a clean clone of the base;
/// `shepherd diff` prints the same patch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_telegram_diff_attaches_a_patch_that_applies_to_a_clean_clone() -> Result<()> {
    diff_on(TelegramPhone::start().await?).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_matrix_diff_attaches_a_patch_that_applies_to_a_clean_clone() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    diff_on(MatrixPhone::start().await?).await
}

async fn diff_on(mut phone: impl Phone) -> Result<()> {
    use shepherd_harness::git_repo::{git, repo_with_worktree};
    let core = Core::start_for(&phone, &[]).await?;
    phone.ready().await?;
    let dir = tempfile::tempdir()?;
    let (repo, wt) = repo_with_worktree(dir.path(), "app", "feat")?;
    std::fs::write(wt.join("login.rs"), "fn login() {}\n")?;
    git(&wt, &["add", "login.rs"])?;
    git(&wt, &["commit", "-q", "-m", "login"])?;
    std::fs::write(wt.join("README"), "x\nand more\n")?;
    std::fs::write(wt.join("notes.txt"), "untracked\n")?;
    let _pi = shepherd_harness::Pi::register(
        &core.socket(),
        "01a2483c-0000-7000-8000-00000000d1ff",
        "differ",
        &wt,
    )
    .await?;
    let place = phone.place_of("differ").await?;
    let p = phone.prefix();

    phone.type_in(&place, &format!("{p}diff")).await?;
    let said = phone
        .bot_says(|m| m.text.starts_with("🧾 differ · feat against main"))
        .await
        .with_context(|| core.log())?;
    assert_eq!(phone.thread_of(&said), place, "in the session's place");
    assert!(said.text.contains("3 files, +3 −0"), "{}", said.text);
    assert!(
        said.text.contains("login.rs") && said.text.contains("notes.txt"),
        "{}",
        said.text
    );
    let file = phone
        .bot_says(|m| m.file.as_deref() == Some("feat.diff"))
        .await?;
    assert_eq!(phone.thread_of(&file), place, "the file beside it");
    let patch = phone.file_bytes(&file).await?;

    let clone = dir.path().join("clone");
    git(
        dir.path(),
        &["clone", "-q", repo.to_str().unwrap_or_default(), "clone"],
    )?;
    let saved = dir.path().join("phone.diff");
    std::fs::write(&saved, &patch)?;
    git(
        &clone,
        &["apply", "--check", saved.to_str().unwrap_or_default()],
    )?;
    let cli = core.cli(&["diff", "differ"]);
    assert!(
        cli.status.success(),
        "{}",
        String::from_utf8_lossy(&cli.stderr)
    );
    assert_eq!(cli.stdout, patch, "the CLI prints the same patch");
    Ok(())
}
