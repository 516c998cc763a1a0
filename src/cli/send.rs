//! # `shepherd send`
//!
//! Steers one session: the core stores the text, then delivers it now if the session is
//! connected or when it reconnects. The session is named by exact id, unique id prefix
//! or unique name; when the name fits several sessions, or none, the error lists the
//! candidates the core offers so the next try can use an exact id.

use std::process::ExitCode;

use shepherd_core::client::ClientError;
use shepherd_core::client::Sent;
use shepherd_core::protocol::{ErrorCode, requests};

use super::{Ctx, Failure, SendArgs, print, print_json};

/// Run `shepherd send`.
pub async fn run(ctx: &Ctx, args: &SendArgs) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let (host, to) = super::split_host(&args.session);
    let text = args.text.join(" ");
    let reply = conn
        .try_call(requests::Send {
            to: to.to_string(),
            text,
            host: host.map(str::to_string),
            ..Default::default()
        })
        .await?;
    match reply {
        Ok(Sent {
            message_id,
            session_id,
            session_name,
            connected,
        }) => {
            if ctx.json {
                print_json(&serde_json::json!({
                    "message_id": message_id,
                    "session_id": session_id,
                    "session_name": session_name,
                    "connected": connected,
                }))?;
            } else {
                let how = if connected {
                    "delivered now"
                } else {
                    "queued until it reconnects"
                };
                print(&format!("sent to {session_name} ({session_id}) — {how}\n"))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(ClientError::Remote {
            code,
            message,
            details,
        }) => Err(explain(&args.session, code, &message, details).into()),
        Err(e) => Err(Failure::from_client(e, &conn.socket).into()),
    }
}

/// The core's refusal of a send, in words, with the candidates it named.
pub(super) fn explain(
    selector: &str,
    code: ErrorCode,
    message: &str,
    details: Option<serde_json::Value>,
) -> Failure {
    let candidates = candidate_lines(details.as_ref());
    let message = match code {
        ErrorCode::AmbiguousSession => format!(
            "{selector:?} matches several sessions; name one by its id (or a longer id \
             prefix):{candidates}"
        ),
        ErrorCode::UnknownSession if candidates.is_empty() => format!(
            "no session matches {selector:?}: `shepherd sessions --all` lists every known \
             session"
        ),
        ErrorCode::UnknownSession => format!(
            "no session matches {selector:?}; known sessions:{candidates}\n\
             name one by its id, unique id prefix or unique name"
        ),
        _ => return Failure::remote(code, message, details),
    };
    Failure {
        code: code.as_str().to_string(),
        message,
        details,
    }
}

/// `\n  <id>  <name>  connected|not connected` for each `details.candidates` entry.
fn candidate_lines(details: Option<&serde_json::Value>) -> String {
    let Some(list) = details
        .and_then(|d| d.get("candidates"))
        .and_then(|c| c.as_array())
    else {
        return String::new();
    };
    let rows: Vec<(String, String, bool)> = list
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap_or("?").to_string(),
                c["name"].as_str().unwrap_or("?").to_string(),
                c["connected"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    let id_width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let name_width = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
    rows.iter()
        .map(|(id, name, connected)| {
            let state = if *connected {
                "connected"
            } else {
                "not connected"
            };
            format!("\n  {id:<id_width$}  {name:<name_width$}  {state}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ambiguous_lists_candidates() {
        let details = serde_json::json!({"candidates": [
            {"id": "0193a5c2-aaaa", "name": "fix-login", "connected": true},
            {"id": "0193a5c2-bbbbbb", "name": "fix", "connected": false},
        ]});
        let f = explain("fix", ErrorCode::AmbiguousSession, "x", Some(details));
        assert_eq!(f.code, "ambiguous_session");
        assert_eq!(
            f.message,
            "\"fix\" matches several sessions; name one by its id (or a longer id prefix):\n  \
             0193a5c2-aaaa    fix-login  connected\n  \
             0193a5c2-bbbbbb  fix        not connected"
        );
    }

    #[test]
    fn unknown_points_at_the_session_list() {
        let f = explain("nope", ErrorCode::UnknownSession, "x", None);
        assert!(
            f.message.contains("shepherd sessions --all"),
            "{}",
            f.message
        );
    }
}
