//! `shepherd install`: the embedded extension lands in `<agent dir>/shepherd/pi-ext`, Pi's
//! settings gain one `packages` entry (other settings kept, in order), a second run
//! changes nothing, a broken settings file stops it before anything is written, doctor
//! reports the result, and a real Pi started with no `-e` loads the extension from
//! there and registers with the core.

use std::process::Command;
use std::time::Duration;

use anyhow::Result;
use serde_json::{Value, json};
use shepherd_harness::fake_model::{FakeModel, Reply};
use shepherd_harness::pi_process::{PiOptions, PiSession, repo_root};
use shepherd_harness::{Core, shepherd_bin};

fn install(agent_dir: &std::path::Path, json: bool) -> std::process::Output {
    let mut cmd = Command::new(shepherd_bin());
    cmd.arg("install").env("PI_CODING_AGENT_DIR", agent_dir);
    if json {
        cmd.arg("--json");
    }
    cmd.output().expect("running shepherd install")
}

#[test]
fn install_writes_the_extension_and_one_settings_entry_idempotently() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let agent = dir.path();
    std::fs::write(
        agent.join("settings.json"),
        r#"{"theme": "dark", "packages": ["npm:pi-other@1.0.0"], "defaultModel": "x"}"#,
    )?;

    let out = install(agent, true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(report["settings_changed"], true);
    let ext = agent.join("shepherd/pi-ext");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(agent.join("shepherd"))?.permissions(),
    );
    assert_eq!(mode & 0o777, 0o700, "the state dir is private");
    for file in [
        "package.json",
        "index.ts",
        "wire.ts",
        "wire/generated/records.ts",
        "wire/generated/decoders.ts",
        "wire/fields.ts",
        "wire/decode.ts",
        "wire/frame.ts",
        "client.ts",
        "inbox.ts",
        "dedupe.ts",
        "config.ts",
    ] {
        let installed = std::fs::read_to_string(ext.join(file))?;
        let source = std::fs::read_to_string(repo_root().join("pi-ext").join(file))?;
        assert_eq!(installed, source, "{file} is the checkout's");
    }
    let text = std::fs::read_to_string(agent.join("settings.json"))?;
    let settings: Value = serde_json::from_str(&text)?;
    assert_eq!(
        settings["packages"],
        json!(["npm:pi-other@1.0.0", ext.to_str().unwrap()])
    );
    assert_eq!(settings["theme"], "dark");
    let keys: Vec<&str> = settings
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["theme", "packages", "defaultModel"],
        "key order kept"
    );

    let again = install(agent, false);
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stdout).contains("already installed and current"));
    assert_eq!(
        std::fs::read_to_string(agent.join("settings.json"))?,
        text,
        "unchanged"
    );

    // An edited copy is put back.
    std::fs::write(ext.join("index.ts"), "// tampered")?;
    let out = install(agent, true);
    let report: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(report["files_written"], json!(["index.ts"]));
    assert_eq!(report["settings_changed"], false);
    Ok(())
}

#[test]
fn broken_settings_stop_install_before_anything_is_written() -> Result<()> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("settings.json"), "{ not json")?;
    let out = install(dir.path(), false);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("settings.json is not valid JSON") && err.contains("fix it"),
        "{err}"
    );
    assert!(!dir.path().join("shepherd/pi-ext").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("settings.json"))?,
        "{ not json"
    );
    Ok(())
}

#[test]
fn doctor_reports_the_extension_before_and_after_install() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let doctor = || -> Result<Value> {
        let out = Command::new(shepherd_bin())
            .args(["doctor", "--json"])
            .env("PI_CODING_AGENT_DIR", dir.path())
            .env_remove("SHEPHERD_SOCKET")
            .env_remove("SHEPHERD_CONFIG")
            .output()?;
        let checks: Value = serde_json::from_slice(&out.stdout)?;
        let check = checks
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == "extension")
            .cloned();
        Ok(check.expect("an extension check"))
    };
    let before = doctor()?;
    assert_eq!(before["status"], "fail");
    assert!(before["fix"].as_str().unwrap().contains("shepherd install"));
    assert!(install(dir.path(), false).status.success());
    let after = doctor()?;
    assert_eq!(after["status"], "ok", "{after}");
    std::fs::write(dir.path().join("shepherd/pi-ext/wire.ts"), "// old")?;
    let stale = doctor()?;
    assert_eq!(stale["status"], "warn", "{stale}");
    assert!(stale["detail"].as_str().unwrap().contains("wire.ts"));
    Ok(())
}

#[tokio::test]
async fn a_real_pi_loads_the_installed_extension_without_flags() -> Result<()> {
    let core = Core::start().await?;
    let out = install(core.agent_dir(), false);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let model = FakeModel::start(|_| Reply::text("hello")).await?;
    let mut opts = PiOptions::new(core.agent_dir());
    opts.extension_flag = false;
    opts.name = Some("installed-ext".into());
    let pi = PiSession::spawn(&model, opts).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let sessions = core.cli_json(&["sessions"])?;
        if sessions
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["name"] == "installed-ext"))
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "Pi never registered:\n{}",
            pi.stderr()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    pi.shutdown().await?;
    Ok(())
}
