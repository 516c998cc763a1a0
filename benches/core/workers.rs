//! Sections 11 and 12: managed workers (issue 12), on the headless backend, with the fake
//! worker of `fake_worker.rs` as `[workers] pi` so that Pi's own start-up (about a second
//! of Node) is not what is measured.
//!
//! 11. Launch: one owner (a registered Pi session) delegates, one worker at a time; each
//!     worker registers at once, sends its result, and the owner acks it (the worker is
//!     then stopped and `done`) before the next delegation. Measured: `delegate_agent` →
//!     `worker_changed(working)` (seen by a subscriber) and → the `worker` reply; from
//!     the fake's stamps, how much of that was the fake's own start (main → register), so
//!     the core's launch overhead is the rest; and the core's CPU per whole delegation.
//! 12. State changes: rounds of N live workers, all `working` (launched first, not
//!     measured: the CPU of that phase is shown per launch), then told at once (the
//!     bench's go socket) to send their results; the owner acks each `agent_result` as it
//!     arrives. Measured over working → settling → done (2 transitions a worker, with the
//!     mail, the ack, the stop and the reap of the process): the core's CPU per
//!     transition (utime + stime from `/proc/<pid>/stat`) and the transitions a second.
//!
//! Correctness checks: every worker reaches each state once, each result arrives once with
//! the fake's stamps, and no worker is lost.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use shepherd_core::client::Client;
use shepherd_core::protocol::{
    ClientKind, ClientMsg, DeliveryKind, MessageId, ServerMsg, Worker, WorkerId, WorkerState,
    requests,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;

use crate::daemon::{CoreProc, cpu_ticks, ticks_to_ns};
use crate::fake_worker::{FAKE_ENV, GO_ENV, Stamps, wall_ns};
use crate::report::{Report, quantile, us};
use crate::{Settings, now_ns};

const OWNER: &str = "bench-owner-0000-7000-8000-000000000011";
/// A bundled definition: resolving it reads no files of the bench's.
const DEFINITION: &str = "implementer";
const WAIT: Duration = Duration::from_secs(30);

/// A core whose workers are fake, its owner session, and a subscriber's `worker_changed`
/// events stamped on arrival.
struct Rig {
    core: CoreProc,
    dir: tempfile::TempDir,
    owner: Client,
    events: mpsc::UnboundedReceiver<(u64, WorkerId, WorkerState)>,
    /// Arrival stamps of each worker's states, seen so far.
    seen: HashMap<WorkerId, Vec<(WorkerState, u64)>>,
    /// A worker going back a state, or into one it never should here.
    odd: Vec<String>,
    /// `worker_changed` events received.
    events_seen: u64,
}

/// The order of the states a fake worker goes through; `u8::MAX`: one it should not reach.
fn rank(state: WorkerState) -> u8 {
    match state {
        WorkerState::Starting => 0,
        WorkerState::Working => 1,
        WorkerState::Settling => 2,
        WorkerState::Done => 3,
        _ => u8::MAX,
    }
}

impl Rig {
    /// `go`: make the fakes wait on the bench's control socket in the rig's directory
    /// (see [`Rig::go_path`]) before their results.
    async fn start(go: bool) -> Result<Rig> {
        let dir = tempfile::Builder::new()
            .prefix("shpbw")
            .tempdir_in("/tmp")?;
        // The extension only has to exist: the fake loads nothing.
        let ext = dir.path().join("ext.ts");
        std::fs::write(&ext, "// the bench's fake workers load no extension\n")?;
        let exe = std::env::current_exe()?;
        let pi = serde_json::to_string(&[exe.to_string_lossy()])?;
        let go_path = Rig::go_path(dir.path());
        let mut env = vec![
            ("SHEPHERD_WORKERS__BACKEND", "headless"),
            ("SHEPHERD_WORKERS__PI", pi.as_str()),
            (
                "SHEPHERD_WORKERS__EXTENSION",
                ext.to_str().context("temp path")?,
            ),
            (FAKE_ENV, "1"),
            // Section 12 keeps 100 workers of one owner live at once: above the default
            // bounds (`workers.max_per_owner` 16, `workers.max_live` 64).
            ("SHEPHERD_WORKERS__MAX_PER_OWNER", "1000"),
            ("SHEPHERD_WORKERS__MAX_LIVE", "1000"),
        ];
        if go {
            env.push((GO_ENV, go_path.to_str().context("temp path")?));
        }
        let (core, _) = CoreProc::start_with(&env)?;
        let mut sub = Client::connect(&core.socket(), ClientKind::Cli, "bench-sub").await?;
        sub.subscribe().await?;
        let (tx, events) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok(msg) = sub.next_event().await {
                if let ServerMsg::WorkerChanged { worker } = msg
                    && tx.send((now_ns(), worker.id, worker.state)).is_err()
                {
                    break;
                }
            }
        });
        let mut owner = Client::connect(&core.socket(), ClientKind::Pi, "bench").await?;
        owner
            .register(crate::wire::registration(
                OWNER,
                "owner",
                &dir.path().to_string_lossy(),
            ))
            .await?;
        Ok(Rig {
            core,
            dir,
            owner,
            events,
            seen: HashMap::new(),
            odd: Vec::new(),
            events_seen: 0,
        })
    }

    fn go_path(dir: &Path) -> std::path::PathBuf {
        dir.join("go.sock")
    }

    /// Delegate one task; the worker the core answered with.
    async fn delegate(&mut self, n: usize) -> Result<Worker> {
        let worker = self
            .owner
            .call(requests::DelegateAgent {
                definition: DEFINITION.into(),
                task: format!("bench task {n}"),
                ..Default::default()
            })
            .await
            .with_context(|| format!("delegate_agent #{n}\n{}", self.log_tail()))?;
        Ok(worker)
    }

    /// When the subscriber saw `worker` enter `state` (waiting for it).
    async fn wait_state(&mut self, worker: WorkerId, state: WorkerState) -> Result<u64> {
        loop {
            if let Some(&(_, t)) = self
                .seen
                .get(&worker)
                .and_then(|v| v.iter().find(|(s, _)| *s == state))
            {
                return Ok(t);
            }
            let got = tokio::time::timeout(WAIT, self.events.recv()).await;
            let Ok(Some((t, id, s))) = got else {
                bail!(
                    "worker {worker} did not become {state} within {WAIT:?} (seen: {:?})\n{}",
                    self.seen.get(&worker),
                    self.log_tail()
                );
            };
            self.events_seen += 1;
            let states = self.seen.entry(id).or_default();
            let back = states.iter().any(|(x, _)| rank(*x) > rank(s));
            if back || rank(s) == u8::MAX {
                self.odd
                    .push(format!("worker {id} became {s} after {states:?}"));
            }
            states.push((s, t));
        }
    }

    /// The owner's next `agent_result` delivery: (message id, text, arrival).
    async fn next_result(&mut self) -> Result<(MessageId, String, u64)> {
        loop {
            let msg = tokio::time::timeout(WAIT, self.owner.next_event())
                .await
                .map_err(|_| {
                    anyhow::anyhow!("no agent_result within {WAIT:?}\n{}", self.log_tail())
                })??;
            if let ServerMsg::Deliver { message } = msg
                && message.kind == DeliveryKind::AgentResult
            {
                return Ok((message.id, message.text, now_ns()));
            }
        }
    }

    async fn ack(&mut self, id: MessageId) -> Result<()> {
        self.owner
            .send(&ClientMsg::Ack(requests::Ack { ids: vec![id] }))
            .await?;
        Ok(())
    }

    fn ticks(&self) -> Result<u64> {
        cpu_ticks(self.core.pid())
    }

    /// The core's last log lines and the fakes' stderr, for a failure's message.
    fn log_tail(&self) -> String {
        let log = self.core.log();
        let lines: Vec<&str> = log.lines().collect();
        let mut out = lines[lines.len().saturating_sub(20)..].join("\n");
        let workers = self.core.dir.path().join("shepherd/workers");
        if let Ok(dir) = std::fs::read_dir(workers) {
            for entry in dir.flatten() {
                let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                if !text.trim().is_empty() {
                    out.push_str(&format!("\n{}: {}", entry.path().display(), text.trim()));
                }
            }
        }
        out
    }
}

