//! The human's requests for the sessions it starts. `new_session`: a Pi session with the
//! human's task as its first message (mail from the human, delivered when it registers),
//! launched through the worker host (headless or tmux, as for assignments' Leads) in a
//! project's primary checkout, or in a new linked worktree on a new branch (`branch`),
//! made on the git lane. `continue_session`: an ended session started again on its own
//! session file, in its directory, with the same id (a message, when given, waits for it).
//! `close_session`: such a session's process stopped. The process's life (launch, binding
//! by nonce, exit, a core restart) is [`crate::hub::launched`]'s ([`Proc::Started`]).
//!
//! Projects, for `project`: the repositories sessions have run in (by name), then the
//! repositories one level below `[projects] roots`.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::clock::now_ms;
use crate::git::worktrees;
use crate::hub::launched::{Proc, new_session_id};
use crate::hub::projects::{GitDone, GitJob, refused};
use crate::hub::workers::launching::{Resolved, resolve_definition};
use crate::hub::workers::requests::check_text;
use crate::hub::{Cx, HubError, HubResult, Out, State};
use crate::protocol::requests::{CloseSession, ContinueSession, NewSession};
use crate::protocol::{DeliveryKind, ErrorCode, ServerMsg};
use crate::store::messages::NewMessage;
use crate::store::started::{NewStart, StartedRow};
use crate::store::workers::LaunchSettings;
use crate::store::{self};
use crate::workers::launch::SessionStart;

/// Where a new session runs, as the git lane found (or made) it, and its agent definition.
struct Place {
    cwd: PathBuf,
    branch: Option<String>,
    /// `app` or `app@feat/login`.
    name: String,
    /// The definition `agent` named, read from the session's directory.
    agent: Option<Resolved>,
}

