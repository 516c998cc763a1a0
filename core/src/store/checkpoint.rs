//! # The checkpointer
//!
//! Copies the WAL back into the database from its own thread and connection, so the
//! writer (the hub) never pays for a checkpoint inside a commit. It works only when there
//! is something to do:
//!
//! - **Idle, it sleeps.** The writer's commit hook wakes it ([`WalWaker::wrote`]); with no
//!   writes it never wakes up.
//! - **Under writes, the WAL is reused rarely.** A PASSIVE checkpoint runs only once the
//!   WAL has grown past [`CHECKPOINT_BYTES`]. After a complete checkpoint the next commit
//!   restarts the WAL and, with `synchronous=NORMAL`, syncs it on the writer's thread; a
//!   checkpoint every few megabytes instead of every tick keeps those syncs rare.
//! - **Quiet again, the WAL shrinks.** After [`QUIET`] without a commit, a TRUNCATE
//!   checkpoint empties it, so a burst of large mail does not leave a large WAL behind.
//!
//! On stop, a final TRUNCATE checkpoint runs once the writer is done.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::Thread;
use std::time::Duration;

use rusqlite::Connection;

/// The WAL size at which a PASSIVE checkpoint runs while writes go on.
pub const CHECKPOINT_BYTES: u64 = 4 << 20;
/// How long writes are gathered before the WAL's size is looked at again.
const TICK: Duration = Duration::from_millis(100);
/// How long without a commit before the WAL is truncated.
pub const QUIET: Duration = Duration::from_secs(1);

struct Shared {
    stop: AtomicBool,
    dirty: AtomicBool,
    checkpoints: AtomicU64,
}

