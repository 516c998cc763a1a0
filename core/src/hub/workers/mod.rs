//! # Managed workers
//!
//! A Pi session (the owner) hands bounded work to a worker: another Pi session the core
//! launches, binds (by a one-time launch nonce and the launched pid), watches and stops.
//! The task travels as durable mail (`task`), the worker's one final result comes back as
//! durable mail (`agent_result`) to its exact owner, and the process is stopped only after
//! the owner acknowledged that result. The worker's questions (`ask_owner`) go to the
//! owner (`agent_ask`), who answers with `reply_agent`; the human may answer too.
//!
//! - [`launching`]: a new worker (`delegate_agent`, `continue_agent`).
//! - [`requests`]: what an owner or the human does with a worker (`steer_agent`,
//!   `interrupt_agent`, `reply_agent`, `close_agent`, `list_workers`, views), and the
//!   checks they share (who names which worker, what its state allows).
//! - [`ask`]: the worker's `ask_owner`, and when the phones see it.
//! - [`lifecycle`]: what happens to a worker without a request: its run's result settles
//!   it, its owner's ack ends it, its loss is told to its owner. Its process (launch,
//!   binding by nonce, exit, relaunch after a restart) goes through the lifecycle it
//!   shares with Leads, `hub/launched/`.
//! - [`bounds`]: how many live workers an owner and the core may have, and an owner that
//!   leaves for good taking its workers with it.

mod ask;
mod bounds;
pub(in crate::hub) mod launching;
mod lifecycle;
pub(super) mod requests;

pub(super) use requests::launch_spec;

use std::collections::HashMap;

use crate::protocol::{MessageId, WorkerId};

/// The hub's own state about workers (the rows are the truth; this is what the hot paths
/// must not query for).
#[derive(Default)]
pub(super) struct Workers {
    /// Result deliveries not yet acknowledged by their owner → the worker they end.
    pub(super) awaiting_ack: HashMap<MessageId, WorkerId>,
}
