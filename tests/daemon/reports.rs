//! Reports and results against the real daemon: a run's result is kept with its kind and
//! announced to subscribers as the `results` setting says (the core's `core.results`, or
//! the session's own in the request), `asks_only` counting the asks of the run since the
//! session's previous result; everything kept is listed by `list_reports` (one session,
//! after an id, the newest few) and by `shepherd reports`, across a restart.

use std::time::Duration;

use shepherd_core::client::Client;
use shepherd_core::protocol::{
    ClientKind, ErrorCode, Report, ReportKind, ResultsMode, ServerMsg, requests,
};
use shepherd_harness::{Core, Pi, next_event_where};

async fn result(pi: &mut Pi, text: &str, results: Option<ResultsMode>) -> anyhow::Result<Report> {
    Ok(pi
        .client
        .call(requests::RunResult {
            id: 0,
            text: text.into(),
            results,
            key: None,
        })
        .await?)
}

/// The next `report_posted` event's report.
async fn next_posted(sub: &mut Client) -> anyhow::Result<Report> {
    match next_event_where(sub, Duration::from_secs(5), |m| {
        matches!(m, ServerMsg::ReportPosted { .. })
    })
    .await?
    {
        ServerMsg::ReportPosted { report } => Ok(report),
        _ => unreachable!(),
    }
}

/// Post a report and return the next announced one: a result held back before it is not it.
async fn next_announced_after_marker(pi: &mut Pi, sub: &mut Client) -> anyhow::Result<Report> {
    pi.client.report("marker").await?;
    next_posted(sub).await
}

#[tokio::test]
async fn results_are_kept_and_announced_by_default() -> anyhow::Result<()> {
    let core = Core::start().await?;
    let mut sub = core.subscriber().await?;
    let mut pi = core.pi("sess-res-1", "fix-login").await?;

    let kept = result(&mut pi, "Fixed the redirect; 214 tests pass.", None).await?;
    assert_eq!(kept.kind, ReportKind::Result);
    assert!(kept.announced);
    assert_eq!(kept.session_name, "fix-login");
    let posted = next_posted(&mut sub).await?;
    assert_eq!(posted, kept, "the event carries the kept record");

    let report = pi.client.report("halfway").await?;
    assert_eq!(report.kind, ReportKind::Report);
    assert_eq!(next_posted(&mut sub).await?, report);

    let err = result(&mut pi, "  \n", None).await.unwrap_err();
    assert_eq!(
        shepherd_harness::error_code(&err),
        Some(ErrorCode::InvalidArgument)
    );
    let mut cli = core.client(ClientKind::Cli).await?;
    let err = cli
        .call(requests::RunResult {
            id: 0,
            text: "from nowhere".into(),
            results: None,
            key: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::NotRegistered), "{err}");
    Ok(())
}

#[tokio::test]
async fn asks_only_announces_the_results_of_runs_that_asked() -> anyhow::Result<()> {
    let core = Core::start_with(&[("SHEPHERD_CORE__RESULTS", "asks_only")]).await?;
    let mut sub = core.subscriber().await?;
    let mut pi = core.pi("sess-res-2", "webapp").await?;

    // A run without an ask: kept, not announced.
    let quiet = result(&mut pi, "Refactored the parser.", None).await?;
    assert!(!quiet.announced);
    assert_eq!(
        next_announced_after_marker(&mut pi, &mut sub).await?.text,
        "marker"
    );

    // A run that asked: its result is announced.
    pi.client.ask("Squash or merge?").await?;
    let loud = result(&mut pi, "Squashed and merged as you said.", None).await?;
    assert!(loud.announced);
    assert_eq!(next_posted(&mut sub).await?, loud);

    // The next run asked nothing: held again.
    let again = result(&mut pi, "Tidied the imports.", None).await?;
    assert!(!again.announced);
    assert_eq!(
        next_announced_after_marker(&mut pi, &mut sub).await?.text,
        "marker"
    );

    // The session's own setting wins over the core's, either way.
    let all = result(&mut pi, "Everything, please.", Some(ResultsMode::All)).await?;
    assert!(all.announced);
    assert_eq!(next_posted(&mut sub).await?, all);
    pi.client.ask("Deploy?").await?;
    let off = result(&mut pi, "Deployed.", Some(ResultsMode::Off)).await?;
    assert!(!off.announced, "off holds even a run that asked");
    assert_eq!(
        next_announced_after_marker(&mut pi, &mut sub).await?.text,
        "marker"
    );
    Ok(())
}

