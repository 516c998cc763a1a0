//! Usage from Pi session files: [`file`](mod@file) sums one file's usage records the way Pi's own
//! `get_session_stats` does; [`build`] turns the sessions in a request's scope into a
//! [`UsageReport`]: each session once (the first time its id appears), per-model rows
//! sorted by cost, the total, and every session that could not be counted in `missing`
//! with the reason (never an estimate). Blocking (file reads): call it from a blocking
//! thread, never from the hub.

pub mod file;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::protocol::{
    MissingUsage, ModelUsage, SessionId, SessionUsage, UsageReport, UsageTotals,
};

/// A session in a report's scope, as the store knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Scoped {
    pub id: SessionId,
    /// `None` when the store does not know the session at all.
    pub name: Option<String>,
    /// The session file the session last reported.
    pub file: Option<String>,
}

/// Read every scoped session's file and sum them into a report.
pub fn build(scope: &[Scoped]) -> UsageReport {
    let mut report = UsageReport {
        complete: true,
        ..UsageReport::default()
    };
    let mut seen: HashSet<&SessionId> = HashSet::new();
    let mut rows: HashMap<Option<String>, UsageTotals> = HashMap::new();
    for s in scope {
        if !seen.insert(&s.id) {
            continue;
        }
        let counted = match (&s.name, &s.file) {
            (None, _) => Err("the core does not know this session".to_string()),
            (Some(_), None) => Err(
                "the core knows no session file for it (an ephemeral session, or it \
                 never said where its file is)"
                    .to_string(),
            ),
            (Some(_), Some(path)) => file::read(Path::new(path), Some(s.id.as_str())),
        };
        let mut row = SessionUsage {
            session_id: s.id.clone(),
            name: s.name.clone().unwrap_or_default(),
            file: s.file.clone(),
            usage: UsageTotals::default(),
            error: None,
            host: None,
        };
        match counted {
            Ok(usage) => {
                row.usage = usage.total;
                report.total.add(&usage.total);
                for (model, totals) in usage.models {
                    rows.entry(model).or_default().add(&totals);
                }
            }
            Err(reason) => {
                report.complete = false;
                report.missing.push(MissingUsage {
                    session_id: s.id.clone(),
                    reason: reason.clone(),
                });
                row.error = Some(reason);
            }
        }
        report.sessions.push(row);
    }
    report.models = rows
        .into_iter()
        .map(|(model, usage)| ModelUsage { model, usage })
        .collect();
    report.models.sort_by(|a, b| {
        b.usage
            .cost
            .total_cmp(&a.usage.cost)
            .then_with(|| b.usage.total_tokens.cmp(&a.usage.total_tokens))
            // Named models first, then by name.
            .then_with(|| a.model.is_none().cmp(&b.model.is_none()))
            .then_with(|| a.model.cmp(&b.model))
    });
    report
}

#[cfg(test)]
#[allow(clippy::too_many_lines)]
mod tests;
