//! The view builder: what a worker Pi session did since the previous view, compacted from
//! its session file (JSONL, Pi session format version 3) without any model call. It reads
//! from the cursor's byte offset to the last complete line, renders user and assistant
//! text, tool calls with their outcome, calls still waiting for a result (carried in the
//! cursor across views), errors, the last two reasoning blocks, compactions, model changes
//! and deliveries from shepherd, then the git changes ([`super::changes`]), between a
//! header and a footer about the worker. Every cut is marked; the whole text is bounded by
//! dropping the oldest items, and says how many. It never fails: a missing, shrunk or
//! replaced file, or a malformed line, is reported in the text and the cursor reset.
//! Blocking (file and git reads): call it from a blocking thread, never from the hub.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

mod activity;

use self::activity::{Activity, Item, Outcome, cut, floor_char_boundary, indent, one_line};
pub(crate) use self::activity::{args_summary, content_text};
use super::changes;
use crate::protocol::{SessionStatus, ViewReason};

/// Upper bound of a view's text, in bytes.
pub const MAX_VIEW_BYTES: usize = 24 * 1024;
/// User and assistant text is cut to this many characters.
pub const MAX_TEXT_CHARS: usize = 1500;
/// Reasoning blocks shown per view (the latest ones).
pub const REASONING_BLOCKS: usize = 2;
/// Each reasoning block is cut to this many characters.
pub const MAX_REASONING_CHARS: usize = 400;
/// Tool calls without a result remembered in the cursor (the newest ones).
pub const MAX_PENDING: usize = 64;
/// One-line summary of a tool call's arguments.
const MAX_ARGS_CHARS: usize = 160;
/// Excerpt of a tool result (head and tail).
const MAX_RESULT_CHARS: usize = 300;
/// Excerpt of a compaction or branch summary.
const MAX_SUMMARY_CHARS: usize = 600;
/// Goal shown in the header.
const MAX_GOAL_CHARS: usize = 300;
/// Pending calls listed in the view.
const MAX_PENDING_LISTED: usize = 20;

/// Where the previous view stopped; persisted per pairing as JSON in the store.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cursor {
    /// The file the offset belongs to.
    #[serde(default)]
    pub session_file: Option<String>,
    /// Byte offset after the last complete line consumed.
    #[serde(default)]
    pub offset: u64,
    /// Worker tool calls seen without a result yet.
    #[serde(default)]
    pub pending: Vec<PendingCall>,
    /// Git HEAD when the previous view was built.
    #[serde(default)]
    pub head: Option<String>,
    /// Ms timestamp of the worker's last assistant message seen.
    #[serde(default)]
    pub last_turn_at: Option<u64>,
}

/// A tool call of the worker that has no result yet.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PendingCall {
    pub id: String,
    pub name: String,
    pub summary: String,
}

/// What the core knows about the worker from presence.
#[derive(Debug, Clone, Copy)]
pub struct WorkerFacts<'a> {
    pub name: &'a str,
    pub status: &'a SessionStatus,
    pub model: Option<&'a str>,
    pub context_percent: Option<f64>,
    pub context_tokens: Option<u64>,
    pub context_window: Option<u64>,
    pub cwd: &'a str,
    pub repo: Option<&'a str>,
    pub branch: Option<&'a str>,
    pub session_file: Option<&'a str>,
}

/// Everything a view is built from.
#[derive(Debug, Clone, Copy)]
pub struct ViewInput<'a> {
    pub cursor: &'a Cursor,
    pub worker: WorkerFacts<'a>,
    pub goal: Option<&'a str>,
    pub look: u32,
    pub reason: ViewReason,
    /// Unix milliseconds.
    pub now: u64,
}

/// A built view and the cursor to store for the next one.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltView {
    pub text: String,
    /// Session-file entries covered (the header line is not an entry).
    pub entries: u32,
    /// Tool calls of the worker without a result, after this view.
    pub pending_tool_calls: u32,
    /// No new entries, HEAD did not move and the session file was not replaced.
    pub unchanged: bool,
    pub cursor: Cursor,
}

