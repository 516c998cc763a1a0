//! # shepherd-bridges
//!
//! The phone side of shepherd: chat bridges that relay what needs a human (asks, reports,
//! status) to a chat and carry answers, steers and commands back. Each bridge is just
//! another client of the core's socket (client kind `bridge`); `shepherd up` runs the
//! configured bridges in the core's process, on the same code path.
//!
//! # Layout
//!
//! - [`chat`]: what the bridges share, independent of any platform: what an ask card, a
//!   report or a status says, HTML rendering and escaping, splitting long text at safe
//!   boundaries, command parsing, and who may speak.

pub mod chat;
