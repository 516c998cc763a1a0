//! The requests about managed workers: an owner delegates, continues, steers, interrupts,
//! replies to, closes, inspects and lists its workers; the human (CLI, phone) lists,
//! steers, replies to and closes any; a worker asks its owner. Every call re-checks who
//! is asking, whose worker it is and what its state allows, and a refusal names what was
//! missing (`worker_refused` with `details.reason`).

use std::path::Path;

use rusqlite::Connection;

use super::HostOp;
use crate::clock::now_ms;
use crate::hub::{Cx, HubCommand, HubError, HubResult, Out, State, atomically};
use crate::protocol::requests::{
    AskOwner, CloseAgent, ContinueAgent, DelegateAgent, InspectAgent, InterruptAgent, ListWorkers,
    ReadAgentTranscript, ReplyAgent, SteerAgent,
};
use crate::protocol::{
    AskId, AskState, AskTo, ClientKind, DeliveryKind, ErrorCode, Role, Sender, ServerMsg,
    SessionId, SessionInfo, Worker, WorkerAction, WorkerBackend, WorkerState,
};
use crate::store::workers::{LaunchSettings, NewWorker, WorkerRow};
use crate::store::{self, messages::NewMessage};
use crate::workers::launch::{LaunchSpec, SessionStart};

/// Longest task or steer text, in bytes (the mail's frame bound applies too).
const MAX_TASK_BYTES: usize = 128 * 1024;

/// A refusal with its reason for the model or the human.
pub(in crate::hub) fn refused(reason: &str, message: impl Into<String>) -> HubError {
    HubError::new(ErrorCode::WorkerRefused, message)
        .with_details(serde_json::json!({ "reason": reason }))
}

