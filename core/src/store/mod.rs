//! # The durable store
//!
//! One SQLite database (WAL mode) holding everything that must survive the core: sessions
//! seen, asks and their answers, every message for a session until it is acknowledged, and
//! reports. The hub task owns the only writing connection and wraps each batch of
//! requests in one transaction (group commit), so nothing is acknowledged before it is on
//! disk and thousands of messages a second cost one commit each batch, not one each.
//!
//! Functions here take a `&rusqlite::Connection` so they work inside a transaction or a
//! savepoint alike. Ids come from `AUTOINCREMENT`: they are never reused and only grow.

pub mod approvals;
pub mod asks;
mod checkpoint;
pub mod host_mail;
pub mod leases;
pub mod messages;
pub mod pairings;
pub mod projects;
pub mod reports;
pub mod sessions;
mod sql_ids;
pub mod started;
pub mod unread;
pub mod workers;

use std::path::Path;

use rusqlite::{Connection, OptionalExtension};

use crate::config::Durability;

pub use checkpoint::{Checkpointer, WalWaker};

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error(
        "database {path} has schema version {found}, newer than this shepherd ({supported}): upgrade shepherd"
    )]
    TooNew {
        path: String,
        found: i64,
        supported: i64,
    },
}

/// The schema, one entry per version. Never edit an entry: append a new one.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    cwd TEXT NOT NULL,
    pid INTEGER,
    model TEXT,
    status TEXT NOT NULL,
    role TEXT NOT NULL,
    context_tokens INTEGER,
    context_window INTEGER,
    context_percent REAL,
    repo TEXT,
    branch TEXT,
    head TEXT,
    worktree INTEGER NOT NULL DEFAULT 0,
    session_file TEXT,
    first_seen INTEGER NOT NULL,
    last_seen INTEGER NOT NULL
);
CREATE INDEX sessions_name ON sessions(name);
CREATE TABLE asks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    question TEXT NOT NULL,
    options TEXT NOT NULL,
    details TEXT,
    state TEXT NOT NULL CHECK (state IN ('open', 'answered')),
    answer TEXT,
    answered_by TEXT,
    created_at INTEGER NOT NULL,
    answered_at INTEGER
);
CREATE INDEX asks_open ON asks(session_id) WHERE state = 'open';
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    recipient TEXT NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    from_kind TEXT NOT NULL,
    from_session TEXT,
    from_name TEXT NOT NULL,
    ask_id INTEGER,
    question TEXT,
    created_at INTEGER NOT NULL,
    acked_at INTEGER
);
CREATE INDEX messages_pending ON messages(recipient, id) WHERE acked_at IS NULL;
CREATE TABLE reports (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
"#,
    r#"
ALTER TABLE sessions ADD COLUMN subagent INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN pairing_id INTEGER;
ALTER TABLE messages ADD COLUMN look INTEGER;
CREATE TABLE pairings (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    supervisor_id TEXT NOT NULL,
    worker_id TEXT NOT NULL,
    cwd TEXT NOT NULL,
    goal TEXT,
    goal_file TEXT,
    state TEXT NOT NULL CHECK (state IN ('active', 'ended')),
    looks INTEGER NOT NULL DEFAULT 0,
    steers INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    last_look_at INTEGER,
    ended_at INTEGER,
    end_reason TEXT,
    ended_by TEXT,
    evidence TEXT,
    -- Where the last view stopped in the worker's session file (JSON, supervise::view::Cursor).
    cursor TEXT NOT NULL DEFAULT '{}',
    -- Verdicts given since the last delivered view (the runaway guard).
    look_verdicts INTEGER NOT NULL DEFAULT 0,
    -- Timer views skipped in a row because nothing changed.
    timer_skips INTEGER NOT NULL DEFAULT 0,
    -- Tool calls without a result in the last view built.
    pending_tool_calls INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX pairings_active_supervisor ON pairings(supervisor_id) WHERE state = 'active';
CREATE UNIQUE INDEX pairings_active_worker ON pairings(worker_id) WHERE state = 'active';
CREATE TABLE verdicts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    pairing_id INTEGER NOT NULL REFERENCES pairings(id),
    kind TEXT NOT NULL CHECK (kind IN ('steer', 'let_it_run', 'done')),
    text TEXT NOT NULL,
    look INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX verdicts_pairing ON verdicts(pairing_id, id);
"#,
    r#"
-- Idempotency keys a session chose for its asks and reports (a resend stores nothing new).
ALTER TABLE asks ADD COLUMN client_key TEXT;
CREATE UNIQUE INDEX asks_client_key ON asks(session_id, client_key) WHERE client_key IS NOT NULL;
ALTER TABLE reports ADD COLUMN client_key TEXT;
CREATE UNIQUE INDEX reports_client_key ON reports(session_id, client_key)
    WHERE client_key IS NOT NULL;
"#,
    r#"
-- Reports keep their kind (a run's result) and whether the bridges were told.
ALTER TABLE reports ADD COLUMN kind TEXT NOT NULL DEFAULT 'report' CHECK (kind IN ('report', 'result'));
ALTER TABLE reports ADD COLUMN announced INTEGER NOT NULL DEFAULT 1;
CREATE INDEX reports_session ON reports(session_id, id);
"#,
    r#"
-- A result remembers the newest ask it came after, so "did this run ask?" compares ids,
-- not milliseconds (an ask and a result in the same millisecond told the next run it asked).
ALTER TABLE reports ADD COLUMN asks_seen INTEGER;
UPDATE reports SET asks_seen = (SELECT COALESCE(MAX(a.id), 0) FROM asks a
    WHERE a.session_id = reports.session_id AND a.created_at <= reports.created_at)
    WHERE kind = 'result';
"#,
    r#"
-- Roles the core grants: one Manager per repository (scope: its repo_id), one Chief
-- (scope ''). A lease outlives its holder's connection; another session may take it
-- while the holder is away.
CREATE TABLE leases (
    role TEXT NOT NULL CHECK (role IN ('manager', 'chief')),
    scope TEXT NOT NULL,
    project TEXT,
    session_id TEXT NOT NULL,
    since INTEGER NOT NULL,
    PRIMARY KEY (role, scope)
);
CREATE INDEX leases_session ON leases(session_id);
ALTER TABLE sessions ADD COLUMN repo_id TEXT;
ALTER TABLE sessions ADD COLUMN project TEXT;
-- An ask_supervisor ask is addressed to a role (and the session that held it).
ALTER TABLE asks ADD COLUMN to_role TEXT;
ALTER TABLE asks ADD COLUMN to_repo TEXT;
ALTER TABLE asks ADD COLUMN to_project TEXT;
ALTER TABLE asks ADD COLUMN to_session TEXT;
ALTER TABLE asks ADD COLUMN to_name TEXT;
-- An ask's deliveries (its answer, its copies to a role holder) by ask.
CREATE INDEX messages_ask ON messages(ask_id) WHERE ask_id IS NOT NULL;
"#,
    r#"
-- Managed workers: one row per generation (one assignment). Written before the process
-- is spawned; the nonce binds the registering Pi session to it. The result is stored once
-- (result_message set with it) and the row ends when the owner acks that delivery.
CREATE TABLE workers (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    label TEXT NOT NULL,
    definition TEXT NOT NULL,
    owner TEXT NOT NULL,
    parent_worker INTEGER,
    session_id TEXT NOT NULL,
    session_file TEXT,
    cwd TEXT NOT NULL,
    backend TEXT NOT NULL CHECK (backend IN ('tmux', 'headless')),
    state TEXT NOT NULL,
    nonce TEXT NOT NULL,
    pid INTEGER,
    pane TEXT,
    bound_pid INTEGER,
    task TEXT NOT NULL,
    launch TEXT NOT NULL,
    delegates INTEGER NOT NULL DEFAULT 0,
    pending_ask INTEGER,
    result_message INTEGER,
    told_lost INTEGER NOT NULL DEFAULT 0,
    restarts INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    ended_at INTEGER
);
CREATE UNIQUE INDEX workers_live_label ON workers(owner, label)
    WHERE state NOT IN ('done', 'closed');
CREATE UNIQUE INDEX workers_live_session ON workers(session_id)
    WHERE state NOT IN ('done', 'closed');
CREATE INDEX workers_live ON workers(state) WHERE state NOT IN ('done', 'closed');
CREATE INDEX workers_result ON workers(result_message) WHERE result_message IS NOT NULL;
-- An ask_owner ask is for its worker's owner alone.
ALTER TABLE asks ADD COLUMN to_worker INTEGER;
"#,
    r#"
-- Project work: one row per work assignment, written before its Lead's process starts.
CREATE TABLE assignments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    repo_id TEXT NOT NULL,
    project TEXT NOT NULL,
    primary_root TEXT NOT NULL,
    branch TEXT NOT NULL,
    checkout TEXT NOT NULL,
    session_id TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('active', 'paused', 'retired')),
    task TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_by_id TEXT,
    backend TEXT NOT NULL CHECK (backend IN ('tmux', 'headless')),
    nonce TEXT NOT NULL,
    process TEXT NOT NULL DEFAULT 'none' CHECK (process IN ('none', 'starting', 'bound')),
    pid INTEGER,
    pane TEXT,
    bound_pid INTEGER,
    session_file TEXT,
    model TEXT,
    current_branch TEXT,
    head TEXT,
    last_update_at INTEGER,
    last_update TEXT,
    integrated_sha TEXT,
    cleanup_pending INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
-- One open assignment per branch of a repository; a retired one frees the branch.
CREATE UNIQUE INDEX assignments_open ON assignments(repo_id, branch) WHERE state != 'retired';
CREATE INDEX assignments_session ON assignments(session_id) WHERE state != 'retired';
-- An integrate_branch waiting for the human: the ask they answer.
CREATE TABLE approvals (
    ask_id INTEGER PRIMARY KEY,
    assignment_id INTEGER NOT NULL,
    sha TEXT NOT NULL,
    manager_id TEXT NOT NULL
);
-- Project mail (updates, integrations) belongs to the repository's Manager role: kept for
-- the next holder while no Manager reads it, dropped when its assignment retires.
ALTER TABLE messages ADD COLUMN assignment_id INTEGER;
ALTER TABLE messages ADD COLUMN role_repo TEXT;
CREATE INDEX messages_role ON messages(role_repo) WHERE role_repo IS NOT NULL AND acked_at IS NULL;
"#,
    r#"
-- Message ids without AUTOINCREMENT: its counter (the messages row of sqlite_sequence) was
-- a third page every commit wrote, beside the message and its pending index. Ids still
-- never repeat: an insert takes one past the largest id there is and the largest id ever
-- removed, which the trigger keeps in meta (`messages_high`) when the newest message goes.
CREATE TABLE messages_next (
    id INTEGER PRIMARY KEY,
    recipient TEXT NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    from_kind TEXT NOT NULL,
    from_session TEXT,
    from_name TEXT NOT NULL,
    ask_id INTEGER,
    question TEXT,
    created_at INTEGER NOT NULL,
    acked_at INTEGER,
    pairing_id INTEGER,
    look INTEGER,
    assignment_id INTEGER,
    role_repo TEXT
);
INSERT INTO messages_next (id, recipient, kind, text, from_kind, from_session, from_name,
    ask_id, question, created_at, acked_at, pairing_id, look, assignment_id, role_repo)
SELECT id, recipient, kind, text, from_kind, from_session, from_name,
    ask_id, question, created_at, acked_at, pairing_id, look, assignment_id, role_repo
FROM messages;
INSERT INTO meta (key, value)
SELECT 'messages_high', seq FROM sqlite_sequence WHERE name = 'messages';
DROP TABLE messages;
ALTER TABLE messages_next RENAME TO messages;
CREATE INDEX messages_pending ON messages(recipient, id) WHERE acked_at IS NULL;
CREATE INDEX messages_ask ON messages(ask_id) WHERE ask_id IS NOT NULL;
CREATE INDEX messages_role ON messages(role_repo) WHERE role_repo IS NOT NULL AND acked_at IS NULL;
CREATE TRIGGER messages_high AFTER DELETE ON messages
WHEN old.id > coalesce((SELECT max(id) FROM messages), 0)
BEGIN
    INSERT INTO meta (key, value) VALUES ('messages_high', old.id)
    ON CONFLICT (key) DO UPDATE SET value = excluded.value
    WHERE CAST(value AS INTEGER) < CAST(excluded.value AS INTEGER);
END;
"#,
    r#"
CREATE TABLE host_mail_out (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    host TEXT NOT NULL,
    mail TEXT NOT NULL);
CREATE INDEX host_mail_out_host ON host_mail_out(host, id);
CREATE TABLE host_mail_in (
    origin TEXT NOT NULL,
    mail_id INTEGER NOT NULL,
    PRIMARY KEY (origin, mail_id));
"#,
    r#"
-- A tool call held for the human's decision; one per session and Pi tool call id.
CREATE TABLE tool_approvals (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    session_name TEXT NOT NULL,
    tool TEXT NOT NULL,
    subject TEXT NOT NULL,
    rule TEXT NOT NULL,
    cwd TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'allowed', 'denied', 'withdrawn')),
    scope TEXT CHECK (scope IN ('once', 'session')),
    decided_by TEXT,
    reason TEXT,
    created_at INTEGER NOT NULL,
    decided_at INTEGER,
    UNIQUE (session_id, tool_call_id)
);
CREATE INDEX tool_approvals_pending ON tool_approvals(session_id) WHERE state = 'pending';
-- "Allow for this session": the rule stops asking the session until it ends.
CREATE TABLE tool_approval_grants (
    session_id TEXT NOT NULL,
    rule TEXT NOT NULL,
    granted_by TEXT NOT NULL,
    PRIMARY KEY (session_id, rule)
);
"#,
    r#"
