//! How session-file entries become the items of a view: user and assistant text, tool
//! calls matched with their results (and the calls still waiting, carried in the cursor),
//! reasoning blocks, errors, compactions, model changes and shepherd deliveries; and the
//! text helpers that cut and flatten what is shown, always with a marker.

use serde_json::Value;

use super::{
    MAX_ARGS_CHARS, MAX_PENDING, MAX_RESULT_CHARS, MAX_SUMMARY_CHARS, MAX_TEXT_CHARS, PendingCall,
};

/// One thing the worker did, in file order.
pub(super) enum Item {
    /// Already rendered (bounded) text.
    Line(String),
    /// A reasoning block (rendered only if among the last [`super::REASONING_BLOCKS`]).
    Reasoning(String),
    /// A tool call made in this view, with its outcome once known.
    Call {
        id: String,
        name: String,
        summary: String,
        outcome: Option<Outcome>,
    },
}

pub(super) enum Outcome {
    Result {
        error: bool,
        excerpt: String,
    },
    /// The run went on (or ended) without recording a result.
    Lost,
}

pub(super) struct Activity {
    pub(super) items: Vec<Item>,
    /// Calls without a result: earlier views' first, then this view's.
    pub(super) pending: Vec<PendingCall>,
    pub(super) entries: u32,
    pub(super) malformed: u32,
    pub(super) last_turn_at: Option<u64>,
}

impl Activity {
    pub(super) fn new(pending: Vec<PendingCall>) -> Activity {
        Activity {
            items: Vec::new(),
            pending,
            entries: 0,
            malformed: 0,
            last_turn_at: None,
        }
    }