impl State {
    /// `new_session`: the place found (or its worktree made) on the git lane, then the
    /// record, the task as mail and the launch.
    pub(in crate::hub) fn new_session(
        &mut self,
        cx: Cx,
        req: NewSession,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let known = store::sessions::projects(db)?;
        let roots = self.facts.project_roots.clone();
        // Without a place the answer is the projects' list, read off the hub (`place`).
        if req.cwd.is_some() || req.project.is_some() {
            check_text("task", &req.task)?;
            self.host_backend()?;
        }
        let by = self.human_label(cx.conn, cx.kind, req.by.clone());
        let branch = req
            .branch
            .map(|b| b.trim().to_string())
            .filter(|b| !b.is_empty());
        let (cwd, project, task) = (req.cwd, req.project, req.task);
        let agent = req
            .agent
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty());
        let job: GitJob = Box::new(move || {
            let wanted = Wanted {
                cwd: cwd.as_deref(),
                project: project.as_deref(),
                branch,
                agent: agent.as_deref(),
            };
            let placed = place(wanted, &known, &roots);
            GitDone {
                reply: Some((cx.conn, cx.id)),
                then: Box::new(move |state, db, out| {
                    let place = placed?;
                    state.start_session(cx, &place, &task, &by, db, out)
                }),
            }
        });
        out.git.push(job);
        Ok(())
    }

    /// Record a new session at `place` with `task` as its first message, and launch it.
    fn start_session(
        &mut self,
        cx: Cx,
        place: &Place,
        task: &str,
        by: &str,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let ticket = self.ticket(None, db)?;
        let session_id = new_session_id();
        let cwd = place.cwd.to_string_lossy();
        // A started session is the human's Lead: it delegates as any Lead does, not by
        // the definition's `agents` (a worker's list).
        let launch = place.agent.as_ref().map(|def| {
            let settings = LaunchSettings {
                agents: Vec::new(),
                ..def.launch()
            };
            (def.name.clone(), settings)
        });
        let start = NewStart {
            session_id: &session_id,
            name: &place.name,
            cwd: &cwd,
            branch: place.branch.as_deref(),
            task: &first_chars(task, 200),
            backend: ticket.backend,
            nonce: &ticket.nonce,
            session_file: None,
            by,
            now: now_ms(),
            agent: launch.as_ref().map(|(name, l)| (name.as_str(), l)),
        };
        let from = SessionStart::New {
            id: session_id.to_string(),
        };
        tracing::info!(session = %session_id, cwd = %cwd, %by, "starting a session for the human");
        self.record_and_launch(cx, &start, Some(task), from, db, out)
    }

    /// Record `start`, leave `message` (when any) for its session as the human's mail,
    /// and launch its process from `from`; `cx` hears when it started (or why not).
    fn record_and_launch(
        &mut self,
        cx: Cx,
        start: &NewStart<'_>,
        message: Option<&str>,
        from: SessionStart,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let id = store::started::insert(db, start)?;
        if let Some(text) = message {
            let sender = self.human_sender(cx.conn, cx.kind, Some(start.by.to_string()));
            let mail = NewMessage::plain(start.session_id, DeliveryKind::Steer, text, &sender);
            self.mail(mail, db, out)?;
        }
        let row = self.started_row(id, db)?;
        self.launch(&Proc::Started(row), from, Some((cx.conn, cx.id)), true, out);
        Ok(())
    }

    /// `continue_session`: an ended session started again on its file, with the same id.
    pub(in crate::hub) fn continue_session(
        &mut self,
        cx: Cx,
        req: ContinueSession,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let info = self.resolve_info(&req.session, db)?;
        if self.presence.is_live(&info.id) {
            return Err(refused(
                "running",
                format!("{} is running (connected now): steer it instead", info.name),
            ));
        }
        if let Some(row) = store::started::live_by_session(db, &info.id)? {
            return Err(refused(
                "running",
                format!(
                    "{} is already being started again (since {}): wait for it to connect",
                    info.name, row.started.updated_at
                ),
            ));
        }
        let Some(file) = info.session_file.clone().filter(|f| Path::new(f).is_file()) else {
            return Err(refused(
                "no_session_file",
                format!(
                    "{} has no session file to continue from{}",
                    info.name,
                    info.session_file
                        .as_deref()
                        .map(|f| format!(" ({f} is gone)"))
                        .unwrap_or_default()
                ),
            ));
        };
        if !Path::new(&info.cwd).is_dir() {
            return Err(refused(
                "no_directory",
                format!("{}'s directory {} is gone", info.name, info.cwd),
            ));
        }
        let message = req.message.filter(|m| !m.trim().is_empty());
        if let Some(m) = &message {
            check_text("message", m)?;
        }
        let ticket = self.ticket(None, db)?;
        let by = self.human_label(cx.conn, cx.kind, req.by.clone());
        // Continued with the definition it was started with.
        let agent = store::started::latest_agent(db, &info.id)?;
        let start = NewStart {
            session_id: &info.id,
            name: &info.name,
            cwd: &info.cwd,
            branch: info.branch.as_deref(),
            task: &first_chars(message.as_deref().unwrap_or("(continued)"), 200),
            backend: ticket.backend,
            nonce: &ticket.nonce,
            session_file: Some(&file),
            by: &by,
            now: now_ms(),
            agent: agent.as_ref().map(|(name, l)| (name.as_str(), l)),
        };
        let from = SessionStart::Resume {
            file: file.clone().into(),
        };
        tracing::info!(session = %info.id, %by, "continuing a session for the human");
        self.record_and_launch(cx, &start, message.as_deref(), from, db, out)
    }

    /// `close_session`: stop a started session's process.
    pub(in crate::hub) fn close_session(
        &mut self,
        cx: Cx,
        req: CloseSession,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let target = self.resolve(&req.session, db)?;
        let Some(row) = store::started::live_by_session(db, &target.id)? else {
            return Err(refused(
                "not_started",
                format!(
                    "{} was not started by shepherd (or has ended): close it in Pi, or interrupt it with `shepherd stop {}`",
                    target.name, target.name
                ),
            ));
        };
        let by = self.human_label(cx.conn, cx.kind, req.by.clone());
        tracing::info!(started = row.started.id, %by, "closing a started session");
        self.stop_proc(&Proc::Started(row.clone()), &by, None, db, out)?;
        let started = Box::new(self.started_row(row.started.id, db)?.started);
        out.send(cx.conn, &ServerMsg::SessionStarted { id: cx.id, started });
        Ok(())
    }

    /// `list_started`: the starts, the newest first.
    pub(in crate::hub) fn list_started(
        &mut self,
        cx: Cx,
        req: crate::protocol::requests::ListStarted,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let started = store::started::list(db, req.all, 200)?
            .into_iter()
            .map(|r| r.started)
            .collect();
        out.send(cx.conn, &ServerMsg::StartedSessions { id: cx.id, started });
        Ok(())
    }

    /// A new start's first launch failed: nothing started, so the start did not happen.
    pub(in crate::hub) fn started_launch_undone(
        &mut self,
        row: &StartedRow,
        e: &str,
        db: &Connection,
    ) -> HubResult<HubError> {
        tracing::warn!(started = row.started.id, error = %e, "a session could not be started");
        store::started::delete(db, row.started.id)?;
        Ok(refused(
            "launch_failed",
            format!("{} could not be started: {e}", row.started.name),
        ))
    }

    fn started_row(&self, id: u64, db: &Connection) -> HubResult<StartedRow> {
        store::started::get(db, id)?.ok_or_else(|| {
            HubError::new(
                ErrorCode::Internal,
                format!("started session {id} vanished"),
            )
        })
    }
}

