//! Starting a pairing (`supervise`): finding both sides (a Pi session supervises itself;
//! the CLI or a bridge names the worker and, or finds, the supervisor), checking neither
//! is paired, storing the pairing with the supervisor's brief, then answering and
//! announcing it and building the first view.

use rusqlite::Connection;

use super::goal::initial_goal;
use super::pairing_message;
use crate::clock::now_ms;
use crate::hub::{ConnId, Cx, HubError, HubResult, Out, State, atomically};
use crate::protocol::{
    ClientKind, DeliveryKind, ErrorCode, Pairing, PairingChange, Role, ServerMsg, SessionInfo,
    ViewReason, requests,
};
use crate::store;
use crate::supervise::rules;

impl State {
    fn free(&self, s: &SessionInfo, db: &Connection) -> HubResult<bool> {
        Ok(self.presence.is_live(&s.id) && store::pairings::active_for(db, &s.id)?.is_none())
    }

    fn candidates_error(&self, code: ErrorCode, message: String, list: &[SessionInfo]) -> HubError {
        let candidates: Vec<serde_json::Value> = list
            .iter()
            .map(|s| {
                serde_json::json!({
                    "id": s.id, "name": s.name, "connected": self.presence.is_live(&s.id),
                    "cwd": s.cwd, "status": s.status,
                })
            })
            .collect();
        HubError::new(code, message).with_details(serde_json::json!({ "candidates": candidates }))
    }

    /// `supervise`: find both sides, check neither is paired, resolve the goal, store the
    /// pairing with the supervisor's brief, then answer and announce it.
    pub(in crate::hub) fn supervise(
        &mut self,
        cx: Cx,
        args: requests::Supervise,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Cx { conn, kind, .. } = cx;
        let sessions = store::sessions::list(db, &self.unread.counts())?;
        let (supervisor, worker) = if kind == ClientKind::Pi {
            self.sides_for_pi(conn, &args, &sessions, db)?
        } else {
            self.sides_named(&args, &sessions, db)?
        };
        self.check_unpaired(&supervisor, &worker, db)?;
        let goal = initial_goal(&args, kind, &supervisor, &worker)?;
        let by = self.actor(conn, kind, args.by);
        let pairing = self.start_pairing(&supervisor, &worker, goal, &by, db, out)?;
        self.announce_pairing(cx, pairing, by, db, out);
        Ok(())
    }

