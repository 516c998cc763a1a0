//! Section 9: a session that is away and piles up mail. Steers to it by name (the CLI's
//! `shepherd send <name>`) are timed while its backlog is small and again near the bound
//! (`core.limits.max_pending_per_session`, 10,000 by default): a send's cost should not
//! grow with the receiver's backlog. The send past the bound must be refused.

use std::time::Instant;

use anyhow::{Result, bail};
use shepherd_core::client::{Client, ClientError};
use shepherd_core::protocol::{ClientKind, ErrorCode, requests};

use crate::Settings;
use crate::daemon::CoreProc;
use crate::report::Report;

/// The default bound; the section fills the backlog up to it.
const BOUND: usize = 10_000;
/// Sends timed at each end.
const SAMPLE: usize = 1_000;

async fn send(cli: &mut Client, i: usize) -> Result<(), ClientError> {
    cli.call(requests::Send {
        id: 0,
        to: "away".into(),
        text: format!("steer {i}: run the full test suite before you push"),
        by: None,
        host: None,
    })
    .await
    .map(|_| ())
}

pub async fn backlog(s: &Settings, report: &mut Report) -> Result<()> {
    eprintln!("[bench] 9. backlog: steers to a session that is away, up to {BOUND}");
    let (core, _) = CoreProc::start()?;
    let mut pi = Client::connect(&core.socket(), ClientKind::Pi, "bench").await?;
    pi.register(crate::wire::registration("bench-away", "away", "/tmp"))
        .await?;
    drop(pi);
    let mut cli = Client::connect(&core.socket(), ClientKind::Cli, "bench").await?;
    let total = if s.quick { 2 * SAMPLE } else { BOUND };
    let mut rates = Vec::new();
    let mut i = 0;
    while i < total {
        let timed = i < SAMPLE || i >= total - SAMPLE;
        let n = if timed { SAMPLE } else { total - 2 * SAMPLE };
        let t = Instant::now();
        for _ in 0..n {
            send(&mut cli, i).await?;
            i += 1;
        }
        if timed {
            rates.push(n as f64 / t.elapsed().as_secs_f64());
        }
    }
    let (early, late) = (rates[0], rates[rates.len() - 1]);
    report.info(
        "9 backlog",
        &format!("sends/s by name, backlog 0–{SAMPLE}"),
        format!("{early:.0}"),
    );
    report.row(
        "9 backlog",
        &format!("sends/s by name, backlog {}–{total}", total - SAMPLE),
        format!("{late:.0}"),
        "≥ 50% of the first".into(),
        Some(late >= early / 2.0),
    );
    if !s.quick {
        match send(&mut cli, i).await {
            Err(e) if e.code() == Some(ErrorCode::LimitExceeded) => {}
            other => bail!("send {} past the bound: {other:?}", i + 1),
        }
        report.info(
            "9 backlog",
            "the send past the bound",
            "limit_exceeded".into(),
        );
    }
    drop(core);
    Ok(())
}
