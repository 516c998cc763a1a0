//! A new worker: `delegate_agent` (a fresh session, or a fork of a saved one) and
//! `continue_agent` (a new generation on a saved session). Both go through the opening
//! checks every launch request shares (`hub/launched/opening.rs`: who asks, the task,
//! what the asker's state allows; at the end the host, the bounds and the nonce), resolve
//! the agent definition, record the worker with its launch nonce and its task as mail,
//! and queue its launch (`hub/launched/`); the reply waits for the process, never for
//! the work.
//!
//! The definition is a file (perhaps a repository's: untrusted), so it is read and parsed
//! on a blocking thread: the request is checked, the definition resolved off the hub, and
//! the request handled again with it ([`Pending`]), every check repeated on what the
//! store says then.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::requests::{check_label, owner_sender, refused};
use crate::clock::now_ms;
use crate::hub::launched::{Asker, Opened, Proc, new_session_id};
use crate::hub::{Cx, HubError, HubResult, Out, State, atomically};
use crate::protocol::requests::{ContinueAgent, DelegateAgent};
use crate::protocol::{DeliveryKind, ErrorCode, SessionId, SessionInfo, WorkerId};
use crate::store::workers::{LaunchSettings, NewWorker, WorkerRow};
use crate::store::{self, messages::NewMessage};
use crate::workers::launch::SessionStart;

impl State {
    /// `delegate_agent`: record the worker and its task, then launch it; the reply waits
    /// for the launch (milliseconds), never for the work.
    pub(in crate::hub) fn delegate_agent(
        &mut self,
        cx: Cx,
        req: DelegateAgent,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        self.delegate_with(cx, req, Pending::Unread, db, out)
    }

    /// `delegate_agent` before its definition is read (`Unread`: checks, then the read off
    /// the hub) and after (`Read`: the same checks again, then the launch).
    fn delegate_with(
        &mut self,
        cx: Cx,
        req: DelegateAgent,
        pending: Pending,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let asker = Asker::Owner {
            definition: &req.definition,
        };
        let Opened { me, parent, .. } = self.opening(cx, asker, &req.task, db)?;
        let def = match pending {
            Pending::Unread => {
                let (name, cwd) = (req.definition.clone(), PathBuf::from(&me.cwd));
                self.resolve_off_hub(cx, name, cwd, move |state, def, db, out| {
                    state.delegate_with(cx, req, Pending::Read(Box::new(def)), db, out)
                });
                return Ok(());
            }
            Pending::Read(def) => *def,
        };
        let label = self.new_label(&me.id, req.label.as_deref(), &def.name, db)?;
        let fork = match &req.fork {
            Some(source) => Some(self.session_file_of(source, db)?),
            None => None,
        };
        let settings = LaunchSettings {
            model: def.model.clone().or_else(|| me.model.clone()),
            fork: fork.clone(),
            agents: if parent.is_some() {
                Vec::new()
            } else {
                def.agents.clone()
            },
            ..def.launch()
        };
        let session_id = new_session_id();
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
        let (id, reply) = (row.worker.id, Some((cx.conn, cx.id)));
        self.launch(&Proc::Worker(row), start, reply, true, out);
        tracing::info!(worker = id.get(), label = %label, owner = %me.id, definition = %def.name, "worker accepted");
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
        self.continue_with(cx, req, Pending::Unread, db, out)
    }

    /// `continue_agent` before and after its definition is read, as [`Self::delegate_with`].
    fn continue_with(
        &mut self,
        cx: Cx,
        req: ContinueAgent,
        pending: Pending,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Opened { me, .. } = self.opening(cx, Asker::Continuer, &req.task, db)?;
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
        let def = match pending {
            Pending::Unread => {
                let name = previous.worker.definition.clone();
                let cwd = PathBuf::from(&previous.worker.cwd);
                self.resolve_off_hub(cx, name, cwd, move |state, def, db, out| {
                    state.continue_with(cx, req, Pending::Read(Box::new(def)), db, out)
                });
                return Ok(());
            }
            Pending::Read(def) => *def,
        };
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
            ..def.launch()
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
        let start = SessionStart::Resume { file: file.into() };
        self.launch(&Proc::Worker(row), start, Some((cx.conn, cx.id)), true, out);
        Ok(())
    }

    /// Record a worker and queue its task, within the bounds on live workers; returns the
    /// row.
    fn insert_worker(
        &mut self,
        me: &SessionInfo,
        a: &NewWorkerArgs<'_>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<WorkerRow> {
        let ticket = self.ticket(Some(&me.id), db)?;
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
                    backend: ticket.backend,
                    nonce: &ticket.nonce,
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

    /// A new worker's label: the one asked for (checked) or the next free one, refused
    /// when the owner already has a live worker by that label.
    fn new_label(
        &self,
        owner: &SessionId,
        asked: Option<&str>,
        definition: &str,
        db: &Connection,
    ) -> HubResult<String> {
        let label = match asked {
            Some(label) => {
                check_label(label)?;
                label.to_string()
            }
            None => self.free_label(owner, definition, db)?,
        };
        if let Some(taken) = store::workers::live_by_label(db, owner, &label)? {
            return Err(refused(
                "agent_label_exists",
                format!(
                    "this session already has a live worker {label:?} (#{}, {}); choose another label or close it",
                    taken.worker.id, taken.worker.state
                ),
            ));
        }
        Ok(label)
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
}

/// What a new worker row needs besides its owner.
struct NewWorkerArgs<'a> {
    label: &'a str,
    definition: &'a str,
    parent: Option<WorkerId>,
    session_id: &'a SessionId,
    session_file: Option<&'a str>,
    cwd: &'a str,
    task: &'a str,
    settings: &'a LaunchSettings,
    delegates: bool,
}

/// Read `name`'s definition for a worker in `cwd` (project, then global, then bundled).
/// Blocking: reads files.
pub(in crate::hub) fn resolve_definition(name: &str, cwd: &Path) -> HubResult<Resolved> {
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

impl Resolved {
    /// The launch settings the definition gives (no fork); callers override the rest.
    pub(in crate::hub) fn launch(&self) -> LaunchSettings {
        LaunchSettings {
            model: self.model.clone(),
            thinking: self.thinking.clone(),
            tools: self.tools.clone(),
            exclude_tools: self.exclude_tools.clone(),
            prompt: self.prompt.clone(),
            agents: self.agents.clone(),
            fork: None,
        }
    }
}

/// Where a launch is: its definition not read yet, or read.
enum Pending {
    Unread,
    Read(Box<Resolved>),
}

impl State {
    /// Read `name`'s definition for a worker in `cwd` on a blocking thread, then go on with
    /// `then` on the hub; a definition that cannot be used refuses the request.
    fn resolve_off_hub(
        &self,
        cx: Cx,
        name: String,
        cwd: PathBuf,
        then: impl FnOnce(&mut State, Resolved, &Connection, &mut Out) -> HubResult<()> + Send + 'static,
    ) {
        self.blocking_then(
            Some((cx.conn, cx.id)),
            move || resolve_definition(&name, &cwd),
            move |state, resolved, db, out| then(state, resolved?, db, out),
        );
    }
}
