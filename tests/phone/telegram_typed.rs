//! Typing in a session's Telegram topic, end to end (the real `shepherd up` against the
//! strict fake Bot API): text with one open ask answers it, with an undo button that is
//! refused once a real Pi has read the answer and accepted while the session is away
//! (the ask opens again with a new card, the text arrives as a steer); with several open
//! asks the bot asks which one and sends nothing; `/answer <ask> <text>` answers one.

use std::time::Duration;

use anyhow::Result;
use serde_json::json;
use shepherd_core::protocol::{DeliveryKind, ServerMsg, requests};
use shepherd_harness::fake_model::{FakeModel, Reply};
use shepherd_harness::fake_telegram::{
    FakeTelegram, FakeTelegramOptions, FakeUser, SentMessage, UserMessage,
};
use shepherd_harness::pi_process::{PiOptions, PiSession};
use shepherd_harness::{Core, next_event_where};

const WAIT: Duration = Duration::from_secs(30);
const ADA: i64 = 4242;
const FORUM: i64 = -1_001_234_567;

/// A forum with Ada, and a core whose bridge posts there.
async fn setup() -> Result<(Core, FakeTelegram)> {
    let ada = FakeUser::new(ADA, "Ada").with_username("ada");
    let opts = FakeTelegramOptions::default()
        .user(ada)
        .forum(FORUM, "shepherd");
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
    Ok((core, tg))
}

fn is_card_for(question: &str) -> impl Fn(&SentMessage) -> bool + '_ {
    move |m| m.text.contains(question) && !m.buttons().is_empty()
}

fn is_undo_offer(ask: u64) -> impl Fn(&SentMessage) -> bool {
    move |m| {
        m.from_bot
            && m.text.starts_with(&format!("✅ answered ask {ask} "))
            && m.buttons()
                == [(
                    "↩️ undo: it was meant as a steer".to_string(),
                    format!("u:{ask}"),
                )]
    }
}

