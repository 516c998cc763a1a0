//! # `shepherd sessions`
//!
//! Lists the Pi sessions the core knows, and the linked hosts' connected sessions (a HOST
//! column then says where each runs): a table for people (short id, name, status,
//! model, context fill, role, repository@branch, cwd, and when it was last seen), or with
//! `--json` the protocol's `SessionInfo` objects unchanged. `--follow` subscribes
//! *before* listing (so no change between the list and the subscription is missed) and
//! then prints one line per join, change, role change or leave until Ctrl-C.

use std::io::Write;
use std::process::ExitCode;

use shepherd_core::client::ClientError;
use shepherd_core::protocol::{LeaveReason, ServerMsg, SessionInfo, requests};

use super::format::{ago, here_or, now_ms, percent, tilde, utc_time_of_day};
use super::table::{Align, Table};
use super::{Connection, Ctx, Failure, SessionsArgs, print, print_json, terminal_width};

/// Shortest id prefix shown; longer when two listed ids share it.
const MIN_ID: usize = 8;

/// Run `shepherd sessions`.
pub async fn run(ctx: &Ctx, args: &SessionsArgs) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    if args.follow {
        conn.call(requests::Subscribe::default()).await?;
    }
    let all = args.all;
    let mut sessions = conn
        .call(requests::ListSessions {
            all,
            ..Default::default()
        })
        .await?;
    if let Some(host) = &args.host {
        sessions.retain(|s| super::on_host(s.host.as_deref(), host));
    }
    if ctx.json && args.follow {
        // One JSON value per line from here on: the list, then the events.
        print(&format!("{}\n", serde_json::to_string(&sessions)?))?;
    } else if ctx.json {
        print_json(&sessions)?;
    } else if sessions.is_empty() {
        print(if all {
            "no sessions known: none has connected to this core yet\n"
        } else {
            "no sessions connected (--all also lists sessions that went away)\n"
        })?;
    } else {
        // Managed workers are named as such: `scout-1 (worker of fix-login)`, role worker.
        let workers = conn
            .call(requests::ListWorkers {
                all,
                ..Default::default()
            })
            .await
            .unwrap_or_default();
        print(&render(&sessions, &workers, now_ms(), terminal_width()))?;
    }
    if args.follow {
        follow(ctx, &mut conn).await?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Print presence events until Ctrl-C or until the core goes away.
async fn follow(ctx: &Ctx, conn: &mut Connection) -> anyhow::Result<()> {
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        let event = tokio::select! {
            _ = &mut ctrl_c => return Ok(()),
            event = conn.client.next_event() => event,
        };
        let event = match event {
            Ok(event) => event,
            Err(ClientError::Closed) => {
                return Err(Failure::new(
                    "closed",
                    "the core closed the connection (did it stop?): `shepherd status` tells",
                )
                .into());
            }
            Err(e) => return Err(Failure::from_client(e, &conn.socket).into()),
        };
        let line = match &event {
            ServerMsg::SessionJoined { session }
            | ServerMsg::SessionChanged { session }
            | ServerMsg::SessionLeft { session, .. }
            | ServerMsg::RoleChanged { session, .. } => {
                if ctx.json {
                    serde_json::to_string(&event)?
                } else {
                    event_line(&event, session, now_ms())
                }
            }
            ServerMsg::Error {
                id: None,
                code,
                message,
                details,
            } => return Err(Failure::remote(*code, message, details.clone()).into()),
            _ => continue,
        };
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}")?;
        out.flush()?;
    }
}

/// One human line for a presence event.
fn event_line(event: &ServerMsg, s: &SessionInfo, now: u64) -> String {
    let time = utc_time_of_day(now);
    let id = super::format::short_id(&s.id);
    match event {
        ServerMsg::SessionLeft {
            reason,
            last_status,
            ..
        } => {
            let how = match (reason, last_status) {
                (Some(LeaveReason::Closed), _) => " (closed)".to_string(),
                (Some(LeaveReason::Lost), Some(last)) if !last.is_idle() => {
                    format!(" (exited while {last})")
                }
                (Some(LeaveReason::Lost), _) => " (exited)".to_string(),
                (None, _) => String::new(),
            };
            format!("{time}  left     {id}  {}{how}", s.name)
        }
        ServerMsg::RoleChanged { previous, .. } => format!(
            "{time}  role     {id}  {}  {} (was {})",
            s.name,
            s.role.as_str(),
            previous.as_str()
        ),
        _ => {
            let verb = if matches!(event, ServerMsg::SessionJoined { .. }) {
                "joined "
            } else {
                "changed"
            };
            format!(
                "{time}  {verb}  {id}  {}  {}  {}  ctx {}  {}",
                s.name,
                s.status,
                s.model.as_deref().unwrap_or("-"),
                percent(s.context_percent),
                repo_branch(s)
            )
        }
    }
}

