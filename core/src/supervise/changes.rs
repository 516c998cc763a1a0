//! What changed in the worker's git repository since the previous view, read with git2:
//! the commits since the previous view's HEAD (`short-sha subject`, newest first), and the
//! files that differ between that HEAD (or the current HEAD on a first view) and the work
//! tree plus index (`M src/a.rs`, `A new.rs`, `D old.rs`, `?? untracked`). Both lists are
//! capped and the rest counted. Not a repository means no changes section at all; nothing
//! here panics or fails the view (git errors become notes). Blocking: call it from a
//! blocking thread, never from the hub.

use std::path::Path;

/// Commits listed in a view; the rest are counted.
pub const MAX_COMMITS: usize = 20;
/// Changed files listed in a view; the rest are counted.
pub const MAX_FILES: usize = 50;
/// Commits walked at most when counting (a rewritten history can be long).
const MAX_WALK: usize = 10_000;

/// The repository's changes since the previous view.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// The work tree root (or the git dir of a bare repository).
    pub root: String,
    /// HEAD now (full id); `None` on an unborn branch. Goes into the next cursor.
    pub head: Option<String>,
    /// The previous view's HEAD, as given.
    pub previous: Option<String>,
    /// `short-sha subject`, newest first, at most [`MAX_COMMITS`].
    pub commits: Vec<String>,
    /// Commits since the previous HEAD beyond those listed.
    pub more_commits: usize,
    /// `XY path` lines, at most [`MAX_FILES`].
    pub files: Vec<String>,
    /// Changed files beyond those listed.
    pub more_files: usize,
    /// Things worth saying (history rewritten, previous HEAD gone, a git error).
    pub notes: Vec<String>,
}

impl Changes {
    /// Whether HEAD moved since the previous view (a commit, checkout, reset, …).
    pub fn head_moved(&self) -> bool {
        self.head != self.previous
    }

    /// The "Changes" part of a view.
    pub fn render(&self) -> String {
        let mut out = format!("## Changes (git, {})\n", self.root);
        for note in &self.notes {
            out.push_str(&format!("Note: {note}\n"));
        }
        match (&self.previous, &self.head) {
            (Some(prev), Some(head)) if prev != head => {
                out.push_str(&format!("HEAD moved {} -> {}.\n", short(prev), short(head)))
            }
            (Some(prev), Some(_)) => {
                out.push_str(&format!("HEAD unchanged at {}.\n", short(prev)));
            }
            (None, Some(head)) => out.push_str(&format!("HEAD is {}.\n", short(head))),
            (_, None) => out.push_str("No commits yet (unborn branch).\n"),
        }
        if !self.commits.is_empty() {
            let total = self.commits.len() + self.more_commits;
            out.push_str(&format!("New commits ({total}):\n"));
            for commit in &self.commits {
                out.push_str(&format!("  {commit}\n"));
            }
            if self.more_commits > 0 {
                out.push_str(&format!("  …and {} more\n", self.more_commits));
            }
        }
        let against = match (&self.previous, &self.head) {
            (Some(prev), _) => format!("the previous view's HEAD {}", short(prev)),
            (None, Some(head)) => format!("HEAD {}", short(head)),
            (None, None) => "an empty tree".to_string(),
        };
        if self.files.is_empty() {
            out.push_str(&format!("No files differ from {against}.\n"));
        } else {
            let total = self.files.len() + self.more_files;
            out.push_str(&format!(
                "Files differing from {against} (work tree and index, {total}):\n"
            ));
            for file in &self.files {
                out.push_str(&format!("  {file}\n"));
            }
            if self.more_files > 0 {
                out.push_str(&format!("  …and {} more\n", self.more_files));
            }
        }
        out
    }
}

fn short(id: &str) -> &str {
    id.get(..7).unwrap_or(id)
}

