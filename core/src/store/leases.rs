//! Role leases: which session is the Manager of each repository and which is the Chief.
//! The hub decides who may take one (it is the only writer); this keeps the record, so a
//! role survives `/reload`, resume and a core restart.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::protocol::{Lease, Role, SessionId};

/// The scope of the Chief's one lease.
const CHIEF_SCOPE: &str = "";

const SELECT: &str = "SELECT l.role, l.scope, l.project, l.session_id,
    COALESCE(s.name, substr(l.session_id, 1, 8)), l.since
    FROM leases l LEFT JOIN sessions s ON s.id = l.session_id";

fn from_row(row: &Row<'_>) -> rusqlite::Result<Lease> {
    let role: String = row.get(0)?;
    let scope: String = row.get(1)?;
    Ok(Lease {
        role: super::sql_ids::parse_role(&role),
        repo_id: (!scope.is_empty()).then_some(scope),
        project: row.get(2)?,
        session_id: row.get(3)?,
        session_name: row.get(4)?,
        connected: false,
        since: row.get(5)?,
        host: None,
    })
}

fn scope(repo_id: Option<&str>) -> &str {
    repo_id.unwrap_or(CHIEF_SCOPE)
}

/// The lease for `role` (a Manager's: of `repo_id`), if anyone holds it.
pub fn get(
    conn: &Connection,
    role: Role,
    repo_id: Option<&str>,
) -> rusqlite::Result<Option<Lease>> {
    conn.prepare_cached(&format!("{SELECT} WHERE l.role = ?1 AND l.scope = ?2"))?
        .query_row(params![role.as_str(), scope(repo_id)], from_row)
        .optional()
}

/// The lease `session` holds, if any (a session holds at most one).
pub fn held_by(conn: &Connection, session: &SessionId) -> rusqlite::Result<Option<Lease>> {
    conn.prepare_cached(&format!("{SELECT} WHERE l.session_id = ?1"))?
        .query_row([session], from_row)
        .optional()
}

/// Every lease, Chief first, then Managers by project.
pub fn list(conn: &Connection) -> rusqlite::Result<Vec<Lease>> {
    conn.prepare_cached(&format!(
        "{SELECT} ORDER BY l.role = 'manager', l.project, l.scope"
    ))?
    .query_map([], from_row)?
    .collect()
}

/// Give `session` the lease (replacing whoever held it).
pub fn grant(
    conn: &Connection,
    role: Role,
    repo_id: Option<&str>,
    project: Option<&str>,
    session: &SessionId,
    now: u64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO leases (role, scope, project, session_id, since) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (role, scope) DO UPDATE SET project = ?3, session_id = ?4, since = ?5",
    )?
    .execute(params![
        role.as_str(),
        scope(repo_id),
        project,
        session,
        now
    ])?;
    Ok(())
}

/// Drop whatever lease `session` holds; true if it held one.
pub fn release(conn: &Connection, session: &SessionId) -> rusqlite::Result<bool> {
    let n = conn
        .prepare_cached("DELETE FROM leases WHERE session_id = ?1")?
        .execute([session])?;
    Ok(n > 0)
}

/// The `meta` key marking `session`'s lease as taken from it (released by the human, or
/// expired): a reclaim after its return is refused until it asks for a role explicitly.
fn released_key(session: &SessionId) -> String {
    format!("lease_released:{session}")
}

/// Mark `session`'s lease as taken from it, saying why.
pub fn mark_released(conn: &Connection, session: &SessionId, why: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")?
        .execute(params![released_key(session), why])?;
    Ok(())
}

/// Why `session`'s lease was taken from it, if it was and it has not asked for a role since.
pub fn released(conn: &Connection, session: &SessionId) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT value FROM meta WHERE key = ?1")?
        .query_row([released_key(session)], |r| r.get(0))
        .optional()
}

/// `session` asked for a role explicitly: the mark is gone.
pub fn clear_released(conn: &Connection, session: &SessionId) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM meta WHERE key = ?1")?
        .execute([released_key(session)])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store;

    #[test]
    fn one_lease_per_scope_and_one_per_session() {
        let store = store::memory();
        let db = &store.conn;
        let (a, b) = (SessionId::from("a"), SessionId::from("b"));
        grant(db, Role::Manager, Some("/r/.git"), Some("r"), &a, 1).unwrap();
        grant(db, Role::Chief, None, None, &b, 2).unwrap();
        assert_eq!(
            get(db, Role::Manager, Some("/r/.git"))
                .unwrap()
                .unwrap()
                .session_id,
            a
        );
        assert_eq!(held_by(db, &b).unwrap().unwrap().role, Role::Chief);
        let roles: Vec<Role> = list(db).unwrap().iter().map(|l| l.role).collect();
        assert_eq!(roles, vec![Role::Chief, Role::Manager]);
        // Taken over: the Manager lease moves to b once b left the Chief's.
        assert!(release(db, &b).unwrap());
        grant(db, Role::Manager, Some("/r/.git"), Some("r"), &b, 3).unwrap();
        assert_eq!(
            get(db, Role::Manager, Some("/r/.git"))
                .unwrap()
                .unwrap()
                .session_id,
            b
        );
        assert!(held_by(db, &a).unwrap().is_none());
        assert!(release(db, &b).unwrap());
        assert!(list(db).unwrap().is_empty());
    }
}
