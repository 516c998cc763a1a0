//! Presence: connections coming and going, Pi sessions registering and describing
//! themselves, and the events subscribers see about them. A session's identity is fixed
//! by its registration; nothing later in a payload can change who it is.

use rusqlite::Connection;
use tokio::sync::oneshot;

mod outbox;
mod subscribers;
mod table;

pub(in crate::hub) use table::{Conn, Live, Presence};

use super::launched::Proc;
use super::names::{self, MAX_NAME};
use super::session_change::{ChangeKind, SessionChange};
use super::{ConnHandle, ConnId, Cx, HubError, HubResult, Out, State};
use crate::clock::now_ms;
use crate::git::RepoContext;
use crate::protocol::SessionId;
use crate::protocol::{
    BridgeInfo, ClientKind, ContextUsage, CoreStatus, ErrorCode, LeaveReason, PROTOCOL_VERSION,
    Registration, ServerMsg, SessionInfo, SessionStatus,
    requests::{Bye, ListSessions, Register, Update},
};
use crate::store;
use crate::workers::proc::process_alive;

const MAX_ID: usize = 128;
const MAX_STATUS: usize = 128;
const MAX_PATH: usize = 4096;

fn invalid(message: impl Into<String>) -> HubError {
    HubError::new(ErrorCode::InvalidArgument, message)
}

fn check_session_id(id: &str) -> HubResult<()> {
    if id.is_empty() || id.chars().count() > MAX_ID || id.chars().any(char::is_control) {
        return Err(invalid(format!(
            "session_id must be 1-{MAX_ID} characters without control characters"
        )));
    }
    Ok(())
}

fn check_name(name: &str) -> HubResult<()> {
    if name.trim().is_empty()
        || name.chars().count() > MAX_NAME
        || name.chars().any(char::is_control)
    {
        return Err(invalid(format!(
            "name must be 1-{MAX_NAME} characters, not blank, without control characters"
        )));
    }
    Ok(())
}

fn check_status(status: &SessionStatus) -> HubResult<()> {
    let text = status.to_string();
    if !status.is_valid() || text.len() > MAX_STATUS {
        return Err(invalid(format!(
            "status must be `idle`, `thinking` or `tool:<name>` (at most {MAX_STATUS} bytes), got {text:?}"
        )));
    }
    Ok(())
}

fn check_path(what: &str, path: &str) -> HubResult<()> {
    if !path.starts_with('/') || path.len() > MAX_PATH {
        return Err(invalid(format!(
            "{what} must be an absolute path, got {path:?}"
        )));
    }
    Ok(())
}

/// Token counts are stored as SQLite integers: one past their range is the sender's
/// mistake (`invalid_argument`), not a store failure.
fn check_context(context: &ContextUsage) -> HubResult<()> {
    for (field, value) in [("tokens", context.tokens), ("window", context.window)] {
        if let Some(n) = value.filter(|&n| n > crate::protocol::MAX_ID) {
            return Err(invalid(format!(
                "context.{field} must be at most {}, got {n}",
                crate::protocol::MAX_ID
            )));
        }
    }
    Ok(())
}

fn apply_context(info: &mut SessionInfo, context: ContextUsage) {
    info.context_tokens = context.tokens;
    info.context_window = context.window;
    info.context_percent = context.percent;
}

/// Apply a repository context read for the session's current cwd; one read for another
/// directory (a cwd the hub refused, or one that changed since) is ignored.
fn apply_repo(info: &mut SessionInfo, repo: RepoContext) {
    if repo.cwd != info.cwd {
        return;
    }
    info.repo = repo.root;
    info.branch = repo.branch;
    info.head = repo.head;
    info.worktree = repo.worktree;
    info.repo_id = repo.repo_id;
    info.project = repo.project;
}

/// The name a session registers with: the one it gives, else the one it had (unless that
/// was made by the default rule and another live session holds it now), else a readable
/// default from its repository and branch (`hub/names.rs`), unique among live sessions.
fn registration_name(
    reg: &Registration,
    previous: &Option<SessionInfo>,
    repo: &RepoContext,
    taken: impl Fn(&str) -> bool,
) -> String {
    if let Some(name) = &reg.name {
        return name.clone();
    }
    let base = names::base_name(&reg.cwd, repo);
    if let Some(p) = previous {
        let reclaim = names::is_id_prefix(&p.name, &reg.session_id)
            || (names::is_derived(&p.name, &base) && taken(&p.name));
        if !reclaim {
            return p.name.clone();
        }
    }
    names::unique(&base, taken)
}

