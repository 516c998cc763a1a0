//! Each session's mailbox: steers, messages and answers for it, kept until the session
//! acknowledges them. Which rows are unread is kept in the writer's memory
//! ([`Unread`]), which every function here that changes a row keeps up to date; a
//! delivery's cost does not grow with history.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::unread::Unread;

use crate::protocol::{
    AskId, ClientKind, DeliveredImage, Delivery, DeliveryKind, MessageId, PairingId, Sender,
    SessionId,
};

/// The `images` column: a JSON array, NULL for none (nearly every message).
fn images_json(images: &[DeliveredImage]) -> Option<String> {
    (!images.is_empty()).then(|| serde_json::to_string(images).unwrap_or_default())
}

fn from_row(row: &Row<'_>) -> rusqlite::Result<Delivery> {
    let kind: String = row.get(1)?;
    let from_kind: String = row.get(3)?;
    Ok(Delivery {
        id: row.get(0)?,
        kind: match kind.as_str() {
            "message" => DeliveryKind::Message,
            "answer" => DeliveryKind::Answer,
            "view" => DeliveryKind::View,
            "brief" => DeliveryKind::Brief,
            "interrupt" => DeliveryKind::Interrupt,
            "ask" => DeliveryKind::Ask,
            "supervisor_message" => DeliveryKind::SupervisorMessage,
            "staff_message" => DeliveryKind::StaffMessage,
            "peer_message" => DeliveryKind::PeerMessage,
            "notice" => DeliveryKind::Notice,
            "task" => DeliveryKind::Task,
            "agent_result" => DeliveryKind::AgentResult,
            "agent_ask" => DeliveryKind::AgentAsk,
            "assignment_update" => DeliveryKind::AssignmentUpdate,
            "integration" => DeliveryKind::Integration,
            _ => DeliveryKind::Steer,
        },
        text: row.get(2)?,
        from: Sender {
            kind: match from_kind.as_str() {
                "pi" => ClientKind::Pi,
                "bridge" => ClientKind::Bridge,
                "core" => ClientKind::Core,
                _ => ClientKind::Cli,
            },
            session_id: row.get(4)?,
            name: row.get(5)?,
        },
        ask_id: row.get(6)?,
        question: row.get(7)?,
        created_at: row.get(8)?,
        pairing_id: row.get(9)?,
        look: row.get(10)?,
        images: row
            .get::<_, Option<String>>(11)?
            .and_then(|json| serde_json::from_str(&json).ok())
            .unwrap_or_default(),
    })
}

/// A message to store, before it has an id.
pub struct NewMessage<'a> {
    pub recipient: &'a SessionId,
    pub kind: DeliveryKind,
    pub text: &'a str,
    pub from: &'a Sender,
    pub ask_id: Option<AskId>,
    pub question: Option<&'a str>,
    pub pairing_id: Option<PairingId>,
    pub look: Option<u32>,
    pub created_at: u64,
    /// Images the model is to see with the text (a photo sent from the phone).
    pub images: &'a [DeliveredImage],
}

impl<'a> NewMessage<'a> {
    /// A message of `kind` from `from` to `recipient`, stamped now, with no ask or
    /// pairing; set those with struct update syntax.
    pub fn plain(
        recipient: &'a SessionId,
        kind: DeliveryKind,
        text: &'a str,
        from: &'a Sender,
    ) -> NewMessage<'a> {
        NewMessage {
            recipient,
            kind,
            text,
            from,
            ask_id: None,
            question: None,
            pairing_id: None,
            look: None,
            created_at: crate::clock::now_ms(),
            images: &[],
        }
    }

    /// The message as it is delivered once it has `id`.
    pub fn delivery(&self, id: MessageId) -> Delivery {
        Delivery {
            id,
            kind: self.kind,
            text: self.text.to_string(),
            from: self.from.clone(),
            ask_id: self.ask_id,
            question: self.question.map(str::to_string),
            pairing_id: self.pairing_id,
            look: self.look,
            created_at: self.created_at,
            images: self.images.to_vec(),
        }
    }
}

