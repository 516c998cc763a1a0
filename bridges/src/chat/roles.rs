//! # What is said about roles (Manager, Chief) and their edges
//!
//! The role part of a session's topic name (`🧭 manager · app`, `👑 chief`), whom an ask
//! is addressed to on its card (`→ manager of app`), a message along a supervisor or
//! staff edge (`manager → fix-login: …` in the Lead's place, `fix-login → manager: …` in
//! the Manager's), a role change (`🧭 mara is now the manager of app`), and the staff tree
//! of `/staff` (chief → managers → leads, one line per session so that a reply to a line
//! steers that session), and `/release`'s request and answer. Pure, like the rest of
//! `chat/`.

use std::collections::{HashMap, HashSet};

use shepherd_core::protocol::requests::ReleaseRole;
use shepherd_core::protocol::{
    AskTo, EdgeKind, EdgeMessage, Lease, Role, SessionId, SessionInfo, StaffMember,
};

use super::format::{TOPIC_NAME_MAX, place, short_id, status_icon};
use super::format::{base_name, one_line, plural, truncate};
use super::html::Html;
use super::html::Rendered;

/// Longest session or project name shown.
const NAME: usize = 100;
/// Above this many sessions, `/staff` is one message instead of one per session.
pub const STAFF_LINES_MAX: usize = 25;

/// The icon of a role that has one.
pub fn role_icon(role: Role) -> Option<&'static str> {
    match role {
        Role::Manager => Some("🧭"),
        Role::Chief => Some("👑"),
        Role::Lead | Role::Supervisor => None,
    }
}

/// The repository's display name: `project`, else the repository's directory.
fn project_of(s: &SessionInfo) -> Option<String> {
    s.project
        .clone()
        .or_else(|| s.repo.as_deref().map(|r| base_name(r).to_string()))
        .filter(|p| !p.is_empty())
}

/// A role holder's topic or thread name: `🧭 manager · app`, `👑 chief`; `None` for a
/// Lead or a supervisor (its topic is named after the session).
pub fn role_title(s: &SessionInfo) -> Option<String> {
    let title = match s.role {
        Role::Manager => match project_of(s) {
            Some(p) => format!("🧭 manager · {}", one_line(&p)),
            None => "🧭 manager".to_string(),
        },
        Role::Chief => "👑 chief".to_string(),
        Role::Lead | Role::Supervisor => return None,
    };
    Some(truncate(&title, TOPIC_NAME_MAX))
}

/// `manager of app`, `chief`: a role as a person would say it.
fn role_words(role: Role, project: Option<&str>) -> String {
    match (role, project) {
        (Role::Manager, Some(p)) => format!("manager of {}", one_line(p)),
        (role, _) => role.as_str().to_string(),
    }
}

/// Whom an ask is for, on its card: `→ manager of app`, `→ chief`.
pub fn ask_to(to: &AskTo) -> String {
    format!(
        "→ {}",
        truncate(&role_words(to.role, to.project.as_deref()), NAME)
    )
}

/// One end of an edge: a Manager or the Chief by its role, anyone else by name.
fn end_label(role: Role, name: &str) -> String {
    match role {
        Role::Manager | Role::Chief => role.as_str().to_string(),
        Role::Lead | Role::Supervisor => truncate(&one_line(name), NAME),
    }
}

/// A message along an edge, said in the receiver's place: `💬 manager → fix-login: …`
/// (a steer from its Manager) or `💬 fix-login → manager: …` (mail to the Manager).
pub fn edge_message(m: &EdgeMessage) -> Rendered {
    let mut h = Html::new();
    let from = end_label(m.from_role, &m.from_name);
    let to = end_label(m.to_role, &m.to_name);
    let icon = match m.kind {
        EdgeKind::Staff => "🧭",
        EdgeKind::Supervisor => "📨",
        EdgeKind::Peer => "💬",
    };
    h.text(&format!("{icon} "))
        .bold(&format!("{from} → {to}"))
        .text(": ")
        .text(m.text.trim());
    h.into()
}

