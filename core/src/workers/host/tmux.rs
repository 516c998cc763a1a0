//! # tmux workers: shepherd's private tmux server
//!
//! Every call is `tmux -S <state dir>/tmux.sock …` (never the user's default server, and
//! `TMUX` removed so it works from inside a tmux too). Workers are windows of the session
//! `shepherd`, each named by its worker's label (automatic renaming off), running
//! interactive Pi with the launch's environment passed by `-e` (the server's own
//! environment is whatever the core had when it started the server). `remain-on-exit on`
//! keeps a dead worker's pane, so its exit status and last screen can be read. The socket
//! is made 0600 and the state directory 0700.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tokio::process::Command;

use super::{CAPTURE_MAX_BYTES, HostError, tail_bytes};
use crate::workers::launch::Launch;

/// The tmux session every worker window lives in.
pub(super) const SESSION: &str = "shepherd";
/// Lines [`Tmux::capture`] returns at most.
const CAPTURE_LINES: usize = 80;

/// Whether `tmux -V` runs.
pub(super) fn available() -> bool {
    std::process::Command::new("tmux")
        .arg("-V")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether `program` can be run: a path (with a `/`) to an executable file, or a name
/// found executable on `PATH`. tmux would run a missing one into a dead pane (status 1)
/// without saying why.
pub(super) fn runnable(program: &std::ffi::OsStr) -> std::io::Result<()> {
    let executable = |path: &Path| {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let path = Path::new(program);
    let found = if program.as_encoded_bytes().contains(&b'/') {
        executable(path)
    } else {
        std::env::var_os("PATH")
            .is_some_and(|dirs| std::env::split_paths(&dirs).any(|dir| executable(&dir.join(path))))
    };
    if found {
        Ok(())
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "not found, or not an executable file",
        ))
    }
}

/// A pane as `list-panes` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pane {
    /// `%3`.
    pub id: String,
    pub pid: u32,
    /// `Some(status)` when the pane's process has exited (`None` inside: killed by a
    /// signal, or not known); `None` while it runs.
    pub dead: Option<Option<i32>>,
    /// Dead, but tmux has not collected the exit status or signal yet (it marks a pane
    /// dead when its pty closes, and reads the status when SIGCHLD arrives).
    pub settling: bool,
}

/// The private tmux server.
pub(super) struct Tmux {
    state_dir: PathBuf,
    socket: PathBuf,
}