/// What a `new_session` asks for: where, on which new branch, with which definition.
struct Wanted<'a> {
    cwd: Option<&'a str>,
    project: Option<&'a str>,
    branch: Option<String>,
    agent: Option<&'a str>,
}

/// Find (or make) where a new session runs: `cwd`, or `project`'s primary checkout; with
/// `branch`, a new linked worktree on that new branch; with neither, the refusal that
/// names the projects. Blocking (git, directories): the git lane's.
fn place(wanted: Wanted<'_>, known: &[(String, String)], roots: &[PathBuf]) -> HubResult<Place> {
    let Wanted {
        cwd,
        project,
        branch,
        agent,
    } = wanted;
    let (dir, named) = match (cwd, project) {
        (Some(cwd), _) => {
            let dir = PathBuf::from(cwd);
            if !dir.is_absolute() || !dir.is_dir() {
                return Err(refused(
                    "no_directory",
                    format!("{cwd} is not a directory (give an absolute path)"),
                ));
            }
            (dir, None)
        }
        (None, Some(project)) => (project_root(project, known, roots)?, Some(project)),
        (None, None) => {
            let names = project_names(known, roots);
            return Err(refused(
                "no_project",
                format!(
                    "start it where? Name a project ({}) or a directory",
                    list(&names)
                ),
            )
            .with_details(serde_json::json!({ "reason": "no_project", "projects": names })));
        }
    };
    // Its repository, once: the project's name (else the directory's) and, for a new
    // branch, where the worktree is made.
    let repo = crate::git::discover(&dir);
    let name = match named {
        Some(project) => project.to_string(),
        None => repo
            .project
            .clone()
            .or_else(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| dir.display().to_string()),
    };
    // The definition is read before any worktree is made: an unknown one changes nothing.
    let agent = agent.map(|a| resolve_definition(a, &dir)).transpose()?;
    let Some(branch) = branch else {
        return Ok(Place {
            cwd: dir,
            branch: None,
            name,
            agent,
        });
    };
    let Some(repo_id) = repo.repo_id else {
        return Err(refused(
            "not_a_repository",
            format!(
                "{} is not in a git repository: a new branch needs one (leave out the branch to start there)",
                dir.display()
            ),
        ));
    };
    let primary = worktrees::primary_root(Path::new(&repo_id)).map_err(git_refusal)?;
    let exists = git2::Repository::open(&primary)
        .map(|r| r.find_branch(&branch, git2::BranchType::Local).is_ok())
        .unwrap_or(false);
    if exists {
        return Err(refused(
            "branch_exists",
            format!(
                "branch {branch} exists in {name}: pick a new name (or continue the session that worked on it)"
            ),
        ));
    }
    let checkout = worktrees::ensure_worktree(&primary, &branch, None).map_err(git_refusal)?;
    Ok(Place {
        cwd: checkout.path,
        name: format!("{}@{branch}", repo.project.unwrap_or(name)),
        branch: Some(branch),
        agent,
    })
}

/// `project`'s primary checkout: a repository sessions ran in, else one under a root.
fn project_root(
    project: &str,
    known: &[(String, String)],
    roots: &[PathBuf],
) -> HubResult<PathBuf> {
    if let Some((_, repo_id)) = known.iter().find(|(name, _)| name == project)
        && let Ok(root) = worktrees::primary_root(Path::new(repo_id))
    {
        return Ok(root);
    }
    for root in roots {
        let dir = root.join(project);
        if dir.join(".git").exists() {
            return Ok(dir);
        }
    }
    Err(refused(
        "unknown_project",
        format!(
            "no project {project:?}; known: {} (or give a directory)",
            list(&project_names(known, roots))
        ),
    ))
}

/// The projects `new_session` knows: the repositories sessions ran in, and those one level
/// below the roots, by name, sorted, once each.
fn project_names(known: &[(String, String)], roots: &[PathBuf]) -> Vec<String> {
    let mut names: Vec<String> = known.iter().map(|(n, _)| n.clone()).collect();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        for entry in entries.flatten().take(1000) {
            if entry.path().join(".git").exists() {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

fn list(names: &[String]) -> String {
    match names.len() {
        0 => "none yet".to_string(),
        _ => names.join(", "),
    }
}

fn git_refusal(e: worktrees::WorktreeError) -> HubError {
    refused("git", e.to_string())
}

/// The first `n` characters of `text`.
fn first_chars(text: &str, n: usize) -> String {
    text.chars().take(n).collect()
}
