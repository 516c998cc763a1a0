//! Short replies every bridge gives when a request to the core goes wrong or needs a
//! session picked: one wording for Telegram and Matrix alike. `prefix` is the platform's
//! command character (`/` or `!`).

use shepherd_core::client::ClientError;
use shepherd_core::protocol::{ErrorCode, SessionInfo};

use super::html;
use super::render::Rendered;

/// Plain text as a reply (escaped for the HTML side).
pub fn plain(text: String) -> Rendered {
    Rendered {
        html: html::escape(&text),
        plain: text,
    }
}

/// The core did not give the expected answer.
pub fn failure(error: ClientError) -> Rendered {
    plain(format!("The core did not answer: {error}"))
}

/// The core's refusal of a request, in its own words (they say what to do), or why
/// there was no answer at all.
pub fn refused(error: ClientError) -> Rendered {
    match error {
        ClientError::Remote { message, .. } => plain(format!("⚠️ {message}")),
        other => failure(other),
    }
}

/// A session by exact id, id prefix or name, or what went wrong.
pub fn pick<'a>(
    sessions: &'a [SessionInfo],
    selector: &str,
    prefix: char,
) -> Result<&'a SessionInfo, String> {
    if let Some(s) = sessions.iter().find(|s| s.id == selector) {
        return Ok(s);
    }
    let matches: Vec<&SessionInfo> = sessions
        .iter()
        .filter(|s| {
            s.id.starts_with(selector)
                || (selector.len() >= 6 && s.id.ends_with(selector))
                || s.name == selector
        })
        .collect();
    match matches.as_slice() {
        [one] => Ok(one),
        [] => Err(format!(
            "No session matches {selector:?}; {prefix}sessions lists them."
        )),
        many => Err(format!(
            "{selector:?} matches {} sessions: {}. Use a longer id.",
            many.len(),
            many.iter()
                .map(|s| format!("{} ({})", s.name, s.id))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Why a steer was not sent.
pub fn steer_error(e: &ClientError) -> String {
    match e {
        ClientError::Remote {
            code: ErrorCode::AmbiguousSession | ErrorCode::UnknownSession,
            message,
            ..
        } => format!("Not sent: {message}"),
        other => format!("Not sent: {other}"),
    }
}

/// Who answered an ask first, from an `already_answered` error.
pub fn already_answered_text(e: &ClientError) -> String {
    if let ClientError::Remote {
        details: Some(d), ..
    } = e
    {
        let by = d["answered_by"].as_str().unwrap_or("someone");
        let answer = d["answer"].as_str().unwrap_or("");
        return format!("Already answered by {by}: {answer}");
    }
    "Already answered.".to_string()
}