/// The human table; a managed worker's session (among `workers`) is named `label (worker
/// of owner)`, with the role `worker`.
pub fn render(
    sessions: &[SessionInfo],
    workers: &[shepherd_core::protocol::Worker],
    now: u64,
    width: usize,
) -> String {
    let ids = unique_suffixes(sessions.iter().map(|s| s.id.as_str()), MIN_ID);
    // Linked hosts' sessions say where they run; without any, the column is left out.
    let hosts = sessions.iter().any(|s| s.host.is_some());
    let mut table = Table::new();
    if hosts {
        table = table.column("HOST", Align::Left);
    }
    let mut table = table
        .column("ID", Align::Left)
        .middle("NAME", 20)
        .column("STATUS", Align::Left)
        .middle("MODEL", 10)
        .column("CTX%", Align::Right)
        .column("ROLE", Align::Left)
        .middle("REPO@BRANCH", 12)
        .middle("CWD", 10)
        .column("SEEN", Align::Left);
    for (s, id) in sessions.iter().zip(ids) {
        let host = hosts.then(|| here_or(&s.host));
        let worker = workers
            .iter()
            .find(|w| w.session_id == s.id && w.host == s.host);
        let (name, role) = match worker {
            Some(w) => (
                format!("{} (worker of {})", w.label, w.owner_name),
                "worker",
            ),
            None => (s.name.clone(), s.role.as_str()),
        };
        table.row(
            host.into_iter()
                .chain([
                    id.to_string(),
                    name,
                    s.status.to_string(),
                    s.model.clone().unwrap_or_else(|| "-".into()),
                    percent(s.context_percent),
                    role.to_string(),
                    repo_branch(s),
                    tilde(&s.cwd),
                    if s.connected {
                        "connected".to_string()
                    } else if s.host.is_some() {
                        "unreachable".to_string()
                    } else {
                        ago(s.last_seen, now)
                    },
                ])
                .collect(),
        );
    }
    table.render(width)
}

/// `app@main`, `app@9f3c2b1` when detached, `app@feature (worktree)` in a linked
/// worktree, `-` outside a repository: the repository by its project (its primary
/// checkout's directory), as the phones name it.
fn repo_branch(s: &SessionInfo) -> String {
    let Some(place) = shepherd_bridges::chat::format::repo_branch(s) else {
        return "-".to_string();
    };
    let wt = if s.worktree { " (worktree)" } else { "" };
    format!("{place}{wt}")
}