-- A Pi session the human started (`new_session`) or started again (`continue_session`):
-- one row per start, its process launched through the worker host.
CREATE TABLE started_sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    name TEXT NOT NULL,
    cwd TEXT NOT NULL,
    branch TEXT,
    task TEXT NOT NULL,
    backend TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('starting', 'running', 'ended')),
    nonce TEXT NOT NULL,
    pid INTEGER,
    pane TEXT,
    bound_pid INTEGER,
    session_file TEXT,
    by_human TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX started_sessions_live ON started_sessions(session_id) WHERE state != 'ended';
"#,
    r#"
-- Images a steer carries (a photo the human sent from the phone): a JSON array of
-- {path, mime}, the files saved in the session's `.shepherd/inbox/`; NULL for none.
ALTER TABLE messages ADD COLUMN images TEXT;
"#,
    r#"
-- The agent definition a started session was started with, and what it set for the launch
-- (JSON: model, thinking, tools, exclude_tools, prompt); NULL for none.
ALTER TABLE started_sessions ADD COLUMN agent TEXT;
ALTER TABLE started_sessions ADD COLUMN launch TEXT;
"#,
    r#"
-- Which mail is unread is kept in the writer's memory (`unread.rs`), not in an index
-- that every message and every acknowledgement wrote a page of.
DROP INDEX messages_pending;
"#,
];

