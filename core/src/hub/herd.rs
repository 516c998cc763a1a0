//! # The herd's Chief across linked cores
//!
//! One Chief for the whole herd, its lease held on the home core. Mail along its edges
//! crosses a link as [`HostMail`], kept by the sending core (`store::host_mail`) until the
//! receiving core has stored it, and stored there once per sender's id, so a dropped link
//! or a kill -9 of either core loses and doubles nothing.
//!
//! - **On a linked host** (this core's client of kind `core` is its home core): `link_herd`
//!   names the herd's Chief (kept in the store, so it outlives the link and a restart). A
//!   Manager's `message_supervisor`, or a Lead's with no Manager here, that would go to the
//!   human goes up to that Chief instead: kept, sent as the event `host_mail` (again after
//!   each `link_herd`) until `host_mail_ack` names it. `deliver_host_mail` stores the Chief's mail to one of its
//!   staff here, checked by this core's own rules (the target reports to no one here).
//! - **On the home core**: the links pass the far cores' `host_mail` on (`LinkNews::Mail`):
//!   stored for the Chief once, shown to the bridges, acknowledged after the commit. The
//!   Chief's `message_staff` to a session on a linked host is kept for that host and
//!   handed to its link after the commit, and all of it again each time the link comes
//!   up; the far core's `host_mail_stored` forgets it, a refusal is said to the Chief.

use rusqlite::Connection;

use super::{ConnId, Cx, HubError, HubResult, Out, State, atomically};
use crate::clock::now_ms;
use crate::hosts::{LinkNews, ToFar};
use crate::protocol::requests::{DeliverHostMail, HostMailAck, LinkHerd};
use crate::protocol::{
    ClientKind, DeliveryKind, EdgeKind, EdgeMessage, ErrorCode, HerdChief, HostMail, MessageId,
    ReportsTo, Role, Sender, ServerMsg, SessionInfo, Superior, senders,
};
use crate::store::host_mail::{self, HOME};
use crate::store::{self, messages::NewMessage};

/// This core as a linked host: the home core's connection (while it is linked) and the
/// Chief it last named (kept in the store: mail up waits for the link to come back).
#[derive(Default)]
pub(super) struct HerdLink {
    conn: Option<ConnId>,
    chief: Option<HerdChief>,
}

impl HerdLink {
    /// As the store last kept it, not linked yet.
    pub(super) fn load(db: &Connection) -> HerdLink {
        HerdLink {
            conn: None,
            chief: host_mail::herd_chief(db).ok().flatten(),
        }
    }
}

/// Refuse anything but a linked core.
fn only_a_link(cx: Cx) -> HubResult<()> {
    match cx.kind {
        ClientKind::Core => Ok(()),
        _ => Err(HubError::new(
            ErrorCode::Forbidden,
            senders::ONLY_A_LINK.message,
        )),
    }
}

/// The sender of mail that came over a link: the session as the far side named it.
fn sender_of(mail: &HostMail) -> Sender {
    Sender {
        kind: ClientKind::Pi,
        session_id: Some(mail.from_id.clone()),
        name: mail.from_name.clone(),
    }
}

impl State {
    // ---- this core as a linked host ---------------------------------------------------

    /// `link_herd`: the home core names the herd's Chief; mail kept for it goes now.
    pub(super) fn link_herd(
        &mut self,
        cx: Cx,
        req: LinkHerd,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        only_a_link(cx)?;
        if req.chief != self.herd.chief {
            host_mail::set_herd_chief(db, req.chief.as_ref())?;
        }
        self.herd = HerdLink {
            conn: Some(cx.conn),
            chief: req.chief,
        };
        out.send(cx.conn, &ServerMsg::HerdLinked { id: cx.id });
        for mail in host_mail::pending(db, HOME)? {
            out.send(cx.conn, &ServerMsg::HostMailed { mail });
        }
        Ok(())
    }

    /// The home core's connection closed: mail up waits until it links again.
    pub(super) fn herd_dropped(&mut self, conn: ConnId) {
        if self.herd.conn == Some(conn) {
            self.herd.conn = None;
        }
    }

