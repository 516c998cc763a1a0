//! # Worktrees for project work
//!
//! The linked worktrees a Manager's assignments run in, with git2 only and synchronously
//! (the core calls these on a blocking thread): the primary checkout of a repository, a
//! generated branch name, the checkout made or reused for a branch, the inventory of
//! linked worktrees and whether a checkout is still there (absent only when a complete
//! inventory proves git has forgotten it; a checkout moved or renamed by hand is reported
//! as moved, never pruned), removal only of a checkout that holds nothing but what its
//! branch has (or, the human's choice, moved aside whole; in `worktrees/removal.rs`), and
//! a checkout's HEAD and ahead/behind. Nothing here knows about the hub, the store or the
//! protocol.

use std::path::{Path, PathBuf};

use git2::{BranchType, Repository, StatusOptions, WorktreeAddOptions};

mod removal;

pub use removal::{RemoveError, Removed, in_the_way, remove_worktree};

/// A linked worktree ready for an assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkout {
    /// The worktree's directory, canonical.
    pub path: PathBuf,
    pub branch: String,
    /// The full sha the worktree's HEAD is at.
    pub head: String,
    /// Whether this call made the worktree (false: an existing one was reused).
    pub created: bool,
}

/// Why a worktree could not be found, made or read.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error("{} is not a git repository or cannot be opened; give the repository's primary checkout (its root directory)", .0.display())]
    NotARepository(PathBuf),
    #[error(
        "the repository is bare and has no primary checkout to work from; use a repository with a work tree"
    )]
    Bare,
    #[error(
        "branch {branch} is checked out in the primary worktree; switch the primary checkout to another branch first, or choose another branch"
    )]
    BranchInPrimary { branch: String },
    #[error("base {base} names no commit in this repository; give an existing branch name or sha")]
    BaseNotFound { base: String },
    #[error("branch {branch} does not exist; give an existing branch")]
    BranchMissing { branch: String },
    #[error("{branch:?} is not a valid branch name ({why}); choose another name")]
    InvalidBranch { branch: String, why: String },
    #[error("{} is in the way: it exists and is not a worktree of this branch; move or delete it, or choose another branch", .path.display())]
    PathTaken { path: PathBuf },
    #[error("branch {branch} is still checked out in a worktree git records: {moved}")]
    Moved { branch: String, moved: Moved },
    #[error("git: {0}")]
    Git(String),
}

impl From<git2::Error> for WorktreeError {
    fn from(e: git2::Error) -> Self {
        WorktreeError::Git(e.message().to_string())
    }
}

/// One linked worktree of a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// git's name for it (its admin directory under `.git/worktrees/`).
    pub name: String,
    /// Its directory (canonical when present).
    pub path: PathBuf,
    /// The branch checked out there, None when detached.
    pub branch: Option<String>,
    /// Its directory exists and is a valid worktree.
    pub present: bool,
}

/// Whether a checkout still exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presence {
    Present,
    /// Verified absence: a complete inventory in which git records no worktree at that path
    /// and none with its branch checked out, and nothing at the path itself. Git has
    /// forgotten the worktree (`git worktree remove` or `prune` ran), so nothing of it can
    /// still be repaired.
    Absent,
    /// Git still records a worktree for it, but not where it is: moved or renamed by hand,
    /// or deleted. Never pruned here (that would make a moved checkout unknown to git for
    /// good, and lose its staged state).
    Moved(Moved),
    /// The inventory failed or was ambiguous; why.
    Unknown(String),
}

/// A checkout git still records but that is not at its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    /// git's name for the worktree (`.git/worktrees/<name>`).
    pub name: String,
    /// Where git records it (its `gitdir` file's directory).
    pub recorded: PathBuf,
    /// Where it was found: a directory next to the recorded one whose `.git` points at this
    /// worktree's admin directory, or the path git now records for the branch.
    pub found: Option<PathBuf>,
}

impl std::fmt::Display for Moved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.found {
            Some(now) => write!(
                f,
                "the checkout is not at {} but at {} (moved or renamed by hand): `git worktree repair {}` tells git where it is; shepherd keeps the assignment and changes nothing",
                self.recorded.display(),
                now.display(),
                now.display()
            ),
            None => write!(
                f,
                "the checkout is missing: git still records worktree {} at {}, which is gone (moved, renamed or deleted by hand). If you moved it, `git worktree repair <its new path>`; if you deleted it, `git worktree prune` and the assignment is retired at the next listing. Shepherd keeps the assignment and prunes nothing",
                self.name,
                self.recorded.display()
            ),
        }
    }
}

/// The most changed paths a refusal lists.
pub(crate) const LISTED: usize = 10;

/// The primary worktree's root of the repository whose common git dir is `repo_id`
/// (the canonical path `RepoContext::repo_id` holds). Err for a bare repository.
pub fn primary_root(repo_id: &Path) -> Result<PathBuf, WorktreeError> {
    let repo = open_primary(repo_id)?;
    root_of(&repo)
}

/// The primary checkout's repository, whether `path` is its root, its common git dir or a
/// linked worktree of it. Err for a bare repository.
pub(crate) fn open_primary(path: &Path) -> Result<Repository, WorktreeError> {
    let not_repo = |_| WorktreeError::NotARepository(path.to_path_buf());
    let mut repo = Repository::open(path).map_err(not_repo)?;
    if repo.is_worktree() {
        let common = repo.commondir().to_path_buf();
        repo = Repository::open(&common).map_err(not_repo)?;
    }
    if repo.is_bare() || repo.workdir().is_none() {
        return Err(WorktreeError::Bare);
    }
    Ok(repo)
}

fn root_of(repo: &Repository) -> Result<PathBuf, WorktreeError> {
    let workdir = repo.workdir().ok_or(WorktreeError::Bare)?;
    std::fs::canonicalize(workdir)
        .map_err(|e| WorktreeError::Git(format!("{}: {e}", workdir.display())))
}

