//! # `shepherd workers`, `shepherd close` and `shepherd attach`
//!
//! `workers`: every live managed worker (with `--all` the ended ones too) as a tree under
//! its owner: label, definition, state, what may be done, age and the task's start. With
//! `--json`, the protocol's `Worker` objects unchanged. `close <worker>` closes one (its
//! own workers first) as the human; `attach <worker>` opens a tmux worker's window.

use std::process::ExitCode;

use shepherd_core::protocol::{Worker, WorkerBackend, WorkerId, requests};

use super::format::{ago, here_or, now_ms};
use super::table::{Align, Table};
use super::{Ctx, Failure, print, print_json, terminal_width};

/// Run `shepherd workers` (`host`: a linked host's).
pub async fn list(ctx: &Ctx, all: bool, host: Option<&str>) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let workers = conn
        .herd_list(host, |host| requests::ListWorkers {
            all,
            host,
            ..Default::default()
        })
        .await?;
    if ctx.json {
        print_json(&workers)?;
    } else if workers.is_empty() {
        print(if all {
            "no workers yet: a Pi session starts one with its delegate_agent tool\n"
        } else {
            "no live workers (`shepherd workers --all` lists ended ones too)\n"
        })?;
    } else {
        print(&render(&workers, now_ms(), terminal_width()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Run `shepherd close <worker>`.
pub async fn close(ctx: &Ctx, agent: &str) -> anyhow::Result<ExitCode> {
    // `gpu#5` or `gpu:scout-1`: a linked host's worker, as its core names it.
    let (host, agent) = match shepherd_bridges::chat::workers::worker_ref(agent) {
        Some(w) => (w.host.clone(), w.agent()),
        None => {
            let (host, label) = shepherd_core::protocol::split_host(agent);
            (host.map(str::to_string), label.to_string())
        }
    };
    let mut conn = ctx.connect().await?;
    let reply = conn
        .try_call(requests::CloseAgent {
            agent: agent.clone(),
            host: host.clone(),
            ..Default::default()
        })
        .await?;
    let worker = match reply {
        Ok(worker) => worker,
        // No such worker: a session started with `shepherd new` or `continue`, perhaps.
        Err(e) if e.reason() == Some("agent_not_found") => {
            return super::started::close(ctx, &mut conn, &agent, host).await;
        }
        Err(e) => return Err(Failure::from_client(e, &conn.socket).into()),
    };
    if ctx.json {
        print_json(&worker)?;
    } else {
        print(&format!(
            "closed worker {} ({}) of {}; its Pi session is kept: {}\n",
            worker.label,
            shepherd_bridges::chat::workers::WorkerRef::of(&worker),
            worker.owner_name,
            worker
                .session_file
                .as_deref()
                .unwrap_or(worker.session_id.as_str())
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Run `shepherd attach <worker>`: replace this process with tmux, on the worker's window.
pub async fn attach(ctx: &Ctx, agent: &str) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let workers = conn.call(requests::ListWorkers::default()).await?;
    let by_id = agent.trim_start_matches('#').parse::<WorkerId>().ok();
    let found: Vec<&Worker> = workers
        .iter()
        .filter(|w| w.label == agent || by_id == Some(w.id))
        .collect();
    let worker = match found.as_slice() {
        [one] => *one,
        // No such worker: a session `shepherd new` or `continue` started in tmux, perhaps.
        [] => return super::started::attach(ctx, &mut conn, agent).await,
        many => {
            return Err(Failure::new(
                "ambiguous",
                format!(
                    "{} live workers are labelled {agent:?}; attach by id: {}",
                    many.len(),
                    many.iter()
                        .map(|w| format!("#{} (of {})", w.id, w.owner_name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .into());
        }
    };
    if worker.backend != WorkerBackend::Tmux {
        return Err(Failure::new(
            "not_attachable",
            format!(
                "worker {} runs headless (no terminal to attach to); `shepherd workers` shows its state, its session file is {}",
                worker.label,
                worker.session_file.as_deref().unwrap_or("not written yet")
            ),
        )
        .into());
    }
    let target = format!(
        "{}:{}",
        shepherd_core::workers::host::TMUX_SESSION,
        worker.label
    );
    super::tmux_attach(ctx, &["attach-session", "-t", &target])
}

/// The workers as a tree: each owner, then its workers (a worker's own workers indented).
pub fn render(workers: &[Worker], now: u64, width: usize) -> String {
    let hosts = workers.iter().any(|w| w.host.is_some());
    let mut table = Table::new();
    if hosts {
        table = table.column("HOST", Align::Left);
    }
    let mut table = table
        .column("WORKER", Align::Left)
        .column("ID", Align::Right)
        .column("DEFINITION", Align::Left)
        .column("STATE", Align::Left)
        .column("AGE", Align::Right)
        .middle("OWNER", 8)
        .flexible("TASK", 10);
    let depth = |w: &Worker| {
        let mut d = 0;
        let mut parent = w.parent_worker;
        while let Some(p) = parent {
            d += 1;
            parent = workers
                .iter()
                .find(|x| x.id == p && x.host == w.host)
                .and_then(|x| x.parent_worker);
            if d > 8 {
                break;
            }
        }
        d
    };
    for w in workers {
        let host = hosts.then(|| here_or(&w.host));
        table.row(
            host.into_iter()
                .chain([
                    format!("{}{}", "  ".repeat(depth(w)), w.label),
                    format!("#{}", w.id),
                    w.definition.clone(),
                    w.state.to_string(),
                    ago(w.created_at, now),
                    w.owner_name.clone(),
                    w.task.replace('\n', " "),
                ])
                .collect(),
        );
    }
    table.render(width)
}
