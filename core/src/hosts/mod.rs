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
//! when it answers `list_hosts` and the CLI's `list_sessions` and `list_asks`, and never
//! waits for a link. A human's request for a host (`answer` or `send` with `host`) is
//! handed to that host's task ([`Links::forward`]), which sends it on with an id of its own
//! and hands the far core's response back to the hub under the asker's id: the far core
//! applies it with its own rules (the first answer wins there). What the far core
//! announces (asks opened and answered, sessions joined, changed, left) reaches the hub
//! too ([`FromLink::Event`], host set), for the home core's bridges and CLI watchers.
//! The far core stays the authority for what runs on it: its socket's uid check applies
//! to `shepherd link` there as to any local client.

mod forward;
mod link;
mod mail;

use std::collections::BTreeMap;

use tokio::sync::{mpsc, watch};

use crate::clock::now_ms;
use crate::config::HostEntry;
use crate::protocol::{
    Ask, AskId, ClientMsg, HerdChief, HostLink, HostMail, LinkState, ServerMsg, SessionId,
    SessionInfo,
};

/// A client connection of this core, as the hub numbers them.
pub type ConnId = u64;

/// How many forwarded requests may wait for one link's task at once.
const FORWARD_QUEUE: usize = 256;

/// What one link knows: where it stands, and the far core's sessions and open asks as
/// last heard (kept, shown as not connected, while the link is down), each with its
/// `host` set to the link's name.
#[derive(Debug, Clone)]
pub struct HostView {
    pub link: HostLink,
    pub sessions: BTreeMap<SessionId, SessionInfo>,
    pub asks: BTreeMap<AskId, Ask>,
    /// The far core's newest report this link has seen (`None` before the first
    /// connect): after a reconnect, the reports announced since are announced here once.
    pub last_report: Option<u64>,
    /// The far core's approvals pending when last heard: after a reconnect, those decided
    /// meanwhile are announced.
    pub approvals: std::collections::BTreeSet<crate::protocol::ApprovalId>,
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
            approvals: Default::default(),
            asks: BTreeMap::new(),
            last_report: None,
        }
    }

    /// The counts in `link` from the mirror.
    fn recount(&mut self) {
        self.link.sessions = self.sessions.values().filter(|s| s.connected).count() as u32;
        self.link.open_asks = self.asks.len() as u32;
    }
}

/// Mail between this core and a linked one, as a link hands it to the hub.
#[derive(Debug)]
pub enum LinkNews {
    /// The link came up: hand it the mail kept for its host.
    Up { host: String },
    /// Mail up from a linked host to the herd's Chief, from the far core whose
    /// `store_id` is `origin`: store it once, then acknowledge it.
    Mail {
        host: String,
        origin: String,
        mail: Box<HostMail>,
    },
    /// The far core stored mail `id` (sent down): forget it.
    Stored { host: String, id: u64 },
    /// The far core refused mail `id` for good: forget it and tell its sender why.
    Refused { host: String, id: u64, why: String },
}

/// What the hub hands a link, after the batch that decided it commits.
#[derive(Debug)]
pub enum ToFar {
    /// Store this mail there (`deliver_host_mail`).
    Mail(Box<HostMail>),
    /// This mail from there is stored here (`host_mail_ack`).
    Ack(u64),
}

/// What a link hands the hub.
pub enum FromLink {
    /// A far core's answer to a forwarded request: a whole frame for connection `conn`.
    Answer { conn: ConnId, frame: bytes::Bytes },
    /// A change the far core announced (an ask opened or answered, a session joined,
    /// changed, left or took a role, a report or result posted, a message along an edge
    /// there), with its `host` set where the record has one: for the home core's bridges
    /// and CLI, so a phone shows a linked host's asks as a local one's. After a reconnect the link
    /// announces what changed while it was down, once.
    Event(Box<ServerMsg>),
    /// Mail between the cores.
    News(LinkNews),
}

/// How many answers and events may wait for the hub at once.
const ANSWER_QUEUE: usize = 1024;

/// A human's request for a linked host, and where its answer goes.
pub struct Forward {
    pub msg: ClientMsg,
    pub conn: ConnId,
    pub id: u64,
}

/// Why a request could not be handed to a host (the hub answers it
/// `host_unreachable`, `details.host` naming the host).
#[derive(Debug)]
pub struct Unreachable(pub String);

/// One running link: what it publishes, where its forwarded requests and mail go, its
/// task.
struct Host {
    view: watch::Receiver<HostView>,
    forwards: mpsc::Sender<Forward>,
    to_far: mpsc::UnboundedSender<ToFar>,
    task: tokio::task::JoinHandle<()>,
}

/// The running links, in the config's order; dropping it stops them (and their commands).
pub struct Links {
    hosts: Vec<Host>,
    /// The herd's Chief (this core's Chief lease), told to every linked core.
    herd: watch::Sender<Option<HerdChief>>,
}

impl Default for Links {
    fn default() -> Links {
        Links {
            hosts: Vec::new(),
            herd: watch::channel(None).0,
        }
    }
}

