//! # `shepherd hosts` and `shepherd link`
//!
//! `shepherd hosts` lists this core's links to other machines' cores (`[[hosts]]`): each
//! link's state (connected, connecting since, failed with the reason), its round trip,
//! the far core's version and protocol, its sessions and open asks. `shepherd hosts add
//! NAME -- CMD…` appends a `[[hosts]]` entry to the config file (checked first: a bad name,
//! an empty command or a name taken is refused and nothing is written).
//!
//! `shepherd link` is the far end of a link: run by the home core's link command (`ssh -T
//! me@gpu-box shepherd link`), it starts this machine's core when none runs, then joins its
//! stdin and stdout to the core's socket, byte for byte, until either side closes. The
//! core's uid check applies to it as to any local client.

use std::path::Path;
use std::process::ExitCode;

use shepherd_core::config::{Config, HostEntry, HostName, LinkCommand};
use shepherd_core::protocol::{HostLink, LinkState, requests};
use tokio::io::AsyncWriteExt;

use super::format::{ago, now_ms};
use super::table::{Align, Table};
use super::{Ctx, Failure, print, print_json, terminal_width};

/// Run `shepherd hosts`.
pub async fn list(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let hosts = conn.call(requests::ListHosts::default()).await?;
    if ctx.json {
        print_json(&hosts)?;
    } else if hosts.is_empty() {
        print(
            "no linked hosts: `shepherd hosts add NAME -- ssh -T me@box shepherd link` adds one\n",
        )?;
    } else {
        print(&render(&hosts, now_ms(), terminal_width()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The human table.
pub fn render(hosts: &[HostLink], now: u64, width: usize) -> String {
    let mut table = Table::new()
        .column("HOST", Align::Left)
        .middle("STATE", 30)
        .column("RTT", Align::Right)
        .column("VERSION", Align::Left)
        .column("SESSIONS", Align::Right)
        .column("ASKS", Align::Right)
        .middle("COMMAND", 20);
    for h in hosts {
        let state = match h.state {
            LinkState::Connected => format!("connected {}", ago(h.since, now)),
            LinkState::Connecting => match &h.error {
                Some(why) => format!("connecting since {} (dropped: {why})", ago(h.since, now)),
                None => format!("connecting since {}", ago(h.since, now)),
            },
            LinkState::Failed => format!(
                "failed {}: {}",
                ago(h.since, now),
                h.error.as_deref().unwrap_or("no reason given")
            ),
        };
        let version = match (&h.core_version, h.protocol) {
            (Some(v), Some(p)) => format!("{v} (protocol {p})"),
            _ => "-".to_string(),
        };
        table.row(vec![
            h.name.clone(),
            state,
            h.rtt_us.map_or("-".to_string(), |us| {
                format!("{:.1} ms", us as f64 / 1000.0)
            }),
            version,
            h.sessions.to_string(),
            h.open_asks.to_string(),
            h.command.join(" "),
        ]);
    }
    table.render(width)
}

/// Run `shepherd hosts add NAME -- CMD…`.
pub fn add(ctx: &Ctx, name: &str, command: &[String]) -> anyhow::Result<ExitCode> {
    let invalid = |message: String| Failure::new("invalid_argument", message);
    let name = HostName::try_from(name.to_string()).map_err(invalid)?;
    let command = LinkCommand::try_from(command.to_vec()).map_err(invalid)?;
    let loaded = ctx.load_config()?;
    if loaded.config.hosts.iter().any(|h| h.name == name) {
        return Err(Failure::new(
            "already_exists",
            format!("a host named `{name}` is already configured: pick another name, or edit the config file"),
        )
        .into());
    }
    let path = match loaded.file {
        Some(path) => path,
        None => shepherd_core::config::default_config_path()
            .map_err(|e| Failure::new("invalid_config", e.to_string()))?,
    };
    let entry = HostEntry { name, command };
    append_entry(&path, &entry)?;
    let message = format!(
        "added host `{}` to {}; `shepherd restart` links it (the running core reads its config at start)\n",
        entry.name,
        path.display()
    );
    match ctx.json {
        true => print_json(&serde_json::json!({ "added": entry.name.as_str(), "config": path }))?,
        false => print(&message)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Append `entry` as a `[[hosts]]` table to the file at `path` (made when missing), after
/// checking that the file with it still reads as a configuration.
fn append_entry(path: &Path, entry: &HostEntry) -> Result<(), Failure> {
    #[derive(serde::Serialize)]
    struct Wrapper<'a> {
        hosts: [&'a HostEntry; 1],
    }
    let table = toml::to_string(&Wrapper { hosts: [entry] })
        .map_err(|e| Failure::new("internal", format!("cannot write the entry: {e}")))?;
    let before = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(Failure::new(
                "io",
                format!("cannot read {}: {e}", path.display()),
            ));
        }
    };
    let separator = match before.is_empty() || before.ends_with("\n\n") {
        true => "",
        false if before.ends_with('\n') => "\n",
        false => "\n\n",
    };
    let after = format!("{before}{separator}{table}");
    Config::from_toml(&after, &path.display().to_string()).map_err(|e| {
        Failure::new(
            "invalid_config",
            format!(
                "the config file would not read with the new host, so nothing was written: {e}"
            ),
        )
    })?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::new("io", format!("cannot make {}: {e}", dir.display())))?;
    }
    std::fs::write(path, after)
        .map_err(|e| Failure::new("io", format!("cannot write {}: {e}", path.display())))
}

/// Run `shepherd link`: this machine's core, started when none runs, joined to stdio.
pub async fn link(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let stream = super::lifecycle::connect_or_start(ctx).await?;
    let (mut from_core, mut to_core) = stream.into_split();
    let mut stdin = tokio::io::stdin();
    let mut stdout = tokio::io::stdout();
    let up = async {
        tokio::io::copy(&mut stdin, &mut to_core).await?;
        to_core.shutdown().await
    };
    let down = async {
        tokio::io::copy(&mut from_core, &mut stdout).await?;
        stdout.flush().await
    };
    // Whichever side closes first ends the link: the home core reconnects.
    tokio::select! {
        r = up => r?,
        r = down => r?,
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    use shepherd_core::examples::host_link as link;

    #[test]
    fn each_link_says_where_it_stands_and_why() {
        let table = render(
            &[
                link("gpu", LinkState::Connected, None),
                link(
                    "laptop",
                    LinkState::Failed,
                    Some("ssh: Permission denied (publickey)"),
                ),
                link(
                    "build",
                    LinkState::Connecting,
                    Some("the link command exited"),
                ),
            ],
            90_000,
            200,
        );
        let row = |name: &str| {
            table
                .lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("no {name} row:\n{table}"))
                .to_string()
        };
        assert!(table.starts_with("HOST"), "{table}");
        assert!(
            row("gpu").contains("connected") && row("gpu").contains("1.8 ms"),
            "{table}"
        );
        assert!(
            row("gpu").contains(&format!(
                "0.1.0 (protocol {})",
                shepherd_core::protocol::PROTOCOL_VERSION
            )),
            "{table}"
        );
        assert!(
            row("laptop").contains("failed") && row("laptop").contains("Permission denied"),
            "{table}"
        );
        assert!(
            row("build").contains("connecting since") && row("build").contains("dropped"),
            "{table}"
        );
    }
}
