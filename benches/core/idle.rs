//! Section 8: idle: how often a core with nothing to do wakes up (context switches of all its
//! threads, voluntary and not, from `/proc/<pid>/task/*/status`) and the CPU it uses, over
//! 10 s after it has settled 3 s. The target is at most one wake-up a second.

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::Settings;
use crate::daemon::{CoreProc, cpu_ticks, ctxt_switches, ticks_to_ns, wake_ups};
use crate::report::Report;

/// How long the core may settle after start-up (its start-up writes are checkpointed).
const SETTLE: Duration = Duration::from_secs(3);
/// How long it is watched.
const WATCH: Duration = Duration::from_secs(10);

pub fn idle(_s: &Settings, report: &mut Report) -> Result<()> {
    eprintln!(
        "[bench] 8. idle: wake-ups and CPU over {} s after {} s to settle",
        WATCH.as_secs(),
        SETTLE.as_secs()
    );
    let (core, _) = CoreProc::start()?;
    std::thread::sleep(SETTLE);
    let (switches0, ticks0, t0) = (
        ctxt_switches(core.pid())?,
        cpu_ticks(core.pid())?,
        Instant::now(),
    );
    std::thread::sleep(WATCH);
    let (switches, exited) = wake_ups(&switches0, &ctxt_switches(core.pid())?);
    let ticks = cpu_ticks(core.pid())? - ticks0;
    let secs = t0.elapsed().as_secs_f64();
    let sec = "8 idle";
    let per_s = switches as f64 / secs;
    report.row(
        sec,
        &format!("wake-ups (context switches, all threads; {exited} exited) over {secs:.0} s"),
        format!("{switches} ({per_s:.1}/s)"),
        "≤ 1/s".into(),
        Some(per_s <= 1.0),
    );
    report.info(
        sec,
        "CPU per second idle",
        format!("{:.2} ms", ticks_to_ns(ticks) / secs / 1e6),
    );
    for w in core.warnings() {
        report.notes.push(format!("core log (idle): {w}"));
    }
    Ok(())
}
