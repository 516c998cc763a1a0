//! # Small formatting helpers
//!
//! Pure helpers the rendered messages share: relative times and durations (the clock is
//! passed in), a session's `repo@branch`, place, status icon and short id, context fill,
//! one-line text, and truncation counted in UTF-16 code units as Telegram counts (never
//! inside a surrogate pair).

pub use shepherd_core::human::{ago, duration};

use shepherd_core::protocol::{SessionInfo, SessionStatus};

/// UTF-16 code units of `text` (Telegram's length).
pub fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// `text` cut to at most `max` UTF-16 code units, ending in `…` when cut.
pub fn truncate(text: &str, max: usize) -> String {
    if utf16_len(text) <= max {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        if used + c.len_utf16() + 1 > max {
            break;
        }
        out.push(c);
        used += c.len_utf16();
    }
    if max > 0 {
        out.push('…');
    }
    out
}

/// `text` on one line: line breaks and other control characters become spaces, and runs
/// of spaces collapse; leading and trailing space is trimmed.
pub fn one_line(text: &str) -> String {
    let spaced: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    spaced.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The last component of a path (`/home/ada/src/app` → `app`).
pub fn base_name(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rsplit_once('/') {
        Some((_, name)) if !name.is_empty() => name,
        _ => trimmed,
    }
}

/// `app@main`, `app@9f3c2b1` when detached; `None` outside a repository. The repository
/// is named by its project (its primary checkout's directory, so a linked worktree
/// `app.worktrees/feat-a` is `app@feat/a` too), else by its directory.
pub fn repo_branch(s: &SessionInfo) -> Option<String> {
    let dir = base_name(s.repo.as_deref()?);
    let repo = s
        .project
        .as_deref()
        .filter(|p| !p.is_empty())
        .unwrap_or(dir);
    let at = match (&s.branch, &s.head) {
        (Some(branch), _) => branch.clone(),
        (None, Some(head)) => head.chars().take(7).collect(),
        (None, None) => "?".to_string(),
    };
    Some(format!("{repo}@{at}"))
}

/// The `app@main` shown after a session's name (`fix-login (app@main)`), unless its name
/// already says it (a name made from the repository and branch, `app@main`, `app@main-2`).
pub fn place_after(name: &str, s: &SessionInfo) -> Option<String> {
    repo_branch(s).filter(|rb| !one_line(name).starts_with(rb.as_str()))
}

/// A context fill as `21%`, `None` when unknown.
pub fn percent(value: Option<f64>) -> Option<String> {
    value
        .filter(|p| p.is_finite())
        .map(|p| format!("{:.0}%", p))
}

/// A count with thousands separators: `41,234`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1 open ask`, `2 open asks`.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Telegram's limit for a forum topic's name.
pub const TOPIC_NAME_MAX: usize = 128;

/// An icon for a session's state: offline, idle, thinking, running a tool.
pub fn status_icon(s: &SessionInfo) -> &'static str {
    match &s.status {
        _ if !s.connected => "⚪",
        SessionStatus::Idle => "🟢",
        SessionStatus::Thinking => "🧠",
        SessionStatus::Tool(_) => "🔧",
        SessionStatus::Other(s) if s == "waiting for approval" => "🔐",
        SessionStatus::Other(_) => "🔵",
    }
}

/// The first 8 characters of a session id.
pub fn short_id(id: &str) -> &str {
    shepherd_core::protocol::short_id(id)
}

/// Where a session is: `app@main`, or its directory outside a repository.
pub fn place(s: &SessionInfo) -> String {
    repo_branch(s).unwrap_or_else(|| base_name(&s.cwd).to_string())
}

/// The time of day of `ms` (Unix milliseconds), `14:02:33 UTC`: when a snapshot was taken.
pub fn clock_time(ms: u64) -> String {
    let secs = ms / 1000 % 86_400;
    format!(
        "{:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use shepherd_core::examples;

    /// A session for tests: connected, idle, in `app` on `main`.
    pub(crate) fn session(name: &str) -> SessionInfo {
        SessionInfo {
            name: name.into(),
            ..examples::session_info()
        }
    }

    #[test]
    fn truncation_counts_utf16_and_keeps_pairs_whole() {
        assert_eq!(truncate("short", 5), "short");
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("😀😀😀", 4), "😀…");
        assert_eq!(truncate("😀😀😀", 3), "😀…");
        assert_eq!(utf16_len(&truncate("日本語テキスト", 5)), 5);
        assert_eq!(truncate("abc", 0), "");
    }

    #[test]
    fn one_line_flattens() {
        assert_eq!(one_line("  a\nb\t\tc\r\n "), "a b c");
    }

    #[test]
    fn times_and_numbers() {
        assert_eq!(duration((3 * 3600 + 12 * 60 + 9) * 1000), "3h 12m");
        assert_eq!(duration(42_000), "42s");
        assert_eq!(ago(1_000, 1_000), "just now");
        assert_eq!(ago(0, 150_000), "2m ago");
        assert_eq!(ago(0, 5 * 86_400_000), "5d ago");
        assert_eq!(thousands(41_234), "41,234");
        assert_eq!(thousands(200_000), "200,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(12), "12");
        assert_eq!(percent(Some(20.6)).as_deref(), Some("21%"));
        assert_eq!(percent(Some(f64::NAN)), None);
        assert_eq!(plural(1, "ask", "asks"), "1 ask");
        assert_eq!(plural(0, "ask", "asks"), "0 asks");
    }

    #[test]
    fn repo_at_branch() {
        let mut s = session("x");
        assert_eq!(repo_branch(&s).as_deref(), Some("app@main"));
        s.branch = None;
        assert_eq!(repo_branch(&s).as_deref(), Some("app@9f3c2b1"));
        s.branch = Some("feat/a".into());
        s.repo = Some("/src/app.worktrees/feat-a".into());
        s.project = Some("app".into());
        assert_eq!(
            repo_branch(&s).as_deref(),
            Some("app@feat/a"),
            "a linked worktree"
        );
        s.project = None;
        assert_eq!(repo_branch(&s).as_deref(), Some("feat-a@feat/a"));
        s.repo = None;
        assert_eq!(repo_branch(&s), None);
        s.repo = Some("/src/app".into());
        s.project = None;
        s.branch = Some("main".into());
        assert_eq!(place_after("fix-login", &s).as_deref(), Some("app@main"));
        assert_eq!(place_after("app@main", &s), None, "no doubled name");
        assert_eq!(place_after("app@main-2", &s), None);
        assert_eq!(base_name("/srv/repo/"), "repo");
    }
}
