//! The Matrix bridge end to end: the real `shepherd up` (core + bridge in one process)
//! against a real Synapse (pinned, from PyPI), configured only through environment
//! variables, with a second Matrix client (matrix-sdk, its own crypto store) playing the
//! human, and Pi sessions on the other side (a real Pi for the main scenario,
//! protocol-level sessions for the rest).

use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::json;
use shepherd_core::protocol::{DeliveryKind, Role, VerdictKind, requests};
use shepherd_harness::fake_model::{FakeModel, Reply};
use shepherd_harness::matrix_user::{MatrixUser, Message};
use shepherd_harness::pi_process::{PiOptions, PiSession};
use shepherd_harness::synapse::{Method, Synapse, skip_e2e, unique};
use shepherd_harness::{Core, Pi, eventually, registration};

const WAIT: Duration = Duration::from_secs(45);
const BOT_PASSWORD: &str = "bot-password";
const KEY1: &str = "1\u{fe0f}\u{20e3}";
const KEY2: &str = "2\u{fe0f}\u{20e3}";

#[derive(Clone, Copy, PartialEq)]
enum RoomMode {
    /// No `SHEPHERD_MATRIX__ROOM`: the bot creates a private room and invites Ada.
    BotCreates,
    /// Ada creates a plain room, invites the bot (and Mallory), and configures it.
    Plain,
    /// The same, encrypted.
    Encrypted,
}

/// A test's own users on the binary's shared Synapse, the core and its bridge.
struct Setup {
    synapse: Synapse,
    core: Core,
    /// The bot's MXID (`@bot-3:localhost`).
    bot_id: String,
    ada: MatrixUser,
    mallory: Option<MatrixUser>,
    room: String,
    /// An admin's access token, for the admin API.
    admin: String,
    /// The bridge as its own `shepherd bot` (with [`setup_bot`]), else inside the core.
    bot: Option<shepherd_harness::Bot>,
    /// The bridge's environment (for starting `shepherd bot` again).
    bridge_env: Vec<(&'static str, String)>,
}

impl Setup {
    /// Messages the bot sent to the room, as Ada sees them now.
    fn bot_messages(&self) -> Vec<Message> {
        self.ada
            .messages(&self.room)
            .into_iter()
            .filter(|m| m.sender == self.bot_id)
            .collect()
    }

    /// Wait for a message from the bot for which `pred` holds.
    async fn bot_says(&self, pred: impl Fn(&Message) -> bool) -> Result<Message> {
        self.ada
            .wait_for_message(&self.room, WAIT, |m| m.sender == self.bot_id && pred(m))
            .await
    }

    /// The bot's devices, from the admin API.
    async fn bot_devices(&self) -> Result<Vec<String>> {
        self.synapse.devices(&self.admin, &self.bot_id).await
    }

    /// Where the bridge logs: the core's log, or `shepherd bot`'s.
    fn bridge_log(&self) -> String {
        match &self.bot {
            Some(bot) => bot.log(),
            None => self.core.log(),
        }
    }

    /// Start the bridge again as `shepherd bot` (after [`setup_bot`] and a kill).
    fn spawn_bot(&mut self) -> Result<()> {
        let env: Vec<(&str, &str)> = self
            .bridge_env
            .iter()
            .map(|(k, v)| (*k, v.as_str()))
            .collect();
        self.bot = Some(self.core.spawn_bot(&env)?);
        Ok(())
    }

