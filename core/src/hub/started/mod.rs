//! # Sessions the human starts
//!
//! `new_session`, `continue_session` and `close_session` ([`requests`]); the process of
//! such a session is [`crate::hub::launched`]'s third kind (`Proc::Started`), started from
//! [`spec`].

pub(in crate::hub) mod requests;

use crate::store::started::StartedRow;
use crate::workers::launch::{LaunchSpec, ProcKey, SessionStart};

/// The spec that starts a started session's process.
pub(in crate::hub) fn spec(row: &StartedRow, start: SessionStart) -> LaunchSpec {
    LaunchSpec {
        worker: ProcKey::Started(row.started.id).raw(),
        label: row.started.name.clone(),
        cwd: row.started.cwd.clone().into(),
        start,
        model: None,
        thinking: None,
        tools: None,
        exclude_tools: Vec::new(),
        system_prompt: None,
        nonce: row.nonce.clone(),
    }
}
