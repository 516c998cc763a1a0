//! # `shepherd roles` and `shepherd staff`
//!
//! `roles`: the role leases the core holds (the Manager of each repository, the Chief),
//! who holds each and whether the holder is connected or away (a lease whose holder is
//! away may be taken by another session's `/manager` or `/chief`). `staff`: every
//! connected session and every lease holder as a tree, the Chief first, each Manager with
//! the Leads of its repository, then whoever reports to the human; each row with state,
//! branch, open asks and id (steer one with `shepherd send <id> <text>`). With `--json`
//! both print the protocol's `Lease` and `StaffMember` objects unchanged.

use std::process::ExitCode;

use shepherd_bridges::chat::roles::tree_order;
use shepherd_core::protocol::{Lease, Role, StaffMember, Superior, requests};

use super::format::{ago, base_name, here_or, now_ms, short_id};
use super::table::{Align, Table};
use super::{Ctx, print, print_json, terminal_width};

/// Run `shepherd roles` (`host`: a linked host's).
pub async fn roles(ctx: &Ctx, host: Option<&str>) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let leases = conn
        .herd_list(host, |host| requests::ListRoles {
            host,
            ..Default::default()
        })
        .await?;
    if ctx.json {
        print_json(&leases)?;
    } else if leases.is_empty() {
        print(
            "no roles held: `/manager` in a Pi session in a repository's primary checkout makes \
             it that repository's Manager, `/chief` makes a session the Chief\n",
        )?;
    } else {
        print(&render_roles(&leases, now_ms(), terminal_width()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The role and project `shepherd roles release` was given, as a request.
pub fn release_request(role: &str, project: Option<&str>) -> anyhow::Result<requests::ReleaseRole> {
    let project = project.map(str::trim).filter(|p| !p.is_empty());
    let (role, project) = match (role.trim().to_lowercase().as_str(), project) {
        ("manager", Some(p)) => (Role::Manager, Some(p.to_string())),
        ("manager", None) => anyhow::bail!(
            "say which repository's Manager to release: `shepherd roles release manager <project>` \
             (`shepherd roles` lists the leases)"
        ),
        ("chief", None) => (Role::Chief, None),
        ("chief", Some(p)) => {
            anyhow::bail!("the Chief has no repository: `shepherd roles release chief` (not {p:?})")
        }
        (other, _) => anyhow::bail!(
            "{other:?} is not a lease: `shepherd roles release manager <project>` or \
             `shepherd roles release chief`"
        ),
    };
    // `gpu:app`: a linked host's repository, released by that host's core.
    let (host, project) = match project.as_deref().map(shepherd_core::protocol::split_host) {
        Some((Some(host), name)) => (Some(host.to_string()), Some(name.to_string())),
        _ => (None, project),
    };
    Ok(requests::ReleaseRole {
        id: 0,
        role,
        project,
        by: None,
        host,
    })
}

/// Run `shepherd roles release <role> [project]`.
pub async fn release(ctx: &Ctx, role: &str, project: Option<&str>) -> anyhow::Result<ExitCode> {
    let req = release_request(role, project)?;
    let mut conn = ctx.connect().await?;
    let lease = conn.call(req).await?;
    if ctx.json {
        print_json(&lease)?;
    } else {
        let state = if lease.connected {
            "connected; told now"
        } else {
            "away; told when it returns"
        };
        let role = match (lease.role, lease.project.as_deref()) {
            (Role::Manager, Some(p)) => format!("manager of {p}"),
            (role, _) => role.as_str().to_string(),
        };
        print(&format!(
            "released {role} from {} ({}, {state}); it is a Lead now\n",
            lease.session_name,
            short_id(lease.session_id.as_str())
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Run `shepherd staff`.
pub async fn staff(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let members = conn.call(requests::ListStaff::default()).await?;
    if ctx.json {
        print_json(&members)?;
    } else if members.is_empty() {
        print("no staff: no session is connected and nobody holds a role\n")?;
    } else {
        print(&render_staff(&members, terminal_width()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The leases table: role, repository, holder, its id, connected or away, since when.
pub fn render_roles(leases: &[Lease], now: u64, width: usize) -> String {
    let hosts = leases.iter().any(|l| l.host.is_some());
    let mut table = Table::new();
    if hosts {
        table = table.column("HOST", Align::Left);
    }
    let mut table = table
        .column("ROLE", Align::Left)
        .middle("REPOSITORY", 10)
        .middle("HOLDER", 10)
        .column("ID", Align::Left)
        .column("STATE", Align::Left)
        .column("SINCE", Align::Left);
    for l in leases {
        let repo = l
            .project
            .clone()
            .or_else(|| l.repo_id.as_deref().map(|r| base_name(r).to_string()))
            .unwrap_or_else(|| "-".to_string());
        let host = hosts.then(|| here_or(&l.host));
        table.row(
            host.into_iter()
                .chain([
                    l.role.as_str().to_string(),
                    repo,
                    l.session_name.clone(),
                    short_id(l.session_id.as_str()).to_string(),
                    if l.connected { "connected" } else { "away" }.to_string(),
                    ago(l.since, now),
                ])
                .collect(),
        );
    }
    table.render(width)
}

/// The staff tree as a table: the ROLE column is indented under whom each reports to; a
/// HOST column when any member runs on a linked host.
pub fn render_staff(members: &[StaffMember], width: usize) -> String {
    let hosts = members.iter().any(|m| m.session.host.is_some());
    let mut table = Table::new();
    if hosts {
        table = table.column("HOST", Align::Left);
    }
    let mut table = table
        .column("ROLE", Align::Left)
        .middle("NAME", 12)
        .column("STATE", Align::Left)
        .middle("REPO@BRANCH", 12)
        .column("ASKS", Align::Right)
        .column("REPORTS TO", Align::Left)
        .column("ID", Align::Left);
    for (depth, m) in tree_order(members) {
        let s = &m.session;
        let indent = if depth == 0 {
            String::new()
        } else {
            format!("{}└ ", "  ".repeat(depth - 1))
        };
        let role = match (s.role, s.project.as_deref()) {
            (Role::Manager, Some(p)) => format!("manager of {p}"),
            (role, _) => role.as_str().to_string(),
        };
        let state = if s.connected {
            s.status.to_string()
        } else {
            "away".to_string()
        };
        // One name for a place everywhere: `app@feat/a`, a linked worktree's too.
        let place = shepherd_bridges::chat::format::repo_branch(s).unwrap_or_else(|| "-".into());
        let boss = match m.reports_to.to {
            Superior::Human => "you".to_string(),
            to => {
                let name = m.reports_to.session_name.as_deref().unwrap_or("?");
                let role = if to == Superior::Manager {
                    "manager"
                } else {
                    "chief"
                };
                format!("{role} {name}")
            }
        };
        let host = hosts.then(|| here_or(&s.host));
        table.row(
            host.into_iter()
                .chain([
                    format!("{indent}{role}"),
                    s.name.clone(),
                    state,
                    place,
                    s.open_asks.to_string(),
                    boss,
                    short_id(s.id.as_str()).to_string(),
                ])
                .collect(),
        );
    }
    table.render(width)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::examples;
    use shepherd_core::protocol::{ReportsTo, SessionInfo};

    fn member(
        id: &str,
        name: &str,
        role: Role,
        boss: Option<(&str, &str, Superior)>,
    ) -> StaffMember {
        let reports_to = match boss {
            Some((id, name, to)) => ReportsTo {
                to,
                session_id: Some(id.into()),
                session_name: Some(name.into()),
            },
            None => ReportsTo::human(),
        };
        StaffMember {
            session: SessionInfo {
                id: id.into(),
                name: name.into(),
                role,
                project: Some("app".into()),
                repo: Some("/src/app".into()),
                ..examples::session_info()
            },
            reports_to,
        }
    }

    #[test]
    fn the_staff_table_is_a_tree() {
        let out = render_staff(
            &[
                member(
                    "l1111111-x",
                    "fix-login",
                    Role::Lead,
                    Some(("m1111111-x", "mara", Superior::Manager)),
                ),
                member("m1111111-x", "mara", Role::Manager, None),
                member("s1111111-x", "solo", Role::Lead, None),
            ],
            200,
        );
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("ROLE  "), "{out}");
        assert!(lines[1].starts_with("manager of app  mara "), "{out}");
        assert!(lines[1].contains(" you "), "{out}");
        assert!(lines[2].starts_with("└ lead"), "{out}");
        assert!(lines[2].contains("manager mara"), "{out}");
        assert!(lines[2].ends_with("111111-x"), "{out}");
        assert!(lines[3].starts_with("lead"), "{out}");
        assert!(!out.contains("HOST"), "{out}");

        // A member on a linked host: a HOST column, `(here)` for this machine's.
        let mut far = member(
            "g1111111-x",
            "gpu-lead",
            Role::Lead,
            Some(("c1111111-x", "boss", Superior::Chief)),
        );
        far.session.host = Some("gpu".into());
        let out = render_staff(&[member("c1111111-x", "boss", Role::Chief, None), far], 200);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("HOST  "), "{out}");
        assert!(lines[1].starts_with("(here)  chief"), "{out}");
        assert!(lines[2].starts_with("gpu     └ lead"), "{out}");
    }

    #[test]
    fn release_takes_a_manager_with_its_project_or_the_chief_alone() {
        let req = release_request("manager", Some("app")).unwrap();
        assert_eq!(
            (req.role, req.project.as_deref()),
            (Role::Manager, Some("app"))
        );
        let req = release_request("Chief", None).unwrap();
        assert_eq!((req.role, req.project), (Role::Chief, None));
        // A linked host's repository: that host's core releases it.
        let req = release_request("manager", Some("gpu:app")).unwrap();
        assert_eq!(
            (req.project.as_deref(), req.host.as_deref()),
            (Some("app"), Some("gpu"))
        );
        let e = release_request("manager", None).unwrap_err().to_string();
        assert!(e.contains("release manager <project>"), "{e}");
        let e = release_request("chief", Some("app"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no repository"), "{e}");
        let e = release_request("lead", None).unwrap_err().to_string();
        assert!(e.contains("not a lease"), "{e}");
    }

    #[test]
    fn the_roles_table_says_connected_or_away() {
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
        let chief = Lease {
            role: Role::Chief,
            repo_id: None,
            project: None,
            connected: true,
            ..lease.clone()
        };
        let out = render_roles(&[lease.clone(), chief.clone()], 120_000, 200);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("ROLE     REPOSITORY  HOLDER"), "{out}");
        assert!(lines[1].starts_with("manager  app"), "{out}");
        assert!(lines[1].contains("away"), "{out}");
        assert!(lines[2].starts_with("chief    -"), "{out}");
        assert!(lines[2].contains("connected"), "{out}");
        // A linked host's lease: a HOST column, `(here)` for this machine's.
        let far = Lease {
            host: Some("gpu".into()),
            ..lease
        };
        let out = render_roles(&[chief, far], 120_000, 200);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("HOST    ROLE"), "{out}");
        assert!(lines[1].starts_with("(here)  chief"), "{out}");
        assert!(lines[2].starts_with("gpu     manager  app"), "{out}");
    }
}
