//! Section 2: throughput with 1, 10 and 100 connected sessions, each sender with a bounded window
//! of outstanding sends, measured as deliveries a second after a warm-up.

use anyhow::Result;

use crate::Settings;
use crate::daemon::{CoreProc, ticks_to_ns};
use crate::report::{Report, ms, quantile, rate, us};
use crate::ring::{Pace, Ring, Stop, run_ring};

pub async fn throughput(s: &Settings, report: &mut Report) -> Result<()> {
    let (core, _) = CoreProc::start()?;
    let sec = "2 throughput";
    for n in [1usize, 10, 100] {
        eprintln!(
            "[bench] 2. throughput: {n} session(s), window {} per sender, {:?} measured",
            s.window, s.tp_measure
        );
        let mut ring = Ring::connect(&core.socket(), &format!("tp{n}"), n).await?;
        let out = run_ring(
            &mut ring,
            Pace::Window(s.window),
            Stop::Timed {
                warmup: s.tp_warmup,
                measure: s.tp_measure,
            },
            &core,
        )
        .await?;
        drop(ring);
        let label = if n == 1 {
            "1 session (steered by a CLI client)".to_string()
        } else {
            format!("{n} sessions (ring: i → i+1)")
        };
        let per_s = out.measured_rate.unwrap_or(0.0);
        if n == 100 {
            report.row(
                sec,
                &label,
                rate(per_s),
                "≥ 11.9k msg/s (paced load)".into(),
                Some(per_s >= 11_900.0),
            );
        } else {
            report.info(sec, &label, rate(per_s));
        }
        report.info(
            sec,
            &format!("  {n}: send→deliver p50 / p99 at saturation"),
            format!(
                "{} / {}",
                ms(quantile(&out.latencies, 0.5)),
                ms(quantile(&out.latencies, 0.99))
            ),
        );
        report.info(
            sec,
            &format!("  {n}: CPU per message core / bench clients"),
            format!(
                "{} / {}",
                us((ticks_to_ns(out.core_ticks) / out.delivered.max(1) as f64) as u64),
                us((ticks_to_ns(out.bench_ticks) / out.delivered.max(1) as f64) as u64)
            ),
        );
        report.check(
            sec,
            &format!("  {n}: every send answered and delivered once, in order"),
            format!("{} / {}", out.delivered, out.issued),
            "all, no errors",
            out.clean(),
        );
        if !out.clean() {
            report
                .notes
                .push(format!("throughput {n}: {}", out.describe()));
        }
    }
    for w in core.warnings() {
        report.notes.push(format!("core log (throughput): {w}"));
    }
    Ok(())
}
