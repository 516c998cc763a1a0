//! Process work for the worker host, queued by the hub while it handles a batch and
//! started only after the batch committed (a worker's row and task are durable before its
//! process exists). Each operation runs on its own task and reports back to the hub as a
//! [`HubCommand`], so the hub never waits for a process. The host keys processes by an
//! `i64`: a worker's id, or an assignment's Lead ([`crate::workers::launch::ProcKey`]).
//! Work that must not race a process (removing a Lead's checkout) waits for its exit
//! with [`HostOp::StopThen`]: the hub continues when the process is gone, or its bound ran
//! out.

use std::path::PathBuf;
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::mpsc;

use crate::hub::{ConnId, HubCommand, HubResult, Out, State};

use crate::workers::host::{Backend, Host, HostConfig, Launched};
use crate::workers::launch::{LaunchSpec, ProcKey};
use crate::workers::proc::process_alive;

/// One thing to do to a worker's process.
pub(in crate::hub) enum HostOp {
    /// Start it; `reply`: the `delegate_agent` / `continue_agent` request that waits for it.
    Launch {
        spec: Box<LaunchSpec>,
        reply: Option<(ConnId, u64)>,
    },
    /// Stop it (idempotent).
    Stop { key: ProcKey },
    /// Stop it and wait, at most `bound`, until it is gone and none of `pids` runs; then
    /// the hub runs `then` with whether it is ([`HubCommand::Stopped`]). What must not race
    /// the process (removing its checkout) waits for that event.
    StopThen {
        key: ProcKey,
        pids: Vec<u32>,
        bound: Duration,
        reply: Option<(ConnId, u64)>,
        then: AfterStop,
    },
    /// After a core restart: find its tmux pane again.
    Adopt {
        key: ProcKey,
        pane: String,
        nonce: String,
    },
}

/// How a launch or adoption ended, as the hub hears it.
pub struct LaunchDone {
    pub key: ProcKey,
    pub reply: Option<(ConnId, u64)>,
    pub result: Result<Launched, String>,
}

/// What the hub does once a process stopped (`true`) or did not within its bound.
pub(in crate::hub) type AfterStop =
    Box<dyn FnOnce(&mut State, &Connection, &mut Out, bool) -> HubResult<()> + Send>;

/// A [`HostOp::StopThen`] finished: whether the process is gone, and the continuation.
pub struct StopDone {
    pub(in crate::hub) reply: Option<(ConnId, u64)>,
    pub(in crate::hub) exited: bool,
    pub(in crate::hub) then: AfterStop,
}

/// Stop `key` (when there is a host) and wait until none of `pids` runs, at most `bound`.
async fn stop_and_wait(host: Option<Host>, key: ProcKey, pids: &[u32], bound: Duration) -> bool {
    tokio::time::timeout(bound, async {
        if let Some(host) = host {
            host.stop(key.raw()).await;
        }
        // The host's stop returns once the process it started is gone; a pid it does not
        // know (a Lead bound by an older core) is watched until it is gone too.
        while pids.iter().any(|&p| process_alive(p)) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .is_ok()
}

/// Run `ops` against `host`, reporting to the hub through `hub`. Without a host only
/// [`HostOp::StopThen`] does anything (it waits for its pids).
pub(in crate::hub) fn run(
    host: Option<&Host>,
    ops: Vec<HostOp>,
    hub: &mpsc::WeakSender<HubCommand>,
) {
    for op in ops {
        let host = host.cloned();
        let Some(tx) = hub.upgrade() else { return };
        tokio::spawn(async move {
            if let HostOp::StopThen {
                key,
                pids,
                bound,
                reply,
                then,
            } = op
            {
                let exited = stop_and_wait(host, key, &pids, bound).await;
                let done = StopDone {
                    reply,
                    exited,
                    then,
                };
                let _ = tx.send(HubCommand::Stopped(Box::new(done))).await;
                return;
            }
            let Some(host) = host else { return };
            let (key, reply, result) = match op {
                HostOp::Launch { spec, reply } => {
                    let key = ProcKey::of(spec.worker);
                    (key, reply, host.launch(*spec).await)
                }
                HostOp::Adopt { key, pane, nonce } => {
                    (key, None, host.adopt(key.raw(), pane, nonce).await)
                }
                HostOp::Stop { key } => {
                    host.stop(key.raw()).await;
                    return;
                }
                HostOp::StopThen { .. } => unreachable!("handled above"),
            };
            let done = LaunchDone {
                key,
                reply,
                result: result.map_err(|e| e.to_string()),
            };
            let _ = tx.send(HubCommand::ProcLaunched(Box::new(done))).await;
        });
    }
}

/// The hub's worker host: the actor's handle and what delegating needs to know.
pub(in crate::hub) struct HostLink {
    pub host: Host,
    pub backend: Backend,
    /// The shepherd extension every worker loads.
    pub extension: PathBuf,
}

/// Start the worker host for this core; its exit reports become
/// [`HubCommand::ProcExited`]. `None` when the core was started without one (tests of
/// other parts): delegating is then refused with the reason.
pub(in crate::hub) fn start_host(
    cfg: Option<&HostConfig>,
    hub: mpsc::WeakSender<HubCommand>,
) -> Option<HostLink> {
    let cfg = cfg?.clone();
    let (events, mut rx) = mpsc::channel(256);
    let link = HostLink {
        backend: cfg.backend,
        extension: cfg.extension.clone(),
        host: Host::start(cfg, events),
    };
    tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            let Some(tx) = hub.upgrade() else { break };
            let crate::workers::host::HostEvent::Exited {
                worker,
                code,
                nonce,
            } = event;
            let cmd = HubCommand::ProcExited {
                key: ProcKey::of(worker),
                code,
                nonce,
            };
            if tx.send(cmd).await.is_err() {
                break;
            }
        }
    });
    Some(link)
}

impl State {
    /// A [`HostOp::StopThen`] finished: run its continuation, answering its request on
    /// failure.
    pub(in crate::hub) fn stopped(&mut self, done: StopDone, db: &Connection, out: &mut Out) {
        let (then, exited) = (done.then, done.exited);
        if let Err(err) = crate::hub::atomically(db, || then(self, db, out, exited)) {
            match done.reply {
                Some((conn, id)) => out.error(conn, Some(id), err),
                None => tracing::warn!("after a process stopped: {}", err.message),
            }
        }
    }
}
