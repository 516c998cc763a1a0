//! Bad input against the real daemon, byte by byte over the real socket: truncated and
//! oversize frames, bodies that are not UTF-8 JSON objects, wrong field types, unknown
//! message types, clients that never greet or greet wrongly, requests a client kind may
//! not make and values out of range. Each gets its documented error code (closing the
//! connection exactly when the protocol says so), and in every case the daemon goes on
//! serving a client that was already connected and a new one, and logs no panic.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use shepherd_core::client::Sent;
use shepherd_core::protocol::{
    ClientKind, ErrorCode, MAX_ID, PROTOCOL_VERSION, ServerMsg, requests,
};
use shepherd_harness::{Core, Pi, Raw};

const WAIT: Duration = Duration::from_secs(10);
const BYSTANDER: &str = "bystander-1";

// ---------------------------------------------------------------------------------------
// Helpers

async fn bystander(core: &Core) -> Result<Pi> {
    core.pi(BYSTANDER, "bystander").await
}

/// The daemon still serves: the bystander (connected before the bad input) answers and
/// receives a steer from a brand-new client, the CLI works, and the log shows no panic.
async fn assert_still_serving(core: &Core, bystander: &mut Pi, after: &str) -> Result<()> {
    assert_serving(core, bystander, after, 1).await
}

/// [`assert_still_serving`] with `sessions` sessions connected.
async fn assert_serving(core: &Core, bystander: &mut Pi, after: &str, sessions: u64) -> Result<()> {
    bystander
        .sync()
        .await
        .with_context(|| format!("the connected bystander after {after}"))?;
    let mut fresh = core
        .client(ClientKind::Bridge)
        .await
        .with_context(|| format!("a new client after {after}"))?;
    let text = format!("still serving after {after}");
    let reply = fresh.send_to(BYSTANDER, text.clone()).await?;
    assert!(
        matches!(
            reply,
            Sent {
                connected: true,
                ..
            }
        ),
        "{reply:?}"
    );
    let d = bystander.next_delivery(WAIT).await?;
    assert_eq!(d.text, text);
    bystander.ack(&[d.id]).await?;
    let status = core.cli_json(&["status"])?;
    assert_eq!(
        status["sessions_connected"], sessions,
        "after {after}: {status:#}"
    );
    assert!(
        !core.log_has_panic(),
        "the core panicked after {after}:\n{}",
        core.log()
    );
    Ok(())
}

/// The next frame must be an error with `code` and `id`; returns its message.
async fn expect_error(raw: &mut Raw, code: &str, id: Option<u64>) -> Result<String> {
    let frame = raw
        .read(WAIT)
        .await?
        .with_context(|| format!("closed before the {code} error"))?;
    assert_eq!(frame["type"], "error", "{frame}");
    assert_eq!(frame["code"], code, "{frame}");
    assert_eq!(frame["id"], id.map_or(Value::Null, Value::from), "{frame}");
    Ok(frame["message"].as_str().context("message")?.to_string())
}

/// The core closes the connection (no further frame).
async fn expect_closed(raw: &mut Raw) -> Result<()> {
    match raw.read(WAIT).await? {
        None => Ok(()),
        Some(frame) => bail!("expected the connection to close, got {frame}"),
    }
}

/// A ping with `id` is answered with a pong with `id`.
async fn expect_usable(raw: &mut Raw, id: u64) -> Result<()> {
    raw.send(&json!({"type": "ping", "id": id})).await?;
    let frame = raw.read(WAIT).await?.context("closed instead of pong")?;
    assert_eq!(frame, json!({"type": "pong", "id": id}));
    Ok(())
}

async fn greeted(core: &Core, kind: &str) -> Result<Raw> {
    let mut raw = core.raw().await?;
    let welcome = raw.hello(kind).await?;
    assert_eq!(welcome["type"], "welcome", "{welcome}");
    Ok(raw)
}

/// Messages accepted for `session` and not yet acknowledged, as `sessions --all` says.
fn pending_of(core: &Core, session: &str) -> Result<u64> {
    let listed = core.cli_json(&["sessions", "--all"])?;
    listed
        .as_array()
        .context("sessions")?
        .iter()
        .find(|s| s["id"] == session)
        .and_then(|s| s["pending_messages"].as_u64())
        .with_context(|| format!("{session} in {listed:#}"))
}

fn numbers_in(text: &str) -> Vec<u64> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter_map(|t| t.parse().ok())
        .collect()
}

// ---------------------------------------------------------------------------------------
// Framing

