//! # What shepherd says in a chat
//!
//! Every message a bridge posts, as [`Rendered`]: HTML (Telegram's parse mode, Matrix's
//! `formatted_body`) and the same content as plain text (Matrix's `body`, logs, a `.md`
//! document). Ask cards, answered cards, reports, the session and ask lists, one
//! session's status, the core's status, help and command errors, and forum-topic names.
//! Everything that comes from a session or a person (names, questions, answers, reports)
//! is escaped; the functions are pure (the lists and statuses take the clock as `now`), so
//! the bridges and the tests see exactly the same text. An ask card always fits one Telegram message
//! (its buttons hang on it and it is edited in place), so long questions and details are
//! cut; reports and lists may be long, and the bridge splits them ([`super::split`]).

use shepherd_core::protocol::projects::{APPROVE_ANSWERS, INTEGRATION_OPTIONS};
use shepherd_core::protocol::{Ask, AskState, CoreStatus, Millis, Report, ReportKind, SessionInfo};

use super::commands::{COMMANDS, OPTION_KEYS, UsageError};
pub use super::format::TOPIC_NAME_MAX;
use super::format::{
    ago, duration, one_line, percent, plural, repo_branch, thousands, truncate, utf16_len,
};
use super::format::{place, place_after, short_id, status_icon};
use super::html::Html;
pub use super::html::Rendered;
use super::markdown::markdown;

/// Longest question, details and answer shown on a card (UTF-16 units), so that a card
/// stays within one Telegram message; `shepherd asks` shows them whole.
const CARD_QUESTION: usize = 1000;
const CARD_DETAILS: usize = 1200;
const CARD_ANSWER: usize = 300;
/// Longest session name in a header, and longest `answered_by`.
const NAME: usize = 100;
/// Longest question in the list of asks.
const LIST_QUESTION: usize = 300;

/// One option of an ask, for the bridge's buttons or reactions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskOption {
    /// 1-based, as shown on the card.
    pub number: usize,
    /// The option exactly as the session wrote it: the answer to send when chosen.
    pub text: String,
    /// A short one-line button label: `1. yes`.
    pub label: String,
    /// The keycap reaction for this option (`1️⃣`), if it has one.
    pub key: Option<&'static str>,
}

/// An ask card: the message (as in [`Rendered`]), and its options for buttons or
/// reactions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskCard {
    pub html: String,
    pub plain: String,
    pub options: Vec<AskOption>,
}

impl AskCard {
    /// The message alone.
    pub fn rendered(&self) -> Rendered {
        Rendered {
            html: self.html.clone(),
            plain: self.plain.clone(),
        }
    }
}

/// The card for an open ask: `❓ name (repo@branch)` (with `→ manager of app` when it is
/// addressed to a role), the question, the details, the
/// numbered options, and a hint that a reply answers it. With `session`, its current
/// name and repository are shown; without, the ask's session name.
pub fn ask_card(ask: &Ask, session: Option<&SessionInfo>) -> AskCard {
    ask_card_for(ask, session, None)
}

/// [`ask_card`] of a managed worker's question, with the worker's `label` when known
/// (`→ owner fix-login · worker scout-1`).
pub fn ask_card_for(ask: &Ask, session: Option<&SessionInfo>, label: Option<&str>) -> AskCard {
    let mut h = card_for(ask, session, label);
    let hint = if ask.options.is_empty() {
        "reply to this message to answer"
    } else {
        "choose an option, or reply to this message to answer"
    };
    h.italic(&format!("ask #{} · {hint}", ask.key()));
    let options = ask
        .options
        .iter()
        .enumerate()
        .map(|(i, text)| AskOption {
            number: i + 1,
            text: text.clone(),
            label: format!("{}. {}", i + 1, truncate(&one_line(text), 48)),
            key: OPTION_KEYS.get(i).copied(),
        })
        .collect();
    let (html, plain) = h.finish();
    AskCard {
        html,
        plain,
        options,
    }
}

/// The same card once answered, ending in `✅ answered by X: <answer>` instead of the
/// hint (the chosen option in bold); every card of the ask is edited to this. Needing
/// only the ask, it shows the ask's session name without `repo@branch`;
/// [`answered_card_with`] keeps the header of [`ask_card`] exactly.
pub fn answered_card(ask: &Ask) -> Rendered {
    answered_card_with(ask, None)
}

