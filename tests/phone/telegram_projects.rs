//! Project work on Telegram, end to end: the real `shepherd up` (core + bridge) against the
//! strict fake Bot API in a forum, a temp repository `app`, its Manager a harness client
//! registered in the primary checkout (holding the Manager lease), and its Lead a REAL Pi
//! process the core launches in the assignment's worktree (headless, the scripted fake
//! model). One core for the whole scenario:
//!
//! - the Manager delegates `feat/a`; the Lead (its own topic `app@feat/a`) commits and
//!   ends its turn: the update is posted once in the Manager's topic (`🧭 manager · app`),
//!   tagged `app@feat/a`, with its text, and the Manager gets it as mail; a reply to it
//!   steers the Manager;
//! - `/projects` lists the repository, its Manager and the assignment (state, Lead state,
//!   1 ahead / 0 behind, the last update's first line, tokens and cost);
//! - the Manager asks to integrate: the approval card (question, commits, approve/deny
//!   buttons) is in the Manager's topic; a reply typed to it denies it with that reason
//!   (the Manager is told, `main` is unchanged); asked again, `approve` fast-forwards `main`
//!   to the branch's tip (checked with git2) and the retirement is said in the topic;
//! - the Manager stops the Lead and resumes it: `paused`, `active again` and its Lead
//!   running are said in the topic;
//! - of the assignment's changes only the delegation, the pause, the resumption, its Lead
//!   running (twice) and its retirement are said, once each.

use std::time::Duration;

use crate::projects_phone::{
    COMMIT, UPDATE, delegate, integrate, manager, model, next_of_kind, project_core, repo,
    resume_work, stop_lead, tip, wait_committed,
};
use anyhow::{Context, Result};
use shepherd_core::protocol::{AssignmentState, DeliveryKind, IntegrationStatus};
use shepherd_harness::fake_telegram::{FakeTelegram, FakeTelegramOptions, FakeUser, UserMessage};

