//! # `shepherd answer`
//!
//! Gives an ask its one answer. On success it says which session the answer goes to and
//! whether that session is connected (delivered now) or will get it when it reconnects.
//! When someone else answered first, it prints who, when and what, and exits 1: the
//! first answer wins and nothing is overwritten.

use std::process::ExitCode;

use shepherd_core::client::ClientError;
use shepherd_core::protocol::{AskId, ErrorCode, requests};

use super::format::{ago, now_ms, utc};
use super::{AnswerArgs, Ctx, Failure, print, print_json};

/// Run `shepherd answer`.
pub async fn run(ctx: &Ctx, args: &AnswerArgs) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let ask_id = args.ask;
    let text = args.text.join(" ");
    let reply = conn
        .try_call(requests::Answer {
            ask: ask_id,
            text,
            ..Default::default()
        })
        .await?;
    let ask = match reply {
        Ok(ask) => ask,
        Err(ClientError::Remote {
            code,
            message,
            details,
        }) => return Err(explain(ask_id, code, &message, details).into()),
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
            .find(|s| s.id == ask.session_id)
            .map(|s| s.connected),
        _ => None,
    };
    let how = match connected {
        Some(true) => " — delivered now",
        Some(false) => " — queued until it reconnects",
        None => "",
    };
    print(&format!(
        "answered ask {} for {} ({}){how}\n",
        ask.id, ask.session_name, ask.session_id
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// The core's refusal of an answer, in words.
fn explain(
    ask: AskId,
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

    #[test]
    fn already_answered_names_who_when_and_what() {
        let details = serde_json::json!({
            "answered_by": "telegram:@ada", "answered_at": 1_796_130_379_000u64, "answer": "squash"
        });
        let f = explain(
            AskId::new(12),
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
    fn unknown_ask_says_where_to_look() {
        let f = explain(AskId::new(99), ErrorCode::UnknownAsk, "no such ask", None);
        assert!(f.message.contains("no ask 99"), "{}", f.message);
        assert!(f.message.contains("shepherd asks"), "{}", f.message);
    }
}
