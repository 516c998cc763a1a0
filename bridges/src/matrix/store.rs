//! The Matrix bridge's own durable state, in `<state dir>/matrix/bridge.db`: the room the
//! bot created (when none is configured), the thread of each Pi session (its root event),
//! which bot events are cards of which ask (so a reaction or reply on an old card still
//! answers it, and every card is edited when the ask is answered), which bot events are
//! about which session (a reply to one steers it), which bot events say that typed text
//! answered an ask (a ↩️ on one takes the answer back), and (in `meta`, as
//! `last_report:<core store>:<room>`) the last report posted in the room, so a restart posts
//! what it missed and nothing twice. matrix-sdk keeps everything else
//! (sync token, room state, crypto) in its own SQLite store beside this file.

use crate::chat::approvals::ApprovalRef;
use crate::local_db::approval_ref;
use shepherd_core::protocol::AskRef;
use std::path::Path;

use crate::local_db::{ask_ref, host_column};

use rusqlite::{Connection, OptionalExtension, params};

/// One card: a bot event showing an ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    pub event_id: String,
    /// The ask: `17`, or `gpu:17` on a linked host.
    pub ask: AskRef,
    pub session_id: String,
    /// The root of the thread the card is in (its own id when it started the thread).
    pub thread_root: String,
    pub answered: bool,
}

/// The bridge's tables.
pub struct MatrixStore {
    conn: Connection,
}

/// Append-only migrations, counted in `user_version` (see [`crate::local_db`]): never
/// edit one, add the next. The first is the schema from before versions were counted,
/// verbatim (`IF NOT EXISTS`), so such a file is adopted as version 1.
const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS threads (
    session_id TEXT NOT NULL, room_id TEXT NOT NULL, root_event_id TEXT NOT NULL,
    PRIMARY KEY (session_id, room_id));
