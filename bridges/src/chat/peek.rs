//! # A peek on the phone
//!
//! `/peek` (Matrix `!peek`): what a session is doing now, as the core read it
//! (`shepherd_core::peek`): the headline (status and for how long), the call running
//! with its arguments, the last text the model wrote (quoted) and the last tool output's
//! tail, each already cut by the core so the whole fits one message; the last line says
//! when it was taken and how to refresh it in place (a button, a reaction). Pure.

use shepherd_core::protocol::Peek;

use super::format::clock_time;
use super::html::{Html, Rendered};

/// A peek as a message; `refresh` says how to take it again here.
pub fn peek(p: &Peek, refresh: &str) -> Rendered {
    let mut h = Html::new();
    h.text("👀 ").bold(&shepherd_core::peek::headline(p));
    if let Some(call) = &p.running {
        h.line().text(&format!("{}:", call.tool));
        h.line().pre(&call.args, None);
    }
    if let Some(text) = &p.last_text {
        h.line().italic("last text:");
        h.line().quote(text);
    }
    if let Some(out) = &p.last_output {
        let error = if out.error { " (error)" } else { "" };
        h.line().italic(&format!(
            "last output of {} {}{error}:",
            out.call.tool, out.call.args
        ));
        h.line().pre(&out.tail, None);
    }
    if let Some(note) = &p.note {
        h.line().italic(&format!("({note})"));
    }
    h.line()
        .italic(&format!("taken at {} · {refresh}", clock_time(p.taken_at)));
    h.into()
}

/// Where a peek points, for its refresh: `gpu:<session id>` on a linked host, else the id.
pub fn target(p: &Peek) -> String {
    match &p.host {
        Some(host) => format!("{host}:{}", p.session_id),
        None => p.session_id.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::protocol::{PeekCall, PeekOutput, SessionStatus};

    fn sample() -> Peek {
        Peek {
            session_id: "0193a5c2-7d1e".into(),
            name: "fix-login".into(),
            host: None,
            cwd: "/src/app".into(),
            connected: true,
            status: SessionStatus::Tool("bash".into()),
            status_for_ms: Some(65_000),
            running: Some(PeekCall {
                tool: "bash".into(),
                args: "sleep 30 && make <all>".into(),
            }),
            last_text: Some("Building.".into()),
            last_output: Some(PeekOutput {
                call: PeekCall {
                    tool: "read".into(),
                    args: "src/a.rs".into(),
                },
                error: true,
                tail: "no such file".into(),
            }),
            note: None,
            taken_at: 0,
        }
    }

    #[test]
    fn a_peek_names_the_running_command_and_how_long_it_runs() {
        let r = peek(&sample(), "🔄 refreshes it");
        assert!(
            r.html
                .starts_with("👀 <b>fix-login: running bash for 1m 5s</b>\nbash:\n<pre>sleep 30 &amp;&amp; make &lt;all&gt;</pre>"),
            "{}",
            r.html
        );
        assert!(
            r.plain
                .contains("last output of read src/a.rs (error):\nno such file")
        );
        assert!(
            r.plain.ends_with("taken at 00:00:00 UTC · 🔄 refreshes it"),
            "{}",
            r.plain
        );
        let mut far = sample();
        far.host = Some("gpu".into());
        assert_eq!(target(&far), "gpu:0193a5c2-7d1e");
        assert_eq!(target(&sample()), "0193a5c2-7d1e");
    }
}
