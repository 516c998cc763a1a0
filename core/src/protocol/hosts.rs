//! Linked hosts: the other machines' cores this core (the *home* core) reaches through a
//! link command (`[[hosts]]` in its config; `ssh me@box shepherd link`, or any command
//! whose stdin and stdout reach the other core), as `list_hosts` reports them.

use serde::{Deserialize, Serialize};

use super::Millis;

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
