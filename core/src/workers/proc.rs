//! # Process ancestry (Linux `/proc`)
//!
//! A worker's extension registers over the socket; the core knows its peer pid from
//! SO_PEERCRED and accepts the binding only when that pid is the process it launched or
//! runs below it (Pi's wrapper script `exec`s node, a tmux pane's pid is the process tmux
//! started). [`is_descendant`] walks the ppid chain in `/proc/<pid>/stat`.

use std::path::Path;

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
}
