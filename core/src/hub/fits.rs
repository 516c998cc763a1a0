//! Frames that fit: everything the core sends must be readable by a client that enforces
//! the frame limit (`core.limits.max_frame_bytes`), but what it sends can be larger than
//! the request that caused it (an ask's `asked` and `ask_opened` carry the question with
//! the session's name, ids and times; an answer's frames carry the question *and* the
//! answer). So a request is measured by what it would make the core send, before anything
//! is stored: one that would not fit is refused with `limit_exceeded` saying what to
//! shorten. A run's result is never refused (a run's end must not be lost): its text is cut
//! to fit, and says so.

use super::{HubError, HubResult, State};
use crate::protocol::{ErrorCode, ServerMsg, frame};

/// What an answered ask's notice to its addressee adds over the `answered` frame that is
/// measured (a sentence, the answerer's label and the delivery's envelope; names are at
/// most 200 characters); an eighth of the limit when that is less (a tiny limit).
const ANSWER_NOTICE_RESERVE: usize = 4 * 1024;

/// Room kept beside a run's result text for whatever carries it (the `reported` frame, a
/// worker's result or a Lead's assignment update for its owner: names, branch, paths); a
/// quarter of the limit when that is less (a tiny configured limit).
const RESULT_RESERVE: usize = 16 * 1024;

impl State {
    /// Refuse (`limit_exceeded`) when `msg` plus `reserve` bytes would be over the frame
    /// limit; `what` names it and `fix` says what to do, e.g. ("this ask", "shorten …").
    pub(super) fn check_frame(
        &self,
        msg: &ServerMsg,
        reserve: usize,
        what: &str,
        fix: &str,
    ) -> HubResult<()> {
        let max = self.facts.limits.max_frame_bytes;
        let len = frame::encode(msg).len() - frame::HEADER_LEN + reserve;
        if len <= max {
            return Ok(());
        }
        Err(HubError::new(
            ErrorCode::LimitExceeded,
            format!(
                "{what} would be sent as a {len}-byte frame, over the {max}-byte limit (core.limits.max_frame_bytes); {fix}"
            ),
        )
        .with_details(serde_json::json!({ "limit": "max_frame_bytes", "max": max, "size": len })))
    }

    /// Room to keep beside an answered ask's frame for the notice to its addressee.
    pub(super) fn answer_notice_reserve(&self) -> usize {
        ANSWER_NOTICE_RESERVE.min(self.facts.limits.max_frame_bytes / 8)
    }

    /// A run's result text, cut when what carries it would not fit in a frame.
    pub(super) fn fit_result(&self, text: String) -> String {
        let max = self.facts.limits.max_frame_bytes;
        let budget = max - RESULT_RESERVE.min(max / 4);
        cut_to_fit(text, budget)
    }
}

/// `text` whole when its JSON string is at most `budget` bytes; else its start, cut at a
/// character, followed by a line saying how much was cut, the whole within `budget`.
pub fn cut_to_fit(text: String, budget: usize) -> String {
    let whole = json_len(&text);
    if whole <= budget {
        return text;
    }
    let note = |cut: usize| {
        format!(
            "\n\n[cut by shepherd: {cut} more bytes did not fit in one message (core.limits.max_frame_bytes); the whole text is in the session]"
        )
    };
    // The note's own length, with room for the largest count it could print.
    let room = budget.saturating_sub(json_len(&note(text.len())) - 2);
    let mut used = 2; // the quotes
    let mut end = 0;
    for (at, c) in text.char_indices() {
        let len = escaped_len(c);
        if used + len > room {
            break;
        }
        used += len;
        end = at + c.len_utf8();
    }
    let cut = text.len() - end;
    let mut kept = text;
    kept.truncate(end);
    kept.push_str(&note(cut));
    kept
}

/// Bytes `s` takes as a JSON string, quotes included (as serde_json writes it).
pub(super) fn json_len(s: &str) -> usize {
    2 + s.chars().map(escaped_len).sum::<usize>()
}

/// Bytes one character takes inside a JSON string as serde_json writes it.
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded_len(s: &str) -> usize {
        serde_json::to_string(s).unwrap().len()
    }

    #[test]
    fn json_len_is_what_serde_json_writes() {
        for s in [
            "",
            "plain",
            "quote \" and \\ backslash",
            "lines\n\ttabs\r\u{8}\u{c}",
            "control \u{1} \u{1f}",
            "é ✓ 🐑 \u{7f}",
        ] {
            assert_eq!(json_len(s), encoded_len(s), "{s:?}");
        }
    }

    #[test]
    fn text_that_fits_is_kept_whole() {
        let text = "All 214 tests pass.".to_string();
        assert_eq!(cut_to_fit(text.clone(), encoded_len(&text)), text);
    }

    #[test]
    fn a_cut_fits_keeps_the_start_at_a_character_and_says_how_much_went() {
        let text = "🐑\"\n\u{1}".repeat(20_000); // 4+2+2+6 bytes escaped per repeat
        for budget in [400, 1_000, 4_097, 100_000] {
            let cut = cut_to_fit(text.clone(), budget);
            assert!(
                encoded_len(&cut) <= budget,
                "{budget}: {}",
                encoded_len(&cut)
            );
            let (kept, note) = cut.split_once("\n\n[cut by shepherd: ").unwrap();
            assert!(text.starts_with(kept));
            let said: usize = note.split(' ').next().unwrap().parse().unwrap();
            assert_eq!(said, text.len() - kept.len());
            // Nearly all of the budget is used.
            assert!(
                encoded_len(&cut) + 20 > budget,
                "{budget}: {}",
                encoded_len(&cut)
            );
        }
    }
}
