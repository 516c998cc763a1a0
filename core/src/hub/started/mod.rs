//! # Sessions the human starts
//!
//! `new_session`, `continue_session` and `close_session` ([`requests`]); the process of
//! such a session is [`crate::hub::launched`]'s third kind (`Proc::Started`), started from
//! [`spec`].

pub(in crate::hub) mod requests;

use crate::store::started::StartedRow;
use crate::workers::launch::{LaunchSpec, ProcKey, SessionStart};

/// The spec that starts a started session's process.
/// Its agent definition's settings, when it was started with one (`--agent`).
pub(in crate::hub) fn spec(row: &StartedRow, start: SessionStart) -> LaunchSpec {
    let launch = row.launch.clone().unwrap_or_default();
    LaunchSpec {
        worker: ProcKey::Started(row.started.id).raw(),
        label: row.started.name.clone(),
        cwd: row.started.cwd.clone().into(),
        start,
        model: launch.model,
        thinking: launch.thinking,
        tools: launch.tools,
        exclude_tools: launch.exclude_tools,
        system_prompt: launch.prompt,
        nonce: row.nonce.clone(),
    }
}