/// The session as registered (name from [`registration_name`], first seen kept), with its
/// context and repository, stored.
fn store_registration(
    reg: Registration,
    name: String,
    pid: Option<u32>,
    previous: &Option<SessionInfo>,
    repo: RepoContext,
    db: &Connection,
) -> HubResult<SessionInfo> {
    let now = now_ms();
    let mut info = SessionInfo {
        id: reg.session_id.clone(),
        name,
        cwd: reg.cwd,
        pid,
        model: reg.model,
        status: reg.status,
        role: reg.role,
        connected: true,
        context_tokens: None,
        context_window: None,
        context_percent: None,
        repo: None,
        branch: None,
        head: None,
        worktree: false,
        repo_id: None,
        project: None,
        session_file: reg.session_file,
        subagent: reg.subagent,
        open_asks: 0,
        pending_messages: 0,
        first_seen: previous.as_ref().map_or(now, |p| p.first_seen),
        last_seen: now,
        host: None,
    };
    apply_context(&mut info, reg.context);
    apply_repo(&mut info, repo);
    store::sessions::upsert(db, &info)?;
    Ok(info)
}

impl State {
    pub(super) fn connect(
        &mut self,
        conn: ConnId,
        handle: ConnHandle,
        close: oneshot::Sender<ErrorCode>,
    ) {
        tracing::debug!(conn, kind = ?handle.kind, client = %handle.client_name, pid = ?handle.pid, "client connected");
        let entry = Conn {
            handle,
            close: Some(close),
            session: None,
            serves: None,
            bye: None,
        };
        self.presence.conns.insert(conn, entry);
    }

    pub(super) fn disconnect(&mut self, conn: ConnId, db: &Connection, out: &mut Out) {
        self.presence.subscribers.remove(&conn);
        self.herd_dropped(conn);
        let Some(entry) = self.presence.conns.remove(&conn) else {
            return;
        };
        let Some(session_id) = entry.session else {
            return;
        };
        if self
            .presence
            .live
            .get(&session_id)
            .is_none_or(|l| l.conn != conn)
        {
            return; // Replaced by a newer connection.
        }
        self.presence.live.remove(&session_id);
        // Said goodbye: closed (or coming straight back: no ending); else lost. While the
        // core itself stops, nobody is ending: the sessions come back to the next core.
        let reason = match entry.bye {
            _ if self.stopping => None,
            Some(true) => None,
            Some(false) => Some(LeaveReason::Closed),
            None => Some(LeaveReason::Lost),
        };
        let result = (|| -> HubResult<()> {
            if let Some(mut info) = store::sessions::get(db, &self.unread, &session_id)? {
                let was = std::mem::replace(&mut info.status, SessionStatus::Idle);
                info.last_seen = now_ms();
                store::sessions::upsert(db, &info)?;
                tracing::info!(session = %session_id, name = %info.name, ?reason, last_status = %was, "session left");
                let left = ServerMsg::SessionLeft {
                    session: info,
                    reason,
                    last_status: Some(was.clone()),
                };
                self.presence.broadcast(&left, out);
                if reason == Some(LeaveReason::Closed) {
                    self.session_closed_approvals(&session_id, db, out)?;
                }
                // A session that goes away mid-turn has stopped too.
                let change = SessionChange {
                    session: &session_id,
                    kind: ChangeKind::Left {
                        closed: reason == Some(LeaveReason::Closed),
                    },
                    was: Some(&was),
                    now: &SessionStatus::Idle,
                };
                self.session_changed(&change, db, out);
            }
            Ok(())
        })();
        if let Err(err) = result {
            tracing::error!(session = %session_id, "recording the session's departure failed: {}", err.message);
        }
    }

    /// `bye`: the session on this connection is closing it on purpose; when the
    /// connection closes, its leaving is announced as `closed` (or, `returning`, as no
    /// ending at all). A connection with no session has nobody to say goodbye for.
    pub(super) fn bye(&mut self, cx: Cx, req: Bye) -> HubResult<()> {
        self.presence.registered(cx.conn)?;
        if let Some(entry) = self.presence.conns.get_mut(&cx.conn) {
            entry.bye = Some(req.returning);
        }
        Ok(())
    }

    /// The stored session with its live `connected` flag.
    pub(super) fn session_info(&self, db: &Connection, id: &SessionId) -> HubResult<SessionInfo> {
        let mut info = store::sessions::get(db, &self.unread, id)?
            .ok_or_else(|| HubError::new(ErrorCode::Internal, format!("session {id} vanished")))?;
        info.connected = self.presence.live.contains_key(id);
        Ok(info)
    }

