//! Scale against the real daemon: 200 Pi sessions connect and register at once, each
//! sends N messages to its neighbour while receiving N from the other one, acknowledges
//! everything, and leaves. Counts are exact: every message arrives once, in order, from
//! the right sender; nothing stays pending; and once all are gone the core shows none
//! connected.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use shepherd_core::client::Sent;
use shepherd_core::protocol::{ClientKind, DeliveryKind, ServerMsg};
use shepherd_harness::{Core, Pi};
use tokio::sync::Barrier;

const CLIENTS: usize = 200;
const PER_PEER: usize = 20;
const WAIT: Duration = Duration::from_secs(60);

fn session(i: usize) -> String {
    format!("scale-{i:03}")
}

/// One session's life: register, wait for everyone, send to the next, receive from the
/// previous, ack, report back, wait to be let go.
async fn one_session(
    socket: std::path::PathBuf,
    i: usize,
    registered: Arc<Barrier>,
    exchanged: Arc<Barrier>,
    release: Arc<Barrier>,
) -> Result<(usize, usize)> {
    let me = session(i);
    let next = session((i + 1) % CLIENTS);
    let prev = session((i + CLIENTS - 1) % CLIENTS);
    let mut pi = Pi::register(&socket, &me, &me, Path::new("/tmp")).await?;
    ensure!(pi.pending == 0, "{me}: nothing pending at first");
    registered.wait().await;

    let mut sent_ids = Vec::with_capacity(PER_PEER);
    for seq in 0..PER_PEER {
        let reply = pi
            .client
            .message_peer(next.clone(), format!("{me}->{next} #{seq}"))
            .await?;
        let Sent {
            message_id,
            session_id,
            connected,
            ..
        } = reply;
        ensure!(session_id == next, "{me}: sent to {session_id}, not {next}");
        ensure!(connected, "{me}: {next} should be connected");
        sent_ids.push(message_id);
    }

    let mut seen = HashSet::new();
    let mut acked = 0;
    for seq in 0..PER_PEER {
        let d = pi
            .next_delivery(WAIT)
            .await
            .with_context(|| format!("{me}: delivery {seq} of {PER_PEER}"))?;
        ensure!(d.kind == DeliveryKind::PeerMessage, "{me}: {d:?}");
        ensure!(d.from.kind == ClientKind::Pi);
        ensure!(
            d.from.session_id.as_deref() == Some(prev.as_str()),
            "{me}: {d:?}"
        );
        ensure!(d.from.name == prev);
        ensure!(
            d.text == format!("Peer message from {prev} ({prev}): {prev}->{me} #{seq}"),
            "{me}: out of order: {d:?}"
        );
        ensure!(seen.insert(d.id), "{me}: {} twice", d.id);
        pi.ack(&[d.id]).await?;
        acked += 1;
    }
    pi.sync().await?;
    exchanged.wait().await;
    release.wait().await;
    // Still connected and served after everyone's exchange.
    ensure!(
        pi.client.ping().await.is_ok(),
        "{me}: still connected at the end"
    );
    Ok((sent_ids.len(), acked))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_sessions_register_exchange_and_leave() -> Result<()> {
    let started = Instant::now();
    let core = Core::start().await?;
    let mut sub = core.subscriber().await?;
    let socket = core.socket();
    let registered = Arc::new(Barrier::new(CLIENTS));
    let exchanged = Arc::new(Barrier::new(CLIENTS + 1));
    let release = Arc::new(Barrier::new(CLIENTS + 1));
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|i| {
            tokio::spawn(one_session(
                socket.clone(),
                i,
                registered.clone(),
                exchanged.clone(),
                release.clone(),
            ))
        })
        .collect();

    tokio::time::timeout(WAIT, exchanged.wait())
        .await
        .context("not every session finished its exchange")?;
    let exchange_time = started.elapsed();

    // While all are connected: exact counts, nothing pending.
    let status = core.cli_json(&["status"])?;
    assert_eq!(status["sessions_connected"], CLIENTS);
    assert_eq!(status["sessions_known"], CLIENTS);
    let sessions = core.cli_json(&["sessions"])?;
    let sessions = sessions.as_array().context("array")?;
    assert_eq!(sessions.len(), CLIENTS);
    let ids: HashSet<&str> = sessions.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        (0..CLIENTS)
            .map(session)
            .collect::<HashSet<_>>()
            .iter()
            .map(String::as_str)
            .collect()
    );
    for s in sessions {
        assert_eq!(s["pending_messages"], 0, "{s}");
        assert_eq!(s["connected"], true, "{s}");
        assert_eq!(s["pid"], std::process::id());
    }

    // Everyone leaves.
    release.wait().await;
    let mut sent = 0;
    let mut acked = 0;
    for task in tasks {
        let (s, a) = tokio::time::timeout(WAIT, task).await???;
        sent += s;
        acked += a;
    }
    assert_eq!(sent, CLIENTS * PER_PEER);
    assert_eq!(acked, CLIENTS * PER_PEER);

    // The subscriber saw each session join once and leave once.
    let mut joined = HashSet::new();
    let mut left = HashSet::new();
    while left.len() < CLIENTS {
        let event = tokio::time::timeout(WAIT, sub.next_event())
            .await
            .with_context(|| format!("only {} of {CLIENTS} left", left.len()))??;
        match event {
            ServerMsg::SessionJoined { session } => {
                assert!(
                    joined.insert(session.id.clone()),
                    "{} joined twice",
                    session.id
                );
            }
            ServerMsg::SessionLeft { session, .. } => {
                assert!(
                    joined.contains(&session.id),
                    "{} left before joining",
                    session.id
                );
                assert!(left.insert(session.id.clone()), "{} left twice", session.id);
            }
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert_eq!(joined.len(), CLIENTS);

    let status = core.cli_json(&["status"])?;
    assert_eq!(status["sessions_connected"], 0, "{status:#}");
    assert_eq!(status["sessions_known"], CLIENTS);
    assert_eq!(core.cli_json(&["sessions"])?, serde_json::json!([]));
    let all = core.cli_json(&["sessions", "--all"])?;
    assert_eq!(all.as_array().map(Vec::len), Some(CLIENTS));
    assert!(
        all.as_array()
            .unwrap()
            .iter()
            .all(|s| s["pending_messages"] == 0 && s["connected"] == false)
    );
    assert!(!core.log_has_panic());
    eprintln!(
        "scale: {CLIENTS} sessions x {PER_PEER} messages exchanged in {exchange_time:?}, all gone after {:?}",
        started.elapsed()
    );
    Ok(())
}