    /// Wait until the core log says the bridge started `n` times (after its first sync).
    async fn bridge_started(&self, n: usize) -> Result<()> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let log = self.bridge_log();
            if log.matches("matrix bridge started").count() >= n {
                return Ok(());
            }
            if log.matches("matrix bridge stopped").count() >= n
                || tokio::time::Instant::now() > deadline
            {
                bail!("the Matrix bridge did not start (#{n}):\n{log}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn setup(mode: RoomMode, with_mallory: bool) -> Result<Setup> {
    setup_with(mode, with_mallory, false).await
}

/// The core alone, and the bridge as `shepherd bot` (which can go down and come back).
async fn setup_bot(mode: RoomMode) -> Result<Setup> {
    setup_with(mode, false, true).await
}

async fn setup_with(mode: RoomMode, with_mallory: bool, separate_bot: bool) -> Result<Setup> {
    let synapse = Synapse::shared().await?;
    let bot_id = synapse
        .register(&unique("bot"), BOT_PASSWORD, false)
        .await?;
    let (ada_name, root) = (unique("ada"), unique("root"));
    let ada_id = synapse.register(&ada_name, "ada-password", false).await?;
    synapse.register(&root, "root-password", true).await?;
    let admin = synapse.login(&root, "root-password").await?;
    let ada = MatrixUser::login(&synapse.url(), &ada_name, "ada-password").await?;
    let mallory = if with_mallory {
        let name = unique("mallory");
        synapse.register(&name, "mallory-password", false).await?;
        Some(MatrixUser::login(&synapse.url(), &name, "mallory-password").await?)
    } else {
        None
    };
    let url = synapse.url();
    let mut env = vec![
        ("SHEPHERD_MATRIX__HOMESERVER", url.clone()),
        ("SHEPHERD_MATRIX__USER_ID", bot_id.clone()),
        ("SHEPHERD_MATRIX_PASSWORD", BOT_PASSWORD.to_string()),
        ("SHEPHERD_MATRIX__ALLOWED_USERS", format!("[\"{ada_id}\"]")),
    ];
    let precreated = match mode {
        RoomMode::BotCreates => None,
        RoomMode::Plain | RoomMode::Encrypted => {
            let mut invite = vec![bot_id.as_str()];
            if let Some(mallory) = &mallory {
                invite.push(mallory.user_id());
            }
            let room = ada
                .create_room("shepherd", &invite, mode == RoomMode::Encrypted)
                .await?;
            env.push(("SHEPHERD_MATRIX__ROOM", room.clone()));
            Some(room)
        }
    };
    if separate_bot {
        env.push((
            "RUST_LOG",
            "info,shepherd_bridges::relay::reports=debug".into(),
        ));
    }
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (core, bot) = if separate_bot {
        let core = Core::start().await?;
        let bot = core.spawn_bot(&env_refs)?;
        (core, Some(bot))
    } else {
        (Core::start_with(&env_refs).await?, None)
    };
    let room = match precreated {
        Some(room) => room,
        None => ada.accept_invite(None, WAIT).await?,
    };
    if let Some(mallory) = &mallory {
        mallory.accept_invite(Some(&room), WAIT).await?;
    }
    let s = Setup {
        synapse,
        core,
        bot_id,
        ada,
        mallory,
        room,
        admin,
        bot,
        bridge_env: env,
    };
    s.bridge_started(1).await?;
    s.ada.wait_for_member(&s.room, &s.bot_id, WAIT).await?;
    Ok(s)
}

/// An ask from a protocol-level session.
async fn ask(pi: &mut shepherd_harness::Pi, question: &str, options: &[&str]) -> Result<()> {
    let (question, options) = (
        question.to_string(),
        options.iter().map(|o| o.to_string()).collect::<Vec<_>>(),
    );
    pi.client
        .call(requests::Ask {
            id: 0,
            question: question.clone(),
            options: options.clone(),
            details: None,
            key: None,
        })
        .await?;
    Ok(())
}

/// The thread a message is in, or the thread it starts.
fn thread_of(m: &Message) -> String {
    m.thread_root().unwrap_or(&m.event_id).to_string()
}

fn is_card_for(question: &str) -> impl Fn(&Message) -> bool + '_ {
    move |m| m.edits == 0 && m.text().contains(question)
}

/// Wait until the bot has put `keys` on the card (its option reactions).
async fn option_reactions(s: &Setup, card: &Message, keys: &[&str]) -> Result<()> {
    s.ada
        .wait_for_message(&s.room, WAIT, |m| {
            m.event_id == card.event_id
                && keys
                    .iter()
                    .all(|k| m.reaction_keys_by(&s.bot_id).contains(k))
        })
        .await
        .map(|_| ())
}

#[tokio::test]
async fn a_real_pi_asks_and_a_threaded_reply_answers_it() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    let s = setup(RoomMode::BotCreates, false).await?;
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
    opts.name = Some("mx-asker".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    // The ask goes out from the model's first turn: prompt once the extension is in.
    s.core.connected_session("mx-asker", WAIT).await?;
    pi.prompt("deploy when the human says so").await?;

    let card = s.bot_says(is_card_for("Deploy the release?")).await?;
    let text = card.text();
    assert!(
        text.contains("mx-asker"),
        "the card names the session: {text}"
    );
    assert!(
        card.body().contains("1")
            && card.body().contains("ship-it-now")
            && card.body().contains("hold"),
        "numbered options: {}",
        card.body()
    );
    assert!(
        card.html().is_some(),
        "formatted_body HTML with a plain body"
    );
    option_reactions(&s, &card, &[KEY1, KEY2]).await?;

    // Ada answers with the option's number, as a reply in the card's thread.
    s.ada
        .send_thread_reply(&s.room, &thread_of(&card), &card.event_id, "1")
        .await?;
    let requests = model.wait_requests(2, WAIT).await?;
    assert!(
        requests[1].transcript().contains("ship-it-now"),
        "the model sees the answer"
    );
    let edited = s
        .bot_says(|m| m.event_id == card.event_id && m.edits > 0)
        .await?;
    assert!(
        edited.text().contains("ship-it-now") && edited.text().contains(s.ada.user_id()),
        "the card says the answer and who gave it: {}",
        edited.text()
    );
    pi.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn a_reaction_answers_and_a_cli_answer_edits_the_card() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    let s = setup(RoomMode::Plain, false).await?;
    let mut pi = s.core.pi("mx-s1", "builder").await?;
    ask(&mut pi, "Merge PR 7?", &["merge", "wait"]).await?;
    let card = s.bot_says(is_card_for("Merge PR 7?")).await?;
    option_reactions(&s, &card, &[KEY1, KEY2]).await?;

    s.ada.react(&s.room, &card.event_id, KEY2).await?;
    let delivery = pi.next_delivery(WAIT).await?;
    assert_eq!(
        (delivery.kind, delivery.text.as_str()),
        (DeliveryKind::Answer, "wait")
    );
    assert_eq!(delivery.from.name, format!("matrix:{}", s.ada.user_id()));
    pi.ack(&[delivery.id]).await?;
    let edited = s
        .bot_says(|m| m.event_id == card.event_id && m.edits > 0)
        .await?;
    assert!(edited.text().contains("wait"), "{}", edited.text());

    // Answered on the CLI: the card is edited (m.replace) to say so.
    ask(&mut pi, "Tag the release?", &["yes", "no"]).await?;
    let card2 = s.bot_says(is_card_for("Tag the release?")).await?;
    let asks = s.core.cli_json(&["asks"])?;
    let id = asks
        .as_array()
        .context("asks")?
        .iter()
        .find(|a| a["question"] == "Tag the release?")
        .context("listed")?["id"]
        .to_string();
    let out = s.core.cli(&["answer", &id, "yes, v1.2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let edited2 = s
        .bot_says(|m| m.event_id == card2.event_id && m.text().contains("yes, v1.2"))
        .await?;
    assert!(edited2.edits > 0);
    assert!(edited2.text().contains("cli"), "{}", edited2.text());
    let raw_edit = s
        .ada
        .events(&s.room)
        .into_iter()
        .find(|e| {
            e["content"]["m.relates_to"]["rel_type"] == "m.replace"
                && e["content"]["m.relates_to"]["event_id"] == card2.event_id.as_str()
        })
        .context("an m.replace event for the card")?;
    assert_eq!(raw_edit["sender"], s.bot_id.as_str());
    Ok(())
}

#[tokio::test]
async fn an_encrypted_room_works_both_ways() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    let s = setup(RoomMode::Encrypted, false).await?;
    let mut pi = s.core.pi("mx-s2", "secretive").await?;
    ask(&mut pi, "Rotate the keys?", &["rotate", "keep"]).await?;
    let card = s.bot_says(is_card_for("Rotate the keys?")).await?;
    assert!(card.text().contains("secretive"), "{}", card.text());
    option_reactions(&s, &card, &[KEY1, KEY2]).await?;

    // What the server stored is ciphertext: the bot encrypted its card.
    let path = format!(
        "/_matrix/client/v3/rooms/{}/event/{}",
        s.room, card.event_id
    );
    let stored = s
        .synapse
        .api(Method::GET, &path, Some(&s.ada.access_token()), None)
        .await?;
    assert_eq!(stored["type"], "m.room.encrypted", "{stored}");

    // Ada's encrypted threaded reply reaches the session: the bot decrypts it.
    s.ada
        .send_thread_reply(&s.room, &thread_of(&card), &card.event_id, "2")
        .await?;
    let delivery = pi.next_delivery(WAIT).await?;
    assert_eq!(
        (delivery.kind, delivery.text.as_str()),
        (DeliveryKind::Answer, "keep")
    );
    pi.ack(&[delivery.id]).await?;
    s.bot_says(|m| m.event_id == card.event_id && m.edits > 0 && m.text().contains("keep"))
        .await?;

    // A report arrives in the session's thread, encrypted and readable.
    pi.client.report("all keys rotated <fine> & done").await?;
    let report = s
        .bot_says(|m| m.body().contains("all keys rotated"))
        .await?;
    assert!(report.body().contains("<fine> & done"), "{}", report.body());
    assert_eq!(
        thread_of(&report),
        thread_of(&card),
        "one thread per session"
    );
    Ok(())
}

/// Mallory is in the room (she sees the card) but not in `allowed_users`: her reaction,
/// her reply in the card's thread and her command reach nothing, her invite is refused,
/// and each is audited.
#[tokio::test]
async fn strangers_are_ignored_and_audited() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    let s = setup(RoomMode::Plain, true).await?;
    let mallory = s.mallory.as_ref().unwrap();
    let mut pi = s.core.pi("mx-s3", "guarded").await?;
    ask(&mut pi, "Drop the table?", &["yes", "no"]).await?;
    let card = s.bot_says(is_card_for("Drop the table?")).await?;
    option_reactions(&s, &card, &[KEY1, KEY2]).await?;

    // Her invite to a room of her own is refused, too.
    let her_room = mallory
        .create_room("mallory's", &[s.bot_id.as_str()], false)
        .await?;
    mallory.react(&s.room, &card.event_id, KEY1).await?;
    mallory
        .send_thread_reply(&s.room, &thread_of(&card), &card.event_id, "1")
        .await?;
    mallory
        .send_text(&s.room, "!steer guarded rm -rf /")
        .await?;
    // A barrier: the bot handles the room's events in order, so once Ada's command is
    // answered, Mallory's events have been handled.
    s.ada.send_text(&s.room, "!help").await?;
    s.bot_says(|m| m.body().contains("!sessions")).await?;

    let asks = s.core.cli_json(&["asks"])?;
    assert_eq!(asks[0]["state"], "open", "Mallory answered nothing: {asks}");
    // No answer, no steer: Ada's steer, sent after, is the first thing the session gets.
    s.ada.send_text(&s.room, "!steer guarded fence").await?;
    let first = pi.next_delivery(WAIT).await?;
    assert_eq!(first.text, "fence", "no answer, no steer from Mallory");
    let card_now = s
        .ada
        .messages(&s.room)
        .into_iter()
        .find(|m| m.event_id == card.event_id)
        .unwrap();
    assert_eq!(card_now.edits, 0, "the card was not closed");
    assert!(
        s.bot_messages()
            .iter()
            .all(|m| !m.text().contains("mallory")
                && m.in_reply_to().is_none_or(|r| {
                    !s.ada
                        .events(&s.room)
                        .iter()
                        .any(|e| e["event_id"] == r && e["sender"] == mallory.user_id())
                })),
        "no reply to a stranger"
    );
    // The invite may be handled after the barrier (invites come after the joined rooms in
    // a sync): wait for its audit line, then check nothing more comes.
    let audit_path = s.core.state_dir().join("audit.log");
    let mallory_lines = || {
        std::fs::read_to_string(&audit_path)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(mallory.user_id()))
            .count()
    };
    // Nothing more comes: one more message of hers (the fence) is audited after those
    // (the room's events are handled in order), as the fifth line.
    let messages = || {
        std::fs::read_to_string(&audit_path)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(mallory.user_id()) && l.contains(r#""what":"message""#))
            .count()
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    while mallory_lines() < 4 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    mallory.send_text(&s.room, "!help").await?;
    while messages() < 3 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let audit = std::fs::read_to_string(&audit_path)?;
    assert_eq!(
        mallory_lines(),
        5,
        "a reaction, a reply, a command and an invite, then the fence: {audit}"
    );
    let members = s
        .synapse
        .api(
            Method::GET,
            &format!("/_matrix/client/v3/rooms/{her_room}/joined_members"),
            Some(&mallory.access_token()),
            None,
        )
        .await?;
    assert!(
        members["joined"].get(&s.bot_id).is_none(),
        "the bot did not join Mallory's room: {members}"
    );
    assert!(
        !audit.contains("rm -rf"),
        "the audit log does not copy message text"
    );
    Ok(())
}

#[tokio::test]
async fn a_restart_neither_reanswers_history_nor_makes_a_new_device() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    let mut s = setup(RoomMode::BotCreates, false).await?;
    let socket = s.core.socket();
    let agent = s.core.agent_dir().to_path_buf();
    let mut pi = s.core.pi("mx-s4", "steady").await?;
    s.ada.send_text(&s.room, "!sessions").await?;
    s.bot_says(|m| m.body().contains("steady")).await?;
    ask(&mut pi, "Keep going?", &["go", "stop"]).await?;
    let card = s.bot_says(is_card_for("Keep going?")).await?;
    option_reactions(&s, &card, &[KEY1, KEY2]).await?;
    s.ada.react(&s.room, &card.event_id, KEY1).await?;
    let d = pi.next_delivery(WAIT).await?;
    assert_eq!(d.text, "go");
    pi.ack(&[d.id]).await?;
    s.bot_says(|m| m.event_id == card.event_id && m.edits > 0)
        .await?;
    let devices = s.bot_devices().await?;
    let before = s.bot_messages().len();

    let t = std::time::Instant::now();
    s.core.restart().await?;
    s.bridge_started(2).await?;
    eprintln!(
        "the bridge handles events again {:?} after the restart",
        t.elapsed()
    );
    let mut pi = shepherd_harness::Pi::register(&socket, "mx-s4", "steady", &agent).await?;

    // Something new is answered (once); the history (!sessions, the reaction) is not.
    // Counted once a later steer is through: the bridge handles the room's events one at
    // a time, in order, and posts in order, so any answer to the history or a second help
    // comes before the steer's confirmation, and an answer from the old reaction would
    // reach the session before the steer does.
    s.ada.send_text(&s.room, "!frobnicate").await?;
    s.bot_says(|m| m.body().contains("frobnicate") || m.body().contains("!steer"))
        .await?;
    s.ada
        .send_text(&s.room, "!steer steady MARKER-after-restart")
        .await?;
    s.bot_says(|m| m.body().contains("steered steady")).await?;
    let after = s.bot_messages();
    assert_eq!(
        after.len(),
        before + 2,
        "only the help for the new command, then the steer's confirmation: {:#?}",
        &after[before..]
    );
    let d = pi.next_delivery(WAIT).await?;
    assert_eq!(
        (d.kind, d.text.as_str()),
        (DeliveryKind::Steer, "MARKER-after-restart"),
        "the old reaction did not answer again"
    );
    assert_eq!(
        s.bot_devices().await?,
        devices,
        "the restart reused the bot's device"
    );
    let rooms = s
        .synapse
        .api(
            Method::GET,
            "/_matrix/client/v3/joined_rooms",
            Some(&s.ada.access_token()),
            None,
        )
        .await?;
    assert_eq!(
        rooms["joined_rooms"].as_array().map(Vec::len),
        Some(1),
        "no second room after the restart: {rooms}"
    );
    Ok(())
}

/// A second bridge for the same Matrix user (`shepherd bot` next to the running core's
/// bridge) is refused by the core before it syncs: it exits naming the running bridge, and
/// `status` lists one Matrix bridge.
#[tokio::test]
async fn a_second_bridge_for_the_same_user_is_refused_naming_the_running_one() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    let s = setup(RoomMode::Plain, false).await?;
    let mut second = tokio::process::Command::from(s.core.command());
    let out = tokio::time::timeout(WAIT, second.arg("bot").output())
        .await
        .context("the second bridge did not stop")??;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("matrix:{}", s.bot_id))
            && err.contains("already served by the bridge `matrix`"),
        "{err}"
    );
    let status = s.core.cli_json(&["status"])?;
    let bridges = status["bridges"].as_array().context("bridges")?;
    assert_eq!(bridges.len(), 1, "{status}");
    // The running bridge still answers.
    s.ada.send_text(&s.room, "!sessions").await?;
    s.bot_says(|m| m.body().to_lowercase().contains("session"))
        .await?;
    Ok(())
}

