//! The `shepherd` command line without a running core: help for every command, the
//! "not running" error and its exit code, usage errors, config errors that name the key,
//! and `shepherd doctor` on a fresh agent directory (with a fake `node` and `pi` on PATH
//! so the result does not depend on the machine).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A temp agent dir and socket path of this test's own.
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            dir: tempfile::Builder::new()
                .prefix("shp-cli")
                .tempdir_in("/tmp")
                .unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn agent_dir(&self) -> PathBuf {
        self.path().join("agent")
    }

    fn socket(&self) -> PathBuf {
        self.path().join("s.sock")
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_shepherd"));
        cmd.env("PI_CODING_AGENT_DIR", self.agent_dir())
            .env("SHEPHERD_SOCKET", self.socket())
            .env_remove("SHEPHERD_CONFIG")
            .env_remove("SHEPHERD_STATE_DIR")
            .env_remove("COLUMNS");
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }

    /// A directory with executable scripts `name` printing `version`, for PATH.
    fn fake_bin(&self, tools: &[(&str, &str)]) -> PathBuf {
        let bin = self.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        for (name, version) in tools {
            let script = bin.join(name);
            std::fs::write(&script, format!("#!/bin/sh\necho {version}\n")).unwrap();
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        bin
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn every_command_has_help() {
    let env = Env::new();
    let out = env.run(&["--help"]);
    assert!(out.status.success());
    let top = stdout(&out);
    for command in [
        "up", "status", "sessions", "asks", "answer", "send", "doctor",
    ] {
        assert!(top.contains(command), "{command} missing from:\n{top}");
        let out = env.run(&[command, "--help"]);
        assert!(out.status.success(), "{command} --help: {}", stderr(&out));
        let help = stdout(&out);
        assert!(
            help.contains("--json"),
            "{command} --help lacks --json:\n{help}"
        );
        assert!(
            help.contains("--socket"),
            "{command} --help lacks --socket:\n{help}"
        );
        assert!(
            help.contains("--config"),
            "{command} --help lacks --config:\n{help}"
        );
    }
    assert!(stdout(&env.run(&["sessions", "--help"])).contains("--follow"));
    assert!(stdout(&env.run(&["asks", "--help"])).contains("--all"));
}

#[test]
fn status_without_a_core_says_how_to_start_it() {
    let env = Env::new();
    let out = env.run(&["status"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("not running"), "{err}");
    assert!(err.contains("shepherd up"), "{err}");
    assert!(err.contains(&env.socket().display().to_string()), "{err}");
    assert!(stdout(&out).is_empty());

    let out = env.run(&["status", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let body: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["error"]["code"], "not_running");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("shepherd up")
    );
}

#[test]
fn every_client_command_reports_a_missing_core() {
    let env = Env::new();
    for args in [
        &["sessions"][..],
        &["asks", "--all"],
        &["answer", "1", "yes"],
        &["send", "x", "hello"],
    ] {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&out).contains("shepherd up"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn socket_flag_beats_the_environment() {
    let env = Env::new();
    let flag = env.path().join("flag.sock");
    let out = env.run(&["--socket", flag.to_str().unwrap(), "status"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("flag.sock"), "{}", stderr(&out));
}

#[test]
fn usage_errors_exit_2() {
    let env = Env::new();
    assert_eq!(env.run(&["answer", "1"]).status.code(), Some(2));
    assert_eq!(env.run(&["answer", "one", "yes"]).status.code(), Some(2));
    assert_eq!(env.run(&["send", "x"]).status.code(), Some(2));
    assert_eq!(env.run(&["frobnicate"]).status.code(), Some(2));
}

#[test]
fn unknown_config_key_is_named_by_its_path() {
    let env = Env::new();
    let file = env.path().join("bad.toml");
    std::fs::write(&file, "[core.limits]\nmax_frame = 3\n").unwrap();
    let out = env.run(&["--config", file.to_str().unwrap(), "status"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("core.limits"), "{err}");
    assert!(err.contains("max_frame"), "{err}");
    assert!(
        err.contains("shepherd.example.toml"),
        "the error says where to look: {err}"
    );

    // The same file through SHEPHERD_CONFIG.
    let out = env
        .command()
        .env("SHEPHERD_CONFIG", &file)
        .arg("sessions")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("core.limits"), "{}", stderr(&out));
}

#[test]
fn doctor_on_a_fresh_agent_dir() {
    let env = Env::new();
    let bin = env.fake_bin(&[("node", "v20.11.1")]);
    let out = env
        .command()
        .env("PATH", &bin)
        .arg("doctor")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "a missing core is a failure");
    let text = stdout(&out);
    let line = |check: &str| {
        text.lines()
            .find(|l| l[6..].starts_with(&format!("{check}:")))
            .unwrap_or_else(|| panic!("no {check} line in:\n{text}"))
            .to_string()
    };
    assert!(line("config").starts_with("ok"), "{text}");
    assert!(
        line("config").contains("none: defaults plus the environment: SHEPHERD_SOCKET"),
        "{text}"
    );
    let state = line("state dir");
    assert!(state.starts_with("FAIL"), "{state}");
    assert!(state.contains("does not exist"), "{state}");
    assert!(
        state.contains("— start the core once with `shepherd up`"),
        "{state}"
    );
    assert!(line("database").starts_with("warn"), "{text}");
    assert!(line("socket").starts_with("FAIL"), "{text}");
    assert!(line("socket").contains("shepherd up"), "{text}");
    let node = line("node");
    assert!(node.starts_with("FAIL") && node.contains("22.19"), "{node}");
    assert!(node.contains("install Node 22"), "{node}");
    let pi = line("pi");
    assert!(pi.starts_with("FAIL") && pi.contains("not found"), "{pi}");
    assert!(
        pi.contains("npm install -g @earendil-works/pi-coding-agent"),
        "{pi}"
    );
    let ext = line("extension");
    assert!(
        ext.starts_with("FAIL") && ext.contains("shepherd install"),
        "{ext}"
    );
}

#[test]
fn doctor_finds_node_pi_and_the_extension() {
    let env = Env::new();
    let bin = env.fake_bin(&[("node", "v22.19.0"), ("pi", "1.6.0")]);
    std::fs::create_dir_all(env.agent_dir()).unwrap();
    // A checkout's pi-ext, configured with `pi install <checkout>/pi-ext`.
    let checkout = env.agent_dir().join("src/shepherd/pi-ext");
    std::fs::create_dir_all(&checkout).unwrap();
    std::fs::write(
        checkout.join("package.json"),
        r#"{"name": "shepherd-pi-ext"}"#,
    )
    .unwrap();
    let settings = serde_json::json!({"packages": ["npm:other", checkout.to_str().unwrap()]});
    std::fs::write(env.agent_dir().join("settings.json"), settings.to_string()).unwrap();
    let out = env
        .command()
        .env("PATH", &bin)
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let checks: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let find = |name: &str| {
        checks
            .iter()
            .find(|c| c["check"] == name)
            .unwrap_or_else(|| panic!("no {name} in {checks:?}"))
    };
    assert_eq!(find("node")["status"], "ok");
    assert!(
        find("node")["detail"]
            .as_str()
            .unwrap()
            .contains("v22.19.0")
    );
    assert_eq!(find("pi")["status"], "ok");
    assert!(find("pi")["detail"].as_str().unwrap().contains("1.6.0"));
    assert_eq!(find("extension")["status"], "ok");
    assert!(find("extension")["fix"].is_null());
    let state = find("state dir");
    assert_eq!(state["status"], "fail");
    assert!(state["fix"].as_str().unwrap().contains("shepherd up"));
    for check in &checks {
        for key in ["check", "status", "detail", "fix"] {
            assert!(check.get(key).is_some(), "{key} missing in {check}");
        }
    }
}

#[test]
fn doctor_flags_a_state_dir_others_can_read() {
    let env = Env::new();
    let state = env.agent_dir().join("shepherd");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = env.run(&["doctor"]);
    let text = stdout(&out);
    let line = text.lines().find(|l| l.contains("state dir:")).unwrap();
    assert!(line.starts_with("FAIL"), "{line}");
    assert!(
        line.contains("0755") && line.contains("chmod 700"),
        "{line}"
    );
}

#[test]
fn doctor_reports_a_broken_config_and_goes_on() {
    let env = Env::new();
    let file = env.path().join("bad.toml");
    std::fs::write(&file, "[core]\nhello_timeout_ms = \"soon\"\n").unwrap();
    let out = env.run(&["--config", file.to_str().unwrap(), "doctor"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    let config = text.lines().find(|l| l.contains("config:")).unwrap();
    assert!(config.starts_with("FAIL"), "{config}");
    assert!(config.contains("core.hello_timeout_ms"), "{config}");
    assert!(
        text.contains("state dir:"),
        "the other checks still run:\n{text}"
    );
}