CREATE INDEX IF NOT EXISTS threads_root ON threads(root_event_id);
CREATE TABLE IF NOT EXISTS cards (
    event_id TEXT PRIMARY KEY, ask_id INTEGER NOT NULL, session_id TEXT NOT NULL,
    thread_root TEXT NOT NULL, answered INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS cards_ask ON cards(ask_id);
CREATE INDEX IF NOT EXISTS cards_thread ON cards(thread_root, answered);
CREATE TABLE IF NOT EXISTS about (event_id TEXT PRIMARY KEY, session_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS undo_offers (event_id TEXT PRIMARY KEY, ask_id INTEGER NOT NULL);
",
    "
ALTER TABLE cards ADD COLUMN host TEXT NOT NULL DEFAULT '';
DROP INDEX cards_ask;
CREATE INDEX cards_ask ON cards(ask_id, host);
ALTER TABLE undo_offers ADD COLUMN host TEXT NOT NULL DEFAULT '';
",
    "
CREATE TABLE approval_cards (
    event_id TEXT PRIMARY KEY, approval_id INTEGER NOT NULL,
    host TEXT NOT NULL DEFAULT '', closed INTEGER NOT NULL DEFAULT 0);
CREATE INDEX approval_cards_approval ON approval_cards(approval_id, host);
",
    "
CREATE TABLE peeks (event_id TEXT PRIMARY KEY, target TEXT NOT NULL);
ALTER TABLE threads ADD COLUMN ended INTEGER NOT NULL DEFAULT 0;
",
];

/// Peeks remembered for their 🔄 refresh (the newest).
const PEEKS_KEPT: i64 = 200;

impl MatrixStore {
    /// Open (creating it 0600, migrating it) the store at `path`; see [`crate::local_db`].
    pub fn open(path: &Path) -> Result<MatrixStore, crate::local_db::OpenError> {
        let conn = crate::local_db::open(path, MIGRATIONS)?;
        Ok(MatrixStore { conn })
    }

    /// Bot event `event_id` is the card of held tool call `approval`.
    pub fn add_approval_card(
        &self,
        event_id: &str,
        approval: &ApprovalRef,
    ) -> rusqlite::Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO approval_cards (event_id, approval_id, host) VALUES (?1, ?2, ?3)",
            params![event_id, approval.id, approval.host.as_deref().unwrap_or("")],
        )?;
        Ok(())
    }

    /// Bot event `event_id` is a peek of `target` (`gpu:<session id>` or `<session id>`);
    /// only the newest [`PEEKS_KEPT`] are kept.
    pub fn add_peek(&self, event_id: &str, target: &str) -> rusqlite::Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO peeks (event_id, target) VALUES (?1, ?2)",
            params![event_id, target],
        )?;
        self.conn.execute(
            "DELETE FROM peeks WHERE rowid <= (SELECT MAX(rowid) FROM peeks) - ?1",
            [PEEKS_KEPT],
        )?;
        Ok(())
    }

    /// What the peek a bot event shows is of.
    pub fn peek_at(&self, event_id: &str) -> rusqlite::Result<Option<String>> {
        self.conn
            .query_row(
                "SELECT target FROM peeks WHERE event_id = ?1",
                [event_id],
                |r| r.get(0),
            )
            .optional()
    }

    /// The open cards (event ids) of an approval.
    pub fn approval_cards_of(&self, approval: &ApprovalRef) -> rusqlite::Result<Vec<String>> {
        let mut stmt = self.conn.prepare(
            "SELECT event_id FROM approval_cards WHERE approval_id = ?1 AND host = ?2 AND closed = 0",
        )?;
        let host = approval.host.as_deref().unwrap_or("");
        stmt.query_map(params![approval.id, host], |r| r.get(0))?
            .collect()
    }

    /// The approval a bot event is the card of.
    pub fn approval_at(&self, event_id: &str) -> rusqlite::Result<Option<ApprovalRef>> {
        self.conn
            .query_row(
                "SELECT approval_id, host FROM approval_cards WHERE event_id = ?1",
                [event_id],
                approval_ref,
            )
            .optional()
    }

    /// The approvals whose cards still show them pending.
    pub fn open_approvals(&self) -> rusqlite::Result<Vec<ApprovalRef>> {
        let mut stmt = self
            .conn
            .prepare("SELECT DISTINCT approval_id, host FROM approval_cards WHERE closed = 0")?;
        stmt.query_map([], approval_ref)?.collect()
    }

    pub fn close_approval_card(&self, event_id: &str) -> rusqlite::Result<()> {
        self.conn.execute(
            "UPDATE approval_cards SET closed = 1 WHERE event_id = ?1",
            [event_id],
        )?;
        Ok(())
    }

    /// A value from the `meta` table (`room_id` of the room the bot created).
    pub fn meta(&self, key: &str) -> rusqlite::Result<Option<String>> {
        crate::local_db::meta(&self.conn, key)
    }

    pub fn set_meta(&self, key: &str, value: &str) -> rusqlite::Result<()> {
        crate::local_db::set_meta(&self.conn, key, value)
    }

    /// The root event of a session's thread in a room.
    pub fn thread(&self, session_id: &str, room_id: &str) -> rusqlite::Result<Option<String>> {
        self.conn
            .prepare_cached(
                "SELECT root_event_id FROM threads WHERE session_id = ?1 AND room_id = ?2",
            )?
            .query_row(params![session_id, room_id], |r| r.get(0))
            .optional()
    }

    pub fn set_thread(&self, session_id: &str, room_id: &str, root: &str) -> rusqlite::Result<()> {
        self.conn.execute(
            "INSERT INTO threads (session_id, room_id, root_event_id) VALUES (?1, ?2, ?3)
             ON CONFLICT (session_id, room_id) DO UPDATE SET root_event_id = ?3",
            params![session_id, room_id, root],
        )?;
        Ok(())
    }

    /// Mark `session_id`'s thread in `room_id` ended (its session ended) or open again.
    /// True when that changed something.
    pub fn set_thread_ended(
        &self,
        session_id: &str,
        room_id: &str,
        ended: bool,
    ) -> rusqlite::Result<bool> {
        let changed = self.conn.execute(
            "UPDATE threads SET ended = ?3 WHERE session_id = ?1 AND room_id = ?2 AND ended != ?3",
            params![session_id, room_id, ended],
        )?;
        Ok(changed > 0)
    }

    /// The sessions whose thread in `room_id` is open (not ended).
    pub fn open_threads(&self, room_id: &str) -> rusqlite::Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare("SELECT session_id FROM threads WHERE room_id = ?1 AND ended = 0")?;
        stmt.query_map([room_id], |r| r.get(0))?.collect()
    }

    /// The session whose thread starts at `root`.
    pub fn session_of_thread(&self, root: &str) -> rusqlite::Result<Option<String>> {
        self.conn
            .prepare_cached("SELECT session_id FROM threads WHERE root_event_id = ?1")?
            .query_row([root], |r| r.get(0))
            .optional()
    }

    pub fn add_card(&self, card: &Card) -> rusqlite::Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO cards (event_id, ask_id, host, session_id, thread_root, answered)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                card.event_id,
                card.ask.id,
                host_column(&card.ask),
                card.session_id,
                card.thread_root,
                card.answered
            ],
        )?;
        Ok(())
    }

    /// Every card of an ask.
    pub fn cards_of(&self, ask: &AskRef) -> rusqlite::Result<Vec<Card>> {
        let host = host_column(ask);
        self.conn
            .prepare_cached(&format!("{CARD_COLUMNS} WHERE ask_id = ?1 AND host = ?2"))?
            .query_map(params![ask.id, host], card_row)?
            .collect()
    }

    /// The card an event is, if it is one.
    pub fn card_at(&self, event_id: &str) -> rusqlite::Result<Option<Card>> {
        self.conn
            .prepare_cached(&format!("{CARD_COLUMNS} WHERE event_id = ?1"))?
            .query_row([event_id], card_row)
            .optional()
    }

    /// The newest card not yet answered in a thread.
    pub fn open_card_in_thread(&self, root: &str) -> rusqlite::Result<Option<Card>> {
        self.conn
            .prepare_cached(&format!(
                "{CARD_COLUMNS} WHERE thread_root = ?1 AND answered = 0 ORDER BY rowid DESC LIMIT 1"
            ))?
            .query_row([root], card_row)
            .optional()
    }

    /// Cards not yet shown as answered.
    pub fn open_cards(&self) -> rusqlite::Result<Vec<Card>> {
        self.conn
            .prepare_cached(&format!("{CARD_COLUMNS} WHERE answered = 0"))?
            .query_map([], card_row)?
            .collect()
    }

    pub fn mark_answered(&self, event_id: &str) -> rusqlite::Result<()> {
        self.conn.execute(
            "UPDATE cards SET answered = 1 WHERE event_id = ?1",
            [event_id],
        )?;
        Ok(())
    }

    /// Remember that a bot event is about a session.
    pub fn set_about(&self, event_id: &str, session_id: &str) -> rusqlite::Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO about (event_id, session_id) VALUES (?1, ?2)",
            params![event_id, session_id],
        )?;
        Ok(())
    }

    /// Remember that a bot event offers to take ask `ask`'s typed answer back.
    pub fn set_undo_offer(&self, event_id: &str, ask: &AskRef) -> rusqlite::Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO undo_offers (event_id, ask_id, host) VALUES (?1, ?2, ?3)",
            params![event_id, ask.id, host_column(ask)],
        )?;
        Ok(())
    }

    /// The ask whose typed answer a bot event offers to take back.
    pub fn undo_offer(&self, event_id: &str) -> rusqlite::Result<Option<AskRef>> {
        self.conn
            .prepare_cached("SELECT ask_id, host FROM undo_offers WHERE event_id = ?1")?
            .query_row([event_id], |r| ask_ref(r, 0, 1))
            .optional()
    }

    /// The session a bot event is about.
    pub fn about(&self, event_id: &str) -> rusqlite::Result<Option<String>> {
        self.conn
            .prepare_cached("SELECT session_id FROM about WHERE event_id = ?1")?
            .query_row([event_id], |r| r.get(0))
            .optional()
    }
}

