//! Typing in a session's place on the phones (its Telegram topic, its Matrix thread), end
//! to end, one scenario run on each ([`Phone`]; the real `shepherd up` against the strict
//! fake Bot API or a real Synapse): text with one open ask answers it, and the bot offers
//! to take it back (a button; its own ↩️ to tap), refused once a real Pi has read the
//! answer and accepted while the session is away (the ask opens again with a new card,
//! the text arrives as a steer); with several open asks the bot asks which one and sends
//! nothing; `/answer <ask> <text>` (`!answer`) answers one.

use anyhow::{Context, Result};
use shepherd_core::protocol::{DeliveryKind, ServerMsg, requests};
use shepherd_harness::phone::{MatrixPhone, PHONE_WAIT, Phone, Said, TelegramPhone};
use shepherd_harness::pi_process::{PiOptions, PiSession};
use shepherd_harness::synapse::skip_e2e;
use shepherd_harness::{Core, next_event_where};

/// A core whose bridge posts to `phone`, ready.
async fn setup(phone: &mut impl Phone) -> Result<Core> {
    let core = Core::start_for(&*phone, &[]).await?;
    phone.ready().await?;
    Ok(core)
}

/// An ask's card, still open.
fn is_card_for<'a>(phone: &'a impl Phone, question: &'a str) -> impl Fn(&Said) -> bool + 'a {
    move |m| m.text.contains(question) && m.text.contains("ask #") && phone.is_open_card(m)
}

/// The bot's "answered ask N", ready to be taken back.
fn is_undo_offer(phone: &impl Phone, ask: u64) -> impl Fn(&Said) -> bool + '_ {
    move |m| m.text.starts_with(&format!("✅ answered ask {ask} ")) && phone.offers_undo(m, ask)
}

#[tokio::test]
async fn on_telegram_a_real_pi_gets_typed_text_as_its_answer_and_the_undo_is_refused_once_read()
-> Result<()> {
    answer_read_on(TelegramPhone::start().await?).await
}

#[tokio::test]
async fn on_matrix_a_real_pi_gets_typed_text_as_its_answer_and_the_undo_is_refused_once_read()
-> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    answer_read_on(MatrixPhone::start().await?).await
}

async fn answer_read_on(mut phone: impl Phone) -> Result<()> {
    let core = setup(&mut phone).await?;
    let model = crate::sessions::deploy_model().await?;
    let name = format!("{}-typer", phone.name());
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some(name.clone());
    let mut pi = PiSession::spawn(&model, opts).await?;
    core.connected_session(&name, PHONE_WAIT).await?;
    pi.prompt("deploy when the human says so").await?;
    let card = phone
        .bot_says(is_card_for(&phone, "Deploy the release?"))
        .await?;
    let place = phone.thread_of(&card);
    let ask_id = core.cli_json(&["asks"])?[0]["id"]
        .as_u64()
        .context("one open ask")?;

    // "1", typed in the session's place (no reply): the ask's first option.
    phone.type_in(&place, "1").await?;
    let offer = phone.bot_says(is_undo_offer(&phone, ask_id)).await?;
    assert_eq!(offer.place.as_ref(), Some(&place));
    assert!(
        offer.text.contains("Deploy the release?") && offer.text.contains("ship-it-now"),
        "{}",
        offer.text
    );
    let requests = model.wait_requests(2, PHONE_WAIT).await?;
    assert!(
        requests[1].transcript().contains("ship-it-now"),
        "the model sees the answer"
    );
    phone
        .bot_says(|m| m.id == card.id && m.text.contains("ship-it-now") && m.buttons.is_empty())
        .await?;

    // The session has read it: the undo is refused and says why; the ask stays answered.
    let refused = phone.undo(&offer).await?;
    assert!(
        refused.contains("Not undone") && refused.contains("may have read the answer"),
        "{refused}"
    );
    let all = core.cli_json(&["asks", "--all"])?;
    assert_eq!(all[0]["state"], "answered", "{all:#}");
    pi.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn on_telegram_typed_text_answers_one_ask_asks_which_of_several_and_the_undo_steers_an_away_session()
-> Result<()> {
    several_then_away_on(TelegramPhone::start().await?).await
}

#[tokio::test]
async fn on_matrix_typed_text_answers_one_ask_asks_which_of_several_and_the_undo_steers_an_away_session()
-> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    several_then_away_on(MatrixPhone::start().await?).await
}

