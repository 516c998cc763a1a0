//! Pairings (a supervisor session watching a worker session) and their verdicts. A
//! session is in at most one active pairing on either side; two partial unique indexes
//! make the database enforce that too. The names and `connected` flags of a [`Pairing`]
//! are filled in by the hub, which knows who is connected.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::protocol::{
    EndReason, Pairing, PairingId, PairingState, SessionId, Verdict, VerdictKind,
};

/// A pairing row plus the hub's bookkeeping that is not part of the wire record.
#[derive(Debug, Clone)]
pub struct Stored {
    pub pairing: Pairing,
    /// JSON of `supervise::view::Cursor`.
    pub cursor: String,
    /// Verdicts given since the last delivered view.
    pub look_verdicts: u32,
    /// Timer views skipped in a row.
    pub timer_skips: u32,
    /// Tool calls without a result in the last view built.
    pub pending_tool_calls: u32,
}

const SELECT: &str = "SELECT p.id, p.supervisor_id, p.worker_id, p.cwd, p.goal, p.goal_file,
    p.state, p.looks, p.steers, p.created_at, p.last_look_at, p.ended_at, p.end_reason,
    p.ended_by, p.evidence, p.cursor, p.look_verdicts, p.timer_skips, p.pending_tool_calls,
    COALESCE(s.name, p.supervisor_id), COALESCE(w.name, p.worker_id)
    FROM pairings p
    LEFT JOIN sessions s ON s.id = p.supervisor_id
    LEFT JOIN sessions w ON w.id = p.worker_id";

fn from_row(row: &Row<'_>) -> rusqlite::Result<Stored> {
    let state: String = row.get(6)?;
    Ok(Stored {
        pairing: Pairing {
            id: row.get(0)?,
            supervisor_id: row.get(1)?,
            supervisor_name: row.get(19)?,
            worker_id: row.get(2)?,
            worker_name: row.get(20)?,
            cwd: row.get(3)?,
            goal: row.get(4)?,
            goal_file: row.get(5)?,
            state: if state == "active" {
                PairingState::Active
            } else {
                PairingState::Ended
            },
            looks: row.get(7)?,
            steers: row.get(8)?,
            created_at: row.get(9)?,
            last_look_at: row.get(10)?,
            ended_at: row.get(11)?,
            end_reason: row
                .get::<_, Option<String>>(12)?
                .as_deref()
                .and_then(EndReason::parse),
            ended_by: row.get(13)?,
            evidence: row.get(14)?,
            supervisor_connected: false,
            worker_connected: false,
            host: None,
        },
        cursor: row.get(15)?,
        look_verdicts: row.get(16)?,
        timer_skips: row.get(17)?,
        pending_tool_calls: row.get(18)?,
    })
}

/// A new active pairing.
pub struct NewPairing<'a> {
    pub supervisor_id: &'a SessionId,
    pub worker_id: &'a SessionId,
    pub cwd: &'a str,
    pub goal: Option<&'a str>,
    pub goal_file: Option<&'a str>,
    pub created_at: u64,
}

/// Insert a pairing; returns its id.
pub fn insert(conn: &Connection, p: NewPairing<'_>) -> rusqlite::Result<PairingId> {
    conn.prepare_cached(
        "INSERT INTO pairings (supervisor_id, worker_id, cwd, goal, goal_file, state, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, 'active', ?6)",
    )?
    .execute(params![
        p.supervisor_id,
        p.worker_id,
        p.cwd,
        p.goal,
        p.goal_file,
        p.created_at
    ])?;
    Ok(PairingId::from(conn.last_insert_rowid() as u64))
}

pub fn get(conn: &Connection, id: PairingId) -> rusqlite::Result<Option<Stored>> {
    conn.prepare_cached(&format!("{SELECT} WHERE p.id = ?1"))?
        .query_row([id], from_row)
        .optional()
}

/// The active pairing `session` is in, on either side.
pub fn active_for(conn: &Connection, session: &SessionId) -> rusqlite::Result<Option<Stored>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE p.state = 'active' AND (p.supervisor_id = ?1 OR p.worker_id = ?1)"
    ))?
    .query_row([session], from_row)
    .optional()
}

/// Every active pairing, oldest first.
pub fn active(conn: &Connection) -> rusqlite::Result<Vec<Stored>> {
    conn.prepare_cached(&format!("{SELECT} WHERE p.state = 'active' ORDER BY p.id"))?
        .query_map([], from_row)?
        .collect()
}

/// Pairings, newest first; `all` adds ended ones (the 200 most recent).
pub fn list(conn: &Connection, all: bool) -> rusqlite::Result<Vec<Stored>> {
    let sql = if all {
        format!("{SELECT} ORDER BY p.id DESC LIMIT 200")
    } else {
        format!("{SELECT} WHERE p.state = 'active' ORDER BY p.id DESC")
    };
    conn.prepare_cached(&sql)?
        .query_map([], from_row)?
        .collect()
}

pub fn set_goal(
    conn: &Connection,
    id: PairingId,
    goal: &str,
    goal_file: Option<&str>,
) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE pairings SET goal = ?2, goal_file = ?3 WHERE id = ?1")?
        .execute(params![id, goal, goal_file])?;
    Ok(())
}

