//! Mail along an edge: `message_supervisor` (up, or a report to the human),
//! `message_staff` (down) and `message_peer` (across), each stored as mail to the target
//! and shown to the bridges when it touches a Manager or the Chief.

use std::sync::Arc;

use rusqlite::Connection;

use super::role_label;
use crate::clock::now_ms;
use crate::hub::mail::Mailed;
use crate::hub::projects::ProjectMail;
use crate::hub::reports::Posted;
use crate::hub::{Cx, HubError, HubResult, Out, State};
use crate::protocol::requests::{MessagePeer, MessageStaff, MessageSupervisor};
use crate::protocol::{
    DeliveryKind, EdgeKind, EdgeMessage, ErrorCode, MessageId, ReportKind, ReportsTo, Role,
    ServerMsg, SessionInfo, Superior,
};
use crate::store::messages::NewMessage;

/// One edge mail travels along: its kind, its sender and its receiver.
#[derive(Clone, Copy)]
struct Edge<'a> {
    kind: EdgeKind,
    from: &'a SessionInfo,
    to: &'a SessionInfo,
}

impl<'a> Edge<'a> {
    fn new(kind: EdgeKind, from: &'a SessionInfo, to: &'a SessionInfo) -> Edge<'a> {
        Edge { kind, from, to }
    }
}

impl State {
    /// `message_supervisor`: mail to whom the caller reports (the human gets a report).
    pub(in crate::hub) fn message_supervisor(
        &mut self,
        cx: Cx,
        req: MessageSupervisor,
        me: Arc<SessionInfo>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let text = nonempty(req.text, "message")?;
        let to = self.reports_to(&me, db)?;
        // Nobody here is above it, but this host is linked into a herd with a Chief.
        if to == ReportsTo::human()
            && let Some((to, message_id, connected)) = self.mail_up(&me, &text, db, out)?
        {
            out.send(
                cx.conn,
                &ServerMsg::Routed {
                    id: cx.id,
                    to,
                    message_id: Some(message_id),
                    report_id: None,
                    connected,
                },
            );
            return Ok(());
        }
        // An assigned Lead's messages belong to its repository's Manager role: tagged so
        // the next Manager gets what this one never read (the role's mailbox when none).
        let lead = match to.to {
            Superior::Manager => self.assigned_lead(&me.id, db)?,
            _ => None,
        };
        let (message_id, report_id, connected) = match &to.session_id {
            _ if lead.is_some() => {
                let lead = lead.expect("checked");
                let body = format!(
                    "Message from {} {} ({}): {text}",
                    me.role.as_str(),
                    me.name,
                    me.id
                );
                let mailed = self.project_mail(
                    ProjectMail {
                        repo_id: &lead.assignment.repo_id,
                        assignment: Some(lead.assignment.id),
                        kind: DeliveryKind::SupervisorMessage,
                        text: &body,
                        from: &Self::sender(&me),
                    },
                    db,
                    out,
                )?;
                if let Some(holder) = &to.session_id {
                    let target = self.session_uncounted(db, holder)?;
                    self.edge_shown(
                        Edge::new(EdgeKind::Supervisor, &me, &target),
                        &text,
                        mailed.id,
                        out,
                    );
                }
                (Some(mailed.id), None, mailed.connected)
            }
            None => {
                let posted = Posted {
                    text: text.clone(),
                    kind: ReportKind::Report,
                    key: None,
                };
                let report = self.store_report(me.id.clone(), posted, true, db, out)?;
                (None, Some(report.id), self.presence.has_subscribers())
            }
            Some(sup) => {
                let target = self.session_uncounted(db, sup)?;
                let body = format!(
                    "Message from {} {} ({}): {text}",
                    me.role.as_str(),
                    me.name,
                    me.id
                );
                let mailed = self.edge_mail(
                    Edge::new(EdgeKind::Supervisor, &me, &target),
                    &body,
                    &text,
                    db,
                    out,
                )?;
                (Some(mailed.id), None, mailed.connected)
            }
        };
        out.send(
            cx.conn,
            &ServerMsg::Routed {
                id: cx.id,
                to,
                message_id,
                report_id,
                connected,
            },
        );
        Ok(())
    }

