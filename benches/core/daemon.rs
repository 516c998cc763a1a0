//! The daemon under test (`shepherd up` on a fresh temporary agent directory, killed on
//! drop) and what `/proc` and the file system say about it: RSS, CPU ticks, context
//! switches, the size of its database and WAL.

use std::collections::HashMap;
use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use shepherd_core::protocol::{
    ClientKind, ClientMsg, PROTOCOL_VERSION, ServerMsg, frame, requests,
};

/// `/proc/<pid>/stat` reports CPU time in USER_HZ, which Linux fixes at 100.
pub const USER_HZ: f64 = 100.0;

pub fn shepherd_bin() -> PathBuf {
    std::env::var_os("SHEPHERD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_shepherd")))
}

/// A `shepherd up` on its own temporary agent directory, killed on drop.
pub struct CoreProc {
    pub dir: tempfile::TempDir,
    pub child: Child,
}

impl CoreProc {
    /// Spawn the daemon and wait for its first `welcome`; also returns how long that took
    /// from just before the spawn.
    pub fn start() -> Result<(CoreProc, Duration)> {
        CoreProc::start_with(&[])
    }

    /// [`CoreProc::start`] with more environment for the daemon (its `SHEPHERD_*`
    /// configuration, and what its workers inherit).
    pub fn start_with(env: &[(&str, &str)]) -> Result<(CoreProc, Duration)> {
        let dir = tempfile::Builder::new().prefix("shpb").tempdir_in("/tmp")?;
        let log = std::fs::File::create(dir.path().join("core.log"))?;
        let begin = Instant::now();
        let mut cmd = Command::new(shepherd_bin());
        cmd.arg("up")
            .env("PI_CODING_AGENT_DIR", dir.path())
            .env("RUST_LOG", "info")
            .env_remove("SHEPHERD_SOCKET")
            .env_remove("SHEPHERD_CONFIG")
            .env_remove("SHEPHERD_STATE_DIR")
            .envs(env.iter().copied());
        let child = cmd
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

    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("shepherd/shepherd.sock")
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("shepherd/shepherd.db")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("core.log")).unwrap_or_default()
    }

    /// Lines the core logged at WARN or ERROR.
    pub fn warnings(&self) -> Vec<String> {
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

/// Say hello on a blocking socket and wait for `welcome` (the start-up probe: polled from
/// a plain thread right after the spawn, so no runtime is involved).
pub fn blocking_hello(mut stream: std::os::unix::net::UnixStream) -> Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let hello = ClientMsg::Hello(requests::Hello {
        id: 1,
        protocol: PROTOCOL_VERSION,
        client: ClientKind::Cli,
        client_name: Some("bench".into()),
    });
    stream.write_all(&frame::encode(&hello))?;
    let mut header = [0u8; frame::HEADER_LEN];
    stream.read_exact(&mut header)?;
    let mut body = vec![0u8; frame::body_len(header)];
    stream.read_exact(&mut body)?;
    match frame::decode::<ServerMsg>(&body, ServerMsg::TYPES) {
        Ok(ServerMsg::Welcome { .. }) => Ok(()),
        _ => bail!("expected welcome, got {}", String::from_utf8_lossy(&body)),
    }
}

pub fn rss_kb(pid: u32) -> Result<u64> {
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
pub fn cpu_ticks(pid: u32) -> Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after_comm = &stat[stat.rfind(')').context("stat format")? + 2..];
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    // Field 3 (state) is index 0 here; utime is field 14, stime field 15.
    Ok(fields[11].parse::<u64>()? + fields[12].parse::<u64>()?)
}

pub fn ticks_to_ns(ticks: u64) -> f64 {
    ticks as f64 / USER_HZ * 1e9
}

/// Context switches of each live thread of a process (by thread id), voluntary and not:
/// how often it woke up (a thread that exits takes its count with it).
pub fn ctxt_switches(pid: u32) -> Result<HashMap<u64, u64>> {
    let mut threads = HashMap::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let task = task?;
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else {
            continue; // the thread exited meanwhile
        };
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        let mut total = 0;
        for line in status.lines() {
            if let Some(rest) = line
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                total += rest.trim().parse::<u64>()?;
            }
        }
        threads.insert(tid, total);
    }
    Ok(threads)
}

/// The wake-ups between two [`ctxt_switches`] samples: each thread's growth (a thread
/// born since counts from zero), and one for each thread that exited (its last wake-up;
/// what it did before is gone with it). Also how many threads exited.
pub fn wake_ups(before: &HashMap<u64, u64>, after: &HashMap<u64, u64>) -> (u64, usize) {
    let grown: u64 = after
        .iter()
        .map(|(tid, n)| n.saturating_sub(before.get(tid).copied().unwrap_or(0)))
        .sum();
    let exited = before.keys().filter(|tid| !after.contains_key(tid)).count();
    (grown + exited as u64, exited)
}

/// Bytes of the core's database file and of its WAL (0 when there is none).
pub fn store_bytes(core: &CoreProc) -> (u64, u64) {
    let size = |p: PathBuf| std::fs::metadata(p).map_or(0, |m| m.len());
    let db = core.db();
    let mut wal = db.clone().into_os_string();
    wal.push("-wal");
    (size(db), size(PathBuf::from(wal)))
}
