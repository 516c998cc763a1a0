//! What an owner does with its workers (steer, interrupt, reply, close, inspect, list) and
//! what the human (CLI, phone) does with any, plus the checks every worker request shares.
//! Every call re-checks who is asking, whose worker it is and what its state allows, and
//! a refusal names what was missing (`worker_refused` with `details.reason`).

use rusqlite::Connection;

use crate::hub::{Cx, HubCommand, HubError, HubResult, Out, State, atomically};
use crate::protocol::requests::{
    CloseAgent, InspectAgent, InterruptAgent, ListWorkers, ReadAgentTranscript, ReplyAgent,
    SteerAgent,
};
use crate::protocol::{
    ClientKind, DeliveryKind, ErrorCode, IdError, Sender, ServerMsg, SessionId, SessionInfo,
    Worker, WorkerAction, WorkerId, WorkerState,
};
use crate::store::workers::WorkerRow;
use crate::store::{self, messages::NewMessage};
use crate::workers::launch::{LaunchSpec, ProcKey, SessionStart};

/// Longest task or steer text, in bytes (the mail's frame bound applies too).
const MAX_TASK_BYTES: usize = 128 * 1024;

/// A refusal with its reason for the model or the human.
pub(in crate::hub) fn refused(reason: &str, message: impl Into<String>) -> HubError {
    HubError::new(ErrorCode::WorkerRefused, message)
        .with_details(serde_json::json!({ "reason": reason }))
}

/// `^[a-z][a-z0-9_-]{0,31}$`.
pub(in crate::hub) fn check_label(label: &str) -> HubResult<()> {
    let mut chars = label.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && label.len() <= 32
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(refused(
            "bad_label",
            format!(
                "label {label:?} is not allowed: 1-32 characters, a lowercase letter first, then lowercase letters, digits, '_' or '-'"
            ),
        ))
    }
}

pub(in crate::hub) fn check_text(what: &str, text: &str) -> HubResult<()> {
    if text.trim().is_empty() {
        return Err(HubError::new(
            ErrorCode::InvalidArgument,
            format!("{what} must not be empty"),
        ));
    }
    if text.len() > MAX_TASK_BYTES {
        return Err(HubError::new(
            ErrorCode::LimitExceeded,
            format!(
                "{what} is {} bytes, more than the {MAX_TASK_BYTES} allowed; put the details in a file and name it",
                text.len()
            ),
        ));
    }
    Ok(())
}

/// The sender of what an owner writes to its worker.
pub(super) fn owner_sender(owner: &SessionInfo) -> Sender {
    Sender {
        kind: ClientKind::Pi,
        session_id: Some(owner.id.clone()),
        name: owner.name.clone(),
    }
}

/// The spec that starts `row`'s process from `start`.
pub(in crate::hub) fn launch_spec(row: &WorkerRow, start: SessionStart) -> LaunchSpec {
    let w = &row.worker;
    LaunchSpec {
        worker: ProcKey::Worker(w.id).raw(),
        label: w.label.clone(),
        cwd: w.cwd.clone().into(),
        start,
        model: row.launch.model.clone(),
        thinking: row.launch.thinking.clone(),
        tools: row.launch.tools.clone(),
        exclude_tools: row.launch.exclude_tools.clone(),
        system_prompt: row.launch.prompt.clone(),
        nonce: row.nonce.clone(),
    }
}

impl State {
    /// The registered Pi session asking, with its record.
    pub(in crate::hub) fn me(&self, cx: Cx, db: &Connection) -> HubResult<SessionInfo> {
        let id = self.presence.registered(cx.conn)?.clone();
        self.session_info(db, &id)
    }

