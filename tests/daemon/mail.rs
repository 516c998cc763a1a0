//! Mail against the real daemon: steers from the CLI and bridges, messages between Pi
//! sessions, the sender stamped by the core from the connection (never from the
//! payload), delivery in order, redelivery until acknowledged (after a reconnect, a
//! clean restart, or a disconnect for reading too slowly), and who may acknowledge what.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use shepherd_core::client::{Client, ClientError, Sent};
use shepherd_core::protocol::{
    ClientKind, ClientMsg, Delivery, DeliveryKind, ErrorCode, MessageId, Sender, ServerMsg,
    SessionId, requests,
};
use shepherd_harness::{Core, Pi, next_event_where};

const WAIT: Duration = Duration::from_secs(10);

/// Send and return the stored message id.
async fn send(client: &mut Client, to: &str, text: &str, by: Option<&str>) -> Result<MessageId> {
    let reply = client
        .call(requests::Send {
            id: 0,
            to: to.into(),
            text: text.into(),
            by: by.map(str::to_string),
            host: None,
        })
        .await?;
    Ok(reply.message_id)
}

/// Send and return the whole `sent` reply.
async fn send_reply(client: &mut Client, to: &str, text: &str) -> Result<Sent, ClientError> {
    client.send_to(to, text).await
}

/// `shepherd send <to> <text> --json`: the stored message id.
fn cli_send(core: &Core, to: &str, text: &str) -> Result<Value> {
    core.cli_json(&["send", to, text])
}

async fn deliveries(pi: &mut Pi, n: usize) -> Result<Vec<Delivery>> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(pi.next_delivery(WAIT).await?);
    }
    Ok(out)
}

async fn await_left(sub: &mut Client, id: &str) -> Result<()> {
    next_event_where(
        sub,
        WAIT,
        |m| matches!(m, ServerMsg::SessionLeft { session, .. } if session.id == id),
    )
    .await?;
    Ok(())
}

fn pending_of(core: &Core, id: &str) -> Result<u64> {
    let all = core.cli_json(&["sessions", "--all"])?;
    all.as_array()
        .context("array")?
        .iter()
        .find(|s| s["id"] == id)
        .and_then(|s| s["pending_messages"].as_u64())
        .with_context(|| format!("{id} not listed: {all:#}"))
}

fn sender(kind: ClientKind, session_id: Option<&str>, name: &str) -> Sender {
    Sender {
        kind,
        session_id: session_id.map(SessionId::from),
        name: name.to_string(),
    }
}