#[tokio::test]
async fn commands_answer_unknown_ones_get_help_and_a_thread_message_steers() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    let s = setup(RoomMode::Plain, false).await?;
    let mut pi = s.core.pi("mx-s5", "listed").await?;
    pi.client.report("hello from the thread").await?;
    let report = s
        .bot_says(|m| m.body().contains("hello from the thread"))
        .await?;

    s.ada.send_text(&s.room, "!sessions").await?;
    let listing = s
        .bot_says(|m| {
            m.body().contains("listed")
                && !m.body().contains("hello from")
                && !m.body().contains("listed started")
        })
        .await?;
    assert_ne!(listing.event_id, report.event_id);

    s.ada.send_text(&s.room, "!frobnicate").await?;
    let help = s.bot_says(|m| m.body().contains("!steer")).await?;
    assert!(help.body().contains("!sessions"), "{}", help.body());
    s.ada.send_text(&s.room, "!help").await?;
    s.ada
        .wait_for_message(&s.room, WAIT, |m| {
            m.sender == s.bot_id && m.body().contains("!steer") && m.event_id != help.event_id
        })
        .await?;

    // A plain message in the session's thread steers that session.
    s.ada
        .send_thread_reply(
            &s.room,
            &thread_of(&report),
            &report.event_id,
            "please run the linter",
        )
        .await?;
    let steer = pi.next_delivery(WAIT).await?;
    assert_eq!(
        (steer.kind, steer.text.as_str()),
        (DeliveryKind::Steer, "please run the linter")
    );
    pi.ack(&[steer.id]).await?;

    s.ada
        .send_text(&s.room, "!steer listed check the logs")
        .await?;
    let steer = pi.next_delivery(WAIT).await?;
    assert_eq!(
        (steer.kind, steer.text.as_str()),
        (DeliveryKind::Steer, "check the logs")
    );
    pi.ack(&[steer.id]).await?;

    let status = s.core.cli_json(&["status"])?;
    let bridges = status["bridges"].as_array().context("bridges")?;
    assert_eq!(
        bridges.iter().filter(|b| b["name"] == "matrix").count(),
        1,
        "{status}"
    );
    Ok(())
}