/// An open database with its identity.
pub struct Store {
    pub conn: Connection,
    /// Random id of this database, stable across restarts; delivery ids are unique within
    /// it.
    pub store_id: String,
    /// Which mail is unread, read on open and kept by the mailbox's writes.
    pub unread: unread::Unread,
}

impl Store {
    /// Open (creating and migrating as needed) the database at `path`.
    pub fn open(path: &Path, durability: Durability) -> Result<Store, StoreError> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        let sync = match durability {
            Durability::Normal => "NORMAL",
            Durability::Full => "FULL",
        };
        conn.pragma_update(None, "synchronous", sync)?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // Wait for the checkpointer's write lock (a RESTART or TRUNCATE) in short steps, for
        // at least 5 s before a batch fails.
        conn.busy_handler(Some(checkpoint::wait_briefly::<100_000>))?;
        // Checkpoints run beside the writer (see [`Checkpointer`]), never inside a commit.
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        conn.set_prepared_statement_cache_capacity(64);
        migrate(&conn, path)?;
        let store_id = store_id(&conn)?;
        let unread = unread::Unread::load(&conn)?;
        Ok(Store {
            conn,
            store_id,
            unread,
        })
    }

    /// Tell `waker` after every commit: the checkpointer's cue that the WAL grew.
    pub fn on_commit(&self, waker: WalWaker) {
        self.conn.commit_hook(Some(move || {
            waker.wrote();
            false
        }));
    }
}

