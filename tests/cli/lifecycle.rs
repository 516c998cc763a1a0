//! `shepherd stop` and `shepherd restart` against the real binary: stopping with no core
//! running says so and succeeds; stopping a running core returns once its socket is gone;
//! restarting starts a new background core that reads the configuration again, and when
//! that configuration is bad it says why the core did not start (from the core's log).

use std::process::Output;

use anyhow::{Context, Result};
use serde_json::Value;
use shepherd_harness::{Core, shepherd_bin};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A core `shepherd restart` started in the background: SIGKILLed if a test fails before
/// stopping it.
struct Detached(Option<u32>);

impl Drop for Detached {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

fn json(out: &Output) -> Result<Value> {
    serde_json::from_slice(&out.stdout)
        .with_context(|| format!("JSON on stdout: {}", text(&out.stdout)))
}

#[test]
fn stop_without_a_core_says_so_and_succeeds() -> Result<()> {
    let dir = tempfile::Builder::new().prefix("shp").tempdir_in("/tmp")?;
    let out = std::process::Command::new(shepherd_bin())
        .arg("stop")
        .env("PI_CODING_AGENT_DIR", dir.path())
        .env_remove("SHEPHERD_SOCKET")
        .env_remove("SHEPHERD_CONFIG")
        .env_remove("SHEPHERD_STATE_DIR")
        .output()?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.starts_with("no core is running on "), "{said}");
    assert!(said.contains("nothing to stop"), "{said}");
    Ok(())
}

/// On a machine that never ran shepherd (no state directory yet), `restart` makes the
/// state directory and starts the core, logging there.
#[test]
fn restart_on_a_fresh_machine_starts_the_core() -> Result<()> {
    let dir = tempfile::Builder::new().prefix("shp").tempdir_in("/tmp")?;
    let run = |arg: &str| {
        std::process::Command::new(shepherd_bin())
            .args([arg, "--json"])
            .env("PI_CODING_AGENT_DIR", dir.path())
            .env_remove("SHEPHERD_SOCKET")
            .env_remove("SHEPHERD_CONFIG")
            .env_remove("SHEPHERD_STATE_DIR")
            .output()
    };
    let out = run("restart")?;
    let started = json(&out).ok();
    let _core = Detached(
        started
            .as_ref()
            .and_then(|v| v["pid"].as_u64())
            .map(|p| p as u32),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let log = std::fs::read_to_string(dir.path().join("shepherd").join("core.log"))?;
    assert!(log.contains("accepting connections"), "{log}");
    let stopped = run("stop")?;
    assert!(stopped.status.success(), "{}", text(&stopped.stderr));
    Ok(())
}

#[tokio::test]
async fn stop_returns_once_the_socket_is_gone() -> Result<()> {
    let core = Core::start().await?;
    let pid = core.pid().context("core pid")?;
    let out = core.cli(&["stop"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("stopped the core (pid {pid})\n"));
    assert!(
        !core.socket().exists(),
        "the socket is gone when stop returns"
    );
    assert!(core.log().contains("stopped"), "{}", core.log());
    let status = core.cli(&["status"]);
    assert_eq!(status.status.code(), Some(1));
    assert!(text(&status.stderr).contains("not running"));
    let again = core.cli(&["stop", "--json"]);
    assert!(again.status.success());
    assert_eq!(json(&again)?["stopped"], false);
    Ok(())
}

#[tokio::test]
async fn restart_reads_the_config_again_and_says_why_a_core_did_not_start() -> Result<()> {
    let core = Core::start().await?;
    let old = core.pid().context("core pid")?;

    // A clean restart: a new process on the same socket and state.
    let out = core.cli(&["restart", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let body = json(&out)?;
    let new = body["pid"].as_u64().context("pid")? as u32;
    let guard = Detached(Some(new));
    assert_eq!(body["stopped"], old);
    assert_ne!(new, old);
    assert_eq!(
        body["log"].as_str(),
        core.state_dir().join("core.log").to_str()
    );
    assert_eq!(core.cli_json(&["status"])?["pid"], new);

    // A config file written since that `up` would refuse: restart says why and leaves
    // the running core alone.
    let config = core.state_dir().join("config.toml");
    std::fs::write(&config, "[core]\nno_such_setting = 1\n")?;
    let out = core.cli(&["restart"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(err.contains("no_such_setting"), "{err}");
    assert!(
        err.contains("the running core, if any, was left running"),
        "{err}"
    );
    let still = core
        .client(shepherd_core::protocol::ClientKind::Cli)
        .await?;
    assert_eq!(still.welcome().pid, new, "the running core was left alone");
    drop(still);
    std::fs::remove_file(&config)?;

    // A core that fails after the config is read (its database cannot be opened): restart
    // shows the reason the new core wrote to its log.
    let out = core.cli(&["stop"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    drop(guard);
    let db = core.state_dir().join("shepherd.db");
    std::fs::rename(&db, core.state_dir().join("moved.db"))?;
    std::fs::create_dir(&db)?;
    let out = core.cli(&["restart"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("shepherd: the core did not start: cannot open the database "),
        "{err}"
    );
    let log = core.state_dir().join("core.log");
    assert!(
        err.trim_end()
            .ends_with(&format!("(see {})", log.display())),
        "{err}"
    );
    assert!(!core.socket().exists());
    std::fs::remove_dir(&db)?;

    // Fixed: restart with nothing running starts one.
    let out = core.cli(&["restart"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.starts_with("no core was running; started the core (pid "),
        "{said}"
    );
    let pid = core.cli_json(&["status"])?["pid"].as_u64().context("pid")? as u32;
    let _guard = Detached(Some(pid));
    let out = core.cli(&["stop"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!core.socket().exists());
    Ok(())
}
