//! Managed workers' records: one row per generation, written before its process starts.
//! The hub is the only writer and decides every transition; this keeps the rows and
//! answers the lookups the transitions need (by label under an owner, by session, by the
//! result delivery an owner acknowledged).

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::protocol::{AskId, MessageId, SessionId, Worker, WorkerBackend, WorkerId, WorkerState};

/// How the worker's process is started again (a restart, `continue_agent`): the agent
/// definition's settings as they were resolved at launch. Stored as JSON.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LaunchSettings {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub thinking: Option<String>,
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub exclude_tools: Vec<String>,
    /// The definition's body, appended to the worker's system prompt.
    #[serde(default)]
    pub prompt: Option<String>,
    /// The definitions this worker may delegate to (empty: a leaf).
    #[serde(default)]
    pub agents: Vec<String>,
    /// `fork` source session file, for the first launch only.
    #[serde(default)]
    pub fork: Option<String>,
}

/// A worker row with what only the core needs (nonce, pids, pane, launch settings).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerRow {
    pub worker: Worker,
    pub nonce: String,
    /// The launched process (headless: the child; tmux: the pane's process).
    pub pid: Option<u32>,
    pub pane: Option<String>,
    /// The pid of the Pi session that registered with the nonce.
    pub bound_pid: Option<u32>,
    pub launch: LaunchSettings,
    pub result_message: Option<MessageId>,
    pub told_lost: bool,
    pub restarts: u32,
    /// The whole task (the record carries its first 200 characters).
    pub task: String,
}

const SELECT: &str = "SELECT w.id, w.label, w.definition, w.owner,
    COALESCE(s.name, substr(w.owner, 1, 8)), w.parent_worker, w.session_id, w.session_file,
    w.cwd, w.backend, w.state, w.pending_ask, w.task, w.delegates, w.created_at,
    w.updated_at, w.nonce, w.pid, w.pane, w.bound_pid, w.launch, w.result_message,
    w.told_lost, w.restarts
    FROM workers w LEFT JOIN sessions s ON s.id = w.owner";

/// The task as a record shows it.
pub fn task_preview(task: &str) -> String {
    let mut out: String = task.chars().take(200).collect();
    if task.chars().count() > 200 {
        out.push('…');
    }
    out
}

fn from_row(row: &Row<'_>) -> rusqlite::Result<WorkerRow> {
    let backend: String = row.get(9)?;
    let state = WorkerState::parse(&row.get::<_, String>(10)?);
    let task: String = row.get(12)?;
    let launch: String = row.get(20)?;
    Ok(WorkerRow {
        worker: Worker {
            id: row.get(0)?,
            label: row.get(1)?,
            definition: row.get(2)?,
            owner_id: row.get(3)?,
            owner_name: row.get(4)?,
            parent_worker: row.get(5)?,
            session_id: row.get(6)?,
            session_file: row.get(7)?,
            cwd: row.get(8)?,
            backend: WorkerBackend::parse(&backend).unwrap_or(WorkerBackend::Headless),
            state,
            available_actions: state.actions(),
            pending_ask: row.get(11)?,
            task: task_preview(&task),
            delegates: row.get(13)?,
            created_at: row.get(14)?,
            updated_at: row.get(15)?,
            host: None,
        },
        nonce: row.get(16)?,
        pid: row.get(17)?,
        pane: row.get(18)?,
        bound_pid: row.get(19)?,
        launch: serde_json::from_str(&launch).unwrap_or_default(),
        result_message: row.get(21)?,
        told_lost: row.get(22)?,
        restarts: row.get(23)?,
        task,
    })
}

/// A new worker, before its process starts.
pub struct NewWorker<'a> {
    pub label: &'a str,
    pub definition: &'a str,
    pub owner: &'a SessionId,
    pub parent_worker: Option<WorkerId>,
    pub session_id: &'a SessionId,
    pub session_file: Option<&'a str>,
    pub cwd: &'a str,
    pub backend: WorkerBackend,
    pub nonce: &'a str,
    pub task: &'a str,
    pub launch: &'a LaunchSettings,
    pub delegates: bool,
    pub now: u64,
}