#[tokio::test]
async fn a_truncated_frame_is_reported_then_closed() -> Result<()> {
    let core = Core::start().await?;
    let mut by = bystander(&core).await?;

    // The body ends early.
    let mut raw = greeted(&core, "cli").await?;
    let mut bytes = 100u32.to_be_bytes().to_vec();
    bytes.extend_from_slice(br#"{"type":"ping""#);
    raw.write(&bytes).await?;
    raw.shutdown_write().await?;
    let msg = expect_error(&mut raw, "truncated_frame", None).await?;
    assert_eq!(numbers_in(&msg), [18, 104], "{msg}");
    expect_closed(&mut raw).await?;
    assert_still_serving(&core, &mut by, "a truncated body").await?;

    // The header ends early.
    let mut raw = greeted(&core, "bridge").await?;
    raw.write(&[0, 0]).await?;
    raw.shutdown_write().await?;
    let msg = expect_error(&mut raw, "truncated_frame", None).await?;
    assert_eq!(numbers_in(&msg), [2, 4], "{msg}");
    expect_closed(&mut raw).await?;
    assert_still_serving(&core, &mut by, "a truncated header").await?;

    // Before any hello.
    let mut raw = core.raw().await?;
    let mut bytes = 60u32.to_be_bytes().to_vec();
    bytes.extend_from_slice(br#"{"type":"hello","#);
    raw.write(&bytes).await?;
    raw.shutdown_write().await?;
    expect_error(&mut raw, "truncated_frame", None).await?;
    expect_closed(&mut raw).await?;
    assert_still_serving(&core, &mut by, "a truncated hello").await?;
    Ok(())
}

#[tokio::test]
async fn an_oversize_length_prefix_is_refused_then_closed() -> Result<()> {
    let core = Core::start().await?;
    let mut by = bystander(&core).await?;

    let mut raw = greeted(&core, "cli").await?;
    raw.write(&u32::MAX.to_be_bytes()).await?;
    let msg = expect_error(&mut raw, "frame_too_large", None).await?;
    // A human's client may send a file from the phone: 20 MiB in base64, and 64 KiB more.
    assert_eq!(
        numbers_in(&msg)[..2],
        [u32::MAX as u64, (20 << 20) / 3 * 4 + 4 + 64 * 1024],
        "{msg}"
    );
    assert!(msg.contains("phone.max_file_mb"), "{msg}");
    expect_closed(&mut raw).await?;
    assert_still_serving(&core, &mut by, "a 4 GiB prefix").await?;

    // Before hello too, and from a registered Pi session.
    let mut raw = core.raw().await?;
    raw.write(&(2u32 * 1024 * 1024).to_be_bytes()).await?;
    expect_error(&mut raw, "frame_too_large", None).await?;
    expect_closed(&mut raw).await?;

    let mut raw = greeted(&core, "pi").await?;
    raw.send(
        &json!({"type": "register", "id": 2, "session": {"session_id": "big-1", "cwd": "/tmp"}}),
    )
    .await?;
    let reply = raw.read(WAIT).await?.context("registered")?;
    assert_eq!(reply["type"], "registered", "{reply}");
    raw.write(&(1024u32 * 1024 + 1).to_be_bytes()).await?;
    expect_error(&mut raw, "frame_too_large", None).await?;
    expect_closed(&mut raw).await?;
    assert_still_serving(&core, &mut by, "an oversize frame from a Pi session").await?;
    // The oversize session is gone, the bystander is not.
    let listed = core.cli_json(&["sessions"])?;
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed:#}");
    assert_eq!(listed[0]["id"], BYSTANDER);
    Ok(())
}

/// The core's resident memory, from `/proc/<pid>/status`: (VmRSS, VmHWM, the peak) in bytes.
fn core_memory(core: &Core) -> Result<(u64, u64)> {
    let pid = core.pid().context("core is running")?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> Result<u64> {
        let line = status
            .lines()
            .find(|l| l.starts_with(name))
            .with_context(|| format!("{name} in /proc/{pid}/status"))?;
        let kb = numbers_in(line).first().copied().context("a number")?;
        Ok(kb * 1024)
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

/// Slowloris after hello: 100 greeted connections each start a frame of 1 MiB − 1 and send
/// all of it but 1,000 bytes. What unfinished frames hold is bounded by a budget shared by
/// every connection (here 16 MiB): a connection whose frame would take more is closed with
/// `frame_too_large` at once; the others are closed with `truncated_frame` once their frame
/// has been unfinished for the frame timeout (here 2 s). The core's memory stays bounded
/// (before, it held every such frame for as long as the peer liked: 400 of them took it
/// from 16 to 458 MB), and a normal client is served throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_frames_are_bounded_in_bytes_and_in_time() -> Result<()> {
    const BUDGET: u64 = 16 * 1024 * 1024;
    let core = Core::start_with(&[
        ("SHEPHERD_CORE__LIMITS__FRAME_TIMEOUT_MS", "2000"),
        (
            "SHEPHERD_CORE__LIMITS__MAX_UNFINISHED_FRAME_BYTES",
            &BUDGET.to_string(),
        ),
    ])
    .await?;
    let mut by = bystander(&core).await?;
    let (rss_before, _) = core_memory(&core)?;

    let len: usize = 1024 * 1024 - 1;
    let sent = len - 1000;
    let started = Instant::now();
    let mut slow = Vec::new();
    for _ in 0..100 {
        let mut raw = greeted(&core, "cli").await?;
        let mut bytes = (len as u32).to_be_bytes().to_vec();
        bytes.resize(4 + sent, b' ');
        // Refused part-way (over the budget): the core closes while this still writes.
        let _ = raw.write(&bytes).await;
        slow.push(raw);
    }
    let (rss_held, peak) = core_memory(&core)?;
    // A greeted client is served while they hold what they sent.
    expect_usable_client(&mut by).await?;

    // Each is closed: at once when over the budget, else after the frame timeout.
    let (mut refused, mut stalled) = (0, 0);
    for (i, raw) in slow.iter_mut().enumerate() {
        let frame = raw
            .read(WAIT)
            .await
            .with_context(|| format!("slow connection {i} still open"))?
            .with_context(|| format!("slow connection {i} closed without an error"))?;
        let msg = frame["message"].as_str().unwrap_or_default();
        match frame["code"].as_str() {
            Some("frame_too_large") => {
                assert!(msg.contains("max_unfinished_frame_bytes"), "{frame}");
                refused += 1;
            }
            Some("truncated_frame") => {
                assert!(msg.contains("2000 ms"), "{frame}");
                stalled += 1;
            }
            _ => bail!("slow connection {i}: {frame}"),
        }
        expect_closed(raw).await?;
    }
    let closed_after = started.elapsed();
    let growth = peak.saturating_sub(rss_before);
    eprintln!(
        "100 unfinished 1 MiB frames: VmRSS {rss_before} -> {rss_held} (peak {peak}) bytes; \
         {refused} over the budget, {stalled} timed out, all closed after {closed_after:?}"
    );
    assert!(
        refused > 0 && stalled > 0,
        "{refused} refused, {stalled} stalled"
    );
    // Unbounded, the peak grows by ~100 MiB (every frame held whole).
    assert!(
        growth < 3 * BUDGET,
        "the core's memory grew by {growth} bytes (budget {BUDGET})"
    );
    let log = core.log();
    assert!(log.contains("a frame stalled unfinished"), "{log}");
    assert!(log.contains("more than their budget"), "{log}");

    // The budget was given back: a large frame from a normal client goes through.
    let mut sender = core.client(ClientKind::Bridge).await?;
    let text = "x".repeat(600 * 1024);
    sender.send_to(BYSTANDER, text.clone()).await?;
    let d = by.next_delivery(WAIT).await?;
    assert_eq!(d.text.len(), text.len());
    by.ack(&[d.id]).await?;
    assert_still_serving(&core, &mut by, "100 unfinished frames").await?;
    Ok(())
}

#[tokio::test]
async fn the_frame_limit_is_configurable_and_exact() -> Result<()> {
    let core = Core::start_with(&[("SHEPHERD_CORE__LIMITS__MAX_FRAME_BYTES", "1024")]).await?;
    let mut by = bystander(&core).await?;
    let padded = |len: usize| -> Vec<u8> {
        let base = json!({"type": "ping", "id": 5, "pad": ""}).to_string();
        let pad = "p".repeat(len - base.len());
        let body = json!({"type": "ping", "id": 5, "pad": pad}).to_string();
        assert_eq!(body.len(), len);
        body.into_bytes()
    };
    // A Pi session's limit (a human's client may send more: a file from the phone).
    let mut raw = greeted(&core, "pi").await?;
    raw.write_frame(&padded(1024)).await?;
    let pong = raw.read(WAIT).await?.context("pong")?;
    assert_eq!(pong, json!({"type": "pong", "id": 5}));
    raw.write_frame(&padded(1025)).await?;
    let msg = expect_error(&mut raw, "frame_too_large", None).await?;
    assert_eq!(numbers_in(&msg)[..2], [1025, 1024], "{msg}");
    expect_closed(&mut raw).await?;
    assert_still_serving(&core, &mut by, "a frame one byte over a configured limit").await?;
    Ok(())
}

#[tokio::test]
async fn bodies_that_are_not_utf8_json_objects_are_malformed_then_closed() -> Result<()> {
    let core = Core::start().await?;
    let mut by = bystander(&core).await?;
    let bodies: [(&str, &[u8]); 6] = [
        (
            "invalid UTF-8",
            b"{\"type\":\"ping\",\"id\":1,\"x\":\"\xff\xfe\"}",
        ),
        ("a lone continuation byte", b"\x80"),
        ("not JSON", b"hello there"),
        ("an empty body", b""),
        ("a JSON array", b"[1,2,3]"),
        ("a JSON string", b"\"ping\""),
    ];
    let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
    let deep_inside = format!(
        "{{\"type\":\"ping\",\"id\":9,\"x\":{}{}}}",
        "{\"a\":".repeat(50_000),
        "}".repeat(50_000)
    );
    let bodies = bodies.into_iter().chain([
        ("JSON nested 200 000 deep", deep.as_bytes()),
        (
            "a ping carrying 50 000 nested objects",
            deep_inside.as_bytes(),
        ),
    ]);
    for (what, body) in bodies {
        let mut raw = greeted(&core, "cli").await?;
        raw.write_frame(body).await?;
        let msg = expect_error(&mut raw, "malformed_frame", None)
            .await
            .with_context(|| what.to_string())?;
        assert!(!msg.is_empty());
        expect_closed(&mut raw).await?;
        assert_still_serving(&core, &mut by, what).await?;
    }
    // Before hello as well.
    let mut raw = core.raw().await?;
    raw.write_frame(b"\xc3\x28").await?;
    expect_error(&mut raw, "malformed_frame", None).await?;
    expect_closed(&mut raw).await?;
    assert_still_serving(&core, &mut by, "invalid UTF-8 instead of hello").await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Messages

#[tokio::test]
async fn wrong_field_types_name_the_field_and_keep_the_connection() -> Result<()> {
    let core = Core::start().await?;
    let mut by = bystander(&core).await?;

    // A registered Pi session sending nonsense stays registered.
    let mut raw = greeted(&core, "pi").await?;
    raw.send(&json!({"type": "register", "id": 2, "session": {"session_id": "raw-pi", "name": "raw", "cwd": "/tmp"}}))
        .await?;
    let reply = raw.read(WAIT).await?.context("registered")?;
    assert_eq!(reply["type"], "registered", "{reply}");

    let cases: Vec<(Value, Option<u64>, &str)> = vec![
        (
            json!({"type": "send", "id": 7, "to": 5, "text": "hi"}),
            Some(7),
            "to",
        ),
        (
            json!({"type": "send", "id": 8, "to": "bystander"}),
            Some(8),
            "text",
        ),
        (
            json!({"type": "answer", "id": 9, "ask": "seven", "text": "x"}),
            Some(9),
            "ask",
        ),
        (
            json!({"type": "list_sessions", "id": 10, "all": "yes"}),
            Some(10),
            "all",
        ),
        (
            json!({"type": "update", "id": 11, "context": {"tokens": "many"}}),
            Some(11),
            "context.tokens",
        ),
        (
            json!({"type": "register", "id": 12, "session": {"session_id": "raw-pi", "cwd": 7}}),
            Some(12),
            "session.cwd",
        ),
        (
            json!({"type": "ask", "id": 13, "question": "q", "options": [1, 2]}),
            Some(13),
            "options",
        ),
        (json!({"type": "ping", "id": "fourteen"}), None, "id"),
        (json!({"type": "ping", "id": -1}), None, "id"),
        (json!({"type": "ack", "ids": ["a"]}), None, "ids"),
        (json!({"type": "ack"}), None, "ids"),
        // Past SQLite's integer range: refused at decode, not a store failure.
        (
            json!({"type": "answer", "id": 18, "ask": 9_223_372_036_854_775_808u64, "text": "x"}),
            Some(18),
            "ask",
        ),
        (
            json!({"type": "ack", "ids": [1, 9_223_372_036_854_775_808u64]}),
            None,
            "ids",
        ),
        (json!({"id": 15}), Some(15), "type"),
        (json!({"type": 16, "id": 16}), Some(16), "type"),
        (json!({"type": null, "id": 17}), Some(17), "type"),
    ];
    for (i, (body, id, field)) in cases.into_iter().enumerate() {
        raw.send(&body).await?;
        let msg = expect_error(&mut raw, "invalid_message", id)
            .await
            .with_context(|| body.to_string())?;
        assert!(
            msg.contains(field),
            "the message for {body} must name `{field}`: {msg}"
        );
        expect_usable(&mut raw, 100 + i as u64)
            .await
            .with_context(|| format!("after {body}"))?;
    }

    // Still registered and receiving its mail.
    let out = core.cli_json(&["send", "raw-pi", "still yours"])?;
    assert_eq!(out["connected"], true);
    let frame = raw.read(WAIT).await?.context("deliver")?;
    assert_eq!(frame["type"], "deliver", "{frame}");
    assert_eq!(frame["message"]["text"], "still yours");
    // An ack is applied all or nothing: one id out of range and the good one stays pending.
    let mail = frame["message"]["id"].clone();
    raw.send(&json!({"type": "ack", "ids": [mail, u64::MAX]}))
        .await?;
    let msg = expect_error(&mut raw, "invalid_message", None).await?;
    assert!(msg.contains("out of range"), "{msg}");
    expect_usable(&mut raw, 300).await?;
    assert_eq!(
        pending_of(&core, "raw-pi")?,
        1,
        "nothing of the refused ack applied"
    );
    raw.send(&json!({"type": "ack", "ids": [mail]})).await?;
    expect_usable(&mut raw, 301).await?;
    assert_eq!(pending_of(&core, "raw-pi")?, 0);
    drop(raw);
    let listed = core.cli_json(&["sessions", "--all"])?;
    let raw_pi = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "raw-pi")
        .context("raw-pi known")?;
    assert_eq!(
        raw_pi["name"], "raw",
        "the invalid register changed nothing"
    );
    assert_eq!(raw_pi["cwd"], "/tmp");
    assert_still_serving_with(&core, &mut by, "wrong field types", 1).await?;
    Ok(())
}

/// [`assert_still_serving`] once `expected` sessions are connected (waits for departures
/// through a subscription, not a sleep).
async fn assert_still_serving_with(
    core: &Core,
    by: &mut Pi,
    after: &str,
    expected: u64,
) -> Result<()> {
    let mut sub = core.subscriber().await?;
    loop {
        let status = core.cli_json(&["status"])?;
        if status["sessions_connected"] == expected {
            break;
        }
        shepherd_harness::next_event_where(&mut sub, WAIT, |m| {
            matches!(m, ServerMsg::SessionLeft { .. })
        })
        .await?;
    }
    assert_serving(core, by, after, expected).await
}

/// Text cut inside an emoji (Node's `JSON.stringify` writes the lone half as `\ud83c`)
/// is read with U+FFFD in its place: the request is served and the connection kept.
#[tokio::test]
async fn a_lone_surrogate_escape_is_replaced_not_a_malformed_frame() -> Result<()> {
    let core = Core::start().await?;
    let mut by = bystander(&core).await?;
    let mut raw = greeted(&core, "cli").await?;
    raw.write_frame(br#"{"type":"send","id":2,"to":"bystander","text":"done \ud83c"}"#)
        .await?;
    let reply = raw.read(WAIT).await?.context("sent")?;
    assert_eq!(reply["type"], "sent", "{reply}");
    let d = by.next_delivery(WAIT).await?;
    assert_eq!(d.text, "done \u{fffd}");
    by.ack(&[d.id]).await?;
    expect_usable(&mut raw, 3).await?;
    assert_still_serving(&core, &mut by, "a lone surrogate").await?;
    Ok(())
}

#[tokio::test]
async fn an_unknown_type_is_named_with_the_id_echoed_and_the_connection_kept() -> Result<()> {
    let core = Core::start().await?;
    let mut by = bystander(&core).await?;
    let mut raw = greeted(&core, "bridge").await?;
    for (i, kind) in ["fly", "deliver", "welcome", "PING", ""]
        .into_iter()
        .enumerate()
    {
        let id = 42 + i as u64;
        raw.send(&json!({"type": kind, "id": id, "text": "x"}))
            .await?;
        let msg = expect_error(&mut raw, "unknown_type", Some(id)).await?;
        assert!(msg.contains(&format!("{kind:?}")), "names {kind:?}: {msg}");
        expect_usable(&mut raw, 1000 + id).await?;
    }
    // Without an id, the error has none.
    raw.send(&json!({"type": "teleport"})).await?;
    expect_error(&mut raw, "unknown_type", None).await?;
    expect_usable(&mut raw, 2000).await?;
    assert_still_serving(&core, &mut by, "unknown types").await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The handshake

#[tokio::test]
async fn a_client_that_never_says_hello_is_timed_out() -> Result<()> {
    let core = Core::start_with(&[("SHEPHERD_CORE__HELLO_TIMEOUT_MS", "300")]).await?;
    let mut by = bystander(&core).await?;
    // A greeted client that then idles is not affected by the hello timeout.
    let mut idle = greeted(&core, "cli").await?;

    let started = Instant::now();
    let mut silent = core.raw().await?;
    let mut half = core.raw().await?;
    half.write(&[0, 0, 0, 60, b'{']).await?;
    let msg = expect_error(&mut silent, "hello_timeout", None).await?;
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(8),
        "timed out after {waited:?}"
    );
    assert!(numbers_in(&msg).contains(&300), "{msg}");
    expect_closed(&mut silent).await?;
    expect_error(&mut half, "hello_timeout", None).await?;
    expect_closed(&mut half).await?;

    // The timeout has passed for `idle` too; it is still served.
    assert!(started.elapsed() >= Duration::from_millis(300));
    expect_usable(&mut idle, 7).await?;
    assert_still_serving(&core, &mut by, "a silent client").await?;
    Ok(())
}

/// Most connections that may wait for their hello at once (`server::MAX_GREETING`).
const MAX_GREETING: usize = 256;

/// What connections that have not said hello may hold is bounded: each a frame of at most
/// 16 KiB, and at most 256 of them wait for their hello at once. Every connection reads its
/// hello at once, so none waits behind silent ones: when one more connects, the oldest
/// silent one is closed to make room, and a client that says hello is welcomed at once
/// however many stay silent (before, 64 held every place for their whole hello timeout and
/// the others queued behind them: ~10 s per 64 silent connections).
#[tokio::test]
async fn connections_before_hello_are_bounded_in_number_and_in_frame_size() -> Result<()> {
    let core = Core::start_with(&[("SHEPHERD_CORE__HELLO_TIMEOUT_MS", "60000")]).await?;
    let mut by = bystander(&core).await?;
    let mut big = core.raw().await?;
    big.write(&(16u32 * 1024 + 1).to_be_bytes()).await?;
    let msg = expect_error(&mut big, "frame_too_large", None).await?;
    assert!(msg.contains("before hello"), "{msg}");
    expect_closed(&mut big).await?;

    // 300 silent connections (one with half a hello): the 44 oldest are closed to make
    // room, in the order they came, each told why; the bystander (greeted before) is served.
    let extra = 44;
    let mut silent = Vec::new();
    for i in 0..MAX_GREETING + extra {
        let mut raw = core.raw().await?;
        if i == 0 {
            raw.write(&[0, 0, 0, 60, b'{']).await?;
        }
        silent.push(raw);
    }
    expect_usable_client(&mut by).await?;
    for (i, raw) in silent.iter_mut().take(extra).enumerate() {
        let msg = expect_error(raw, "hello_timeout", None)
            .await
            .with_context(|| format!("silent connection {i} was not closed to make room"))?;
        assert!(msg.contains("make room"), "{msg}");
        assert!(numbers_in(&msg).contains(&(MAX_GREETING as u64)), "{msg}");
        expect_closed(raw).await?;
    }
    let mut silent = silent.split_off(extra);
    // The next oldest keeps its place while nobody needs it. A time promise (nothing
    // later to wait for): no frame within half a second.
    assert!(
        silent[0].read(Duration::from_millis(500)).await.is_err(),
        "the oldest of the 256 silent connections was closed though nobody needed its place"
    );

    // A client that says hello is welcomed at once, and the oldest silent one makes room.
    let started = Instant::now();
    let mut prompt = core.raw().await?;
    prompt
        .send(&json!({"type": "hello", "id": 1, "protocol": PROTOCOL_VERSION, "client": "cli"}))
        .await?;
    let welcome = prompt
        .read(Duration::from_secs(5))
        .await
        .context("no welcome within 5 s behind 300 silent connections")?
        .context("closed instead of welcome")?;
    let waited = started.elapsed();
    assert_eq!(welcome["type"], "welcome", "{welcome}");
    assert!(waited < Duration::from_secs(5), "welcomed after {waited:?}");
    expect_usable(&mut prompt, 7).await?;
    expect_error(&mut silent[0], "hello_timeout", None).await?;
    expect_closed(&mut silent[0]).await?;

    // The newest silent connection kept its place and may still say hello.
    let mut newest = silent.pop().context("a silent connection")?;
    assert_eq!(newest.hello("cli").await?["type"], "welcome");
    expect_usable(&mut newest, 8).await?;
    assert!(
        core.log().contains("newer connections need its place"),
        "the core logs why it closed a silent connection"
    );
    drop(silent);
    assert_still_serving(&core, &mut by, "300 connections that never said hello").await?;
    Ok(())
}

/// A greeted client is served whatever waits in the handshake.
async fn expect_usable_client(by: &mut Pi) -> Result<()> {
    by.client.ping().await?;
    Ok(())
}

#[tokio::test]
async fn the_first_message_must_be_hello() -> Result<()> {
    let core = Core::start().await?;
    let mut by = bystander(&core).await?;
    let cases: [(Value, Option<u64>); 5] = [
        (json!({"type": "ping", "id": 3}), Some(3)),
        (
            json!({"type": "register", "id": 4, "session": {"session_id": "s", "cwd": "/tmp"}}),
            Some(4),
        ),
        (json!({"type": "ack", "ids": [1]}), None),
        (json!({"type": "fly", "id": 5}), Some(5)),
        (
            json!({"type": "hello", "id": 6, "protocol": 1, "client": "robot"}),
            Some(6),
        ),
    ];
    for (body, id) in cases {
        let mut raw = core.raw().await?;
        raw.send(&body).await?;
        expect_error(&mut raw, "hello_required", id)
            .await
            .with_context(|| body.to_string())?;
        expect_closed(&mut raw).await?;
        assert_still_serving(&core, &mut by, &body.to_string()).await?;
    }
    assert_eq!(
        core.cli_json(&["sessions", "--all"])?
            .as_array()
            .map(Vec::len),
        Some(1),
        "the register before hello stored nothing"
    );
    Ok(())
}

#[tokio::test]
async fn a_wrong_protocol_version_is_refused_naming_both() -> Result<()> {
    let core = Core::start().await?;
    let mut by = bystander(&core).await?;
    for version in [99u64, 0, PROTOCOL_VERSION as u64 + 1] {
        let mut raw = core.raw().await?;
        raw.send(&json!({"type": "hello", "id": 1, "protocol": version, "client": "pi"}))
            .await?;
        let msg = expect_error(&mut raw, "protocol_mismatch", Some(1)).await?;
        let numbers = numbers_in(&msg);
        assert!(
            numbers.contains(&version) && numbers.contains(&(PROTOCOL_VERSION as u64)),
            "names {version} and {PROTOCOL_VERSION}: {msg}"
        );
        expect_closed(&mut raw).await?;
        assert_still_serving(&core, &mut by, &format!("protocol {version}")).await?;
    }
    Ok(())
}

#[tokio::test]
async fn a_second_hello_is_refused_and_the_connection_kept() -> Result<()> {
    let core = Core::start().await?;
    let mut by = bystander(&core).await?;
    let mut raw = greeted(&core, "cli").await?;
    raw.send(&json!({"type": "hello", "id": 2, "protocol": PROTOCOL_VERSION, "client": "pi"}))
        .await?;
    expect_error(&mut raw, "already_greeted", Some(2)).await?;
    expect_usable(&mut raw, 3).await?;
    // Still a CLI client: it cannot register.
    raw.send(&json!({"type": "register", "id": 4, "session": {"session_id": "s", "cwd": "/tmp"}}))
        .await?;
    expect_error(&mut raw, "forbidden", Some(4)).await?;
    assert_still_serving(&core, &mut by, "a second hello").await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Requests a client may not make, values out of range

#[tokio::test]
async fn requests_outside_a_clients_role_get_their_code() -> Result<()> {
    let core = Core::start().await?;
    let mut by = bystander(&core).await?;
    let mut pi = core.pi("asker-1", "asker").await?;
    let ask_id = pi.client.ask("ok?").await?.id;

    let mut cli = greeted(&core, "cli").await?;
    let cases: Vec<(Value, Option<u64>, &str)> = vec![
        (
            json!({"type": "register", "id": 1, "session": {"session_id": "x", "cwd": "/tmp"}}),
            Some(1),
            "forbidden",
        ),
        (
            json!({"type": "ask", "id": 2, "question": "q"}),
            Some(2),
            "not_registered",
        ),
        (
            json!({"type": "report", "id": 3, "text": "t"}),
            Some(3),
            "not_registered",
        ),
        (
            json!({"type": "update", "id": 4, "status": "idle"}),
            Some(4),
            "not_registered",
        ),
        (json!({"type": "ack", "ids": [1]}), None, "not_registered"),
        (
            json!({"type": "answer", "id": 5, "ask": 999_999, "text": "x"}),
            Some(5),
            "unknown_ask",
        ),
        (
            json!({"type": "answer", "id": 6, "ask": ask_id, "text": " "}),
            Some(6),
            "invalid_argument",
        ),
        (
            json!({"type": "send", "id": 7, "to": "", "text": "x"}),
            Some(7),
            "invalid_argument",
        ),
    ];
    for (body, id, code) in cases {
        cli.send(&body).await?;
        expect_error(&mut cli, code, id)
            .await
            .with_context(|| body.to_string())?;
    }
    expect_usable(&mut cli, 99).await?;

    // A Pi session may not answer asks, its own or others'.
    let err = pi.client.answer(ask_id, "yes").await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::Forbidden), "{err}");
    // A Pi connection that has not registered is told to.
    let mut unregistered = greeted(&core, "pi").await?;
    unregistered
        .send(&json!({"type": "ask", "id": 1, "question": "q"}))
        .await?;
    let msg = expect_error(&mut unregistered, "not_registered", Some(1)).await?;
    assert!(msg.contains("register"), "{msg}");

    let asks = core.cli_json(&["asks"])?;
    assert_eq!(asks.as_array().map(Vec::len), Some(1));
    assert_eq!(asks[0]["state"], "open", "nothing answered it");
    assert_still_serving_with(&core, &mut by, "requests outside a role", 2).await?;
    Ok(())
}

#[tokio::test]
async fn values_out_of_range_are_invalid_arguments_and_store_nothing() -> Result<()> {
    let core = Core::start().await?;
    let mut by = bystander(&core).await?;
    let long_id = "i".repeat(129);
    let registrations = [
        json!({"session_id": "", "cwd": "/tmp"}),
        json!({"session_id": long_id, "cwd": "/tmp"}),
        json!({"session_id": "bad\nid", "cwd": "/tmp"}),
        json!({"session_id": "ok-1", "cwd": "relative/dir"}),
        json!({"session_id": "ok-1", "cwd": "/tmp", "status": "napping"}),
        json!({"session_id": "ok-1", "cwd": "/tmp", "status": "tool:"}),
        json!({"session_id": "ok-1", "cwd": "/tmp", "name": "   "}),
        json!({"session_id": "ok-1", "cwd": "/tmp", "session_file": "rel.jsonl"}),
        // Past SQLite's integer range: the sender's value, not a store failure.
        json!({"session_id": "ok-1", "cwd": "/tmp", "context": {"tokens": MAX_ID + 1}}),
        json!({"session_id": "ok-1", "cwd": "/tmp", "context": {"window": u64::MAX}}),
    ];
    let mut raw = greeted(&core, "pi").await?;
    for (i, session) in registrations.into_iter().enumerate() {
        let id = i as u64 + 1;
        raw.send(&json!({"type": "register", "id": id, "session": session}))
            .await?;
        expect_error(&mut raw, "invalid_argument", Some(id))
            .await
            .with_context(|| session.to_string())?;
    }
    // A 128-character id is fine.
    let max_id = "m".repeat(128);
    raw.send(
        &json!({"type": "register", "id": 50, "session": {"session_id": max_id, "cwd": "/tmp"}}),
    )
    .await?;
    let reply = raw.read(WAIT).await?.context("registered")?;
    assert_eq!(reply["type"], "registered", "{reply}");
    assert_eq!(
        reply["session"]["name"], "tmp",
        "default name outside a repository: the cwd's last component"
    );

    let long_option = "o".repeat(101);
    let many: Vec<String> = (0..11).map(|i| format!("option {i}")).collect();
    let asks = [
        json!({"question": ""}),
        json!({"question": " \n "}),
        json!({"question": "q", "options": many}),
        json!({"question": "q", "options": ["fine", ""]}),
        json!({"question": "q", "options": [long_option]}),
    ];
    for (i, ask) in asks.into_iter().enumerate() {
        let id = 100 + i as u64;
        let mut body = ask.clone();
        body["type"] = json!("ask");
        body["id"] = json!(id);
        raw.send(&body).await?;
        expect_error(&mut raw, "invalid_argument", Some(id))
            .await
            .with_context(|| ask.to_string())?;
    }
    raw.send(&json!({"type": "report", "id": 200, "text": ""}))
        .await?;
    expect_error(&mut raw, "invalid_argument", Some(200)).await?;
    raw.send(&json!({"type": "update", "id": 202, "context": {"tokens": MAX_ID + 1}}))
        .await?;
    let msg = expect_error(&mut raw, "invalid_argument", Some(202)).await?;
    assert!(msg.contains("context.tokens"), "{msg}");
    assert!(
        !core.log().contains("ERROR"),
        "no store failure logged:\n{}",
        core.log()
    );
    expect_usable(&mut raw, 201).await?;

    let sessions = core.cli_json(&["sessions", "--all"])?;
    assert_eq!(sessions.as_array().map(Vec::len), Some(2), "{sessions:#}");
    let asks = core.cli_json(&["asks", "--all"])?;
    assert_eq!(asks, json!([]));
    assert_still_serving_with(&core, &mut by, "values out of range", 2).await?;
    Ok(())
}

/// Ids past SQLite's integer range where the field is not a typed id (`list_reports
/// {after}`, a worker selector: an id, `#id`, a label or a session id) are the sender's
/// `invalid_message` naming the field, like the typed ids, not a `store_failed` with an
/// ERROR in the core's log. The largest id the store holds is still served.
#[tokio::test]
async fn ids_past_the_stores_range_are_invalid_messages_in_every_field() -> Result<()> {
    let core = Core::start().await?;
    let mut by = bystander(&core).await?;
    let over = MAX_ID + 1;
    let mut raw = greeted(&core, "bridge").await?;
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"type": "list_reports", "id": 1, "after": over}),
            "after",
        ),
        (
            json!({"type": "list_reports", "id": 2, "after": u64::MAX}),
            "after",
        ),
        (
            json!({"type": "close_agent", "id": 3, "agent": over.to_string()}),
            "agent",
        ),
        (
            json!({"type": "steer_agent", "id": 4, "agent": format!("#{}", u64::MAX), "message": "m"}),
            "agent",
        ),
        (
            json!({"type": "interrupt_agent", "id": 5, "agent": over.to_string(), "message": "m"}),
            "agent",
        ),
        (
            json!({"type": "reply_agent", "id": 6, "agent": over.to_string(), "answer": "a"}),
            "agent",
        ),
        (
            json!({"type": "inspect_agent", "id": 7, "agent": over.to_string()}),
            "agent",
        ),
        (
            json!({"type": "read_agent_transcript", "id": 8, "agent": over.to_string()}),
            "agent",
        ),
    ];
    for (i, (body, field)) in cases.into_iter().enumerate() {
        let id = body["id"].as_u64();
        raw.send(&body).await?;
        let msg = expect_error(&mut raw, "invalid_message", id)
            .await
            .with_context(|| body.to_string())?;
        assert!(
            msg.contains(field) && msg.contains("out of range"),
            "the message for {body} must name `{field}` and the range: {msg}"
        );
        expect_usable(&mut raw, 100 + i as u64)
            .await
            .with_context(|| format!("after {body}"))?;
    }
    // The largest id the store holds is an ordinary id: nothing after it, no such worker.
    raw.send(&json!({"type": "list_reports", "id": 20, "after": MAX_ID}))
        .await?;
    let reply = raw.read(WAIT).await?.context("reports")?;
    assert_eq!(reply, json!({"type": "reports", "id": 20, "reports": []}));
    raw.send(&json!({"type": "close_agent", "id": 21, "agent": MAX_ID.to_string()}))
        .await?;
    let reply = raw.read(WAIT).await?.context("close_agent")?;
    assert_eq!(reply["code"], "worker_refused", "{reply}");
    assert_eq!(reply["details"]["reason"], "agent_not_found", "{reply}");
    let log = core.log();
    assert!(
        !log.contains("ERROR") && !log.contains("store_failed"),
        "no store failure logged:\n{log}"
    );
    assert_still_serving(&core, &mut by, "ids past the store's range").await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// All at once

