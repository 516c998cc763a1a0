//! Section 14: back-to-back round trips with `core.durability = "full"`, where every commit
//! waits for the disk, next to the disk's own floor: a 4 KiB write and sync in the same
//! directory, overwriting a file and appending to it. A round trip is two commits (A's
//! send; B's ack and reply), so "full − normal − 2 × sync" is what durability costs beyond
//! the syncs themselves.

use std::os::unix::fs::FileExt as _;
use std::path::Path;

use anyhow::Result;

use crate::daemon::CoreProc;
use crate::latency::round_trips;
use crate::report::{Report, quantile, us};
use crate::{Settings, now_ns};

/// p50 of writing 4 KiB at successive offsets of a file and syncing it: over bytes already
/// there (`append == false`, the file keeps its size) or past its end (the size changes, so
/// the file system commits its metadata too).
fn sync_floor(dir: &Path, append: bool, n: usize) -> Result<u64> {
    let path = dir.join(if append {
        "append.bin"
    } else {
        "overwrite.bin"
    });
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)?;
    let page = [7u8; 4096];
    if !append {
        for i in 0..n {
            file.write_all_at(&page, (i * page.len()) as u64)?;
        }
        file.sync_all()?;
    }
    let mut lat = Vec::with_capacity(n);
    for i in 0..n {
        let t0 = now_ns();
        file.write_all_at(&page, (i * page.len()) as u64)?;
        file.sync_data()?;
        lat.push(now_ns() - t0);
    }
    drop(file);
    std::fs::remove_file(&path)?;
    lat.sort_unstable();
    Ok(quantile(&lat, 0.5))
}

/// `normal_p50`: section 1's round trip p50 with the default durability, when it ran.
pub async fn durable(s: &Settings, normal_p50: Option<u64>, report: &mut Report) -> Result<()> {
    let (warmup, samples) = if s.quick { (50, 300) } else { (500, 5_000) };
    eprintln!("[bench] 14. durability = \"full\": {samples} + {warmup} warm-up round trips");
    let (core, _) = CoreProc::start_with(&[("SHEPHERD_CORE__DURABILITY", "full")])?;
    let mut lat = round_trips(&core.socket(), false, 0, warmup, samples).await?;
    lat.sort_unstable();
    let n = if s.quick { 100 } else { 1_000 };
    let overwrite = sync_floor(core.dir.path(), false, n)?;
    let append = sync_floor(core.dir.path(), true, n)?;
    let warnings = core.warnings();
    drop(core);
    let sec = "14 durability=full";
    let (p50, p99) = (quantile(&lat, 0.5), quantile(&lat, 0.99));
    report.info(
        sec,
        &format!(
            "round trip p50 / p99 (two commits, each synced), n={}",
            lat.len()
        ),
        format!("{} / {}", us(p50), us(p99)),
    );
    report.info(
        sec,
        &format!("disk floor: 4 KiB write + sync p50, overwriting / appending, n={n}"),
        format!("{} / {}", us(overwrite), us(append)),
    );
    if let Some(normal) = normal_p50 {
        report.info(
            sec,
            "full p50 − normal p50 (section 1): what the syncs add",
            us(p50.saturating_sub(normal)),
        );
        let beyond = p50 as i64 - normal as i64 - 2 * overwrite as i64;
        report.info(
            sec,
            "full − normal − 2 × overwrite sync: beyond the syncs themselves",
            format!("{:.1} µs", beyond as f64 / 1000.0),
        );
    }
    for w in warnings {
        report
            .notes
            .push(format!("core log (durability=full): {w}"));
    }
    Ok(())
}
