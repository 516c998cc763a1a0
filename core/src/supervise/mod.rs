//! # Supervision
//!
//! A supervisor Pi session watches a worker Pi session toward a goal (`/supervise`). The
//! hub owns pairings and drives them (`hub::supervise`); this module holds what does not
//! need the hub: the rules and guards ([`rules`]), and the *views*: what the worker did
//! since the previous look, built from its session file and its git repository without
//! any model call.

pub mod changes;
pub mod rules;
pub mod view;
