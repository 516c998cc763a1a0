//! Section 15: linked hosts. A home core links to a far core through `shepherd link` run
//! by a local command (the transport ssh would be, without ssh's own cost), and the
//! human's steer to a session on the far core is timed both ways: straight to the far core,
//! and through home with `host` (home hands it to the link after its commit, the link
//! sends it on under an id of its own, the far core stores it and answers `sent`, the
//! answer comes back under the asker's id). The difference is the link's overhead. Then
//! `home_mirror`: the far core gets 100 more sessions, and the time until home's listing
//! shows them all, and home's RSS with them mirrored.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use shepherd_core::client::{Client, ClientError};
use shepherd_core::protocol::{ClientKind, LinkState, requests};

use crate::Settings;
use crate::daemon::{CoreProc, rss_kb, shepherd_bin};
use crate::report::{Report, mb, quantile, us};

const SEC: &str = "15 linked hosts";

async fn steer(cli: &mut Client, host: Option<&str>, i: usize) -> Result<(), ClientError> {
    cli.call(requests::Send {
        to: "far-away".into(),
        text: format!("steer {i}: keep the migration reversible"),
        host: host.map(str::to_string),
        ..Default::default()
    })
    .await
    .map(|_| ())
}

/// Wait until home's link to `far` is connected and mirrors at least `sessions`.
async fn linked(home: &mut Client, sessions: u32) -> Result<Duration> {
    let t = Instant::now();
    loop {
        let hosts = home.call(requests::ListHosts::default()).await?;
        if hosts
            .iter()
            .any(|h| h.state == LinkState::Connected && h.sessions >= sessions)
        {
            return Ok(t.elapsed());
        }
        if t.elapsed() > Duration::from_secs(30) {
            bail!("the link did not come up with {sessions} sessions: {hosts:?}");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

pub async fn hosts(s: &Settings, report: &mut Report) -> Result<()> {
    eprintln!("[bench] 15. linked hosts: a steer through a link, and 100 sessions mirrored");
    let (far, _) = CoreProc::start()?;
    let mut pi = Client::connect(&far.socket(), ClientKind::Pi, "bench").await?;
    pi.register(crate::wire::registration("bench-far", "far-away", "/tmp"))
        .await?;
    let config = far.dir.path().join("home.toml");
    let command = [
        shepherd_bin().display().to_string(),
        "--socket".to_string(),
        far.socket().display().to_string(),
        "link".to_string(),
    ];
    std::fs::write(
        &config,
        format!("[[hosts]]\nname = \"far\"\ncommand = {command:?}\n"),
    )?;
    let config = config.display().to_string();
    let (home, _) = CoreProc::start_with(&[("SHEPHERD_CONFIG", config.as_str())])?;
    let mut home_cli = Client::connect(&home.socket(), ClientKind::Cli, "bench").await?;
    linked(&mut home_cli, 1)
        .await
        .context("linking home to far")?;
    let mut far_cli = Client::connect(&far.socket(), ClientKind::Cli, "bench").await?;

    // Interleaved rounds, so both paths see the same machine.
    let (rounds, per_round) = if s.quick { (2, 200) } else { (6, 500) };
    let (mut direct, mut linked_lat) = (Vec::new(), Vec::new());
    let mut i = 0;
    for _ in 0..rounds {
        for (samples, host) in [(&mut direct, None), (&mut linked_lat, Some("far"))] {
            for _ in 0..per_round {
                let cli = match host {
                    Some(_) => &mut home_cli,
                    None => &mut far_cli,
                };
                let t = Instant::now();
                steer(cli, host, i).await?;
                samples.push(t.elapsed().as_nanos() as u64);
                i += 1;
            }
        }
    }
    direct.sort_unstable();
    linked_lat.sort_unstable();
    let (d50, d99) = (quantile(&direct, 0.5), quantile(&direct, 0.99));
    let (l50, l99) = (quantile(&linked_lat, 0.5), quantile(&linked_lat, 0.99));
    report.info(
        SEC,
        &format!(
            "steer straight to the far core p50 / p99, n={}",
            direct.len()
        ),
        format!("{} / {}", us(d50), us(d99)),
    );
    report.info(
        SEC,
        &format!(
            "steer through home's link p50 / p99, n={}",
            linked_lat.len()
        ),
        format!("{} / {}", us(l50), us(l99)),
    );
    let overhead = l50.saturating_sub(d50);
    report.row(
        SEC,
        "the link's overhead p50 (through home − straight)",
        us(overhead),
        "≤ 1 ms".into(),
        Some(overhead <= 1_000_000),
    );

    // 100 more sessions on the far core: how long until home lists them all, and home's
    // RSS with them mirrored.
    let before = rss_kb(home.pid())?;
    let t = Instant::now();
    let mut held = Vec::new();
    for n in 0..100 {
        let mut c = Client::connect(&far.socket(), ClientKind::Pi, "bench").await?;
        let name = format!("mirrored-{n}");
        c.register(crate::wire::registration(
            &format!("bench-m-{n}"),
            &name,
            "/tmp",
        ))
        .await?;
        held.push(c);
    }
    let registered = t.elapsed();
    let shown = linked(&mut home_cli, 101).await?;
    let after = rss_kb(home.pid())?;
    report.info(
        SEC,
        "100 sessions joining the far core: registered, then all mirrored at home",
        format!("{} ms, +{} ms", registered.as_millis(), shown.as_millis()),
    );
    report.info(
        SEC,
        "home RSS before / with 101 far sessions mirrored",
        format!("{} / {}", mb(before), mb(after)),
    );
    drop(held);
    drop(pi);
    drop(home);
    drop(far);
    Ok(())
}
