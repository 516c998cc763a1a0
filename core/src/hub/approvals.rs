//! Tool-call approvals on the hub. `request_approval` is ruled off the hub (the policy
//! reads the project's `.pi/shepherd.toml` and resolves paths: file system work a cloned
//! repository could make slow), then answered here: `allow` and `deny` at once, `ask` as
//! a pending approval kept in the store (unless an "allow for this session" of the same
//! rule covers it), announced to the subscribers as `approval_changed`. The same call
//! asked about again finds its approval as it stands, so a session that reconnects
//! re-attaches instead of asking twice. `decide_approval` (the human) and
//! `withdraw_approval` (the session) end a pending one once: the first wins, a later one
//! is `already_decided` naming who decided. A session that closes withdraws what it
//! waited for; its session grants end with it.

use std::path::Path;

use rusqlite::Connection;

use super::{Cx, HubError, HubResult, Out, State};
use crate::approvals::{Call, Policy, ProjectPolicy, Ruling as PolicyRuling, project_policy};
use crate::clock::now_ms;
use crate::config::approvals::{Decision, Fallback};
use crate::protocol::requests::{
    ApproveAgent, DecideApproval, ListApprovals, RequestApproval, WithdrawApproval,
};
use crate::protocol::{
    Approval, ApprovalId, ApprovalScope, ApprovalState, ClientKind, DeliveryKind, ErrorCode,
    Ruling, ServerMsg, SessionId, SessionInfo, SessionStatus,
};
use crate::store;
use crate::store::messages::NewMessage;

/// A session's status while one of its calls waits for a decision.
pub const WAITING: &str = "waiting for approval";

/// The most of a call's subject an approval keeps and shows.
const SUBJECT_MAX: usize = 4096;