    /// The worker `agent` names for this caller: a Pi owner names its own live workers by
    /// label (or exact session id); the human names any live worker by id, label or
    /// session id.
    pub(in crate::hub) fn target_worker(
        &self,
        cx: Cx,
        agent: &str,
        db: &Connection,
    ) -> HubResult<WorkerRow> {
        let agent = agent.trim();
        if cx.kind == ClientKind::Pi {
            let me = self.presence.registered(cx.conn)?.clone();
            if let Some(row) = store::workers::live_by_label(db, &me, agent)? {
                return Ok(row);
            }
            if let Some(row) = store::workers::live_by_session(db, &SessionId::from(agent))? {
                if row.worker.owner_id == me {
                    return Ok(row);
                }
                return Err(refused(
                    "not_direct_owner",
                    format!(
                        "worker {agent} belongs to {}, not to this session; only its owner may act on it",
                        row.worker.owner_name
                    ),
                ));
            }
            return Err(refused(
                "agent_not_found",
                format!("this session has no live worker {agent:?}; list_agents shows yours"),
            ));
        }
        let by_id = match agent.trim_start_matches('#').parse::<WorkerId>() {
            Ok(id) => store::workers::get(db, id)?,
            // A number past the store's range is no worker's id: the sender's mistake,
            // refused like an out-of-range id field, not a store failure.
            Err(e @ IdError::OutOfRange(_)) => {
                return Err(HubError::new(
                    ErrorCode::InvalidMessage,
                    format!("agent: {e}"),
                ));
            }
            Err(IdError::NotANumber(_)) => None,
        };
        if let Some(row) = by_id {
            return Ok(row);
        }
        if let Some(row) = store::workers::live_by_session(db, &SessionId::from(agent))? {
            return Ok(row);
        }
        let mut labelled = store::workers::live_labelled(db, agent)?;
        match labelled.len() {
            1 => Ok(labelled.remove(0)),
            0 => Err(refused(
                "agent_not_found",
                format!("no live worker {agent:?}; `shepherd workers` lists them"),
            )),
            _ => Err(HubError::new(
                ErrorCode::AmbiguousSession,
                format!(
                    "{} live workers are labelled {agent:?} ({}); name one by its id",
                    labelled.len(),
                    labelled
                        .iter()
                        .map(|r| format!("#{} of {}", r.worker.id, r.worker.owner_name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }

    /// Refuse `action` unless the worker's state allows it now.
    pub(super) fn check_action(row: &WorkerRow, action: WorkerAction) -> HubResult<()> {
        if row.worker.state.actions().contains(&action) {
            return Ok(());
        }
        let reason = match (action, row.worker.state) {
            (WorkerAction::Reply, WorkerState::Working) => "no_pending_ask",
            _ => "agent_busy",
        };
        Err(refused(
            reason,
            format!(
                "worker {} is {}: {} is not available now (available: {})",
                row.worker.label,
                row.worker.state,
                action.as_str(),
                row.worker
                    .state
                    .actions()
                    .iter()
                    .map(|a| a.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ))
    }

    /// Tell subscribers a worker changed.
    pub(in crate::hub) fn worker_changed(&self, worker: Worker, out: &mut Out) {
        self.presence
            .broadcast(&ServerMsg::WorkerChanged { worker }, out);
    }

    pub(in crate::hub) fn worker_record(
        &self,
        db: &Connection,
        id: WorkerId,
    ) -> HubResult<WorkerRow> {
        store::workers::get(db, id)?.ok_or_else(|| {
            HubError::new(
                ErrorCode::Internal,
                format!("worker {id} vanished from the store"),
            )
        })
    }

    /// `list_workers`: a Pi session's own tree; the human's: every worker.
    pub(in crate::hub) fn list_workers(
        &self,
        cx: Cx,
        req: ListWorkers,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let rows = if cx.kind == ClientKind::Pi {
            let me = self.presence.registered(cx.conn)?.clone();
            store::workers::tree_of(db, &me, req.all)?
        } else {
            store::workers::list(db, req.all)?
        };
        let workers = rows.into_iter().map(|r| r.worker).collect();
        out.send(cx.conn, &ServerMsg::Workers { id: cx.id, workers });
        Ok(())
    }

    /// `steer_agent`: mail the worker a steer from its owner (or the human).
    pub(in crate::hub) fn steer_agent(
        &mut self,
        cx: Cx,
        req: SteerAgent,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        self.mail_worker(cx, &req.agent, &req.message, WorkerAction::Steer, db, out)
    }

    /// `interrupt_agent`: abort what the worker does and continue with `message`.
    pub(in crate::hub) fn interrupt_agent(
        &mut self,
        cx: Cx,
        req: InterruptAgent,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        self.mail_worker(
            cx,
            &req.agent,
            &req.message,
            WorkerAction::Interrupt,
            db,
            out,
        )
    }

    /// Mail `message` to the worker `agent` names as a steer or an interrupt, once its
    /// state allows `action`, and answer with the worker.
    fn mail_worker(
        &mut self,
        cx: Cx,
        agent: &str,
        message: &str,
        action: WorkerAction,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        check_text("message", message)?;
        let row = self.target_worker(cx, agent, db)?;
        Self::check_action(&row, action)?;
        let kind = match action {
            WorkerAction::Interrupt => DeliveryKind::Interrupt,
            _ => DeliveryKind::Steer,
        };
        let from = self.worker_message_sender(cx, db)?;
        let mail = NewMessage::plain(&row.worker.session_id, kind, message, &from);
        self.mail(mail, db, out)?;
        tracing::info!(worker = row.worker.id.get(), by = %from.name, action = action.as_str(), "worker mailed");
        let worker = row.worker;
        out.send(cx.conn, &ServerMsg::WorkerIs { id: cx.id, worker });
        Ok(())
    }

    /// Who writes to a worker: its owner session, or the human.
    fn worker_message_sender(&self, cx: Cx, db: &Connection) -> HubResult<Sender> {
        if cx.kind == ClientKind::Pi {
            Ok(owner_sender(&self.me(cx, db)?))
        } else {
            Ok(self.human_sender(cx.conn, cx.kind, None))
        }
    }

    /// `reply_agent`: answer the worker's pending ask; it continues its assignment.
    pub(in crate::hub) fn reply_agent(
        &mut self,
        cx: Cx,
        req: ReplyAgent,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        check_text("answer", &req.answer)?;
        let row = self.target_worker(cx, &req.agent, db)?;
        let Some(ask_id) = row.worker.pending_ask else {
            return Err(refused(
                "no_pending_ask",
                format!(
                    "worker {} has not asked anything; steer it instead",
                    row.worker.label
                ),
            ));
        };
        let answer = crate::protocol::requests::Answer {
            id: cx.id,
            ask: ask_id,
            text: req.answer,
            ..Default::default()
        };
        // The same path as `answer`: first answer wins, the worker gets it as mail, and
        // the worker's state follows (`lifecycle::worker_ask_answered`).
        self.answer_quietly(cx, answer, db, out)?;
        let row = self.worker_record(db, row.worker.id)?;
        out.send(
            cx.conn,
            &ServerMsg::WorkerIs {
                id: cx.id,
                worker: row.worker,
            },
        );
        Ok(())
    }

    /// `close_agent`: close the worker and, first, the workers it owns.
    pub(in crate::hub) fn close_agent(
        &mut self,
        cx: Cx,
        req: CloseAgent,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let row = self.target_worker(cx, &req.agent, db)?;
        Self::check_action(&row, WorkerAction::Close)?;
        let by = if cx.kind == ClientKind::Pi {
            self.me(cx, db)?.name
        } else {
            self.human_label(cx.conn, cx.kind, None)
        };
        atomically(db, || self.close_tree(&row, &by, db, out))?;
        let row = self.worker_record(db, row.worker.id)?;
        out.send(
            cx.conn,
            &ServerMsg::WorkerIs {
                id: cx.id,
                worker: row.worker,
            },
        );
        Ok(())
    }

    /// `inspect_agent` and `read_agent_transcript`: a bounded view built off the hub.
    pub(in crate::hub) fn agent_text(
        &mut self,
        cx: Cx,
        agent: &str,
        transcript: bool,
        db: &Connection,
    ) -> HubResult<()> {
        let row = self.target_worker(cx, agent, db)?;
        let action = if transcript {
            WorkerAction::Transcript
        } else {
            WorkerAction::Inspect
        };
        Self::check_action(&row, action)?;
        let session = store::sessions::get_uncounted(db, &row.worker.session_id)?;
        let info = match session {
            Some(mut s) => {
                if s.session_file.is_none() {
                    s.session_file = row.worker.session_file.clone();
                }
                s
            }
            None => {
                return Err(refused(
                    "agent_busy",
                    format!(
                        "worker {} has not started its Pi session yet; try again in a moment",
                        row.worker.label
                    ),
                ));
            }
        };
        let Some(tx) = self.self_tx.upgrade() else {
            return Ok(());
        };
        let (conn, id) = (cx.conn, cx.id);
        let worker = row.worker;
        tokio::task::spawn_blocking(move || {
            let view = crate::hub::roles::staff_view(&info);
            let msg = ServerMsg::AgentText {
                id,
                worker,
                text: view.text,
            };
            let _ = tx.blocking_send(HubCommand::Respond {
                conn,
                msg: Box::new(msg),
            });
        });
        Ok(())
    }

    pub(in crate::hub) fn inspect_agent(
        &mut self,
        cx: Cx,
        req: InspectAgent,
        db: &Connection,
    ) -> HubResult<()> {
        self.agent_text(cx, &req.agent, false, db)
    }

    pub(in crate::hub) fn read_agent_transcript(
        &mut self,
        cx: Cx,
        req: ReadAgentTranscript,
        db: &Connection,
    ) -> HubResult<()> {
        self.agent_text(cx, &req.agent, true, db)
    }
}
