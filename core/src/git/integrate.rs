//! # Fast-forward integration
//!
//! How an accepted assignment's work lands on the primary branch, with git2 only and
//! synchronously (the core calls these on a blocking thread): [`plan`] checks that a sha
//! is the branch's tip, a fast-forward of the primary worktree's current branch, and that
//! the primary worktree is clean, and describes it (commits, diffstat) for an approval;
//! [`fast_forward`] does it the way `git merge --ff-only` does (the ref locked first, a
//! safe checkout, the ref moved last; a failure puts back only the files it wrote, never
//! a file someone else changed) and is idempotent; [`recover`] finishes or undoes one a
//! killed core left, from its journal; [`is_on_primary`] proves that work landed before
//! an absent checkout's assignment is reconciled.

use std::path::Path;

use git2::{BranchType, DiffStatsFormat, Oid, Repository};

use super::worktrees::{LISTED, changed_files, open_primary};

/// The most commits a plan lists.
const COMMITS: usize = 20;

/// A checked fast-forward of the primary branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The primary worktree's current branch.
    pub primary_branch: String,
    /// The primary branch's sha before.
    pub from: String,
    /// The sha it moves to (the assigned branch's tip, full).
    pub to: String,
    /// `abc1234 subject`, newest first, at most 20.
    pub commits: Vec<String>,
    /// How many commits `commits` left out.
    pub more: usize,
    /// git's short diffstat, e.g. ` 3 files changed, 10 insertions(+), 2 deletions(-)`;
    /// empty when nothing changes.
    pub diffstat: String,
    /// The primary branch already contains `to` (it is there or past it): nothing to do.
    pub already: bool,
}

/// Why an integration was refused; it changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("branch {branch} does not exist; check the assignment's branch name")]
    BranchMissing { branch: String },
    #[error(
        "{branch}'s tip is {tip}, not the sha given; review that commit and integrate it by its sha"
    )]
    ShaMismatch { branch: String, tip: String },
    #[error(
        "not a fast-forward: {primary_branch} (at {primary_head}) has commits the branch lacks; rebase or merge {primary_branch} into the branch, then integrate its new tip"
    )]
    NotFastForward {
        primary_branch: String,
        primary_head: String,
    },
    #[error("the primary worktree has uncommitted changes ({}); commit, stash or discard them, then integrate again", .files.join(", "))]
    DirtyPrimary {
        /// At most 10 of the changed paths.
        files: Vec<String>,
    },
    #[error(
        "the primary worktree is in the middle of a {operation}; finish or abort it, then integrate again"
    )]
    PrimaryBusy { operation: String },
    #[error(
        "the primary worktree has a detached HEAD, so there is no primary branch to move; check out the primary branch there"
    )]
    PrimaryDetached,
    #[error("{0:?} is not a commit sha (7 to 40 hex digits); give the branch tip's sha")]
    BadSha(String),
    #[error(
        "{primary_branch} is locked by another git command: {} exists. If no git command is running in that repository (one that crashed leaves this file behind), remove the file and integrate again", lock.display()
    )]
    RefLocked {
        primary_branch: String,
        lock: std::path::PathBuf,
    },
    #[error(
        "{primary_branch} moved while the integration was prepared (planned from {planned}, now {now}); review the new commits and integrate again"
    )]
    PrimaryMoved {
        primary_branch: String,
        planned: String,
        now: String,
    },
    #[error("{why}; the files the integration had written were put back and the branch did not move{}", if kept.is_empty() { String::new() } else { format!(" (changed by someone meanwhile and kept as they are: {})", kept.join(", ")) })]
    Undone {
        why: String,
        /// Files someone changed during the integration, left as they were.
        kept: Vec<String>,
    },
    #[error("git: {0}")]
    Git(String),
}

impl From<git2::Error> for Refusal {
    fn from(e: git2::Error) -> Self {
        Refusal::Git(e.message().to_string())
    }
}

fn open(primary: &Path) -> Result<Repository, Refusal> {
    open_primary(primary).map_err(|e| Refusal::Git(e.to_string()))
}

fn check_sha(sha: &str) -> Result<String, Refusal> {
    let ok = (7..=40).contains(&sha.len()) && sha.bytes().all(|b| b.is_ascii_hexdigit());
    match ok {
        true => Ok(sha.to_ascii_lowercase()),
        false => Err(Refusal::BadSha(sha.to_string())),
    }
}

/// The primary worktree's current branch and its commit.
fn primary_head(repo: &Repository) -> Result<(String, Oid), Refusal> {
    let head = repo.find_reference("HEAD")?;
    let Some(target) = head.symbolic_target()? else {
        return Err(Refusal::PrimaryDetached);
    };
    let branch = target
        .strip_prefix("refs/heads/")
        .ok_or(Refusal::PrimaryDetached)?
        .to_string();
    let oid = repo
        .refname_to_id(target)
        .map_err(|e| Refusal::Git(format!("{branch} has no commits yet: {}", e.message())))?;
    Ok((branch, oid))
}

