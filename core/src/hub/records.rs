//! Session records read once: the hot paths (the sender check of every role-limited
//! request, `message_peer`'s target, a steer's target) need a session's stored record
//! for each message, and reading its 22 columns from SQLite was a tenth of the core's CPU
//! per round trip. The hub keeps the records it read until the `sessions` table changes.
//!
//! SQLite itself says when: an update hook on the hub's connection (the only one that
//! writes) counts every insert, update and delete of a `sessions` row. A count that moved
//! empties the cache. Within a batch that wrote `sessions`, the cache is not used at all
//! (neither read nor filled): what such a batch reads may still be rolled back (a failed
//! request's savepoint, a failed commit), and a savepoint's rollback calls no hook. The next
//! batch starts from what was committed, with an empty cache.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rusqlite::Connection;
use rusqlite::hooks::Action;

use crate::protocol::{SessionId, SessionInfo};
use crate::store;

/// Most records kept: far above the sessions a herd runs at once; past it the cache starts
/// over (a rare read of every record again, never a wrong one).
const MOST: usize = 4096;

/// What the update hook tells the hub.
#[derive(Default)]
struct Changes {
    /// Changes to `sessions` rows since the connection opened.
    count: AtomicU64,
    /// A `sessions` row changed in the current batch.
    in_batch: AtomicBool,
}

/// Cached records by session id (ids are the clients': a seeded hash).
type ById = HashMap<SessionId, Arc<SessionInfo>, foldhash::fast::RandomState>;

/// The hub's cache of stored session records (without their counts).
pub(super) struct Records {
    changes: Arc<Changes>,
    /// The records, valid while `changes.count` is still `seen`.
    cache: RefCell<(u64, ById)>,
}

impl Records {
    /// Watch `db` (the hub's writing connection) for changes to `sessions`.
    pub(super) fn watch(db: &Connection) -> Records {
        let changes = Arc::new(Changes::default());
        let hook = changes.clone();
        db.update_hook(Some(move |_: Action, _db: &str, table: &str, _row: i64| {
            if table == "sessions" {
                hook.count.fetch_add(1, Ordering::Release);
                hook.in_batch.store(true, Ordering::Release);
            }
        }));
        Records {
            changes,
            cache: RefCell::default(),
        }
    }

    /// A batch begins: what was committed is what the cache may hold.
    pub(super) fn batch_begins(&self) {
        self.changes.in_batch.store(false, Ordering::Release);
    }

    /// The record of session `id` as [`store::sessions::get_uncounted`] reads it (shared
    /// with the cache: `connected` is false, the hub knows who is connected).
    pub(super) fn get(
        &self,
        db: &Connection,
        id: &SessionId,
    ) -> rusqlite::Result<Option<Arc<SessionInfo>>> {
        if self.changes.in_batch.load(Ordering::Acquire) {
            return Ok(store::sessions::get_uncounted(db, id)?.map(Arc::new));
        }
        let count = self.changes.count.load(Ordering::Acquire);
        let mut cache = self.cache.borrow_mut();
        if cache.0 != count || cache.1.len() >= MOST {
            cache.0 = count;
            cache.1.clear();
        }
        if let Some(info) = cache.1.get(id) {
            return Ok(Some(info.clone()));
        }
        let info = store::sessions::get_uncounted(db, id)?.map(Arc::new);
        if let Some(info) = &info {
            cache.1.insert(id.clone(), info.clone());
        }
        Ok(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Role;

    fn add(db: &Connection, id: &str, role: &str) {
        db.execute(
            "INSERT INTO sessions (id, name, cwd, status, role, first_seen, last_seen)
             VALUES (?1, ?1, '/tmp', 'idle', ?2, 1, 1)",
            [id, role],
        )
        .unwrap();
    }

    /// A store watched from its start, holding Lead `a`, in a new batch.
    fn watched() -> (store::Store, Records) {
        let store = store::memory();
        let records = Records::watch(&store.conn);
        add(&store.conn, "a", "lead");
        records.batch_begins();
        (store, records)
    }

    fn role(records: &Records, db: &Connection, id: &str) -> Option<Role> {
        records
            .get(db, &SessionId::from(id))
            .unwrap()
            .map(|s| s.role)
    }

    /// A change to any record is seen at once, in the batch that made it and after it.
    #[test]
    fn a_changed_record_is_read_again() {
        let (store, records) = watched();
        let db = &store.conn;
        assert_eq!(role(&records, db, "a"), Some(Role::Lead));
        db.execute("UPDATE sessions SET role = 'manager' WHERE id = 'a'", [])
            .unwrap();
        assert_eq!(role(&records, db, "a"), Some(Role::Manager));
        records.batch_begins();
        assert_eq!(role(&records, db, "a"), Some(Role::Manager));
        db.execute("DELETE FROM sessions WHERE id = 'a'", [])
            .unwrap();
        assert_eq!(role(&records, db, "a"), None);
    }

    /// What a batch read after it wrote `sessions` is never kept: a savepoint's rollback
    /// (a failed request) calls no hook.
    #[test]
    fn a_rolled_back_change_is_never_served() {
        let (store, records) = watched();
        let db = &store.conn;
        db.execute_batch("BEGIN; SAVEPOINT request").unwrap();
        db.execute("UPDATE sessions SET role = 'chief' WHERE id = 'a'", [])
            .unwrap();
        assert_eq!(role(&records, db, "a"), Some(Role::Chief));
        db.execute_batch("ROLLBACK TO request; RELEASE request; COMMIT")
            .unwrap();
        assert_eq!(role(&records, db, "a"), Some(Role::Lead));
        records.batch_begins();
        assert_eq!(role(&records, db, "a"), Some(Role::Lead));
    }

    /// Unchanged, a record is read from the store once.
    #[test]
    fn an_unchanged_record_is_read_once() {
        let (store, records) = watched();
        let db = &store.conn;
        assert_eq!(role(&records, db, "a"), Some(Role::Lead));
        // Behind SQLite's back (no hook sees a change on another connection's file, and
        // none other writes): the cached record is served.
        db.update_hook(None::<fn(Action, &str, &str, i64)>);
        db.execute("UPDATE sessions SET role = 'chief' WHERE id = 'a'", [])
            .unwrap();
        assert_eq!(role(&records, db, "a"), Some(Role::Lead));
    }
}
