//! # Linked hosts
//!
//! The home core's side of `[[hosts]]`: one task per host runs the host's link command
//! (`ssh -T me@gpu-box shepherd link`, or any command whose stdin and stdout reach the
//! other machine's core), greets the far core through it as a `core` client, subscribes,
//! and mirrors the far core's connected sessions and open asks ([`link`]). It pings the
//! far core for the round trip; after a drop or a refusal it runs the command again after
//! a pause that doubles from 1 s to 30 s, so an ssh error (host key, authentication,
//! `shepherd: command not found`) is shown as it is, not retried in a tight loop.
//!
//! Each task publishes what it knows on a watch channel; the hub reads the latest value
//! when it answers `list_hosts` and the CLI's `list_sessions`, and never waits for a link.
//! The far core stays the authority for what runs on it: its socket's uid check applies
//! to `shepherd link` there as to any local client.

mod link;

use std::collections::{BTreeMap, BTreeSet};

use tokio::sync::watch;

use crate::clock::now_ms;
use crate::config::HostEntry;
use crate::protocol::{AskId, HostLink, LinkState, SessionId, SessionInfo};

/// What one link knows: where it stands, and the far core's sessions and open asks as
/// last heard (kept, shown as not connected, while the link is down).
#[derive(Debug, Clone)]
pub struct HostView {
    pub link: HostLink,
    pub sessions: BTreeMap<SessionId, SessionInfo>,
    pub asks: BTreeSet<AskId>,
}

impl HostView {
    fn new(entry: &HostEntry) -> HostView {
        HostView {
            link: HostLink {
                name: entry.name.to_string(),
                command: entry.command.argv().to_vec(),
                state: LinkState::Connecting,
                since: now_ms(),
                error: None,
                rtt_us: None,
                core_version: None,
                protocol: None,
                sessions: 0,
                open_asks: 0,
                connects: 0,
            },
            sessions: BTreeMap::new(),
            asks: BTreeSet::new(),
        }
    }

    /// The counts in `link` from the mirror.
    fn recount(&mut self) {
        self.link.sessions = self.sessions.values().filter(|s| s.connected).count() as u32;
        self.link.open_asks = self.asks.len() as u32;
    }
}

/// The running links, in the config's order; dropping it stops them (and their commands).
#[derive(Default)]
pub struct Links {
    hosts: Vec<(watch::Receiver<HostView>, tokio::task::JoinHandle<()>)>,
}

impl Links {
    /// Start one link task per entry (on the current runtime).
    pub fn start(entries: &[HostEntry]) -> Links {
        let hosts = entries
            .iter()
            .map(|entry| {
                let (tx, rx) = watch::channel(HostView::new(entry));
                (rx, tokio::spawn(link::run(entry.clone(), tx)))
            })
            .collect();
        Links { hosts }
    }

    /// Every link as it stands now.
    pub fn list(&self) -> Vec<HostLink> {
        self.hosts
            .iter()
            .map(|(rx, _)| rx.borrow().link.clone())
            .collect()
    }

    /// The far cores' sessions as mirrored here, each with its `host` set.
    pub fn sessions(&self) -> Vec<SessionInfo> {
        let mut all = Vec::new();
        for (rx, _) in &self.hosts {
            let view = rx.borrow();
            all.extend(view.sessions.values().cloned().map(|mut s| {
                s.host = Some(view.link.name.clone());
                s
            }));
        }
        all
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        for (_, task) in &self.hosts {
            task.abort();
        }
    }
}
