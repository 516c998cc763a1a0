//! The fake managed worker of sections 11 and 12: the bench binary itself, re-executed by
//! the core's headless worker host as `[workers] pi` (the core's environment carries
//! [`FAKE_ENV`], which every worker inherits). It does what the shepherd extension does
//! for a worker, at once and without Pi: connect to `SHEPHERD_SOCKET`, register with the
//! session id from `--session-id` and the launch nonce from `SHEPHERD_LAUNCH`, ack its
//! `task` delivery, send its run's `result`, then wait for stdin to close (the core's
//! stop) and exit. With [`GO_ENV`] set it connects to the bench's control socket after the
//! ack and sends its result only when the bench writes it a byte (section 12 separates
//! launching from the state changes it measures).
//!
//! Plain blocking std I/O, no runtime, so that its own start-up stays small; the
//! result's text carries wall-clock stamps ([`Stamps`]) so that the bench can take the
//! fake's own start-up out of the core's launch overhead.

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use shepherd_core::protocol::{
    ClientKind, ClientMsg, DeliveryKind, PROTOCOL_VERSION, Registration, ServerMsg, frame, requests,
};

/// Set (to anything) in the core's environment: a process started from the bench binary
/// with it is a fake worker.
pub const FAKE_ENV: &str = "SHEPHERD_BENCH_FAKE_WORKER";
/// The bench's control socket: the fake waits there for a byte before its result.
pub const GO_ENV: &str = "SHEPHERD_BENCH_GO";
/// How the result's text starts; the stamps follow.
const TAG: &str = "fake-worker";

/// Wall-clock nanoseconds since the epoch: the one clock the bench and its fakes share.
pub fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// What a fake worker says about its own start, in its result's text.
#[derive(Debug, Clone, Copy)]
pub struct Stamps {
    /// Entering `main` (the process exists and the binary is loaded).
    pub main_ns: u64,
    /// Just before writing `register` (greeted; the fake's own start-up is over).
    pub register_ns: u64,
    /// Registrations refused with `launch_mismatch` before one was accepted (the core had
    /// not yet recorded the launched pid).
    pub refused: u32,
}

impl Stamps {
    /// The stamps from an `agent_result` delivery's text (after its header).
    pub fn parse(text: &str) -> Option<Stamps> {
        let body = text.split_once("\n\n").map_or(text, |(_, b)| b);
        let mut parts = body.trim().split(' ');
        if parts.next()? != TAG {
            return None;
        }
        Some(Stamps {
            main_ns: parts.next()?.parse().ok()?,
            register_ns: parts.next()?.parse().ok()?,
            refused: parts.next()?.parse().ok()?,
        })
    }
}

pub fn fake_worker_main() -> ExitCode {
    let main_ns = wall_ns();
    match run(main_ns) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fake worker: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(main_ns: u64) -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let session = args
        .iter()
        .position(|a| a == "--session-id")
        .and_then(|i| args.get(i + 1))
        .context("no --session-id on the command line")?
        .clone();
    let socket = std::env::var_os("SHEPHERD_SOCKET").context("no SHEPHERD_SOCKET")?;
    let launch = std::env::var("SHEPHERD_LAUNCH").context("no SHEPHERD_LAUNCH")?;
    let mut conn = Conn(UnixStream::connect(&socket).context("connecting to the core")?);
    conn.send(&ClientMsg::Hello(requests::Hello {
        id: 1,
        protocol: PROTOCOL_VERSION,
        client: ClientKind::Pi,
        client_name: Some("bench-fake-worker".into()),
    }))?;
    match conn.read()? {
        ServerMsg::Welcome { .. } => {}
        other => bail!("expected welcome, got {other:?}"),
    }
    let cwd = std::env::current_dir()?.to_string_lossy().into_owned();
    let register_ns = wall_ns();
    let mut refused = 0;
    let mut id = 2;
    loop {
        conn.send(&ClientMsg::Register(requests::Register {
            id,
            session: Registration {
                session_id: session.as_str().into(),
                name: None,
                cwd: cwd.clone(),
                pid: Some(std::process::id()),
                model: None,
                context: Default::default(),
                status: "idle".into(),
                role: Default::default(),
                session_file: None,
                subagent: false,
                launch: Some(launch.clone()),
            },
        }))?;
        match conn.reply(id)? {
            ServerMsg::Registered { .. } => break,
            ServerMsg::Error { details, .. }
                if refused < 1000
                    && details
                        .as_ref()
                        .and_then(|d| d.get("reason"))
                        .and_then(|r| r.as_str())
                        == Some("launch_mismatch") =>
            {
                // The core spawned us but has not yet heard back from its host.
                refused += 1;
                id += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            other => bail!("register refused: {other:?}"),
        }
    }
    // The task arrives right after `registered`, as a pending delivery.
    let task = loop {
        if let ServerMsg::Deliver { message } = conn.read()?
            && message.kind == DeliveryKind::Task
        {
            break message.id;
        }
    };
    conn.send(&ClientMsg::Ack(requests::Ack { ids: vec![task] }))?;
    if let Some(go) = std::env::var_os(GO_ENV) {
        let mut go = UnixStream::connect(&go).context("connecting to the bench's go socket")?;
        let mut byte = [0u8; 1];
        go.read_exact(&mut byte)
            .context("waiting for the bench's go")?;
        // Kept open until exit: its end tells the bench this process is gone.
        std::mem::forget(go);
    }
    id += 1;
    conn.send(&ClientMsg::RunResult(requests::RunResult {
        id,
        text: format!("{TAG} {main_ns} {register_ns} {refused}"),
        results: None,
        key: None,
    }))?;
    match conn.reply(id)? {
        ServerMsg::Reported { .. } => {}
        other => bail!("result refused: {other:?}"),
    }
    // Like Pi in RPC mode: run until stdin closes (the core's stop).
    let mut sink = [0u8; 256];
    let mut stdin = std::io::stdin();
    while stdin.read(&mut sink)? > 0 {}
    Ok(())
}

/// A blocking connection to the core.
struct Conn(UnixStream);

impl Conn {
    fn send(&mut self, msg: &ClientMsg) -> Result<()> {
        self.0.write_all(&frame::encode(msg))?;
        Ok(())
    }

    fn read(&mut self) -> Result<ServerMsg> {
        let mut header = [0u8; frame::HEADER_LEN];
        self.0.read_exact(&mut header)?;
        let mut body = vec![0u8; frame::body_len(header)];
        self.0.read_exact(&mut body)?;
        frame::decode::<ServerMsg>(&body, ServerMsg::TYPES)
            .map_err(|(e, _)| anyhow::anyhow!("bad frame from the core: {e}"))
    }

    /// The response to request `id`; events before it are dropped, except the deliveries a
    /// registration brings, which [`Conn::read`] picks up after it.
    fn reply(&mut self, id: u64) -> Result<ServerMsg> {
        loop {
            let msg = self.read()?;
            if msg.response_id() == Some(id) || matches!(msg, ServerMsg::Error { id: None, .. }) {
                return Ok(msg);
            }
        }
    }
}
