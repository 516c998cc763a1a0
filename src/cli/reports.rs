//! # `shepherd reports`
//!
//! Lists what sessions reported and the results of their runs (a run's final text), as
//! the core keeps them: oldest first so the newest is last, the newest `--limit` (20) of
//! them, all sessions or one (`shepherd reports <session>`); a linked host's with `--host
//! gpu` or `shepherd reports gpu:<session>` (in a HOST column). A table for people with the
//! session's name, the kind (`report`, `result`, or `result (held)` for a result the
//! `results` setting kept off the phone), the time and the text on one line cut to the
//! terminal; with `--json` the protocol's `Report` objects unchanged, text in full.

use std::process::ExitCode;

use shepherd_core::protocol::{Report, ReportKind, requests};

use super::format::{ago, here_or, now_ms, utc};
use super::table::{Align, Table};
use super::{Ctx, ReportsArgs, print, print_json, terminal_width};

/// Run `shepherd reports`.
pub async fn run(ctx: &Ctx, args: &ReportsArgs) -> anyhow::Result<ExitCode> {
    // `gpu:train-7` names a session on a linked host; `--host gpu` all of gpu's.
    let (host, session) = super::host_and_session(args.session.as_deref(), args.host.as_deref())
        .map_err(anyhow::Error::msg)?;
    let mut conn = ctx.connect().await?;
    // One more than shown says whether older ones exist.
    let mut reports = conn
        .call(requests::ListReports {
            session: session.clone(),
            limit: Some(args.limit.saturating_add(1)),
            host: host.clone(),
            ..Default::default()
        })
        .await?;
    let older = reports.len() > args.limit as usize;
    if older {
        reports.remove(0);
    }
    if ctx.json {
        print_json(&reports)?;
    } else if reports.is_empty() {
        let text = match (&args.session, &host) {
            (Some(s), _) => format!("no reports or results from {s} yet\n"),
            (None, Some(h)) => format!("no reports or results on {h} yet\n"),
            (None, None) => {
                "no reports or results yet: sessions post them with the report tool, and \
                 each run's final text is kept as its result\n"
                    .to_string()
            }
        };
        print(&text)?;
    } else {
        let mut text = String::new();
        if older {
            text.push_str(&format!(
                "… older ones too: --limit {} shows more\n",
                args.limit.saturating_mul(5).max(100)
            ));
        }
        text.push_str(&render(&reports, terminal_width(), now_ms()));
        print(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `report`, `result`, or `result (held)` when the `results` setting kept it off the phone.
fn kind(report: &Report) -> &'static str {
    match (report.kind, report.announced) {
        (ReportKind::Report, _) => "report",
        (ReportKind::Result, true) => "result",
        (ReportKind::Result, false) => "result (held)",
    }
}

/// The human table: one line per report, the text's lines joined and cut to `width`; a
/// HOST column for a linked host's.
pub fn render(reports: &[Report], width: usize, now: u64) -> String {
    let hosts = reports.iter().any(|r| r.host.is_some());
    let mut table = Table::new();
    if hosts {
        table = table.column("HOST", Align::Left);
    }
    let mut table = table
        .column("ID", Align::Right)
        .flexible("SESSION", 10)
        .column("KIND", Align::Left)
        .column("TIME", Align::Left)
        .flexible("TEXT", 12);
    for report in reports {
        let when = if now.saturating_sub(report.created_at) < 24 * 3600 * 1000 {
            ago(report.created_at, now)
        } else {
            utc(report.created_at)
        };
        let host = hosts.then(|| here_or(&report.host));
        table.row(
            host.into_iter()
                .chain([
                    report.id.to_string(),
                    report.session_name.clone(),
                    kind(report).to_string(),
                    when,
                    report.text.split_whitespace().collect::<Vec<_>>().join(" "),
                ])
                .collect(),
        );
    }
    table.render(width)
}

#[cfg(test)]
mod tests {
    use super::*;
    use unicode_width::UnicodeWidthStr;

    fn report(id: u64, kind: ReportKind, announced: bool, text: &str) -> Report {
        Report {
            id,
            session_id: "0193a5c2".into(),
            session_name: "fix-login".into(),
            text: text.into(),
            created_at: 1_796_130_379_000,
            kind,
            announced,
            host: None,
        }
    }

    #[test]
    fn one_line_each_cut_to_the_terminal() {
        let long = "Fixed the login redirect.\n\nAll 214 tests pass; the flaky one in auth_test.go \
                    was a timezone assumption, now pinned to UTC.";
        let rows = [
            report(3, ReportKind::Report, true, "Halfway: parser done."),
            report(4, ReportKind::Result, true, long),
            report(5, ReportKind::Result, false, "quiet"),
        ];
        let out = render(&rows, 80, 1_796_130_379_000 + 120_000);
        for line in out.lines() {
            assert!(line.width() <= 80, "{line:?}");
        }
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4, "{out}");
        assert!(lines[0].starts_with("ID  SESSION    KIND"), "{out}");
        assert!(
            lines[1].contains("report") && lines[1].contains("2m ago"),
            "{out}"
        );
        assert!(
            lines[2].contains("result") && lines[2].contains("Fixed the login redirect. All 214"),
            "{out}"
        );
        assert!(lines[2].ends_with('…'), "{out}");
        assert!(lines[3].contains("result (held)"), "{out}");
    }
}