    /// `message_supervisor` from `me`, whom nobody here supervises, to the herd's Chief:
    /// kept until the home core stored it, sent now if it is linked. Where it went.
    pub(super) fn mail_up(
        &self,
        me: &SessionInfo,
        text: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<Option<(ReportsTo, MessageId, bool)>> {
        let Some(chief) = &self.herd.chief else {
            return Ok(None);
        };
        let mail = HostMail {
            id: 0,
            kind: EdgeKind::Supervisor,
            from_id: me.id.clone(),
            from_name: me.name.clone(),
            from_role: me.role,
            to_id: chief.session_id.clone(),
            to_name: chief.session_name.clone(),
            text: text.to_string(),
            created_at: now_ms(),
        };
        let mail = host_mail::keep(db, HOME, mail)?;
        if let Some(conn) = self.herd.conn {
            out.send(conn, &ServerMsg::HostMailed { mail: mail.clone() });
        }
        let to = ReportsTo {
            to: Superior::Chief,
            session_id: Some(chief.session_id.clone()),
            session_name: Some(chief.session_name.clone()),
        };
        Ok(Some((
            to,
            MessageId::from(mail.id),
            self.herd.conn.is_some(),
        )))
    }

    /// `host_mail_ack`: the home core stored these.
    pub(super) fn host_mail_ack(
        &mut self,
        cx: Cx,
        req: HostMailAck,
        db: &Connection,
    ) -> HubResult<()> {
        only_a_link(cx)?;
        host_mail::stored(db, HOME, &req.ids)?;
        Ok(())
    }

    /// `deliver_host_mail`: the herd's Chief's mail to one of its staff here, stored once.
    pub(super) fn deliver_host_mail(
        &mut self,
        cx: Cx,
        req: DeliverHostMail,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        only_a_link(cx)?;
        let (id, mail) = (req.id, req.mail());
        let origin = req.origin;
        if !host_mail::seen(db, &origin, mail.id)? {
            atomically(db, || {
                let target = store::sessions::get_uncounted(db, &mail.to_id)?.ok_or_else(|| {
                    HubError::new(
                        ErrorCode::UnknownSession,
                        format!("no session {} on this host", mail.to_id),
                    )
                })?;
                let above = self.reports_to(&target, db)?;
                let staff = matches!(target.role, Role::Manager | Role::Lead | Role::Supervisor);
                if mail.kind != EdgeKind::Staff || !staff || above.to != Superior::Human {
                    return Err(HubError::new(
                        ErrorCode::Forbidden,
                        format!(
                            "{} on this host is not the herd's Chief's staff: it reports to its {:?} here{}",
                            target.name,
                            above.to,
                            above
                                .session_name
                                .map(|n| format!(" ({n})"))
                                .unwrap_or_default()
                        ),
                    ));
                }
                let body = format!(
                    "From the chief ({} {}, on the home core): {}",
                    mail.from_name, mail.from_id, mail.text
                );
                let from = sender_of(&mail);
                let message = NewMessage {
                    created_at: now_ms(),
                    ..NewMessage::plain(&target.id, DeliveryKind::StaffMessage, &body, &from)
                };
                self.mail(message, db, out)?;
                host_mail::mark_seen(db, &origin, mail.id)?;
                Ok(())
            })?;
        }
        out.send(
            cx.conn,
            &ServerMsg::HostMailStored {
                id,
                mail_id: mail.id,
            },
        );
        Ok(())
    }

    // ---- the home core ----------------------------------------------------------------

    /// The herd's Chief changed (or may have): tell the links.
    pub(super) fn herd_chief_changed(&self, db: &Connection) -> HubResult<()> {
        let chief = store::leases::get(db, Role::Chief, None)?.map(|l| HerdChief {
            session_id: l.session_id,
            session_name: l.session_name,
        });
        self.links.set_chief(chief);
        Ok(())
    }

    /// What a link says about mail between the cores.
    pub(super) fn link_news(&mut self, news: LinkNews, db: &Connection, out: &mut Out) {
        let done = match news {
            LinkNews::Up { host } => host_mail::pending(db, &host)
                .map(|kept| {
                    for mail in kept {
                        out.to_far.push((host.clone(), ToFar::Mail(mail)));
                    }
                })
                .map_err(HubError::from),
            LinkNews::Mail { host, origin, mail } => {
                atomically(db, || self.mail_from_host(&host, &origin, mail, db, out))
            }
            LinkNews::Stored { host, id } => host_mail::stored(db, &host, &[id])
                .map(drop)
                .map_err(HubError::from),
            LinkNews::Refused { host, id, why } => {
                atomically(db, || self.mail_refused(&host, id, &why, db, out))
            }
        };
        if let Err(err) = done {
            tracing::error!("mail between the cores: {}", err.message);
        }
    }

    /// Mail up from `host`'s core (`origin`): for the Chief, stored once; acknowledged.
    fn mail_from_host(
        &mut self,
        host: &str,
        origin: &str,
        mail: HostMail,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        if !host_mail::seen(db, origin, mail.id)? {
            // The Chief now; the one it was sent to when none holds the lease.
            let (chief, chief_name) = match store::leases::get(db, Role::Chief, None)? {
                Some(l) => (l.session_id, l.session_name),
                None => (mail.to_id.clone(), mail.to_name.clone()),
            };
            let body = format!(
                "Message from {} {} ({}) on {host}: {}",
                mail.from_role.as_str(),
                mail.from_name,
                mail.from_id,
                mail.text
            );
            let from = sender_of(&mail);
            let message = NewMessage {
                created_at: now_ms(),
                ..NewMessage::plain(&chief, DeliveryKind::SupervisorMessage, &body, &from)
            };
            let mailed = self.mail(message, db, out)?;
            host_mail::mark_seen(db, origin, mail.id)?;
            let message = EdgeMessage {
                kind: EdgeKind::Supervisor,
                from_id: mail.from_id.clone(),
                from_name: format!("{host} · {}", mail.from_name),
                from_role: mail.from_role,
                to_id: chief,
                to_name: chief_name,
                to_role: Role::Chief,
                text: mail.text.clone(),
                message_id: mailed.id,
                created_at: now_ms(),
            };
            self.presence
                .broadcast(&ServerMsg::EdgeMessaged { message }, out);
        }
        out.to_far.push((host.to_string(), ToFar::Ack(mail.id)));
        Ok(())
    }

    /// `host` refused mail `id` for good: forget it and tell its sender why.
    fn mail_refused(
        &mut self,
        host: &str,
        id: u64,
        why: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let kept = host_mail::pending(db, host)?;
        if let Some(mail) = kept.into_iter().find(|m| m.id == id) {
            tracing::warn!(host, to = %mail.to_name, %why, "a linked host refused the Chief's mail");
            let text = format!(
                "Your message to {} on {host} was not delivered: {why}",
                mail.to_name
            );
            let from = Sender {
                kind: ClientKind::Core,
                session_id: None,
                name: host.to_string(),
            };
            let message =
                NewMessage::plain(&mail.from_id, DeliveryKind::StaffMessage, &text, &from);
            self.mail(message, db, out)?;
        }
        host_mail::stored(db, host, &[id])?;
        Ok(())
    }

    /// `message_staff` from the Chief `me` to `target`, a session on a linked host: kept
    /// for that host until it stored it, handed to its link after the commit.
    pub(super) fn mail_down(
        &self,
        cx: Cx,
        me: &SessionInfo,
        target: SessionInfo,
        text: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let host = target.host.clone().unwrap_or_default();
        let mail = HostMail {
            id: 0,
            kind: EdgeKind::Staff,
            from_id: me.id.clone(),
            from_name: me.name.clone(),
            from_role: me.role,
            to_id: target.id.clone(),
            to_name: target.name.clone(),
            text: text.to_string(),
            created_at: now_ms(),
        };
        let mail = host_mail::keep(db, &host, mail)?;
        out.to_far.push((host, ToFar::Mail(mail.clone())));
        out.send(
            cx.conn,
            &ServerMsg::Sent {
                id: cx.id,
                message_id: MessageId::from(mail.id),
                session_id: target.id,
                session_name: target.name,
                connected: target.connected,
            },
        );
        Ok(())
    }

    /// The Chief's staff on a linked host named `who`: a Manager there, or a Lead (its
    /// own core checks that nobody there supervises it).
    pub(super) fn staff_on_host(&self, who: &str) -> Option<SessionInfo> {
        self.links
            .find_session(who)
            .filter(|s| matches!(s.role, Role::Manager | Role::Lead | Role::Supervisor))
    }
}