impl Links {
    /// Start one link task per entry (on the current runtime), and the receiver of what
    /// the links hand the hub (answers to forwarded requests, the far cores' events).
    /// `origin` is this core's `store_id` (the far cores store its mail once by it);
    /// `chief` the herd's Chief now.
    /// `report_cursor`: each host's newest report passed on before (kept in the store),
    /// so a restarted core's links announce what came since.
    pub fn start(
        entries: &[HostEntry],
        origin: &str,
        chief: Option<HerdChief>,
        report_cursor: impl Fn(&str) -> Option<u64>,
    ) -> (Links, mpsc::Receiver<FromLink>) {
        let (answers, answered) = mpsc::channel(ANSWER_QUEUE);
        let (herd, _) = watch::channel(chief);
        let hosts = entries
            .iter()
            .map(|entry| {
                let mut first = HostView::new(entry);
                first.last_report = report_cursor(entry.name.as_str());
                let (tx, view) = watch::channel(first);
                let (forwards, rx) = mpsc::channel(FORWARD_QUEUE);
                let (to_far, from_hub) = mpsc::unbounded_channel();
                let channels = link::Channels {
                    view: tx,
                    forwards: rx,
                    to_far: from_hub,
                    herd: herd.subscribe(),
                    origin: origin.to_string(),
                };
                let task = tokio::spawn(link::run(entry.clone(), channels, answers.clone()));
                Host {
                    view,
                    forwards,
                    to_far,
                    task,
                }
            })
            .collect();
        (Links { hosts, herd }, answered)
    }

    /// The herd's Chief changed (or is the same again): tell every linked core.
    pub fn set_chief(&self, chief: Option<HerdChief>) {
        self.herd.send_if_modified(|now| {
            let changed = *now != chief;
            *now = chief;
            changed
        });
    }

    /// Hand `what` to `host`'s link (dropped when there is no such host: mail waits in
    /// the store and goes when the link comes up).
    pub fn to_far(&self, host: &str, what: ToFar) {
        if let Some(h) = self.host(host) {
            let _ = h.to_far.send(what);
        }
    }

    /// The link of the host named `name`.
    fn host(&self, name: &str) -> Option<&Host> {
        self.hosts
            .iter()
            .find(|h| h.view.borrow().link.name == name)
    }

    /// The linked hosts' session named `who`: its exact id, `HOST:NAME`, or a name (or id
    /// prefix) unique among them; with its `host` set.
    pub fn find_session(&self, who: &str) -> Option<SessionInfo> {
        let sessions = self.sessions();
        if let Some(s) = sessions.iter().find(|s| s.id.as_str() == who) {
            return Some(s.clone());
        }
        let (host, name) = crate::protocol::split_host(who);
        let mut found = sessions.into_iter().filter(|s| {
            host.is_none_or(|h| s.host.as_deref() == Some(h))
                && (s.name == name || s.id.as_str().starts_with(name))
        });
        let first = found.next()?;
        found.next().is_none().then_some(first)
    }

    /// Every link as it stands now.
    pub fn list(&self) -> Vec<HostLink> {
        self.hosts
            .iter()
            .map(|h| h.view.borrow().link.clone())
            .collect()
    }

    /// The far cores' sessions as mirrored here, each with its `host` set.
    pub fn sessions(&self) -> Vec<SessionInfo> {
        self.mirrored(|view| view.sessions.values().cloned().collect())
    }

    /// The far cores' open asks as mirrored here, each with its `host` set.
    pub fn asks(&self) -> Vec<Ask> {
        self.mirrored(|view| view.asks.values().cloned().collect())
    }

    /// Every host's records as `of` takes them from its view (the link keeps each with
    /// its host set).
    fn mirrored<T>(&self, of: impl Fn(&HostView) -> Vec<T>) -> Vec<T> {
        self.hosts
            .iter()
            .flat_map(|h| of(&h.view.borrow()))
            .collect()
    }

    /// Hand `forward` to the link of `host`, connected now; its answer reaches the hub
    /// as a frame for `forward.conn`.
    pub fn forward(&self, host: &str, forward: Forward) -> Result<(), Unreachable> {
        let h = self.connected(host)?;
        h.forwards.try_send(forward).map_err(|_| {
            Unreachable(format!(
                "host `{host}` has {FORWARD_QUEUE} requests waiting on its link already: try again"
            ))
        })
    }

    /// Whether a request for `host` can be handed to its link now, and if not, why.
    pub fn check(&self, host: &str) -> Result<(), Unreachable> {
        self.connected(host).map(drop)
    }

    fn connected(&self, host: &str) -> Result<&Host, Unreachable> {
        let Some(h) = self.host(host) else {
            let names: Vec<String> = self.list().into_iter().map(|l| l.name).collect();
            return Err(Unreachable(match names.is_empty() {
                true => format!(
                    "no linked host is named `{host}`: this core links to none (`shepherd hosts add`)"
                ),
                false => format!(
                    "no linked host is named `{host}`; the linked hosts: {}",
                    names.join(", ")
                ),
            }));
        };
        let link = h.view.borrow().link.clone();
        if link.state != LinkState::Connected {
            let why = link.error.map(|e| format!(": {e}")).unwrap_or_default();
            return Err(Unreachable(format!(
                "host `{host}` is not connected ({}{why}); `shepherd hosts` shows its link",
                match link.state {
                    LinkState::Failed => "its link failed",
                    _ => "its link is connecting",
                }
            )));
        }
        Ok(h)
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        for h in &self.hosts {
            h.task.abort();
        }
    }
}
