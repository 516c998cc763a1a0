//! 4 and 5. The core's CPU per routed message early and after history has grown, its
//! RSS idle, with 100 sessions and after 10k messages; and 7, the size of its database
//! and WAL after the 10k-message run, and after the history run and 2 s without writes
//! (the checkpointer truncates the WAL after 1 s quiet).

use std::time::Duration;

use anyhow::Result;

use crate::Settings;
use crate::daemon::{CoreProc, rss_kb, store_bytes, ticks_to_ns};
use crate::report::{Report, bytes, mb, us};
use crate::ring::{Pace, Ring, Stop, run_ring};

/// How long the core is left without writes before the store's size is read again.
const QUIET: Duration = Duration::from_secs(2);

pub async fn cpu_and_rss(s: &Settings, report: &mut Report) -> Result<()> {
    eprintln!(
        "[bench] 4/5. RSS and CPU per message: 100 sessions, {} messages early, history to {}",
        s.cpu_window, s.history
    );
    let (core, _) = CoreProc::start()?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let idle = rss_kb(core.pid())?;
    let mut ring = Ring::connect(&core.socket(), "hist", 100).await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let with_100 = rss_kb(core.pid())?;
    let pace = Pace::Window(16);
    let first = run_ring(&mut ring, pace, Stop::Count(10_000), &core).await?;
    let after_10k = first.rss_end_kb;
    let store_10k = store_bytes(&core);
    let (mut early_msgs, mut early_ticks) = (first.delivered, first.core_ticks);
    let mut clean = first.clean();
    if s.cpu_window > 10_000 {
        let rest = run_ring(&mut ring, pace, Stop::Count(s.cpu_window - 10_000), &core).await?;
        early_msgs += rest.delivered;
        early_ticks += rest.core_ticks;
        clean &= rest.clean();
    }
    let early = ticks_to_ns(early_ticks) / early_msgs as f64;
    let mut total = early_msgs;
    while total < s.history {
        let chunk = (s.history - total).min(50_000);
        let grow = run_ring(&mut ring, pace, Stop::Count(chunk), &core).await?;
        clean &= grow.clean();
        total += grow.delivered;
        eprintln!("[bench]   history: {total} messages");
    }
    let late_run = run_ring(&mut ring, pace, Stop::Count(s.cpu_window), &core).await?;
    clean &= late_run.clean();
    let late = ticks_to_ns(late_run.core_ticks) / late_run.delivered as f64;
    let after_all = late_run.rss_end_kb;
    drop(ring);
    let rows: i64 = {
        let db = rusqlite::Connection::open_with_flags(
            core.db(),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )?;
        db.query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))?
    };
    // The checkpointer truncates the WAL after 1 s without a commit.
    tokio::time::sleep(QUIET).await;
    let store_quiet = store_bytes(&core);

    let sec = "4 CPU / message";
    report.info(
        sec,
        &format!("early: messages 0–{}k", s.cpu_window / 1000),
        us(early as u64),
    );
    report.info(
        sec,
        &format!(
            "late: messages {}k–{}k ({rows} rows)",
            total / 1000,
            (total + late_run.delivered) / 1000
        ),
        us(late as u64),
    );
    let ratio = late / early;
    report.row(
        sec,
        "late ÷ early",
        format!("{ratio:.2}×"),
        "flat: ≤ 1.25×".into(),
        Some(ratio <= 1.25),
    );
    report.check(
        sec,
        "every message delivered once, in order",
        if clean { "yes".into() } else { "no".into() },
        "yes",
        clean,
    );

    let sec = "5 RSS";
    report.info(sec, "idle", mb(idle));
    report.info(sec, "100 sessions connected", mb(with_100));
    report.row(
        sec,
        "100 sessions, after 10k messages",
        mb(after_10k),
        "< 20 MB".into(),
        Some(after_10k < 20 * 1024),
    );
    report.info(
        sec,
        &format!("after {}k messages", (total + late_run.delivered) / 1000),
        mb(after_all),
    );

    let sec = "7 store size";
    report.info(
        sec,
        "database / WAL after 10k messages",
        format!("{} / {}", bytes(store_10k.0), bytes(store_10k.1)),
    );
    report.row(
        sec,
        &format!(
            "database / WAL after {}k messages and {} s quiet",
            (total + late_run.delivered) / 1000,
            QUIET.as_secs()
        ),
        format!("{} / {}", bytes(store_quiet.0), bytes(store_quiet.1)),
        "WAL truncated (0 B)".into(),
        Some(store_quiet.1 == 0),
    );
    for w in core.warnings() {
        report.notes.push(format!("core log (history): {w}"));
    }
    Ok(())
}
