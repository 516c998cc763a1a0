//! Supervision in the hub: pairing a supervisor session with a worker, the goal, the
//! verdicts and their guards, and the events both sides and the bridges see. Rules that
//! need no hub state live in [`crate::supervise::rules`]; building and delivering the
//! views (looks) is [`looks`].

mod looks;

pub(super) use looks::Supervision;
pub use looks::ViewDone;

use std::path::Path;

use rusqlite::Connection;

use super::session_change::SessionChange;
use super::{ConnId, Cx, HubError, HubResult, Out, State, atomically};
use crate::clock::now_ms;
use crate::protocol::{
    ClientKind, DeliveryKind, EndReason, ErrorCode, Pairing, PairingChange, PairingId,
    PairingState, Role, Sender, ServerMsg, SessionId, SessionInfo, Verdict, VerdictKind,
    ViewReason, requests,
};
use crate::store::{self, messages::NewMessage, pairings::Stored};
use crate::supervise::rules::{self, GoalError};

/// Mail for one side of a pairing (a brief, a view, a steer), for [`State::mail`].
pub(super) fn pairing_message<'a>(
    to: &'a SessionId,
    kind: DeliveryKind,
    text: &'a str,
    from: &'a Sender,
    pairing: PairingId,
) -> NewMessage<'a> {
    NewMessage {
        recipient: to,
        kind,
        text,
        from,
        ask_id: None,
        question: None,
        pairing_id: Some(pairing),
        look: None,
        created_at: now_ms(),
    }
}

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

fn not_paired(who: &str) -> HubError {
    HubError::new(
        ErrorCode::NotPaired,
        format!("{who} is in no active pairing; `shepherd pairings` lists them"),
    )
}

fn refused(reason: &str, message: String) -> HubError {
    HubError::new(ErrorCode::VerdictRefused, message)
        .with_details(serde_json::json!({ "reason": reason }))
}