/// Supervision from Matrix: `!supervise <goal>` in the worker's thread (no session named:
/// the thread's) pairs it with the free supervisor-role session; the thread shows the
/// start once, a steer, and the supervisor's question, which a plain message in the
/// thread answers; `!unpair` there ends it and says who stopped it.
#[tokio::test]
async fn supervision_lives_in_the_workers_thread() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    let s = setup(RoomMode::Plain, false).await?;
    let mut worker = s.core.pi("mx-w1", "fix-login").await?;
    let mut reg = registration("mx-sup1", "watch-login", s.core.agent_dir());
    reg.role = Role::Supervisor;
    let (mut sup, _) = Pi::register_full(&s.core.socket(), reg).await?;
    worker.client.report("starting on the login form").await?;
    let report = s
        .bot_says(|m| m.body().contains("starting on the login form"))
        .await?;
    let root = thread_of(&report);

    s.ada
        .send_thread_reply(
            &s.room,
            &root,
            &report.event_id,
            "!supervise the login form accepts SSO users",
        )
        .await?;
    let start = s
        .bot_says(|m| m.body().contains("watch-login supervises fix-login"))
        .await?;
    assert_eq!(thread_of(&start), root, "in the worker's thread");
    assert!(
        start
            .body()
            .contains("Goal: the login form accepts SSO users")
            && start
                .body()
                .contains(&format!("started by matrix:{}", s.ada.user_id())),
        "{}",
        start.body()
    );
    let pairings = s.core.cli_json(&["pairings"])?;
    assert_eq!(pairings[0]["worker_name"], "fix-login", "{pairings}");
    assert_eq!(pairings[0]["goal"], "the login form accepts SSO users");

    sup.client
        .call(requests::Verdict {
            id: 0,
            verdict: VerdictKind::Steer,
            text: "run the SSO tests first".into(),
        })
        .await?;
    let steer = s
        .bot_says(|m| m.body().contains("👁 steer: run the SSO tests first"))
        .await?;
    assert_eq!(thread_of(&steer), root);

    ask(&mut sup, "Use the staging SSO provider?", &["yes", "no"]).await?;
    let card = s
        .bot_says(is_card_for("Use the staging SSO provider?"))
        .await?;
    assert_eq!(
        thread_of(&card),
        root,
        "the supervisor's ask is in the worker's thread"
    );
    s.ada
        .send_thread_reply(&s.room, &root, &card.event_id, "2")
        .await?;
    let answer = loop {
        let d = sup.next_delivery(WAIT).await?;
        sup.ack(&[d.id]).await?;
        if d.kind == DeliveryKind::Answer {
            break d;
        }
    };
    assert_eq!(answer.text, "no");

    s.ada
        .send_thread_reply(&s.room, &root, &steer.event_id, "!unpair")
        .await?;
    let stopped = s
        .bot_says(|m| {
            m.body()
                .contains(&format!("stopped by matrix:{}", s.ada.user_id()))
        })
        .await?;
    assert_eq!(thread_of(&stopped), root);
    assert!(
        stopped
            .body()
            .contains("watch-login no longer supervises fix-login"),
        "{}",
        stopped.body()
    );
    assert_eq!(s.core.cli_json(&["pairings"])?, json!([]));
    let starts = s
        .bot_messages()
        .iter()
        .filter(|m| m.body().contains("supervises fix-login."))
        .count();
    assert_eq!(starts, 1, "the start is said once");
    Ok(())
}

