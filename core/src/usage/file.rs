//! One Pi session file's usage: every usage record Pi itself counts in its session totals
//! (`get_session_stats`), summed per model. The records (Pi 1.6 docs/session-format.md and
//! message-types.md): an assistant message's `usage` (model: its `provider`/`model`), a
//! `usage` entry's `usage` (its `provider`/`model`), a `compaction` or `branch_summary`
//! entry's optional `usage` and a tool result's optional `usage` (no model recorded).
//! Every line must be a JSON object with a `type`, the first the `session` header, and a
//! usage record must have every field Pi sums; anything else is an error that names the
//! line, and the caller reports the session as not counted. Blocking: never on the hub.
//! The file is the session's word, so untrusted: only a regular file is read (never a FIFO
//! or a device; [`crate::files::open_regular`]), up to [`MAX_BYTES`] and for at most
//! [`MAX_TIME`]; beyond that it is not counted, with the reason.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::files::{Limited, human_bytes, open_regular};
use crate::protocol::UsageTotals;

/// Largest session file counted.
pub const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// Longest one file is read and summed for.
pub const MAX_TIME: Duration = Duration::from_secs(20);

/// A session file's usage.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileUsage {
    /// The session id in the file's header.
    pub session_id: String,
    /// Everything, summed in file order (the order Pi sums in).
    pub total: UsageTotals,
    /// Per model (`provider/model`; `None` for records without a model), first seen first.
    pub models: Vec<(Option<String>, UsageTotals)>,
}

/// Read the session file at `path`. `expected`: the session id its header must carry.
/// The error says why the file's usage cannot be counted.
pub fn read(path: &Path, expected: Option<&str>) -> Result<FileUsage, String> {
    read_bounded(path, expected, MAX_BYTES, MAX_TIME)
}

/// [`read`] with its bounds: at most `max` bytes, for at most `time`.
pub fn read_bounded(
    path: &Path,
    expected: Option<&str>,
    max: u64,
    time: Duration,
) -> Result<FileUsage, String> {
    let (file, len): (File, u64) = open_regular(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "the session file {} does not exist (Pi writes it from the first message on; \
             or it was moved or deleted)",
            path.display()
        ),
        _ => format!("cannot read the session file {}: {e}", path.display()),
    })?;
    if len > max {
        return Err(format!(
            "the session file {} is too large to count ({} bytes; at most {} are read)",
            path.display(),
            len,
            human_bytes(max)
        ));
    }
    let reader = Limited::new(file, max, time);
    let usage = parse(BufReader::with_capacity(64 * 1024, reader))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(expected) = expected
        && usage.session_id != expected
    {
        return Err(format!(
            "{}: the header names session {}, not {expected}",
            path.display(),
            usage.session_id
        ));
    }
    Ok(usage)
}

/// Sum the usage records of a session file read from `reader`.
pub fn parse(mut reader: impl BufRead) -> Result<FileUsage, String> {
    let mut out = FileUsage::default();
    let mut models: HashMap<Option<String>, usize> = HashMap::new();
    let mut line = Vec::with_capacity(16 * 1024);
    let mut number = 0u64;
    let mut header = false;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("reading after line {number}: {e}"))?;
        if n == 0 {
            break;
        }
        number += 1;
        let ended = line.last() == Some(&b'\n');
        let body = if ended { &line[..n - 1] } else { &line[..] };
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let entry: Entry = serde_json::from_slice(body).map_err(|e| {
            let cut = if ended {
                ""
            } else {
                " (the file ends inside this entry: cut short?)"
            };
            format!("line {number} is not a session entry: {e}{cut}")
        })?;
        if !header {
            if entry.kind != "session" {
                return Err(format!(
                    "line {number} is a `{}` entry, not the `session` header: not a Pi \
                     session file",
                    entry.kind
                ));
            }
            out.session_id = entry
                .id
                .ok_or_else(|| format!("line {number}: the session header has no `id`"))?;
            header = true;
            continue;
        }
        let Some((model, usage)) = record(entry).map_err(|e| format!("line {number}: {e}"))? else {
            continue;
        };
        out.total.add(&usage);
        let slot = *models.entry(model.clone()).or_insert_with(|| {
            out.models.push((model, UsageTotals::default()));
            out.models.len() - 1
        });
        out.models[slot].1.add(&usage);
    }
    if !header {
        return Err("the file is empty: no session header".to_string());
    }
    Ok(out)
}

/// The usage record an entry carries, if any, with its model.
fn record(entry: Entry) -> Result<Option<(Option<String>, UsageTotals)>, String> {
    let found = match entry.kind.as_str() {
        "message" => {
            let message = entry
                .message
                .ok_or("a `message` entry without its `message`")?;
            match message.role.as_str() {
                "assistant" => {
                    let usage = message
                        .usage
                        .ok_or("an assistant message without `usage`")?;
                    let model = match (message.provider, message.model) {
                        (Some(p), Some(m)) => Some(format!("{p}/{m}")),
                        (None, Some(m)) => Some(m),
                        _ => None,
                    };
                    Some((model, usage))
                }
                "toolResult" => message.usage.map(|u| (None, u)),
                _ => None,
            }
        }
        "usage" => {
            let usage = entry.usage.ok_or("a `usage` entry without its `usage`")?;
            let model = match (entry.provider, entry.model) {
                (Some(p), Some(m)) => Some(format!("{p}/{m}")),
                (None, Some(m)) => Some(m),
                _ => None,
            };
            Some((model, usage))
        }
        "compaction" | "branch_summary" => entry.usage.map(|u| (None, u)),
        _ => None,
    };
    match found {
        None | Some((_, Value::Null)) => Ok(None),
        Some((model, raw)) => {
            let usage: RawUsage =
                serde_json::from_value(raw).map_err(|e| format!("a usage record: {e}"))?;
            Ok(Some((model, usage.totals())))
        }
    }
}

/// The fields of an entry that usage needs; serde skips the rest.
#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    message: Option<Message>,
    /// Kept raw: parsed only for the entry types that carry Pi's `Usage` (an extension's
    /// entry may have a `usage` of its own shape).
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    role: String,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<Value>,
}

/// Pi's `Usage` (message-types.md), the fields Pi sums.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawUsage {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    total_tokens: u64,
    cost: RawCost,
}

#[derive(Deserialize)]
struct RawCost {
    total: f64,
}

impl RawUsage {
    fn totals(&self) -> UsageTotals {
        UsageTotals {
            input: self.input,
            output: self.output,
            cache_read: self.cache_read,
            cache_write: self.cache_write,
            total_tokens: self.total_tokens,
            cost: self.cost.total,
            records: 1,
        }
    }
}
