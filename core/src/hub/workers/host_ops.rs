//! Process work for the worker host, queued by the hub while it handles a batch and
//! started only after the batch committed (a worker's row and task are durable before its
//! process exists). Each operation runs on its own task and reports back to the hub as a
//! [`HubCommand`], so the hub never waits for a process. The host keys processes by an
//! `i64`: a worker's id, or an assignment's Lead ([`crate::workers::launch::ProcKey`]).

use tokio::sync::mpsc;

use crate::hub::{ConnId, HubCommand};
use std::path::PathBuf;

use crate::workers::host::{Backend, Host, HostConfig, Launched};
use crate::workers::launch::{LaunchSpec, ProcKey};

/// One thing to do to a worker's process.
pub(in crate::hub) enum HostOp {
    /// Start it; `reply`: the `delegate_agent` / `continue_agent` request that waits for it.
    Launch {
        spec: Box<LaunchSpec>,
        reply: Option<(ConnId, u64)>,
    },
    /// Stop it (idempotent).
    Stop { key: ProcKey },
    /// After a core restart: find its tmux pane again.
    Adopt { key: ProcKey, pane: String },
}

/// How a launch or adoption ended, as the hub hears it.
pub struct LaunchDone {
    pub key: ProcKey,
    pub reply: Option<(ConnId, u64)>,
    pub result: Result<Launched, String>,
}

/// Run `ops` against `host`, reporting to the hub through `hub`.
pub(in crate::hub) fn run(host: &Host, ops: Vec<HostOp>, hub: &mpsc::WeakSender<HubCommand>) {
    for op in ops {
        let host = host.clone();
        let Some(tx) = hub.upgrade() else { return };
        tokio::spawn(async move {
            let (key, reply, result) = match op {
                HostOp::Launch { spec, reply } => {
                    let key = ProcKey::of(spec.worker);
                    (key, reply, host.launch(*spec).await)
                }
                HostOp::Adopt { key, pane } => (key, None, host.adopt(key.raw(), pane).await),
                HostOp::Stop { key } => {
                    host.stop(key.raw()).await;
                    return;
                }
            };
            let done = LaunchDone {
                key,
                reply,
                result: result.map_err(|e| e.to_string()),
            };
            let _ = tx.send(HubCommand::WorkerLaunched(Box::new(done))).await;
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
/// [`HubCommand::WorkerExited`]. `None` when the core was started without one (tests of
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
            let crate::workers::host::HostEvent::Exited { worker, code } = event;
            let cmd = match ProcKey::of(worker) {
                ProcKey::Worker(worker) => HubCommand::WorkerExited { worker, code },
                ProcKey::Lead(assignment) => HubCommand::LeadExited { assignment, code },
            };
            if tx.send(cmd).await.is_err() {
                break;
            }
        }
    });
    Some(link)
}
