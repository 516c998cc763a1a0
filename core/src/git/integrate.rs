//! # Fast-forward integration
//!
//! How an accepted assignment's work lands on the primary branch, with git2 only and
//! synchronously (the core calls these on a blocking thread): [`plan`] checks that a sha
//! is the branch's tip, a fast-forward of the primary worktree's current branch, and that
//! the primary worktree is clean, and describes it (commits, diffstat) for an approval;
//! [`fast_forward`] does it (a safe checkout of the new tree, then the ref, so a failure
//! leaves the branch where it was) and is idempotent; [`is_on_primary`] proves that work
//! landed before an absent checkout's assignment is reconciled.

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

/// [`plan`], then move the primary branch to the sha and update the primary worktree (a
/// safe checkout of the new tree, then the ref, compared against the sha planned from, so
/// a failure leaves the branch where it was). Idempotent: the primary branch already
/// containing the sha → Ok(plan with `already`).
pub fn fast_forward(primary: &Path, branch: &str, sha: &str) -> Result<Plan, Refusal> {
    let plan = plan(primary, branch, sha)?;
    if plan.already {
        return Ok(plan);
    }
    let repo = open(primary)?;
    let to = Oid::from_str(&plan.to)?;
    let from = Oid::from_str(&plan.from)?;
    let new_tree = repo.find_commit(to)?.tree()?;
    let mut conflicts = Vec::new();
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
        repo.checkout_tree(new_tree.as_object(), Some(&mut co))
    };
    // libgit2 finds every conflict before it writes anything.
    match checked_out {
        Err(_) if !conflicts.is_empty() => return Err(Refusal::DirtyPrimary { files: conflicts }),
        other => other?,
    }
    let refname = format!("refs/heads/{}", plan.primary_branch);
    let message = format!("shepherd: fast-forward {} to {branch}", plan.primary_branch);
    if let Err(e) = repo.reference_matching(&refname, to, true, from, &message) {
        // Put the files back to the branch's unchanged tree before reporting.
        let old_tree = repo.find_commit(from)?.tree()?;
        let mut back = git2::build::CheckoutBuilder::new();
        back.force();
        let _ = repo.checkout_tree(old_tree.as_object(), Some(&mut back));
        return Err(e.into());
    }
    Ok(plan)
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
    use crate::git::worktrees::ensure_worktree;
    use crate::git::worktrees::fixture::{commit_file, repo, snapshot, tip};

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

        let done = fast_forward(&root, "feat/a", &to).unwrap();
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
        let again = fast_forward(&root, "feat/a", &to).unwrap();
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
            let err = fast_forward(&root, branch, sha).unwrap_err();
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
}
