//! # Project work on the phone
//!
//! What the bridges say about project work (a repository's Manager handing branches to
//! Leads in their own linked worktrees), the same on both phones and pure (the clock
//! passed in): `/projects` (`!projects`) as repositories → assignments, each with its
//! `repo@branch` tag, state, Lead state, last update (age and first line), ahead/behind
//! the primary branch, open asks and the Lead tree's tokens and cost, under the
//! repository's Manager (or `no manager`); an assignment update (a Lead's finished turn)
//! tagged `app@feat/a` with its text, said in the project's place (the Manager's topic or
//! thread); and one short line when an assignment's state or Lead state changes
//! ([`Change::between`] decides which changes are worth a line).

use shepherd_core::protocol::projects::INTEGRATION_OPTIONS;
use shepherd_core::protocol::{Ask, Assignment, AssignmentState, LeadState, Millis, Project};

use super::format::{ago, one_line, plural, truncate};
use super::html::Html;
use super::markdown::markdown;
use super::render::Rendered;
use super::workers::spent;

/// Longest project, branch or session name shown.
const NAME: usize = 100;
/// Longest first line of a last update in `/projects`.
const UPDATE_LINE: usize = 160;

/// `app@feat/a`: an assignment's tag (its repository and the branch it was created for);
/// `gpu:app@feat/a` on a linked host.
pub fn tag(a: &Assignment) -> String {
    format!(
        "{}@{}",
        project_name(a.host.as_deref(), &a.project),
        truncate(&one_line(&a.branch), NAME)
    )
}

/// A repository as the herd names it: `app`, or `gpu:app` on a linked host (the same
/// repository cloned on two machines is two projects).
fn project_name(host: Option<&str>, project: &str) -> String {
    let project = truncate(&one_line(project), NAME);
    match host {
        Some(host) => format!("{}:{project}", truncate(&one_line(host), NAME)),
        None => project,
    }
}

/// An icon for where an assignment stands: its Lead at work, starting or stopped; paused;
/// retired.
fn state_icon(a: &Assignment) -> &'static str {
    match (a.state, a.lead) {
        (AssignmentState::Retired, _) => "🏁",
        (AssignmentState::Paused, _) => "⏸️",
        (AssignmentState::Active, LeadState::Running) => "🟢",
        (AssignmentState::Active, LeadState::Starting) => "🚀",
        (AssignmentState::Active, LeadState::Stopped) => "⚪",
    }
}

/// `/projects`: a header, then per repository its Manager and one entry per assignment.
/// No project work: a sentence saying how it starts.
/// The Lead session an integration's approval card is about (`app@feat/a`, named like its
/// assignment; `gpu:app@feat/a` for a linked host's): what its "diff" shows. `None` for
/// any other ask.
pub fn integration_target(ask: &Ask) -> Option<String> {
    if ask.options != INTEGRATION_OPTIONS {
        return None;
    }
    let (tag, _) = ask
        .question
        .strip_prefix("Integrate ")?
        .split_once(" into ")?;
    Some(match &ask.host {
        Some(host) => format!("{host}:{tag}"),
        None => tag.to_string(),
    })
}

/// What a `/new` choice stands for until its task is written: `new:<project>` (a button's
/// prompt, a line) is steered like a session, and the relay starts one there instead.
pub const NEW_TARGET: &str = "new:";

/// `/new` alone: which project, and how to go on (`/`: Telegram's buttons; `!`: Matrix's
/// lines, one per project).
pub fn choose_project(prefix: char) -> Rendered {
    let how = match prefix {
        '/' => "Tap one, then write its task",
        _ => "Reply to a project's line with its task",
    };
    let mut h = Html::new();
    h.text("▶️ ").bold("Start a session in which project?").text(&format!(
        " {how} (--branch NAME first starts it in a new worktree on that new branch), or {prefix}new <project> <task>."
    ));
    h.into()
}

/// A project to choose for `/new`: `▶️ app`.
pub fn project_choice(project: &str) -> String {
    format!("▶️ {}", truncate(&one_line(project), NAME))
}

/// The prompt for a chosen project's task.
pub fn task_prompt(project: &str) -> Rendered {
    let mut h = Html::new();
    h.text("✍️ What should a new session in ")
        .bold(&truncate(&one_line(project), NAME))
        .text(" do? Reply to this message with its task (--branch NAME first for a new worktree).");
    h.into()
}