/// A branch name for a task with none: `work/<slug of the first words, ≤40 chars>`, with
/// `-2`, `-3`… when taken (an existing branch, a worktree of that name or its checkout
/// directory).
pub fn generate_branch(primary: &Path, task: &str) -> Result<String, WorktreeError> {
    let repo = open_primary(primary)?;
    let root = root_of(&repo)?;
    let base = format!("work/{}", slug(task));
    for n in 1.. {
        let branch = match n {
            1 => base.clone(),
            n => format!("{base}-{n}"),
        };
        let taken = repo.find_branch(&branch, BranchType::Local).is_ok()
            || repo.find_worktree(&worktree_name(&branch)).is_ok()
            || checkout_dir(&root, &branch).symlink_metadata().is_ok();
        if !taken {
            return Ok(branch);
        }
    }
    unreachable!("some suffix is free")
}

/// The task's first words, lowercase ASCII letters and digits joined by `-`, at most 40
/// characters (cut at a word); `task` when nothing is left.
fn slug(task: &str) -> String {
    let mut out = String::new();
    let words = task
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty());
    for word in words {
        let word = word.to_ascii_lowercase();
        let extra = word.len() + usize::from(!out.is_empty());
        if out.len() + extra > 40 {
            if out.is_empty() {
                out = word[..40].to_string();
            }
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&word);
    }
    if out.is_empty() {
        out.push_str("task");
    }
    out
}

/// A branch's name with `/` made `-`: its checkout directory's name and git's worktree name.
fn worktree_name(branch: &str) -> String {
    branch.replace('/', "-")
}

/// Where a new checkout of `branch` goes: `<primary's parent>/<primary dir name>.worktrees/
/// <branch with / → ->`.
pub fn checkout_dir(primary: &Path, branch: &str) -> PathBuf {
    let name = primary
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "repo".to_string());
    let parent = primary.parent().unwrap_or(primary);
    parent
        .join(format!("{name}.worktrees"))
        .join(worktree_name(branch))
}

fn validate_branch(branch: &str) -> Result<(), WorktreeError> {
    let invalid = |why: &str| WorktreeError::InvalidBranch {
        branch: branch.to_string(),
        why: why.to_string(),
    };
    if branch.is_empty() {
        return Err(invalid("it is empty"));
    }
    if branch.starts_with('-') {
        return Err(invalid("it starts with -"));
    }
    if branch == "HEAD" || !git2::Reference::is_valid_name(&format!("refs/heads/{branch}")) {
        return Err(invalid(
            "git refuses it: no spaces, `..`, `~^:?*[\\`, control characters, or a leading/trailing `/` or `.`",
        ));
    }
    Ok(())
}

/// The linked worktree for `branch`, made if needed: branch absent → created at `base` (a
/// branch name or sha; default the primary's HEAD) and a worktree added at
/// [`checkout_dir`]; branch present and checked out in a linked worktree → that worktree
/// (created=false); present and checked out in the primary worktree →
/// Err(BranchInPrimary); present and checked out nowhere → a worktree added for it. A
/// worktree entry for the branch whose directory is gone is never pruned (it may have been
/// moved): Err(Moved), saying how to repair or prune it. git's name for the worktree is
/// the branch's slug, made unique.
pub fn ensure_worktree(
    primary: &Path,
    branch: &str,
    base: Option<&str>,
) -> Result<Checkout, WorktreeError> {
    validate_branch(branch)?;
    let repo = open_primary(primary)?;
    let root = root_of(&repo)?;
    let refname = format!("refs/heads/{branch}");
    let existing = match repo.find_branch(branch, BranchType::Local) {
        Ok(b) => Some(b),
        Err(e) if e.code() == git2::ErrorCode::NotFound => None,
        Err(e) => return Err(e.into()),
    };
    if existing.is_some() {
        if head_ref(&repo)?.as_deref() == Some(refname.as_str()) {
            return Err(WorktreeError::BranchInPrimary {
                branch: branch.to_string(),
            });
        }
        for name in worktree_names(&repo)? {
            let wt = repo.find_worktree(&name)?;
            let entry = read_entry(&repo, &name, &wt)?;
            if entry.branch.as_deref() != Some(branch) {
                continue;
            }
            if entry.present {
                let (_, head) = head(&entry.path)?;
                return Ok(Checkout {
                    path: entry.path,
                    branch: branch.to_string(),
                    head,
                    created: false,
                });
            }
            // Its directory is not where git records it: moved, renamed or deleted by hand.
            // Pruning would make a moved checkout unknown to git for good: say so instead.
            drop(wt);
            let repo_moved = Moved {
                found: find_moved(&repo, &entry.name, &entry.path),
                name: entry.name,
                recorded: entry.path,
            };
            return Err(WorktreeError::Moved {
                branch: branch.to_string(),
                moved: repo_moved,
            });
        }
    }
    let dir = checkout_dir(&root, branch);
    if dir.symlink_metadata().is_ok() {
        return Err(WorktreeError::PathTaken { path: dir });
    }
    let created_branch = existing.is_none();
    drop(existing);
    if created_branch {
        let base_name = base.unwrap_or("HEAD");
        let commit = repo
            .revparse_single(base_name)
            .and_then(|o| o.peel_to_commit())
            .map_err(|_| WorktreeError::BaseNotFound {
                base: base_name.to_string(),
            })?;
        repo.branch(branch, &commit, false)?;
    }
    let added = add_worktree(&repo, &refname, branch, &dir);
    if added.is_err() && created_branch {
        // Leave the repository as it was: the branch was made for this worktree only.
        if let Ok(mut b) = repo.find_branch(branch, BranchType::Local) {
            let _ = b.delete();
        }
    }
    let path = added?;
    let (_, head) = head(&path)?;
    Ok(Checkout {
        path,
        branch: branch.to_string(),
        head,
        created: true,
    })
}

