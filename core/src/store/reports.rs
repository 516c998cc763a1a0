//! Reports: information a session posted for whoever supervises it.

use rusqlite::{Connection, params};

use crate::protocol::SessionId;

/// Store a report; returns its id.
pub fn insert(
    conn: &Connection,
    session_id: &SessionId,
    text: &str,
    now: u64,
) -> rusqlite::Result<u64> {
    conn.prepare_cached("INSERT INTO reports (session_id, text, created_at) VALUES (?1, ?2, ?3)")?
        .execute(params![session_id, text, now])?;
    Ok(conn.last_insert_rowid() as u64)
}
