//! Verdicts on a look: the per-look budget, the text each kind needs, the guards (a steer
//! needs a goal and should not repeat an earlier one; done waits for the worker's tools and
//! child processes), then recording one (a steer mailed to the worker, done ending the
//! pairing) and announcing it.

use rusqlite::Connection;

use super::pairing_message;
use crate::clock::now_ms;
use crate::hub::{Cx, HubError, HubResult, Out, State, atomically};
use crate::protocol::{
    ClientKind, DeliveryKind, EndReason, ErrorCode, Pairing, PairingChange, PairingState, Sender,
    ServerMsg, SessionInfo, Verdict, VerdictKind, requests,
};
use crate::store::{self, pairings::Stored};
use crate::supervise::rules;

fn refused(reason: &str, message: String) -> HubError {
    HubError::new(ErrorCode::VerdictRefused, message)
        .with_details(serde_json::json!({ "reason": reason }))
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
    /// `verdict`: check the look's budget and the text, hold it against the rules (a steer
    /// needs a goal and should not repeat; done waits for the worker's tools and child
    /// processes), record it, then answer and announce it.
    pub(in crate::hub) fn verdict(
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
}

fn excerpt(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}…")
}
