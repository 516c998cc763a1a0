//! Taking a lease away from its holder: the human's `release_role` (connected or away
//! holder alike) and the expiry of an away holder's lease (`roles.away_expiry_hours`,
//! checked hourly with the forgetting pass and whenever leases are listed, taken, released
//! or their holder registers). The holder becomes a Lead and is told by a `notice` in its
//! mailbox: at once when connected, on its return otherwise.

use rusqlite::Connection;

use super::roles::role_label;
use super::{Cx, HubError, HubResult, Out, State, atomically};
use crate::clock::now_ms;
use crate::protocol::requests::ReleaseRole;
use crate::protocol::{ClientKind, DeliveryKind, ErrorCode, Lease, Role, Sender, ServerMsg};
use crate::store::{self, messages::NewMessage};

/// How an away time reads in a notice: `72 h`, `0.5 h`, `2 s` (under a minute).
fn hours(ms: u64) -> String {
    if ms < 60_000 {
        return format!("{} s", ms.div_ceil(1000));
    }
    let h = format!("{:.2}", ms as f64 / 3_600_000.0);
    let h = h.trim_end_matches('0').trim_end_matches('.');
    format!("{h} h")
}

impl State {
    /// `release_role`: the human drops a lease whoever holds it.
    pub(super) fn release_role(
        &mut self,
        cx: Cx,
        req: ReleaseRole,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        self.expire_away_leases(db, out)?;
        let leases = store::leases::list(db)?;
        let lease = match req.role {
            Role::Chief => leases.iter().find(|l| l.role == Role::Chief),
            Role::Manager => {
                let Some(project) = req
                    .project
                    .as_deref()
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                else {
                    return Err(HubError::new(
                        ErrorCode::InvalidArgument,
                        format!(
                            "say which repository's Manager to release (its project name); held: {}",
                            held_list(&leases)
                        ),
                    ));
                };
                leases.iter().find(|l| {
                    l.role == Role::Manager
                        && (l.project.as_deref() == Some(project)
                            || l.repo_id.as_deref() == Some(project))
                })
            }
            Role::Lead | Role::Supervisor => {
                return Err(HubError::new(
                    ErrorCode::InvalidArgument,
                    "only the manager and chief roles are leases the human can release",
                ));
            }
        };
        let Some(lease) = lease.cloned() else {
            let what = role_label(req.role, req.project.as_deref());
            return Err(HubError::new(
                ErrorCode::RoleRefused,
                format!("nobody holds the {what}; held: {}", held_list(&leases)),
            )
            .with_details(serde_json::json!({ "reason": "not_held", "leases": leases })));
        };
        let from = self.human_sender(cx.conn, cx.kind, req.by);
        let why = format!("the human ({}) released it", from.name);
        let lease = atomically(db, || self.drop_lease(lease, &why, &from, db, out))?;
        out.send(cx.conn, &ServerMsg::RoleReleased { id: cx.id, lease });
        Ok(())
    }

    /// Release every lease whose holder has been away longer than
    /// `roles.away_expiry_hours`.
    pub(super) fn expire_away_leases(&self, db: &Connection, out: &mut Out) -> HubResult<()> {
        let max = self.facts.away_expiry_ms;
        if max == 0 {
            return Ok(());
        }
        let now = now_ms();
        for lease in store::leases::list(db)? {
            if self.presence.is_live(&lease.session_id) {
                continue;
            }
            let last_seen = store::sessions::get_uncounted(db, &lease.session_id)?
                .map_or(lease.since, |s| s.last_seen.max(lease.since));
            if now.saturating_sub(last_seen) < max {
                continue;
            }
            let why = format!("it expired after {} away", hours(max));
            let from = Sender {
                kind: ClientKind::Cli,
                session_id: None,
                name: "shepherd".to_string(),
            };
            tracing::info!(session = %lease.session_id, role = lease.role.as_str(), "an away holder's lease expired");
            atomically(db, || self.drop_lease(lease, &why, &from, db, out))?;
        }
        Ok(())
    }

    /// The hourly pass: expire away leases, logging a failure.
    pub(super) fn expire_away_leases_logged(&self, db: &Connection, out: &mut Out) {
        if let Err(e) = self.expire_away_leases(db, out) {
            tracing::error!(error = %e.message, "expiring away leases failed");
        }
    }

    /// Drop `lease`: its holder becomes a Lead and finds a notice saying `why`.
    fn drop_lease(
        &self,
        mut lease: Lease,
        why: &str,
        from: &Sender,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<Lease> {
        lease.connected = self.presence.is_live(&lease.session_id);
        store::leases::release(db, &lease.session_id)?;
        store::leases::mark_released(db, &lease.session_id, why)?;
        let label = role_label(lease.role, lease.project.as_deref());
        if let Some(holder) = store::sessions::get(db, &self.unread, &lease.session_id)? {
            self.record_role(holder, Role::Lead, db, out)?;
        }
        let text = format!(
            "You are no longer the {label}: {why}. You are a Lead now; ask for the role again with /{} if it is still yours to hold.",
            lease.role.as_str()
        );
        // The lease is released even when the mailbox is full: the notice is then lost.
        if let Err(e) = self.mail(
            NewMessage::plain(&lease.session_id, DeliveryKind::Notice, &text, from),
            db,
            out,
        ) {
            tracing::warn!(session = %lease.session_id, error = %e.message, "the notice of a released role was not stored");
        }
        tracing::info!(session = %lease.session_id, role = %label, reason = why, "lease released");
        Ok(lease)
    }
}

/// The leases held, for a refusal: `manager of app (mara, away), chief (ops)`; `none`.
fn held_list(leases: &[Lease]) -> String {
    if leases.is_empty() {
        return "none".to_string();
    }
    leases
        .iter()
        .map(|l| {
            format!(
                "{} ({})",
                role_label(l.role, l.project.as_deref()),
                l.session_name
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn away_times_read_in_hours() {
        assert_eq!(hours(72 * 3_600_000), "72 h");
        assert_eq!(hours(1_800_000), "0.5 h");
        assert_eq!(hours(1_800), "2 s");
    }
}