/// The everyday life of one real Pi session in the room: its thread starts as soon as it
/// registers; `!stop then …` in the thread aborts its long bash call at once and its steer
/// starts the next turn; `!status` there shows the session, not the core; when Pi closes,
/// the thread says so once, and its open ask card loses its reactions and says the answer
/// waits (a reply still answers it).
#[tokio::test]
async fn a_real_pi_in_its_thread_is_interrupted_and_its_closing_is_said_once() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    let s = setup(RoomMode::Plain, false).await?;
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
    let mut opts = PiOptions::new(s.core.agent_dir());
    opts.name = Some("mx-runner".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    s.core.connected_session("mx-runner", WAIT).await?;

    // The thread comes with the registration: its root says the session started.
    let started = s
        .bot_says(|m| m.body().contains("mx-runner started"))
        .await?;
    assert_eq!(started.thread_root(), None, "the thread's root");
    let root = started.event_id.clone();

    pi.prompt("run the long job").await?;
    eventually(WAIT, "the session in its bash call", || {
        s.core
            .session_named("mx-runner")
            .filter(|v| v["status"] == "tool:bash")
    })
    .await?;
    let asked = std::time::Instant::now();
    s.ada
        .send_thread_reply(&s.room, &root, &root, "!stop then now-write-docs")
        .await?;
    let reply = s.bot_says(|m| m.body().contains("⏹ stopping")).await?;
    assert_eq!(thread_of(&reply), root);
    assert!(
        reply
            .body()
            .contains("⏹ stopping mx-runner (it was running tool:bash). Your steer follows."),
        "{}",
        reply.body()
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

    let card = s.bot_says(is_card_for("Which docs first?")).await?;
    assert_eq!(thread_of(&card), root, "in the session's thread");
    option_reactions(&s, &card, &[KEY1, KEY2]).await?;

    // !status in the thread: this session, not the core.
    s.ada
        .send_thread_reply(&s.room, &root, &root, "!status")
        .await?;
    let status = s.bot_says(|m| m.body().contains("now: ")).await?;
    assert!(
        status.body().contains("mx-runner")
            && status.body().contains("model: fake/fake-model")
            && status.body().contains("❓ #")
            && status.body().contains("Which docs first?"),
        "{}",
        status.body()
    );
    assert!(!status.body().contains("uptime"), "{}", status.body());

    // Pi closes: said once, and the card waits without its reactions.
    pi.shutdown().await?;
    let closed = s
        .bot_says(|m| m.body().contains("⏹ mx-runner closed"))
        .await?;
    assert_eq!(thread_of(&closed), root);
    let marked = s
        .ada
        .wait_for_message(&s.room, WAIT, |m| {
            m.event_id == card.event_id
                && m.body().contains("your answer waits for its return")
                && m.reaction_keys_by(&s.bot_id).is_empty()
        })
        .await?;
    assert!(
        marked.body().contains("⏹ session closed"),
        "{}",
        marked.body()
    );

    // A reply still answers it; the answer waits in the session's mailbox.
    s.ada
        .send_thread_reply(&s.room, &root, &card.event_id, "2")
        .await?;
    s.ada
        .wait_for_message(&s.room, WAIT, |m| {
            m.event_id == card.event_id && m.body().contains("answered by")
        })
        .await?;
    let asks = s.core.cli_json(&["asks", "--all"])?;
    assert_eq!(asks[0]["answer"], "guide", "{asks}");
    let all = s.core.cli_json(&["sessions", "--all"])?;
    let runner = all
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == "mx-runner"))
        .context("mx-runner listed")?;
    assert_eq!(runner["pending_messages"], 1, "the answer waits: {runner}");
    let said = |needle: &str| {
        s.bot_messages()
            .iter()
            .filter(|m| m.body().contains(needle))
            .count()
    };
    assert_eq!(said("mx-runner closed"), 1, "the ending is said once");
    assert_eq!(said("mx-runner started"), 1, "one start");
    Ok(())
}

