//! # Private files
//!
//! Everything shepherd keeps on disk (databases, their WAL and shared-memory files, the
//! lock, the log) is readable by its owner only, whatever the umask: SQLite would create a
//! new database 0644 and derives its `-wal`/`-shm` modes from the database file, so the
//! file is created 0600 before SQLite opens it, and files an older version left looser are
//! tightened. The directories they live in are private too ([`private_dir`]: the state
//! directory, the socket's, the workers' tmux socket's).
//!
//! A user's files that the core reads (a session's `session_file`, an agent definition) are
//! untrusted input: [`open_regular`] opens only a regular file (a symlink to one is fine),
//! without blocking on a FIFO or opening a device, and [`Limited`] bounds what is read
//! from it, in bytes and in time.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Why a private directory could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum DirError {
    #[error("cannot create socket directory {path}: {source}")]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "socket directory {path} belongs to uid {owner}, not to you (uid {me}); choose another with SHEPHERD_SOCKET"
    )]
    NotOwner { path: PathBuf, owner: u32, me: u32 },
    #[error(
        "{path} is writable by others (mode {mode:o}) without the sticky bit, so they could replace shepherd's files in it; choose a private directory (SHEPHERD_SOCKET / SHEPHERD_STATE_DIR) or make it private (chmod 700)"
    )]
    SharedDir { path: PathBuf, mode: u32 },
    #[error(
        "the state directory {path} is shared (mode {mode:o}); shepherd keeps its database in a directory of its own: choose one with SHEPHERD_STATE_DIR"
    )]
    SharedStateDir { path: PathBuf, mode: u32 },
}

/// The uid this process runs as.
pub fn own_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// Make the state directory `dir` exist as a private (0700) directory of ours.
///
/// A missing directory is created 0700. An existing one must be ours; one left loose
/// (0755, say) is made 0700 again, but a shared directory (world-writable or sticky, like
/// `/tmp`) is refused rather than changed for everyone. Through a symlink the target is
/// never changed: it is used when others cannot write to it, refused otherwise.
pub fn private_dir(dir: &Path) -> Result<(), DirError> {
    let err = |source| DirError::Dir {
        path: dir.to_path_buf(),
        source,
    };
    let linked = std::fs::symlink_metadata(dir).is_ok_and(|meta| meta.file_type().is_symlink());
    if linked {
        return shared_ok(dir);
    }
    create_private(dir)?;
    let meta = std::fs::metadata(dir).map_err(err)?;
    let me = own_uid();
    if meta.uid() != me {
        return Err(DirError::NotOwner {
            path: dir.to_path_buf(),
            owner: meta.uid(),
            me,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o1002 != 0 {
        return Err(DirError::SharedStateDir {
            path: dir.to_path_buf(),
            mode,
        });
    }
    if mode & 0o777 != 0o700 {
        tracing::warn!(dir = %dir.display(), mode = format!("{mode:o}"), "state directory was not private; setting it to 0700");
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(err)?;
    }
    Ok(())
}

/// Create `dir` (and any missing parents) 0700; an existing directory is left as it is.
pub(crate) fn create_private(dir: &Path) -> Result<(), DirError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| DirError::Dir {
            path: dir.to_path_buf(),
            source,
        })
}

/// A directory that is not shepherd's own (a home directory, `/tmp`, a symlink's target):
/// never changed; refused when others may write to it and the sticky bit does not stop
/// them from replacing what shepherd puts there.
pub(crate) fn shared_ok(dir: &Path) -> Result<(), DirError> {
    let meta = std::fs::metadata(dir).map_err(|source| DirError::Dir {
        path: dir.to_path_buf(),
        source,
    })?;
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        return Err(DirError::SharedDir {
            path: dir.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

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

/// Open the file at `path` for reading if it is a regular file, with its length. Anything
/// else (a FIFO, a device such as `/dev/zero`, a directory, a socket) is refused with what
/// it is, before it is opened: a FIFO with no writer would block the open, and a device
/// never ends. The open itself is non-blocking and the opened descriptor is checked again,
/// so a file swapped for a FIFO in between is refused too.
pub fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    irregular(&std::fs::metadata(path)?)?;
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)?;
    let meta = file.metadata()?;
    irregular(&meta)?;
    Ok((file, meta.len()))
}

/// Refuse what is not a regular file, naming what it is.
fn irregular(meta: &std::fs::Metadata) -> io::Result<()> {
    let kind = meta.file_type();
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("it is {what}, not a regular file"),
    ))
}

/// A reader that fails once more than `max` bytes come out of `inner`, or once `time` has
/// passed since it was made (checked at each read, so a slow parse between reads counts).
pub struct Limited<R> {
    inner: R,
    left: u64,
    max: u64,
    deadline: Instant,
    time: Duration,
}

impl<R: Read> Limited<R> {
    pub fn new(inner: R, max: u64, time: Duration) -> Limited<R> {
        Limited {
            inner,
            left: max,
            max,
            deadline: Instant::now() + time,
            time,
        }
    }
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if Instant::now() >= self.deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("reading took longer than {} s", self.time.as_secs()),
            ));
        }
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut one = [0u8; 1];
            return match self.inner.read(&mut one)? {
                0 => Ok(0),
                _ => Err(io::Error::other(format!(
                    "the file is larger than {}",
                    human_bytes(self.max)
                ))),
            };
        }
        let cap = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..cap])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// `256 MiB`, `64 KiB`, `100 bytes`.
pub fn human_bytes(n: u64) -> String {
    if n >= 1024 * 1024 && n.is_multiple_of(1024 * 1024) {
        format!("{} MiB", n / (1024 * 1024))
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} bytes")
    }
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

/// Make a FIFO (named pipe) at `path`, 0600: what tests give as an untrusted file.
#[cfg(test)]
pub(crate) fn make_fifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("a FIFO is made");
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
    fn only_regular_files_open() {
        let dir = tempfile::tempdir().unwrap();
        let regular = dir.path().join("a.jsonl");
        std::fs::write(&regular, b"abc").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&regular, &link).unwrap();
        assert_eq!(open_regular(&regular).unwrap().1, 3);
        assert_eq!(open_regular(&link).unwrap().1, 3);

        let fifo = dir.path().join("fifo");
        crate::files::make_fifo(&fifo);
        let to_fifo = dir.path().join("to-fifo");
        std::os::unix::fs::symlink(&fifo, &to_fifo).unwrap();
        // Nobody writes to the FIFO: an open that blocked would hang this test.
        for (path, what) in [
            (fifo.as_path(), "a FIFO"),
            (to_fifo.as_path(), "a FIFO"),
            (Path::new("/dev/zero"), "a character device"),
            (dir.path(), "a directory"),
        ] {
            let err = open_regular(path).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
            assert!(err.to_string().contains(what), "{}: {err}", path.display());
        }
        let err = open_regular(&dir.path().join("missing")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn limited_stops_at_its_size_and_its_time() {
        let mut out = Vec::new();
        let mut r = Limited::new(&b"12345"[..], 5, Duration::from_secs(60));
        r.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"12345");
        let mut r = Limited::new(&b"123456"[..], 5, Duration::from_secs(60));
        let err = r.read_to_end(&mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("larger than 5 bytes"), "{err}");
        let mut r = Limited::new(io::repeat(0), 1024 * 1024, Duration::from_secs(60));
        let err = r.read_to_end(&mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("larger than 1 MiB"), "{err}");
        let mut r = Limited::new(io::repeat(0), u64::MAX, Duration::ZERO);
        let err = r.read(&mut [0u8; 8]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
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
