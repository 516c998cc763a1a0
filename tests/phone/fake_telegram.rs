//! The fake Telegram Bot API, driven by real teloxide 0.17: every answer must deserialize
//! in teloxide, and every refusal must be the one Telegram gives (mapped by teloxide to
//! the same `ApiError`/`RequestError`).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shepherd_harness::fake_telegram::{
    FakeTelegram, FakeTelegramOptions, FakeUser, RateLimits, UserMessage,
};
use teloxide::prelude::*;
use teloxide::types::{
    AllowedUpdate, BotCommand, ChatId, InlineKeyboardButton, InlineKeyboardMarkup, InputFile,
    MessageEntityKind, MessageId, MessageKind, ParseMode, ThreadId, UpdateKind,
};
use teloxide::{ApiError, RequestError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ALICE: i64 = 42;
const MALLORY: i64 = 666;
const FORUM: i64 = -100_1234567890;
const GROUP: i64 = -100_555;
const SECS: Duration = Duration::from_secs(10);

fn options() -> FakeTelegramOptions {
    FakeTelegramOptions::default()
        .private_chat(FakeUser::new(ALICE, "Alice").with_username("alice"))
        .forum(FORUM, "shepherd")
        .supergroup(GROUP, "plain group")
        .user(FakeUser::new(MALLORY, "Mallory"))
        .no_rate_limits()
}

async fn start() -> FakeTelegram {
    FakeTelegram::start(options()).await.expect("fake starts")
}

fn bot(tg: &FakeTelegram) -> Bot {
    Bot::new(tg.token()).set_api_url(tg.api_url().parse().expect("url"))
}

fn keyboard(data: &[&str]) -> InlineKeyboardMarkup {
    InlineKeyboardMarkup::new([data
        .iter()
        .map(|d| InlineKeyboardButton::callback(d.to_uppercase(), *d))
        .collect::<Vec<_>>()])
}

fn api_error(result: Result<impl std::fmt::Debug, RequestError>) -> ApiError {
    match result {
        Err(RequestError::Api(e)) => e,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// A bare HTTP/1.1 request, for what teloxide cannot send; status and JSON body.
async fn raw(tg: &FakeTelegram, path: &str, content_type: &str, body: &str) -> (u16, Value) {
    let mut stream = tokio::net::TcpStream::connect(tg.addr()).await.unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        tg.addr(),
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8(response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = &response[response.find("\r\n\r\n").unwrap() + 4..];
    (status, serde_json::from_str(body).unwrap())
}

#[tokio::test]
async fn get_me_webhook_info_and_commands() {
    let tg = start().await;
    let bot = bot(&tg);
    let me = bot.get_me().await.unwrap();
    assert_eq!(me.username(), "shepherd_test_bot");
    assert_eq!(me.id.0 as i64, tg.bot_id());
    assert!(me.is_bot && !me.has_main_web_app);
    let info = bot.get_webhook_info().await.unwrap();
    assert!(info.url.is_none());

    bot.set_my_commands([
        BotCommand::new("sessions", "List sessions"),
        BotCommand::new("steer", "Steer a session"),
    ])
    .await
    .unwrap();
    let commands = tg.commands().unwrap();
    assert_eq!(commands[0]["command"], "sessions");
    assert_eq!(commands[1]["description"], "Steer a session");
    let got = bot.get_my_commands().await.unwrap();
    assert_eq!(got.len(), 2);
    let bad = bot
        .set_my_commands([BotCommand::new("Bad-Name", "x")])
        .await;
    assert_eq!(
        api_error(bad),
        ApiError::Unknown("Bad Request: BOT_COMMAND_INVALID".into())
    );
    assert_eq!(tg.calls_to("SETMYCOMMANDS").len(), 2);
    assert_eq!(tg.calls_to("setMyCommands")[1].status, 400);
}

#[tokio::test]
async fn html_message_with_keyboard_then_edits() {
    let tg = start().await;
    let bot = bot(&tg);
    let html = "<b>Ask</b> from <code>repo@main</code>: is 1 &lt; 2?";
    let sent = bot
        .send_message(ChatId(ALICE), html)
        .parse_mode(ParseMode::Html)
        .reply_markup(keyboard(&["ask:1:yes", "ask:1:no"]))
        .await
        .unwrap();
    assert_eq!(sent.text(), Some("Ask from repo@main: is 1 < 2?"));
    let kinds: Vec<_> = sent
        .entities()
        .unwrap()
        .iter()
        .map(|e| e.kind.clone())
        .collect();
    assert_eq!(
        kinds,
        vec![MessageEntityKind::Bold, MessageEntityKind::Code]
    );
    assert_eq!(sent.reply_markup().unwrap().inline_keyboard[0].len(), 2);
    assert_eq!(sent.chat.id, ChatId(ALICE));
    assert_eq!(sent.from.as_ref().unwrap().id.0 as i64, tg.bot_id());

    let state = &tg.messages(ALICE)[0];
    assert_eq!(state.raw, html);
    assert_eq!(state.parse_mode.as_deref(), Some("HTML"));
    assert_eq!(state.text, "Ask from repo@main: is 1 < 2?");
    assert_eq!(
        state.buttons(),
        vec![
            ("ASK:1:YES".to_string(), "ask:1:yes".to_string()),
            ("ASK:1:NO".to_string(), "ask:1:no".to_string())
        ]
    );

    // Editing without reply_markup removes the keyboard, as on Telegram.
    let edited = bot
        .edit_message_text(ChatId(ALICE), sent.id, "<b>Answered</b>: yes (by Alice)")
        .parse_mode(ParseMode::Html)
        .await
        .unwrap();
    assert_eq!(edited.id, sent.id);
    assert_eq!(edited.text(), Some("Answered: yes (by Alice)"));
    assert!(edited.edit_date().is_some());
    assert!(edited.reply_markup().is_none());
    let state = tg.message(ALICE, sent.id.0).unwrap();
    assert_eq!(state.edits.len(), 1);
    assert_eq!(state.edits[0].raw, html);
    assert!(state.edits[0].reply_markup.is_some());
    assert!(state.reply_markup.is_none());

    // The same text (even spelled differently) and markup: not modified.
    let same = bot
        .edit_message_text(
            ChatId(ALICE),
            sent.id,
            "<strong>Answered</strong>: yes (by Alice)",
        )
        .parse_mode(ParseMode::Html)
        .await;
    assert_eq!(api_error(same), ApiError::MessageNotModified);
    // Only the markup changes: that is a modification.
    bot.edit_message_reply_markup(ChatId(ALICE), sent.id)
        .reply_markup(keyboard(&["again"]))
        .await
        .unwrap();
    let again = bot
        .edit_message_reply_markup(ChatId(ALICE), sent.id)
        .reply_markup(keyboard(&["again"]))
        .await;
    assert_eq!(api_error(again), ApiError::MessageNotModified);
    assert_eq!(tg.message(ALICE, sent.id.0).unwrap().edits.len(), 2);

    let missing = bot
        .edit_message_text(ChatId(ALICE), MessageId(999), "x")
        .await;
    assert_eq!(api_error(missing), ApiError::MessageToEditNotFound);
    bot.delete_message(ChatId(ALICE), sent.id).await.unwrap();
    assert!(tg.message(ALICE, sent.id.0).unwrap().deleted);
    let gone = bot.delete_message(ChatId(ALICE), sent.id).await;
    assert_eq!(api_error(gone), ApiError::MessageToDeleteNotFound);
}

#[tokio::test]
async fn refuses_what_telegram_refuses() {
    let tg = start().await;
    let bot = bot(&tg);
    let send = |text: String| {
        bot.send_message(ChatId(ALICE), text)
            .parse_mode(ParseMode::Html)
            .send()
    };

    for (html, reason) in [
        (
            "<b>unclosed",
            "Can't find end tag corresponding to start tag \"b\"",
        ),
        ("<b><i>x</b></i>", "Unmatched end tag at byte offset 7"),
        ("a < b", "Unsupported start tag \"\" at byte offset 2"),
        ("<div>x</div>", "Unsupported start tag \"div\""),
        ("AT&T", "Unescaped \"&\""),
    ] {
        match api_error(send(html.to_string()).await) {
            ApiError::CantParseEntities(d) => assert!(
                d.starts_with("Bad Request: can't parse entities: ") && d.contains(reason),
                "{html:?}: {d}"
            ),
            other => panic!("{html:?}: {other:?}"),
        }
    }

    // 4096 after entity parsing, in UTF-16 code units: tags and entities do not count
    // as written, an emoji counts 2.
    let x4096 = "x".repeat(4096);
    send(format!("<b>{x4096}</b>")).await.unwrap();
    send("&lt;".repeat(4096)).await.unwrap();
    send("😀".repeat(2048)).await.unwrap();
    assert_eq!(
        api_error(send("😀".repeat(2049)).await),
        ApiError::MessageIsTooLong
    );
    assert_eq!(
        api_error(send(format!("<i>{x4096}y</i>")).await),
        ApiError::MessageIsTooLong
    );
    assert_eq!(
        api_error(send(String::new()).await),
        ApiError::MessageTextIsEmpty
    );
    assert_eq!(
        api_error(send("<b> </b>\n".into()).await),
        ApiError::Unknown("Bad Request: text must be non-empty".into())
    );
    // Edits say it differently.
    let short = send("short".into()).await.unwrap();
    let long_edit = bot
        .edit_message_text(ChatId(ALICE), short.id, "😀".repeat(2049))
        .await;
    assert_eq!(api_error(long_edit), ApiError::EditedMessageIsTooLong);

    let unknown_chat = bot.send_message(ChatId(7), "hi").await;
    assert_eq!(api_error(unknown_chat), ApiError::ChatNotFound);
    let long_data = bot
        .send_message(ChatId(ALICE), "card")
        .reply_markup(keyboard(&[&"d".repeat(65)]))
        .await;
    assert_eq!(api_error(long_data), ApiError::ButtonDataInvalid);
    let counts = tg.error_counts();
    assert_eq!(counts.bad_request, 12);
    assert_eq!(tg.messages(ALICE).len(), 4);
}

#[tokio::test]
async fn forum_topics_and_threads() {
    let tg = start().await;
    let bot = bot(&tg);
    let topic = bot
        .create_forum_topic(ChatId(FORUM), "fix-bug · repo@main")
        .await
        .unwrap();
    let thread = topic.thread_id;
    assert_eq!(topic.name, "fix-bug · repo@main");
    let card = bot
        .send_message(ChatId(FORUM), "<i>report</i>")
        .parse_mode(ParseMode::Html)
        .message_thread_id(thread)
        .reply_markup(keyboard(&["a"]))
        .await
        .unwrap();
    assert_eq!(card.thread_id, Some(thread));
    assert!(card.is_topic_message);
    assert_eq!(tg.topic_messages(FORUM, thread.0.0).len(), 1);

    let general = bot.send_message(ChatId(FORUM), "general").await.unwrap();
    assert_eq!(general.thread_id, None);

    let nowhere = bot
        .send_message(ChatId(FORUM), "x")
        .message_thread_id(ThreadId(MessageId(card.id.0 + 50)))
        .await;
    assert_eq!(
        api_error(nowhere),
        ApiError::Unknown("Bad Request: message thread not found".into())
    );
    let in_private = bot
        .send_message(ChatId(ALICE), "x")
        .message_thread_id(thread)
        .await;
    assert_eq!(
        api_error(in_private),
        ApiError::Unknown("Bad Request: message thread not found".into())
    );
    for chat in [ALICE, GROUP] {
        let not_forum = bot.create_forum_topic(ChatId(chat), "t").await;
        assert_eq!(
            api_error(not_forum),
            ApiError::Unknown("Bad Request: the chat is not a forum".into())
        );
    }

    bot.edit_forum_topic(ChatId(FORUM), thread)
        .name("fix-bug-2 · repo@main")
        .await
        .unwrap();
    let same = bot
        .edit_forum_topic(ChatId(FORUM), thread)
        .name("fix-bug-2 · repo@main")
        .await;
    assert_eq!(
        api_error(same),
        ApiError::Unknown("Bad Request: TOPIC_NOT_MODIFIED".into())
    );
    let topics = tg.topics(FORUM);
    assert_eq!(topics.len(), 1);
    assert_eq!(topics[0].name, "fix-bug-2 · repo@main");
    assert_eq!(topics[0].renames, vec!["fix-bug · repo@main".to_string()]);

    // A user writes in the topic (replying to nothing: Telegram makes it a reply to the
    // topic's creation message), then replies to the card.
    let plain = tg
        .inject_message(UserMessage::new(FORUM, ALICE, "hello").in_topic(thread.0.0))
        .unwrap();
    let reply = tg
        .inject_message(UserMessage::new(FORUM, ALICE, "answer").reply_to(card.id.0))
        .unwrap();
    let updates = bot.get_updates().await.unwrap();
    assert_eq!(updates.len(), 2);
    let UpdateKind::Message(m) = &updates[0].kind else {
        panic!("{:?}", updates[0].kind)
    };
    assert_eq!(m.id.0, plain.message_id);
    assert_eq!(m.thread_id, Some(thread));
    assert!(m.is_topic_message);
    let root = m.reply_to_message().unwrap();
    assert_eq!(root.id, thread.0);
    assert!(matches!(root.kind, MessageKind::ForumTopicCreated(_)));
    let UpdateKind::Message(m) = &updates[1].kind else {
        panic!("{:?}", updates[1].kind)
    };
    assert_eq!(m.id.0, reply.message_id);
    assert_eq!(
        m.thread_id,
        Some(thread),
        "a reply lands in the card's topic"
    );
    assert_eq!(m.reply_to_message().unwrap().id, card.id);
    assert_eq!(m.reply_to_message().unwrap().text(), Some("report"));
    assert_eq!(m.from.as_ref().unwrap().first_name, "Alice");
}

#[tokio::test]
async fn get_updates_offsets_and_long_polling() {
    let tg = start().await;
    let bot = bot(&tg);
    let first = tg
        .inject_message(UserMessage::new(ALICE, ALICE, "/sessions"))
        .unwrap();
    let second = tg
        .inject_message(UserMessage::new(ALICE, ALICE, "hi"))
        .unwrap();
    assert_eq!(second.update_id, first.update_id + 1);

    // Without an offset nothing is confirmed: the same updates come again.
    let updates = bot.get_updates().await.unwrap();
    assert_eq!(updates.len(), 2);
    let UpdateKind::Message(m) = &updates[0].kind else {
        panic!()
    };
    assert_eq!(m.text(), Some("/sessions"));
    assert_eq!(m.entities().unwrap()[0].kind, MessageEntityKind::BotCommand);
    assert_eq!(bot.get_updates().await.unwrap().len(), 2);
    assert_eq!(tg.updates()[0].deliveries, 2);

    // offset = first + 1 confirms the first.
    let updates = bot
        .get_updates()
        .offset(updates[0].id.as_offset())
        .await
        .unwrap();
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].id.0, second.update_id);
    assert!(tg.updates()[0].confirmed && !tg.updates()[1].confirmed);
    let offset = updates[0].id.as_offset();
    assert!(bot.get_updates().offset(offset).await.unwrap().is_empty());
    assert_eq!(tg.pending_updates(), 0);

    // A long poll waits for the next update and returns it at once.
    let poll = tokio::spawn({
        let bot = bot.clone();
        async move { bot.get_updates().offset(offset).timeout(8).await }
    });
    tg.wait_for("a waiting long poll", SECS, |tg| {
        tg.long_poll_waiting().then_some(())
    })
    .await
    .unwrap();
    let started = Instant::now();
    let third = tg
        .inject_message(UserMessage::new(ALICE, ALICE, "late"))
        .unwrap();
    let updates = poll.await.unwrap().unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].id.0, third.update_id);

    // Nothing comes: an empty answer after the timeout.
    let started = Instant::now();
    let none = bot
        .get_updates()
        .offset(updates[0].id.as_offset())
        .timeout(1)
        .await
        .unwrap();
    assert!(none.is_empty());
    assert!(started.elapsed() >= Duration::from_millis(900));

    // A negative offset keeps only the newest updates.
    for text in ["a", "b", "c"] {
        tg.inject_message(UserMessage::new(ALICE, ALICE, text))
            .unwrap();
    }
    let last = bot.get_updates().offset(-1).await.unwrap();
    assert_eq!(last.len(), 1);
    let UpdateKind::Message(m) = &last[0].kind else {
        panic!()
    };
    assert_eq!(m.text(), Some("c"));
    assert_eq!(tg.pending_updates(), 1);
    // limit
    tg.inject_message(UserMessage::new(ALICE, ALICE, "d"))
        .unwrap();
    assert_eq!(bot.get_updates().limit(1).await.unwrap().len(), 1);
}