/// A session took or left a role: `🧭 mara is now the manager of app`, `👑 mara is now
/// the chief`, `↩️ mara left the manager role: a lead again`.
pub fn role_changed(s: &SessionInfo, previous: Role) -> Rendered {
    let mut h = Html::new();
    let name = truncate(&one_line(&s.name), NAME);
    let project = project_of(s);
    match (role_icon(s.role), role_icon(previous)) {
        (Some(icon), _) => {
            h.text(&format!("{icon} ")).bold(&name).text(&format!(
                " is now the {}",
                role_words(s.role, project.as_deref())
            ));
        }
        (None, Some(_)) => {
            h.text("↩️ ").bold(&name).text(&format!(
                " left the {} role: a {} again",
                previous.as_str(),
                s.role.as_str()
            ));
        }
        (None, None) => {
            h.text("ℹ️ ")
                .bold(&name)
                .text(&format!(" is now a {}", s.role.as_str()));
        }
    }
    h.into()
}

/// The request a chat's `release` sends, with the human as `by`; a project written
/// `gpu:app` is a linked host's repository, released by that host's core.
pub fn release_request(role: Role, project: Option<String>, by: &str) -> ReleaseRole {
    let (host, project) = match project.as_deref().map(shepherd_core::protocol::split_host) {
        Some((Some(host), name)) => (Some(host.to_string()), Some(name.to_string())),
        _ => (None, project),
    };
    ReleaseRole {
        id: 0,
        role,
        project,
        by: Some(by.to_string()),
        host,
    }
}

/// The answer to a chat's `release`: whose role it was, and when the holder hears of it.
pub fn released(lease: &Lease) -> Rendered {
    let role = match (lease.role, lease.project.as_deref()) {
        (Role::Manager, Some(p)) => format!("manager of {p}"),
        (role, _) => role.as_str().to_string(),
    };
    let told = if lease.connected {
        "it is connected and was told now"
    } else {
        "it is away and will be told when it returns"
    };
    let mut h = Html::new();
    h.text("🔓 Released ").bold(&role).text(&format!(
        " from {} ({}): it is a lead now; {told}.",
        one_line(&lease.session_name),
        short_id(lease.session_id.as_str())
    ));
    h.into()
}

/// `/staff`: a header and one line per session, in tree order (the Chief, each Manager
/// with its Leads, then those who report to the human), each with its session's id so
/// that a reply to the line steers that session. Above [`STAFF_LINES_MAX`] sessions the
/// lines are folded into the header.
pub fn staff_tree(members: &[StaffMember], prefix: char) -> (Rendered, Vec<(SessionId, Rendered)>) {
    let mut h = Html::new();
    if members.is_empty() {
        h.text("👥 No staff: no session is connected and nobody holds a role.");
        return (h.into(), Vec::new());
    }
    let count = |role: Role| members.iter().filter(|m| m.session.role == role).count() as u64;
    let (chiefs, managers) = (count(Role::Chief), count(Role::Manager));
    let leads = members.len() as u64 - chiefs - managers;
    // Only the counts there are: no "0 chiefs".
    let counts: Vec<String> = [
        (chiefs, "chief", "chiefs"),
        (managers, "manager", "managers"),
        (leads, "other session", "other sessions"),
    ]
    .into_iter()
    .filter(|(n, _, _)| *n > 0)
    .map(|(n, one, many)| plural(n, one, many))
    .collect();
    h.text("👥 ")
        .bold("Staff")
        .text(&format!(": {}", counts.join(", ")));
    let ordered = tree_order(members);
    let lines: Vec<(SessionId, Rendered)> = ordered
        .iter()
        .map(|(depth, m)| (m.session.id.clone(), staff_line(m, *depth)))
        .collect();
    if lines.len() > STAFF_LINES_MAX {
        for (_, line) in &lines {
            h.line().raw(&line.html, &line.plain);
        }
        h.line().italic(&format!(
            "{prefix}steer <session> <text> steers one (too many for a line each)"
        ));
        return (h.into(), Vec::new());
    }
    // Telegram shows the tree as one message with a ✍️ button per session; Matrix a line
    // each, replied to.
    let how = match prefix {
        '/' => "tap a session's ✍️ button to steer it",
        _ => "reply to a session's line to steer it",
    };
    h.line().italic(how);
    (h.into(), lines)
}