fn add_worktree(
    repo: &Repository,
    refname: &str,
    branch: &str,
    dir: &Path,
) -> Result<PathBuf, WorktreeError> {
    let taken = worktree_names(repo)?;
    let base = worktree_name(branch);
    let name = (1..)
        .map(|n| match n {
            1 => base.clone(),
            n => format!("{base}-{n}"),
        })
        .find(|n| !taken.contains(n) && !repo.commondir().join("worktrees").join(n).exists())
        .expect("some suffix is free");
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| WorktreeError::Git(format!("{}: {e}", parent.display())))?;
    }
    let reference = repo.find_reference(refname)?;
    let mut opts = WorktreeAddOptions::new();
    opts.reference(Some(&reference));
    repo.worktree(&name, dir, Some(&opts))?;
    std::fs::canonicalize(dir).map_err(|e| WorktreeError::Git(format!("{}: {e}", dir.display())))
}

/// HEAD's symbolic target (`refs/heads/…`), None when detached.
fn head_ref(repo: &Repository) -> Result<Option<String>, WorktreeError> {
    let head = repo.find_reference("HEAD")?;
    Ok(head.symbolic_target()?.map(str::to_string))
}

fn worktree_names(repo: &Repository) -> Result<Vec<String>, WorktreeError> {
    let names = repo.worktrees()?;
    let mut out = Vec::new();
    for name in names.iter() {
        match name {
            Ok(Some(n)) => out.push(n.to_string()),
            _ => return Err(WorktreeError::Git("a worktree name is not UTF-8".into())),
        }
    }
    Ok(out)
}

/// One admin entry, read completely or not at all: a directory that is gone is an absent
/// entry; one that exists but is not a valid worktree, or an entry whose recorded path or
/// HEAD cannot be read, is an error (the inventory is then incomplete).
fn read_entry(repo: &Repository, name: &str, wt: &git2::Worktree) -> Result<Entry, WorktreeError> {
    let unreadable = |why: String| WorktreeError::Git(format!("worktree {name}: {why}"));
    let recorded = wt.path();
    if !recorded.is_absolute() {
        return Err(unreadable(format!(
            "its recorded path {:?} is not absolute",
            recorded
        )));
    }
    let present = match recorded.symlink_metadata() {
        Ok(_) => {
            wt.validate().map_err(|e| {
                unreadable(format!("{} exists but {}", recorded.display(), e.message()))
            })?;
            true
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(unreadable(format!("{}: {e}", recorded.display()))),
    };
    // The worktree's HEAD lives in its admin directory, readable whether or not its
    // directory is still there.
    let admin = repo.commondir().join("worktrees").join(name);
    let head = std::fs::read_to_string(admin.join("HEAD"))
        .map_err(|e| unreadable(format!("its HEAD: {e}")))?;
    let head = head.trim();
    let branch = match head.strip_prefix("ref: ") {
        Some(r) => Some(
            r.strip_prefix("refs/heads/")
                .ok_or_else(|| unreadable(format!("HEAD points at {r}")))?
                .to_string(),
        ),
        None if git2::Oid::from_str(head).is_ok() && head.len() >= 40 => None,
        None => {
            return Err(unreadable(format!(
                "its HEAD {head:?} is not a ref or a sha"
            )));
        }
    };
    let path = match present {
        true => std::fs::canonicalize(recorded).map_err(|e| unreadable(e.to_string()))?,
        false => recorded.to_path_buf(),
    };
    Ok(Entry {
        name: name.to_string(),
        path,
        branch,
        present,
    })
}

/// Every linked worktree of the repository; Err when the inventory could not be completed
/// (any entry unreadable).
pub fn inventory(primary: &Path) -> Result<Vec<Entry>, WorktreeError> {
    let repo = open_primary(primary)?;
    let mut out = Vec::new();
    for name in worktree_names(&repo)? {
        let wt = repo.find_worktree(&name)?;
        out.push(read_entry(&repo, &name, &wt)?);
    }
    Ok(out)
}

/// Whether the checkout at `path` still exists; [`checkout_presence_of`] without a branch.
pub fn checkout_presence(primary: &Path, path: &Path) -> Presence {
    checkout_presence_of(primary, path, None)
}

/// Whether the checkout at `path` (made for `branch`) still exists. Present: a complete
/// inventory has a valid worktree there. Absent only when verified: the inventory is
/// complete, no entry records that path, none has `branch` checked out, and nothing is at
/// the path. Moved: git still records the worktree (at that path, which is gone, or the
/// branch elsewhere); reported with what git records and how to repair it, never pruned.
/// Unknown on any failure, for a locked entry whose directory is gone (git keeps those:
/// they may be on a removable disk), for a path that exists but git does not list, and for
/// the primary checkout itself (never a linked worktree, so never proven absent).
/// Nothing here changes git's records.
pub fn checkout_presence_of(primary: &Path, path: &Path, branch: Option<&str>) -> Presence {
    let entries = match inventory(primary) {
        Ok(e) => e,
        Err(e) => return Presence::Unknown(e.to_string()),
    };
    let wanted = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let same = |p: &Path| p == wanted || p == path;
    if entries.iter().any(|e| e.present && same(&e.path)) {
        return Presence::Present;
    }
    let Ok(repo) = open_primary(primary) else {
        return Presence::Unknown("the repository could not be reopened".into());
    };
    if root_of(&repo).is_ok_and(|root| same(&root)) {
        return Presence::Unknown(format!(
            "{} is the primary checkout, not a linked worktree",
            path.display()
        ));
    }
    let recorded_here = entries.iter().filter(|e| !e.present && same(&e.path));
    let with_branch = entries
        .iter()
        .filter(|e| branch.is_some() && e.branch.as_deref() == branch && !same(&e.path));
    if let Some(stale) = recorded_here.chain(with_branch).next() {
        if stale.present {
            // `git worktree move`: git records the branch's checkout elsewhere now.
            return Presence::Moved(Moved {
                name: stale.name.clone(),
                recorded: path.to_path_buf(),
                found: Some(stale.path.clone()),
            });
        }
        let Ok(wt) = repo.find_worktree(&stale.name) else {
            return Presence::Unknown(format!("worktree {} vanished while read", stale.name));
        };
        match wt.is_locked() {
            Ok(git2::WorktreeLockStatus::Unlocked) => {}
            Ok(git2::WorktreeLockStatus::Locked(_)) => {
                return Presence::Unknown(format!(
                    "worktree {} is locked and its directory {} is missing (on a removable disk? unlock it if it is gone for good)",
                    stale.name,
                    stale.path.display()
                ));
            }
            Err(e) => return Presence::Unknown(e.message().to_string()),
        }
        return Presence::Moved(Moved {
            name: stale.name.clone(),
            recorded: stale.path.clone(),
            found: find_moved(&repo, &stale.name, &stale.path),
        });
    }
    match path.symlink_metadata() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Presence::Absent,
        Err(e) => Presence::Unknown(format!("{}: {e}", path.display())),
        Ok(_) => Presence::Unknown(format!(
            "{} exists but git does not list it as a worktree of this repository (its admin directory was removed by hand?); move or delete it yourself",
            path.display()
        )),
    }
}