/// Check that `sha` (full or ≥7-char prefix) is `branch`'s tip and a fast-forward of the
/// primary worktree's current branch, and that the primary worktree is clean (no staged or
/// modified tracked files, no operation in progress, no untracked file the new tree would
/// overwrite); changes nothing. When the primary branch already contains the tip, the plan
/// says `already` and the primary worktree's state does not matter.
pub fn plan(primary: &Path, branch: &str, sha: &str) -> Result<Plan, Refusal> {
    let sha = check_sha(sha)?;
    let repo = open(primary)?;
    let (primary_branch, from) = primary_head(&repo)?;
    let tip = repo
        .find_branch(branch, BranchType::Local)
        .map_err(|_| Refusal::BranchMissing {
            branch: branch.to_string(),
        })?
        .get()
        .target()
        .ok_or_else(|| Refusal::Git(format!("branch {branch} has no target")))?;
    if !tip.to_string().starts_with(&sha) {
        return Err(Refusal::ShaMismatch {
            branch: branch.to_string(),
            tip: tip.to_string(),
        });
    }
    let mut plan = Plan {
        primary_branch,
        from: from.to_string(),
        to: tip.to_string(),
        commits: Vec::new(),
        more: 0,
        diffstat: String::new(),
        already: false,
    };
    if from == tip || repo.graph_descendant_of(from, tip)? {
        plan.already = true;
        return Ok(plan);
    }
    if !repo.graph_descendant_of(tip, from)? {
        return Err(Refusal::NotFastForward {
            primary_branch: plan.primary_branch,
            primary_head: plan.from,
        });
    }
    if repo.state() != git2::RepositoryState::Clean {
        return Err(Refusal::PrimaryBusy {
            operation: format!("{:?}", repo.state()).to_lowercase(),
        });
    }
    let files = changed_files(&repo, false)?;
    if !files.is_empty() {
        return Err(Refusal::DirtyPrimary { files });
    }
    let blocked = blocked_paths(&repo, from, tip)?;
    if !blocked.is_empty() {
        return Err(Refusal::DirtyPrimary { files: blocked });
    }
    let mut walk = repo.revwalk()?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)?;
    walk.push(tip)?;
    walk.hide(from)?;
    let mut total = 0;
    for oid in walk {
        let oid = oid?;
        total += 1;
        if plan.commits.len() < COMMITS {
            let commit = repo.find_commit(oid)?;
            let id = oid.to_string();
            plan.commits.push(format!(
                "{} {}",
                &id[..7],
                commit.summary().ok().flatten().unwrap_or_default()
            ));
        }
    }
    plan.more = total - plan.commits.len();
    let old = repo.find_commit(from)?.tree()?;
    let new = repo.find_commit(tip)?.tree()?;
    let stats = repo
        .diff_tree_to_tree(Some(&old), Some(&new), None)?
        .stats()?;
    let buf = stats.to_buf(DiffStatsFormat::SHORT, 80)?;
    plan.diffstat = String::from_utf8_lossy(&buf).trim_end().to_string();
    Ok(plan)
}

/// Untracked files the new tree would overwrite (a path it writes, a directory above one,
/// or a file below one): a safe checkout would refuse them. git2 has no dry run of a safe
/// checkout, so this compares the diff's paths with the untracked ones.
fn blocked_paths(repo: &Repository, from: Oid, tip: Oid) -> Result<Vec<String>, Refusal> {
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false);
    let untracked: Vec<String> = repo
        .statuses(Some(&mut opts))?
        .iter()
        .filter(|s| s.status().is_wt_new())
        .map(|s| String::from_utf8_lossy(s.path_bytes()).into_owned())
        .collect();
    if untracked.is_empty() {
        return Ok(Vec::new());
    }
    let old = repo.find_commit(from)?.tree()?;
    let new = repo.find_commit(tip)?.tree()?;
    let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), None)?;
    let mut blocked = Vec::new();
    for delta in diff.deltas() {
        let Some(path) = delta.new_file().path() else {
            continue;
        };
        if delta.status() == git2::Delta::Deleted {
            continue;
        }
        let path = path.to_string_lossy();
        for u in &untracked {
            let clash = *u == path
                || path.starts_with(&format!("{u}/"))
                || u.starts_with(&format!("{path}/"));
            if clash && !blocked.contains(u) && blocked.len() < LISTED {
                blocked.push(u.clone());
            }
        }
    }
    Ok(blocked)
}

