//! # Removing a linked worktree
//!
//! A checkout is removed only when it holds nothing but what its branch has
//! ([`in_the_way`] lists everything else: changes, untracked and ignored files, nested
//! repositories, edits hidden by skip-worktree or assume-unchanged, an operation in
//! progress, a detached HEAD on no branch); on the human's explicit choice (`anyway`) it is
//! moved aside whole next to where it was, never deleted. Finding the worktree and opening
//! the primary checkout are the parent module's.

use std::path::{Path, PathBuf};

use git2::{BranchType, Repository, StatusOptions, WorktreePruneOptions};

use super::{LISTED, WorktreeError, open_primary, read_entry, worktree_names};

/// Why a worktree was not removed.
#[derive(Debug, thiserror::Error)]
pub enum RemoveError {
    #[error("the checkout holds what its branch does not have: {}; commit or discard them, or move them out of the checkout (nothing was removed)", .files.join(", "))]
    Dirty {
        /// At most 10 of the paths in the way ([`in_the_way`]).
        files: Vec<String>,
    },
    #[error("{} is not a linked worktree of this repository; nothing to remove", .0.display())]
    NotAWorktree(PathBuf),
    #[error("git: {0}")]
    Git(String),
}

impl From<git2::Error> for RemoveError {
    fn from(e: git2::Error) -> Self {
        RemoveError::Git(e.message().to_string())
    }
}

impl From<WorktreeError> for RemoveError {
    fn from(e: WorktreeError) -> Self {
        RemoveError::Git(e.to_string())
    }
}

/// What a removal did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    /// Removing anyway: where the checkout's directory was moved, with everything in it
    /// (None: it held nothing but what its branch has, and was deleted).
    pub kept: Option<PathBuf>,
}

/// Remove the linked worktree at `path` (its directory and git's admin entry). The branch
/// is kept. Only when the checkout holds nothing but what its branch has ([`in_the_way`]:
/// no modified, staged, untracked or ignored file, no nested repository, no hidden edit
/// under skip-worktree or assume-unchanged, no operation in progress); else
/// [`RemoveError::Dirty`] naming what is in the way, and nothing changes. `anyway` (the
/// human's explicit choice): the directory is moved aside whole to
/// `<checkout>.kept-<unix seconds>` next to it (a rename: nothing is copied or deleted)
/// and git's admin entry removed; [`Removed::kept`] says where. A locked worktree is never
/// removed.
pub fn remove_worktree(primary: &Path, path: &Path, anyway: bool) -> Result<Removed, RemoveError> {
    let repo = open_primary(primary)?;
    let wanted = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut found = None;
    for name in worktree_names(&repo)? {
        let wt = repo.find_worktree(&name)?;
        let entry = read_entry(&repo, &name, &wt)?;
        if entry.present && entry.path == wanted {
            found = Some(wt);
            break;
        }
    }
    let wt = found.ok_or_else(|| RemoveError::NotAWorktree(path.to_path_buf()))?;
    if let git2::WorktreeLockStatus::Locked(why) = wt.is_locked()? {
        return Err(RemoveError::Git(format!(
            "the worktree is locked{}; `git worktree unlock {}` first if it may go",
            why.map_or(String::new(), |w| format!(" ({w})")),
            wanted.display()
        )));
    }
    let checkout = Repository::open(&wanted)?;
    let files = in_the_way(&checkout)?;
    drop(checkout);
    if files.is_empty() {
        let mut opts = WorktreePruneOptions::new();
        opts.valid(true).working_tree(true);
        wt.prune(Some(&mut opts))?;
        if wanted.symlink_metadata().is_ok() {
            return Err(RemoveError::Git(format!(
                "git no longer lists the worktree but {} is still there; delete it by hand",
                wanted.display()
            )));
        }
        return Ok(Removed { kept: None });
    }
    if !anyway {
        return Err(RemoveError::Dirty { files });
    }
    let kept = kept_dir(&wanted);
    std::fs::rename(&wanted, &kept).map_err(|e| {
        RemoveError::Git(format!(
            "moving {} aside to {} failed ({e}); nothing was removed",
            wanted.display(),
            kept.display()
        ))
    })?;
    // Its directory is gone from where git records it: only the admin entry is left.
    let mut opts = WorktreePruneOptions::new();
    opts.valid(true).working_tree(false);
    wt.prune(Some(&mut opts)).map_err(|e| {
        RemoveError::Git(format!(
            "{} was moved aside to {}, but git's record of it could not be removed ({}); `git worktree prune` does it",
            wanted.display(),
            kept.display(),
            e.message()
        ))
    })?;
    Ok(Removed { kept: Some(kept) })
}

