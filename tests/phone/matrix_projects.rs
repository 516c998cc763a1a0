//! Project work on Matrix, end to end: the real `shepherd up` (core + bridge) against a
//! real Synapse with a matrix-sdk client playing the human, a temp repository `app`, its
//! Manager a harness client registered in the primary checkout (holding the Manager
//! lease), and its Lead a REAL Pi process the core launches in the assignment's worktree
//! (headless, the scripted fake model). One core for the whole scenario:
//!
//! - the Manager delegates `feat/a`; the Lead commits and ends its turn: the update is
//!   posted once in the Manager's thread, tagged `app@feat/a`, with its text, and the
//!   Manager gets it as mail; a reply to it steers the Manager;
//! - `!projects` lists the repository, its Manager and the assignment (state, Lead state,
//!   1 ahead / 0 behind, the last update's first line, tokens and cost);
//! - the Manager asks to integrate: the approval card (question, commits, approve/deny
//!   reactions) is in the Manager's thread; a reply typed to it denies it with that reason
//!   (the Manager is told, `main` is unchanged); asked again, the 1️⃣ (approve) reaction
//!   fast-forwards `main` to the branch's tip (checked with git2) and the retirement is
//!   said in the thread;
//! - the Manager stops the Lead and resumes it: `paused`, `active again` and its Lead
//!   running are said in the thread;
//! - of the assignment's changes only the delegation, the pause, the resumption, its Lead
//!   running (twice) and its retirement are said, once each.

use std::time::Duration;

use crate::projects_phone::{
    COMMIT, UPDATE, delegate, integrate, manager, model, next_of_kind, project_core, repo,
    resume_work, stop_lead, tip, wait_committed,
};
use anyhow::{Context, Result};
use shepherd_core::protocol::{AssignmentState, DeliveryKind, IntegrationStatus};
use shepherd_harness::matrix_user::{MatrixUser, Message};
use shepherd_harness::synapse::{Synapse, skip_e2e};

const WAIT: Duration = Duration::from_secs(60);
const BOT: &str = "@bot:localhost";
const ADA: &str = "@ada:localhost";
const KEY1: &str = "1\u{fe0f}\u{20e3}";
const KEY2: &str = "2\u{fe0f}\u{20e3}";

/// Wait for a message from the bot for which `pred` holds.
async fn bot_says(
    ada: &MatrixUser,
    room: &str,
    pred: impl Fn(&Message) -> bool,
) -> Result<Message> {
    ada.wait_for_message(room, WAIT, |m| m.sender == BOT && pred(m))
        .await
}

