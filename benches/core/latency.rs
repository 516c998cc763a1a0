//! Section 1: round trips: A → core → B → core → A between two registered Pi sessions, next to the
//! same client code through the relay (the floor) and the storing relay (the floor of a
//! broker that stores before it acknowledges), alternating in rounds; and `ping` →
//! `pong` as a diagnostic. The loops write the hand-encoded frames of [`crate::wire`] on
//! the raw socket (the relay speaks no protocol, and the client's cost is part of what is
//! measured); only the sessions' setup uses the typed client.

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result, bail};
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;

use crate::daemon::{CoreProc, cpu_ticks, store_bytes, ticks_to_ns};
use crate::relay::Relay;
use crate::report::{Report, bytes, quantile, us};
use crate::wire::{FrameReader, In, connect, parse, push_ack, push_frame, push_send, stamp};
use crate::{Settings, now_ns};

/// A sends to B and waits for B's answer; B acks each delivery and sends back at once.
/// Returns the measured round trips in ns. Through the core (`relay == false`) A and B
/// are registered Pi sessions; through the relay they write the very same frames.
pub async fn round_trips(
    socket: &Path,
    relay: bool,
    round: usize,
    warmup: usize,
    samples: usize,
) -> Result<Vec<u64>> {
    let total = (warmup + samples) as u64;
    let (name_a, name_b) = (format!("rtt{round}-a"), format!("rtt{round}-b"));
    let to_a = name_a.clone();
    let ((mut ra, mut wa), (mut rb, mut wb)) = if relay {
        let a = UnixStream::connect(socket).await?.into_split();
        let b = UnixStream::connect(socket).await?.into_split();
        ((FrameReader::new(a.0), a.1), (FrameReader::new(b.0), b.1))
    } else {
        let a = connect(socket, Some(&name_a)).await?;
        let b = connect(socket, Some(&name_b)).await?;
        (a, b)
    };
    let peer_b = tokio::spawn(async move {
        let mut buf = Vec::with_capacity(1024);
        let mut request = 1_000_000u64;
        loop {
            let body = rb.next().await?.context("B: connection closed")?;
            let (ack, text) = match parse(body)? {
                In::Deliver { id, text } => (id, text),
                In::Peer { text } => (stamp(&text).0, text),
                In::Error { code, message } => bail!("B got error {code}: {message}"),
                _ => continue,
            };
            let (seq, t) = stamp(&text);
            buf.clear();
            push_ack(&mut buf, &[ack]);
            push_send(&mut buf, request, &to_a, seq, t);
            request += 1;
            wb.write_all(&buf).await?;
            if seq + 1 == total {
                return Ok::<_, anyhow::Error>(());
            }
        }
    });
    let mut lat = Vec::with_capacity(samples);
    let mut buf = Vec::with_capacity(1024);
    let mut ack: Option<u64> = None;
    for seq in 0..total {
        buf.clear();
        if let Some(id) = ack.take() {
            push_ack(&mut buf, &[id]);
        }
        let t0 = now_ns();
        push_send(&mut buf, seq, &name_b, seq, t0);
        wa.write_all(&buf).await?;
        loop {
            let body = ra.next().await?.context("A: connection closed")?;
            match parse(body)? {
                In::Deliver { id, text } if stamp(&text).0 == seq => {
                    ack = Some(id);
                    break;
                }
                In::Peer { text } if stamp(&text).0 == seq => {
                    ack = Some(seq);
                    break;
                }
                In::Error { code, message } => bail!("A got error {code}: {message}"),
                _ => {}
            }
        }
        if seq >= warmup as u64 {
            lat.push(now_ns() - t0);
        }
    }
    peer_b.await??;
    Ok(lat)
}