#[tokio::test]
async fn steers_and_messages_arrive_in_order_stamped_by_the_core() -> Result<()> {
    let core = Core::start().await?;
    let mut reader = core.pi("mail-reader", "reader").await?;
    let mut peer = core.pi("mail-peer", "peer").await?;
    let mut telegram = Client::connect(&core.socket(), ClientKind::Bridge, "telegram").await?;
    let mut matrix = Client::connect(&core.socket(), ClientKind::Bridge, "matrix").await?;
    let mut cli = core.client(ClientKind::Cli).await?;

    let mut ids = Vec::new();
    let first = cli_send(&core, "reader", "one")?;
    assert_eq!(first["session_id"], "mail-reader");
    assert_eq!(first["session_name"], "reader");
    assert_eq!(first["connected"], true);
    ids.push(MessageId::from(
        first["message_id"].as_u64().context("message_id")?,
    ));
    ids.push(send(&mut telegram, "reader", "two", Some("telegram:@alice")).await?);
    // A CLI client cannot claim to be someone: `by` is ignored.
    ids.push(send(&mut cli, "reader", "three", Some("telegram:@mallory")).await?);
    // A bridge without `by` is named by its client name.
    ids.push(send(&mut matrix, "mail-reader", "four", None).await?);
    // A Pi session reaches a peer along its edge, by exact id.
    ids.push(
        peer.client
            .message_peer("mail-reader", "five")
            .await?
            .message_id,
    );
    ids.push(send(&mut telegram, "mail-r", "six", Some("  ")).await?);

    let got = deliveries(&mut reader, 6).await?;
    let seen: Vec<(MessageId, &str, DeliveryKind, Sender)> = got
        .iter()
        .map(|d| (d.id, d.text.as_str(), d.kind, d.from.clone()))
        .collect();
    assert_eq!(
        seen,
        [
            (
                ids[0],
                "one",
                DeliveryKind::Steer,
                sender(ClientKind::Cli, None, "cli")
            ),
            (
                ids[1],
                "two",
                DeliveryKind::Steer,
                sender(ClientKind::Bridge, None, "telegram:@alice")
            ),
            (
                ids[2],
                "three",
                DeliveryKind::Steer,
                sender(ClientKind::Cli, None, "cli")
            ),
            (
                ids[3],
                "four",
                DeliveryKind::Steer,
                sender(ClientKind::Bridge, None, "matrix")
            ),
            (
                ids[4],
                "Peer message from peer (mail-peer): five",
                DeliveryKind::PeerMessage,
                sender(ClientKind::Pi, Some("mail-peer"), "peer")
            ),
            (
                ids[5],
                "six",
                DeliveryKind::Steer,
                sender(ClientKind::Bridge, None, "telegram")
            ),
        ]
    );
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "ids only grow: {ids:?}"
    );
    assert!(
        got.iter()
            .all(|d| d.ask_id.is_none() && d.question.is_none())
    );
    assert!(got.iter().all(|d| d.created_at > 1_700_000_000_000));

    assert_eq!(pending_of(&core, "mail-reader")?, 6);
    reader.ack(&ids).await?;
    reader.sync().await?;
    assert_eq!(pending_of(&core, "mail-reader")?, 0);
    Ok(())
}

#[tokio::test]
async fn mail_for_a_disconnected_session_waits_for_its_registration() -> Result<()> {
    let core = Core::start().await?;
    let mut sub = core.subscriber().await?;
    let pi = core.pi("away-1", "away").await?;
    drop(pi);
    await_left(&mut sub, "away-1").await?;

    let first = cli_send(&core, "away", "while you were out")?;
    assert_eq!(first["connected"], false);
    let mut bridge = core.client(ClientKind::Bridge).await?;
    let Sent {
        connected,
        message_id: second,
        ..
    } = send_reply(&mut bridge, "away-1", "and this").await?;
    assert!(!connected);
    assert_eq!(pending_of(&core, "away-1")?, 2);

    let mut back = core.pi("away-1", "away").await?;
    assert_eq!(
        back.pending, 2,
        "registered announces the pending deliveries"
    );
    let got = deliveries(&mut back, 2).await?;
    assert_eq!(
        got.iter()
            .map(|d| (d.id, d.text.as_str()))
            .collect::<Vec<_>>(),
        [
            (
                first["message_id"].as_u64().unwrap().into(),
                "while you were out"
            ),
            (second, "and this")
        ]
    );
    Ok(())
}

