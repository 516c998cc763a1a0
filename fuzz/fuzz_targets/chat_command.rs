//! Reading arbitrary chat text as a command (`/cmd` on Telegram, `!cmd` on Matrix) and as
//! a reply to an ask card: never a panic, and what `chat::commands` promises holds. A
//! command addressed to us reads as one addressed to nobody, and one to another bot is
//! not ours; leading whitespace changes nothing; a command's parts are trimmed and
//! non-empty where the command needs them; a usage error's sentences render and its
//! example is that command used rightly, naming the same session; a reply picks an option
//! or is its own text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shepherd_bridges::chat::commands::{
    self, COMMANDS, ChatCommand, UsageError, answer_text, parse, reaction_option,
};
use shepherd_core::protocol::Ask;

const BOT: &str = "shep_bot";

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for prefix in ['/', '!'] {
        let anyone = parse(&text, prefix, None);
        let ours = parse(&text, prefix, Some(BOT));
        assert!(
            ours.is_none() || ours == anyone,
            "addressed to us reads differently: {text:?}: {ours:?} vs {anyone:?}"
        );
        assert_eq!(
            parse(&format!(" \n\t{text}"), prefix, None),
            anyone,
            "leading whitespace changed {text:?}"
        );
        if let Some(command) = &anyone {
            assert!(text.trim_start().starts_with(prefix), "{text:?}");
            check(command, prefix);
        }
    }
    check_reply(&text);
});

fn check(command: &ChatCommand, prefix: char) {
    let trimmed = |s: &str| s.trim() == s;
    match command {
        ChatCommand::Steer { session, text } => {
            assert!(
                !session.is_empty() && !text.is_empty() && trimmed(text),
                "{command:?}"
            );
        }
        ChatCommand::Answer { text, .. } => {
            assert!(!text.is_empty() && trimmed(text), "{command:?}");
        }
        ChatCommand::Status(Some(s))
        | ChatCommand::Close(Some(s))
        | ChatCommand::Look(Some(s))
        | ChatCommand::Unpair(Some(s)) => assert!(!s.is_empty(), "{command:?}"),
        ChatCommand::Stop { session, then } => {
            assert!(
                session.as_ref().is_none_or(|s| !s.is_empty()),
                "{command:?}"
            );
            assert!(
                then.as_ref().is_none_or(|t| !t.is_empty() && trimmed(t)),
                "{command:?}"
            );
        }
        ChatCommand::Supervise(args) | ChatCommand::Goal(args) => {
            assert!(trimmed(&args.rest) && trimmed(&args.all), "{command:?}");
            assert!(!args.quoted || !args.first.is_empty(), "{command:?}");
            let known = |s: &str| s == args.first;
            for here in [None, Some("s-topic")] {
                if let Some((session, _)) = args.target(here, known) {
                    assert!(!session.is_empty(), "{command:?} in {here:?}");
                }
            }
            assert_eq!(
                args.target(None, known),
                (!args.first.is_empty()).then(|| (args.first.clone(), args.rest.clone()))
            );
        }
        ChatCommand::Unknown(word) => {
            assert!(!word.is_empty(), "{command:?}");
            assert!(
                word.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'),
                "{command:?}"
            );
            let lower = word.to_ascii_lowercase();
            assert!(
                lower != "start" && COMMANDS.iter().all(|c| c.name != lower),
                "a known command read as unknown: {command:?}"
            );
        }
        ChatCommand::Usage(err) => check_usage(err, prefix),
        _ => {}
    }
}

/// A usage error says what is missing, and its example is the command used rightly.
fn check_usage(err: &UsageError, prefix: char) {
    let command = err.command();
    assert!(COMMANDS.iter().any(|c| c.name == command), "{err:?}");
    assert!(!err.problem().is_empty(), "{err:?}");
    assert!(err.synopsis().starts_with(command), "{err:?}");
    let example = err.example();
    assert!(example.starts_with(command), "{err:?}: {example:?}");
    let again = parse(&format!("{prefix}{example}"), prefix, None);
    let named = match (err, &again) {
        (UsageError::SteerWithoutText { session }, Some(ChatCommand::Steer { session: s, .. })) => {
            s == session
        }
        (
            UsageError::GoalWithoutText {
                session: Some(session),
            },
            Some(ChatCommand::Goal(args)),
        ) => &args.first == session,
        (
            UsageError::SteerWithoutText { .. } | UsageError::GoalWithoutText { session: Some(_) },
            _,
        ) => false,
        (_, Some(c)) => !matches!(c, ChatCommand::Usage(_) | ChatCommand::Unknown(_)),
        (_, None) => false,
    };
    assert!(
        named,
        "the example for {err:?} ({example:?}) reads as {again:?}"
    );
}

/// The text as a reply and as a reaction to a card whose options are the text's lines.
fn check_reply(text: &str) {
    let options: Vec<&str> = text.lines().take(12).collect();
    let ask: Ask = serde_json::from_value(serde_json::json!({
        "id": 1,
        "session_id": "s",
        "session_name": "fix-login",
        "question": "Deploy?",
        "options": options,
        "state": "open",
        "answer": null,
        "answered_by": null,
        "created_at": 0,
        "answered_at": null,
    }))
    .expect("an ask");
    match answer_text(&ask, text) {
        None => assert!(text.trim().is_empty(), "{text:?}"),
        Some(answer) => assert!(
            answer == text.trim() || ask.options.contains(&answer),
            "{text:?} answered {answer:?}"
        ),
    }
    if let Some(option) = reaction_option(&ask, text) {
        assert!(ask.options.contains(&option), "{text:?}");
    }
    for (i, key) in commands::OPTION_KEYS.iter().enumerate() {
        assert_eq!(reaction_option(&ask, key), ask.options.get(i).cloned());
    }
}