/// [`plan`], then do what `git merge --ff-only` does, and no more: lock the primary
/// branch's ref first (a lock held by another git command, or left by a crashed one,
/// refuses before anything is touched), check under the lock that the branch is still at
/// the planned commit, write the new tree with a *safe* checkout (it refuses, before
/// writing anything, if a file it would change was changed by someone), then move the ref.
/// A failure after files were written puts back only the files that still hold what the
/// integration wrote ([`put_back`]); a file someone changed meanwhile is kept as it is and
/// named. `journal` (a file of the core's own) records the integration while it runs, so
/// a core killed in the middle finishes or undoes it at its next start ([`recover`]).
/// Idempotent: the primary branch already containing the sha → Ok(plan with `already`).
pub fn fast_forward(
    primary: &Path,
    branch: &str,
    sha: &str,
    journal: &Path,
) -> Result<Plan, Refusal> {
    let plan = plan(primary, branch, sha)?;
    if plan.already {
        return Ok(plan);
    }
    apply(primary, branch, plan, journal, &mut || {})
}

/// The fast-forward of a checked plan; `during` runs once while the new tree is being
/// written (tests use it to act at that moment, as a user or a crash would).
fn apply(
    primary: &Path,
    branch: &str,
    plan: Plan,
    journal: &Path,
    during: &mut dyn FnMut(),
) -> Result<Plan, Refusal> {
    let repo = open(primary)?;
    let to = Oid::from_str(&plan.to)?;
    let from = Oid::from_str(&plan.from)?;
    let refname = format!("refs/heads/{}", plan.primary_branch);
    Journal {
        primary: primary.to_path_buf(),
        refname: refname.clone(),
        from: plan.from.clone(),
        to: plan.to.clone(),
    }
    .write(journal)
    .map_err(|e| {
        Refusal::Git(format!(
            "could not record the integration in {}: {e}",
            journal.display()
        ))
    })?;
    // Whatever the outcome, the primary is at one tree or the other now (or the refusal
    // says which files are not): nothing is left for a restart to finish.
    let outcome = locked_apply(&repo, branch, &plan, &refname, from, to, during);
    remove_journal(journal);
    outcome.map(|()| plan)
}

fn locked_apply(
    repo: &Repository,
    branch: &str,
    plan: &Plan,
    refname: &str,
    from: Oid,
    to: Oid,
    during: &mut dyn FnMut(),
) -> Result<(), Refusal> {
    let mut tx = repo.transaction()?;
    if let Err(e) = tx.lock_ref(refname) {
        let lock = repo.commondir().join(format!("{refname}.lock"));
        return Err(match e.code() {
            git2::ErrorCode::Locked | git2::ErrorCode::Exists => Refusal::RefLocked {
                primary_branch: plan.primary_branch.clone(),
                lock,
            },
            _ => e.into(),
        });
    }
    // Under the lock nobody else moves the branch: it must still be where we planned.
    let (head_branch, now) = primary_head(repo)?;
    if head_branch != plan.primary_branch || now != from {
        return Err(Refusal::PrimaryMoved {
            primary_branch: plan.primary_branch.clone(),
            planned: plan.from.clone(),
            now: format!("{head_branch} at {now}"),
        });
    }
    let new_tree = repo.find_commit(to)?.tree()?;
    let mut conflicts = Vec::new();
    let mut called = false;
    let checked_out = {
        let mut co = git2::build::CheckoutBuilder::new();
        co.safe();
        co.notify_on(git2::CheckoutNotificationType::CONFLICT);
        co.notify(|_, path, _, _, _| {
            if let (Some(p), true) = (path, conflicts.len() < LISTED) {
                conflicts.push(p.to_string_lossy().into_owned());
            }
            true
        });
        co.progress(|path, _, _| {
            if path.is_some() && !called {
                called = true;
                during();
            }
        });
        repo.checkout_tree(new_tree.as_object(), Some(&mut co))
    };
    match checked_out {
        // libgit2 finds every conflict before it writes anything.
        Err(_) if !conflicts.is_empty() => return Err(Refusal::DirtyPrimary { files: conflicts }),
        Err(e) => {
            return Err(undone(
                repo,
                from,
                to,
                &format!("writing the new files failed: {}", e.message()),
            ));
        }
        Ok(()) => {}
    }
    let message = format!("shepherd: fast-forward {} to {branch}", plan.primary_branch);
    let moved = tx
        .set_target(refname, to, None, &message)
        .and_then(|()| tx.commit());
    if let Err(e) = moved {
        return Err(undone(
            repo,
            from,
            to,
            &format!("moving {refname} failed: {}", e.message()),
        ));
    }
    Ok(())
}

/// The files were (partly) written and the branch did not move: put back what the
/// integration wrote, and say so.
fn undone(repo: &Repository, from: Oid, to: Oid, why: &str) -> Refusal {
    match put_back(repo, from, to) {
        Ok(kept) => Refusal::Undone {
            why: why.to_string(),
            kept,
        },
        Err(e) => Refusal::Git(format!(
            "{why}; putting the primary's files back failed too ({}): `git status` shows what the integration wrote, and `git checkout -- <path>` restores a file",
            e.message()
        )),
    }
}

