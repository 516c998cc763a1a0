//! The Telegram bridge's own durable state, in `<state dir>/telegram.db`: the next
//! `getUpdates` offset (so a restart neither replays nor skips an update), which bot
//! messages are cards of which ask (so buttons on old cards keep working and every card
//! can be edited when the ask is answered), which forum topic belongs to which session,
//! which bot messages are about which session (a reply to one steers it), and the last
//! report posted in each chat (so a restart posts what it missed, and nothing twice).

use crate::chat::approvals::ApprovalRef;
use crate::local_db::approval_ref;
use shepherd_core::protocol::AskRef;
use std::path::Path;

use crate::local_db::{ask_ref, host_column};

use rusqlite::{Connection, OptionalExtension, params};

/// One card: a bot message showing an ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    /// The ask: `17`, or `gpu:17` on a linked host.
    pub ask: AskRef,
    pub chat_id: i64,
    pub message_id: i32,
    pub answered: bool,
}

/// The bridge's tables.
pub struct BridgeStore {
    conn: Connection,
}

/// Append-only migrations, counted in `user_version` (see [`crate::local_db`]): never
/// edit one, add the next. The first is the schema from before versions were counted,
/// verbatim (`IF NOT EXISTS`), so such a file is adopted as version 1.
const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS cards (
    chat_id INTEGER NOT NULL, message_id INTEGER NOT NULL, ask_id INTEGER NOT NULL,
    answered INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (chat_id, message_id));
CREATE INDEX IF NOT EXISTS cards_ask ON cards(ask_id);
CREATE TABLE IF NOT EXISTS topics (
    session_id TEXT PRIMARY KEY, chat_id INTEGER NOT NULL, thread_id INTEGER NOT NULL,
    name TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS about (
    chat_id INTEGER NOT NULL, message_id INTEGER NOT NULL, session_id TEXT NOT NULL,
    PRIMARY KEY (chat_id, message_id));
",
    "
ALTER TABLE cards ADD COLUMN host TEXT NOT NULL DEFAULT '';
DROP INDEX cards_ask;
CREATE INDEX cards_ask ON cards(ask_id, host);
",
    "
CREATE TABLE approval_cards (
    chat_id INTEGER NOT NULL, message_id INTEGER NOT NULL, approval_id INTEGER NOT NULL,
    host TEXT NOT NULL DEFAULT '', closed INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (chat_id, message_id));
CREATE INDEX approval_cards_approval ON approval_cards(approval_id, host);
",
    "
ALTER TABLE topics ADD COLUMN closed INTEGER NOT NULL DEFAULT 0;
",
];

impl BridgeStore {
    /// Open (creating it 0600, migrating it) the store at `path`; see [`crate::local_db`].
    pub fn open(path: &Path) -> Result<BridgeStore, crate::local_db::OpenError> {
        let conn = crate::local_db::open(path, MIGRATIONS)?;
        Ok(BridgeStore { conn })
    }

