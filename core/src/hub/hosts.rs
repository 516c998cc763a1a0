//! Linked hosts on the hub: `list_hosts` (each link as it stands now) and the human's
//! requests for a host (`answer`, `unanswer`, `send`, `interrupt`, the pairing requests
//! `supervise`, `set_goal`, `look`, `unpair`, the workers' `steer_agent` and
//! `close_agent`, `release_role`, and the listings `list_asks`, `list_reports`,
//! `list_roles`, `list_workers`, `list_projects`, `list_pairings`, `usage`, `peek`, `diff`, `send_file`, `new_session`, `continue_session`, `close_session` with `host`:
//! [`host_field`]), queued for the host's link after the batch commits. The links
//! run off the hub (`crate::hosts`); the hub reads the latest each one published and never
//! waits for a link.

use tokio::sync::mpsc;

use super::{Cx, HubCommand, HubError, HubResult, Out, State};
use crate::hosts::{Forward, FromLink, Unreachable};
use crate::protocol::{ClientKind, ClientMsg, ErrorCode, ServerMsg};

/// Hand what the links have to the hub: the far cores' answers to forwarded requests, as
/// frames for the connections that asked, and their events, for the herd's watchers.
pub(super) async fn relay_from_links(
    mut from_links: mpsc::Receiver<FromLink>,
    hub: mpsc::WeakSender<HubCommand>,
) {
    while let Some(news) = from_links.recv().await {
        let Some(hub) = hub.upgrade() else { break };
        let command = match news {
            FromLink::Answer { conn, frame } => HubCommand::Frame { conn, bytes: frame },
            FromLink::Event(msg) => HubCommand::HostEvent(msg),
            FromLink::News(news) => HubCommand::LinkNews(Box::new(news)),
        };
        if hub.send(command).await.is_err() {
            break;
        }
    }
}

/// The `host` field of a request that may name a linked host (`None` for the others): the
/// one list of what the home core passes on.
pub(super) fn host_field(msg: &mut ClientMsg) -> Option<&mut Option<String>> {
    match msg {
        ClientMsg::Answer(req) => Some(&mut req.host),
        ClientMsg::Unanswer(req) => Some(&mut req.host),
        ClientMsg::Send(req) => Some(&mut req.host),
        ClientMsg::Interrupt(req) => Some(&mut req.host),
        ClientMsg::ListAsks(req) => Some(&mut req.host),
        ClientMsg::ListReports(req) => Some(&mut req.host),
        ClientMsg::ListRoles(req) => Some(&mut req.host),
        ClientMsg::ListWorkers(req) => Some(&mut req.host),
        ClientMsg::ListProjects(req) => Some(&mut req.host),
        ClientMsg::Usage(req) => Some(&mut req.host),
        ClientMsg::ListPairings(req) => Some(&mut req.host),
        ClientMsg::Supervise(req) => Some(&mut req.host),
        ClientMsg::SetGoal(req) => Some(&mut req.host),
        ClientMsg::Look(req) => Some(&mut req.host),
        ClientMsg::Unpair(req) => Some(&mut req.host),
        ClientMsg::SteerAgent(req) => Some(&mut req.host),
        ClientMsg::CloseAgent(req) => Some(&mut req.host),
        ClientMsg::ReleaseRole(req) => Some(&mut req.host),
        ClientMsg::ListApprovals(req) => Some(&mut req.host),
        ClientMsg::DecideApproval(req) => Some(&mut req.host),
        ClientMsg::Peek(req) => Some(&mut req.host),
        ClientMsg::Diff(req) => Some(&mut req.host),
        ClientMsg::SendFile(req) => Some(&mut req.host),
        ClientMsg::NewSession(req) => Some(&mut req.host),
        ClientMsg::ContinueSession(req) => Some(&mut req.host),
        ClientMsg::CloseSession(req) => Some(&mut req.host),
        _ => None,
    }
}

/// The refusal of a request for `host` its link could not take.
pub(super) fn unreachable(host: &str, Unreachable(message): Unreachable) -> HubError {
    HubError::new(ErrorCode::HostUnreachable, message)
        .with_details(serde_json::json!({ "host": host }))
}

impl State {
    /// Hand `msg` (its `host` taken out) to `host`'s link (after the commit); the far
    /// core's answer reaches the asker later, under its id. Only the human's own clients reach a host this way, and
    /// the herd's Chief answering a question addressed to it: a linked core passes nothing
    /// on (no request travels two links).
    pub(super) fn forward(
        &self,
        cx: Cx,
        host: &str,
        mut msg: ClientMsg,
        db: &rusqlite::Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        match (&mut msg, cx.kind) {
            (_, ClientKind::Cli | ClientKind::Bridge) => {}
            // The herd's Chief answers a linked host's question addressed to it.
            (ClientMsg::Answer(req), ClientKind::Pi) => {
                req.by = Some(self.chief_answering(cx, host, req.ask, db)?);
            }
            _ => {
                return Err(HubError::new(
                    ErrorCode::Forbidden,
                    "only the human's CLI or a bridge (and the herd's Chief, answering a question to it) reaches a linked host through this core",
                ));
            }
        }
        self.links.check(host).map_err(|u| unreachable(host, u))?;
        let forward = Forward {
            msg,
            conn: cx.conn,
            id: cx.id,
        };
        out.forwards.push((host.to_string(), forward));
        Ok(())
    }

    /// A linked host's event (its `host` set) goes to this core's bridges and CLI
    /// watchers: not to Pi sessions (theirs is this host) nor to a linked core (nothing
    /// travels two links).
    pub(super) fn host_event(&self, msg: &ServerMsg, db: &rusqlite::Connection, out: &mut Out) {
        // Where the link resumes its reports after a restart of this core.
        if let ServerMsg::ReportPosted { report } = msg
            && let Some(host) = &report.host
            && let Err(e) = crate::store::host_mail::set_report_cursor(db, host, report.id)
        {
            tracing::error!(host, error = %e, "keeping a linked host's report cursor");
        }
        self.presence
            .broadcast_to(msg, super::presence::sees_the_herd, out);
    }

    pub(super) fn list_hosts(&self, cx: Cx, out: &mut Out) -> HubResult<()> {
        let hosts = self.links.list();
        out.send(cx.conn, &ServerMsg::Hosts { id: cx.id, hosts });
        Ok(())
    }
}
