//! Typing in a session's Matrix thread, end to end (the real `shepherd up` against a real
//! Synapse, a matrix-sdk client playing the human): a plain thread message with one open
//! ask answers it and the bot offers ↩️ to take it back, refused once a real Pi has read
//! the answer and accepted while the session is away (a new card, the text arrives as a
//! steer); with several open asks the bot asks which one and sends nothing; `!answer`.

use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;
use shepherd_core::protocol::{DeliveryKind, ServerMsg, requests};
use shepherd_harness::fake_model::{FakeModel, Reply};
use shepherd_harness::matrix_user::{MatrixUser, Message};
use shepherd_harness::pi_process::{PiOptions, PiSession};
use shepherd_harness::synapse::{Synapse, skip_e2e};
use shepherd_harness::{Core, next_event_where};

const WAIT: Duration = Duration::from_secs(45);
const BOT: &str = "@bot:localhost";
const ADA: &str = "@ada:localhost";
const UNDO: &str = "↩️";

struct Setup {
    _synapse: Synapse,
    core: Core,
    ada: MatrixUser,
    room: String,
}

impl Setup {
    async fn bot_says(&self, pred: impl Fn(&Message) -> bool) -> Result<Message> {
        self.ada
            .wait_for_message(&self.room, WAIT, |m| m.sender == BOT && pred(m))
            .await
    }

    /// A plain message in a thread, as Element sends it (a falling-back reply to the root).
    async fn type_in(&self, root: &str, text: &str) -> Result<()> {
        self.ada
            .send_thread_reply(&self.room, root, root, text)
            .await?;
        Ok(())
    }

    /// The bot's "answered ask N" in the thread, once it has put its ↩️ on it.
    async fn undo_offer(&self, ask: u64) -> Result<Message> {
        self.bot_says(|m| {
            m.body().starts_with(&format!("✅ answered ask {ask} "))
                && m.reaction_keys_by(BOT).contains(&UNDO)
        })
        .await
    }
}

/// Synapse with the bot and Ada; the bot creates its room and invites her.
async fn setup() -> Result<Setup> {
    let synapse = Synapse::start().await?;
    synapse.register("bot", "bot-password", false).await?;
    synapse.register("ada", "ada-password", false).await?;
    let ada = MatrixUser::login(&synapse.url(), "ada", "ada-password").await?;
    let url = synapse.url();
    let allowed = format!("[\"{ADA}\"]");
    let core = Core::start_with(&[
        ("SHEPHERD_MATRIX__HOMESERVER", url.as_str()),
        ("SHEPHERD_MATRIX__USER_ID", BOT),
        ("SHEPHERD_MATRIX_PASSWORD", "bot-password"),
        ("SHEPHERD_MATRIX__ALLOWED_USERS", allowed.as_str()),
    ])
    .await?;
    let room = ada.accept_invite(None, WAIT).await?;
    ada.wait_for_member(&room, BOT, WAIT).await?;
    Ok(Setup {
        _synapse: synapse,
        core,
        ada,
        room,
    })
}

fn thread_of(m: &Message) -> String {
    m.thread_root().unwrap_or(&m.event_id).to_string()
}

fn is_card_for(question: &str) -> impl Fn(&Message) -> bool + '_ {
    move |m| m.edits == 0 && m.body().contains(question) && m.body().contains("ask #")
}