/// The goal as given (read from a file when it is a path, relative to the supervisor's
/// cwd for a Pi session and the worker's otherwise), or none.
fn initial_goal(
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

/// At most [`rules::MAX_VERDICTS_PER_LOOK`] verdicts per look: a supervisor that keeps
/// going is stopped.
fn check_verdict_budget(stored: &Stored, pairing: &Pairing) -> HubResult<()> {
    if stored.look_verdicts >= rules::MAX_VERDICTS_PER_LOOK {
        return Err(HubError::new(
            ErrorCode::Runaway,
            format!(
                "more than {} verdicts in look {}: this one was not recorded. End your turn now; the next view starts a new look",
                rules::MAX_VERDICTS_PER_LOOK,
                pairing.looks
            ),
        ));
    }
    Ok(())
}

/// A steer needs its text and done its evidence.
fn check_verdict_text(kind: VerdictKind, text: &str) -> HubResult<()> {
    if text.is_empty() && kind != VerdictKind::LetItRun {
        let what = if kind == VerdictKind::Steer {
            "a steer needs its text: one concrete next action for the worker"
        } else {
            "done needs the evidence that the goal is met"
        };
        return Err(HubError::new(ErrorCode::InvalidArgument, what));
    }
    Ok(())
}

/// The rules a verdict is held against: a steer needs a goal (and gets a hint when it
/// repeats an earlier one); done is refused while the worker still runs a tool or a child
/// pi process. The hint, if any.
fn verdict_guards(
    kind: VerdictKind,
    text: &str,
    pairing: &Pairing,
    stored: &Stored,
    worker: &SessionInfo,
    db: &Connection,
) -> HubResult<Option<String>> {
    let mut hint = None;
    match kind {
        VerdictKind::Steer => {
            if pairing.goal.is_none() {
                return Err(refused(
                    "no_goal",
                    "no goal is set for this pairing, so there is nothing to steer toward: end your turn with let_it_run, and ask the human for the goal in one line ending with \"?\"".into(),
                ));
            }
            let recent = store::pairings::recent_steers(db, pairing.id, rules::REPEAT_WINDOW)?;
            let texts: Vec<&str> = recent.iter().map(|v| v.text.as_str()).collect();
            if let Some(i) = rules::repeats(text, &texts) {
                hint = Some(format!(
                    "This steer repeats most of an earlier one (look {}: {:?}). If the worker did not follow it, say what is different now, or let it run.",
                    recent[i].look,
                    excerpt(&recent[i].text, 120)
                ));
            }
        }
        VerdictKind::Done => {
            if let Some(tool) = worker.status.tool()
                && worker.connected
            {
                return Err(refused(
                    "pending_tool_call",
                    format!(
                        "the worker is still running a tool ({tool}) with no result yet: done is refused until it finishes. End your turn with let_it_run; the next view shows the result"
                    ),
                ));
            }
            if stored.pending_tool_calls > 0 && worker.connected && !worker.status.is_idle() {
                return Err(refused(
                    "pending_tool_call",
                    format!(
                        "the last view shows {} tool call(s) of the worker with no result yet: done is refused until they finish. End your turn with let_it_run",
                        stored.pending_tool_calls
                    ),
                ));
            }
            if let Some(pid) = worker.pid.filter(|_| worker.connected) {
                let children = rules::child_pi_processes(pid);
                if !children.is_empty() {
                    let listed: Vec<String> = children.iter().map(|(p, _)| p.to_string()).collect();
                    return Err(refused(
                        "child_pi",
                        format!(
                            "a child pi process still runs under the worker (pid {}): done is refused until it ends. End your turn with let_it_run",
                            listed.join(", ")
                        ),
                    ));
                }
            }
        }
        VerdictKind::LetItRun => {}
    }
    Ok(hint)
}

impl State {
    /// A pairing as it is now in the store (within the batch that just changed it).
    pub(super) fn pairing_now(&self, id: PairingId, db: &Connection) -> HubResult<Pairing> {
        let stored = store::pairings::get(db, id)?
            .ok_or_else(|| HubError::new(ErrorCode::Internal, format!("pairing {id} vanished")))?;
        Ok(self.pairing_record(&stored))
    }

    /// The wire record with live `connected` flags.
    pub(super) fn pairing_record(&self, stored: &Stored) -> Pairing {
        let mut p = stored.pairing.clone();
        p.supervisor_connected = self.live.contains_key(&p.supervisor_id);
        p.worker_connected = self.live.contains_key(&p.worker_id);
        p
    }

    /// Tell both sides (if connected) and every subscriber.
    pub(super) fn pairing_event(
        &self,
        change: PairingChange,
        pairing: &Pairing,
        verdict: Option<Verdict>,
        by: Option<String>,
        out: &mut Out,
    ) {
        self.pairing_event_except(change, pairing, verdict, by, None, out);
    }

    /// As [`Self::pairing_event`], but not to the session `except` (it caused the event
    /// and learned of it in its response).
    pub(super) fn pairing_event_except(
        &self,
        change: PairingChange,
        pairing: &Pairing,
        verdict: Option<Verdict>,
        by: Option<String>,
        except: Option<&str>,
        out: &mut Out,
    ) {
        // A pairing started or changed: its look timer needs the tick.
        self.timer
            .send_if_modified(|armed| !std::mem::replace(armed, true));
        let msg = ServerMsg::PairingEvent {
            change,
            pairing: pairing.clone(),
            verdict,
            by,
        };
        self.broadcast(&msg, out);
        for side in [&pairing.supervisor_id, &pairing.worker_id] {
            if Some(side.as_str()) == except {
                continue;
            }
            if let Some(live) = self.live.get(side)
                && !self.subscribers.contains(&live.conn)
            {
                out.send(live.conn, &msg);
            }
        }
    }

    pub(super) fn core_sender() -> Sender {
        Sender {
            kind: ClientKind::Cli,
            session_id: None,
            name: "shepherd".into(),
        }
    }

    /// Who is acting, as recorded: the session's name for Pi, else the human's label.
    fn actor(&self, conn: ConnId, kind: ClientKind, by: Option<String>) -> String {
        if kind == ClientKind::Pi
            && let Some(id) = self.conns.get(&conn).and_then(|c| c.session.as_deref())
        {
            return self
                .live
                .get(id)
                .map_or_else(|| id.to_string(), |l| l.name.clone());
        }
        self.human_label(conn, kind, by)
    }

    /// The active pairing a request is about: the Pi session's own, or the one of the
    /// session the human named.
    fn pairing_for_request(
        &self,
        conn: ConnId,
        kind: ClientKind,
        session: Option<&str>,
        db: &Connection,
    ) -> HubResult<Stored> {
        if kind == ClientKind::Pi {
            let me = self.registered(conn)?.clone();
            return store::pairings::active_for(db, &me)?.ok_or_else(|| not_paired("this session"));
        }
        let Some(selector) = session else {
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                "name the session (worker or supervisor) of the pairing",
            ));
        };
        let target = self.resolve(selector, db)?;
        store::pairings::active_for(db, &target.id)?.ok_or_else(|| not_paired(&target.name))
    }

    /// A Pi request that only the supervisor of its pairing may make.
    fn supervisor_pairing(&self, conn: ConnId, db: &Connection) -> HubResult<Stored> {
        let me = self.registered(conn)?.clone();
        let stored =
            store::pairings::active_for(db, &me)?.ok_or_else(|| not_paired("this session"))?;
        if stored.pairing.supervisor_id != me {
            return Err(HubError::new(
                ErrorCode::Forbidden,
                "only the supervisor of a pairing can do this; this session is its worker",
            ));
        }
        Ok(stored)
    }

    fn free(&self, s: &SessionInfo, db: &Connection) -> HubResult<bool> {
        Ok(self.live.contains_key(&s.id) && store::pairings::active_for(db, &s.id)?.is_none())
    }

    fn candidates_error(&self, code: ErrorCode, message: String, list: &[SessionInfo]) -> HubError {
        let candidates: Vec<serde_json::Value> = list
            .iter()
            .map(|s| {
                serde_json::json!({
                    "id": s.id, "name": s.name, "connected": self.live.contains_key(&s.id),
                    "cwd": s.cwd, "status": s.status,
                })
            })
            .collect();
        HubError::new(code, message).with_details(serde_json::json!({ "candidates": candidates }))
    }

    /// `supervise`: find both sides, check neither is paired, resolve the goal, store the
    /// pairing with the supervisor's brief, then answer and announce it.
    pub(super) fn supervise(
        &mut self,
        cx: Cx,
        args: requests::Supervise,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Cx { conn, kind, .. } = cx;
        let sessions = store::sessions::list(db)?;
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
        let me = self.registered(conn)?.clone();
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

    pub(super) fn unpair(
        &mut self,
        cx: Cx,
        req: requests::Unpair,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Cx { conn, kind, id } = cx;
        let requests::Unpair { session, by, .. } = req;
        let stored = self.pairing_for_request(conn, kind, session.as_deref(), db)?;
        let by = self.actor(conn, kind, by);
        let pid = stored.pairing.id;
        let me = self.conns.get(&conn).and_then(|c| c.session.clone());
        let ended = atomically(db, || {
            store::pairings::end(db, pid, EndReason::Stopped, &by, None, now_ms())?;
            let ended = self.pairing_now(pid, db)?;
            if me.as_deref() != Some(ended.supervisor_id.as_str()) {
                let text = format!(
                    "The pairing with {} ended: stopped by {by}. You no longer supervise it; your usual tools are back.",
                    ended.worker_name
                );
                self.mail(
                    pairing_message(
                        &ended.supervisor_id,
                        DeliveryKind::Brief,
                        &text,
                        &Self::core_sender(),
                        pid,
                    ),
                    db,
                    out,
                )?;
            }
            Ok(ended)
        })?;
        self.forget(pid);
        out.send(
            conn,
            &ServerMsg::Unpaired {
                id,
                pairing: ended.clone(),
            },
        );
        tracing::info!(pairing = %pid, by = %by, "pairing stopped");
        self.pairing_event(PairingChange::Ended, &ended, None, Some(by), out);
        Ok(())
    }

    pub(super) fn set_goal(
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
            (None, ClientKind::Pi) => self.session_info(db, self.registered(conn)?)?.cwd,
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

    pub(super) fn look(
        &mut self,
        cx: Cx,
        req: requests::Look,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Cx { conn, kind, id } = cx;
        let session = req.session;
        let stored = if kind == ClientKind::Pi {
            self.supervisor_pairing(conn, db)?
        } else {
            self.pairing_for_request(conn, kind, session.as_deref(), db)?
        };
        let pairing = self.pairing_record(&stored);
        out.send(
            conn,
            &ServerMsg::LookRequested {
                id,
                pairing: pairing.clone(),
            },
        );
        self.trigger_view(pairing.id, ViewReason::Look, db);
        Ok(())
    }

    pub(super) fn worker_view(&mut self, cx: Cx, db: &Connection) -> HubResult<()> {
        let stored = self.supervisor_pairing(cx.conn, db)?;
        self.start_build(&stored, ViewReason::Request, Some((cx.conn, cx.id)), db)
    }

    /// `verdict`: check the look's budget and the text, hold it against the rules (a steer
    /// needs a goal and should not repeat; done waits for the worker's tools and child
    /// processes), record it, then answer and announce it.
    pub(super) fn verdict(
        &mut self,
        cx: Cx,
        req: requests::Verdict,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let requests::Verdict {
            verdict: kind,
            text,
            ..
        } = req;
        let stored = self.supervisor_pairing(cx.conn, db)?;
        let pairing = self.pairing_record(&stored);
        check_verdict_budget(&stored, &pairing)?;
        let text = text.trim().to_string();
        check_verdict_text(kind, &text)?;
        let worker = self.session_info(db, &pairing.worker_id)?;
        let hint = verdict_guards(kind, &text, &pairing, &stored, &worker, db)?;
        let verdict = self.record_verdict(kind, text, &pairing, db, out)?;
        self.announce_verdict(cx, &pairing, verdict, hint, db, out)
    }

    /// Store the verdict and act on it in one transaction: mail a steer to the worker, end
    /// the pairing on done.
    fn record_verdict(
        &mut self,
        kind: VerdictKind,
        text: String,
        pairing: &Pairing,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<Verdict> {
        let now = now_ms();
        let verdict = Verdict {
            kind,
            text: text.clone(),
            look: pairing.looks,
            created_at: now,
        };
        let supervisor_sender = Sender {
            kind: ClientKind::Pi,
            session_id: Some(pairing.supervisor_id.clone()),
            name: pairing.supervisor_name.clone(),
        };
        atomically(db, || {
            store::pairings::insert_verdict(db, pairing.id, &verdict)?;
            match kind {
                VerdictKind::Steer => {
                    let steer = pairing_message(
                        &pairing.worker_id,
                        DeliveryKind::Steer,
                        &text,
                        &supervisor_sender,
                        pairing.id,
                    );
                    self.mail(steer, db, out)?;
                }
                VerdictKind::Done => {
                    store::pairings::end(
                        db,
                        pairing.id,
                        EndReason::Done,
                        &pairing.supervisor_name,
                        Some(&text),
                        now,
                    )?;
                }
                VerdictKind::LetItRun => {}
            }
            Ok(())
        })?;
        Ok(verdict)
    }

    /// Answer `verdict_accepted` (with a hint for a repeated steer) and tell subscribers.
    fn announce_verdict(
        &mut self,
        cx: Cx,
        pairing: &Pairing,
        verdict: Verdict,
        hint: Option<String>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Cx { conn, id, .. } = cx;
        let kind = verdict.kind;
        let after = self.pairing_now(pairing.id, db)?;
        if kind == VerdictKind::Done {
            self.forget(pairing.id);
        }
        tracing::info!(pairing = %pairing.id, verdict = ?kind, look = pairing.looks, "verdict");
        out.send(
            conn,
            &ServerMsg::VerdictAccepted {
                id,
                pairing: after.clone(),
                verdict: verdict.clone(),
                hint,
            },
        );
        let by = Some(after.supervisor_name.clone());
        self.pairing_event(
            PairingChange::Verdict,
            &after,
            Some(verdict),
            by.clone(),
            out,
        );
        if after.state == PairingState::Ended {
            self.pairing_event(PairingChange::Ended, &after, None, by, out);
        }
        Ok(())
    }

    pub(super) fn list_pairings(
        &self,
        cx: Cx,
        req: requests::ListPairings,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let pairings = store::pairings::list(db, req.all)?
            .iter()
            .map(|s| self.pairing_record(s))
            .collect();
        out.send(
            cx.conn,
            &ServerMsg::Pairings {
                id: cx.id,
                pairings,
            },
        );
        Ok(())
    }

    /// A session registered, left, was renamed or changed status: if it is in an active
    /// pairing, tell the other side when it should hear, catch a returning supervisor up,
    /// and give a look when the worker stopped.
    pub(super) fn supervision_session_changed(
        &mut self,
        change: &SessionChange<'_>,
        db: &Connection,
        out: &mut Out,
    ) {
        if !(change.noticeable() || change.came_back() || change.stopped()) {
            return; // Nothing a pairing would do: spare the lookup (updates are frequent).
        }
        let session = change.session;
        let stored = match store::pairings::active_for(db, session) {
            Ok(Some(stored)) => stored,
            Ok(None) => return,
            Err(e) => {
                tracing::error!(session = %session, error = %e, "reading the session's pairing failed");
                return;
            }
        };
        let p = &stored.pairing;
        if change.noticeable() {
            let record = self.pairing_record(&stored);
            self.pairing_event_except(
                PairingChange::Presence,
                &record,
                None,
                None,
                Some(session),
                out,
            );
        }
        if change.came_back() && p.supervisor_id == *session {
            // The first view never went out (the core stopped first), or one view of what
            // changed while it was away (withheld views, a core restart).
            let reason = if p.looks == 0 {
                ViewReason::Paired
            } else {
                ViewReason::Timer
            };
            self.trigger_view(p.id, reason, db);
        }
        if p.worker_id == *session && change.stopped() {
            self.trigger_view(p.id, ViewReason::Stopped, db);
        }
    }
}

fn excerpt(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}…")
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
