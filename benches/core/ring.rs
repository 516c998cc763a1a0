//! Rings of sessions sending to a peer, shared by the throughput, paced and CPU/RSS
//! measures: each connection has a writer task (sends by window or by rate, and acks) and
//! a reader task (counts `sent` and deliveries, checks order, records send → deliver
//! latency), and sampled `sent` ids are checked against the database as they arrive.
//! The sends are the hand-encoded frames of [`crate::wire`], pipelined on the raw socket:
//! that pipelining is what these measures measure.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use tokio::io::AsyncWriteExt;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::{Notify, Semaphore, watch};

use crate::daemon::{CoreProc, cpu_ticks, rss_kb};
use crate::now_ns;
use crate::wire::{FrameReader, In, connect, parse, push_ack, push_send, push_steer, stamp};

/// One `sent` in this many is checked against the database right when it arrives.
pub const DURABILITY_SAMPLE: u64 = 500;

/// One connection of a ring.
pub struct Endpoint {
    pub rd: FrameReader,
    pub wr: OwnedWriteHalf,
    /// Whom this endpoint sends to (index into the ring).
    pub target: Option<usize>,
    /// A CLI connection: it steers (`send`) instead of `message_peer`.
    pub steer: bool,
}

/// Connected endpoints. With n ≥ 2 Pi sessions, session i sends to session i+1 (mod n).
/// With one session, which cannot message itself, a CLI connection steers it.
pub struct Ring {
    pub ids: Vec<String>,
    pub eps: Vec<Option<Endpoint>>,
}

impl Ring {
    pub async fn connect(socket: &Path, prefix: &str, n: usize) -> Result<Ring> {
        let mut ids = Vec::new();
        let mut eps = Vec::new();
        for i in 0..n {
            let id = format!("{prefix}-{i:03}");
            let (rd, wr) = connect(socket, Some(&id)).await?;
            let target = (n > 1).then_some((i + 1) % n);
            ids.push(id);
            eps.push(Some(Endpoint {
                rd,
                wr,
                target,
                steer: false,
            }));
        }
        if n == 1 {
            let (rd, wr) = connect(socket, None).await?;
            ids.push(format!("{prefix}-cli"));
            eps.push(Some(Endpoint {
                rd,
                wr,
                target: Some(0),
                steer: true,
            }));
        }
        Ok(Ring { ids, eps })
    }

    pub fn senders(&self) -> usize {
        self.eps
            .iter()
            .flatten()
            .filter(|e| e.target.is_some())
            .count()
    }
}

#[derive(Clone, Copy)]
pub enum Pace {
    /// At most this many sends awaiting `sent` per sender, as fast as that allows.
    Window(usize),
    /// This many sends a second per sender, spread evenly over senders.
    Rate(f64),
}

#[derive(Clone, Copy)]
pub enum Stop {
    /// This many sends in all.
    Count(u64),
    /// Warm up, then measure the delivery rate for a while; then stop sending.
    Timed { warmup: Duration, measure: Duration },
    /// This many sends per sender.
    PerSender(u64),
}

/// Counters shared by the tasks of one run.
#[derive(Default)]
pub struct Shared {
    pub reserved: AtomicU64,
    pub issued: AtomicU64,
    pub sent_ok: AtomicU64,
    pub delivered: AtomicU64,
    pub active_senders: AtomicUsize,
    pub order_errors: AtomicU64,
    pub cut_off: AtomicU64,
    pub closing: AtomicBool,
    pub errors: Mutex<Vec<String>>,
}

/// Per endpoint: its send window, and the delivery ids its writer should acknowledge.
pub struct EpShared {
    pub window: Semaphore,
    pub acks: Mutex<Vec<u64>>,
    pub ack_ready: Notify,
    pub issued: AtomicU64,
    pub delivered: AtomicU64,
}

/// What a run measured.
pub struct RunOut {
    pub issued: u64,
    pub sent_ok: u64,
    pub delivered: u64,
    /// Per receiver: delivered == what its sender issued.
    pub pairs_exact: bool,
    pub order_errors: u64,
    pub cut_off: u64,
    pub errors: Vec<String>,
    /// Send → deliver, ns, sorted.
    pub latencies: Vec<u64>,
    /// Deliveries per second in the measured part of a timed run.
    pub measured_rate: Option<f64>,
    pub elapsed: Duration,
    pub core_ticks: u64,
    pub bench_ticks: u64,
    pub rss_end_kb: u64,
    pub durable_checked: u64,
    pub durable_missing: u64,
}