/// For each id, its shortest end of at least `min` characters that no other listed id
/// shares (the whole id when another id ends with it). Pi's ids are time-ordered UUIDs:
/// sessions started together share their start, and differ in their random end, which a
/// selector may give (`shepherd send 3c4b5a69 …`).
pub fn unique_suffixes<'a>(ids: impl Iterator<Item = &'a str> + Clone, min: usize) -> Vec<&'a str> {
    ids.clone()
        .map(|id| {
            let chars: Vec<(usize, char)> = id.char_indices().collect();
            let suffix = |n: usize| match chars.len().checked_sub(n) {
                Some(at) if at > 0 => &id[chars[at].0..],
                _ => id,
            };
            let mut n = min;
            while n < chars.len() {
                let end = suffix(n);
                if ids.clone().filter(|other| other.ends_with(end)).count() <= 1 {
                    break;
                }
                n += 1;
            }
            suffix(n)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::examples;

    fn session(id: &str, name: &str) -> SessionInfo {
        SessionInfo {
            id: id.into(),
            name: name.into(),
            cwd: "/srv/src/app/sub".into(),
            model: Some("anthropic/claude-sonnet-4".into()),
            status: "tool:bash".into(),
            repo: Some("/srv/src/app".into()),
            branch: Some("fix/login".into()),
            head: Some("9f3c2b1a4d5e".into()),
            first_seen: 0,
            last_seen: 1_000_000,
            ..examples::session_info()
        }
    }

    #[test]
    fn a_watched_leaving_says_how() {
        let s = session("0193a5c2-7d1e", "fix-login");
        let left = |reason, last: &str| {
            let event = ServerMsg::SessionLeft {
                session: s.clone(),
                reason,
                last_status: Some(last.into()),
            };
            event_line(&event, &s, 0)
        };
        assert!(left(Some(LeaveReason::Closed), "idle").ends_with("fix-login (closed)"));
        assert!(
            left(Some(LeaveReason::Lost), "tool:bash")
                .ends_with("fix-login (exited while tool:bash)")
        );
        assert!(left(Some(LeaveReason::Lost), "idle").ends_with("fix-login (exited)"));
        assert!(left(None, "idle").ends_with("fix-login"));
    }

    #[test]
    fn a_watched_role_change_says_from_what() {
        let s = SessionInfo {
            role: shepherd_core::protocol::Role::Manager,
            ..session("0193a5c2-7d1e-7b8a-9c3f-1e2d3c4b5a69", "mara")
        };
        let event = ServerMsg::RoleChanged {
            session: s.clone(),
            previous: shepherd_core::protocol::Role::Lead,
        };
        assert!(
            event_line(&event, &s, 0).ends_with("role     3c4b5a69  mara  manager (was lead)"),
            "{}",
            event_line(&event, &s, 0)
        );
    }

    #[test]
    fn a_linked_hosts_session_says_its_host_and_the_column_is_there_only_then() {
        let here = session("0193a5c2-7d1e", "fix-login");
        let far = SessionInfo {
            host: Some("gpu".into()),
            connected: false,
            ..session("0193a5c2-8e2f", "train")
        };
        let without = render(std::slice::from_ref(&here), &[], 2_000_000, 200);
        assert!(!without.contains("HOST"), "{without}");
        let with = render(&[here, far], &[], 2_000_000, 200);
        let lines: Vec<&str> = with.lines().collect();
        assert!(lines[0].starts_with("HOST"), "{with}");
        assert!(lines[1].starts_with("(here)"), "{with}");
        assert!(
            lines[2].starts_with("gpu") && lines[2].ends_with("unreachable"),
            "{with}"
        );
    }

    #[test]
    fn ids_show_their_random_end_grown_until_unique() {
        let ids = [
            "0193a5c2-7d1e-7b8a-9c3f-1e2d3c4b5a69",
            "0193a5c2-7d1e-7b8a-9c3f-1e2d3c4b5a6a",
            "0193a5c2-7d1e-7b8a-9c3f-8f7e6d5c4b3a",
        ];
        let got = unique_suffixes(ids.iter().copied(), 8);
        assert_eq!(got, vec!["3c4b5a69", "3c4b5a6a", "6d5c4b3a"]);
        assert_eq!(
            unique_suffixes(["xab", "ab"].into_iter(), 8),
            vec!["xab", "ab"]
        );
        let shared = ["aa-12345678", "bb-12345678"];
        assert_eq!(
            unique_suffixes(shared.iter().copied(), 8),
            vec!["a-12345678", "b-12345678"]
        );
    }

    #[test]
    fn table_shows_repo_by_directory_name_and_last_seen() {
        let mut gone = session("ffee0011-2233", "old-one");
        gone.connected = false;
        gone.branch = None;
        gone.worktree = true;
        gone.model = None;
        gone.context_percent = None;
        let out = render(
            &[session("0193a5c2-7d1e", "fix-login"), gone],
            &[],
            1_000_000 + 180_000,
            200,
        );
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0].starts_with("ID        NAME       STATUS     MODEL"),
            "{out}"
        );
        assert!(lines[1].contains("app@fix/login"), "{out}");
        assert!(lines[1].contains("21%"), "{out}");
        assert!(lines[1].ends_with("connected"), "{out}");
        assert!(lines[2].contains("app@9f3c2b1 (worktree)"), "{out}");
        assert!(lines[2].ends_with("3m ago"), "{out}");
    }
}