/// Record a worker in state `starting`; returns its id. Fails on a live label or session
/// already taken (the unique indexes), which the hub checks first.
pub fn insert(conn: &Connection, w: &NewWorker<'_>) -> rusqlite::Result<WorkerId> {
    let launch = serde_json::to_string(w.launch).expect("settings serialize");
    conn.prepare_cached(
        "INSERT INTO workers (label, definition, owner, parent_worker, session_id, session_file,
            cwd, backend, state, nonce, task, launch, delegates, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'starting', ?9, ?10, ?11, ?12, ?13, ?13)",
    )?
    .execute(params![
        w.label,
        w.definition,
        w.owner,
        w.parent_worker,
        w.session_id,
        w.session_file,
        w.cwd,
        w.backend.as_str(),
        w.nonce,
        w.task,
        launch,
        w.delegates,
        w.now
    ])?;
    Ok(WorkerId::new(conn.last_insert_rowid() as u64))
}

pub fn get(conn: &Connection, id: WorkerId) -> rusqlite::Result<Option<WorkerRow>> {
    conn.prepare_cached(&format!("{SELECT} WHERE w.id = ?1"))?
        .query_row([id], from_row)
        .optional()
}

/// The live worker (not done or closed) whose Pi session is `session`.
pub fn live_by_session(
    conn: &Connection,
    session: &SessionId,
) -> rusqlite::Result<Option<WorkerRow>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE w.session_id = ?1 AND w.state NOT IN ('done', 'closed')"
    ))?
    .query_row([session], from_row)
    .optional()
}

/// The newest generation on `session` (live or ended), for `continue_agent`.
pub fn newest_by_session(
    conn: &Connection,
    session: &SessionId,
) -> rusqlite::Result<Option<WorkerRow>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE w.session_id = ?1 ORDER BY w.id DESC LIMIT 1"
    ))?
    .query_row([session], from_row)
    .optional()
}

/// The newest generation whose session file is `file`.
pub fn newest_by_file(conn: &Connection, file: &str) -> rusqlite::Result<Option<WorkerRow>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE w.session_file = ?1 ORDER BY w.id DESC LIMIT 1"
    ))?
    .query_row([file], from_row)
    .optional()
}

/// `owner`'s live worker labelled `label`.
pub fn live_by_label(
    conn: &Connection,
    owner: &SessionId,
    label: &str,
) -> rusqlite::Result<Option<WorkerRow>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE w.owner = ?1 AND w.label = ?2 AND w.state NOT IN ('done', 'closed')"
    ))?
    .query_row(params![owner, label], from_row)
    .optional()
}

/// Every live worker labelled `label` (any owner), for the human's name resolution.
pub fn live_labelled(conn: &Connection, label: &str) -> rusqlite::Result<Vec<WorkerRow>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE w.label = ?1 AND w.state NOT IN ('done', 'closed') ORDER BY w.id"
    ))?
    .query_map([label], from_row)?
    .collect()
}

/// `owner`'s workers (live only unless `all`), oldest first.
pub fn owned_by(
    conn: &Connection,
    owner: &SessionId,
    all: bool,
) -> rusqlite::Result<Vec<WorkerRow>> {
    let live = if all {
        ""
    } else {
        " AND w.state NOT IN ('done', 'closed')"
    };
    conn.prepare_cached(&format!("{SELECT} WHERE w.owner = ?1{live} ORDER BY w.id"))?
        .query_map([owner], from_row)?
        .collect()
}

/// `owner`'s workers and theirs, all the way down (live only unless `all`: a worker that
/// ended hides its own), in one query: each level by id, the levels in order.
pub fn tree_of(
    conn: &Connection,
    owner: &SessionId,
    all: bool,
) -> rusqlite::Result<Vec<WorkerRow>> {
    let live = |w: &str| match all {
        true => String::new(),
        false => format!(" AND {w}.state NOT IN ('done', 'closed')"),
    };
    let sql = format!(
        "WITH RECURSIVE tree(id, session_id, depth) AS (
            SELECT w.id, w.session_id, 0 FROM workers w WHERE w.owner = ?1{top}
            UNION ALL
            SELECT c.id, c.session_id, t.depth + 1 FROM workers c
                JOIN tree t ON c.owner = t.session_id WHERE t.depth < 64{down}
        )
        {SELECT} JOIN tree t ON t.id = w.id ORDER BY t.depth, w.id",
        top = live("w"),
        down = live("c"),
    );
    conn.prepare_cached(&sql)?
        .query_map([owner], from_row)?
        .collect()
}

