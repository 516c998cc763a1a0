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
    /// The linked host the session is on, in a home core's answers; absent for its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
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

impl UsageReport {
    /// Add `other` (another core's report) to this one: its sessions and missing ones
    /// after these, each model's totals summed by name (sorted by cost again), the total
    /// summed; complete only when both are.
    pub fn merge(&mut self, other: UsageReport) {
        self.sessions.extend(other.sessions);
        self.missing.extend(other.missing);
        self.total.add(&other.total);
        self.complete &= other.complete;
        for m in other.models {
            match self.models.iter_mut().find(|x| x.model == m.model) {
                Some(x) => x.usage.add(&m.usage),
                None => self.models.push(m),
            }
        }
        self.models
            .sort_by(|a, b| b.usage.cost.total_cmp(&a.usage.cost));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(total_tokens: u64, cost: f64) -> UsageTotals {
        UsageTotals {
            total_tokens,
            cost,
            records: 1,
            ..Default::default()
        }
    }

    fn model(name: &str, usage: UsageTotals) -> ModelUsage {
        ModelUsage {
            model: Some(name.into()),
            usage,
        }
    }

    fn session(id: &str, usage: UsageTotals) -> SessionUsage {
        SessionUsage {
            session_id: id.into(),
            name: id.into(),
            file: None,
            usage,
            error: None,
            host: None,
        }
    }

    #[test]
    fn reports_of_two_cores_merge_into_one() {
        let mut here = UsageReport {
            sessions: vec![session("a", totals(10, 1.0))],
            models: vec![model("m/small", totals(10, 1.0))],
            total: totals(10, 1.0),
            complete: true,
            missing: vec![],
        };
        let far = UsageReport {
            sessions: vec![
                SessionUsage {
                    host: Some("gpu".into()),
                    ..session("b", totals(30, 3.0))
                },
                SessionUsage {
                    error: Some("unreadable".into()),
                    host: Some("gpu".into()),
                    ..session("c", UsageTotals::default())
                },
            ],
            models: vec![
                model("m/small", totals(5, 0.5)),
                model("m/big", totals(25, 2.5)),
            ],
            total: totals(30, 3.0),
            complete: false,
            missing: vec![MissingUsage {
                session_id: "c".into(),
                reason: "unreadable".into(),
            }],
        };
        here.merge(far);
        assert_eq!(here.sessions.len(), 3);
        assert_eq!(here.sessions[1].host.as_deref(), Some("gpu"));
        assert_eq!((here.total.total_tokens, here.total.records), (40, 2));
        assert!(!here.complete);
        assert_eq!(here.missing.len(), 1);
        let models: Vec<(&str, u64)> = here
            .models
            .iter()
            .map(|m| (m.model.as_deref().unwrap_or("-"), m.usage.total_tokens))
            .collect();
        assert_eq!(
            models,
            [("m/big", 25), ("m/small", 15)],
            "summed by name, by cost"
        );
    }
}
