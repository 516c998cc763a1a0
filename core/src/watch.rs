//! # The core's own files, watched
//!
//! A core whose socket or database file is removed, moved or replaced under it (the state
//! directory deleted to start afresh, a backup restored) would go on serving the sessions
//! already connected while every new one finds no socket and starts a second core: two
//! cores, two bots on one token, mail split between a live database and a deleted one.
//! So the core watches the directories holding its socket and its database (inotify: no
//! wake-up while nothing there changes; the hot path writes only inside files) and, when
//! either path no longer leads to the file it opened, stops like on SIGTERM, saying why.
//! Its sessions then wait for the next core, which starts on what is there now.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
use tokio::sync::oneshot;

/// One file the core holds open, as it was when the watch began.
struct Held {
    path: PathBuf,
    what: &'static str,
    dev: u64,
    ino: u64,
}

impl Held {
    /// Why `path` no longer leads to the file, if it does not.
    fn gone(&self) -> Option<String> {
        let shown = self.path.display();
        match std::fs::symlink_metadata(&self.path) {
            Ok(meta) if (meta.dev(), meta.ino()) == (self.dev, self.ino) => None,
            Ok(_) => Some(format!(
                "{} {shown} was replaced by another file",
                self.what
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Some(format!("{} {shown} was removed or moved", self.what))
            }
            // Unreadable for a moment (a permission change): not proof it is gone.
            Err(_) => None,
        }
    }
}

/// Watches the core's socket and database paths ([`Watch::lost`]).
pub struct Watch {
    held: Arc<Vec<Held>>,
    lost: oneshot::Receiver<String>,
}

impl Watch {
    /// Watch `files` (path, what it is), each as it is now. A thread of its own waits in a
    /// blocking read of the inotify descriptor (it costs nothing while nothing changes)
    /// and looks at the paths after each change in their directories.
    pub fn start(files: &[(&Path, &'static str)]) -> std::io::Result<Watch> {
        let fd = inotify::init(CreateFlags::CLOEXEC)?;
        let mut held = Vec::new();
        for &(path, what) in files {
            let meta = std::fs::symlink_metadata(path)?;
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
            let changes = WatchFlags::CREATE
                | WatchFlags::DELETE
                | WatchFlags::MOVED_FROM
                | WatchFlags::MOVED_TO
                | WatchFlags::DELETE_SELF
                | WatchFlags::MOVE_SELF
                | WatchFlags::ONLYDIR;
            inotify::add_watch(&fd, dir.unwrap_or(Path::new(".")), changes)?;
            held.push(Held {
                path: path.to_path_buf(),
                what,
                dev: meta.dev(),
                ino: meta.ino(),
            });
        }
        let held = Arc::new(held);
        let (tell, lost) = oneshot::channel();
        let looking = held.clone();
        std::thread::Builder::new()
            .name("shepherd-watch".into())
            .spawn(move || {
                let mut events = [0u8; 4096];
                loop {
                    if let Some(why) = looking.iter().find_map(Held::gone) {
                        let _ = tell.send(why);
                        return;
                    }
                    match rustix::io::read(&fd, &mut events) {
                        Ok(_) | Err(rustix::io::Errno::INTR) => {}
                        Err(e) => {
                            tracing::warn!(error = %e, "the watch of the socket and database stopped");
                            return;
                        }
                    }
                }
            })?;
        Ok(Watch { held, lost })
    }

    /// Whether `path` (one of the watched) still leads to the file it did.
    pub fn still_holds(&self, path: &Path) -> bool {
        self.held
            .iter()
            .filter(|h| h.path == path)
            .all(|h| h.gone().is_none())
    }

    /// Wait until a watched path no longer leads to its file; why. Pending for ever once
    /// the watch has said so, or stopped.
    pub async fn lost(&mut self) -> String {
        match (&mut self.lost).await {
            Ok(why) => why,
            Err(_) => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn within<T>(f: impl std::future::Future<Output = T>) -> Option<T> {
        tokio::time::timeout(Duration::from_millis(500), f)
            .await
            .ok()
    }

    #[tokio::test]
    async fn a_removed_or_replaced_file_is_noticed_and_others_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let (db, other) = (dir.path().join("shepherd.db"), dir.path().join("other"));
        std::fs::write(&db, b"x").unwrap();
        let mut watch = Watch::start(&[(&db, "the database")]).unwrap();
        // Another file coming and going, and writes inside the file: nothing.
        std::fs::write(&other, b"y").unwrap();
        std::fs::remove_file(&other).unwrap();
        std::fs::write(&db, b"xx").unwrap();
        assert_eq!(within(watch.lost()).await, None);
        // Replaced (a restored backup renamed over it).
        std::fs::write(&other, b"backup").unwrap();
        std::fs::rename(&other, &db).unwrap();
        let why = within(watch.lost()).await.unwrap();
        assert_eq!(
            why,
            format!("the database {} was replaced by another file", db.display())
        );

        let mut watch = Watch::start(&[(&db, "the database")]).unwrap();
        std::fs::remove_dir_all(dir.path()).unwrap();
        let why = within(watch.lost()).await.unwrap();
        assert!(why.ends_with("was removed or moved"), "{why}");
    }
}