    /// A Pi session supervises itself; the worker is the one it names, or the only free
    /// session in its cwd.
    fn sides_for_pi(
        &self,
        conn: ConnId,
        args: &requests::Supervise,
        sessions: &[SessionInfo],
        db: &Connection,
    ) -> HubResult<(SessionInfo, SessionInfo)> {
        let me = self.presence.registered(conn)?.clone();
        if args.supervisor.is_some() {
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                "a Pi session supervises itself: leave `supervisor` out",
            ));
        }
        let me = self.session_info(db, &me)?;
        let worker = match args.worker.as_deref() {
            Some(selector) => self.session_info(db, &self.resolve(selector, db)?.id)?,
            None => {
                let mut free = Vec::new();
                for s in sessions {
                    if s.id != me.id
                        && s.cwd == me.cwd
                        && !s.subagent
                        && s.role != Role::Supervisor
                        && self.free(s, db)?
                    {
                        free.push(s.clone());
                    }
                }
                match free.len() {
                    0 => {
                        return Err(self.candidates_error(
                            ErrorCode::NoCandidate,
                            format!(
                                "no free session in {} to supervise: start Pi there, or name one: /supervise @<session> <goal>",
                                me.cwd
                            ),
                            &[],
                        ));
                    }
                    1 => free.remove(0),
                    n => {
                        return Err(self.candidates_error(
                            ErrorCode::AmbiguousSession,
                            format!(
                                "{n} free sessions in {}: pick one (/supervise @<session> <goal>)",
                                me.cwd
                            ),
                            &free,
                        ));
                    }
                }
            }
        };
        Ok((me, worker))
    }

    /// The CLI or a bridge names the worker; the supervisor is the one named, or the most
    /// recently seen free supervisor session in the worker's cwd.
    fn sides_named(
        &self,
        args: &requests::Supervise,
        sessions: &[SessionInfo],
        db: &Connection,
    ) -> HubResult<(SessionInfo, SessionInfo)> {
        let Some(selector) = args.worker.as_deref() else {
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                "name the worker session to supervise",
            ));
        };
        let worker = self.session_info(db, &self.resolve(selector, db)?.id)?;
        let supervisor = match args.supervisor.as_deref() {
            Some(selector) => self.session_info(db, &self.resolve(selector, db)?.id)?,
            None => {
                // `sessions` is ordered most recently seen first.
                let mut found = None;
                for s in sessions {
                    if s.id != worker.id
                        && s.role == Role::Supervisor
                        && s.cwd == worker.cwd
                        && self.free(s, db)?
                    {
                        found = Some(s.clone());
                        break;
                    }
                }
                found.ok_or_else(|| {
                    self.candidates_error(
                        ErrorCode::NoCandidate,
                        format!(
                            "no free supervisor session in {}: start Pi there with SHEPHERD_ROLE=supervisor, or run /supervise in a Pi session there",
                            worker.cwd
                        ),
                        &[],
                    )
                })?
            }
        };
        Ok((supervisor, worker))
    }

    /// Two different sessions, neither in an active pairing.
    fn check_unpaired(
        &self,
        supervisor: &SessionInfo,
        worker: &SessionInfo,
        db: &Connection,
    ) -> HubResult<()> {
        if supervisor.id == worker.id {
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                format!("{} cannot supervise itself", worker.name),
            ));
        }
        for side in [&supervisor, &worker] {
            if let Some(existing) = store::pairings::active_for(db, &side.id)? {
                let record = self.pairing_record(&existing);
                return Err(HubError::new(
                    ErrorCode::AlreadyPaired,
                    format!(
                        "{} is already in pairing {} ({} supervises {}); stop it first",
                        side.name, record.id, record.supervisor_name, record.worker_name
                    ),
                )
                .with_details(serde_json::json!({ "pairing": record })));
            }
        }
        Ok(())
    }

    /// Store the pairing and mail the supervisor its brief, in one transaction.
    fn start_pairing(
        &mut self,
        supervisor: &SessionInfo,
        worker: &SessionInfo,
        goal: Option<rules::Goal>,
        by: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<Pairing> {
        let now = now_ms();
        let pairing = atomically(db, || {
            let pid = store::pairings::insert(
                db,
                store::pairings::NewPairing {
                    supervisor_id: &supervisor.id,
                    worker_id: &worker.id,
                    cwd: &worker.cwd,
                    goal: goal.as_ref().map(|g| g.text.as_str()),
                    goal_file: goal.as_ref().and_then(|g| g.file.as_deref()),
                    created_at: now,
                },
            )?;
            let pairing = self.pairing_now(pid, db)?;
            let brief = brief_text(&pairing, worker, by);
            self.mail(
                pairing_message(
                    &supervisor.id,
                    DeliveryKind::Brief,
                    &brief,
                    &Self::core_sender(),
                    pairing.id,
                ),
                db,
                out,
            )?;
            Ok(pairing)
        })?;
        Ok(pairing)
    }

    /// Answer `paired`, tell subscribers the pairing started, and build the first view.
    fn announce_pairing(
        &mut self,
        cx: Cx,
        pairing: Pairing,
        by: String,
        db: &Connection,
        out: &mut Out,
    ) {
        let Cx { conn, id, .. } = cx;
        out.send(
            conn,
            &ServerMsg::Paired {
                id,
                pairing: pairing.clone(),
            },
        );
        tracing::info!(pairing = %pairing.id, supervisor = %pairing.supervisor_name, worker = %pairing.worker_name, by = %by, "pairing started");
        self.pairing_event(PairingChange::Started, &pairing, None, Some(by), out);
        self.trigger_view(pairing.id, ViewReason::Paired, db);
    }
}

/// What the supervisor is told when the pairing starts (no turn): who it watches, the
/// goal, and how to answer a look. The extension adds the policy text.
fn brief_text(p: &Pairing, worker: &SessionInfo, by: &str) -> String {
    let place = match (&worker.repo, &worker.branch) {
        (Some(repo), Some(branch)) => format!("{repo}@{branch}"),
        (Some(repo), None) => repo.clone(),
        _ => worker.cwd.clone(),
    };
    let goal = match (&p.goal, &p.goal_file) {
        (Some(goal), Some(file)) => format!("Goal (from {file}):\n\n{goal}"),
        (Some(goal), None) => format!("Goal:\n\n{goal}"),
        (None, _) => "No goal is set yet: steer is refused until one is (set_goal).".into(),
    };
    format!(
        "Pairing {id}: you supervise {worker} (session {wid}) in {place}, started by {by}.\n\n{goal}\n\n\
         Each view shows what the worker did since the last look. Answer each view with exactly one verdict: \
         steer (one concrete next action), let_it_run, or done (with the evidence). Then end your turn.",
        id = p.id,
        worker = p.worker_name,
        wid = p.worker_id,
    )
}
