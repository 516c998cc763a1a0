//! What a session is doing now, for the human's `peek`: the newest tool call without a
//! result (the one running while the session is in a tool), the newest text the model
//! wrote and the newest tool output's last lines, read from the tail of the session's file
//! (the last [`TAIL_BYTES`], regular files only, time-bounded like every session-file read).
//! Each text is cut to fit one chat message together. Blocking: call it off the hub.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::protocol::{Peek, PeekCall, PeekOutput, SessionInfo, SessionStatus};
use crate::supervise::view::{args_summary, content_text};

/// How much of the session file's end is read.
pub const TAIL_BYTES: u64 = 1024 * 1024;
/// How long the read may take.
const MAX_TIME: Duration = Duration::from_secs(5);
/// The newest text's end kept, in characters.
const MAX_TEXT_CHARS: usize = 1200;
/// The output's last lines kept: at most this many lines…
const MAX_OUTPUT_LINES: usize = 15;
/// …and characters.
const MAX_OUTPUT_CHARS: usize = 1000;

/// What the file says, newest last.
#[derive(Default)]
struct Tail {
    /// Calls without a result, by id, in the order made.
    open: Vec<(String, PeekCall)>,
    last_text: Option<String>,
    last_output: Option<PeekOutput>,
}

impl Tail {
    fn line(&mut self, bytes: &[u8], calls: &mut HashMap<String, PeekCall>) {
        let Ok(entry) = serde_json::from_slice::<Value>(bytes) else {
            return;
        };
        if entry["type"] != "message" {
            return;
        }
        let message = &entry["message"];
        match message["role"].as_str().unwrap_or("") {
            "assistant" => {
                // A new model call: whatever had no result will not get one.
                self.open.clear();
                let mut texts = Vec::new();
                for block in message["content"].as_array().map_or(&[][..], Vec::as_slice) {
                    match block["type"].as_str().unwrap_or("") {
                        "text" => {
                            let text = block["text"].as_str().unwrap_or("").trim();
                            if !text.is_empty() {
                                texts.push(text.to_string());
                            }
                        }
                        "toolCall" => {
                            let id = block["id"].as_str().unwrap_or("").to_string();
                            let call = PeekCall {
                                tool: block["name"].as_str().unwrap_or("?").to_string(),
                                // Already one line and bounded, as a supervisor's view has it.
                                args: args_summary(&block["arguments"]),
                            };
                            calls.insert(id.clone(), call.clone());
                            self.open.push((id, call));
                        }
                        _ => {}
                    }
                }
                if !texts.is_empty() {
                    self.last_text = Some(keep_end(&texts.join("\n\n"), MAX_TEXT_CHARS));
                }
            }
            "toolResult" => {
                let id = message["toolCallId"].as_str().unwrap_or("");
                self.open.retain(|(open, _)| open != id);
                let call = calls.get(id).cloned().unwrap_or_else(|| PeekCall {
                    tool: message["toolName"].as_str().unwrap_or("?").to_string(),
                    args: String::new(),
                });
                self.last_output = Some(PeekOutput {
                    call,
                    error: message["isError"] == true,
                    tail: last_lines(&content_text(&message["content"])),
                });
            }
            "user" => self.open.clear(),
            _ => {}
        }
    }
}

/// Build `session`'s peek from its file; `status_for_ms` as presence knows it.
pub fn build(session: &SessionInfo, status_for_ms: Option<u64>, now: u64) -> Peek {
    let mut peek = Peek {
        session_id: session.id.clone(),
        name: session.name.clone(),
        host: None,
        cwd: session.cwd.clone(),
        connected: session.connected,
        status: session.status.clone(),
        status_for_ms,
        running: None,
        last_text: None,
        last_output: None,
        note: None,
        taken_at: now,
    };
    let Some(path) = session.session_file.as_deref() else {
        peek.note = Some("no session file (none written yet, or an ephemeral session)".into());
        return peek;
    };
    match read_tail(Path::new(path)) {
        Ok(tail) => {
            let busy = session.connected && !session.status.is_idle();
            peek.running = tail.open.last().filter(|_| busy).map(|(_, c)| c.clone());
            peek.last_text = tail.last_text;
            peek.last_output = tail.last_output;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            peek.note = Some(format!("{path} does not exist yet"));
        }
        Err(e) => peek.note = Some(format!("cannot read {path}: {e}")),
    }
    peek
}

