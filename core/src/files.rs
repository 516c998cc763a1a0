//! # Private files
//!
//! Everything shepherd keeps on disk (databases, their WAL and shared-memory files, the
//! lock, the log) is readable by its owner only, whatever the umask: SQLite would create a
//! new database 0644 and derives its `-wal`/`-shm` modes from the database file, so the
//! file is created 0600 before SQLite opens it, and files an older version left looser are
//! tightened.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Open (creating it 0600 if missing) the file at `path` for reading and writing, and make
/// sure it is 0600.
pub fn open_private(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)?;
    tighten(&file)?;
    Ok(file)
}

/// Make the SQLite database at `path` and its companions private before it is opened:
/// the database is created 0600 if missing; an existing database, `-wal` or `-shm` is
/// set to 0600.
pub fn private_database(path: &Path) -> io::Result<()> {
    open_private(path)?;
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut companion = path.as_os_str().to_owned();
        companion.push(suffix);
        match File::open(Path::new(&companion)) {
            Ok(file) => tighten(&file)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Open the log file at `path` for appending, creating it 0600. A regular file group or
/// others may read (an older version created `core.log` with the umask's 0644) is made
/// 0600 first, and the mode it had is returned so the caller can say so; anything else
/// (`/dev/stderr`, a pipe) is opened as it is.
pub fn open_private_log(path: &Path) -> io::Result<(File, Option<u32>)> {
    let loosened = tighten_log(path)?;
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    Ok((file, loosened))
}

/// Make an existing regular file at `path` 0600 when group or others may read or write
/// it; the mode it had when it did. A missing file is nothing to do.
pub fn tighten_log(path: &Path) -> io::Result<Option<u32>> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mode = meta.permissions().mode() & 0o7777;
    if !meta.is_file() || mode & 0o077 == 0 {
        return Ok(None);
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(Some(mode))
}

fn tighten(file: &File) -> io::Result<()> {
    let mode = file.metadata()?.permissions().mode() & 0o7777;
    if mode != 0o600 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_new_database_is_0600_and_loose_companions_are_tightened() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.db");
        let wal = dir.path().join("x.db-wal");
        std::fs::write(&wal, b"").unwrap();
        std::fs::set_permissions(&wal, std::fs::Permissions::from_mode(0o666)).unwrap();
        private_database(&db).unwrap();
        assert_eq!(mode(&db), 0o600);
        assert_eq!(mode(&wal), 0o600);

        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
        let conn = rusqlite::Connection::open(&db).unwrap();
        drop(conn);
        private_database(&db).unwrap();
        assert_eq!(mode(&db), 0o600);
    }

    #[test]
    fn a_log_is_created_0600_and_an_old_loose_one_is_tightened_saying_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("core.log");
        let (_file, was) = open_private_log(&path).unwrap();
        assert_eq!((mode(&path), was), (0o600, None));
        for loose in [0o644, 0o666, 0o640] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(loose)).unwrap();
            let (mut file, was) = open_private_log(&path).unwrap();
            assert_eq!((mode(&path), was), (0o600, Some(loose)));
            std::io::Write::write_all(&mut file, b"line\n").unwrap();
        }
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"line\nline\nline\n",
            "appended"
        );
        // Not a regular file: left alone.
        let (_null, was) = open_private_log(Path::new("/dev/null")).unwrap();
        assert_eq!(was, None);
        assert_eq!(mode(Path::new("/dev/null")), 0o666);
    }

    #[test]
    fn open_private_keeps_the_content_and_tightens_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        std::fs::write(&path, b"123").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let _file = open_private(&path).unwrap();
        assert_eq!(mode(&path), 0o600);
        assert_eq!(std::fs::read(&path).unwrap(), b"123");
    }
}
