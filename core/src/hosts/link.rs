//! One link: run the command, greet the far core through it, mirror what it announces,
//! pass on the requests forwarded to it ([`super::forward`]), ping it, and start again
//! after a pause when it drops or refuses.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, watch};

use super::forward::Answers;
use super::mail::MailBag;
use super::{Forward, FromLink, HostView, LinkNews, ToFar};
use crate::client::{Client, ClientError};
use crate::clock::now_ms;
use crate::config::HostEntry;
use crate::protocol::{
    ApprovalState, ClientKind, ClientMsg, ErrorCode, HerdChief, LinkState, PROTOCOL_VERSION,
    ServerMsg, requests,
};

/// The first pause after a failure, doubled after each failure in a row up to
/// [`MAX_PAUSE`]; a link that was connected starts again after the first.
const MIN_PAUSE: Duration = Duration::from_secs(1);
const MAX_PAUSE: Duration = Duration::from_secs(30);
/// How long the far core has to greet this one through the command (ssh's own set-up
/// included).
const HANDSHAKE: Duration = Duration::from_secs(30);
/// How often the far core is pinged for the round trip.
const PING_EVERY: Duration = Duration::from_secs(10);
/// How much of the command's stderr is kept to say why it failed.
const STDERR_TAIL: usize = 2048;

type LinkClient = Client<ChildStdout, ChildStdin>;

/// The channels of one link's task: what it publishes, what it is asked to forward, the
/// mail the hub hands it, the herd's Chief, and this core's `store_id`.
pub(super) struct Channels {
    pub view: watch::Sender<HostView>,
    pub forwards: mpsc::Receiver<Forward>,
    pub to_far: mpsc::UnboundedReceiver<ToFar>,
    pub herd: watch::Receiver<Option<HerdChief>>,
    pub origin: String,
}

/// What one run of the link works with besides its client.
struct Run<'a> {
    tx: &'a watch::Sender<HostView>,
    forwards: &'a mut mpsc::Receiver<Forward>,
    answers: &'a mut Answers,
    to_far: &'a mut mpsc::UnboundedReceiver<ToFar>,
    herd: &'a mut watch::Receiver<Option<HerdChief>>,
    mail: &'a mut MailBag,
}

/// Keep `entry`'s link up until the task is aborted; `answers` gets the far core's
/// answers to forwarded requests.
pub(super) async fn run(entry: HostEntry, channels: Channels, answers: mpsc::Sender<FromLink>) {
    let Channels {
        view: tx,
        mut forwards,
        mut to_far,
        mut herd,
        origin,
    } = channels;
    let mut answers = Answers::new(answers);
    let mut mail = MailBag::new(origin);
    let mut pause = MIN_PAUSE;
    // The link dropped after it was up, and that was said: its return is said too.
    let mut dropped = false;
    loop {
        tx.send_modify(|v| {
            v.link.state = LinkState::Connecting;
            v.link.since = now_ms();
        });
        let run = Run {
            tx: &tx,
            forwards: &mut forwards,
            answers: &mut answers,
            to_far: &mut to_far,
            herd: &mut herd,
            mail: &mut mail,
        };
        let outcome = attempt(&entry, run, &mut dropped).await;
        answers.dropped(entry.name.as_str(), &mut forwards).await;
        mail.dropped();
        let wait = match outcome {
            // It was connected, then dropped: its sessions are unreachable, not gone.
            Ok(why) => {
                tracing::warn!(host = %entry.name, error = %why, "host link dropped");
                pause = MIN_PAUSE;
                tx.send_modify(|v| {
                    v.link.state = LinkState::Connecting;
                    v.link.error = Some(why);
                    v.link.since = now_ms();
                    for s in v.sessions.values_mut() {
                        s.connected = false;
                    }
                    v.recount();
                });
                if !dropped {
                    dropped = true;
                    let link = tx.borrow().link.clone();
                    answers.event(ServerMsg::HostLinkChanged { link }).await;
                }
                MIN_PAUSE
            }
            Err(why) => {
                let wait = pause;
                pause = (pause * 2).min(MAX_PAUSE);
                tracing::warn!(host = %entry.name, error = %why, retry_in_s = wait.as_secs(), "host link failed");
                tx.send_modify(|v| {
                    v.link.state = LinkState::Failed;
                    v.link.error = Some(why);
                    v.link.since = now_ms();
                });
                wait
            }
        };
        tokio::time::sleep(wait).await;
    }
}

