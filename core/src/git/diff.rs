//! A session's changes as one patch, for the human's `diff`: from where its branch left
//! the primary branch (the merge base of its HEAD and the primary checkout's HEAD; its own
//! HEAD in the primary checkout) to its working tree as it is now, untracked files
//! included (ignored ones not) and binary files as git's binary patches, so that
//! `git apply` takes it in a clean clone at that base. Read only: no index, file or ref is
//! written. The patch is cut once it would take more than [`MAX_PATCH`] bytes as a JSON
//! string (then `complete` is false and it does not apply), so that it fits one frame.

use std::path::Path;

use git2::{DiffFormat, DiffOptions, DiffStatsFormat, Repository};

use super::worktrees::open_primary;

/// The largest patch carried whole, counted as a JSON string's bytes ([`json_len`]).
pub const MAX_PATCH: usize = 768 * 1024;

/// What `bytes` take inside a JSON string: quotes, backslashes and the usual control
/// characters are two bytes, other control characters six.
fn json_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..0x20 => 6,
            _ => 1,
        })
        .sum()
}

/// A session's changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Changes {
    /// The repository's work tree the session is in.
    pub root: String,
    /// The session's branch (`None`: detached HEAD).
    pub branch: Option<String>,
    /// What the changes are measured from: `main` (the primary checkout's branch) or
    /// `HEAD` (the session works in the primary checkout).
    pub base_name: String,
    /// The commit the patch applies to.
    pub base: String,
    pub files: usize,
    pub insertions: usize,
    pub deletions: usize,
    /// `git diff --stat`'s lines.
    pub stat: String,
    pub patch: Vec<u8>,
    /// The whole patch is here (not cut at [`MAX_PATCH`]).
    pub complete: bool,
}