#[tokio::test]
async fn a_real_pi_gets_typed_text_as_its_answer_and_the_undo_is_refused_once_read() -> Result<()> {
    let (core, tg) = setup().await?;
    let model = FakeModel::start(|req| {
        if req.transcript().contains("ship-it-now") {
            Reply::text("Shipping.")
        } else {
            Reply::tool(
                "ask_human",
                json!({"question": "Deploy the release?", "options": ["ship-it-now", "hold"]}),
            )
        }
    })
    .await?;
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some("tg-typer".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    core.connected_session("tg-typer", WAIT).await?;
    pi.prompt("deploy when the human says so").await?;
    let card = tg
        .wait_for_message(FORUM, WAIT, is_card_for("Deploy the release?"))
        .await?;
    let topic = card.thread_id.expect("the card is in the session's topic");
    let asks = core.cli_json(&["asks"])?;
    let ask_id = asks[0]["id"].as_u64().expect("one open ask");

    // "1", typed in the topic (no reply): the ask's first option.
    tg.inject_message(UserMessage::new(FORUM, ADA, "1").in_topic(topic))?;
    let offer = tg
        .wait_for_message(FORUM, WAIT, is_undo_offer(ask_id))
        .await?;
    assert_eq!(offer.thread_id, Some(topic));
    assert!(
        offer.text.contains("Deploy the release?") && offer.text.contains("ship-it-now"),
        "{}",
        offer.text
    );
    let requests = model.wait_requests(2, WAIT).await?;
    assert!(
        requests[1].transcript().contains("ship-it-now"),
        "the model sees the answer"
    );
    tg.wait_for_message(FORUM, WAIT, |m| {
        m.message_id == card.message_id && m.text.contains("ship-it-now") && m.buttons().is_empty()
    })
    .await?;

    // The session has read it: the undo is refused and says why; the ask stays answered.
    let press = tg.press_button(FORUM, offer.message_id, ADA, &format!("u:{ask_id}"))?;
    let answer = tg.wait_for_callback_answer(&press.query_id, WAIT).await?;
    let text = answer.text.unwrap_or_default();
    assert!(
        text.contains("Not undone") && text.contains("may have read the answer"),
        "{text}"
    );
    let edited = tg
        .wait_for_message(FORUM, WAIT, |m| {
            m.message_id == offer.message_id && !m.edits.is_empty()
        })
        .await?;
    assert!(
        edited.buttons().is_empty(),
        "the offer loses its button: {edited:?}"
    );
    let all = core.cli_json(&["asks", "--all"])?;
    assert_eq!(all[0]["state"], "answered", "{all:#}");
    pi.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn typed_text_answers_one_ask_asks_which_of_several_and_the_undo_steers_an_away_session()
-> Result<()> {
    let (core, tg) = setup().await?;
    let mut sub = core.subscriber().await?;
    let mut pi = core.pi("tg-typed-1", "typist").await?;
    let ask = |q: &str| requests::Ask {
        id: 0,
        question: q.into(),
        options: vec!["merge".into(), "wait".into()],
        details: None,
        key: None,
    };
    let first = pi.client.call(ask("Merge PR 7?")).await?;
    let second = pi.client.call(ask("Tag the release?")).await?;
    let card = tg
        .wait_for_message(FORUM, WAIT, is_card_for("Merge PR 7?"))
        .await?;
    tg.wait_for_message(FORUM, WAIT, is_card_for("Tag the release?"))
        .await?;
    let topic = card.thread_id.expect("in the topic");

    // Two open asks: which one? Nothing is sent.
    tg.inject_message(UserMessage::new(FORUM, ADA, "yes").in_topic(topic))?;
    let which = tg
        .wait_for_message(FORUM, WAIT, |m| {
            m.from_bot && m.text.contains("2 open questions")
        })
        .await?;
    assert_eq!(which.thread_id, Some(topic));
    assert!(
        which.text.contains("your message was not sent"),
        "{}",
        which.text
    );
    assert!(
        which.text.contains(&format!("{} · Merge PR 7?", first.id)),
        "{}",
        which.text
    );
    assert!(
        which.text.contains("/answer <ask> <text>"),
        "{}",
        which.text
    );

    // `/answer <ask> <text>` answers one; a number picks its option. (Had "yes" been sent,
    // it would have arrived first.)
    tg.inject_message(
        UserMessage::new(FORUM, ADA, &format!("/answer {} 2", second.id)).in_topic(topic),
    )?;
    let d = pi.next_delivery(WAIT).await?;
    assert_eq!(
        (d.kind, d.text.as_str(), d.ask_id),
        (DeliveryKind::Answer, "wait", Some(second.id))
    );
    pi.ack(&[d.id]).await?;

    // The session goes away; one ask is open: typed text answers it.
    drop(pi);
    next_event_where(&mut sub, WAIT, |m| {
        matches!(m, ServerMsg::SessionLeft { .. })
    })
    .await?;
    tg.inject_message(UserMessage::new(FORUM, ADA, "only after CI is green").in_topic(topic))?;
    let offer = tg
        .wait_for_message(FORUM, WAIT, is_undo_offer(first.id.get()))
        .await?;
    assert!(
        offer.text.contains("only after CI is green"),
        "{}",
        offer.text
    );
    tg.wait_for_message(FORUM, WAIT, |m| {
        m.message_id == card.message_id && m.text.contains("only after CI is green")
    })
    .await?;

    // It was meant as a steer: the session never saw it, so the undo is accepted.
    let press = tg.press_button(FORUM, offer.message_id, ADA, &format!("u:{}", first.id))?;
    let answer = tg.wait_for_callback_answer(&press.query_id, WAIT).await?;
    let text = answer.text.unwrap_or_default();
    assert!(
        text.contains(&format!("ask {} is open again", first.id)),
        "{text}"
    );
    // The ask is open again with a new card (the old one keeps its history).
    let is_card = is_card_for("Merge PR 7?");
    let new_card = tg
        .wait_for("a new card for the reopened ask", WAIT, |tg| {
            tg.messages(FORUM)
                .into_iter()
                .find(|m| m.message_id != card.message_id && is_card(m))
        })
        .await?;
    assert_eq!(new_card.thread_id, Some(topic));
    let open = core.cli_json(&["asks"])?;
    assert_eq!(open[0]["id"], first.id.get(), "{open:#}");

    // Back, the session gets the text once, as a steer, and no answer.
    let mut pi = core.pi("tg-typed-1", "typist").await?;
    assert_eq!(pi.pending, 1);
    let d = pi.next_delivery(WAIT).await?;
    assert_eq!(
        (d.kind, d.text.as_str(), d.from.name.as_str()),
        (
            DeliveryKind::Steer,
            "only after CI is green",
            "telegram:@ada"
        )
    );
    pi.ack(&[d.id]).await?;
    Ok(())
}
