//! End to end with a REAL Pi (the pinned Pi on Node 22 with the shepherd extension, from
//! `scripts/test-deps.sh`) against the scripted fake model, the real core and CLI: one test
//! binary (`cargo test --test pi`), one module per area. Filter by module: `cargo test
//! --test pi roles::`.
//!
//! - [`approvals`]: a held tool call runs once approved, a denial's reason reaches the
//!   model, an allow for the session, fail closed without a core;
//! - [`autostart`]: the extension autostarts a core that cannot start, and says why once;
//! - [`extension`]: `ask_human`, a steer during a tool, a core restart, no core at all;
//! - [`outbox`]: asks and reports made while the core is down are sent once;
//! - [`peek`]: `shepherd peek` names the running command, its time and the last output;
//! - [`projects`]: a Manager Pi delegating to a Lead Pi and integrating its branch;
//! - [`roles`]: `/manager`, staff asks and answers, the Chief, between real Pi sessions;
//! - [`started`]: `shepherd new` in a directory, `close`, `continue` the same session (tmux);
//! - [`supervise`]: a supervisor Pi and its worker Pi, across a core restart;
//! - [`usage`]: `shepherd usage` over a real Pi session file;
//! - [`view_live`]: supervision views on a live Pi session file;
//! - [`worker_host`]: the worker host running the real Pi, headless;
//! - [`workers`]: a Pi owner delegating to real worker Pi processes.

// A scenario reads as one story: its test may run past the product's 100-line rule.
#![allow(clippy::too_many_lines)]

mod approvals;
mod autostart;
mod extension;
mod outbox;
mod peek;
mod projects;
mod roles;
mod started;
mod supervise;
mod usage;
mod view_live;
mod worker_host;
mod workers;
