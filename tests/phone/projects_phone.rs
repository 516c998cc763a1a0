//! What the phone scenario of project work (`projects`) needs besides the phone: a core
//! whose Leads are REAL Pi processes (the pinned Pi with the checkout's extension,
//! headless, the scripted fake model below), the harness's repository `app` on `main`
//! and its Manager (`app-manager`, a harness client registered in the primary checkout
//! holding the Manager lease), delegating and integrating through it, and git2 checks on
//! the repository.
//!
//! The Lead's model: given its assignment (`TASK-A`), it commits `a.txt` with bash, then
//! ends its turn with `UPDATE-A a.txt committed on the branch`.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::json;
use shepherd_core::protocol::{Assignment, Integration, requests};
use shepherd_harness::fake_model::{FakeModel, ModelRequest, Reply};
use shepherd_harness::phone::Phone;
use shepherd_harness::{Core, Pi};

pub const LONG: Duration = Duration::from_secs(90);

/// The final text of the Lead's turn: what the update shows.
pub const UPDATE: &str = "UPDATE-A a.txt committed on the branch";
/// The commit the Lead makes.
pub const COMMIT: &str = "feat: add a.txt";

/// What the Lead's model does, by the newest message.
pub fn lead_script(req: &ModelRequest) -> Reply {
    let (role, last) = req.last();
    if role == "tool" {
        return if last.contains("COMMITTED") {
            Reply::text(UPDATE)
        } else {
            Reply::text(format!(
                "the commit failed: {}",
                last.chars().take(200).collect::<String>()
            ))
        };
    }
    if last.contains("TASK-A") {
        let command = format!(
            "echo a > a.txt && git add a.txt && git -c user.name=lead -c user.email=lead@example.invalid \
             -c commit.gpgsign=false commit -q -m '{COMMIT}' && echo COMMITTED"
        );
        return Reply::tool("bash", json!({ "command": command }));
    }
    Reply::text("nothing to do")
}

/// The scripted model, with prices so that the Lead's usage has a cost.
pub async fn model() -> Result<FakeModel> {
    Ok(FakeModel::start(lead_script)
        .await?
        .with_cost(3.0, 15.0, 0.0, 0.0))
}

/// A core whose bridge serves `phone` and whose Leads run headless with the pinned Pi;
/// `[projects] integrate` is the default (`ask`).
pub async fn project_core(model: &FakeModel, phone: &impl Phone) -> Result<Core> {
    shepherd_harness::workers::worker_core_for(model, "headless", phone, &[]).await
}

/// The Manager hands `branch` to a new Lead with `task`.
pub async fn delegate(manager: &mut Pi, task: &str, branch: &str) -> Result<Assignment> {
    Ok(manager
        .client
        .call(requests::DelegateProject {
            id: 0,
            task: task.into(),
            branch: Some(branch.into()),
            base: None,
        })
        .await?)
}

/// The Manager asks to integrate `branch` at `sha`.
pub async fn integrate(manager: &mut Pi, branch: &str, sha: &str) -> Result<Integration> {
    Ok(manager
        .client
        .call(requests::IntegrateBranch {
            id: 0,
            branch: branch.into(),
            sha: sha.into(),
            repo: None,
            remove_anyway: false,
        })
        .await?)
}

/// The Manager stops the Lead of `branch` (the assignment is paused).
pub async fn stop_lead(manager: &mut Pi, branch: &str) -> Result<Assignment> {
    Ok(manager
        .client
        .call(requests::StopLead {
            id: 0,
            branch: branch.into(),
            repo: None,
        })
        .await?)
}

/// The Manager resumes the Lead of `branch` (the same session, in the same checkout).
pub async fn resume_work(manager: &mut Pi, branch: &str) -> Result<Assignment> {
    Ok(manager
        .client
        .call(requests::ResumeWork {
            id: 0,
            branch: branch.into(),
            repo: None,
        })
        .await?)
}

/// The commit `branch` points at in `repo` (git2).
pub fn tip(repo: &Path, branch: &str) -> Result<String> {
    let repo = git2::Repository::open(repo)?;
    let b = repo.find_branch(branch, git2::BranchType::Local)?;
    let oid = b
        .get()
        .target()
        .with_context(|| format!("{branch} has no target"))?;
    Ok(oid.to_string())
}

/// The summary of the commit `branch` points at (git2).
pub fn tip_summary(repo: &Path, branch: &str) -> Result<String> {
    let repo = git2::Repository::open(repo)?;
    let commit = repo
        .find_branch(branch, git2::BranchType::Local)?
        .get()
        .peel_to_commit()?;
    Ok(String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default()).into_owned())
}

/// Wait until `branch`'s tip in `repo` is the Lead's commit; its sha.
pub async fn wait_committed(repo: &Path, branch: &str) -> Result<String> {
    let deadline = tokio::time::Instant::now() + LONG;
    loop {
        if tip_summary(repo, branch).is_ok_and(|s| s == COMMIT) {
            return tip(repo, branch);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("{branch} never got the Lead's commit");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub use shepherd_harness::projects::{manager, repo};
pub use shepherd_harness::workers::next_of_kind;