fn thread_of(m: &Message) -> String {
    m.thread_root().unwrap_or(&m.event_id).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_work_on_matrix_lists_updates_and_approves() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    let synapse = Synapse::start().await?;
    synapse.register("bot", "bot-password", false).await?;
    synapse.register("ada", "ada-password", false).await?;
    let ada = MatrixUser::login(&synapse.url(), "ada", "ada-password").await?;
    let url = synapse.url();
    let allowed = format!("[\"{ADA}\"]");
    let model = model().await?;
    let core = project_core(
        &model,
        &[
            ("SHEPHERD_MATRIX__HOMESERVER", url.as_str()),
            ("SHEPHERD_MATRIX__USER_ID", BOT),
            ("SHEPHERD_MATRIX_PASSWORD", "bot-password"),
            ("SHEPHERD_MATRIX__ALLOWED_USERS", allowed.as_str()),
        ],
    )
    .await?;
    let room = ada.accept_invite(None, WAIT).await?;
    ada.wait_for_member(&room, BOT, WAIT).await?;
    let repo = repo(&core, "app")?;
    let main_before = tip(&repo, "main")?;

    // The Manager's thread: its start, then its role said in it.
    let mut mgr = manager(&core, &repo, "mp-manager").await?;
    let line = bot_says(&ada, &room, |m| {
        m.body().contains("app-manager is now the manager of app")
    })
    .await?;
    let mgr_thread = thread_of(&line);

    // Delegated: the Lead commits and ends its turn; its update is said once, tagged, in
    // the Manager's thread, and mailed to the Manager.
    let assignment = delegate(&mut mgr, "TASK-A add a file", "feat/a").await?;
    assert_eq!(assignment.branch, "feat/a");
    let sha = wait_committed(&repo, "feat/a").await?;
    let mail = next_of_kind(&mut mgr, DeliveryKind::AssignmentUpdate)
        .await
        .with_context(|| core.log())?;
    assert!(mail.text.contains(UPDATE), "{}", mail.text);
    mgr.ack(&[mail.id]).await?;
    let update = bot_says(&ada, &room, |m| {
        m.body().contains("📬 app@feat/a · update from the Lead")
    })
    .await
    .with_context(|| core.log())?;
    assert_eq!(thread_of(&update), mgr_thread, "{}", update.body());
    assert!(update.body().contains(UPDATE), "{}", update.body());
    assert!(update.body().contains(&sha[..7]), "{}", update.body());

    // A reply to the update steers the Manager.
    ada.send_reply(&room, &update.event_id, "integrate it once it is green")
        .await?;
    let steer = next_of_kind(&mut mgr, DeliveryKind::Steer).await?;
    assert_eq!(steer.text, "integrate it once it is green");
    mgr.ack(&[steer.id]).await?;

    // !projects: the repository, its Manager, the assignment with its numbers.
    ada.send_text(&room, "!projects").await?;
    let list = bot_says(&ada, &room, |m| {
        m.body().contains("Projects: 1 repository, 1 assignment")
    })
    .await?;
    for part in [
        "🗂 app · primary main · 🧭 manager app-manager",
        "app@feat/a · active · Lead running · 1 ahead, 0 behind",
        " tokens · $",
        "last update ",
        UPDATE,
    ] {
        assert!(
            list.body().contains(part),
            "{part:?} not in {}",
            list.body()
        );
    }

    // Stopped, then resumed: one line each in the Manager's thread, then its Lead running.
    let paused = stop_lead(&mut mgr, "feat/a").await?;
    assert_eq!(paused.state, AssignmentState::Paused);
    let line = bot_says(&ada, &room, |m| {
        m.body().contains("⏸️ app@feat/a paused: Lead stopped")
    })
    .await?;
    assert_eq!(thread_of(&line), mgr_thread);
    // Its session is gone (said in the Lead's own thread) before it is resumed.
    bot_says(&ada, &room, |m| {
        m.body().contains("⏹ app@feat/a (app@feat/a) closed")
    })
    .await?;
    let resumed = resume_work(&mut mgr, "feat/a").await?;
    assert_eq!(
        resumed.session_id, assignment.session_id,
        "the same session"
    );
    let line = bot_says(&ada, &room, |m| {
        m.body().contains("app@feat/a active again: Lead ")
    })
    .await?;
    assert_eq!(thread_of(&line), mgr_thread);
    let deadline = tokio::time::Instant::now() + WAIT;
    while ada
        .messages(&room)
        .iter()
        .filter(|m| m.sender == BOT && m.body().contains("🟢 app@feat/a: Lead running"))
        .count()
        < 2
    {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the resumed Lead never ran:\n{}",
            core.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The Manager asks to integrate: the approval card is in its thread, with the two
    // options as reactions.
    let asked = integrate(&mut mgr, "feat/a", &sha).await?;
    assert_eq!(asked.status, IntegrationStatus::AwaitingApproval);
    let card = bot_says(&ada, &room, |m| {
        m.edits == 0 && m.body().contains("Integrate app@feat/a into main at")
    })
    .await
    .with_context(|| core.log())?;
    assert_eq!(thread_of(&card), mgr_thread);
    assert!(card.body().contains(&sha[..7]), "{}", card.body());
    assert!(card.body().contains(COMMIT), "the commits: {}", card.body());
    assert!(card.body().contains("1. approve"), "{}", card.body());
    assert!(card.body().contains("2. deny"), "{}", card.body());
    ada.wait_for_message(&room, WAIT, |m| {
        m.event_id == card.event_id
            && m.reaction_keys_by(BOT).contains(&KEY1)
            && m.reaction_keys_by(BOT).contains(&KEY2)
    })
    .await?;

    // A reply typed to the card denies it with that reason; main is unchanged.
    ada.send_reply(&room, &card.event_id, "not yet: add a test first")
        .await?;
    let outcome = next_of_kind(&mut mgr, DeliveryKind::Integration).await?;
    assert!(
        outcome.text.contains("not yet: add a test first"),
        "{}",
        outcome.text
    );
    mgr.ack(&[outcome.id]).await?;
    bot_says(&ada, &room, |m| {
        m.event_id == card.event_id && m.body().contains("not yet: add a test first")
    })
    .await?;
    assert_eq!(tip(&repo, "main")?, main_before, "denied: main unchanged");

    // Asked again and approved with 1️⃣: main is fast-forwarded to the tip.
    let asked = integrate(&mut mgr, "feat/a", &sha).await?;
    assert_eq!(asked.status, IntegrationStatus::AwaitingApproval);
    let first = card.event_id.clone();
    let card = bot_says(&ada, &room, |m| {
        m.edits == 0
            && m.body().contains("Integrate app@feat/a into main at")
            && m.event_id != first
    })
    .await?;
    ada.wait_for_message(&room, WAIT, |m| {
        m.event_id == card.event_id && m.reaction_keys_by(BOT).contains(&KEY1)
    })
    .await?;
    ada.react(&room, &card.event_id, KEY1).await?;
    let outcome = next_of_kind(&mut mgr, DeliveryKind::Integration).await?;
    mgr.ack(&[outcome.id]).await?;
    assert_eq!(tip(&repo, "main")?, sha, "approved: main fast-forwarded");
    bot_says(&ada, &room, |m| {
        m.event_id == card.event_id && m.body().contains("answered by matrix:@ada:localhost")
    })
    .await?;
    let retired = bot_says(&ada, &room, |m| {
        m.body().contains("✅ app@feat/a integrated at")
    })
    .await
    .with_context(|| core.log())?;
    assert_eq!(thread_of(&retired), mgr_thread);

    // The update was said once; of the assignment's changes, the delegation, its Lead
    // running and its retirement, once each, in the Manager's thread. Counted once a
    // report of the Manager's is posted: the bridge posts in the order of the core's
    // events, and the report comes after the retired Lead's session left the core (the
    // last thing about the assignment that could be said again).
    core.disconnected(assignment.session_id.as_str(), WAIT)
        .await
        .with_context(|| core.log())?;
    mgr.client.report("MARKER-end of the scenario").await?;
    bot_says(&ada, &room, |m| {
        m.body().contains("MARKER-end of the scenario")
    })
    .await?;
    let said = |what: &str| {
        ada.messages(&room)
            .iter()
            .filter(|m| m.sender == BOT && m.body().contains(what))
            .map(thread_of)
            .collect::<Vec<_>>()
    };
    let here = vec![mgr_thread.clone()];
    assert_eq!(said("update from the Lead"), here);
    assert_eq!(
        said("🧭 app@feat/a assigned by app-manager: Lead starting in "),
        here
    );
    assert_eq!(
        said("🟢 app@feat/a: Lead running"),
        [here.clone(), here.clone()].concat(),
        "delegated, then resumed"
    );
    assert_eq!(said("⏸️ app@feat/a paused: Lead stopped"), here);
    assert_eq!(said("✅ app@feat/a integrated at"), here);
    assert!(said("app@feat/a: Lead stopped").is_empty());
    Ok(())
}