/// Read the file's last [`TAIL_BYTES`] (from a line's start) into a [`Tail`].
fn read_tail(path: &Path) -> std::io::Result<Tail> {
    let (mut file, len) = crate::files::open_regular(path)?;
    let start = len.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(start))?;
    let limited = crate::files::Limited::new(file.take(len - start), u64::MAX, MAX_TIME);
    let mut reader = BufReader::new(limited);
    let mut line = Vec::new();
    if start > 0 {
        // Somewhere inside a line: start at the next one.
        reader.read_until(b'\n', &mut line)?;
    }
    let mut tail = Tail::default();
    let mut calls = HashMap::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 || line.last() != Some(&b'\n') {
            break; // The end, or an entry still being written.
        }
        tail.line(&line[..n - 1], &mut calls);
    }
    Ok(tail)
}

/// The last [`MAX_OUTPUT_LINES`] non-blank lines of `text`, at most [`MAX_OUTPUT_CHARS`].
fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let from = lines.len().saturating_sub(MAX_OUTPUT_LINES);
    let mut kept = lines[from..].join("\n");
    if from > 0 {
        kept = format!("…({from} lines before)\n{kept}");
    }
    keep_end(&kept, MAX_OUTPUT_CHARS)
}

/// The end of `text`, at most `max` characters, marked when cut.
fn keep_end(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_string();
    }
    let end: String = text.chars().skip(total - max).collect();
    format!("…{end}")
}

/// `peek` as plain text (the CLI's): a headline with the status and for how long, then
/// the call running, the last text and the last output, each under its own heading.
pub fn text(peek: &Peek) -> String {
    let mut out = vec![headline(peek)];
    if let Some(call) = &peek.running {
        out.push(format!("  {}: {}", call.tool, call.args));
    }
    if let Some(text) = &peek.last_text {
        out.push(format!("\nlast text:\n{text}"));
    }
    if let Some(output) = &peek.last_output {
        let error = if output.error { " (error)" } else { "" };
        out.push(format!(
            "\nlast output of {} {}{error}:\n{}",
            output.call.tool, output.call.args, output.tail
        ));
    }
    if let Some(note) = &peek.note {
        out.push(format!("\n({note})"));
    }
    out.join("\n")
}

