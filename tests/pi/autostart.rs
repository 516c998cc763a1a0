//! End to end with a REAL Pi and the real `shepherd` binary on its PATH: the extension
//! autostarts the core, the core cannot start (a config key it does not know), and Pi shows
//! the reason from the core's log in one notice, once, while it keeps retrying in the
//! background and keeps working. "Once" is checked after two more connection attempts
//! (read from the extension's debug log, `SHEPHERD_EXT_LOG`), each of which would have
//! shown it again.

use std::time::Duration;

use anyhow::Result;
use serde_json::Value;
use shepherd_harness::fake_model::{FakeModel, Reply};
use shepherd_harness::pi_process::{PiOptions, PiSession};
use shepherd_harness::{eventually, shepherd_bin};

const LONG: Duration = Duration::from_secs(60);

fn start_failure_notices(pi: &PiSession) -> Vec<String> {
    pi.records()
        .into_iter()
        .filter(|r| r["type"] == "extension_ui_request" && r["method"] == "notify")
        .filter_map(|r| r["message"].as_str().map(String::from))
        .filter(|m| m.contains("did not start"))
        .collect()
}

#[tokio::test]
async fn a_core_that_cannot_start_is_explained_once() -> Result<()> {
    let dir = tempfile::Builder::new().prefix("shp").tempdir_in("/tmp")?;
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin)?;
    std::os::unix::fs::symlink(shepherd_bin(), bin.join("shepherd"))?;
    let state = dir.path().join("shepherd");
    std::fs::create_dir_all(&state)?;
    std::fs::write(state.join("config.toml"), "[core]\nno_such_setting = 1\n")?;

    let model = FakeModel::start(|_| Reply::text("plain answer")).await?;
    let ext_log = dir.path().join("ext.log");
    let attempts = || {
        std::fs::read_to_string(&ext_log)
            .unwrap_or_default()
            .matches("problem unreachable: ")
            .count()
    };
    let mut opts = PiOptions::new(dir.path());
    opts.env.retain(|(k, _)| k != "SHEPHERD_AUTOSTART");
    opts.env
        .push(("SHEPHERD_EXT_LOG".into(), ext_log.display().to_string()));
    opts.path_prepend.push(bin);
    let mut pi = PiSession::spawn(&model, opts).await?;
    let first = pi
        .wait_for(LONG, |r: &Value| {
            r["type"] == "extension_ui_request"
                && r["method"] == "notify"
                && r["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("did not start"))
        })
        .await?;
    // The attempt that showed the notice logged its problem first.
    let shown_at = attempts();
    assert!(shown_at > 0, "no failed attempt in {}", ext_log.display());
    let log = state.join("core.log");
    // The reason, cut to the notice's length, then where the whole log is.
    let message = first["message"].as_str().unwrap_or_default();
    let reason = format!(
        "shepherd: the core did not start: {}: `core.no_such_setting`: unknown field \
         `no_such_setting`, expected one of `state_dir`, `socket`, `durability`, \
         `hello_timeout_ms`, `limits`, `supervise`, `results`, `forget_sessions_after_days`",
        state.join("config.toml").display(),
    );
    assert!(message.starts_with(&reason), "{message}");
    assert!(
        message.ends_with(&format!("(see {})", log.display())),
        "{message}"
    );
    assert!(std::fs::read_to_string(&log)?.contains("the core did not start: "));

    // Pi keeps working, the extension keeps retrying (the backoff is 250 ms doubling), and
    // the notice is not repeated: two more attempts fail after the one that showed it.
    // Each logs its problem and would notify in that same tick, so a second notice would
    // be on Pi's stdout before the reply to the next prompt.
    pi.prompt("hi").await?;
    pi.wait_settled(LONG).await?;
    eventually(LONG, "two more connection attempts", || {
        (attempts() >= shown_at + 2).then_some(())
    })
    .await?;
    pi.prompt("again").await?;
    pi.wait_settled(LONG).await?;
    assert_eq!(model.requests().len(), 2);
    assert_eq!(
        start_failure_notices(&pi).len(),
        1,
        "{:?}",
        start_failure_notices(&pi)
    );
    pi.shutdown().await?;
    Ok(())
}