/// Checkpoints the database from its own thread; see the module docs.
pub struct Checkpointer {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Wakes the checkpointer after a commit. Cheap: one atomic swap, and an unpark only
/// when the checkpointer was not already told.
#[derive(Clone)]
pub struct WalWaker {
    shared: Arc<Shared>,
    thread: Thread,
}

impl WalWaker {
    /// The writer committed: the WAL grew.
    pub fn wrote(&self) {
        if !self.shared.dirty.swap(true, Ordering::AcqRel) {
            self.thread.unpark();
        }
    }
}

impl Checkpointer {
    /// Start checkpointing the database at `path`.
    pub fn spawn(path: &Path) -> Checkpointer {
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            dirty: AtomicBool::new(false),
            checkpoints: AtomicU64::new(0),
        });
        let path = path.to_path_buf();
        let state = shared.clone();
        let thread = std::thread::Builder::new()
            .name("shepherd-checkpoint".into())
            .spawn(move || run(&path, &state))
            .expect("spawning the checkpoint thread");
        Checkpointer {
            shared,
            thread: Some(thread),
        }
    }

    /// The handle the writer's commit hook calls (see [`super::Store::on_commit`]).
    pub fn waker(&self) -> WalWaker {
        WalWaker {
            shared: self.shared.clone(),
            thread: self
                .thread
                .as_ref()
                .expect("the thread runs until stop")
                .thread()
                .clone(),
        }
    }

    /// How many checkpoints have run (for tests and the benchmark).
    pub fn checkpoints(&self) -> u64 {
        self.shared.checkpoints.load(Ordering::Acquire)
    }

    /// Stop after a final checkpoint (call once the writer is done).
    pub fn stop(mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

fn run(path: &Path, shared: &Shared) {
    let conn = match Connection::open(path) {
        Ok(conn) => conn,
        Err(e) => {
            tracing::error!(error = %e, "checkpointer cannot open the database; the WAL will grow");
            return;
        }
    };
    let _ = conn.busy_timeout(Duration::from_secs(1));
    let wal = wal_path(path);
    let checkpoint = |mode: &str| {
        let sql = format!("PRAGMA wal_checkpoint({mode})");
        if let Err(e) = conn.query_row(&sql, [], |_| Ok(())) {
            tracing::warn!(error = %e, "WAL checkpoint failed");
        }
        shared.checkpoints.fetch_add(1, Ordering::AcqRel);
    };
    let stopping = || shared.stop.load(Ordering::Acquire);
    // Commits since the last TRUNCATE: the WAL is not empty.
    let mut unsettled = false;
    while !stopping() {
        if shared.dirty.swap(false, Ordering::AcqRel) {
            unsettled = true;
            // Sleep the whole tick: commits during it set `dirty` again but do not wake
            // this thread, so a busy writer costs one wake-up per tick, not one per commit.
            std::thread::sleep(TICK);
            if wal_bytes(&wal) >= CHECKPOINT_BYTES {
                checkpoint("PASSIVE");
            }
        } else if unsettled {
            // No commit for a tick: if none comes for QUIET either, empty the WAL.
            std::thread::park_timeout(QUIET);
            if !shared.dirty.load(Ordering::Acquire) && !stopping() {
                checkpoint("TRUNCATE");
                unsettled = false;
            }
        } else {
            // Idle: no wake-up until the next commit (or stop).
            std::thread::park();
        }
    }
    checkpoint("TRUNCATE");
}

fn wal_path(db: &Path) -> PathBuf {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    PathBuf::from(wal)
}

fn wal_bytes(wal: &Path) -> u64 {
    std::fs::metadata(wal).map(|m| m.len()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Durability;
    use crate::store::Store;
    use std::time::Instant;

    fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A store whose commits wake a checkpointer, in a temporary directory.
    fn open() -> (tempfile::TempDir, PathBuf, Store, Checkpointer) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let store = Store::open(&path, Durability::Normal).unwrap();
        let checkpointer = Checkpointer::spawn(&path);
        store.on_commit(checkpointer.waker());
        (dir, path, store, checkpointer)
    }

    /// One commit: row `k{i}` holding `blob`.
    fn write(store: &Store, i: usize, blob: &str) {
        store
            .conn
            .execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2)",
                (format!("k{i}"), blob),
            )
            .unwrap();
    }

    #[test]
    fn idle_it_never_checkpoints_and_after_writes_the_wal_is_truncated() {
        let (_dir, path, store, checkpointer) = open();

        // Nothing written: nothing to do, however long it waits.
        std::thread::sleep(QUIET + TICK * 3);
        assert_eq!(
            checkpointer.checkpoints(),
            0,
            "an idle checkpointer does nothing"
        );

        // 2 MB of commits: below the PASSIVE threshold, so no checkpoint while they go on…
        let blob = "x".repeat(20_000);
        for i in 0..100 {
            write(&store, i, &blob);
        }
        let wal = wal_path(&path);
        assert!(wal_bytes(&wal) > 1 << 20, "the WAL holds the commits");
        // …and once quiet, one TRUNCATE empties the WAL.
        wait_until("the WAL to be truncated", || {
            checkpointer.checkpoints() > 0 && wal_bytes(&wal) == 0
        });
        assert_eq!(checkpointer.checkpoints(), 1);
        let rows: i64 = store
            .conn
            .query_row("SELECT COUNT(*) FROM meta WHERE key LIKE 'k%'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(rows, 100, "nothing lost");

        // Quiet again: no further checkpoints.
        std::thread::sleep(QUIET + TICK * 3);
        assert_eq!(checkpointer.checkpoints(), 1);
        checkpointer.stop();
    }

    #[test]
    fn under_steady_writes_a_large_wal_is_checkpointed_passively() {
        let (_dir, path, store, checkpointer) = open();
        let blob = "y".repeat(50_000);
        let wal = wal_path(&path);
        let mut i = 0;
        // Keep writing (never quiet) until a PASSIVE checkpoint has let the WAL restart.
        wait_until("a checkpoint under load", || {
            i += 1;
            write(&store, i, &blob);
            checkpointer.checkpoints() > 0
        });
        // The WAL was reused, not grown without bound.
        assert!(wal_bytes(&wal) < 3 * CHECKPOINT_BYTES);
        checkpointer.stop();
        assert_eq!(wal_bytes(&wal), 0, "stop leaves an empty WAL");
    }
}
