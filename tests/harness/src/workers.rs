//! A core that launches managed workers for tests: the pinned Pi (headless or in tmux)
//! with the checkout's extension, talking to a scripted fake model whose `models.json` is
//! in the core's agent directory (workers inherit it), plus a `lead-scout` definition that
//! may delegate to `implementer`. Pi sessions that own workers live in [`work_dir`].

use std::path::PathBuf;

use anyhow::Result;

use crate::Core;
use crate::fake_model::FakeModel;
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
    let deps = pi_deps()?;
    let pi = serde_json::to_string(&[deps.pi.display().to_string()])?;
    let ext = deps.ext.display().to_string();
    let mut all = vec![
        ("SHEPHERD_WORKERS__BACKEND", backend),
        ("SHEPHERD_WORKERS__PI", pi.as_str()),
        ("SHEPHERD_WORKERS__EXTENSION", ext.as_str()),
        ("PI_OFFLINE", "1"),
    ];
    all.extend_from_slice(env);
    let core = Core::start_with(&all).await?;
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
