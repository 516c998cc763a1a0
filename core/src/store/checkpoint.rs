//! # The checkpointer
//!
//! Copies the WAL back into the database from its own thread and connection, so the
//! writer (the hub) never pays for a checkpoint inside a commit. It works only when there
//! is something to do:
//!
//! - **Idle, it sleeps.** The writer's commit hook wakes it ([`WalWaker::wrote`]); with no
//!   writes it never wakes up.
//! - **Under writes, the WAL is reused rarely.** A PASSIVE checkpoint runs only once the
//!   WAL has grown by [`CHECKPOINT_BYTES`] since the last checkpoint, counted in the WAL's
//!   frames (not by the WAL file's size: the file keeps its largest size when the WAL
//!   starts over, so after one burst every tick with a commit would checkpoint). After a
//!   complete checkpoint the next commit restarts the WAL and, with `synchronous=NORMAL`,
//!   syncs it on the writer's thread; a checkpoint every few megabytes instead of every
//!   tick keeps those syncs rare.
//! - **Writes that never pause still let the WAL start over.** A PASSIVE checkpoint copies
//!   what was written before it began; when the writer commits again before it is done (a
//!   steady stream of messages), the WAL is never complete and never restarts: it grew by
//!   every commit (140 MB within seconds in the benchmark), and each commit extended the
//!   file instead of overwriting it, which with `durability = "full"` made every sync a
//!   file system journal commit too. So when a PASSIVE checkpoint finds the WAL holding
//!   more than [`RESTART_BYTES`] since its last start, a RESTART follows at once: it
//!   copies only what came in meanwhile, holding the write lock for that long (the hub's
//!   next `BEGIN` waits), and the next commit starts the WAL over.
//! - **Quiet again, the WAL shrinks.** After [`QUIET`] without a commit, a TRUNCATE
//!   checkpoint empties it, so a burst of large mail does not leave a large WAL behind.
//!
//! On stop, a final TRUNCATE checkpoint runs once the writer is done.

use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::Thread;
use std::time::Duration;

use rusqlite::Connection;

