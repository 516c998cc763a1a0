//! # `shepherd usage`
//!
//! Tokens and cost from Pi's session files, as the core sums them (`usage`): every session
//! it knows a session file of, or one session's tree (`shepherd usage <session>`: the
//! session and the managed workers it owns). For people: a line per session, a row per
//! model (highest cost first), the total, and `coverage incomplete: …` with each session
//! that could not be counted and why (nothing is estimated). With linked hosts, every
//! machine's sessions in one report (a HOST column; `--host NAME` for one machine's).
//! With `--json`: the protocol's `UsageReport` unchanged.

use std::process::ExitCode;

use shepherd_core::protocol::{UsageReport, UsageTotals, requests};

use super::format::{here_or, short_id};
use super::table::{Align, Table};
use super::{Ctx, UsageArgs, print, print_json, terminal_width};

/// Run `shepherd usage`.
pub async fn run(ctx: &Ctx, args: &UsageArgs) -> anyhow::Result<ExitCode> {
    // `gpu:train-7` names a session on a linked host.
    let (host, session) = super::host_and_session(args.session.as_deref(), args.host.as_deref())
        .map_err(anyhow::Error::msg)?;
    let mut conn = ctx.connect().await?;
    let make = |host| requests::Usage {
        session: session.clone(),
        host,
        ..Default::default()
    };
    let report = match (&host, &session) {
        // Everything: this machine's and every linked host's, as one report.
        (None, None) => conn.herd_merged(make, UsageReport::merge).await?,
        _ => conn.call(make(host.clone())).await?,
    };
    if ctx.json {
        print_json(&report)?;
    } else {
        print(&render(&report, terminal_width()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// US dollars, to the micro-dollar (Pi's prices are per million tokens).
fn dollars(cost: f64) -> String {
    format!("${cost:.6}")
}

/// The token and cost cells of one row.
fn cells(t: &UsageTotals) -> Vec<String> {
    vec![
        t.input.to_string(),
        t.output.to_string(),
        t.cache_read.to_string(),
        t.cache_write.to_string(),
        t.total_tokens.to_string(),
        dollars(t.cost),
    ]
}

fn with_numbers(table: Table) -> Table {
    table
        .column("INPUT", Align::Right)
        .column("OUTPUT", Align::Right)
        .column("CACHE READ", Align::Right)
        .column("CACHE WRITE", Align::Right)
        .column("TOTAL", Align::Right)
        .column("COST", Align::Right)
}

/// The human form: sessions, models, total, and what could not be counted.
pub fn render(report: &UsageReport, width: usize) -> String {
    if report.sessions.is_empty() {
        return "no sessions to count: the core knows no session file yet (Pi writes one \
                from a session's first message on)\n"
            .to_string();
    }
    let hosts = report.sessions.iter().any(|s| s.host.is_some());
    let mut sessions = Table::new();
    if hosts {
        sessions = sessions.column("HOST", Align::Left);
    }
    let mut sessions = with_numbers(sessions.middle("SESSION", 10).column("ID", Align::Left));
    for s in &report.sessions {
        let host = hosts.then(|| here_or(&s.host));
        let mut row: Vec<String> = host
            .into_iter()
            .chain([s.name.clone(), short_id(s.session_id.as_str()).to_string()])
            .collect();
        match &s.error {
            None => row.extend(cells(&s.usage)),
            Some(_) => row.extend(["not counted".to_string()]),
        }
        sessions.row(row);
    }
    let mut out = sessions.render(width);
    if !report.models.is_empty() {
        let mut models = with_numbers(Table::new().middle("MODEL", 12));
        for m in &report.models {
            let name = m
                .model
                .clone()
                .unwrap_or_else(|| "(no model recorded)".to_string());
            let mut row = vec![name];
            row.extend(cells(&m.usage));
            models.row(row);
        }
        out.push('\n');
        out.push_str(&models.render(width));
    }
    let t = &report.total;
    out.push_str(&format!(
        "\ntotal: {} · {} tokens (input {}, output {}, cache read {}, cache write {})\n",
        dollars(t.cost),
        t.total_tokens,
        t.input,
        t.output,
        t.cache_read,
        t.cache_write,
    ));
    if !report.complete {
        out.push_str(&format!(
            "coverage incomplete: {} session{} not counted (the totals leave {} out)\n",
            report.missing.len(),
            if report.missing.len() == 1 { "" } else { "s" },
            if report.missing.len() == 1 {
                "it"
            } else {
                "them"
            },
        ));
        for m in &report.missing {
            let name = report
                .sessions
                .iter()
                .find(|s| s.session_id == m.session_id)
                .map(|s| s.name.as_str())
                .filter(|n| !n.is_empty())
                .unwrap_or("?");
            out.push_str(&format!("  {name} ({}): {}\n", m.session_id, m.reason));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::protocol::{MissingUsage, ModelUsage, SessionUsage};
    use unicode_width::UnicodeWidthStr;

    fn totals(input: u64, cost: f64) -> UsageTotals {
        UsageTotals {
            input,
            output: 10,
            cache_read: 0,
            cache_write: 0,
            total_tokens: input + 10,
            cost,
            records: 1,
        }
    }

    #[test]
    fn sessions_models_total_and_what_was_not_counted() {
        let report = UsageReport {
            sessions: vec![
                SessionUsage {
                    session_id: "0193a5c2-7d1e-7b8a".into(),
                    name: "fix-login".into(),
                    file: Some("/s/a.jsonl".into()),
                    usage: totals(1234, 0.003702),
                    error: None,
                    host: None,
                },
                SessionUsage {
                    session_id: "0193a5c3-0000-7b8a".into(),
                    name: "scout-1".into(),
                    file: Some("/s/b.jsonl".into()),
                    usage: UsageTotals::default(),
                    error: Some("/s/b.jsonl: line 7 is not a session entry".into()),
                    host: None,
                },
            ],
            models: vec![
                ModelUsage {
                    model: Some("fake/fake-model".into()),
                    usage: totals(1234, 0.003702),
                },
                ModelUsage {
                    model: None,
                    usage: totals(0, 0.0),
                },
            ],
            total: totals(1234, 0.003702),
            complete: false,
            missing: vec![MissingUsage {
                session_id: "0193a5c3-0000-7b8a".into(),
                reason: "/s/b.jsonl: line 7 is not a session entry".into(),
            }],
        };
        let out = render(&report, 100);
        for line in out.lines().filter(|l| !l.starts_with("  ")) {
            assert!(line.width() <= 100, "{line:?}");
        }
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0].starts_with("SESSION") && lines[0].ends_with("COST"),
            "{out}"
        );
        assert!(
            lines[1].starts_with("fix-login")
                && lines[1].contains("1234")
                && lines[1].ends_with("$0.003702"),
            "{out}"
        );
        assert!(
            lines[2].starts_with("scout-1") && lines[2].ends_with("not counted"),
            "{out}"
        );
        assert!(lines[4].starts_with("MODEL"), "{out}");
        assert!(lines[5].starts_with("fake/fake-model"), "{out}");
        assert!(lines[6].starts_with("(no model recorded)"), "{out}");
        assert!(
            out.contains("\ntotal: $0.003702 · 1244 tokens (input 1234, output 10, cache read 0, cache write 0)\n"),
            "{out}"
        );
        assert!(
            out.contains("coverage incomplete: 1 session not counted (the totals leave it out)\n  scout-1 (0193a5c3-0000-7b8a): /s/b.jsonl: line 7 is not a session entry\n"),
            "{out}"
        );
    }

    #[test]
    fn nothing_to_count_says_so() {
        let out = render(
            &UsageReport {
                complete: true,
                ..UsageReport::default()
            },
            80,
        );
        assert!(out.starts_with("no sessions to count"), "{out}");
    }
}
