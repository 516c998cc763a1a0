//! # `shepherd status`
//!
//! Asks the running core for its `core_status` and shows it as an aligned key/value
//! block: versions, uptime, pid, where its state and socket are, how many sessions are
//! connected and known, open asks, and the chat bridges attached. `--json` prints the
//! protocol's `CoreStatus` object unchanged.

use std::process::ExitCode;

use shepherd_core::protocol::{CoreStatus, requests};

use super::format::{ago, duration, now_ms, tilde, utc};
use super::table::key_values;
use super::{Ctx, print, print_json};

/// Run `shepherd status`.
pub async fn run(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let status = conn.call(requests::Status::default()).await?;
    if ctx.json {
        print_json(&status)?;
    } else {
        print(&render(&status, now_ms()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The human form.
pub fn render(status: &CoreStatus, now: u64) -> String {
    let cli_version = env!("CARGO_PKG_VERSION");
    let mut core = format!("shepherd {}", status.core_version);
    if status.core_version != cli_version {
        core.push_str(&format!(
            " (this CLI is {cli_version}: restart the core to match)"
        ));
    }
    let bridges = if status.bridges.is_empty() {
        "none".to_string()
    } else {
        status
            .bridges
            .iter()
            .map(|b| {
                let pid = b.pid.map(|p| format!("pid {p}, ")).unwrap_or_default();
                format!(
                    "{} ({pid}connected {})",
                    b.name,
                    ago(b.connected_since, now)
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    key_values(&[
        ("core", core),
        ("protocol", status.protocol.to_string()),
        (
            "uptime",
            format!(
                "{} (since {})",
                duration(status.uptime_ms),
                utc(status.started_at)
            ),
        ),
        ("pid", status.pid.to_string()),
        ("state dir", tilde(&status.state_dir)),
        ("socket", tilde(&status.socket)),
        (
            "sessions",
            format!(
                "{} connected, {} known",
                status.sessions_connected, status.sessions_known
            ),
        ),
        ("open asks", status.open_asks.to_string()),
        ("bridges", bridges),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::protocol::BridgeInfo;

    #[test]
    fn renders_an_aligned_block() {
        let status = CoreStatus {
            core_version: env!("CARGO_PKG_VERSION").into(),
            protocol: 1,
            pid: 1717,
            started_at: 1_796_130_379_000,
            uptime_ms: (3 * 3600 + 12 * 60) * 1000,
            state_dir: "/srv/shepherd".into(),
            socket: "/srv/shepherd/shepherd.sock".into(),
            sessions_connected: 2,
            sessions_known: 5,
            open_asks: 1,
            bridges: vec![BridgeInfo {
                name: "telegram".into(),
                pid: Some(1717),
                connected_since: 1_796_130_379_000,
            }],
        };
        let text = render(&status, 1_796_130_379_000 + 120_000);
        assert!(
            text.contains("uptime     3h 12m (since 2026-12-01 13:06:19 UTC)\n"),
            "{text}"
        );
        assert!(text.contains("sessions   2 connected, 5 known\n"), "{text}");
        assert!(
            text.contains("bridges    telegram (pid 1717, connected 2m ago)\n"),
            "{text}"
        );
    }
}
