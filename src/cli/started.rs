//! # `shepherd new`, `shepherd continue` and closing what they started
//!
//! The human starts Pi sessions through the core: `new` on a task in a project (by name,
//! `gpu:app` on a linked host) or a directory, in a new linked worktree with `--branch`,
//! as an agent definition (its model, tools and prompt) with `--agent`;
//! `continue` an ended session on its own file with the same id; `close` (through
//! `shepherd close`, after no worker had the name) stops one. The core launches the
//! process through its worker host; the session then shows everywhere like any other.

use std::process::ExitCode;

use shepherd_core::protocol::{StartedSession, requests};

use super::{Connection, Ctx, Failure, print, print_json};

/// Run `shepherd new PLACE TASK [--branch NAME] [--agent DEF]`.
pub async fn new(
    ctx: &Ctx,
    place: &str,
    task: &str,
    branch: Option<String>,
    agent: Option<String>,
) -> anyhow::Result<ExitCode> {
    let (host, cwd, project) = place_of(place);
    let mut conn = ctx.connect().await?;
    let started = conn
        .call(requests::NewSession {
            cwd,
            project,
            task: task.to_string(),
            branch,
            agent,
            host,
            ..Default::default()
        })
        .await?;
    show(ctx, &started, "started")
}

/// Run `shepherd continue SESSION [MESSAGE]`.
pub async fn continue_(ctx: &Ctx, selector: &str, message: &str) -> anyhow::Result<ExitCode> {
    let (host, session) = super::split_host(selector);
    let mut conn = ctx.connect().await?;
    let reply = conn
        .try_call(requests::ContinueSession {
            session: session.to_string(),
            message: Some(message.to_string()).filter(|m| !m.trim().is_empty()),
            host: host.map(str::to_string),
            ..Default::default()
        })
        .await?;
    match reply {
        Ok(started) => show(ctx, &started, "continuing"),
        Err(shepherd_core::client::ClientError::Remote {
            code,
            message,
            details,
        }) => Err(super::send::explain(selector, code, &message, details).into()),
        Err(e) => Err(Failure::from_client(e, &conn.socket).into()),
    }
}

/// `shepherd close SESSION` for a session the core started: stop its process.
pub async fn close(
    ctx: &Ctx,
    conn: &mut Connection,
    session: &str,
    host: Option<String>,
) -> anyhow::Result<ExitCode> {
    let started = conn
        .call(requests::CloseSession {
            session: session.to_string(),
            host,
            ..Default::default()
        })
        .await?;
    show(ctx, &started, "closed")
}

/// `shepherd attach SESSION` for a session the core started in tmux: replace this
/// process with tmux, on its pane.
pub async fn attach(ctx: &Ctx, conn: &mut Connection, name: &str) -> anyhow::Result<ExitCode> {
    let live = conn.call(requests::ListStarted::default()).await?;
    let found: Vec<&StartedSession> = live
        .iter()
        .filter(|s| {
            s.name == name
                || s.session_id == name
                || (name.len() >= 6 && s.session_id.as_str().ends_with(name))
        })
        .collect();
    let started = match found.as_slice() {
        [one] => *one,
        [] => {
            return Err(Failure::new(
                "unknown_worker",
                format!(
                    "no live worker or started session {name:?}; `shepherd workers` lists the workers, `shepherd new` starts a session"
                ),
            )
            .into());
        }
        many => {
            return Err(Failure::new(
                "ambiguous",
                format!(
                    "{} started sessions are named {name:?}; attach by session id: {}",
                    many.len(),
                    many.iter()
                        .map(|s| s.session_id.short().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .into());
        }
    };
    let Some(pane) = started.pane.as_deref() else {
        return Err(Failure::new(
            "not_attachable",
            format!(
                "{} runs {} (no terminal to attach to); `shepherd peek {}` shows what it does",
                started.name,
                started.backend.as_str(),
                started.name
            ),
        )
        .into());
    };
    let args = [
        "attach-session",
        "-t",
        pane,
        ";",
        "select-window",
        "-t",
        pane,
    ];
    super::tmux_attach(ctx, &args)
}

/// A project's name (`gpu:app`), or a directory (absolute, or relative to here; `~` is
/// home): (host, cwd, project).
fn place_of(place: &str) -> (Option<String>, Option<String>, Option<String>) {
    let looks_like_dir = place.starts_with(['/', '.', '~']) || place.contains('/');
    if looks_like_dir {
        let path = shepherd_core::config::expand_home(std::path::Path::new(place));
        let path = std::path::absolute(&path).unwrap_or(path);
        let path = std::fs::canonicalize(&path).unwrap_or(path);
        return (None, Some(path.display().to_string()), None);
    }
    let (host, project) = super::split_host(place);
    (host.map(str::to_string), None, Some(project.to_string()))
}

fn show(ctx: &Ctx, s: &StartedSession, what: &str) -> anyhow::Result<ExitCode> {
    if ctx.json {
        print_json(s)?;
        return Ok(ExitCode::SUCCESS);
    }
    let branch = s
        .branch
        .as_deref()
        .map(|b| format!(" on branch {b}"))
        .unwrap_or_default();
    let pid = s.pid.map(|p| format!(", pid {p}")).unwrap_or_default();
    print(&format!(
        "{what} {} (session {}) in {}{branch} — {} {}{pid}\n",
        s.name,
        s.session_id,
        s.cwd,
        s.backend.as_str(),
        s.state.as_str()
    ))?;
    Ok(ExitCode::SUCCESS)
}