pub fn projects_list(projects: &[Project], now: Millis, prefix: char) -> Rendered {
    let mut h = Html::new();
    if projects.is_empty() {
        h.text("📂 No project work yet. It starts with a Manager: type ")
            .code("/manager")
            .text(
                " in a Pi session in a repository's primary checkout and ask it to hand a \
                 branch to a Lead (delegate_project); each Lead works in its own worktree \
                 and its updates show in the manager's topic.",
            );
        return h.into();
    }
    let assignments: usize = projects.iter().map(|p| p.assignments.len()).sum();
    h.text("📂 ").bold("Projects").text(&format!(
        ": {}, {}",
        plural(projects.len() as u64, "repository", "repositories"),
        plural(assignments as u64, "assignment", "assignments")
    ));
    let mut sorted: Vec<&Project> = projects.iter().collect();
    sorted
        .sort_by(|a, b| (&a.host, &a.project, &a.repo_id).cmp(&(&b.host, &b.project, &b.repo_id)));
    for p in sorted {
        h.line();
        project_heading(&mut h, p);
        if p.assignments.is_empty() {
            h.line().italic("   no open assignments");
        }
        for a in &p.assignments {
            assignment_entry(&mut h, a, now);
        }
    }
    h.line().italic(&format!(
        "updates and the manager's questions are in its topic; {prefix}staff shows who reports to whom"
    ));
    h.into()
}

/// `🗂 app · primary main · 🧭 manager mara` (`(away)` when its holder is not connected),
/// or `· no manager`.
fn project_heading(h: &mut Html, p: &Project) {
    h.text("🗂 ")
        .bold(&project_name(p.host.as_deref(), &p.project));
    if let Some(branch) = &p.primary_branch {
        h.text(&format!(" · primary {}", truncate(&one_line(branch), NAME)));
    }
    match &p.manager {
        Some(lease) => {
            h.text(" · 🧭 manager ")
                .bold(&truncate(&one_line(&lease.session_name), NAME));
            if !lease.connected {
                h.text(" (away)");
            }
        }
        None => {
            h.text(" · no manager");
        }
    }
}

/// Two lines: `└ 🟢 app@feat/a · active · Lead running · 2 ahead, 0 behind · ❓ 1 open ask
/// · 12,345 tokens · $0.0123`, then `   last update 3m ago: …` (or `no update yet`).
fn assignment_entry(h: &mut Html, a: &Assignment, now: Millis) {
    // Retired work (`/projects all`): integrated at which commit and when, one line.
    if a.state == AssignmentState::Retired {
        let how = match &a.integrated_sha {
            Some(sha) => format!("integrated at {}", &sha[..sha.len().min(7)]),
            None => "retired without integration".to_string(),
        };
        h.line()
            .text(&format!("└ {} ", state_icon(a)))
            .bold(&tag(a))
            .text(&format!(" · {how} · {}", ago(a.updated_at, now)));
        return;
    }
    h.line()
        .text(&format!("└ {} ", state_icon(a)))
        .bold(&tag(a))
        .text(&format!(" · {} · Lead {}", a.state, a.lead));
    if let Some(current) = a.current_branch.as_ref().filter(|b| **b != a.branch) {
        h.text(&format!(" (on {})", truncate(&one_line(current), NAME)));
    }
    let drift = match (a.ahead, a.behind) {
        (Some(ahead), Some(behind)) => format!("{ahead} ahead, {behind} behind"),
        _ => "ahead/behind unknown".to_string(),
    };
    h.text(&format!(" · {drift}"));
    if a.open_asks > 0 {
        h.text(&format!(
            " · ❓ {}",
            plural(a.open_asks.into(), "open ask", "open asks")
        ));
    }
    h.text(&format!(
        " · {}",
        a.usage.as_ref().map_or("—".to_string(), spent)
    ));
    if a.cleanup_pending {
        h.text(" · ⚠️ integrated, checkout not removed yet");
    }
    if a.checkout_missing.is_some() {
        h.text(" · ⚠️ checkout moved or missing (`shepherd projects` says how to repair it)");
    }
    h.line().text("   ");
    match (a.last_update_at, &a.last_update) {
        (Some(at), Some(text)) => {
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            h.italic(&format!("last update {}: ", ago(at, now)))
                .text(&truncate(&one_line(first), UPDATE_LINE));
        }
        _ => {
            h.italic("no update yet");
        }
    }
}