#[tokio::test]
async fn unacknowledged_mail_is_redelivered_and_acknowledged_mail_is_not() -> Result<()> {
    let mut core = Core::start().await?;
    let mut sub = core.subscriber().await?;
    let mut pi = core.pi("redo-1", "redo").await?;
    let mut cli = core.client(ClientKind::Cli).await?;
    for text in ["m1", "m2", "m3", "m4"] {
        send(&mut cli, "redo", text, None).await?;
    }
    let first = deliveries(&mut pi, 4).await?;
    pi.ack(&[first[0].id, first[2].id]).await?;
    pi.sync().await?;
    drop(pi);
    await_left(&mut sub, "redo-1").await?;

    let mut pi = core.pi("redo-1", "redo").await?;
    assert_eq!(pi.pending, 2);
    let again = deliveries(&mut pi, 2).await?;
    assert_eq!(
        again,
        [first[1].clone(), first[3].clone()],
        "the same deliveries"
    );

    // Acknowledging twice, or ids that do not exist, is harmless.
    pi.ack(&[first[1].id, first[1].id, first[0].id, 999_999.into()])
        .await?;
    pi.sync().await?;
    drop(pi);
    await_left(&mut sub, "redo-1").await?;
    let mut pi = core.pi("redo-1", "redo").await?;
    assert_eq!(pi.pending, 1);
    assert_eq!(pi.next_delivery(WAIT).await?, first[3]);

    // Still pending across a clean restart of the core, whose store keeps its identity.
    let store_id = pi.client.welcome().store_id.clone();
    drop(pi);
    drop(sub);
    drop(cli);
    core.restart().await?;
    let mut pi = core.pi("redo-1", "redo").await?;
    assert_eq!(pi.client.welcome().store_id, store_id);
    assert_eq!(pi.client.welcome().pid, core.pid().context("running")?);
    assert_eq!(pi.pending, 1);
    let d = pi.next_delivery(WAIT).await?;
    assert_eq!(d, first[3]);
    pi.ack(&[d.id]).await?;
    pi.sync().await?;
    assert_eq!(pending_of(&core, "redo-1")?, 0);

    // New ids after the restart keep growing.
    let mut cli = core.client(ClientKind::Cli).await?;
    let next = send(&mut cli, "redo", "after restart", None).await?;
    assert!(next > first[3].id, "{next} > {}", first[3].id);
    Ok(())
}

#[tokio::test]
async fn nobody_but_the_receiver_can_acknowledge_its_mail() -> Result<()> {
    let core = Core::start().await?;
    let mut sub = core.subscriber().await?;
    let mut owner = core.pi("ack-owner", "owner").await?;
    let mut other = core.pi("ack-other", "other").await?;
    let mut cli = core.client(ClientKind::Cli).await?;
    let id = send(&mut cli, "owner", "mine", None).await?;
    assert_eq!(owner.next_delivery(WAIT).await?.id, id);

    // Another session's ack is ignored.
    other.ack(&[id]).await?;
    other.sync().await?;
    // A bridge may not ack at all: an error frame without an id.
    let mut bridge = core.client(ClientKind::Bridge).await?;
    bridge.ack(vec![id]).await?;
    let msg = bridge.next_event().await?;
    let ServerMsg::Error { id: None, code, .. } = msg else {
        bail!("expected an error without id, got {msg:?}")
    };
    assert_eq!(code, ErrorCode::NotRegistered);
    // The bridge's connection stays usable.
    bridge.ping().await?;

    assert_eq!(pending_of(&core, "ack-owner")?, 1);
    drop(owner);
    await_left(&mut sub, "ack-owner").await?;
    let mut owner = core.pi("ack-owner", "owner").await?;
    assert_eq!(owner.pending, 1);
    assert_eq!(owner.next_delivery(WAIT).await?.id, id);
    Ok(())
}