    /// The offset for the next `getUpdates` (0 before the first update).
    pub fn offset(&self) -> rusqlite::Result<i64> {
        let v: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'offset'", [], |r| {
                r.get(0)
            })
            .optional()?;
        Ok(v.and_then(|v| v.parse().ok()).unwrap_or(0))
    }

    pub fn set_offset(&self, offset: i64) -> rusqlite::Result<()> {
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES ('offset', ?1)
             ON CONFLICT (key) DO UPDATE SET value = ?1",
            [offset.to_string()],
        )?;
        Ok(())
    }

    /// The last report of core store `store` posted in `chat_id` (reports go once per chat).
    pub fn meta(&self, key: &str) -> rusqlite::Result<Option<String>> {
        crate::local_db::meta(&self.conn, key)
    }

    pub fn set_meta(&self, key: &str, value: &str) -> rusqlite::Result<()> {
        crate::local_db::set_meta(&self.conn, key, value)
    }

    pub fn last_report(&self, store: &str, chat_id: i64) -> rusqlite::Result<Option<u64>> {
        let v = self.meta(&format!("last_report:{store}:{chat_id}"))?;
        Ok(v.and_then(|v| v.parse().ok()))
    }

    pub fn set_last_report(&self, store: &str, chat_id: i64, id: u64) -> rusqlite::Result<()> {
        self.set_meta(&format!("last_report:{store}:{chat_id}"), &id.to_string())
    }

    /// Bot message `message_id` is the card of held tool call `approval`.
    pub fn add_approval_card(
        &self,
        chat_id: i64,
        message_id: i32,
        approval: &ApprovalRef,
    ) -> rusqlite::Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO approval_cards (chat_id, message_id, approval_id, host)
             VALUES (?1, ?2, ?3, ?4)",
            params![
                chat_id,
                message_id,
                approval.id,
                approval.host.as_deref().unwrap_or("")
            ],
        )?;
        Ok(())
    }

    /// The open cards of an approval: (chat, message).
    pub fn approval_cards_of(&self, approval: &ApprovalRef) -> rusqlite::Result<Vec<(i64, i32)>> {
        let mut stmt = self.conn.prepare(
            "SELECT chat_id, message_id FROM approval_cards
             WHERE approval_id = ?1 AND host = ?2 AND closed = 0",
        )?;
        let host = approval.host.as_deref().unwrap_or("");
        stmt.query_map(params![approval.id, host], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect()
    }

    /// The approval a bot message is the card of.
    pub fn approval_at(
        &self,
        chat_id: i64,
        message_id: i32,
    ) -> rusqlite::Result<Option<ApprovalRef>> {
        self.conn
            .query_row(
                "SELECT approval_id, host FROM approval_cards WHERE chat_id = ?1 AND message_id = ?2",
                params![chat_id, message_id],
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

    pub fn close_approval_card(&self, chat_id: i64, message_id: i32) -> rusqlite::Result<()> {
        self.conn.execute(
            "UPDATE approval_cards SET closed = 1 WHERE chat_id = ?1 AND message_id = ?2",
            params![chat_id, message_id],
        )?;
        Ok(())
    }

    pub fn add_card(&self, card: &Card) -> rusqlite::Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO cards (chat_id, message_id, ask_id, host, answered)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                card.chat_id,
                card.message_id,
                card.ask.id,
                host_column(&card.ask),
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

    /// The card a message is, if it is one.
    pub fn card_at(&self, chat_id: i64, message_id: i32) -> rusqlite::Result<Option<Card>> {
        self.conn
            .prepare_cached(&format!(
                "{CARD_COLUMNS} WHERE chat_id = ?1 AND message_id = ?2"
            ))?
            .query_row(params![chat_id, message_id], card_row)
            .optional()
    }

    /// Cards not yet shown as answered.
    pub fn open_cards(&self) -> rusqlite::Result<Vec<Card>> {
        self.conn
            .prepare_cached(&format!("{CARD_COLUMNS} WHERE answered = 0"))?
            .query_map([], card_row)?
            .collect()
    }

    pub fn mark_answered(&self, chat_id: i64, message_id: i32) -> rusqlite::Result<()> {
        self.conn.execute(
            "UPDATE cards SET answered = 1 WHERE chat_id = ?1 AND message_id = ?2",
            params![chat_id, message_id],
        )?;
        Ok(())
    }

    /// The forum topic of a session: (thread id, name).
    pub fn topic(&self, session_id: &str, chat_id: i64) -> rusqlite::Result<Option<(i32, String)>> {
        self.conn
            .prepare_cached(
                "SELECT thread_id, name FROM topics WHERE session_id = ?1 AND chat_id = ?2",
            )?
            .query_row(params![session_id, chat_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
    }

    /// The session whose topic this is.
    pub fn session_of_topic(
        &self,
        chat_id: i64,
        thread_id: i32,
    ) -> rusqlite::Result<Option<String>> {
        self.conn
            .prepare_cached("SELECT session_id FROM topics WHERE chat_id = ?1 AND thread_id = ?2")?
            .query_row(params![chat_id, thread_id], |r| r.get(0))
            .optional()
    }

    pub fn set_topic(
        &self,
        session_id: &str,
        chat_id: i64,
        thread_id: i32,
        name: &str,
    ) -> rusqlite::Result<()> {
        self.conn.execute(
            "INSERT INTO topics (session_id, chat_id, thread_id, name) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (session_id) DO UPDATE SET chat_id = ?2, thread_id = ?3, name = ?4",
            params![session_id, chat_id, thread_id, name],
        )?;
        Ok(())
    }

    /// Mark `session_id`'s topic closed (its session ended) or open again. True when that
    /// changed something.
    pub fn set_topic_closed(
        &self,
        session_id: &str,
        chat_id: i64,
        closed: bool,
    ) -> rusqlite::Result<bool> {
        let changed = self.conn.execute(
            "UPDATE topics SET closed = ?3 WHERE session_id = ?1 AND chat_id = ?2 AND closed != ?3",
            params![session_id, chat_id, closed],
        )?;
        Ok(changed > 0)
    }

    /// The sessions whose topic in `chat_id` is open.
    pub fn open_topics(&self, chat_id: i64) -> rusqlite::Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare("SELECT session_id FROM topics WHERE chat_id = ?1 AND closed = 0")?;
        stmt.query_map([chat_id], |r| r.get(0))?.collect()
    }

    /// Remember that a bot message is about a session.
    pub fn set_about(
        &self,
        chat_id: i64,
        message_id: i32,
        session_id: &str,
    ) -> rusqlite::Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO about (chat_id, message_id, session_id) VALUES (?1, ?2, ?3)",
            params![chat_id, message_id, session_id],
        )?;
        Ok(())
    }

    /// The session a bot message is about.
    pub fn about(&self, chat_id: i64, message_id: i32) -> rusqlite::Result<Option<String>> {
        self.conn
            .prepare_cached("SELECT session_id FROM about WHERE chat_id = ?1 AND message_id = ?2")?
            .query_row(params![chat_id, message_id], |r| r.get(0))
            .optional()
    }
}

/// The columns [`card_row`] reads.
const CARD_COLUMNS: &str = "SELECT ask_id, host, chat_id, message_id, answered FROM cards";

fn card_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Card> {
    Ok(Card {
        ask: ask_ref(r, 0, 1)?,
        chat_id: r.get(2)?,
        message_id: r.get(3)?,
        answered: r.get(4)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("telegram.db");
        let store = BridgeStore::open(&path).unwrap();
        assert_eq!(store.offset().unwrap(), 0);
        store.set_offset(42).unwrap();
        assert_eq!(store.last_report("st", -100).unwrap(), None);
        store.set_last_report("st", -100, 9).unwrap();
        let card = Card {
            ask: AskRef::here(7.into()),
            chat_id: -100,
            message_id: 5,
            answered: false,
        };
        store.add_card(&card).unwrap();
        // A linked host's ask 7 is another ask, with cards of its own.
        let far = Card {
            ask: "gpu:7".parse().unwrap(),
            message_id: 6,
            ..card.clone()
        };
        store.add_card(&far).unwrap();
        store.set_topic("s1", -100, 11, "fix-login").unwrap();
        store.set_about(-100, 5, "s1").unwrap();
        drop(store);
        let store = BridgeStore::open(&path).unwrap();
        assert_eq!(store.offset().unwrap(), 42);
        assert_eq!(store.last_report("st", -100).unwrap(), Some(9));
        assert_eq!(store.last_report("other-store", -100).unwrap(), None);
        assert_eq!(store.last_report("st", -200).unwrap(), None);
        assert_eq!(store.card_at(-100, 5).unwrap(), Some(card.clone()));
        assert_eq!(store.cards_of(&card.ask).unwrap(), vec![card]);
        assert_eq!(store.cards_of(&far.ask).unwrap(), vec![far.clone()]);
        assert_eq!(store.card_at(-100, 6).unwrap(), Some(far));
        assert_eq!(
            store.topic("s1", -100).unwrap(),
            Some((11, "fix-login".into()))
        );
        assert_eq!(
            store.session_of_topic(-100, 11).unwrap().as_deref(),
            Some("s1")
        );
        assert_eq!(store.about(-100, 5).unwrap().as_deref(), Some("s1"));
        store.mark_answered(-100, 5).unwrap();
        store.mark_answered(-100, 6).unwrap();
        assert!(store.open_cards().unwrap().is_empty());
    }

    #[test]
    fn a_file_from_before_versions_keeps_its_state_and_a_newer_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("telegram.db");
        // What a bridge from before versions were counted left: its tables, version 0.
        let old = Connection::open(&path).unwrap();
        old.execute_batch(MIGRATIONS[0]).unwrap();
        old.execute_batch(
            "INSERT INTO meta (key, value) VALUES ('offset', '42');
             INSERT INTO topics VALUES ('s1', -100, 11, 'fix-login');
             INSERT INTO cards VALUES (-100, 5, 7, 0);",
        )
        .unwrap();
        drop(old);
        let store = BridgeStore::open(&path).unwrap();
        assert_eq!(store.offset().unwrap(), 42);
        // Its cards are this core's asks'.
        let cards = store.cards_of(&AskRef::here(7.into())).unwrap();
        assert_eq!(cards.len(), 1, "{cards:?}");
        assert_eq!(
            store.topic("s1", -100).unwrap(),
            Some((11, "fix-login".into()))
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
        let err = BridgeStore::open(&path).err().unwrap().to_string();
        assert!(err.contains("telegram.db"), "{err}");
        assert!(err.contains("upgrade shepherd"), "{err}");
    }
}
