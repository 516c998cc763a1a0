//! Crash safety against the real daemon: `kill -9` while steers, Pi messages, asks and
//! answers are in flight, then restart on the same state and reconnect. Everything the
//! core accepted (`sent`, `asked`, `answered`) survives: each accepted message reaches
//! the receiver exactly once after dropping duplicate ids, in order per sender; each
//! accepted ask is listed, each accepted answer is kept and delivered to its asker.
//! Messages whose acceptance the sender never heard may or may not survive, but never
//! twice. Two rounds, so the second crash also hits redeliveries from the first.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;
use shepherd_core::client::{Client, ClientError, Sent};
use shepherd_core::protocol::{
    ClientKind, Delivery, DeliveryKind, ErrorCode, MessageId, ServerMsg, requests,
};
use shepherd_harness::{Core, Pi};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

const RECEIVER: &str = "crash-receiver";
const ROUNDS: usize = 2;
const STEER_SENDERS: usize = 3;
const PI_SENDERS: usize = 3;
const ASKERS: usize = 3;
const ANSWERERS: usize = 2;
/// Per asker per round; `asks --all` lists at most 500, and all must fit.
const MAX_ASKS: u64 = 80;
/// Kill once this round's receiver saw this many deliveries and this many answers won.
const KILL_AFTER_RECEIVED: usize = 300;
const KILL_AFTER_ANSWERED: usize = 30;
const WAIT: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Progress {
    received: AtomicUsize,
    answered: AtomicUsize,
    notify: Notify,
}

impl Progress {
    fn bump(&self, counter: &AtomicUsize) {
        counter.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_one();
    }
}

/// What one sender got accepted: `(seq, message_id)` for seq 0, 1, 2, … in order.
struct SenderLog {
    name: String,
    sent: Vec<(u64, MessageId)>,
}

/// One asker's accepted asks: `(k, ask_id)`.
struct AskerLog {
    session_id: String,
    asked: Vec<(u64, u64)>,
}

/// One answerer's winning answers `(ask_id, text)`, and the asks it lost.
struct AnswererLog {
    by: String,
    won: Vec<(u64, String)>,
    lost: Vec<u64>,
}

/// One receiver connection: what `registered` announced and every delivery, in order.
struct ReceiverLog {
    pending: u32,
    deliveries: Vec<Delivery>,
}

/// The core went away under this client (a frame cut short by the kill included).
fn is_gone(e: &ClientError) -> bool {
    match e {
        ClientError::Closed | ClientError::Io(_) | ClientError::NotRunning { .. } => true,
        ClientError::Protocol(detail) => detail.contains("ended inside a frame"),
        ClientError::Remote { code, .. } => *code == ErrorCode::ShuttingDown,
        ClientError::Unexpected { .. } | ClientError::ProtocolMismatch { .. } => false,
    }
}

async fn steer_sender(socket: PathBuf, name: String, to: &'static str) -> Result<SenderLog> {
    let mut client = Client::connect(&socket, ClientKind::Bridge, &name).await?;
    let mut sent = Vec::new();
    for seq in 0.. {
        let text = format!("{name}#{seq}");
        match client
            .call(requests::Send {
                id: 0,
                to: to.into(),
                text,
                by: Some(format!("telegram:@{name}")),
                host: None,
            })
            .await
        {
            Ok(Sent { message_id, .. }) => sent.push((seq, message_id)),
            Err(e) if is_gone(&e) => break,
            Err(e) => bail!("{name}: {e}"),
        }
    }
    Ok(SenderLog { name, sent })
}

async fn pi_sender(socket: PathBuf, name: String, to: &'static str) -> Result<SenderLog> {
    let mut pi = Pi::register(&socket, &name, &name, Path::new("/tmp")).await?;
    let mut sent = Vec::new();
    for seq in 0.. {
        let text = format!("{name}#{seq}");
        match pi.client.message_peer(to, text).await {
            Ok(Sent { message_id, .. }) => sent.push((seq, message_id)),
            Err(e) if is_gone(&e) => break,
            Err(e) => bail!("{name}: {e}"),
        }
    }
    Ok(SenderLog { name, sent })
}