#[tokio::test]
async fn pi_messages_carry_the_registered_sender_and_never_go_to_self() -> Result<()> {
    let core = Core::start().await?;
    let mut alice = core.pi("pi-alice-0001", "alice").await?;
    let mut bob = core.pi("pi-bob-0002", "bob").await?;

    let id = alice
        .client
        .message_peer("pi-bob-0002", "hi bob")
        .await?
        .message_id;
    let d = bob.next_delivery(WAIT).await?;
    assert_eq!(d.id, id);
    assert_eq!(d.kind, DeliveryKind::PeerMessage);
    assert_eq!(
        d.from,
        sender(ClientKind::Pi, Some("pi-alice-0001"), "alice")
    );

    // Renaming changes the label, never the identity.
    alice
        .client
        .call(requests::Update {
            name: Some("alice-renamed".into()),
            ..Default::default()
        })
        .await?;
    alice.client.message_peer("pi-bob-0002", "again").await?;
    let d = bob.next_delivery(WAIT).await?;
    assert_eq!(
        d.from,
        sender(ClientKind::Pi, Some("pi-alice-0001"), "alice-renamed")
    );
    assert_eq!(
        d.text,
        "Peer message from alice-renamed (pi-alice-0001): again"
    );

    // A session names its peer by exact id only: not by name or prefix, and not itself.
    for selector in ["bob", "pi-bob", "pi-alice-0001"] {
        let err = alice
            .client
            .message_peer(selector, "you?")
            .await
            .unwrap_err();
        assert_eq!(
            err.code(),
            Some(ErrorCode::UnknownSession),
            "{selector}: {err}"
        );
    }
    // The human's `send` (any selector) is not for sessions.
    let err = send(&mut alice.client, "bob", "psst", None)
        .await
        .unwrap_err();
    let code = err
        .downcast_ref::<ClientError>()
        .and_then(ClientError::code);
    assert_eq!(code, Some(ErrorCode::Forbidden), "{err:#}");
    alice.sync().await?;
    // The next thing bob receives is the next real message.
    let mut cli = core.client(ClientKind::Cli).await?;
    let id = send(&mut cli, "bob", "from the human", None).await?;
    let d = bob.next_delivery(WAIT).await?;
    assert_eq!((d.id, d.text.as_str()), (id, "from the human"));

    // A Pi connection that has not registered cannot message anyone.
    let mut anon = core.client(ClientKind::Pi).await?;
    let err = anon
        .message_peer("pi-bob-0002", "who am I")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::NotRegistered), "{err}");

    // Empty text and unknown receivers are refused.
    let err = send_reply(&mut cli, "bob", "  \n").await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::InvalidArgument), "{err}");
    let err = send_reply(&mut cli, "carol", "hi").await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::UnknownSession), "{err}");
    bob.sync().await?;
    let listed = core.cli_json(&["sessions", "--all"])?;
    let pending: Vec<(String, u64)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_string(),
                s["pending_messages"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut pending = pending;
    pending.sort();
    assert_eq!(
        pending,
        [
            ("pi-alice-0001".to_string(), 0),
            ("pi-bob-0002".to_string(), 3)
        ]
    );
    Ok(())
}

/// A receiver that stops reading is not cut off by its mail: deliveries beyond its
/// outbound queue wait in the store (the core keeps accepting them), and nothing is lost.
/// When the stuck client goes away and the session registers again, every message it
/// did not acknowledge arrives, in order.
#[tokio::test]
async fn a_receiver_that_stops_reading_loses_nothing() -> Result<()> {
    let core = Core::start_with(&[("SHEPHERD_CORE__LIMITS__MAX_OUTBOUND_FRAMES", "16")]).await?;
    let mut sub = core.subscriber().await?;
    let stuck = core.pi("slow-1", "slow").await?;
    let mut bridge = core.client(ClientKind::Bridge).await?;
    let text = "x".repeat(16 * 1024);
    let mut ids = Vec::new();
    for i in 0..120 {
        let Sent {
            message_id,
            connected,
            ..
        } = send_reply(&mut bridge, "slow-1", &format!("{i} {text}")).await?;
        assert!(
            connected,
            "mail alone never cuts a session off (message {i})"
        );
        ids.push(message_id);
    }
    assert_eq!(
        pending_of(&core, "slow-1")?,
        120,
        "all stored, none acknowledged"
    );
    drop(stuck);
    await_left(&mut sub, "slow-1").await?;

    let mut pi = core.pi("slow-1", "slow").await?;
    assert_eq!(pi.pending, 120);
    let mut got = Vec::new();
    while got.len() < 120 {
        let step = async {
            let d = pi.next_delivery(WAIT).await?;
            pi.ack(&[d.id]).await?;
            anyhow::Ok(d)
        };
        match step.await {
            Ok(d) => got.push(d),
            Err(e) => bail!(
                "the receiver was cut off again after {} of 120 redelivered messages: {e:#}",
                got.len()
            ),
        }
    }
    assert_eq!(got.iter().map(|d| d.id).collect::<Vec<_>>(), ids);
    for (i, d) in got.iter().enumerate() {
        assert!(d.text.starts_with(&format!("{i} ")), "in order");
    }
    pi.sync().await?;
    assert_eq!(pending_of(&core, "slow-1")?, 0);
    Ok(())
}

