//! Managed workers on the phones, end to end, one scenario run on each ([`Phone`]): the
//! real `shepherd up` (core + bridge) against the strict fake Bot API in a forum, or a
//! real Synapse with a matrix-sdk client playing the human; the owner a harness client
//! registered as a Pi session (a Lead), and its workers REAL Pi processes the core
//! launches (headless, the scripted fake model). One core for the whole scenario:
//!
//! - a Lead's worker's `ask_owner` shows as a card in the owner's topic (Telegram) or
//!   thread (Matrix) once it has waited `workers.ask_card_after_secs` (1 s here), tagged
//!   `→ owner boss · worker asker`; a reply to the card answers it: the worker goes on to
//!   its result, the owner gets a notice naming the human and the result once;
//! - the finished worker is said once in the owner's place, with its task's start;
//! - `/workers` (`!workers`): the owner's heading, then a line per worker with label,
//!   definition, state, age and its own tokens and cost (as the core's `usage` counts
//!   them), ending with its id; a reply to a worker's line steers it (its next model turn
//!   sees the text, its result follows); the line's `✖ close` button (a `!close` reply)
//!   closes the worker;
//! - a worker killed (-9) before its result is said `lost` once in the owner's place;
//! - no worker gets a topic or thread of its own: all of it is in the owner's.

use std::time::Duration;

use crate::workers_phone::{
    delegate, listed, lose_a_worker, model, next_of_kind, owner, report_after, usage_shown,
    wait_state, wait_usage_written, worker_core,
};
use anyhow::{Context, Result};
use shepherd_core::protocol::{DeliveryKind, WorkerState};
use shepherd_harness::phone::{MatrixPhone, Phone, TelegramPhone};
use shepherd_harness::synapse::skip_e2e;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_telegram_list_steer_close_ask_and_finish() -> Result<()> {
    workers_on(TelegramPhone::start().await?, "tw-boss").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_matrix_list_steer_close_ask_and_finish() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    workers_on(MatrixPhone::start().await?, "mw-boss").await
}

async fn workers_on(mut phone: impl Phone, owner_id: &str) -> Result<()> {
    let model = model().await?;
    let core = worker_core(&model, &phone).await?;
    phone.ready().await?;
    let mut boss = owner(&core, owner_id, "boss").await?;
    let boss_place = phone.place_of("boss").await?;

    // A Lead's worker asks: after a second its card shows in the owner's place.
    let asker = delegate(&mut boss, "TASK-B pick a colour", "asker").await?;
    let asked = next_of_kind(&mut boss, DeliveryKind::AgentAsk).await?;
    let asked_at = std::time::Instant::now();
    boss.ack(&[asked.id]).await?;
    let card = phone
        .bot_says(|m| m.text.contains("Which colour, red or blue?") && !m.edited)
        .await
        .with_context(|| core.log())?;
    // Not at once: the card waits `ask_card_after_secs` (1 s from the ask, which the
    // owner's delivery followed).
    let waited = asked_at.elapsed();
    assert!(
        waited >= Duration::from_millis(500),
        "shown after {waited:?}"
    );
    assert_eq!(card.place.as_ref(), Some(&boss_place), "{}", card.text);
    assert!(
        card.text.contains("→ owner boss · worker asker"),
        "{}",
        card.text
    );

    // Ada replies to the card: the worker goes on; the owner is told and gets the result.
    phone.reply(&card, "blue").await?;
    let notice = next_of_kind(&mut boss, DeliveryKind::Notice).await?;
    assert!(notice.text.contains(phone.human()), "{}", notice.text);
    boss.ack(&[notice.id]).await?;
    let result = next_of_kind(&mut boss, DeliveryKind::AgentResult).await?;
    assert!(
        result.text.ends_with("RESULT-B the colour is blue"),
        "{}",
        result.text
    );
    boss.ack(&[result.id]).await?;
    let answered_by = format!("answered by {}", phone.human());
    phone
        .bot_says(|m| m.id == card.id && m.text.contains(&answered_by))
        .await?;
    wait_state(&core, asker.id, WorkerState::Done).await?;

    // Its ending is said once in the owner's place (settling, then done: one line).
    let finished = phone
        .bot_says(|m| m.text.contains("🧩 asker (implementer) finished"))
        .await?;
    assert_eq!(finished.place.as_ref(), Some(&boss_place));
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
    let two = two_at_work(&phone, &core, &mut boss, "👤 boss · 2 workers").await?;
    assert_eq!(two.sleeper_line.place, None, "in the main timeline");
    // `/sessions` names a worker as one, not like its owner's place.
    phone.command("sessions").await?;
    phone
        .bot_says(|m| m.text.contains("(worker of boss)"))
        .await
        .with_context(|| core.log())?;
    let spent = usage_shown(&core, &listed(&core, two.sleeper.id)?)?;
    assert!(
        two.sleeper_line.text.contains(&spent),
        "{} lacks {spent}",
        two.sleeper_line.text
    );
    assert!(
        two.sleeper_line
            .text
            .ends_with(&format!("#{}", two.sleeper.id)),
        "{}",
        two.sleeper_line.text
    );
    // A reply to a worker's line steers it (its result follows); its ✖ close closes the
    // other; each finished worker is said once, the closed one not at all.
    steer_one_close_other(&phone, &core, &mut boss, &two, &asker, "MARKER-1").await?;

    // A worker whose process dies before its result: said once in the owner's place.
    let lostling = lose_a_worker(&core, &mut boss, "lostling").await?;
    let lost = phone
        .bot_says(|m| m.text.contains("🧩 lostling (implementer) lost: "))
        .await?;
    assert_eq!(lost.place.as_ref(), Some(&boss_place));
    report_after(&core, &mut boss, &[&lostling], "MARKER-2").await?;
    phone.bot_says(|m| m.text.contains("MARKER-2")).await?;
    assert_eq!(phone.count_said("🧩 lostling (implementer) lost"), 1);

    // No worker got a place of its own: whatever is said of them is in the owner's.
    if phone.names_places() {
        let names = phone.place_names();
        assert!(names.iter().all(|n| n.contains("boss")), "{names:?}");
    }
    for m in phone.all_said() {
        if let Some(place) = &m.place {
            assert_eq!(place, &boss_place, "{}", m.text);
        }
    }
    Ok(())
}

