//! Sessions the core has seen: one row per Pi session id, upserted on register and on
//! every presence update, so `shepherd sessions --all` and selectors work for sessions
//! that are not connected right now.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::unread::Unread;
use crate::protocol::{SessionId, SessionInfo, SessionStatus};

/// With the count of open asks; the unread mail is counted from [`Unread`].
const SELECT: &str = "SELECT id, name, cwd, pid, model, status, role, context_tokens,
    context_window, context_percent, repo, branch, head, worktree, session_file,
    first_seen, last_seen,
    (SELECT COUNT(*) FROM asks a WHERE a.session_id = s.id AND a.state = 'open'),
    0, subagent, repo_id, project
    FROM sessions s";

/// [`SELECT`] with zeros for the two counts.
const SELECT_UNCOUNTED: &str = "SELECT id, name, cwd, pid, model, status, role, context_tokens,
    context_window, context_percent, repo, branch, head, worktree, session_file,
    first_seen, last_seen, 0, 0, subagent, repo_id, project
    FROM sessions s";

fn from_row(row: &Row<'_>) -> rusqlite::Result<SessionInfo> {
    let role: String = row.get(6)?;
    Ok(SessionInfo {
        id: row.get(0)?,
        name: row.get(1)?,
        cwd: row.get(2)?,
        pid: row.get(3)?,
        model: row.get(4)?,
        status: SessionStatus::from(row.get::<_, String>(5)?),
        role: super::sql_ids::parse_role(&role),
        connected: false,
        context_tokens: row.get(7)?,
        context_window: row.get(8)?,
        context_percent: row.get(9)?,
        repo: row.get(10)?,
        branch: row.get(11)?,
        head: row.get(12)?,
        worktree: row.get(13)?,
        session_file: row.get(14)?,
        first_seen: row.get(15)?,
        last_seen: row.get(16)?,
        open_asks: row.get(17)?,
        pending_messages: row.get(18)?,
        subagent: row.get(19)?,
        repo_id: row.get(20)?,
        project: row.get(21)?,
        host: None,
    })
}

/// Record that the core was in touch with a connected session at `now` (an answer was
/// handed to it: `unanswer` reads `last_seen` to know what may have reached it).
pub fn touch(conn: &Connection, id: &SessionId, now: u64) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE sessions SET last_seen = MAX(last_seen, ?2) WHERE id = ?1")?
        .execute(params![id, now])?;
    Ok(())
}

/// Insert or replace everything about a session except `first_seen`.
pub fn upsert(conn: &Connection, s: &SessionInfo) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO sessions (id, name, cwd, pid, model, status, role, context_tokens,
            context_window, context_percent, repo, branch, head, worktree, session_file,
            first_seen, last_seen, subagent, repo_id, project)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
            ?19, ?20)
         ON CONFLICT (id) DO UPDATE SET name = ?2, cwd = ?3, pid = ?4, model = ?5,
            status = ?6, role = ?7, context_tokens = ?8, context_window = ?9,
            context_percent = ?10, repo = ?11, branch = ?12, head = ?13, worktree = ?14,
            session_file = ?15, last_seen = ?17, subagent = ?18, repo_id = ?19, project = ?20",
    )?
    .execute(params![
        s.id,
        s.name,
        s.cwd,
        s.pid,
        s.model,
        s.status.to_string(),
        s.role.as_str(),
        s.context_tokens,
        s.context_window,
        s.context_percent,
        s.repo,
        s.branch,
        s.head,
        s.worktree,
        s.session_file,
        s.first_seen,
        s.last_seen,
        s.subagent,
        s.repo_id,
        s.project,
    ])?;
    Ok(())
}

