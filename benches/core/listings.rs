//! Section 13: listings at scale. 20,000 sessions the core has seen (each registered once,
//! then gone) and one connected: the connected-only `list_sessions` and `list_sessions
//! {all}` are timed, and a bystander's ping round trips are timed while `all` listings run
//! back to back on another connection. A long listing is read off the hub, so the others'
//! pings should stay near their idle latency. `list_staff` (the human's: everyone who may
//! be staff) is timed with the same history, and the bystander's ping while it loops: it
//! reads the connected sessions and the lease holders by id, never the whole history.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use shepherd_core::client::Client;
use shepherd_core::protocol::{ClientKind, Registration, requests};

use crate::Settings;
use crate::daemon::CoreProc;
use crate::report::Report;

fn registration(i: usize) -> Registration {
    crate::wire::registration(
        &format!("bench-seen-{i:06}"),
        &format!("seen-{i}"),
        &format!("/tmp/work/project-{}", i % 50),
    )
}

fn millis(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Ping round trips for `for_how_long`; their median.
async fn ping_p50(client: &mut Client, for_how_long: Duration) -> Result<Duration> {
    let mut samples = Vec::new();
    let end = Instant::now() + for_how_long;
    while Instant::now() < end {
        let t = Instant::now();
        client.call(requests::Ping { id: 0 }).await?;
        samples.push(t.elapsed());
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    samples.sort();
    Ok(samples[samples.len() / 2])
}

/// On a CLI connection of its own, `call` back to back for 2 s; how many ran.
fn back_to_back<F, Fut>(socket: &std::path::Path, call: F) -> tokio::task::JoinHandle<Result<usize>>
where
    F: Fn(Client) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<Client>> + Send,
{
    let socket = socket.to_path_buf();
    tokio::spawn(async move {
        let mut lister = Client::connect(&socket, ClientKind::Cli, "bench").await?;
        let end = Instant::now() + Duration::from_secs(2);
        let mut n = 0;
        while Instant::now() < end {
            lister = call(lister).await?;
            n += 1;
        }
        Ok(n)
    })
}

pub async fn listings(s: &Settings, report: &mut Report) -> Result<()> {
    let known = if s.quick { 2_000 } else { 20_000 };
    eprintln!("[bench] 13. listings: {known} sessions seen, one connected");
    let (core, _) = CoreProc::start()?;
    let socket = core.socket();
    // Many registrations at once, a few connections at a time.
    let mut tasks = tokio::task::JoinSet::new();
    for lane in 0..8 {
        let socket = socket.clone();
        tasks.spawn(async move {
            for i in (lane..known).step_by(8) {
                let mut pi = Client::connect(&socket, ClientKind::Pi, "bench").await?;
                pi.register(registration(i)).await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let mut here = Client::connect(&socket, ClientKind::Pi, "bench").await?;
    here.register(registration(known)).await?;
    let mut cli = Client::connect(&socket, ClientKind::Cli, "bench").await?;
    let mut bystander = Client::connect(&socket, ClientKind::Cli, "bench").await?;

    let t = Instant::now();
    let connected = cli.list_sessions(false).await?;
    let connected_took = t.elapsed();
    let t = Instant::now();
    let all = cli.list_sessions(true).await?;
    let all_took = t.elapsed();
    if connected.len() != 1 || all.len() != known + 1 {
        bail!(
            "listings: {} connected (1 expected), {} in all ({} expected)",
            connected.len(),
            all.len(),
            known + 1
        );
    }
    let idle = ping_p50(&mut bystander, Duration::from_secs(1)).await?;
    let listing = back_to_back(&socket, |mut c| async move {
        c.list_sessions(true).await?;
        Ok(c)
    });
    let busy = ping_p50(&mut bystander, Duration::from_secs(2)).await?;
    let listed = listing.await??;
    let t = Instant::now();
    let staff = cli.call(requests::ListStaff::default()).await?;
    let staff_took = t.elapsed();
    if staff.len() != 1 {
        bail!("list_staff: {} members (1 expected)", staff.len());
    }
    let staffing = back_to_back(&socket, |mut c| async move {
        c.call(requests::ListStaff::default()).await?;
        Ok(c)
    });
    let staff_busy = ping_p50(&mut bystander, Duration::from_secs(2)).await?;
    let staffed = staffing.await??;
    let section = "13 listings";
    report.row(
        section,
        &format!("list_sessions (connected only), {known} seen"),
        millis(connected_took),
        "< 5 ms".into(),
        Some(connected_took < Duration::from_millis(5)),
    );
    report.info(
        section,
        &format!("list_sessions {{all}}, {} sessions", known + 1),
        millis(all_took),
    );
    report.info(section, "bystander ping p50, idle", millis(idle));
    report.row(
        section,
        &format!("bystander ping p50 during {listed} `all` listings back to back"),
        millis(busy),
        "< 5 ms".into(),
        Some(busy < Duration::from_millis(5)),
    );
    report.row(
        section,
        &format!("list_staff, {known} seen, one connected"),
        millis(staff_took),
        "< 5 ms".into(),
        Some(staff_took < Duration::from_millis(5)),
    );
    report.row(
        section,
        &format!("bystander ping p50 during {staffed} list_staff back to back"),
        millis(staff_busy),
        "< 5 ms".into(),
        Some(staff_busy < Duration::from_millis(5)),
    );
    drop(core);
    Ok(())
}
