//! Sessions the human started through the core (`new_session`, `continue_session`): one
//! row per start, with the launch's nonce and the process the worker host started, until
//! the process is gone (`ended`). At most one live row per session.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::workers::LaunchSettings;
use crate::protocol::{SessionId, StartedSession, StartedState, WorkerBackend};

/// A started session as the store keeps it.
#[derive(Debug, Clone)]
pub struct StartedRow {
    pub started: StartedSession,
    pub nonce: String,
    pub pane: Option<String>,
    pub bound_pid: Option<u32>,
    pub session_file: Option<String>,
    /// What its agent definition set for the launch (none: Pi's defaults).
    pub launch: Option<LaunchSettings>,
}

/// What a new start records.
pub struct NewStart<'a> {
    pub session_id: &'a SessionId,
    pub name: &'a str,
    pub cwd: &'a str,
    pub branch: Option<&'a str>,
    pub task: &'a str,
    pub backend: WorkerBackend,
    pub nonce: &'a str,
    pub session_file: Option<&'a str>,
    pub by: &'a str,
    pub now: u64,
    /// The agent definition's name and what it set for the launch.
    pub agent: Option<(&'a str, &'a LaunchSettings)>,
}

const COLUMNS: &str =
    "SELECT id, session_id, name, cwd, branch, task, backend, state, pid, by_human,
    created_at, updated_at, nonce, pane, bound_pid, session_file, agent, launch
    FROM started_sessions";

fn row(r: &Row<'_>) -> rusqlite::Result<StartedRow> {
    let backend: String = r.get(6)?;
    let state: String = r.get(7)?;
    Ok(StartedRow {
        started: StartedSession {
            id: r.get(0)?,
            session_id: SessionId::from(r.get::<_, String>(1)?.as_str()),
            name: r.get(2)?,
            cwd: r.get(3)?,
            branch: r.get(4)?,
            task: r.get(5)?,
            backend: match backend.as_str() {
                "tmux" => WorkerBackend::Tmux,
                _ => WorkerBackend::Headless,
            },
            state: StartedState::parse(&state),
            pid: r.get(8)?,
            by: r.get(9)?,
            created_at: r.get(10)?,
            updated_at: r.get(11)?,
            host: None,
            pane: r.get(13)?,
            agent: r.get(16)?,
        },
        nonce: r.get(12)?,
        pane: r.get(13)?,
        bound_pid: r.get(14)?,
        session_file: r.get(15)?,
        launch: r
            .get::<_, Option<String>>(17)?
            .and_then(|json| serde_json::from_str(&json).ok()),
    })
}

/// Record a start (state `starting`); its id.
pub fn insert(conn: &Connection, s: &NewStart<'_>) -> rusqlite::Result<u64> {
    conn.prepare_cached(
        "INSERT INTO started_sessions (session_id, name, cwd, branch, task, backend, state,
            nonce, session_file, by_human, created_at, updated_at, agent, launch)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'starting', ?7, ?8, ?9, ?10, ?10, ?11, ?12)",
    )?
    .execute(params![
        s.session_id.as_str(),
        s.name,
        s.cwd,
        s.branch,
        s.task,
        s.backend.as_str(),
        s.nonce,
        s.session_file,
        s.by,
        s.now,
        s.agent.map(|(name, _)| name),
        s.agent
            .map(|(_, launch)| serde_json::to_string(launch).unwrap_or_default()),
    ])?;
    Ok(conn.last_insert_rowid() as u64)
}

pub fn get(conn: &Connection, id: u64) -> rusqlite::Result<Option<StartedRow>> {
    conn.prepare_cached(&format!("{COLUMNS} WHERE id = ?1"))?
        .query_row([id], row)
        .optional()
}

/// The agent definition and launch settings `session`'s newest start had, if any: a
/// continued session keeps them.
pub fn latest_agent(
    conn: &Connection,
    session: &SessionId,
) -> rusqlite::Result<Option<(String, LaunchSettings)>> {
    let found: Option<(Option<String>, Option<String>)> = conn
        .prepare_cached(
            "SELECT agent, launch FROM started_sessions WHERE session_id = ?1 ORDER BY id DESC LIMIT 1",
        )?
        .query_row([session.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    Ok(match found {
        Some((Some(agent), Some(launch))) => serde_json::from_str(&launch).ok().map(|l| (agent, l)),
        _ => None,
    })
}

/// The live start of `session`, if any.
pub fn live_by_session(
    conn: &Connection,
    session: &SessionId,
) -> rusqlite::Result<Option<StartedRow>> {
    conn.prepare_cached(&format!(
        "{COLUMNS} WHERE session_id = ?1 AND state != 'ended' ORDER BY id DESC LIMIT 1"
    ))?
    .query_row([session.as_str()], row)
    .optional()
}

/// The starts, the newest first: the live ones, or (`all`) the ended ones too (at most
/// `limit`).
pub fn list(conn: &Connection, all: bool, limit: u32) -> rusqlite::Result<Vec<StartedRow>> {
    let mut stmt = conn.prepare(&format!(
        "{COLUMNS} WHERE (?1 OR state != 'ended') ORDER BY id DESC LIMIT ?2"
    ))?;
    stmt.query_map(params![all, limit], row)?.collect()
}

/// Every live start (for a core restart).
pub fn live(conn: &Connection) -> rusqlite::Result<Vec<StartedRow>> {
    let mut stmt = conn.prepare(&format!("{COLUMNS} WHERE state != 'ended' ORDER BY id"))?;
    stmt.query_map([], row)?.collect()
}

/// The launched process (headless: the child; tmux: the pane's process).
pub fn set_process(
    conn: &Connection,
    id: u64,
    pid: u32,
    pane: Option<&str>,
    now: u64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE started_sessions SET pid = ?2, pane = ?3, updated_at = ?4 WHERE id = ?1",
    )?
    .execute(params![id, pid, pane, now])?;
    Ok(())
}

/// Its session registered with the nonce.
pub fn bind(
    conn: &Connection,
    id: u64,
    pid: Option<u32>,
    session_file: Option<&str>,
    now: u64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE started_sessions SET state = 'running', bound_pid = ?2,
            session_file = COALESCE(?3, session_file), updated_at = ?4 WHERE id = ?1",
    )?
    .execute(params![id, pid, session_file, now])?;
    Ok(())
}

/// Launched again (a core restart) with a fresh nonce.
pub fn relaunching(conn: &Connection, id: u64, nonce: &str, now: u64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE started_sessions SET nonce = ?2, state = 'starting', pid = NULL, pane = NULL,
            bound_pid = NULL, updated_at = ?3 WHERE id = ?1",
    )?
    .execute(params![id, nonce, now])?;
    Ok(())
}

/// Its process is gone (or is being stopped): nothing registers with its nonce any more.
pub fn ended(conn: &Connection, id: u64, now: u64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE started_sessions SET state = 'ended', nonce = '', updated_at = ?2 WHERE id = ?1",
    )?
    .execute(params![id, now])?;
    Ok(())
}

/// A first launch that never started: the start did not happen.
pub fn delete(conn: &Connection, id: u64) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM started_sessions WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}
