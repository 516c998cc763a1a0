//! Linked hosts: the other machines' cores this core (the *home* core) reaches through a
//! link command (`[[hosts]]` in its config; `ssh me@box shepherd link`, or any command
//! whose stdin and stdout reach the other core), as `list_hosts` reports them; and how a
//! human names what is on one: `gpu:17` ([`AskRef`]), `gpu:app@main` ([`split_host`]).

use serde::{Deserialize, Serialize};

use super::{AskId, EdgeKind, Millis, Role, SessionId};

/// Longest host name.
pub const MAX_HOST_NAME: usize = 32;

/// Whether `name` is a host name: 1 to [`MAX_HOST_NAME`] lowercase letters, digits and
/// `-`, starting with a letter.
pub fn is_host_name(name: &str) -> bool {
    name.len() <= MAX_HOST_NAME
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// `gpu:rest` → (`gpu`, `rest`) when what comes before the first `:` is a host name
/// ([`is_host_name`]); else no host.
pub fn split_host(text: &str) -> (Option<&str>, &str) {
    match text.split_once(':') {
        Some((host, rest)) if is_host_name(host) => (Some(host), rest),
        _ => (None, text),
    }
}

/// An ask as a human names it: its number (`17`), or `HOST:NUMBER` (`gpu:17`) for an ask
/// on a linked host, whose numbers are its own core's.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AskRef {
    pub host: Option<String>,
    pub id: AskId,
}

impl AskRef {
    /// An ask of this core.
    pub fn here(id: AskId) -> AskRef {
        AskRef { host: None, id }
    }
}

impl std::str::FromStr for AskRef {
    type Err = String;

    fn from_str(text: &str) -> Result<AskRef, String> {
        let (host, number) = split_host(text);
        let id = number.parse::<AskId>().map_err(|_| {
            format!("{text:?} is not an ask: its number (`17`), or HOST:NUMBER (`gpu:17`)")
        })?;
        Ok(AskRef {
            host: host.map(str::to_string),
            id,
        })
    }
}

impl std::fmt::Display for AskRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            Some(host) => write!(f, "{host}:{}", self.id),
            None => write!(f, "{}", self.id),
        }
    }
}

/// Where a link to a host stands.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkState {
    /// The link command runs (or is about to run again) and the far core has not greeted
    /// it yet.
    Connecting,
    /// The far core greeted this one and its sessions are mirrored here.
    Connected,
    /// The link command or the far core refused; `error` says why (it is tried again
    /// after a pause).
    Failed,
}

/// One linked host, as the home core sees its link.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostLink {
    /// The host's name in this core's config (`gpu`).
    pub name: String,
    /// The link command, as configured.
    pub command: Vec<String>,
    pub state: LinkState,
    /// When the link entered its state (ms since the epoch).
    pub since: Millis,
    /// Why the last attempt failed: the far core's refusal, or the link command's own last
    /// words (ssh's host key or authentication error, `shepherd: command not found`).
    pub error: Option<String>,
    /// The last `ping` round trip over the link, in microseconds.
    pub rtt_us: Option<u64>,
    /// The far core's version and protocol, from its `welcome`.
    pub core_version: Option<String>,
    pub protocol: Option<u32>,
    /// The far core's connected sessions and open asks, as mirrored here.
    pub sessions: u32,
    pub open_asks: u32,
    /// How many times the link was (re)established since this core started.
    pub connects: u32,
}

/// The herd's Chief, as the home core tells each linked core (`link_herd`): mail a linked
/// host's Manager (or a Lead with no Manager there) sends up goes to this session.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HerdChief {
    pub session_id: SessionId,
    pub session_name: String,
}

/// Mail along an edge between two cores: up from a linked host's Manager or Lead to the
/// herd's Chief (`kind: supervisor`), down from the Chief to one of its staff on a linked
/// host (`kind: staff`), or between peers on different hosts (`kind: peer`, through the
/// home core). Up it travels as the event `host_mail`, down as the request
/// `deliver_host_mail`. The sending core keeps it until the receiving core has stored it
/// (acknowledged by `id`); the receiving core stores each `id` of each origin once.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostMail {
    /// The sending core's id for it.
    pub id: u64,
    pub kind: EdgeKind,
    pub from_id: SessionId,
    pub from_name: String,
    pub from_role: Role,
    /// Up, for a peer: the session as its sender named it (`gpu:lead-b`, or an exact id);
    /// else its id.
    pub to_id: SessionId,
    pub to_name: String,
    pub text: String,
    pub created_at: Millis,
    /// The linked host the sender is on, when the home core passes peer mail on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_host: Option<String>,
    /// Not mail from a session: shepherd telling the receiver its own mail was not
    /// delivered (`text` says why).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub notice: bool,
    /// Up, `kind: supervisor`: a question for the herd's Chief (`ask_supervisor`), kept
    /// and answered on the sender's core; the Chief answers it with `answer_staff {ask,
    /// host}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<super::Ask>,
}