/// An assigned Lead finished a turn: `📬 app@feat/a · update from the Lead`, then its
/// final text (its Markdown rendered). Posted whole: the platform splits a long one, or
/// sends it as a file, as it does reports.
pub fn update(a: &Assignment, text: &str) -> Rendered {
    let mut h = Html::new();
    h.text("📬 ").bold(&tag(a)).text(" · update from the Lead");
    if let Some(head) = a.head.as_deref().filter(|h| !h.is_empty()) {
        h.text(" · ")
            .code(&head.chars().take(7).collect::<String>());
    }
    let text = text.trim();
    if text.is_empty() {
        h.line().italic("(no text)");
    } else {
        let (html, plain) = markdown(text).finish();
        h.line().raw(&html, &plain);
    }
    h.into()
}

/// A change of an assignment worth a line in the project's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Change {
    /// Delegated: its Lead is starting (or running already).
    Assigned,
    /// Its state changed (paused, active again, retired).
    State(AssignmentState),
    /// Only its Lead's state changed (running, stopped).
    Lead(LeadState),
}

impl Change {
    /// What changed from `old` (`None`: an assignment not seen before) to `new`, when it
    /// is worth a line: the state, else the Lead's state; `None` for any other field.
    /// A Lead `starting` again is not said (its `running` follows).
    pub fn between(old: Option<&Assignment>, new: &Assignment) -> Option<Change> {
        let Some(old) = old else {
            // Never seen before: a new delegation, or one paused while this bridge was
            // away; one retired before it was ever seen here is not news.
            return match new.state {
                AssignmentState::Active => Some(Change::Assigned),
                AssignmentState::Paused => Some(Change::State(AssignmentState::Paused)),
                AssignmentState::Retired => None,
            };
        };
        if old.state != new.state {
            return Some(Change::State(new.state));
        }
        // A Lead's own changes are news only while the assignment is active and not being
        // integrated: pausing, integrating and retiring stop the Lead and say so.
        if old.lead != new.lead
            && new.lead != LeadState::Starting
            && new.state == AssignmentState::Active
            && new.integrated_sha.is_none()
        {
            return Some(Change::Lead(new.lead));
        }
        None
    }
}

