//! Project work in tests: a repository in the core's work directory (`app`, on `main`
//! with one commit), a Manager (a harness client registered in its primary worktree that
//! took the Manager lease), the core's view of the projects, and git read with the CLI.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use shepherd_core::protocol::{Assignment, ClientKind, Project, Role, requests};

use crate::Core;
use crate::git_repo::git;
use crate::workers::work_dir;

/// `<work dir>/<name>`, a repository on `main` with one commit; canonical.
pub fn repo(core: &Core, name: &str) -> Result<PathBuf> {
    let repo = work_dir(core).join(name);
    std::fs::create_dir_all(&repo)?;
    git(&repo, &["init", "-q", "-b", "main"])?;
    std::fs::write(repo.join("README"), "x\n")?;
    git(&repo, &["add", "."])?;
    git(&repo, &["commit", "-q", "-m", "init"])?;
    Ok(repo.canonicalize()?)
}

/// A commit in `dir` adding `file`; returns the new HEAD.
pub fn commit(dir: &Path, file: &str, text: &str) -> Result<String> {
    std::fs::write(dir.join(file), text)?;
    git(dir, &["add", file])?;
    git(dir, &["commit", "-q", "-m", &format!("add {file}")])?;
    rev(dir, "HEAD")
}

/// `git rev-parse <rev>` in `dir`.
pub fn rev(dir: &Path, rev: &str) -> Result<String> {
    let out = Command::new("git")
        .args(["rev-parse", "--verify", "-q", rev])
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .output()
        .context("running git")?;
    if !out.status.success() {
        bail!("git rev-parse {rev} in {}: no such revision", dir.display());
    }
    Ok(String::from_utf8(out.stdout)?.trim().to_string())
}

/// A harness Pi session in `repo` (its primary worktree) holding the Manager lease.
pub async fn manager(core: &Core, repo: &Path, id: &str) -> Result<crate::Pi> {
    let mut pi = crate::Pi::register(&core.socket(), id, "app-manager", repo).await?;
    let set = pi
        .client
        .call(requests::SetRole {
            role: Role::Manager,
            ..Default::default()
        })
        .await?;
    if set.session.role != Role::Manager {
        bail!("not granted the Manager role: {set:?}");
    }
    Ok(pi)
}

/// The projects as the human sees them.
pub async fn projects(core: &Core) -> Result<Vec<Project>> {
    let mut cli = core.client(ClientKind::Cli).await?;
    Ok(cli.call(requests::ListProjects::default()).await?)
}

/// The open assignment of `branch`, as `list_projects` shows it.
pub async fn assignment(core: &Core, branch: &str) -> Result<Option<Assignment>> {
    Ok(projects(core)
        .await?
        .into_iter()
        .flat_map(|p| p.assignments)
        .find(|a| a.branch == branch))
}

/// Wait until `branch`'s assignment satisfies `ok`.
pub async fn wait_assignment(
    core: &Core,
    branch: &str,
    what: &str,
    ok: impl Fn(&Assignment) -> bool,
) -> Result<Assignment> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let a = assignment(core, branch).await?;
        if let Some(a) = a.as_ref().filter(|a| ok(a)) {
            return Ok(a.clone());
        }
        if tokio::time::Instant::now() > deadline {
            bail!(
                "{branch}'s assignment never became {what}: {a:?}\n{}",
                core.log()
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    }
}
