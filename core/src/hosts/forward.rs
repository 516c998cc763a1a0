//! Requests forwarded over a link: a human's `answer` or `send` for a host goes to the far
//! core under an id of the link's own; the far core's response comes back to the hub as a
//! frame for the connection that asked, under the asker's id. A request still waiting when
//! the link drops is answered `host_unreachable`, saying it may have been carried out (the
//! far core applies each request once, by its own rules; the asker lists again to see).

use std::collections::HashMap;

use bytes::Bytes;
use tokio::sync::mpsc;

use super::Forward;
use super::{ConnId, FromLink};
use crate::protocol::{ClientMsg, ErrorCode, ServerMsg, frame};

/// The first id a link gives a forwarded request (the link client's own calls count up
/// from 1, far below).
const FIRST_ID: u64 = 1 << 40;

/// One link's forwarded requests that wait for the far core, and the way back to the hub.
pub(super) struct Answers {
    answers: mpsc::Sender<FromLink>,
    /// This link's id → the asker's connection and id.
    waiting: HashMap<u64, (ConnId, u64)>,
    next_id: u64,
}

impl Answers {
    pub(super) fn new(answers: mpsc::Sender<FromLink>) -> Answers {
        Answers {
            answers,
            waiting: HashMap::new(),
            next_id: FIRST_ID,
        }
    }

    /// `forward`'s request under a fresh id of this link's, now waiting for its answer.
    pub(super) fn outgoing(&mut self, forward: &Forward) -> Option<ClientMsg> {
        let id = self.next_id;
        self.next_id += 1;
        let msg = with_id(&forward.msg, id)?;
        self.waiting.insert(id, (forward.conn, forward.id));
        Some(msg)
    }

    /// If `msg` answers a forwarded request, hand it to its asker and say so; asks in it
    /// are marked as `host`'s.
    pub(super) async fn answered(&mut self, host: &str, msg: &ServerMsg) -> bool {
        let Some((conn, id)) = msg.response_id().and_then(|id| self.waiting.remove(&id)) else {
            return false;
        };
        let mut msg = msg.clone();
        mark(&mut msg, host);
        self.reply(conn, id, &msg).await;
        true
    }

    /// Hand the hub news of mail between the cores.
    pub(super) async fn news(&self, news: super::LinkNews) {
        let _ = self.answers.send(FromLink::News(news)).await;
    }

    /// Hand the hub an event the far core announced (its host already set).
    pub(super) async fn event(&self, msg: ServerMsg) {
        let _ = self.answers.send(FromLink::Event(Box::new(msg))).await;
    }

    /// The link dropped: every request still waiting is told it may have been carried
    /// out, and requests queued meanwhile that were never sent are refused.
    pub(super) async fn dropped(&mut self, host: &str, queued: &mut mpsc::Receiver<Forward>) {
        for (_, (conn, id)) in std::mem::take(&mut self.waiting) {
            let message = format!(
                "the link to host `{host}` dropped before `{host}` answered: it may have carried the request out; list again to see"
            );
            self.unreachable(conn, id, host, message).await;
        }
        while let Ok(f) = queued.try_recv() {
            let message =
                format!("host `{host}` is not connected; `shepherd hosts` shows its link");
            self.unreachable(f.conn, f.id, host, message).await;
        }
    }

    /// Answer `(conn, id)` with `host_unreachable`.
    async fn unreachable(&self, conn: ConnId, id: u64, host: &str, message: String) {
        let error = ServerMsg::Error {
            id: Some(id),
            code: ErrorCode::HostUnreachable,
            message,
            details: Some(serde_json::json!({ "host": host })),
        };
        self.reply(conn, id, &error).await;
    }

    /// Send `msg` to the asker `(conn, id)`, under its id.
    async fn reply(&self, conn: ConnId, id: u64, msg: &ServerMsg) {
        let Some(msg) = with_id(msg, id) else { return };
        let frame = Bytes::from(frame::encode(&msg));
        let _ = self.answers.send(FromLink::Answer { conn, frame }).await;
    }
}

/// Mark what a far core's answer names as `host`'s: its asks, reports, leases, pairings,
/// workers, projects, assignments and usage rows (the far core leaves `host` out of its own).
fn mark(msg: &mut ServerMsg, host: &str) {
    let host = || Some(host.to_string());
    match msg {
        ServerMsg::Asks { asks, .. } => asks.iter_mut().for_each(|a| a.host = host()),
        ServerMsg::Answered { ask, .. } => ask.host = host(),
        ServerMsg::Reports { reports, .. } => reports.iter_mut().for_each(|r| r.host = host()),
        ServerMsg::Roles { leases, .. } => leases.iter_mut().for_each(|l| l.host = host()),
        ServerMsg::RoleReleased { lease, .. } => lease.host = host(),
        ServerMsg::Pairings { pairings, .. } => pairings.iter_mut().for_each(|p| p.host = host()),
        ServerMsg::Paired { pairing, .. }
        | ServerMsg::Unpaired { pairing, .. }
        | ServerMsg::GoalSet { pairing, .. }
        | ServerMsg::LookRequested { pairing, .. } => pairing.host = host(),
        ServerMsg::WorkerIs { worker, .. } => worker.host = host(),
        ServerMsg::ApprovalIs { approval, .. } => approval.host = host(),
        ServerMsg::Approvals { approvals, .. } => {
            approvals.iter_mut().for_each(|a| a.host = host())
        }
        ServerMsg::UsageReported { report, .. } => {
            report.sessions.iter_mut().for_each(|s| s.host = host())
        }
        ServerMsg::Workers { workers, .. } => workers.iter_mut().for_each(|w| w.host = host()),
        ServerMsg::Projects { projects, .. } => {
            for p in projects {
                p.host = host();
                if let Some(lease) = &mut p.manager {
                    lease.host = host();
                }
                p.assignments.iter_mut().for_each(|a| a.host = host());
            }
        }
        _ => {}
    }
}

/// `msg` (a request or a response) with the id `id`.
fn with_id<T: serde::Serialize + serde::de::DeserializeOwned>(msg: &T, id: u64) -> Option<T> {
    let mut value = serde_json::to_value(msg).ok()?;
    value["id"] = serde_json::json!(id);
    serde_json::from_value(value).ok()
}