/// One bad client of each kind, many at once, while a well-behaved pair keeps talking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_bad_clients_at_once_do_not_disturb_a_conversation() -> Result<()> {
    let core = Core::start_with(&[("SHEPHERD_CORE__HELLO_TIMEOUT_MS", "300")]).await?;
    let mut by = bystander(&core).await?;
    let socket = core.socket();

    let mut bad = Vec::new();
    for i in 0..60u32 {
        let socket = socket.clone();
        bad.push(tokio::spawn(async move {
            let mut raw = Raw {
                stream: tokio::net::UnixStream::connect(&socket).await?,
            };
            let (code, closes) = match i % 6 {
                0 => {
                    raw.write(&u32::MAX.to_be_bytes()).await?;
                    ("frame_too_large", true)
                }
                1 => {
                    raw.write(&[0, 0, 0, 9, b'{']).await?;
                    raw.shutdown_write().await?;
                    ("truncated_frame", true)
                }
                2 => {
                    raw.write_frame(b"\xff").await?;
                    ("malformed_frame", true)
                }
                3 => ("hello_timeout", true),
                4 => {
                    raw.send(&json!({"type": "hello", "id": 1, "protocol": 7, "client": "pi"}))
                        .await?;
                    ("protocol_mismatch", true)
                }
                _ => {
                    raw.hello("bridge").await?;
                    raw.send(&json!({"type": "send", "id": 2, "to": [], "text": 1}))
                        .await?;
                    ("invalid_message", false)
                }
            };
            let frame = raw.read(WAIT).await?.context("closed without an error")?;
            anyhow::ensure!(
                frame["code"] == code,
                "client {i}: expected {code}, got {frame}"
            );
            if closes {
                anyhow::ensure!(raw.read(WAIT).await?.is_none(), "client {i} not closed");
            }
            Ok::<_, anyhow::Error>(())
        }));
    }

    let mut sender = core.client(ClientKind::Cli).await?;
    let mut sent = Vec::new();
    for i in 0..100 {
        let reply = sender.send_to(BYSTANDER, format!("steer {i}")).await?;
        sent.push(reply.message_id);
    }
    let mut got = Vec::new();
    for _ in 0..100 {
        let d = by.next_delivery(WAIT).await?;
        by.ack(&[d.id]).await?;
        got.push(d.id);
    }
    assert_eq!(got, sent);
    for task in bad {
        task.await??;
    }
    assert_still_serving(&core, &mut by, "60 bad clients at once").await?;
    Ok(())
}