async fn asker(socket: PathBuf, session_id: String) -> Result<AskerLog> {
    let mut pi = Pi::register(&socket, &session_id, &session_id, Path::new("/tmp")).await?;
    let mut asked = Vec::new();
    for k in 0..MAX_ASKS {
        let question = format!("{session_id} q{k}");
        match pi
            .client
            .call(requests::Ask {
                question,
                options: vec!["yes".into(), "no".into()],
                ..Default::default()
            })
            .await
        {
            Ok(ask) => asked.push((k, ask.id.get())),
            Err(e) if is_gone(&e) => break,
            Err(e) => bail!("{session_id}: {e}"),
        }
    }
    Ok(AskerLog { session_id, asked })
}

async fn answerer(
    socket: PathBuf,
    j: usize,
    progress: Arc<Progress>,
    ready: tokio::sync::oneshot::Sender<()>,
) -> Result<AnswererLog> {
    let by = format!("telegram:@answerer{j}");
    let mut client = Client::connect(&socket, ClientKind::Bridge, "telegram").await?;
    client.subscribe().await?;
    let _ = ready.send(());
    let mut log = AnswererLog {
        by: by.clone(),
        won: Vec::new(),
        lost: Vec::new(),
    };
    loop {
        let ask = match client.next_event().await {
            Ok(ServerMsg::AskOpened { ask }) => ask,
            Ok(_) => continue,
            Err(e) if is_gone(&e) => break,
            Err(e) => bail!("answerer {j}: {e}"),
        };
        let text = format!("answer{j} to {}", ask.id);
        let reply = client
            .call(requests::Answer {
                id: 0,
                ask: ask.id,
                text: text.clone(),
                by: Some(by.clone()),
                host: None,
            })
            .await;
        match reply {
            Ok(answered) => {
                ensure!(answered.answer.as_deref() == Some(text.as_str()));
                log.won.push((ask.id.get(), text));
                progress.bump(&progress.answered);
            }
            Err(e) if e.code() == Some(ErrorCode::AlreadyAnswered) => log.lost.push(ask.id.get()),
            Err(e) if is_gone(&e) => break,
            Err(e) => bail!("answerer {j}: {e}"),
        }
    }
    Ok(log)
}

/// Register as the receiver, acknowledge and record every delivery until the core dies.
async fn receiver(
    socket: PathBuf,
    progress: Arc<Progress>,
    ready: tokio::sync::oneshot::Sender<()>,
) -> Result<ReceiverLog> {
    let mut pi = Pi::register(&socket, RECEIVER, "receiver", Path::new("/tmp")).await?;
    let _ = ready.send(());
    let mut log = ReceiverLog {
        pending: pi.pending,
        deliveries: Vec::new(),
    };
    loop {
        let d = match tokio::time::timeout(WAIT, pi.client.next_event()).await {
            Ok(Ok(ServerMsg::Deliver { message })) => message,
            Ok(Ok(_)) => continue,
            Ok(Err(e)) if is_gone(&e) => break,
            Ok(Err(e)) => bail!("receiver: {e}"),
            Err(_) => bail!("receiver: nothing for {WAIT:?}"),
        };
        let id = d.id;
        log.deliveries.push(d);
        progress.bump(&progress.received);
        if pi.ack(&[id]).await.is_err() {
            break;
        }
    }
    Ok(log)
}

async fn join<T>(task: JoinHandle<Result<T>>) -> Result<T> {
    tokio::time::timeout(WAIT, task)
        .await
        .context("a client task did not notice the crash")??
}

struct Round {
    senders: Vec<SenderLog>,
    askers: Vec<AskerLog>,
    answerers: Vec<AnswererLog>,
    receiver: ReceiverLog,
}