/// A directory next to `recorded` (a sibling, at most [`SIBLINGS`] looked at) whose `.git`
/// file points at worktree `name`'s admin directory: where a checkout renamed or moved by
/// hand within its parent went.
fn find_moved(repo: &Repository, name: &str, recorded: &Path) -> Option<PathBuf> {
    let admin = std::fs::canonicalize(repo.commondir().join("worktrees").join(name)).ok()?;
    let parent = recorded.parent()?;
    for entry in std::fs::read_dir(parent).ok()?.take(SIBLINGS) {
        let dir = entry.ok()?.path();
        let Ok(text) = std::fs::read_to_string(dir.join(".git")) else {
            continue;
        };
        let Some(gitdir) = text.trim().strip_prefix("gitdir:") else {
            continue;
        };
        let gitdir = Path::new(gitdir.trim());
        let gitdir = match gitdir.is_absolute() {
            true => gitdir.to_path_buf(),
            false => dir.join(gitdir),
        };
        if std::fs::canonicalize(gitdir).is_ok_and(|g| g == admin) {
            return std::fs::canonicalize(&dir).ok();
        }
    }
    None
}

/// The most directories [`find_moved`] reads.
const SIBLINGS: usize = 1000;

/// Up to [`LISTED`] paths with staged or unstaged changes (and untracked ones when asked);
/// ignored files never count.
pub(crate) fn changed_files(
    repo: &Repository,
    untracked: bool,
) -> Result<Vec<String>, git2::Error> {
    let mut opts = StatusOptions::new();
    opts.include_untracked(untracked)
        .recurse_untracked_dirs(untracked)
        .include_ignored(false)
        .exclude_submodules(false);
    let statuses = repo.statuses(Some(&mut opts))?;
    Ok(statuses
        .iter()
        .filter(|s| !s.status().is_ignored() && s.status() != git2::Status::CURRENT)
        .take(LISTED)
        .map(|s| String::from_utf8_lossy(s.path_bytes()).into_owned())
        .collect())
}

/// (current branch or None when detached, HEAD full sha) of a checkout.
pub fn head(checkout: &Path) -> Result<(Option<String>, String), WorktreeError> {
    let repo = Repository::open(checkout)
        .map_err(|_| WorktreeError::NotARepository(checkout.to_path_buf()))?;
    let head = repo.head()?;
    let branch = match head.is_branch() {
        true => Some(head.shorthand()?.to_string()),
        false => None,
    };
    let sha = head
        .target()
        .ok_or_else(|| WorktreeError::Git("HEAD has no target".into()))?;
    Ok((branch, sha.to_string()))
}

/// (ahead, behind) of `branch` relative to the primary worktree's HEAD (its current branch;
/// its commit when detached).
pub fn ahead_behind(primary: &Path, branch: &str) -> Result<(usize, usize), WorktreeError> {
    let repo = open_primary(primary)?;
    let tip = repo
        .find_branch(branch, BranchType::Local)
        .map_err(|_| WorktreeError::BranchMissing {
            branch: branch.to_string(),
        })?
        .get()
        .target()
        .ok_or_else(|| WorktreeError::Git(format!("branch {branch} has no target")))?;
    let base = repo.head()?.peel_to_commit()?.id();
    Ok(repo.graph_ahead_behind(tip, base)?)
}

/// Temp repositories for the git tests, built with git2.
#[cfg(test)]
pub(crate) mod fixture {
    use std::path::{Path, PathBuf};

    use git2::{Oid, Repository, RepositoryInitOptions};

    /// A repository at `<dir>/proj` on branch `main` with one commit (`a.txt` = "one\n",
    /// `.gitignore` = "target/\n"); its canonical root.
    pub fn repo(dir: &Path) -> (PathBuf, Repository) {
        let root = dir.join("proj");
        let mut opts = RepositoryInitOptions::new();
        opts.initial_head("main");
        let repo = Repository::init_opts(&root, &opts).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        commit_file(&repo, "a.txt", "one\n", "first");
        (std::fs::canonicalize(&root).unwrap(), repo)
    }

    /// Write `name` in the repository's work tree and commit it on HEAD.
    pub fn commit_file(repo: &Repository, name: &str, content: &str, msg: &str) -> Oid {
        let root = repo.workdir().unwrap();
        std::fs::write(root.join(name), content).unwrap();
        let mut index = repo.index().unwrap();
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.invalid").unwrap();
        let parent = repo.head().ok().map(|h| h.peel_to_commit().unwrap());
        let parents: Vec<_> = parent.iter().collect();
        repo.commit(Some("HEAD"), &sig, &sig, msg, &tree, &parents)
            .unwrap()
    }

    pub fn tip(repo: &Repository, branch: &str) -> String {
        repo.find_branch(branch, git2::BranchType::Local)
            .unwrap()
            .get()
            .target()
            .unwrap()
            .to_string()
    }

    /// Refs and HEAD with their targets; work tree files with their bytes.
    pub type Snapshot = (Vec<(String, String)>, Vec<(PathBuf, Vec<u8>)>);

