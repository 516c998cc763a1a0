//! `shepherd doctor` with bridge settings from the environment alone (no config file):
//! the config line names the variables, the bridge gets its own line saying where the token
//! comes from and what is missing, and no secret value is printed, in text or JSON.

use std::process::Command;

use shepherd_harness::shepherd_bin;

const TOKEN: &str = "123456:AAH-very-secret-token-value";

fn doctor(dir: &std::path::Path, env: &[(&str, &str)], json: bool) -> String {
    let mut cmd = Command::new(shepherd_bin());
    cmd.arg("doctor")
        .env("PI_CODING_AGENT_DIR", dir)
        .env("HOME", dir)
        .env("PATH", "/nonexistent")
        .env_remove("SHEPHERD_SOCKET")
        .env_remove("SHEPHERD_CONFIG")
        .env_remove("SHEPHERD_STATE_DIR")
        .env_remove("SHEPHERD_MATRIX_PASSWORD")
        .env_remove("SHEPHERD_MATRIX_ACCESS_TOKEN");
    if json {
        cmd.arg("--json");
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("running shepherd doctor");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !text.contains("very-secret") && !err.contains("very-secret"),
        "{text}{err}"
    );
    text
}

#[test]
fn environment_only_bridge_settings_are_reported_without_secrets() {
    let dir = tempfile::Builder::new()
        .prefix("shp")
        .tempdir_in("/tmp")
        .unwrap();
    let text = doctor(dir.path(), &[("SHEPHERD_TELEGRAM_TOKEN", TOKEN)], false);
    let line = |check: &str| {
        text.lines()
            .find(|l| {
                l.get(6..)
                    .is_some_and(|r| r.starts_with(&format!("{check}:")))
            })
            .unwrap_or_else(|| panic!("no {check} line in:\n{text}"))
            .to_string()
    };
    assert!(
        line("config").contains("none: defaults plus the environment: SHEPHERD_TELEGRAM_TOKEN"),
        "{text}"
    );
    let telegram = line("telegram");
    assert!(
        telegram.contains("token from SHEPHERD_TELEGRAM_TOKEN, no allowed users, no chat_id"),
        "{telegram}"
    );
    assert!(
        telegram.contains("pairing mode") && !telegram.contains(TOKEN),
        "a token alone is pairing mode: {telegram}"
    );

    let json = doctor(
        dir.path(),
        &[
            ("SHEPHERD_TELEGRAM_TOKEN", TOKEN),
            ("SHEPHERD_MATRIX_PASSWORD", TOKEN),
            ("SHEPHERD_MATRIX__HOMESERVER", "https://matrix.example.org"),
            ("SHEPHERD_MATRIX__USER_ID", "@bot:example.org"),
        ],
        true,
    );
    let checks: serde_json::Value = serde_json::from_str(&json).unwrap();
    let matrix = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "matrix")
        .unwrap_or_else(|| panic!("{json}"));
    assert_eq!(
        matrix["detail"],
        "@bot:example.org, password from SHEPHERD_MATRIX_PASSWORD, no allowed users"
    );

    // A secret of the wrong type in a config file is named, never quoted.
    let config = dir.path().join("shepherd");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "[matrix]\npassword = 99887766554433\n",
    )
    .unwrap();
    let text = doctor(dir.path(), &[], false);
    assert!(text.contains("matrix.password"), "{text}");
    assert!(!text.contains("99887766554433"), "{text}");

    // Nothing configured: one line saying how to add a bridge.
    std::fs::remove_file(config.join("config.toml")).unwrap();
    let text = doctor(dir.path(), &[], false);
    assert!(text.contains("bridges: none configured"), "{text}");
}
