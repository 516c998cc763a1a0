//! `per_project` places, on both phones (`[telegram] topics`, `[matrix] threads`): the
//! sessions working in one repository share its topic or thread (named after the
//! repository on Telegram), a session in another repository gets that one's; text typed
//! in a shared place with several sessions connected asks which one (nothing is sent),
//! a reply to a session's message there steers that session, and once only one is
//! connected typed text steers it; a session that ends says so there without closing
//! the place the others still use. With the core stopped, a REAL Pi of the repository
//! quitting is said once in the shared place after the core starts (not again after
//! another restart, never the one still running), and its return says it is back.

use std::time::Duration;

use anyhow::{Context, Result};
use shepherd_core::protocol::DeliveryKind;
use shepherd_harness::fake_model::{FakeModel, Reply};
use shepherd_harness::git_repo::{git, repo_with_worktree};
use shepherd_harness::phone::{MatrixPhone, Phone, TelegramPhone};
use shepherd_harness::synapse::skip_e2e;
use shepherd_harness::{Core, Pi};

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_telegram_sessions_of_a_repository_share_its_topic() -> Result<()> {
    per_project_on(TelegramPhone::start().await?, "SHEPHERD_TELEGRAM__TOPICS").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_matrix_sessions_of_a_repository_share_its_thread() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    per_project_on(MatrixPhone::start().await?, "SHEPHERD_MATRIX__THREADS").await
}

