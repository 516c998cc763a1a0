//! # What shepherd says about supervision
//!
//! The messages a bridge posts in a worker's topic or thread while a supervisor session
//! watches it (`pairing_event`), and the replies to the pairing commands: the start (who
//! supervises whom, toward which goal, started by whom), a goal change, each steer
//! (`👁 steer: …`), `done` with its evidence, and the end when someone stopped it. Looks,
//! `let_it_run` and presence changes are noise on a phone: [`event`] gives `None` for
//! them, and for the `ended` that follows a `done` (the done message already said it).
//! Every message names the worker, so in a chat without topics it still says which
//! session it is about. Names, goals, steers and evidence are escaped; steers and evidence
//! are Markdown, rendered ([`markdown`]); a goal read from a file is shown as its
//! path and an excerpt.

use shepherd_core::protocol::{EndReason, Pairing, PairingChange, Verdict, VerdictKind};

use super::format::{one_line, plural, truncate};
use super::html::Html;
use super::markdown::markdown;
use super::render::Rendered;

/// Longest session name or `by` shown (UTF-16 units).
const NAME: usize = 100;
/// Longest goal shown when it was typed; the core keeps it whole.
const GOAL: usize = 1500;
/// Longest excerpt of a goal read from a file.
const GOAL_EXCERPT: usize = 500;

/// The message for a pairing event, or `None` when it is not worth a phone's attention.
pub fn event(
    change: PairingChange,
    pairing: &Pairing,
    verdict: Option<&Verdict>,
    by: Option<&str>,
) -> Option<Rendered> {
    match change {
        PairingChange::Started => Some(started(pairing, by)),
        PairingChange::Goal => Some(goal_changed(pairing, by)),
        PairingChange::Verdict => match verdict? {
            v if v.kind == VerdictKind::Steer => Some(steered(pairing, v)),
            v if v.kind == VerdictKind::Done => Some(done(pairing, &v.text)),
            _ => None, // let_it_run
        },
        PairingChange::Ended if pairing.end_reason == Some(EndReason::Done) => None,
        PairingChange::Ended => Some(stopped(pairing, by)),
        PairingChange::Look | PairingChange::Presence => None,
    }
}

/// `👁 Pairing 7: watch-login supervises fix-login.`, the goal, who started it.
pub fn started(pairing: &Pairing, by: Option<&str>) -> Rendered {
    let mut h = Html::new();
    h.text(&format!("👁 Pairing {}: ", pairing.id))
        .bold(&name(&pairing.supervisor_name))
        .text(" supervises ")
        .bold(&name(&pairing.worker_name))
        .text(".");
    h.line();
    match pairing
        .goal
        .as_deref()
        .map(str::trim)
        .filter(|g| !g.is_empty())
    {
        Some(goal) => goal_lines(&mut h, "🎯 Goal", goal, pairing.goal_file.as_deref()),
        None => {
            h.text("🎯 No goal yet: steers wait until one is set.");
        }
    }
    footer(&mut h, "started", by);
    h.into()
}

/// `🎯 New goal for fix-login: …`, with the pairing and who set it.
pub fn goal_changed(pairing: &Pairing, by: Option<&str>) -> Rendered {
    let mut h = Html::new();
    let label = format!("🎯 New goal for {}", name(&pairing.worker_name));
    let goal = pairing.goal.as_deref().map(str::trim).unwrap_or_default();
    goal_lines(&mut h, &label, goal, pairing.goal_file.as_deref());
    h.line().italic(&format!("pairing {}", pairing.id));
    if let Some(by) = by {
        h.italic(&format!(" · set by {}", name(by)));
    }
    h.into()
}

/// `👁 steer: …`, then who steered whom at which look.
pub fn steered(pairing: &Pairing, verdict: &Verdict) -> Rendered {
    let mut h = Html::new();
    h.text("👁 steer: ");
    body(&mut h, &verdict.text);
    h.line().italic(&format!(
        "{} → {} · look {}",
        name(&pairing.supervisor_name),
        name(&pairing.worker_name),
        verdict.look
    ));
    h.into()
}