#[tokio::test]
async fn button_presses_and_callback_answers() {
    let tg = start().await;
    let bot = bot(&tg);
    let card = bot
        .send_message(ChatId(ALICE), "Deploy?")
        .reply_markup(keyboard(&["ask:7:yes", "ask:7:no"]))
        .await
        .unwrap();
    assert!(
        tg.press_button(ALICE, card.id.0, ALICE, "ask:7:maybe")
            .is_err()
    );
    assert!(
        tg.press_button(ALICE, card.id.0, MALLORY, "ask:7:yes")
            .is_err()
    );
    let press = tg
        .press_button(ALICE, card.id.0, ALICE, "ask:7:yes")
        .unwrap();
    let updates = bot.get_updates().await.unwrap();
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].id.0, press.update_id);
    let UpdateKind::CallbackQuery(q) = &updates[0].kind else {
        panic!("{:?}", updates[0].kind)
    };
    assert_eq!(q.id.0, press.query_id);
    assert_eq!(q.data.as_deref(), Some("ask:7:yes"));
    assert_eq!(q.from.id.0 as i64, ALICE);
    let message = q.regular_message().expect("a regular message");
    assert_eq!(message.id, card.id);
    assert_eq!(message.text(), Some("Deploy?"));

    bot.answer_callback_query(q.id.clone())
        .text("Answered")
        .await
        .unwrap();
    let answer = tg
        .wait_for_callback_answer(&press.query_id, SECS)
        .await
        .unwrap();
    assert_eq!(answer.text.as_deref(), Some("Answered"));
    let twice = bot.answer_callback_query(q.id.clone()).await;
    assert!(matches!(api_error(twice), ApiError::Unknown(d) if d.contains("query is too old")),);

    // allowed_updates is remembered: presses stop arriving once only messages are asked for.
    let offset = updates[0].id.as_offset();
    bot.get_updates()
        .offset(offset)
        .allowed_updates([AllowedUpdate::Message])
        .await
        .unwrap();
    assert_eq!(tg.allowed_updates(), Some(vec!["message".to_string()]));
    tg.press_button(ALICE, card.id.0, ALICE, "ask:7:no")
        .unwrap();
    tg.inject_message(UserMessage::new(ALICE, ALICE, "text"))
        .unwrap();
    let updates = bot.get_updates().offset(offset).await.unwrap();
    assert_eq!(updates.len(), 1);
    assert!(matches!(updates[0].kind, UpdateKind::Message(_)));
    assert!(
        tg.updates()
            .iter()
            .any(|u| u.filtered && u.kind == "callback_query")
    );
}