    /// Store mail along an edge and show it to the bridges when it touches a Manager or
    /// the Chief.
    fn edge_mail(
        &self,
        edge: Edge<'_>,
        body: &str,
        text: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<Mailed> {
        let Edge { kind, from, to } = edge;
        let delivery = match kind {
            EdgeKind::Supervisor => DeliveryKind::SupervisorMessage,
            EdgeKind::Staff => DeliveryKind::StaffMessage,
            EdgeKind::Peer => DeliveryKind::PeerMessage,
        };
        let sender = Self::sender(from);
        let now = now_ms();
        let mailed = self.mail(
            NewMessage {
                created_at: now,
                ..NewMessage::plain(&to.id, delivery, body, &sender)
            },
            db,
            out,
        )?;
        self.edge_shown(edge, text, mailed.id, out);
        Ok(mailed)
    }

    /// Show mail along an edge to the bridges when it touches a Manager or the Chief.
    fn edge_shown(&self, edge: Edge<'_>, text: &str, message_id: MessageId, out: &mut Out) {
        let Edge { kind, from, to } = edge;
        let staff_role = |r: Role| matches!(r, Role::Manager | Role::Chief);
        if kind != EdgeKind::Peer && (staff_role(from.role) || staff_role(to.role)) {
            let message = EdgeMessage {
                kind,
                from_id: from.id.clone(),
                from_name: from.name.clone(),
                from_role: from.role,
                to_id: to.id.clone(),
                to_name: to.name.clone(),
                to_role: to.role,
                text: text.to_string(),
                message_id,
                created_at: now_ms(),
            };
            self.presence
                .broadcast(&ServerMsg::EdgeMessaged { message }, out);
        }
    }

    /// `message_staff`: steer one of the caller's staff.
    pub(in crate::hub) fn message_staff(
        &mut self,
        cx: Cx,
        req: MessageStaff,
        me: Arc<SessionInfo>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let text = nonempty(req.text, "message")?;
        let target = match self.my_staff(&me, &req.session, db) {
            Ok(target) => target,
            // The herd's Chief reaches its staff on linked hosts too.
            Err(e) if e.code == ErrorCode::UnknownSession && me.role == Role::Chief => {
                match self.staff_on_host(&req.session) {
                    Some(target) => return self.mail_down(cx, &me, target, &text, db, out),
                    None => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        let body = format!(
            "From the {} ({} {}): {text}",
            role_label(me.role, me.project.as_deref()),
            me.name,
            me.id
        );
        let mailed = self.edge_mail(
            Edge::new(EdgeKind::Staff, &me, &target),
            &body,
            &text,
            db,
            out,
        )?;
        sent(cx, &target, mailed, out);
        Ok(())
    }

    /// `message_peer`: Lead to Lead, Manager to Manager; never to the Chief.
    pub(in crate::hub) fn message_peer(
        &mut self,
        cx: Cx,
        req: MessagePeer,
        me: Arc<SessionInfo>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let text = nonempty(req.text, "message")?;
        let target = match self.my_peer(&me, &req.session, db) {
            Ok(target) => target,
            // A peer on another host of the herd.
            Err(e) if e.code == ErrorCode::UnknownSession => {
                match self.peer_elsewhere(cx, &me, &req.session, &text, db, out)? {
                    true => return Ok(()),
                    false => return Err(e),
                }
            }
            Err(e) => return Err(e),
        };
        // Joined rather than formatted: this runs for every message between peers.
        let body = [
            "Peer message from ",
            &me.name,
            " (",
            me.id.as_str(),
            "): ",
            &text,
        ]
        .concat();
        let mailed = self.edge_mail(
            Edge::new(EdgeKind::Peer, &me, &target),
            &body,
            &text,
            db,
            out,
        )?;
        sent(cx, &target, mailed, out);
        Ok(())
    }
}

/// Answer a request with `sent` for mail to `target`.
fn sent(cx: Cx, target: &SessionInfo, mailed: Mailed, out: &mut Out) {
    out.send(
        cx.conn,
        &ServerMsg::Sent {
            id: cx.id,
            message_id: mailed.id,
            session_id: target.id.clone(),
            session_name: target.name.clone(),
            connected: mailed.connected,
        },
    );
}

fn nonempty(text: String, what: &str) -> HubResult<String> {
    if text.trim().is_empty() {
        return Err(HubError::new(
            ErrorCode::InvalidArgument,
            format!("{what} text must not be empty"),
        ));
    }
    Ok(text)
}
