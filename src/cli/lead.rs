//! # `shepherd resume <branch>` and `shepherd stop-lead <branch>`
//!
//! The human starting an assignment's Lead again (`resume_work`: the same Pi session in the
//! same checkout; the running Lead when it already runs) or stopping it (`stop_lead`: the
//! Lead and its workers stop, the assignment is paused, its session, branch and checkout
//! are kept). `--repo` (a repository's name or path) picks the repository when the branch
//! is assigned in more than one. Prints the Lead's state; a refusal prints the core's
//! message and exits non-zero. With `--json`: the protocol's `Assignment` unchanged.

use std::process::ExitCode;

use shepherd_core::protocol::{Assignment, AssignmentState, LeadState, requests};

use super::{Ctx, LeadArgs, print, print_json};

/// Run `shepherd resume`.
pub async fn resume(ctx: &Ctx, args: &LeadArgs) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let assignment = conn
        .call(requests::ResumeWork {
            branch: args.branch.clone(),
            repo: args.repo.clone(),
            ..Default::default()
        })
        .await?;
    show(ctx, &assignment)
}

/// Run `shepherd stop-lead`.
pub async fn stop(ctx: &Ctx, args: &LeadArgs) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let assignment = conn
        .call(requests::StopLead {
            branch: args.branch.clone(),
            repo: args.repo.clone(),
            ..Default::default()
        })
        .await?;
    show(ctx, &assignment)
}

fn show(ctx: &Ctx, a: &Assignment) -> anyhow::Result<ExitCode> {
    if ctx.json {
        print_json(a)?;
    } else {
        print(&render(a))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `app@feat/a: Lead running (session …, pid 5150) in <checkout>; assignment active`. A
/// paused assignment whose Lead has not exited yet (`stop_lead` answers before the process
/// is gone) reads `Lead stopping`.
pub fn render(a: &Assignment) -> String {
    let pid = a.pid.map_or(String::new(), |p| format!(", pid {p}"));
    let paused = a.state == AssignmentState::Paused;
    let lead = if paused && a.lead != LeadState::Stopped {
        "stopping".to_string()
    } else {
        a.lead.to_string()
    };
    let mut line = format!(
        "{}@{}: Lead {lead} (session {}{pid}) in {}; assignment {}\n",
        a.project, a.branch, a.session_id, a.checkout, a.state
    );
    if paused {
        line.push_str(&format!(
            "its session, branch and checkout are kept: `shepherd resume {}` starts it again\n",
            a.branch
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leads_state() {
        let text = include_str!("../../tests/fixtures/protocol/server/assignment.json");
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        let mut a: Assignment = serde_json::from_value(value["assignment"].clone()).unwrap();
        assert_eq!(
            render(&a),
            "app@feat/export: Lead starting (session 0193a5c2-cccc-7b8a-9c3f-1e2d3c4b5a03, \
             pid 5150) in /home/ada/src/app.worktrees/feat-export; assignment active\n"
        );
        a.state = AssignmentState::Paused;
        a.lead = LeadState::Running;
        assert!(render(&a).starts_with("app@feat/export: Lead stopping (session "));
        a.lead = LeadState::Stopped;
        a.pid = None;
        let text = render(&a);
        assert!(text.starts_with("app@feat/export: Lead stopped (session "));
        assert!(text.ends_with("`shepherd resume feat/export` starts it again\n"));
    }
}
