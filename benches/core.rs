//! # The core benchmark (`cargo bench --bench core`)
//!
//! Starts the real release `shepherd up` on fresh temporary agent directories and measures
//! it over its real socket, as issue 2 asks:
//!
//! 1. round-trip latency of a message A → core → B → core → A, next to the same client
//!    code through a plain Unix-socket frame relay (the floor);
//! 2. throughput with 1, 10 and 100 connected sessions, each with a bounded window of
//!    outstanding sends;
//! 3. the paced test: 100 sessions × 119 messages a second for 10 s, counted exactly;
//! 4. the core's CPU per routed message, early and after history has grown;
//! 5. its RSS idle, with 100 sessions, after 10k messages;
//! 6. time from spawning `shepherd up` to the first `welcome`.
//!
//! It prints a table with each target next to the measured number. `--quick` (or
//! `SHEPHERD_BENCH_QUICK=1`, or running it without cargo bench's `--bench` flag, as
//! `cargo test --benches` does) is a smoke run of a few seconds. The exit code is non-zero
//! only when a correctness check fails (a message lost, duplicated or reordered, a session
//! cut off, an error frame); performance misses fail only with `SHEPHERD_BENCH_STRICT=1`.
//!
//! For profiling: `SHEPHERD_BENCH_ONLY=1,3` runs only those sections (the core's pid is
//! printed on stderr, ready for `perf record -p`), `SHEPHERD_BENCH_HISTORY=1000000` grows
//! the history further before the late CPU sample, `SHEPHERD_BIN` picks another binary.
//!
//! The clients are a lean async client written here (hand-encoded frames, a prefix
//! dispatch before typed decoding) on a two-worker tokio runtime, so that the bench spends
//! as little of the machine's CPU as it can; on a small machine the core and the clients
//! still share the same cores, which the report says.