/// Build the view that follows `input.cursor`. Never fails and never panics.
pub fn build(input: &ViewInput<'_>) -> BuiltView {
    let mut cursor = input.cursor.clone();
    let mut notes: Vec<String> = Vec::new();
    let mut activity = Activity::new(std::mem::take(&mut cursor.pending));
    let restarted = read_new_entries(
        input.worker.session_file,
        &mut cursor,
        &mut activity,
        &mut notes,
    );
    activity.finish();

    let dir = Path::new(input.worker.cwd);
    let changes = changes::read(dir, cursor.head.as_deref()).or_else(|| {
        input
            .worker
            .repo
            .and_then(|repo| changes::read(Path::new(repo), cursor.head.as_deref()))
    });
    let head_moved = changes.as_ref().is_some_and(changes::Changes::head_moved)
        || (changes.is_none() && cursor.head.is_some());
    cursor.head = changes.as_ref().and_then(|c| c.head.clone());
    if activity.last_turn_at.is_some() {
        cursor.last_turn_at = activity.last_turn_at.max(cursor.last_turn_at);
    }
    let pending = activity.pending.clone();
    cursor.pending = pending.clone();

    let entries = activity.entries;
    let unchanged = entries == 0 && !head_moved && !restarted;
    let text = render(
        input,
        &cursor,
        &notes,
        &activity,
        changes.as_ref(),
        &pending,
    );
    BuiltView {
        text,
        entries,
        pending_tool_calls: u32::try_from(pending.len()).unwrap_or(u32::MAX),
        unchanged,
        cursor,
    }
}

/// Read the worker's session file from `cursor` on into `activity`, moving the cursor past
/// what was read; what the supervisor should know about the reading goes to `notes`. True
/// when reading started over (another file, or this one shrank, was replaced or is gone).
fn read_new_entries(
    session_file: Option<&str>,
    cursor: &mut Cursor,
    activity: &mut Activity,
    notes: &mut Vec<String>,
) -> bool {
    let mut restarted = false;
    match session_file {
        None => {
            notes.push(
                "The worker has no session file (an ephemeral session, or none written \
                 yet): its activity cannot be shown."
                    .to_string(),
            );
        }
        Some(path) => {
            if cursor.session_file.as_deref() != Some(path) {
                if let Some(old) = &cursor.session_file {
                    notes.push(format!(
                        "The worker's session file changed (was {old}): reading {path} from \
                         its start."
                    ));
                    restarted = true;
                }
                cursor.session_file = Some(path.to_string());
                cursor.offset = 0;
                activity.pending.clear();
            }
            let read = read_lines(Path::new(path), cursor.offset, |line| activity.line(line));
            match read {
                Ok(read) => {
                    if let Some(why) = read.restarted {
                        notes.push(format!(
                            "The session file {why} since the previous view: read again from \
                             its start."
                        ));
                        restarted = true;
                    }
                    if let Some(e) = read.error {
                        notes.push(format!(
                            "Reading {path} stopped at byte {}: {e}.",
                            read.offset
                        ));
                    }
                    if read.partial > 0 {
                        notes.push(format!(
                            "An entry still being written ({} bytes) is left for the next \
                             view.",
                            read.partial
                        ));
                    }
                    cursor.offset = read.offset;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if cursor.offset > 0 {
                        notes.push(format!(
                            "The session file {path} is gone: the next view reads whatever \
                             is there from its start."
                        ));
                        restarted = true;
                    } else {
                        notes.push(format!(
                            "The session file {path} does not exist yet (Pi writes it from \
                             the first message on)."
                        ));
                    }
                    cursor.offset = 0;
                    activity.pending.clear();
                }
                Err(e) => {
                    // Possibly transient: keep the cursor where it was.
                    notes.push(format!("Cannot read the session file {path}: {e}."));
                }
            }
        }
    }
    restarted
}

// ---------------------------------------------------------------------------------------
// Reading

struct ReadOutcome {
    /// Offset after the last complete line consumed.
    offset: u64,
    /// Why reading started over at 0 (`"shrank"`, `"was replaced"`).
    restarted: Option<&'static str>,
    /// Bytes of an incomplete last line left for next time.
    partial: u64,
    /// An I/O error after some lines were read.
    error: Option<std::io::Error>,
}

