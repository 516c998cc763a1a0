//! # Process ancestry (Linux `/proc`)
//!
//! A worker's extension registers over the socket; the core knows its peer pid from
//! SO_PEERCRED and accepts the binding only when that pid is the process it launched or
//! runs below it (Pi's wrapper script `exec`s node, a tmux pane's pid is the process tmux
//! started). [`is_descendant`] walks the ppid chain in `/proc/<pid>/stat`;
//! [`process_alive`] says whether a pid still runs; [`prove_launch`] is the whole check a managed worker's or an assigned Lead's
//! registration passes (nonce, ancestry, no other live process bound).

use std::path::Path;

/// Whether process `pid` exists (its `/proc` entry).
pub fn process_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// The parent pid of `pid` from `/proc/<pid>/stat`, or `None` when the process is gone
/// (or the file cannot be read or parsed).
pub fn parent_of(pid: u32) -> Option<u32> {
    parent_in(Path::new("/proc"), pid)
}

fn parent_in(proc_root: &Path, pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(proc_root.join(pid.to_string()).join("stat")).ok()?;
    parse_ppid(&stat)
}

/// The ppid field of a `/proc/<pid>/stat` line: `pid (comm) state ppid …`. The command
/// name may itself hold spaces and parentheses, so fields are counted after the last `)`.
fn parse_ppid(stat: &str) -> Option<u32> {
    let after = &stat[stat.rfind(')')? + 1..];
    let mut fields = after.split_whitespace();
    let _state = fields.next()?;
    fields.next()?.parse().ok()
}

/// Whether `pid` is `ancestor` itself or runs below it (its parent, its parent's parent, …
/// is `ancestor`). False when either is gone, and for pid 0. Linux only (`/proc`).
pub fn is_descendant(pid: u32, ancestor: u32) -> bool {
    if pid == 0 || ancestor == 0 {
        return false;
    }
    let mut current = pid;
    // A ppid chain is short; the bound only guards against a pid reused into a cycle
    // while it is being walked.
    for _ in 0..4096 {
        if current == ancestor {
            return true;
        }
        match parent_of(current) {
            Some(parent) if parent != 0 && parent != current => current = parent,
            _ => return false,
        }
    }
    false
}

/// Why a registration is not the process shepherd launched for a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchProof {
    /// The one-time nonce is missing or another one.
    WrongNonce,
    /// The registering process is neither the launched one nor below it.
    NotOurs,
    /// Another live process (this pid) is already bound to the session.
    Taken(u32),
}

impl LaunchProof {
    /// The reason in a sentence (for `WrongNonce` and `NotOurs`).
    pub fn why(self) -> &'static str {
        match self {
            LaunchProof::WrongNonce => "the launch nonce does not match",
            LaunchProof::NotOurs => "the process is not the one shepherd launched",
            LaunchProof::Taken(_) => "another process holds the session",
        }
    }
}

