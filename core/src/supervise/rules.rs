//! The pairing rules that need no hub state: how a goal is read (text or file), when a
//! steer repeats an earlier one, whether a child `pi` process still runs under the worker,
//! and when a timer view may be skipped. Pure functions over their inputs (and `/proc`
//! for the process check), tested here.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// More verdicts than this in one look is a runaway.
pub const MAX_VERDICTS_PER_LOOK: u32 = 5;
/// Unchanged timer views skipped in a row before one is sent anyway.
pub const MAX_TIMER_SKIPS: u32 = 3;
/// Largest goal file read.
pub const MAX_GOAL_FILE: u64 = 256 * 1024;
/// Longest goal given as text, in characters.
pub const MAX_GOAL_CHARS: usize = 64 * 1024;
/// Steers a new steer is compared with.
pub const REPEAT_WINDOW: usize = 3;
/// Share of a steer's words found in an earlier steer that makes it a repetition.
pub const REPEAT_SHARE: f64 = 0.6;

/// A goal as given, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Goal {
    pub text: String,
    /// The file it was read from, for a goal given as a path.
    pub file: Option<String>,
}

/// Why a goal could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoalError {
    Empty,
    TooLong,
    /// The message names the absolute path.
    Unreadable(String),
}

/// Whether a goal is a file path: one word containing `/` or `.`.
pub fn is_goal_path(goal: &str) -> bool {
    let goal = goal.trim();
    !goal.is_empty()
        && !goal.chars().any(char::is_whitespace)
        && (goal.contains('/') || goal.contains('.'))
}

/// Resolve a goal: text as is, or a path (relative to `base`) read whole.
pub fn resolve_goal(goal: &str, base: &Path) -> Result<Goal, GoalError> {
    let trimmed = goal.trim();
    if trimmed.is_empty() {
        return Err(GoalError::Empty);
    }
    if !is_goal_path(trimmed) {
        if trimmed.chars().count() > MAX_GOAL_CHARS {
            return Err(GoalError::TooLong);
        }
        return Ok(Goal {
            text: trimmed.to_string(),
            file: None,
        });
    }
    let path = expand(trimmed, base);
    let shown = path.display().to_string();
    let meta = std::fs::metadata(&path)
        .map_err(|e| GoalError::Unreadable(format!("cannot read the goal file {shown}: {e}")))?;
    if !meta.is_file() {
        return Err(GoalError::Unreadable(format!(
            "the goal file {shown} is not a regular file"
        )));
    }
    if meta.len() > MAX_GOAL_FILE {
        return Err(GoalError::Unreadable(format!(
            "the goal file {shown} has {} bytes; at most {MAX_GOAL_FILE} are read",
            meta.len()
        )));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| {
        GoalError::Unreadable(format!("cannot read the goal file {shown} as UTF-8: {e}"))
    })?;
    if text.trim().is_empty() {
        return Err(GoalError::Unreadable(format!(
            "the goal file {shown} is empty"
        )));
    }
    Ok(Goal {
        text: text.trim_end().to_string(),
        file: Some(shown),
    })
}

fn expand(path: &str, base: &Path) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect()
}

/// The earlier steer (index into `recent`) that `steer` mostly repeats, if any: at least
/// [`REPEAT_SHARE`] of its words already appeared there.
pub fn repeats(steer: &str, recent: &[&str]) -> Option<usize> {
    let new = words(steer);
    if new.len() < 3 {
        return None;
    }
    recent.iter().position(|old| {
        let old = words(old);
        let shared = new.iter().filter(|w| old.contains(*w)).count();
        shared as f64 / new.len() as f64 >= REPEAT_SHARE
    })
}

/// Processes under `root` (children, grandchildren, …) that are `pi`: their program or
/// script is named `pi`, or they run the pi-coding-agent package. Returns `(pid, command)`.
pub fn child_pi_processes(root: u32) -> Vec<(u32, String)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut parent_of = HashMap::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(ppid) = parent(pid) {
            parent_of.insert(pid, ppid);
        }
    }
    let mut found = Vec::new();
    for &pid in parent_of.keys() {
        if pid == root || !descends_from(pid, root, &parent_of) {
            continue;
        }
        let Some(argv) = cmdline(pid) else { continue };
        if is_pi(&argv) {
            found.push((pid, argv.join(" ")));
        }
    }
    found.sort();
    found
}

fn descends_from(mut pid: u32, root: u32, parent_of: &HashMap<u32, u32>) -> bool {
    for _ in 0..64 {
        let Some(&ppid) = parent_of.get(&pid) else {
            return false;
        };
        if ppid == root {
            return true;
        }
        if ppid <= 1 {
            return false;
        }
        pid = ppid;
    }
    false
}

fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`; comm may contain spaces and parentheses.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

fn cmdline(pid: u32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        raw.split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect(),
    )
}

/// Whether an argv runs Pi: `pi …`, `node …/pi …`, or the pi-coding-agent package.
pub fn is_pi(argv: &[String]) -> bool {
    argv.iter().take(2).any(|a| {
        Path::new(a).file_name().is_some_and(|n| n == "pi")
            || a.contains("pi-coding-agent/dist/cli")
            || a.contains("pi-coding-agent/bin")
    })
}

/// Whether a due timer view should be skipped: nothing changed, and fewer than
/// [`MAX_TIMER_SKIPS`] were skipped in a row.
pub fn skip_timer_view(unchanged: bool, skipped_in_a_row: u32) -> bool {
    unchanged && skipped_in_a_row < MAX_TIMER_SKIPS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_goal_is_a_path_when_it_is_one_word_with_a_slash_or_dot() {
        assert!(is_goal_path("docs/GOAL.md"));
        assert!(is_goal_path("GOAL.md"));
        assert!(is_goal_path("./goal"));
        assert!(!is_goal_path("make the tests pass."));
        assert!(!is_goal_path("refactor"));
        assert!(!is_goal_path("  "));
    }

    #[test]
    fn goal_files_are_read_whole_and_missing_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("docs")).unwrap();
        std::fs::write(dir.path().join("docs/GOAL.md"), "# Goal\n\nAll green.\n\n").unwrap();
        let goal = resolve_goal("docs/GOAL.md", dir.path()).unwrap();
        assert_eq!(goal.text, "# Goal\n\nAll green.");
        assert_eq!(
            goal.file.as_deref(),
            Some(dir.path().join("docs/GOAL.md").to_str().unwrap())
        );
        let Err(GoalError::Unreadable(msg)) = resolve_goal("nope.md", dir.path()) else {
            panic!("a missing file is an error");
        };
        assert!(
            msg.contains(&dir.path().join("nope.md").display().to_string()),
            "{msg}"
        );
        assert_eq!(
            resolve_goal("  ship the fix  ", dir.path()).unwrap(),
            Goal {
                text: "ship the fix".into(),
                file: None
            }
        );
        assert_eq!(resolve_goal(" ", dir.path()), Err(GoalError::Empty));
        std::fs::write(dir.path().join("empty.md"), "\n").unwrap();
        assert!(matches!(
            resolve_goal("empty.md", dir.path()),
            Err(GoalError::Unreadable(_))
        ));
    }

    #[test]
    fn a_steer_that_reuses_most_words_of_a_recent_one_is_a_repeat() {
        let recent = [
            "Run the SSO tests before refactoring further",
            "Commit the parser fix",
        ];
        assert_eq!(
            repeats(
                "Please run the SSO tests before any further refactoring",
                &recent
            ),
            Some(0)
        );
        assert_eq!(repeats("Commit the parser fix now", &recent), Some(1));
        assert_eq!(
            repeats("Open a pull request with the migration notes", &recent),
            None
        );
        assert_eq!(repeats("ok", &recent), None, "too short to judge");
    }

    #[test]
    fn pi_processes_are_recognised_by_program_or_package() {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(is_pi(&argv(&["pi", "-p", "hello"])));
        assert!(is_pi(&argv(&[
            "/usr/bin/node",
            "/home/a/.npm/bin/pi",
            "--mode",
            "rpc"
        ])));
        assert!(is_pi(&argv(&[
            "node",
            "/x/node_modules/@earendil-works/pi-coding-agent/dist/cli.js"
        ])));
        assert!(!is_pi(&argv(&["bash", "-c", "pip install pi"])));
        assert!(!is_pi(&argv(&["cargo", "test"])));
    }

    #[test]
    fn a_child_pi_under_a_process_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let fake_pi = dir.path().join("pi");
        std::fs::write(&fake_pi, "#!/bin/sh\nsleep 30\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake_pi, std::fs::Permissions::from_mode(0o755)).unwrap();
        // A shell (the "worker") running the fake `pi` as a grandchild.
        use std::os::unix::process::CommandExt;
        let mut worker = std::process::Command::new("sh")
            .process_group(0)
            .arg("-c")
            // Retried: exec can fail with ETXTBSY while another test thread's fork still
            // holds the just-written script open.
            .arg(format!(
                "sh -c 'until {} --mode rpc; do sleep 0.1; done'; sleep 30",
                fake_pi.display()
            ))
            .spawn()
            .unwrap();
        let root = worker.id();
        let mut found = Vec::new();
        // Up to 10 s: a loaded machine can take long to start two shells.
        for _ in 0..500 {
            found = child_pi_processes(root);
            if !found.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = std::process::Command::new("kill")
            .arg("--")
            .arg(format!("-{root}"))
            .status();
        let _ = worker.kill();
        let _ = worker.wait();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].1.contains("--mode rpc"), "{found:?}");
        assert!(child_pi_processes(std::process::id()).is_empty());
    }

    #[test]
    fn unchanged_timer_views_are_skipped_at_most_three_times_in_a_row() {
        assert!(skip_timer_view(true, 0));
        assert!(skip_timer_view(true, 2));
        assert!(!skip_timer_view(true, 3));
        assert!(!skip_timer_view(false, 0));
    }
}