/// A backlog larger than the outbound queue must still reach a receiver that reads
/// promptly: registering must not cut it off as a slow consumer every time.
#[tokio::test]
async fn a_backlog_larger_than_the_outbound_queue_is_delivered_on_register() -> Result<()> {
    let core = Core::start_with(&[("SHEPHERD_CORE__LIMITS__MAX_OUTBOUND_FRAMES", "64")]).await?;
    let mut sub = core.subscriber().await?;
    drop(core.pi("backlog-1", "backlog").await?);
    await_left(&mut sub, "backlog-1").await?;
    let mut bridge = core.client(ClientKind::Bridge).await?;
    let mut ids = Vec::new();
    for i in 0..500 {
        ids.push(send(&mut bridge, "backlog-1", &format!("queued {i}"), None).await?);
    }

    let mut pi = core.pi("backlog-1", "backlog").await?;
    assert_eq!(pi.pending, 500);
    let mut got = Vec::new();
    while got.len() < 500 {
        match pi.next_delivery(WAIT).await {
            Ok(d) => got.push(d.id),
            Err(e) => bail!(
                "the receiver was cut off after {} of 500 pending deliveries: {e:#}",
                got.len()
            ),
        }
    }
    assert_eq!(got, ids);
    Ok(())
}

#[tokio::test]
async fn json_sent_reply_names_the_session_resolved() -> Result<()> {
    let core = Core::start().await?;
    let _pi = core.pi("0193ffee-aaaa", "named").await?;
    let out = cli_send(&core, "0193ffee", "by prefix")?;
    assert_eq!(out["session_id"], "0193ffee-aaaa");
    assert_eq!(out["session_name"], "named");
    assert_eq!(out["connected"], true);
    assert!(out["message_id"].as_u64().is_some_and(|id| id > 0));
    Ok(())
}

/// The frame limit binds the core too: a Pi session reads with the same limit
/// (`core.limits.max_frame_bytes`, the extension's decoder included), so a `deliver` over
/// it could never be read and, redelivered on every reconnect, would block the session's
/// mailbox for good. What the core accepts must reach the session in frames within the
/// limit; what would not fit must be refused when it is sent.
const SMALL_LIMIT: usize = 4096;

async fn small_limit_core() -> Result<Core> {
    Core::start_with(&[("SHEPHERD_CORE__LIMITS__MAX_FRAME_BYTES", "4096")]).await
}

/// The size of the next frame on a raw connection, read whole.
async fn next_frame_len(raw: &mut shepherd_harness::Raw) -> Result<usize> {
    use tokio::io::AsyncReadExt;
    let mut header = [0u8; 4];
    tokio::time::timeout(WAIT, raw.stream.read_exact(&mut header)).await??;
    let len = u32::from_be_bytes(header) as usize;
    let mut body = vec![0u8; len];
    tokio::time::timeout(WAIT, raw.stream.read_exact(&mut body)).await??;
    Ok(len)
}

async fn raw_pi(core: &Core, session_id: &str) -> Result<shepherd_harness::Raw> {
    let mut raw = core.raw().await?;
    assert_eq!(raw.hello("pi").await?["type"], "welcome");
    raw.send(&serde_json::json!({"type": "register", "id": 2,
        "session": {"session_id": session_id, "cwd": "/tmp"}}))
        .await?;
    let reply = raw.read(WAIT).await?.context("registered")?;
    assert_eq!(reply["type"], "registered", "{reply}");
    Ok(raw)
}

