//! A Manager's or the Chief's staff: who counts as staff (the sessions that report to the
//! caller by the leases; for the herd's Chief, also those on linked hosts that report to
//! nobody there), `list_staff`, the exact-id lookup that refuses anyone else as
//! unknown, and `inspect_staff`'s bounded view built off the hub.

use std::sync::Arc;

use rusqlite::Connection;

use super::Leases;
use crate::clock::now_ms;
use crate::hub::{Cx, HubCommand, HubError, HubResult, Out, State};
use crate::protocol::requests::{InspectStaff, ListStaff};
use crate::protocol::{
    ErrorCode, Lease, Role, ServerMsg, SessionId, SessionInfo, StaffMember, StaffView, ViewReason,
};
use crate::store;
use crate::supervise::view;

/// Upper bound of an `inspect_staff` view, in bytes.
const MAX_STAFF_VIEW_BYTES: usize = 16 * 1024;

impl State {
    /// Sessions that may be someone's staff: the connected ones and every lease holder,
    /// most recently seen first. Read by id: the sessions seen long ago (thousands, kept
    /// for their history) are never read for a listing.
    fn staff_candidates(&self, leases: &[Lease], db: &Connection) -> HubResult<Vec<SessionInfo>> {
        let mut ids: Vec<&SessionId> = self.presence.live_ids().collect();
        for l in leases {
            if !self.presence.is_live(&l.session_id) && !ids.contains(&&l.session_id) {
                ids.push(&l.session_id);
            }
        }
        let mut all = Vec::new();
        for id in ids {
            if let Some(mut s) = store::sessions::get(db, &self.unread, id)?
                && !s.subagent
            {
                s.connected = self.presence.is_live(&s.id);
                all.push(s);
            }
        }
        all.sort_by(|a, b| b.last_seen.cmp(&a.last_seen).then_with(|| a.id.cmp(&b.id)));
        Ok(all)
    }

    /// `list_staff`: a Manager's or the Chief's direct staff; for the human, everyone.
    pub(in crate::hub) fn list_staff(
        &mut self,
        cx: Cx,
        _req: ListStaff,
        me: Option<Arc<SessionInfo>>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
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
        // The herd's Chief's staff on linked hosts; for the human, every host's sessions.
        let chief = leases.iter().find(|l| l.role == Role::Chief);
        let far = match &me {
            Some(me) if me.role != Role::Chief => Vec::new(),
            _ => self.far_staff(
                me.as_deref(),
                chief.map(|l| (&l.session_id, l.session_name.as_str())),
            ),
        };
        members.extend(far);
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

    /// One of the caller's staff by exact id; anyone else is unknown to it.
    pub(super) fn my_staff(
        &self,
        me: &SessionInfo,
        id: &str,
        db: &Connection,
    ) -> HubResult<SessionInfo> {
        let not_found = || {
            HubError::new(
                ErrorCode::UnknownSession,
                format!("no session {id:?} among your staff; list_staff shows their exact ids"),
            )
        };
        let mut target =
            store::sessions::get_uncounted(db, &SessionId::from(id))?.ok_or_else(not_found)?;
        target.connected = self.presence.is_live(&target.id);
        let reports_to = self.reports_to(&target, db)?;
        if reports_to.session_id.as_ref() != Some(&me.id) {
            return Err(not_found());
        }
        Ok(target)
    }

    /// `inspect_staff`: a bounded view of what one of the caller's staff did recently,
    /// built on a blocking thread and returned as `staff_view`.
    /// The herd's Chief's staff on a linked host (as its mirror has them) is inspected by
    /// that host's core, which builds the view from the session's file there.
    pub(in crate::hub) fn inspect_staff(
        &mut self,
        cx: Cx,
        req: InspectStaff,
        me: Arc<SessionInfo>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let target = match self.my_staff(&me, &req.session, db) {
            Ok(target) => target,
            Err(e) if e.code == ErrorCode::UnknownSession && me.role == Role::Chief => {
                let chief = (&me.id, me.name.as_str());
                let far = self.far_staff(Some(&me), Some(chief));
                let Some(host) = far
                    .into_iter()
                    .find(|m| m.session.id.as_str() == req.session)
                    .and_then(|m| m.session.host)
                else {
                    return Err(e);
                };
                self.links
                    .check(&host)
                    .map_err(|u| crate::hub::hosts::unreachable(&host, u))?;
                let forward = crate::hosts::Forward {
                    msg: crate::protocol::ClientMsg::InspectStaff(req),
                    conn: cx.conn,
                    id: cx.id,
                };
                out.forwards.push((host, forward));
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        self.view_of_staff(cx, target);
        Ok(())
    }

    /// `inspect_staff` from a home core, for its Chief (which it checked): any session of
    /// this core, as the human may look at any.
    pub(in crate::hub) fn inspect_for_home(
        &mut self,
        cx: Cx,
        req: InspectStaff,
        db: &Connection,
    ) -> HubResult<()> {
        let Some(mut target) =
            store::sessions::get_uncounted(db, &SessionId::from(req.session.as_str()))?
        else {
            return Err(HubError::new(
                ErrorCode::UnknownSession,
                format!("no session {:?} on this host", req.session),
            ));
        };
        target.connected = self.presence.is_live(&target.id);
        self.view_of_staff(cx, target);
        Ok(())
    }

    /// Build `target`'s view on a blocking thread and answer `cx` with it.
    fn view_of_staff(&self, cx: Cx, target: SessionInfo) {
        let Some(tx) = self.self_tx.upgrade() else {
            return; // Shutting down.
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
    }
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
