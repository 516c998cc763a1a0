//! Taking and leaving a role: `set_role` grants the Manager lease of the caller's
//! repository or the Chief lease (unless another live session holds it), records the
//! session's new role, and hands the role's open asks to its new holder; `list_roles`
//! lists every lease.

use rusqlite::Connection;

use super::{refused, role_label};
use crate::clock::now_ms;
use crate::hub::{Cx, HubError, HubResult, Out, State, atomically};
use crate::protocol::requests::{ListRoles, SetRole};
use crate::protocol::{
    Ask, AskTo, ClientKind, DeliveryKind, ErrorCode, Lease, Role, Sender, ServerMsg, SessionInfo,
};
use crate::store::{self, messages::NewMessage};

impl State {
    /// Change a session's stored role and tell the subscribers.
    pub(in crate::hub) fn record_role(
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
            if previous == Role::Chief || role == Role::Chief {
                self.herd_chief_changed(db)?;
            }
            tracing::info!(session = %info.id, name = %info.name, from = previous.as_str(), to = role.as_str(), "role changed");
            self.presence.broadcast(
                &ServerMsg::SessionChanged {
                    session: info.clone(),
                },
                out,
            );
            self.presence.broadcast(
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
    pub(in crate::hub) fn set_role(
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
        // One Chief for the whole herd: a linked host's sessions report to the home core's.
        if let Some(chief) = self.herd_chief() {
            return Err(refused(
                "herd_chief",
                format!(
                    "this machine is linked into a herd whose Chief is {} ({}) on the home core; one Chief serves every machine",
                    chief.session_name, chief.session_id
                ),
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
            if self.presence.is_live(&held.session_id) {
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
            if let Some(old) = store::sessions::get(db, &self.unread, &held.session_id)? {
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
    pub(in crate::hub) fn deliver_ask(
        &self,
        ask: &Ask,
        holder: &SessionInfo,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let text = question_text(ask, None);
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
    pub(in crate::hub) fn list_roles(
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
}

/// An `ask_supervisor` question as its addressee reads it: who asks (on linked host
/// `host`, when it came from one), the question, its options and details, and how to
/// answer it.
pub(in crate::hub) fn question_text(ask: &Ask, host: Option<&str>) -> String {
    let (on, named, with_host) = match host {
        Some(h) => (
            format!(" on {h}"),
            format!("{h}:{}", ask.id),
            format!(", host: \"{h}\""),
        ),
        None => (String::new(), ask.id.to_string(), String::new()),
    };
    let mut text = format!(
        "{} ({}){on} asks you (ask {named}): {}",
        ask.session_name, ask.session_id, ask.question
    );
    if !ask.options.is_empty() {
        text.push_str(&format!("\nOptions: {}", ask.options.join(" | ")));
    }
    if let Some(details) = &ask.details {
        text.push_str(&format!("\nDetails: {details}"));
    }
    text.push_str(&format!(
        "\nAnswer it with answer_staff {{ask: {}{with_host}, answer}}. The human may answer it too; the first answer wins.",
        ask.id
    ));
    text
}
