//! # A bridge's own database
//!
//! Both bridges keep a small SQLite file in the state directory (`telegram.db`,
//! `bridge.db`): what they posted where, and where they are in their platform's stream.
//! [`open`] makes it private (0600 with its `-wal`/`-shm`, like the core's, whatever the
//! umask, through `shepherd_core::files`), and brings its schema up to date with the
//! core's kind of append-only migrations counted in `PRAGMA user_version`, so the first
//! change to a bridge's tables has an upgrade path. A file from before versions were
//! counted is adopted as version 1; a file from a newer shepherd is refused rather than
//! misread. Both name an ask in two columns, `ask_id` and `host` (`''` for the core's
//! own): [`ask_ref`] reads them, [`host_column`] writes the second. Both keep loose
//! values in a `meta` table ([`meta`], [`set_meta`]).

use std::path::{Path, PathBuf};

use rusqlite::Connection;

/// Why a bridge's database could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot make the bridge database {path} private (0600): {source}")]
    Private {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "bridge database {path} has schema version {found}, newer than this shepherd ({supported}): \
         it was written by a newer shepherd; upgrade shepherd"
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("cannot open the bridge database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
}

/// Open the bridge database at `path`, private and migrated. `migrations[i]` takes the
/// schema from version `i` to `i + 1`; never edit one, append the next. Each runs in its
/// own transaction with the version it reaches, so a crash leaves a whole version.
/// Version 1 must create its tables with `IF NOT EXISTS`: a file from before versions
/// were counted (version 0, tables already there) is then adopted as is.
pub fn open(path: &Path, migrations: &[&str]) -> Result<Connection, OpenError> {
    shepherd_core::files::private_database(path).map_err(|source| OpenError::Private {
        path: path.to_path_buf(),
        source,
    })?;
    let sqlite = |source| OpenError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    let mut conn = Connection::open(path).map_err(sqlite)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(sqlite)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(sqlite)?;
    migrate(&mut conn, path, migrations)?;
    Ok(conn)
}

fn migrate(conn: &mut Connection, path: &Path, migrations: &[&str]) -> Result<(), OpenError> {
    let sqlite = |source| OpenError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    let found: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(sqlite)?;
    let supported = migrations.len() as i64;
    if found > supported {
        return Err(OpenError::TooNew {
            path: path.to_path_buf(),
            found,
            supported,
        });
    }
    for (i, sql) in migrations.iter().enumerate().skip(found as usize) {
        let tx = conn.transaction().map_err(sqlite)?;
        tx.execute_batch(sql).map_err(sqlite)?;
        tx.pragma_update(None, "user_version", i as i64 + 1)
            .map_err(sqlite)?;
        tx.commit().map_err(sqlite)?;
    }
    Ok(())
}

/// A value from a bridge database's `meta` table.
pub fn meta(conn: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    use rusqlite::OptionalExtension;
    conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
        .optional()
}

/// Set a value in a bridge database's `meta` table.
pub fn set_meta(conn: &Connection, key: &str, value: &str) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?1, ?2)
         ON CONFLICT (key) DO UPDATE SET value = ?2",
        [key, value],
    )?;
    Ok(())
}

/// The ask in columns `id` and `host` of a row (`''`: the core's own, else a linked
/// host's).
pub fn ask_ref(
    r: &rusqlite::Row<'_>,
    id: usize,
    host: usize,
) -> rusqlite::Result<shepherd_core::protocol::AskRef> {
    let host: String = r.get(host)?;
    Ok(shepherd_core::protocol::AskRef {
        host: (!host.is_empty()).then_some(host),
        id: r.get(id)?,
    })
}

/// What the `host` column holds for `ask`: its linked host, or `''` for the core's own.
pub fn host_column(ask: &shepherd_core::protocol::AskRef) -> &str {
    ask.host.as_deref().unwrap_or_default()
}