/// `✅ done: <evidence>`, then the pairing's totals.
pub fn done(pairing: &Pairing, evidence: &str) -> Rendered {
    let mut h = Html::new();
    h.text("✅ done: ");
    body(&mut h, evidence);
    h.line().italic(&format!(
        "{} → {} · pairing {} ended after {}",
        name(&pairing.supervisor_name),
        name(&pairing.worker_name),
        pairing.id,
        totals(pairing)
    ));
    h.into()
}

/// `⏹ Pairing 7 stopped by telegram:@ada: watch-login no longer supervises fix-login (3
/// looks, 1 steer).`
pub fn stopped(pairing: &Pairing, by: Option<&str>) -> Rendered {
    let mut h = Html::new();
    h.text(&format!("⏹ Pairing {} stopped", pairing.id));
    if let Some(by) = pairing.ended_by.as_deref().or(by) {
        h.text(&format!(" by {}", name(by)));
    }
    h.text(": ")
        .bold(&name(&pairing.supervisor_name))
        .text(" no longer supervises ")
        .bold(&name(&pairing.worker_name))
        .text(&format!(" ({}).", totals(pairing)));
    h.into()
}

/// The reply to `look`: `👁 Pairing 7: watch-login looks at fix-login now.`
pub fn looking(pairing: &Pairing) -> Rendered {
    let mut h = Html::new();
    h.text(&format!("👁 Pairing {}: ", pairing.id))
        .bold(&name(&pairing.supervisor_name))
        .text(" looks at ")
        .bold(&name(&pairing.worker_name))
        .text(" now.");
    h.into()
}

/// `label: goal`, or for a goal read from a file `label (path):` and an excerpt quoted.
fn goal_lines(h: &mut Html, label: &str, goal: &str, file: Option<&str>) {
    match file {
        Some(path) => {
            h.text(&format!("{label} (")).code(path).text("):");
            h.line().quote(&truncate(goal, GOAL_EXCERPT));
        }
        None => {
            h.text(&format!("{label}: ")).text(&truncate(goal, GOAL));
        }
    }
}

/// A steer's or the evidence's text, its Markdown rendered.
fn body(h: &mut Html, text: &str) {
    let (html, plain) = markdown(text.trim()).finish();
    h.raw(&html, &plain);
}

/// `<what> by <who>` in italics on its own line, when someone is named.
fn footer(h: &mut Html, what: &str, by: Option<&str>) {
    if let Some(by) = by {
        h.line().italic(&format!("{what} by {}", name(by)));
    }
}

/// `3 looks, 1 steer`.
fn totals(pairing: &Pairing) -> String {
    format!(
        "{}, {}",
        plural(pairing.looks.into(), "look", "looks"),
        plural(pairing.steers.into(), "steer", "steers")
    )
}