/// A linked host's managed workers and pairings on the phone of the home core: the far
/// core launches REAL Pi workers (headless, the scripted model) for an owner there; the
/// bot runs beside the home core only. A far worker's question shows in the owner's far
/// topic (`far · boss`) and a reply to it reaches that worker once; `/workers` lists the
/// far workers under `far · boss`, each named `far#<id>`; a reply to a line steers that
/// worker over the link, its ✖ close closes it there; a far worker's ending is said once;
/// `supervise` and `unpair` typed in a far session's topic pair and unpair it with a
/// supervisor on that host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_telegram_a_linked_hosts_workers_and_pairings_are_seen_and_steered() -> Result<()> {
    use crate::workers_phone::LONG;
    use shepherd_core::protocol::Role;
    use shepherd_harness::workers::{work_dir, worker_core_with};
    use shepherd_harness::{Core, Pi, eventually, registration};

    let mut phone = TelegramPhone::start().await?;
    let model = model().await?;
    let more = [("SHEPHERD_WORKERS__ASK_CARD_AFTER_SECS", "1")];
    let far = worker_core_with(&model, "headless", &more).await?;
    let (_config, config_path) = Core::hosts_config(&[("far", &far)])?;
    let home = Core::start_for(&phone, &[("SHEPHERD_CONFIG", &config_path)]).await?;
    phone.ready().await?;
    let mut boss = owner(&far, "fh-boss", "boss").await?;
    eventually(LONG, "the far owner mirrored at home", || {
        let hosts = home.cli_json(&["hosts"]).ok()?;
        (hosts[0]["state"] == "connected" && hosts[0]["sessions"] == 1).then_some(())
    })
    .await?;
    let boss_place = phone.place_of("far · boss").await?;

    // A far worker's question: its card in the owner's far topic; the reply answers it.
    let asker = delegate(&mut boss, "TASK-B pick a colour", "asker").await?;
    let asked = next_of_kind(&mut boss, DeliveryKind::AgentAsk).await?;
    boss.ack(&[asked.id]).await?;
    let card = phone
        .bot_says(|m| m.text.contains("Which colour, red or blue?") && !m.edited)
        .await
        .with_context(|| home.log())?;
    assert_eq!(card.place.as_ref(), Some(&boss_place), "{}", card.text);
    assert!(
        card.text.contains("→ owner boss · worker asker"),
        "{}",
        card.text
    );
    phone.reply(&card, "blue").await?;
    let result = next_of_kind(&mut boss, DeliveryKind::AgentResult).await?;
    assert!(
        result.text.ends_with("RESULT-B the colour is blue"),
        "{}",
        result.text
    );
    boss.ack(&[result.id]).await?;
    wait_state(&far, asker.id, WorkerState::Done).await?;
    let finished = phone
        .bot_says(|m| m.text.contains("🧩 asker (implementer) finished"))
        .await?;
    assert_eq!(finished.place.as_ref(), Some(&boss_place));

    // Two far workers at work, listed with their host; one steered, one closed.
    let two = two_at_work(&phone, &far, &mut boss, "👤 far · boss · 2 workers").await?;
    let (sleeper, sleeper_line) = (&two.sleeper, &two.sleeper_line);
    assert!(
        sleeper_line.text.ends_with(&format!("far#{}", sleeper.id)),
        "{}",
        sleeper_line.text
    );
    // Its own usage, counted by the far core.
    assert!(
        sleeper_line.text.contains(" tokens · $"),
        "{}",
        sleeper_line.text
    );
    // The home CLI's usage counts the far workers too, each row with its host.
    let usage = home.cli_json(&["usage"])?;
    let far_row = usage["sessions"]
        .as_array()
        .context("usage sessions")?
        .iter()
        .find(|s| s["session_id"] == sleeper.session_id.as_str())
        .context("the far worker's usage at home")?
        .clone();
    assert_eq!(far_row["host"], "far", "{far_row}");
    assert!(far_row["total_tokens"].as_u64() > Some(0), "{far_row}");

    steer_one_close_other(&phone, &far, &mut boss, &two, &asker, "MARKER-F").await?;

    // `supervise` typed in the far session's topic pairs it with that host's supervisor;
    // `unpair` there ends it. Both are said in that topic.
    let mut reg = registration("fh-sup", "watch-boss", &work_dir(&far));
    reg.role = Role::Supervisor;
    let (_sup, _) = Pi::register_full(&far.socket(), reg).await?;
    phone
        .type_in(&boss_place, "/supervise the owner ships the colour picker")
        .await?;
    let start = phone
        .bot_says(|m| m.text.contains("watch-boss supervises boss"))
        .await
        .with_context(|| home.log())?;
    assert_eq!(start.place.as_ref(), Some(&boss_place), "{}", start.text);
    let pairings = far.cli_json(&["pairings"])?;
    assert_eq!(pairings[0]["goal"], "the owner ships the colour picker");
    phone.type_in(&boss_place, "/unpair").await?;
    let stopped = phone
        .bot_says(|m| m.text.contains("stopped") && m.text.contains("watch-boss"))
        .await
        .with_context(|| home.log())?;
    assert_eq!(
        stopped.place.as_ref(),
        Some(&boss_place),
        "{}",
        stopped.text
    );
    eventually(LONG, "the far pairing ended", || {
        let all = far.cli_json(&["pairings", "--all"]).ok()?;
        (all[0]["state"] == "ended").then_some(())
    })
    .await?;
    Ok(())
}