/// Start everyone, kill -9 the core mid-flight, collect what each client was told.
async fn storm_and_kill(core: &mut Core, round: usize) -> Result<Round> {
    let socket = core.socket();
    let progress = Arc::new(Progress::default());

    let mut answerers = Vec::new();
    for j in 0..ANSWERERS {
        let (tx, rx) = tokio::sync::oneshot::channel();
        answerers.push(tokio::spawn(answerer(
            socket.clone(),
            j,
            progress.clone(),
            tx,
        )));
        if rx.await.is_err() {
            let task = answerers.pop().expect("just pushed");
            bail!(
                "answerer {j} did not subscribe: {:?}",
                join(task).await.err()
            );
        }
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    let receiver = tokio::spawn(receiver(socket.clone(), progress.clone(), tx));
    if rx.await.is_err() {
        bail!(
            "the receiver did not register: {:?}",
            join(receiver).await.err()
        );
    }
    let mut senders = Vec::new();
    for i in 0..STEER_SENDERS {
        let name = format!("r{round}-steer{i}");
        senders.push(tokio::spawn(steer_sender(socket.clone(), name, RECEIVER)));
    }
    for i in 0..PI_SENDERS {
        let name = format!("r{round}-pi{i}");
        senders.push(tokio::spawn(pi_sender(socket.clone(), name, RECEIVER)));
    }
    let askers: Vec<_> = (0..ASKERS)
        .map(|i| tokio::spawn(asker(socket.clone(), format!("r{round}-asker{i}"))))
        .collect();

    let deadline = Instant::now() + WAIT;
    loop {
        let received = progress.received.load(Ordering::SeqCst);
        let answered = progress.answered.load(Ordering::SeqCst);
        if received >= KILL_AFTER_RECEIVED && answered >= KILL_AFTER_ANSWERED {
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if tokio::time::timeout(left, progress.notify.notified())
            .await
            .is_err()
        {
            bail!("round {round}: only {received} received and {answered} answered in {WAIT:?}");
        }
    }
    core.kill9();

    let mut round_log = Round {
        senders: Vec::new(),
        askers: Vec::new(),
        answerers: Vec::new(),
        receiver: join(receiver).await?,
    };
    for task in senders {
        round_log.senders.push(join(task).await?);
    }
    for task in askers {
        round_log.askers.push(join(task).await?);
    }
    for task in answerers {
        round_log.answerers.push(join(task).await?);
    }
    // The crash really happened mid-flight: some asker was cut short.
    ensure!(
        round_log
            .askers
            .iter()
            .any(|a| (a.asked.len() as u64) < MAX_ASKS),
        "round {round}: every asker finished before the kill; nothing was in flight"
    );
    Ok(round_log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill9_mid_flight_loses_nothing_that_was_accepted() -> Result<()> {
    let started = Instant::now();
    let mut core =
        Core::start_with(&[("SHEPHERD_CORE__LIMITS__MAX_OPEN_ASKS_PER_SESSION", "1000")]).await?;

    let mut rounds = Vec::new();
    for round in 0..ROUNDS {
        rounds.push(storm_and_kill(&mut core, round).await?);
        core.restart().await?;
        assert!(
            !core.log_has_panic(),
            "panic in the core log:\n{}",
            core.log()
        );
    }

    // The receiver comes back once more and gets whatever is still pending.
    let mut final_pi =
        Pi::register(&core.socket(), RECEIVER, "receiver", Path::new("/tmp")).await?;
    let mut last = ReceiverLog {
        pending: final_pi.pending,
        deliveries: Vec::new(),
    };
    for _ in 0..final_pi.pending {
        last.deliveries
            .push(final_pi.next_delivery(Duration::from_secs(10)).await?);
    }

    // ---- Messages: dedupe by id, in the order first seen.
    let connections: Vec<&ReceiverLog> = rounds
        .iter()
        .map(|r| &r.receiver)
        .chain(std::iter::once(&last))
        .collect();
    let mut handled: BTreeMap<MessageId, String> = BTreeMap::new();
    let mut first_seen: Vec<MessageId> = Vec::new();
    let mut raw_deliveries = 0;
    for (c, conn) in connections.iter().enumerate() {
        let ids: Vec<MessageId> = conn.deliveries.iter().map(|d| d.id).collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "connection {c}: deliveries in id order: {ids:?}"
        );
        assert!(
            conn.deliveries.len() >= conn.pending as usize,
            "connection {c}: registered announced {} pending, {} arrived",
            conn.pending,
            conn.deliveries.len()
        );
        for d in &conn.deliveries {
            raw_deliveries += 1;
            assert_eq!(
                d.kind == DeliveryKind::PeerMessage,
                d.from.kind == ClientKind::Pi
            );
            let text = sent_text(&d.text).to_string();
            match handled.get(&d.id) {
                Some(seen) => assert_eq!(seen, &text, "a redelivery is the same message"),
                None => {
                    handled.insert(d.id, text);
                    first_seen.push(d.id);
                }
            }
        }
    }
    let mut by_text: HashMap<&str, MessageId> = HashMap::new();
    for (id, text) in &handled {
        if let Some(other) = by_text.insert(text.as_str(), *id) {
            panic!("{text:?} was stored twice, as {other} and {id}");
        }
    }
    // Per sender: seqs in first-seen order are exactly 0, 1, 2, … (in order, no gaps),
    // covering everything it was told was sent, plus at most the one in flight.
    let mut seqs_of: HashMap<&str, Vec<u64>> = HashMap::new();
    for id in &first_seen {
        let text = &handled[id];
        let (name, seq) = text.rsplit_once('#').context("sender#seq")?;
        seqs_of.entry(name).or_default().push(seq.parse()?);
    }
    let mut accepted_total = 0;
    let mut senders_seen = HashSet::new();
    for log in rounds.iter().flat_map(|r| &r.senders) {
        senders_seen.insert(log.name.as_str());
        accepted_total += log.sent.len();
        for (seq, message_id) in &log.sent {
            assert_eq!(
                handled.get(message_id).map(String::as_str),
                Some(format!("{}#{seq}", log.name).as_str()),
                "{}#{seq} was accepted as message {message_id} and must arrive",
                log.name
            );
        }
        let seqs = seqs_of.get(log.name.as_str()).cloned().unwrap_or_default();
        let expected: Vec<u64> = (0..seqs.len() as u64).collect();
        assert_eq!(seqs, expected, "{}: in order, without gaps", log.name);
        let accepted = log.sent.len();
        assert!(
            seqs.len() == accepted || seqs.len() == accepted + 1,
            "{}: {} accepted, {} arrived",
            log.name,
            accepted,
            seqs.len()
        );
        assert!(accepted > 0, "{} got nothing accepted", log.name);
    }
    assert!(
        seqs_of.keys().all(|name| senders_seen.contains(name)),
        "only our senders' messages"
    );

    // Everything is acknowledged now; nothing is pending after another reconnect.
    let ids: Vec<MessageId> = last.deliveries.iter().map(|d| d.id).collect();
    final_pi.ack(&ids).await?;
    final_pi.sync().await?;
    drop(final_pi);
    let again = core
        .cli_json(&["sessions", "--all"])?
        .as_array()
        .context("array")?
        .iter()
        .find(|s| s["id"] == RECEIVER)
        .map(|s| s["pending_messages"].clone());
    assert_eq!(again, Some(Value::from(0)));

    // ---- Asks and answers.
    let listed = core.cli_json(&["asks", "--all"])?;
    let stored: HashMap<u64, &Value> = listed
        .as_array()
        .context("array")?
        .iter()
        .map(|a| (a["id"].as_u64().unwrap(), a))
        .collect();
    let mut asks_accepted = 0;
    for log in rounds.iter().flat_map(|r| &r.askers) {
        asks_accepted += log.asked.len();
        for (k, ask_id) in &log.asked {
            let ask = stored
                .get(ask_id)
                .with_context(|| format!("accepted ask {ask_id} is missing"))?;
            assert_eq!(ask["question"], format!("{} q{k}", log.session_id));
            assert_eq!(ask["session_id"], log.session_id.as_str());
            assert_eq!(ask["options"], serde_json::json!(["yes", "no"]));
        }
        let mut ks: Vec<u64> = stored
            .values()
            .filter(|a| a["session_id"] == log.session_id.as_str())
            .map(|a| {
                let q = a["question"].as_str().unwrap();
                q.rsplit_once(" q").unwrap().1.parse::<u64>().unwrap()
            })
            .collect();
        ks.sort();
        let n = log.asked.len();
        assert_eq!(
            ks,
            (0..ks.len() as u64).collect::<Vec<_>>(),
            "{}",
            log.session_id
        );
        assert!(
            ks.len() == n || ks.len() == n + 1,
            "{}: {n} accepted, {} stored",
            log.session_id,
            ks.len()
        );
    }
    let mut winners: HashMap<u64, &str> = HashMap::new();
    let mut answers_accepted = 0;
    for log in rounds.iter().flat_map(|r| &r.answerers) {
        answers_accepted += log.won.len();
        for (ask_id, text) in &log.won {
            if let Some(other) = winners.insert(*ask_id, &log.by) {
                panic!("ask {ask_id} was won by both {other} and {}", log.by);
            }
            let ask = stored
                .get(ask_id)
                .with_context(|| format!("answered ask {ask_id} is missing"))?;
            assert_eq!(ask["state"], "answered", "accepted answer to {ask_id} lost");
            assert_eq!(ask["answer"], text.as_str());
            assert_eq!(ask["answered_by"], log.by.as_str());
        }
        for ask_id in &log.lost {
            assert_eq!(
                stored[ask_id]["state"], "answered",
                "{ask_id} lost to someone"
            );
            assert_ne!(stored[ask_id]["answered_by"], log.by.as_str());
        }
    }
    let unreported = stored
        .iter()
        .filter(|(id, a)| a["state"] == "answered" && !winners.contains_key(id))
        .count();
    assert!(
        unreported <= ANSWERERS * ROUNDS,
        "{unreported} answers were kept that no answerer was told about"
    );

    // Each asker gets an answer delivery for every answered ask of its own, once.
    for log in rounds.iter().flat_map(|r| &r.askers) {
        let mut pi = Pi::register(
            &core.socket(),
            &log.session_id,
            &log.session_id,
            Path::new("/tmp"),
        )
        .await?;
        let mut got: BTreeMap<MessageId, (u64, String)> = BTreeMap::new();
        for _ in 0..pi.pending {
            let d = pi.next_delivery(Duration::from_secs(10)).await?;
            assert_eq!(d.kind, DeliveryKind::Answer);
            let ask_id = d.ask_id.context("ask_id")?;
            let ask = stored[&ask_id.get()];
            assert_eq!(ask["session_id"], log.session_id.as_str());
            assert_eq!(d.question.as_deref(), ask["question"].as_str());
            assert_eq!(Some(d.from.name.as_str()), ask["answered_by"].as_str());
            assert!(got.insert(d.id, (ask_id.get(), d.text)).is_none());
        }
        let mut delivered: Vec<(u64, String)> = got.into_values().collect();
        delivered.sort();
        let mut expected: Vec<(u64, String)> = stored
            .values()
            .filter(|a| a["session_id"] == log.session_id.as_str() && a["state"] == "answered")
            .map(|a| {
                (
                    a["id"].as_u64().unwrap(),
                    a["answer"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        expected.sort();
        assert_eq!(
            delivered, expected,
            "{}: every answer delivered once",
            log.session_id
        );
    }

    eprintln!(
        "crash test: {ROUNDS} kills; {accepted_total} messages accepted, {} kept, {raw_deliveries} \
         deliveries before dedupe; {asks_accepted} asks and {answers_accepted} answers accepted; {:?}",
        handled.len(),
        started.elapsed()
    );
    Ok(())
}

/// What the sender wrote: a peer message reads `Peer message from <name> (<id>): <text>`.
fn sent_text(delivered: &str) -> &str {
    delivered
        .strip_prefix("Peer message from ")
        .and_then(|t| t.split_once("): "))
        .map_or(delivered, |(_, text)| text)
}
