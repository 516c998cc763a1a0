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
//!   each `link_herd`) until `host_mail_ack` names it. `deliver_host_mail` stores the
//!   Chief's mail to one of its staff here, a peer's mail or a notice, checked by this
//!   core's own rules (the Chief's staff report to no one here; peers share a role).
//! - **On the home core**: the links pass the far cores' `host_mail` on (`LinkNews::Mail`):
//!   stored for the Chief once, shown to the bridges, acknowledged after the commit. The
//!   Chief's `message_staff` to a session on a linked host is kept for that host and
//!   handed to its link after the commit, and all of it again each time the link comes
//!   up; the far core's `host_mail_stored` forgets it, a refusal is said to the Chief.

use rusqlite::Connection;

use super::{ConnId, Cx, HubError, HubResult, Out, State, atomically};
use crate::clock::now_ms;
use crate::hosts::{LinkNews, ToFar};
use crate::hub::roles::{are_peers, question_text};
use crate::protocol::requests::{DeliverHostMail, HostMailAck, LinkHerd};
use crate::protocol::{
    Ask, ClientKind, DeliveryKind, EdgeKind, EdgeMessage, ErrorCode, HerdChief, HostMail,
    MessageId, ReportsTo, Role, Sender, ServerMsg, SessionId, SessionInfo, StaffMember, Superior,
    split_host,
};
use crate::store::host_mail::{self, HOME, Herd};
use crate::store::{self, messages::NewMessage};

/// This core as a linked host: the home core's connection (while it is linked) and the
/// Chief it last named (kept in the store: mail up waits for the link to come back).
#[derive(Default)]
pub(super) struct HerdLink {
    conn: Option<ConnId>,
    /// What the home core last said; `None` while no home core ever linked this one.
    herd: Option<Herd>,
}

impl HerdLink {
    /// As the store last kept it, not linked yet.
    pub(super) fn load(db: &Connection) -> HerdLink {
        HerdLink {
            conn: None,
            herd: host_mail::herd(db).ok().flatten(),
        }
    }

    fn chief(&self) -> Option<&HerdChief> {
        self.herd.as_ref()?.chief.as_ref()
    }
}

