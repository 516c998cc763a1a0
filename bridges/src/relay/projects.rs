//! # Project work in the project's place
//!
//! A project's place is its repository's Manager role topic or thread (`🧭 manager ·
//! app`): the place of the session holding the repository's Manager lease (connected or
//! not; the topic is created when it has none yet), else, with no Manager at all, the
//! Lead's own place. There the relay says each `assignment_update` (a Lead's finished
//! turn) once, tagged `app@feat/a` (keyed by its mail id, so an event seen again after a
//! reconnect is not said twice), and one short line per `assignment_changed` whose state
//! or Lead state changed ([`Change::between`]); other field changes are remembered
//! silently. After a reconnect the assignments are re-read (`list_projects`) without
//! saying anything: changes missed while away are in `/projects`. A linked host's
//! assignments come through its link marked with their host; their ids are that core's
//! and their repository that machine's, so each is keyed and placed on its own host.

use std::collections::HashMap;

use shepherd_core::protocol::{Assignment, AssignmentId, MessageId, Role, SessionId, SessionInfo};

use super::{Platform, Relay};
use crate::chat::projects::{self, Change};

/// What the relay knows of project work.
#[derive(Debug, Default)]
pub struct ProjectsSeen {
    /// Every assignment as last told (by an event or a listing), by host and id.
    pub assignments: HashMap<(Option<String>, AssignmentId), Assignment>,
    /// The updates said here, by their host and mail id: each is said once.
    pub updates: std::collections::HashSet<(Option<String>, MessageId)>,
}

impl<P: Platform> Relay<P> {
    /// An assigned Lead finished a turn: its text, tagged, in the project's place, once.
    pub(super) async fn assignment_update(
        &mut self,
        assignment: Assignment,
        text: &str,
        message_id: MessageId,
    ) {
        self.projects
            .assignments
            .insert(key(&assignment), assignment.clone());
        if !self
            .projects
            .first_time(assignment.host.clone(), message_id)
        {
            return; // Said already.
        }
        let rendered = projects::update(&assignment, text);
        let place = self.project_place(&assignment).await;
        self.post_about(&place, rendered, "update").await;
    }

    /// An assignment changed: remembered; a change of its state or its Lead's is said in
    /// one line in the project's place.
    pub(super) async fn assignment_changed(&mut self, assignment: Assignment) {
        let old = self
            .projects
            .assignments
            .insert(key(&assignment), assignment.clone());
        let Some(change) = Change::between(old.as_ref(), &assignment) else {
            return;
        };
        // Said already (before a restart of the core or this bridge, whose memory of the
        // assignment starts over): not again.
        // Its id and creation time: ids start over with a new store.
        let (id, at) = (assignment.id, assignment.created_at);
        let said_key = match &assignment.host {
            Some(host) => format!("assignment:{host}:{id}:{at}"),
            None => format!("assignment:{id}:{at}"),
        };
        let said = format!("{change:?}");
        if self.platform.last_said(&said_key).as_deref() == Some(said.as_str()) {
            return;
        }
        self.platform.set_last_said(&said_key, &said);
        let rendered = projects::changed(&assignment, change);
        let place = self.project_place(&assignment).await;
        self.post_about(&place, rendered, "assignment").await;
    }

    /// After (re)connecting: the assignments as they are now, said nowhere.
    pub(super) async fn resync_projects(&mut self) {
        match self.core.projects(false).await {
            Ok(herd) => {
                for a in herd.items.into_iter().flat_map(|p| p.assignments) {
                    self.projects.assignments.insert(key(&a), a);
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "{}: could not list the projects", P::NAME)
            }
        }
    }

    /// The session whose place is the project's: the holder of the repository's Manager
    /// lease on the assignment's host (a known session with that role, else that core's
    /// leases), else the Lead.
    async fn project_place(&mut self, a: &Assignment) -> String {
        let on_its_host = self.sessions.values().filter(|s| s.host == a.host);
        if let Some(m) = manager_of(on_its_host, &a.repo_id) {
            return m.to_string();
        }
        if let Ok(leases) = self.core.roles(a.host.as_deref()).await
            && let Some(lease) = leases
                .iter()
                .find(|l| l.role == Role::Manager && l.repo_id.as_deref() == Some(&a.repo_id))
        {
            return lease.session_id.to_string();
        }
        a.session_id.to_string()
    }
}

/// The Manager of repository `repo_id` among known sessions: a connected one first, else
/// the one seen last.
pub fn manager_of<'a>(
    sessions: impl Iterator<Item = &'a SessionInfo>,
    repo_id: &str,
) -> Option<&'a SessionId> {
    sessions
        .filter(|s| s.role == Role::Manager && s.repo_id.as_deref() == Some(repo_id))
        .max_by_key(|s| (s.connected, s.last_seen))
        .map(|s| &s.id)
}

impl ProjectsSeen {
    /// Whether the update with mail id `message_id` (of `host`'s core) is new here (and
    /// now seen).
    pub fn first_time(&mut self, host: Option<String>, message_id: MessageId) -> bool {
        self.updates.insert((host, message_id))
    }
}

/// How the relay keys an assignment: its host and its id there.
fn key(a: &Assignment) -> (Option<String>, AssignmentId) {
    (a.host.clone(), a.id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::examples;

    fn session(id: &str, role: Role, repo: &str, connected: bool, seen: u64) -> SessionInfo {
        SessionInfo {
            id: id.into(),
            role,
            repo_id: Some(repo.into()),
            connected,
            last_seen: seen,
            ..examples::session_info()
        }
    }

    #[test]
    fn the_project_is_its_repositorys_manager() {
        let all = [
            session("lead", Role::Lead, "/app/.git", true, 9),
            session("other", Role::Manager, "/web/.git", true, 9),
            session("old", Role::Manager, "/app/.git", false, 5),
        ];
        assert_eq!(
            manager_of(all.iter(), "/app/.git").map(|s| s.as_str()),
            Some("old")
        );
        let mut more = all.to_vec();
        more.push(session("now", Role::Manager, "/app/.git", true, 1));
        assert_eq!(
            manager_of(more.iter(), "/app/.git").map(|s| s.as_str()),
            Some("now")
        );
        assert_eq!(manager_of(all.iter(), "/none/.git"), None);
    }

    #[test]
    fn an_update_is_said_once() {
        let mut seen = ProjectsSeen::default();
        assert!(seen.first_time(None, 7.into()));
        assert!(!seen.first_time(None, 7.into()));
        assert!(seen.first_time(None, 8.into()));
        // A linked host's mail ids are its own core's.
        assert!(seen.first_time(Some("gpu".into()), 7.into()));
        assert!(!seen.first_time(Some("gpu".into()), 7.into()));
    }
}