#[tokio::test]
async fn a_real_pi_gets_a_thread_message_as_its_answer_and_the_undo_is_refused_once_read()
-> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    let s = setup().await?;
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
    let mut opts = PiOptions::new(s.core.agent_dir());
    opts.name = Some("mx-typer".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    s.core.connected_session("mx-typer", WAIT).await?;
    pi.prompt("deploy when the human says so").await?;
    let card = s.bot_says(is_card_for("Deploy the release?")).await?;
    let ask_id = s.core.cli_json(&["asks"])?[0]["id"]
        .as_u64()
        .context("one open ask")?;

    // "1" typed in the session's thread (no reply): the ask's first option.
    s.type_in(&thread_of(&card), "1").await?;
    let offer = s.undo_offer(ask_id).await?;
    assert_eq!(offer.thread_root(), Some(thread_of(&card).as_str()));
    assert!(offer.body().contains("ship-it-now"), "{}", offer.body());
    let requests = model.wait_requests(2, WAIT).await?;
    assert!(
        requests[1].transcript().contains("ship-it-now"),
        "the model sees the answer"
    );

    // Read already: ↩️ is refused, and the ask stays answered.
    s.ada.react(&s.room, &offer.event_id, UNDO).await?;
    let refused = s.bot_says(|m| m.body().contains("Not undone")).await?;
    assert!(
        refused.body().contains("may have read the answer"),
        "{}",
        refused.body()
    );
    assert_eq!(refused.thread_root(), Some(thread_of(&card).as_str()));
    assert_eq!(s.core.cli_json(&["asks", "--all"])?[0]["state"], "answered");
    pi.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn thread_text_answers_one_ask_asks_which_of_several_and_the_undo_steers_an_away_session()
-> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    let s = setup().await?;
    let mut sub = s.core.subscriber().await?;
    let mut pi = s.core.pi("mx-typed-1", "typist").await?;
    let ask = |q: &str| requests::Ask {
        id: 0,
        question: q.into(),
        options: vec!["merge".into(), "wait".into()],
        details: None,
        key: None,
    };
    let first = pi.client.call(ask("Merge PR 7?")).await?;
    let second = pi.client.call(ask("Tag the release?")).await?;
    let card = s.bot_says(is_card_for("Merge PR 7?")).await?;
    s.bot_says(is_card_for("Tag the release?")).await?;
    let root = thread_of(&card);

    // Two open asks: which one? Nothing is sent.
    s.type_in(&root, "yes").await?;
    let which = s
        .bot_says(|m| m.body().contains("2 open questions"))
        .await?;
    assert_eq!(which.thread_root(), Some(root.as_str()));
    assert!(
        which.body().contains("your message was not sent"),
        "{}",
        which.body()
    );
    assert!(
        which
            .body()
            .contains(&format!("{} · Merge PR 7?", first.id)),
        "{}",
        which.body()
    );
    assert!(
        which.body().contains("!answer <ask> <text>"),
        "{}",
        which.body()
    );

    // `!answer <ask> <text>`; a number picks the option. ("yes" would have come first.)
    s.type_in(&root, &format!("!answer {} 2", second.id))
        .await?;
    let d = pi.next_delivery(WAIT).await?;
    assert_eq!(
        (d.kind, d.text.as_str(), d.ask_id),
        (DeliveryKind::Answer, "wait", Some(second.id))
    );
    pi.ack(&[d.id]).await?;

    // Away, with one ask open: the thread message answers it.
    drop(pi);
    next_event_where(&mut sub, WAIT, |m| {
        matches!(m, ServerMsg::SessionLeft { .. })
    })
    .await?;
    s.type_in(&root, "only after CI is green").await?;
    let offer = s.undo_offer(first.id.get()).await?;
    assert!(
        offer.body().contains("only after CI is green"),
        "{}",
        offer.body()
    );

    // Meant as a steer, never seen: ↩️ reopens the ask (a new card) and steers.
    s.ada.react(&s.room, &offer.event_id, UNDO).await?;
    let undone = s.bot_says(|m| m.body().contains("is open again")).await?;
    assert!(
        undone.body().contains(&format!("ask {}", first.id)),
        "{}",
        undone.body()
    );
    s.bot_says(|m| is_card_for("Merge PR 7?")(m) && m.event_id != card.event_id)
        .await?;
    assert_eq!(s.core.cli_json(&["asks"])?[0]["id"], first.id.get());
    let mut pi = s.core.pi("mx-typed-1", "typist").await?;
    assert_eq!(pi.pending, 1);
    let d = pi.next_delivery(WAIT).await?;
    assert_eq!(
        (d.kind, d.text.as_str(), d.from.name.as_str()),
        (
            DeliveryKind::Steer,
            "only after CI is green",
            "matrix:@ada:localhost"
        )
    );
    pi.ack(&[d.id]).await?;
    Ok(())
}
