//! Roles and the direct edges between them. Every session starts as a Lead; the core grants
//! a Manager lease per repository (from its primary worktree) and one Chief lease, and
//! from the leases alone computes whom each session reports to: a Lead to its repository's
//! Manager, else the Chief, else the human; a Manager to the Chief, else the human; the
//! Chief to the human. Authority comes from the connection's session and the leases,
//! never from names, cwd or payload fields. Model-facing targets are exact session ids:
//! a session outside the caller's staff or peers is refused as unknown.
//!
//! This module holds the reporting lines (whom a session reports to, read from the
//! leases) and the caller's identity; its children each own one responsibility:
//! `leases` taking and leaving a role, `staff` listing and inspecting a Manager's or the
//! Chief's staff, `peers` finding a session's peers, `edges` the mail along an edge
//! (`message_supervisor`, `message_staff`, `message_peer`).

mod edges;
mod leases;
mod peers;
mod staff;

use rusqlite::Connection;

use super::{Cx, HubError, HubResult, State};
use crate::protocol::{
    ClientKind, ErrorCode, Lease, ReportsTo, Role, Sender, SessionId, SessionInfo, Superior,
};
use crate::store;

pub(in crate::hub) use leases::question_text;
pub(in crate::hub) use staff::staff_view;

fn refused(reason: &str, message: impl Into<String>) -> HubError {
    HubError::new(ErrorCode::RoleRefused, message)
        .with_details(serde_json::json!({ "reason": reason }))
}

/// Whether a role counts as a Lead for authority (`supervisor` is a Lead's hint that it
/// is free to supervise, not a role the core grants).
fn is_lead(role: Role) -> bool {
    matches!(role, Role::Lead | Role::Supervisor)
}

/// Whether sessions of roles `a` and `b` are peers: Leads of Leads, Managers of Managers
/// (the Chief has none).
pub(in crate::hub) fn are_peers(a: Role, b: Role) -> bool {
    (a == Role::Manager && b == Role::Manager) || (is_lead(a) && is_lead(b))
}

/// How a role is named to people: `manager of app`, `chief`.
pub(super) fn role_label(role: Role, project: Option<&str>) -> String {
    match (role, project) {
        (Role::Manager, Some(p)) => format!("manager of {p}"),
        (role, _) => role.as_str().to_string(),
    }
}

/// A role's holder as people name it: `manager of app mara`; `manager app@main` when the
/// name already says the project (not `manager of app app@main`).
pub(super) fn role_and_name(role: Role, project: Option<&str>, name: &str) -> String {
    match project {
        Some(p)
            if role == Role::Manager
                && (name == p || name.strip_prefix(p).is_some_and(|r| r.starts_with('@'))) =>
        {
            format!("manager {name}")
        }
        _ => format!("{} {name}", role_label(role, project)),
    }
}

impl State {
    /// The lease a session holds, with its live flag.
    fn lease_of(&self, db: &Connection, session: &SessionId) -> HubResult<Option<Lease>> {
        Ok(store::leases::held_by(db, session)?.map(|l| self.live_lease(l)))
    }

    fn live_lease(&self, mut lease: Lease) -> Lease {
        lease.connected = self.presence.is_live(&lease.session_id);
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
        let id = self.presence.registered(cx.conn)?.clone();
        self.session_info(db, &id)
    }

    fn sender(info: &SessionInfo) -> Sender {
        Sender {
            kind: ClientKind::Pi,
            session_id: Some(info.id.clone()),
            name: info.name.clone(),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_is_named_without_saying_the_project_twice() {
        let named = |name| role_and_name(Role::Manager, Some("app"), name);
        assert_eq!(named("mara"), "manager of app mara");
        assert_eq!(named("app@main"), "manager app@main");
        assert_eq!(named("app"), "manager app");
        assert_eq!(named("apple@main"), "manager of app apple@main");
        assert_eq!(role_and_name(Role::Chief, None, "cleo"), "chief cleo");
    }
}