/// Whether a registration with `nonce` from `pid` is the process shepherd launched
/// (`launched`, with `expected` as its nonce; an empty one matches nothing) and no other
/// live process is bound to the session (`bound`; `alive` says whether a pid runs).
pub fn prove_launch(
    nonce: Option<&str>,
    expected: &str,
    pid: Option<u32>,
    launched: Option<u32>,
    bound: Option<u32>,
    alive: impl Fn(u32) -> bool,
) -> Result<(), LaunchProof> {
    if expected.is_empty() || nonce != Some(expected) {
        return Err(LaunchProof::WrongNonce);
    }
    let ours = match (pid, launched) {
        (Some(p), Some(l)) => p == l || is_descendant(p, l),
        _ => false,
    };
    if !ours {
        return Err(LaunchProof::NotOurs);
    }
    match bound {
        Some(b) if Some(b) != pid && alive(b) => Err(LaunchProof::Taken(b)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn ppid_is_read_after_the_command_name_whatever_it_holds() {
        assert_eq!(parse_ppid("42 (pi) S 7 42 42 0 -1"), Some(7));
        assert_eq!(parse_ppid("42 (a b) c) (d) R 99 1 1"), Some(99));
        assert_eq!(parse_ppid("42 (pi"), None);
        assert_eq!(parse_ppid(""), None);
    }

    /// The children of `pid` (by scanning /proc for processes whose parent it is).
    fn children_of(pid: u32) -> Vec<u32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&p| parent_of(p) == Some(pid))
            .collect()
    }

    #[test]
    fn a_child_of_a_child_descends_from_both_and_not_the_other_way() {
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "sleep 5 & wait"])
            .spawn()
            .unwrap();
        let sh_pid = sh.id();
        let deadline = Instant::now() + Duration::from_secs(5);
        let sleep_pid = loop {
            if let Some(&pid) = children_of(sh_pid).first() {
                break pid;
            }
            assert!(Instant::now() < deadline, "sh never started its sleep");
            std::thread::sleep(Duration::from_millis(10));
        };
        let me = std::process::id();
        assert!(is_descendant(sleep_pid, sh_pid), "grandchild below sh");
        assert!(is_descendant(sleep_pid, me), "grandchild below the test");
        assert!(is_descendant(sh_pid, me));
        assert!(is_descendant(sh_pid, sh_pid), "a process counts as its own");
        assert!(
            !is_descendant(sh_pid, sleep_pid),
            "a parent is not below its child"
        );
        assert!(!is_descendant(me, sh_pid));
        assert!(!is_descendant(0, me) && !is_descendant(me, 0));

        // The sleep's ancestors are gone: nothing descends from sh any more.
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(sleep_pid as i32).unwrap(),
            rustix::process::Signal::KILL,
        )
        .unwrap();
        sh.wait().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while parent_of(sleep_pid).is_some() {
            assert!(
                Instant::now() < deadline,
                "the killed sleep never went away"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!is_descendant(sleep_pid, sh_pid));
    }

    #[test]
    fn a_launch_is_proved_by_the_nonce_the_ancestry_and_no_other_bound_process() {
        let me = std::process::id();
        let alive = |_| true;
        let dead = |_| false;
        let prove = |nonce, expected, pid, launched, bound, alive: &dyn Fn(u32) -> bool| {
            prove_launch(nonce, expected, pid, launched, bound, alive)
        };
        assert_eq!(
            prove(Some("n1"), "n1", Some(me), Some(me), None, &alive),
            Ok(())
        );
        assert_eq!(
            prove(Some("n2"), "n1", Some(me), Some(me), None, &alive),
            Err(LaunchProof::WrongNonce)
        );
        assert_eq!(
            prove(None, "n1", Some(me), Some(me), None, &alive),
            Err(LaunchProof::WrongNonce)
        );
        // A spent nonce (a stopped Lead's) matches nothing, not even an empty one.
        assert_eq!(
            prove(Some(""), "", Some(me), Some(me), None, &alive),
            Err(LaunchProof::WrongNonce)
        );
        assert_eq!(
            prove(Some("n1"), "n1", None, Some(me), None, &alive),
            Err(LaunchProof::NotOurs)
        );
        // Launched: a child of this process; this process is not below it.
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        assert_eq!(
            prove(Some("n1"), "n1", Some(me), Some(other.id()), None, &alive),
            Err(LaunchProof::NotOurs)
        );
        let _ = other.kill();
        let _ = other.wait();
        assert_eq!(
            prove(Some("n1"), "n1", Some(me), Some(me), Some(me + 1), &alive),
            Err(LaunchProof::Taken(me + 1))
        );
        assert_eq!(
            prove(Some("n1"), "n1", Some(me), Some(me), Some(me + 1), &dead),
            Ok(())
        );
        assert_eq!(
            prove(Some("n1"), "n1", Some(me), Some(me), Some(me), &alive),
            Ok(())
        );
    }
}