/// A session that vanishes without a goodbye is announced once, in its thread, as exited
/// with what it was doing; coming back reuses the thread.
#[tokio::test]
async fn a_session_that_dies_is_announced_once_in_its_thread() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    let s = setup(RoomMode::Plain, false).await?;
    let mut pi = s.core.pi("mx-dies", "mx-crasher").await?;
    let started = s
        .bot_says(|m| m.body().contains("mx-crasher started"))
        .await?;
    ask(&mut pi, "Keep the old API?", &["yes", "no"]).await?;
    let card = s.bot_says(is_card_for("Keep the old API?")).await?;
    option_reactions(&s, &card, &[KEY1, KEY2]).await?;
    pi.client
        .call(requests::Update {
            status: Some("tool:bash".into()),
            ..Default::default()
        })
        .await?;
    drop(pi);
    let ended = s.bot_says(|m| m.body().contains("💥 mx-crasher")).await?;
    assert_eq!(thread_of(&ended), started.event_id);
    assert!(
        ended
            .body()
            .contains("💥 mx-crasher exited while running tool:bash"),
        "{}",
        ended.body()
    );
    s.ada
        .wait_for_message(&s.room, WAIT, |m| {
            m.event_id == card.event_id
                && m.body().contains("💥 session exited")
                && m.reaction_keys_by(&s.bot_id).is_empty()
        })
        .await?;
    // Back: the same thread, and the card's reactions come back.
    let _pi = s.core.pi("mx-dies", "mx-crasher").await?;
    s.ada
        .wait_for_message(&s.room, WAIT, |m| {
            m.event_id == card.event_id
                && !m.body().contains("waits for its return")
                && [KEY1, KEY2]
                    .iter()
                    .all(|k| m.reaction_keys_by(&s.bot_id).contains(k))
        })
        .await?;
    s.ada
        .send_thread_reply(&s.room, &started.event_id, &started.event_id, "!status")
        .await?;
    let status = s.bot_says(|m| m.body().contains("now: idle")).await?;
    assert_eq!(thread_of(&status), started.event_id);
    let said = |needle: &str| {
        s.bot_messages()
            .iter()
            .filter(|m| m.body().contains(needle))
            .count()
    };
    assert_eq!(said("mx-crasher exited"), 1);
    assert_eq!(said("mx-crasher started"), 1, "the thread is reused");
    Ok(())
}

