//! A session's life on the phones, end to end, each story one scenario run on each phone
//! ([`Phone`]: the real `shepherd up`, or `shepherd bot` next to a core, against the strict
//! fake Bot API in a forum or a real Synapse with a matrix-sdk client playing the human):
//!
//! - a real Pi's `ask_human` is a card naming the session with its options; the human's
//!   choice reaches the model, and the card says the answer and who gave it; the same for
//!   a real Pi on another machine's core linked to the bot's (Telegram);
//! - a reply `2` to an ask's card picks its second option (on Telegram in Ada's private
//!   chat), and an ask answered on the CLI has its card edited to say so;
//! - a real Pi in its place (topic or thread, there as soon as it registers, its first
//!   message saying so): `stop then …` typed there aborts its long bash call at once and
//!   the steer starts its next turn; `status` there shows the session, not the core; when
//!   Pi closes the place says so once, its open card loses its buttons (reactions) and
//!   says the answer waits, and a reply in the place still answers it; a restart of the
//!   core and its bridge says no ending again;
//! - a session that vanishes without a goodbye is announced once in its place, with what
//!   it was doing; its card says so and, when it comes back (the same place), offers its
//!   options again;
//! - a real Pi's run ends: its result (Markdown rendered as the chat shows it: the checks
//!   of the formatting itself are the phone's own, [`telegram_formatting`] and
//!   [`matrix_formatting`]) is in its place; a run that ends on `ask_human` has none, the
//!   run its answer starts has one;
//! - a bridge that was down (`shepherd bot` killed) posts what it missed once, the older
//!   part of a long backlog as one line first, in the session's place; a second restart
//!   posts nothing again.

use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;
use shepherd_core::protocol::{DeliveryKind, ResultsMode, requests};
use shepherd_harness::fake_model::{FakeModel, Reply};
use shepherd_harness::phone::{MatrixPhone, PHONE_WAIT, Phone, Said, TelegramPhone};
use shepherd_harness::pi_process::{PiOptions, PiSession};
use shepherd_harness::synapse::skip_e2e;
use shepherd_harness::{Core, eventually};

const WAIT: Duration = PHONE_WAIT;

/// A core whose bridge serves `phone`, ready.
async fn setup(phone: &mut impl Phone) -> Result<Core> {
    let core = Core::start_for(&*phone, &[]).await?;
    phone.ready().await?;
    Ok(core)
}

/// Whether `m` offers options to choose from: Telegram's buttons, Matrix's keycap
/// reactions.
fn has_choices(m: &Said) -> bool {
    !m.buttons.is_empty() || !m.marks.is_empty()
}

#[tokio::test]
async fn on_telegram_a_real_pi_asks_and_the_human_answers_it() -> Result<()> {
    asks_on(TelegramPhone::start().await?, |_, _| Ok(())).await
}

#[tokio::test]
async fn on_matrix_a_real_pi_asks_and_the_human_answers_it() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    asks_on(MatrixPhone::start().await?, |phone, card| {
        let card = phone.message(card)?;
        assert!(
            card.html().is_some(),
            "formatted_body HTML with a plain body"
        );
        Ok(())
    })
    .await
}

