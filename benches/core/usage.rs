//! Section 10: usage from a 10 MB Pi session file. The file is the recorded real Pi session
//! (`tests/fixtures/sessions/worker.jsonl`) with its entries repeated after the header
//! until it passes 10 MB. Measured: the parse alone (`shepherd_core::usage::file::read`,
//! in this process, best and median of several runs) and a `usage` request to the real
//! core for that session (the file is read on the core's blocking thread). Both must
//! count exactly the records the copies hold.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use shepherd_core::client::Client;
use shepherd_core::protocol::{ClientKind, Registration, requests};

use crate::Settings;
use crate::daemon::CoreProc;
use crate::report::{Report, bytes, ms, quantile};

const SIZE: usize = 10 * 1024 * 1024;
const SESSION: &str = "bench-usage-0000-7000-8000-000000000010";

/// The 10 MB file, and how many usage records it holds.
fn big_file(dir: &std::path::Path) -> Result<(PathBuf, u64)> {
    let recorded =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sessions/worker.jsonl");
    let text = std::fs::read_to_string(&recorded)?;
    let (head, body) = text.split_once('\n').context("empty recording")?;
    let mut header: serde_json::Value = serde_json::from_str(head)?;
    header["id"] = SESSION.into();
    let per_copy = shepherd_core::usage::file::parse(text.as_bytes())
        .map_err(anyhow::Error::msg)?
        .total
        .records;
    let mut out = format!("{header}\n");
    let mut copies = 0;
    while out.len() < SIZE {
        out.push_str(body);
        copies += 1;
    }
    let path = dir.join("big.jsonl");
    std::fs::write(&path, out)?;
    Ok((path, per_copy * copies))
}

pub async fn usage(s: &Settings, report: &mut Report) -> Result<()> {
    eprintln!("[bench] 10. usage: a 10 MB session file");
    let dir = tempfile::tempdir()?;
    let (path, records) = big_file(dir.path())?;
    let size = std::fs::metadata(&path)?.len();
    let runs = if s.quick { 3 } else { 15 };
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let usage =
            shepherd_core::usage::file::read(&path, Some(SESSION)).map_err(anyhow::Error::msg)?;
        times.push(t.elapsed().as_nanos() as u64);
        if usage.total.records != records {
            report.failures.push(format!(
                "10 usage: parsed {} records, the file holds {records}",
                usage.total.records
            ));
        }
    }
    times.sort_unstable();
    let median = quantile(&times, 0.5);
    report.info("10 usage", "session file size", bytes(size));
    report.info("10 usage", "usage records in it", records.to_string());
    report.info("10 usage", "parse, best", ms(times[0]));
    report.row(
        "10 usage",
        "parse, median",
        ms(median),
        "≤ 100 ms".into(),
        Some(median <= 100_000_000),
    );
    report.info(
        "10 usage",
        "parse throughput (median)",
        format!("{:.0} MB/s", size as f64 / (median as f64 / 1e9) / 1e6),
    );

    let (core, _) = CoreProc::start()?;
    let mut pi = Client::connect(&core.socket(), ClientKind::Pi, "bench").await?;
    pi.register(Registration {
        session_id: SESSION.into(),
        name: Some("big".into()),
        cwd: "/tmp".into(),
        pid: None,
        model: None,
        context: Default::default(),
        status: "idle".into(),
        role: Default::default(),
        session_file: Some(path.to_string_lossy().into_owned()),
        subagent: false,
        launch: None,
    })
    .await?;
    let mut cli = Client::connect(&core.socket(), ClientKind::Cli, "bench").await?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let got = cli
            .call(requests::Usage {
                session: Some(SESSION.into()),
                ..Default::default()
            })
            .await?;
        times.push(t.elapsed().as_nanos() as u64);
        if !got.complete || got.total.records != records {
            report.failures.push(format!(
                "10 usage: the core counted {} records (complete: {}), the file holds {records}",
                got.total.records, got.complete
            ));
        }
    }
    times.sort_unstable();
    report.info(
        "10 usage",
        "`usage` request to the core, median",
        ms(quantile(&times, 0.5)),
    );
    drop(pi);
    Ok(())
}
