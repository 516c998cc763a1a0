//! # `shepherd integrate <repo> <branch> <sha>`
//!
//! The human approving or running an integration (`integrate_branch` with `repo`): the
//! core fast-forwards the repository's primary branch to `sha` when it is the assigned
//! branch's tip, removes the checkout and retires the assignment; a Manager's integration
//! waiting for approval is settled by it (the Manager is told the outcome). Prints what the
//! core did; a refusal (sha mismatch, not a fast-forward, a dirty primary worktree, no
//! such assignment, …) prints the core's message and exits non-zero, and nothing changed.
//! A checkout that holds what its branch does not (changes, untracked or ignored files, a
//! nested repository, hidden edits) is kept (`cleanup_pending`, naming what is in the way);
//! `--remove-anyway` is the human's choice to move it aside whole and finish.
//! With `--json`: the protocol's `Integration` unchanged.

use std::process::ExitCode;

use shepherd_core::protocol::{Integration, IntegrationStatus, requests};

use super::{Ctx, IntegrateArgs, print, print_json};

/// Run `shepherd integrate`.
pub async fn run(ctx: &Ctx, args: &IntegrateArgs) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let integration = conn
        .call(requests::IntegrateBranch {
            branch: args.branch.clone(),
            sha: args.sha.clone(),
            repo: Some(args.repo.clone()),
            remove_anyway: args.remove_anyway,
            ..Default::default()
        })
        .await?;
    if ctx.json {
        print_json(&integration)?;
    } else {
        print(&render(&integration))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `integrated app@feat/a into main at 4b1d2c3: <the core's message>`.
pub fn render(i: &Integration) -> String {
    let what = format!(
        "{}@{} into {} at {}",
        i.assignment.project,
        i.assignment.branch,
        i.primary_branch,
        short_sha(&i.sha)
    );
    match i.status {
        IntegrationStatus::Integrated => format!("integrated {what}: {}\n", i.message),
        IntegrationStatus::CleanupPending => format!(
            "integrated {what}, but the checkout is not removed yet: {}\n\
             run the same `shepherd integrate` again to finish (with --remove-anyway to move \
             the checkout aside whole instead)\n",
            i.message
        ),
        IntegrationStatus::AwaitingApproval => format!(
            "{what} waits for approval{}: {}\n",
            i.ask_id.map_or(String::new(), |id| format!(" (ask #{id})")),
            i.message
        ),
    }
}

fn short_sha(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(text: &str) -> Integration {
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        serde_json::from_value(value["integration"].clone()).unwrap()
    }

    #[test]
    fn says_what_the_core_did() {
        let done = fixture(include_str!(
            "../../tests/fixtures/protocol/server/integration.integrated.json"
        ));
        assert_eq!(
            render(&done),
            "integrated app@feat/export into main at 4b1d2c3: main fast-forwarded to 4b1d2c3; \
             the checkout /home/ada/src/app.worktrees/feat-export was removed and the \
             assignment retired (branch feat/export kept).\n"
        );
        let mut pending = done.clone();
        pending.status = IntegrationStatus::CleanupPending;
        assert!(render(&pending).contains("run the same `shepherd integrate` again"));
        let waiting = fixture(include_str!(
            "../../tests/fixtures/protocol/server/integration.json"
        ));
        assert!(
            render(&waiting)
                .starts_with("app@feat/export into main at 4b1d2c3 waits for approval (ask #21): ")
        );
    }
}