/// A result, as the bot posts a run's final text.
fn is_result(m: &Message) -> bool {
    m.text().contains("· result")
}

/// A run's final text in Markdown, as models write it (with HTML that must stay text).
const MARKDOWN_RESULT: &str = "## Login fixed\n\nFixed the **login redirect** (see [the PR](https://x.test/pr/7)).\n\n- All `214` tests pass.\n- <script>alert(1)</script> stays text\n\n```sh\ncargo test\n```";

#[tokio::test]
async fn a_real_pi_run_ends_and_its_result_shows_in_its_thread() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    let s = setup(RoomMode::Plain, false).await?;
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
    let mut opts = PiOptions::new(s.core.agent_dir());
    opts.name = Some("mx-runner".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    s.core.connected_session("mx-runner", WAIT).await?;
    pi.prompt("fix the login redirect").await?;

    let result = s.bot_says(is_result).await?;
    let text = result.text();
    assert!(
        text.starts_with("🏁 mx-runner") && text.contains("All 214 tests pass."),
        "{text}"
    );
    // Its Markdown as Matrix shows it: the HTML with a heading as a bold line, bold, a
    // link, a list as `• ` lines, inline code and a code block, the HTML in it escaped;
    // the body the same text without markup.
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
    assert!(
        result.body().contains(
            "Login fixed\n\nFixed the login redirect (see the PR).\n\n• All 214 tests pass.\n\
             • <script>alert(1)</script> stays text\n\ncargo test"
        ),
        "{}",
        result.body()
    );
    for markup in ["**", "##", "```", "[the PR]"] {
        assert!(
            !result.text().contains(markup),
            "{markup} in {}",
            result.text()
        );
    }

    // A run that ends on ask_human has no result; the run its answer starts has one, in
    // the same thread.
    pi.wait_settled(WAIT).await?;
    pi.prompt("deploy when the human says so").await?;
    let card = s.bot_says(is_card_for("Deploy the release?")).await?;
    assert_eq!(
        thread_of(&card),
        thread_of(&result),
        "one thread per session"
    );
    s.ada
        .send_thread_reply(&s.room, &thread_of(&card), &card.event_id, "1")
        .await?;
    let deployed = s.bot_says(|m| m.text().contains("v2.3 is live")).await?;
    assert!(is_result(&deployed));
    assert_eq!(thread_of(&deployed), thread_of(&result));
    let results: Vec<String> = s
        .bot_messages()
        .into_iter()
        .filter(is_result)
        .map(|m| m.text())
        .collect();
    assert_eq!(
        results.len(),
        2,
        "the ask's run posted nothing: {results:?}"
    );
    pi.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn a_bridge_that_was_down_posts_what_it_missed_once() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    let mut s = setup_bot(RoomMode::Plain).await?;
    let wait_log = |s: &Setup, needle: String| {
        let log = s.bridge_log();
        log.contains(&needle).then_some(())
    };
    let mut a = s.core.pi("mx-miss-a", "alpha").await?;
    let mut b = s.core.pi("mx-miss-b", "beta").await?;
    shepherd_harness::eventually(WAIT, "the bridge's first catch-up", || {
        wait_log(&s, "posting reports from now on".into())
    })
    .await?;
    let live = a.client.report("live: bridge up").await?;
    s.bot_says(|m| m.text().contains("live: bridge up")).await?;
    // Killed once it has recorded the post (a kill between the two would post it again).
    shepherd_harness::eventually(WAIT, "the post recorded", || {
        wait_log(&s, format!("reports up to {} posted", live.id))
    })
    .await?;
    s.bot.as_mut().unwrap().kill9();

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
            results: Some(shepherd_core::protocol::ResultsMode::Off),
            key: None,
        })
        .await?;

    s.spawn_bot()?;
    // Said while the bridge comes back: in its catch-up, its events or both, posted once.
    b.client.report("beta during the catch-up").await?;
    s.bot_says(|m| m.text().contains("alpha missed 7")).await?;
    s.bot_says(|m| m.text().contains("beta missed 2")).await?;
    let back = a.client.report("live: back again").await?;
    s.bot_says(|m| m.text().contains("live: back again"))
        .await?;
    shepherd_harness::eventually(WAIT, "the post recorded", || {
        wait_log(&s, format!("reports up to {} posted", back.id))
    })
    .await?;
    let check = |s: &Setup| {
        let texts: Vec<String> = s.bot_messages().into_iter().map(|m| m.text()).collect();
        let count = |needle: &str| texts.iter().filter(|t| t.contains(needle)).count();
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
            assert_eq!(count(needle), 1, "{needle:?} once: {texts:#?}");
        }
        for needle in [
            "alpha missed 1",
            "alpha missed 2",
            "alpha held back",
            "earlier (shepherd reports beta)",
        ] {
            assert_eq!(count(needle), 0, "{needle:?} not posted: {texts:#?}");
        }
    };
    check(&s);
    let messages = s.bot_messages();
    let find = |needle: &str| messages.iter().find(|m| m.text().contains(needle)).unwrap();
    let earlier = find("earlier (shepherd reports alpha)");
    assert_eq!(
        thread_of(earlier),
        thread_of(find("live: bridge up")),
        "in alpha's thread"
    );
    assert_eq!(thread_of(find("alpha missed 3")), thread_of(earlier));

    // A second restart posts nothing again.
    s.bot.as_mut().unwrap().kill9();
    s.spawn_bot()?;
    a.client.report("live: third start").await?;
    s.bot_says(|m| m.text().contains("live: third start"))
        .await?;
    check(&s);
    Ok(())
}