fn migrate(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let supported = MIGRATIONS.len() as i64;
    if version > supported {
        return Err(StoreError::TooNew {
            path: path.display().to_string(),
            found: version,
            supported,
        });
    }
    if version == supported {
        return Ok(());
    }
    // Every pending step in one transaction: all of them or none (a failure leaves the
    // database at the version it had), and one commit instead of one a step (a new
    // database's schema took ~70 WAL frames over those commits).
    let tx = conn.unchecked_transaction()?;
    for sql in &MIGRATIONS[version as usize..] {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", supported)?;
    tx.commit()?;
    Ok(())
}

fn store_id(conn: &Connection) -> Result<String, StoreError> {
    let existing: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'store_id'", [], |r| {
            r.get(0)
        })
        .optional()?;
    if let Some(id) = existing {
        return Ok(id);
    }
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the OS random source works");
    let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('store_id', ?1)",
        [&id],
    )?;
    Ok(id)
}

/// How the hub begins each batch's transaction. IMMEDIATE takes the write lock at once,
/// waiting (busy timeout) while the checkpointer holds it for a TRUNCATE. A plain
/// (deferred) `BEGIN` would read first and then upgrade to a write, and SQLite refuses that
/// upgrade at once with `database is locked` when another connection holds the write lock
/// (no busy wait: it could deadlock), so a commit that met a checkpoint failed as
/// `store_failed`.
pub const BEGIN_BATCH: &str = "BEGIN IMMEDIATE";