async fn several_then_away_on(mut phone: impl Phone) -> Result<()> {
    let core = setup(&mut phone).await?;
    let id = format!("{}-typed-1", phone.name());
    let mut sub = core.subscriber().await?;
    let mut pi = core.pi(&id, "typist").await?;
    let ask = |q: &str| requests::Ask {
        id: 0,
        question: q.into(),
        options: vec!["merge".into(), "wait".into()],
        details: None,
        key: None,
    };
    let first = pi.client.call(ask("Merge PR 7?")).await?;
    let second = pi.client.call(ask("Tag the release?")).await?;
    let card = phone.bot_says(is_card_for(&phone, "Merge PR 7?")).await?;
    phone
        .bot_says(is_card_for(&phone, "Tag the release?"))
        .await?;
    let place = phone.thread_of(&card);

    // Two open asks: which one? Nothing is sent.
    phone.type_in(&place, "yes").await?;
    let which = phone
        .bot_says(|m| m.text.contains("2 open questions"))
        .await?;
    assert_eq!(which.place.as_ref(), Some(&place));
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
    let hint = format!("{}answer <ask> <text>", phone.prefix());
    assert!(which.text.contains(&hint), "{}", which.text);

    // `/answer <ask> <text>` answers one; a number picks its option. (Had "yes" been sent,
    // it would have arrived first.)
    let command = format!("{}answer {} 2", phone.prefix(), second.id);
    phone.type_in(&place, &command).await?;
    let d = pi.next_delivery(PHONE_WAIT).await?;
    assert_eq!(
        (d.kind, d.text.as_str(), d.ask_id),
        (DeliveryKind::Answer, "wait", Some(second.id))
    );
    pi.ack(&[d.id]).await?;

    // The session goes away; one ask is open: typed text answers it.
    drop(pi);
    next_event_where(&mut sub, PHONE_WAIT, |m| {
        matches!(m, ServerMsg::SessionLeft { .. })
    })
    .await?;
    core.past_last_seen(&id).await?;
    phone.type_in(&place, "only after CI is green").await?;
    let offer = phone
        .bot_says(is_undo_offer(&phone, first.id.get()))
        .await?;
    assert!(
        offer.text.contains("only after CI is green"),
        "{}",
        offer.text
    );
    phone
        .bot_says(|m| m.id == card.id && m.text.contains("only after CI is green"))
        .await?;

    // It was meant as a steer: the session never saw it, so the undo is accepted.
    let undone = phone.undo(&offer).await?;
    assert!(
        undone.contains(&format!("ask {} is open again", first.id)),
        "{undone}"
    );
    // The ask is open again with a new card (the old one keeps its history).
    let new_card = phone
        .bot_says(|m| is_card_for(&phone, "Merge PR 7?")(m) && m.id != card.id)
        .await?;
    assert_eq!(new_card.place.as_ref(), Some(&place));
    let open = core.cli_json(&["asks"])?;
    assert_eq!(open[0]["id"], first.id.get(), "{open:#}");

    // Back, the session gets the text once, as a steer, and no answer.
    let mut pi = core.pi(&id, "typist").await?;
    assert_eq!(pi.pending, 1);
    let d = pi.next_delivery(PHONE_WAIT).await?;
    assert_eq!(
        (d.kind, d.text.as_str(), d.from.name.as_str()),
        (DeliveryKind::Steer, "only after CI is green", phone.human())
    );
    pi.ack(&[d.id]).await?;
    Ok(())
}
