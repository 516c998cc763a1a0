//! When the store fails: what the client is told (what happened to the database, and
//! what the human can do about it: a full disk says which disk to free), and the log of a
//! failing stretch: one ERROR when commits start failing, a reminder with the count at
//! most every [`REMIND_EVERY`], one line when they work again. A full disk fails every
//! batch; a line for each would fill the log on the same disk.

use std::path::Path;
use std::time::{Duration, Instant};

/// How often a failing stretch is logged again.
const REMIND_EVERY: Duration = Duration::from_secs(10);

/// What went wrong with the database, and what to do about it.
pub(super) struct Trouble {
    pub(super) what: String,
    pub(super) todo: &'static str,
}

/// Word a store failure for the client. `db`: the database file (`None`: in memory).
pub(super) fn trouble(e: &rusqlite::Error, db: Option<&Path>) -> Trouble {
    let file = match db {
        Some(path) => path.display().to_string(),
        None => "the database".to_string(),
    };
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DiskFull) => Trouble {
            what: format!("the disk holding {file} is full"),
            todo: "free space on it, then retry",
        },
        Some(rusqlite::ErrorCode::SystemIoFailure) => Trouble {
            what: format!("writing {file} failed ({e})"),
            todo: "check the disk holding it (free space, errors, the core's `ulimit -f`), then retry",
        },
        Some(rusqlite::ErrorCode::ReadOnly) => Trouble {
            what: format!("{file} cannot be written ({e})"),
            todo: "make it and its directory writable by the core's user, then retry",
        },
        _ => Trouble {
            what: format!("the database failed ({e})"),
            todo: "retry",
        },
    }
}

/// The hub's record of a failing stretch of commits, for the log.
#[derive(Default)]
pub(super) struct Health {
    /// Batches failed since the last commit that worked, and when the log last said so.
    failing: Option<Failing>,
}

struct Failing {
    batches: u64,
    since: Instant,
    told: Instant,
}

impl Health {
    /// A batch failed (`what`: its [`Trouble`]).
    pub(super) fn failed(&mut self, what: &Trouble) {
        let now = Instant::now();
        match &mut self.failing {
            None => {
                tracing::error!(
                    "the database failed, every request of the batch was refused: {}; {}",
                    what.what,
                    what.todo
                );
                self.failing = Some(Failing {
                    batches: 1,
                    since: now,
                    told: now,
                });
            }
            Some(failing) => {
                failing.batches += 1;
                if now.duration_since(failing.told) >= REMIND_EVERY {
                    failing.told = now;
                    tracing::error!(
                        batches = failing.batches,
                        secs = failing.since.elapsed().as_secs(),
                        "the database still fails: {}; {}",
                        what.what,
                        what.todo
                    );
                }
            }
        }
    }

    /// A batch committed: a failing stretch, if any, is over.
    pub(super) fn committed(&mut self) {
        if let Some(failing) = self.failing.take() {
            tracing::warn!(
                batches = failing.batches,
                secs = failing.since.elapsed().as_secs(),
                "the database works again; the requests of the failed batches were refused and nothing of them was kept"
            );
        }
    }

    /// Whether commits are failing now (for tests).
    #[cfg(test)]
    fn failing(&self) -> Option<u64> {
        self.failing.as_ref().map(|f| f.batches)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite(code: i32) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn a_full_disk_names_the_file_and_what_to_do() {
        let db = Path::new("/state/shepherd.db");
        let full = trouble(&sqlite(rusqlite::ffi::SQLITE_FULL), Some(db));
        assert_eq!(full.what, "the disk holding /state/shepherd.db is full");
        assert_eq!(full.todo, "free space on it, then retry");
        let io = trouble(&sqlite(rusqlite::ffi::SQLITE_IOERR_WRITE), Some(db));
        assert!(
            io.what.starts_with("writing /state/shepherd.db failed ("),
            "{}",
            io.what
        );
        assert!(io.todo.contains("ulimit -f"));
        let other = trouble(&sqlite(rusqlite::ffi::SQLITE_CORRUPT), None);
        assert!(
            other.what.starts_with("the database failed ("),
            "{}",
            other.what
        );
        assert_eq!(other.todo, "retry");
    }

    #[test]
    fn a_failing_stretch_is_counted_and_ends_with_a_commit() {
        let mut health = Health::default();
        let what = trouble(&sqlite(rusqlite::ffi::SQLITE_FULL), None);
        health.committed();
        assert_eq!(health.failing(), None);
        for _ in 0..3 {
            health.failed(&what);
        }
        assert_eq!(health.failing(), Some(3));
        health.committed();
        assert_eq!(health.failing(), None);
    }
}