/// The changes of the repository containing `dir` since `previous_head`; `None` when
/// `dir` is in no repository (or the repository cannot be opened).
pub fn read(dir: &Path, previous_head: Option<&str>) -> Option<Changes> {
    let repo = git2::Repository::discover(dir).ok()?;
    let root = repo
        .workdir()
        .unwrap_or_else(|| repo.path())
        .to_string_lossy()
        .trim_end_matches('/')
        .to_string();
    let mut changes = Changes {
        root,
        previous: previous_head.map(str::to_string),
        ..Changes::default()
    };
    let head = repo.head().ok().and_then(|h| h.target());
    changes.head = head.map(|oid| oid.to_string());

    // The previous HEAD, if it still exists.
    let previous = previous_head.and_then(|id| {
        let found = git2::Oid::from_str(id)
            .ok()
            .and_then(|oid| repo.find_commit(oid).ok());
        if found.is_none() {
            changes.notes.push(format!(
                "the previous view's HEAD {} is no longer in the repository; \
                 files are compared with the current HEAD",
                short(id)
            ));
        }
        found
    });

    if let (Some(prev), Some(head)) = (&previous, head)
        && prev.id() != head
    {
        list_commits(&repo, prev.id(), head, &mut changes);
    }

    // Compare the work tree and index with the previous HEAD, else the current one.
    let base = match &previous {
        Some(commit) => commit.tree().ok(),
        None => head
            .and_then(|oid| repo.find_commit(oid).ok())
            .and_then(|c| c.tree().ok()),
    };
    list_files(&repo, base.as_ref(), &mut changes);
    Some(changes)
}

fn list_commits(repo: &git2::Repository, previous: git2::Oid, head: git2::Oid, out: &mut Changes) {
    if !repo.graph_descendant_of(head, previous).unwrap_or(false) {
        out.notes.push(format!(
            "HEAD is not a descendant of the previous view's HEAD {} (history rewritten, \
             or another branch checked out); listing commits not reachable from it",
            short(&previous.to_string())
        ));
    }
    let walk = repo.revwalk().and_then(|mut walk| {
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)?;
        walk.push(head)?;
        walk.hide(previous)?;
        Ok(walk)
    });
    let walk = match walk {
        Ok(walk) => walk,
        Err(e) => {
            out.notes
                .push(format!("could not list commits: {}", e.message()));
            return;
        }
    };
    let mut seen = 0;
    for oid in walk.take(MAX_WALK) {
        let Ok(oid) = oid else { continue };
        seen += 1;
        if out.commits.len() < MAX_COMMITS {
            let subject = repo
                .find_commit(oid)
                .ok()
                .and_then(|c| c.summary().ok().flatten().map(str::to_string))
                .unwrap_or_default();
            out.commits
                .push(format!("{} {}", short(&oid.to_string()), subject));
        }
    }
    out.more_commits = seen - out.commits.len();
}