/// Two workers of `boss` at work, as `/workers` lists them under `heading`: `sleeper`
/// (waits long) and `steered` (waits a little, for a steer).
struct TwoAtWork {
    sleeper: shepherd_core::protocol::Worker,
    steered: shepherd_core::protocol::Worker,
    sleeper_line: shepherd_harness::phone::Said,
    steered_line: shepherd_harness::phone::Said,
}

async fn two_at_work(
    phone: &impl Phone,
    core: &shepherd_harness::Core,
    boss: &mut shepherd_harness::Pi,
    heading: &str,
) -> Result<TwoAtWork> {
    let sleeper = delegate(boss, "TASK-E wait a long time", "sleeper").await?;
    wait_usage_written(core, sleeper.id).await?;
    let steered = delegate(boss, "TASK-S wait a little", "steered").await?;
    wait_state(core, steered.id, WorkerState::Working).await?;
    phone.command("workers").await?;
    phone
        .bot_says(|m| m.text.contains("Workers: 2 live workers under 1 owner"))
        .await?;
    phone.bot_says(|m| m.text.contains(heading)).await?;
    let sleeper_line = phone
        .bot_says(|m| m.text.contains("sleeper (implementer) · working"))
        .await?;
    let steered_line = phone
        .bot_says(|m| m.text.contains("steered (implementer)"))
        .await?;
    Ok(TwoAtWork {
        sleeper,
        steered,
        sleeper_line,
        steered_line,
    })
}

/// A reply to the steered worker's line steers it (its next turn sees it, its result
/// reaches `boss`); the sleeper's close closes it; then, once `marker` is posted, each
/// finished worker (`asker`, `steered`) was said once and the closed one not at all.
async fn steer_one_close_other(
    phone: &impl Phone,
    core: &shepherd_harness::Core,
    boss: &mut shepherd_harness::Pi,
    two: &TwoAtWork,
    asker: &shepherd_core::protocol::Worker,
    marker: &str,
) -> Result<()> {
    phone
        .reply(&two.steered_line, "STEER-NOW stop waiting")
        .await?;
    phone
        .bot_says(|m| m.text.contains("➡️ steered worker steered"))
        .await?;
    let result = next_of_kind(boss, DeliveryKind::AgentResult).await?;
    assert!(
        result.text.contains("agent=steered")
            && result.text.ends_with("RESULT-S steered from the phone"),
        "{}",
        result.text
    );
    boss.ack(&[result.id]).await?;
    let closed = phone.close_worker(&two.sleeper_line).await?;
    assert!(closed.contains("closed worker sleeper"), "{closed}");
    wait_state(core, two.sleeper.id, WorkerState::Closed).await?;
    wait_state(core, two.steered.id, WorkerState::Done).await?;
    phone
        .bot_says(|m| m.text.contains("🧩 steered (implementer) finished"))
        .await?;
    report_after(core, boss, &[asker, &two.steered, &two.sleeper], marker).await?;
    phone.bot_says(|m| m.text.contains(marker)).await?;
    assert_eq!(phone.count_said("🧩 asker (implementer) finished"), 1);
    assert_eq!(phone.count_said("🧩 steered (implementer) finished"), 1);
    assert_eq!(phone.count_said("🧩 sleeper (implementer) finished"), 0);
    Ok(())
}