impl RunOut {
    pub fn clean(&self) -> bool {
        self.issued == self.sent_ok
            && self.issued == self.delivered
            && self.pairs_exact
            && self.order_errors == 0
            && self.cut_off == 0
            && self.errors.is_empty()
            && self.durable_missing == 0
    }

    pub fn describe(&self) -> String {
        format!(
            "sent {} / `sent` {} / delivered {}; reordered {}; cut off {}; errors {:?}; durable-missing {}",
            self.issued,
            self.sent_ok,
            self.delivered,
            self.order_errors,
            self.cut_off,
            self.errors,
            self.durable_missing
        )
    }
}

/// Checks sampled message ids against the database from a thread of its own: each id's
/// `sent` has just arrived, so the row must already be committed.
pub fn durability_checker(
    db: PathBuf,
) -> (
    std::sync::mpsc::Sender<u64>,
    std::thread::JoinHandle<(u64, u64)>,
) {
    let (tx, rx) = std::sync::mpsc::channel::<u64>();
    let handle = std::thread::spawn(move || {
        let conn = rusqlite::Connection::open_with_flags(
            &db,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        );
        let Ok(conn) = conn else {
            return (0, u64::MAX);
        };
        let (mut checked, mut missing) = (0, 0);
        for id in rx {
            let found: rusqlite::Result<i64> = conn.query_row(
                "SELECT COUNT(*) FROM messages WHERE id = ?1",
                [id as i64],
                |r| r.get(0),
            );
            checked += 1;
            if found.unwrap_or(0) != 1 {
                missing += 1;
            }
        }
        (checked, missing)
    });
    (tx, handle)
}