/// Feed every complete line from `offset` to the end of the file (as it is now) to
/// `on_line`, without its `\n`. A file shorter than `offset`, or one whose byte before
/// `offset` is not a line end (replaced by another file), is read from the start.
fn read_lines(
    path: &Path,
    offset: u64,
    mut on_line: impl FnMut(&[u8]),
) -> std::io::Result<ReadOutcome> {
    // The worker's file is its word: never a FIFO or a device, never longer than it takes.
    let (mut file, len) = crate::files::open_regular(path)?;
    let mut start = offset;
    let mut restarted = None;
    if len < offset {
        start = 0;
        restarted = Some("shrank");
    } else if offset > 0 {
        let mut before = [0u8; 1];
        file.seek(SeekFrom::Start(offset - 1))?;
        file.read_exact(&mut before)?;
        if before[0] != b'\n' {
            start = 0;
            restarted = Some("was replaced");
        }
    }
    file.seek(SeekFrom::Start(start))?;
    let time = crate::usage::file::MAX_TIME;
    let mut reader = BufReader::new(crate::files::Limited::new(
        file.take(len - start),
        u64::MAX,
        time,
    ));
    let mut outcome = ReadOutcome {
        offset: start,
        restarted,
        partial: 0,
        error: None,
    };
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(n) if line.last() == Some(&b'\n') => {
                outcome.offset += n as u64;
                on_line(&line[..n - 1]);
            }
            Ok(n) => {
                outcome.partial = n as u64;
                break;
            }
            Err(e) => {
                outcome.error = Some(e);
                break;
            }
        }
    }
    Ok(outcome)
}

// ---------------------------------------------------------------------------------------
// Rendering

fn render(
    input: &ViewInput<'_>,
    cursor: &Cursor,
    notes: &[String],
    activity: &Activity,
    changes: Option<&changes::Changes>,
    pending: &[PendingCall],
) -> String {
    let head = render_head(input, cursor, notes, activity);
    let (lines, reasoning_total) = activity_lines(activity);
    let mut activity_head = String::from("\n## What the worker did\n");
    if reasoning_total > REASONING_BLOCKS {
        activity_head.push_str(&format!(
            "(only the last {REASONING_BLOCKS} of {reasoning_total} reasoning blocks are shown)\n"
        ));
    }
    if lines.is_empty() {
        activity_head.push_str("Nothing new since the previous view.\n");
    }
    let tail = render_tail(input, activity, changes, pending);
    bounded(head, activity_head, &lines, tail)
}

/// The title, the worker's facts, the goal and the builder's notes.
fn render_head(
    input: &ViewInput<'_>,
    cursor: &Cursor,
    notes: &[String],
    activity: &Activity,
) -> String {
    let worker = &input.worker;
    let mut head = format!(
        "# Look {} ({}): worker \"{}\"\n",
        input.look,
        reason_name(input.reason),
        worker.name
    );
    let mut facts = vec![format!("status {}", worker.status)];
    facts.push(format!("model {}", worker.model.unwrap_or("unknown")));
    facts.push(context_fill(worker));
    match (worker.repo, worker.branch) {
        (Some(repo), Some(branch)) => facts.push(format!("{repo}@{branch}")),
        (Some(repo), None) => facts.push(format!("{repo} (detached)")),
        _ => facts.push(format!("cwd {}", worker.cwd)),
    }
    facts.push(match cursor.last_turn_at {
        Some(at) => format!("last turn {}", crate::human::ago(at, input.now)),
        None => "no turn seen yet".to_string(),
    });
    head.push_str(&format!("Worker: {}\n", facts.join(" · ")));
    match input.goal.map(str::trim).filter(|g| !g.is_empty()) {
        Some(goal) => head.push_str(&format!("Goal: {}\n", one_line(goal, MAX_GOAL_CHARS))),
        None => head.push_str("Goal: none set (steering is refused until one is)\n"),
    }
    head.push_str(&format!("New session entries: {}\n", activity.entries));
    for note in notes {
        head.push_str(&format!("Note: {note}\n"));
    }
    head
}

/// One line per activity item, oldest first; of the reasoning blocks only the latest
/// [`REASONING_BLOCKS`] are kept. Also returns how many reasoning blocks there were.
fn activity_lines(activity: &Activity) -> (Vec<String>, usize) {
    let reasoning_total = activity
        .items
        .iter()
        .filter(|i| matches!(i, Item::Reasoning(_)))
        .count();
    let mut reasoning_seen = 0;
    let mut lines: Vec<String> = Vec::new();
    for item in &activity.items {
        match item {
            Item::Line(line) => lines.push(format!("- {}", indent(line))),
            Item::Reasoning(text) => {
                reasoning_seen += 1;
                if reasoning_total - reasoning_seen < REASONING_BLOCKS {
                    lines.push(format!(
                        "- Reasoning: {}",
                        indent(&cut(text.trim(), MAX_REASONING_CHARS))
                    ));
                }
            }
            Item::Call {
                id,
                name,
                summary,
                outcome,
            } => {
                let result = match outcome {
                    Some(Outcome::Result {
                        error: false,
                        excerpt,
                    }) => format!("ok: {excerpt}"),
                    Some(Outcome::Result {
                        error: true,
                        excerpt,
                    }) => {
                        format!("ERROR: {excerpt}")
                    }
                    Some(Outcome::Lost) => "no result was recorded".to_string(),
                    None => format!("no result yet ({id})"),
                };
                lines.push(format!("- Tool {name}: {summary} -> {}", indent(&result)));
            }
        }
    }
    (lines, reasoning_total)
}

