//! # What is said about one session's life
//!
//! The messages a session's topic or thread gets as the session comes and goes, and the
//! replies about one session: its start (the first message of a new topic or thread), its
//! ending (`⏹ fix-login closed`, `💥 fix-login exited while running tool:bash`), an open
//! ask card once its session is gone (no buttons; the answer waits for the session's
//! return), the confirmation of a `/stop`, and `/status` written in the session's topic
//! (the session in detail with its open asks and last report). Pure, like the rest of
//! `chat/`: the clock is passed in.

use shepherd_core::client::Interrupted;
use shepherd_core::protocol::{Ask, LeaveReason, Millis, Peek, Report, SessionInfo, SessionStatus};

use super::format::{ago, one_line, place_after, truncate};
use super::html::Html;
use super::markdown::markdown;
use super::render::{Rendered, card, session_status_at};

/// Longest session name shown.
const NAME: usize = 100;
/// Longest question and report shown in a session's status.
const EXCERPT: usize = 300;

/// `name (repo@branch)` in bold, after `icon`.
fn named(h: &mut Html, icon: &str, s: &SessionInfo) {
    h.text(&format!("{icon} "))
        .bold(&truncate(&one_line(&s.name), NAME));
    if let Some(rb) = place_after(&s.name, s) {
        h.text(&format!(" ({})", truncate(&rb, NAME)));
    }
}

/// What a status means in a sentence's tail: `running tool:bash`, `thinking`, `idle`.
fn doing(status: &SessionStatus) -> String {
    match status {
        SessionStatus::Tool(_) => format!("running {status}"),
        other => other.to_string(),
    }
}

/// The first message about a session that just registered (a new topic's or thread's
/// first message): its role's title when it holds one (`🧭 manager · app`), where it
/// works, and what can be done here.
pub fn started(s: &SessionInfo, prefix: char) -> Rendered {
    let mut h = Html::new();
    // A Manager's or the Chief's thread is titled with its role (Matrix threads have no
    // name of their own; on Telegram the topic is named so too).
    if let Some(title) = super::roles::role_title(s) {
        h.bold(&title).line();
    }
    named(&mut h, "▶️", s);
    h.text(" started");
    h.line().text("cwd: ").code(&s.cwd);
    h.line().italic(&format!(
        "write here to steer it · {prefix}stop interrupts it · {prefix}status shows it"
    ));
    h.into()
}

/// A session's ending: `⏹ fix-login closed` (it said goodbye) or `💥 fix-login exited
/// while running tool:bash` (its connection was lost; `last`: what it was doing).
pub fn ended(s: &SessionInfo, reason: LeaveReason, last: Option<&SessionStatus>) -> Rendered {
    let mut h = Html::new();
    match reason {
        LeaveReason::Closed => {
            named(&mut h, "⏹", s);
            h.text(" closed");
        }
        LeaveReason::Lost => {
            named(&mut h, "💥", s);
            match last {
                Some(status) if !status.is_idle() => {
                    h.text(&format!(" exited while {}", doing(status)))
                }
                _ => h.text(" exited (it was idle)"),
            };
        }
    }
    h.into()
}

/// A session whose process went away while shepherd (the core, or this bridge) was not
/// running: said once when it is back, from the session's pid being gone.
pub fn ended_while_away(s: &SessionInfo) -> Rendered {
    let mut h = Html::new();
    named(&mut h, "⏹", s);
    let pid = s
        .pid
        .map(|p| format!(" (process {p} is gone)"))
        .unwrap_or_default();
    h.text(&format!(" ended while shepherd was away{pid}"));
    h.into()
}

/// The reply to `/new` and `/continue`: what is starting, where; its place follows once
/// it connects.
pub fn starting(s: &shepherd_core::protocol::StartedSession, continued: bool) -> Rendered {
    let mut h = Html::new();
    let what = if continued { "continuing" } else { "starting" };
    h.text(&format!("▶️ {what} ")).bold(&s.name);
    if let Some(branch) = &s.branch
        && !continued
    {
        h.text(&format!(" on the new branch {branch}"));
    }
    h.text(" in ").code(&s.cwd);
    h.line().italic(&format!(
        "{} · its place shows it once it connects",
        s.backend.as_str()
    ));
    h.into()
}

/// The reply to `/close` of a session `/new` or `/continue` started.
pub fn closed_started(s: &shepherd_core::protocol::StartedSession) -> Rendered {
    let mut h = Html::new();
    h.text("⏹ closing ").bold(&s.name);
    h.text(" (its session file is kept: /continue starts it again)");
    h.into()
}

/// A session that had ended is back (resumed, or registered again).
pub fn back(s: &SessionInfo) -> Rendered {
    let mut h = Html::new();
    named(&mut h, "▶️", s);
    h.text(" is back");
    h.into()
}

/// An open ask's card once its session has gone: the card, then that the answer waits
/// for the session's return, and that a reply still answers it (its buttons are gone).
pub fn waiting_card(ask: &Ask, session: Option<&SessionInfo>, reason: LeaveReason) -> Rendered {
    let mut h = card(ask, session);
    let gone = match reason {
        LeaveReason::Closed => "⏹ session closed",
        LeaveReason::Lost => "💥 session exited",
    };
    h.text(&format!("{gone} — your answer waits for its return"))
        .line()
        .italic(&format!(
            "ask #{} · reply to this message to answer",
            ask.id
        ));
    h.into()
}