#[tokio::test]
async fn kept_reports_are_listed_by_session_after_an_id_and_newest_last_across_a_restart()
-> anyhow::Result<()> {
    let mut core = Core::start_with(&[("SHEPHERD_CORE__RESULTS", "off")]).await?;
    let mut a = core.pi("sess-list-a", "alpha").await?;
    let mut b = core.pi("sess-list-b", "beta").await?;
    let r1 = a.client.report("a: started").await?;
    let r2 = result(&mut b, "b: done", None).await?;
    let r3 = result(&mut a, "a: done", None).await?;
    assert!(!r2.announced && !r3.announced);
    drop((a, b));
    core.restart().await?;

    let mut cli = core.client(ClientKind::Cli).await?;
    let all = cli.call(requests::ListReports::default()).await?;
    assert_eq!(
        all.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![r1.id, r2.id, r3.id],
        "oldest first"
    );
    assert_eq!(all[2].kind, ReportKind::Result);
    assert!(!all[2].announced, "held results are kept and say so");
    assert_eq!(all[1].session_name, "beta");

    let alpha = cli
        .call(requests::ListReports {
            session: Some("alpha".into()),
            ..Default::default()
        })
        .await?;
    assert_eq!(
        alpha.iter().map(|r| r.text.as_str()).collect::<Vec<_>>(),
        ["a: started", "a: done"]
    );
    let after = cli
        .call(requests::ListReports {
            after: Some(r1.id),
            ..Default::default()
        })
        .await?;
    assert_eq!(after.len(), 2);
    let newest = cli
        .call(requests::ListReports {
            limit: Some(1),
            ..Default::default()
        })
        .await?;
    assert_eq!(newest, vec![all[2].clone()]);
    let err = cli
        .call(requests::ListReports {
            session: Some("nobody".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::UnknownSession), "{err}");
    Ok(())
}

#[tokio::test]
async fn shepherd_reports_lists_them_for_people_and_as_json() -> anyhow::Result<()> {
    let core = Core::start().await?;
    let out = core.cli(&["reports"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("no reports or results yet"));

    let mut a = core.pi("sess-cli-a", "alpha").await?;
    let mut b = core.pi("sess-cli-b", "beta").await?;
    a.client
        .report("Parser done; starting on the lexer.")
        .await?;
    result(
        &mut b,
        "Fixed the login redirect.\nAll 214 tests pass; the flaky one was a timezone assumption.",
        None,
    )
    .await?;
    result(&mut a, "Lexer done too.", Some(ResultsMode::Off)).await?;

    let json = core.cli_json(&["reports"])?;
    let rows = json.as_array().expect("an array");
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[1]["kind"], "result");
    assert_eq!(rows[1]["session_name"], "beta");
    assert!(
        rows[1]["text"]
            .as_str()
            .unwrap()
            .ends_with("timezone assumption."),
        "--json has the text in full"
    );

    let out = core
        .command()
        .args(["reports", "alpha"])
        .env("COLUMNS", "60")
        .output()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout)?;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "header and alpha's two: {text}");
    assert!(lines[0].starts_with("ID  SESSION"), "{text}");
    assert!(
        lines[1].contains("alpha") && lines[1].contains("report"),
        "{text}"
    );
    assert!(
        lines[2].contains("result (held)") && lines[2].contains("Lexer done too."),
        "{text}"
    );
    for line in &lines {
        assert!(
            unicode_width::UnicodeWidthStr::width(*line) <= 60,
            "{line:?}"
        );
    }

    let out = core
        .command()
        .args(["reports", "--limit", "1"])
        .env("COLUMNS", "60")
        .output()?;
    let text = String::from_utf8(out.stdout)?;
    assert!(
        text.starts_with("… older ones too: --limit 100 shows more\n"),
        "{text}"
    );
    assert!(text.contains("Lexer done too."), "{text}");
    assert!(!text.contains("Parser done"), "{text}");
    Ok(())
}

#[tokio::test]
async fn a_result_sent_again_with_its_key_is_the_one_kept_then() -> anyhow::Result<()> {
    let core = Core::start().await?;
    let mut pi = core
        .pi("0193a5c2-0000-7000-8000-0000000000e1", "keyed")
        .await?;
    let mut sub = core.subscriber().await?;
    let keyed = |text: &str| requests::RunResult {
        id: 0,
        text: text.into(),
        results: None,
        key: Some("result:run-1".into()),
    };
    let first = pi.client.call(keyed("All green.")).await?;
    assert_eq!(next_posted(&mut sub).await?.id, first.id);
    // The reply was lost; the extension sends it again with the same key.
    let again = pi.client.call(keyed("All green.")).await?;
    assert_eq!(again, first, "the same result, not a second one");
    let marker = next_announced_after_marker(&mut pi, &mut sub).await?;
    assert_eq!(marker.text, "marker", "no second result was announced");
    let mut cli = core.client(ClientKind::Cli).await?;
    let kept = cli.call(requests::ListReports::default()).await?;
    assert_eq!(
        kept.iter().filter(|r| r.kind == ReportKind::Result).count(),
        1
    );
    Ok(())
}
