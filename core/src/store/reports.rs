//! Reports and results: what a session posted for whoever supervises it (the `report`
//! tool) and the final text of each of its runs, kept for `shepherd reports` and for a
//! bridge catching up after it was away. Each row knows its kind and whether it was
//! announced to the bridges (a result the `results` setting held back is kept unannounced).

use rusqlite::{Connection, OptionalExtension, params};

use crate::protocol::{Report, ReportKind, SessionId};

/// What to keep.
pub struct NewReport<'a> {
    pub session_id: &'a SessionId,
    pub text: &'a str,
    pub kind: ReportKind,
    pub announced: bool,
    pub created_at: u64,
    /// The session's idempotency key: a resend with it stores nothing new ([`by_key`]).
    pub key: Option<&'a str>,
}

/// Store a report or result; returns its id.
pub fn insert(conn: &Connection, new: &NewReport<'_>) -> rusqlite::Result<u64> {
    conn.prepare_cached(
        "INSERT INTO reports (session_id, text, created_at, kind, announced, client_key, asks_seen)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6,
                 CASE WHEN ?4 = 'result' THEN (SELECT COALESCE(MAX(id), 0) FROM asks) END)",
    )?
    .execute(params![
        new.session_id,
        new.text,
        new.created_at,
        new.kind.as_str(),
        new.announced,
        new.key
    ])?;
    Ok(conn.last_insert_rowid() as u64)
}

/// The report or result `session_id` posted with idempotency key `key`, as it was kept.
pub fn by_key(
    conn: &Connection,
    session_id: &SessionId,
    key: &str,
) -> rusqlite::Result<Option<Report>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE r.session_id = ?1 AND r.client_key = ?2"
    ))?
    .query_row(params![session_id, key], from_row)
    .optional()
}

const SELECT: &str = "SELECT r.id, r.session_id, COALESCE(s.name, r.session_id), r.text,
        r.created_at, r.kind, r.announced
    FROM reports r LEFT JOIN sessions s ON s.id = r.session_id";

fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Report> {
    let kind: String = r.get(5)?;
    Ok(Report {
        id: r.get(0)?,
        session_id: r.get(1)?,
        session_name: r.get(2)?,
        text: r.get(3)?,
        created_at: r.get(4)?,
        kind: ReportKind::parse(&kind),
        announced: r.get(6)?,
        host: None,
    })
}

/// Which kept reports to list.
#[derive(Debug, Default, Clone)]
pub struct Filter<'a> {
    /// One session's only.
    pub session: Option<&'a SessionId>,
    /// Only ids above this.
    pub after: Option<u64>,
    /// Only the newest this many.
    pub limit: Option<u32>,
}

/// Kept reports, oldest first, each with its session's current name (its id when the
/// session is unknown).
pub fn list(conn: &Connection, filter: &Filter<'_>) -> rusqlite::Result<Vec<Report>> {
    let limit = filter.limit.map_or(-1, i64::from);
    let mut rows: Vec<Report> = conn
        .prepare_cached(&format!(
            "{SELECT} WHERE (?1 IS NULL OR r.session_id = ?1) AND r.id > ?2
             ORDER BY r.id DESC LIMIT ?3"
        ))?
        .query_map(
            params![filter.session, filter.after.unwrap_or(0), limit],
            from_row,
        )?
        .collect::<rusqlite::Result<_>>()?;
    rows.reverse();
    Ok(rows)
}

/// Whether the session opened an ask since its last kept result (in its current run, as
/// far as the core can tell: a run's result ends it). For `results = "asks_only"`; ask
/// before inserting the run's own result. Compares ask ids with the newest ask each
/// result came after, so asks and results in the same millisecond stay in order.
pub fn asked_since_last_result(conn: &Connection, session: &SessionId) -> rusqlite::Result<bool> {
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM asks WHERE session_id = ?1 AND id > COALESCE(
             (SELECT MAX(asks_seen) FROM reports WHERE session_id = ?1 AND kind = 'result'), 0))",
    )?
    .query_row([session], |r| r.get(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store;

    fn keep(conn: &Connection, session: &str, text: &str, kind: ReportKind, at: u64) -> u64 {
        let session_id = SessionId::from(session);
        insert(
            conn,
            &NewReport {
                session_id: &session_id,
                text,
                kind,
                announced: true,
                created_at: at,
                key: None,
            },
        )
        .unwrap()
    }

    #[test]
    fn lists_oldest_first_filtered_and_limited_to_the_newest() {
        let store = store::memory();
        let db = &store.conn;
        let a1 = keep(db, "a", "one", ReportKind::Report, 1);
        let b1 = keep(db, "b", "two", ReportKind::Result, 2);
        let a2 = keep(db, "a", "three", ReportKind::Result, 3);
        let all = list(db, &Filter::default()).unwrap();
        assert_eq!(
            all.iter().map(|r| r.id).collect::<Vec<_>>(),
            vec![a1, b1, a2]
        );
        assert_eq!(all[1].kind, ReportKind::Result);
        assert_eq!(all[0].session_name, "a", "unknown sessions show their id");
        let a = SessionId::from("a");
        let only_a = Filter {
            session: Some(&a),
            ..Filter::default()
        };
        let texts: Vec<String> = list(db, &only_a)
            .unwrap()
            .into_iter()
            .map(|r| r.text)
            .collect();
        assert_eq!(texts, vec!["one", "three"]);
        let newest = Filter {
            limit: Some(2),
            ..Filter::default()
        };
        let ids: Vec<u64> = list(db, &newest).unwrap().iter().map(|r| r.id).collect();
        assert_eq!(ids, vec![b1, a2]);
        let after = Filter {
            after: Some(a1),
            ..Filter::default()
        };
        assert_eq!(list(db, &after).unwrap().len(), 2);
    }

    #[test]
    fn an_ask_counts_until_the_next_result() {
        let store = store::memory();
        let db = &store.conn;
        let s = SessionId::from("s");
        assert!(!asked_since_last_result(db, &s).unwrap());
        store::asks::insert(db, &s, "q?", &[], None, None, 10).unwrap();
        assert!(asked_since_last_result(db, &s).unwrap());
        keep(db, "s", "done", ReportKind::Result, 11);
        assert!(!asked_since_last_result(db, &s).unwrap());
        keep(
            db,
            "s",
            "a report is not a run's end",
            ReportKind::Report,
            12,
        );
        store::asks::insert(db, &s, "again?", &[], None, None, 13).unwrap();
        assert!(asked_since_last_result(db, &s).unwrap());
        let other = SessionId::from("other");
        assert!(!asked_since_last_result(db, &other).unwrap());
    }

    #[test]
    fn an_ask_and_a_result_in_the_same_millisecond_stay_in_order() {
        let store = store::memory();
        let db = &store.conn;
        let s = SessionId::from("s");
        store::asks::insert(db, &s, "q?", &[], None, None, 20).unwrap();
        keep(db, "s", "done", ReportKind::Result, 20);
        assert!(
            !asked_since_last_result(db, &s).unwrap(),
            "the ask was this run's"
        );
        keep(db, "s", "next", ReportKind::Result, 20);
        store::asks::insert(db, &s, "again?", &[], None, None, 20).unwrap();
        assert!(asked_since_last_result(db, &s).unwrap());
    }
}
