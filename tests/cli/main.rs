//! The `shepherd` command line, end to end: one test binary (`cargo test --test cli`), one
//! module per area, each run against the real binary (most of them with a real core
//! started by the harness on a temp agent dir). Filter by module: `cargo test --test cli
//! roles::`.
//!
//! - [`agents`]: `shepherd agents`, definitions from bundled, global and project files;
//! - [`asks`]: one ask in full, answering by option number;
//! - [`basic`]: without a running core: help, usage and config errors, `doctor`;
//! - [`doctor_env`]: `shepherd doctor` with bridge settings from the environment alone;
//! - [`install`]: `shepherd install` and a real Pi loading the installed extension;
//! - [`lifecycle`]: `shepherd stop` and `shepherd restart`;
//! - [`projects`]: `projects`, `integrate`, `resume`, `stop-lead`, with a real Lead;
//! - [`roles`]: `shepherd roles` and `shepherd staff`;
//! - [`up`]: `shepherd up --log-file`, the extension's way of starting the core;
//! - [`with_core`]: the CLI's JSON and tables, answers, steers and `--follow` against a
//!   running core.

// A scenario reads as one story: its test may run past the product's 100-line rule.
#![allow(clippy::too_many_lines)]

mod agents;
mod asks;
mod basic;
mod doctor_env;
mod install;
mod lifecycle;
mod projects;
mod roles;
mod up;
mod with_core;