/// A real Pi on another machine's core, linked to the bot's core through `shepherd link`:
/// its `ask_human` is a card on the phone (`ask #far:N`, in its `far · …` topic); the
/// human's button answers it there, the model sees the answer, and the session file holds
/// it once.
#[tokio::test]
async fn on_telegram_a_real_pi_on_a_linked_host_asks_and_the_phone_answers_it_once() -> Result<()> {
    let mut phone = TelegramPhone::start().await?;
    let far = Core::start().await?;
    let (_config, config_path) = Core::hosts_config(&[("far", &far)])?;
    let home = Core::start_for(&phone, &[("SHEPHERD_CONFIG", &config_path)]).await?;
    phone.ready().await?;
    let model = deploy_model().await?;
    let mut opts = PiOptions::new(far.agent_dir());
    opts.name = Some("far-asker".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    far.connected_session("far-asker", WAIT).await?;
    eventually(WAIT, "far-asker mirrored at home", || {
        let hosts = home.cli_json(&["hosts"]).ok()?;
        (hosts[0]["state"] == "connected" && hosts[0]["sessions"] == 1).then_some(())
    })
    .await?;
    pi.prompt("deploy when the human says so").await?;

    let card = phone
        .bot_says(|m| m.text.contains("Deploy the release?") && phone.is_open_card(m))
        .await?;
    assert!(card.text.contains("#far:"), "{}", card.text);
    let place = phone.place_of("far · far-asker").await?;
    assert_eq!(phone.thread_of(&card), place, "in the far session's topic");
    phone.choose(&card, 1).await?;
    let requests = model.wait_requests(2, WAIT).await?;
    assert!(requests[1].transcript().contains("ship-it-now"));
    let edited = phone.bot_says(|m| m.id == card.id && m.edited).await?;
    assert!(
        edited.text.contains("ship-it-now") && !phone.is_open_card(&edited),
        "{edited:?}"
    );
    pi.wait_settled(WAIT).await?;
    let file = pi.session_file().await?;
    assert_eq!(
        shepherd_harness::pi_process::user_messages_containing(&file, "ship-it-now")?,
        1
    );
    assert_eq!(far.cli_json(&["asks", "--all"])?[0]["state"], "answered");
    pi.shutdown().await?;
    Ok(())
}

/// A model whose run asks the human `Deploy the release?` (`ship-it-now` or `hold`) and,
/// once it has the answer `ship-it-now`, ends with `Shipping.`.
pub async fn deploy_model() -> Result<FakeModel> {
    FakeModel::start(|req| {
        if req.transcript().contains("ship-it-now") {
            Reply::text("Shipping.")
        } else {
            Reply::tool(
                "ask_human",
                json!({"question": "Deploy the release?", "options": ["ship-it-now", "hold"]}),
            )
        }
    })
    .await
}

/// A real Pi's `ask_human` is a card naming the session and offering its options; the
/// human chooses one (a button, a keycap reaction): the model sees the answer and the
/// card says it and who gave it, no longer open. `card_format`: the phone's own checks of
/// the card.
async fn asks_on<P: Phone>(
    mut phone: P,
    card_format: impl Fn(&P, &Said) -> Result<()>,
) -> Result<()> {
    let core = setup(&mut phone).await?;
    let model = deploy_model().await?;
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some("asker".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    // The ask goes out from the model's first turn: prompt once the extension is in.
    core.connected_session("asker", WAIT).await?;
    pi.prompt("deploy when the human says so").await?;

    let card = phone
        .bot_says(|m| m.text.contains("Deploy the release?") && phone.is_open_card(m))
        .await?;
    assert!(
        card.text.contains("asker"),
        "the card names the session: {}",
        card.text
    );
    phone.offers(&card, &["ship-it-now", "hold"]).await?;
    card_format(&phone, &card)?;
    if let Some(shown) = phone.choose(&card, 1).await? {
        assert!(shown.contains("ship-it-now"), "{shown:?}");
    }

    let requests = model.wait_requests(2, WAIT).await?;
    assert!(
        requests[1].transcript().contains("ship-it-now"),
        "the model sees the answer"
    );
    let edited = phone.bot_says(|m| m.id == card.id && m.edited).await?;
    assert!(
        edited.text.contains("ship-it-now") && edited.text.contains(phone.human()),
        "the card says the answer and who gave it: {}",
        edited.text
    );
    assert!(
        !phone.is_open_card(&edited),
        "an answered card is closed (no buttons): {edited:?}"
    );
    pi.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn on_telegram_a_reply_answers_an_ask_and_a_cli_answer_edits_the_card() -> Result<()> {
    // In Ada's private chat; the old card's button, pressed once answered, says who won
    // (unless the card has lost its buttons already: then it cannot be pressed at all).
    let stale = async |phone: &TelegramPhone, card: &Said| {
        if let Some(answer) = phone.press_as_seen(card, 1).await? {
            assert!(
                answer.contains("Already answered by telegram:@ada"),
                "{answer}"
            );
        }
        Ok(())
    };
    answers_on(TelegramPhone::start_private().await?, stale, |_, _| Ok(())).await
}

#[tokio::test]
async fn on_matrix_a_reply_answers_an_ask_and_a_cli_answer_edits_the_card() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    // The edit is a real `m.replace` event from the bot.
    let replaced = |phone: &MatrixPhone, card: &Said| {
        let raw_edit = phone
            .ada
            .events(&phone.room)
            .into_iter()
            .find(|e| {
                e["content"]["m.relates_to"]["rel_type"] == "m.replace"
                    && e["content"]["m.relates_to"]["event_id"] == card.id.as_str()
            })
            .context("an m.replace event for the card")?;
        assert_eq!(raw_edit["sender"], phone.bot.as_str());
        Ok(())
    };
    let stale = async |_: &MatrixPhone, _: &Said| Ok(());
    answers_on(MatrixPhone::start().await?, stale, replaced).await
}

/// A protocol-level session's ask: a reply `2` to its card picks the second option (the
/// session gets it as an answer from the human) and the card says so; an ask answered on
/// the CLI edits its card to say so. `stale` and `edited`: the phone's own checks, once
/// the answer is in and once the CLI's edit is.
async fn answers_on<P: Phone>(
    mut phone: P,
    stale: impl AsyncFn(&P, &Said) -> Result<()>,
    edited: impl Fn(&P, &Said) -> Result<()>,
) -> Result<()> {
    let core = setup(&mut phone).await?;
    let mut pi = core.pi("s1", "builder").await?;
    let ask = |q: &str| requests::Ask {
        id: 0,
        question: q.into(),
        options: vec!["merge".into(), "wait".into()],
        details: None,
        key: None,
    };
    pi.client.call(ask("Merge PR 7?")).await?;
    let card = phone
        .bot_says(|m| m.text.contains("Merge PR 7?") && phone.is_open_card(m))
        .await?;
    phone.offers(&card, &["merge", "wait"]).await?;

    // A text reply to the card: "2" picks the second option.
    phone.reply(&card, "2").await?;
    let delivery = pi.next_delivery(WAIT).await?;
    assert_eq!(
        (delivery.kind, delivery.text.as_str()),
        (DeliveryKind::Answer, "wait")
    );
    assert_eq!(delivery.from.name, phone.human());
    pi.ack(&[delivery.id]).await?;
    stale(&phone, &card).await?;
    let answered = phone.bot_says(|m| m.id == card.id && m.edited).await?;
    assert!(answered.text.contains("wait"), "{}", answered.text);

    // Answered on the CLI: the card is edited to say so.
    pi.client.call(ask("Tag the release?")).await?;
    let card2 = phone
        .bot_says(|m| m.text.contains("Tag the release?") && phone.is_open_card(m))
        .await?;
    let asks = core.cli_json(&["asks"])?;
    let id = asks
        .as_array()
        .context("asks")?
        .iter()
        .find(|a| a["question"] == "Tag the release?")
        .context("listed")?["id"]
        .to_string();
    let out = core.cli(&["answer", &id, "yes, v1.2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let edited2 = phone
        .bot_says(|m| m.id == card2.id && m.text.contains("yes, v1.2"))
        .await?;
    assert!(edited2.edited, "{edited2:?}");
    assert!(edited2.text.contains("cli"), "{}", edited2.text);
    edited(&phone, &card2)?;
    Ok(())
}

#[tokio::test]
async fn on_telegram_a_real_pi_in_its_place_is_interrupted_and_its_closing_is_said_once()
-> Result<()> {
    interrupted_and_closed_on(TelegramPhone::start().await?).await
}

#[tokio::test]
async fn on_matrix_a_real_pi_in_its_place_is_interrupted_and_its_closing_is_said_once() -> Result<()>
{
    if skip_e2e() {
        return Ok(());
    }
    interrupted_and_closed_on(MatrixPhone::start().await?).await
}

async fn interrupted_and_closed_on(mut phone: impl Phone) -> Result<()> {
    let core = setup(&mut phone).await?;
    let p = phone.prefix();
    let model = FakeModel::start(|req| {
        let t = req.transcript();
        if t.contains("Answer to your question") {
            Reply::text("Writing the guide.")
        } else if t.contains("now-write-docs") {
            Reply::tool(
                "ask_human",
                json!({"question": "Which docs first?", "options": ["api", "guide"]}),
            )
        } else {
            Reply::tool("bash", json!({"command": "sleep 60"}))
        }
    })
    .await?;
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some("runner".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    core.connected_session("runner", WAIT).await?;

    // The place comes with the registration, its first message saying so.
    let place = phone.place_of("runner").await?;
    let started = phone
        .bot_says(|m| phone.thread_of(m) == place && m.text.contains("runner started"))
        .await?;
    let first = phone
        .all_said()
        .into_iter()
        .find(|m| phone.thread_of(m) == place)
        .context("the place's first message")?;
    assert_eq!(first.id, started.id, "{}", first.text);

    pi.prompt("run the long job").await?;
    eventually(WAIT, "the session in its bash call", || {
        core.session_named("runner")
            .filter(|v| v["status"] == "tool:bash")
    })
    .await?;
    let asked = std::time::Instant::now();
    phone
        .type_in(&place, &format!("{p}stop then now-write-docs"))
        .await?;
    let reply = phone
        .bot_says(|m| phone.thread_of(m) == place && m.text.contains("⏹ stopping"))
        .await?;
    assert!(
        reply
            .text
            .contains("⏹ stopping runner (it was running tool:bash). Your steer follows."),
        "{}",
        reply.text
    );
    let requests = model.wait_requests(2, WAIT).await?;
    assert!(
        asked.elapsed() < Duration::from_secs(20),
        "the run ended promptly, not after the 60 s sleep: {:?}",
        asked.elapsed()
    );
    assert!(
        requests[1].transcript().contains("now-write-docs"),
        "the steer reaches the model after the abort"
    );

    let card = phone
        .bot_says(|m| m.text.contains("Which docs first?") && phone.is_open_card(m))
        .await?;
    assert_eq!(phone.thread_of(&card), place, "in the session's place");
    phone.offers(&card, &["api", "guide"]).await?;

    // `status` in the place: this session, not the core.
    phone.type_in(&place, &format!("{p}status")).await?;
    let status = phone
        .bot_says(|m| phone.thread_of(m) == place && m.text.contains("now: "))
        .await?;
    assert!(
        status.text.contains("runner")
            && status.text.contains("model: fake/fake-model")
            && status.text.contains("❓ #")
            && status.text.contains("Which docs first?"),
        "{}",
        status.text
    );
    assert!(
        !status.text.contains("uptime"),
        "not the core's status: {}",
        status.text
    );

    // Pi closes: said once, its topic closed, and the card waits without its buttons
    // (reactions).
    pi.shutdown().await?;
    phone
        .bot_says(|m| phone.thread_of(m) == place && m.text.contains("⏹ runner closed"))
        .await?;
    if phone.place_closed(&place).is_some() {
        eventually(WAIT, "the topic closed", || {
            phone.place_closed(&place).filter(|c| *c)
        })
        .await?;
    }
    let marked = phone
        .bot_says(|m| {
            m.id == card.id
                && m.text.contains("your answer waits for its return")
                && !has_choices(m)
        })
        .await?;
    assert!(marked.text.contains("⏹ session closed"), "{}", marked.text);

    // A reply in the place still answers it; the answer waits in the session's mailbox.
    phone.reply_in_place(&card, "2").await?;
    let answered_by = format!("answered by {}", phone.human());
    phone
        .bot_says(|m| m.id == card.id && m.text.contains(&answered_by))
        .await?;
    let asks = core.cli_json(&["asks", "--all"])?;
    assert_eq!(asks[0]["answer"], "guide", "{asks}");
    let all = core.cli_json(&["sessions", "--all"])?;
    let runner = all
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == "runner"))
        .context("runner listed")?;
    assert_eq!(runner["pending_messages"], 1, "the answer waits: {runner}");

    // A restart of the core and its bridge (a resync) says no ending again.
    let mut core = core;
    core.restart().await?;
    phone.bridge_back(|| core.log(), 2).await?;
    // The bridge is back (and has resynchronised) once it answers in the place.
    phone.type_in(&place, &format!("{p}status")).await?;
    phone
        .bot_says(|m| phone.thread_of(m) == place && m.text.contains("now: nothing (offline)"))
        .await?;
    assert_eq!(
        phone.count_said("runner closed"),
        1,
        "the ending is said once"
    );
    assert_eq!(phone.count_said("runner started"), 1, "one start");
    Ok(())
}

#[tokio::test]
async fn on_telegram_a_session_that_quits_while_the_core_is_down_is_announced_once_and_its_return_too()
-> Result<()> {
    quits_while_down_on(TelegramPhone::start().await?).await
}

#[tokio::test]
async fn on_matrix_a_session_that_quits_while_the_core_is_down_is_announced_once_and_its_return_too()
-> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    quits_while_down_on(MatrixPhone::start().await?).await
}

/// Two real Pi sessions of `model`, `quitter` and `stayer` (in `cwd`, else the harness's
/// default directory), both connected; with the quitter's id.
pub(crate) async fn quitter_and_stayer(
    core: &Core,
    model: &FakeModel,
    cwd: Option<&std::path::Path>,
) -> Result<(PiSession, PiSession, String)> {
    let spawn = |name: &str| {
        let mut opts = PiOptions::new(core.agent_dir());
        opts.name = Some(name.into());
        if let Some(cwd) = cwd {
            opts.cwd = cwd.to_path_buf();
        }
        PiSession::spawn(model, opts)
    };
    let quitter = spawn("quitter").await?;
    let stayer = spawn("stayer").await?;
    let quitter_id = core.connected_session("quitter", WAIT).await?["id"]
        .as_str()
        .context("an id")?
        .to_string();
    core.connected_session("stayer", WAIT).await?;
    Ok((quitter, stayer, quitter_id))
}

/// Two real Pi sessions; the core stops; one quits meanwhile. Once the core is back its
/// ending is said once in its place (which closes), and not the other's, which comes back
/// on its own; another restart says nothing again. When the session registers again, its
/// place reopens and says it is back.
async fn quits_while_down_on(mut phone: impl Phone) -> Result<()> {
    let mut core = setup(&mut phone).await?;
    let model = FakeModel::start(|_| Reply::text("ok")).await?;
    let (quitter, stayer, quitter_id) = quitter_and_stayer(&core, &model, None).await?;
    let place = phone.place_of("quitter").await?;
    let stayer_place = phone.place_of("stayer").await?;

    core.terminate()?;
    quitter.shutdown().await?;
    core.restart().await?;
    phone.bridge_back(|| core.log(), 2).await?;
    let said = phone
        .bot_says(|m| m.text.contains("quitter ended while shepherd was away"))
        .await
        .with_context(|| core.log())?;
    assert_eq!(phone.thread_of(&said), place, "in its place");
    assert!(said.text.contains("is gone"), "{}", said.text);
    if phone.place_closed(&place).is_some() {
        eventually(WAIT, "the topic closed", || {
            phone.place_closed(&place).filter(|c| *c)
        })
        .await?;
        assert_eq!(phone.place_closed(&stayer_place), Some(false));
    }
    core.connected_session("stayer", WAIT).await?;

    // Another restart (and resync) says it again nowhere; the stayer was never gone.
    core.restart().await?;
    phone.bridge_back(|| core.log(), 3).await?;
    core.connected_session("stayer", WAIT).await?;
    let p = phone.prefix();
    phone.type_in(&stayer_place, &format!("{p}status")).await?;
    phone
        .bot_says(|m| phone.thread_of(m) == stayer_place && m.text.contains("now: "))
        .await?;
    assert_eq!(phone.count_said("quitter ended while"), 1, "said once");
    assert_eq!(
        phone.count_said("stayer ended"),
        0,
        "the stayer never ended"
    );

    // It comes back: its place reopens and says so.
    let dir = tempfile::tempdir()?;
    let _back =
        shepherd_harness::Pi::register(&core.socket(), &quitter_id, "quitter", dir.path()).await?;
    phone
        .bot_says(|m| phone.thread_of(m) == place && m.text.contains("▶️ quitter is back"))
        .await?;
    if phone.place_closed(&place).is_some() {
        eventually(WAIT, "the topic reopened", || {
            phone.place_closed(&place).filter(|c| !*c)
        })
        .await?;
    }
    stayer.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn on_telegram_a_session_that_dies_is_announced_once_with_what_it_was_doing() -> Result<()> {
    dies_on(TelegramPhone::start().await?).await
}

#[tokio::test]
async fn on_matrix_a_session_that_dies_is_announced_once_with_what_it_was_doing() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    dies_on(MatrixPhone::start().await?).await
}

async fn dies_on(mut phone: impl Phone) -> Result<()> {
    let core = setup(&mut phone).await?;
    let mut pi = core.pi("dies", "crasher").await?;
    let place = phone.place_of("crasher").await?;
    pi.client
        .call(requests::Ask {
            question: "Keep the old API?".into(),
            options: vec!["yes".into(), "no".into()],
            ..Default::default()
        })
        .await?;
    let card = phone
        .bot_says(|m| m.text.contains("Keep the old API?") && phone.is_open_card(m))
        .await?;
    phone.offers(&card, &["yes", "no"]).await?;
    pi.client
        .call(requests::Update {
            status: Some("tool:bash".into()),
            ..Default::default()
        })
        .await?;
    drop(pi);
    let ended = phone.bot_says(|m| m.text.contains("💥 crasher")).await?;
    assert_eq!(phone.thread_of(&ended), place);
    assert!(
        ended
            .text
            .contains("💥 crasher exited while running tool:bash"),
        "{}",
        ended.text
    );
    phone
        .bot_says(|m| m.id == card.id && m.text.contains("💥 session exited") && !has_choices(m))
        .await?;

    // Coming back reuses the place, starts nothing new, and gives the card its options
    // back.
    let _pi = core.pi("dies", "crasher").await?;
    let restored = phone
        .bot_says(|m| m.id == card.id && has_choices(m))
        .await?;
    assert!(
        !restored.text.contains("waits for its return"),
        "{}",
        restored.text
    );
    phone.offers(&restored, &["yes", "no"]).await?;
    phone
        .type_in(&place, &format!("{}status", phone.prefix()))
        .await?;
    let status = phone.bot_says(|m| m.text.contains("now: idle")).await?;
    assert_eq!(phone.thread_of(&status), place);
    if phone.names_places() {
        assert_eq!(phone.place_names().len(), 1, "one topic");
    }
    assert_eq!(phone.count_said("crasher exited"), 1);
    assert_eq!(
        phone.count_said("crasher started"),
        1,
        "the place is reused"
    );
    Ok(())
}

/// A result, as the bot posts a run's final text.
fn is_result(m: &Said) -> bool {
    m.text.contains("· result")
}

/// A run's final text in Markdown, as models write it (with HTML that must stay text).
const MARKDOWN_RESULT: &str = "## Login fixed\n\nFixed the **login redirect** (see [the PR](https://x.test/pr/7)).\n\n- All `214` tests pass.\n- <script>alert(1)</script> stays text\n\n```sh\ncargo test\n```";

#[tokio::test]
async fn on_telegram_a_real_pi_run_ends_and_its_result_shows_in_its_place() -> Result<()> {
    result_shown_on(TelegramPhone::start().await?, telegram_formatting).await
}

#[tokio::test]
async fn on_matrix_a_real_pi_run_ends_and_its_result_shows_in_its_place() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    result_shown_on(MatrixPhone::start().await?, matrix_formatting).await
}

/// The result's Markdown as Telegram shows it: a heading as a bold line, bold, a link, a
/// list as `• ` lines, inline code and a code block, as entities over the plain text.
fn telegram_formatting(phone: &TelegramPhone, result: &Said) -> Result<()> {
    let result = phone.message(result)?;
    let entity = |kind: &str, content: &str| {
        result.entities.iter().any(|e| {
            let (at, len) = (e["offset"].as_u64(), e["length"].as_u64());
            let utf16: Vec<u16> = result.text.encode_utf16().collect();
            e["type"] == kind
                && at.zip(len).is_some_and(|(at, len)| {
                    utf16
                        .get(at as usize..(at + len) as usize)
                        .is_some_and(|s| String::from_utf16_lossy(s) == content)
                })
        })
    };
    assert!(entity("bold", "Login fixed"), "{:?}", result.entities);
    assert!(entity("bold", "login redirect"), "{:?}", result.entities);
    assert!(entity("text_link", "the PR"), "{:?}", result.entities);
    assert!(entity("code", "214"), "{:?}", result.entities);
    assert!(entity("pre", "cargo test"), "{:?}", result.entities);
    assert!(
        result
            .entities
            .iter()
            .any(|e| e["type"] == "text_link" && e["url"] == "https://x.test/pr/7")
    );
    assert!(
        result
            .entities
            .iter()
            .any(|e| e["type"] == "pre" && e["language"] == "sh")
    );
    Ok(())
}

/// The result's Markdown as Matrix shows it: the HTML with a heading as a bold line, bold,
/// a link, a list as `• ` lines, inline code and a code block, the HTML in it escaped.
fn matrix_formatting(phone: &MatrixPhone, result: &Said) -> Result<()> {
    let result = phone.message(result)?;
    let html = result.html().unwrap_or_default();
    assert!(
        html.contains(
            "<b>Login fixed</b><br><br>Fixed the <b>login redirect</b> (see \
             <a href=\"https://x.test/pr/7\">the PR</a>).<br><br>• All <code>214</code> tests pass.<br>\
             • &lt;script&gt;alert(1)&lt;/script&gt; stays text<br><br>\
             <pre><code class=\"language-sh\">cargo test</code></pre>"
        ),
        "{html}"
    );
    assert!(!html.contains("<script"), "{html}");
    for markup in ["**", "##", "```", "[the PR]"] {
        assert!(!html.contains(markup), "{markup} in {html}");
    }
    Ok(())
}

async fn result_shown_on<P: Phone>(
    mut phone: P,
    formatting: impl Fn(&P, &Said) -> Result<()>,
) -> Result<()> {
    let core = setup(&mut phone).await?;
    let model = FakeModel::start(|req| {
        let t = req.transcript();
        if t.contains("ship-it-now") {
            Reply::text("Deployed as you said: v2.3 is live.")
        } else if t.contains("deploy when") {
            Reply::tool(
                "ask_human",
                json!({"question": "Deploy the release?", "options": ["ship-it-now", "hold"]}),
            )
        } else {
            Reply::text(MARKDOWN_RESULT)
        }
    })
    .await?;
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some("runner".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    core.connected_session("runner", WAIT).await?;
    pi.prompt("fix the login redirect").await?;

    let result = phone.bot_says(is_result).await?;
    assert!(
        result.text.starts_with("🏁 runner") && result.text.contains("All 214 tests pass."),
        "{}",
        result.text
    );
    // Its Markdown as the human reads it: the plain text without markup, the HTML in it
    // as text; how it is formatted is the phone's own check.
    assert!(
        result.text.contains(
            "Login fixed\n\nFixed the login redirect (see the PR).\n\n• All 214 tests pass.\n\
             • <script>alert(1)</script> stays text\n\ncargo test"
        ),
        "{}",
        result.text
    );
    for markup in ["**", "##", "```", "[the PR]"] {
        assert!(!result.text.contains(markup), "{markup} in {}", result.text);
    }
    formatting(&phone, &result)?;
    let place = phone.place_of("runner").await?;
    assert_eq!(phone.thread_of(&result), place, "in the session's place");

    // A run that ends on ask_human (its tool ends the run) has no result; the run the
    // answer starts has one, in the same place.
    pi.wait_settled(WAIT).await?;
    pi.prompt("deploy when the human says so").await?;
    let card = phone
        .bot_says(|m| m.text.contains("Deploy the release?") && phone.is_open_card(m))
        .await?;
    assert_eq!(phone.thread_of(&card), place, "one place per session");
    phone.choose(&card, 1).await?;
    let deployed = phone.bot_says(|m| m.text.contains("v2.3 is live")).await?;
    assert!(is_result(&deployed), "{}", deployed.text);
    assert_eq!(phone.thread_of(&deployed), place);
    let results: Vec<String> = phone
        .all_said()
        .into_iter()
        .filter(is_result)
        .map(|m| m.text)
        .collect();
    assert_eq!(
        results.len(),
        2,
        "the ask's run posted nothing: {results:?}"
    );
    let kept = core.cli_json(&["reports", "runner"])?;
    assert_eq!(kept.as_array().map(Vec::len), Some(2), "{kept}");
    assert_eq!(kept[0]["kind"], "result");
    pi.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn on_telegram_a_bridge_that_was_down_posts_what_it_missed_once() -> Result<()> {
    missed_once_on(TelegramPhone::start().await?).await
}

#[tokio::test]
async fn on_matrix_a_bridge_that_was_down_posts_what_it_missed_once() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    missed_once_on(MatrixPhone::start().await?).await
}

async fn missed_once_on(mut phone: impl Phone) -> Result<()> {
    // The core runs alone; the bridge is `shepherd bot`, which can go down and come back.
    let core = Core::start().await?;
    let more = [("RUST_LOG", "info,shepherd_bridges::relay::reports=debug")];
    let mut a = core.pi("miss-a", "alpha").await?;
    let mut b = core.pi("miss-b", "beta").await?;
    a.client.report("before the bridge ever ran").await?;

    let mut bot = core.spawn_bot_for(&phone, &more)?;
    phone.ready().await.with_context(|| bot.log())?;
    // Its first connection to this core: it starts from the newest report, not the history.
    eventually(WAIT, "the bridge's first catch-up", || {
        bot.log()
            .contains("posting reports from now on")
            .then_some(())
    })
    .await?;
    let live = a.client.report("live: bridge up").await?;
    phone
        .bot_says(|m| m.text.contains("live: bridge up"))
        .await?;
    // Killed once it has recorded the post (a kill between the two would post it again).
    let recorded = format!("reports up to {} posted", live.id);
    eventually(WAIT, "the post recorded", || {
        bot.log().contains(&recorded).then_some(())
    })
    .await?;
    bot.kill9();

    for i in 1..=7 {
        a.client
            .call(requests::RunResult {
                id: 0,
                text: format!("alpha missed {i}"),
                results: None,
                key: None,
            })
            .await?;
    }
    b.client.report("beta missed 1").await?;
    b.client.report("beta missed 2").await?;
    a.client
        .call(requests::RunResult {
            id: 0,
            text: "alpha held back".into(),
            results: Some(ResultsMode::Off),
            key: None,
        })
        .await?;

    let mut bot = core.spawn_bot_for(&phone, &more)?;
    // Said while the bridge comes back: in its catch-up, its events or both, posted once.
    b.client.report("beta during the catch-up").await?;
    phone
        .bot_says(|m| m.text.contains("alpha missed 7"))
        .await
        .with_context(|| bot.log())?;
    phone.bot_says(|m| m.text.contains("beta missed 2")).await?;
    // An event after the catch-up: once the bridge posts it, the catch-up is over.
    let back = a.client.report("live: back again").await?;
    phone
        .bot_says(|m| m.text.contains("live: back again"))
        .await?;
    let recorded = format!("reports up to {} posted", back.id);
    eventually(WAIT, "the post recorded", || {
        bot.log().contains(&recorded).then_some(())
    })
    .await?;
    let check = || {
        let texts: Vec<String> = phone.all_said().into_iter().map(|m| m.text).collect();
        for needle in [
            "live: bridge up",
            "alpha missed 3",
            "alpha missed 4",
            "alpha missed 5",
            "alpha missed 6",
            "alpha missed 7",
            "beta missed 1",
            "beta missed 2",
            "beta during the catch-up",
            "… and 2 earlier (shepherd reports alpha)",
            "live: back again",
        ] {
            assert_eq!(phone.count_said(needle), 1, "{needle:?} once: {texts:#?}");
        }
        for needle in [
            "before the bridge ever ran",
            "alpha missed 1",
            "alpha missed 2",
            "alpha held back",
            "earlier (shepherd reports beta)",
        ] {
            assert_eq!(
                phone.count_said(needle),
                0,
                "{needle:?} not posted: {texts:#?}"
            );
        }
    };
    check();

    // The line for the older part comes first, in alpha's place.
    let said = phone.all_said();
    let at = |needle: &str| {
        said.iter()
            .position(|m| m.text.contains(needle))
            .with_context(|| format!("{needle:?} not said"))
    };
    let earlier = at("earlier (shepherd reports alpha)")?;
    let alpha = phone.thread_of(&said[at("live: bridge up")?]);
    assert_eq!(phone.thread_of(&said[earlier]), alpha, "in alpha's place");
    assert_eq!(phone.thread_of(&said[at("alpha missed 3")?]), alpha);
    assert!(earlier < at("alpha missed 3")?, "the line comes first");
    if phone.names_places() {
        assert_eq!(phone.place_of("alpha").await?, alpha, "alpha's topic");
    }

    // A second restart posts nothing again.
    bot.kill9();
    let _bot = core.spawn_bot_for(&phone, &more)?;
    a.client.report("live: third start").await?;
    phone
        .bot_says(|m| m.text.contains("live: third start"))
        .await?;
    check();
    Ok(())
}
