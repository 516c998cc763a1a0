//! A core that launches managed workers for tests: the pinned Pi (headless or in tmux)
//! with the checkout's extension, talking to a scripted fake model whose `models.json` is
//! in the core's agent directory (workers inherit it), plus a `lead-scout` definition that
//! may delegate to `implementer`. Pi sessions that own workers live in [`work_dir`].

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use shepherd_core::protocol::{Delivery, DeliveryKind, Worker, WorkerId, WorkerState};

use crate::Core;
use crate::fake_model::FakeModel;
use crate::phone::Phone;
use crate::pi_process::pi_deps;

/// Start such a core; `backend` is `headless` or `tmux`.
pub async fn worker_core(model: &FakeModel, backend: &str) -> Result<Core> {
    worker_core_with(model, backend, &[]).await
}

/// As [`worker_core`], with more environment for the core.
pub async fn worker_core_with(
    model: &FakeModel,
    backend: &str,
    env: &[(&str, &str)],
) -> Result<Core> {
    let base = worker_env(backend)?;
    let mut all = crate::pairs(&base);
    all.extend_from_slice(env);
    prepared(Core::start_with(&all).await?, model)
}

/// As [`worker_core`], whose bridge serves `phone`, with `more` environment for the core.
pub async fn worker_core_for(
    model: &FakeModel,
    backend: &str,
    phone: &impl Phone,
    more: &[(&str, &str)],
) -> Result<Core> {
    let base = worker_env(backend)?;
    let mut all = crate::pairs(&base);
    all.extend_from_slice(more);
    prepared(Core::start_for(phone, &all).await?, model)
}

/// The environment that makes a core launch workers with `backend` and the pinned Pi.
fn worker_env(backend: &str) -> Result<Vec<(&'static str, String)>> {
    let deps = pi_deps()?;
    Ok(vec![
        ("SHEPHERD_WORKERS__BACKEND", backend.to_string()),
        (
            "SHEPHERD_WORKERS__PI",
            serde_json::to_string(&[deps.pi.display().to_string()])?,
        ),
        (
            "SHEPHERD_WORKERS__EXTENSION",
            deps.ext.display().to_string(),
        ),
        ("PI_OFFLINE", "1".to_string()),
    ])
}

/// `core` with the model's `models.json`, the `lead-scout` definition and [`work_dir`].
fn prepared(core: Core, model: &FakeModel) -> Result<Core> {
    std::fs::write(
        core.agent_dir().join("models.json"),
        serde_json::to_vec_pretty(&model.models_json())?,
    )?;
    let agents = core.agent_dir().join("agents");
    std::fs::create_dir_all(&agents)?;
    std::fs::write(
        agents.join("lead-scout.md"),
        "---\nname: lead-scout\ndescription: scouts with a helper\nagents: [implementer]\n---\nYou may hand parts to an implementer.\n",
    )?;
    std::fs::create_dir_all(work_dir(&core))?;
    Ok(core)
}

/// The directory the tests' owners (and so their workers) work in.
pub fn work_dir(core: &Core) -> PathBuf {
    core.agent_dir().join("work")
}

/// How long the helpers below wait.
const LONG: std::time::Duration = std::time::Duration::from_secs(90);

/// An owner: a harness client registered as a Pi session (a Lead) in [`work_dir`].
pub async fn owner(core: &Core, id: &str, name: &str) -> Result<crate::Pi> {
    crate::Pi::register(&core.socket(), id, name, &work_dir(core)).await
}

/// The worker as `shepherd workers --all --json` lists it.
pub fn listed(core: &Core, id: WorkerId) -> Result<Worker> {
    let all: Vec<Worker> = serde_json::from_value(core.cli_json(&["workers", "--all"])?)?;
    all.into_iter()
        .find(|w| w.id == id)
        .with_context(|| format!("worker {id} not listed"))
}

/// Wait until the worker is in `state`.
pub async fn wait_state(core: &Core, id: WorkerId, state: WorkerState) -> Result<Worker> {
    let deadline = tokio::time::Instant::now() + LONG;
    loop {
        let w = listed(core, id)?;
        if w.state == state {
            return Ok(w);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("worker {id} is {} not {state}:\n{}", w.state, core.log());
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The next delivery of `kind` to `pi` (not acked); deliveries of other kinds on the way
/// are acked and skipped.
pub async fn next_of_kind(pi: &mut crate::Pi, kind: DeliveryKind) -> Result<Delivery> {
    let deadline = tokio::time::Instant::now() + LONG;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let d = pi
            .next_delivery(left)
            .await
            .with_context(|| format!("waiting for a {kind:?} delivery"))?;
        if d.kind == kind {
            return Ok(d);
        }
        pi.ack(&[d.id]).await?;
    }
}

/// The launched pid the core recorded for a worker (its "worker process started" log line).
pub fn worker_pid(core: &Core, id: WorkerId) -> Result<u32> {
    let log = core.log();
    let needle = format!("worker={id} pid=");
    let line = log
        .lines()
        .rev()
        .find(|l| l.contains(&needle) && l.contains("worker process started"))
        .with_context(|| format!("no start line for worker {id}:\n{log}"))?;
    let rest = &line[line.find(&needle).expect("found") + needle.len()..];
    Ok(rest
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()?)
}