#[tokio::test]
async fn a_steer_the_core_accepts_is_delivered_within_the_frame_limit() -> Result<()> {
    let core = small_limit_core().await?;
    let mut raw = raw_pi(&core, "limit-1").await?;
    let mut cli = core.client(ClientKind::Cli).await?;
    // A `send` frame just under the limit.
    let overhead = serde_json::to_vec(&ClientMsg::Send(requests::Send {
        id: 2,
        to: "limit-1".into(),
        text: String::new(),
        by: None,
        host: None,
    }))?
    .len();
    let text = "s".repeat(SMALL_LIMIT - overhead - 8);
    match send_reply(&mut cli, "limit-1", &text).await {
        Ok(Sent { .. }) => {
            let len = next_frame_len(&mut raw).await?;
            assert!(
                len <= SMALL_LIMIT,
                "the core accepted a steer and delivers it in a {len}-byte frame, over the \
                 {SMALL_LIMIT}-byte limit its receiver reads with"
            );
        }
        Err(e) => assert!(
            matches!(
                e.code(),
                Some(ErrorCode::LimitExceeded | ErrorCode::InvalidArgument)
            ),
            "refused, but with {e}"
        ),
    }
    Ok(())
}

#[tokio::test]
async fn an_answer_the_core_accepts_is_delivered_within_the_frame_limit() -> Result<()> {
    let core = small_limit_core().await?;
    let mut raw = raw_pi(&core, "limit-2").await?;
    // A question and an answer each well within the limit; a delivery carries both.
    let question = "q".repeat(SMALL_LIMIT - 600);
    raw.send(&serde_json::json!({"type": "ask", "id": 3, "question": question}))
        .await?;
    let asked = raw.read(WAIT).await?.context("asked")?;
    assert_eq!(asked["type"], "asked", "{asked}");
    let ask_id = asked["ask"]["id"].as_u64().context("ask id")?;
    let mut cli = core.client(ClientKind::Cli).await?;
    let answer = "a".repeat(SMALL_LIMIT - 200);
    match cli.answer(ask_id, answer).await {
        Ok(_answered) => {
            let len = next_frame_len(&mut raw).await?;
            assert!(
                len <= SMALL_LIMIT,
                "the core accepted an answer and delivers it in a {len}-byte frame, over the \
                 {SMALL_LIMIT}-byte limit its receiver reads with"
            );
        }
        Err(e) => assert!(
            matches!(
                e.code(),
                Some(ErrorCode::LimitExceeded | ErrorCode::InvalidArgument)
            ),
            "refused, but with {e}"
        ),
    }
    Ok(())
}

/// Read frames until one of `kind`, each checked against the frame limit: whatever the
/// core sends, a client that enforces the limit must be able to read.
async fn next_within_limit(raw: &mut shepherd_harness::Raw, kind: &str) -> Result<Value> {
    use tokio::io::AsyncReadExt;
    loop {
        let mut header = [0u8; 4];
        tokio::time::timeout(WAIT, raw.stream.read_exact(&mut header)).await??;
        let len = u32::from_be_bytes(header) as usize;
        let mut body = vec![0u8; len];
        tokio::time::timeout(WAIT, raw.stream.read_exact(&mut body)).await??;
        let frame: Value = serde_json::from_slice(&body)?;
        assert!(
            len <= SMALL_LIMIT,
            "a {len}-byte {} frame, over the {SMALL_LIMIT}-byte limit",
            frame["type"]
        );
        if frame["type"] == kind {
            return Ok(frame);
        }
    }
}

/// `request` with a `filler` string field grown so that its frame is `size` bytes.
fn sized(mut request: Value, filler: &str, size: usize) -> Value {
    request[filler] = Value::String(String::new());
    let overhead = request.to_string().len();
    request[filler] = Value::String("x".repeat(size - overhead));
    assert_eq!(request.to_string().len(), size);
    request
}

