//! # Times for people
//!
//! The two ways every human-facing part of shepherd (the CLI's tables, the chat bridges'
//! messages, a supervisor's view) shows a span of time: `3h 12m` and `2m ago`. One
//! definition, so the terminal and the phone agree. The clock itself is [`crate::clock`].

/// A duration in its two largest units: `42s`, `5m 3s`, `3h 12m`, `2d 4h`.
pub fn duration(ms: u64) -> String {
    let secs = ms / 1000;
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d}d {h}h")
    } else if h > 0 {
        format!("{h}h {m}m")
    } else if m > 0 {
        format!("{m}m {s}s")
    } else {
        format!("{s}s")
    }
}

/// How long ago `then` was, in its largest unit: `just now`, `40s ago`, `2m ago`,
/// `3h ago`, `5d ago`. A time in the future (clock skew) reads `just now`.
pub fn ago(then: u64, now: u64) -> String {
    let secs = now.saturating_sub(then) / 1000;
    match secs {
        0..5 => "just now".to_string(),
        5..60 => format!("{secs}s ago"),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86_400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_in_their_largest_units() {
        assert_eq!(duration(42_000), "42s");
        assert_eq!(duration(303_000), "5m 3s");
        assert_eq!(duration((3 * 3600 + 12 * 60) * 1000), "3h 12m");
        assert_eq!(duration((2 * 86_400 + 4 * 3600) * 1000), "2d 4h");
        assert_eq!(ago(1_000, 2_000), "just now");
        assert_eq!(ago(0, 40_000), "40s ago");
        assert_eq!(ago(0, 7_200_000), "2h ago");
        assert_eq!(ago(10_000, 0), "just now");
    }
}