const WAIT: Duration = Duration::from_secs(60);
const ADA: i64 = 4242;
const FORUM: i64 = -1_001_234_567;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_work_on_telegram_lists_updates_and_approves() -> Result<()> {
    let ada = FakeUser::new(ADA, "Ada").with_username("ada");
    let opts = FakeTelegramOptions::default()
        .user(ada)
        .forum(FORUM, "shepherd")
        .no_rate_limits();
    let tg = FakeTelegram::start(opts).await?;
    let api = tg.api_url();
    let chat = FORUM.to_string();
    let model = model().await?;
    let core = project_core(
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
    let repo = repo(&core, "app")?;
    let main_before = tip(&repo, "main")?;

    // The Manager's topic is named after its role.
    let mut mgr = manager(&core, &repo, "tp-manager").await?;
    let topic = tg
        .wait_for("the manager's topic", WAIT, |tg| {
            tg.topics(FORUM)
                .into_iter()
                .find(|t| t.name == "🧭 manager · app")
        })
        .await?;

    // Delegated: the Lead commits and ends its turn; its update is said once, tagged, in
    // the Manager's topic, and mailed to the Manager.
    let assignment = delegate(&mut mgr, "TASK-A add a file", "feat/a").await?;
    assert_eq!(assignment.branch, "feat/a");
    let sha = wait_committed(&repo, "feat/a").await?;
    let mail = next_of_kind(&mut mgr, DeliveryKind::AssignmentUpdate)
        .await
        .with_context(|| core.log())?;
    assert!(mail.text.contains(UPDATE), "{}", mail.text);
    mgr.ack(&[mail.id]).await?;
    let update = tg
        .wait_for_message(FORUM, WAIT, |m| {
            m.text.contains("📬 app@feat/a · update from the Lead")
        })
        .await
        .with_context(|| core.log())?;
    assert_eq!(update.thread_id, Some(topic.thread_id), "{}", update.text);
    assert!(update.text.contains(UPDATE), "{}", update.text);
    assert!(update.text.contains(&sha[..7]), "{}", update.text);
    // The Lead has its own topic, named after the repository and branch (not the
    // worktree's directory).
    let topics: Vec<String> = tg.topics(FORUM).into_iter().map(|t| t.name).collect();
    assert!(topics.iter().any(|t| t == "app@feat/a"), "{topics:?}");

    // A reply to the update steers the Manager.
    tg.inject_message(
        UserMessage::new(FORUM, ADA, "integrate it once it is green").reply_to(update.message_id),
    )?;
    let steer = next_of_kind(&mut mgr, DeliveryKind::Steer).await?;
    assert_eq!(steer.text, "integrate it once it is green");
    mgr.ack(&[steer.id]).await?;

    // /projects: the repository, its Manager, the assignment with its numbers.
    tg.inject_message(UserMessage::new(FORUM, ADA, "/projects"))?;
    let list = tg
        .wait_for_message(FORUM, WAIT, |m| {
            m.text.contains("Projects: 1 repository, 1 assignment")
        })
        .await?;
    for part in [
        "🗂 app · primary main · 🧭 manager app-manager",
        "app@feat/a · active · Lead running · 1 ahead, 0 behind",
        " tokens · $",
        "last update ",
        UPDATE,
    ] {
        assert!(list.text.contains(part), "{part:?} not in {}", list.text);
    }

    // Stopped, then resumed: one line each in the Manager's topic, then its Lead running.
    let paused = stop_lead(&mut mgr, "feat/a").await?;
    assert_eq!(paused.state, AssignmentState::Paused);
    let line = tg
        .wait_for_message(FORUM, WAIT, |m| {
            m.text.contains("⏸️ app@feat/a paused: Lead stopped")
        })
        .await?;
    assert_eq!(line.thread_id, Some(topic.thread_id));
    // Its session is gone (said in the Lead's own topic) before it is resumed.
    tg.wait_for_message(FORUM, WAIT, |m| {
        m.text.contains("⏹ app@feat/a (app@feat/a) closed")
    })
    .await?;
    let resumed = resume_work(&mut mgr, "feat/a").await?;
    assert_eq!(
        resumed.session_id, assignment.session_id,
        "the same session"
    );
    let line = tg
        .wait_for_message(FORUM, WAIT, |m| {
            m.text.contains("app@feat/a active again: Lead ")
        })
        .await
        .with_context(|| core.log())?;
    assert_eq!(line.thread_id, Some(topic.thread_id));
    tg.wait_for("the resumed Lead running", WAIT, |tg| {
        (tg.messages(FORUM)
            .iter()
            .filter(|m| m.text.contains("🟢 app@feat/a: Lead running"))
            .count()
            == 2)
            .then_some(())
    })
    .await
    .with_context(|| core.log())?;

    // The Manager asks to integrate: the approval card is in its topic.
    let asked = integrate(&mut mgr, "feat/a", &sha).await?;
    assert_eq!(asked.status, IntegrationStatus::AwaitingApproval);
    let card = tg
        .wait_for_message(FORUM, WAIT, |m| {
            m.text.contains("Integrate app@feat/a into main at") && !m.buttons().is_empty()
        })
        .await
        .with_context(|| core.log())?;
    assert_eq!(card.thread_id, Some(topic.thread_id));
    assert!(card.text.contains(&sha[..7]), "{}", card.text);
    assert!(card.text.contains(COMMIT), "the commits: {}", card.text);
    let labels: Vec<String> = card.buttons().into_iter().map(|b| b.0).collect();
    assert_eq!(labels, ["approve", "deny"]);

    // A reply typed to the card denies it with that reason; main is unchanged.
    tg.inject_message(
        UserMessage::new(FORUM, ADA, "not yet: add a test first").reply_to(card.message_id),
    )?;
    let outcome = next_of_kind(&mut mgr, DeliveryKind::Integration).await?;
    assert!(
        outcome.text.contains("not yet: add a test first"),
        "{}",
        outcome.text
    );
    mgr.ack(&[outcome.id]).await?;
    tg.wait_for_message(FORUM, WAIT, |m| {
        m.message_id == card.message_id && m.text.contains("not yet: add a test first")
    })
    .await?;
    assert_eq!(tip(&repo, "main")?, main_before, "denied: main unchanged");

    // Asked again and approved with the button: main is fast-forwarded to the tip.
    let asked = integrate(&mut mgr, "feat/a", &sha).await?;
    assert_eq!(asked.status, IntegrationStatus::AwaitingApproval);
    let card = tg
        .wait_for_message(FORUM, WAIT, |m| {
            m.text.contains("Integrate app@feat/a into main at")
                && !m.buttons().is_empty()
                && m.message_id != card.message_id
        })
        .await?;
    let approve = card.buttons()[0].1.clone();
    let press = tg.press_button(FORUM, card.message_id, ADA, &approve)?;
    tg.wait_for_callback_answer(&press.query_id, WAIT).await?;
    let outcome = next_of_kind(&mut mgr, DeliveryKind::Integration).await?;
    mgr.ack(&[outcome.id]).await?;
    assert_eq!(tip(&repo, "main")?, sha, "approved: main fast-forwarded");
    tg.wait_for_message(FORUM, WAIT, |m| {
        m.message_id == card.message_id && m.text.contains("answered by telegram:@ada")
    })
    .await?;
    let retired = tg
        .wait_for_message(FORUM, WAIT, |m| {
            m.text.contains("✅ app@feat/a integrated at")
        })
        .await
        .with_context(|| core.log())?;
    assert_eq!(retired.thread_id, Some(topic.thread_id));

    // The update was said once; of the assignment's changes, the delegation, its Lead
    // running and its retirement, once each, in the Manager's topic. Counted once a
    // report of the Manager's is posted: the bridge posts in the order of the core's
    // events, and the report comes after the retired Lead's session left the core (the
    // last thing about the assignment that could be said again).
    core.disconnected(assignment.session_id.as_str(), WAIT)
        .await
        .with_context(|| core.log())?;
    mgr.client.report("MARKER-end of the scenario").await?;
    tg.wait_for_message(FORUM, WAIT, |m| {
        m.text.contains("MARKER-end of the scenario")
    })
    .await?;
    let said = |what: &str| {
        tg.messages(FORUM)
            .iter()
            .filter(|m| m.text.contains(what))
            .map(|m| m.thread_id)
            .collect::<Vec<_>>()
    };
    let here = vec![Some(topic.thread_id)];
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