/// `ping` → `pong` on one CLI connection: one hop through the core's connection task and
/// hub and back, with nothing to store (a diagnostic next to the round trip). The loop
/// writes a hand-encoded `ping` on the raw socket rather than `Client::ping`, so the
/// client's share of the number stays what the round trips pay.
pub async fn pings(socket: &Path, warmup: usize, samples: usize) -> Result<Vec<u64>> {
    let (mut rd, mut wr) = connect(socket, None).await?;
    let mut lat = Vec::with_capacity(samples);
    let mut buf = Vec::with_capacity(64);
    for i in 0..warmup + samples {
        buf.clear();
        let id = 100 + i as u64;
        push_frame(&mut buf, |b| {
            let _ = write!(b, r#"{{"type":"ping","id":{id}}}"#);
        });
        let t0 = now_ns();
        wr.write_all(&buf).await?;
        loop {
            let body = rd.next().await?.context("closed during pings")?;
            match parse(body)? {
                In::Pong => break,
                In::Error { code, message } => bail!("ping got error {code}: {message}"),
                _ => {}
            }
        }
        if i >= warmup {
            lat.push(now_ns() - t0);
        }
    }
    lat.sort_unstable();
    Ok(lat)
}

/// Returns the core's round trip p50 (section 14 compares against it).
pub async fn latency(s: &Settings, report: &mut Report) -> Result<u64> {
    eprintln!(
        "[bench] 1. round trips: {} + {} warm-up through the core, then the relay",
        s.rtt_samples, s.rtt_warmup
    );
    let (core, _) = CoreProc::start()?;
    let relay = Relay::start(false)?;
    let storing = Relay::start(true)?;
    // Alternate core and relays in rounds so that drifting noise on a shared machine
    // falls on all alike.
    let rounds = if s.quick { 2 } else { 4 };
    let (mut core_lat, mut relay_lat, mut storing_lat) = (Vec::new(), Vec::new(), Vec::new());
    // CPU each process spent on its rounds (warm-up included), for the split below.
    let (mut core_cpu, mut relay_cpu, mut storing_cpu, mut trips) = (0, 0, 0, 0);
    let mut wal_most = 0;
    for round in 0..rounds {
        let (warm, n) = (s.rtt_warmup / rounds, s.rtt_samples / rounds);
        let before = cpu_ticks(core.pid())?;
        core_lat.extend(round_trips(&core.socket(), false, round, warm, n).await?);
        core_cpu += cpu_ticks(core.pid())? - before;
        // The WAL as the round trips left it (it is truncated only once quiet): under
        // writes that never pause it must still start over rather than grow.
        wal_most = wal_most.max(store_bytes(&core).1);
        let before = cpu_ticks(relay.child.id())?;
        relay_lat.extend(round_trips(&relay.socket, true, round, warm, n).await?);
        relay_cpu += cpu_ticks(relay.child.id())? - before;
        let before = cpu_ticks(storing.child.id())?;
        storing_lat.extend(round_trips(&storing.socket, true, round, warm, n).await?);
        storing_cpu += cpu_ticks(storing.child.id())? - before;
        trips += warm + n;
    }
    core_lat.sort_unstable();
    relay_lat.sort_unstable();
    storing_lat.sort_unstable();
    let ping_lat = pings(
        &core.socket(),
        s.rtt_warmup / rounds,
        s.rtt_samples / rounds,
    )
    .await?;
    let core_warnings = core.warnings();
    drop(core);
    drop(relay);
    drop(storing);
    let sec = "1 round trip";
    let (c50, c99, c999) = (
        quantile(&core_lat, 0.5),
        quantile(&core_lat, 0.99),
        quantile(&core_lat, 0.999),
    );
    let (r50, r99) = (quantile(&relay_lat, 0.5), quantile(&relay_lat, 0.99));
    report.info(
        sec,
        &format!("relay (floor) p50 / p99, n={}", relay_lat.len()),
        format!("{} / {}", us(r50), us(r99)),
    );
    report.info(
        sec,
        &format!("core p50 / p99 / p99.9, n={}", core_lat.len()),
        format!("{} / {} / {}", us(c50), us(c99), us(c999)),
    );
    let added = c50.saturating_sub(r50);
    report.row(
        sec,
        "core added p50 (core p50 − relay p50)",
        us(added),
        "< 40 µs".into(),
        Some(added < 40_000),
    );
    report.row(
        sec,
        "core round trip p99",
        us(c99),
        "< 1 ms".into(),
        Some(c99 < 1_000_000),
    );
    report.info(
        sec,
        "core added p99 (core p99 − relay p99)",
        us(c99.saturating_sub(r99)),
    );
    // The least a broker that stores before it acknowledges pays (see `relay.rs`): what the
    // core adds beyond it is its own work.
    let (st50, st99) = (quantile(&storing_lat, 0.5), quantile(&storing_lat, 0.99));
    report.info(
        sec,
        &format!(
            "storing relay (SQLite commit + `sent`) p50 / p99, n={}",
            storing_lat.len()
        ),
        format!("{} / {}", us(st50), us(st99)),
    );
    let over_storing = c50.saturating_sub(st50);
    report.row(
        sec,
        "core added over the storing relay p50 (core p50 − storing p50)",
        us(over_storing),
        "< 40 µs".into(),
        Some(over_storing < 40_000),
    );
    // Where the added time goes: a round trip is sequential, so the CPU the core spends on
    // it (two messages stored, delivered and acknowledged) is on its path.
    let per_trip = |ticks: u64| us((ticks_to_ns(ticks) / trips as f64) as u64);
    report.info(
        sec,
        "CPU per round trip: core / storing relay / relay (user + system, all threads)",
        format!(
            "{} / {} / {}",
            per_trip(core_cpu),
            per_trip(storing_cpu),
            per_trip(relay_cpu)
        ),
    );
    let cpu_ratio = core_cpu as f64 / storing_cpu.max(1) as f64;
    report.row(
        sec,
        "CPU per round trip: core / storing relay",
        format!("{cpu_ratio:.2}×"),
        "≤ 1.5×".into(),
        Some(cpu_ratio <= 1.5),
    );
    report.info(
        sec,
        "WAL file at the end of a round of back-to-back round trips (largest)",
        bytes(wal_most),
    );
    report.info(
        sec,
        &format!(
            "diagnostic: ping→pong via hub p50 / p99, n={}",
            ping_lat.len()
        ),
        format!(
            "{} / {}",
            us(quantile(&ping_lat, 0.5)),
            us(quantile(&ping_lat, 0.99))
        ),
    );
    for w in core_warnings {
        report.notes.push(format!("core log (round trips): {w}"));
    }
    Ok(c50)
}
