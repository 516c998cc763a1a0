//! The usage report: tokens and cost summed from Pi's own usage records in session files
//! (assistant messages, `usage` entries, compaction and branch summaries, tool results),
//! per session, per model and in total. `usage` answers with a [`UsageReport`]. A session
//! whose file cannot be read or parsed is listed with its `error`, counted nowhere, and
//! named in `missing`; `complete` is false then. Nothing is estimated.

use serde::{Deserialize, Serialize};

use super::SessionId;

/// Token counts and cost summed over usage records.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageTotals {
    /// Input tokens (Pi's `input`: not read from a cache).
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// The sum of Pi's `totalTokens`.
    pub total_tokens: u64,
    /// US dollars: the sum of Pi's `cost.total` (Pi computes it from its model prices).
    pub cost: f64,
    /// How many usage records were summed.
    pub records: u64,
}

impl UsageTotals {
    /// Add `other` to these totals.
    pub fn add(&mut self, other: &UsageTotals) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total_tokens += other.total_tokens;
        self.cost += other.cost;
        self.records += other.records;
    }
}

/// One session of a usage report.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionUsage {
    pub session_id: SessionId,
    pub name: String,
    /// The session file read; null when the core knows none.
    pub file: Option<String>,
    /// All zero when `error` is set.
    #[serde(flatten)]
    pub usage: UsageTotals,
    /// Why this session's usage could not be counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One model's row of a usage report.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelUsage {
    /// `provider/model`; null for usage Pi records without naming a model (compaction and
    /// branch summaries, tool results).
    pub model: Option<String>,
    #[serde(flatten)]
    pub usage: UsageTotals,
}

/// A session whose usage is not in the report, and why.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissingUsage {
    pub session_id: SessionId,
    pub reason: String,
}

/// What `usage` answers: each session once, rows per model sorted by cost (highest
/// first), the total, and whether every session in scope could be counted.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageReport {
    pub sessions: Vec<SessionUsage>,
    pub models: Vec<ModelUsage>,
    pub total: UsageTotals,
    /// False when a session in scope could not be read: see `missing`.
    pub complete: bool,
    pub missing: Vec<MissingUsage>,
}