/// Calls still without a result, the git changes, and the closing line.
fn render_tail(
    input: &ViewInput<'_>,
    activity: &Activity,
    changes: Option<&changes::Changes>,
    pending: &[PendingCall],
) -> String {
    let mut tail = String::new();
    if !pending.is_empty() {
        tail.push_str(&format!(
            "\n## Tool calls still without a result ({})\n",
            pending.len()
        ));
        let skip = pending.len().saturating_sub(MAX_PENDING_LISTED);
        if skip > 0 {
            tail.push_str(&format!("(…{skip} older ones not listed)\n"));
        }
        for call in &pending[skip..] {
            tail.push_str(&format!(
                "- {}: {} ({})\n",
                call.name, call.summary, call.id
            ));
        }
    }
    if let Some(changes) = changes {
        tail.push('\n');
        tail.push_str(&changes.render());
    }
    let pending_note = match pending.len() {
        0 => "no tool call waiting".to_string(),
        1 => "1 tool call without a result".to_string(),
        n => format!("{n} tool calls without a result"),
    };
    tail.push_str(&format!(
        "\n(end of look {}: {} {}, {pending_note})\n",
        input.look,
        activity.entries,
        if activity.entries == 1 {
            "entry"
        } else {
            "entries"
        }
    ));
    tail
}

/// Put the view together within [`MAX_VIEW_BYTES`]: the oldest activity lines go first,
/// with a line saying how many; the head and the tail always stay.
fn bounded(head: String, activity_head: String, lines: &[String], tail: String) -> String {
    let fixed = head.len() + activity_head.len() + tail.len();
    let mut body_len: usize = lines.iter().map(|l| l.len() + 1).sum();
    let mut omitted = 0;
    let omission_room = 96;
    while omitted < lines.len() && fixed + body_len + omission_room > MAX_VIEW_BYTES {
        body_len -= lines[omitted].len() + 1;
        omitted += 1;
    }
    let mut text = head;
    text.push_str(&activity_head);
    if omitted > 0 {
        text.push_str(&format!(
            "(…{omitted} earlier items omitted to keep this view under {} KiB)\n",
            MAX_VIEW_BYTES / 1024
        ));
    }
    for line in &lines[omitted..] {
        text.push_str(line);
        text.push('\n');
    }
    text.push_str(&tail);
    if text.len() > MAX_VIEW_BYTES {
        let keep = floor_char_boundary(&text, MAX_VIEW_BYTES - 64);
        let rest = text.len() - keep;
        text.truncate(keep);
        text.push_str(&format!("\n…(view cut: {rest} more bytes)\n"));
    }
    text
}

fn reason_name(reason: ViewReason) -> &'static str {
    match reason {
        ViewReason::Paired => "paired",
        ViewReason::Stopped => "stopped",
        ViewReason::Timer => "timer",
        ViewReason::Look => "look",
        ViewReason::Request => "request",
    }
}

fn context_fill(worker: &WorkerFacts<'_>) -> String {
    let percent = worker.context_percent.map(|p| format!("{p:.0}%"));
    let tokens = match (worker.context_tokens, worker.context_window) {
        (Some(t), Some(w)) => Some(format!("{t} of {w} tokens")),
        (Some(t), None) => Some(format!("{t} tokens")),
        (None, Some(w)) => Some(format!("window {w} tokens")),
        (None, None) => None,
    };
    match (percent, tokens) {
        (Some(p), Some(t)) => format!("context {p} ({t})"),
        (Some(p), None) => format!("context {p}"),
        (None, Some(t)) => format!("context {t}"),
        (None, None) => "context unknown".to_string(),
    }
}

#[cfg(test)]
mod tests;