/// End an active pairing; false when it was not active.
pub fn end(
    conn: &Connection,
    id: PairingId,
    reason: EndReason,
    by: &str,
    evidence: Option<&str>,
    now: u64,
) -> rusqlite::Result<bool> {
    let changed = conn
        .prepare_cached(
            "UPDATE pairings SET state = 'ended', ended_at = ?2, end_reason = ?3, ended_by = ?4,
                evidence = ?5
             WHERE id = ?1 AND state = 'active'",
        )?
        .execute(params![id, now, reason.as_str(), by, evidence])?;
    Ok(changed == 1)
}

/// A view was delivered: advance the cursor and open a new look.
pub fn record_look(
    conn: &Connection,
    id: PairingId,
    cursor: &str,
    pending_tool_calls: u32,
    now: u64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE pairings SET looks = looks + 1, last_look_at = ?2, cursor = ?3,
            pending_tool_calls = ?4, look_verdicts = 0, timer_skips = 0
         WHERE id = ?1",
    )?
    .execute(params![id, now, cursor, pending_tool_calls])?;
    Ok(())
}

/// A timer view was skipped because nothing changed.
pub fn record_skip(conn: &Connection, id: PairingId) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE pairings SET timer_skips = timer_skips + 1 WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// Store a verdict and count it against the current look.
pub fn insert_verdict(conn: &Connection, pairing: PairingId, v: &Verdict) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO verdicts (pairing_id, kind, text, look, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![pairing, kind_str(v.kind), v.text, v.look, v.created_at])?;
    let steer = u32::from(v.kind == VerdictKind::Steer);
    conn.prepare_cached(
        "UPDATE pairings SET look_verdicts = look_verdicts + 1, steers = steers + ?2 WHERE id = ?1",
    )?
    .execute(params![pairing, steer])?;
    Ok(())
}

/// The pairing's most recent steers, newest first.
pub fn recent_steers(
    conn: &Connection,
    pairing: PairingId,
    limit: usize,
) -> rusqlite::Result<Vec<Verdict>> {
    conn.prepare_cached(
        "SELECT kind, text, look, created_at FROM verdicts
         WHERE pairing_id = ?1 AND kind = 'steer' ORDER BY id DESC LIMIT ?2",
    )?
    .query_map(params![pairing, limit as i64], |row| {
        Ok(Verdict {
            kind: VerdictKind::Steer,
            text: row.get(1)?,
            look: row.get(2)?,
            created_at: row.get(3)?,
        })
    })?
    .collect()
}

fn kind_str(kind: VerdictKind) -> &'static str {
    match kind {
        VerdictKind::Steer => "steer",
        VerdictKind::LetItRun => "let_it_run",
        VerdictKind::Done => "done",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new<'a>(sup: &'a SessionId, worker: &'a SessionId) -> NewPairing<'a> {
        NewPairing {
            supervisor_id: sup,
            worker_id: worker,
            cwd: "/w",
            goal: Some("ship it"),
            goal_file: None,
            created_at: 1,
        }
    }

    #[test]
    fn one_active_pairing_per_session_on_either_side() {
        let store = crate::store::memory();
        let db = &store.conn;
        let [s, w, x, y] = ["s", "w", "x", "y"].map(SessionId::from);
        let id = insert(db, new(&s, &w)).unwrap();
        assert!(insert(db, new(&s, &x)).is_err(), "supervisor twice");
        assert!(insert(db, new(&y, &w)).is_err(), "worker twice");
        assert_eq!(active_for(db, &w).unwrap().unwrap().pairing.id, id);
        assert!(end(db, id, EndReason::Stopped, "cli", None, 2).unwrap());
        assert!(
            !end(db, id, EndReason::Stopped, "cli", None, 3).unwrap(),
            "ends once"
        );
        assert!(active_for(db, &w).unwrap().is_none());
        insert(db, new(&w, &s)).expect("free again, roles swapped");
        assert_eq!(list(db, true).unwrap().len(), 2);
        assert_eq!(list(db, false).unwrap().len(), 1);
    }

    #[test]
    fn looks_reset_the_verdict_count_and_steers_are_counted() {
        let store = crate::store::memory();
        let db = &store.conn;
        let (s, w) = (SessionId::from("s"), SessionId::from("w"));
        let id = insert(db, new(&s, &w)).unwrap();
        let v = |kind, text: &str| Verdict {
            kind,
            text: text.into(),
            look: 1,
            created_at: 5,
        };
        insert_verdict(db, id, &v(VerdictKind::Steer, "run the tests")).unwrap();
        insert_verdict(db, id, &v(VerdictKind::LetItRun, "")).unwrap();
        let p = get(db, id).unwrap().unwrap();
        assert_eq!((p.look_verdicts, p.pairing.steers), (2, 1));
        record_look(db, id, r#"{"offset":10}"#, 1, 9).unwrap();
        let p = get(db, id).unwrap().unwrap();
        assert_eq!((p.look_verdicts, p.pairing.looks), (0, 1));
        assert_eq!(p.cursor, r#"{"offset":10}"#);
        assert_eq!(recent_steers(db, id, 3).unwrap()[0].text, "run the tests");
    }
}
