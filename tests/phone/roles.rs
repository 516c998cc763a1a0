//! Roles on Telegram, end to end: the real `shepherd up` (core + bridge) against the
//! strict fake Bot API in a forum, with protocol-level Pi sessions in a temp git
//! repository (a Manager in its primary checkout, a Lead in a linked worktree) and a Chief outside
//! it. One core for the whole scenario: the role topics renamed (`🧭 manager · app`,
//! `👑 chief`) with a line saying so, an ask addressed to the Manager tagged on its card
//! and answered from the phone (the Manager gets a notice, the Lead the answer once), one
//! the Manager answers first (the card says who), staff and supervisor edges shown in the
//! receiver's topic, and `/staff` with a reply to a line (or to what its ✍️ button asks)
//! steering that session.

use std::time::Duration;

use anyhow::{Context, Result};
use shepherd_core::protocol::{DeliveryKind, Role};
use shepherd_harness::fake_telegram::{FakeTelegram, FakeTelegramOptions, FakeUser, UserMessage};
use shepherd_harness::git_repo::repo_with_worktree;
use shepherd_harness::{Core, Pi};

const WAIT: Duration = Duration::from_secs(30);
const ADA: i64 = 4242;
const FORUM: i64 = -1_001_234_567;

#[tokio::test]
async fn roles_get_topics_tagged_cards_edges_and_staff_on_telegram() -> Result<()> {
    let ada = FakeUser::new(ADA, "Ada").with_username("ada");
    // Flood limits are tested elsewhere (the `telegram` module): a forum's 20 messages a minute
    // would only make this scenario slow.
    let opts = FakeTelegramOptions::default()
        .user(ada)
        .forum(FORUM, "shepherd")
        .no_rate_limits();
    let tg = FakeTelegram::start(opts).await?;
    let api = tg.api_url();
    let core = Core::start_with(&[
        ("SHEPHERD_TELEGRAM_TOKEN", tg.token()),
        ("SHEPHERD_TELEGRAM__ALLOWED_USERS", "[4242]"),
        ("SHEPHERD_TELEGRAM__CHAT_ID", &FORUM.to_string()),
        ("SHEPHERD_TELEGRAM__API_URL", &api),
        ("SHEPHERD_TELEGRAM__LIMITS__PER_CHAT_PER_SECOND", "200"),
        ("SHEPHERD_TELEGRAM__LIMITS__PER_GROUP_PER_MINUTE", "10000"),
        ("SHEPHERD_TELEGRAM__LIMITS__GLOBAL_PER_SECOND", "200"),
    ])
    .await?;
    tg.wait_for("the bridge's first long poll", WAIT, |tg| {
        tg.long_poll_waiting().then_some(())
    })
    .await?;
    let work = tempfile::tempdir()?;
    let (repo, linked) = repo_with_worktree(work.path(), "app", "fix-login")?;
    let elsewhere = work.path().join("notes");
    std::fs::create_dir_all(&elsewhere)?;

    // Each session gets its topic when it registers.
    let mut mara = Pi::register(&core.socket(), "tr-mara", "mara", &repo).await?;
    let mut lead = Pi::register(&core.socket(), "tr-lead", "fix-login", &linked).await?;
    let mut cleo = Pi::register(&core.socket(), "tr-cleo", "cleo", &elsewhere).await?;
    let topic_of = |tg: &FakeTelegram, name: &str| {
        tg.topics(FORUM).into_iter().find(|t| t.name.contains(name))
    };
    let mara_topic = tg
        .wait_for("mara's topic", WAIT, |tg| topic_of(tg, "mara"))
        .await?;
    let lead_topic = tg
        .wait_for("the lead's topic", WAIT, |tg| topic_of(tg, "fix-login"))
        .await?;
    let cleo_topic = tg
        .wait_for("cleo's topic", WAIT, |tg| topic_of(tg, "cleo"))
        .await?;

    // Taking a role renames the topic after it, and says so there.
    mara.client.set_role(Role::Manager).await?;
    cleo.client.set_role(Role::Chief).await?;
    for (topic, name, line) in [
        (
            &mara_topic,
            "🧭 manager · app",
            "mara is now the manager of app",
        ),
        (&cleo_topic, "👑 chief", "cleo is now the chief"),
    ] {
        tg.wait_for(&format!("the topic renamed {name}"), WAIT, |tg| {
            tg.topics(FORUM)
                .into_iter()
                .find(|t| t.thread_id == topic.thread_id && t.name == name)
        })
        .await?;
        let said = tg
            .wait_for_message(FORUM, WAIT, |m| m.text.contains(line))
            .await?;
        assert_eq!(said.thread_id, Some(topic.thread_id), "{line}");
    }

    // The Lead asks its supervisor: the card in the Lead's topic says whom it is for.
    let ask = lead
        .client
        .ask_supervisor("Merge the login fix?", vec!["merge".into(), "wait".into()])
        .await?;
    assert_eq!(ask.to.as_ref().map(|t| t.role), Some(Role::Manager));
    let card = tg
        .wait_for_message(FORUM, WAIT, |m| {
            m.text.contains("Merge the login fix?") && !m.buttons().is_empty()
        })
        .await?;
    assert_eq!(card.thread_id, Some(lead_topic.thread_id));
    assert!(card.text.contains("→ manager of app"), "{}", card.text);
    let to_mara = mara.next_delivery(WAIT).await?;
    assert_eq!(to_mara.kind, DeliveryKind::Ask);
    mara.ack(&[to_mara.id]).await?;

    // Ada answers from the phone: the Lead gets it once, the Manager a notice.
    let press = tg.press_button(FORUM, card.message_id, ADA, &card.buttons()[0].1)?;
    tg.wait_for_callback_answer(&press.query_id, WAIT).await?;
    let answer = lead.next_delivery(WAIT).await?;
    assert_eq!(
        (answer.kind, answer.text.as_str()),
        (DeliveryKind::Answer, "merge")
    );
    lead.ack(&[answer.id]).await?;
    let notice = mara.next_delivery(WAIT).await?;
    assert_eq!(notice.kind, DeliveryKind::Notice);
    assert!(notice.text.contains("telegram:@ada"), "{}", notice.text);
    mara.ack(&[notice.id]).await?;
    let edited = tg
        .wait_for_message(FORUM, WAIT, |m| {
            m.message_id == card.message_id && !m.edits.is_empty()
        })
        .await?;
    assert!(
        edited.text.contains("answered by telegram:@ada"),
        "{}",
        edited.text
    );

    // The Manager answers the next one first: the card says it was the Manager.
    let ask2 = lead
        .client
        .ask_supervisor("Squash the commits?", vec![])
        .await?;
    let card2 = tg
        .wait_for_message(FORUM, WAIT, |m| m.text.contains("Squash the commits?"))
        .await?;
    let to_mara = mara.next_delivery(WAIT).await?;
    assert_eq!(to_mara.kind, DeliveryKind::Ask);
    mara.ack(&[to_mara.id]).await?;
    mara.client.answer(ask2.id, "yes, squash").await?;
    let edited2 = tg
        .wait_for_message(FORUM, WAIT, |m| {
            m.message_id == card2.message_id && m.text.contains("yes, squash")
        })
        .await?;
    assert!(edited2.text.contains("manager of app"), "{}", edited2.text);
    assert!(edited2.text.contains("mara"), "{}", edited2.text);
    let answer2 = lead.next_delivery(WAIT).await?;
    assert_eq!(answer2.text, "yes, squash");
    lead.ack(&[answer2.id]).await?;

    // Edges: a steer from the Manager in the Lead's topic, mail up in the Manager's.
    mara.client
        .message_staff(lead.session_id.as_str(), "rebase on main first")
        .await?;
    let down = tg
        .wait_for_message(FORUM, WAIT, |m| {
            m.text.contains("manager → fix-login: rebase on main first")
        })
        .await?;
    assert_eq!(down.thread_id, Some(lead_topic.thread_id));
    let steer = lead.next_delivery(WAIT).await?;
    assert_eq!(steer.kind, DeliveryKind::StaffMessage);
    lead.ack(&[steer.id]).await?;
    lead.client
        .message_supervisor("rebased, tests pass")
        .await?;
    let up = tg
        .wait_for_message(FORUM, WAIT, |m| {
            m.text.contains("fix-login → manager: rebased, tests pass")
        })
        .await?;
    assert_eq!(up.thread_id, Some(mara_topic.thread_id));
    let mail = mara.next_delivery(WAIT).await?;
    assert_eq!(mail.kind, DeliveryKind::SupervisorMessage);
    mara.ack(&[mail.id]).await?;

    // /staff: chief → manager → lead, one line each; a reply to the Lead's line steers it.
    tg.inject_message(UserMessage::new(FORUM, ADA, "/staff"))?;
    tg.wait_for_message(FORUM, WAIT, |m| {
        m.text.contains("Staff: 1 chief, 1 manager")
    })
    .await?;
    let lines = tg
        .wait_for("the staff lines", WAIT, |tg| {
            let lines: Vec<_> = tg
                .messages(FORUM)
                .into_iter()
                .filter(|m| m.text.contains("👑 chief ·") || m.text.contains(" · tr-"))
                .collect();
            (lines.len() >= 3).then_some(lines)
        })
        .await?;
    let texts: Vec<&str> = lines.iter().map(|m| m.text.as_str()).collect();
    assert!(texts[0].starts_with("👑 chief · "), "{texts:?}");
    assert!(texts[1].starts_with("└ 🧭 manager of app · "), "{texts:?}");
    assert!(
        texts[2].contains("└ ") && texts[2].contains("fix-login"),
        "{texts:?}"
    );
    tg.inject_message(
        UserMessage::new(FORUM, ADA, "add a test for the SSO path").reply_to(lines[2].message_id),
    )?;
    let steer = lead.next_delivery(WAIT).await?;
    assert_eq!(
        (steer.kind, steer.text.as_str()),
        (DeliveryKind::Steer, "add a test for the SSO path")
    );
    lead.ack(&[steer.id]).await?;

    // One tap: a line's ✍️ button asks what to say (a forced reply); the reply steers.
    let button = lines[1].buttons();
    assert_eq!(button.len(), 1, "{button:?}");
    assert_eq!(button[0].0, "✍️ steer");
    let press = tg.press_button(FORUM, lines[1].message_id, ADA, &button[0].1)?;
    tg.wait_for_callback_answer(&press.query_id, WAIT).await?;
    let prompt = tg
        .wait_for_message(FORUM, WAIT, |m| m.text.contains("What should mara do?"))
        .await?;
    assert_eq!(
        prompt
            .reply_markup
            .as_ref()
            .map(|m| m["force_reply"].clone()),
        Some(serde_json::json!(true)),
        "the app opens the reply at once"
    );
    tg.inject_message(
        UserMessage::new(FORUM, ADA, "hold merges until 5pm").reply_to(prompt.message_id),
    )?;
    let steer = mara.next_delivery(WAIT).await?;
    assert_eq!(
        (steer.kind, steer.text.as_str()),
        (DeliveryKind::Steer, "hold merges until 5pm")
    );
    mara.ack(&[steer.id]).await?;

    // Leaving the role renames the topic back after the session.
    mara.client.set_role(Role::Lead).await?;
    tg.wait_for("mara's topic named after her again", WAIT, |tg| {
        tg.topics(FORUM)
            .into_iter()
            .find(|t| t.thread_id == mara_topic.thread_id && t.name.contains("mara"))
    })
    .await?;
    tg.wait_for_message(FORUM, WAIT, |m| {
        m.text.contains("mara left the manager role")
    })
    .await
    .context("the leaving is said")?;
    Ok(())
}