    /// [`State::session_info`] without its counts (open asks and unread mail read 0): for
    /// mail along an edge, whose cost must not grow with anyone's backlog.
    pub(super) fn session_uncounted(
        &self,
        db: &Connection,
        id: &SessionId,
    ) -> HubResult<SessionInfo> {
        let mut info = std::sync::Arc::unwrap_or_clone(self.session_record(db, id)?);
        info.connected = self.presence.live.contains_key(id);
        Ok(info)
    }

    /// [`State::session_uncounted`] shared with the records' cache, not copied (its
    /// `connected` is false): for the sender of a role-limited request, read for each.
    pub(super) fn session_record(
        &self,
        db: &Connection,
        id: &SessionId,
    ) -> HubResult<std::sync::Arc<SessionInfo>> {
        self.records
            .get(db, id)?
            .ok_or_else(|| HubError::new(ErrorCode::Internal, format!("session {id} vanished")))
    }

    /// `register`: check who may register what, take the session over from an older
    /// connection if allowed, store what it says about itself, bind it to this connection
    /// and tell it, its subscribers and the feature modules.
    pub(super) fn register(
        &mut self,
        cx: Cx,
        req: Register,
        repo: RepoContext,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Cx { conn, .. } = cx;
        let mut reg = req.session;
        self.check_registration(conn, &reg)?;
        // Manager and Chief come from the leases, never from what the session says; a
        // lease that expired while its holder was away is released first (and it is told).
        self.expire_away_leases(db, out)?;
        reg.role = self.registered_role(db, &reg.session_id, reg.role)?;
        let pid = self.presence.conns.get(&conn).and_then(|c| c.handle.pid);
        // A managed worker's or an assigned Lead's session registers only from the process
        // launched for it.
        let launched = self.check_launch(&reg, pid, db)?;
        let takeover = self.takeover(conn, &reg, pid)?;
        let previous = store::sessions::get(db, &self.unread, &reg.session_id)?;
        let name = registration_name(&reg, &previous, &repo, |name| {
            self.presence
                .live
                .iter()
                .any(|(id, live)| *id != reg.session_id && live.name == name)
        });
        let session_file = reg.session_file.clone();
        let info = store_registration(reg, name, pid, &previous, repo, db)?;
        let launched = match launched {
            Some(proc) => Some(self.bind_launch(&proc, pid, session_file.as_deref(), db, out)?),
            None => None,
        };
        let rejoined = self.bind_session(conn, &info, takeover, out);
        // A Lead's record shows its session's presence: told once the session is bound.
        let (worker, assignment) = match launched {
            Some(Proc::Worker(row)) => (Some(Box::new(row.worker)), None),
            Some(Proc::Lead(row)) => {
                self.assignment_changed(&row, out);
                (None, Some(Box::new(self.assignment_record(&row))))
            }
            Some(Proc::Started(_)) | None => (None, None),
        };
        let arrived = Arrived {
            info,
            worker,
            assignment,
        };
        self.announce_registration(cx, arrived, rejoined, &previous, db, out)
    }

    /// Valid fields, and only one session per connection (only a Pi connection gets here:
    /// `register` declares `[pi]`).
    fn check_registration(&self, conn: ConnId, reg: &Registration) -> HubResult<()> {
        let entry = self
            .presence
            .conns
            .get(&conn)
            .expect("checked by the caller");
        check_session_id(&reg.session_id)?;
        if let Some(name) = &reg.name {
            check_name(name)?;
        }
        check_status(&reg.status)?;
        check_context(&reg.context)?;
        check_path("cwd", &reg.cwd)?;
        if let Some(file) = &reg.session_file {
            check_path("session_file", file)?;
        }
        if let Some(current) = &entry.session
            && current != &reg.session_id
        {
            return Err(invalid(format!(
                "this connection is already registered as session {current}; open a new connection for another session"
            )));
        }
        Ok(())
    }

    /// The connection that holds the session now and is to be replaced, if any; an error
    /// if a live process holds it or no more sessions may connect.
    fn takeover(
        &self,
        conn: ConnId,
        reg: &Registration,
        pid: Option<u32>,
    ) -> HubResult<Option<ConnId>> {
        let takeover = match self.presence.live.get(&reg.session_id) {
            Some(holder) if holder.conn != conn => {
                let holder_pid = self
                    .presence
                    .conns
                    .get(&holder.conn)
                    .and_then(|c| c.handle.pid);
                let same_process = holder_pid.is_some() && holder_pid == pid;
                let gone = holder_pid.is_some_and(|p| !process_alive(p));
                if !same_process && !gone {
                    let shown = holder_pid.map_or("unknown".to_string(), |p| p.to_string());
                    return Err(HubError::new(
                        ErrorCode::SessionTaken,
                        format!(
                            "session {} is held by a live connection from pid {shown}; close that Pi session first",
                            reg.session_id
                        ),
                    )
                    .with_details(serde_json::json!({ "pid": holder_pid })));
                }
                Some(holder.conn)
            }
            Some(_) => None,
            None => {
                if self.presence.live.len() >= self.facts.limits.max_sessions {
                    let max = self.facts.limits.max_sessions;
                    return Err(HubError::new(
                        ErrorCode::LimitExceeded,
                        format!("{max} sessions are connected, the most allowed (core.limits.max_sessions)"),
                    )
                    .with_details(serde_json::json!({ "limit": "max_sessions", "max": max })));
                }
                None
            }
        };
        Ok(takeover)
    }

