//! # Repository context
//!
//! Which git repository a session works in, read with git2 from its cwd: the work tree
//! root, the current branch (none when detached), HEAD, and whether the cwd is a linked
//! worktree rather than the main checkout. Later issues key project work on this.
//! Discovery runs on a blocking thread, never on the hub.

use std::path::Path;

/// A session's repository, as far as git can tell, and the directory it was read for (the
/// hub applies it only while that is still the session's cwd).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepoContext {
    pub cwd: String,
    pub root: Option<String>,
    pub branch: Option<String>,
    pub head: Option<String>,
    pub worktree: bool,
    /// The repository's name: the main checkout's directory (shared by its linked
    /// worktrees), or a bare repository's without `.git`. Unnamed sessions are called
    /// after it (`hub/names.rs`).
    pub project: Option<String>,
    /// The repository's identity: its common git directory, canonicalized, so the primary
    /// checkout and every linked worktree share it. A Manager lease is held per repo id.
    pub repo_id: Option<String>,
}

/// Read the repository containing `cwd`; empty when there is none (or it is unreadable).
pub fn discover(cwd: &Path) -> RepoContext {
    let none = RepoContext {
        cwd: cwd.to_string_lossy().into_owned(),
        ..RepoContext::default()
    };
    let Ok(repo) = git2::Repository::discover(cwd) else {
        return none;
    };
    let root = repo
        .workdir()
        .map(|p| p.to_string_lossy().trim_end_matches('/').to_string());
    let (branch, head) = match repo.head() {
        Ok(head) => {
            let branch = match head.is_branch() {
                true => head.shorthand().ok().map(str::to_string),
                false => None,
            };
            (branch, head.target().map(|oid| oid.to_string()))
        }
        // An unborn branch (no commits yet) still has a name.
        Err(_) => {
            let branch = repo
                .find_reference("HEAD")
                .ok()
                .and_then(|r| r.symbolic_target().ok().flatten().map(str::to_string))
                .and_then(|t| t.strip_prefix("refs/heads/").map(str::to_string));
            (branch, None)
        }
    };
    let repo_id = std::fs::canonicalize(repo.commondir())
        .ok()
        .map(|p| p.to_string_lossy().trim_end_matches('/').to_string());
    RepoContext {
        project: project_name(&repo),
        repo_id,
        root,
        branch,
        head,
        worktree: repo.is_worktree(),
        ..none
    }
}

/// The directory that holds the repository's common git dir (`webapp/.git` → `webapp`,
/// `webapp.git` → `webapp`), the same for every linked worktree.
fn project_name(repo: &git2::Repository) -> Option<String> {
    let common = repo.commondir();
    let dir = match common.file_name()?.to_str()? {
        ".git" => common.parent()?.file_name()?.to_str()?,
        bare => bare,
    };
    let name = dir.strip_suffix(".git").unwrap_or(dir);
    (!name.is_empty()).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(repo: &git2::Repository) -> git2::Oid {
        let sig = git2::Signature::now("t", "t@example.invalid").unwrap();
        let tree = repo
            .find_tree(repo.index().unwrap().write_tree().unwrap())
            .unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "init", &tree, &[])
            .unwrap()
    }

    #[test]
    fn reads_branch_head_and_worktrees() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        let repo = git2::Repository::init(&main).unwrap();
        std::fs::create_dir(main.join("sub")).unwrap();

        let unborn = discover(&main.join("sub"));
        assert_eq!(unborn.root.as_deref(), Some(main.to_str().unwrap()));
        assert!(unborn.branch.is_some() && unborn.head.is_none());

        let oid = commit(&repo);
        let ctx = discover(&main.join("sub"));
        assert_eq!(ctx.head, Some(oid.to_string()));
        assert!(!ctx.worktree);
        assert_eq!(ctx.project.as_deref(), Some("main"));

        let wt_path = dir.path().join("wt");
        let branch = repo
            .branch("feature", &repo.find_commit(oid).unwrap(), false)
            .unwrap();
        let mut opts = git2::WorktreeAddOptions::new();
        let reference = branch.into_reference();
        opts.reference(Some(&reference));
        repo.worktree("wt", &wt_path, Some(&opts)).unwrap();
        let wt = discover(&wt_path);
        assert!(wt.worktree);
        assert_eq!(wt.branch.as_deref(), Some("feature"));
        assert_eq!(wt.repo_id, ctx.repo_id, "one repository, one id");
        assert!(ctx.repo_id.as_deref().unwrap().ends_with("/main/.git"));
        assert_eq!(
            wt.project.as_deref(),
            Some("main"),
            "a worktree is named after its repository"
        );

        let bare = git2::Repository::init_bare(dir.path().join("webapp.git")).unwrap();
        assert_eq!(project_name(&bare).as_deref(), Some("webapp"));

        let outside = discover(Path::new("/"));
        assert_eq!((outside.root, outside.cwd.as_str()), (None, "/"));
    }
}