/// The members depth-first under whom they report to; roots (reporting to the human, or
/// to a session not listed) first the Chief, then Managers, then the rest, by name.
pub fn tree_order(members: &[StaffMember]) -> Vec<(usize, &StaffMember)> {
    let ids: HashSet<&SessionId> = members.iter().map(|m| &m.session.id).collect();
    let mut children: HashMap<&SessionId, Vec<&StaffMember>> = HashMap::new();
    let mut roots = Vec::new();
    for m in members {
        match m
            .reports_to
            .session_id
            .as_ref()
            .filter(|id| ids.contains(id))
        {
            Some(boss) if *boss != m.session.id => children.entry(boss).or_default().push(m),
            _ => roots.push(m),
        }
    }
    let rank = |m: &&StaffMember| match m.session.role {
        Role::Chief => 0,
        Role::Manager => 1,
        _ => 2,
    };
    let sort = |v: &mut Vec<&StaffMember>| {
        v.sort_by(|a, b| {
            (rank(a), &a.session.name, &a.session.id).cmp(&(
                rank(b),
                &b.session.name,
                &b.session.id,
            ))
        })
    };
    sort(&mut roots);
    for v in children.values_mut() {
        sort(v);
    }
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut stack: Vec<(usize, &StaffMember)> = roots.into_iter().rev().map(|m| (0, m)).collect();
    while let Some((depth, m)) = stack.pop() {
        if !seen.insert(&m.session.id) {
            continue;
        }
        out.push((depth, m));
        if let Some(kids) = children.get(&m.session.id) {
            stack.extend(kids.iter().rev().map(|k| (depth + 1, *k)));
        }
    }
    out
}