impl Tmux {
    pub fn new(state_dir: &Path) -> Tmux {
        Tmux {
            state_dir: state_dir.to_path_buf(),
            socket: state_dir.join("tmux.sock"),
        }
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Run `tmux -S <socket> args…`: stdout, or what went wrong.
    async fn run(&self, action: &str, args: &[OsString]) -> Result<String, HostError> {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .env_remove("TMUX")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|e| HostError::Tmux {
                action: action.into(),
                message: if e.kind() == std::io::ErrorKind::NotFound {
                    "tmux is not installed: install it, or set workers.backend = \"headless\""
                        .into()
                } else {
                    e.to_string()
                },
            })?;
        if !out.status.success() {
            return Err(HostError::Tmux {
                action: action.into(),
                message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Whether this tmux has the `extended-keys` option (3.2 and later).
    async fn extended_keys(&self) -> bool {
        let out = Command::new("tmux").arg("-V").output().await;
        out.is_ok_and(|o| has_extended_keys(&String::from_utf8_lossy(&o.stdout)))
    }

    async fn has_session(&self) -> bool {
        self.run(
            "has-session",
            &os(&["has-session", "-t", &format!("={SESSION}")]),
        )
        .await
        .is_ok()
    }

    /// Open a window named `label` running `launch` (the session and the server too when
    /// missing); returns its pane.
    pub async fn open_window(&self, label: &str, launch: &Launch) -> Result<Pane, HostError> {
        crate::files::private_dir(&self.state_dir).map_err(|e| HostError::Tmux {
            action: "setup".into(),
            message: e.to_string(),
        })?;
        let mut args: Vec<OsString> = Vec::new();
        let fresh = !self.has_session().await;
        // Set before the window exists, so even a worker that dies at once keeps its pane;
        // extended keys, or interactive Pi warns that modified Enter keys may not work.
        args.extend(os(&[
            "start-server",
            ";",
            "set-option",
            "-g",
            "remain-on-exit",
            "on",
            ";",
        ]));
        if self.extended_keys().await {
            args.extend(os(&["set-option", "-s", "extended-keys", "on", ";"]));
        }
        if fresh {
            args.extend(os(&[
                "new-session",
                "-d",
                "-s",
                SESSION,
                "-x",
                "200",
                "-y",
                "50",
            ]));
        } else {
            args.extend(os(&["new-window", "-d", "-t", &format!("={SESSION}:")]));
        }
        args.extend(os(&[
            "-n",
            label,
            "-P",
            "-F",
            "#{pane_id} #{pane_pid}",
            "-c",
        ]));
        args.push(launch.cwd.clone().into());
        for (key, value) in &launch.env {
            let mut kv = OsString::from(format!("{key}="));
            kv.push(value);
            args.push("-e".into());
            args.push(kv);
        }
        args.push("--".into());
        args.extend(launch.argv.iter().cloned());
        let action = if fresh { "new-session" } else { "new-window" };
        let out = self.run(action, &args).await?;
        self.private_socket();
        let (id, pid) = parse_created(&out).ok_or_else(|| HostError::Tmux {
            action: action.into(),
            message: format!("unexpected output {out:?}"),
        })?;
        let window_opts = os(&[
            "set-option",
            "-w",
            "-t",
            &id,
            "automatic-rename",
            "off",
            ";",
            "set-option",
            "-w",
            "-t",
            &id,
            "allow-rename",
            "off",
            ";",
            "set-option",
            "-p",
            "-t",
            &id,
            "remain-on-exit",
            "on",
        ]);
        if let Err(e) = self.run("set-option", &window_opts).await {
            // The pane may already be gone; the poll reports it.
            tracing::debug!(pane = %id, error = %e, "tmux window options not set");
        }
        Ok(Pane {
            id,
            pid,
            dead: None,
            settling: false,
        })
    }

    /// The socket only its owner may use (tmux creates it with the umask).
    fn private_socket(&self) {
        if let Ok(meta) = std::fs::metadata(&self.socket)
            && meta.permissions().mode() & 0o777 != 0o600
        {
            let _ = std::fs::set_permissions(&self.socket, std::fs::Permissions::from_mode(0o600));
        }
    }

    /// Every pane of the `shepherd` session, none when no server or session runs. While
    /// one of the `watched` panes is dead with its status not collected yet, asked again
    /// (up to ~0.5 s; a process that exits within moments of its fork can lose the race
    /// with tmux recording its pid, and then its status is never known).
    pub async fn list_panes(&self, watched: &[String]) -> Result<Vec<Pane>, HostError> {
        for _ in 0..10 {
            let panes = self.list_panes_once().await?;
            if !panes.iter().any(|p| p.settling && watched.contains(&p.id)) {
                return Ok(panes);
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        self.list_panes_once().await
    }

    async fn list_panes_once(&self) -> Result<Vec<Pane>, HostError> {
        if !self.socket.exists() || !self.has_session().await {
            return Ok(Vec::new());
        }
        let args = os(&[
            "list-panes",
            "-s",
            "-t",
            &format!("={SESSION}"),
            "-F",
            "#{pane_id} #{pane_pid} #{pane_dead} #{pane_dead_status} #{pane_dead_signal}",
        ]);
        match self.run("list-panes", &args).await {
            Ok(out) => Ok(out.lines().filter_map(parse_pane).collect()),
            // The session ended between the two calls.
            Err(_) if !self.has_session().await => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// Kill a pane (its process gets SIGHUP); a pane already gone is fine.
    pub async fn kill_pane(&self, pane: &str) {
        if let Err(e) = self.run("kill-pane", &os(&["kill-pane", "-t", pane])).await {
            tracing::debug!(pane, error = %e, "tmux kill-pane");
        }
    }

    /// The pane's last [`CAPTURE_LINES`] lines (wrapped lines joined), at most
    /// [`CAPTURE_MAX_BYTES`]; `None` when the pane is gone.
    pub async fn capture(&self, pane: &str) -> Option<String> {
        let start = format!("-{CAPTURE_LINES}");
        let out = self
            .run(
                "capture-pane",
                &os(&["capture-pane", "-p", "-J", "-t", pane, "-S", &start]),
            )
            .await
            .ok()?;
        Some(last_lines(&out, CAPTURE_LINES))
    }
}

/// `tmux 3.3a` (or `tmux next-3.4`) is 3.2 or later.
fn has_extended_keys(version: &str) -> bool {
    let number = version
        .trim()
        .trim_start_matches("tmux ")
        .trim_start_matches("next-");
    let mut parts = number.split('.');
    let major: u32 = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    let minor: u32 = parts
        .next()
        .map(|m| m.trim_end_matches(|c: char| !c.is_ascii_digit()))
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    (major, minor) >= (3, 2)
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

/// `%3 12345` from `-P -F '#{pane_id} #{pane_pid}'`.
fn parse_created(out: &str) -> Option<(String, u32)> {
    let mut parts = out.split_whitespace();
    let id = parts.next().filter(|id| id.starts_with('%'))?;
    let pid = parts.next()?.parse().ok()?;
    Some((id.to_string(), pid))
}

/// `%3 12345 1 2 ` (`#{pane_id} #{pane_pid} #{pane_dead} #{pane_dead_status}
/// #{pane_dead_signal}`): a status for a pane that exited, a signal for one a signal
/// ended, neither for a live one (or a dead one whose status tmux has not read yet).
fn parse_pane(line: &str) -> Option<Pane> {
    let mut parts = line.split(' ');
    let id = parts.next().filter(|id| id.starts_with('%'))?.to_string();
    let pid = parts.next()?.parse().ok()?;
    let dead = parts.next()? == "1";
    let status: Option<i32> = parts.next().and_then(|s| s.trim().parse().ok());
    let signal: Option<i32> = parts.next().and_then(|s| s.trim().parse().ok());
    Some(Pane {
        id,
        pid,
        dead: dead.then_some(status),
        settling: dead && status.is_none() && signal.is_none(),
    })
}

/// The last `n` lines of `text` without the blank lines below them and without trailing
/// spaces (a joined capture keeps the pane's padding), at most [`CAPTURE_MAX_BYTES`].
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let end = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(0, |i| i + 1);
    let start = end.saturating_sub(n);
    let joined = lines[start..end].join("\n");
    tail_bytes(&joined, CAPTURE_MAX_BYTES).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panes_parse_live_exited_and_killed() {
        assert_eq!(
            parse_pane("%3 123 0  "),
            Some(Pane {
                id: "%3".into(),
                pid: 123,
                dead: None,
                settling: false,
            })
        );
        let exited = parse_pane("%4 9 1 3 ").unwrap();
        assert_eq!((exited.dead, exited.settling), (Some(Some(3)), false));
        let killed = parse_pane("%5 9 1  9").unwrap();
        assert_eq!((killed.dead, killed.settling), (Some(None), false));
        let unread = parse_pane("%6 9 1  ").unwrap();
        assert_eq!((unread.dead, unread.settling), (Some(None), true));
        assert_eq!(parse_pane("garbage"), None);
        assert_eq!(parse_created("%7 4242\n"), Some(("%7".into(), 4242)));
        assert_eq!(parse_created("oops"), None);
    }

    #[test]
    fn runnable_programs_by_path_or_on_path() {
        use std::ffi::OsStr;
        assert!(runnable(OsStr::new("sh")).is_ok());
        assert!(runnable(OsStr::new("/bin/sh")).is_ok());
        assert!(runnable(OsStr::new("no-such-program-here")).is_err());
        assert!(runnable(OsStr::new("/nonexistent/pi")).is_err());
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(runnable(plain.as_os_str()).is_err(), "not executable");
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(runnable(plain.as_os_str()).is_ok());
        assert!(runnable(OsStr::new("/tmp")).is_err(), "a directory");
    }

    #[test]
    fn extended_keys_from_tmux_3_2() {
        assert!(has_extended_keys("tmux 3.3a\n"));
        assert!(has_extended_keys("tmux 3.2"));
        assert!(has_extended_keys("tmux next-3.6"));
        assert!(!has_extended_keys("tmux 3.1c"));
        assert!(!has_extended_keys("tmux 2.9a"));
        assert!(!has_extended_keys("garbage"));
    }

    #[test]
    fn captures_keep_the_last_lines_without_trailing_blanks() {
        let text: String =
            (1..=100).map(|i| format!("line {i}\n")).collect::<String>() + "\n\n  \n";
        let got = last_lines(&text, 80);
        assert!(
            got.starts_with("line 21\n") && got.ends_with("line 100"),
            "{got}"
        );
        assert_eq!(last_lines("a   \n  b  \n", 80), "a\n  b");
        assert_eq!(last_lines("\n\n", 80), "");
    }
}