#[tokio::test]
async fn a_second_poller_terminates_the_first_with_409() {
    let tg = FakeTelegram::start(FakeTelegramOptions {
        conflict_cooldown: Duration::from_millis(2000),
        ..options()
    })
    .await
    .unwrap();
    let first = bot(&tg);
    let second = bot(&tg);
    let waiting = tokio::spawn(async move { first.get_updates().timeout(8).await });
    tg.wait_for("the first long poll", SECS, |tg| {
        tg.long_poll_waiting().then_some(())
    })
    .await
    .unwrap();
    let started = Instant::now();
    let other = tokio::spawn(async move { second.get_updates().timeout(1).await });
    let terminated = waiting.await.unwrap();
    assert_eq!(api_error(terminated), ApiError::TerminatedByOtherGetUpdates);
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(other.await.unwrap().unwrap().is_empty());
    assert_eq!(tg.error_counts().conflict, 1);
    let call = &tg.calls_to("getUpdates")[0];
    assert_eq!(call.status, 409);
    assert_eq!(
        call.response,
        json!({"ok": false, "error_code": 409, "description":
            "Conflict: terminated by other getUpdates request; make sure that only one bot \
             instance is running"})
    );

    // The test can play the other instance too. Like the Bot API server, the fake sends
    // at most one 409 per cooldown: this one, soon after the first, waits it out.
    let third = bot(&tg);
    let waiting = tokio::spawn(async move { third.get_updates().timeout(8).await });
    tg.wait_for("a long poll", SECS, |tg| {
        tg.long_poll_waiting().then_some(())
    })
    .await
    .unwrap();
    let started = Instant::now();
    assert!(tg.terminate_long_poll());
    assert_eq!(
        api_error(waiting.await.unwrap()),
        ApiError::TerminatedByOtherGetUpdates
    );
    assert!(started.elapsed() >= Duration::from_millis(1900));
    assert_eq!(tg.error_counts().conflict, 2);
}

