//! A pairing's goal: resolved from the text given or read from a file (a path relative to
//! the supervisor's cwd for a Pi session, the worker's otherwise), at the start of a
//! pairing or by `set_goal`, which tells the supervisor and the subscribers.

use std::path::Path;

use rusqlite::Connection;

use super::pairing_message;
use crate::hub::{Cx, HubError, HubResult, Out, State, atomically};
use crate::protocol::{
    ClientKind, DeliveryKind, ErrorCode, PairingChange, ServerMsg, SessionInfo, requests,
};
use crate::store;
use crate::supervise::rules::{self, GoalError};

fn goal_error(err: GoalError) -> HubError {
    match err {
        GoalError::Empty => HubError::new(ErrorCode::InvalidArgument, "the goal is empty"),
        GoalError::TooLong => HubError::new(
            ErrorCode::InvalidArgument,
            format!(
                "the goal is over {} characters: put it in a file and give its path",
                rules::MAX_GOAL_CHARS
            ),
        ),
        GoalError::Unreadable(message) => HubError::new(ErrorCode::GoalUnreadable, message),
    }
}

/// The goal as given (read from a file when it is a path, relative to the supervisor's
/// cwd for a Pi session and the worker's otherwise), or none.
pub(super) fn initial_goal(
    args: &requests::Supervise,
    kind: ClientKind,
    supervisor: &SessionInfo,
    worker: &SessionInfo,
) -> HubResult<Option<rules::Goal>> {
    let base = args.cwd.clone().unwrap_or_else(|| match kind {
        ClientKind::Pi => supervisor.cwd.clone(),
        _ => worker.cwd.clone(),
    });
    let goal = match args.goal.as_deref() {
        Some(g) if !g.trim().is_empty() => {
            Some(rules::resolve_goal(g, Path::new(&base)).map_err(goal_error)?)
        }
        _ => None,
    };
    Ok(goal)
}

impl State {
    pub(in crate::hub) fn set_goal(
        &mut self,
        cx: Cx,
        req: requests::SetGoal,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Cx { conn, kind, id } = cx;
        let requests::SetGoal {
            goal,
            session,
            cwd,
            by,
            ..
        } = req;
        let stored = if kind == ClientKind::Pi {
            self.supervisor_pairing(conn, db)?
        } else {
            self.pairing_for_request(conn, kind, session.as_deref(), db)?
        };
        let base = match (cwd, kind) {
            (Some(cwd), _) => cwd,
            (None, ClientKind::Pi) => self.session_info(db, self.presence.registered(conn)?)?.cwd,
            (None, _) => stored.pairing.cwd.clone(),
        };
        let goal = rules::resolve_goal(&goal, Path::new(&base)).map_err(goal_error)?;
        let by = self.actor(conn, kind, by);
        let pid = stored.pairing.id;
        let from = goal
            .file
            .as_deref()
            .map_or_else(String::new, |f| format!(" (from {f})"));
        let text = format!(
            "The goal of this pairing changed (set by {by}){from}. The steer history stays. New goal:\n\n{}",
            goal.text
        );
        let pairing = atomically(db, || {
            store::pairings::set_goal(db, pid, &goal.text, goal.file.as_deref())?;
            let pairing = self.pairing_now(pid, db)?;
            self.mail(
                pairing_message(
                    &pairing.supervisor_id,
                    DeliveryKind::Brief,
                    &text,
                    &Self::core_sender(),
                    pid,
                ),
                db,
                out,
            )?;
            Ok(pairing)
        })?;
        out.send(
            conn,
            &ServerMsg::GoalSet {
                id,
                pairing: pairing.clone(),
            },
        );
        self.pairing_event(PairingChange::Goal, &pairing, None, Some(by), out);
        Ok(())
    }
}