/// One run of the command: `Err` when it never got connected (why), `Ok` with why it
/// dropped after it was.
async fn attempt(entry: &HostEntry, run: Run<'_>, dropped: &mut bool) -> Result<String, String> {
    let tx = run.tx;
    let argv = entry.command.argv();
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run the link command `{}`: {e}", argv[0]))?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err("the link command's stdio could not be taken".to_string());
    };
    let stderr = tokio::spawn(tail(stderr));
    let name = format!("shepherd-core {} (home)", env!("CARGO_PKG_VERSION"));
    let greeted = tokio::time::timeout(
        HANDSHAKE,
        Client::over(stdout, stdin, ClientKind::Core, &name),
    )
    .await;
    let mut client = match greeted {
        Ok(Ok(client)) => client,
        Ok(Err(e)) => return Err(failure(&refused(&e), child, stderr).await),
        Err(_) => {
            let why = format!(
                "the far core did not greet within {} s",
                HANDSHAKE.as_secs()
            );
            return Err(failure(&why, child, stderr).await);
        }
    };
    if let Err(e) = mirror_from_scratch(&mut client, tx, run.answers).await {
        return Err(failure(&e.to_string(), child, stderr).await);
    }
    // Tell the far core whose Chief the herd's is; then have the hub hand over the mail
    // kept for it (what was queued while the link was down is in that, so it goes).
    let chief = run.herd.borrow_and_update().clone();
    if let Err(e) = client.call(requests::LinkHerd { id: 0, chief }).await {
        return Err(failure(&e.to_string(), child, stderr).await);
    }
    while run.to_far.try_recv().is_ok() {}
    run.answers
        .news(LinkNews::Up {
            host: entry.name.to_string(),
        })
        .await;
    if std::mem::take(dropped) {
        let link = tx.borrow().link.clone();
        run.answers.event(ServerMsg::HostLinkChanged { link }).await;
    }
    tracing::info!(host = %entry.name, version = %client.welcome().core_version, "host linked");
    let why = follow(&mut client, &mut child, run).await;
    drop(client);
    Ok(failure(&why, child, stderr).await)
}

/// Why the far core's greeting failed, saying which side to upgrade on a version mismatch.
fn refused(e: &ClientError) -> String {
    match e {
        ClientError::ProtocolMismatch {
            core, core_version, ..
        } => {
            let older = match *core < PROTOCOL_VERSION {
                true => "the far machine's",
                false => "this machine's",
            };
            format!(
                "the far core is shepherd {core_version} speaking protocol {core}, this core speaks protocol {PROTOCOL_VERSION}: upgrade {older} shepherd"
            )
        }
        // The far core refused this one's hello: its message names both versions.
        ClientError::Remote {
            code: ErrorCode::ProtocolMismatch,
            message,
            ..
        } => format!("{message}: upgrade the older side's shepherd (`shepherd --version` on each)"),
        other => other.to_string(),
    }
}

