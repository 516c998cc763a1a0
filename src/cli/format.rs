//! # Formatting for people
//!
//! Small pure helpers the human output of every command shares: durations (`3h 12m`),
//! relative times (`2m ago`), UTC timestamps, short ids, and truncation by display width
//! (so a CJK or emoji question does not break a table). Nothing here does I/O; the clock
//! is passed in, so the tests pin it.

pub use shepherd_core::clock::now_ms;
pub use shepherd_core::human::{ago, duration};

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// A Unix-millisecond time as `2026-12-02 13:06:19 UTC`.
pub fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (y, mo, d) = civil_from_days((secs / 86_400) as i64);
    let (h, mi, s) = (secs / 3600 % 24, secs / 60 % 60, secs % 60);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC")
}

/// A Unix-millisecond time as RFC 3339 in UTC, `2026-12-02T13:06:19.123Z` (log lines).
pub fn rfc3339(ms: u64) -> String {
    let secs = ms / 1000;
    let (y, mo, d) = civil_from_days((secs / 86_400) as i64);
    let (h, mi, s) = (secs / 3600 % 24, secs / 60 % 60, secs % 60);
    format!(
        "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{:03}Z",
        ms % 1000
    )
}

/// The time of day of a Unix-millisecond time, `13:06:19Z` (for event lines).
pub fn utc_time_of_day(ms: u64) -> String {
    let secs = ms / 1000;
    format!(
        "{:02}:{:02}:{:02}Z",
        secs / 3600 % 24,
        secs / 60 % 60,
        secs % 60
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The first 8 characters of a session id: enough to tell sessions apart in a table and
/// to use as a selector (`shepherd send 3f2a9c1b …`).
pub fn short_id(id: &str) -> &str {
    shepherd_core::protocol::short_id(id)
}

/// `text` without terminal escape sequences or other control characters (line breaks and
/// tabs stay): an ANSI sequence (`ESC [ … m`, `ESC ] … BEL`) goes whole, so none of it
/// can colour, move the cursor or retitle the terminal, nor leave `[31m` behind.
pub fn strip_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates up to a final byte in @..~.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC, DCS, SOS, PM, APC: a string up to BEL or ESC \.
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' {
                            if chars.peek() == Some(&'\\') {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                // nF (`ESC ( B`): intermediates in ` `..`/`, then a final byte.
                Some(' '..='/') => {
                    for c in chars.by_ref() {
                        if !(' '..='/').contains(&c) {
                            break;
                        }
                    }
                }
                // Any other escape is two characters.
                _ => {}
            },
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `text` cut to at most `width` display columns, ending in `…` when cut. Line breaks
/// become spaces so one value stays on one table line.
pub fn truncate(text: &str, width: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.width() <= width {
        return flat;
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in flat.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// `text` wrapped to lines of at most `width` display columns: line breaks in the text are
/// kept, lines break at spaces, and a word wider than a line is split where it must be.
/// Each output line is prefixed with `indent` (counted in the width).
pub fn wrap(text: &str, width: usize, indent: &str) -> Vec<String> {
    let room = width.saturating_sub(indent.width()).max(1);
    let mut out = Vec::new();
    for para in text.lines() {
        let mut line = String::new();
        let mut used = 0;
        for word in para.split_whitespace() {
            let mut word = word.to_string();
            let mut w = word.width();
            if used > 0 && used + 1 + w <= room {
                line.push(' ');
                line.push_str(&word);
                used += 1 + w;
                continue;
            }
            if used > 0 {
                out.push(format!("{indent}{line}"));
                line.clear();
            }
            // A word wider than a line: hard-split it.
            while w > room {
                let mut head = String::new();
                let mut hw = 0;
                let mut rest = word.chars();
                for c in rest.by_ref() {
                    let cw = c.width().unwrap_or(0);
                    if hw + cw > room {
                        let mut tail = c.to_string();
                        tail.extend(rest.by_ref());
                        word = tail;
                        break;
                    }
                    head.push(c);
                    hw += cw;
                }
                out.push(format!("{indent}{head}"));
                w = word.width();
            }
            line.push_str(&word);
            used = w;
        }
        out.push(format!("{indent}{line}").trim_end().to_string());
    }
    out
}

/// `path` with the home directory written as `~`.
pub fn tilde(path: &str) -> String {
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && home != "/" => match path.strip_prefix(&home) {
            Some("") => "~".to_string(),
            Some(rest) if rest.starts_with('/') => format!("~{rest}"),
            _ => path.to_string(),
        },
        _ => path.to_string(),
    }
}

/// The last component of a path (`/home/ada/src/app` → `app`).
pub fn base_name(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rsplit_once('/') {
        Some((_, name)) if !name.is_empty() => name,
        _ => trimmed,
    }
}

/// A percentage for a table cell: `21%`, or `-` when unknown.
pub fn percent(value: Option<f64>) -> String {
    match value {
        Some(p) if p.is_finite() => format!("{:.0}%", p),
        _ => "-".to_string(),
    }
}

/// A HOST column's cell: the linked host's name, `(here)` for this machine's own.
pub fn here_or(host: &Option<String>) -> String {
    host.clone().unwrap_or_else(|| "(here)".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_whole_escape_sequences_are_stripped() {
        let core = "\u{1b}[1;31mred\u{1b}[0m text\u{7}\r\u{1b}]0;title\u{7}end\u{1b}]8;;x\u{1b}\\ \
                    link\u{1b}(B\u{9b}\u{7f}";
        assert_eq!(strip_controls(core), "red textend link");
        assert_eq!(
            strip_controls("two\nlines\tand a tab"),
            "two\nlines\tand a tab"
        );
        assert_eq!(strip_controls("cut at \u{1b}["), "cut at ");
        assert_eq!(strip_controls("ünïcode ✓"), "ünïcode ✓");
    }

    #[test]
    fn durations_use_two_units() {
        assert_eq!(duration(0), "0s");
        assert_eq!(duration(42_999), "42s");
        assert_eq!(duration((5 * 60 + 3) * 1000), "5m 3s");
        assert_eq!(duration((3 * 3600 + 12 * 60 + 9) * 1000), "3h 12m");
        assert_eq!(duration((2 * 86_400 + 4 * 3600 + 5) * 1000), "2d 4h");
    }

    #[test]
    fn relative_times() {
        let now = 1_000_000_000;
        assert_eq!(ago(now, now), "just now");
        assert_eq!(ago(now + 5000, now), "just now");
        assert_eq!(ago(now - 40_000, now), "40s ago");
        assert_eq!(ago(now - 150_000, now), "2m ago");
        assert_eq!(ago(now - 3 * 3_600_000, now), "3h ago");
        assert_eq!(ago(now - 5 * 86_400_000, now), "5d ago");
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_796_130_379_000), "2026-12-01 13:06:19 UTC");
        assert_eq!(utc_time_of_day(1_796_130_379_999), "13:06:19Z");
        assert_eq!(rfc3339(1_796_130_379_042), "2026-12-01T13:06:19.042Z");
    }

    #[test]
    fn truncation_counts_display_width() {
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("exactly10!", 10), "exactly10!");
        assert_eq!(truncate("a longer question", 8), "a longe…");
        assert_eq!(truncate("日本語のテキスト", 7), "日本語…");
        assert_eq!(truncate("two\nlines", 20), "two lines");
        assert_eq!(truncate("abc", 0), "");
    }

    #[test]
    fn wrapping_keeps_words_and_breaks_and_fits_the_width() {
        let text = "Should the migration rewrite every row now, or lazily on read?\n\nSay which.";
        let lines = wrap(text, 24, "  ");
        assert_eq!(
            lines,
            [
                "  Should the migration",
                "  rewrite every row now,",
                "  or lazily on read?",
                "",
                "  Say which."
            ]
        );
        assert_eq!(
            wrap("a https://example.com/a/very/long/url b", 12, ""),
            ["a", "https://exam", "ple.com/a/ve", "ry/long/url", "b"]
        );
        for line in wrap("日本語のテキストをここに書きます 長い", 9, "") {
            assert!(line.width() <= 9, "{line}");
        }
    }

    #[test]
    fn ids_and_paths() {
        // The random end of a UUIDv7, not its time-ordered start.
        assert_eq!(short_id("0193a5c2-7d1e-7b8a-9c3f-1e2d3c4b5a69"), "3c4b5a69");
        assert_eq!(short_id("0193a5c2-7d1e-7b8a-9c3f-1e2d3c4b5a6a"), "3c4b5a6a");
        assert_eq!(short_id("abc"), "abc");
        assert_eq!(base_name("/home/ada/src/app"), "app");
        assert_eq!(base_name("/home/ada/src/app/"), "app");
        assert_eq!(base_name("app"), "app");
        assert_eq!(percent(Some(20.6)), "21%");
        assert_eq!(percent(None), "-");
    }
}