/// One short line about a [`Change`]: `🧭 app@feat/a assigned: Lead starting in
/// …/app.worktrees/feat-a`, `⏸️ app@feat/a paused: Lead stopped; …`, `✅ app@feat/a
/// integrated at 4b1d2c3, checkout removed`, `🟢 app@feat/a: Lead running`.
pub fn changed(a: &Assignment, change: Change) -> Rendered {
    let mut h = Html::new();
    let tag = tag(a);
    match change {
        Change::Assigned => {
            h.text("🧭 ")
                .bold(&tag)
                .text(&format!(
                    " assigned by {}: Lead {} in ",
                    one_line(&a.created_by),
                    a.lead
                ))
                .code(&truncate(&a.checkout, 200));
        }
        Change::State(AssignmentState::Paused) => {
            h.text("⏸️ ")
                .bold(&tag)
                .text(" paused: Lead stopped; its session, branch and checkout are kept");
        }
        Change::State(AssignmentState::Active) => {
            h.text(&format!("{} ", state_icon(a)))
                .bold(&tag)
                .text(&format!(" active again: Lead {}", a.lead));
        }
        Change::State(AssignmentState::Retired) => match &a.integrated_sha {
            Some(sha) => {
                h.text("✅ ")
                    .bold(&tag)
                    .text(" integrated at ")
                    .code(&sha.chars().take(7).collect::<String>())
                    .text(", checkout removed; retired");
            }
            None => {
                h.text("🏁 ")
                    .bold(&tag)
                    .text(" retired without integration: no longer assigned (the branch is kept)");
            }
        },
        Change::Lead(lead) => {
            let icon = match lead {
                LeadState::Running => "🟢",
                LeadState::Starting => "🚀",
                LeadState::Stopped => "⚪",
            };
            h.text(&format!("{icon} "))
                .bold(&tag)
                .text(&format!(": Lead {lead}"));
        }
    }
    h.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::protocol::{AssignmentId, Lease, Role, UsageTotals, WorkerBackend};

    const NOW: Millis = 10_000_000;

    fn assignment(branch: &str) -> Assignment {
        Assignment {
            id: AssignmentId::new(1),
            repo_id: "/src/app/.git".into(),
            project: "app".into(),
            branch: branch.into(),
            current_branch: Some(branch.into()),
            checkout: format!("/src/app.worktrees/{}", branch.replace('/', "-")),
            session_id: "lead-1".into(),
            state: AssignmentState::Active,
            lead: LeadState::Running,
            backend: WorkerBackend::Headless,
            pid: Some(42),
            task: "Add <login>".into(),
            created_by: "mara".into(),
            created_by_id: Some("m".into()),
            created_at: NOW - 600_000,
            updated_at: NOW - 60_000,
            last_update_at: Some(NOW - 180_000),
            last_update: Some("\nLogin form done <b>\nsecond line".into()),
            head: Some("4b1d2c3e5f".into()),
            ahead: Some(2),
            behind: Some(0),
            open_asks: 1,
            usage: Some(UsageTotals {
                total_tokens: 12_345,
                cost: 0.01234,
                ..Default::default()
            }),
            integrated_sha: None,
            cleanup_pending: false,
            checkout_missing: None,
            host: None,
        }
    }

    fn project(assignments: Vec<Assignment>, manager: Option<(&str, bool)>) -> Project {
        Project {
            repo_id: "/src/app/.git".into(),
            project: "app".into(),
            primary: "/src/app".into(),
            primary_branch: Some("main".into()),
            manager: manager.map(|(name, connected)| Lease {
                role: Role::Manager,
                repo_id: Some("/src/app/.git".into()),
                project: Some("app".into()),
                session_id: "m".into(),
                session_name: name.into(),
                connected,
                since: 0,
                host: None,
            }),
            assignments,
            host: None,
        }
    }

    #[test]
    fn the_list_is_repositories_then_assignments() {
        let a = assignment("feat/a");
        let b = Assignment {
            state: AssignmentState::Paused,
            lead: LeadState::Stopped,
            ahead: None,
            behind: None,
            open_asks: 0,
            usage: None,
            last_update_at: None,
            last_update: None,
            ..assignment("feat/b")
        };
        let r = projects_list(&[project(vec![a, b], Some(("mara", true)))], NOW, '/');
        assert_eq!(
            r.plain,
            "📂 Projects: 1 repository, 2 assignments\n\
             🗂 app · primary main · 🧭 manager mara\n\
             └ 🟢 app@feat/a · active · Lead running · 2 ahead, 0 behind · ❓ 1 open ask · 12,345 tokens · $0.0123\n   \
             last update 3m ago: Login form done <b>\n\
             └ ⏸️ app@feat/b · paused · Lead stopped · ahead/behind unknown · —\n   \
             no update yet\n\
             updates and the manager's questions are in its topic; /staff shows who reports to whom"
        );
        assert!(r.html.contains("Login form done &lt;b&gt;"), "{}", r.html);
        assert!(!r.plain.contains("second line"), "only the first line");
    }

    #[test]
    fn a_project_without_a_manager_or_with_one_away_says_so() {
        let r = projects_list(&[project(vec![assignment("feat/a")], None)], NOW, '!');
        assert!(
            r.plain.contains("🗂 app · primary main · no manager\n"),
            "{}",
            r.plain
        );
        assert!(r.plain.contains("!staff"), "{}", r.plain);
        let away = projects_list(&[project(vec![], Some(("mara", false)))], NOW, '!');
        assert!(
            away.plain.contains("🧭 manager mara (away)"),
            "{}",
            away.plain
        );
        assert!(away.plain.contains("no open assignments"), "{}", away.plain);
    }

    #[test]
    fn an_assignment_on_another_branch_or_awaiting_cleanup_says_so() {
        let a = Assignment {
            current_branch: Some("spike".into()),
            cleanup_pending: true,
            checkout_missing: Some("the checkout is missing".into()),
            ..assignment("feat/a")
        };
        let r = projects_list(&[project(vec![a], None)], NOW, '/');
        assert!(
            r.plain.contains("Lead running (on spike) · 2 ahead"),
            "{}",
            r.plain
        );
        assert!(r.plain.contains("checkout not removed yet"), "{}", r.plain);
        assert!(r.plain.contains("checkout moved or missing"), "{}", r.plain);
    }

    #[test]
    fn no_projects_says_how_project_work_starts() {
        let r = projects_list(&[], NOW, '/');
        assert!(r.plain.starts_with("📂 No project work yet"), "{}", r.plain);
        assert!(r.plain.contains("/manager"), "{}", r.plain);
        assert!(r.plain.contains("delegate_project"), "{}", r.plain);
    }

    #[test]
    fn an_update_is_tagged_and_keeps_its_text_escaped() {
        let r = update(
            &assignment("feat/a"),
            "Done: `cargo test` passes <ok>\n- **all** green\n",
        );
        assert_eq!(
            r.plain,
            "📬 app@feat/a · update from the Lead · 4b1d2c3\nDone: cargo test passes <ok>\n• all green"
        );
        assert!(r.html.ends_with("\n• <b>all</b> green"), "{}", r.html);
        assert!(r.html.contains("<code>cargo test</code>"), "{}", r.html);
        assert!(r.html.contains("&lt;ok&gt;"), "{}", r.html);
        let empty = update(
            &Assignment {
                head: None,
                ..assignment("feat/a")
            },
            "  ",
        );
        assert_eq!(
            empty.plain,
            "📬 app@feat/a · update from the Lead\n(no text)"
        );
    }

    #[test]
    fn changes_worth_a_line_are_state_and_lead() {
        let a = assignment("feat/a");
        assert_eq!(Change::between(None, &a), Some(Change::Assigned));
        let gone = Assignment {
            state: AssignmentState::Retired,
            ..a.clone()
        };
        assert_eq!(Change::between(None, &gone), None, "never seen: no news");
        assert_eq!(
            Change::between(Some(&a), &gone),
            Some(Change::State(AssignmentState::Retired))
        );
        assert_eq!(Change::between(Some(&a), &a), None);
        let moved = Assignment {
            head: Some("ffff".into()),
            ahead: Some(3),
            last_update: Some("more".into()),
            ..a.clone()
        };
        assert_eq!(Change::between(Some(&a), &moved), None, "not every field");
        let stopped = Assignment {
            lead: LeadState::Stopped,
            ..a.clone()
        };
        assert_eq!(
            Change::between(Some(&a), &stopped),
            Some(Change::Lead(LeadState::Stopped))
        );
        let paused = Assignment {
            state: AssignmentState::Paused,
            ..stopped.clone()
        };
        assert_eq!(
            Change::between(Some(&a), &paused),
            Some(Change::State(AssignmentState::Paused))
        );
        let starting = Assignment {
            lead: LeadState::Starting,
            ..stopped.clone()
        };
        assert_eq!(Change::between(Some(&stopped), &starting), None);
        // The Lead stopping for an integration (its sha recorded, the assignment still
        // active until its checkout is removed) is not said: the integration is.
        let integrating = Assignment {
            lead: LeadState::Stopped,
            integrated_sha: Some("4b1d2c3".into()),
            ..a.clone()
        };
        assert_eq!(Change::between(Some(&a), &integrating), None);
        // The Lead stopping after its assignment was paused or retired is not said again.
        for state in [AssignmentState::Paused, AssignmentState::Retired] {
            let ended = Assignment {
                state,
                lead: LeadState::Running,
                ..a.clone()
            };
            let then = Assignment {
                lead: LeadState::Stopped,
                ..ended.clone()
            };
            assert_eq!(Change::between(Some(&ended), &then), None, "{state:?}");
        }
    }

    #[test]
    fn change_lines_are_short_and_tagged() {
        let a = assignment("feat/a");
        assert_eq!(
            changed(&a, Change::Assigned).plain,
            "🧭 app@feat/a assigned by mara: Lead running in /src/app.worktrees/feat-a"
        );
        // `stop_lead`'s record may still say the Lead runs (its process is on its way
        // out): paused is said as stopped.
        assert_eq!(
            changed(&a, Change::State(AssignmentState::Paused)).plain,
            "⏸️ app@feat/a paused: Lead stopped; its session, branch and checkout are kept"
        );
        let done = Assignment {
            state: AssignmentState::Retired,
            integrated_sha: Some("4b1d2c3e5f".into()),
            ..a.clone()
        };
        assert_eq!(
            changed(&done, Change::State(AssignmentState::Retired)).plain,
            "✅ app@feat/a integrated at 4b1d2c3, checkout removed; retired"
        );
        let gone = Assignment {
            integrated_sha: None,
            ..done
        };
        assert!(
            changed(&gone, Change::State(AssignmentState::Retired))
                .plain
                .contains("retired without integration"),
        );
        assert_eq!(
            changed(&a, Change::Lead(LeadState::Stopped)).plain,
            "⚪ app@feat/a: Lead stopped"
        );
    }
}