/// [`answered_card`] with the session, for a header identical to the open card's.
pub fn answered_card_with(ask: &Ask, session: Option<&SessionInfo>) -> Rendered {
    answered_card_for(ask, session, None)
}

/// [`answered_card_with`] of a managed worker's question, with the worker's `label`.
pub fn answered_card_for(
    ask: &Ask,
    session: Option<&SessionInfo>,
    label: Option<&str>,
) -> Rendered {
    let mut h = card_for(ask, session, label);
    let answer = ask.answer.as_deref().unwrap_or("");
    let who = ask
        .answered_by
        .as_deref()
        .map(|by| format!(" by {}", truncate(&one_line(by), NAME)))
        .unwrap_or_default();
    // An approve-or-deny question (an integration's) says which it was.
    let approval = ask.options == INTEGRATION_OPTIONS;
    let approved = APPROVE_ANSWERS
        .iter()
        .any(|a| answer.trim().eq_ignore_ascii_case(a));
    match (approval, approved) {
        (true, true) => h.text(&format!("✅ approved{who}")),
        (true, false) => {
            let reason = match answer.trim() {
                r if r.eq_ignore_ascii_case("deny") || r.eq_ignore_ascii_case("denied") => "",
                r => r,
            };
            h.text(&format!("⛔ denied{who}"));
            if !reason.is_empty() {
                h.text(": ").bold(&truncate(reason, CARD_ANSWER));
            }
            &mut h
        }
        (false, _) => h
            .text(&format!("✅ answered{who}: "))
            .bold(&truncate(answer, CARD_ANSWER)),
    };
    h.into()
}

/// Header, question, details and options: what an open and an answered card share.
pub(super) fn card(ask: &Ask, session: Option<&SessionInfo>) -> Html {
    card_for(ask, session, None)
}

/// [`card`], with a worker's label for a managed worker's question.
fn card_for(ask: &Ask, session: Option<&SessionInfo>, label: Option<&str>) -> Html {
    let name = session.map_or(ask.session_name.as_str(), |s| s.name.as_str());
    let mut h = header("❓", name, session);
    // An `ask_supervisor` ask says whom it is for, a worker's `ask_owner` its owner and
    // the worker; the human may answer either.
    match ask.to.as_ref() {
        Some(to) if to.worker.is_some() => {
            let owner = to.session_name.as_deref();
            let worker = to.worker.unwrap_or_default();
            h.text(" ")
                .italic(&super::workers::ask_to(owner, worker, label));
        }
        Some(to) => {
            h.text(" ").italic(&super::roles::ask_to(to));
        }
        None => {}
    }
    // The question is Markdown, rendered as reports are; a one-line one in bold.
    let (question, plain) = markdown(&truncate(ask.question.trim(), CARD_QUESTION)).finish();
    let blocks = ["\n", "<pre", "<blockquote", "<b>"]
        .iter()
        .any(|tag| question.contains(tag));
    match blocks {
        true => h.line().raw(&question, &plain),
        false => h.line().raw(&format!("<b>{question}</b>"), &plain),
    };
    if let Some(details) = ask
        .details
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty())
    {
        h.line().quote(&truncate(details, CARD_DETAILS));
    }
    let chosen = (ask.state == AskState::Answered)
        .then_some(ask.answer.as_deref())
        .flatten();
    for (i, option) in ask.options.iter().enumerate() {
        h.line().text(&format!("{}. ", i + 1));
        if chosen == Some(option.as_str()) {
            h.bold(option);
        } else {
            h.text(option);
        }
    }
    h.line();
    h
}

/// `icon name (repo@branch)`, the name in bold.
fn header(icon: &str, name: &str, session: Option<&SessionInfo>) -> Html {
    let mut h = Html::new();
    h.text(&format!("{icon} "))
        .bold(&truncate(&one_line(name), NAME));
    if let Some(rb) = session.and_then(|s| place_after(name, s)) {
        h.text(&format!(" ({})", truncate(&rb, NAME)));
    }
    h
}