/// Put the primary worktree back from `to`'s tree to `from`'s for the paths the two
/// differ in, touching only files that hold exactly what `to` has (what the integration
/// wrote): a file with other content (someone changed it meanwhile) is kept and returned.
/// Files already as `from` has them are left alone. The index entries of the restored
/// paths are set back to `from`'s.
pub(crate) fn put_back(repo: &Repository, from: Oid, to: Oid) -> Result<Vec<String>, git2::Error> {
    let old = repo.find_commit(from)?.tree()?;
    let new = repo.find_commit(to)?.tree()?;
    let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), None)?;
    let mut paths: Vec<String> = Vec::new();
    for d in diff.deltas() {
        for f in [d.old_file(), d.new_file()] {
            if let Some(p) = f.path().map(|p| p.to_string_lossy().into_owned())
                && !paths.contains(&p)
            {
                paths.push(p);
            }
        }
    }
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let not_as_to = differing(repo, &new, &paths)?;
    let not_as_from = differing(repo, &old, &paths)?;
    let (mut restore, mut remove, mut kept) = (Vec::new(), Vec::new(), Vec::new());
    for p in &paths {
        if !not_as_from.contains(p) {
            continue;
        }
        if not_as_to.contains(p) && !cut_short(repo, &new, p) {
            if kept.len() < LISTED {
                kept.push(p.clone());
            }
            continue;
        }
        match old.get_path(Path::new(p)) {
            Ok(_) => restore.push(p.clone()),
            Err(_) => remove.push(p.clone()),
        }
    }
    let root = repo
        .workdir()
        .ok_or_else(|| git2::Error::from_str("the primary has no work tree"))?
        .to_path_buf();
    let mut index = repo.index()?;
    for p in &remove {
        // Content git has in `to`'s tree: removing it loses nothing.
        match std::fs::remove_file(root.join(p)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(git2::Error::from_str(&format!("removing {p}: {e}"))),
        }
        let _ = index.remove_path(Path::new(p));
    }
    index.write()?;
    // The directories the new tree brought go if they are empty (as git removes them),
    // deepest first: a directory with anything in it stays.
    let mut dirs: Vec<&Path> = paths
        .iter()
        .filter(|p| old.get_path(Path::new(p.as_str())).is_err())
        .flat_map(|p| Path::new(p.as_str()).ancestors().skip(1))
        .filter(|d| !d.as_os_str().is_empty() && old.get_path(d).is_err())
        .collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    dirs.dedup();
    for d in dirs {
        let _ = std::fs::remove_dir(root.join(d));
    }
    if !restore.is_empty() {
        let mut co = git2::build::CheckoutBuilder::new();
        co.force().disable_pathspec_match(true);
        for p in &restore {
            co.path(p.as_str());
        }
        repo.checkout_tree(old.as_object(), Some(&mut co))?;
    }
    Ok(kept)
}

/// Whether the work tree file at `p` is a beginning of `tree`'s blob there (a file a
/// killed checkout was writing: git has all of it, so putting it back loses nothing).
fn cut_short(repo: &Repository, tree: &git2::Tree, p: &str) -> bool {
    let Some(root) = repo.workdir() else {
        return false;
    };
    let Ok(blob) = tree
        .get_path(Path::new(p))
        .and_then(|e| e.to_object(repo))
        .and_then(|o| o.peel_to_blob())
    else {
        return false;
    };
    let path = root.join(p);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() && m.len() < blob.size() as u64 => {}
        _ => return false,
    }
    std::fs::read(&path).is_ok_and(|bytes| blob.content().starts_with(&bytes))
}

/// The paths (of `paths`) whose work tree file differs from `tree`'s (content after git's
/// filters, mode, presence).
fn differing(
    repo: &Repository,
    tree: &git2::Tree,
    paths: &[String],
) -> Result<Vec<String>, git2::Error> {
    let mut opts = git2::DiffOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(true)
        .recurse_ignored_dirs(true)
        .include_typechange(true)
        .disable_pathspec_match(true);
    for p in paths {
        opts.pathspec(p);
    }
    let diff = repo.diff_tree_to_workdir(Some(tree), Some(&mut opts))?;
    let mut out = Vec::new();
    for d in diff.deltas() {
        for f in [d.old_file(), d.new_file()] {
            if let Some(p) = f.path().map(|p| p.to_string_lossy().into_owned())
                && !out.contains(&p)
            {
                out.push(p);
            }
        }
    }
    Ok(out)
}

/// What a running integration records in its journal (`<state>/integrating/*.json`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Journal {
    primary: std::path::PathBuf,
    refname: String,
    from: String,
    to: String,
}

impl Journal {
    /// Write durably (a temp file, synced, renamed, the directory synced).
    fn write(&self, path: &Path) -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        let tmp = path.with_extension("tmp");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(&serde_json::to_vec(self).expect("a journal serializes"))?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    }
}

fn remove_journal(path: &Path) {
    if let Err(e) = std::fs::remove_file(path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(journal = %path.display(), error = %e, "could not remove the integration journal");
    }
}