/// Greeted: subscribe, then take the far core's sessions and open asks as they are now,
/// and announce what changed since the mirror was last up to date (asks opened or
/// answered, sessions joined or changed, reports and results posted, approvals pending or
/// decided while the link was down), once.
async fn mirror_from_scratch(
    client: &mut LinkClient,
    tx: &watch::Sender<HostView>,
    answers: &Answers,
) -> Result<(), ClientError> {
    client.call(requests::Subscribe::default()).await?;
    let host = tx.borrow().link.name.clone();
    let mut sessions = client.call(requests::ListSessions::default()).await?;
    let mut asks = client.call(requests::ListAsks::default()).await?;
    sessions
        .iter_mut()
        .for_each(|s| s.host = Some(host.clone()));
    asks.iter_mut().for_each(|a| a.host = Some(host.clone()));
    let (old_sessions, old_asks) = {
        let v = tx.borrow();
        (v.sessions.clone(), v.asks.clone())
    };
    let mut news = Vec::new();
    for s in &sessions {
        match old_sessions.get(&s.id) {
            None => news.push(ServerMsg::SessionJoined { session: s.clone() }),
            Some(old) if old != s => news.push(ServerMsg::SessionChanged { session: s.clone() }),
            Some(_) => {}
        }
    }
    for a in &asks {
        if !old_asks.contains_key(&a.id) {
            news.push(ServerMsg::AskOpened { ask: a.clone() });
        }
    }
    // Reports and results announced while the link was down (none the first time: what
    // was announced before home linked is the far core's to list).
    let last_report = tx.borrow().last_report;
    let newest = match last_report {
        Some(after) => {
            let req = requests::ListReports {
                after: Some(after),
                ..Default::default()
            };
            let mut newest = after;
            for mut report in client.call(req).await? {
                newest = newest.max(report.id);
                if report.announced {
                    report.host = Some(host.clone());
                    news.push(ServerMsg::ReportPosted { report });
                }
            }
            newest
        }
        None => {
            let req = requests::ListReports {
                limit: Some(1),
                ..Default::default()
            };
            client.call(req).await?.last().map_or(0, |r| r.id)
        }
    };
    // Open when last heard, not now: answered meanwhile (or forgotten there).
    for id in old_asks
        .keys()
        .filter(|id| !asks.iter().any(|a| a.id == **id))
    {
        let req = requests::ListAsks {
            ask: Some(*id),
            ..Default::default()
        };
        for mut ask in client.call(req).await? {
            ask.host = Some(host.clone());
            news.push(ServerMsg::AskAnswered { ask });
        }
    }
    // Held calls waiting now, and those pending when last heard that ended meanwhile: the
    // phone posts the cards it lacks and closes those that ended (each card once).
    let was_pending = tx.borrow().approvals.clone();
    let mut pending = std::collections::BTreeSet::new();
    let req = requests::ListApprovals {
        all: true,
        ..Default::default()
    };
    for mut approval in client.call(req).await? {
        let waiting = approval.state == ApprovalState::Pending;
        if waiting {
            pending.insert(approval.id);
        }
        if waiting || was_pending.contains(&approval.id) {
            approval.host = Some(host.clone());
            news.push(ServerMsg::ApprovalChanged { approval });
        }
    }
    let welcome = client.welcome().clone();
    tx.send_modify(|v| {
        v.sessions = sessions.into_iter().map(|s| (s.id.clone(), s)).collect();
        v.asks = asks.into_iter().map(|a| (a.id, a)).collect();
        v.approvals = pending;
        v.last_report = Some(v.last_report.unwrap_or(0).max(newest));
        v.link.state = LinkState::Connected;
        v.link.since = now_ms();
        v.link.error = None;
        v.link.core_version = Some(welcome.core_version);
        v.link.protocol = Some(welcome.protocol);
        v.link.connects += 1;
        v.recount();
    });
    for event in news {
        answers.event(event).await;
    }
    Ok(())
}

/// Mirror what the far core announces, pass forwarded requests on and their answers
/// back, and ping it, until the link drops; returns why.
async fn follow(client: &mut LinkClient, child: &mut Child, run: Run<'_>) -> String {
    let Run {
        tx,
        forwards,
        answers,
        to_far,
        herd,
        mail,
    } = run;
    let host = tx.borrow().link.name.clone();
    let origin = client.welcome().store_id.clone();
    let mut ping = tokio::time::interval(PING_EVERY);
    loop {
        tokio::select! {
            event = client.next_event() => match event {
                Ok(ServerMsg::HostMailed { mail }) => {
                    let (host, origin) = (host.clone(), origin.clone());
                    let mail = Box::new(mail);
                    answers.news(LinkNews::Mail { host, origin, mail }).await;
                    continue;
                }
                Ok(event) => {
                    if let Some(news) = mail.answered(&host, &event) {
                        if let Some(news) = news {
                            answers.news(news).await;
                        }
                        continue;
                    }
                    if !answers.answered(&host, &event).await {
                        let mut relayed = None;
                        tx.send_if_modified(|v| {
                            relayed = apply(v, event);
                            relayed.is_some()
                        });
                        if let Some(event) = relayed {
                            answers.event(event).await;
                        }
                    }
                    continue;
                }
                Err(e) => return format!("the far core's connection ended: {e}"),
            },
            forward = forwards.recv() => {
                let Some(forward) = forward else {
                    return "the core is stopping".to_string();
                };
                if let Some(msg) = answers.outgoing(&forward)
                    && let Err(e) = client.send(&msg).await
                {
                    return format!("the far core's connection ended: {e}");
                }
                continue;
            }
            what = to_far.recv() => {
                let msg = match what {
                    Some(ToFar::Mail(m)) => mail.outgoing(*m),
                    Some(ToFar::Ack(id)) => {
                        ClientMsg::HostMailAck(requests::HostMailAck { ids: vec![id] })
                    }
                    None => return "the core is stopping".to_string(),
                };
                if let Err(e) = client.send(&msg).await {
                    return format!("the far core's connection ended: {e}");
                }
                continue;
            }
            changed = herd.changed() => {
                if changed.is_err() {
                    return "the core is stopping".to_string();
                }
                let chief = herd.borrow_and_update().clone();
                if let Err(e) = client.call(requests::LinkHerd { id: 0, chief }).await {
                    return format!("the far core did not take the herd's Chief: {e}");
                }
                continue;
            }
            _ = ping.tick() => {
                let sent = Instant::now();
                if let Err(e) = client.call(requests::Ping::default()).await {
                    return format!("the far core did not answer a ping: {e}");
                }
                let rtt = sent.elapsed().as_micros() as u64;
                tx.send_modify(|v| v.link.rtt_us = Some(rtt));
                continue;
            }
            status = child.wait() => {
                return match status {
                    Ok(status) => format!("the link command exited ({status})"),
                    Err(e) => format!("the link command could not be waited for: {e}"),
                };
            }
        };
    }
}

