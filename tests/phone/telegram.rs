//! The Telegram bridge end to end: the real `shepherd up` (core + bridge in one process)
//! against the strict fake Bot API, with Pi sessions on the other side (a real Pi for the
//! main scenario, protocol-level sessions for the rest). What both phones do alike is
//! written once in the modules whose scenarios run on each (`sessions`, `roles`, …); here
//! is what only Telegram does, or does its own way: private chats, buttons, flood limits,
//! pairing mode, long polling.

use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;
use shepherd_core::protocol::{Role, requests};
use shepherd_harness::fake_model::{FakeModel, Reply};
use shepherd_harness::fake_telegram::{
    FakeTelegram, FakeTelegramOptions, FakeUser, RateLimits, SentMessage, UserMessage,
};
use shepherd_harness::pi_process::{PiOptions, PiSession};
use shepherd_harness::{Core, Pi, eventually, registration};

const WAIT: Duration = Duration::from_secs(30);
const ADA: i64 = 4242;
const MALLORY: i64 = 6666;
const FORUM: i64 = -1_001_234_567;

struct Setup {
    core: Core,
    tg: FakeTelegram,
    chat: i64,
}

/// A fake Telegram with Ada (allowed) and Mallory (not), and a core whose bridge posts to
/// Ada's private chat or to a forum. The bridge's own pacing is relaxed so tests run fast;
/// the fake's flood limits still apply unless `tg_limits` says otherwise.
async fn setup(forum: bool, tg_limits: Option<RateLimits>) -> Result<Setup> {
    let ada = FakeUser::new(ADA, "Ada").with_username("ada");
    let mallory = FakeUser::new(MALLORY, "Mallory").with_username("mallory");
    let mut opts = FakeTelegramOptions::default()
        .user(ada.clone())
        .user(mallory.clone());
    opts = if forum {
        opts.forum(FORUM, "shepherd")
    } else {
        opts.private_chat(ada)
    };
    opts = opts.private_chat(mallory);
    opts.rate_limits = tg_limits;
    let tg = FakeTelegram::start(opts).await?;
    let chat = if forum { FORUM } else { ADA };
    let chat_s = chat.to_string();
    let api = tg.api_url();
    let core = Core::start_with(&[
        ("SHEPHERD_TELEGRAM_TOKEN", tg.token()),
        ("SHEPHERD_TELEGRAM__ALLOWED_USERS", "[4242]"),
        ("SHEPHERD_TELEGRAM__CHAT_ID", &chat_s),
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
    Ok(Setup { core, tg, chat })
}

/// A fake Telegram with Ada alone, in her private chat with the bot (nothing pointed at
/// it yet).
async fn ada_alone() -> Result<FakeTelegram> {
    let ada = FakeUser::new(ADA, "Ada").with_username("ada");
    FakeTelegram::start(
        FakeTelegramOptions::default()
            .user(ada.clone())
            .private_chat(ada),
    )
    .await
}

fn is_card_for(question: &str) -> impl Fn(&SentMessage) -> bool + '_ {
    move |m| m.text.contains(question) && !m.buttons().is_empty()
}

/// Mallory is in the forum (she can see and press the card) and has a private chat with
/// the bot, but she is not in `allowed_users`: nothing she does reaches a session.
#[tokio::test]
async fn strangers_are_ignored_and_audited() -> Result<()> {
    let s = setup(true, None).await?;
    let mut pi = s.core.pi("tg-s2", "guarded").await?;
    pi.client
        .call(requests::Ask {
            id: 0,
            question: "Drop the table?".into(),
            options: vec!["yes".into()],
            details: None,
            key: None,
        })
        .await?;
    let card =
        s.tg.wait_for_message(s.chat, WAIT, is_card_for("Drop the table?"))
            .await?;
    let before = s.tg.messages(MALLORY).len();
    let private = s.tg.inject_message(UserMessage::new(
        MALLORY,
        MALLORY,
        "/steer guarded rm -rf /",
    ))?;
    let mut in_topic =
        UserMessage::new(FORUM, MALLORY, "rm -rf / please").reply_to(card.message_id);
    in_topic.thread_id = card.thread_id;
    let reply = s.tg.inject_message(in_topic)?;
    let press =
        s.tg.press_button(s.chat, card.message_id, MALLORY, &card.buttons()[0].1)?;
    for update in [private.update_id, reply.update_id, press.update_id] {
        s.tg.wait_confirmed(update, WAIT).await?;
    }
    let asks = s.core.cli_json(&["asks"])?;
    assert_eq!(
        asks[0]["state"], "open",
        "Mallory's press and reply answered nothing"
    );
    assert_eq!(
        s.tg.messages(MALLORY).len(),
        before,
        "no reply to a stranger"
    );
    // No steer: the owner's steer, sent after, is the first thing the session gets.
    s.tg.inject_message(UserMessage::new(s.chat, ADA, "/steer guarded fence"))?;
    let first = pi.next_delivery(WAIT).await?;
    assert_eq!(first.text, "fence", "no steer from Mallory");
    let audit = std::fs::read_to_string(s.core.state_dir().join("audit.log"))?;
    assert_eq!(
        audit.lines().filter(|l| l.contains("6666")).count(),
        3,
        "{audit}"
    );
    assert!(
        !audit.contains("rm -rf"),
        "the audit log does not copy message text"
    );
    Ok(())
}

/// Telegram's servers failing (HTTP 500) on a send is retried with backoff like a network
/// error, not dropped as a refusal: the report arrives, once.
#[tokio::test]
async fn a_server_error_on_a_send_is_retried_and_the_report_arrives_once() -> Result<()> {
    let s = setup(false, None).await?;
    let mut pi = s.core.pi("tg-5xx", "flaky").await?;
    s.tg.fail_next("sendMessage", 500, 1);
    pi.client.report("survives a 500").await?;
    s.tg.wait_for_message(s.chat, WAIT, |m| m.text.contains("survives a 500"))
        .await?;
    assert_eq!(s.tg.status_count(500), 1, "the first attempt failed");
    let copies =
        s.tg.messages(s.chat)
            .iter()
            .filter(|m| m.text.contains("survives a 500"))
            .count();
    assert_eq!(copies, 1);
    assert!(
        !s.core.log().contains("telegram refused a message"),
        "{}",
        s.core.log()
    );
    Ok(())
}

#[tokio::test]
async fn a_long_report_is_split_below_the_limit_and_nothing_is_cut() -> Result<()> {
    let s = setup(false, None).await?;
    let mut pi = s.core.pi("tg-s3", "reporter").await?;
    let lines: Vec<String> = (0..240)
        .map(|i| format!("line {i:03}: <result> & more text to make it long"))
        .collect();
    let text = lines.join("\n");
    assert!(text.len() > 10_000);
    pi.client.report(text.clone()).await?;
    let messages =
        s.tg.wait_for("the whole report", WAIT, |tg| {
            let msgs = tg.messages(s.chat);
            msgs.iter()
                .any(|m| m.text.contains("line 239"))
                .then_some(msgs)
        })
        .await?;
    assert!(messages.len() >= 3, "split into several messages");
    for m in &messages {
        assert!(shepherd_harness::fake_telegram::utf16_len(&m.text) <= 4096);
    }
    let all: String = messages
        .iter()
        .map(|m| m.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    for line in &lines {
        assert_eq!(
            all.matches(line.as_str()).count(),
            1,
            "{line} exactly once, uncut"
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_burst_of_50_gets_through_429s_in_order() -> Result<()> {
    let strict = RateLimits {
        per_chat_per_sec: 20.0,
        per_chat_burst: 5,
        per_group_per_min: 10_000,
        global_per_sec: 1000,
        count_edits: true,
    };
    let s = setup(false, Some(strict)).await?;
    let mut pi = s.core.pi("tg-s4", "bursty").await?;
    for i in 0..50 {
        pi.client.report(format!("burst report #{i:02}")).await?;
    }
    let messages =
        s.tg.wait_for("50 reports", Duration::from_secs(60), |tg| {
            let msgs: Vec<_> = tg
                .messages(s.chat)
                .into_iter()
                .filter(|m| m.text.contains("burst report"))
                .collect();
            (msgs.len() >= 50).then_some(msgs)
        })
        .await?;
    let order: Vec<String> = messages
        .iter()
        .map(|m| {
            m.text
                .split("burst report ")
                .nth(1)
                .unwrap_or("")
                .chars()
                .take(3)
                .collect()
        })
        .collect();
    let expected: Vec<String> = (0..50).map(|i| format!("#{i:02}")).collect();
    assert_eq!(order, expected, "all 50, once each, in order");
    assert!(
        s.tg.error_counts().too_many_requests > 0,
        "the fake did push back with 429s"
    );
    Ok(())
}

#[tokio::test]
async fn a_bridge_restart_mid_stream_loses_and_duplicates_nothing() -> Result<()> {
    let mut s = setup(false, None).await?;
    let socket = s.core.socket();
    let agent = s.core.agent_dir().to_path_buf();
    // The session outlives the core's restart: it re-registers, like the extension does.
    let mut pi = s.core.pi("tg-s7", "steady").await?;
    let mut sent = Vec::new();
    for i in 0..20 {
        sent.push(s.tg.inject_message(UserMessage::new(
            s.chat,
            ADA,
            &format!("/steer steady step {i:02}"),
        ))?);
        if i == 9 {
            s.core.restart().await?;
            pi = shepherd_harness::Pi::register(&socket, "tg-s7", "steady", &agent).await?;
        }
    }
    let mut seen = std::collections::BTreeMap::new();
    let mut ids = std::collections::BTreeSet::new();
    while seen.len() < 20 {
        let d = pi
            .next_delivery(WAIT)
            .await
            .with_context(|| format!("got {} of 20: {seen:?}", seen.len()))?;
        pi.ack(&[d.id]).await?;
        if ids.insert(d.id) {
            *seen.entry(d.text.clone()).or_insert(0) += 1;
        }
    }
    assert!(seen.values().all(|n| *n == 1), "{seen:?}");
    assert_eq!(seen.keys().next().map(String::as_str), Some("step 00"));
    // The last update is confirmed: the next poll will not replay it.
    s.tg.wait_confirmed(sent.last().unwrap().update_id, WAIT)
        .await?;
    // No replays: a steer sent now is the next thing the session gets.
    s.tg.inject_message(UserMessage::new(s.chat, ADA, "/steer steady fence"))?;
    let next = pi.next_delivery(WAIT).await?;
    assert_eq!(next.text, "fence", "no replays");
    drop(s.tg);
    Ok(())
}

#[tokio::test]
async fn status_lists_the_bridge_and_a_broken_config_refuses_to_start() -> Result<()> {
    let s = setup(false, None).await?;
    let status = s.core.cli_json(&["status"])?;
    let bridges = status["bridges"].as_array().context("bridges")?;
    assert_eq!(
        bridges.iter().filter(|b| b["name"] == "telegram").count(),
        1,
        "{status}"
    );

    // Allowed users but nowhere to post: refused before anything starts, saying what to set.
    let dir = tempfile::tempdir()?;
    let out = std::process::Command::new(shepherd_harness::shepherd_bin())
        .arg("up")
        .env("PI_CODING_AGENT_DIR", dir.path())
        .env("SHEPHERD_TELEGRAM_TOKEN", "1:x")
        .env("SHEPHERD_TELEGRAM__ALLOWED_USERS", "[4242]")
        .env_remove("SHEPHERD_SOCKET")
        .env_remove("SHEPHERD_CONFIG")
        .output()?;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("chat_id") && err.contains("user id"), "{err}");
    Ok(())
}

/// With only a bot token (nobody allowed, no chat), `up` runs the bridge in pairing mode:
/// whoever writes to the bot privately gets their numeric id and the settings that allow
/// it, a command in a group gets the same with that group's chat id, and nobody is served
/// (a session's report goes nowhere).
#[tokio::test]
async fn a_token_alone_runs_pairing_mode_which_tells_a_writer_their_id() -> Result<()> {
    let ada = FakeUser::new(ADA, "Ada").with_username("ada");
    let tg = FakeTelegram::start(
        FakeTelegramOptions::default()
            .user(ada.clone())
            .private_chat(ada)
            .forum(FORUM, "team"),
    )
    .await?;
    let api = tg.api_url();
    let core = Core::start_with(&[
        ("SHEPHERD_TELEGRAM_TOKEN", tg.token()),
        ("SHEPHERD_TELEGRAM__API_URL", &api),
    ])
    .await?;
    tg.wait_for("the bridge's first long poll", WAIT, |tg| {
        tg.long_poll_waiting().then_some(())
    })
    .await?;
    let mut pi = core.pi("tg-pairing", "unserved").await?;
    pi.client.report("for nobody yet").await?;

    tg.inject_message(UserMessage::new(ADA, ADA, "hello?"))?;
    let reply = tg
        .wait_for_message(ADA, WAIT, |m| m.text.contains("user id is 4242"))
        .await?;
    assert!(
        reply.text.contains("allowed_users = [4242]"),
        "{}",
        reply.text
    );
    assert!(reply.text.contains("chat_id = 4242"), "{}", reply.text);
    assert!(core.log().contains("pairing mode"), "{}", core.log());
    let sent = tg.messages(ADA);
    assert_eq!(sent.len(), 1, "only the pairing reply: {sent:?}");

    // In a group, a command gets the same with the group's chat id; other text nothing.
    tg.inject_message(UserMessage::new(FORUM, ADA, "just chatting"))?;
    tg.inject_message(UserMessage::new(FORUM, ADA, "/start@shepherd_test_bot"))?;
    let reply = tg
        .wait_for_message(FORUM, WAIT, |m| m.text.contains("user id is 4242"))
        .await?;
    assert!(
        reply.text.contains(&format!("chat_id = {FORUM}")),
        "{}",
        reply.text
    );
    assert!(
        reply.text.contains("allowed_users = [4242]"),
        "{}",
        reply.text
    );
    assert_eq!(tg.messages(FORUM).len(), 1, "no answer to plain text");
    let status = core.cli_json(&["status"])?;
    assert_eq!(
        status["bridges"].as_array().map(Vec::len),
        Some(1),
        "{status}"
    );
    Ok(())
}

/// `shepherd bot` alone, against a core started without any bridge: it serves the chat (a
/// session's report arrives), `status` lists it, and it stops cleanly on SIGTERM.
#[tokio::test]
async fn shepherd_bot_alone_serves_a_core_that_runs_no_bridge() -> Result<()> {
    let tg = ada_alone().await?;
    let core = Core::start().await?;
    let status = core.cli_json(&["status"])?;
    assert_eq!(status["bridges"], json!([]), "{status}");
    let api = tg.api_url();
    let mut bot = tokio::process::Command::from(core.command())
        .arg("bot")
        .env("SHEPHERD_TELEGRAM_TOKEN", tg.token())
        .env("SHEPHERD_TELEGRAM__ALLOWED_USERS", "[4242]")
        .env("SHEPHERD_TELEGRAM__CHAT_ID", ADA.to_string())
        .env("SHEPHERD_TELEGRAM__API_URL", &api)
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    tg.wait_for("the lone bot's first long poll", WAIT, |tg| {
        tg.long_poll_waiting().then_some(())
    })
    .await?;
    let mut pi = core.pi("tg-lone", "lonely").await?;
    pi.client.report("relayed by a lone bot").await?;
    tg.wait_for_message(ADA, WAIT, |m| m.text.contains("relayed by a lone bot"))
        .await?;
    let status = core.cli_json(&["status"])?;
    let bridges = status["bridges"].as_array().context("bridges")?;
    assert_eq!(bridges.len(), 1, "{status}");
    assert_eq!(bridges[0]["name"], "telegram");
    let pid = bot.id().context("bot pid")?;
    std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()?;
    let exit = tokio::time::timeout(WAIT, bot.wait())
        .await
        .context("the bot did not stop on SIGTERM")??;
    assert!(exit.success(), "{exit}");
    Ok(())
}

/// Another poller on the same token (Telegram answers the older poll with 409): the bridge
/// says so once, clearly, and backs off instead of fighting for the updates.
#[tokio::test]
async fn a_second_poller_is_reported_once_and_the_bridge_backs_off() -> Result<()> {
    let s = setup(false, None).await?;
    assert!(s.tg.terminate_long_poll(), "a poll was waiting");
    let reported = |log: &str| {
        log.matches("another program is polling this bot token")
            .count()
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    while reported(&s.core.log()) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no report of the conflict:\n{}",
            s.core.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let polls = s.tg.calls_to("getUpdates").len();
    // A promise about time, so a sleep: after a 409 the poller waits 30 s, and nothing it
    // does meanwhile comes in order after a poll it did not make. 2 s is longer than its
    // 1 s retry after other errors, so polling on that path would show here.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        s.tg.calls_to("getUpdates").len(),
        polls,
        "no polling while backing off"
    );
    assert!(!s.tg.long_poll_waiting());
    assert_eq!(reported(&s.core.log()), 1);
    Ok(())
}

/// Content longer than a few messages arrives as one `.md` document, whole.
#[tokio::test]
async fn a_very_long_report_is_sent_as_a_document() -> Result<()> {
    let s = setup(false, None).await?;
    let mut pi = s.core.pi("tg-s8", "verbose").await?;
    let text: String = (0..800)
        .map(|i| format!("row {i:04} of the full test log\n"))
        .collect();
    pi.client.report(text.clone()).await?;
    let doc =
        s.tg.wait_for_message(s.chat, WAIT, |m| m.document.is_some())
            .await?;
    let document = doc.document.unwrap();
    assert!(
        document.file_name.ends_with(".md"),
        "{}",
        document.file_name
    );
    let body = String::from_utf8(document.bytes)?;
    assert!(
        body.contains(text.trim_end()),
        "the document holds the whole report"
    );
    Ok(())
}

/// Cards keep working across a restart: the card ↔ ask mapping is persisted, so a button
/// on a card posted before the restart still answers.
#[tokio::test]
async fn buttons_on_old_cards_work_after_a_restart() -> Result<()> {
    let mut s = setup(false, None).await?;
    let socket = s.core.socket();
    let agent = s.core.agent_dir().to_path_buf();
    let mut pi = s.core.pi("tg-s9", "patient").await?;
    pi.client
        .call(requests::Ask {
            id: 0,
            question: "Rebase or merge?".into(),
            options: vec!["rebase".into(), "merge".into()],
            details: None,
            key: None,
        })
        .await?;
    let card =
        s.tg.wait_for_message(s.chat, WAIT, is_card_for("Rebase or merge?"))
            .await?;
    s.core.restart().await?;
    let mut pi = shepherd_harness::Pi::register(&socket, "tg-s9", "patient", &agent).await?;
    s.tg.wait_for("a long poll after the restart", WAIT, |tg| {
        tg.long_poll_waiting().then_some(())
    })
    .await?;
    let press =
        s.tg.press_button(s.chat, card.message_id, ADA, &card.buttons()[1].1)?;
    let answer = s.tg.wait_for_callback_answer(&press.query_id, WAIT).await?;
    assert!(answer.text.unwrap_or_default().contains("merge"));
    let delivery = pi.next_delivery(WAIT).await?;
    assert_eq!(delivery.text, "merge");
    let cards: Vec<_> =
        s.tg.messages(s.chat)
            .into_iter()
            .filter(|m| m.text.contains("Rebase or merge?"))
            .collect();
    assert_eq!(cards.len(), 1, "the restart did not post the card again");
    Ok(())
}

/// In a private chat (no topics) the pairing's messages name the worker; `/look` with a
/// session answers, an unknown worker gets the core's refusal, and the help lists the
/// pairing commands.
#[tokio::test]
async fn supervision_commands_in_a_private_chat() -> Result<()> {
    let s = setup(false, None).await?;
    let _worker = s.core.pi("tg-w2", "fix-signup").await?;
    s.tg.inject_message(UserMessage::new(
        s.chat,
        ADA,
        "/supervise fix-signup signup works",
    ))?;
    let refused =
        s.tg.wait_for_message(s.chat, WAIT, |m| m.text.starts_with("⚠️"))
            .await?;
    assert!(
        refused.text.contains("supervisor"),
        "no supervisor-role session yet: the core says so: {}",
        refused.text
    );
    let mut reg = registration("tg-sup2", "watch-signup", s.core.agent_dir());
    reg.role = Role::Supervisor;
    let (_sup, _) = Pi::register_full(&s.core.socket(), reg).await?;
    s.tg.inject_message(UserMessage::new(
        s.chat,
        ADA,
        "/supervise fix-signup signup works",
    ))?;
    s.tg.wait_for_message(s.chat, WAIT, |m| {
        m.text.contains("watch-signup supervises fix-signup") && m.text.contains("signup works")
    })
    .await?;
    s.tg.inject_message(UserMessage::new(s.chat, ADA, "/look fix-signup"))?;
    s.tg.wait_for_message(s.chat, WAIT, |m| {
        m.text.contains("watch-signup looks at fix-signup now")
    })
    .await?;
    s.tg.inject_message(UserMessage::new(s.chat, ADA, "/look"))?;
    s.tg.wait_for_message(s.chat, WAIT, |m| m.text.contains("Usage: /look <session>"))
        .await?;
    s.tg.inject_message(UserMessage::new(s.chat, ADA, "/help"))?;
    let help =
        s.tg.wait_for_message(s.chat, WAIT, |m| m.text.contains("shepherd commands"))
            .await?;
    for command in ["/supervise", "/goal", "/look", "/stop", "/unpair"] {
        assert!(help.text.contains(command), "{}", help.text);
    }
    assert!(
        help.text
            .contains("/stop interrupts what a session is doing; /unpair (or /supervise stop) ends its supervision."),
        "the help says which is which: {}",
        help.text
    );
    let commands = s.tg.commands().context("setMyCommands")?.to_string();
    assert!(
        commands.contains("supervise") && commands.contains("stop") && commands.contains("unpair"),
        "{commands}"
    );
    Ok(())
}

/// A real Pi killed mid-tool (no `session_shutdown`, no goodbye) is announced as exited,
/// with the tool it was in.
#[tokio::test]
async fn a_killed_real_pi_is_announced_as_exited_mid_tool() -> Result<()> {
    let s = setup(true, None).await?;
    let model = FakeModel::start(|_| Reply::tool("bash", json!({"command": "sleep 60"}))).await?;
    let mut opts = PiOptions::new(s.core.agent_dir());
    opts.name = Some("tg-killed".into());
    let mut pi = PiSession::spawn(&model, opts).await?;
    s.core.connected_session("tg-killed", WAIT).await?;
    pi.prompt("run the long job").await?;
    eventually(WAIT, "the session in its bash call", || {
        s.core
            .session_named("tg-killed")
            .filter(|v| v["status"] == "tool:bash")
    })
    .await?;
    pi.kill().await?;
    let ended =
        s.tg.wait_for_message(FORUM, WAIT, |m| m.text.contains("💥 tg-killed"))
            .await?;
    assert!(
        ended
            .text
            .contains("💥 tg-killed exited while running tool:bash"),
        "{}",
        ended.text
    );
    Ok(())
}