/// A session's report: `📝 name (repo@branch)`, then its Markdown rendered
/// ([`markdown`]). A run's result is rendered the same way, marked as such:
/// `🏁 name (repo@branch) · result`.
pub fn report(report: &Report, session: Option<&SessionInfo>) -> Rendered {
    let name = session.map_or(report.session_name.as_str(), |s| s.name.as_str());
    let mut h = match report.kind {
        ReportKind::Report => header("📝", name, session),
        ReportKind::Result => {
            let mut h = header("🏁", name, session);
            h.text(" · result");
            h
        }
    };
    let (html, plain) = markdown(report.text.trim_end()).finish();
    h.line().raw(&html, &plain);
    h.into()
}

/// What a tap on a `/staff` line's button asks: the reply steers that session.
pub fn steer_prompt(name: &str) -> Rendered {
    let mut h = Html::new();
    h.text("✍️ What should ")
        .bold(&truncate(&one_line(name), NAME))
        .text(" do? Reply to this message.");
    h.into()
}

/// Said before the newest reports a bridge posts after being away, when there were more:
/// `… and 3 earlier (shepherd reports fix-login)`.
pub fn earlier_reports(name: &str, earlier: usize) -> Rendered {
    let mut h = Html::new();
    h.text(&format!("… and {earlier} earlier ("))
        .code(&format!(
            "shepherd reports {}",
            truncate(&one_line(name), NAME)
        ))
        .text(")");
    h.into()
}

/// `🟢 name · idle · 3f2a9c1b`: a session's first line.
fn session_line(h: &mut Html, s: &SessionInfo) {
    let status = if s.connected {
        s.status.to_string()
    } else {
        "offline".to_string()
    };
    h.text(&format!("{} ", status_icon(s)))
        .bold(&truncate(&one_line(&s.name), NAME))
        .text(&format!(" · {} · ", one_line(&status)))
        .code(short_id(&s.id));
}

/// The sessions, one short paragraph each: name, status, id; repo@branch, context fill,
/// connected or last seen, open asks and pending messages. Times are relative to `now`
/// (Unix milliseconds).
pub fn sessions_list_at(sessions: &[SessionInfo], now: Millis) -> Rendered {
    let mut h = Html::new();
    if sessions.is_empty() {
        h.text("🐑 No sessions. A Pi session with the shepherd extension shows up here.");
        return h.into();
    }
    let connected = sessions.iter().filter(|s| s.connected).count() as u64;
    h.text("🐑 ")
        .bold(&plural(sessions.len() as u64, "session", "sessions"))
        .text(&format!(" ({connected} connected)"));
    for s in sessions {
        h.line().line();
        session_line(&mut h, s);
        let mut parts = vec![place(s)];
        if let Some(title) = super::roles::role_title(s) {
            parts.insert(0, title);
        }
        if let Some(p) = percent(s.context_percent) {
            parts.push(format!("ctx {p}"));
        }
        parts.push(if s.connected {
            "connected".to_string()
        } else {
            format!("seen {}", ago(s.last_seen, now))
        });
        if s.open_asks > 0 {
            parts.push(format!(
                "❓ {}",
                plural(s.open_asks.into(), "open ask", "open asks")
            ));
        }
        if s.pending_messages > 0 {
            parts.push(format!("✉️ {} pending", s.pending_messages));
        }
        h.line().text(&parts.join(" · "));
    }
    h.into()
}

/// One session in detail (times relative to `now`).
pub fn session_status_at(s: &SessionInfo, now: Millis) -> Rendered {
    let mut h = Html::new();
    session_line(&mut h, s);
    h.line().text("id: ").code(&s.id);
    h.line().text("repo: ");
    match repo_branch(s) {
        Some(rb) if s.worktree => h.text(&format!("{rb} (worktree)")),
        Some(rb) => h.text(&rb),
        None => h.text("none"),
    };
    h.line().text("cwd: ").code(&s.cwd);
    h.line().text(&format!(
        "model: {}",
        s.model.as_deref().unwrap_or("unknown")
    ));
    let context = match (s.context_tokens, s.context_window) {
        (Some(t), Some(w)) => format!("{} / {} tokens", thousands(t), thousands(w)),
        (Some(t), None) => format!("{} tokens", thousands(t)),
        (None, Some(w)) => format!("? / {} tokens", thousands(w)),
        (None, None) => "unknown".to_string(),
    };
    let fill = percent(s.context_percent).map_or(String::new(), |p| format!(" ({p})"));
    h.line().text(&format!("context: {context}{fill}"));
    h.line().text(&format!("role: {}", s.role.as_str()));
    let presence = match (s.connected, s.pid) {
        (true, Some(pid)) => format!("connected (pid {pid})"),
        (true, None) => "connected".to_string(),
        (false, _) => format!("offline, last seen {}", ago(s.last_seen, now)),
    };
    h.line().text(&format!("presence: {presence}"));
    h.line()
        .text(&format!("first seen: {}", ago(s.first_seen, now)));
    h.line().text(&format!(
        "{} · {}",
        plural(s.open_asks.into(), "open ask", "open asks"),
        plural(
            s.pending_messages.into(),
            "pending message",
            "pending messages"
        )
    ));
    h.into()
}

