//! # The chat-agnostic layer
//!
//! Everything a bridge says or understands that does not depend on the platform. A
//! bridge turns these into Telegram messages or Matrix events. All of it is pure (no
//! I/O, the clock passed in), so the same text reaches every chat and the tests.
//!
//! - [`render`]: what shepherd says ([`Rendered`]: HTML and plain text): ask cards and
//!   their answered form, reports, session and ask lists, statuses, help, topic names.
//! - [`html`]: escaping, a builder that writes HTML and plain text together, Matrix's
//!   `<br>` form.
//! - [`markdown`](mod@markdown): a session's Markdown (reports, results, updates, steers) as
//!   that HTML: bold, italics, code, links (http, https, mailto only), quotes, headings as
//!   bold lines and lists as `• ` / `1. ` lines, everything escaped.
//! - [`split`]: Telegram's length (UTF-16 after entity parsing), splitting HTML into
//!   balanced chunks at good boundaries, and when to send a document instead.
//! - [`commands`]: parsing `/cmd` and `!cmd`, the command table, reading a reply or a
//!   reaction as an answer to an ask.
//! - [`pairing`]: what is said about supervision: a pairing's start, goal, steers, done
//!   and stop, in the worker's topic or thread, and the replies to the pairing commands.
//! - [`session_news`]: a session's start and ending in its topic or thread, its ask cards
//!   once it is gone, `/stop`'s confirmation and `/status` in its topic.
//! - [`roles`]: Manager and Chief topic names, whom an ask is for, edge messages, role
//!   changes and the `/staff` tree.
//! - [`access`]: the allowlist of users and chats, with reasons for the audit log.
//! - [`replies`]: the short replies for failed requests and session picking.
//! - [`typed`]: text typed in a session's place: the answer it gave and its undo, or
//!   which of several asks is meant.
//! - [`workers`]: managed workers: `/workers` as each owner's tree, a worker's ending in
//!   its owner's place, whom a worker's question is for.
//! - [`peek`](mod@peek): `/peek`: what a session is doing now, with how to refresh it.
//! - [`diff`](mod@diff): `/diff`: what a session changed, the stat and the patch's file.
//! - [`projects`]: project work: `/projects` as repositories → assignments, a Lead's
//!   update tagged `app@feat/a` and an assignment's state changes in the project's place.
//! - [`places`]: where a session's messages go: its own topic or thread, or its
//!   repository's (`per_project`).
//! - [`format`](mod@format): small helpers (relative times, `repo@branch`, UTF-16 truncation).
//!
//! A bridge's path for a message: render, then [`split::split_html`] (or a document when
//! [`split::as_document`] says so), then for Matrix [`html::for_matrix`] on each chunk with
//! [`split::text_of`] of the chunk as its `body`.

pub mod access;
pub mod approvals;
pub mod commands;
pub mod diff;
pub mod format;
pub mod hosts;
pub mod html;
pub mod markdown;
pub mod pairing;
pub mod peek;
pub mod places;
pub mod projects;
pub mod render;
pub mod replies;
pub mod roles;
pub mod session_news;
pub mod split;
mod tokens;
pub mod typed;
pub mod workers;

pub use access::{Allowlist, Decision};
pub use commands::{ChatCommand, UsageError};
pub use render::{AskCard, AskOption, Rendered};