fn p50_p99(v: &mut [u64]) -> String {
    v.sort_unstable();
    format!("{} / {}", us(quantile(v, 0.5)), us(quantile(v, 0.99)))
}

/// Section 11.
pub async fn launch(s: &Settings, report: &mut Report) -> Result<()> {
    let (warmup, n) = if s.quick { (3, 20) } else { (20, 300) };
    eprintln!("[bench] 11. worker launch: {n} + {warmup} warm-up delegations, one at a time");
    let mut rig = Rig::start(false).await?;
    let (mut to_working, mut to_reply, mut to_main, mut own, mut overhead) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut refused, mut results) = (0u64, 0usize);
    let (mut ticks0, mut t_begin) = (rig.ticks()?, now_ns());
    for i in 0..warmup + n {
        if i == warmup {
            (ticks0, t_begin) = (rig.ticks()?, now_ns());
        }
        let wall0 = wall_ns();
        let t0 = now_ns();
        let worker = rig.delegate(i).await?;
        let t_reply = now_ns();
        let t_working = rig.wait_state(worker.id, WorkerState::Working).await?;
        let (msg, text, _) = rig.next_result().await?;
        rig.ack(msg).await?;
        rig.wait_state(worker.id, WorkerState::Done).await?;
        let Some(stamps) = Stamps::parse(&text) else {
            report.failures.push(format!(
                "11 workers: a result without the fake's stamps: {text:?}"
            ));
            continue;
        };
        results += 1;
        if i < warmup {
            continue;
        }
        let working = t_working - t0;
        let fake_start = stamps.register_ns.saturating_sub(stamps.main_ns);
        to_working.push(working);
        to_reply.push(t_reply - t0);
        to_main.push(stamps.main_ns.saturating_sub(wall0));
        own.push(fake_start);
        overhead.push(working.saturating_sub(fake_start));
        refused += u64::from(stamps.refused);
    }
    let (ticks1, t_end) = (rig.ticks()?, now_ns());
    let sec = "11 worker launch";
    report.info(
        sec,
        &format!("delegate → worker_changed(working) p50 / p99, n={n}"),
        p50_p99(&mut to_working),
    );
    report.info(
        sec,
        "delegate → `worker` reply p50 / p99",
        p50_p99(&mut to_reply),
    );
    report.info(
        sec,
        "  of which delegate → fake's main() (spawn + exec) p50 / p99",
        p50_p99(&mut to_main),
    );
    report.info(
        sec,
        "  the fake's own start (main → register) p50 / p99",
        p50_p99(&mut own),
    );
    report.info(
        sec,
        "core launch overhead (→ working − fake's own start) p50 / p99",
        p50_p99(&mut overhead),
    );
    report.info(
        sec,
        "core CPU per delegation (launch … done, reaped)",
        us((ticks_to_ns(ticks1 - ticks0) / n as f64) as u64),
    );
    report.info(
        sec,
        "delegations a second, one at a time",
        format!("{:.0} /s", n as f64 / ((t_end - t_begin) as f64 / 1e9)),
    );
    report.info(
        sec,
        "registrations refused (launched pid not yet recorded)",
        refused.to_string(),
    );
    report.check(
        sec,
        "results received once each",
        format!("{results} of {}", warmup + n),
        "all",
        results == warmup + n,
    );
    rig_checks(&mut rig, sec, report);
    Ok(())
}

