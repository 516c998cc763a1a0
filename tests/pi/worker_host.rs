//! The worker process host with the REAL pinned Pi (headless, `--mode rpc`) against the
//! scripted fake model: the session id the host chose is the session Pi writes, the
//! appended system prompt file reaches the model, `--tools` keeps the mandatory
//! `ask_owner` (registered by an extension) even though the definition's list and
//! excludes leave it out, the worker's environment reaches the extension, the process
//! that runs it is the launched pid, and stopping (closing stdin) ends it with status 0.
//! No core runs: a small test extension starts the turn (a worker's task would come as a
//! `task` delivery).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::Value;
use shepherd_core::workers::{
    Backend, Host, HostConfig, HostEvent, LaunchSpec, SessionStart, proc,
};
use shepherd_harness::fake_model::{FakeModel, Reply};
use shepherd_harness::pi_process::pi_deps;
use tokio::sync::mpsc;

const LONG: Duration = Duration::from_secs(60);

/// Stands in for the shepherd extension's `ask_owner` (plus a tool nobody asked for),
/// records what the worker process was given, and starts one turn.
const KICK: &str = r#"
import { Type } from "typebox";
import * as fs from "node:fs";

export default function (pi: any) {
  for (const name of ["ask_owner", "other_tool"]) {
    pi.registerTool({
      name, label: name, description: `test stand-in: ${name}`,
      parameters: Type.Object({}),
      async execute() { return { content: [{ type: "text", text: "ok" }], details: {} }; },
    });
  }
  pi.on("session_start", async () => {
    const env: Record<string, string | undefined> = {};
    for (const k of ["SHEPHERD_LAUNCH", "SHEPHERD_AUTOSTART", "SHEPHERD_SOCKET", "SHEPHERD_WORKER", "SHEPHERD_WORKER_ID"]) env[k] = process.env[k];
    fs.writeFileSync(process.env.KICK_OUT!, JSON.stringify({ pid: process.pid, env }));
    setTimeout(() => pi.sendUserMessage("hello from the test"), 50);
  });
}
"#;

fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let hex = format!("{:032x}", nanos ^ ((std::process::id() as u128) << 64));
    format!(
        "{}-{}-4{}-8{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

/// Every `*.jsonl` under `dir`.
fn session_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(session_files(&path));
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
    out
}

#[tokio::test]
async fn a_real_pi_worker_runs_the_session_the_host_chose() -> Result<()> {
    let deps = pi_deps()?;
    let dir = tempfile::Builder::new().prefix("whp").tempdir_in("/tmp")?;
    let agent = dir.path().join("agent");
    let work = dir.path().join("work");
    let state = dir.path().join("state");
    for d in [&agent, &work, &state] {
        std::fs::create_dir_all(d)?;
    }
    let model = FakeModel::start(|_| Reply::text("worker done")).await?;
    std::fs::write(
        agent.join("models.json"),
        serde_json::to_vec_pretty(&model.models_json())?,
    )?;
    let kick = dir.path().join("kick.ts");
    std::fs::write(&kick, KICK)?;
    let kick_out = dir.path().join("kick.json");

    let (tx, mut events) = mpsc::channel(16);
    let host = Host::start(
        HostConfig {
            backend: Backend::Headless,
            pi: vec![deps.pi.display().to_string()],
            // The stand-in takes the shepherd extension's place (it registers `ask_owner`
            // too, and would clash with it); no core runs here.
            extension: kick.clone(),
            state_dir: state.clone(),
            socket: dir.path().join("no-core.sock"),
            extra_env: vec![
                ("PI_CODING_AGENT_DIR".into(), agent.display().to_string()),
                ("HOME".into(), agent.display().to_string()),
                ("PI_OFFLINE".into(), "1".into()),
                ("KICK_OUT".into(), kick_out.display().to_string()),
            ],
        },
        tx,
    );
    let session_id = uuid_like();
    let marker = format!("You are worker scout-1 ({session_id}).");
    let launched = host
        .launch(LaunchSpec {
            worker: 41,
            label: "scout-1".into(),
            cwd: work.clone(),
            start: SessionStart::New {
                id: session_id.clone(),
            },
            model: Some("fake/fake-model".into()),
            thinking: None,
            tools: Some(vec!["read".into()]),
            exclude_tools: vec!["ask_owner".into(), "bash".into()],
            system_prompt: Some(marker.clone()),
            nonce: "launch-nonce-41".into(),
        })
        .await?;
    assert_eq!(launched.backend, Backend::Headless);

    // The model sees the appended prompt and exactly the allowed tools plus ask_owner.
    let requests = model.wait_requests(1, LONG).await?;
    let first = &requests[0];
    let system: Vec<String> = first
        .messages()
        .iter()
        .filter(|m| m["role"] == "system")
        .map(shepherd_harness::fake_model::message_text)
        .collect();
    assert!(
        system.iter().any(|s| s.contains(&marker)),
        "the appended prompt file reached the model: {system:?}"
    );
    let mut tools = first.tool_names();
    tools.sort();
    assert_eq!(tools, ["ask_owner", "read"]);

    // The worker's environment reached its extensions; the process is the launched one.
    let kicked: Value = serde_json::from_str(&std::fs::read_to_string(&kick_out)?)?;
    assert_eq!(
        kicked["env"],
        serde_json::json!({
            "SHEPHERD_LAUNCH": "launch-nonce-41",
            "SHEPHERD_AUTOSTART": "0",
            "SHEPHERD_SOCKET": dir.path().join("no-core.sock").display().to_string(),
            "SHEPHERD_WORKER": "1",
            "SHEPHERD_WORKER_ID": "41",
        })
    );
    let pi_pid = kicked["pid"].as_u64().context("pid")? as u32;
    assert!(
        proc::is_descendant(pi_pid, launched.pid),
        "Pi (pid {pi_pid}) runs as or below the launched pid {}",
        launched.pid
    );

    // Pi writes the session under the id the host chose, in the worker's cwd.
    let deadline = Instant::now() + LONG;
    let (file, header) = loop {
        let found = session_files(&agent.join("sessions"))
            .into_iter()
            .find_map(|f| {
                let text = std::fs::read_to_string(&f).ok()?;
                let header: Value = serde_json::from_str(text.lines().next()?).ok()?;
                (text.contains("worker done")).then_some((f, header))
            });
        if let Some(found) = found {
            break found;
        }
        assert!(Instant::now() < deadline, "no session file with the answer");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(header["type"], "session");
    assert_eq!(header["id"], session_id.as_str(), "{}", file.display());
    assert_eq!(header["cwd"], work.display().to_string());
    assert!(
        file.file_name()
            .unwrap()
            .to_string_lossy()
            .contains(&session_id),
        "{}",
        file.display()
    );

    // Stop: stdin closes, Pi exits 0 well before the SIGTERM deadline.
    let began = Instant::now();
    host.stop(41).await;
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    let exited = tokio::time::timeout(Duration::from_secs(5), events.recv())
        .await?
        .context("events closed")?;
    assert_eq!(
        exited,
        HostEvent::Exited {
            worker: 41,
            code: Some(0),
            nonce: "launch-nonce-41".into(),
        }
    );
    assert!(!Path::new(&format!("/proc/{pi_pid}")).exists());
    assert!(state.join("workers/41.log").exists());
    Ok(())
}