/// A role taken while the bridge was down (`shepherd bot` killed) renames the session's
/// topic once the bridge is back: the resync compares each topic with its session.
#[tokio::test]
async fn a_role_taken_while_the_bridge_was_away_renames_the_topic_on_its_return() -> Result<()> {
    let ada = FakeUser::new(ADA, "Ada").with_username("ada");
    let tg = FakeTelegram::start(
        FakeTelegramOptions::default()
            .user(ada)
            .forum(FORUM, "shepherd"),
    )
    .await?;
    let core = Core::start().await?;
    let api = tg.api_url();
    let chat = FORUM.to_string();
    let env = [
        ("SHEPHERD_TELEGRAM_TOKEN", tg.token()),
        ("SHEPHERD_TELEGRAM__ALLOWED_USERS", "[4242]"),
        ("SHEPHERD_TELEGRAM__CHAT_ID", chat.as_str()),
        ("SHEPHERD_TELEGRAM__API_URL", api.as_str()),
    ];
    let mut bot = core.spawn_bot(&env)?;
    tg.wait_for("the bot's first long poll", WAIT, |tg| {
        tg.long_poll_waiting().then_some(())
    })
    .await?;
    let work = tempfile::tempdir()?;
    let (repo, _linked) = repo_with_worktree(work.path(), "app", "fix-login")?;
    let mut mara = Pi::register(&core.socket(), "tw-mara", "mara", &repo).await?;
    let topic = tg
        .wait_for("mara's topic", WAIT, |tg| {
            tg.topics(FORUM)
                .into_iter()
                .find(|t| t.name.contains("mara"))
        })
        .await?;
    // The start is posted once the bridge has stored the topic.
    tg.wait_for_message(FORUM, WAIT, |m| {
        m.thread_id == Some(topic.thread_id) && m.text.contains("started")
    })
    .await?;
    bot.kill9();
    mara.client.set_role(Role::Manager).await?;
    let bot = core.spawn_bot(&env)?;
    tg.wait_for("the topic renamed after the bridge's return", WAIT, |tg| {
        tg.topics(FORUM)
            .into_iter()
            .find(|t| t.thread_id == topic.thread_id && t.name == "🧭 manager · app")
    })
    .await
    .with_context(|| bot.log())?;
    assert_eq!(tg.topics(FORUM).len(), 1, "no second topic");
    Ok(())
}