async fn per_project_on(mut phone: impl Phone, setting: &str) -> Result<()> {
    let core = Core::start_for(&phone, &[(setting, "per_project")]).await?;
    phone.ready().await?;
    let dir = tempfile::tempdir()?;
    let (app, feat) = repo_with_worktree(dir.path(), "app", "feat")?;
    let web = dir.path().join("web");
    std::fs::create_dir_all(&web)?;
    git(&web, &["init", "-q"])?;
    let socket = core.socket();
    let id = |n: &str| format!("01a2483c-0000-7000-8000-0000000{n}");
    let alpha = Pi::register(&socket, &id("0a11a"), "alpha", &app).await?;
    let alpha_started = phone
        .bot_says(|m| m.text.contains("▶️ alpha") && m.text.contains("started"))
        .await
        .with_context(|| core.log())?;
    let a_place = phone.thread_of(&alpha_started);
    let mut beta = Pi::register(&socket, &id("0be1a"), "beta", &feat).await?;
    let beta_started = phone
        .bot_says(|m| m.text.contains("▶️ beta") && m.text.contains("started"))
        .await?;
    assert_eq!(phone.thread_of(&beta_started), a_place, "one place for app");
    let mut gamma = Pi::register(&socket, &id("0ca11"), "gamma", &web).await?;
    let gamma_started = phone
        .bot_says(|m| m.text.contains("▶️ gamma") && m.text.contains("started"))
        .await?;
    let g_place = phone.thread_of(&gamma_started);
    assert_ne!(g_place, a_place, "web has its own place");
    if phone.names_places() {
        let names = phone.place_names();
        assert!(
            names.iter().any(|n| n == "app") && names.iter().any(|n| n == "web"),
            "{names:?}"
        );
        assert!(
            !names
                .iter()
                .any(|n| n.contains("alpha") || n.contains("beta")),
            "{names:?}"
        );
    }

    // Typed in app's place with two sessions there: which one? Nothing is sent.
    let p = phone.prefix();
    phone.type_in(&a_place, "run the tests").await?;
    let which = phone
        .bot_says(|m| m.text.starts_with("2 sessions work in app (alpha, beta)"))
        .await
        .with_context(|| core.log())?;
    assert!(which.text.contains(&format!("{p}steer")), "{}", which.text);
    // A reply to beta's message steers beta.
    phone.reply(&beta_started, "run the tests").await?;
    let steer = beta.next_delivery(WAIT).await?;
    assert_eq!(
        (steer.kind, steer.text.as_str()),
        (DeliveryKind::Steer, "run the tests")
    );
    beta.ack(&[steer.id]).await?;
    // Typed in web's place: its one session.
    phone.type_in(&g_place, "update the styles").await?;
    let steer = gamma.next_delivery(WAIT).await?;
    assert_eq!(steer.text, "update the styles");
    gamma.ack(&[steer.id]).await?;

    // alpha goes: said in app's place, which stays open for beta, who now gets typed text.
    drop(alpha);
    let gone = phone
        .bot_says(|m| m.text.contains("alpha") && (m.text.contains("💥") || m.text.contains("⏹")))
        .await
        .with_context(|| core.log())?;
    assert_eq!(phone.thread_of(&gone), a_place);
    assert_ne!(
        phone.place_closed(&a_place),
        Some(true),
        "the place stays open"
    );
    phone.type_in(&a_place, "and the linter").await?;
    let steer = beta.next_delivery(WAIT).await.with_context(|| core.log())?;
    assert_eq!(steer.text, "and the linter");
    beta.ack(&[steer.id]).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_telegram_a_repository_session_quitting_while_the_core_is_down_is_said_once()
-> Result<()> {
    quits_while_down_on(TelegramPhone::start().await?, "SHEPHERD_TELEGRAM__TOPICS").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_matrix_a_repository_session_quitting_while_the_core_is_down_is_said_once() -> Result<()>
{
    if skip_e2e() {
        return Ok(());
    }
    quits_while_down_on(MatrixPhone::start().await?, "SHEPHERD_MATRIX__THREADS").await
}

async fn quits_while_down_on(mut phone: impl Phone, setting: &str) -> Result<()> {
    let mut core = Core::start_for(&phone, &[(setting, "per_project")]).await?;
    phone.ready().await?;
    let dir = tempfile::tempdir()?;
    let (app, _) = repo_with_worktree(dir.path(), "app", "feat")?;
    let model = FakeModel::start(|_| Reply::text("ok")).await?;
    let (quitter, stayer, quitter_id) =
        crate::sessions::quitter_and_stayer(&core, &model, Some(&app)).await?;
    let started = phone
        .bot_says(|m| m.text.contains("▶️ quitter") && m.text.contains("started"))
        .await?;
    let place = phone.thread_of(&started);

    core.terminate()?;
    quitter.shutdown().await?;
    core.restart().await?;
    phone.bridge_back(|| core.log(), 2).await?;
    let said = phone
        .bot_says(|m| {
            m.text.contains("quitter") && m.text.contains("ended while shepherd was away")
        })
        .await
        .with_context(|| core.log())?;
    assert_eq!(phone.thread_of(&said), place, "in the repository's place");
    assert_ne!(phone.place_closed(&place), Some(true), "it stays open");
    core.connected_session("stayer", WAIT).await?;

    // Another restart says it again nowhere; the stayer never ended.
    core.restart().await?;
    phone.bridge_back(|| core.log(), 3).await?;
    core.connected_session("stayer", WAIT).await?;
    phone
        .type_in(&place, "MARKER-after the second restart")
        .await?;
    phone
        .bot_says(|m| m.text.contains("MARKER") || m.text.contains("steered stayer"))
        .await?;
    assert_eq!(
        phone.count_said("ended while shepherd was away"),
        1,
        "said once, of the quitter"
    );
    let stayer_ended = phone
        .all_said()
        .iter()
        .filter(|m| m.text.contains("stayer") && m.text.contains("ended"))
        .count();
    assert_eq!(stayer_ended, 0, "the stayer never ended");

    // It comes back: said in the shared place.
    let _back = Pi::register(&core.socket(), &quitter_id, "quitter", &app).await?;
    phone
        .bot_says(|m| {
            phone.thread_of(m) == place && m.text.contains("quitter") && m.text.contains("is back")
        })
        .await
        .with_context(|| core.log())?;
    stayer.shutdown().await?;
    Ok(())
}
