//! Session selectors: how `shepherd send fix-login …` finds a session. Exact id, then a
//! unique id prefix, then a unique short id (the id's end, as listings show it), then a
//! unique name, then `app@main` (the repository and branch a listing shows), connected
//! sessions first among names and places. No match and several
//! matches are both errors that list what was found, so the user can be precise.

use rusqlite::Connection;

use super::{HubError, HubResult, State};
use crate::protocol::{ErrorCode, SessionId, SessionInfo};
use crate::store::{self, sessions::Named};

/// A resolved session.
pub(super) struct Target {
    pub id: SessionId,
    pub name: String,
}

impl State {
    /// The session `selector` names ([`State::resolve`]), as the store has it.
    pub(super) fn resolve_info(&self, selector: &str, db: &Connection) -> HubResult<SessionInfo> {
        let target = self.resolve(selector, db)?;
        let info = self.records.get(db, &target.id)?.ok_or_else(|| {
            HubError::new(
                ErrorCode::UnknownSession,
                format!("no session {selector:?}"),
            )
        })?;
        Ok(std::sync::Arc::unwrap_or_clone(info))
    }

    pub(super) fn resolve(&self, selector: &str, db: &Connection) -> HubResult<Target> {
        let selector = selector.trim();
        if selector.is_empty() {
            return Err(HubError::new(
                ErrorCode::InvalidArgument,
                "no session named: give an id, id prefix or name",
            ));
        }
        if let Some(live) = self.presence.live(selector) {
            return Ok(Target {
                id: SessionId::from(selector),
                name: live.name.clone(),
            });
        }
        if let Some(info) = store::sessions::named_by_id(db, &SessionId::from(selector))? {
            return Ok(Target {
                id: info.id,
                name: info.name,
            });
        }
        let by_prefix = store::sessions::named_by_id_prefix(db, selector)?;
        if by_prefix.len() == 1 {
            let s = &by_prefix[0];
            return Ok(Target {
                id: s.id.clone(),
                name: s.name.clone(),
            });
        }
        if by_prefix.len() > 1 {
            return Err(self.ambiguous(selector, "id prefix", by_prefix));
        }
        // The short id a listing shows: the id's end (at least 6 characters).
        if selector.len() >= 6 && selector.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
            let by_suffix = store::sessions::named_by_id_suffix(db, selector)?;
            match by_suffix.len() {
                0 => {}
                1 => {
                    let s = &by_suffix[0];
                    return Ok(Target {
                        id: s.id.clone(),
                        name: s.name.clone(),
                    });
                }
                _ => return Err(self.ambiguous(selector, "short id", by_suffix)),
            }
        }
        let mut by_name = store::sessions::named_by_name(db, selector)?;
        let mut what = "name";
        // `app@main`: the session working on branch main of repository app.
        if by_name.is_empty()
            && let Some((project, branch)) = selector.split_once('@')
            && !project.is_empty()
            && !branch.is_empty()
        {
            by_name = store::sessions::named_by_place(db, project, branch)?;
            what = "repository@branch";
        }
        let connected: Vec<&Named> = by_name
            .iter()
            .filter(|s| self.presence.is_live(&s.id))
            .collect();
        match (by_name.len(), connected.len()) {
            (0, _) => Err(HubError::new(
                ErrorCode::UnknownSession,
                format!("no session matches {selector:?}; `shepherd sessions --all` lists them"),
            )
            .with_details(serde_json::json!({ "candidates": [] }))),
            (1, _) => Ok(Target {
                id: by_name[0].id.clone(),
                name: by_name[0].name.clone(),
            }),
            (_, 1) => Ok(Target {
                id: connected[0].id.clone(),
                name: connected[0].name.clone(),
            }),
            _ => Err(self.ambiguous(selector, what, by_name)),
        }
    }

    fn ambiguous(&self, selector: &str, what: &str, matches: Vec<Named>) -> HubError {
        let candidates: Vec<serde_json::Value> = matches
            .iter()
            .map(|s| serde_json::json!({ "id": s.id, "name": s.name, "connected": self.presence.is_live(&s.id) }))
            .collect();
        let listed: Vec<String> = matches
            .iter()
            .map(|s| format!("{} ({})", s.name, s.id))
            .collect();
        HubError::new(
            ErrorCode::AmbiguousSession,
            format!(
                "{selector:?} matches {} sessions by {what}: {}; use a longer id",
                matches.len(),
                listed.join(", ")
            ),
        )
        .with_details(serde_json::json!({ "candidates": candidates }))
    }
}
