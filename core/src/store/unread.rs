//! Which mail is unread: an index in the writer's memory, not in the database. A partial
//! index in SQLite (`messages_pending`, dropped by schema 15) cost a page of WAL for
//! every message stored and every acknowledgement, half the pages a commit wrote; the
//! hub's connection is the only writer, so it keeps each session's unread ids itself.
//! They are read from the mailbox when the store opens, and the functions of `messages`
//! (and the few others that remove or readdress mail) change them as they change rows.
//!
//! **Rollbacks.** A savepoint rolled back, a statement that failed half-way or a failed
//! commit undoes rows whose ids the index already changed. Every change is journaled
//! until its batch commits; when something was undone, [`Unread::settle`] reads the
//! journaled ids again from the database and sets the index to what is there. Reads check
//! each row as they load it ([`super::messages::pending_after`]: an id whose row is gone,
//! read or readdressed is skipped and dropped), so the index may hold an id too many for
//! a while, never lack one: nothing unread is ever skipped.
//!
//! **Ids.** The index also gives new mail its id, one past the largest there is and the
//! largest ever removed (`messages_high`), read on open: an insert reads neither. An id
//! given to mail whose batch rolled back is skipped for the rest of the run and may be
//! given again after a restart: no frame ever carried it.
//!
//! **Start.** The ids below `meta.unread_floor` are all read (no path makes mail unread
//! again, and new ids are larger): the scan on open starts there. The hub writes the floor
//! as it stops ([`keep_floor`]); after a kill an older floor is still true, only the scan
//! is longer.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap};

use rusqlite::{Connection, OptionalExtension, params};
use rustc_hash::FxHashMap;

use crate::protocol::SessionId;

/// Each session's unread mail ids (see the module comment).
pub struct Unread {
    index: RefCell<Index>,
    /// The id the next message gets.
    next: Cell<u64>,
}

#[derive(Default)]
struct Index {
    /// Session ids are the clients' (a seeded hash); message ids the core's (a fast one).
    by_session: HashMap<SessionId, BTreeSet<u64>, foldhash::fast::RandomState>,
    /// The mailbox each unread id is in.
    holder: FxHashMap<u64, SessionId>,
    /// Ids changed since the batch began, with the mailbox an id was taken from (`None`
    /// for one added): what [`Unread::settle`] reads again.
    journal: Vec<(u64, Option<SessionId>)>,
    /// How many of `by_session`'s sets are empty: a mailbox read to its end keeps its set
    /// for its next mail (no allocation per message), until empty sets are most of them.
    empty: usize,
}

/// Empty mailboxes kept at most (beyond half of all): past it they are swept out.
const KEEP_EMPTY: usize = 1024;

impl Index {
    /// Put `id` in `session`'s mailbox (out of another it was in).
    fn add(&mut self, session: &SessionId, id: u64) {
        if self.holder.get(&id) != Some(session) {
            self.remove(id);
            self.holder.insert(id, session.clone());
        }
        match self.by_session.get_mut(session) {
            Some(ids) => {
                if ids.is_empty() {
                    self.empty -= 1;
                }
                ids.insert(id);
            }
            None => {
                self.by_session
                    .insert(session.clone(), BTreeSet::from([id]));
            }
        }
    }

    /// Take `id` out; the mailbox it was in.
    fn remove(&mut self, id: u64) -> Option<SessionId> {
        let session = self.holder.remove(&id)?;
        if let Some(ids) = self.by_session.get_mut(&session)
            && ids.remove(&id)
            && ids.is_empty()
        {
            self.empty += 1;
            if self.empty > KEEP_EMPTY && self.empty > self.by_session.len() / 2 {
                self.by_session.retain(|_, ids| !ids.is_empty());
                self.empty = 0;
            }
        }
        Some(session)
    }
}

