//! Asks: a session's question and, once, its answer. The single-answer rule is enforced
//! here too (`UPDATE … WHERE state = 'open'`), not only by the hub's ordering.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::protocol::{Ask, AskId, AskState, AskTo, SessionId};

const SELECT: &str = "SELECT a.id, a.session_id, COALESCE(s.name, substr(a.session_id, 1, 8)),
    a.question, a.options, a.details, a.state, a.answer, a.answered_by, a.created_at,
    a.answered_at, a.to_role, a.to_repo, a.to_project, a.to_session, a.to_name,
    a.to_worker
    FROM asks a LEFT JOIN sessions s ON s.id = a.session_id";

fn from_row(row: &Row<'_>) -> rusqlite::Result<Ask> {
    let options: String = row.get(4)?;
    let state: String = row.get(6)?;
    Ok(Ask {
        id: row.get(0)?,
        session_id: row.get(1)?,
        session_name: row.get(2)?,
        question: row.get(3)?,
        options: serde_json::from_str(&options).unwrap_or_default(),
        details: row.get(5)?,
        state: if state == "open" {
            AskState::Open
        } else {
            AskState::Answered
        },
        answer: row.get(7)?,
        answered_by: row.get(8)?,
        created_at: row.get(9)?,
        answered_at: row.get(10)?,
        to: row
            .get::<_, Option<String>>(11)?
            .map(|role| -> rusqlite::Result<AskTo> {
                Ok(AskTo {
                    role: super::sql_ids::parse_role(&role),
                    repo_id: row.get(12)?,
                    project: row.get(13)?,
                    session_id: row.get(14)?,
                    session_name: row.get(15)?,
                    worker: row.get(16)?,
                })
            })
            .transpose()?,
        host: None,
    })
}

/// Store a new open ask (with the session's idempotency `key`, if any); returns its id.
pub fn insert(
    conn: &Connection,
    session_id: &SessionId,
    question: &str,
    options: &[String],
    details: Option<&str>,
    key: Option<&str>,
    now: u64,
) -> rusqlite::Result<AskId> {
    let options = serde_json::to_string(options).expect("strings serialize");
    conn.prepare_cached(
        "INSERT INTO asks (session_id, question, options, details, state, created_at, client_key)
         VALUES (?1, ?2, ?3, ?4, 'open', ?5, ?6)",
    )?
    .execute(params![session_id, question, options, details, now, key])?;
    Ok(AskId::new(conn.last_insert_rowid() as u64))
}

/// Address an ask to a role (`ask_supervisor`), or hand it over to the role's new holder.
pub fn address(conn: &Connection, id: AskId, to: &AskTo) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE asks SET to_role = ?2, to_repo = ?3, to_project = ?4, to_session = ?5,
            to_name = ?6, to_worker = ?7 WHERE id = ?1",
    )?
    .execute(params![
        id,
        to.role.as_str(),
        to.repo_id,
        to.project,
        to.session_id,
        to.session_name,
        to.worker
    ])?;
    Ok(())
}

/// Open asks addressed to `role` (with `repo_id` for a Manager), oldest first.
pub fn open_addressed(
    conn: &Connection,
    role: crate::protocol::Role,
    repo_id: Option<&str>,
) -> rusqlite::Result<Vec<Ask>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE a.state = 'open' AND a.to_role = ?1 AND a.to_repo IS ?2
            AND a.to_worker IS NULL ORDER BY a.id"
    ))?
    .query_map(params![role.as_str(), repo_id], from_row)?
    .collect()
}

/// The ask `session_id` made with idempotency key `key`, if it made one.
pub fn by_key(
    conn: &Connection,
    session_id: &SessionId,
    key: &str,
) -> rusqlite::Result<Option<Ask>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE a.session_id = ?1 AND a.client_key = ?2"
    ))?
    .query_row(params![session_id, key], from_row)
    .optional()
}

