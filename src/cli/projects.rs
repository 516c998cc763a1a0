//! # `shepherd projects`
//!
//! Project work as the core lists it (`list_projects`): per repository its name, primary
//! worktree, primary branch and Manager (or `no manager`), then each work assignment that
//! is not retired (`--all`: the retired ones too, integrated at which sha and when): branch,
//! state, its Lead's state, the last update (age and first line),
//! ahead/behind the primary branch, open asks, and tokens and cost of the Lead's tree; an
//! assignment whose checkout git still records but not at its path is marked `checkout
//! moved or missing`, with what git records and how to repair it on a line below.
//! With nothing to list it says how project work starts. With `--json`: the protocol's
//! `Project` objects unchanged (`[]` when there are none).

use std::process::ExitCode;

use shepherd_core::protocol::{Assignment, AssignmentState, Project, requests};

use super::format::{ago, now_ms};
use super::table::{Align, Table};
use super::{Ctx, print, print_json, terminal_width};

/// What `shepherd projects` says when there is no project work.
pub const NONE: &str = "no project work yet: run `/manager` in a Pi session in a repository's \
                        primary worktree, then have that Manager call delegate_project (a \
                        branch, its own worktree and a Lead working on it)\n";

/// Run `shepherd projects [--all]` (`host`: a linked host's).
pub async fn run(ctx: &Ctx, host: Option<&str>, all: bool) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let projects = conn
        .herd_list(host, |host| requests::ListProjects {
            host,
            all,
            ..Default::default()
        })
        .await?;
    if ctx.json {
        print_json(&projects)?;
    } else if projects.is_empty() {
        print(NONE)?;
    } else {
        print(&render(&projects, now_ms(), terminal_width()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Each repository's heading line, then its assignments as a table.
pub fn render(projects: &[Project], now: u64, width: usize) -> String {
    let mut out = String::new();
    for (i, p) in projects.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&heading(p));
        out.push('\n');
        if p.assignments.is_empty() {
            out.push_str("  no assignments (its Manager's delegate_project starts one)\n");
        } else {
            out.push_str(&assignments(&p.assignments, now, width));
            for a in &p.assignments {
                if let Some(why) = &a.checkout_missing {
                    out.push_str(&format!("  {}: {why}\n", a.branch));
                }
            }
        }
    }
    out
}

/// `app · /home/ada/src/app · main · manager app (connected)`.
fn heading(p: &Project) -> String {
    let branch = p.primary_branch.as_deref().unwrap_or("detached HEAD");
    let manager = match &p.manager {
        Some(l) => format!(
            "manager {} ({})",
            l.session_name,
            if l.connected { "connected" } else { "away" }
        ),
        None => "no manager".to_string(),
    };
    match &p.host {
        Some(host) => format!(
            "{host} · {} · {} · {branch} · {manager}",
            p.project, p.primary
        ),
        None => format!("{} · {} · {branch} · {manager}", p.project, p.primary),
    }
}

fn assignments(list: &[Assignment], now: u64, width: usize) -> String {
    let mut table = Table::new()
        .column("BRANCH", Align::Left)
        .column("STATE", Align::Left)
        .column("LEAD", Align::Left)
        .column("UPDATED", Align::Right)
        .column("AHEAD/BEHIND", Align::Right)
        .column("ASKS", Align::Right)
        .column("TOKENS", Align::Right)
        .column("COST", Align::Right)
        .flexible("LAST UPDATE", 10);
    for a in list {
        let mut state = a.state.to_string();
        if a.cleanup_pending {
            state.push_str(" (cleanup pending)");
        }
        if a.checkout_missing.is_some() {
            state.push_str(" (checkout moved or missing)");
        }
        // Retired work (`--all`): integrated at which commit, when.
        if a.state == AssignmentState::Retired {
            state = match &a.integrated_sha {
                Some(sha) => format!(
                    "integrated at {} {}",
                    &sha[..sha.len().min(7)],
                    ago(a.updated_at, now)
                ),
                None => format!("retired {}", ago(a.updated_at, now)),
            };
        }
        let ahead_behind = match (a.ahead, a.behind) {
            (None, None) => "-".to_string(),
            (ahead, behind) => format!(
                "{}/{}",
                ahead.map_or("?".to_string(), |n| n.to_string()),
                behind.map_or("?".to_string(), |n| n.to_string())
            ),
        };
        let (tokens, cost) = match &a.usage {
            Some(u) => (u.total_tokens.to_string(), format!("${:.4}", u.cost)),
            None => ("-".to_string(), "-".to_string()),
        };
        table.row(vec![
            a.branch.clone(),
            state,
            a.lead.to_string(),
            a.last_update_at.map_or("-".to_string(), |t| ago(t, now)),
            ahead_behind,
            a.open_asks.to_string(),
            tokens,
            cost,
            a.last_update
                .as_deref()
                .map_or("no update yet".to_string(), first_line),
        ]);
    }
    table.render(width)
}

fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Vec<Project> {
        let text = include_str!("../../tests/fixtures/protocol/server/projects.json");
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        serde_json::from_value(value["projects"].clone()).unwrap()
    }

    #[test]
    fn a_repository_heading_then_its_assignments() {
        let projects = fixture();
        let now = projects[0].assignments[0].last_update_at.unwrap() + 5 * 60_000;
        let text = render(&projects, now, 200);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "app · /home/ada/src/app · main · manager app (connected)"
        );
        assert!(lines[1].starts_with("BRANCH"), "{text}");
        let row = lines[2];
        for cell in [
            "feat/export",
            "active",
            "running",
            "5m ago",
            "2/0",
            "68400",
            "$0.4213",
            "CSV export works for the reports page",
        ] {
            assert!(row.contains(cell), "{cell:?} in {row:?}");
        }
    }

    #[test]
    fn no_manager_no_assignments_and_unknown_numbers() {
        let mut projects = fixture();
        projects[0].manager = None;
        let mut a = projects[0].assignments[0].clone();
        a.ahead = None;
        a.behind = None;
        a.usage = None;
        a.last_update = None;
        a.last_update_at = None;
        a.cleanup_pending = true;
        projects[0].assignments = vec![a];
        let mut empty = projects[0].clone();
        empty.assignments.clear();
        empty.project = "lib".into();
        projects.push(empty);
        let text = render(&projects, 0, 200);
        assert!(text.contains("· no manager"), "{text}");
        assert!(text.contains("active (cleanup pending)"), "{text}");
        assert!(text.contains("no update yet"), "{text}");
        assert!(
            text.contains("lib · /home/ada/src/app · main · no manager\n  no assignments"),
            "{text}"
        );
    }
}
