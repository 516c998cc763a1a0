//! # Managed workers: the processes
//!
//! The core launches worker Pi sessions for an owner (`delegate_agent`). This module owns
//! the processes only; which worker exists, its state and its mail live in the hub.
//!
//! - [`launch`]: a worker's argv and environment from a [`LaunchSpec`] (pure), and its
//!   private system prompt file. Its doc records how the pinned Pi treats `--tools` and
//!   `--exclude-tools` for extension tools.
//! - [`host`]: the process host actor: starts, watches, captures and stops workers on a
//!   headless (`pi --mode rpc` child) or tmux (private tmux server) backend, and reports
//!   each exit as a [`HostEvent`].
//! - [`proc`]: `/proc` ancestry, to prove a registering peer is the launched process.

pub mod host;
pub mod launch;
pub mod proc;

pub use host::{Backend, Host, HostConfig, HostError, HostEvent, Launched};
pub use launch::{LaunchSpec, SessionStart};
