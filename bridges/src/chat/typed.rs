//! # What is said about text typed in a session's place
//!
//! Plain text in a session's topic or thread answers that session's one open ask
//! ([`typed_answer`], with a way to take it back: [`undone`], [`undo_refused`]), asks
//! which ask is meant when there are several ([`which_ask`]), or steers when there is
//! none (`relay::steer`'s confirmation). Pure, like the rest of `chat/`.

use shepherd_core::client::{ClientError, Unanswered};
use shepherd_core::protocol::Ask;

use super::format::{one_line, truncate};
use super::html::Html;
use super::render::Rendered;

/// How much of a question or answer a one-line reply shows.
const SHOWN: usize = 80;

/// The label of Telegram's undo button (and the words Matrix's reaction stands for).
pub const UNDO_LABEL: &str = "↩️ undo: it was meant as a steer";
/// The reaction a Matrix user taps to take a typed answer back.
pub const UNDO_KEY: &str = "↩️";

/// `✅ answered ask 7 (Deploy the release?): ship-it-now`, and how to take it back
/// (`undo`: the platform's words, a button or a reaction).
pub fn typed_answer(ask: &Ask, answer: &str, undo: &str) -> Rendered {
    let mut h = Html::new();
    h.text(&format!("✅ answered ask {} (", ask.id))
        .italic(&truncate(&one_line(&ask.question), SHOWN))
        .text("): ")
        .bold(&truncate(&one_line(answer), SHOWN));
    h.line().text(&format!(
        "Your message answered {}'s only open question. {undo}",
        one_line(&ask.session_name)
    ));
    h.into()
}

/// Several open asks and text that is no reply: which one? The text was sent nowhere.
pub fn which_ask(session_name: &str, asks: &[Ask], prefix: char) -> Rendered {
    let mut h = Html::new();
    h.text(&format!(
        "❓ {} has {} open questions, so your message was not sent. Reply to the card of the one you mean, or write ",
        one_line(session_name),
        asks.len()
    ))
    .code(&format!("{prefix}answer <ask> <text>"))
    .text(" (to steer instead: ")
    .code(&format!("{prefix}steer <session> <text>"))
    .text("):");
    for ask in asks {
        h.line()
            .bold(&format!("{}", ask.id))
            .text(" · ")
            .text(&truncate(&one_line(&ask.question), SHOWN));
    }
    h.into()
}

/// The answer was taken back and went as a steer.
pub fn undone(u: &Unanswered) -> Rendered {
    let mut h = Html::new();
    h.text(&format!(
        "↩️ ask {} is open again; the text went to ",
        u.ask.id
    ))
    .bold(&one_line(&u.session_name))
    .text(" as a steer (queued until it reconnects).");
    h.into()
}

/// Why the answer stays an answer (`already_delivered`, or another refusal).
pub fn undo_refused(e: &ClientError) -> Rendered {
    let mut h = Html::new();
    match e {
        ClientError::Remote { message, .. } => h.text(&format!("⚠️ Not undone: {message}")),
        other => h.text(&format!("⚠️ Not undone: {other}")),
    };
    h.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::examples;
    use shepherd_core::protocol::{AskId, AskState, ErrorCode};

    fn ask(id: u64, question: &str) -> Ask {
        Ask {
            id: AskId::new(id),
            question: question.into(),
            session_name: "webapp@main".into(),
            state: AskState::Open,
            answer: None,
            answered_by: None,
            ..examples::ask()
        }
    }

    #[test]
    fn a_typed_answer_says_which_ask_and_how_to_undo() {
        let r = typed_answer(
            &ask(7, "Deploy <the> release?"),
            "ship-it-now",
            "Tap below.",
        );
        assert_eq!(
            r.plain,
            "✅ answered ask 7 (Deploy <the> release?): ship-it-now\nYour message answered webapp@main's only open question. Tap below."
        );
        assert!(r.html.contains("Deploy &lt;the&gt; release?"), "{}", r.html);
    }

    #[test]
    fn several_asks_are_listed_and_nothing_was_sent() {
        let r = which_ask("webapp@main", &[ask(7, "Deploy?"), ask(8, "Tag?")], '/');
        assert!(
            r.plain
                .contains("2 open questions, so your message was not sent"),
            "{}",
            r.plain
        );
        assert!(r.plain.contains("/answer <ask> <text>"), "{}", r.plain);
        assert!(r.plain.ends_with("7 · Deploy?\n8 · Tag?"), "{}", r.plain);
    }

    #[test]
    fn undo_outcomes() {
        let u = Unanswered {
            ask: ask(7, "Deploy?"),
            message_id: 3.into(),
            session_name: "webapp@main".into(),
        };
        assert_eq!(
            undone(&u).plain,
            "↩️ ask 7 is open again; the text went to webapp@main as a steer (queued until it reconnects)."
        );
        let e = ClientError::Remote {
            code: ErrorCode::AlreadyDelivered,
            message: "webapp@main may have read the answer".into(),
            details: None,
        };
        assert_eq!(
            undo_refused(&e).plain,
            "⚠️ Not undone: webapp@main may have read the answer"
        );
    }
}
