//! Tool-call approvals (`tool_approvals`): one row per held call, unique by session and
//! Pi's tool call id, so a request again after a reconnect finds the same approval; and
//! the session grants (`tool_approval_grants`) an "allow for this session" leaves: the
//! rule that asked stops asking that session until it ends.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::protocol::{Approval, ApprovalId, ApprovalScope, ApprovalState, SessionId};

const SELECT: &str = "SELECT id, session_id, session_name, tool, subject, rule, cwd, tool_call_id,
    state, scope, decided_by, reason, created_at, decided_at FROM tool_approvals";

fn from_row(row: &Row<'_>) -> rusqlite::Result<Approval> {
    let scope: Option<String> = row.get(9)?;
    Ok(Approval {
        id: row.get(0)?,
        session_id: row.get(1)?,
        session_name: row.get(2)?,
        tool: row.get(3)?,
        subject: row.get(4)?,
        rule: row.get(5)?,
        cwd: row.get(6)?,
        tool_call_id: row.get(7)?,
        state: ApprovalState::parse(&row.get::<_, String>(8)?),
        scope: scope.map(|s| match s.as_str() {
            "session" => ApprovalScope::Session,
            _ => ApprovalScope::Once,
        }),
        decided_by: row.get(10)?,
        reason: row.get(11)?,
        created_at: row.get(12)?,
        decided_at: row.get(13)?,
        host: None,
    })
}

/// A new pending approval (its `id`, `state` and decision fields are ignored).
pub fn insert(conn: &Connection, a: &Approval) -> rusqlite::Result<ApprovalId> {
    conn.prepare_cached(
        "INSERT INTO tool_approvals (session_id, session_name, tool, subject, rule, cwd,
            tool_call_id, state, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', ?8)",
    )?
    .execute(params![
        a.session_id,
        a.session_name,
        a.tool,
        a.subject,
        a.rule,
        a.cwd,
        a.tool_call_id,
        a.created_at
    ])?;
    Ok(ApprovalId::new(conn.last_insert_rowid() as u64))
}

pub fn get(conn: &Connection, id: ApprovalId) -> rusqlite::Result<Option<Approval>> {
    conn.prepare_cached(&format!("{SELECT} WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()
}

/// The approval of one tool call of one session, if it was asked about.
pub fn of_call(
    conn: &Connection,
    session: &SessionId,
    tool_call_id: &str,
) -> rusqlite::Result<Option<Approval>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE session_id = ?1 AND tool_call_id = ?2"
    ))?
    .query_row(params![session, tool_call_id], from_row)
    .optional()
}

/// Pending approvals (oldest first), or (`all`) the newest 200 of every state.
pub fn list(conn: &Connection, all: bool) -> rusqlite::Result<Vec<Approval>> {
    let sql = match all {
        true => format!("{SELECT} ORDER BY id DESC LIMIT 200"),
        false => format!("{SELECT} WHERE state = 'pending' ORDER BY id"),
    };
    conn.prepare_cached(&sql)?
        .query_map([], from_row)?
        .collect()
}

/// One session's pending approvals.
pub fn pending_of(conn: &Connection, session: &SessionId) -> rusqlite::Result<Vec<Approval>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE session_id = ?1 AND state = 'pending' ORDER BY id"
    ))?
    .query_map([session], from_row)?
    .collect()
}

/// Whether `session` has a call waiting for a decision.
pub fn has_pending(conn: &Connection, session: &SessionId) -> rusqlite::Result<bool> {
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM tool_approvals WHERE session_id = ?1 AND state = 'pending')",
    )?
    .query_row([session], |r| r.get(0))
}

/// End a pending approval: `state`, who (or why), and for an allow its scope, for a
/// denial its reason. False when it was not pending (the first decision won).
pub fn decide(
    conn: &Connection,
    id: ApprovalId,
    state: ApprovalState,
    scope: Option<ApprovalScope>,
    by: &str,
    reason: Option<&str>,
    now: u64,
) -> rusqlite::Result<bool> {
    let scope = scope.map(|s| match s {
        ApprovalScope::Once => "once",
        ApprovalScope::Session => "session",
    });
    let changed = conn
        .prepare_cached(
            "UPDATE tool_approvals SET state = ?2, scope = ?3, decided_by = ?4, reason = ?5,
                decided_at = ?6
             WHERE id = ?1 AND state = 'pending'",
        )?
        .execute(params![id, state.as_str(), scope, by, reason, now])?;
    Ok(changed == 1)
}

/// `session` may make the calls `rule` asks about until it ends.
pub fn grant(conn: &Connection, session: &SessionId, rule: &str, by: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO tool_approval_grants (session_id, rule, granted_by) VALUES (?1, ?2, ?3)
         ON CONFLICT (session_id, rule) DO NOTHING",
    )?
    .execute(params![session, rule, by])?;
    Ok(())
}

/// Who let `session` make the calls `rule` asks about, if someone did.
pub fn granted(
    conn: &Connection,
    session: &SessionId,
    rule: &str,
) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached(
        "SELECT granted_by FROM tool_approval_grants WHERE session_id = ?1 AND rule = ?2",
    )?
    .query_row(params![session, rule], |r| r.get(0))
    .optional()
}

/// The session ended: its grants end with it.
pub fn end_grants(conn: &Connection, session: &SessionId) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM tool_approval_grants WHERE session_id = ?1")?
        .execute([session])?;
    Ok(())
}