/// How many workers run or are being started (`starting`, `working`, `blocked`,
/// `settling`, or a state this build does not know): `owner`'s, or everyone's. A `lost`
/// worker has no process and does not count.
pub fn count_running(conn: &Connection, owner: Option<&SessionId>) -> rusqlite::Result<usize> {
    // `state NOT IN ('done', 'closed')` as written lets SQLite use the partial indexes.
    let n: i64 = match owner {
        Some(owner) => conn
            .prepare_cached(
                "SELECT COUNT(*) FROM workers WHERE owner = ?1
                   AND state NOT IN ('done', 'closed') AND state <> 'lost'",
            )?
            .query_row([owner], |r| r.get(0))?,
        None => conn
            .prepare_cached(
                "SELECT COUNT(*) FROM workers
                 WHERE state NOT IN ('done', 'closed') AND state <> 'lost'",
            )?
            .query_row([], |r| r.get(0))?,
    };
    Ok(n as usize)
}

/// Every worker (live only unless `all`), by owner then id.
pub fn list(conn: &Connection, all: bool) -> rusqlite::Result<Vec<WorkerRow>> {
    let live = if all {
        ""
    } else {
        " WHERE w.state NOT IN ('done', 'closed')"
    };
    conn.prepare_cached(&format!("{SELECT}{live} ORDER BY w.owner, w.id"))?
        .query_map([], from_row)?
        .collect()
}

/// The worker whose result went out as delivery `message`.
pub fn by_result_message(
    conn: &Connection,
    message: MessageId,
) -> rusqlite::Result<Option<WorkerRow>> {
    conn.prepare_cached(&format!("{SELECT} WHERE w.result_message = ?1"))?
        .query_row([message], from_row)
        .optional()
}

/// Move a worker to `state` (an ended state also stamps `ended_at`).
pub fn set_state(
    conn: &Connection,
    id: WorkerId,
    state: WorkerState,
    now: u64,
) -> rusqlite::Result<()> {
    let ended = state.is_ended().then_some(now);
    conn.prepare_cached(
        "UPDATE workers SET state = ?2, updated_at = ?3, ended_at = COALESCE(?4, ended_at)
         WHERE id = ?1",
    )?
    .execute(params![id, state.as_str(), now, ended])?;
    Ok(())
}

/// The process was started: its pid (and tmux pane).
pub fn set_process(
    conn: &Connection,
    id: WorkerId,
    pid: u32,
    pane: Option<&str>,
    now: u64,
) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE workers SET pid = ?2, pane = ?3, updated_at = ?4 WHERE id = ?1")?
        .execute(params![id, pid, pane, now])?;
    Ok(())
}

/// A new launch of the same generation (a restart relaunched it): a fresh nonce, no
/// process yet, one more restart counted.
pub fn relaunching(conn: &Connection, id: WorkerId, nonce: &str, now: u64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE workers SET nonce = ?2, pid = NULL, pane = NULL, bound_pid = NULL,
            restarts = restarts + 1, updated_at = ?3 WHERE id = ?1",
    )?
    .execute(params![id, nonce, now])?;
    Ok(())
}

/// The worker's Pi session registered with the nonce: bound to `pid`.
pub fn bind(
    conn: &Connection,
    id: WorkerId,
    pid: Option<u32>,
    session_file: Option<&str>,
    now: u64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE workers SET bound_pid = ?2, session_file = COALESCE(?3, session_file),
            updated_at = ?4 WHERE id = ?1",
    )?
    .execute(params![id, pid, session_file, now])?;
    Ok(())
}

pub fn set_pending_ask(
    conn: &Connection,
    id: WorkerId,
    ask: Option<AskId>,
    now: u64,
) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE workers SET pending_ask = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute(params![id, ask, now])?;
    Ok(())
}

/// Record the result's delivery, once: false when the worker already has one.
pub fn set_result(
    conn: &Connection,
    id: WorkerId,
    message: MessageId,
    now: u64,
) -> rusqlite::Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE workers SET result_message = ?2, state = 'settling', updated_at = ?3
             WHERE id = ?1 AND result_message IS NULL",
        )?
        .execute(params![id, message, now])?;
    Ok(n == 1)
}

