//! Temporary git repositories for tests about repositories and roles: a primary checkout
//! with one commit and a linked worktree, made with the git CLI (as a user would).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Run git in `dir` with a throwaway identity, ignoring the caller's GIT_DIR.
pub fn git(dir: &Path, args: &[&str]) -> Result<()> {
    git_output(dir, args).map(drop)
}

/// [`git`], and what it printed.
pub fn git_output(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .context("running git (is it installed?)")?;
    if !out.status.success() {
        bail!("git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// `git status --porcelain` in `dir`: what git sees changed, staged or untracked.
pub fn status(dir: &Path) -> Result<String> {
    git_output(dir, &["status", "--porcelain"])
}

/// `<base>/<name>` on `main` with one commit, and a linked worktree `<base>/<name>-<branch>`
/// on a new branch `<branch>`; both paths canonical.
pub fn repo_with_worktree(base: &Path, name: &str, branch: &str) -> Result<(PathBuf, PathBuf)> {
    let repo = base.join(name);
    std::fs::create_dir_all(&repo)?;
    git(&repo, &["init", "-q", "-b", "main"])?;
    std::fs::write(repo.join("README"), "x\n")?;
    git(&repo, &["add", "."])?;
    git(&repo, &["commit", "-q", "-m", "init"])?;
    let linked = format!("../{name}-{branch}");
    git(&repo, &["worktree", "add", "-q", "-b", branch, &linked])?;
    Ok((
        repo.canonicalize()?,
        base.join(format!("{name}-{branch}")).canonicalize()?,
    ))
}