/// An approval from its `approval_id` and `host` columns (`''` for the core's own).
pub fn approval_ref(
    row: &rusqlite::Row<'_>,
) -> rusqlite::Result<crate::chat::approvals::ApprovalRef> {
    let host: String = row.get(1)?;
    Ok(crate::chat::approvals::ApprovalRef {
        host: (!host.is_empty()).then_some(host),
        id: row.get(0)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const V1: &str = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);";
    const V2: &str = "ALTER TABLE meta ADD COLUMN note TEXT;";
    /// Fails if it runs twice: a migration must run once per file.
    const V3: &str = "CREATE TABLE once (n INTEGER); INSERT INTO once VALUES (1);";

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    fn companion(path: &Path, suffix: &str) -> PathBuf {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    }

    fn version(conn: &Connection) -> i64 {
        conn.pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap()
    }

    /// Set by [`the_files_are_0600_with_umask_000`] for the child it runs under umask 000.
    const UMASK_000: &str = "SHEPHERD_TEST_UMASK_000";

    /// A new database, its WAL and shared memory are 0600 under the umask this process
    /// has; run again by [`the_files_are_0600_with_umask_000`] under umask 000.
    #[test]
    fn a_new_database_and_its_companions_are_0600() {
        let dir = tempfile::tempdir().unwrap();
        if std::env::var_os(UMASK_000).is_some() {
            // Proof the umask really is 000 here: a plain file comes out 0666.
            let plain = dir.path().join("plain");
            std::fs::write(&plain, b"").unwrap();
            assert_eq!(mode(&plain), 0o666, "the child runs with umask 000");
        }
        let path = dir.path().join("bridge.db");
        let conn = open(&path, &[V1]).unwrap();
        conn.execute("INSERT INTO meta (key, value) VALUES ('offset', '7')", [])
            .unwrap();
        // The connection is open: its WAL and shared memory exist.
        for file in [
            path.clone(),
            companion(&path, "-wal"),
            companion(&path, "-shm"),
        ] {
            assert_eq!(mode(&file), 0o600, "{}", file.display());
        }
    }

    #[test]
    fn the_files_are_0600_with_umask_000() {
        // The umask is the process's: set it in a child so no other test sees it.
        let test = "local_db::tests::a_new_database_and_its_companions_are_0600";
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg("umask 000; exec \"$0\" --exact \"$1\" --test-threads=1")
            .arg(std::env::current_exe().unwrap())
            .arg(test)
            .env(UMASK_000, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains("1 passed"),
            "the child ran the test: {stdout}"
        );
    }

    #[test]
    fn a_looser_database_and_companions_are_tightened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("telegram.db");
        // An older bridge's file, open (so its WAL and shared memory exist), all 0644.
        let old = Connection::open(&path).unwrap();
        old.pragma_update(None, "journal_mode", "WAL").unwrap();
        old.execute_batch(V1).unwrap();
        let files = [
            path.clone(),
            companion(&path, "-wal"),
            companion(&path, "-shm"),
        ];
        for file in &files {
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        let _conn = open(&path, &[V1]).unwrap();
        for file in &files {
            assert_eq!(mode(file), 0o600, "{}", file.display());
        }
    }

    #[test]
    fn an_unversioned_database_keeps_its_rows_and_becomes_version_1() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("telegram.db");
        let old = Connection::open(&path).unwrap();
        old.execute_batch(V1).unwrap();
        old.execute("INSERT INTO meta (key, value) VALUES ('offset', '42')", [])
            .unwrap();
        assert_eq!(version(&old), 0);
        drop(old);

        let conn = open(&path, &[V1]).unwrap();
        assert_eq!(version(&conn), 1);
        let value: String = conn
            .query_row("SELECT value FROM meta WHERE key = 'offset'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(value, "42");
    }

    #[test]
    fn migrations_run_in_order_once_and_keep_the_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bridge.db");
        let conn = open(&path, &[V1]).unwrap();
        conn.execute("INSERT INTO meta (key, value) VALUES ('offset', '7')", [])
            .unwrap();
        drop(conn);

        // The next versions add a column and a table; what was there stays.
        let conn = open(&path, &[V1, V2, V3]).unwrap();
        assert_eq!(version(&conn), 3);
        drop(conn);
        // Opening again runs nothing: V3 would fail (its table exists) or add a row.
        let conn = open(&path, &[V1, V2, V3]).unwrap();
        assert_eq!(version(&conn), 3);
        let once: i64 = conn
            .query_row("SELECT count(*) FROM once", [], |r| r.get(0))
            .unwrap();
        assert_eq!(once, 1);
        let (value, note): (String, Option<String>) = conn
            .query_row(
                "SELECT value, note FROM meta WHERE key = 'offset'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((value.as_str(), note), ("7", None));
    }

    #[test]
    fn a_database_from_a_newer_shepherd_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bridge.db");
        drop(open(&path, &[V1, V2]).unwrap());

        let err = open(&path, &[V1]).unwrap_err();
        assert!(
            matches!(
                err,
                OpenError::TooNew {
                    found: 2,
                    supported: 1,
                    ..
                }
            ),
            "{err:?}"
        );
        let message = err.to_string();
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains("upgrade shepherd"), "{message}");
        // Nothing was changed: the newer shepherd still finds its own version.
        let conn = Connection::open(&path).unwrap();
        assert_eq!(version(&conn), 2);
    }
}
