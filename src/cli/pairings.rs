//! # `shepherd pairings`
//!
//! Lists the supervisor/worker pairings the core holds (active ones; with `--all` the
//! ended ones too): a table for people (id, worker, supervisor, goal, looks, steers, state
//! or how it ended, which sides are connected) whose goal column shrinks to fit the
//! terminal, or with `--json` the protocol's `Pairing` objects unchanged. Start, steer
//! and stop pairings with `shepherd supervise`.

use std::process::ExitCode;

use shepherd_core::protocol::{EndReason, Pairing, PairingState, requests};

use super::format::tilde;
use super::table::{Align, Table};
use super::{Ctx, PairingsArgs, print, print_json, terminal_width};

/// Run `shepherd pairings`.
pub async fn run(ctx: &Ctx, args: &PairingsArgs) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let all = args.all;
    let pairings = conn
        .call(requests::ListPairings {
            all,
            ..Default::default()
        })
        .await?;
    if ctx.json {
        print_json(&pairings)?;
    } else if pairings.is_empty() {
        let text = if all {
            "no pairings yet: `shepherd supervise start <worker> <goal>` starts one\n"
        } else {
            "no active pairings (--all also lists ended ones); \
             `shepherd supervise start <worker> <goal>` starts one\n"
        };
        print(text)?;
    } else {
        print(&render(&pairings, terminal_width()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The human table.
pub fn render(pairings: &[Pairing], width: usize) -> String {
    let mut table = Table::new()
        .column("ID", Align::Right)
        .flexible("WORKER", 10)
        .flexible("SUPERVISOR", 10)
        .flexible("GOAL", 12)
        .column("LOOKS", Align::Right)
        .column("STEERS", Align::Right)
        .flexible("STATE", 6)
        .column("CONNECTED", Align::Left);
    for p in pairings {
        table.row(vec![
            p.id.to_string(),
            p.worker_name.clone(),
            p.supervisor_name.clone(),
            goal_excerpt(p),
            p.looks.to_string(),
            p.steers.to_string(),
            state(p),
            connected(p).to_string(),
        ]);
    }
    table.render(width)
}

/// The goal on one line (the table cuts it), or `path: goal` for a goal read from a file.
pub fn goal_excerpt(p: &Pairing) -> String {
    match (p.goal.as_deref().map(str::trim), p.goal_file.as_deref()) {
        (None | Some(""), _) => "-".to_string(),
        (Some(goal), Some(file)) => format!("{}: {goal}", tilde(file)),
        (Some(goal), None) => goal.to_string(),
    }
}

/// `active`, or how it ended: `done`, `stopped by cli`.
pub fn state(p: &Pairing) -> String {
    match p.state {
        PairingState::Active => "active".to_string(),
        PairingState::Ended => {
            let reason = p.end_reason.map_or("ended", EndReason::as_str);
            match p.ended_by.as_deref() {
                Some(by) => format!("{reason} by {by}"),
                None => reason.to_string(),
            }
        }
    }
}

/// Which sides are connected: `both`, `worker`, `supervisor` or `neither`.
pub fn connected(p: &Pairing) -> &'static str {
    match (p.worker_connected, p.supervisor_connected) {
        (true, true) => "both",
        (true, false) => "worker",
        (false, true) => "supervisor",
        (false, false) => "neither",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::examples;
    use unicode_width::UnicodeWidthStr;

    fn pairing(id: u64) -> Pairing {
        Pairing {
            id: id.into(),
            goal: Some("the login form accepts SSO users and every test passes".into()),
            worker_connected: false,
            ..examples::pairing()
        }
    }

    #[test]
    fn the_table_shows_sides_goal_counts_state_and_presence() {
        let mut ended = pairing(2);
        ended.state = PairingState::Ended;
        ended.end_reason = Some(EndReason::Stopped);
        ended.ended_by = Some("telegram:@ada".into());
        ended.goal = None;
        ended.worker_connected = true;
        let out = render(&[pairing(1), ended], 200);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "ID  WORKER     SUPERVISOR   GOAL                                                    \
             LOOKS  STEERS  STATE                     CONNECTED"
        );
        assert_eq!(
            lines[1],
            concat!(
                " 1  fix-login  watch-login  the login form accepts SSO users and every test passes",
                "      3       1  active                    supervisor"
            )
        );
        assert!(
            lines[2].ends_with("-                                                           3       1  stopped by telegram:@ada  both"),
            "{out}"
        );
    }

    #[test]
    fn long_goals_are_cut_to_the_terminal() {
        let mut p = pairing(1);
        p.goal = Some("x".repeat(300));
        let out = render(&[p], 80);
        for line in out.lines() {
            assert!(line.width() <= 80, "{line:?}");
        }
        assert!(out.contains('…'), "{out}");
    }

    #[test]
    fn goals_from_files_and_endings() {
        let mut p = pairing(1);
        p.goal_file = Some("/src/app/docs/plan.md".into());
        p.goal = Some("Make SSO work.\nThen docs.".into());
        assert_eq!(
            goal_excerpt(&p),
            "/src/app/docs/plan.md: Make SSO work.\nThen docs."
        );
        p.state = PairingState::Ended;
        p.end_reason = Some(EndReason::Done);
        assert_eq!(state(&p), "done");
        p.worker_connected = false;
        p.supervisor_connected = false;
        assert_eq!(connected(&p), "neither");
    }
}