/// The changes of the work tree at `cwd` (or above it).
pub fn changes(cwd: &Path) -> Result<Changes, String> {
    let repo = Repository::discover(cwd)
        .map_err(|_| format!("{} is not in a git repository", cwd.display()))?;
    let root = repo
        .workdir()
        .ok_or("the repository is bare: it has no working tree to compare")?
        .to_path_buf();
    let head = repo
        .head()
        .and_then(|h| h.peel_to_commit())
        .map_err(|e| format!("the repository has no commit yet ({})", e.message()))?;
    let branch = repo
        .head()
        .ok()
        .filter(git2::Reference::is_branch)
        .and_then(|h| h.shorthand().ok().map(str::to_string));
    let primary = open_primary(&root).map_err(|e| e.to_string())?;
    let same = primary
        .workdir()
        .and_then(|w| std::fs::canonicalize(w).ok())
        .zip(std::fs::canonicalize(&root).ok())
        .is_some_and(|(a, b)| a == b);
    let (base_name, base) = if same {
        ("HEAD".to_string(), head.id())
    } else {
        let tip = primary
            .head()
            .and_then(|h| h.peel_to_commit())
            .map_err(|e| format!("the primary checkout has no commit ({})", e.message()))?;
        let name = primary
            .head()
            .ok()
            .and_then(|h| h.shorthand().ok().map(str::to_string))
            .unwrap_or_else(|| "the primary checkout".into());
        let base = repo
            .merge_base(head.id(), tip.id())
            .map_err(|e| format!("{name} and this branch share no history ({})", e.message()))?;
        (name, base)
    };
    let base_tree = repo
        .find_commit(base)
        .and_then(|c| c.tree())
        .map_err(|e| e.message().to_string())?;
    let mut opts = DiffOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .show_untracked_content(true)
        .show_binary(true);
    let diff = repo
        .diff_tree_to_workdir_with_index(Some(&base_tree), Some(&mut opts))
        .map_err(|e| e.message().to_string())?;
    let stats = diff.stats().map_err(|e| e.message().to_string())?;
    let stat = stats
        .to_buf(DiffStatsFormat::FULL, 72)
        .ok()
        .and_then(|b| b.as_str().ok().map(str::to_string))
        .unwrap_or_default();
    let mut patch = Vec::new();
    let (mut complete, mut size) = (true, 0);
    let printed = diff.print(DiffFormat::Patch, |_, _, line| {
        let origin = line.origin();
        let extra = usize::from(matches!(origin, '+' | '-' | ' '));
        size += extra + json_len(line.content());
        if size > MAX_PATCH {
            complete = false;
            return false;
        }
        if extra == 1 {
            patch.push(origin as u8);
        }
        patch.extend_from_slice(line.content());
        true
    });
    if let Err(e) = printed
        && complete
    {
        return Err(e.message().to_string());
    }
    Ok(Changes {
        root: root.display().to_string(),
        branch,
        base_name,
        base: base.to_string(),
        files: stats.files_changed(),
        insertions: stats.insertions(),
        deletions: stats.deletions(),
        stat,
        patch,
        complete,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::worktrees::fixture;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[test]
    fn a_worktrees_branch_and_its_uncommitted_edits_apply_to_a_clean_clone() {
        let dir = tempfile::tempdir().unwrap();
        let (root, _repo) = fixture::repo(dir.path());
        let wt = dir.path().join("wt");
        git(
            &root,
            &["worktree", "add", "-q", "-b", "feat", wt.to_str().unwrap()],
        );
        std::fs::write(wt.join("b.txt"), "committed\n").unwrap();
        git(&wt, &["add", "b.txt"]);
        git(
            &wt,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "b",
            ],
        );
        std::fs::write(wt.join("a.txt"), "one\nedited\n").unwrap();
        std::fs::create_dir_all(wt.join("new/dir")).unwrap();
        std::fs::write(wt.join("new/dir/c.txt"), "untracked\n").unwrap();
        std::fs::write(wt.join("blob.bin"), [0u8, 1, 2, 255, 0, 7]).unwrap();
        std::fs::create_dir_all(wt.join("target")).unwrap();
        std::fs::write(wt.join("target/ignored.o"), "x").unwrap();
        let before = git(&wt, &["status", "--porcelain"]);

        let c = changes(&wt).unwrap();
        assert_eq!(c.branch.as_deref(), Some("feat"));
        assert_eq!(c.base_name, "main");
        assert_eq!((c.files, c.complete), (4, true), "{}", c.stat);
        assert!(
            c.stat.contains("a.txt") && c.stat.contains("new/dir/c.txt"),
            "{}",
            c.stat
        );
        assert!(!String::from_utf8_lossy(&c.patch).contains("ignored.o"));
        assert_eq!(
            git(&wt, &["status", "--porcelain"]),
            before,
            "nothing written"
        );

        let clone = dir.path().join("clone");
        git(
            dir.path(),
            &[
                "clone",
                "-q",
                root.to_str().unwrap(),
                clone.to_str().unwrap(),
            ],
        );
        git(&clone, &["checkout", "-q", &c.base]);
        let patch = dir.path().join("p.diff");
        std::fs::write(&patch, &c.patch).unwrap();
        git(&clone, &["apply", "--check", patch.to_str().unwrap()]);
        git(&clone, &["apply", patch.to_str().unwrap()]);
        assert_eq!(
            std::fs::read(clone.join("blob.bin")).unwrap(),
            [0u8, 1, 2, 255, 0, 7]
        );
        assert_eq!(
            std::fs::read_to_string(clone.join("a.txt")).unwrap(),
            "one\nedited\n"
        );
    }

    #[test]
    fn in_the_primary_checkout_only_what_is_not_committed_and_outside_a_repository_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        let (root, _repo) = fixture::repo(dir.path());
        let c = changes(&root).unwrap();
        assert_eq!((c.base_name.as_str(), c.files), ("HEAD", 0));
        assert!(c.patch.is_empty());
        std::fs::write(root.join("a.txt"), "two\n").unwrap();
        assert_eq!(changes(&root).unwrap().files, 1);
        let elsewhere = tempfile::tempdir().unwrap();
        let err = changes(elsewhere.path()).unwrap_err();
        assert!(err.contains("is not in a git repository"), "{err}");
    }
}