    /// Every ref and HEAD, and every file of the primary work tree with its content: what a
    /// refused operation must leave unchanged.
    pub fn snapshot(root: &Path) -> Snapshot {
        let repo = Repository::open(root).unwrap();
        let mut refs: Vec<_> = repo
            .references()
            .unwrap()
            .map(|r| {
                let r = r.unwrap();
                let target = match r.symbolic_target().unwrap() {
                    Some(s) => s.to_string(),
                    None => r.target().unwrap().to_string(),
                };
                (r.name().unwrap().to_string(), target)
            })
            .collect();
        let head = repo.find_reference("HEAD").unwrap();
        refs.push((
            "HEAD".into(),
            head.symbolic_target()
                .unwrap()
                .map(str::to_string)
                .unwrap_or_else(|| head.target().unwrap().to_string()),
        ));
        refs.sort();
        let mut files = Vec::new();
        let mut dirs = vec![root.to_path_buf()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.file_name().unwrap() == ".git" {
                    continue;
                }
                match p.is_dir() {
                    true => dirs.push(p),
                    false => files.push((p.clone(), std::fs::read(&p).unwrap())),
                }
            }
        }
        files.sort();
        (refs, files)
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::{commit_file, repo, tip};
    use super::*;

    #[test]
    fn creates_then_reuses_a_worktree() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r) = repo(dir.path());
        let main = tip(&r, "main");

        let made = ensure_worktree(&root, "feat/a", None).unwrap();
        let expected = std::fs::canonicalize(checkout_dir(&root, "feat/a")).unwrap();
        assert_eq!(made.path, expected);
        assert!(made.path.ends_with("proj.worktrees/feat-a"));
        assert_eq!(
            (made.branch.as_str(), made.head.as_str()),
            ("feat/a", main.as_str())
        );
        assert!(made.created);
        assert_eq!(
            std::fs::read_to_string(made.path.join("a.txt")).unwrap(),
            "one\n"
        );
        assert_eq!(
            head(&made.path).unwrap(),
            (Some("feat/a".into()), main.clone())
        );
        assert!(r.find_worktree("feat-a").is_ok(), "git's name is the slug");

        let again = ensure_worktree(&root, "feat/a", None).unwrap();
        assert_eq!(
            again,
            Checkout {
                created: false,
                ..made.clone()
            }
        );
        // From a linked worktree's path too, and through the common git dir.
        assert_eq!(
            ensure_worktree(&made.path, "feat/a", None).unwrap().path,
            made.path
        );
        assert_eq!(primary_root(&root.join(".git")).unwrap(), root);
    }

    #[test]
    fn a_branch_from_a_base_and_an_existing_branch_get_worktrees() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r) = repo(dir.path());
        let first = tip(&r, "main");
        commit_file(&r, "a.txt", "two\n", "second");

        let based = ensure_worktree(&root, "from-first", Some(&first)).unwrap();
        assert_eq!(based.head, first);
        assert_eq!(
            std::fs::read_to_string(based.path.join("a.txt")).unwrap(),
            "one\n"
        );

        let commit = r.find_commit(git2::Oid::from_str(&first).unwrap()).unwrap();
        r.branch("old", &commit, false).unwrap();
        let old = ensure_worktree(&root, "old", Some("main")).unwrap();
        assert!(old.created);
        assert_eq!(
            old.head, first,
            "an existing branch is not moved to the base"
        );
        assert_eq!(inventory(&root).unwrap().len(), 2);
    }

    #[test]
    fn refuses_the_primary_branch_bad_names_bases_and_paths_in_the_way() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r) = repo(dir.path());
        let before = super::fixture::snapshot(&root);

        let err = ensure_worktree(&root, "main", None).unwrap_err();
        assert!(
            matches!(err, WorktreeError::BranchInPrimary { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("switch the primary checkout"));
        for bad in ["bad..name", "", "-x", "a b", "end/", "x.lock"] {
            let err = ensure_worktree(&root, bad, None).unwrap_err();
            assert!(
                matches!(err, WorktreeError::InvalidBranch { .. }),
                "{bad}: {err}"
            );
        }
        let err = ensure_worktree(&root, "feat/x", Some("nope")).unwrap_err();
        assert!(
            matches!(err, WorktreeError::BaseNotFound { ref base } if base == "nope"),
            "{err}"
        );

        let in_the_way = checkout_dir(&root, "feat/y");
        std::fs::create_dir_all(&in_the_way).unwrap();
        let err = ensure_worktree(&root, "feat/y", None).unwrap_err();
        assert!(
            matches!(err, WorktreeError::PathTaken { ref path } if *path == in_the_way),
            "{err}"
        );

        assert_eq!(
            super::fixture::snapshot(&root),
            before,
            "refusals change nothing"
        );
        assert!(r.find_branch("feat/x", BranchType::Local).is_err());
        assert!(inventory(&root).unwrap().is_empty());

        let bare = git2::Repository::init_bare(dir.path().join("b.git")).unwrap();
        assert!(matches!(
            primary_root(bare.path()),
            Err(WorktreeError::Bare)
        ));
        assert!(matches!(
            primary_root(&dir.path().join("nothing")),
            Err(WorktreeError::NotARepository(_))
        ));
    }

    #[test]
    fn a_failed_add_leaves_no_new_branch() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r) = repo(dir.path());
        // The worktrees' parent directory cannot be made: a file is there.
        std::fs::write(dir.path().join("proj.worktrees"), "a file").unwrap();
        let before = super::fixture::snapshot(&root);
        let err = ensure_worktree(&root, "feat/a", None).unwrap_err();
        assert!(matches!(err, WorktreeError::Git(_)), "{err}");
        assert_eq!(super::fixture::snapshot(&root), before);
        assert!(r.find_branch("feat/a", BranchType::Local).is_err());
        assert!(inventory(&root).unwrap().is_empty());
    }

    #[test]
    fn generated_branch_names_are_slugs_and_unique() {
        assert_eq!(slug("Fix the login page!! (now)"), "fix-the-login-page-now");
        assert_eq!(slug("  ...  "), "task");
        let long = slug("refactor every single module of the whole codebase into small pieces");
        assert!(long.len() <= 40 && !long.ends_with('-'), "{long}");
        assert_eq!(long, "refactor-every-single-module-of-the");
        assert_eq!(slug(&"x".repeat(60)).len(), 40);

        let dir = tempfile::tempdir().unwrap();
        let (root, _r) = repo(dir.path());
        let first = generate_branch(&root, "Fix the login page").unwrap();
        assert_eq!(first, "work/fix-the-login-page");
        ensure_worktree(&root, &first, None).unwrap();
        let second = generate_branch(&root, "fix the LOGIN page").unwrap();
        assert_eq!(second, "work/fix-the-login-page-2");
        ensure_worktree(&root, &second, None).unwrap();
        assert_eq!(
            generate_branch(&root, "fix the login page").unwrap(),
            "work/fix-the-login-page-3"
        );
    }

    #[test]
    fn removes_a_clean_worktree_and_keeps_its_branch() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r) = repo(dir.path());
        let wt = ensure_worktree(&root, "feat/a", None).unwrap();
        let wt_repo = Repository::open(&wt.path).unwrap();
        let sha = commit_file(&wt_repo, "b.txt", "b\n", "add b");

        assert_eq!(
            remove_worktree(&root, &wt.path, false).unwrap(),
            Removed { kept: None }
        );
        assert!(!wt.path.exists());
        assert_eq!(tip(&r, "feat/a"), sha.to_string(), "the branch is kept");
        assert!(inventory(&root).unwrap().is_empty());
        assert!(!root.join(".git/worktrees/feat-a").exists());
        assert_eq!(checkout_presence(&root, &wt.path), Presence::Absent);

        let err = remove_worktree(&root, &root, false).unwrap_err();
        assert!(matches!(err, RemoveError::NotAWorktree(_)), "{err}");
        // The kept branch gets a worktree again.
        let again = ensure_worktree(&root, "feat/a", None).unwrap();
        assert_eq!(again.head, sha.to_string());
    }

    #[test]
    fn refuses_to_remove_a_dirty_worktree() {
        let dir = tempfile::tempdir().unwrap();
        let (root, _r) = repo(dir.path());
        let wt = ensure_worktree(&root, "feat/a", None).unwrap();

        std::fs::write(wt.path.join("a.txt"), "changed\n").unwrap();
        let err = remove_worktree(&root, &wt.path, false).unwrap_err();
        assert!(
            matches!(err, RemoveError::Dirty { ref files } if files == &["a.txt"]),
            "{err}"
        );
        assert!(err.to_string().contains("commit or discard"));

        std::fs::write(wt.path.join("a.txt"), "one\n").unwrap();
        std::fs::write(wt.path.join("new.txt"), "untracked\n").unwrap();
        let err = remove_worktree(&root, &wt.path, false).unwrap_err();
        assert!(
            matches!(err, RemoveError::Dirty { ref files } if files == &["new.txt"]),
            "{err}"
        );

        assert!(wt.path.join("new.txt").exists(), "nothing removed");
        assert_eq!(inventory(&root).unwrap().len(), 1);
        assert_eq!(checkout_presence(&root, &wt.path), Presence::Present);
    }

    #[test]
    fn inventory_and_presence_tell_present_absent_and_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r) = repo(dir.path());
        let a = ensure_worktree(&root, "feat/a", None).unwrap();
        let b = ensure_worktree(&root, "feat/b", None).unwrap();
        let listed = inventory(&root).unwrap();
        assert_eq!(listed.len(), 2);
        let entry_a = listed.iter().find(|e| e.name == "feat-a").unwrap();
        assert_eq!(
            entry_a,
            &Entry {
                name: "feat-a".into(),
                path: a.path.clone(),
                branch: Some("feat/a".into()),
                present: true
            }
        );
        assert_eq!(checkout_presence(&root, &a.path), Presence::Present);

        // Deleted by hand: git still records it, so it may have been moved: reported, kept.
        std::fs::remove_dir_all(&a.path).unwrap();
        let listed = inventory(&root).unwrap();
        let gone = listed.iter().find(|e| e.name == "feat-a").unwrap();
        assert!(!gone.present);
        let Presence::Moved(moved) = checkout_presence(&root, &a.path) else {
            panic!("not reported as moved or missing");
        };
        assert_eq!(
            (moved.recorded.as_path(), moved.found.as_ref()),
            (a.path.as_path(), None)
        );
        assert!(moved.to_string().contains("git worktree repair"), "{moved}");
        assert_eq!(inventory(&root).unwrap().len(), 2, "nothing was pruned");
        // Only once git forgets it (`git worktree prune`) is it verifiably absent.
        r.find_worktree("feat-a").unwrap().prune(None).unwrap();
        assert_eq!(checkout_presence(&root, &a.path), Presence::Absent);
        assert_eq!(inventory(&root).unwrap().len(), 1);
        assert!(r.find_branch("feat/a", BranchType::Local).is_ok());

        // An unreadable entry makes every answer unknown.
        std::fs::write(root.join(".git/worktrees/feat-b/gitdir"), "garbage\n").unwrap();
        assert!(inventory(&root).is_err());
        assert!(matches!(
            checkout_presence(&root, &b.path),
            Presence::Unknown(_)
        ));
        assert!(matches!(
            checkout_presence(&root, &a.path),
            Presence::Unknown(_)
        ));
        // So does a primary path that is not a repository.
        let nowhere = dir.path().join("nowhere");
        assert!(matches!(
            checkout_presence(&nowhere, &a.path),
            Presence::Unknown(_)
        ));
    }

    #[test]
    fn a_locked_missing_worktree_and_the_primary_are_never_absent() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r) = repo(dir.path());
        let a = ensure_worktree(&root, "feat/a", None).unwrap();
        r.find_worktree("feat-a")
            .unwrap()
            .lock(Some("on a usb disk"))
            .unwrap();
        std::fs::remove_dir_all(&a.path).unwrap();
        assert!(
            matches!(checkout_presence(&root, &a.path), Presence::Unknown(ref why) if why.contains("locked"))
        );
        assert_eq!(
            inventory(&root).unwrap().len(),
            1,
            "a locked entry is not pruned"
        );
        assert!(matches!(
            checkout_presence(&root, &root),
            Presence::Unknown(_)
        ));
        // Never a linked worktree: absent.
        assert_eq!(
            checkout_presence(&root, &dir.path().join("elsewhere")),
            Presence::Absent
        );
    }

    #[test]
    fn a_missing_entry_for_a_branch_is_never_pruned_to_check_it_out_again() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r) = repo(dir.path());
        let a = ensure_worktree(&root, "feat/a", None).unwrap();
        std::fs::remove_dir_all(&a.path).unwrap();
        let err = ensure_worktree(&root, "feat/a", None).unwrap_err();
        assert!(matches!(err, WorktreeError::Moved { .. }), "{err}");
        assert!(err.to_string().contains("git worktree prune"), "{err}");
        assert!(root.join(".git/worktrees/feat-a").is_dir(), "not pruned");
        // The human prunes it: the branch gets a worktree again.
        r.find_worktree("feat-a").unwrap().prune(None).unwrap();
        let again = ensure_worktree(&root, "feat/a", None).unwrap();
        assert!(again.created);
        assert_eq!(again.path, a.path);
        assert_eq!(inventory(&root).unwrap().len(), 1);
    }

    /// Set `flag` (skip-worktree when true, else assume-unchanged) on `path`'s index entry
    /// of the checkout, as `git update-index --skip-worktree` / `--assume-unchanged` do.
    fn flag_entry(checkout: &Path, path: &str, skip: bool) {
        let repo = Repository::open(checkout).unwrap();
        let mut index = repo.index().unwrap();
        let mut entry = index.get_path(Path::new(path), 0).unwrap();
        match skip {
            true => {
                entry.flags |= git2::IndexEntryFlag::EXTENDED.bits();
                entry.flags_extended |= git2::IndexEntryExtendedFlag::SKIP_WORKTREE.bits();
            }
            false => entry.flags |= git2::IndexEntryFlag::VALID.bits(),
        }
        index.add(&entry).unwrap();
        index.write().unwrap();
        let again = Repository::open(checkout).unwrap().index().unwrap();
        let e = again.get_path(Path::new(path), 0).unwrap();
        match skip {
            true => assert!(
                git2::IndexEntryExtendedFlag::from_bits_truncate(e.flags_extended)
                    .is_skip_worktree()
            ),
            false => assert!(git2::IndexEntryFlag::from_bits_truncate(e.flags).is_valid()),
        }
    }

    /// Every file under `dir` (nested repositories' `.git` included) with its bytes, by
    /// relative path.
    fn files_in(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        let mut dirs = vec![dir.to_path_buf()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                match p.is_dir() {
                    true => dirs.push(p),
                    false => {
                        let rel = p.strip_prefix(dir).unwrap().to_path_buf();
                        out.push((rel, std::fs::read(&p).unwrap()));
                    }
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn removal_keeps_what_git_would_not_commit() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r) = repo(dir.path());
        std::fs::write(root.join(".git/info/exclude"), "*.local\n").unwrap();
        type Setup = fn(&Path);
        let cases: [(&str, Setup, &str); 5] = [
            (
                "an ignored file",
                |wt| {
                    std::fs::create_dir(wt.join("target")).unwrap();
                    std::fs::write(wt.join("target/.env"), "TOKEN=secret").unwrap();
                },
                "target/ (ignored)",
            ),
            (
                "a file info/exclude ignores",
                |wt| std::fs::write(wt.join("db.local"), "password").unwrap(),
                "db.local (ignored)",
            ),
            (
                "a nested repository under an ignored directory",
                |wt| {
                    let nested = wt.join("target/vendored");
                    let nested = git2::Repository::init(nested).unwrap();
                    super::fixture::commit_file(&nested, "n.txt", "n\n", "nested work");
                },
                "target/ (ignored)",
            ),
            (
                "an edit hidden by skip-worktree",
                |wt| {
                    flag_entry(wt, "a.txt", true);
                    std::fs::write(wt.join("a.txt"), "hidden edit\n").unwrap();
                },
                "a.txt (hidden by skip-worktree)",
            ),
            (
                "an edit hidden by assume-unchanged",
                |wt| {
                    flag_entry(wt, "a.txt", false);
                    std::fs::write(wt.join("a.txt"), "hidden edit\n").unwrap();
                },
                "a.txt (hidden by assume-unchanged)",
            ),
        ];
        for (i, (what, setup, named)) in cases.into_iter().enumerate() {
            let branch = format!("feat/{i}");
            let wt = ensure_worktree(&root, &branch, None).unwrap();
            setup(&wt.path);
            let before = super::fixture::snapshot(&wt.path);
            let files_before = files_in(&wt.path);
            let err = remove_worktree(&root, &wt.path, false).unwrap_err();
            match &err {
                RemoveError::Dirty { files } => assert_eq!(files, &[named], "{what}"),
                other => panic!("{what}: {other}"),
            }
            assert_eq!(
                super::fixture::snapshot(&wt.path),
                before,
                "{what}: nothing removed"
            );
            assert_eq!(checkout_presence(&root, &wt.path), Presence::Present);

            // Removing anyway moves the checkout aside whole: nothing is deleted.
            let removed = remove_worktree(&root, &wt.path, true).unwrap();
            let kept = removed.kept.expect("moved aside");
            assert!(!wt.path.exists(), "{what}");
            assert!(
                kept.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("feat-{i}.kept-")),
                "{}",
                kept.display()
            );
            assert_eq!(files_in(&kept), files_before, "{what}: all kept");
            assert!(r.find_worktree(&format!("feat-{i}")).is_err(), "{what}");
            assert!(r.find_branch(&branch, BranchType::Local).is_ok());
        }
        // The nested repository's commits came along.
        let kept_nested = std::fs::read_dir(dir.path().join("proj.worktrees"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().contains("feat-2.kept-"))
            .unwrap();
        let nested = Repository::open(kept_nested.join("target/vendored")).unwrap();
        assert_eq!(
            nested
                .head()
                .unwrap()
                .peel_to_commit()
                .unwrap()
                .message()
                .ok(),
            Some("nested work")
        );
        assert!(inventory(&root).unwrap().is_empty());
    }

    #[test]
    fn removal_refuses_during_an_operation_and_a_locked_worktree() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r) = repo(dir.path());
        let wt = ensure_worktree(&root, "feat/a", None).unwrap();
        let admin = root.join(".git/worktrees/feat-a");
        std::fs::write(admin.join("MERGE_HEAD"), format!("{}\n", wt.head)).unwrap();
        let err = remove_worktree(&root, &wt.path, false).unwrap_err();
        assert!(err.to_string().contains("merge is in progress"), "{err}");
        std::fs::remove_file(admin.join("MERGE_HEAD")).unwrap();

        // Detached at a commit of its own: only this worktree's HEAD has it.
        let wt_repo = Repository::open(&wt.path).unwrap();
        let branched = git2::Oid::from_str(&wt.head).unwrap();
        wt_repo.set_head_detached(branched).unwrap();
        assert!(in_the_way(&wt_repo).unwrap().is_empty(), "on main's commit");
        let own = super::fixture::commit_file(&wt_repo, "d.txt", "d\n", "detached work");
        let err = remove_worktree(&root, &wt.path, false).unwrap_err();
        assert!(
            err.to_string().contains(&format!(
                "HEAD {} is detached and on no branch",
                &own.to_string()[..7]
            )),
            "{err}"
        );
        wt_repo.set_head("refs/heads/feat/a").unwrap();
        let mut co = git2::build::CheckoutBuilder::new();
        wt_repo.checkout_head(Some(co.force())).unwrap();
        drop(wt_repo);

        r.find_worktree("feat-a")
            .unwrap()
            .lock(Some("mine"))
            .unwrap();
        for anyway in [false, true] {
            let err = remove_worktree(&root, &wt.path, anyway).unwrap_err();
            assert!(err.to_string().contains("locked (mine)"), "{err}");
        }
        assert!(wt.path.join("a.txt").is_file());
    }

    #[test]
    fn a_moved_checkout_is_reported_as_moved_and_never_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r) = repo(dir.path());
        let wt = ensure_worktree(&root, "feat/a", None).unwrap();
        // Staged work, which lives in git's admin entry.
        std::fs::write(wt.path.join("staged.txt"), "staged\n").unwrap();
        let wt_repo = Repository::open(&wt.path).unwrap();
        let mut index = wt_repo.index().unwrap();
        index.add_path(Path::new("staged.txt")).unwrap();
        index.write().unwrap();
        drop(wt_repo);

        // Renamed by hand next to where it was.
        let renamed = wt.path.with_file_name("renamed");
        std::fs::rename(&wt.path, &renamed).unwrap();
        let renamed = renamed.canonicalize().unwrap();
        for _ in 0..2 {
            let presence = checkout_presence_of(&root, &wt.path, Some("feat/a"));
            let Presence::Moved(moved) = presence else {
                panic!("{presence:?}");
            };
            assert_eq!(moved.found.as_deref(), Some(renamed.as_path()));
            assert_eq!(moved.recorded, wt.path);
            assert!(
                moved
                    .to_string()
                    .contains(&format!("git worktree repair {}", renamed.display())),
                "{moved}"
            );
        }
        let err = ensure_worktree(&root, "feat/a", None).unwrap_err();
        assert!(matches!(err, WorktreeError::Moved { .. }), "{err}");
        assert!(r.find_worktree("feat-a").is_ok(), "git still knows it");

        // `git worktree repair <new path>` works: git records the new path, the staged
        // file is still staged.
        std::fs::write(
            root.join(".git/worktrees/feat-a/gitdir"),
            format!("{}\n", renamed.join(".git").display()),
        )
        .unwrap();
        assert_eq!(checkout_presence(&root, &renamed), Presence::Present);
        let index = Repository::open(&renamed).unwrap().index().unwrap();
        assert!(index.get_path(Path::new("staged.txt"), 0).is_some());
        // Asked about the old path, the branch's worktree is found where git records it.
        let presence = checkout_presence_of(&root, &wt.path, Some("feat/a"));
        assert!(
            matches!(&presence, Presence::Moved(m) if m.found.as_deref() == Some(renamed.as_path())),
            "{presence:?}"
        );

        // Moved far away: git cannot find it, still reported (with nowhere found), kept.
        let far = dir.path().join("elsewhere");
        std::fs::create_dir(&far).unwrap();
        std::fs::rename(&renamed, far.join("x")).unwrap();
        let presence = checkout_presence_of(&root, &renamed, Some("feat/a"));
        assert!(
            matches!(&presence, Presence::Moved(m) if m.found.is_none()),
            "{presence:?}"
        );
        assert!(root.join(".git/worktrees/feat-a/index").is_file());
        // A path that exists but git does not list is never absent.
        assert!(matches!(
            checkout_presence(&root, &far),
            Presence::Unknown(_)
        ));
    }

    #[test]
    fn head_and_ahead_behind() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r) = repo(dir.path());
        let wt = ensure_worktree(&root, "feat/a", None).unwrap();
        let wt_repo = Repository::open(&wt.path).unwrap();
        commit_file(&wt_repo, "b.txt", "b\n", "b");
        let top = commit_file(&wt_repo, "c.txt", "c\n", "c");
        commit_file(&r, "a.txt", "two\n", "primary moves");
        assert_eq!(ahead_behind(&root, "feat/a").unwrap(), (2, 1));
        assert!(matches!(
            ahead_behind(&root, "nope"),
            Err(WorktreeError::BranchMissing { .. })
        ));

        assert_eq!(
            head(&wt.path).unwrap(),
            (Some("feat/a".into()), top.to_string())
        );
        wt_repo.set_head_detached(top).unwrap();
        assert_eq!(head(&wt.path).unwrap(), (None, top.to_string()));
        let listed = inventory(&root).unwrap();
        assert_eq!(listed[0].branch, None, "a detached worktree has no branch");
    }
}
