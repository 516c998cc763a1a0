//! Section 15: linked hosts. A home core links to a far core through `shepherd link` run
//! by a local command (the transport ssh would be, without ssh's own cost), and the
//! human's steer to a session on the far core is timed both ways: straight to the far core,
//! and through home with `host` (home hands it to the link after its commit, the link
//! sends it on under an id of its own, the far core stores it and answers `sent`, the
//! answer comes back under the asker's id). The difference is the link's overhead. The
//! same for mail between sessions: a Lead's `message_peer` to a Lead on the far core,
//! until that Lead has it, against one to a Lead on the same core. Then the far core gets
//! 100 more sessions: the time until home's listing shows them all.
//! Last, the herd: 8 far cores with 100 sessions each and 10,000 open asks among them, all
//! linked to one home core: how long home takes to mirror them from its start (each link's
//! snapshot: the catch-up a reconnect does too), home's RSS then, and how long until all
//! are back after every link's command is killed.

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

    peers(s, &far, &home, &mut home_cli, report).await?;

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
    herd(s, report).await
}

/// A Lead's `message_peer` to another Lead, timed from the send until the receiver has
/// the delivery (and acknowledged it): both on home, and the receiver on the far core
/// (home keeps the mail, hands it to the link after its commit, the far core stores it
/// and delivers it, home forgets it on `host_mail_stored`). The difference is the link's
/// overhead for mail between sessions.
async fn peers(
    s: &Settings,
    far: &CoreProc,
    home: &CoreProc,
    home_cli: &mut Client,
    report: &mut Report,
) -> Result<()> {
    let pi = async |socket: &std::path::Path, id: &str, name: &str| -> Result<Client> {
        let mut c = Client::connect(socket, ClientKind::Pi, "bench").await?;
        c.register(crate::wire::registration(id, name, "/tmp"))
            .await?;
        Ok(c)
    };
    let mut sender = pi(&home.socket(), "bench-peer-home", "peer-home").await?;
    let mut near = pi(&home.socket(), "bench-peer-near", "peer-near").await?;
    let mut away = pi(&far.socket(), "bench-peer-far", "peer-far").await?;
    linked(home_cli, 2).await?;
    let (rounds, per_round) = if s.quick { (2, 100) } else { (6, 300) };
    let (mut one, mut across) = (Vec::new(), Vec::new());
    let mut i = 0;
    for _ in 0..rounds {
        for (samples, to, receiver) in [
            (&mut one, "bench-peer-near", &mut near),
            (&mut across, "far:peer-far", &mut away),
        ] {
            for _ in 0..per_round {
                let t = Instant::now();
                sender.message_peer(to, format!("peer note {i}")).await?;
                let delivered = loop {
                    match receiver.next_event().await? {
                        shepherd_core::protocol::ServerMsg::Deliver { message } => break message,
                        _ => continue,
                    }
                };
                samples.push(t.elapsed().as_nanos() as u64);
                anyhow::ensure!(
                    delivered.text.ends_with(&format!("peer note {i}")),
                    "{}",
                    delivered.text
                );
                receiver.ack(vec![delivered.id]).await?;
                i += 1;
            }
        }
    }
    one.sort_unstable();
    across.sort_unstable();
    let (o50, o99) = (quantile(&one, 0.5), quantile(&one, 0.99));
    let (a50, a99) = (quantile(&across, 0.5), quantile(&across, 0.99));
    report.info(
        SEC,
        &format!(
            "message_peer to a Lead on the same core p50 / p99, n={}",
            one.len()
        ),
        format!("{} / {}", us(o50), us(o99)),
    );
    report.info(
        SEC,
        &format!(
            "message_peer to a Lead across the link p50 / p99, n={}",
            across.len()
        ),
        format!("{} / {}", us(a50), us(a99)),
    );
    let overhead = a50.saturating_sub(o50);
    report.row(
        SEC,
        "the link's overhead for peer mail p50 (across − same core)",
        us(overhead),
        "≤ 1 ms".into(),
        Some(overhead <= 1_000_000),
    );
    Ok(())
}

/// How many far cores the herd has, and sessions on each.
const HERD: usize = 8;
const PER_HOST: usize = 100;