/// Mail of `kind` from session `from` to `to_id` (`to_name`), not kept yet (`id` 0).
fn mail_from(
    kind: EdgeKind,
    from: &SessionInfo,
    to_id: SessionId,
    to_name: String,
    text: &str,
) -> HostMail {
    HostMail {
        id: 0,
        kind,
        from_id: from.id.clone(),
        from_name: from.name.clone(),
        from_role: from.role,
        to_id,
        to_name,
        text: text.to_string(),
        created_at: now_ms(),
        from_host: None,
        notice: false,
        ask: None,
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
        let herd = Herd { chief: req.chief };
        if self.herd.herd.as_ref() != Some(&herd) {
            host_mail::set_herd(db, &herd)?;
            let chief = herd.chief.as_ref().map(|c| c.session_name.as_str());
            tracing::info!(
                chief = chief.unwrap_or("none"),
                "the home core named the herd's Chief"
            );
        }
        self.herd = HerdLink {
            conn: Some(cx.conn),
            herd: Some(herd),
        };
        out.send(cx.conn, &ServerMsg::HerdLinked { id: cx.id });
        for mail in host_mail::pending(db, HOME)? {
            out.send(cx.conn, &ServerMsg::HostMailed { mail });
        }
        Ok(())
    }

    /// The herd's Chief as the home core last named it (this core is a linked host).
    pub(super) fn herd_chief(&self) -> Option<&HerdChief> {
        self.herd.chief()
    }

    /// An `ask_supervisor` ask addressed to the herd's Chief: kept for the home core like
    /// mail up, the ask with it (it stays here, answered here).
    pub(super) fn ask_up(&self, ask: &Ask, db: &Connection, out: &mut Out) -> HubResult<()> {
        let Some(chief) = self.herd.chief() else {
            return Ok(());
        };
        let me = self.session_uncounted(db, &ask.session_id)?;
        let (to_id, to_name) = (chief.session_id.clone(), chief.session_name.clone());
        let mail = HostMail {
            ask: Some(ask.clone()),
            ..mail_from(EdgeKind::Supervisor, &me, to_id, to_name, &ask.question)
        };
        self.keep_up(mail, db, out)?;
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
        let Some(chief) = self.herd.chief() else {
            return Ok(None);
        };
        let (to_id, to_name) = (chief.session_id.clone(), chief.session_name.clone());
        let mail = mail_from(EdgeKind::Supervisor, me, to_id, to_name, text);
        let mail = self.keep_up(mail, db, out)?;
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

    /// Keep `mail` for the home core, and send it now if it is linked.
    fn keep_up(&self, mail: HostMail, db: &Connection, out: &mut Out) -> HubResult<HostMail> {
        let mail = host_mail::keep(db, HOME, mail)?;
        if let Some(conn) = self.herd.conn {
            out.send(conn, &ServerMsg::HostMailed { mail: mail.clone() });
        }
        Ok(mail)
    }

    /// `message_peer` from `me` to `who`, no peer here: a connected peer on a linked host
    /// (on the home core, which mirrors them), or, on a linked host, a session named
    /// `HOST:NAME` (or by an id unknown here) that the home core finds. `false` when
    /// neither: the caller's refusal stands.
    pub(super) fn peer_elsewhere(
        &self,
        cx: Cx,
        me: &SessionInfo,
        who: &str,
        text: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<bool> {
        let mail = |to_id, to_name| mail_from(EdgeKind::Peer, me, to_id, to_name, text);
        let sent = |message_id: u64, session_id: SessionId, session_name: String, connected| {
            ServerMsg::Sent {
                id: cx.id,
                message_id: MessageId::from(message_id),
                session_id,
                session_name,
                connected,
            }
        };
        if let Some(target) = self
            .links
            .find_session(who)
            .filter(|t| t.connected && !t.subagent && are_peers(me.role, t.role))
        {
            let host = target.host.clone().unwrap_or_default();
            let kept = host_mail::keep(db, &host, mail(target.id.clone(), target.name.clone()))?;
            out.to_far.push((host, ToFar::Mail(Box::new(kept.clone()))));
            out.send(cx.conn, &sent(kept.id, target.id, target.name, true));
            return Ok(true);
        }
        let named_elsewhere = split_host(who).0.is_some() || is_session_id(who);
        if self.herd.herd.is_none() || !named_elsewhere {
            return Ok(false);
        }
        let kept = self.keep_up(mail(SessionId::from(who), who.to_string()), db, out)?;
        let linked = self.herd.conn.is_some();
        out.send(
            cx.conn,
            &sent(kept.id, SessionId::from(who), who.to_string(), linked),
        );
        Ok(true)
    }

    /// `host_mail_ack`: the home core stored these.
    pub(super) fn host_mail_ack(&mut self, req: HostMailAck, db: &Connection) -> HubResult<()> {
        host_mail::stored(db, HOME, &req.ids)?;
        Ok(())
    }

    /// `deliver_host_mail`: mail from the home core for a session here, stored once.
    pub(super) fn deliver_host_mail(
        &mut self,
        cx: Cx,
        req: DeliverHostMail,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let (id, mail) = (req.id, req.mail());
        let origin = req.origin;
        if !host_mail::seen(db, &origin, mail.id)? {
            atomically(db, || {
                self.store_from_home(&mail, db, out)?;
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

    /// Mail the home core passed down, for a session here, checked by this core's rules:
    /// the Chief's to its staff (nobody here above it), a peer's to a peer, or a notice.
    fn store_from_home(&self, mail: &HostMail, db: &Connection, out: &mut Out) -> HubResult<()> {
        let target = store::sessions::get_uncounted(db, &mail.to_id)?.ok_or_else(|| {
            HubError::new(
                ErrorCode::UnknownSession,
                format!("no session {} on this host", mail.to_id),
            )
        })?;
        let from = sender_of(mail);
        let (kind, body) = match mail.kind {
            _ if mail.notice => (DeliveryKind::PeerMessage, mail.text.clone()),
            EdgeKind::Staff => {
                let above = self.reports_to(&target, db)?;
                if !is_staff(target.role) || above.to != Superior::Human {
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
                (DeliveryKind::StaffMessage, body)
            }
            EdgeKind::Peer => {
                if target.subagent || !are_peers(mail.from_role, target.role) {
                    return Err(HubError::new(
                        ErrorCode::Forbidden,
                        format!(
                            "{} here is a {}, not a peer of a {}: Leads message Leads, Managers Managers",
                            target.name,
                            target.role.as_str(),
                            mail.from_role.as_str()
                        ),
                    ));
                }
                let body = format!(
                    "Peer message from {} ({}) on {}: {}",
                    mail.from_name,
                    mail.from_id,
                    mail.from_host.as_deref().unwrap_or("the home core"),
                    mail.text
                );
                (DeliveryKind::PeerMessage, body)
            }
            EdgeKind::Supervisor => {
                return Err(HubError::new(
                    ErrorCode::InvalidArgument,
                    "mail to a supervisor goes up, not down a link",
                ));
            }
        };
        let message = NewMessage {
            created_at: now_ms(),
            ..NewMessage::plain(&target.id, kind, &body, &from)
        };
        self.mail(message, db, out)?;
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
                        out.to_far.push((host.clone(), ToFar::Mail(Box::new(mail))));
                    }
                })
                .map_err(HubError::from),
            LinkNews::Mail { host, origin, mail } => {
                atomically(db, || self.mail_from_host(&host, &origin, *mail, db, out))
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
            match mail.kind {
                EdgeKind::Peer => self.peer_from_host(host, &mail, db, out)?,
                _ => self.chief_from_host(host, &mail, db, out)?,
            }
            host_mail::mark_seen(db, origin, mail.id)?;
        }
        out.to_far.push((host.to_string(), ToFar::Ack(mail.id)));
        Ok(())
    }

    /// Mail up from `host` for the herd's Chief: stored for it, shown to the bridges.
    fn chief_from_host(
        &mut self,
        host: &str,
        mail: &HostMail,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        // The Chief now; the one it was sent to when none holds the lease.
        let (chief, chief_name) = match store::leases::get(db, Role::Chief, None)? {
            Some(l) => (l.session_id, l.session_name),
            None => (mail.to_id.clone(), mail.to_name.clone()),
        };
        let from = sender_of(mail);
        if let Some(ask) = &mail.ask {
            // A question: said as a local one is, named with its host; answered there.
            let text = question_text(ask, Some(host));
            let message = NewMessage {
                question: Some(&ask.question),
                created_at: now_ms(),
                ..NewMessage::plain(&chief, DeliveryKind::Ask, &text, &from)
            };
            self.mail(message, db, out)?;
            return Ok(());
        }
        let body = format!(
            "Message from {} {} ({}) on {host}: {}",
            mail.from_role.as_str(),
            mail.from_name,
            mail.from_id,
            mail.text
        );
        let message = NewMessage {
            created_at: now_ms(),
            ..NewMessage::plain(&chief, DeliveryKind::SupervisorMessage, &body, &from)
        };
        let mailed = self.mail(message, db, out)?;
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
        Ok(())
    }

    /// Peer mail up from `host`: for a connected peer here, or passed down to the linked
    /// host its sender named; else the sender is told why it went nowhere.
    fn peer_from_host(
        &mut self,
        host: &str,
        mail: &HostMail,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let who = mail.to_id.as_str();
        let here = store::sessions::get_uncounted(db, &SessionId::from(who))?
            .filter(|t| self.presence.is_live(&t.id));
        let there = self.links.find_session(who).filter(|t| t.connected);
        let refusal = match (here, there) {
            (Some(t), _) if !t.subagent && are_peers(mail.from_role, t.role) => {
                let body = format!(
                    "Peer message from {} ({}) on {host}: {}",
                    mail.from_name, mail.from_id, mail.text
                );
                let from = sender_of(mail);
                let message = NewMessage {
                    created_at: now_ms(),
                    ..NewMessage::plain(&t.id, DeliveryKind::PeerMessage, &body, &from)
                };
                self.mail(message, db, out)?;
                return Ok(());
            }
            (_, Some(t)) if !t.subagent && are_peers(mail.from_role, t.role) => {
                let to_host = t.host.clone().unwrap_or_default();
                let passed = HostMail {
                    id: 0,
                    to_id: t.id,
                    to_name: t.name,
                    from_host: Some(host.to_string()),
                    ..mail.clone()
                };
                let kept = host_mail::keep(db, &to_host, passed)?;
                out.to_far.push((to_host, ToFar::Mail(Box::new(kept))));
                return Ok(());
            }
            (Some(t), _) | (_, Some(t)) => format!(
                "{} is a {}, not a peer of a {}",
                t.name,
                t.role.as_str(),
                mail.from_role.as_str()
            ),
            (None, None) => format!("no connected peer {who:?} in the herd"),
        };
        self.notice_to(host, mail, &refusal, db, out)
    }

    /// Tell `mail`'s sender, on `host`, that it was not delivered and why.
    fn notice_to(
        &mut self,
        host: &str,
        mail: &HostMail,
        why: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let notice = HostMail {
            id: 0,
            kind: mail.kind,
            from_id: SessionId::from("shepherd"),
            from_name: "shepherd".to_string(),
            from_role: Role::Lead,
            to_id: mail.from_id.clone(),
            to_name: mail.from_name.clone(),
            text: format!("Your message to {} was not delivered: {why}", mail.to_name),
            created_at: now_ms(),
            from_host: None,
            notice: true,
            ask: None,
        };
        let kept = host_mail::keep(db, host, notice)?;
        out.to_far
            .push((host.to_string(), ToFar::Mail(Box::new(kept))));
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
            tracing::warn!(host, to = %mail.to_name, %why, "a linked host refused mail");
            if mail.notice {
                // A notice nobody can take: said in the log only.
                host_mail::stored(db, host, &[id])?;
                return Ok(());
            }
            if let Some(from_host) = mail.from_host.clone() {
                // Peer mail passed on from another linked host: its sender is there.
                let why = format!("{why} (on {host})");
                self.notice_to(&from_host, &mail, &why, db, out)?;
                host_mail::stored(db, host, &[id])?;
                return Ok(());
            }
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
        let mail = mail_from(
            EdgeKind::Staff,
            me,
            target.id.clone(),
            target.name.clone(),
            text,
        );
        let mail = host_mail::keep(db, &host, mail)?;
        out.to_far.push((host, ToFar::Mail(Box::new(mail.clone()))));
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

    /// The linked hosts' sessions in a staff listing: for the herd's Chief `chief`, those
    /// that report to it (a Manager there, a Lead with no Manager of its repository
    /// there); for the human (`chief` is `None`), every one, each with whom it reports to
    /// (its Manager there, else the herd's Chief `herd_chief`, else the human). As the
    /// mirrors have them: connected, not subagents, with their host.
    pub(super) fn far_staff(
        &self,
        me: Option<&SessionInfo>,
        herd_chief: Option<(&SessionId, &str)>,
    ) -> Vec<StaffMember> {
        let far = self.links.sessions();
        let manager_of = |s: &SessionInfo| {
            far.iter().find(|m| {
                m.role == Role::Manager
                    && m.connected
                    && m.host == s.host
                    && m.repo_id.is_some()
                    && m.repo_id == s.repo_id
            })
        };
        let mut members = Vec::new();
        for s in far.iter().filter(|s| s.connected && !s.subagent) {
            let reports_to = match s.role {
                Role::Chief => continue,
                Role::Lead | Role::Supervisor if manager_of(s).is_some() => {
                    let m = manager_of(s).expect("found");
                    ReportsTo {
                        to: Superior::Manager,
                        session_id: Some(m.id.clone()),
                        session_name: Some(m.name.clone()),
                    }
                }
                _ => match herd_chief {
                    Some((id, name)) => ReportsTo {
                        to: Superior::Chief,
                        session_id: Some(id.clone()),
                        session_name: Some(name.to_string()),
                    },
                    None => ReportsTo::human(),
                },
            };
            let mine = match me {
                None => true,
                Some(me) => reports_to.session_id.as_ref() == Some(&me.id),
            };
            if mine {
                members.push(StaffMember {
                    session: s.clone(),
                    reports_to,
                });
            }
        }
        members
    }

    /// The caller (a Pi session) answering ask `ask` of linked host `host`: it must hold
    /// the Chief's lease here and the ask (as mirrored) must be addressed to the Chief.
    /// Who answered, as the far core records it (`chief <name>`).
    pub(super) fn chief_answering(
        &self,
        cx: Cx,
        host: &str,
        ask: crate::protocol::AskId,
        db: &Connection,
    ) -> HubResult<String> {
        let me = self.presence.registered(cx.conn)?.clone();
        let me = self.session_info(db, &me)?;
        let chief = store::leases::get(db, Role::Chief, None)?;
        if chief.as_ref().map(|l| &l.session_id) != Some(&me.id) {
            return Err(HubError::new(
                ErrorCode::Forbidden,
                format!(
                    "question {host}:{ask} is on a linked host: only the herd's Chief (the /chief of this core) answers one there, as the human can"
                ),
            ));
        }
        let mirrored = self
            .links
            .asks()
            .into_iter()
            .find(|a| a.host.as_deref() == Some(host) && a.id == ask);
        match mirrored {
            Some(a) if a.to.as_ref().is_some_and(|t| t.role == Role::Chief) => {
                Ok(format!("chief {}", me.name))
            }
            Some(_) => Err(HubError::new(
                ErrorCode::Forbidden,
                format!(
                    "question {host}:{ask} is not addressed to the Chief; its supervisor or the human answers it"
                ),
            )),
            None => Err(HubError::new(
                ErrorCode::UnknownAsk,
                format!(
                    "no open question {host}:{ask} on a linked host (answered already, or the link is down: `shepherd hosts`)"
                ),
            )),
        }
    }

    /// `me`'s connected peers on the linked hosts, as mirrored, with their host.
    pub(super) fn peers_on_hosts(&self, me: &SessionInfo) -> Vec<SessionInfo> {
        let mut found: Vec<SessionInfo> = self
            .links
            .sessions()
            .into_iter()
            .filter(|s| s.connected && !s.subagent && are_peers(me.role, s.role))
            .collect();
        found.sort_by(|a, b| (&a.host, &a.name).cmp(&(&b.host, &b.name)));
        found
    }

    /// The Chief's staff on a linked host named `who`: a Manager there, or a Lead (its
    /// own core checks that nobody there supervises it).
    pub(super) fn staff_on_host(&self, who: &str) -> Option<SessionInfo> {
        self.links.find_session(who).filter(|s| is_staff(s.role))
    }
}

/// Whether a session of `role` can be the herd's Chief's staff (a Manager, a Lead).
fn is_staff(role: Role) -> bool {
    matches!(role, Role::Manager | Role::Lead | Role::Supervisor)
}

/// Whether `text` is a whole session id (a UUID), which names a session on any host.
fn is_session_id(text: &str) -> bool {
    text.len() == 36
        && text.bytes().filter(|b| *b == b'-').count() == 4
        && text.bytes().all(|b| b == b'-' || b.is_ascii_hexdigit())
}