/// Store a message; returns it as it will be delivered. Its id is the next `unread`
/// gives ([`Unread::next_id`]: past the largest there is and the largest ever removed):
/// ids never repeat, and no counter row is written (see the migration that dropped
/// AUTOINCREMENT).
pub fn insert(conn: &Connection, unread: &Unread, m: NewMessage<'_>) -> rusqlite::Result<Delivery> {
    let id = unread.next_id();
    conn.prepare_cached(
        "INSERT INTO messages (id, recipient, kind, text, from_kind, from_session, from_name,
         ask_id, question, created_at, pairing_id, look, images)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )?
    .execute(params![
        id as i64,
        m.recipient,
        m.kind.as_str(),
        m.text,
        m.from.kind.as_str(),
        m.from.session_id,
        m.from.name,
        m.ask_id,
        m.question,
        m.created_at,
        m.pairing_id,
        m.look,
        images_json(m.images),
    ])?;
    unread.add(m.recipient, id);
    Ok(m.delivery(MessageId::from(id)))
}

/// The ids of the rows a `... RETURNING id` statement changed.
pub(super) fn changed_ids(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> rusqlite::Result<Vec<u64>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let ids = stmt.query_map(params, |r| r.get::<_, i64>(0).map(|id| id as u64))?;
    ids.collect()
}

/// Delete the unread rows a `DELETE ... RETURNING id` statement selects, and take them
/// out of `unread`. Returns how many.
pub(super) fn delete_unread(
    conn: &Connection,
    unread: &Unread,
    sql: &str,
    params: impl rusqlite::Params,
) -> rusqlite::Result<usize> {
    let ids = changed_ids(conn, sql, params)?;
    for &id in &ids {
        unread.remove(id);
    }
    Ok(ids.len())
}

/// Withdraw the `ask` deliveries of an ask that were not acknowledged yet (it has its
/// answer: the role's holder need not start a turn for it). Returns how many.
pub fn withdraw_asks(conn: &Connection, unread: &Unread, ask_id: AskId) -> rusqlite::Result<usize> {
    delete_unread(
        conn,
        unread,
        "DELETE FROM messages WHERE ask_id = ?1 AND kind IN ('ask', 'agent_ask') AND acked_at IS NULL
         RETURNING id",
        [ask_id],
    )
}

/// Drop every message still waiting for `recipient` (a closed worker will never read
/// them). Returns how many.
pub fn drop_pending(
    conn: &Connection,
    unread: &Unread,
    recipient: &SessionId,
) -> rusqlite::Result<usize> {
    let mut stmt =
        conn.prepare_cached("DELETE FROM messages WHERE id = ?1 AND acked_at IS NULL")?;
    let mut dropped = 0;
    for id in unread.ids_after(recipient, 0, usize::MAX) {
        dropped += stmt.execute([id as i64])?;
        unread.remove(id);
    }
    Ok(dropped)
}

/// Up to `limit` unacknowledged messages for `recipient` with ids above `after`, in order,
/// holding at most `max_bytes` of text (but always one message); and whether the chunk
/// was cut by either bound (more may remain). Each row is read by id and checked: an id
/// `unread` holds whose row is gone, read or someone else's is dropped from it.
pub fn pending_after(
    conn: &Connection,
    unread: &Unread,
    recipient: &SessionId,
    after: MessageId,
    limit: usize,
    max_bytes: usize,
) -> rusqlite::Result<(Vec<Delivery>, bool)> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, kind, text, from_kind, from_session, from_name, ask_id, question, created_at,
            pairing_id, look, images
         FROM messages WHERE id = ?1 AND recipient = ?2 AND acked_at IS NULL",
    )?;
    let mut batch = Vec::new();
    let mut bytes = 0;
    let mut from = after.get();
    while bytes < max_bytes && batch.len() < limit {
        let ids = unread.ids_after(recipient, from, limit - batch.len());
        let Some(&last) = ids.last() else { break };
        for id in ids {
            if bytes >= max_bytes {
                break;
            }
            match stmt
                .query_row(params![id as i64, recipient], from_row)
                .optional()?
            {
                Some(delivery) => {
                    bytes +=
                        delivery.text.len() + delivery.question.as_ref().map_or(0, String::len);
                    batch.push(delivery);
                }
                None => unread.remove(id),
            }
        }
        from = last;
    }
    let cut = batch.len() == limit || bytes >= max_bytes;
    Ok((batch, cut))
}

/// The mailbox row that carries an ask's answer: its id, its creation time and whether
/// the session acknowledged it.
pub struct AnswerRow {
    pub id: u64,
    pub created_at: u64,
    pub acked: bool,
}

/// The row carrying ask `ask`'s answer, if there is one.
pub fn answer_of(conn: &Connection, ask: AskId) -> rusqlite::Result<Option<AnswerRow>> {
    conn.prepare_cached(
        "SELECT id, created_at, acked_at IS NOT NULL FROM messages
         WHERE ask_id = ?1 AND kind = 'answer' ORDER BY id DESC LIMIT 1",
    )?
    .query_row([ask], |r| {
        Ok(AnswerRow {
            id: r.get(0)?,
            created_at: r.get(1)?,
            acked: r.get(2)?,
        })
    })
    .optional()
}