const CARD_COLUMNS: &str =
    "SELECT event_id, ask_id, host, session_id, thread_root, answered FROM cards";

fn card_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Card> {
    Ok(Card {
        event_id: r.get(0)?,
        ask: ask_ref(r, 1, 2)?,
        session_id: r.get(3)?,
        thread_root: r.get(4)?,
        answered: r.get(5)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(event: &str, ask: u64, root: &str) -> Card {
        Card {
            event_id: event.into(),
            ask: AskRef::here(ask.into()),
            session_id: "s1".into(),
            thread_root: root.into(),
            answered: false,
        }
    }

    #[test]
    fn state_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bridge.db");
        let store = MatrixStore::open(&path).unwrap();
        assert_eq!(store.meta("room_id").unwrap(), None);
        store.set_meta("room_id", "!r:hs").unwrap();
        store.set_thread("s1", "!r:hs", "$root").unwrap();
        store.add_card(&card("$root", 7, "$root")).unwrap();
        store.add_card(&card("$c2", 8, "$root")).unwrap();
        store.set_about("$report", "s1").unwrap();
        drop(store);

        let store = MatrixStore::open(&path).unwrap();
        assert_eq!(store.meta("room_id").unwrap().as_deref(), Some("!r:hs"));
        assert_eq!(
            store.thread("s1", "!r:hs").unwrap().as_deref(),
            Some("$root")
        );
        assert_eq!(store.thread("s1", "!other:hs").unwrap(), None);
        assert_eq!(
            store.session_of_thread("$root").unwrap().as_deref(),
            Some("s1")
        );
        assert_eq!(
            store.card_at("$root").unwrap(),
            Some(card("$root", 7, "$root"))
        );
        assert_eq!(
            store.cards_of(&AskRef::here(8.into())).unwrap(),
            vec![card("$c2", 8, "$root")]
        );
        assert_eq!(store.about("$report").unwrap().as_deref(), Some("s1"));
        store
            .set_undo_offer("$said", &AskRef::here(7.into()))
            .unwrap();
        assert_eq!(
            store.undo_offer("$said").unwrap(),
            Some(AskRef::here(7.into()))
        );
        let far: AskRef = "gpu:7".parse().unwrap();
        store.set_undo_offer("$far", &far).unwrap();
        assert_eq!(store.undo_offer("$far").unwrap(), Some(far.clone()));
        // A linked host's ask 7 is another ask, with cards of its own.
        let far_card = Card {
            ask: far.clone(),
            ..card("$far-card", 7, "$far-root")
        };
        store.add_card(&far_card).unwrap();
        assert_eq!(store.cards_of(&far).unwrap(), vec![far_card]);
        store.mark_answered("$far-card").unwrap();
        assert_eq!(store.undo_offer("$report").unwrap(), None);
        // The newest open card of a thread is the one a plain thread message answers.
        assert_eq!(
            store.open_card_in_thread("$root").unwrap().unwrap().ask,
            AskRef::here(8.into())
        );
        store.mark_answered("$c2").unwrap();
        assert_eq!(
            store.open_card_in_thread("$root").unwrap().unwrap().ask,
            AskRef::here(7.into())
        );
        store.mark_answered("$root").unwrap();
        assert_eq!(store.open_card_in_thread("$root").unwrap(), None);
        assert!(store.open_cards().unwrap().is_empty());
    }

    #[test]
    fn a_file_from_before_versions_keeps_its_state_and_a_newer_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bridge.db");
        // What a bridge from before versions were counted left: its tables, version 0.
        let old = Connection::open(&path).unwrap();
        old.execute_batch(MIGRATIONS[0]).unwrap();
        old.execute_batch(
            "INSERT INTO meta (key, value) VALUES ('room_id', '!r:hs');
             INSERT INTO threads VALUES ('s1', '!r:hs', '$root');",
        )
        .unwrap();
        drop(old);
        let store = MatrixStore::open(&path).unwrap();
        assert_eq!(store.meta("room_id").unwrap().as_deref(), Some("!r:hs"));
        assert_eq!(
            store.thread("s1", "!r:hs").unwrap().as_deref(),
            Some("$root")
        );
        let version: i64 = store
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len() as i64);

        // A newer shepherd's file is not used.
        store
            .conn
            .pragma_update(None, "user_version", MIGRATIONS.len() as i64 + 1)
            .unwrap();
        drop(store);
        let err = MatrixStore::open(&path).err().unwrap().to_string();
        assert!(err.contains("bridge.db"), "{err}");
        assert!(err.contains("upgrade shepherd"), "{err}");
    }
}