/// The asks, one short paragraph each: id, session, age, question, options (or the
/// answer, for answered asks). Ages are relative to `now`.
pub fn asks_list_at(asks: &[Ask], now: Millis) -> Rendered {
    let mut h = Html::new();
    if asks.is_empty() {
        h.text("✅ No open asks.");
        return h.into();
    }
    let open = asks.iter().filter(|a| a.state == AskState::Open).count() as u64;
    h.text("❓ ").bold(&plural(open, "open ask", "open asks"));
    if open != asks.len() as u64 {
        h.text(&format!(" ({} in all)", asks.len()));
    }
    for ask in asks {
        h.line()
            .line()
            .bold(&format!("#{}", ask.key()))
            .text(&format!(
                " · {} · {}",
                truncate(&one_line(&ask.session_name), NAME),
                ago(ask.created_at, now)
            ));
        if let Some(to) = &ask.to {
            h.text(&format!(" · {}", super::roles::ask_to(to)));
        }
        h.line()
            .text(&truncate(&one_line(&ask.question), LIST_QUESTION));
        if ask.state == AskState::Answered {
            let by = ask.answered_by.as_deref().unwrap_or("someone");
            let answer = ask.answer.as_deref().unwrap_or("");
            h.line().text(&format!(
                "✅ answered by {}: {}",
                truncate(&one_line(by), NAME),
                truncate(&one_line(answer), LIST_QUESTION)
            ));
        } else if !ask.options.is_empty() {
            let options: Vec<String> = ask
                .options
                .iter()
                .enumerate()
                .map(|(i, o)| format!("{}. {}", i + 1, one_line(o)))
                .collect();
            h.line().text(&options.join(" · "));
        }
    }
    h.into()
}

/// The core's status: version, uptime, sessions, open asks, bridges.
pub fn core_status(status: &CoreStatus) -> Rendered {
    let mut h = Html::new();
    h.text("🐑 ").bold("shepherd").text(&format!(
        " {} · protocol {}",
        status.core_version, status.protocol
    ));
    h.line().text(&format!(
        "up {} · pid {}",
        duration(status.uptime_ms),
        status.pid
    ));
    h.line().text(&format!(
        "sessions: {} connected, {} known",
        status.sessions_connected, status.sessions_known
    ));
    h.line().text(&format!("open asks: {}", status.open_asks));
    let bridges: Vec<String> = status
        .bridges
        .iter()
        .map(|b| match b.pid {
            Some(pid) => format!("{} (pid {pid})", b.name),
            None => b.name.clone(),
        })
        .collect();
    let bridges = if bridges.is_empty() {
        "none".to_string()
    } else {
        bridges.join(", ")
    };
    h.line().text(&format!("bridges: {bridges}"));
    h.line().text("state: ").code(&status.state_dir);
    h.into()
}

/// The commands, with `prefix` (`/` on Telegram, `!` on Matrix), and how replies work.
pub fn help(prefix: char) -> Rendered {
    let mut h = Html::new();
    help_into(&mut h, prefix);
    h.into()
}