/// A request the core accepts never makes it send a frame over the limit, although what
/// it sends carries more than the request did (names, ids, times; an answer carries its
/// question): an ask, an answer and a report that would not fit are refused saying what
/// to shorten; a run's result is never refused but cut to fit, saying so.
#[tokio::test]
async fn what_a_request_makes_the_core_send_fits_in_the_frame_limit() -> Result<()> {
    let core = small_limit_core().await?;
    let mut bridge = core.raw().await?;
    assert_eq!(bridge.hello("bridge").await?["type"], "welcome");
    bridge
        .send(&serde_json::json!({"type": "subscribe", "id": 2}))
        .await?;
    next_within_limit(&mut bridge, "subscribed").await?;
    let mut pi = raw_pi(&core, "limit-3").await?;
    let mut cli = core.raw().await?;
    assert_eq!(cli.hello("cli").await?["type"], "welcome");
    let refused = |reply: &Value, what: &str| {
        assert_eq!(reply["type"], "error", "{reply}");
        assert_eq!(reply["code"], "limit_exceeded", "{reply}");
        assert_eq!(reply["details"]["limit"], "max_frame_bytes", "{reply}");
        let message = reply["message"].as_str().unwrap_or_default();
        assert!(message.contains(what), "{message}");
    };

    // An ask as large as a request may be: refused, and nobody hears of it.
    let ask = serde_json::json!({"type": "ask", "id": 3, "details": "why"});
    pi.send(&sized(ask.clone(), "question", SMALL_LIMIT - 8))
        .await?;
    refused(
        &next_within_limit(&mut pi, "error").await?,
        "shorten the question",
    );
    // One that leaves room: `asked` and `ask_opened` fit.
    pi.send(&sized(ask, "question", SMALL_LIMIT / 2)).await?;
    let asked = next_within_limit(&mut pi, "asked").await?;
    let ask_id = asked["ask"]["id"].as_u64().context("ask id")?;
    let opened = next_within_limit(&mut bridge, "ask_opened").await?;
    assert_eq!(opened["ask"]["id"], ask_id);

    // An answer that would not fit beside its question: refused; a short one: `answered`,
    // `ask_answered` and the asker's delivery fit.
    let answer = serde_json::json!({"type": "answer", "id": 2, "ask": ask_id});
    cli.send(&sized(answer.clone(), "text", 1_500)).await?;
    refused(
        &next_within_limit(&mut cli, "error").await?,
        "shorten the answer",
    );
    cli.send(&sized(answer, "text", 200)).await?;
    next_within_limit(&mut cli, "answered").await?;
    next_within_limit(&mut bridge, "ask_answered").await?;
    let delivered = next_within_limit(&mut pi, "deliver").await?;
    assert_eq!(delivered["message"]["ask_id"], ask_id, "{delivered}");

    // A report as large as a request may be: refused; a smaller one fits.
    let report = serde_json::json!({"type": "report", "id": 4});
    pi.send(&sized(report.clone(), "text", SMALL_LIMIT - 8))
        .await?;
    refused(&next_within_limit(&mut pi, "error").await?, "shorten it");
    pi.send(&sized(report, "text", SMALL_LIMIT - 600)).await?;
    next_within_limit(&mut pi, "reported").await?;
    next_within_limit(&mut bridge, "report_posted").await?;

    // A run's result as large as a request may be: kept and announced, cut to fit.
    let result = serde_json::json!({"type": "result", "id": 5, "results": "all"});
    pi.send(&sized(result, "text", SMALL_LIMIT - 8)).await?;
    let kept = next_within_limit(&mut pi, "reported").await?;
    let text = kept["report"]["text"].as_str().context("text")?;
    assert!(text.starts_with("xxxx"), "{text}");
    assert!(
        text.contains("more bytes did not fit in one message"),
        "{text}"
    );
    let posted = next_within_limit(&mut bridge, "report_posted").await?;
    assert_eq!(posted["report"]["text"], text);
    Ok(())
}