    pub(super) fn line(&mut self, bytes: &[u8]) {
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let entry: Value = match serde_json::from_slice(bytes) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                self.malformed += 1;
                return;
            }
        };
        let kind = entry["type"].as_str().unwrap_or("");
        if kind == "session" {
            return;
        }
        self.entries += 1;
        match kind {
            "message" => self.message(&entry["message"]),
            "compaction" => {
                let tokens = entry["tokensBefore"]
                    .as_u64()
                    .map(|t| format!(" (from {t} tokens)"))
                    .unwrap_or_default();
                let summary = entry["summary"].as_str().unwrap_or("");
                self.push_line(format!(
                    "The worker compacted its context{tokens}: {}",
                    cut(summary, MAX_SUMMARY_CHARS)
                ));
            }
            "branch_summary" => {
                let summary = entry["summary"].as_str().unwrap_or("");
                self.push_line(format!(
                    "The worker moved to another branch of its session; summary of the one \
                     left: {}",
                    cut(summary, MAX_SUMMARY_CHARS)
                ));
            }
            "model_change" => {
                let provider = entry["provider"].as_str().unwrap_or("?");
                let model = entry["modelId"].as_str().unwrap_or("?");
                self.push_line(format!("Model set to {provider}/{model}."));
            }
            "thinking_level_change" => {
                let level = entry["thinkingLevel"].as_str().unwrap_or("?");
                self.push_line(format!("Thinking level set to {level}."));
            }
            "session_info" => {
                if let Some(name) = entry["name"].as_str() {
                    self.push_line(format!("Session named \"{}\".", one_line(name, 80)));
                }
            }
            "custom_message" => self.custom_message(&entry),
            // Extension state, labels, usage records, context edits: nothing to show.
            _ => {}
        }
    }

    fn message(&mut self, message: &Value) {
        match message["role"].as_str().unwrap_or("") {
            "user" => {
                self.lose_pending("a new user message");
                let text = content_text(&message["content"]);
                self.push_line(format!("User: {}", cut(&text, MAX_TEXT_CHARS)));
            }
            "assistant" => self.assistant(message),
            "toolResult" => self.tool_result(message),
            "bashExecution" => {
                let command = message["command"].as_str().unwrap_or("");
                let exit = match message["exitCode"].as_i64() {
                    Some(code) => format!("exit {code}"),
                    None if message["cancelled"] == true => "cancelled".to_string(),
                    None => "no exit code".to_string(),
                };
                let output = message["output"].as_str().unwrap_or("");
                self.push_line(format!(
                    "The user ran `{}` ({exit}): {}",
                    one_line(command, MAX_ARGS_CHARS),
                    excerpt(output, MAX_RESULT_CHARS)
                ));
            }
            "custom" => self.custom_message(message),
            "branchSummary" | "compactionSummary" => {
                let summary = message["summary"].as_str().unwrap_or("");
                self.push_line(format!("Summary: {}", cut(summary, MAX_SUMMARY_CHARS)));
            }
            // System prompt and tool loadout.
            _ => {}
        }
    }

    fn assistant(&mut self, message: &Value) {
        self.lose_pending("the next model call");
        if let Some(at) = message["timestamp"].as_u64() {
            self.last_turn_at = Some(self.last_turn_at.map_or(at, |t| t.max(at)));
        }
        let stop = message["stopReason"].as_str().unwrap_or("");
        let runs_tools = !matches!(stop, "error" | "aborted");
        let blocks = message["content"].as_array().map(Vec::as_slice);
        for block in blocks.unwrap_or(&[]) {
            match block["type"].as_str().unwrap_or("") {
                "text" => {
                    let text = block["text"].as_str().unwrap_or("");
                    if !text.trim().is_empty() {
                        self.push_line(format!("Assistant: {}", cut(text, MAX_TEXT_CHARS)));
                    }
                }
                "thinking" => {
                    let text = block["thinking"].as_str().unwrap_or("");
                    if !text.trim().is_empty() {
                        self.items.push(Item::Reasoning(text.to_string()));
                    }
                }
                "toolCall" => {
                    let id = block["id"].as_str().unwrap_or("").to_string();
                    let name = block["name"].as_str().unwrap_or("?").to_string();
                    let summary = args_summary(&block["arguments"]);
                    if runs_tools {
                        self.pending.push(PendingCall {
                            id: id.clone(),
                            name: name.clone(),
                            summary: summary.clone(),
                        });
                        self.items.push(Item::Call {
                            id,
                            name,
                            summary,
                            outcome: None,
                        });
                    } else {
                        self.push_line(format!(
                            "Tool call {name}: {summary} (not run: the turn ended with {stop})"
                        ));
                    }
                }
                _ => {}
            }
        }
        let error = message["errorMessage"].as_str().unwrap_or("");
        match stop {
            "error" => self.push_line(format!(
                "ERROR: the model call failed: {}",
                one_line(
                    if error.is_empty() {
                        "no message"
                    } else {
                        error
                    },
                    400
                )
            )),
            "aborted" => self.push_line(format!(
                "ABORTED: the turn was aborted{}",
                if error.is_empty() {
                    ".".to_string()
                } else {
                    format!(": {}", one_line(error, 400))
                }
            )),
            "length" => self
                .push_line("Note: the answer hit the model's output limit (cut off).".to_string()),
            _ => {}
        }
    }

    fn tool_result(&mut self, message: &Value) {
        let id = message["toolCallId"].as_str().unwrap_or("");
        let error = message["isError"] == true;
        let excerpt = excerpt(&content_text(&message["content"]), MAX_RESULT_CHARS);
        self.pending.retain(|p| p.id != id);
        // A call made in this view: its line gets the outcome.
        for item in self.items.iter_mut().rev() {
            if let Item::Call {
                id: call, outcome, ..
            } = item
                && call == id
                && outcome.is_none()
            {
                *outcome = Some(Outcome::Result { error, excerpt });
                return;
            }
        }
        // A call from before this view (or one never seen).
        let name = message["toolName"].as_str().unwrap_or("?");
        let status = if error { "ERROR" } else { "ok" };
        self.push_line(format!(
            "Result of the earlier tool call {name} ({id}): {status}: {excerpt}"
        ));
    }

    fn custom_message(&mut self, entry: &Value) {
        let custom_type = entry["customType"].as_str().unwrap_or("");
        let text = content_text(&entry["content"]);
        if custom_type == "shepherd-delivery" {
            let details = &entry["details"];
            let kind = details["kind"].as_str().unwrap_or("message");
            let from = &details["from"];
            let who = match from["name"].as_str() {
                Some(name) if from["kind"] == "pi" => format!("session \"{name}\""),
                Some(name) => name.to_string(),
                None => "shepherd".to_string(),
            };
            // The first line is the extension's "[shepherd] Steer from …:" heading.
            let body = match text.split_once('\n') {
                Some((first, rest)) if first.starts_with("[shepherd]") => rest,
                _ => text.as_str(),
            };
            self.push_line(format!(
                "{} from {who}: {}",
                capitalize(kind),
                cut(body, MAX_TEXT_CHARS)
            ));
        } else if entry["display"] != false {
            self.push_line(format!(
                "Extension message ({custom_type}): {}",
                cut(&text, MAX_RESULT_CHARS)
            ));
        }
    }

    fn push_line(&mut self, line: String) {
        self.items.push(Item::Line(line));
    }

    /// Calls still without a result when the run moved on will not get one (Pi records
    /// every result before the next model call or user message).
    fn lose_pending(&mut self, why: &str) {
        if self.pending.is_empty() {
            return;
        }
        for call in std::mem::take(&mut self.pending) {
            let mut in_view = false;
            for item in self.items.iter_mut() {
                if let Item::Call { id, outcome, .. } = item
                    && *id == call.id
                    && outcome.is_none()
                {
                    *outcome = Some(Outcome::Lost);
                    in_view = true;
                }
            }
            if !in_view {
                self.push_line(format!(
                    "The earlier tool call {} {} ({}) got no result before {why}.",
                    call.name, call.summary, call.id
                ));
            }
        }
    }

    pub(super) fn finish(&mut self) {
        if self.malformed > 0 {
            self.push_line(format!(
                "{} malformed session-file line(s) skipped.",
                self.malformed
            ));
        }
        if self.pending.len() > MAX_PENDING {
            let drop = self.pending.len() - MAX_PENDING;
            self.pending.drain(..drop);
        }
    }
}

