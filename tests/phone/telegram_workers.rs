//! Managed workers on Telegram, end to end: the real `shepherd up` (core + bridge) against
//! the strict fake Bot API in a forum, the owner a harness client registered as a Pi
//! session (a Lead), and its workers REAL Pi processes the core launches (headless, the
//! scripted fake model). One core for the whole scenario:
//!
//! - a Lead's worker's `ask_owner` shows as a card in the owner's topic once it has waited
//!   `workers.ask_card_after_secs` (1 s here), tagged `→ owner boss · worker asker`; a
//!   reply to the card answers it: the worker goes on to its result, the owner gets a
//!   notice naming the human and the result once;
//! - the finished worker is said once in the owner's topic, with its task's start;
//! - `/workers`: the owner's heading, then a line per worker with label, definition,
//!   state, age and its own tokens and cost (as the core's `usage` counts them); a reply
//!   to a worker's line steers it (its next model turn sees the text, its result follows);
//!   the line's `✖ close` button closes the worker;
//! - a worker killed (-9) before its result is said `lost` once in the owner's topic.

use std::time::Duration;

use crate::workers_phone::{
    delegate, listed, lose_a_worker, model, next_of_kind, owner, report_after, usage_shown,
    wait_state, wait_usage_written, worker_core,
};
use anyhow::{Context, Result};
use shepherd_core::protocol::{DeliveryKind, WorkerState};
use shepherd_harness::fake_telegram::{FakeTelegram, FakeTelegramOptions, FakeUser, UserMessage};

