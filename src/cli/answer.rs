//! # `shepherd answer`
//!
//! Gives an ask its one answer. On success it says which session the answer goes to and
//! whether that session is connected (delivered now) or will get it when it reconnects.
//! When someone else answered first, it prints who, when and what, and exits 1: the
//! first answer wins and nothing is overwritten. A number alone answers with that option
//! of an ask that has options (the CLI maps it to the option's text, so the session gets
//! the same answer a button would give); `--text` sends it as it is.

use std::process::ExitCode;

use shepherd_core::client::ClientError;
use shepherd_core::protocol::{ErrorCode, requests};

use super::format::{ago, now_ms, utc};
use super::{AnswerArgs, Ctx, Failure, print, print_json};

/// Run `shepherd answer`.
pub async fn run(ctx: &Ctx, args: &AnswerArgs) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let named = args.ask.clone();
    let ask_id = named.id;
    let mut text = args.text.join(" ");
    if let Some(n) = option_number(&text, args.literal) {
        // An unknown ask is left to the core's answer below, which says so.
        let found = match &named.host {
            None => super::asks::fetch_one(&mut conn, ask_id).await.ok(),
            // A linked host's open asks are in the listing, with their host.
            Some(host) => super::asks::fetch(&mut conn, false)
                .await?
                .into_iter()
                .find(|a| a.id == ask_id && a.host.as_ref() == Some(host)),
        };
        if let Some(ask) = found {
            text = pick_option(&named, &ask.options, n)?.unwrap_or(text);
        }
    }
    let reply = conn
        .try_call(requests::Answer {
            ask: ask_id,
            text,
            host: named.host.clone(),
            ..Default::default()
        })
        .await?;
    let ask = match reply {
        Ok(ask) => ask,
        Err(ClientError::Remote {
            code,
            message,
            details,
        }) => return Err(explain(&named, code, &message, details).into()),
        Err(e) => return Err(Failure::from_client(e, &conn.socket).into()),
    };
    if ctx.json {
        print_json(&ask)?;
        return Ok(ExitCode::SUCCESS);
    }
    // `answered` does not say whether the asker is connected; the session list does.
    let listed = conn
        .call(requests::ListSessions {
            all: true,
            ..Default::default()
        })
        .await;
    let connected = match listed {
        Ok(sessions) => sessions
            .iter()
            .find(|s| s.id == ask.session_id && s.host == named.host)
            .map(|s| s.connected),
        _ => None,
    };
    let how = match connected {
        Some(true) => " — delivered now",
        Some(false) => " — queued until it reconnects",
        None => "",
    };
    print(&format!(
        "answered ask {named} for {} ({}){how}\n",
        ask.session_name, ask.session_id
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// The option number `text` names: a whole positive number alone, unless `--text`.
fn option_number(text: &str, literal: bool) -> Option<u64> {
    if literal || text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// The text of option `n` (1 is the first); `None` when the ask has no options (the
/// number is then the answer itself); an error naming the valid range when out of it.
fn pick_option(
    ask: &impl std::fmt::Display,
    options: &[String],
    n: u64,
) -> Result<Option<String>, Failure> {
    if options.is_empty() {
        return Ok(None);
    }
    let index = usize::try_from(n).ok().and_then(|n| n.checked_sub(1));
    match index.and_then(|i| options.get(i)) {
        Some(option) => Ok(Some(option.clone())),
        None => Err(Failure::new(
            "no_such_option",
            format!(
                "ask {ask} has options 1-{}; {n} is not one of them (`shepherd asks {ask}` \
                 shows them; --text sends \"{n}\" as the answer)",
                options.len()
            ),
        )),
    }
}

/// The core's refusal of an answer, in words.
fn explain(
    ask: &impl std::fmt::Display,
    code: ErrorCode,
    message: &str,
    details: Option<serde_json::Value>,
) -> Failure {
    match code {
        ErrorCode::AlreadyAnswered => {
            let d = details.clone().unwrap_or_default();
            let by = d["answered_by"].as_str().unwrap_or("someone");
            let when = match d["answered_at"].as_u64() {
                Some(at) => format!(" at {} ({})", utc(at), ago(at, now_ms())),
                None => String::new(),
            };
            let answer = d["answer"].as_str().unwrap_or("?");
            Failure {
                code: code.as_str().to_string(),
                message: format!("ask {ask} was already answered by {by}{when}: {answer}"),
                details,
            }
        }
        ErrorCode::UnknownAsk => Failure {
            code: code.as_str().to_string(),
            message: format!(
                "there is no ask {ask}: `shepherd asks` lists the open ones (`--all` the \
                 answered ones too)"
            ),
            details,
        },
        _ => Failure::remote(code, message, details),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::protocol::AskId;

    #[test]
    fn already_answered_names_who_when_and_what() {
        let details = serde_json::json!({
            "answered_by": "telegram:@ada", "answered_at": 1_796_130_379_000u64, "answer": "squash"
        });
        let f = explain(
            &AskId::new(12),
            ErrorCode::AlreadyAnswered,
            "x",
            Some(details),
        );
        assert_eq!(f.code, "already_answered");
        assert!(
            f.message.starts_with(
                "ask 12 was already answered by telegram:@ada at 2026-12-01 13:06:19 UTC ("
            ),
            "{}",
            f.message
        );
        assert!(f.message.ends_with("): squash"), "{}", f.message);
    }

    #[test]
    fn a_number_picks_an_option_and_out_of_range_names_the_range() {
        let options = vec!["squash".to_string(), "merge".to_string()];
        assert_eq!(option_number("2", false), Some(2));
        assert_eq!(option_number("2", true), None, "--text sends it as it is");
        assert_eq!(option_number("2 please", false), None);
        assert_eq!(option_number("-1", false), None);
        assert_eq!(
            pick_option(&AskId::new(4), &options, 2).unwrap().as_deref(),
            Some("merge")
        );
        assert_eq!(
            pick_option(&AskId::new(4), &[], 2).unwrap(),
            None,
            "no options: the number"
        );
        for n in [0, 3] {
            let f = pick_option(&AskId::new(4), &options, n).unwrap_err();
            assert_eq!(f.code, "no_such_option");
            assert!(
                f.message.starts_with("ask 4 has options 1-2;"),
                "{}",
                f.message
            );
        }
    }

    #[test]
    fn unknown_ask_says_where_to_look() {
        let f = explain(&AskId::new(99), ErrorCode::UnknownAsk, "no such ask", None);
        assert!(f.message.contains("no ask 99"), "{}", f.message);
        assert!(f.message.contains("shepherd asks"), "{}", f.message);
    }
}
