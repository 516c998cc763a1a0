//! The phone bridges end to end: one test binary (`cargo test --test phone`), one module
//! per area, Telegram against the strict fake Bot API (`shepherd_harness::fake_telegram`)
//! and Matrix against a real Synapse (pinned, from PyPI; one for the whole binary,
//! `Synapse::shared`, on which each test makes users and rooms of its own, so the tests
//! stay independent and run side by side; `SHEPHERD_SKIP_E2E=1` makes them return early
//! while iterating). Filter by module: `cargo test --test phone telegram_roles::`.
//!
//! - [`bridge`]: the bridge as a process (a second one refused), one scenario run on each
//!   phone;
//! - [`commands`]: chat commands and steering from a session's place, one scenario run on
//!   each phone;
//! - [`fake_telegram`]: the fake Bot API itself, driven by real teloxide;
//! - [`files`]: photos, documents and voice notes sent to a real Pi session, on each phone;
//! - [`synapse_harness`]: the Synapse harness itself;
//! - [`sessions`]: a session's life (its asks, interrupted, closed, dead, its results, a
//!   bridge that was down), one scenario run on each phone;
//! - [`started`]: `/new` and `/continue` with real Pi sessions the core launches, on each phone;
//! - [`supervision`]: supervision in the worker's place, one scenario run on each phone;
//! - [`telegram`]: what only the Telegram bridge does, or does its own way;
//! - [`matrix`]: what only the Matrix bridge does, or does its own way;
//! - [`peek`]: `/peek` and its refresh while a real Pi runs a command, on each phone;
//! - [`places`]: `per_project` topics and threads, shared by a repository's sessions, on each phone;
//! - [`projects`]: project work, one scenario run on each phone;
//! - [`roles`]: roles, one scenario run on each phone (and a Telegram topic renamed after the bridge was away);
//! - [`typed`]: typing in a session's topic or thread, one scenario run on each phone;
//! - [`workers`]: managed workers, one scenario run on each phone ([`shepherd_harness::phone::Phone`]);
//! - [`projects_phone`]: what the project-work scenario needs besides the phone;
//! - [`workers_phone`]: what the managed-worker scenario needs besides the phone.

// A scenario reads as one story: its test may run past the product's 100-line rule.
#![allow(clippy::too_many_lines)]

mod approvals;
mod bridge;
mod commands;
mod fake_telegram;
mod files;
mod matrix;
mod peek;
mod places;
mod projects;
mod projects_phone;
mod roles;
mod sessions;
mod started;
mod supervision;
mod synapse_harness;
mod telegram;
mod typed;
mod workers;
mod workers_phone;