impl Unread {
    /// Read the unread ids of the mailbox at `conn` (from the floor kept in `meta`).
    pub fn load(conn: &Connection) -> rusqlite::Result<Unread> {
        let floor = floor(conn)?;
        let mut index = Index::default();
        let mut stmt =
            conn.prepare("SELECT recipient, id FROM messages WHERE id >= ?1 AND acked_at IS NULL")?;
        let rows = stmt.query_map([floor as i64], |r| {
            Ok((r.get::<_, SessionId>(0)?, r.get::<_, i64>(1)?))
        })?;
        for row in rows {
            let (session, id) = row?;
            index.add(&session, id as u64);
        }
        let next: i64 = conn.query_row(
            "SELECT max((SELECT coalesce(max(id), 0) FROM messages),
                (SELECT coalesce(max(CAST(value AS INTEGER)), 0) FROM meta
                 WHERE key = 'messages_high')) + 1",
            [],
            |r| r.get(0),
        )?;
        Ok(Unread {
            index: RefCell::new(index),
            next: Cell::new(next as u64),
        })
    }

    /// The id for the next message stored.
    pub(super) fn next_id(&self) -> u64 {
        let id = self.next.get();
        self.next.set(id + 1);
        id
    }

    /// How many messages wait unread for `session`.
    pub fn count(&self, session: &SessionId) -> u64 {
        self.index
            .borrow()
            .by_session
            .get(session)
            .map_or(0, |ids| ids.len() as u64)
    }

    /// Every session with unread mail, with how much.
    pub fn counts(&self) -> HashMap<SessionId, u64> {
        let index = self.index.borrow();
        index
            .by_session
            .iter()
            .filter(|(_, ids)| !ids.is_empty())
            .map(|(session, ids)| (session.clone(), ids.len() as u64))
            .collect()
    }

    /// Up to `limit` of `session`'s unread ids above `after`, in order.
    pub fn ids_after(&self, session: &SessionId, after: u64, limit: usize) -> Vec<u64> {
        let index = self.index.borrow();
        let Some(ids) = index.by_session.get(session) else {
            return Vec::new();
        };
        ids.range(after.saturating_add(1)..)
            .take(limit)
            .copied()
            .collect()
    }

    /// The smallest unread id, if any.
    fn first(&self) -> Option<u64> {
        self.index.borrow().holder.keys().min().copied()
    }

    /// `id` is unread mail for `session` now.
    pub(super) fn add(&self, session: &SessionId, id: u64) {
        let mut index = self.index.borrow_mut();
        index.add(session, id);
        index.journal.push((id, None));
    }

    /// `id` is read, removed or not there.
    pub(super) fn remove(&self, id: u64) {
        let mut index = self.index.borrow_mut();
        if let Some(session) = index.remove(id) {
            index.journal.push((id, Some(session)));
        }
    }

    /// Where the journal stands: [`Unread::settle`] from here re-reads what changed after.
    pub fn mark(&self) -> usize {
        self.index.borrow().journal.len()
    }

    /// The ids changed since `mark` may have been undone: set them to what the database
    /// says. An id the database cannot be asked about stays (or is put back) where it
    /// was: reads check it, so keeping one too many loses nothing.
    pub fn settle(&self, conn: &Connection, mark: usize) {
        let changed: Vec<(u64, Option<SessionId>)> = {
            let index = self.index.borrow();
            index.journal.get(mark..).unwrap_or_default().to_vec()
        };
        let mut done = std::collections::HashSet::new();
        for (id, last) in changed.into_iter().rev() {
            if !done.insert(id) {
                continue;
            }
            let now = conn
                .prepare_cached("SELECT recipient FROM messages WHERE id = ?1 AND acked_at IS NULL")
                .and_then(|mut s| {
                    s.query_row([id as i64], |r| r.get::<_, SessionId>(0))
                        .optional()
                });
            let mut index = self.index.borrow_mut();
            match now {
                Ok(Some(session)) => index.add(&session, id),
                Ok(None) => {
                    index.remove(id);
                }
                Err(e) => {
                    tracing::warn!(id, error = %e, "cannot read a message back after a rollback; it stays unread until read");
                    if let Some(last) = last
                        && !index.holder.contains_key(&id)
                    {
                        index.add(&last, id);
                    }
                }
            }
        }
    }

    /// The batch committed: what it changed is final.
    pub fn committed(&self) {
        self.index.borrow_mut().journal.clear();
    }

    /// The batch did not commit (or did not begin, and its commands wrote statement by
    /// statement): every id it changed is read back from what is there now, and the
    /// journal starts over.
    pub fn batch_failed(&self, conn: &Connection) {
        self.settle(conn, 0);
        self.committed();
    }
}

/// The floor kept in `meta` (0: scan everything).
fn floor(conn: &Connection) -> rusqlite::Result<u64> {
    let value: Option<String> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'unread_floor'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    Ok(value.and_then(|v| v.parse().ok()).unwrap_or(0))
}

