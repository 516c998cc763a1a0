//! Process work for the worker host, queued by the hub while it handles a batch and
//! started only after the batch committed (a worker's row and task are durable before its
//! process exists). Each operation runs on its own task and reports back to the hub as a
//! [`HubCommand`], so the hub never waits for a process.

use tokio::sync::mpsc;

use crate::hub::{ConnId, HubCommand};
use crate::protocol::WorkerId;
use crate::workers::host::{Host, Launched};
use crate::workers::launch::LaunchSpec;

/// One thing to do to a worker's process.
pub(in crate::hub) enum HostOp {
    /// Start it; `reply`: the `delegate_agent` / `continue_agent` request that waits for it.
    Launch {
        spec: Box<LaunchSpec>,
        reply: Option<(ConnId, u64)>,
    },
    /// Stop it (idempotent).
    Stop { worker: WorkerId },
    /// After a core restart: find its tmux pane again.
    Adopt { worker: WorkerId, pane: String },
}

/// How a launch or adoption ended, as the hub hears it.
pub struct LaunchDone {
    pub worker: WorkerId,
    pub reply: Option<(ConnId, u64)>,
    pub result: Result<Launched, String>,
}

/// Run `ops` against `host`, reporting to the hub through `hub`.
pub(in crate::hub) fn run(host: &Host, ops: Vec<HostOp>, hub: &mpsc::WeakSender<HubCommand>) {
    for op in ops {
        let host = host.clone();
        let Some(tx) = hub.upgrade() else { return };
        tokio::spawn(async move {
            let (worker, reply, result) = match op {
                HostOp::Launch { spec, reply } => {
                    let worker = spec.worker;
                    (worker, reply, host.launch(*spec).await)
                }
                HostOp::Adopt { worker, pane } => (worker, None, host.adopt(worker, &pane).await),
                HostOp::Stop { worker } => {
                    host.stop(worker).await;
                    return;
                }
            };
            let done = LaunchDone {
                worker,
                reply,
                result: result.map_err(|e| e.to_string()),
            };
            let _ = tx.send(HubCommand::WorkerLaunched(Box::new(done))).await;
        });
    }
}

/// Start the worker host for this core; its exit reports become
/// [`HubCommand::WorkerExited`]. `None` (logged) when it cannot start: delegating is then
/// refused with the reason.
pub(in crate::hub) fn start_host(
    facts: &crate::hub::CoreFacts,
    hub: mpsc::WeakSender<HubCommand>,
) -> Option<Host> {
    let cfg = match crate::workers::host::HostConfig::new(&facts.workers, &facts.state_dir, &facts.socket) {
        Ok(cfg) => cfg,
        Err(e) => {
            tracing::warn!("managed workers are unavailable: {e}");
            return None;
        }
    };
    let (events, mut rx) = mpsc::channel(256);
    let host = Host::start(cfg, events);
    tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            let Some(tx) = hub.upgrade() else { break };
            let crate::workers::host::HostEvent::Exited { worker, code } = event;
            if tx.send(HubCommand::WorkerExited { worker: worker as u64, code }).await.is_err() {
                break;
            }
        }
    });
    Some(host)
}