const WAIT: Duration = Duration::from_secs(60);
const ADA: i64 = 4242;
const FORUM: i64 = -1_001_234_567;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_on_telegram_list_steer_close_ask_and_finish() -> Result<()> {
    let ada = FakeUser::new(ADA, "Ada").with_username("ada");
    let opts = FakeTelegramOptions::default()
        .user(ada)
        .forum(FORUM, "shepherd")
        .no_rate_limits();
    let tg = FakeTelegram::start(opts).await?;
    let api = tg.api_url();
    let chat = FORUM.to_string();
    let model = model().await?;
    let core = worker_core(
        &model,
        &[
            ("SHEPHERD_TELEGRAM_TOKEN", tg.token()),
            ("SHEPHERD_TELEGRAM__ALLOWED_USERS", "[4242]"),
            ("SHEPHERD_TELEGRAM__CHAT_ID", &chat),
            ("SHEPHERD_TELEGRAM__API_URL", &api),
            ("SHEPHERD_TELEGRAM__LIMITS__PER_CHAT_PER_SECOND", "200"),
            ("SHEPHERD_TELEGRAM__LIMITS__PER_GROUP_PER_MINUTE", "10000"),
            ("SHEPHERD_TELEGRAM__LIMITS__GLOBAL_PER_SECOND", "200"),
        ],
    )
    .await?;
    tg.wait_for("the bridge's first long poll", WAIT, |tg| {
        tg.long_poll_waiting().then_some(())
    })
    .await?;
    let mut boss = owner(&core, "tw-boss", "boss").await?;
    let boss_topic = tg
        .wait_for("the owner's topic", WAIT, |tg| {
            tg.topics(FORUM)
                .into_iter()
                .find(|t| t.name.contains("boss"))
        })
        .await?;

    // A Lead's worker asks: after a second its card shows in the owner's topic.
    let asker = delegate(&mut boss, "TASK-B pick a colour", "asker").await?;
    let asked = next_of_kind(&mut boss, DeliveryKind::AgentAsk).await?;
    let asked_at = std::time::Instant::now();
    boss.ack(&[asked.id]).await?;
    let card = tg
        .wait_for_message(FORUM, WAIT, |m| {
            m.text.contains("Which colour, red or blue?") && m.edits.is_empty()
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
    assert_eq!(card.thread_id, Some(boss_topic.thread_id), "{}", card.text);
    assert!(
        card.text.contains("→ owner boss · worker asker"),
        "{}",
        card.text
    );

    // Ada replies to the card: the worker goes on; the owner is told and gets the result.
    tg.inject_message(UserMessage::new(FORUM, ADA, "blue").reply_to(card.message_id))?;
    let notice = next_of_kind(&mut boss, DeliveryKind::Notice).await?;
    assert!(notice.text.contains("telegram:@ada"), "{}", notice.text);
    boss.ack(&[notice.id]).await?;
    let result = next_of_kind(&mut boss, DeliveryKind::AgentResult).await?;
    assert!(
        result.text.ends_with("RESULT-B the colour is blue"),
        "{}",
        result.text
    );
    boss.ack(&[result.id]).await?;
    tg.wait_for_message(FORUM, WAIT, |m| {
        m.message_id == card.message_id && m.text.contains("answered by telegram:@ada")
    })
    .await?;
    wait_state(&core, asker.id, WorkerState::Done).await?;

    // Its ending is said once in the owner's topic (settling, then done: one line).
    let finished = tg
        .wait_for_message(FORUM, WAIT, |m| {
            m.text.contains("🧩 asker (implementer) finished")
        })
        .await?;
    assert_eq!(finished.thread_id, Some(boss_topic.thread_id));
    assert!(
        finished.text.contains("task: TASK-B pick a colour"),
        "{}",
        finished.text
    );
    assert!(
        !finished.text.contains("RESULT-B"),
        "the result is the owner's mail"
    );

    // Two workers at work: one long, one that the phone will steer.
    let sleeper = delegate(&mut boss, "TASK-E wait a long time", "sleeper").await?;
    wait_usage_written(&core, sleeper.id).await?;
    let steered = delegate(&mut boss, "TASK-S wait a little", "steered").await?;
    wait_state(&core, steered.id, WorkerState::Working).await?;

    tg.inject_message(UserMessage::new(FORUM, ADA, "/workers"))?;
    tg.wait_for_message(FORUM, WAIT, |m| {
        m.text.contains("Workers: 2 live workers under 1 owner")
    })
    .await?;
    tg.wait_for_message(FORUM, WAIT, |m| m.text.contains("👤 boss · 2 workers"))
        .await?;
    let sleeper_line = tg
        .wait_for_message(FORUM, WAIT, |m| {
            m.text.contains("sleeper (implementer) · working")
        })
        .await?;
    let steered_line = tg
        .wait_for_message(FORUM, WAIT, |m| m.text.contains("steered (implementer)"))
        .await?;
    let spent = usage_shown(&core, &listed(&core, sleeper.id)?)?;
    assert!(
        sleeper_line.text.contains(&spent),
        "{} lacks {spent}",
        sleeper_line.text
    );
    assert!(
        sleeper_line.text.ends_with(&format!("#{}", sleeper.id)),
        "{}",
        sleeper_line.text
    );

    // A reply to a worker's line steers it: its next turn sees it, and its result follows.
    tg.inject_message(
        UserMessage::new(FORUM, ADA, "STEER-NOW stop waiting").reply_to(steered_line.message_id),
    )?;
    tg.wait_for_message(FORUM, WAIT, |m| {
        m.text.contains("➡️ steered worker steered")
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

    // ✖ close on the sleeper's line closes it.
    let buttons = sleeper_line.buttons();
    assert_eq!(buttons.len(), 1, "{buttons:?}");
    assert_eq!(buttons[0].0, "✖ close");
    let press = tg.press_button(FORUM, sleeper_line.message_id, ADA, &buttons[0].1)?;
    let answered = tg.wait_for_callback_answer(&press.query_id, WAIT).await?;
    assert!(
        answered
            .text
            .as_deref()
            .is_some_and(|t| t.contains("closed worker sleeper")),
        "{answered:?}"
    );
    wait_state(&core, sleeper.id, WorkerState::Closed).await?;
    wait_state(&core, steered.id, WorkerState::Done).await?;

    // Each finished worker was said once; the closed one not at all.
    tg.wait_for_message(FORUM, WAIT, |m| {
        m.text.contains("🧩 steered (implementer) finished")
    })
    .await?;
    report_after(&core, &mut boss, &[&asker, &steered, &sleeper], "MARKER-1").await?;
    tg.wait_for_message(FORUM, WAIT, |m| m.text.contains("MARKER-1"))
        .await?;
    let said = |what: &str| {
        tg.messages(FORUM)
            .iter()
            .filter(|m| m.text.contains(what))
            .count()
    };
    assert_eq!(said("🧩 asker (implementer) finished"), 1);
    assert_eq!(said("🧩 steered (implementer) finished"), 1);
    assert_eq!(said("🧩 sleeper (implementer) finished"), 0);

    // A worker whose process dies before its result: said once in the owner's topic.
    let lostling = lose_a_worker(&core, &mut boss, "lostling").await?;
    let lost = tg
        .wait_for_message(FORUM, WAIT, |m| {
            m.text.contains("🧩 lostling (implementer) lost: ")
        })
        .await?;
    assert_eq!(lost.thread_id, Some(boss_topic.thread_id));
    report_after(&core, &mut boss, &[&lostling], "MARKER-2").await?;
    tg.wait_for_message(FORUM, WAIT, |m| m.text.contains("MARKER-2"))
        .await?;
    assert_eq!(said("🧩 lostling (implementer) lost"), 1);
    Ok(())
}