impl State {
    /// `request_approval`: rule the call off the hub, then answer it here.
    pub(super) fn request_approval(
        &mut self,
        cx: Cx,
        req: RequestApproval,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let me = self.presence.registered(cx.conn)?.clone();
        let me = self.session_info(db, &me)?;
        if req.tool.trim().is_empty() || req.tool_call_id.trim().is_empty() {
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                "request_approval needs the tool's name and Pi's tool call id",
            ));
        }
        if let Some(a) = store::approvals::of_call(db, &me.id, &req.tool_call_id)? {
            out.send(cx.conn, &as_ruled(cx.id, a));
            return Ok(());
        }
        let user = self.facts.approvals_layer.clone();
        let (cwd, root) = (me.cwd.clone(), me.repo.clone());
        let (tool, input) = (req.tool.clone(), req.input.clone());
        self.blocking_then(
            Some((cx.conn, cx.id)),
            move || {
                let root = root.as_deref().map(Path::new);
                let project = match root.map(project_policy) {
                    Some(ProjectPolicy::Layer(layer)) => Some(layer),
                    Some(ProjectPolicy::Refused(why)) => {
                        tracing::warn!("approvals: {why}; the user's policy alone applies");
                        None
                    }
                    _ => None,
                };
                let policy = Policy { user, project };
                let call = Call {
                    tool: &tool,
                    input: &input,
                    cwd: Path::new(&cwd),
                    worktree: root,
                };
                (policy.decide(&call), call.subject())
            },
            move |state, (ruling, subject), db, out| {
                state.ruled(cx, &me, &req, ruling, &subject, db, out)
            },
        );
        Ok(())
    }

    /// A call ruled by the policy: answered, or kept as a pending approval.
    #[allow(clippy::too_many_arguments)]
    fn ruled(
        &mut self,
        cx: Cx,
        me: &SessionInfo,
        req: &RequestApproval,
        ruling: PolicyRuling,
        subject: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let rule = ruling.source.to_string();
        let answer = |ruling: Ruling, rule: String| ServerMsg::ApprovalRuled {
            id: cx.id,
            ruling,
            rule,
            approval: None,
        };
        match ruling.decision {
            Decision::Allow => out.send(cx.conn, &answer(Ruling::Allow, rule)),
            Decision::Deny => out.send(cx.conn, &answer(Ruling::Deny, rule)),
            Decision::Ask => {
                if let Some(by) = store::approvals::granted(db, &me.id, &rule)? {
                    let why = format!("allowed for this session by {by} ({rule})");
                    out.send(cx.conn, &answer(Ruling::Allow, why));
                    return Ok(());
                }
                // Asked twice while the first was being ruled: the first one's approval.
                if let Some(a) = store::approvals::of_call(db, &me.id, &req.tool_call_id)? {
                    out.send(cx.conn, &as_ruled(cx.id, a));
                    return Ok(());
                }
                let mut approval = Approval {
                    id: 0.into(),
                    session_id: me.id.clone(),
                    session_name: me.name.clone(),
                    tool: req.tool.clone(),
                    subject: cut(subject, SUBJECT_MAX),
                    rule,
                    cwd: me.cwd.clone(),
                    tool_call_id: req.tool_call_id.clone(),
                    state: ApprovalState::Pending,
                    scope: None,
                    decided_by: None,
                    reason: None,
                    created_at: now_ms(),
                    decided_at: None,
                    host: None,
                };
                approval.id = store::approvals::insert(db, &approval)?;
                self.approval_timer(approval.id, approval.created_at);
                self.tell_owner(&approval, db, out)?;
                self.show_waiting(&me.id, None, db, out)?;
                tracing::info!(approval = %approval.id, session = %me.id, tool = %approval.tool, "a tool call waits for approval");
                self.approval_changed(&approval, db, out);
                out.send(cx.conn, &as_ruled(cx.id, approval));
            }
        }
        Ok(())
    }

    /// `decide_approval`: the human allows (once, or for the session) or denies.
    pub(super) fn decide_approval(
        &mut self,
        cx: Cx,
        req: DecideApproval,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let by = self.human_label(cx.conn, cx.kind, req.by.clone());
        let decision = Decided {
            allow: req.allow,
            scope: req.scope,
            reason: req.reason.as_deref(),
        };
        self.decide(cx, req.approval, decision, &by, db, out)
    }

    /// `approve_agent`: a worker's owner decides one of that worker's approvals.
    pub(super) fn approve_agent(
        &mut self,
        cx: Cx,
        req: ApproveAgent,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let row = self.target_worker(cx, &req.agent, db)?;
        match store::approvals::get(db, req.approval)? {
            Some(a) if a.session_id == row.worker.session_id => {}
            Some(_) => {
                return Err(HubError::new(
                    ErrorCode::Forbidden,
                    format!(
                        "approval {} is not worker {}'s; list_workers shows your workers",
                        req.approval, row.worker.label
                    ),
                ));
            }
            None => return Err(unknown(req.approval)),
        }
        let me = self.presence.registered(cx.conn)?.clone();
        let by = format!("owner {}", self.session_info(db, &me)?.name);
        let decision = Decided {
            allow: req.allow,
            scope: req.scope,
            reason: req.reason.as_deref(),
        };
        self.decide(cx, req.approval, decision, &by, db, out)
    }

    /// End pending approval `id` as `by` decided (the first decision wins), grant its rule
    /// for an allow for the session, tell everyone, and answer `cx` with it.
    fn decide(
        &mut self,
        cx: Cx,
        id: ApprovalId,
        d: Decided<'_>,
        by: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let (state, scope) = match d.allow {
            true => (ApprovalState::Allowed, Some(d.scope)),
            false => (ApprovalState::Denied, None),
        };
        let reason = d
            .reason
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(|r| cut(r, SUBJECT_MAX));
        let approval = self.end_approval(id, state, scope, by, reason.as_deref(), db)?;
        if scope == Some(ApprovalScope::Session) {
            store::approvals::grant(db, &approval.session_id, &approval.rule, by)?;
        }
        tracing::info!(approval = %approval.id, state = approval.state.as_str(), %by, "approval decided");
        self.ended_for(cx, approval, db, out);
        Ok(())
    }

    /// Announce `approval`'s end to everyone and answer `cx`, who ended it, with it.
    fn ended_for(&self, cx: Cx, approval: Approval, db: &Connection, out: &mut Out) {
        self.approval_changed(&approval, db, out);
        out.send(
            cx.conn,
            &ServerMsg::ApprovalIs {
                id: cx.id,
                approval,
            },
        );
    }

    /// A managed worker's call is held: its owner is told, and may decide it.
    fn tell_owner(&self, approval: &Approval, db: &Connection, out: &mut Out) -> HubResult<()> {
        let Some(row) = store::workers::live_by_session(db, &approval.session_id)? else {
            return Ok(());
        };
        let w = &row.worker;
        let text = format!(
            "Your worker {label} (#{id}) waits for approval #{approval}: {tool} `{subject}` ({rule}). \
             Decide it with approve_agent {{agent: \"{label}\", approval: {approval}, decision: \"allow\" | \"allow_session\" | \"deny\", reason}}, \
             or leave it to the human, whose phone shows it too; the first decision wins.",
            label = w.label,
            id = w.id,
            approval = approval.id,
            tool = approval.tool,
            subject = cut(&approval.subject, 500),
            rule = approval.rule,
        );
        let from = Self::core_sender();
        let notice = NewMessage::plain(&w.owner_id, DeliveryKind::Notice, &text, &from);
        if let Err(e) = self.mail(notice, db, out) {
            tracing::warn!(approval = %approval.id, error = %e.message, "the owner was not told of its worker's held call");
        }
        Ok(())
    }

    /// `withdraw_approval`: the session stops waiting for one of its own.
    pub(super) fn withdraw_approval(
        &mut self,
        cx: Cx,
        req: WithdrawApproval,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let me = self.presence.registered(cx.conn)?.clone();
        match store::approvals::get(db, req.approval)? {
            Some(a) if a.session_id == me => {}
            _ => return Err(unknown(req.approval)),
        }
        let why = "withdrawn: the session stopped waiting (its run was stopped)";
        let approval =
            self.end_approval(req.approval, ApprovalState::Withdrawn, None, why, None, db)?;
        self.ended_for(cx, approval, db, out);
        Ok(())
    }

    /// `list_approvals`.
    pub(super) fn list_approvals(
        &mut self,
        cx: Cx,
        req: ListApprovals,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let approvals = store::approvals::list(db, req.all)?;
        out.send(
            cx.conn,
            &ServerMsg::Approvals {
                id: cx.id,
                approvals,
            },
        );
        Ok(())
    }

    /// A session closed: what it waited for is withdrawn, its session grants end.
    pub(super) fn session_closed_approvals(
        &mut self,
        session: &SessionId,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let why = "withdrawn: the session ended";
        for a in store::approvals::pending_of(db, session)? {
            let approval =
                self.end_approval(a.id, ApprovalState::Withdrawn, None, why, None, db)?;
            self.approval_changed(&approval, db, out);
        }
        store::approvals::end_grants(db, session)?;
        Ok(())
    }

    /// With `approvals.timeout_secs`, wake the hub when approval `id` (opened at `opened`)
    /// has waited that long.
    fn approval_timer(&self, id: ApprovalId, opened: u64) {
        let timeout_ms = self.facts.approvals.timeout_secs.saturating_mul(1000);
        if timeout_ms == 0 {
            return;
        }
        let left = (opened + timeout_ms).saturating_sub(now_ms());
        let hub = self.self_tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(left)).await;
            if let Some(tx) = hub.upgrade() {
                let _ = tx
                    .send(super::HubCommand::ApprovalDue { approval: id })
                    .await;
            }
        });
    }

    /// At start: the pending approvals' timeouts again (a restart lost their timers).
    pub(super) fn recover_approval_timers(&self, db: &Connection) -> HubResult<()> {
        if self.facts.approvals.timeout_secs == 0 {
            return Ok(());
        }
        for a in store::approvals::list(db, false)? {
            self.approval_timer(a.id, a.created_at);
        }
        Ok(())
    }

    /// Approval `id` waited `approvals.timeout_secs`: still pending, `on_timeout` decides.
    pub(super) fn approval_due(
        &mut self,
        id: ApprovalId,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        if !store::approvals::get(db, id)?.is_some_and(|a| a.state == ApprovalState::Pending) {
            return Ok(());
        }
        let secs = self.facts.approvals.timeout_secs;
        let (state, scope, reason) = match self.facts.approvals.on_timeout {
            Fallback::Allow => (ApprovalState::Allowed, Some(ApprovalScope::Once), None),
            Fallback::Deny => (
                ApprovalState::Denied,
                None,
                Some(format!(
                    "nobody decided within {secs} s (approvals.on_timeout = \"deny\")"
                )),
            ),
        };
        let by = format!("the timeout ({secs} s)");
        let approval = self.end_approval(id, state, scope, &by, reason.as_deref(), db)?;
        tracing::info!(approval = %id, state = approval.state.as_str(), "an approval timed out");
        self.approval_changed(&approval, db, out);
        Ok(())
    }

    /// End pending approval `id`; refused when there is none or it ended already.
    fn end_approval(
        &self,
        id: crate::protocol::ApprovalId,
        state: ApprovalState,
        scope: Option<ApprovalScope>,
        by: &str,
        reason: Option<&str>,
        db: &Connection,
    ) -> HubResult<Approval> {
        let now = now_ms();
        if !store::approvals::decide(db, id, state, scope, by, reason, now)? {
            return Err(match store::approvals::get(db, id)? {
                None => unknown(id),
                Some(a) => HubError::new(
                    ErrorCode::AlreadyDecided,
                    format!(
                        "approval {id} is no longer waiting: {} by {}",
                        a.state.as_str(),
                        a.decided_by.as_deref().unwrap_or("?")
                    ),
                )
                .with_details(serde_json::json!({
                    "state": a.state.as_str(),
                    "decided_by": a.decided_by,
                })),
            });
        }
        let approval = store::approvals::get(db, id)?.ok_or_else(|| unknown(id))?;
        Ok(approval)
    }

    /// The session's status while a call of it waits (`after`: none), and once it does
    /// not (`after`: the tool, which runs or is told it may not): shown in listings,
    /// `/status` and the supervisor's and Manager's views. A status the session reported
    /// meanwhile is left as it is.
    fn show_waiting(
        &self,
        session: &SessionId,
        after: Option<&str>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Some(mut info) = store::sessions::get(db, &self.unread, session)? else {
            return Ok(());
        };
        let waiting = info.status == *WAITING;
        let now = match after {
            None => SessionStatus::Other(WAITING.to_string()),
            Some(tool) if waiting => SessionStatus::Tool(tool.to_string()),
            Some(_) => return Ok(()),
        };
        if info.status == now {
            return Ok(());
        }
        info.status = now;
        store::sessions::upsert(db, &info)?;
        info.connected = self.presence.is_live(session);
        self.presence
            .broadcast(&ServerMsg::SessionChanged { session: info }, out);
        Ok(())
    }

    /// Tell the subscribers (not Pi sessions) and the session whose call it holds.
    fn approval_changed(&self, approval: &Approval, db: &Connection, out: &mut Out) {
        if approval.state != ApprovalState::Pending
            && let Err(e) = self.show_waiting(&approval.session_id, Some(&approval.tool), db, out)
        {
            tracing::warn!(approval = %approval.id, error = %e.message, "the session's status after its approval was not set");
        }
        let msg = ServerMsg::ApprovalChanged {
            approval: approval.clone(),
        };
        self.presence
            .broadcast_to(&msg, |kind| kind != ClientKind::Pi, out);
        if let Some(live) = self.presence.live(&approval.session_id) {
            out.send(live.conn, &msg);
        }
    }
}

/// A decision as a request carries it: allow (`scope`) or deny (`reason`).
struct Decided<'a> {
    allow: bool,
    scope: ApprovalScope,
    reason: Option<&'a str>,
}

/// An approval as the answer to a `request_approval` for its call.
fn as_ruled(id: u64, approval: Approval) -> ServerMsg {
    let ruling = match approval.state {
        ApprovalState::Pending => Ruling::Pending,
        ApprovalState::Allowed => Ruling::Allow,
        ApprovalState::Denied | ApprovalState::Withdrawn => Ruling::Deny,
    };
    ServerMsg::ApprovalRuled {
        id,
        ruling,
        rule: approval.rule.clone(),
        approval: Some(approval),
    }
}

fn unknown(id: crate::protocol::ApprovalId) -> HubError {
    HubError::new(
        ErrorCode::UnknownApproval,
        format!("no approval {id}; `shepherd approvals` lists the pending ones"),
    )
}

/// At most `max` bytes of `text`, cut at a character boundary, `…` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