#[cfg(test)]
pub(crate) fn memory() -> Store {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("t.db"), Durability::Normal).unwrap();
    std::mem::forget(dir);
    store
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch that reads, then writes, while another connection (the checkpointer) holds
    /// the write lock for a moment: begun with [`BEGIN_BATCH`] it waits and commits; begun
    /// with a deferred `BEGIN` it fails at once, which is what the hub used to do.
    #[test]
    fn a_batch_waits_for_the_write_lock_instead_of_failing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let store = Store::open(&path, Durability::Normal).unwrap();
        let batch = |begin: &str| -> rusqlite::Result<()> {
            store.conn.execute_batch(begin)?;
            let result = store
                .conn
                .query_row("SELECT COUNT(*) FROM meta", [], |r| r.get::<_, i64>(0))
                .and_then(|_| {
                    store.conn.execute(
                        "INSERT OR REPLACE INTO meta (key, value) VALUES ('k', 'v')",
                        [],
                    )
                });
            let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
            store.conn.execute_batch(end)?;
            result.map(drop)
        };
        let hold_the_write_lock = |ready: std::sync::mpsc::Sender<()>| {
            let path = path.clone();
            std::thread::spawn(move || {
                let other = Connection::open(&path).unwrap();
                other.execute_batch("BEGIN IMMEDIATE").unwrap();
                ready.send(()).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(300));
                other.execute_batch("COMMIT").unwrap();
            })
        };

        // Deferred: the snapshot is read before the lock is free, so the upgrade is refused.
        let (ready, wait) = std::sync::mpsc::channel();
        let holder = hold_the_write_lock(ready);
        wait.recv().unwrap();
        let err = batch("BEGIN").unwrap_err();
        assert!(err.to_string().contains("locked"), "{err}");
        holder.join().unwrap();

        let (ready, wait) = std::sync::mpsc::channel();
        let holder = hold_the_write_lock(ready);
        wait.recv().unwrap();
        batch(BEGIN_BATCH).expect("waits for the lock, then commits");
        holder.join().unwrap();
    }

    /// A store from before message ids dropped AUTOINCREMENT keeps every message, its
    /// indexes, and the counter's high mark: the next id follows the largest ever given,
    /// even when that message is gone.
    #[test]
    fn migrating_message_ids_off_autoincrement_keeps_them_unique() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        let before = MIGRATIONS.len() - 1;
        {
            let conn = Connection::open(&path).unwrap();
            for sql in &MIGRATIONS[..before] {
                conn.execute_batch(sql).unwrap();
            }
            conn.pragma_update(None, "user_version", before as i64)
                .unwrap();
            for text in ["kept", "acked", "gone"] {
                conn.execute(
                    "INSERT INTO messages (recipient, kind, text, from_kind, from_name, created_at, role_repo)
                     VALUES ('a', 'steer', ?1, 'cli', 'cli', 1, 'repo')",
                    [text],
                )
                .unwrap();
            }
            conn.execute("UPDATE messages SET acked_at = 2 WHERE text = 'acked'", [])
                .unwrap();
            conn.execute("DELETE FROM messages WHERE text = 'gone'", [])
                .unwrap();
        }
        let store = Store::open(&path, Durability::Normal).unwrap();
        let rows: Vec<(i64, String, Option<i64>, Option<String>)> = store
            .conn
            .prepare("SELECT id, text, acked_at, role_repo FROM messages ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let repo = Some("repo".to_string());
        assert_eq!(
            rows,
            [
                (1, "kept".into(), None, repo.clone()),
                (2, "acked".into(), Some(2), repo)
            ]
        );
        assert_eq!(
            store.unread.count(&"a".into()),
            1,
            "the unread one, read on open"
        );
        let from = crate::protocol::Sender {
            kind: crate::protocol::ClientKind::Cli,
            session_id: None,
            name: "cli".into(),
        };
        let next = messages::insert(
            &store.conn,
            &store.unread,
            messages::NewMessage::plain(
                &"a".into(),
                crate::protocol::DeliveryKind::Steer,
                "new",
                &from,
            ),
        )
        .unwrap();
        assert_eq!(next.id.get(), 4, "id 3 was given before, and never again");
        let indexes: Vec<String> = store
            .conn
            .prepare("SELECT name FROM sqlite_master WHERE tbl_name = 'messages' AND type = 'index' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(indexes, ["messages_ask", "messages_role"]);
    }

    #[test]
    fn reopening_keeps_identity_and_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let first = Store::open(&path, Durability::Normal).unwrap().store_id;
        let second = Store::open(&path, Durability::Full).unwrap().store_id;
        assert_eq!(first, second);
        assert_eq!(first.len(), 16);
    }

    #[test]
    fn newer_schema_is_refused_with_a_hint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        drop(Store::open(&path, Durability::Normal).unwrap());
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        drop(conn);
        let err = Store::open(&path, Durability::Normal).err().unwrap();
        assert!(err.to_string().contains("upgrade shepherd"), "{err}");
    }
}