/// What [`recover`] found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovered {
    /// The branch had moved: the integration was complete.
    Finished {
        primary: std::path::PathBuf,
        to: String,
    },
    /// The branch had not moved: the files the integration wrote were put back (`kept`:
    /// files changed by someone else meanwhile, left as they are).
    Undone {
        primary: std::path::PathBuf,
        from: String,
        to: String,
        kept: Vec<String>,
    },
    /// The branch is at neither commit (moved by someone since): nothing was touched.
    Left { primary: std::path::PathBuf },
}

/// Finish or undo an integration a killed core left: `journal` exists only while one
/// runs. The branch already at `to` → it finished (the ref moves last). Still at `from`
/// → the files it wrote are put back ([`put_back`]) and its own lock on the ref (an empty
/// `<ref>.lock` no older than the journal) removed, so the primary holds the old tree
/// again. The journal is removed once that is done; an error keeps it for the next start.
pub fn recover(journal: &Path) -> Result<Recovered, String> {
    let text = std::fs::read(journal).map_err(|e| format!("reading {}: {e}", journal.display()))?;
    let j: Journal = serde_json::from_slice(&text)
        .map_err(|e| format!("{} is not an integration journal: {e}", journal.display()))?;
    let recovered = recover_journal(&j, journal)?;
    remove_journal(journal);
    Ok(recovered)
}

fn recover_journal(j: &Journal, journal: &Path) -> Result<Recovered, String> {
    let git = |e: git2::Error| format!("{}: {}", j.primary.display(), e.message());
    let repo = open_primary(&j.primary).map_err(|e| e.to_string())?;
    let lock = repo.commondir().join(format!("{}.lock", j.refname));
    let ours = |lock: &Path| {
        let (Ok(l), Ok(jm)) = (std::fs::metadata(lock), std::fs::metadata(journal)) else {
            return false;
        };
        // libgit2 writes nothing into a ref's lock until it commits it; git writes the
        // new id at once. Ours: empty, and made after the journal.
        l.len() == 0
            && match (l.modified(), jm.modified()) {
                (Ok(lm), Ok(jmt)) => lm >= jmt,
                _ => false,
            }
    };
    let now = repo.refname_to_id(&j.refname).map_err(git)?;
    let (from, to) = (
        Oid::from_str(&j.from).map_err(git)?,
        Oid::from_str(&j.to).map_err(git)?,
    );
    if now == to {
        return Ok(Recovered::Finished {
            primary: j.primary.clone(),
            to: j.to.clone(),
        });
    }
    if now != from {
        return Ok(Recovered::Left {
            primary: j.primary.clone(),
        });
    }
    let kept = put_back(&repo, from, to).map_err(git)?;
    if ours(&lock) {
        std::fs::remove_file(&lock).map_err(|e| format!("removing {}: {e}", lock.display()))?;
    }
    Ok(Recovered::Undone {
        primary: j.primary.clone(),
        from: j.from.clone(),
        to: j.to.clone(),
        kept,
    })
}