#[tokio::test]
async fn documents_are_multipart_uploads() {
    let tg = start().await;
    let bot = bot(&tg);
    let topic = bot.create_forum_topic(ChatId(FORUM), "docs").await.unwrap();
    let body = "# Report\n\n".to_string() + &*"line\n".repeat(3000);
    let sent = bot
        .send_document(
            ChatId(FORUM),
            InputFile::memory(body.clone().into_bytes()).file_name("report.md"),
        )
        .caption("<b>Full report</b> (15 kB)")
        .parse_mode(ParseMode::Html)
        .message_thread_id(topic.thread_id)
        .await
        .unwrap();
    let doc = sent.document().unwrap();
    assert_eq!(doc.file_name.as_deref(), Some("report.md"));
    assert_eq!(
        doc.mime_type.as_ref().unwrap().essence_str(),
        "text/markdown"
    );
    assert_eq!(doc.file.size as usize, body.len());
    assert_eq!(sent.caption(), Some("Full report (15 kB)"));
    assert_eq!(sent.thread_id, Some(topic.thread_id));

    let state = &tg.messages(FORUM)[0];
    let stored = state.document.as_ref().unwrap();
    assert_eq!(stored.file_name, "report.md");
    assert_eq!(stored.bytes, body.as_bytes());
    assert_eq!(state.text, "Full report (15 kB)");
    let call = &tg.calls_to("sendDocument")[0];
    assert_eq!(call.status, 200);
    assert!(
        call.params["document"]
            .as_str()
            .unwrap()
            .starts_with("attach://")
    );

    // The same file again by file_id, as JSON.
    let again = bot
        .send_document(ChatId(ALICE), InputFile::file_id(doc.file.id.clone()))
        .await
        .unwrap();
    assert_eq!(
        again.document().unwrap().file_name.as_deref(),
        Some("report.md")
    );
    let long_caption = bot
        .send_document(
            ChatId(ALICE),
            InputFile::memory(b"x".to_vec()).file_name("x.txt"),
        )
        .caption("c".repeat(1025))
        .await;
    assert_eq!(
        api_error(long_caption),
        ApiError::Unknown("Bad Request: message caption is too long".into())
    );
}

