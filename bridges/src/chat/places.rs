//! # Where a session's messages go
//!
//! With `per_session` places (the default) each session has its own topic (Telegram) or
//! thread (Matrix), keyed by its id. With `per_project` the sessions working in one
//! repository share its place, keyed `project:app` (`project:gpu:app` for a linked host's
//! repository) and named after the repository; every message there already names its
//! session (cards, reports, news). A session outside any repository keeps its own place.
//! Text typed in a project's place goes to its one connected session, else the human is
//! asked to reply to the session's message instead ([`crate::relay::Relay::here_session`]).

use shepherd_core::config::Places;
use shepherd_core::protocol::SessionInfo;

use super::format::{one_line, truncate};

/// The start of a project place's key.
pub const PROJECT_PLACE: &str = "project:";

/// The key of `session`'s place.
pub fn place_key(session: &str, info: Option<&SessionInfo>, places: Places) -> String {
    match (places, info.and_then(|s| s.project.as_deref())) {
        (Places::PerProject, Some(project)) => {
            let host = info.and_then(|s| s.host.as_deref());
            match host {
                Some(host) => format!("{PROJECT_PLACE}{host}:{project}"),
                None => format!("{PROJECT_PLACE}{project}"),
            }
        }
        _ => session.to_string(),
    }
}

/// A project place's host and repository, when `key` is one.
pub fn project_of(key: &str) -> Option<(Option<&str>, &str)> {
    let rest = key.strip_prefix(PROJECT_PLACE)?;
    Some(match rest.split_once(':') {
        Some((host, project)) => (Some(host), project),
        None => (None, rest),
    })
}

/// A project place's name: `app`, or `app · gpu` on a linked host.
pub fn project_place_name(key: &str) -> Option<String> {
    let (host, project) = project_of(key)?;
    let project = truncate(&one_line(project), 100);
    Some(match host {
        Some(host) => format!("{project} · {host}"),
        None => project,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_of_a_repository_share_its_place_only_per_project() {
        let mut s = shepherd_core::examples::session_info();
        s.project = Some("app".into());
        assert_eq!(place_key("s1", Some(&s), Places::PerSession), "s1");
        assert_eq!(place_key("s1", Some(&s), Places::PerProject), "project:app");
        assert_eq!(project_place_name("project:app").as_deref(), Some("app"));
        s.host = Some("gpu".into());
        let key = place_key("s1", Some(&s), Places::PerProject);
        assert_eq!(key, "project:gpu:app");
        assert_eq!(project_of(&key), Some((Some("gpu"), "app")));
        assert_eq!(project_place_name(&key).as_deref(), Some("app · gpu"));
        s.project = None;
        assert_eq!(place_key("s1", Some(&s), Places::PerProject), "s1");
        assert_eq!(place_key("s1", None, Places::PerProject), "s1");
        assert_eq!(project_of("s1"), None);
    }
}