/// `fix-login on gpu: running bash for 3m 5s`, `fix-login: idle for 12s`,
/// `fix-login: not connected`.
pub fn headline(peek: &Peek) -> String {
    let host = peek
        .host
        .as_deref()
        .map(|h| format!(" on {h}"))
        .unwrap_or_default();
    let status = match &peek.status {
        SessionStatus::Tool(tool) => format!("running {tool}"),
        other => other.to_string(),
    };
    let state = match (peek.connected, peek.status_for_ms) {
        (false, _) => "not connected".to_string(),
        (true, Some(ms)) => format!("{status} for {}", crate::human::duration(ms)),
        (true, None) => status,
    };
    format!("{}{host}: {state}", peek.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::SessionId;
    use std::io::Write;

    fn session(file: &Path, status: SessionStatus) -> SessionInfo {
        SessionInfo {
            id: SessionId::from("s1"),
            name: "fix-login".into(),
            cwd: "/w".into(),
            status,
            connected: true,
            session_file: Some(file.display().to_string()),
            ..crate::examples::session_info()
        }
    }

    fn assistant(text: &str, calls: &[(&str, &str, Value)]) -> String {
        let mut content = vec![serde_json::json!({"type": "text", "text": text})];
        for (id, name, args) in calls {
            content.push(
                serde_json::json!({"type": "toolCall", "id": id, "name": name, "arguments": args}),
            );
        }
        serde_json::json!({"type": "message", "message": {"role": "assistant", "content": content}})
            .to_string()
    }

    fn result(id: &str, name: &str, text: &str, error: bool) -> String {
        serde_json::json!({"type": "message", "message": {"role": "toolResult", "toolCallId": id,
            "toolName": name, "content": [{"type": "text", "text": text}], "isError": error}})
        .to_string()
    }

    #[test]
    fn the_running_call_the_last_text_and_the_last_output_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let output: String = (1..=40).map(|n| format!("line {n}\n")).collect();
        let lines = [
            r#"{"type":"session","version":3}"#.to_string(),
            assistant(
                "Listing first.",
                &[("c1", "bash", serde_json::json!({"command": "ls"}))],
            ),
            result("c1", "bash", &output, false),
            assistant(
                "Now I wait for the build.",
                &[(
                    "c2",
                    "bash",
                    serde_json::json!({"command": "sleep 30 && make"}),
                )],
            ),
        ];
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let peek = build(
            &session(&path, SessionStatus::Tool("bash".into())),
            Some(4200),
            9,
        );
        let running = peek.running.clone().expect("a call runs");
        assert_eq!(
            (running.tool.as_str(), running.args.as_str()),
            ("bash", "sleep 30 && make")
        );
        assert_eq!(peek.last_text.as_deref(), Some("Now I wait for the build."));
        let out = peek.last_output.clone().expect("an output");
        assert_eq!(out.call.args, "ls");
        assert!(out.tail.ends_with("line 40"), "{}", out.tail);
        assert!(
            out.tail.starts_with("…(25 lines before)\nline 26"),
            "{}",
            out.tail
        );
        assert_eq!(peek.status_for_ms, Some(4200));
        let shown = text(&peek);
        assert!(
            shown.starts_with("fix-login: running bash for 4s\n  bash: sleep 30 && make\n"),
            "{shown}"
        );
        // Idle: nothing runs, whatever the file says.
        let idle = build(&session(&path, SessionStatus::Idle), None, 9);
        assert!(idle.running.is_none());
    }

    #[test]
    fn only_the_tail_of_a_long_file_is_read_and_a_half_written_entry_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut f = std::fs::File::create(&path).unwrap();
        let old = assistant("old text", &[]);
        while f.metadata().unwrap().len() < 2 * TAIL_BYTES {
            writeln!(f, "{old}").unwrap();
        }
        writeln!(f, "{}", assistant("the newest", &[])).unwrap();
        write!(f, "{{\"type\":\"message\",\"message\":{{\"role\":\"assis").unwrap();
        let peek = build(&session(&path, SessionStatus::Thinking), None, 9);
        assert_eq!(peek.last_text.as_deref(), Some("the newest"));
        assert!(peek.note.is_none());
    }

    #[test]
    fn a_fifo_or_a_missing_file_is_a_note_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        crate::files::make_fifo(&fifo);
        let peek = build(&session(&fifo, SessionStatus::Idle), None, 9);
        assert!(
            peek.note.as_deref().unwrap().contains("FIFO"),
            "{:?}",
            peek.note
        );
        let gone = build(
            &session(&dir.path().join("gone"), SessionStatus::Idle),
            None,
            9,
        );
        assert!(gone.note.as_deref().unwrap().contains("does not exist yet"));
    }

    #[test]
    fn long_texts_keep_their_end() {
        let text: String = "x".repeat(5000) + "END";
        let kept = keep_end(&text, MAX_TEXT_CHARS);
        assert!(kept.starts_with('…') && kept.ends_with("END"));
        assert_eq!(kept.chars().count(), MAX_TEXT_CHARS + 1);
    }
}
