//! # shepherd-core
//!
//! The coordination core: a local daemon that every Pi session, chat bridge and CLI call
//! connects to over a Unix socket (the *intercom*). It holds presence, asks, answers,
//! reports and steers durably in SQLite and routes them between clients.
//!
//! # Layout
//!
//! - [`agents`]: agent definitions (Markdown + YAML frontmatter) for managed workers.
//! - [`protocol`]: the wire contract (serde types, framing, error codes). No I/O.
//! - [`config`]: typed settings from defaults, TOML file and `SHEPHERD_*` environment.
//! - [`store`]: the SQLite database (schema, queries); written by the hub task alone.
//! - [`hub`]: the one actor that owns routing state and the store, and commits in groups.
//! - [`hosts`]: linked hosts: the other machines' cores this one reaches through a link
//!   command (`[[hosts]]`), their sessions and asks mirrored here.
//! - [`server`]: the socket listener and per-connection reader/writer tasks.
//! - [`client`]: an async intercom client for the CLI, bridges, tests and benchmarks.
//! - [`git`]: git2: the repository context of a session's cwd, project work's worktrees,
//!   and the primary branch's fast-forward.
//! - [`supervise`]: pairing rules and the views a supervisor session reads.
//! - [`usage`]: tokens and cost summed from Pi session files.
//! - [`clock`]: wall time in Unix milliseconds, which tests can stop and move.
//! - [`human`]: time spans as people read them (CLI, chat, views).
//! - [`files`]: private (0600) files and (0700) directories whatever the umask, and
//!   bounded reads of a user's files (regular files only).
//! - [`framing`]: frames on async streams, with the bounds on a frame's arrival.
//! - [`daemon`]: `shepherd up`: lock the state dir, open the store, start and stop the core.
//! - [`watch`]: the socket and database paths watched: a core whose files are removed or
//!   replaced under it stops rather than serve from a deleted database.
//! - [`workers`]: managed workers' processes: launch lines, the process host (headless or
//!   tmux), `/proc` ancestry.
//! - `examples`: filled-in records for tests (`test-support` feature, or shepherd-core's own tests).

pub mod agents;
pub mod approvals;
pub mod client;
pub mod clock;
pub mod config;
pub mod daemon;
#[cfg(any(test, feature = "test-support"))]
pub mod examples;
pub mod files;
pub mod framing;
pub mod git;
pub mod hosts;
pub mod hub;
pub mod human;
pub mod inbox;
pub mod peek;
pub mod protocol;
pub mod server;
pub mod store;
pub mod supervise;
pub mod usage;
pub mod watch;
pub mod workers;