/// The WAL size at which a PASSIVE checkpoint runs while writes go on.
pub const CHECKPOINT_BYTES: u64 = 4 << 20;
/// The WAL size (since it last started over) at which a RESTART follows the PASSIVE
/// checkpoint. Each RESTART holds the hub's next commit for the few frames it copies and
/// two syncs (about a millisecond), and the WAL's restart costs the hub a sync: rare
/// enough not to show in the round trip's p99, even under writes that never pause.
pub const RESTART_BYTES: u64 = 16 << 20;
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
    // A RESTART or TRUNCATE waits for the hub's transaction to end and then holds the write
    // lock while it waits for readers: give up soon (the next tick tries again) rather
    // than keep every writer waiting behind a long read.
    let _ = conn.busy_handler(Some(wait_briefly::<CHECKPOINT_WAIT_RETRIES>));
    let wal = wal_path(path);
    let page_bytes: u64 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap_or(4096);
    // Frames in the WAL since it last started over (0 when the checkpoint failed).
    let checkpoint = |mode: &str| -> u64 {
        let sql = format!("PRAGMA wal_checkpoint({mode})");
        let frames = match conn.query_row(&sql, [], |r| r.get::<_, i64>(1)) {
            Ok(frames) => frames.max(0) as u64,
            Err(e) => {
                tracing::warn!(error = %e, "WAL checkpoint failed");
                0
            }
        };
        shared.checkpoints.fetch_add(1, Ordering::AcqRel);
        frames
    };
    let stopping = || shared.stop.load(Ordering::Acquire);
    // Commits since the last TRUNCATE: the WAL is not empty.
    let mut unsettled = false;
    // The WAL's frames when the last checkpoint ran.
    let mut checkpointed: Option<WalFrames> = None;
    while !stopping() {
        if shared.dirty.swap(false, Ordering::AcqRel) {
            unsettled = true;
            // Sleep the whole tick: commits during it set `dirty` again but do not wake
            // this thread, so a busy writer costs one wake-up per tick, not one per commit.
            std::thread::sleep(TICK);
            // Written since the last checkpoint (unreadable: at most the whole file).
            let grown = match wal_frames(&wal, page_bytes) {
                Some(now) => now.since(checkpointed.as_ref()) * page_bytes,
                None => wal_bytes(&wal),
            };
            if grown >= CHECKPOINT_BYTES {
                if checkpoint("PASSIVE") * page_bytes >= RESTART_BYTES {
                    checkpoint("RESTART");
                }
                checkpointed = wal_frames(&wal, page_bytes);
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

/// Retries (of about 50 µs each) the checkpointer waits for the write lock or for readers:
/// about 2 ms.
const CHECKPOINT_WAIT_RETRIES: i32 = 40;

/// A busy handler that retries every 50 µs, `RETRIES` times. SQLite's own (`busy_timeout`)
/// sleeps whole milliseconds, growing to 100 ms: far longer than the other side's hold of
/// the lock (a batch, a short checkpoint), and on the hub every such sleep stalls every
/// connection.
pub fn wait_briefly<const RETRIES: i32>(retries: i32) -> bool {
    if retries >= RETRIES {
        return false;
    }
    std::thread::sleep(Duration::from_micros(50));
    true
}

fn wal_path(db: &Path) -> PathBuf {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    PathBuf::from(wal)
}

/// The WAL's frames since it last started over, read from the `-wal` file itself
/// (<https://sqlite.org/fileformat2.html#walformat>): each start writes new salts into the
/// 32-byte header, and each frame's 24-byte header repeats the salts of the start it
/// belongs to, so this start's frames are the run of frames from the first whose salts
/// match (later ones are left from earlier starts). Read without SQLite's locks (it holds
/// none on this file; its WAL index, the `-shm` file, must not be opened: closing another
/// descriptor of it would drop SQLite's locks on it): a torn read only moves one
/// checkpoint by a tick.
#[derive(Debug, PartialEq)]
struct WalFrames {
    salts: u64,
    frames: u64,
}

impl WalFrames {
    /// Frames written since `then` (all of this start's when the WAL started over since).
    fn since(&self, then: Option<&WalFrames>) -> u64 {
        match then {
            Some(then) if then.salts == self.salts => self.frames.saturating_sub(then.frames),
            _ => self.frames,
        }
    }
}

fn wal_frames(wal: &Path, page_bytes: u64) -> Option<WalFrames> {
    let file = std::fs::File::open(wal).ok()?;
    let len = file.metadata().ok()?.len();
    let be = |at: u64| -> Option<u64> {
        let mut b = [0u8; 8];
        file.read_exact_at(&mut b, at).ok()?;
        Some(u64::from_be_bytes(b))
    };
    let salts = be(16)?;
    let frame = 24 + page_bytes;
    // The first frame that is not this start's: frames before it all are.
    let (mut lo, mut hi) = (0, len.saturating_sub(32) / frame);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if be(32 + mid * frame + 8) == Some(salts) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Some(WalFrames { salts, frames: lo })
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

    /// How many `k{i}` rows [`write`] left.
    fn written_rows(store: &Store) -> i64 {
        store
            .conn
            .query_row("SELECT COUNT(*) FROM meta WHERE key LIKE 'k%'", [], |r| {
                r.get(0)
            })
            .unwrap()
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
        let rows = written_rows(&store);
        assert_eq!(rows, 100, "nothing lost");

        // Quiet again: no further checkpoints.
        std::thread::sleep(QUIET + TICK * 3);
        assert_eq!(checkpointer.checkpoints(), 1);
        checkpointer.stop();
    }

    /// The WAL file keeps its size when the WAL starts over: after one large burst, light
    /// writes (never a quiet second) used to checkpoint every tick, and each complete
    /// checkpoint cost the writer a sync when its next commit restarted the WAL.
    #[test]
    fn after_a_burst_light_writes_do_not_checkpoint_every_tick() {
        let (_dir, path, store, checkpointer) = open();
        let blob = "w".repeat(50_000);
        for i in 0..120 {
            write(&store, i, &blob);
        }
        wait_until("a checkpoint of the burst", || {
            checkpointer.checkpoints() > 0
        });
        assert!(wal_bytes(&wal_path(&path)) >= CHECKPOINT_BYTES);
        let frames = wal_frames(&wal_path(&path), 4096).expect("the WAL's frames");
        assert!(frames.frames > 0, "{frames:?}");

        // Small commits 50 ms apart for 2 s: about 20 ticks with a commit.
        let before = checkpointer.checkpoints();
        for i in 0..40 {
            write(&store, 1_000 + i, "small");
            std::thread::sleep(Duration::from_millis(50));
        }
        let during = checkpointer.checkpoints() - before;
        assert!(during <= 1, "{during} checkpoints for 40 small commits");
        assert_eq!(written_rows(&store), 160, "nothing lost");
        checkpointer.stop();
    }

    #[test]
    fn the_wal_frames_are_counted_from_its_last_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.db");
        let store = Store::open(&path, Durability::Normal).unwrap();
        let wal = wal_path(&path);
        let before = wal_frames(&wal, 4096).expect("a WAL");
        for i in 0..10 {
            write(&store, i, "ten commits");
        }
        let ten = wal_frames(&wal, 4096).unwrap();
        assert_eq!(ten.salts, before.salts, "the same start");
        assert!(ten.frames >= before.frames + 10, "{before:?} → {ten:?}");
        assert_eq!(ten.since(Some(&before)), ten.frames - before.frames);

        // Copied back and started over: the next commit's frames are all there is, though
        // the file keeps its size and the old frames after them.
        store
            .conn
            .query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))
            .unwrap();
        write(&store, 10, "after the start");
        let after = wal_frames(&wal, 4096).unwrap();
        assert_ne!(after.salts, ten.salts, "a new start");
        assert!(after.frames >= 1 && after.frames < ten.frames, "{after:?}");
        assert_eq!(after.since(Some(&ten)), after.frames);
        assert!(wal_bytes(&wal) >= 32 + ten.frames * (24 + 4096));
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

    /// Writes that never stop (a short pause between commits, as between a busy hub's
    /// batches): a PASSIVE checkpoint never catches up with them, so without a RESTART the
    /// WAL never starts over and grows by every commit.
    #[test]
    fn under_writes_that_never_stop_the_wal_starts_over() {
        let (_dir, path, store, checkpointer) = open();
        let blob = "z".repeat(50_000);
        let wal = wal_path(&path);
        let mut largest = 0;
        // About 6 × RESTART_BYTES of page data: a WAL that never started over holds it all
        // (it reached 63 MB of 50 MB written); one that does, RESTART_BYTES and what came
        // in during a checkpoint or two.
        let commits = 2_000;
        for i in 0..commits {
            write(&store, i, &blob);
            largest = largest.max(wal_bytes(&wal));
            std::thread::sleep(Duration::from_micros(500));
        }
        let written = (commits * blob.len()) as u64;
        assert!(
            largest < written / 2,
            "the WAL grew to {largest} bytes under steady writes of {written} bytes"
        );
        let rows = written_rows(&store);
        assert_eq!(rows, commits as i64, "nothing lost");
        checkpointer.stop();
    }
}