/// Record the answer if the ask is still open. Returns false when it was not.
pub fn answer(
    conn: &Connection,
    id: AskId,
    text: &str,
    by: &str,
    now: u64,
) -> rusqlite::Result<bool> {
    let changed = conn
        .prepare_cached(
            "UPDATE asks SET state = 'answered', answer = ?2, answered_by = ?3, answered_at = ?4
             WHERE id = ?1 AND state = 'open'",
        )?
        .execute(params![id, text, by, now])?;
    Ok(changed == 1)
}

/// Open an answered ask again (its answer was taken back). Returns false when it was open.
pub fn reopen(conn: &Connection, id: AskId) -> rusqlite::Result<bool> {
    let changed = conn
        .prepare_cached(
            "UPDATE asks SET state = 'open', answer = NULL, answered_by = NULL, answered_at = NULL
             WHERE id = ?1 AND state = 'answered'",
        )?
        .execute([id])?;
    Ok(changed == 1)
}

/// One ask by id.
pub fn get(conn: &Connection, id: AskId) -> rusqlite::Result<Option<Ask>> {
    conn.prepare_cached(&format!("{SELECT} WHERE a.id = ?1"))?
        .query_row([id], from_row)
        .optional()
}

/// Open asks (oldest first), or every ask when `all` (newest first).
pub fn list(conn: &Connection, all: bool) -> rusqlite::Result<Vec<Ask>> {
    let sql = if all {
        format!("{SELECT} ORDER BY a.id DESC")
    } else {
        format!("{SELECT} WHERE a.state = 'open' ORDER BY a.id")
    };
    conn.prepare_cached(&sql)?
        .query_map([], from_row)?
        .collect()
}

/// Open asks of one session.
pub fn open_count(conn: &Connection, session_id: &SessionId) -> rusqlite::Result<u32> {
    conn.prepare_cached("SELECT COUNT(*) FROM asks WHERE session_id = ?1 AND state = 'open'")?
        .query_row([session_id], |r| r.get(0))
}

/// Open asks of all sessions.
pub fn open_total(conn: &Connection) -> rusqlite::Result<u32> {
    conn.prepare_cached("SELECT COUNT(*) FROM asks WHERE state = 'open'")?
        .query_row([], |r| r.get(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_answer_is_kept() {
        let store = crate::store::memory();
        let s1 = SessionId::from("s1");
        let id = insert(&store.conn, &s1, "Merge?", &["yes".into()], None, None, 1).unwrap();
        assert!(answer(&store.conn, id, "yes", "cli", 2).unwrap());
        assert!(!answer(&store.conn, id, "no", "telegram:@bob", 3).unwrap());
        let ask = get(&store.conn, id).unwrap().unwrap();
        assert_eq!(ask.answer.as_deref(), Some("yes"));
        assert_eq!(ask.answered_by.as_deref(), Some("cli"));
        assert_eq!(ask.session_name, "s1");
        assert_eq!(open_count(&store.conn, &s1).unwrap(), 0);
        // Taken back, it is open again, without its answer.
        assert!(reopen(&store.conn, id).unwrap());
        assert!(!reopen(&store.conn, id).unwrap());
        let ask = get(&store.conn, id).unwrap().unwrap();
        assert_eq!(
            (ask.state, ask.answer),
            (crate::protocol::AskState::Open, None)
        );
    }

    #[test]
    fn a_key_is_one_ask_per_session() {
        let store = crate::store::memory();
        let (s1, s2) = (SessionId::from("s1"), SessionId::from("s2"));
        let id = insert(&store.conn, &s1, "Q?", &[], None, Some("k1"), 1).unwrap();
        assert_eq!(
            by_key(&store.conn, &s1, "k1").unwrap().map(|a| a.id),
            Some(id)
        );
        assert!(by_key(&store.conn, &s2, "k1").unwrap().is_none());
        assert!(
            insert(&store.conn, &s1, "Q?", &[], None, Some("k1"), 2).is_err(),
            "UNIQUE"
        );
        insert(&store.conn, &s2, "Q?", &[], None, Some("k1"), 2).unwrap();
        insert(&store.conn, &s1, "Q?", &[], None, None, 3).unwrap();
        insert(&store.conn, &s1, "Q?", &[], None, None, 4).unwrap();
    }
}