/// Keep the smallest unread id (or the next id if nothing is unread) as the floor the next
/// open scans from. Written in the hub's last batch.
pub fn keep_floor(conn: &Connection, unread: &Unread) -> rusqlite::Result<()> {
    let floor = match unread.first() {
        Some(id) => id,
        None => conn.query_row("SELECT coalesce(max(id), 0) + 1 FROM messages", [], |r| {
            r.get::<_, i64>(0)
        })? as u64,
    };
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('unread_floor', ?1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        params![floor.to_string()],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashMap};

    use super::*;
    use crate::protocol::{ClientKind, DeliveryKind, MessageId, Sender};
    use crate::store::messages::{self, NewMessage};
    use crate::store::projects;

    type Mailboxes = HashMap<SessionId, BTreeSet<u64>>;

    /// The sender of the tests' mail.
    fn cli() -> Sender {
        Sender {
            kind: ClientKind::Cli,
            session_id: None,
            name: "cli".into(),
        }
    }

    /// What the database says is unread.
    fn truth(conn: &Connection) -> Mailboxes {
        let mut all = Mailboxes::new();
        let mut stmt = conn
            .prepare("SELECT recipient, id FROM messages WHERE acked_at IS NULL")
            .unwrap();
        for row in stmt
            .query_map([], |r| Ok((r.get::<_, SessionId>(0)?, r.get::<_, i64>(1)?)))
            .unwrap()
        {
            let (session, id) = row.unwrap();
            all.entry(session).or_default().insert(id as u64);
        }
        all
    }

    fn index(unread: &Unread) -> Mailboxes {
        let index = unread.index.borrow();
        let empty = index
            .by_session
            .values()
            .filter(|ids| ids.is_empty())
            .count();
        assert_eq!(empty, index.empty, "the count of empty mailboxes");
        index
            .by_session
            .iter()
            .filter(|(_, ids)| !ids.is_empty())
            .map(|(s, ids)| (s.clone(), ids.clone()))
            .collect()
    }

    /// Random mailbox work (mail, acks, retractions, dropped mailboxes, readdressed role
    /// mail), some of it in savepoints rolled back and in transactions rolled back whole,
    /// each followed by what the hub does (`settle` from the mark, `committed`): the index
    /// is always exactly what the database says, and what a fresh open reads.
    #[test]
    fn the_index_is_what_the_mailbox_says_through_rollbacks() {
        let store = crate::store::memory();
        let (db, unread) = (&store.conn, &store.unread);
        let from = cli();
        let sessions: Vec<SessionId> = ["a", "b", "c", "manager-role:r"]
            .into_iter()
            .map(SessionId::from)
            .collect();
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let (mut undone, mut rounds) = (0, 0);
        while rounds < 400 {
            rounds += 1;
            db.execute_batch("BEGIN").unwrap();
            for _ in 0..1 + next(4) {
                let mark = unread.mark();
                db.execute_batch("SAVEPOINT request").unwrap();
                for _ in 0..1 + next(3) {
                    let who = &sessions[next(sessions.len() as u64) as usize];
                    let ids = unread.ids_after(who, 0, usize::MAX);
                    let some = |k: u64| ids.get((k as usize) % ids.len().max(1)).copied();
                    match next(7) {
                        0..=2 => {
                            let m = messages::insert(
                                db,
                                unread,
                                NewMessage::plain(who, DeliveryKind::Steer, "t", &from),
                            )
                            .unwrap();
                            if who.as_str().starts_with("manager-role:") {
                                projects::tag_mail(db, m.id, None, "r").unwrap();
                            }
                        }
                        3 => {
                            let acked: Vec<MessageId> = ids
                                .iter()
                                .filter(|_| next(2) == 0)
                                .map(|id| MessageId::from(*id))
                                .collect();
                            messages::ack(db, unread, who, &acked, 1).unwrap();
                        }
                        4 => {
                            if let Some(id) = some(next(100)) {
                                messages::retract(db, unread, id).unwrap();
                            }
                        }
                        5 => {
                            if next(4) == 0 {
                                messages::drop_pending(db, unread, who).unwrap();
                            }
                        }
                        _ => {
                            let holder = &sessions[next(3) as usize];
                            projects::readdress_role_mail(db, unread, "r", holder).unwrap();
                        }
                    }
                }
                if next(3) == 0 {
                    db.execute_batch("ROLLBACK TO request; RELEASE request")
                        .unwrap();
                    unread.settle(db, mark);
                    undone += 1;
                } else {
                    db.execute_batch("RELEASE request").unwrap();
                }
                assert_eq!(index(unread), truth(db), "round {rounds}, within its batch");
            }
            if next(5) == 0 {
                db.execute_batch("ROLLBACK").unwrap();
                unread.batch_failed(db);
                undone += 1;
            } else {
                db.execute_batch("COMMIT").unwrap();
                unread.committed();
            }
            assert_eq!(index(unread), truth(db), "round {rounds}");
        }
        assert!(undone > 100, "rollbacks were exercised ({undone})");
        assert!(!truth(db).is_empty(), "mail was left unread");
        assert_eq!(
            index(&Unread::load(db).unwrap()),
            truth(db),
            "what an open reads"
        );
    }

    /// A mailbox read to its end keeps its (empty) set for its next mail, but empty sets
    /// never outnumber the rest past the bound: thousands of sessions each mailed and read
    /// once leave a bounded map.
    #[test]
    fn empty_mailboxes_are_kept_within_a_bound() {
        let mut index = Index::default();
        for n in 0..5_000u64 {
            let session = SessionId::from(format!("s{n}").as_str());
            index.add(&session, n + 1);
            index.remove(n + 1);
        }
        assert!(index.holder.is_empty());
        assert!(
            index.by_session.len() <= 2 * KEEP_EMPTY + 2,
            "{} sets kept",
            index.by_session.len()
        );
        let kept = index
            .by_session
            .values()
            .filter(|ids| ids.is_empty())
            .count();
        assert_eq!(kept, index.empty);
        // A kept set takes mail again.
        let last = SessionId::from("s4999");
        index.add(&last, 9_000);
        assert_eq!(index.by_session[&last].len(), 1);
        assert_eq!(index.empty, kept - 1);
    }

    /// An id the index holds but the database no longer has unread (a rollback it was not
    /// told of) is skipped and dropped by the reads; the rest are delivered in order.
    #[test]
    fn reads_skip_and_drop_an_id_that_is_no_longer_unread() {
        let store = crate::store::memory();
        let (db, unread) = (&store.conn, &store.unread);
        let from = cli();
        let to = SessionId::from("a");
        let put = |text| {
            messages::insert(
                db,
                unread,
                NewMessage::plain(&to, DeliveryKind::Steer, text, &from),
            )
            .unwrap()
            .id
        };
        let (one, two, three) = (put("one"), put("two"), put("three"));
        db.execute(
            "UPDATE messages SET acked_at = 1 WHERE id = ?1",
            [two.get() as i64],
        )
        .unwrap();
        let (batch, more) =
            messages::pending_after(db, unread, &to, MessageId::from(0), 2, usize::MAX).unwrap();
        let ids: Vec<MessageId> = batch.iter().map(|d| d.id).collect();
        assert_eq!(
            ids,
            [one, three],
            "two is skipped, and the chunk still holds two"
        );
        assert!(more, "a full chunk may have more behind it");
        assert_eq!(unread.count(&to), 2, "two is dropped from the index");
    }

    /// The floor: an open scans from the first unread id the last stop kept, and finds
    /// everything unread whether or not a floor was kept since (a kill keeps none).
    #[test]
    fn an_open_reads_from_the_floor_and_misses_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.db");
        let open = || crate::store::Store::open(&path, crate::config::Durability::Normal).unwrap();
        let from = cli();
        let to = SessionId::from("a");
        let store = open();
        let put = |store: &crate::store::Store| {
            messages::insert(
                &store.conn,
                &store.unread,
                NewMessage::plain(&to, DeliveryKind::Steer, "t", &from),
            )
            .unwrap()
            .id
        };
        let ids: Vec<MessageId> = (0..5).map(|_| put(&store)).collect();
        messages::ack(&store.conn, &store.unread, &to, &ids[..3], 1).unwrap();
        keep_floor(&store.conn, &store.unread).unwrap();
        assert_eq!(floor(&store.conn).unwrap(), ids[3].get());
        // Killed after more mail: the kept floor is older, and still true.
        let later = put(&store);
        drop(store);
        let store = open();
        assert_eq!(
            store.unread.ids_after(&to, 0, 10),
            [ids[3].get(), ids[4].get(), later.get()]
        );
        // Everything read: the floor is the next id, and mail after it is found.
        let all: Vec<MessageId> = store
            .unread
            .ids_after(&to, 0, 10)
            .into_iter()
            .map(MessageId::from)
            .collect();
        messages::ack(&store.conn, &store.unread, &to, &all, 2).unwrap();
        keep_floor(&store.conn, &store.unread).unwrap();
        assert_eq!(floor(&store.conn).unwrap(), later.get() + 1);
        let last = put(&store);
        drop(store);
        assert_eq!(open().unread.ids_after(&to, 0, 10), [last.get()]);
    }
}