/// Whether `sha` (full or ≥7-char prefix) is reachable from the primary worktree's current
/// branch (an absent checkout's assignment is reconciled only after this proves the work
/// landed). A sha that names no commit here is not on it.
pub fn is_on_primary(primary: &Path, sha: &str) -> Result<bool, Refusal> {
    let sha = check_sha(sha)?;
    let repo = open(primary)?;
    let (_, head) = primary_head(&repo)?;
    let commit = match repo.revparse_single(&sha).and_then(|o| o.peel_to_commit()) {
        Ok(c) => c.id(),
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    Ok(head == commit || repo.graph_descendant_of(head, commit)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::worktrees::fixture::{commit_file, repo, snapshot, tip};
    use crate::git::worktrees::{changed_files, ensure_worktree};

    /// Where the tests' integrations keep their journal.
    fn journal(dir: &Path) -> std::path::PathBuf {
        dir.join("state/integrating/1.json")
    }

    /// A primary repository and a `feat/a` worktree two commits ahead of it (b.txt added,
    /// a.txt changed).
    fn ahead(dir: &Path) -> (std::path::PathBuf, Repository, Repository) {
        let (root, r) = repo(dir);
        let wt = ensure_worktree(&root, "feat/a", None).unwrap();
        let wt_repo = Repository::open(&wt.path).unwrap();
        commit_file(&wt_repo, "b.txt", "b\n", "add b");
        commit_file(&wt_repo, "a.txt", "one\ntwo\n", "extend a");
        (root, r, wt_repo)
    }

    #[test]
    fn fast_forwards_the_primary_branch_and_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r, _wt) = ahead(dir.path());
        let from = tip(&r, "main");
        let to = tip(&r, "feat/a");
        assert!(!is_on_primary(&root, &to).unwrap());

        let planned = plan(&root, "feat/a", &to[..7]).unwrap();
        assert_eq!(planned.primary_branch, "main");
        assert_eq!(
            (planned.from.as_str(), planned.to.as_str()),
            (from.as_str(), to.as_str())
        );
        assert_eq!(
            planned.commits,
            vec![format!("{} extend a", &to[..7]), {
                let b = r
                    .find_commit(Oid::from_str(&to).unwrap())
                    .unwrap()
                    .parent_id(0)
                    .unwrap();
                format!("{} add b", &b.to_string()[..7])
            }]
        );
        assert_eq!(planned.more, 0);
        assert_eq!(planned.diffstat, " 2 files changed, 2 insertions(+)");
        assert!(!planned.already);
        assert_eq!(tip(&r, "main"), from, "plan changes nothing");

        let done = fast_forward(&root, "feat/a", &to, &journal(dir.path())).unwrap();
        assert_eq!(done, planned);
        assert_eq!(tip(&r, "main"), to);
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).unwrap(),
            "one\ntwo\n"
        );
        assert_eq!(std::fs::read_to_string(root.join("b.txt")).unwrap(), "b\n");
        assert!(
            crate::git::worktrees::changed_files(&r, true)
                .unwrap()
                .is_empty()
        );
        assert!(is_on_primary(&root, &to).unwrap());
        assert!(is_on_primary(&root, &from).unwrap());

        // Again (a retry after a failed cleanup): nothing to do, even with the primary dirty.
        std::fs::write(root.join("a.txt"), "edited since\n").unwrap();
        let again = fast_forward(&root, "feat/a", &to, &journal(dir.path())).unwrap();
        assert!(again.already && again.commits.is_empty() && again.diffstat.is_empty());
        assert_eq!(tip(&r, "main"), to);
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).unwrap(),
            "edited since\n"
        );
    }

    #[test]
    fn every_refusal_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r, _wt) = ahead(dir.path());
        let to = tip(&r, "feat/a");
        let main = tip(&r, "main");

        let refused = |branch: &str, sha: &str| {
            let before = snapshot(&root);
            let err = fast_forward(&root, branch, sha, &journal(dir.path())).unwrap_err();
            assert_eq!(snapshot(&root), before, "{err} changed something");
            err
        };

        let err = refused("feat/a", &main);
        assert!(
            matches!(err, Refusal::ShaMismatch { ref tip, .. } if *tip == to),
            "{err}"
        );
        assert!(err.to_string().contains(&to));
        for bad in ["xyz", "abc", &format!("{to}0"), "g123456"] {
            assert!(
                matches!(refused("feat/a", bad), Refusal::BadSha(_)),
                "{bad}"
            );
        }
        let err = refused("feat/none", &to);
        assert!(matches!(err, Refusal::BranchMissing { .. }), "{err}");

        // A modified tracked file.
        std::fs::write(root.join("a.txt"), "local edit\n").unwrap();
        let err = refused("feat/a", &to);
        assert!(
            matches!(err, Refusal::DirtyPrimary { ref files } if files == &["a.txt"]),
            "{err}"
        );
        std::fs::write(root.join("a.txt"), "one\n").unwrap();
        // An untracked file the branch would overwrite.
        std::fs::write(root.join("b.txt"), "mine\n").unwrap();
        let err = refused("feat/a", &to);
        assert!(
            matches!(err, Refusal::DirtyPrimary { ref files } if files == &["b.txt"]),
            "{err}"
        );
        std::fs::remove_file(root.join("b.txt")).unwrap();
        // An untracked file elsewhere is no obstacle.
        std::fs::write(root.join("notes.txt"), "scratch\n").unwrap();
        assert!(plan(&root, "feat/a", &to).is_ok());

        // A detached primary.
        r.set_head_detached(Oid::from_str(&main).unwrap()).unwrap();
        let err = refused("feat/a", &to);
        assert!(matches!(err, Refusal::PrimaryDetached), "{err}");
        assert!(matches!(
            is_on_primary(&root, &main),
            Err(Refusal::PrimaryDetached)
        ));
        r.set_head("refs/heads/main").unwrap();

        // An operation in progress.
        std::fs::write(root.join(".git/MERGE_HEAD"), format!("{to}\n")).unwrap();
        let err = refused("feat/a", &to);
        assert!(
            matches!(err, Refusal::PrimaryBusy { ref operation } if operation == "merge"),
            "{err}"
        );
        std::fs::remove_file(root.join(".git/MERGE_HEAD")).unwrap();

        // The primary diverged.
        let diverged = commit_file(&r, "c.txt", "c\n", "primary moves on");
        let err = refused("feat/a", &to);
        assert!(
            matches!(err, Refusal::NotFastForward { ref primary_branch, ref primary_head }
                if primary_branch == "main" && *primary_head == diverged.to_string()),
            "{err}"
        );
        assert!(err.to_string().contains("rebase or merge main"));
        assert!(!is_on_primary(&root, &to).unwrap());
    }

    #[test]
    fn a_long_plan_lists_twenty_commits_and_counts_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r) = repo(dir.path());
        let wt = ensure_worktree(&root, "feat/long", None).unwrap();
        let wt_repo = Repository::open(&wt.path).unwrap();
        for n in 0..25 {
            commit_file(
                &wt_repo,
                "n.txt",
                &format!("{n}\n"),
                &format!("step {n}\n\nbody"),
            );
        }
        let planned = plan(&root, "feat/long", &tip(&r, "feat/long")).unwrap();
        assert_eq!(planned.commits.len(), 20);
        assert_eq!(planned.more, 5);
        assert!(
            planned.commits[0].ends_with(" step 24"),
            "{:?}",
            planned.commits[0]
        );
        assert!(planned.commits[19].ends_with(" step 5"));
        assert_eq!(planned.diffstat, " 1 file changed, 1 insertion(+)");

        assert!(!is_on_primary(&root, "0000000000000000000000000000000000000000").unwrap());
        assert!(matches!(
            is_on_primary(&root, "nope"),
            Err(Refusal::BadSha(_))
        ));
    }

    /// A primary with `notes.md` and `d.txt` besides `a.txt`, and a `feat/big` branch that
    /// changes a.txt, deletes d.txt, adds b.txt, dir/c.txt and 200 files under bulk/.
    fn big(dir: &Path) -> (std::path::PathBuf, Repository, String, String) {
        let (root, r) = repo(dir);
        commit_file(&r, "notes.md", "notes\n", "notes");
        commit_file(&r, "d.txt", "d\n", "d");
        let from = tip(&r, "main");
        let wt = ensure_worktree(&root, "feat/big", None).unwrap();
        let w = Repository::open(&wt.path).unwrap();
        std::fs::create_dir_all(wt.path.join("dir")).unwrap();
        std::fs::create_dir_all(wt.path.join("bulk")).unwrap();
        for n in 0..200 {
            std::fs::write(wt.path.join(format!("bulk/{n:03}.txt")), format!("{n}\n")).unwrap();
        }
        std::fs::write(wt.path.join("dir/c.txt"), "c\n").unwrap();
        std::fs::write(wt.path.join("b.txt"), "b\n").unwrap();
        std::fs::remove_file(wt.path.join("d.txt")).unwrap();
        let mut index = w.index().unwrap();
        index.remove_path(Path::new("d.txt")).unwrap();
        index.write().unwrap();
        commit_file(&w, "a.txt", "one\ntwo\n", "big change");
        let to = tip(&r, "feat/big");
        (root, r, from, to)
    }

    fn inode_and_mtime(path: &Path) -> (u64, std::time::SystemTime) {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).unwrap();
        (m.ino(), m.modified().unwrap())
    }

    #[test]
    fn a_held_ref_lock_refuses_before_any_file_is_touched() {
        let dir = tempfile::tempdir().unwrap();
        let (root, _r, from, to) = big(dir.path());
        let lock = root.join(".git/refs/heads/main.lock");
        std::fs::write(&lock, "").unwrap();
        let before = snapshot(&root);
        let a = inode_and_mtime(&root.join("a.txt"));
        let err = fast_forward(&root, "feat/big", &to, &journal(dir.path())).unwrap_err();
        assert!(
            matches!(err, Refusal::RefLocked { lock: ref l, .. } if *l == lock),
            "{err}"
        );
        let text = err.to_string();
        assert!(
            text.contains(&lock.display().to_string()) && text.contains("remove the file"),
            "{text}"
        );
        assert_eq!(snapshot(&root), before);
        assert_eq!(
            inode_and_mtime(&root.join("a.txt")),
            a,
            "a.txt was not rewritten"
        );
        assert!(
            lock.exists(),
            "another command's lock is not ours to remove"
        );
        assert!(!journal(dir.path()).exists());
        std::fs::remove_file(&lock).unwrap();
        fast_forward(&root, "feat/big", &to, &journal(dir.path())).unwrap();
        assert_eq!(tip(&Repository::open(&root).unwrap(), "main"), to);
        assert_ne!(from, to);
    }

    #[test]
    fn a_commit_made_after_the_plan_is_kept_and_the_integration_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r, _from, to) = big(dir.path());
        let planned = plan(&root, "feat/big", &to).unwrap();
        let mine = commit_file(&r, "mine.txt", "my work\n", "the user's commit").to_string();
        let before = snapshot(&root);
        let err = apply(&root, "feat/big", planned, &journal(dir.path()), &mut || {}).unwrap_err();
        assert!(matches!(err, Refusal::PrimaryMoved { .. }), "{err}");
        assert!(err.to_string().contains(&mine), "{err}");
        assert_eq!(
            snapshot(&root),
            before,
            "the user's commit and files are as they were"
        );
        assert_eq!(tip(&r, "main"), mine);
    }

    #[test]
    fn a_ref_update_failing_after_the_files_puts_back_only_what_the_integration_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r, from, to) = big(dir.path());
        let planned = plan(&root, "feat/big", &to).unwrap();
        let before = snapshot(&root);
        let lock = root.join(".git/refs/heads/main.lock");
        // While the files are written: the user edits a file the integration does not
        // touch and makes a new one, and the ref's lock disappears, so the ref update fails.
        let mut during = || {
            std::fs::write(root.join("notes.md"), "edited during the integration\n").unwrap();
            std::fs::write(root.join("scratch.txt"), "new\n").unwrap();
            std::fs::remove_file(&lock).unwrap();
        };
        let err = apply(
            &root,
            "feat/big",
            planned,
            &journal(dir.path()),
            &mut during,
        )
        .unwrap_err();
        assert!(
            matches!(err, Refusal::Undone { ref kept, .. } if kept.is_empty()),
            "{err}"
        );
        assert!(err.to_string().contains("put back"), "{err}");
        assert_eq!(tip(&r, "main"), from, "the branch did not move");
        assert_eq!(
            std::fs::read_to_string(root.join("notes.md")).unwrap(),
            "edited during the integration\n"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("scratch.txt")).unwrap(),
            "new\n"
        );
        std::fs::write(root.join("notes.md"), "notes\n").unwrap();
        std::fs::remove_file(root.join("scratch.txt")).unwrap();
        assert_eq!(
            snapshot(&root),
            before,
            "every file the integration wrote was put back"
        );
        assert!(!root.join("bulk").exists() && !root.join("dir").exists());
        assert!(
            changed_files(&r, true).unwrap().is_empty(),
            "the index is main's again"
        );
        assert!(!journal(dir.path()).exists());
    }

    #[test]
    fn put_back_restores_what_the_integration_wrote_and_keeps_what_someone_changed() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r, from, to) = big(dir.path());
        let (f, t) = (Oid::from_str(&from).unwrap(), Oid::from_str(&to).unwrap());
        let before = snapshot(&root);
        // Half an integration: a.txt and b.txt as the branch has them, d.txt deleted,
        // dir/c.txt with someone's own content, bulk/ not written yet.
        std::fs::write(root.join("a.txt"), "one\ntwo\n").unwrap();
        std::fs::write(root.join("b.txt"), "b\n").unwrap();
        std::fs::remove_file(root.join("d.txt")).unwrap();
        std::fs::create_dir_all(root.join("dir")).unwrap();
        std::fs::create_dir_all(root.join("bulk")).unwrap();
        std::fs::write(root.join("dir/c.txt"), "someone's\n").unwrap();
        // A file a killed checkout was writing: the start of the branch's content.
        std::fs::write(root.join("bulk/007.txt"), "").unwrap();
        std::fs::write(root.join("bulk/123.txt"), "12").unwrap();
        let kept = put_back(&r, f, t).unwrap();
        assert_eq!(kept, ["dir/c.txt"]);
        assert_eq!(
            std::fs::read_to_string(root.join("dir/c.txt")).unwrap(),
            "someone's\n"
        );
        std::fs::remove_dir_all(root.join("dir")).unwrap();
        assert_eq!(snapshot(&root), before);
        assert!(changed_files(&r, true).unwrap().is_empty());
    }

    #[test]
    fn recover_undoes_an_interrupted_integration_or_sees_it_finished() {
        let dir = tempfile::tempdir().unwrap();
        let (root, r, from, to) = big(dir.path());
        let before = snapshot(&root);
        let j = journal(dir.path());
        let record = Journal {
            primary: root.clone(),
            refname: "refs/heads/main".into(),
            from: from.clone(),
            to: to.clone(),
        };
        // A core killed while writing the files: its journal, its (empty) lock on the
        // ref, part of the new tree.
        record.write(&j).unwrap();
        let lock = root.join(".git/refs/heads/main.lock");
        std::fs::write(&lock, "").unwrap();
        let new = r
            .find_commit(Oid::from_str(&to).unwrap())
            .unwrap()
            .tree()
            .unwrap();
        let mut co = git2::build::CheckoutBuilder::new();
        co.force()
            .update_index(false)
            .path("a.txt")
            .path("bulk/0*")
            .path("b.txt");
        r.checkout_tree(new.as_object(), Some(&mut co)).unwrap();
        assert!(root.join("bulk/001.txt").exists());
        std::fs::write(root.join("untracked.txt"), "mine\n").unwrap();

        let got = recover(&j).unwrap();
        assert!(
            matches!(got, Recovered::Undone { ref kept, .. } if kept.is_empty()),
            "{got:?}"
        );
        assert!(!j.exists() && !lock.exists());
        assert_eq!(
            std::fs::read_to_string(root.join("untracked.txt")).unwrap(),
            "mine\n"
        );
        std::fs::remove_file(root.join("untracked.txt")).unwrap();
        assert_eq!(snapshot(&root), before);
        assert!(changed_files(&r, true).unwrap().is_empty());

        // Killed after the ref moved (the last step): finished; a lock that is not ours
        // (another git writes the new id into it) stays.
        fast_forward(&root, "feat/big", &to, &j).unwrap();
        record.write(&j).unwrap();
        std::fs::write(&lock, format!("{from}\n")).unwrap();
        let got = recover(&j).unwrap();
        assert!(matches!(got, Recovered::Finished { .. }), "{got:?}");
        assert!(!j.exists() && lock.exists());
    }
}