fn help_into(h: &mut Html, prefix: char) {
    h.text("🐑 ").bold("shepherd").text(" commands:");
    for c in &COMMANDS {
        let args = if c.args.is_empty() {
            String::new()
        } else {
            format!(" {}", c.args)
        };
        h.line()
            .code(&format!("{prefix}{}{args}", c.name))
            .text(&format!(" — {}", c.about));
    }
    h.line()
        .line()
        .text("Reply to a message about a session to steer it; reply to a question to answer it.")
        .line()
        .text("Text written in a session's topic or thread answers its question when it has just one open, else steers it.")
        .line()
        .text("A photo sent there reaches the session as an image its model sees; a file or voice note is saved in its .shepherd/inbox/ and named to it.")
        .line()
        .text(&format!(
            "{prefix}stop interrupts what a session is doing; {prefix}unpair (or {prefix}supervise stop) \
             ends its supervision."
        ))
        .line()
        .text(&format!(
            "In a session's topic or thread, {prefix}status, {prefix}peek, {prefix}diff, {prefix}stop, \
             {prefix}continue, {prefix}close, {prefix}unpair, {prefix}goal and {prefix}look need no \
             session, and {prefix}supervise only the goal."
        ))
        .line()
        .text(&format!(
            "Reply to a worker's line in {prefix}workers to steer it; {} closes it. A worker's \
             question to its owner shows as a card when the owner is a manager or the chief, or \
             after it has waited a while; its ending is said in its owner's topic or thread.",
            if prefix == '/' {
                "its ✖ close button".to_string()
            } else {
                format!("a reply {prefix}close")
            }
        ))
        .line()
        .text(
            "Project work (a manager handing branches to leads) is said in the manager's topic \
             or thread, tagged repo@branch: each lead's update, its state changes, and the \
             manager's questions, an integration to approve among them.",
        );
}

/// The answer to an unknown command: what was not understood, then the help.
pub fn unknown_command(prefix: char, name: &str) -> Rendered {
    let mut h = Html::new();
    h.text("🤔 Unknown command ")
        .code(&format!("{prefix}{}", truncate(&one_line(name), 64)))
        .text(".")
        .line()
        .line();
    help_into(&mut h, prefix);
    h.into()
}

/// The answer to a known command used wrongly: what is missing, the usage, an example.
pub fn usage(prefix: char, error: &UsageError) -> Rendered {
    let mut h = Html::new();
    h.text(&format!("⚠️ {}", error.problem()));
    h.line()
        .text("Usage: ")
        .code(&format!("{prefix}{}", error.synopsis()));
    h.line()
        .text("Example: ")
        .code(&format!("{prefix}{}", error.example()));
    h.into()
}

/// A forum topic or thread title for a session: `name (repo@branch)` (just the name when it
/// starts with `repo@branch`, as default names do; a role holder's is its role,
/// `🧭 manager · app` or `👑 chief`), one line, at most
/// [`TOPIC_NAME_MAX`] UTF-16 units (the name is shortened first), never empty. A linked
/// host's session is named with its host first: `gpu · fix-login (app@main)`.
pub fn topic_name(s: &SessionInfo) -> String {
    let Some(host) = &s.host else {
        return title_here(s, TOPIC_NAME_MAX);
    };
    let prefix = format!("{host} · ");
    let room = TOPIC_NAME_MAX.saturating_sub(utf16_len(&prefix));
    format!("{prefix}{}", title_here(s, room))
}

/// [`topic_name`] of a session as its own host names it, in at most `max` UTF-16 units.
fn title_here(s: &SessionInfo, max: usize) -> String {
    // A Manager's and the Chief's topic is named after the role: `🧭 manager · app`.
    if let Some(title) = super::roles::role_title(s) {
        return truncate(&title, max);
    }
    let mut name = one_line(&s.name);
    if name.is_empty() {
        name = short_id(&s.id).to_string();
    }
    if name.is_empty() {
        name = "session".to_string();
    }
    // A name made from the repository and branch (`app@main-2`) needs no suffix.
    let Some(rb) = repo_branch(s)
        .map(|rb| one_line(&rb))
        .filter(|rb| !name.starts_with(rb.as_str()))
    else {
        return truncate(&name, max);
    };
    let suffix = format!(" ({rb})");
    let suffix_len = utf16_len(&suffix);
    if utf16_len(&name) + suffix_len <= max {
        format!("{name}{suffix}")
    } else if suffix_len <= max / 2 {
        format!("{}{suffix}", truncate(&name, max - suffix_len))
    } else {
        truncate(&format!("{name}{suffix}"), max)
    }
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
