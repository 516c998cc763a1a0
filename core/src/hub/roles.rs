//! Roles and the direct edges between them. Every session starts as a Lead; the core grants
//! a Manager lease per repository (from its primary worktree) and one Chief lease, and
//! from the leases alone computes whom each session reports to: a Lead to its repository's
//! Manager, else the Chief, else the human; a Manager to the Chief, else the human; the
//! Chief to the human. Authority comes from the connection's session and the leases,
//! never from names, cwd or payload fields. Model-facing targets are exact session ids:
//! a session outside the caller's staff or peers is refused as unknown.

use rusqlite::Connection;

use super::reports::Posted;
use super::{Cx, HubCommand, HubError, HubResult, Out, State, atomically};
use crate::clock::now_ms;
use crate::protocol::requests::{
    InspectStaff, ListPeers, ListRoles, ListStaff, MessagePeer, MessageStaff, MessageSupervisor,
    SetRole,
};
use crate::protocol::{
    Ask, AskTo, ClientKind, DeliveryKind, EdgeKind, EdgeMessage, ErrorCode, Lease, ReportKind,
    ReportsTo, Role, Sender, ServerMsg, SessionId, SessionInfo, StaffMember, StaffView, Superior,
    ViewReason,
};
use crate::store::{self, messages::NewMessage};
use crate::supervise::view;

/// Upper bound of an `inspect_staff` view, in bytes.
pub const MAX_STAFF_VIEW_BYTES: usize = 16 * 1024;

fn refused(reason: &str, message: impl Into<String>) -> HubError {
    HubError::new(ErrorCode::RoleRefused, message)
        .with_details(serde_json::json!({ "reason": reason }))
}

fn forbidden(reason: &str, message: impl Into<String>) -> HubError {
    HubError::new(ErrorCode::Forbidden, message)
        .with_details(serde_json::json!({ "reason": reason }))
}

/// Whether a role counts as a Lead for authority (`supervisor` is a Lead's hint that it
/// is free to supervise, not a role the core grants).
fn is_lead(role: Role) -> bool {
    matches!(role, Role::Lead | Role::Supervisor)
}

/// How a role is named to people: `manager of app`, `chief`.
pub(super) fn role_label(role: Role, project: Option<&str>) -> String {
    match (role, project) {
        (Role::Manager, Some(p)) => format!("manager of {p}"),
        (role, _) => role.as_str().to_string(),
    }
}

impl State {
    /// The lease a session holds, with its live flag.
    fn lease_of(&self, db: &Connection, session: &SessionId) -> HubResult<Option<Lease>> {
        Ok(store::leases::held_by(db, session)?.map(|l| self.live_lease(l)))
    }

    fn live_lease(&self, mut lease: Lease) -> Lease {
        lease.connected = self.live.contains_key(&lease.session_id);
        lease
    }

    /// The role a registering session has: its lease's, else the hint it gave (`lead` or
    /// `supervisor`; a claimed `manager` or `chief` is not granted by registering).
    pub(super) fn registered_role(
        &self,
        db: &Connection,
        session: &SessionId,
        claimed: Role,
    ) -> HubResult<Role> {
        Ok(match store::leases::held_by(db, session)? {
            Some(lease) => lease.role,
            None if claimed == Role::Supervisor => Role::Supervisor,
            None => Role::Lead,
        })
    }