/// The confirmation of `/stop`: what was interrupted (or that the session was idle, or
/// away), and whether a steer follows.
pub fn interrupted(reply: &Interrupted, then: bool) -> Rendered {
    let name = truncate(&one_line(&reply.session_name), NAME);
    let steer = if then { " Your steer follows." } else { "" };
    let text = if !reply.connected {
        let what = if then {
            "the stop and your steer wait"
        } else {
            "the stop waits"
        };
        format!("⏹ {name} is offline: {what} for its return.")
    } else if reply.was.is_idle() {
        let sent = if then { " Your steer was sent." } else { "" };
        format!("⏹ {name} was idle: there was no run to stop.{sent}")
    } else {
        format!("⏹ stopping {name} (it was {}).{steer}", doing(&reply.was))
    };
    let mut h = Html::new();
    h.text(&text);
    h.into()
}

/// `/status` in a session's topic: the session in detail, what it is doing now (with a
/// `peek` of it: the command it runs and for how long), its open asks and its last
/// report (if this bridge saw one).
pub fn status_here(
    s: &SessionInfo,
    asks: &[&Ask],
    last_report: Option<&Report>,
    peek: Option<&Peek>,
    now: Millis,
) -> Rendered {
    let detail = session_status_at(s, now);
    let mut h = Html::new();
    h.raw(&detail.html, &detail.plain);
    match peek.and_then(|p| Some((p, p.running.as_ref()?))) {
        Some((p, call)) if s.connected => {
            let how_long = p
                .status_for_ms
                .map(|ms| format!(" for {}", shepherd_core::human::duration(ms)))
                .unwrap_or_default();
            h.line()
                .text(&format!("now: running {}{how_long}: ", call.tool))
                .code(&call.args);
        }
        _ => {
            let now_doing = if s.connected {
                doing(&s.status)
            } else {
                "nothing (offline)".to_string()
            };
            h.line().text(&format!("now: {now_doing}"));
        }
    }
    for ask in asks {
        h.line()
            .text(&format!("❓ #{} ", ask.id))
            .text(&truncate(&one_line(&ask.question), EXCERPT));
    }
    if let Some(report) = last_report {
        h.line()
            .text(&format!("last report ({}):", ago(report.created_at, now)));
        let text = truncate(report.text.trim(), EXCERPT);
        let (html, plain) = markdown(&text).finish();
        h.line().raw(&html, &plain);
    }
    h.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::examples;
    use shepherd_core::protocol::SessionId;

    fn session() -> SessionInfo {
        SessionInfo {
            name: "fix-login".into(),
            repo: None,
            branch: None,
            ..examples::session_info()
        }
    }

    #[test]
    fn endings_say_how_the_session_went() {
        let s = session();
        assert_eq!(
            ended(&s, LeaveReason::Closed, Some(&"idle".into())).plain,
            "⏹ fix-login closed"
        );
        assert_eq!(
            ended(&s, LeaveReason::Lost, Some(&"tool:bash".into())).plain,
            "💥 fix-login exited while running tool:bash"
        );
        assert_eq!(
            ended(&s, LeaveReason::Lost, Some(&"thinking".into())).plain,
            "💥 fix-login exited while thinking"
        );
        assert_eq!(
            ended(&s, LeaveReason::Lost, None).plain,
            "💥 fix-login exited (it was idle)"
        );
        let named = SessionInfo {
            name: "<b>x</b>".into(),
            ..session()
        };
        assert!(
            ended(&named, LeaveReason::Closed, None)
                .html
                .contains("&lt;b&gt;")
        );
    }

    #[test]
    fn a_waiting_card_keeps_the_question_and_says_a_reply_answers() {
        let ask = examples::ask();
        let card = waiting_card(&ask, Some(&session()), LeaveReason::Closed);
        assert!(card.plain.contains(&ask.question), "{}", card.plain);
        assert!(
            card.plain
                .contains("⏹ session closed — your answer waits for its return"),
            "{}",
            card.plain
        );
        assert!(card.plain.contains("reply to this message to answer"));
        assert!(!card.plain.contains("choose an option"));
    }

    #[test]
    fn a_stop_says_what_it_stopped() {
        let reply = |connected, was: &str| Interrupted {
            message_id: 1.into(),
            session_id: SessionId::from("s"),
            session_name: "fix-login".into(),
            connected,
            was: was.into(),
        };
        assert_eq!(
            interrupted(&reply(true, "tool:bash"), true).plain,
            "⏹ stopping fix-login (it was running tool:bash). Your steer follows."
        );
        assert_eq!(
            interrupted(&reply(true, "idle"), true).plain,
            "⏹ fix-login was idle: there was no run to stop. Your steer was sent."
        );
        assert_eq!(
            interrupted(&reply(true, "idle"), false).plain,
            "⏹ fix-login was idle: there was no run to stop."
        );
        assert_eq!(
            interrupted(&reply(false, "idle"), true).plain,
            "⏹ fix-login is offline: the stop and your steer wait for its return."
        );
    }

    #[test]
    fn status_in_a_topic_shows_asks_and_the_last_report() {
        let s = SessionInfo {
            connected: true,
            status: "tool:bash".into(),
            ..session()
        };
        let ask = examples::ask();
        let report = Report {
            id: 1,
            session_id: s.id.clone(),
            session_name: s.name.clone(),
            text: "tests pass".into(),
            created_at: 1_000,
            kind: shepherd_core::protocol::ReportKind::Report,
            announced: true,
            host: None,
        };
        let out = status_here(&s, &[&ask], Some(&report), None, 61_000);
        assert!(
            out.plain.contains("now: running tool:bash"),
            "{}",
            out.plain
        );
        assert!(
            out.plain.contains(&format!("❓ #{} ", ask.id)),
            "{}",
            out.plain
        );
        assert!(
            out.plain.contains("last report (1m ago):\ntests pass"),
            "{}",
            out.plain
        );
        assert!(out.plain.contains("model: "), "{}", out.plain);
    }
}