fn list_files(repo: &git2::Repository, base: Option<&git2::Tree<'_>>, out: &mut Changes) {
    if repo.is_bare() {
        return;
    }
    let mut opts = git2::DiffOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(false)
        .include_typechange(true);
    let diff = match repo.diff_tree_to_workdir_with_index(base, Some(&mut opts)) {
        Ok(diff) => diff,
        Err(e) => {
            out.notes
                .push(format!("could not compare the work tree: {}", e.message()));
            return;
        }
    };
    let mut total = 0;
    for delta in diff.deltas() {
        total += 1;
        if out.files.len() >= MAX_FILES {
            continue;
        }
        let code = match delta.status() {
            git2::Delta::Added => "A ",
            git2::Delta::Deleted => "D ",
            git2::Delta::Modified => "M ",
            git2::Delta::Renamed => "R ",
            git2::Delta::Copied => "C ",
            git2::Delta::Typechange => "T ",
            git2::Delta::Untracked => "??",
            git2::Delta::Conflicted => "U ",
            _ => "? ",
        };
        let path = delta
            .new_file()
            .path()
            .or_else(|| delta.old_file().path())
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.files.push(format!("{code} {path}"));
    }
    out.more_files = total - out.files.len();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit_all(repo: &git2::Repository, message: &str) -> git2::Oid {
        let mut index = repo.index().unwrap();
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.invalid").unwrap();
        let parents: Vec<git2::Commit<'_>> = repo
            .head()
            .ok()
            .and_then(|h| h.target())
            .map(|oid| repo.find_commit(oid).unwrap())
            .into_iter()
            .collect();
        let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
        repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .unwrap()
    }

    #[test]
    fn not_a_repository_has_no_changes() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path(), None), None);
        assert_eq!(read(&dir.path().join("missing"), Some("abc")), None);
    }

    #[test]
    fn commits_modified_staged_and_untracked_since_the_previous_head() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
        std::fs::write(dir.path().join("gone.txt"), "bye\n").unwrap();
        let first = commit_all(&repo, "first commit");

        // A first view: nothing differs from HEAD, no commits listed.
        let clean = read(dir.path(), None).unwrap();
        assert_eq!(clean.head, Some(first.to_string()));
        assert!(clean.commits.is_empty() && clean.files.is_empty());
        assert!(clean.head_moved(), "no previous HEAD counts as moved");
        assert!(clean.render().contains("No files differ from HEAD"));

        std::fs::write(dir.path().join("b.txt"), "two\n").unwrap();
        let second = commit_all(&repo, "add b\n\nwith a body");
        std::fs::write(dir.path().join("a.txt"), "one, changed\n").unwrap();
        std::fs::remove_file(dir.path().join("gone.txt")).unwrap();
        std::fs::write(dir.path().join("staged.txt"), "s\n").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("staged.txt")).unwrap();
        index.write().unwrap();
        std::fs::write(dir.path().join("untracked.txt"), "u\n").unwrap();

        let prev = first.to_string();
        let changes = read(&dir.path().join("."), Some(&prev)).unwrap();
        assert_eq!(changes.head, Some(second.to_string()));
        assert!(changes.head_moved());
        assert_eq!(
            changes.commits,
            vec![format!("{} add b", &second.to_string()[..7])]
        );
        assert_eq!(changes.more_commits, 0);
        // Compared with the previous HEAD: b.txt (committed since) counts as added.
        for line in [
            "M  a.txt",
            "A  b.txt",
            "D  gone.txt",
            "A  staged.txt",
            "?? untracked.txt",
        ] {
            assert!(
                changes.files.contains(&line.to_string()),
                "{line}: {changes:?}"
            );
        }
        assert_eq!(changes.files.len(), 5);
        let text = changes.render();
        assert!(text.contains("New commits (1):"), "{text}");
        assert!(text.contains(&format!(
            "HEAD moved {} -> {}",
            &prev[..7],
            &second.to_string()[..7]
        )));

        // Same HEAD again: not moved, files compared with it.
        let again = read(dir.path(), Some(&second.to_string())).unwrap();
        assert!(!again.head_moved());
        assert!(again.commits.is_empty());
        assert!(!again.files.contains(&"A  b.txt".to_string()));
        assert!(again.files.contains(&"?? untracked.txt".to_string()));
    }

    #[test]
    fn long_lists_are_capped_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        std::fs::write(dir.path().join("f"), "0").unwrap();
        let base = commit_all(&repo, "base");
        for i in 0..(MAX_COMMITS + 3) {
            std::fs::write(dir.path().join("f"), i.to_string()).unwrap();
            commit_all(&repo, &format!("commit {i}"));
        }
        for i in 0..(MAX_FILES + 7) {
            std::fs::write(dir.path().join(format!("u{i:03}")), "x").unwrap();
        }
        let changes = read(dir.path(), Some(&base.to_string())).unwrap();
        assert_eq!(changes.commits.len(), MAX_COMMITS);
        assert_eq!(changes.more_commits, 3);
        assert!(changes.commits[0].ends_with(&format!("commit {}", MAX_COMMITS + 2)));
        assert_eq!(changes.files.len(), MAX_FILES);
        // The untracked files plus f (modified against base).
        assert_eq!(changes.more_files, 8);
        let text = changes.render();
        assert!(
            text.contains("…and 3 more") && text.contains("…and 8 more"),
            "{text}"
        );
    }

    #[test]
    fn unknown_previous_head_unborn_branch_and_rewritten_history() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        std::fs::write(dir.path().join("new.txt"), "n").unwrap();
        let unborn = read(dir.path(), Some("not-a-sha")).unwrap();
        assert_eq!(unborn.head, None);
        assert_eq!(unborn.files, vec!["?? new.txt".to_string()]);
        assert!(unborn.notes[0].contains("no longer in the repository"));
        assert!(unborn.render().contains("unborn branch"));

        let first = commit_all(&repo, "first");
        std::fs::write(dir.path().join("new.txt"), "m").unwrap();
        let second = commit_all(&repo, "second");
        // Rewind to first and commit elsewhere: HEAD no longer descends from `second`.
        repo.reset(
            repo.find_commit(first).unwrap().as_object(),
            git2::ResetType::Hard,
            None,
        )
        .unwrap();
        std::fs::write(dir.path().join("other.txt"), "o").unwrap();
        let third = commit_all(&repo, "third");
        let changes = read(dir.path(), Some(&second.to_string())).unwrap();
        assert_eq!(changes.head, Some(third.to_string()));
        assert!(changes.notes.iter().any(|n| n.contains("not a descendant")));
        assert_eq!(changes.commits.len(), 1);
        assert!(changes.commits[0].ends_with("third"));
    }
}