/// `<checkout>.kept-<unix seconds>` (`-2`, `-3`… when taken), next to the checkout.
fn kept_dir(checkout: &Path) -> PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let name = checkout
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "checkout".to_string());
    (1..)
        .map(|n| match n {
            1 => checkout.with_file_name(format!("{name}.kept-{secs}")),
            n => checkout.with_file_name(format!("{name}.kept-{secs}-{n}")),
        })
        .find(|p| p.symlink_metadata().is_err())
        .expect("some suffix is free")
}

/// What in a checkout its branch does not have, up to [`LISTED`] paths (then `… and N
/// more`): staged, modified and untracked paths as git status names them; ignored ones
/// (`target/ (ignored)`: an ignored directory is one entry, whatever it holds, a nested
/// repository included; not recursed into, so a large build directory costs one entry);
/// a nested repository; a tracked file flagged skip-worktree or assume-unchanged whose
/// content differs from HEAD's (git status hides those edits); an operation in progress
/// (merge, rebase, …) or a git command holding the index lock; a detached HEAD at a commit
/// no local branch has. Empty: removing the checkout loses nothing.
pub fn in_the_way(checkout: &Repository) -> Result<Vec<String>, git2::Error> {
    let mut found: std::collections::BTreeMap<String, &'static str> = Default::default();
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(true)
        .recurse_ignored_dirs(false)
        .exclude_submodules(false);
    let workdir = checkout
        .workdir()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    for s in checkout.statuses(Some(&mut opts))?.iter() {
        if s.status() == git2::Status::CURRENT {
            continue;
        }
        let path = String::from_utf8_lossy(s.path_bytes()).into_owned();
        let label = if s.status().is_ignored() {
            " (ignored)"
        } else if workdir.join(&path).join(".git").exists() {
            " (a nested repository)"
        } else {
            ""
        };
        found.insert(path, label);
    }
    let head = checkout.head().ok().and_then(|h| h.peel_to_tree().ok());
    for entry in checkout.index()?.iter() {
        let skip = git2::IndexEntryExtendedFlag::from_bits_truncate(entry.flags_extended)
            .is_skip_worktree();
        let assume = git2::IndexEntryFlag::from_bits_truncate(entry.flags).is_valid();
        if !skip && !assume {
            continue;
        }
        let path = String::from_utf8_lossy(&entry.path).into_owned();
        let file = workdir.join(&path);
        let on_disk = match file.symlink_metadata() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => None,
            Ok(m) if m.is_file() => git2::Oid::hash_file(git2::ObjectType::Blob, &file).ok(),
            Ok(m) if m.file_type().is_symlink() => std::fs::read_link(&file).ok().and_then(|t| {
                git2::Oid::hash_object(git2::ObjectType::Blob, t.as_os_str().as_encoded_bytes())
                    .ok()
            }),
            Ok(_) => None,
        };
        let in_head = head
            .as_ref()
            .and_then(|t| t.get_path(Path::new(&path)).ok())
            .map(|e| e.id());
        if on_disk.is_none() || on_disk != in_head {
            let label = match skip {
                true => " (hidden by skip-worktree)",
                false => " (hidden by assume-unchanged)",
            };
            found.insert(path, label);
        }
    }
    let mut out: Vec<String> = Vec::new();
    let state = checkout.state();
    if state != git2::RepositoryState::Clean {
        out.push(format!("(a {state:?} is in progress)").to_lowercase());
    }
    if checkout.path().join("index.lock").exists() {
        out.push("(a git command holds index.lock)".to_string());
    }
    if let Some(sha) = unbranched_head(checkout)? {
        out.push(format!(
            "(HEAD {} is detached and on no branch: `git branch <name>` keeps its commits)",
            &sha[..7]
        ));
    }
    let total = out.len() + found.len();
    out.extend(found.into_iter().map(|(p, l)| format!("{p}{l}")));
    if total > LISTED {
        out.truncate(LISTED - 1);
        out.push(format!("… and {} more", total - (LISTED - 1)));
    }
    Ok(out)
}

/// The checkout's HEAD sha when it is detached at a commit no local branch has (its commits
/// would only be in this worktree's reflog, which removal deletes).
fn unbranched_head(checkout: &Repository) -> Result<Option<String>, git2::Error> {
    if !checkout.head_detached()? {
        return Ok(None);
    }
    let Some(head) = checkout.head()?.target() else {
        return Ok(None);
    };
    for branch in checkout.branches(Some(BranchType::Local))? {
        let Some(tip) = branch?.0.get().target() else {
            continue;
        };
        if tip == head || checkout.graph_descendant_of(tip, head)? {
            return Ok(None);
        }
    }
    Ok(Some(head.to_string()))
}