use std::borrow::Cow;
use std::io::{BufRead as _, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{Notify, Semaphore, watch};

/// Set in the environment of the bench's own child process that runs the relay.
const RELAY_ENV: &str = "SHEPHERD_BENCH_RELAY";
/// `/proc/<pid>/stat` reports CPU time in USER_HZ, which Linux fixes at 100.
const USER_HZ: f64 = 100.0;
/// The text of every message after its sequence number and timestamp: a typical steer.
const PAD: &str = "run the full test suite before you push, then report what failed";
/// One `sent` in this many is checked against the database right when it arrives.
const DURABILITY_SAMPLE: u64 = 500;

fn now_ns() -> u64 {
    static T0: OnceLock<Instant> = OnceLock::new();
    T0.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

// ---------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------

struct Settings {
    quick: bool,
    startups: usize,
    rtt_warmup: usize,
    rtt_samples: usize,
    tp_warmup: Duration,
    tp_measure: Duration,
    window: usize,
    paced_rate: f64,
    paced_secs: f64,
    cpu_window: u64,
    history: u64,
}

impl Settings {
    fn new(quick: bool) -> Settings {
        if quick {
            Settings {
                quick,
                startups: 3,
                rtt_warmup: 300,
                rtt_samples: 2_000,
                tp_warmup: Duration::from_millis(150),
                tp_measure: Duration::from_millis(400),
                window: 32,
                paced_rate: 119.0,
                paced_secs: 1.5,
                cpu_window: 10_000,
                history: 30_000,
            }
        } else {
            Settings {
                quick,
                startups: 9,
                rtt_warmup: 2_000,
                rtt_samples: 20_000,
                tp_warmup: Duration::from_millis(500),
                tp_measure: Duration::from_secs(3),
                window: 32,
                paced_rate: 119.0,
                paced_secs: 10.0,
                cpu_window: 30_000,
                history: 200_000,
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The report
// ---------------------------------------------------------------------------------------

struct Row {
    section: String,
    metric: String,
    value: String,
    target: String,
    /// `Some(true)` PASS, `Some(false)` MISS, `None` for information.
    pass: Option<bool>,
}

#[derive(Default)]
struct Report {
    rows: Vec<Row>,
    /// Correctness failures: lost, duplicated or reordered messages, sessions cut off.
    failures: Vec<String>,
    notes: Vec<String>,
}

impl Report {
    fn info(&mut self, section: &str, metric: &str, value: String) {
        self.row(section, metric, value, String::new(), None);
    }

    fn row(
        &mut self,
        section: &str,
        metric: &str,
        value: String,
        target: String,
        pass: Option<bool>,
    ) {
        self.rows.push(Row {
            section: section.into(),
            metric: metric.into(),
            value,
            target,
            pass,
        });
    }

    /// A correctness check: shown as a row, and a failure when it does not hold.
    fn check(&mut self, section: &str, metric: &str, value: String, target: &str, ok: bool) {
        if !ok {
            self.failures
                .push(format!("{section}: {metric}: {value} (want {target})"));
        }
        self.row(section, metric, value, target.into(), Some(ok));
    }

    fn print(&self) {
        let w_sec = self.rows.iter().map(|r| r.section.len()).max().unwrap_or(0);
        let w_met = self.rows.iter().map(|r| r.metric.len()).max().unwrap_or(0);
        let w_val = self.rows.iter().map(|r| r.value.len()).max().unwrap_or(0);
        let w_tgt = self.rows.iter().map(|r| r.target.len()).max().unwrap_or(0);
        let line = "-".repeat(w_sec + w_met + w_val + w_tgt + 16);
        println!("{line}");
        println!(
            "{:w_sec$}  {:w_met$}  {:>w_val$}  {:w_tgt$}  verdict",
            "section", "measurement", "measured", "target"
        );
        println!("{line}");
        let mut last = "";
        for r in &self.rows {
            let section = if r.section == last { "" } else { &r.section };
            last = &r.section;
            let verdict = match r.pass {
                Some(true) => "PASS",
                Some(false) => "MISS",
                None => "",
            };
            println!(
                "{section:w_sec$}  {:w_met$}  {:>w_val$}  {:w_tgt$}  {verdict}",
                r.metric, r.value, r.target
            );
        }
        println!("{line}");
        for note in &self.notes {
            println!("note: {note}");
        }
        let misses = self.rows.iter().filter(|r| r.pass == Some(false)).count();
        let passes = self.rows.iter().filter(|r| r.pass == Some(true)).count();
        println!(
            "{passes} PASS, {misses} MISS; correctness failures: {}",
            self.failures.len()
        );
        for f in &self.failures {
            println!("FAILED: {f}");
        }
    }
}

fn us(ns: u64) -> String {
    format!("{:.1} µs", ns as f64 / 1e3)
}

fn ms(ns: u64) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}

fn rate(per_s: f64) -> String {
    format!("{per_s:.0} msg/s")
}

/// The `q` quantile of sorted nanoseconds (nearest rank).
fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

// ---------------------------------------------------------------------------------------
// The daemon under test, and what /proc says about a process
// ---------------------------------------------------------------------------------------

fn shepherd_bin() -> PathBuf {
    std::env::var_os("SHEPHERD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_shepherd")))
}

/// A `shepherd up` on its own temporary agent directory, killed on drop.
struct CoreProc {
    dir: tempfile::TempDir,
    child: Child,
}

impl CoreProc {
    /// Spawn the daemon and wait for its first `welcome`; also returns how long that took
    /// from just before the spawn.
    fn start() -> Result<(CoreProc, Duration)> {
        let dir = tempfile::Builder::new().prefix("shpb").tempdir_in("/tmp")?;
        let log = std::fs::File::create(dir.path().join("core.log"))?;
        let begin = Instant::now();
        let child = Command::new(shepherd_bin())
            .arg("up")
            .env("PI_CODING_AGENT_DIR", dir.path())
            .env("RUST_LOG", "info")
            .env_remove("SHEPHERD_SOCKET")
            .env_remove("SHEPHERD_CONFIG")
            .env_remove("SHEPHERD_STATE_DIR")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("spawning {} up", shepherd_bin().display()))?;
        let mut core = CoreProc { dir, child };
        let socket = core.socket();
        let deadline = begin + Duration::from_secs(15);
        loop {
            if let Some(status) = core.child.try_wait()? {
                bail!(
                    "shepherd up exited ({status}) before accepting:\n{}",
                    core.log()
                );
            }
            if let Ok(stream) = std::os::unix::net::UnixStream::connect(&socket)
                && blocking_hello(stream).is_ok()
            {
                let took = begin.elapsed();
                eprintln!(
                    "[bench]   core pid {} on {}",
                    core.pid(),
                    core.dir.path().display()
                );
                return Ok((core, took));
            }
            if Instant::now() > deadline {
                bail!("shepherd up did not accept within 15 s:\n{}", core.log());
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("shepherd/shepherd.sock")
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("shepherd/shepherd.db")
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("core.log")).unwrap_or_default()
    }

    /// Lines the core logged at WARN or ERROR.
    fn warnings(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
            .map(str::to_string)
            .collect()
    }
}

impl Drop for CoreProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Say hello on a blocking socket and wait for `welcome`.
fn blocking_hello(mut stream: std::os::unix::net::UnixStream) -> Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut buf = Vec::new();
    push_frame(&mut buf, |b| {
        b.extend_from_slice(
            br#"{"type":"hello","id":1,"protocol":1,"client":"cli","client_name":"bench"}"#,
        )
    });
    stream.write_all(&buf)?;
    let mut header = [0u8; 4];
    stream.read_exact(&mut header)?;
    let mut body = vec![0u8; u32::from_be_bytes(header) as usize];
    stream.read_exact(&mut body)?;
    if !body.starts_with(br#"{"type":"welcome""#) {
        bail!("expected welcome, got {}", String::from_utf8_lossy(&body));
    }
    Ok(())
}

fn rss_kb(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .context("no VmRSS")?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .context("VmRSS value")?
        .parse()?)
}

/// utime + stime of a process (all its threads, live and exited), in USER_HZ ticks.
fn cpu_ticks(pid: u32) -> Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after_comm = &stat[stat.rfind(')').context("stat format")? + 2..];
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    // Field 3 (state) is index 0 here; utime is field 14, stime field 15.
    Ok(fields[11].parse::<u64>()? + fields[12].parse::<u64>()?)
}

fn ticks_to_ns(ticks: u64) -> f64 {
    ticks as f64 / USER_HZ * 1e9
}

// ---------------------------------------------------------------------------------------
// The relay: the floor. Its own process, like the core, forwarding length-prefixed frames
// between the two connections of each pair without parsing them.
// ---------------------------------------------------------------------------------------