/// One session by exact id without its counts (`open_asks` and `pending_messages` read 0):
/// for the paths that decide who may mail whom, whose cost must not grow with a backlog.
pub fn get_uncounted(conn: &Connection, id: &SessionId) -> rusqlite::Result<Option<SessionInfo>> {
    conn.prepare_cached(&format!("{SELECT_UNCOUNTED} WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()
}

/// One session by exact id (`connected` is false: the hub knows who is connected).
pub fn get(
    conn: &Connection,
    unread: &Unread,
    id: &SessionId,
) -> rusqlite::Result<Option<SessionInfo>> {
    let mut info = conn
        .prepare_cached(&format!("{SELECT} WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()?;
    if let Some(info) = &mut info {
        info.pending_messages = unread.count(id) as u32;
    }
    Ok(info)
}

/// Every known session, most recently seen first, with the unread mail `unread` counts
/// ([`Unread::counts`]: taken on the hub, for a listing read off it).
pub fn list(
    conn: &Connection,
    unread: &HashMap<SessionId, u64>,
) -> rusqlite::Result<Vec<SessionInfo>> {
    let mut sessions: Vec<SessionInfo> = conn
        .prepare_cached(&format!("{SELECT} ORDER BY last_seen DESC"))?
        .query_map([], from_row)?
        .collect::<rusqlite::Result<_>>()?;
    for s in &mut sessions {
        s.pending_messages = unread.get(&s.id).map_or(0, |n| *n as u32);
    }
    Ok(sessions)
}

/// The repositories sessions ran in: (project name, repo id), one per repository, the
/// most recently seen first.
pub fn projects(conn: &Connection) -> rusqlite::Result<Vec<(String, String)>> {
    conn.prepare_cached(
        "SELECT project, repo_id FROM sessions WHERE project IS NOT NULL AND repo_id IS NOT NULL
         GROUP BY repo_id ORDER BY MAX(last_seen) DESC LIMIT 500",
    )?
    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
    .collect()
}

/// A session's id and name: what a selector needs, read without the counts
/// [`get`] adds (which walk the session's asks and mailbox).
#[derive(Debug, Clone, PartialEq)]
pub struct Named {
    pub id: SessionId,
    pub name: String,
}

fn named(row: &Row<'_>) -> rusqlite::Result<Named> {
    Ok(Named {
        id: row.get(0)?,
        name: row.get(1)?,
    })
}

/// The session with exact id `id`, by id and name.
pub fn named_by_id(conn: &Connection, id: &SessionId) -> rusqlite::Result<Option<Named>> {
    conn.prepare_cached("SELECT id, name FROM sessions WHERE id = ?1")?
        .query_row([id], named)
        .optional()
}

/// Sessions whose id starts with `prefix` (at most 20), by id and name.
pub fn named_by_id_prefix(conn: &Connection, prefix: &str) -> rusqlite::Result<Vec<Named>> {
    conn.prepare_cached(
        "SELECT id, name FROM sessions WHERE substr(id, 1, length(?1)) = ?1
         ORDER BY last_seen DESC LIMIT 20",
    )?
    .query_map([prefix], named)?
    .collect()
}

/// Sessions whose id ends with `suffix` (at most 20, most recently seen first): the short
/// ids listings show are the ids' ends.
pub fn named_by_id_suffix(conn: &Connection, suffix: &str) -> rusqlite::Result<Vec<Named>> {
    conn.prepare_cached(
        "SELECT id, name FROM sessions WHERE length(id) >= length(?1)
            AND substr(id, length(id) - length(?1) + 1) = ?1
         ORDER BY last_seen DESC LIMIT 20",
    )?
    .query_map([suffix], named)?
    .collect()
}

/// Sessions named exactly `name` (at most 20), by id and name.
pub fn named_by_name(conn: &Connection, name: &str) -> rusqlite::Result<Vec<Named>> {
    conn.prepare_cached(
        "SELECT id, name FROM sessions WHERE name = ?1 ORDER BY last_seen DESC LIMIT 20",
    )?
    .query_map([name], named)?
    .collect()
}

/// Sessions on branch `branch` of a repository whose directory is named `project` (the
/// `app@main` a listing shows), most recently seen first.
pub fn named_by_place(
    conn: &Connection,
    project: &str,
    branch: &str,
) -> rusqlite::Result<Vec<Named>> {
    let mut found = Vec::new();
    let mut stmt = conn.prepare_cached(
        "SELECT id, name, repo FROM sessions WHERE branch = ?1 ORDER BY last_seen DESC LIMIT 200",
    )?;
    let rows = stmt.query_map([branch], |row| {
        Ok((named(row)?, row.get::<_, Option<String>>(2)?))
    })?;
    for row in rows {
        let (session, repo) = row?;
        let base = repo
            .as_deref()
            .and_then(|r| std::path::Path::new(r).file_name());
        if base.is_some_and(|b| b == project) && found.len() < 20 {
            found.push(session);
        }
    }
    Ok(found)
}

/// How many sessions the store knows.
pub fn count(conn: &Connection) -> rusqlite::Result<u32> {
    conn.prepare_cached("SELECT COUNT(*) FROM sessions")?
        .query_row([], |r| r.get(0))
}

/// Every session with a session file: id, name and file, most recently seen first.
pub fn with_files(conn: &Connection) -> rusqlite::Result<Vec<(SessionId, String, String)>> {
    conn.prepare_cached(
        "SELECT id, name, session_file FROM sessions WHERE session_file IS NOT NULL
         ORDER BY last_seen DESC",
    )?
    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
    .collect()
}

/// Sessions last seen before `cutoff` that nothing refers to any more (no open ask by or
/// for them, no unread mail, no lease, no active pairing, no live worker, no assignment
/// that is not retired), at most `limit`, oldest first.
pub fn forgettable(
    conn: &Connection,
    unread: &Unread,
    cutoff: u64,
    limit: usize,
) -> rusqlite::Result<Vec<SessionId>> {
    let with_mail: Vec<SessionId> = unread.counts().into_keys().collect();
    let with_mail = serde_json::to_string(&with_mail).unwrap_or_else(|_| "[]".into());
    conn.prepare_cached(
        "SELECT s.id FROM sessions s WHERE s.last_seen < ?1
         AND NOT EXISTS (SELECT 1 FROM asks a WHERE a.state = 'open'
             AND (a.session_id = s.id OR a.to_session = s.id))
         AND s.id NOT IN (SELECT value FROM json_each(?3))
         AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.session_id = s.id)
         AND NOT EXISTS (SELECT 1 FROM pairings p WHERE p.state = 'active'
             AND (p.supervisor_id = s.id OR p.worker_id = s.id))
         AND NOT EXISTS (SELECT 1 FROM workers w WHERE w.state NOT IN ('done', 'closed')
             AND (w.session_id = s.id OR w.owner = s.id))
         AND NOT EXISTS (SELECT 1 FROM assignments x WHERE x.state != 'retired'
             AND x.session_id = s.id)
         ORDER BY s.last_seen LIMIT ?2",
    )?
    .query_map(params![cutoff as i64, limit as i64, with_mail], |r| {
        r.get(0)
    })?
    .collect()
}

/// Forget session `id` with its history: its asks (and their approvals), the mail it
/// received, its reports, its ended pairings (and their verdicts) and its ended workers'
/// rows, and the mark of a lease taken from it, so nothing refers to a session that is gone.
pub fn forget(conn: &Connection, unread: &Unread, id: &SessionId) -> rusqlite::Result<()> {
    super::leases::clear_released(conn, id)?;
    // Its unread mail (none when it was `forgettable`), out of `unread` with the rows.
    super::messages::drop_pending(conn, unread, id)?;
    for sql in [
        "DELETE FROM verdicts WHERE pairing_id IN
             (SELECT id FROM pairings WHERE supervisor_id = ?1 OR worker_id = ?1)",
        "DELETE FROM pairings WHERE supervisor_id = ?1 OR worker_id = ?1",
        "DELETE FROM approvals WHERE ask_id IN (SELECT id FROM asks WHERE session_id = ?1)",
        "DELETE FROM asks WHERE session_id = ?1",
        "DELETE FROM messages WHERE recipient = ?1",
        "DELETE FROM reports WHERE session_id = ?1",
        "DELETE FROM workers WHERE session_id = ?1 OR owner = ?1",
        "DELETE FROM sessions WHERE id = ?1",
    ] {
        conn.prepare_cached(sql)?.execute([id])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of reference keeps a session unseen for long; without one it goes.
    #[test]
    fn only_sessions_nothing_refers_to_are_forgettable() {
        let store = crate::store::memory();
        let db = &store.conn;
        let ids = [
            "free", "asking", "asked", "unread", "lease", "pairing", "worker", "owner", "lead",
            "recent",
        ];
        for id in ids {
            let seen = if id == "recent" { 5_000 } else { 1_000 };
            db.execute(
                "INSERT INTO sessions (id, name, cwd, status, role, first_seen, last_seen)
                 VALUES (?1, ?1, '/tmp', 'idle', 'lead', ?2, ?2)",
                params![id, seen],
            )
            .unwrap();
        }
        for sql in [
            "INSERT INTO asks (session_id, question, options, state, created_at)
                 VALUES ('asking', 'q', '[]', 'open', 1)",
            "INSERT INTO asks (session_id, question, options, state, created_at, to_session)
                 VALUES ('free', 'q', '[]', 'answered', 1, 'asked')",
            "INSERT INTO asks (session_id, question, options, state, created_at, to_session)
                 VALUES ('recent', 'q', '[]', 'open', 1, 'asked')",
            "INSERT INTO messages (recipient, kind, text, from_kind, from_name, created_at)
                 VALUES ('unread', 'steer', 't', 'cli', 'cli', 1)",
            "INSERT INTO leases (role, scope, session_id, since) VALUES ('chief', '', 'lease', 1)",
            "INSERT INTO pairings (supervisor_id, worker_id, cwd, state, created_at)
                 VALUES ('pairing', 'recent', '/tmp', 'active', 1)",
            "INSERT INTO workers (label, definition, owner, session_id, cwd, backend, state,
                 nonce, task, launch, created_at, updated_at)
                 VALUES ('w', 'scout', 'owner', 'worker', '/tmp', 'headless', 'working', 'n',
                 't', '{}', 1, 1)",
            "INSERT INTO assignments (repo_id, project, primary_root, branch, checkout,
                 session_id, state, task, created_by, backend, nonce, created_at, updated_at)
                 VALUES ('r', 'app', '/r', 'feat/a', '/r-a', 'lead', 'paused', 't', 'm',
                 'headless', 'n', 1, 1)",
        ] {
            db.execute(sql, []).unwrap();
        }
        // The mail above went in behind the index's back: read it as an open would.
        let unread = &Unread::load(db).unwrap();
        assert_eq!(unread.count(&SessionId::from("unread")), 1);
        assert_eq!(
            forgettable(db, unread, 2_000, 100).unwrap(),
            [SessionId::from("free")]
        );
        super::super::leases::mark_released(db, &SessionId::from("free"), "released").unwrap();
        forget(db, unread, &SessionId::from("free")).unwrap();
        assert_eq!(
            super::super::leases::released(db, &SessionId::from("free")).unwrap(),
            None,
            "the mark of a lease taken from it goes too"
        );
        let left: i64 = db
            .query_row(
                "SELECT COUNT(*) FROM asks WHERE session_id = 'free'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(left, 0, "its history goes with it");
        assert!(get(db, unread, &SessionId::from("free")).unwrap().is_none());
        // An ended pairing, a done worker, a retired assignment refer to nothing live.
        for sql in [
            "UPDATE pairings SET state = 'ended'",
            "UPDATE workers SET state = 'done'",
            "UPDATE assignments SET state = 'retired'",
        ] {
            db.execute(sql, []).unwrap();
        }
        let mut now: Vec<String> = forgettable(db, unread, 2_000, 100)
            .unwrap()
            .into_iter()
            .map(|s| s.to_string())
            .collect();
        now.sort();
        assert_eq!(now, ["lead", "owner", "pairing", "worker"]);
    }
}
