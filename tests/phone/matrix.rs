//! The Matrix bridge end to end: the real `shepherd up` (core + bridge in one process)
//! against a real Synapse (pinned, from PyPI), configured only through environment
//! variables, with a second Matrix client (matrix-sdk, its own crypto store) playing the
//! human, and Pi sessions on the other side (a real Pi for the main scenario,
//! protocol-level sessions for the rest). Each test has users of its own on the test
//! binary's shared Synapse. What both phones do alike is written once in the modules
//! whose scenarios run on each (`sessions`, `roles`, …); here is what only Matrix does, or
//! does its own way: rooms the human makes, encryption, reactions, devices.

use std::time::Duration;

use anyhow::{Result, bail};
use shepherd_core::protocol::{DeliveryKind, requests};
use shepherd_harness::Core;
use shepherd_harness::matrix_user::{MatrixUser, Message};
use shepherd_harness::synapse::{Method, Synapse, skip_e2e, unique};

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

    /// Wait until the core log says the bridge started `n` times (after its first sync).
    async fn bridge_started(&self, n: usize) -> Result<()> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let log = self.core.log();
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
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let core = Core::start_with(&env).await?;
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