/// A random hex string of `bytes` bytes.
fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).expect("the OS random source works");
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// A fresh UUID (version 4) for a worker's Pi session.
fn new_session_id() -> String {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the OS random source works");
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A one-time launch nonce.
pub(in crate::hub) fn new_nonce() -> String {
    random_hex(24)
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

fn check_text(what: &str, text: &str) -> HubResult<()> {
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
fn owner_sender(owner: &SessionInfo) -> Sender {
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
        worker: w.id as i64,
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
    fn me(&self, cx: Cx, db: &Connection) -> HubResult<SessionInfo> {
        let id = self.registered(cx.conn)?.clone();
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
            let me = self.registered(cx.conn)?.clone();
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
        let by_id = agent
            .trim_start_matches('#')
            .parse::<u64>()
            .ok()
            .map(|id| store::workers::get(db, id))
            .transpose()?
            .flatten();
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
    fn check_action(row: &WorkerRow, action: WorkerAction) -> HubResult<()> {
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
        self.broadcast(&ServerMsg::WorkerChanged { worker }, out);
    }

    pub(in crate::hub) fn worker_record(&self, db: &Connection, id: u64) -> HubResult<WorkerRow> {
        store::workers::get(db, id)?.ok_or_else(|| {
            HubError::new(
                ErrorCode::Internal,
                format!("worker {id} vanished from the store"),
            )
        })
    }

    /// `delegate_agent`: record the worker and its task, then launch it; the reply waits
    /// for the launch (milliseconds), never for the work.
    pub(in crate::hub) fn delegate_agent(
        &mut self,
        cx: Cx,
        req: DelegateAgent,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        if cx.kind != ClientKind::Pi {
            return Err(HubError::new(
                ErrorCode::Forbidden,
                "only a Pi session delegates to workers (it owns them and gets their results)",
            ));
        }
        let me = self.me(cx, db)?;
        check_text("task", &req.task)?;
        let parent = store::workers::live_by_session(db, &me.id)?;
        if let Some(parent) = &parent {
            let allowed = &parent.launch.agents;
            if !parent.worker.delegates || !allowed.iter().any(|a| a == &req.definition) {
                return Err(refused(
                    "not_allowed_to_delegate",
                    if parent.worker.delegates {
                        format!(
                            "definition {:?} may delegate only to: {}",
                            parent.worker.definition,
                            allowed.join(", ")
                        )
                    } else {
                        format!(
                            "this worker ({}) is a leaf: its definition lists no agents it may delegate to",
                            parent.worker.definition
                        )
                    },
                ));
            }
        }
        let def = self.resolve_definition(&req.definition, Path::new(&me.cwd))?;
        let label = match &req.label {
            Some(label) => {
                check_label(label)?;
                label.clone()
            }
            None => self.free_label(&me.id, &def.name, db)?,
        };
        if let Some(taken) = store::workers::live_by_label(db, &me.id, &label)? {
            return Err(refused(
                "agent_label_exists",
                format!(
                    "this session already has a live worker {label:?} (#{}, {}); choose another label or close it",
                    taken.worker.id, taken.worker.state
                ),
            ));
        }
        let fork = match &req.fork {
            Some(source) => Some(self.session_file_of(source, db)?),
            None => None,
        };
        let settings = LaunchSettings {
            model: def.model.clone().or_else(|| me.model.clone()),
            thinking: def.thinking.clone(),
            tools: def.tools.clone(),
            exclude_tools: def.exclude_tools.clone(),
            prompt: def.prompt.clone(),
            fork: fork.clone(),
            agents: if parent.is_some() {
                Vec::new()
            } else {
                def.agents.clone()
            },
        };
        let session_id = SessionId::from(new_session_id().as_str());
        let delegates = parent.is_none() && !def.agents.is_empty();
        let row = self.insert_worker(
            &me,
            &NewWorkerArgs {
                label: &label,
                definition: &def.name,
                parent: parent.as_ref().map(|p| p.worker.id),
                session_id: &session_id,
                session_file: None,
                cwd: &me.cwd,
                task: &req.task,
                settings: &settings,
                delegates,
            },
            db,
            out,
        )?;
        let start = match fork {
            Some(source) => SessionStart::Fork {
                source,
                id: session_id.to_string(),
            },
            None => SessionStart::New {
                id: session_id.to_string(),
            },
        };
        out.host.push(HostOp::Launch {
            spec: Box::new(launch_spec(&row, start)),
            reply: Some((cx.conn, cx.id)),
        });
        tracing::info!(worker = row.worker.id, label = %label, owner = %me.id, definition = %def.name, "worker accepted");
        Ok(())
    }

    /// `continue_agent`: a new generation on a saved worker session, in its own directory.
    pub(in crate::hub) fn continue_agent(
        &mut self,
        cx: Cx,
        req: ContinueAgent,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        if cx.kind != ClientKind::Pi {
            return Err(HubError::new(
                ErrorCode::Forbidden,
                "only a Pi session continues a worker session (it becomes the owner)",
            ));
        }
        let me = self.me(cx, db)?;
        check_text("task", &req.task)?;
        if store::workers::live_by_session(db, &me.id)?.is_some() {
            return Err(refused(
                "not_allowed_to_delegate",
                "a worker cannot continue saved sessions; ask your owner",
            ));
        }
        let file = self.session_file_of(&req.session, db)?;
        let previous = store::workers::newest_by_file(db, &file)?
            .or(store::workers::newest_by_session(
                db,
                &SessionId::from(req.session.as_str()),
            )?)
            .ok_or_else(|| {
                refused(
                    "agent_not_found",
                    format!(
                        "{} is not a managed worker's session; only those can be continued",
                        req.session
                    ),
                )
            })?;
        if previous.worker.session_id == me.id {
            return Err(refused("agent_busy", "a session cannot continue itself"));
        }
        if !previous.worker.state.is_ended() {
            return Err(refused(
                "agent_busy",
                format!(
                    "session {} has a live generation (worker {} #{}, {}); close it first or steer it",
                    previous.worker.session_id,
                    previous.worker.label,
                    previous.worker.id,
                    previous.worker.state
                ),
            ));
        }
        let def =
            self.resolve_definition(&previous.worker.definition, Path::new(&previous.worker.cwd))?;
        let label = previous.worker.label.clone();
        if let Some(taken) = store::workers::live_by_label(db, &me.id, &label)? {
            return Err(refused(
                "agent_label_exists",
                format!(
                    "this session already has a live worker {label:?} (#{}); close it first",
                    taken.worker.id
                ),
            ));
        }
        let settings = LaunchSettings {
            model: def.model.clone().or(previous.launch.model.clone()),
            thinking: def.thinking.clone().or(previous.launch.thinking.clone()),
            tools: def.tools.clone(),
            exclude_tools: def.exclude_tools.clone(),
            prompt: def.prompt.clone(),
            fork: None,
            agents: def.agents.clone(),
        };
        let row = self.insert_worker(
            &me,
            &NewWorkerArgs {
                label: &label,
                definition: &def.name,
                parent: None,
                session_id: &previous.worker.session_id,
                session_file: Some(&file),
                cwd: &previous.worker.cwd,
                task: &req.task,
                settings: &settings,
                delegates: !def.agents.is_empty(),
            },
            db,
            out,
        )?;
        out.host.push(HostOp::Launch {
            spec: Box::new(launch_spec(
                &row,
                SessionStart::Resume { file: file.into() },
            )),
            reply: Some((cx.conn, cx.id)),
        });
        Ok(())
    }

    /// Record a worker and queue its task; returns the row.
    fn insert_worker(
        &mut self,
        me: &SessionInfo,
        a: &NewWorkerArgs<'_>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<WorkerRow> {
        let backend = self.host_backend()?;
        let nonce = new_nonce();
        let now = now_ms();
        let from = owner_sender(me);
        atomically(db, || {
            let id = store::workers::insert(
                db,
                &NewWorker {
                    label: a.label,
                    definition: a.definition,
                    owner: &me.id,
                    parent_worker: a.parent,
                    session_id: a.session_id,
                    session_file: a.session_file,
                    cwd: a.cwd,
                    backend,
                    nonce: &nonce,
                    task: a.task,
                    launch: a.settings,
                    delegates: a.delegates,
                    now,
                },
            )?;
            self.mail(
                NewMessage::plain(a.session_id, DeliveryKind::Task, a.task, &from),
                db,
                out,
            )?;
            self.worker_record(db, id)
        })
    }

    /// The smallest `<definition>-<n>` label this owner has not used for a live worker.
    fn free_label(
        &self,
        owner: &SessionId,
        definition: &str,
        db: &Connection,
    ) -> HubResult<String> {
        let base: String = definition.chars().take(28).collect();
        let used = store::workers::labels_like(db, owner, &format!("{base}-"))?;
        let live: Vec<String> = store::workers::owned_by(db, owner, false)?
            .into_iter()
            .map(|r| r.worker.label)
            .collect();
        let n = (1..)
            .find(|n| {
                let l = format!("{base}-{n}");
                !live.contains(&l) && !used.contains(&l)
            })
            .expect("a free number");
        Ok(format!("{base}-{n}"))
    }

    /// A session file named by its path or by a session id the core knows.
    fn session_file_of(&self, source: &str, db: &Connection) -> HubResult<String> {
        let path = Path::new(source);
        if path.is_absolute() {
            if path.is_file() {
                return Ok(source.to_string());
            }
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                format!("{source} is not a readable session file"),
            ));
        }
        let id = SessionId::from(source);
        let known = store::sessions::get_uncounted(db, &id)?
            .and_then(|s| s.session_file)
            .or(store::workers::newest_by_session(db, &id)?.and_then(|w| w.worker.session_file));
        match known {
            Some(file) if Path::new(&file).is_file() => Ok(file),
            Some(file) => Err(HubError::new(
                ErrorCode::InvalidArgument,
                format!("session {source}'s file {file} is gone"),
            )),
            None => Err(HubError::new(
                ErrorCode::UnknownSession,
                format!("no session {source:?} with a session file; give the file's path"),
            )),
        }
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
            let me = self.registered(cx.conn)?.clone();
            let mut rows = store::workers::owned_by(db, &me, req.all)?;
            let mut i = 0;
            while i < rows.len() {
                let children = store::workers::owned_by(db, &rows[i].worker.session_id, req.all)?;
                rows.extend(children);
                i += 1;
            }
            rows
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
        check_text("message", &req.message)?;
        let row = self.target_worker(cx, &req.agent, db)?;
        Self::check_action(&row, WorkerAction::Steer)?;
        let from = self.worker_message_sender(cx, db)?;
        self.mail(
            NewMessage::plain(
                &row.worker.session_id,
                DeliveryKind::Steer,
                &req.message,
                &from,
            ),
            db,
            out,
        )?;
        tracing::info!(worker = row.worker.id, by = %from.name, "worker steered");
        out.send(
            cx.conn,
            &ServerMsg::WorkerIs {
                id: cx.id,
                worker: row.worker,
            },
        );
        Ok(())
    }

    /// `interrupt_agent`: abort what the worker does and continue with `message`.
    pub(in crate::hub) fn interrupt_agent(
        &mut self,
        cx: Cx,
        req: InterruptAgent,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        check_text("message", &req.message)?;
        let row = self.target_worker(cx, &req.agent, db)?;
        Self::check_action(&row, WorkerAction::Interrupt)?;
        let from = self.worker_message_sender(cx, db)?;
        self.mail(
            NewMessage::plain(
                &row.worker.session_id,
                DeliveryKind::Interrupt,
                &req.message,
                &from,
            ),
            db,
            out,
        )?;
        tracing::info!(worker = row.worker.id, by = %from.name, "worker interrupted");
        out.send(
            cx.conn,
            &ServerMsg::WorkerIs {
                id: cx.id,
                worker: row.worker,
            },
        );
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

    /// `ask_owner`: a bound worker asks its owner; it is blocked until the reply.
    pub(in crate::hub) fn ask_owner(
        &mut self,
        cx: Cx,
        req: AskOwner,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        check_text("question", &req.question)?;
        let me = self.registered(cx.conn)?.clone();
        let row = store::workers::live_by_session(db, &me)?.ok_or_else(|| {
            refused(
                "not_a_worker",
                "ask_owner is for managed workers; this session has no owner (use ask_supervisor)",
            )
        })?;
        if let Some(ask) = row.worker.pending_ask {
            return Err(refused(
                "ask_pending",
                format!(
                    "ask {ask} is still waiting for your owner's reply; end your turn and wait"
                ),
            ));
        }
        if row.worker.state != WorkerState::Working {
            return Err(refused(
                "agent_busy",
                format!("this worker is {}; it cannot ask now", row.worker.state),
            ));
        }
        let owner = store::sessions::get_uncounted(db, &row.worker.owner_id)?;
        let owner_role = owner.as_ref().map_or(Role::Lead, |o| o.role);
        let now = now_ms();
        let ask = atomically(db, || {
            let ask_id = store::asks::insert(db, &me, &req.question, &[], None, None, now)?;
            let to = AskTo {
                role: owner_role,
                repo_id: None,
                project: None,
                session_id: Some(row.worker.owner_id.clone()),
                session_name: Some(row.worker.owner_name.clone()),
                worker: Some(row.worker.id),
            };
            store::asks::address(db, ask_id, &to)?;
            store::workers::set_pending_ask(db, row.worker.id, Some(ask_id), now)?;
            store::workers::set_state(db, row.worker.id, WorkerState::Blocked, now)?;
            let from = Sender {
                kind: ClientKind::Pi,
                session_id: Some(me.clone()),
                name: row.worker.label.clone(),
            };
            let text = format!(
                "Agent question · agent={} · definition={} · ask={}\n\n{}\n\nAnswer with reply_agent {{agent: \"{}\", answer}}.",
                row.worker.label, row.worker.definition, ask_id, req.question, row.worker.label
            );
            self.mail(
                NewMessage {
                    ask_id: Some(ask_id),
                    question: Some(&req.question),
                    ..NewMessage::plain(&row.worker.owner_id, DeliveryKind::AgentAsk, &text, &from)
                },
                db,
                out,
            )?;
            Ok(store::asks::get(db, ask_id)?.expect("just inserted"))
        })?;
        tracing::info!(worker = row.worker.id, ask = %ask.id, "worker asked its owner");
        out.send(
            cx.conn,
            &ServerMsg::Asked {
                id: cx.id,
                ask: ask.clone(),
            },
        );
        // The phone shows at once what reaches a Manager or the Chief; a Lead's worker asks
        // stay between them until `workers.ask_card_after_secs` has passed (`shepherd asks`
        // lists them all).
        if matches!(owner_role, Role::Manager | Role::Chief) {
            self.broadcast(&ServerMsg::AskOpened { ask }, out);
        } else {
            self.ask_card_timer(ask.id);
        }
        let row = self.worker_record(db, row.worker.id)?;
        self.worker_changed(row.worker, out);
        Ok(())
    }
}

/// What a new worker row needs besides its owner.
struct NewWorkerArgs<'a> {
    label: &'a str,
    definition: &'a str,
    parent: Option<u64>,
    session_id: &'a SessionId,
    session_file: Option<&'a str>,
    cwd: &'a str,
    task: &'a str,
    settings: &'a LaunchSettings,
    delegates: bool,
}

/// A definition as a launch needs it.
pub(in crate::hub) struct Resolved {
    pub name: String,
    pub model: Option<String>,
    pub thinking: Option<String>,
    pub tools: Option<Vec<String>>,
    pub exclude_tools: Vec<String>,
    pub agents: Vec<String>,
    pub prompt: Option<String>,
}

impl State {
    /// Read `name`'s definition for a worker in `cwd` (project, then global, then bundled).
    fn resolve_definition(&self, name: &str, cwd: &Path) -> HubResult<Resolved> {
        let agent_dir = crate::config::agent_dir().map_err(|e| {
            HubError::new(
                ErrorCode::Internal,
                format!("cannot find Pi's agent directory: {e}"),
            )
        })?;
        let found = crate::agents::resolve(name, cwd, &agent_dir)
            .map_err(|e| refused(e.reason(), e.to_string()))?;
        let def = found.def;
        Ok(Resolved {
            name: def.name,
            model: def.model,
            thinking: def.thinking.map(|t| t.as_str().to_string()),
            tools: def.tools,
            exclude_tools: def.exclude_tools,
            agents: def.agents,
            prompt: (!found.prompt.trim().is_empty()).then_some(found.prompt),
        })
    }

    /// The backend new workers get, once the host can launch them.
    fn host_backend(&self) -> HubResult<WorkerBackend> {
        let Some(link) = &self.host else {
            return Err(refused(
                "launch_failed",
                "this core launches no workers (it was started without a worker host)",
            ));
        };
        if !link.extension.is_file() {
            return Err(refused(
                "launch_failed",
                format!(
                    "the shepherd extension workers load is not at {}: run `shepherd install`, or set [workers] extension",
                    link.extension.display()
                ),
            ));
        }
        Ok(match link.backend {
            crate::workers::host::Backend::Tmux => WorkerBackend::Tmux,
            crate::workers::host::Backend::Headless => WorkerBackend::Headless,
        })
    }

    /// Wake the hub with [`HubCommand::AskCardDue`] once `workers.ask_card_after_secs`
    /// has passed. A core restart loses the timer; the bridges' resync (which lists every
    /// open ask) then shows the question.
    fn ask_card_timer(&self, ask: AskId) {
        let after = std::time::Duration::from_secs(self.facts.ask_card_after_secs);
        let hub = self.self_tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            if let Some(tx) = hub.upgrade() {
                let _ = tx.send(HubCommand::AskCardDue { ask }).await;
            }
        });
    }

    /// A Lead-owned worker's question waited long enough: shown on the phones as a card
    /// (`ask_opened`) when it is still open.
    pub(in crate::hub) fn ask_card_due(&mut self, ask: AskId, db: &Connection, out: &mut Out) {
        match store::asks::get(db, ask) {
            Ok(Some(ask)) if ask.state == AskState::Open => {
                tracing::info!(ask = %ask.id, "a worker's question waited: shown on the phones");
                self.broadcast(&ServerMsg::AskOpened { ask }, out);
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(%ask, error = %e, "cannot read a worker's question"),
        }
    }
}