fn relay_main(socket: PathBuf) -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("relay runtime");
    let result: Result<()> = runtime.block_on(async move {
        let listener = tokio::net::UnixListener::bind(&socket)?;
        println!("ready");
        std::io::stdout().flush()?;
        loop {
            let (a, _) = listener.accept().await?;
            let (b, _) = listener.accept().await?;
            let (ar, aw) = a.into_split();
            let (br, bw) = b.into_split();
            tokio::spawn(pump(ar, bw));
            tokio::spawn(pump(br, aw));
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("relay: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Forward every complete frame read from `r` to `w`, all that are buffered in one write.
async fn pump(mut r: OwnedReadHalf, mut w: OwnedWriteHalf) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    loop {
        let mut end = 0;
        while end + 4 <= buf.len() {
            let len = u32::from_be_bytes(buf[end..end + 4].try_into().expect("4 bytes")) as usize;
            if end + 4 + len > buf.len() {
                break;
            }
            end += 4 + len;
        }
        if end > 0 {
            w.write_all(&buf[..end]).await?;
            buf.drain(..end);
            continue;
        }
        if r.read_buf(&mut buf).await? == 0 {
            return Ok(());
        }
    }
}

/// The relay child process, killed on drop.
struct Relay {
    child: Child,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Relay {
    fn start() -> Result<Relay> {
        let dir = tempfile::Builder::new().prefix("shpr").tempdir_in("/tmp")?;
        let socket = dir.path().join("relay.sock");
        let mut child = Command::new(std::env::current_exe()?)
            .env(RELAY_ENV, &socket)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .context("spawning the relay")?;
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().context("relay stdout")?)
            .read_line(&mut line)?;
        if line.trim() != "ready" {
            bail!("relay did not start: {line:?}");
        }
        Ok(Relay {
            child,
            socket,
            _dir: dir,
        })
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------
// A lean intercom client
// ---------------------------------------------------------------------------------------

/// Append one frame whose body `body` writes.
fn push_frame(buf: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>)) {
    let start = buf.len();
    buf.extend_from_slice(&[0; 4]);
    body(buf);
    let len = (buf.len() - start - 4) as u32;
    buf[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

/// A `send` whose text carries the sender's sequence number and a timestamp.
fn push_send(buf: &mut Vec<u8>, id: u64, to: &str, seq: u64, t_ns: u64) {
    push_frame(buf, |b| {
        let _ = write!(
            b,
            r#"{{"type":"send","id":{id},"to":"{to}","text":"{seq} {t_ns} {PAD}"}}"#
        );
    });
}

fn push_ack(buf: &mut Vec<u8>, ids: &[u64]) {
    push_frame(buf, |b| {
        b.extend_from_slice(br#"{"type":"ack","ids":["#);
        for (i, id) in ids.iter().enumerate() {
            if i > 0 {
                b.push(b',');
            }
            let _ = write!(b, "{id}");
        }
        b.extend_from_slice(b"]}");
    });
}

fn push_json(buf: &mut Vec<u8>, value: &serde_json::Value) {
    push_frame(buf, |b| {
        serde_json::to_writer(b, value).expect("JSON values serialize");
    });
}

/// (sequence number, send timestamp) from a bench message's text.
fn stamp(text: &str) -> (u64, u64) {
    let mut parts = text.split(' ');
    let seq = parts
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(u64::MAX);
    let t = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    (seq, t)
}

#[derive(Deserialize)]
struct DeliverFrame<'a> {
    #[serde(borrow)]
    message: DeliverMsg<'a>,
}

#[derive(Deserialize)]
struct DeliverMsg<'a> {
    id: u64,
    #[serde(borrow)]
    text: Cow<'a, str>,
}

#[derive(Deserialize)]
struct SentFrame {
    message_id: u64,
}

/// A `send` as the peer sees it through the relay.
#[derive(Deserialize)]
struct PeerFrame<'a> {
    #[serde(borrow)]
    text: Cow<'a, str>,
}

#[derive(Deserialize)]
struct AnyFrame {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<serde_json::Value>,
}

/// What the bench cares about in an incoming frame.
enum In<'a> {
    Deliver {
        id: u64,
        text: Cow<'a, str>,
    },
    Sent {
        message_id: u64,
    },
    /// A `send` frame forwarded by the relay.
    Peer {
        text: Cow<'a, str>,
    },
    Pong,
    Error {
        code: String,
        message: String,
    },
    Other,
}

/// Decode a frame body: the core writes `type` first, so a prefix picks the typed decoder;
/// anything else goes through a generic one.
fn parse(body: &[u8]) -> Result<In<'_>> {
    let kind: Cow<'_, str> = if body.starts_with(br#"{"type":"deliver""#) {
        "deliver".into()
    } else if body.starts_with(br#"{"type":"sent""#) {
        "sent".into()
    } else if body.starts_with(br#"{"type":"send""#) {
        "send".into()
    } else {
        let any: AnyFrame = serde_json::from_slice(body)
            .with_context(|| format!("bad frame {}", String::from_utf8_lossy(body)))?;
        if any.kind == "error" {
            let message = match any.message {
                Some(serde_json::Value::String(s)) => s,
                other => format!("{other:?}"),
            };
            return Ok(In::Error {
                code: any.code.unwrap_or_default(),
                message,
            });
        }
        any.kind.into()
    };
    Ok(match kind.as_ref() {
        "deliver" => {
            let f: DeliverFrame<'_> = serde_json::from_slice(body)?;
            In::Deliver {
                id: f.message.id,
                text: f.message.text,
            }
        }
        "sent" => {
            let f: SentFrame = serde_json::from_slice(body)?;
            In::Sent {
                message_id: f.message_id,
            }
        }
        "send" => {
            let f: PeerFrame<'_> = serde_json::from_slice(body)?;
            In::Peer { text: f.text }
        }
        "pong" => In::Pong,
        _ => In::Other,
    })
}

/// Reads frames into one reused buffer.
struct FrameReader {
    rd: BufReader<OwnedReadHalf>,
    body: Vec<u8>,
}

impl FrameReader {
    fn new(rd: OwnedReadHalf) -> FrameReader {
        FrameReader {
            rd: BufReader::with_capacity(64 * 1024, rd),
            body: Vec::with_capacity(4096),
        }
    }

    /// The next frame's body; `None` at end of stream.
    async fn next(&mut self) -> Result<Option<&[u8]>> {
        let mut header = [0u8; 4];
        match self.rd.read_exact(&mut header).await {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
                ) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        }
        let len = u32::from_be_bytes(header) as usize;
        self.body.resize(len, 0);
        self.rd.read_exact(&mut self.body).await?;
        Ok(Some(&self.body))
    }

    /// Read until a response of type `want` (an `error` fails).
    async fn expect(&mut self, want: &str) -> Result<()> {
        loop {
            let body = self
                .next()
                .await?
                .context("the core closed the connection")?;
            let any: AnyFrame = serde_json::from_slice(body)?;
            if any.kind == want {
                return Ok(());
            }
            if any.kind == "error" {
                bail!("expected {want}, got {}", String::from_utf8_lossy(body));
            }
        }
    }
}