    /// Close the replaced connection, mark the session live on `conn`; whether it was live
    /// already (a rejoin rather than a join).
    fn bind_session(
        &mut self,
        conn: ConnId,
        info: &SessionInfo,
        takeover: Option<ConnId>,
        out: &mut Out,
    ) -> bool {
        if let Some(old) = takeover
            && let Some(old_entry) = self.presence.conns.get_mut(&old)
        {
            old_entry.session = None;
            tracing::info!(session = %info.id, old_conn = old, "session re-registered on a new connection; closing the old one");
            out.error(
                old,
                None,
                HubError::new(
                    ErrorCode::Replaced,
                    format!("session {} registered again on a newer connection", info.id),
                ),
            );
            out.closes.push((old, ErrorCode::Replaced));
        }
        let rejoined = self.presence.live.contains_key(&info.id);
        self.presence
            .live
            .insert(info.id.clone(), Live::new(conn, info.name.clone()));
        self.presence.conns.get_mut(&conn).expect("checked").session = Some(info.id.clone());
        rejoined
    }

    /// Answer `registered` with the session and its pairings, replay its pending mail,
    /// broadcast the join (or change) and tell the feature modules.
    fn announce_registration(
        &mut self,
        cx: Cx,
        arrived: Arrived,
        rejoined: bool,
        previous: &Option<SessionInfo>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Cx { conn, id, .. } = cx;
        let Arrived {
            info,
            worker,
            assignment,
        } = arrived;
        let info = self.session_info(db, &info.id)?;
        let status_now = info.status.clone();
        let pairing = store::pairings::active_for(db, &info.id)?;
        out.send(
            conn,
            &ServerMsg::Registered {
                id,
                session: info.clone(),
                pending: info.pending_messages,
                pairings: pairing.iter().map(|p| self.pairing_record(p)).collect(),
                worker,
                assignment,
            },
        );
        self.replay(&info.id, db, out)?;
        tracing::info!(session = %info.id, name = %info.name, pid = ?info.pid, "session registered");
        let session_id = info.id.clone();
        let event = if rejoined {
            ServerMsg::SessionChanged { session: info }
        } else {
            ServerMsg::SessionJoined { session: info }
        };
        self.presence.broadcast(&event, out);
        // A session that stopped while it was away (or the core was down) has stopped.
        let change = SessionChange {
            session: &session_id,
            kind: ChangeKind::Registered { rejoined },
            was: previous.as_ref().map(|p| &p.status),
            now: &status_now,
        };
        self.session_changed(&change, db, out);
        Ok(())
    }

    pub(super) fn update(
        &mut self,
        cx: Cx,
        patch: Update,
        repo: Option<RepoContext>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let Cx { conn, id, .. } = cx;
        let session_id = self.presence.registered(conn)?.clone();
        let mut info = self.session_info(db, &session_id)?;
        let was = info.status.clone();
        let old_name = info.name.clone();
        if let Some(name) = patch.name {
            check_name(&name)?;
            info.name = name;
        }
        if let Some(status) = patch.status {
            check_status(&status)?;
            info.status = status;
            // A call of it waits for a decision: that is what it is doing.
            if info.status.tool().is_some() && store::approvals::has_pending(db, &session_id)? {
                info.status = SessionStatus::Other(super::approvals::WAITING.to_string());
            }
        }
        if let Some(cwd) = patch.cwd {
            check_path("cwd", &cwd)?;
            info.cwd = cwd;
        }
        if let Some(file) = patch.session_file {
            check_path("session_file", &file)?;
            info.session_file = Some(file);
        }
        if let Some(model) = patch.model {
            info.model = Some(model);
        }
        if let Some(context) = patch.context {
            check_context(&context)?;
            apply_context(&mut info, context);
        }
        if let Some(role) = patch.role {
            info.role = self.hinted_role(&info, role, db)?;
        }
        if let Some(repo) = repo {
            apply_repo(&mut info, repo);
        }
        info.last_seen = now_ms();
        store::sessions::upsert(db, &info)?;
        if let Some(live) = self.presence.live.get_mut(&session_id) {
            live.name.clone_from(&info.name);
            if info.status != was {
                live.status_since = info.last_seen;
            }
        }
        out.send(
            conn,
            &ServerMsg::Updated {
                id,
                session: info.clone(),
            },
        );
        let status = info.status.clone();
        let renamed = info.name != old_name;
        self.presence
            .broadcast(&ServerMsg::SessionChanged { session: info }, out);
        let change = SessionChange {
            session: &session_id,
            kind: ChangeKind::Updated { renamed },
            was: Some(&was),
            now: &status,
        };
        self.session_changed(&change, db, out);
        Ok(())
    }