pub async fn run_ring(ring: &mut Ring, pace: Pace, stop: Stop, core: &CoreProc) -> Result<RunOut> {
    let n = ring.eps.len();
    let sh = Arc::new(Shared::default());
    let window = match pace {
        Pace::Window(w) => w,
        Pace::Rate(_) => 0,
    };
    let eps_sh: Vec<Arc<EpShared>> = (0..n)
        .map(|_| {
            Arc::new(EpShared {
                window: Semaphore::new(window),
                acks: Mutex::new(Vec::new()),
                ack_ready: Notify::new(),
                issued: AtomicU64::new(0),
                delivered: AtomicU64::new(0),
            })
        })
        .collect();
    let senders = ring.senders();
    sh.active_senders.store(senders, Ordering::SeqCst);
    let (done_tx, done_rx) = watch::channel(false);
    let (durable_tx, durable_thread) = durability_checker(core.db());
    let deadline = match stop {
        Stop::Timed { warmup, measure } => Some(Instant::now() + warmup + measure),
        _ => None,
    };
    let start = tokio::time::Instant::now() + Duration::from_millis(5);
    let core_t0 = cpu_ticks(core.pid())?;
    let bench_t0 = cpu_ticks(std::process::id())?;
    let t0 = Instant::now();
    let mut writers = Vec::new();
    let mut readers = Vec::new();
    let mut sender_index = 0;
    for (i, ep_sh) in eps_sh.iter().enumerate() {
        let ep = ring.eps[i].take().expect("endpoint present");
        let target = ep.target.map(|t| ring.ids[t].clone());
        let offset = match pace {
            Pace::Rate(r) => {
                Duration::from_secs_f64(sender_index as f64 / senders.max(1) as f64 / r)
            }
            Pace::Window(_) => Duration::ZERO,
        };
        if target.is_some() {
            sender_index += 1;
        }
        let w = WriterTask {
            wr: ep.wr,
            target,
            steer: ep.steer,
            pace,
            stop,
            deadline,
            start: start + offset,
            sh: sh.clone(),
            ep: ep_sh.clone(),
            done: done_rx.clone(),
        };
        writers.push((ep.target, ep.steer, tokio::spawn(w.run())));
        let r = ReaderTask {
            rd: ep.rd,
            sh: sh.clone(),
            ep: ep_sh.clone(),
            windowed: window > 0,
            durable: durable_tx.clone(),
            done: done_rx.clone(),
        };
        readers.push(tokio::spawn(r.run()));
    }
    drop(durable_tx);

    let mut measured_rate = None;
    if let Stop::Timed { warmup, measure } = stop {
        tokio::time::sleep(warmup).await;
        let (d0, t_a) = (sh.delivered.load(Ordering::SeqCst), Instant::now());
        tokio::time::sleep(measure).await;
        let (d1, t_b) = (sh.delivered.load(Ordering::SeqCst), Instant::now());
        measured_rate = Some((d1 - d0) as f64 / (t_b - t_a).as_secs_f64());
    }
    // Drain: every sender stopped, every send answered and delivered.
    let mut drained_at = None;
    loop {
        let stopped = sh.active_senders.load(Ordering::SeqCst) == 0;
        let issued = sh.issued.load(Ordering::SeqCst);
        if stopped
            && sh.sent_ok.load(Ordering::SeqCst) == issued
            && sh.delivered.load(Ordering::SeqCst) == issued
        {
            break;
        }
        if stopped && drained_at.is_none() {
            drained_at = Some(Instant::now());
        }
        if drained_at.is_some_and(|t| t.elapsed() > Duration::from_secs(10))
            || t0.elapsed() > Duration::from_secs(600)
        {
            sh.errors
                .lock()
                .expect("errors")
                .push("timed out waiting for the last deliveries".into());
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let elapsed = t0.elapsed();
    let core_ticks = cpu_ticks(core.pid())? - core_t0;
    let bench_ticks = cpu_ticks(std::process::id())? - bench_t0;
    let rss_end_kb = rss_kb(core.pid())?;
    sh.closing.store(true, Ordering::SeqCst);
    let _ = done_tx.send(true);

    let mut latencies = Vec::new();
    let mut rds = Vec::new();
    for r in readers {
        let (rd, lat) = r.await??;
        latencies.extend(lat);
        rds.push(rd);
    }
    let mut pairs_exact = true;
    for (i, (target, steer, w)) in writers.into_iter().enumerate() {
        let wr = w.await??;
        let rd = rds.remove(0);
        if let Some(t) = target
            && eps_sh[i].issued.load(Ordering::SeqCst) != eps_sh[t].delivered.load(Ordering::SeqCst)
        {
            pairs_exact = false;
        }
        ring.eps[i] = Some(Endpoint {
            rd,
            wr,
            target,
            steer,
        });
    }
    let (durable_checked, durable_missing) = durable_thread.join().expect("checker thread");
    latencies.sort_unstable();
    let errors = std::mem::take(&mut *sh.errors.lock().expect("errors"));
    Ok(RunOut {
        issued: sh.issued.load(Ordering::SeqCst),
        sent_ok: sh.sent_ok.load(Ordering::SeqCst),
        delivered: sh.delivered.load(Ordering::SeqCst),
        pairs_exact,
        order_errors: sh.order_errors.load(Ordering::SeqCst),
        cut_off: sh.cut_off.load(Ordering::SeqCst),
        errors,
        latencies,
        measured_rate,
        elapsed,
        core_ticks,
        bench_ticks,
        rss_end_kb,
        durable_checked,
        durable_missing,
    })
}

pub struct WriterTask {
    pub wr: OwnedWriteHalf,
    pub target: Option<String>,
    pub steer: bool,
    pub pace: Pace,
    pub stop: Stop,
    pub deadline: Option<Instant>,
    pub start: tokio::time::Instant,
    pub sh: Arc<Shared>,
    pub ep: Arc<EpShared>,
    pub done: watch::Receiver<bool>,
}

impl WriterTask {
    /// May this sender issue its message number `seq`?
    pub fn reserve(&self, seq: u64) -> bool {
        match self.stop {
            Stop::Count(total) => self.sh.reserved.fetch_add(1, Ordering::SeqCst) < total,
            Stop::Timed { .. } => self.deadline.is_none_or(|d| Instant::now() < d),
            Stop::PerSender(k) => seq < k,
        }
    }

    /// Send according to the pace and acknowledge deliveries until told to stop.
    pub async fn run(mut self) -> Result<OwnedWriteHalf> {
        let mut buf = Vec::with_capacity(64 * 1024);
        let mut sending = self.target.is_some();
        let mut seq = 0u64;
        let mut credit = 0usize;
        let mut ticker = match self.pace {
            Pace::Rate(r) => {
                let mut t = tokio::time::interval_at(self.start, Duration::from_secs_f64(1.0 / r));
                t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
                Some(t)
            }
            Pace::Window(_) => None,
        };
        let target = self.target.clone().unwrap_or_default();
        let mut acks = Vec::new();
        loop {
            buf.clear();
            std::mem::swap(&mut acks, &mut *self.ep.acks.lock().expect("acks"));
            if !acks.is_empty() {
                push_ack(&mut buf, &acks);
                acks.clear();
            }
            if sending {
                if let Pace::Window(_) = self.pace {
                    while credit < 64 {
                        match self.ep.window.try_acquire() {
                            Ok(permit) => {
                                permit.forget();
                                credit += 1;
                            }
                            Err(_) => break,
                        }
                    }
                }
                let t = now_ns();
                while credit > 0 {
                    if !self.reserve(seq) {
                        sending = false;
                        self.sh.active_senders.fetch_sub(1, Ordering::SeqCst);
                        break;
                    }
                    credit -= 1;
                    if self.steer {
                        push_steer(&mut buf, seq, &target, seq, t);
                    } else {
                        push_send(&mut buf, seq, &target, seq, t);
                    }
                    seq += 1;
                    self.ep.issued.fetch_add(1, Ordering::SeqCst);
                    self.sh.issued.fetch_add(1, Ordering::SeqCst);
                }
            }
            if !buf.is_empty() {
                self.wr.write_all(&buf).await?;
            }
            if *self.done.borrow() {
                return Ok(self.wr);
            }
            let windowed = matches!(self.pace, Pace::Window(_));
            tokio::select! {
                biased;
                changed = self.done.changed() => {
                    if changed.is_err() || *self.done.borrow() {
                        return Ok(self.wr);
                    }
                }
                _ = self.ep.ack_ready.notified() => {}
                permit = self.ep.window.acquire(), if sending && windowed => {
                    permit.expect("window semaphore stays open").forget();
                    credit += 1;
                }
                _ = async { ticker.as_mut().expect("paced").tick().await }, if sending && !windowed => {
                    credit += 1;
                }
            }
        }
    }
}

pub struct ReaderTask {
    pub rd: FrameReader,
    pub sh: Arc<Shared>,
    pub ep: Arc<EpShared>,
    pub windowed: bool,
    pub durable: std::sync::mpsc::Sender<u64>,
    pub done: watch::Receiver<bool>,
}

impl ReaderTask {
    /// Count responses and deliveries (checking order), record latencies, queue acks.
    pub async fn run(mut self) -> Result<(FrameReader, Vec<u64>)> {
        let mut lat = Vec::new();
        let mut next_seq = 0u64;
        loop {
            let body = tokio::select! {
                biased;
                _ = self.done.changed() => return Ok((self.rd, lat)),
                body = self.rd.next() => body?,
            };
            let Some(body) = body else {
                if !self.sh.closing.load(Ordering::SeqCst) {
                    self.sh.cut_off.fetch_add(1, Ordering::SeqCst);
                    self.sh
                        .errors
                        .lock()
                        .expect("errors")
                        .push("the core closed a connection".into());
                }
                // Keep the task until the run ends so the reader can be returned.
                let _ = self.done.changed().await;
                return Ok((self.rd, lat));
            };
            match parse(body)? {
                In::Deliver { id, text } => {
                    let (seq, t) = stamp(&text);
                    lat.push(now_ns().saturating_sub(t));
                    if seq != next_seq {
                        self.sh.order_errors.fetch_add(1, Ordering::SeqCst);
                    }
                    next_seq = seq + 1;
                    self.ep.acks.lock().expect("acks").push(id);
                    self.ep.ack_ready.notify_one();
                    self.ep.delivered.fetch_add(1, Ordering::SeqCst);
                    self.sh.delivered.fetch_add(1, Ordering::SeqCst);
                }
                In::Sent { message_id } => {
                    if message_id % DURABILITY_SAMPLE == 0 {
                        let _ = self.durable.send(message_id);
                    }
                    if self.windowed {
                        self.ep.window.add_permits(1);
                    }
                    self.sh.sent_ok.fetch_add(1, Ordering::SeqCst);
                }
                In::Error { code, message } => {
                    if code == "slow_consumer" || code == "replaced" || code == "shutting_down" {
                        self.sh.cut_off.fetch_add(1, Ordering::SeqCst);
                    }
                    self.sh
                        .errors
                        .lock()
                        .expect("errors")
                        .push(format!("{code}: {message}"));
                }
                In::Peer { .. } | In::Pong | In::Other => {}
            }
        }
    }
}
