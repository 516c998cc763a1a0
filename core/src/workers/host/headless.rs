//! # Headless workers: `pi --mode rpc` children
//!
//! One task per worker owns its child: stdin is held open (Pi aborts its run and exits
//! when it closes), stdout is drained so Pi never blocks on a full pipe (the last
//! [`TAIL_LINES`] lines are kept for [`Host::capture`](super::Host::capture)), stderr goes
//! to `<state dir>/workers/<worker>.log` (0600, appended). The child leads its own process
//! group, so a stop's signals reach the tools it started too.
//!
//! Stopping closes stdin, waits [`STOP_GRACE`], then SIGTERMs the group, and
//! [`TERM_GRACE`] later SIGKILLs it. When the host's actor ends (the core stops), the
//! control channel closes and the task stops its worker the same way.

use std::collections::VecDeque;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::{CAPTURE_MAX_BYTES, HostError, HostEvent, Notice, emit, tail_bytes};
use crate::workers::launch::Launch;

/// Stdout lines kept for a lost worker's diagnosis.
pub(super) const TAIL_LINES: usize = 50;
/// Longest stdout line kept (RPC events can be large); longer ones are cut.
const TAIL_LINE_BYTES: usize = 2048;
/// How long a worker has to exit after its stdin closed.
pub(super) const STOP_GRACE: Duration = Duration::from_secs(5);
/// How long after SIGTERM before SIGKILL.
pub(super) const TERM_GRACE: Duration = Duration::from_secs(2);

/// What the actor asks a worker's task.
pub(super) enum Ctl {
    /// Stop the worker; answered (by dropping) once it has exited and its event is sent.
    Stop(oneshot::Sender<()>),
    /// The stdout tail.
    Capture(oneshot::Sender<String>),
}

/// Who a worker's task reports to.
pub(super) struct Watch {
    pub worker: i64,
    pub run: u64,
    /// The launch's nonce, carried by its exit.
    pub nonce: String,
    pub events: mpsc::Sender<HostEvent>,
    pub notices: mpsc::UnboundedSender<Notice>,
}

pub(super) struct Spawned {
    pub pid: u32,
    pub ctl: mpsc::Sender<Ctl>,
}

/// Start `launch` with its stderr appended to `log`, and the task that watches it.
pub(super) fn spawn(launch: &Launch, log: &Path, watch: Watch) -> Result<Spawned, HostError> {
    let stderr = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(log)
        .map_err(HostError::files(log))?;
    stderr
        .set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(HostError::files(log))?;
    let (program, args) = launch.argv.split_first().ok_or(HostError::NoPi)?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(&launch.cwd)
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .process_group(0);
    let mut child = cmd.spawn().map_err(|source| HostError::Spawn {
        program: program.to_string_lossy().into_owned(),
        cwd: launch.cwd.clone(),
        source,
    })?;
    let pid = child.id().expect("a just spawned child has a pid");
    let stdin = child.stdin.take().expect("stdin is piped");
    let stdout = child.stdout.take().expect("stdout is piped");
    let (ctl_tx, ctl_rx) = mpsc::channel(8);
    tokio::spawn(watch_child(child, pid, stdin, stdout, ctl_rx, watch));
    Ok(Spawned { pid, ctl: ctl_tx })
}

/// How far a stop has gone.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stopping {
    No,
    StdinClosed,
    Termed,
    Killed,
}

async fn watch_child(
    mut child: Child,
    pid: u32,
    stdin: ChildStdin,
    stdout: ChildStdout,
    mut ctl: mpsc::Receiver<Ctl>,
    watch: Watch,
) {
    let mut stdin = Some(stdin);
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    let mut stdout_open = true;
    let mut ctl_open = true;
    let mut tail: VecDeque<String> = VecDeque::with_capacity(TAIL_LINES);
    let mut waiters: Vec<oneshot::Sender<()>> = Vec::new();
    let mut stopping = Stopping::No;
    let mut deadline = Instant::now();
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            read = reader.read_until(b'\n', &mut line), if stdout_open => {
                match read {
                    Ok(0) | Err(_) => stdout_open = false,
                    Ok(_) => {
                        keep(&mut tail, &line);
                        line.clear();
                    }
                }
            }
            msg = ctl.recv(), if ctl_open => match msg {
                Some(Ctl::Capture(reply)) => {
                    let _ = reply.send(render(&tail));
                }
                Some(Ctl::Stop(done)) => {
                    waiters.push(done);
                    if stopping == Stopping::No {
                        stdin = None;
                        stopping = Stopping::StdinClosed;
                        deadline = Instant::now() + STOP_GRACE;
                    }
                }
                None => {
                    // The host is gone (the core stops): so does its worker.
                    ctl_open = false;
                    if stopping == Stopping::No {
                        stdin = None;
                        stopping = Stopping::StdinClosed;
                        deadline = Instant::now() + STOP_GRACE;
                    }
                }
            },
            _ = tokio::time::sleep_until(deadline), if matches!(stopping, Stopping::StdinClosed | Stopping::Termed) => {
                if stopping == Stopping::StdinClosed {
                    tracing::warn!(worker = watch.worker, pid, "worker did not exit after its stdin closed; SIGTERM");
                    signal_group(pid, rustix::process::Signal::TERM);
                    stopping = Stopping::Termed;
                    deadline = Instant::now() + TERM_GRACE;
                } else {
                    tracing::warn!(worker = watch.worker, pid, "worker did not exit after SIGTERM; SIGKILL");
                    signal_group(pid, rustix::process::Signal::KILL);
                    stopping = Stopping::Killed;
                }
            }
        }
    };
    drop(stdin);
    let code = status.ok().and_then(|s| s.code());
    if !line.is_empty() {
        keep(&mut tail, &line);
    }
    emit(
        &watch.events,
        HostEvent::Exited {
            worker: watch.worker,
            code,
            nonce: watch.nonce.clone(),
        },
    );
    let _ = watch.notices.send(Notice::HeadlessExited {
        worker: watch.worker,
        run: watch.run,
        tail: render(&tail),
    });
    drop(waiters);
}

/// Signal the worker's process group (it leads one); a group already gone is fine.
fn signal_group(pid: u32, signal: rustix::process::Signal) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}

fn keep(tail: &mut VecDeque<String>, line: &[u8]) {
    let line = String::from_utf8_lossy(line);
    let line = line.trim_end_matches(['\n', '\r']);
    let mut end = line.len().min(TAIL_LINE_BYTES);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    if tail.len() == TAIL_LINES {
        tail.pop_front();
    }
    tail.push_back(line[..end].to_string());
}

fn render(tail: &VecDeque<String>) -> String {
    let text = tail
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("\n");
    tail_bytes(&text, CAPTURE_MAX_BYTES).to_string()
}
