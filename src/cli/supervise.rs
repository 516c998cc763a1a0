//! # `shepherd supervise`
//!
//! The human's side of supervision from the terminal: `start` pairs a supervisor session
//! with a worker (the core picks the free supervisor-role session in the worker's
//! directory unless `--supervisor` names one), `goal` changes a pairing's goal, `look`
//! has the supervisor look at its worker now, `stop` ends the pairing. A goal that is one
//! word with `/` or `.` is a file, read by the core relative to the directory the command
//! runs in (sent as `cwd`). Each prints what became of the pairing, or with `--json` the
//! protocol's `Pairing`; a refusal prints the core's message, which says what to do.

use std::process::ExitCode;

use shepherd_core::client::ClientError;
use shepherd_core::protocol::{ErrorCode, Pairing, requests};

use super::format::{tilde, truncate};
use super::{Ctx, Failure, SuperviseAction, print, print_json};

/// Longest goal echoed on the terminal (`shepherd pairings --json` has it whole).
const GOAL_ECHO: usize = 400;

/// Run `shepherd supervise <action>`.
pub async fn run(ctx: &Ctx, action: &SuperviseAction) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let (reply, selector, say): (_, _, fn(&Pairing) -> String) = match action {
        SuperviseAction::Start(args) => {
            let (worker, supervisor) = (args.worker.clone(), args.supervisor.clone());
            let goal = Some(args.goal.join(" ")).filter(|g| !g.trim().is_empty());
            let cwd = current_dir()?;
            let reply = conn
                .try_call(requests::Supervise {
                    worker: Some(worker),
                    supervisor,
                    goal,
                    cwd: Some(cwd),
                    ..Default::default()
                })
                .await?;
            // With --supervisor, an unknown name may be either side: the core says which.
            let selector = args.supervisor.is_none().then_some(args.worker.as_str());
            (reply, selector, started)
        }
        SuperviseAction::Goal(args) => {
            let (session, goal) = (args.session.clone(), args.goal.join(" "));
            let cwd = current_dir()?;
            let reply = conn
                .try_call(requests::SetGoal {
                    goal,
                    session: Some(session),
                    cwd: Some(cwd),
                    ..Default::default()
                })
                .await?;
            (reply, Some(args.session.as_str()), goal_set)
        }
        SuperviseAction::Look(args) => {
            let session = args.session.clone();
            let reply = conn
                .try_call(requests::Look {
                    session: Some(session),
                    ..Default::default()
                })
                .await?;
            (reply, Some(args.session.as_str()), looking)
        }
        SuperviseAction::Stop(args) => {
            let session = args.session.clone();
            let reply = conn
                .try_call(requests::Unpair {
                    session: Some(session),
                    ..Default::default()
                })
                .await?;
            (reply, Some(args.session.as_str()), stopped)
        }
    };
    let pairing = match reply {
        Ok(pairing) => pairing,
        Err(ClientError::Remote {
            code,
            message,
            details,
        }) => return Err(explain(selector, code, &message, details).into()),
        Err(e) => return Err(Failure::from_client(e, &conn.socket).into()),
    };
    let text = say(&pairing);
    if ctx.json {
        print_json(&pairing)?;
    } else {
        print(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What `look` says it did.
fn looking(pairing: &Pairing) -> String {
    format!(
        "pairing {}: {} gets a view of {} now\n",
        pairing.id, pairing.supervisor_name, pairing.worker_name
    )
}

/// What `stop` says it did.
fn stopped(pairing: &Pairing) -> String {
    format!(
        "pairing {} stopped: {} no longer supervises {} ({})\n",
        pairing.id,
        pairing.supervisor_name,
        pairing.worker_name,
        totals(pairing)
    )
}

/// The directory the command runs in, which a goal path is relative to.
fn current_dir() -> Result<String, Failure> {
    std::env::current_dir()
        .map(|d| d.display().to_string())
        .map_err(|e| {
            Failure::new(
                "io",
                format!("cannot read the current directory ({e}): cd into an existing one"),
            )
        })
}

/// The core's refusal, in words. An unknown or ambiguous session lists the candidates
/// when the selector that failed is known; every other refusal is the core's message.
fn explain(
    selector: Option<&str>,
    code: ErrorCode,
    message: &str,
    details: Option<serde_json::Value>,
) -> Failure {
    match (code, selector) {
        (ErrorCode::UnknownSession | ErrorCode::AmbiguousSession, Some(selector)) => {
            super::send::explain(selector, code, message, details)
        }
        _ => Failure::remote(code, message, details),
    }
}

/// `pairing 7: watch-login supervises fix-login`, then the goal.
fn started(p: &Pairing) -> String {
    format!(
        "pairing {}: {} supervises {}\n{}",
        p.id,
        p.supervisor_name,
        p.worker_name,
        goal_line("goal", p)
    )
}

/// `pairing 7: new goal for fix-login: …`.
fn goal_set(p: &Pairing) -> String {
    format!(
        "pairing {}: {}",
        p.id,
        goal_line(&format!("new goal for {}", p.worker_name), p)
    )
}

/// `label: goal` (cut), `label (from path): goal`, or how to set one.
fn goal_line(label: &str, p: &Pairing) -> String {
    let goal = p.goal.as_deref().map(str::trim).unwrap_or_default();
    if goal.is_empty() {
        return format!(
            "no goal yet: steers wait for one; `shepherd supervise goal {} <goal>` sets it\n",
            p.worker_name
        );
    }
    let from = p
        .goal_file
        .as_deref()
        .map_or(String::new(), |f| format!(" (from {})", tilde(f)));
    format!("{label}{from}: {}\n", truncate(goal, GOAL_ECHO))
}

/// `3 looks, 1 steer`.
fn totals(p: &Pairing) -> String {
    let n = |count: u32, one: &str, many: &str| {
        format!("{count} {}", if count == 1 { one } else { many })
    };
    format!(
        "{}, {}",
        n(p.looks, "look", "looks"),
        n(p.steers, "steer", "steers")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::protocol::PairingState;

    fn pairing() -> Pairing {
        Pairing {
            id: 7,
            supervisor_id: "sup-1".into(),
            supervisor_name: "watch-login".into(),
            worker_id: "w-1".into(),
            worker_name: "fix-login".into(),
            cwd: "/src/app".into(),
            goal: Some("SSO works".into()),
            goal_file: None,
            state: PairingState::Active,
            looks: 1,
            steers: 2,
            created_at: 0,
            last_look_at: None,
            ended_at: None,
            end_reason: None,
            ended_by: None,
            evidence: None,
            supervisor_connected: true,
            worker_connected: true,
        }
    }

    #[test]
    fn the_start_says_who_watches_whom_and_the_goal() {
        assert_eq!(
            started(&pairing()),
            "pairing 7: watch-login supervises fix-login\ngoal: SSO works\n"
        );
        let mut p = pairing();
        p.goal_file = Some("/src/app/plan.md".into());
        p.goal = Some("y".repeat(1000));
        let text = goal_set(&p);
        assert!(
            text.starts_with("pairing 7: new goal for fix-login (from /src/app/plan.md): yyy"),
            "{text}"
        );
        assert!(text.ends_with("…\n") && text.len() < 500, "{text}");
        p.goal = None;
        assert!(
            started(&p).contains("`shepherd supervise goal fix-login <goal>`"),
            "{}",
            started(&p)
        );
        assert_eq!(totals(&pairing()), "1 look, 2 steers");
    }

    #[test]
    fn refusals_keep_the_cores_words_and_name_candidates() {
        let f = explain(
            Some("fix"),
            ErrorCode::NoCandidate,
            "no free supervisor session in /src/app: start one with …",
            None,
        );
        assert_eq!(f.code, "no_candidate");
        assert_eq!(
            f.message,
            "no free supervisor session in /src/app: start one with …"
        );
        let details = serde_json::json!({"candidates": [
            {"id": "aaaa", "name": "fix-a", "connected": true},
            {"id": "bbbb", "name": "fix-b", "connected": false},
        ]});
        let f = explain(Some("fix"), ErrorCode::AmbiguousSession, "x", Some(details));
        assert!(
            f.message.contains("fix-a") && f.message.contains("fix-b"),
            "{}",
            f.message
        );
        let f = explain(None, ErrorCode::UnknownSession, "no session \"w\"", None);
        assert_eq!(f.message, "no session \"w\"");
    }
}
