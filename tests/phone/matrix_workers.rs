//! Managed workers on Matrix, end to end: the real `shepherd up` (core + bridge) against a
//! real Synapse with a matrix-sdk client playing the human, the owner a harness client
//! registered as a Pi session (a Lead), and its workers REAL Pi processes the core
//! launches (headless, the scripted fake model). One core for the whole scenario:
//!
//! - a Lead's worker's `ask_owner` shows as a card in the owner's thread once it has
//!   waited `workers.ask_card_after_secs` (1 s here), tagged `→ owner boss · worker
//!   asker`; a reply to the card answers it: the worker goes on to its result, the owner
//!   gets a notice naming the human and the result once;
//! - the finished worker is said once in the owner's thread, with its task's start;
//! - `!workers`: the owner's heading, then a line per worker with label, definition,
//!   state, age and its own tokens and cost; a reply to a worker's line steers it (its
//!   next model turn sees the text, its result follows); `!close` in reply to a line
//!   closes that worker;
//! - a worker killed (-9) before its result is said `lost` once in the owner's thread.

use std::time::Duration;

use crate::workers_phone::{
    delegate, listed, lose_a_worker, model, next_of_kind, owner, report_after, usage_shown,
    wait_state, wait_usage_written, worker_core,
};
use anyhow::{Context, Result};
use shepherd_core::protocol::{DeliveryKind, WorkerState};
use shepherd_harness::matrix_user::{MatrixUser, Message};
use shepherd_harness::synapse::{Synapse, skip_e2e};

const WAIT: Duration = Duration::from_secs(60);
const BOT: &str = "@bot:localhost";
const ADA: &str = "@ada:localhost";

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
async fn workers_on_matrix_list_steer_close_ask_and_finish() -> Result<()> {
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
    let core = worker_core(
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

    let mut boss = owner(&core, "mw-boss", "boss").await?;
    let boss_thread = thread_of(
        &bot_says(&ada, &room, |m| {
            m.body().contains("▶️ boss") && m.body().contains("started")
        })
        .await?,
    );

    // A Lead's worker asks: after a second its card shows in the owner's thread.
    let asker = delegate(&mut boss, "TASK-B pick a colour", "asker").await?;
    let asked = next_of_kind(&mut boss, DeliveryKind::AgentAsk).await?;
    let asked_at = std::time::Instant::now();
    boss.ack(&[asked.id]).await?;
    let card = bot_says(&ada, &room, |m| {
        m.edits == 0 && m.body().contains("Which colour, red or blue?")
    })
    .await
    .with_context(|| core.log())?;
    // Not at once: the card waits `ask_card_after_secs` (1 s from the ask, which the
    // owner's delivery followed).
    let waited = asked_at.elapsed();
    assert!(
        waited >= Duration::from_millis(500),
        "shown after {waited:?}"
    );
    assert_eq!(thread_of(&card), boss_thread);
    assert!(
        card.body().contains("→ owner boss · worker asker"),
        "{}",
        card.body()
    );

    // Ada replies to the card: the worker goes on; the owner is told and gets the result.
    ada.send_reply(&room, &card.event_id, "blue").await?;
    let notice = next_of_kind(&mut boss, DeliveryKind::Notice).await?;
    assert!(
        notice.text.contains("matrix:@ada:localhost"),
        "{}",
        notice.text
    );
    boss.ack(&[notice.id]).await?;
    let result = next_of_kind(&mut boss, DeliveryKind::AgentResult).await?;
    assert!(
        result.text.ends_with("RESULT-B the colour is blue"),
        "{}",
        result.text
    );
    boss.ack(&[result.id]).await?;
    wait_state(&core, asker.id, WorkerState::Done).await?;

    // Its ending is said once in the owner's thread.
    let finished = bot_says(&ada, &room, |m| {
        m.body().contains("🧩 asker (implementer) finished")
    })
    .await?;
    assert_eq!(finished.thread_root(), Some(boss_thread.as_str()));
    assert!(
        finished.body().contains("task: TASK-B pick a colour"),
        "{}",
        finished.body()
    );
    assert!(!finished.body().contains("RESULT-B"), "the result is mail");

    // Two workers at work: one long, one that the phone will steer.
    let sleeper = delegate(&mut boss, "TASK-E wait a long time", "sleeper").await?;
    wait_usage_written(&core, sleeper.id).await?;
    let steered = delegate(&mut boss, "TASK-S wait a little", "steered").await?;
    wait_state(&core, steered.id, WorkerState::Working).await?;

    ada.send_text(&room, "!workers").await?;
    bot_says(&ada, &room, |m| {
        m.body().contains("Workers: 2 live workers under 1 owner")
    })
    .await?;
    bot_says(&ada, &room, |m| m.body().contains("👤 boss · 2 workers")).await?;
    let sleeper_line = bot_says(&ada, &room, |m| {
        m.body().contains("sleeper (implementer) · working")
    })
    .await?;
    let steered_line =
        bot_says(&ada, &room, |m| m.body().contains("steered (implementer)")).await?;
    assert_eq!(sleeper_line.thread_root(), None, "in the main timeline");
    let spent = usage_shown(&core, &listed(&core, sleeper.id)?)?;
    assert!(
        sleeper_line.body().contains(&spent),
        "{} lacks {spent}",
        sleeper_line.body()
    );

    // A reply to a worker's line steers it: its next turn sees it, and its result follows.
    ada.send_reply(&room, &steered_line.event_id, "STEER-NOW stop waiting")
        .await?;
    bot_says(&ada, &room, |m| {
        m.body().contains("➡️ steered worker steered")
    })
    .await?;
    let result = next_of_kind(&mut boss, DeliveryKind::AgentResult).await?;
    assert!(
        result.text.contains("agent=steered")
            && result.text.ends_with("RESULT-S steered from the phone"),
        "{}",
        result.text
    );
    boss.ack(&[result.id]).await?;

    // `!close` in reply to the sleeper's line closes it.
    ada.send_reply(&room, &sleeper_line.event_id, "!close")
        .await?;
    bot_says(&ada, &room, |m| m.body().contains("closed worker sleeper")).await?;
    wait_state(&core, sleeper.id, WorkerState::Closed).await?;
    wait_state(&core, steered.id, WorkerState::Done).await?;

    // Each finished worker was said once; the closed one not at all.
    bot_says(&ada, &room, |m| {
        m.body().contains("🧩 steered (implementer) finished")
    })
    .await?;
    report_after(&core, &mut boss, &[&asker, &steered, &sleeper], "MARKER-1").await?;
    bot_says(&ada, &room, |m| m.body().contains("MARKER-1")).await?;
    let said = |what: &str| {
        ada.messages(&room)
            .iter()
            .filter(|m| m.sender == BOT && m.body().contains(what))
            .count()
    };
    assert_eq!(said("🧩 asker (implementer) finished"), 1);
    assert_eq!(said("🧩 steered (implementer) finished"), 1);
    assert_eq!(said("🧩 sleeper (implementer) finished"), 0);

    // A worker whose process dies before its result: said once in the owner's thread.
    let lostling = lose_a_worker(&core, &mut boss, "lostling").await?;
    let lost = bot_says(&ada, &room, |m| {
        m.body().contains("🧩 lostling (implementer) lost: ")
    })
    .await?;
    assert_eq!(lost.thread_root(), Some(boss_thread.as_str()));
    report_after(&core, &mut boss, &[&lostling], "MARKER-2").await?;
    bot_says(&ada, &room, |m| m.body().contains("MARKER-2")).await?;
    assert_eq!(said("🧩 lostling (implementer) lost"), 1);
    Ok(())
}