fn name(text: &str) -> String {
    truncate(&one_line(text), NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::split::text_of;
    use shepherd_core::examples;
    use shepherd_core::protocol::PairingState;

    fn pairing() -> Pairing {
        Pairing {
            goal: Some("login works & tests <pass>".into()),
            ..examples::pairing()
        }
    }

    fn verdict(kind: VerdictKind, text: &str) -> Verdict {
        Verdict {
            kind,
            text: text.into(),
            look: 3,
            created_at: 0,
        }
    }

    /// The HTML's text is the plain twin.
    fn consistent(r: &Rendered) {
        assert_eq!(text_of(&r.html), r.plain, "html and plain differ");
    }

    #[test]
    fn the_start_names_both_sides_the_goal_and_who() {
        let r = started(&pairing(), Some("telegram:@ada"));
        assert_eq!(
            r.html,
            "👁 Pairing 7: <b>watch-login</b> supervises <b>fix-login</b>.\n\
             🎯 Goal: login works &amp; tests &lt;pass&gt;\n<i>started by telegram:@ada</i>"
        );
        consistent(&r);
        let mut p = pairing();
        p.goal = None;
        let r = started(&p, None);
        assert_eq!(
            r.plain,
            "👁 Pairing 7: watch-login supervises fix-login.\n\
             🎯 No goal yet: steers wait until one is set."
        );
    }

    #[test]
    fn a_goal_from_a_file_shows_its_path_and_an_excerpt() {
        let mut p = pairing();
        p.goal_file = Some("/src/app/docs/plan.md".into());
        p.goal = Some("x".repeat(2000));
        let r = goal_changed(&p, Some("cli"));
        assert!(
            r.html.starts_with(
                "🎯 New goal for fix-login (<code>/src/app/docs/plan.md</code>):\n<blockquote>xxx"
            ),
            "{}",
            r.html
        );
        assert!(r.plain.contains("x…"), "cut: {}", r.plain);
        assert!(r.plain.len() < 700, "an excerpt, not the file");
        assert!(r.plain.ends_with("pairing 7 · set by cli"), "{}", r.plain);
    }

    #[test]
    fn steers_and_done_show_their_text_and_whose() {
        let r = steered(
            &pairing(),
            &verdict(VerdictKind::Steer, "run `cargo test` <first>"),
        );
        assert_eq!(
            r.html,
            "👁 steer: run <code>cargo test</code> &lt;first&gt;\n\
             <i>watch-login → fix-login · look 3</i>"
        );
        assert_eq!(
            r.plain, "👁 steer: run cargo test <first>\nwatch-login → fix-login · look 3",
            "the plain twin is the text without markup"
        );
        let r = done(&pairing(), "all 12 tests pass");
        assert_eq!(
            r.plain,
            "✅ done: all 12 tests pass\nwatch-login → fix-login · pairing 7 ended after 3 looks, 1 steer"
        );
    }

    #[test]
    fn stops_say_who_stopped() {
        let mut p = pairing();
        p.state = PairingState::Ended;
        p.end_reason = Some(EndReason::Stopped);
        p.ended_by = Some("telegram:@ada".into());
        let r = stopped(&p, None);
        assert_eq!(
            r.plain,
            "⏹ Pairing 7 stopped by telegram:@ada: watch-login no longer supervises fix-login \
             (3 looks, 1 steer)."
        );
        consistent(&r);
        p.ended_by = None;
        assert!(stopped(&p, Some("cli")).plain.contains("stopped by cli:"));
        assert_eq!(
            looking(&p).plain,
            "👁 Pairing 7: watch-login looks at fix-login now."
        );
    }

    #[test]
    fn only_what_matters_on_a_phone_is_posted() {
        let p = pairing();
        let steer = verdict(VerdictKind::Steer, "go");
        let run = verdict(VerdictKind::LetItRun, "fine");
        let fin = verdict(VerdictKind::Done, "proof");
        let shown = |c, v: Option<&Verdict>, p: &Pairing| event(c, p, v, Some("cli")).is_some();
        assert!(shown(PairingChange::Started, None, &p));
        assert!(shown(PairingChange::Goal, None, &p));
        assert!(shown(PairingChange::Verdict, Some(&steer), &p));
        assert!(shown(PairingChange::Verdict, Some(&fin), &p));
        assert!(!shown(PairingChange::Verdict, Some(&run), &p));
        assert!(!shown(PairingChange::Verdict, None, &p));
        assert!(!shown(PairingChange::Look, None, &p));
        assert!(!shown(PairingChange::Presence, None, &p));
        let mut ended = p.clone();
        ended.state = PairingState::Ended;
        ended.end_reason = Some(EndReason::Stopped);
        assert!(shown(PairingChange::Ended, None, &ended));
        ended.end_reason = Some(EndReason::Done);
        assert!(
            !shown(PairingChange::Ended, None, &ended),
            "the done verdict already said it"
        );
    }
}