/// One session of the tree: `└ 🟢 fix-login · idle · app@fix-login · ❓ 1 open ask · 3f2a9c1b`,
/// a role holder with its role first (`🧭 manager of app · mara · idle · …`).
fn staff_line(m: &StaffMember, depth: usize) -> Rendered {
    let s = &m.session;
    let mut h = Html::new();
    if depth > 0 {
        h.text(&format!("{}└ ", "   ".repeat(depth - 1)));
    }
    if let Some(icon) = role_icon(s.role) {
        h.text(&format!(
            "{icon} {} · ",
            role_words(s.role, project_of(s).as_deref())
        ));
    }
    let state = if s.connected {
        s.status.to_string()
    } else {
        "away".to_string()
    };
    h.text(&format!("{} ", status_icon(s)))
        .bold(&truncate(&one_line(&s.name), NAME))
        .text(&format!(" · {} · {}", one_line(&state), place(s)));
    if s.open_asks > 0 {
        h.text(&format!(
            " · ❓ {}",
            plural(s.open_asks.into(), "open ask", "open asks")
        ));
    }
    h.text(" · ").code(short_id(&s.id));
    h.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::examples;
    use shepherd_core::protocol::{ReportsTo, Superior};

    #[test]
    fn release_sends_the_human_as_by_and_says_when_the_holder_hears() {
        let parsed = crate::chat::commands::parse("/release manager app", '/', None);
        let Some(crate::chat::commands::ChatCommand::Release { role, project }) = parsed else {
            panic!("{parsed:?}");
        };
        let req = release_request(role, project, "ada");
        assert_eq!(
            serde_json::to_value(shepherd_core::protocol::ClientMsg::from(req)).unwrap(),
            serde_json::json!({
                "type": "release_role", "id": 0, "role": "manager", "project": "app", "by": "ada"
            })
        );
        let lease = Lease {
            role: Role::Manager,
            repo_id: Some("/src/app/.git".into()),
            project: Some("app".into()),
            session_id: "m1111111-x".into(),
            session_name: "mara".into(),
            connected: false,
            since: 0,
            host: None,
        };
        assert_eq!(
            released(&lease).plain,
            "🔓 Released manager of app from mara (111111-x): it is a lead now; it is away and will be told when it returns."
        );
        let chief = Lease {
            role: Role::Chief,
            project: None,
            connected: true,
            ..lease
        };
        assert!(released(&chief).plain.contains("chief from mara"));
        assert!(released(&chief).plain.contains("told now"));
    }

    fn session(id: &str, name: &str, role: Role) -> SessionInfo {
        SessionInfo {
            id: id.into(),
            name: name.into(),
            role,
            project: Some("app".into()),
            ..examples::session_info()
        }
    }

    fn member(s: SessionInfo, boss: Option<(&str, Superior)>) -> StaffMember {
        let reports_to = match boss {
            Some((id, to)) => ReportsTo {
                to,
                session_id: Some(id.into()),
                session_name: None,
            },
            None => ReportsTo::human(),
        };
        StaffMember {
            session: s,
            reports_to,
        }
    }

    #[test]
    fn role_titles_name_the_role_and_the_repository() {
        let m = session("m", "mara", Role::Manager);
        assert_eq!(role_title(&m).as_deref(), Some("🧭 manager · app"));
        let c = session("c", "cleo", Role::Chief);
        assert_eq!(role_title(&c).as_deref(), Some("👑 chief"));
        assert_eq!(role_title(&session("l", "fix-login", Role::Lead)), None);
        let no_project = SessionInfo { project: None, ..m };
        assert_eq!(
            role_title(&no_project).as_deref(),
            Some("🧭 manager · app"),
            "the repository's directory"
        );
    }

    #[test]
    fn edges_name_roles_by_role_and_leads_by_name() {
        let m = EdgeMessage {
            kind: EdgeKind::Staff,
            from_id: "m".into(),
            from_name: "mara".into(),
            from_role: Role::Manager,
            to_id: "l".into(),
            to_name: "fix-login".into(),
            to_role: Role::Lead,
            text: "rebase on main <now>".into(),
            message_id: 3.into(),
            created_at: 0,
        };
        let r = edge_message(&m);
        assert_eq!(r.plain, "🧭 manager → fix-login: rebase on main <now>");
        assert!(r.html.contains("&lt;now&gt;"), "{}", r.html);
        let up = EdgeMessage {
            kind: EdgeKind::Supervisor,
            from_id: "l".into(),
            from_name: "fix-login".into(),
            from_role: Role::Lead,
            to_id: "m".into(),
            to_name: "mara".into(),
            to_role: Role::Manager,
            text: "done".into(),
            ..m
        };
        assert_eq!(edge_message(&up).plain, "📨 fix-login → manager: done");
    }

    #[test]
    fn role_changes_say_what_the_session_is_now() {
        let m = session("m", "mara", Role::Manager);
        assert_eq!(
            role_changed(&m, Role::Lead).plain,
            "🧭 mara is now the manager of app"
        );
        let c = session("c", "cleo", Role::Chief);
        assert_eq!(
            role_changed(&c, Role::Lead).plain,
            "👑 cleo is now the chief"
        );
        let l = session("m", "mara", Role::Lead);
        assert_eq!(
            role_changed(&l, Role::Manager).plain,
            "↩️ mara left the manager role: a lead again"
        );
    }

    #[test]
    fn the_staff_tree_is_chief_managers_leads() {
        let chief = member(session("c", "cleo", Role::Chief), None);
        let manager = member(
            session("m", "mara", Role::Manager),
            Some(("c", Superior::Chief)),
        );
        let mut lead = session("l", "fix-login", Role::Lead);
        lead.open_asks = 1;
        lead.branch = Some("fix-login".into());
        let lead = member(lead, Some(("m", Superior::Manager)));
        let docs = member(
            SessionInfo {
                connected: false,
                ..session("d", "docs", Role::Lead)
            },
            Some(("c", Superior::Chief)),
        );
        let (head, lines) = staff_tree(&[lead, docs, manager, chief], '/');
        assert_eq!(
            head.plain,
            "👥 Staff: 1 chief, 1 manager, 2 other sessions\ntap a session's ✍️ button to steer it"
        );
        let plain: Vec<&str> = lines.iter().map(|(_, r)| r.plain.as_str()).collect();
        assert_eq!(
            plain,
            [
                "👑 chief · 🟢 cleo · idle · app@main · c",
                "└ 🧭 manager of app · 🟢 mara · idle · app@main · m",
                "   └ 🟢 fix-login · idle · app@fix-login · ❓ 1 open ask · l",
                "└ ⚪ docs · away · app@main · d",
            ]
        );
        let ids: Vec<&str> = lines.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["c", "m", "l", "d"]);
        // Without a chief: no "0 chiefs".
        let solo = member(session("s", "solo", Role::Lead), None);
        let (head, _) = staff_tree(&[solo], '/');
        assert!(
            head.plain.starts_with("👥 Staff: 1 other session\n"),
            "{}",
            head.plain
        );
    }

    #[test]
    fn an_empty_or_huge_staff_is_one_message() {
        let (head, lines) = staff_tree(&[], '!');
        assert!(head.plain.starts_with("👥 No staff"), "{}", head.plain);
        assert!(lines.is_empty());
        let many: Vec<StaffMember> = (0..=STAFF_LINES_MAX)
            .map(|i| {
                member(
                    session(&format!("s{i}"), &format!("s{i}"), Role::Lead),
                    None,
                )
            })
            .collect();
        let (head, lines) = staff_tree(&many, '!');
        assert!(lines.is_empty());
        assert!(head.plain.contains("s25"), "{}", head.plain);
        assert!(head.plain.contains("!steer"), "{}", head.plain);
    }
}