/// Section 12.
pub async fn transitions(s: &Settings, report: &mut Report) -> Result<()> {
    let (per_round, rounds) = if s.quick { (10, 1) } else { (100, 5) };
    eprintln!(
        "[bench] 12. worker state changes: {rounds} round(s) of {per_round} live workers → result → ack → done"
    );
    let mut rig = Rig::start(true).await?;
    let listener = UnixListener::bind(Rig::go_path(rig.dir.path()))?;
    let (mut launch_ticks, mut change_ticks, mut change_ns) = (0u64, 0u64, 0u64);
    let mut per_result = Vec::new();
    let mut results = 0usize;
    let mut next = 0;
    for _ in 0..rounds {
        // Launch the round's workers and let each reach `working` and the go socket.
        let ticks_a = rig.ticks()?;
        let mut ids = Vec::with_capacity(per_round);
        for _ in 0..per_round {
            ids.push(rig.delegate(next).await?.id);
            next += 1;
        }
        for &id in &ids {
            rig.wait_state(id, WorkerState::Working).await?;
        }
        let mut gos: Vec<UnixStream> = Vec::with_capacity(per_round);
        while gos.len() < per_round {
            let (conn, _) = tokio::time::timeout(WAIT, listener.accept())
                .await
                .map_err(|_| {
                    anyhow::anyhow!(
                        "{} of {per_round} fakes reached the go socket\n{}",
                        gos.len(),
                        rig.log_tail()
                    )
                })??;
            gos.push(conn);
        }
        // Let the launches' last work (the fakes' acks of their tasks) settle.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let ticks_b = rig.ticks()?;
        launch_ticks += ticks_b - ticks_a;
        // Measured: every worker sends its result; the owner acks each as it arrives.
        let t_go = now_ns();
        for go in &mut gos {
            go.write_all(&[1]).await?;
        }
        for _ in 0..per_round {
            let (msg, text, t) = rig.next_result().await?;
            rig.ack(msg).await?;
            per_result.push(t - t_go);
            if Stamps::parse(&text).is_some() {
                results += 1;
            } else {
                report.failures.push(format!(
                    "12 workers: a result without the fake's stamps: {text:?}"
                ));
            }
        }
        let mut t_done = t_go;
        for &id in &ids {
            rig.wait_state(id, WorkerState::Settling).await?;
            t_done = t_done.max(rig.wait_state(id, WorkerState::Done).await?);
        }
        // Each fake's go connection ends with its process: then the core has stopped it.
        for go in &mut gos {
            let mut rest = Vec::new();
            tokio::time::timeout(WAIT, go.read_to_end(&mut rest))
                .await
                .context("a fake worker did not exit after its stop")??;
        }
        // The core reaps the exits and hears of them (a no-op for a done worker).
        tokio::time::sleep(Duration::from_millis(50)).await;
        change_ticks += rig.ticks()? - ticks_b;
        change_ns += t_done - t_go;
    }
    let workers = per_round * rounds;
    let changes = 2 * workers;
    let sec = "12 worker state changes";
    report.info(
        sec,
        "workers (live at once × rounds)",
        format!("{workers} ({per_round} × {rounds})"),
    );
    report.info(
        sec,
        "core CPU per transition (working → settling → done)",
        us((ticks_to_ns(change_ticks) / changes as f64) as u64),
    );
    report.info(
        sec,
        "transitions a second (go → last done)",
        format!("{:.0} /s", changes as f64 / (change_ns as f64 / 1e9)),
    );
    report.info(
        sec,
        &format!("go → owner has the result p50 / p99 ({per_round} at once)"),
        p50_p99(&mut per_result),
    );
    report.info(
        sec,
        "core CPU per launch (delegate → working; not in the above)",
        us((ticks_to_ns(launch_ticks) / workers as f64) as u64),
    );
    report.check(
        sec,
        "results received once each",
        format!("{results} of {workers}"),
        "all",
        results == workers,
    );
    rig_checks(&mut rig, sec, report);
    Ok(())
}

fn rig_checks(rig: &mut Rig, sec: &str, report: &mut Report) {
    while let Ok((_, id, state)) = rig.events.try_recv() {
        rig.events_seen += 1;
        rig.seen.entry(id).or_default().push((state, 0));
    }
    report.info(
        sec,
        "worker_changed events per worker (to one subscriber)",
        format!(
            "{:.1}",
            rig.events_seen as f64 / rig.seen.len().max(1) as f64
        ),
    );
    report.check(
        sec,
        "workers going back a state, lost or blocked",
        rig.odd.len().to_string(),
        "0",
        rig.odd.is_empty(),
    );
    for odd in rig.odd.iter().take(5) {
        report.notes.push(format!("{sec}: {odd}"));
    }
    for w in rig.core.warnings() {
        report.notes.push(format!("core log ({sec}): {w}"));
    }
}