/// A greeted connection; registered as a Pi session when `session` is given.
async fn connect(socket: &Path, session: Option<&str>) -> Result<(FrameReader, OwnedWriteHalf)> {
    let stream = UnixStream::connect(socket).await?;
    let (rd, mut wr) = stream.into_split();
    let mut rd = FrameReader::new(rd);
    let kind = if session.is_some() { "pi" } else { "cli" };
    let mut buf = Vec::new();
    push_json(
        &mut buf,
        &serde_json::json!({"type": "hello", "id": 1, "protocol": 1, "client": kind, "client_name": "bench"}),
    );
    wr.write_all(&buf).await?;
    rd.expect("welcome").await?;
    if let Some(id) = session {
        buf.clear();
        push_json(
            &mut buf,
            &serde_json::json!({"type": "register", "id": 2, "session": {
                "session_id": id, "name": id, "cwd": "/tmp", "model": "bench/none", "status": "idle"}}),
        );
        wr.write_all(&buf).await?;
        rd.expect("registered").await?;
    }
    Ok((rd, wr))
}

// ---------------------------------------------------------------------------------------
// 1. Round trips
// ---------------------------------------------------------------------------------------

/// A sends to B and waits for B's answer; B acks each delivery and sends back at once.
/// Returns the measured round trips in ns. Through the core (`relay == false`) A and B
/// are registered Pi sessions; through the relay they write the very same frames.
async fn round_trips(
    socket: &Path,
    relay: bool,
    round: usize,
    warmup: usize,
    samples: usize,
) -> Result<Vec<u64>> {
    let total = (warmup + samples) as u64;
    let (name_a, name_b) = (format!("rtt{round}-a"), format!("rtt{round}-b"));
    let to_a = name_a.clone();
    let ((mut ra, mut wa), (mut rb, mut wb)) = if relay {
        let a = UnixStream::connect(socket).await?.into_split();
        let b = UnixStream::connect(socket).await?.into_split();
        ((FrameReader::new(a.0), a.1), (FrameReader::new(b.0), b.1))
    } else {
        let a = connect(socket, Some(&name_a)).await?;
        let b = connect(socket, Some(&name_b)).await?;
        (a, b)
    };
    let peer_b = tokio::spawn(async move {
        let mut buf = Vec::with_capacity(1024);
        let mut request = 1_000_000u64;
        loop {
            let body = rb.next().await?.context("B: connection closed")?;
            let (ack, text) = match parse(body)? {
                In::Deliver { id, text } => (id, text),
                In::Peer { text } => (stamp(&text).0, text),
                In::Error { code, message } => bail!("B got error {code}: {message}"),
                _ => continue,
            };
            let (seq, t) = stamp(&text);
            buf.clear();
            push_ack(&mut buf, &[ack]);
            push_send(&mut buf, request, &to_a, seq, t);
            request += 1;
            wb.write_all(&buf).await?;
            if seq + 1 == total {
                return Ok::<_, anyhow::Error>(());
            }
        }
    });
    let mut lat = Vec::with_capacity(samples);
    let mut buf = Vec::with_capacity(1024);
    let mut ack: Option<u64> = None;
    for seq in 0..total {
        buf.clear();
        if let Some(id) = ack.take() {
            push_ack(&mut buf, &[id]);
        }
        let t0 = now_ns();
        push_send(&mut buf, seq, &name_b, seq, t0);
        wa.write_all(&buf).await?;
        loop {
            let body = ra.next().await?.context("A: connection closed")?;
            match parse(body)? {
                In::Deliver { id, text } if stamp(&text).0 == seq => {
                    ack = Some(id);
                    break;
                }
                In::Peer { text } if stamp(&text).0 == seq => {
                    ack = Some(seq);
                    break;
                }
                In::Error { code, message } => bail!("A got error {code}: {message}"),
                _ => {}
            }
        }
        if seq >= warmup as u64 {
            lat.push(now_ns() - t0);
        }
    }
    peer_b.await??;
    Ok(lat)
}

