//! The daemon at the protocol level: one test binary (`cargo test --test daemon`), one
//! module per area, each against the real `shepherd up` on a temp agent dir with clients
//! over its socket (and, for workers and project work, real Pi processes the core
//! launches). Filter by module: `cargo test --test daemon mail::`.
//!
//! - [`asks`]: two humans answering the same ask at once;
//! - [`authority`]: the authority matrix, every edge request from each role;
//! - [`bad_input`]: bad frames, bodies, greetings and values over the real socket;
//! - [`crash`]: `kill -9` with messages, asks and answers in flight, then restart;
//! - [`disk`]: the disk fills under the core: refusals, nothing lost, recovery;
//! - [`endings`]: `bye`, lost sessions, `/reload`, and `interrupt`;
//! - [`files`]: what `shepherd up` does to the files and directories it is given, and when
//!   they are deleted under it;
//! - [`hosts`]: cores on other machines linked into one herd (`[[hosts]]`, `shepherd link`);
//! - [`keys`]: idempotency keys on `ask` and `report`;
//! - [`mail`]: steers and messages, ordering, redelivery, acknowledgements;
//! - [`names`]: readable default session names;
//! - [`presence`]: sessions, their events, selectors, limits, the daemon's lifecycle;
//! - [`projects`]: project work with real Lead Pi processes;
//! - [`reports`]: results and reports, kept and listed;
//! - [`roles`]: the Manager and Chief leases and what each role may do;
//! - [`scale`]: 200 sessions at once, exact counts;
//! - [`senders`]: who may send each request, and how everyone else is refused;
//! - [`supervise`]: supervision at the protocol level;
//! - [`unanswer`]: taking back an answer the session cannot have seen;
//! - [`usage`]: `usage` over recorded session files;
//! - [`workers`]: managed workers with real worker Pi processes.

// A scenario reads as one story: its test may run past the product's 100-line rule.
#![allow(clippy::too_many_lines)]

mod approvals;
mod asks;
mod authority;
mod bad_input;
mod crash;
mod disk;
mod endings;
mod files;
mod hosts;
mod keys;
mod mail;
mod names;
mod presence;
mod projects;
mod reports;
mod roles;
mod scale;
mod senders;
mod supervise;
mod unanswer;
mod usage;
mod workers;
