//! Mail between cores ([`HostMail`]): what this core sent to another and keeps until that
//! core has stored it (`host_mail_out`: by host, `''` for mail up to the home core), and
//! which mail from another core it stored (`host_mail_in`: by origin and the sender's id),
//! so mail sent again after a drop or a crash is stored once.

use rusqlite::{Connection, OptionalExtension, params};

use crate::protocol::{HerdChief, HostMail};

/// The host of mail up to the home core (this core is a linked host).
pub const HOME: &str = "";

/// Where this core, as a linked host, keeps what its home core last said of the herd.
const HERD: &str = "herd";

/// What a linked host knows of its herd: that it has a home core, and the herd's Chief
/// the home core last named (it outlives the link: mail up is kept for it while the link
/// is down).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Herd {
    pub chief: Option<HerdChief>,
}

/// The herd as the home core last named it; `None` when no home core ever linked this one.
pub fn herd(conn: &Connection) -> rusqlite::Result<Option<Herd>> {
    let json: Option<String> = conn
        .prepare_cached("SELECT value FROM meta WHERE key = ?1")?
        .query_row([HERD], |r| r.get(0))
        .optional()?;
    Ok(json.and_then(|j| serde_json::from_str(&j).ok()))
}

/// Keep what the home core said of the herd.
pub fn set_herd(conn: &Connection, herd: &Herd) -> rusqlite::Result<()> {
    let json = serde_json::to_string(herd).expect("a herd serializes");
    conn.prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")?
        .execute(params![HERD, json])?;
    Ok(())
}

/// The newest report of linked host `host` this core passed on to its subscribers (its
/// link announces what came after it when it comes back, even after a restart).
pub fn report_cursor(conn: &Connection, host: &str) -> rusqlite::Result<Option<u64>> {
    let value: Option<String> = conn
        .prepare_cached("SELECT value FROM meta WHERE key = ?1")?
        .query_row([format!("host_report:{host}")], |r| r.get(0))
        .optional()?;
    Ok(value.and_then(|v| v.parse().ok()))
}

/// Linked host `host`'s report `id` was passed on (the cursor never goes back).
pub fn set_report_cursor(conn: &Connection, host: &str, id: u64) -> rusqlite::Result<()> {
    if report_cursor(conn, host)?.is_some_and(|now| now >= id) {
        return Ok(());
    }
    conn.prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")?
        .execute(params![format!("host_report:{host}"), id.to_string()])?;
    Ok(())
}

/// Keep `mail` for `host` until it is stored there; its id (the mail's `id`).
pub fn keep(conn: &Connection, host: &str, mut mail: HostMail) -> rusqlite::Result<HostMail> {
    conn.prepare_cached("INSERT INTO host_mail_out (host, mail) VALUES (?1, '')")?
        .execute([host])?;
    mail.id = conn.last_insert_rowid() as u64;
    let json = serde_json::to_string(&mail).expect("host mail serializes");
    conn.prepare_cached("UPDATE host_mail_out SET mail = ?2 WHERE id = ?1")?
        .execute(params![mail.id as i64, json])?;
    Ok(mail)
}

/// The mail kept for `host`, oldest first.
pub fn pending(conn: &Connection, host: &str) -> rusqlite::Result<Vec<HostMail>> {
    conn.prepare_cached("SELECT mail FROM host_mail_out WHERE host = ?1 ORDER BY id")?
        .query_map([host], |r| r.get::<_, String>(0))?
        .filter_map(|json| match json {
            Ok(json) => serde_json::from_str(&json).ok().map(Ok),
            Err(e) => Some(Err(e)),
        })
        .collect()
}

/// `host` stored these: forget them.
pub fn stored(conn: &Connection, host: &str, ids: &[u64]) -> rusqlite::Result<usize> {
    let mut n = 0;
    let mut delete =
        conn.prepare_cached("DELETE FROM host_mail_out WHERE host = ?1 AND id = ?2")?;
    for id in ids {
        n += delete.execute(params![host, *id as i64])?;
    }
    Ok(n)
}

/// Whether mail `id` from `origin` was stored here before.
pub fn seen(conn: &Connection, origin: &str, id: u64) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM host_mail_in WHERE origin = ?1 AND mail_id = ?2")?
        .query_row(params![origin, id as i64], |_| Ok(()))
        .optional()
        .map(|found| found.is_some())
}

/// Mail `id` from `origin` is stored here now.
pub fn mark_seen(conn: &Connection, origin: &str, id: u64) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT OR IGNORE INTO host_mail_in (origin, mail_id) VALUES (?1, ?2)")?
        .execute(params![origin, id as i64])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{EdgeKind, Role};

    fn mail(text: &str) -> HostMail {
        HostMail {
            id: 0,
            kind: EdgeKind::Staff,
            from_id: "chief-1".into(),
            from_name: "chief".into(),
            from_role: Role::Chief,
            to_id: "mgr-1".into(),
            to_name: "app".into(),
            text: text.into(),
            created_at: 1,
            from_host: None,
            notice: false,
            ask: None,
        }
    }

    #[test]
    fn mail_is_kept_per_host_until_stored_and_seen_once_per_origin() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            crate::store::Store::open(&dir.path().join("s.db"), crate::config::Durability::Normal)
                .unwrap();
        let db = &store.conn;
        let a = keep(db, "gpu", mail("one")).unwrap();
        let b = keep(db, "gpu", mail("two")).unwrap();
        let up = keep(db, HOME, mail("up")).unwrap();
        assert!(a.id < b.id && b.id < up.id);
        assert_eq!(pending(db, "gpu").unwrap(), vec![a.clone(), b.clone()]);
        assert_eq!(pending(db, HOME).unwrap(), vec![up.clone()]);
        // Stored for another host: nothing forgotten here.
        assert_eq!(stored(db, HOME, &[a.id]).unwrap(), 0);
        assert_eq!(stored(db, "gpu", &[a.id, a.id]).unwrap(), 1);
        assert_eq!(pending(db, "gpu").unwrap(), vec![b]);

        assert!(!seen(db, "store-a", 7).unwrap());
        mark_seen(db, "store-a", 7).unwrap();
        mark_seen(db, "store-a", 7).unwrap();
        assert!(seen(db, "store-a", 7).unwrap());
        assert!(!seen(db, "store-b", 7).unwrap());

        assert_eq!(report_cursor(db, "gpu").unwrap(), None);
        set_report_cursor(db, "gpu", 9).unwrap();
        set_report_cursor(db, "gpu", 4).unwrap();
        assert_eq!(report_cursor(db, "gpu").unwrap(), Some(9));
        assert_eq!(report_cursor(db, "box").unwrap(), None);

        assert_eq!(herd(db).unwrap(), None);
        let chief = Herd {
            chief: Some(HerdChief {
                session_id: "c1".into(),
                session_name: "chief".into(),
            }),
        };
        set_herd(db, &chief).unwrap();
        assert_eq!(herd(db).unwrap(), Some(chief));
        set_herd(db, &Herd::default()).unwrap();
        assert_eq!(herd(db).unwrap(), Some(Herd::default()));
    }
}