/// A subscriber that stops reading is cut off once its queue is full; the session whose
/// updates flood it is never slowed down or refused, and everyone else is served.
#[tokio::test]
async fn a_client_that_stops_reading_is_cut_off_without_stalling_anyone() -> Result<()> {
    let core = Core::start_with(&[("SHEPHERD_CORE__LIMITS__MAX_OUTBOUND_FRAMES", "16")]).await?;
    let mut by = bystander(&core).await?;
    let mut stalled = greeted(&core, "bridge").await?;
    stalled.send(&json!({"type": "subscribe", "id": 2})).await?;
    let reply = stalled.read(WAIT).await?.context("subscribed")?;
    assert_eq!(reply, json!({"type": "subscribed", "id": 2}));

    // Each update is an event of ~3 KiB for the stalled subscriber.
    let mut busy = core.pi("busy-1", "busy").await?;
    let file = format!("/tmp/{}", "f".repeat(3000));
    for i in 0..400 {
        let status = if i % 2 == 0 { "thinking" } else { "tool:edit" };
        let reply = tokio::time::timeout(
            WAIT,
            busy.client.call(requests::Update {
                status: Some(status.into()),
                session_file: Some(file.clone()),
                ..Default::default()
            }),
        )
        .await
        .with_context(|| format!("update {i} stalled behind a client that does not read"))??;
        assert_eq!(reply.status, status, "{reply:?}");
    }

    // The stalled client gets what was already on its way, then the connection ends.
    let mut frames = 0;
    while let Some(frame) = stalled.read(WAIT).await? {
        frames += 1;
        assert!(
            frame["type"] == "session_changed"
                || frame["type"] == "session_joined"
                || frame["code"] == "slow_consumer",
            "{frame}"
        );
    }
    assert!(
        frames < 400,
        "cut off, not served everything ({frames} frames)"
    );
    assert!(
        core.log().contains("slow_consumer"),
        "the core logs why it cut the client off"
    );
    assert_serving(&core, &mut by, "a client that stopped reading", 2).await?;
    Ok(())
}