/// The text of a message's `content` (a string or an array of blocks).
pub(crate) fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().map(str::to_string),
                Some("image") => Some("[image]".to_string()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A tool call's arguments on one line: the telling argument when there is one
/// (`command`, `path`, …), else the JSON.
pub(crate) fn args_summary(args: &Value) -> String {
    let keys = [
        "command",
        "pattern",
        "query",
        "path",
        "file_path",
        "question",
        "url",
    ];
    if let Some(obj) = args.as_object()
        && let Some((key, value)) = keys
            .iter()
            .find_map(|k| obj.get(*k).and_then(Value::as_str).map(|v| (*k, v)))
    {
        let mut summary = value.to_string();
        let others = obj.len() - 1;
        if key == "pattern"
            && let Some(path) = obj.get("path").and_then(Value::as_str)
        {
            summary = format!("{value} in {path}");
        } else if others > 0 && key != "command" {
            summary = format!("{value} (+{others} more args)");
        }
        return one_line(&summary, MAX_ARGS_CHARS);
    }
    one_line(&args.to_string(), MAX_ARGS_CHARS)
}

/// `text` cut to `max` characters, with an explicit marker of what was left out.
pub(super) fn cut(text: &str, max: usize) -> String {
    let text = text.trim_end();
    let total = text.chars().count();
    if total <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max).collect();
    format!("{head}…({} more chars)", total - max)
}

/// On one line (line breaks shown as ⏎), cut to `max` characters.
pub(super) fn one_line(text: &str, max: usize) -> String {
    let joined = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ⏎ ");
    cut(&joined, max)
}

/// A tool result on one line: its head and its tail (where errors usually are) when long.
pub(super) fn excerpt(text: &str, max: usize) -> String {
    let joined = one_line(text, usize::MAX);
    let total = joined.chars().count();
    if joined.is_empty() {
        return "(no output)".to_string();
    }
    if total <= max {
        return joined;
    }
    let half = max / 2;
    let head: String = joined.chars().take(half).collect();
    let tail: String = joined.chars().skip(total - half).collect();
    format!("{head}…({} chars omitted)…{tail}", total - 2 * half)
}

/// Continuation lines of a multi-line item, indented under its bullet (blank ones
/// dropped).
pub(super) fn indent(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n  ")
}

pub(super) fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

pub(super) fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while index > 0 && !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}