    pub(super) fn list_sessions(
        &self,
        cx: Cx,
        req: ListSessions,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        if req.all {
            // Every session ever seen can be many: read off the hub.
            let live: std::collections::HashSet<SessionId> =
                self.presence.live.keys().cloned().collect();
            let id = cx.id;
            let remote = match sees_the_herd(cx.kind) {
                true => self.links.sessions(),
                false => Vec::new(),
            };
            let unread = self.unread.counts();
            self.read_off_hub(cx, out, move |db| {
                let mut sessions = store::sessions::list(db, &unread)?;
                for s in &mut sessions {
                    s.connected = live.contains(&s.id);
                }
                sessions.extend(remote);
                Ok(ServerMsg::Sessions { id, sessions })
            });
            return Ok(());
        }
        // The connected ones: read by id, whatever the number ever seen.
        let mut sessions = Vec::with_capacity(self.presence.live.len());
        for id in self.presence.live.keys() {
            if let Some(mut s) = store::sessions::get(db, &self.unread, id)? {
                s.connected = true;
                sessions.push(s);
            }
        }
        sessions.sort_by(|a, b| (b.last_seen, &a.id).cmp(&(a.last_seen, &b.id)));
        // The CLI and the bridges see the herd: the linked hosts' sessions too, each with
        // its host.
        if sees_the_herd(cx.kind) {
            sessions.extend(self.links.sessions());
        }
        out.send(
            cx.conn,
            &ServerMsg::Sessions {
                id: cx.id,
                sessions,
            },
        );
        Ok(())
    }

    pub(super) fn status(&self, cx: Cx, db: &Connection, out: &mut Out) -> HubResult<()> {
        let status = self.core_status(db)?;
        out.send(cx.conn, &ServerMsg::CoreStatus { id: cx.id, status });
        Ok(())
    }

    fn core_status(&self, db: &Connection) -> HubResult<CoreStatus> {
        let now = now_ms();
        let mut bridges: Vec<BridgeInfo> = self
            .presence
            .conns
            .values()
            .filter(|c| c.handle.kind == ClientKind::Bridge)
            .map(|c| BridgeInfo {
                name: c.handle.client_name.clone(),
                pid: c.handle.pid,
                connected_since: c.handle.connected_at,
            })
            .collect();
        // A bridge keeps two connections (events, requests): list it once.
        bridges.sort_by(|a, b| {
            (&a.name, a.pid, a.connected_since).cmp(&(&b.name, b.pid, b.connected_since))
        });
        bridges.dedup_by(|b, a| a.name == b.name && a.pid == b.pid);
        Ok(CoreStatus {
            core_version: env!("CARGO_PKG_VERSION").to_string(),
            protocol: PROTOCOL_VERSION,
            pid: std::process::id(),
            started_at: self.facts.started_at,
            uptime_ms: now.saturating_sub(self.facts.started_at),
            state_dir: self.facts.state_dir.display().to_string(),
            socket: self.facts.socket.display().to_string(),
            sessions_connected: self.presence.live.len() as u32,
            sessions_known: store::sessions::count(db)?,
            open_asks: store::asks::open_total(db)?,
            bridges,
        })
    }
}

/// A session that just registered: its record and, for a managed worker, its worker.
struct Arrived {
    info: SessionInfo,
    worker: Option<Box<crate::protocol::Worker>>,
    assignment: Option<Box<crate::protocol::Assignment>>,
}

/// Whether a client of `kind` sees the linked hosts' sessions and asks beside this core's:
/// the human's own clients (the CLI, the bridges) do; a Pi session's herd is its host.
pub(in crate::hub) fn sees_the_herd(kind: ClientKind) -> bool {
    matches!(kind, ClientKind::Cli | ClientKind::Bridge)
}