#[tokio::test]
async fn flood_limits_answer_429_with_retry_after() {
    let tg = FakeTelegram::start(options().rate_limits(RateLimits {
        per_chat_per_sec: 1.0,
        per_chat_burst: 2,
        per_group_per_min: 3,
        global_per_sec: 1000,
        count_edits: true,
    }))
    .await
    .unwrap();
    let bot = bot(&tg);
    bot.send_message(ChatId(ALICE), "1").await.unwrap();
    let second = bot.send_message(ChatId(ALICE), "2").await.unwrap();
    match bot.send_message(ChatId(ALICE), "3").await {
        Err(RequestError::RetryAfter(after)) => assert_eq!(after.seconds(), 1),
        other => panic!("expected 429, got {other:?}"),
    }
    // Edits count too.
    let edit = bot.edit_message_text(ChatId(ALICE), second.id, "2!").await;
    assert!(matches!(edit, Err(RequestError::RetryAfter(_))));
    let refused = tg.calls_to("sendMessage").pop().unwrap();
    assert_eq!(refused.status, 429);
    assert_eq!(
        refused.response,
        json!({"ok": false, "error_code": 429,
            "description": "Too Many Requests: retry after 1", "parameters": {"retry_after": 1}})
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    bot.send_message(ChatId(ALICE), "3").await.unwrap();
    assert_eq!(tg.messages(ALICE).len(), 3);

    // 3 a minute in a group: the fourth waits for the minute to pass.
    for i in 0..3 {
        bot.send_message(ChatId(FORUM), format!("{i}"))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
    match bot.send_message(ChatId(FORUM), "4").await {
        Err(RequestError::RetryAfter(after)) => {
            assert!((55..=60).contains(&after.seconds()), "{after:?}")
        }
        other => panic!("expected 429, got {other:?}"),
    }
    assert_eq!(tg.error_counts().too_many_requests, 3);
    tg.set_rate_limits(None);
    bot.send_message(ChatId(FORUM), "4").await.unwrap();
}

#[tokio::test]
async fn tokens_methods_and_encodings() {
    let tg = start().await;
    let wrong = Bot::new("1:wrong").set_api_url(tg.api_url().parse().unwrap());
    assert_eq!(api_error(wrong.get_me().await), ApiError::InvalidToken);
    let (status, body) = raw(&tg, "/bot1:wrong/getMe", "application/json", "{}").await;
    assert_eq!(status, 401);
    assert_eq!(
        body,
        json!({"ok": false, "error_code": 401, "description": "Unauthorized"})
    );
    let token = tg.token().to_string();
    let (status, body) = raw(
        &tg,
        &format!("/bot{token}/fooBar"),
        "application/json",
        "{}",
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(
        body,
        json!({"ok": false, "error_code": 404, "description": "Not Found"})
    );
    let (status, body) = raw(&tg, &format!("/bot{token}/GETME"), "application/json", "").await;
    assert_eq!(status, 200);
    assert_eq!(body["result"]["has_main_web_app"], false);
    let (status, body) = raw(
        &tg,
        &format!("/bot{token}/sendMessage"),
        "application/x-www-form-urlencoded",
        &format!("chat_id={ALICE}&text=a%20%26lt%3B%20b&parse_mode=HTML"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["text"], "a < b");
    let (status, _) = raw(
        &tg,
        &format!("/bot{token}/sendMessage"),
        "application/json",
        "[1]",
    )
    .await;
    assert_eq!(status, 400);
    let chat = bot(&tg).get_chat(ChatId(FORUM)).await.unwrap();
    assert!(chat.is_supergroup());
}

#[tokio::test]
async fn a_teloxide_dispatcher_runs_against_the_fake() {
    use teloxide::dispatching::UpdateFilterExt;

    let tg = start().await;
    let handler = dptree::entry()
        .branch(
            Update::filter_message().endpoint(|bot: Bot, msg: Message| async move {
                let text = msg.text().unwrap_or("").to_string();
                bot.send_message(
                    msg.chat.id,
                    format!("echo: <code>{}</code>", text.replace('<', "&lt;")),
                )
                .parse_mode(ParseMode::Html)
                .reply_markup(keyboard(&["ok"]))
                .await?;
                Ok::<(), RequestError>(())
            }),
        )
        .branch(Update::filter_callback_query().endpoint(
            |bot: Bot, q: CallbackQuery| async move {
                bot.answer_callback_query(q.id).text("done").await?;
                Ok::<(), RequestError>(())
            },
        ));
    let mut dispatcher = Dispatcher::builder(bot(&tg), handler).build();
    let shutdown = dispatcher.shutdown_token();
    let running = tokio::spawn(async move { dispatcher.dispatch().await });

    let sent = tg
        .inject_message(UserMessage::new(ALICE, ALICE, "1 < 2"))
        .unwrap();
    let echo = tg
        .wait_for_message(ALICE, SECS, |m| m.text == "echo: 1 < 2")
        .await
        .unwrap();
    let press = tg
        .press_button(ALICE, echo.message_id, ALICE, "ok")
        .unwrap();
    let answer = tg
        .wait_for_callback_answer(&press.query_id, SECS)
        .await
        .unwrap();
    assert_eq!(answer.text.as_deref(), Some("done"));
    tg.wait_confirmed(sent.update_id, SECS).await.unwrap();

    let methods: Vec<String> = tg.calls().into_iter().map(|c| c.method).collect();
    assert_eq!(
        methods[..2],
        ["getWebhookInfo".to_string(), "getMe".to_string()]
    );
    assert!(methods.contains(&"getUpdates".to_string()));
    assert!(tg.updates().iter().all(|u| u.deliveries == 1));

    loop {
        match shutdown.shutdown() {
            Ok(done) => {
                tokio::time::timeout(SECS, done).await.unwrap();
                break;
            }
            // Not started yet.
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    tokio::time::timeout(SECS, running).await.unwrap().unwrap();
}

#[tokio::test]
async fn a_poll_whose_client_went_away_is_no_conflict() {
    let tg = start().await;
    let bot1 = bot(&tg);
    let gone = tokio::spawn(async move { bot1.get_updates().timeout(8).await });
    tg.wait_for("a long poll", SECS, |tg| {
        tg.long_poll_waiting().then_some(())
    })
    .await
    .unwrap();
    gone.abort();
    tg.wait_for("the dropped poll to be forgotten", SECS, |tg| {
        (!tg.long_poll_waiting()).then_some(())
    })
    .await
    .unwrap();
    let bot2 = bot(&tg);
    assert!(bot2.get_updates().timeout(1).await.unwrap().is_empty());
    assert_eq!(tg.error_counts().conflict, 0);
}
