//! Reports: information a session posted for whoever supervises it.

use rusqlite::{Connection, OptionalExtension, params};

use crate::protocol::SessionId;

/// Store a report (with the session's idempotency `key`, if any); returns its id.
pub fn insert(
    conn: &Connection,
    session_id: &SessionId,
    text: &str,
    key: Option<&str>,
    now: u64,
) -> rusqlite::Result<u64> {
    conn.prepare_cached(
        "INSERT INTO reports (session_id, text, created_at, client_key) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![session_id, text, now, key])?;
    Ok(conn.last_insert_rowid() as u64)
}

/// The report `session_id` posted with idempotency key `key`: its id, text and time.
pub fn by_key(
    conn: &Connection,
    session_id: &SessionId,
    key: &str,
) -> rusqlite::Result<Option<(u64, String, u64)>> {
    conn.prepare_cached(
        "SELECT id, text, created_at FROM reports WHERE session_id = ?1 AND client_key = ?2",
    )?
    .query_row(params![session_id, key], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })
    .optional()
}