/// The resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .context("VmRSS")?;
    Ok(line.split_whitespace().nth(1).context("kB")?.parse()?)
}

/// A session that does not read cannot make the core hold its mail in memory: past
/// `core.limits.max_outbound_bytes` queued for it, its mail waits in the store, and all of
/// it arrives, in order, once it reads.
#[tokio::test]
async fn mail_for_a_session_that_does_not_read_waits_in_the_store_not_in_memory() -> Result<()> {
    let core =
        Core::start_with(&[("SHEPHERD_CORE__LIMITS__MAX_OUTBOUND_BYTES", "1048576")]).await?;
    let pid = core.pid().context("the core's pid")?;
    let mut stuck = raw_pi(&core, "stuck-1").await?;
    let mut cli = core.client(ClientKind::Cli).await?;
    let text = "m".repeat(900 * 1024);
    send(&mut cli, "stuck-1", &format!("warm-up {text}"), None).await?;
    let before = rss_kib(pid)?;
    for i in 0..40 {
        send(&mut cli, "stuck-1", &format!("{i} {text}"), None).await?;
    }
    let after = rss_kib(pid)?;
    assert!(
        after < before + 16 * 1024,
        "the core grew from {before} KiB to {after} KiB with 36 MB of mail for a session that does not read"
    );
    let mut seen = Vec::new();
    while seen.len() < 41 {
        let frame = stuck.read(WAIT).await?.context("closed")?;
        if frame["type"] == "deliver" {
            let text = frame["message"]["text"].as_str().context("text")?;
            seen.push(text.split(' ').next().unwrap_or_default().to_string());
        }
    }
    let expected: Vec<String> = std::iter::once("warm-up".to_string())
        .chain((0..40).map(|i| i.to_string()))
        .collect();
    assert_eq!(seen, expected);
    Ok(())
}

/// One absent session cannot grow the store without bound: beyond
/// `core.limits.max_pending_per_session` unread messages, mail to it is refused with a
/// reason; each message it acknowledges makes room again, and the count holds across a
/// restart of the core.
#[tokio::test]
async fn an_absent_sessions_backlog_is_bounded_and_acks_make_room() -> Result<()> {
    let mut core =
        Core::start_with(&[("SHEPHERD_CORE__LIMITS__MAX_PENDING_PER_SESSION", "3")]).await?;
    let away = core.pi("away-0001", "away").await?;
    drop(away);
    let mut cli = core.client(ClientKind::Cli).await?;
    for i in 0..3 {
        send(&mut cli, "away-0001", &format!("steer {i}"), None).await?;
    }
    let refused = send_reply(&mut cli, "away-0001", "one too many")
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some(ErrorCode::LimitExceeded), "{refused}");
    assert!(
        refused.to_string().contains("max_pending_per_session"),
        "{refused}"
    );
    // A peer's message counts the same.
    let mut peer = core.pi("peer-0002", "peer").await?;
    let back = core.pi("away-0001", "away").await?;
    let err = peer
        .client
        .message_peer("away-0001", "hi")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::LimitExceeded), "{err}");
    drop(back);

    // Counted again after a restart: still full.
    core.restart().await?;
    let mut cli = core.client(ClientKind::Cli).await?;
    let err = send_reply(&mut cli, "away-0001", "still?")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::LimitExceeded), "{err}");

    // It comes back and reads two: room for two more, not three.
    let mut back = core.pi("away-0001", "away").await?;
    let first = back.next_delivery(WAIT).await?;
    let second = back.next_delivery(WAIT).await?;
    back.ack(&[first.id, second.id]).await?;
    back.sync().await?;
    send(&mut cli, "away-0001", "room 1", None).await?;
    send(&mut cli, "away-0001", "room 2", None).await?;
    let err = send_reply(&mut cli, "away-0001", "full again")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::LimitExceeded), "{err}");
    Ok(())
}