pub fn set_told_lost(conn: &Connection, id: WorkerId) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE workers SET told_lost = 1 WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// Live workers whose owner is worker `parent`.
pub fn children(conn: &Connection, parent: WorkerId) -> rusqlite::Result<Vec<WorkerRow>> {
    conn.prepare_cached(&format!(
        "{SELECT} WHERE w.parent_worker = ?1 AND w.state NOT IN ('done', 'closed') ORDER BY w.id"
    ))?
    .query_map([parent], from_row)?
    .collect()
}

/// How many live workers `owner` has labelled `<prefix><n>`, to number a default label.
pub fn labels_like(
    conn: &Connection,
    owner: &SessionId,
    prefix: &str,
) -> rusqlite::Result<Vec<String>> {
    conn.prepare_cached(
        "SELECT label FROM workers WHERE owner = ?1 AND substr(label, 1, length(?2)) = ?2",
    )?
    .query_map(params![owner, prefix], |r| r.get(0))?
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(conn: &Connection, owner: &str, label: &str, state: WorkerState) -> WorkerId {
        let owner = SessionId::from(owner);
        let session = SessionId::from(format!("{owner}-{label}").as_str());
        let id = insert(
            conn,
            &NewWorker {
                label,
                definition: "scout",
                owner: &owner,
                parent_worker: None,
                session_id: &session,
                session_file: None,
                cwd: "/w",
                backend: WorkerBackend::Headless,
                nonce: "n",
                task: "t",
                launch: &LaunchSettings::default(),
                delegates: false,
                now: 1,
            },
        )
        .unwrap();
        set_state(conn, id, state, 2).unwrap();
        id
    }

    #[test]
    fn running_workers_are_counted_by_owner_and_in_total_without_ended_or_lost_ones() {
        let store = crate::store::memory();
        let conn = &store.conn;
        use WorkerState::*;
        for (label, state) in [
            ("a", Starting),
            ("b", Working),
            ("c", Blocked),
            ("d", Settling),
            ("e", Lost),
            ("f", Done),
            ("g", Closed),
        ] {
            add(conn, "o1", label, state);
        }
        add(conn, "o2", "a", Working);
        add(conn, "o2", "b", Closed);
        let o1 = SessionId::from("o1");
        let o2 = SessionId::from("o2");
        assert_eq!(count_running(conn, Some(&o1)).unwrap(), 4);
        assert_eq!(count_running(conn, Some(&o2)).unwrap(), 1);
        assert_eq!(
            count_running(conn, Some(&SessionId::from("o3"))).unwrap(),
            0
        );
        assert_eq!(count_running(conn, None).unwrap(), 5);
    }

    /// What `list_workers` did before `tree_of`: one `owned_by` per worker found.
    fn tree_by_levels(conn: &Connection, owner: &str, all: bool) -> Vec<WorkerId> {
        let mut rows = owned_by(conn, &SessionId::from(owner), all).unwrap();
        let mut i = 0;
        while i < rows.len() {
            let children = owned_by(conn, &rows[i].worker.session_id, all).unwrap();
            rows.extend(children);
            i += 1;
        }
        rows.into_iter().map(|r| r.worker.id).collect()
    }

    #[test]
    fn a_tree_of_workers_is_read_in_one_query_as_level_by_level() {
        let store = crate::store::memory();
        let conn = &store.conn;
        use WorkerState::*;
        let a = add(conn, "o1", "a", Working);
        let b = add(conn, "o1", "b", Done);
        let x = add(conn, "o1-a", "x", Working);
        let y = add(conn, "o1-a", "y", Closed);
        let z = add(conn, "o1-b", "z", Working);
        let deep = add(conn, "o1-a-x", "deep", Working);
        add(conn, "o2", "q", Working);
        let ids = |all| -> Vec<WorkerId> {
            tree_of(conn, &SessionId::from("o1"), all)
                .unwrap()
                .into_iter()
                .map(|r| r.worker.id)
                .collect()
        };
        // An ended worker hides its own unless all are asked for.
        assert_eq!(ids(false), vec![a, x, deep]);
        assert_eq!(ids(true), vec![a, b, x, y, z, deep]);
        for all in [false, true] {
            assert_eq!(ids(all), tree_by_levels(conn, "o1", all));
        }
        assert!(
            tree_of(conn, &SessionId::from("o3"), true)
                .unwrap()
                .is_empty()
        );
    }
}
