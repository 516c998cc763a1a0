//! Section 3: the paced test: 100 sessions × 119 messages a second (10 s, or 1.5 s quick), every
//! message counted exactly, in the database and delivered once and in order, with its
//! send → deliver latency.

use anyhow::Result;

use crate::Settings;
use crate::daemon::{CoreProc, ticks_to_ns};
use crate::report::{Report, mb, ms, quantile, rate, us};
use crate::ring::{Pace, Ring, Stop, run_ring};

pub async fn paced(s: &Settings, report: &mut Report) -> Result<()> {
    let n = 100;
    let per_sender = (s.paced_rate * s.paced_secs).round() as u64;
    eprintln!(
        "[bench] 3. paced: {n} sessions × {} msg/s for {} s ({per_sender} each)",
        s.paced_rate, s.paced_secs
    );
    let (core, _) = CoreProc::start()?;
    let mut ring = Ring::connect(&core.socket(), "paced", n).await?;
    let out = run_ring(
        &mut ring,
        Pace::Rate(s.paced_rate),
        Stop::PerSender(per_sender),
        &core,
    )
    .await?;
    drop(ring);
    let expected = per_sender * n as u64;
    let stored: i64 = {
        let db = rusqlite::Connection::open_with_flags(
            core.db(),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )?;
        db.query_row(
            "SELECT COUNT(*) FROM messages WHERE recipient LIKE 'paced-%'",
            [],
            |r| r.get(0),
        )?
    };
    let sec = &format!("3 paced {n}×{}/s", s.paced_rate);
    report.info(
        sec,
        "offered / achieved send rate",
        format!(
            "{} / {}",
            rate(s.paced_rate * n as f64),
            rate(out.issued as f64 / out.elapsed.as_secs_f64())
        ),
    );
    report.check(
        sec,
        "delivered (counted exactly)",
        format!("{} of {expected}", out.delivered),
        "all",
        out.delivered == expected && out.issued == expected && out.pairs_exact,
    );
    report.check(
        sec,
        "`sent` received (stored before `sent`)",
        format!("{} of {expected}", out.sent_ok),
        "all",
        out.sent_ok == expected,
    );
    report.check(
        sec,
        "rows in the database after the run",
        stored.to_string(),
        &expected.to_string(),
        stored as u64 == expected,
    );
    report.check(
        sec,
        "sampled `sent` ids already committed",
        format!(
            "{} of {}",
            out.durable_checked - out.durable_missing,
            out.durable_checked
        ),
        "all",
        out.durable_missing == 0 && out.durable_checked > 0,
    );
    report.check(
        sec,
        "duplicates / out of order",
        out.order_errors.to_string(),
        "0",
        out.order_errors == 0,
    );
    report.check(
        sec,
        "sessions cut off / error frames",
        format!("{} / {}", out.cut_off, out.errors.len()),
        "0 / 0",
        out.cut_off == 0 && out.errors.is_empty(),
    );
    let (p50, p99, p999, max) = (
        quantile(&out.latencies, 0.5),
        quantile(&out.latencies, 0.99),
        quantile(&out.latencies, 0.999),
        quantile(&out.latencies, 1.0),
    );
    report.info(
        sec,
        "send → deliver p50 / p99.9 / max",
        format!("{} / {} / {}", ms(p50), ms(p999), ms(max)),
    );
    report.row(
        sec,
        "send → deliver p99",
        ms(p99),
        "< 10 ms".into(),
        Some(p99 < 10_000_000),
    );
    report.info(
        sec,
        "core CPU: per message / share of one CPU",
        format!(
            "{} / {:.0}%",
            us((ticks_to_ns(out.core_ticks) / out.delivered.max(1) as f64) as u64),
            ticks_to_ns(out.core_ticks) / out.elapsed.as_nanos() as f64 * 100.0
        ),
    );
    report.info(
        sec,
        "bench clients CPU share of one CPU",
        format!(
            "{:.0}%",
            ticks_to_ns(out.bench_ticks) / out.elapsed.as_nanos() as f64 * 100.0
        ),
    );
    report.info(sec, "core RSS at the end", mb(out.rss_end_kb));
    if !out.errors.is_empty() {
        report.notes.push(format!("paced: {}", out.describe()));
    }
    for w in core.warnings() {
        report.notes.push(format!("core log (paced): {w}"));
    }
    Ok(())
}