/// Take back a message that was never handed to its recipient (`unanswer`).
pub fn retract(conn: &Connection, unread: &Unread, id: u64) -> rusqlite::Result<bool> {
    let changed = conn
        .prepare_cached("DELETE FROM messages WHERE id = ?1 AND acked_at IS NULL")?
        .execute([id])?;
    unread.remove(id);
    Ok(changed == 1)
}

/// Mark messages of `recipient` acknowledged; ids of other sessions are ignored.
pub fn ack(
    conn: &Connection,
    unread: &Unread,
    recipient: &SessionId,
    ids: &[MessageId],
    now: u64,
) -> rusqlite::Result<usize> {
    let mut stmt = conn.prepare_cached(
        "UPDATE messages SET acked_at = ?3 WHERE id = ?2 AND recipient = ?1 AND acked_at IS NULL",
    )?;
    let mut changed = 0;
    for id in ids {
        if stmt.execute(params![recipient, id, now])? == 1 {
            unread.remove(id.get());
            changed += 1;
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_until_acked_in_order_and_per_recipient() {
        let store = crate::store::memory();
        let from = Sender {
            kind: ClientKind::Cli,
            session_id: None,
            name: "cli".into(),
        };
        let (to_a, to_b) = (SessionId::from("a"), SessionId::from("b"));
        let msg = |to, text| NewMessage {
            recipient: to,
            kind: DeliveryKind::Steer,
            text,
            from: &from,
            ask_id: None,
            question: None,
            pairing_id: None,
            look: None,
            created_at: 5,
            images: &[],
        };
        let (db, unread) = (&store.conn, &store.unread);
        let a = insert(db, unread, msg(&to_a, "one")).unwrap();
        let b = insert(db, unread, msg(&to_a, "two")).unwrap();
        insert(db, unread, msg(&to_b, "other")).unwrap();
        assert!(b.id > a.id);
        assert_eq!((unread.count(&to_a), unread.count(&to_b)), (2, 1));
        let texts: Vec<_> = pending_after(db, unread, &to_a, MessageId::from(0), 100, usize::MAX)
            .map(|(batch, _)| batch)
            .unwrap()
            .into_iter()
            .map(|d| d.text)
            .collect();
        assert_eq!(texts, ["one", "two"]);
        // Acking someone else's id changes nothing.
        assert_eq!(ack(db, unread, &to_b, &[a.id], 6).unwrap(), 0);
        assert_eq!(ack(db, unread, &to_a, &[a.id, a.id], 6).unwrap(), 1);
        assert_eq!(unread.count(&to_a), 1);
        assert_eq!(
            pending_after(db, unread, &to_a, MessageId::from(0), 100, usize::MAX)
                .map(|(batch, _)| batch)
                .unwrap()[0],
            b
        );
    }

    /// Ids never repeat: not after the newest message is retracted, dropped with its
    /// mailbox or withdrawn (a client that saw an id drops it when it comes again), and not
    /// after a reopen; and no commit writes a counter row.
    #[test]
    fn ids_never_repeat_after_the_newest_message_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        let store = crate::store::Store::open(&path, crate::config::Durability::Normal).unwrap();
        let from = Sender {
            kind: ClientKind::Cli,
            session_id: None,
            name: "cli".into(),
        };
        let to = SessionId::from("a");
        let put = |store: &crate::store::Store| {
            insert(
                &store.conn,
                &store.unread,
                NewMessage::plain(&to, DeliveryKind::Steer, "t", &from),
            )
            .unwrap()
            .id
        };
        let first = put(&store);
        let second = put(&store);
        assert!(retract(&store.conn, &store.unread, second.get()).unwrap());
        let third = put(&store);
        assert!(third > second, "{third:?} after {second:?} was retracted");
        assert_eq!(drop_pending(&store.conn, &store.unread, &to).unwrap(), 2);
        drop(store);

        let store = crate::store::Store::open(&path, crate::config::Durability::Normal).unwrap();
        let fourth = put(&store);
        assert!(
            fourth > third && third > first,
            "{fourth:?} after {third:?}"
        );
        let counters: i64 = store
            .conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name = 'sqlite_sequence'
                 AND EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'messages')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(counters, 0, "no AUTOINCREMENT counter for messages");
    }
}
