//! Section 6: start-up: time from spawning `shepherd up` on a fresh directory to its first
//! `welcome`, median of several starts; and the size of the binary started.

use anyhow::Result;

use crate::Settings;
use crate::daemon::{CoreProc, shepherd_bin};
use crate::report::{Report, bytes, ms, quantile};

pub fn startup(s: &Settings, report: &mut Report) -> Result<()> {
    eprintln!(
        "[bench] 6. start-up: {} starts on fresh directories",
        s.startups
    );
    let mut times = Vec::new();
    for _ in 0..s.startups {
        let (core, t) = CoreProc::start()?;
        times.push(t.as_nanos() as u64);
        drop(core);
    }
    times.sort_unstable();
    let median = quantile(&times, 0.5);
    report.row(
        "6 start-up",
        &format!("spawn → first welcome, median of {}", times.len()),
        ms(median),
        "< 20 ms".into(),
        Some(median < 20_000_000),
    );
    report.info(
        "6 start-up",
        "min / max",
        format!("{} / {}", ms(times[0]), ms(times[times.len() - 1])),
    );
    // Release builds carry no debug info (Cargo.toml's profile): 346 MB before, 80 MiB with
    // both phone bridges.
    let size = std::fs::metadata(shepherd_bin())?.len();
    report.row(
        "6 start-up",
        &format!("size of the binary ({})", shepherd_bin().display()),
        bytes(size),
        "< 100 MB".into(),
        Some(size < 100_000_000),
    );
    Ok(())
}