/// 8 far cores × 100 sessions linked to one home, with 10,000 asks open on them: how long
/// home takes to mirror them all (from each link's snapshot), its RSS then, and how long
/// after every link drops they are all back (the 1 s reconnect pause included).
async fn herd(s: &Settings, report: &mut Report) -> Result<()> {
    let hosts = if s.quick { 2 } else { HERD };
    let per_host_asks = 10_000 / HERD;
    let mut fars = Vec::new();
    let mut sessions = Vec::new();
    let mut entries = String::new();
    for h in 0..hosts {
        let (far, _) =
            CoreProc::start_with(&[("SHEPHERD_CORE__LIMITS__MAX_OPEN_ASKS_PER_SESSION", "100")])?;
        for n in 0..PER_HOST {
            let mut c = Client::connect(&far.socket(), ClientKind::Pi, "bench").await?;
            c.register(crate::wire::registration(
                &format!("bench-h{h}-{n}"),
                &format!("h{h}-s{n}"),
                "/tmp",
            ))
            .await?;
            let asks_here = per_host_asks / PER_HOST + usize::from(n < per_host_asks % PER_HOST);
            for a in 0..asks_here {
                c.call(requests::Ask {
                    question: format!("question {a} from h{h}-s{n}?"),
                    ..Default::default()
                })
                .await?;
            }
            sessions.push(c);
        }
        let command = [
            shepherd_bin().display().to_string(),
            "--socket".to_string(),
            far.socket().display().to_string(),
            "link".to_string(),
        ];
        entries.push_str(&format!(
            "[[hosts]]\nname = \"h{h}\"\ncommand = {command:?}\n\n"
        ));
        fars.push(far);
    }
    let (sessions_n, asks_n) = ((hosts * PER_HOST) as u32, (hosts * per_host_asks) as u32);
    let config = fars[0].dir.path().join("home.toml");
    std::fs::write(&config, entries)?;
    let config = config.display().to_string();
    let t = Instant::now();
    let (home, _) = CoreProc::start_with(&[("SHEPHERD_CONFIG", config.as_str())])?;
    let mut cli = Client::connect(&home.socket(), ClientKind::Cli, "bench").await?;
    let all_there = |l: &[shepherd_core::protocol::HostLink]| {
        l.iter().map(|h| h.sessions).sum::<u32>() == sessions_n
            && l.iter().map(|h| h.open_asks).sum::<u32>() == asks_n
    };
    wait_hosts(&mut cli, all_there).await?;
    let mirrored_in = t.elapsed();
    let rss = rss_kb(home.pid())?;
    report.row(
        SEC,
        &format!(
            "{hosts} far cores: {sessions_n} sessions and {asks_n} open asks mirrored at home, from its start"
        ),
        format!("{} ms", mirrored_in.as_millis()),
        "catch-up ≤ 1 s".into(),
        Some(mirrored_in <= Duration::from_secs(1)),
    );
    report.row(
        SEC,
        &format!("home RSS with {sessions_n} far sessions and {asks_n} asks mirrored"),
        mb(rss),
        "≤ 60 MB".into(),
        Some(rss <= 60 * 1024),
    );

    // Every link's command killed: all back, each once more, from the snapshots.
    let before: Vec<u32> = cli
        .call(requests::ListHosts::default())
        .await?
        .iter()
        .map(|h| h.connects)
        .collect();
    let t = Instant::now();
    for far in &fars {
        kill_link(&far.socket());
    }
    wait_hosts(&mut cli, |l| {
        l.iter().zip(&before).all(|(h, b)| h.connects > *b) && all_there(l)
    })
    .await?;
    report.info(
        SEC,
        &format!("every link killed: all {hosts} back and mirrored again (the 1 s pause included)"),
        format!("{} ms", t.elapsed().as_millis()),
    );
    drop(sessions);
    drop(home);
    drop(fars);
    Ok(())
}

/// Poll home's `list_hosts` until `done` holds (at most 60 s).
async fn wait_hosts(
    cli: &mut Client,
    done: impl Fn(&[shepherd_core::protocol::HostLink]) -> bool,
) -> Result<()> {
    let t = Instant::now();
    loop {
        let hosts = cli.call(requests::ListHosts::default()).await?;
        if done(&hosts) {
            return Ok(());
        }
        if t.elapsed() > Duration::from_secs(60) {
            bail!("the herd did not settle: {hosts:?}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Kill (-9) the `shepherd link` process serving the far core on `socket`.
fn kill_link(socket: &std::path::Path) {
    let socket = socket.display().to_string();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in dir.flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        if args.contains(&&b"link"[..])
            && args.contains(&socket.as_bytes())
            && let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|p| p.parse::<i32>().ok())
        {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
    }
}