/// One announcement into the mirror, and the event as the home core passes it on (its
/// host set), when it is one the mirror keeps.
fn apply(v: &mut HostView, mut event: ServerMsg) -> Option<ServerMsg> {
    let host = Some(v.link.name.clone());
    match &mut event {
        ServerMsg::SessionJoined { session } | ServerMsg::SessionChanged { session } => {
            session.host = host;
            v.sessions.insert(session.id.clone(), session.clone());
        }
        ServerMsg::SessionLeft { session, .. } => {
            session.host = host;
            v.sessions.remove(&session.id);
        }
        ServerMsg::AskOpened { ask } => {
            ask.host = host;
            v.asks.insert(ask.id, ask.clone());
        }
        ServerMsg::AskAnswered { ask } => {
            ask.host = host;
            v.asks.remove(&ask.id);
        }
        ServerMsg::ReportPosted { report } => {
            report.host = host;
            v.last_report = Some(v.last_report.unwrap_or(0).max(report.id));
        }
        ServerMsg::RoleChanged { session, .. } => {
            session.host = host;
            v.sessions.insert(session.id.clone(), session.clone());
        }
        // Said in the receiver's place, which session ids name across the herd.
        ServerMsg::EdgeMessaged { .. } => return Some(event),
        // Said in the owner's, worker's or project's place: passed on, marked.
        ServerMsg::WorkerChanged { worker } => {
            worker.host = host;
            return Some(event);
        }
        ServerMsg::ApprovalChanged { approval } => {
            approval.host = host;
            match approval.state {
                ApprovalState::Pending => v.approvals.insert(approval.id),
                _ => v.approvals.remove(&approval.id),
            };
            return Some(event);
        }
        ServerMsg::PairingEvent { pairing, .. } => {
            pairing.host = host;
            return Some(event);
        }
        ServerMsg::AssignmentChanged { assignment }
        | ServerMsg::AssignmentUpdated { assignment, .. } => {
            assignment.host = host;
            return Some(event);
        }
        _ => return None,
    }
    v.recount();
    Some(event)
}

/// `why`, with the command's last words when it wrote any (ssh says why it failed on
/// stderr), once the command is gone.
async fn failure(why: &str, mut child: Child, stderr: tokio::task::JoinHandle<String>) -> String {
    let _ = child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
    let said = match tokio::time::timeout(Duration::from_secs(2), stderr).await {
        Ok(Ok(text)) => text,
        _ => String::new(),
    };
    let said = said.trim();
    match said.is_empty() {
        true => why.to_string(),
        false => format!("{why}; the link command said: {said}"),
    }
}

/// The last [`STDERR_TAIL`] bytes the command writes to stderr, once it closes it.
async fn tail(mut stderr: tokio::process::ChildStderr) -> String {
    let mut kept: Vec<u8> = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        kept.extend_from_slice(&buf[..n]);
        if kept.len() > STDERR_TAIL {
            kept.drain(..kept.len() - STDERR_TAIL);
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}