    /// `update.role`: a Lead may say `supervisor` (free to supervise) or `lead`; Manager
    /// and Chief are taken with `set_role`, and a session holding one keeps it.
    pub(super) fn hinted_role(
        &self,
        info: &SessionInfo,
        role: Role,
        db: &Connection,
    ) -> HubResult<Role> {
        if matches!(role, Role::Manager | Role::Chief) {
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "the core grants the {} role: ask for it with set_role (/{} in Pi)",
                    role.as_str(),
                    role.as_str()
                ),
            ));
        }
        if let Some(lease) = store::leases::held_by(db, &info.id)? {
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "this session is the {}; leave that role with set_role lead (/{} leave) first",
                    role_label(lease.role, lease.project.as_deref()),
                    lease.role.as_str()
                ),
            ));
        }
        Ok(role)
    }

    /// Whom `s` reports to now.
    pub(super) fn reports_to(&self, s: &SessionInfo, db: &Connection) -> HubResult<ReportsTo> {
        let leases = Leases::Read(db);
        self.reports_to_in(s, &leases, db)
    }

    /// [`State::reports_to`] with the leases given (a listing reads them once).
    fn reports_to_in(
        &self,
        s: &SessionInfo,
        leases: &Leases<'_>,
        db: &Connection,
    ) -> HubResult<ReportsTo> {
        let holder = |lease: Option<Lease>, to: Superior| {
            lease.filter(|l| l.session_id != s.id).map(|l| ReportsTo {
                to,
                session_id: Some(l.session_id),
                session_name: Some(l.session_name),
            })
        };
        let chief = || -> HubResult<Option<ReportsTo>> {
            Ok(holder(leases.get(Role::Chief, None)?, Superior::Chief))
        };
        let found = match s.role {
            Role::Chief => None,
            Role::Manager => chief()?,
            Role::Lead | Role::Supervisor => {
                let manager = match &s.repo_id {
                    Some(repo) => holder(leases.get(Role::Manager, Some(repo))?, Superior::Manager),
                    None => None,
                };
                match manager {
                    Some(m) => Some(m),
                    // An assigned Lead stays under its repository's Manager role while no
                    // Manager holds it: its mail and asks wait for the next one.
                    None if self.assigned_lead(&s.id, db)?.is_some() => Some(ReportsTo {
                        to: Superior::Manager,
                        session_id: None,
                        session_name: None,
                    }),
                    None => chief()?,
                }
            }
        };
        Ok(found.unwrap_or_else(ReportsTo::human))
    }

    /// The registered session on `cx` with its stored record.
    fn caller(&self, cx: Cx, db: &Connection) -> HubResult<SessionInfo> {
        let id = self.registered(cx.conn)?.clone();
        self.session_info(db, &id)
    }

    /// [`State::caller`] without its counts (open asks, unread mail): for mail along an
    /// edge, whose cost must not grow with the sender's own backlog.
    fn sender_of(&self, cx: Cx, db: &Connection) -> HubResult<SessionInfo> {
        let id = self.registered(cx.conn)?.clone();
        self.session_uncounted(db, &id)
    }

    fn sender(info: &SessionInfo) -> Sender {
        Sender {
            kind: ClientKind::Pi,
            session_id: Some(info.id.clone()),
            name: info.name.clone(),
        }
    }

    /// Change a session's stored role and tell the subscribers.
    pub(super) fn record_role(
        &self,
        mut info: SessionInfo,
        role: Role,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<SessionInfo> {
        let previous = info.role;
        info.role = role;
        store::sessions::upsert(db, &info)?;
        if previous != role {
            tracing::info!(session = %info.id, name = %info.name, from = previous.as_str(), to = role.as_str(), "role changed");
            self.broadcast(
                &ServerMsg::SessionChanged {
                    session: info.clone(),
                },
                out,
            );
            self.broadcast(
                &ServerMsg::RoleChanged {
                    session: info.clone(),
                    previous,
                },
                out,
            );
        }
        Ok(info)
    }

    /// `set_role`: take the Manager or Chief lease, or leave whichever is held (`lead`).
    pub(super) fn set_role(
        &mut self,
        cx: Cx,
        req: SetRole,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        self.expire_away_leases(db, out)?;
        let info = self.caller(cx, db)?;
        let previous = info.role;
        if req.reclaim
            && matches!(req.role, Role::Manager | Role::Chief)
            && let Some(why) = store::leases::released(db, &info.id)?
        {
            return Err(refused(
                "released",
                format!(
                    "the {} was taken from this session while it was away: {why}; ask for it again (/{}) if it is still yours to hold",
                    role_label(req.role, info.project.as_deref()),
                    req.role.as_str()
                ),
            ));
        }
        let (info, lease) = atomically(db, || match req.role {
            Role::Lead => {
                store::leases::release(db, &info.id)?;
                Ok((self.record_role(info, Role::Lead, db, out)?, None))
            }
            Role::Supervisor => Err(HubError::new(
                ErrorCode::InvalidArgument,
                "`supervisor` is not a granted role: it is a Lead's hint (SHEPHERD_ROLE=supervisor, or `update` with role supervisor)",
            )),
            Role::Manager => self.take_manager(info, db, out),
            Role::Chief => self.take_chief(info, db, out),
        })?;
        if !req.reclaim {
            store::leases::clear_released(db, &info.id)?;
        }
        if let Some(lease) = &lease
            && lease.role == Role::Manager
            && let Some(repo_id) = &lease.repo_id
        {
            self.project_mail_to_holder(&info.id, repo_id, db, out)?;
        }
        out.send(
            cx.conn,
            &ServerMsg::RoleSet {
                id: cx.id,
                session: info,
                previous,
                lease,
            },
        );
        Ok(())
    }

    fn take_manager(
        &self,
        info: SessionInfo,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<(SessionInfo, Option<Lease>)> {
        if info.role == Role::Chief {
            return Err(refused(
                "wrong_role",
                "this session is the Chief; a Chief cannot become a Manager (leave with /chief leave first)",
            ));
        }
        let (Some(repo_id), Some(_root)) = (info.repo_id.clone(), info.repo.as_deref()) else {
            return Err(refused(
                "not_a_repository",
                format!(
                    "{} is not inside a git repository's work tree; /manager runs in the primary worktree of a repository",
                    info.cwd
                ),
            ));
        };
        let project = info.project.clone();
        if info.worktree {
            return Err(refused(
                "linked_worktree",
                format!(
                    "{} is a linked worktree of {}; /manager runs in the repository's primary worktree",
                    info.cwd,
                    project.as_deref().unwrap_or("its repository")
                ),
            ));
        }
        self.take_lease(
            info,
            Role::Manager,
            Some(&repo_id),
            project.as_deref(),
            db,
            out,
        )
    }

    fn take_chief(
        &self,
        info: SessionInfo,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<(SessionInfo, Option<Lease>)> {
        if info.role == Role::Manager {
            return Err(refused(
                "wrong_role",
                "this session is a Manager; a Manager cannot become the Chief (leave with /manager leave first)",
            ));
        }
        self.take_lease(info, Role::Chief, None, None, db, out)
    }

    /// Grant `role` to `info` unless another live session holds it; a holder that is away
    /// loses it (it returns as a Lead). Open asks addressed to the role go to the new
    /// holder.
    fn take_lease(
        &self,
        info: SessionInfo,
        role: Role,
        repo_id: Option<&str>,
        project: Option<&str>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<(SessionInfo, Option<Lease>)> {
        let label = role_label(role, project);
        if let Some(held) = store::leases::get(db, role, repo_id)? {
            if held.session_id == info.id {
                let lease = self.live_lease(held);
                let info = self.record_role(info, role, db, out)?;
                return Ok((info, Some(lease)));
            }
            if self.live.contains_key(&held.session_id) {
                return Err(refused(
                    "held",
                    format!(
                        "{} ({}) is the {label} and is connected; one session holds it at a time",
                        held.session_name, held.session_id
                    ),
                )
                .with_details(serde_json::json!({
                    "reason": "held",
                    "holder": { "id": held.session_id, "name": held.session_name },
                })));
            }
            // The holder is away: it returns as a Lead.
            if let Some(old) = store::sessions::get(db, &held.session_id)? {
                tracing::info!(lease = %label, from = %held.session_id, to = %info.id, "lease taken over from a holder that is away");
                self.record_role(old, Role::Lead, db, out)?;
            }
        }
        store::leases::release(db, &info.id)?;
        store::leases::grant(db, role, repo_id, project, &info.id, now_ms())?;
        let info = self.record_role(info, role, db, out)?;
        self.hand_over_asks(&info, role, repo_id, project, db, out)?;
        let lease = self.lease_of(db, &info.id)?;
        Ok((info, lease))
    }

    /// Give the role's new holder the open asks addressed to the role.
    fn hand_over_asks(
        &self,
        holder: &SessionInfo,
        role: Role,
        repo_id: Option<&str>,
        project: Option<&str>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        for ask in store::asks::open_addressed(db, role, repo_id)? {
            let before = ask.to.as_ref().and_then(|t| t.session_id.clone());
            if before.as_ref() == Some(&holder.id) {
                continue;
            }
            let to = AskTo {
                role,
                repo_id: repo_id.map(str::to_string),
                project: project.map(str::to_string),
                session_id: Some(holder.id.clone()),
                session_name: Some(holder.name.clone()),
                worker: None,
            };
            store::asks::address(db, ask.id, &to)?;
            self.deliver_ask(&ask, holder, db, out)?;
        }
        Ok(())
    }

    /// Deliver an addressed ask to the session that holds its role.
    pub(super) fn deliver_ask(
        &self,
        ask: &Ask,
        holder: &SessionInfo,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let mut text = format!(
            "{} ({}) asks you (ask {}): {}",
            ask.session_name, ask.session_id, ask.id, ask.question
        );
        if !ask.options.is_empty() {
            text.push_str(&format!("\nOptions: {}", ask.options.join(" | ")));
        }
        if let Some(details) = &ask.details {
            text.push_str(&format!("\nDetails: {details}"));
        }
        text.push_str(&format!(
            "\nAnswer it with answer_staff {{ask: {}, answer}}. The human may answer it too; the first answer wins.",
            ask.id
        ));
        let from = Sender {
            kind: ClientKind::Pi,
            session_id: Some(ask.session_id.clone()),
            name: ask.session_name.clone(),
        };
        self.mail(
            NewMessage {
                ask_id: Some(ask.id),
                question: Some(&ask.question),
                ..NewMessage::plain(&holder.id, DeliveryKind::Ask, &text, &from)
            },
            db,
            out,
        )?;
        Ok(())
    }

    /// `list_roles`: every lease.
    pub(super) fn list_roles(
        &self,
        cx: Cx,
        _req: ListRoles,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        self.expire_away_leases(db, out)?;
        let leases = store::leases::list(db)?
            .into_iter()
            .map(|l| self.live_lease(l))
            .collect();
        out.send(cx.conn, &ServerMsg::Roles { id: cx.id, leases });
        Ok(())
    }

    /// `message_supervisor`: mail to whom the caller reports (the human gets a report).
    pub(super) fn message_supervisor(
        &mut self,
        cx: Cx,
        req: MessageSupervisor,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let me = self.sender_of(cx, db)?;
        if me.role == Role::Chief {
            return Err(forbidden(
                "chief",
                "the Chief reports to the human: use report (or ask_human) instead",
            ));
        }
        let text = nonempty(req.text, "message")?;
        let to = self.reports_to(&me, db)?;
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
                    &lead.assignment.repo_id,
                    Some(lead.assignment.id),
                    DeliveryKind::SupervisorMessage,
                    &body,
                    &Self::sender(&me),
                    db,
                    out,
                )?;
                if let Some(holder) = &to.session_id {
                    let target = self.session_uncounted(db, holder)?;
                    self.edge_shown(EdgeKind::Supervisor, &me, &target, &text, mailed.id, out);
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
                (None, Some(report.id), !self.subscribers.is_empty())
            }
            Some(sup) => {
                let target = self.session_uncounted(db, sup)?;
                let body = format!(
                    "Message from {} {} ({}): {text}",
                    me.role.as_str(),
                    me.name,
                    me.id
                );
                let mailed =
                    self.edge_mail(EdgeKind::Supervisor, &me, &target, &body, &text, db, out)?;
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
    #[allow(clippy::too_many_arguments)]
    fn edge_mail(
        &self,
        kind: EdgeKind,
        from: &SessionInfo,
        to: &SessionInfo,
        body: &str,
        text: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<super::mail::Mailed> {
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
        self.edge_shown(kind, from, to, text, mailed.id, out);
        Ok(mailed)
    }

    /// Show mail along an edge to the bridges when it touches a Manager or the Chief.
    fn edge_shown(
        &self,
        kind: EdgeKind,
        from: &SessionInfo,
        to: &SessionInfo,
        text: &str,
        message_id: crate::protocol::MessageId,
        out: &mut Out,
    ) {
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
            self.broadcast(&ServerMsg::EdgeMessaged { message }, out);
        }
    }

    /// Sessions that may be someone's staff: the connected ones and every lease holder,
    /// most recently seen first. Read by id: the sessions seen long ago (thousands, kept
    /// for their history) are never read for a listing.
    fn staff_candidates(&self, leases: &[Lease], db: &Connection) -> HubResult<Vec<SessionInfo>> {
        let mut ids: Vec<&SessionId> = self.live.keys().collect();
        for l in leases {
            if !self.live.contains_key(&l.session_id) && !ids.contains(&&l.session_id) {
                ids.push(&l.session_id);
            }
        }
        let mut all = Vec::new();
        for id in ids {
            if let Some(mut s) = store::sessions::get(db, id)?
                && !s.subagent
            {
                s.connected = self.live.contains_key(&s.id);
                all.push(s);
            }
        }
        all.sort_by(|a, b| b.last_seen.cmp(&a.last_seen).then_with(|| a.id.cmp(&b.id)));
        Ok(all)
    }

    /// `list_staff`: a Manager's or the Chief's direct staff; for the human, everyone.
    pub(super) fn list_staff(
        &mut self,
        cx: Cx,
        _req: ListStaff,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let me = match cx.kind {
            ClientKind::Pi => Some(self.staff_holder(cx, db)?),
            _ => None,
        };
        self.expire_away_leases(db, out)?;
        let mut members = Vec::new();
        let leases = store::leases::list(db)?;
        for session in self.staff_candidates(&leases, db)? {
            let reports_to = self.reports_to_in(&session, &Leases::Listed(&leases), db)?;
            let mine = match &me {
                None => true,
                Some(me) => reports_to.session_id.as_ref() == Some(&me.id),
            };
            if mine {
                members.push(StaffMember {
                    session,
                    reports_to,
                });
            }
        }
        // A Manager's assignments (its repository's); the human's: all; the Chief's: none.
        let assignments = match &me {
            None => self.staff_assignments(None, db)?,
            Some(me) if me.role == Role::Manager => match &me.repo_id {
                Some(repo) => self.staff_assignments(Some(repo), db)?,
                None => Vec::new(),
            },
            Some(_) => Vec::new(),
        };
        if assignments.is_empty() {
            out.send(
                cx.conn,
                &ServerMsg::Staff {
                    id: cx.id,
                    members,
                    assignments,
                },
            );
        } else {
            // Ahead/behind come from git, on the git lane.
            self.staff_with_git(cx, members, assignments, db, out)?;
        }
        Ok(())
    }

    /// The caller, if it is a Manager or the Chief.
    fn staff_holder(&self, cx: Cx, db: &Connection) -> HubResult<SessionInfo> {
        let me = self.sender_of(cx, db)?;
        if !matches!(me.role, Role::Manager | Role::Chief) {
            return Err(forbidden(
                "not_manager_or_chief",
                format!(
                    "only a Manager or the Chief has staff; this session is a {}",
                    me.role.as_str()
                ),
            ));
        }
        Ok(me)
    }

    /// One of the caller's staff by exact id; anyone else is unknown to it.
    fn my_staff(&self, me: &SessionInfo, id: &str, db: &Connection) -> HubResult<SessionInfo> {
        let not_found = || {
            HubError::new(
                ErrorCode::UnknownSession,
                format!("no session {id:?} among your staff; list_staff shows their exact ids"),
            )
        };
        let mut target =
            store::sessions::get_uncounted(db, &SessionId::from(id))?.ok_or_else(not_found)?;
        target.connected = self.live.contains_key(&target.id);
        let reports_to = self.reports_to(&target, db)?;
        if reports_to.session_id.as_ref() != Some(&me.id) {
            return Err(not_found());
        }
        Ok(target)
    }

    /// `message_staff`: steer one of the caller's staff.
    pub(super) fn message_staff(
        &mut self,
        cx: Cx,
        req: MessageStaff,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let me = self.staff_holder(cx, db)?;
        let text = nonempty(req.text, "message")?;
        let target = self.my_staff(&me, &req.session, db)?;
        let body = format!(
            "From the {} ({} {}): {text}",
            role_label(me.role, me.project.as_deref()),
            me.name,
            me.id
        );
        let mailed = self.edge_mail(EdgeKind::Staff, &me, &target, &body, &text, db, out)?;
        sent(cx, target, mailed, out);
        Ok(())
    }

    /// `inspect_staff`: a bounded view of what one of the caller's staff did recently,
    /// built on a blocking thread and returned as `staff_view`.
    pub(super) fn inspect_staff(
        &mut self,
        cx: Cx,
        req: InspectStaff,
        db: &Connection,
    ) -> HubResult<()> {
        let me = self.staff_holder(cx, db)?;
        let target = self.my_staff(&me, &req.session, db)?;
        let Some(tx) = self.self_tx.upgrade() else {
            return Ok(()); // Shutting down.
        };
        let (conn, id) = (cx.conn, cx.id);
        tokio::task::spawn_blocking(move || {
            let view = staff_view(&target);
            let msg = ServerMsg::StaffViewed { id, view };
            let _ = tx.blocking_send(HubCommand::Respond {
                conn,
                msg: Box::new(msg),
            });
        });
        Ok(())
    }

    /// The sessions `me` may message as peers: connected Leads for a Lead, Managers for a
    /// Manager.
    fn peers_of(&self, me: &SessionInfo, db: &Connection) -> HubResult<Vec<SessionInfo>> {
        let mut peers = Vec::new();
        for id in self.live.keys() {
            if self.my_peer(me, id.as_str(), db).is_ok() {
                // With its counts (open asks), which my_peer does not read.
                peers.push(self.session_info(db, id)?);
            }
        }
        peers.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(peers)
    }

    /// One connected peer of `me` by exact id; anyone else is unknown to it.
    fn my_peer(&self, me: &SessionInfo, id: &str, db: &Connection) -> HubResult<SessionInfo> {
        let id = SessionId::from(id);
        let target = match self.live.contains_key(&id) && id != me.id {
            true => store::sessions::get_uncounted(db, &id)?,
            false => None,
        };
        let peer = |s: &SessionInfo| {
            !s.subagent
                && match me.role {
                    Role::Manager => s.role == Role::Manager,
                    _ => is_lead(s.role),
                }
        };
        match target {
            Some(mut t) if peer(&t) => {
                t.connected = true;
                Ok(t)
            }
            _ => Err(HubError::new(
                ErrorCode::UnknownSession,
                format!("no connected peer {id:?}; list_peers shows their exact ids"),
            )),
        }
    }

    fn peer_caller(&self, cx: Cx, db: &Connection) -> HubResult<SessionInfo> {
        let me = self.sender_of(cx, db)?;
        if me.role == Role::Chief {
            return Err(forbidden(
                "chief",
                "the Chief has no peers; it reaches Managers and Leads with message_staff",
            ));
        }
        Ok(me)
    }

    /// `list_peers`.
    pub(super) fn list_peers(
        &self,
        cx: Cx,
        _req: ListPeers,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let me = self.peer_caller(cx, db)?;
        let sessions = self.peers_of(&me, db)?;
        out.send(
            cx.conn,
            &ServerMsg::Sessions {
                id: cx.id,
                sessions,
            },
        );
        Ok(())
    }

    /// `message_peer`: Lead to Lead, Manager to Manager; never to the Chief.
    pub(super) fn message_peer(
        &mut self,
        cx: Cx,
        req: MessagePeer,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let me = self.peer_caller(cx, db)?;
        let text = nonempty(req.text, "message")?;
        let target = self.my_peer(&me, &req.session, db)?;
        let body = format!("Peer message from {} ({}): {text}", me.name, me.id);
        let mailed = self.edge_mail(EdgeKind::Peer, &me, &target, &body, &text, db, out)?;
        sent(cx, target, mailed, out);
        Ok(())
    }
}

/// Answer a request with `sent` for mail to `target`.
fn sent(cx: Cx, target: SessionInfo, mailed: super::mail::Mailed, out: &mut Out) {
    out.send(
        cx.conn,
        &ServerMsg::Sent {
            id: cx.id,
            message_id: mailed.id,
            session_id: target.id,
            session_name: target.name,
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

/// Build a staff session's recent view (blocking: reads its session file and git).
pub(in crate::hub) fn staff_view(target: &SessionInfo) -> StaffView {
    let cursor = view::Cursor::default();
    let input = view::ViewInput {
        cursor: &cursor,
        worker: view::WorkerFacts {
            name: &target.name,
            status: &target.status,
            model: target.model.as_deref(),
            context_percent: target.context_percent,
            context_tokens: target.context_tokens,
            context_window: target.context_window,
            cwd: &target.cwd,
            repo: target.repo.as_deref(),
            branch: target.branch.as_deref(),
            session_file: target.session_file.as_deref(),
        },
        goal: None,
        look: 0,
        reason: ViewReason::Request,
        now: now_ms(),
    };
    let built = std::panic::catch_unwind(|| view::build(&input)).ok();
    let (mut text, entries) = match built {
        Some(b) => (b.text, b.entries),
        None => (
            format!(
                "The view of {} could not be built (a bug in shepherd).",
                target.name
            ),
            0,
        ),
    };
    if text.len() > MAX_STAFF_VIEW_BYTES {
        // Keep the newest part: cut at a line start within the bound.
        let from = text.len() - MAX_STAFF_VIEW_BYTES + 64;
        let from = (from..text.len())
            .find(|&i| text.is_char_boundary(i) && (i == 0 || text.as_bytes()[i - 1] == b'\n'))
            .unwrap_or(text.len());
        text = format!("[… older activity cut]\n{}", &text[from..]);
    }
    StaffView {
        session_id: target.id.clone(),
        session_name: target.name.clone(),
        text,
        entries,
    }
}

/// Where [`State::reports_to_in`] finds the leases: the store, or a list read once.
enum Leases<'a> {
    Read(&'a Connection),
    Listed(&'a [Lease]),
}

impl Leases<'_> {
    fn get(&self, role: Role, repo: Option<&str>) -> HubResult<Option<Lease>> {
        Ok(match self {
            Leases::Read(db) => store::leases::get(db, role, repo)?,
            Leases::Listed(all) => all
                .iter()
                .find(|l| l.role == role && (role == Role::Chief || l.repo_id.as_deref() == repo))
                .cloned(),
        })
    }
}