/// `ping` → `pong` on one CLI connection: one hop through the core's connection task and
/// hub and back, with nothing to store (a diagnostic next to the round trip).
async fn pings(socket: &Path, warmup: usize, samples: usize) -> Result<Vec<u64>> {
    let (mut rd, mut wr) = connect(socket, None).await?;
    let mut lat = Vec::with_capacity(samples);
    let mut buf = Vec::with_capacity(64);
    for i in 0..warmup + samples {
        buf.clear();
        let id = 100 + i as u64;
        push_frame(&mut buf, |b| {
            let _ = write!(b, r#"{{"type":"ping","id":{id}}}"#);
        });
        let t0 = now_ns();
        wr.write_all(&buf).await?;
        loop {
            let body = rd.next().await?.context("closed during pings")?;
            match parse(body)? {
                In::Pong => break,
                In::Error { code, message } => bail!("ping got error {code}: {message}"),
                _ => {}
            }
        }
        if i >= warmup {
            lat.push(now_ns() - t0);
        }
    }
    lat.sort_unstable();
    Ok(lat)
}

// ---------------------------------------------------------------------------------------
// 2–5. Rings of sessions sending to a peer
// ---------------------------------------------------------------------------------------

/// One connection of a ring.
struct Endpoint {
    rd: FrameReader,
    wr: OwnedWriteHalf,
    /// Whom this endpoint sends to (index into the ring).
    target: Option<usize>,
}

/// Connected endpoints. With n ≥ 2 Pi sessions, session i sends to session i+1 (mod n).
/// With one session, which cannot message itself, a CLI connection steers it.
struct Ring {
    ids: Vec<String>,
    eps: Vec<Option<Endpoint>>,
}

impl Ring {
    async fn connect(socket: &Path, prefix: &str, n: usize) -> Result<Ring> {
        let mut ids = Vec::new();
        let mut eps = Vec::new();
        for i in 0..n {
            let id = format!("{prefix}-{i:03}");
            let (rd, wr) = connect(socket, Some(&id)).await?;
            let target = (n > 1).then_some((i + 1) % n);
            ids.push(id);
            eps.push(Some(Endpoint { rd, wr, target }));
        }
        if n == 1 {
            let (rd, wr) = connect(socket, None).await?;
            ids.push(format!("{prefix}-cli"));
            eps.push(Some(Endpoint {
                rd,
                wr,
                target: Some(0),
            }));
        }
        Ok(Ring { ids, eps })
    }

    fn senders(&self) -> usize {
        self.eps
            .iter()
            .flatten()
            .filter(|e| e.target.is_some())
            .count()
    }
}

#[derive(Clone, Copy)]
enum Pace {
    /// At most this many sends awaiting `sent` per sender, as fast as that allows.
    Window(usize),
    /// This many sends a second per sender, spread evenly over senders.
    Rate(f64),
}

#[derive(Clone, Copy)]
enum Stop {
    /// This many sends in all.
    Count(u64),
    /// Warm up, then measure the delivery rate for a while; then stop sending.
    Timed { warmup: Duration, measure: Duration },
    /// This many sends per sender.
    PerSender(u64),
}

/// Counters shared by the tasks of one run.
#[derive(Default)]
struct Shared {
    reserved: AtomicU64,
    issued: AtomicU64,
    sent_ok: AtomicU64,
    delivered: AtomicU64,
    active_senders: AtomicUsize,
    order_errors: AtomicU64,
    cut_off: AtomicU64,
    closing: AtomicBool,
    errors: Mutex<Vec<String>>,
}

/// Per endpoint: its send window, and the delivery ids its writer should acknowledge.
struct EpShared {
    window: Semaphore,
    acks: Mutex<Vec<u64>>,
    ack_ready: Notify,
    issued: AtomicU64,
    delivered: AtomicU64,
}

/// What a run measured.
struct RunOut {
    issued: u64,
    sent_ok: u64,
    delivered: u64,
    /// Per receiver: delivered == what its sender issued.
    pairs_exact: bool,
    order_errors: u64,
    cut_off: u64,
    errors: Vec<String>,
    /// Send → deliver, ns, sorted.
    latencies: Vec<u64>,
    /// Deliveries per second in the measured part of a timed run.
    measured_rate: Option<f64>,
    elapsed: Duration,
    core_ticks: u64,
    bench_ticks: u64,
    rss_end_kb: u64,
    durable_checked: u64,
    durable_missing: u64,
}

impl RunOut {
    fn clean(&self) -> bool {
        self.issued == self.sent_ok
            && self.issued == self.delivered
            && self.pairs_exact
            && self.order_errors == 0
            && self.cut_off == 0
            && self.errors.is_empty()
            && self.durable_missing == 0
    }

    fn describe(&self) -> String {
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
fn durability_checker(
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

async fn run_ring(ring: &mut Ring, pace: Pace, stop: Stop, core: &CoreProc) -> Result<RunOut> {
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
            pace,
            stop,
            deadline,
            start: start + offset,
            sh: sh.clone(),
            ep: ep_sh.clone(),
            done: done_rx.clone(),
        };
        writers.push((ep.target, tokio::spawn(w.run())));
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
    for (i, (target, w)) in writers.into_iter().enumerate() {
        let wr = w.await??;
        let rd = rds.remove(0);
        if let Some(t) = target
            && eps_sh[i].issued.load(Ordering::SeqCst) != eps_sh[t].delivered.load(Ordering::SeqCst)
        {
            pairs_exact = false;
        }
        ring.eps[i] = Some(Endpoint { rd, wr, target });
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

struct WriterTask {
    wr: OwnedWriteHalf,
    target: Option<String>,
    pace: Pace,
    stop: Stop,
    deadline: Option<Instant>,
    start: tokio::time::Instant,
    sh: Arc<Shared>,
    ep: Arc<EpShared>,
    done: watch::Receiver<bool>,
}

impl WriterTask {
    /// May this sender issue its message number `seq`?
    fn reserve(&self, seq: u64) -> bool {
        match self.stop {
            Stop::Count(total) => self.sh.reserved.fetch_add(1, Ordering::SeqCst) < total,
            Stop::Timed { .. } => self.deadline.is_none_or(|d| Instant::now() < d),
            Stop::PerSender(k) => seq < k,
        }
    }

    /// Send according to the pace and acknowledge deliveries until told to stop.
    async fn run(mut self) -> Result<OwnedWriteHalf> {
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
                    push_send(&mut buf, seq, &target, seq, t);
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

struct ReaderTask {
    rd: FrameReader,
    sh: Arc<Shared>,
    ep: Arc<EpShared>,
    windowed: bool,
    durable: std::sync::mpsc::Sender<u64>,
    done: watch::Receiver<bool>,
}

impl ReaderTask {
    /// Count responses and deliveries (checking order), record latencies, queue acks.
    async fn run(mut self) -> Result<(FrameReader, Vec<u64>)> {
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

// ---------------------------------------------------------------------------------------
// The sections
// ---------------------------------------------------------------------------------------

fn startup(s: &Settings, report: &mut Report) -> Result<()> {
    eprintln!(
        "[bench] 6. start-up: {} starts on fresh directories",
        s.startups
    );
    let mut times = Vec::new();
    for _ in 0..s.startups {
        let (core, t) = CoreProc::start()?;
        times.push(t.as_nanos() as u64);
        drop(core);
    }
    times.sort_unstable();
    let median = quantile(&times, 0.5);
    report.row(
        "6 start-up",
        &format!("spawn → first welcome, median of {}", times.len()),
        ms(median),
        "< 20 ms".into(),
        Some(median < 20_000_000),
    );
    report.info(
        "6 start-up",
        "min / max",
        format!("{} / {}", ms(times[0]), ms(times[times.len() - 1])),
    );
    Ok(())
}

async fn latency(s: &Settings, report: &mut Report) -> Result<()> {
    eprintln!(
        "[bench] 1. round trips: {} + {} warm-up through the core, then the relay",
        s.rtt_samples, s.rtt_warmup
    );
    let (core, _) = CoreProc::start()?;
    let relay = Relay::start()?;
    // Alternate core and relay in rounds so that drifting noise on a shared machine
    // falls on both alike.
    let rounds = if s.quick { 2 } else { 4 };
    let (mut core_lat, mut relay_lat) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let (warm, n) = (s.rtt_warmup / rounds, s.rtt_samples / rounds);
        core_lat.extend(round_trips(&core.socket(), false, round, warm, n).await?);
        relay_lat.extend(round_trips(&relay.socket, true, round, warm, n).await?);
    }
    core_lat.sort_unstable();
    relay_lat.sort_unstable();
    let ping_lat = pings(
        &core.socket(),
        s.rtt_warmup / rounds,
        s.rtt_samples / rounds,
    )
    .await?;
    let core_warnings = core.warnings();
    drop(core);
    drop(relay);
    let sec = "1 round trip";
    let (c50, c99, c999) = (
        quantile(&core_lat, 0.5),
        quantile(&core_lat, 0.99),
        quantile(&core_lat, 0.999),
    );
    let (r50, r99) = (quantile(&relay_lat, 0.5), quantile(&relay_lat, 0.99));
    report.info(
        sec,
        &format!("relay (floor) p50 / p99, n={}", relay_lat.len()),
        format!("{} / {}", us(r50), us(r99)),
    );
    report.info(
        sec,
        &format!("core p50 / p99 / p99.9, n={}", core_lat.len()),
        format!("{} / {} / {}", us(c50), us(c99), us(c999)),
    );
    let added = c50.saturating_sub(r50);
    report.row(
        sec,
        "core added p50 (core p50 − relay p50)",
        us(added),
        "< 40 µs".into(),
        Some(added < 40_000),
    );
    report.row(
        sec,
        "core round trip p99",
        us(c99),
        "< 1 ms".into(),
        Some(c99 < 1_000_000),
    );
    report.info(
        sec,
        "core added p99 (core p99 − relay p99)",
        us(c99.saturating_sub(r99)),
    );
    report.info(
        sec,
        &format!(
            "diagnostic: ping→pong via hub p50 / p99, n={}",
            ping_lat.len()
        ),
        format!(
            "{} / {}",
            us(quantile(&ping_lat, 0.5)),
            us(quantile(&ping_lat, 0.99))
        ),
    );
    for w in core_warnings {
        report.notes.push(format!("core log (round trips): {w}"));
    }
    Ok(())
}

async fn throughput(s: &Settings, report: &mut Report) -> Result<()> {
    let (core, _) = CoreProc::start()?;
    let sec = "2 throughput";
    for n in [1usize, 10, 100] {
        eprintln!(
            "[bench] 2. throughput: {n} session(s), window {} per sender, {:?} measured",
            s.window, s.tp_measure
        );
        let mut ring = Ring::connect(&core.socket(), &format!("tp{n}"), n).await?;
        let out = run_ring(
            &mut ring,
            Pace::Window(s.window),
            Stop::Timed {
                warmup: s.tp_warmup,
                measure: s.tp_measure,
            },
            &core,
        )
        .await?;
        drop(ring);
        let label = if n == 1 {
            "1 session (steered by a CLI client)".to_string()
        } else {
            format!("{n} sessions (ring: i → i+1)")
        };
        let per_s = out.measured_rate.unwrap_or(0.0);
        if n == 100 {
            report.row(
                sec,
                &label,
                rate(per_s),
                "≥ 11.9k msg/s (paced load)".into(),
                Some(per_s >= 11_900.0),
            );
        } else {
            report.info(sec, &label, rate(per_s));
        }
        report.info(
            sec,
            &format!("  {n}: send→deliver p50 / p99 at saturation"),
            format!(
                "{} / {}",
                ms(quantile(&out.latencies, 0.5)),
                ms(quantile(&out.latencies, 0.99))
            ),
        );
        report.info(
            sec,
            &format!("  {n}: CPU per message core / bench clients"),
            format!(
                "{} / {}",
                us((ticks_to_ns(out.core_ticks) / out.delivered.max(1) as f64) as u64),
                us((ticks_to_ns(out.bench_ticks) / out.delivered.max(1) as f64) as u64)
            ),
        );
        report.check(
            sec,
            &format!("  {n}: every send answered and delivered once, in order"),
            format!("{} / {}", out.delivered, out.issued),
            "all, no errors",
            out.clean(),
        );
        if !out.clean() {
            report
                .notes
                .push(format!("throughput {n}: {}", out.describe()));
        }
    }
    for w in core.warnings() {
        report.notes.push(format!("core log (throughput): {w}"));
    }
    Ok(())
}

async fn paced(s: &Settings, report: &mut Report) -> Result<()> {
    let n = 100;
    let per_sender = (s.paced_rate * s.paced_secs).round() as u64;
    eprintln!(
        "[bench] 3. paced: {n} sessions × {} msg/s for {} s ({per_sender} each)",
        s.paced_rate, s.paced_secs
    );
    let (core, _) = CoreProc::start()?;
    let mut ring = Ring::connect(&core.socket(), "paced", n).await?;
    let out = run_ring(
        &mut ring,
        Pace::Rate(s.paced_rate),
        Stop::PerSender(per_sender),
        &core,
    )
    .await?;
    drop(ring);
    let expected = per_sender * n as u64;
    let stored: i64 = {
        let db = rusqlite::Connection::open_with_flags(
            core.db(),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )?;
        db.query_row(
            "SELECT COUNT(*) FROM messages WHERE recipient LIKE 'paced-%'",
            [],
            |r| r.get(0),
        )?
    };
    let sec = "3 paced 100×119/s";
    report.info(
        sec,
        "offered / achieved send rate",
        format!(
            "{} / {}",
            rate(s.paced_rate * n as f64),
            rate(out.issued as f64 / out.elapsed.as_secs_f64())
        ),
    );
    report.check(
        sec,
        "delivered (counted exactly)",
        format!("{} of {expected}", out.delivered),
        "all",
        out.delivered == expected && out.issued == expected && out.pairs_exact,
    );
    report.check(
        sec,
        "`sent` received (stored before `sent`)",
        format!("{} of {expected}", out.sent_ok),
        "all",
        out.sent_ok == expected,
    );
    report.check(
        sec,
        "rows in the database after the run",
        stored.to_string(),
        &expected.to_string(),
        stored as u64 == expected,
    );
    report.check(
        sec,
        "sampled `sent` ids already committed",
        format!(
            "{} of {}",
            out.durable_checked - out.durable_missing,
            out.durable_checked
        ),
        "all",
        out.durable_missing == 0 && out.durable_checked > 0,
    );
    report.check(
        sec,
        "duplicates / out of order",
        out.order_errors.to_string(),
        "0",
        out.order_errors == 0,
    );
    report.check(
        sec,
        "sessions cut off / error frames",
        format!("{} / {}", out.cut_off, out.errors.len()),
        "0 / 0",
        out.cut_off == 0 && out.errors.is_empty(),
    );
    let (p50, p99, p999, max) = (
        quantile(&out.latencies, 0.5),
        quantile(&out.latencies, 0.99),
        quantile(&out.latencies, 0.999),
        quantile(&out.latencies, 1.0),
    );
    report.info(
        sec,
        "send → deliver p50 / p99.9 / max",
        format!("{} / {} / {}", ms(p50), ms(p999), ms(max)),
    );
    report.row(
        sec,
        "send → deliver p99",
        ms(p99),
        "< 10 ms".into(),
        Some(p99 < 10_000_000),
    );
    report.info(
        sec,
        "core CPU: per message / share of one CPU",
        format!(
            "{} / {:.0}%",
            us((ticks_to_ns(out.core_ticks) / out.delivered.max(1) as f64) as u64),
            ticks_to_ns(out.core_ticks) / out.elapsed.as_nanos() as f64 * 100.0
        ),
    );
    report.info(
        sec,
        "bench clients CPU share of one CPU",
        format!(
            "{:.0}%",
            ticks_to_ns(out.bench_ticks) / out.elapsed.as_nanos() as f64 * 100.0
        ),
    );
    report.info(sec, "core RSS at the end", mb(out.rss_end_kb));
    if !out.errors.is_empty() {
        report.notes.push(format!("paced: {}", out.describe()));
    }
    for w in core.warnings() {
        report.notes.push(format!("core log (paced): {w}"));
    }
    Ok(())
}

async fn cpu_and_rss(s: &Settings, report: &mut Report) -> Result<()> {
    eprintln!(
        "[bench] 4/5. RSS and CPU per message: 100 sessions, {} messages early, history to {}",
        s.cpu_window, s.history
    );
    let (core, _) = CoreProc::start()?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let idle = rss_kb(core.pid())?;
    let mut ring = Ring::connect(&core.socket(), "hist", 100).await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let with_100 = rss_kb(core.pid())?;
    let pace = Pace::Window(16);
    let first = run_ring(&mut ring, pace, Stop::Count(10_000), &core).await?;
    let after_10k = first.rss_end_kb;
    let (mut early_msgs, mut early_ticks) = (first.delivered, first.core_ticks);
    let mut clean = first.clean();
    if s.cpu_window > 10_000 {
        let rest = run_ring(&mut ring, pace, Stop::Count(s.cpu_window - 10_000), &core).await?;
        early_msgs += rest.delivered;
        early_ticks += rest.core_ticks;
        clean &= rest.clean();
    }
    let early = ticks_to_ns(early_ticks) / early_msgs as f64;
    let mut total = early_msgs;
    while total < s.history {
        let chunk = (s.history - total).min(50_000);
        let grow = run_ring(&mut ring, pace, Stop::Count(chunk), &core).await?;
        clean &= grow.clean();
        total += grow.delivered;
        eprintln!("[bench]   history: {total} messages");
    }
    let late_run = run_ring(&mut ring, pace, Stop::Count(s.cpu_window), &core).await?;
    clean &= late_run.clean();
    let late = ticks_to_ns(late_run.core_ticks) / late_run.delivered as f64;
    let after_all = late_run.rss_end_kb;
    drop(ring);
    let rows: i64 = {
        let db = rusqlite::Connection::open_with_flags(
            core.db(),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )?;
        db.query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))?
    };

    let sec = "4 CPU / message";
    report.info(
        sec,
        &format!("early: messages 0–{}k", s.cpu_window / 1000),
        us(early as u64),
    );
    report.info(
        sec,
        &format!(
            "late: messages {}k–{}k ({rows} rows)",
            total / 1000,
            (total + late_run.delivered) / 1000
        ),
        us(late as u64),
    );
    let ratio = late / early;
    report.row(
        sec,
        "late ÷ early",
        format!("{ratio:.2}×"),
        "flat: ≤ 1.25×".into(),
        Some(ratio <= 1.25),
    );
    report.check(
        sec,
        "every message delivered once, in order",
        if clean { "yes".into() } else { "no".into() },
        "yes",
        clean,
    );

    let sec = "5 RSS";
    report.info(sec, "idle", mb(idle));
    report.info(sec, "100 sessions connected", mb(with_100));
    report.row(
        sec,
        "100 sessions, after 10k messages",
        mb(after_10k),
        "< 20 MB".into(),
        Some(after_10k < 20 * 1024),
    );
    report.info(
        sec,
        &format!("after {}k messages", (total + late_run.delivered) / 1000),
        mb(after_all),
    );
    for w in core.warnings() {
        report.notes.push(format!("core log (history): {w}"));
    }
    Ok(())
}

async fn run_all(s: &Settings) -> Result<Report> {
    let mut report = Report::default();
    // `SHEPHERD_BENCH_ONLY=1,3` runs only those sections (for profiling one of them).
    let only = std::env::var("SHEPHERD_BENCH_ONLY").unwrap_or_default();
    let on = |n: &str| only.is_empty() || only.split(',').any(|x| x.trim() == n);
    if on("6") {
        startup(s, &mut report)?;
    }
    if on("1") {
        latency(s, &mut report).await?;
    }
    if on("2") {
        throughput(s, &mut report).await?;
    }
    if on("3") {
        paced(s, &mut report).await?;
    }
    if on("4") || on("5") {
        cpu_and_rss(s, &mut report).await?;
    }
    Ok(report)
}

fn main() -> ExitCode {
    if let Some(socket) = std::env::var_os(RELAY_ENV) {
        return relay_main(PathBuf::from(socket));
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let env_on = |k: &str| std::env::var(k).is_ok_and(|v| !v.is_empty() && v != "0");
    // Without `--bench` this runs under `cargo test`: a smoke run.
    let quick = args.iter().any(|a| a == "--quick")
        || env_on("SHEPHERD_BENCH_QUICK")
        || !args.iter().any(|a| a == "--bench");
    let strict = env_on("SHEPHERD_BENCH_STRICT");
    let mut settings = Settings::new(quick);
    // `SHEPHERD_BENCH_HISTORY=1000000` grows the history further before the late CPU sample.
    if let Some(history) = std::env::var("SHEPHERD_BENCH_HISTORY")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        settings.history = history;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("bench runtime");
    let began = Instant::now();
    now_ns();
    let result = runtime.block_on(run_all(&settings));
    let mut report = match result {
        Ok(report) => report,
        Err(e) => {
            eprintln!("benchmark failed: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let mut frame = Vec::new();
    push_send(&mut frame, 1, "hist-001", 1, now_ns());
    println!();
    println!(
        "shepherd core benchmark{} — {} on {cpus} CPU(s), binary {}",
        if settings.quick {
            " (QUICK smoke run: short, noisy)"
        } else {
            ""
        },
        if cfg!(debug_assertions) {
            "debug bench build"
        } else {
            "release"
        },
        shepherd_bin().display()
    );
    println!(
        "messages: `send` frames of ~{} bytes (a short steer); core durability: default (WAL, synchronous=NORMAL)",
        frame.len()
    );
    report.notes.push(format!(
        "the core daemon (2 tokio workers + hub thread) and the bench clients (2 tokio workers) share the same {cpus} CPU(s): every number includes that contention"
    ));
    report.notes.push(format!(
        "total bench time {:.1} s",
        began.elapsed().as_secs_f64()
    ));
    report.print();
    let misses = report.rows.iter().any(|r| r.pass == Some(false));
    if !report.failures.is_empty() || (strict && misses) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
