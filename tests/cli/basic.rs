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

/// `gpu:x` with `--host box` names two hosts: said at once, without a core to ask.
#[test]
fn a_session_and_a_host_that_disagree_are_refused_before_connecting() {
    let env = Env::new();
    for command in ["reports", "usage"] {
        let out = env.run(&[command, "gpu:train-7", "--host", "box"]);
        assert_eq!(out.status.code(), Some(1), "{command}: {out:?}");
        let err = stderr(&out);
        assert!(
            err.contains("names host gpu and --host says box") && !err.contains("not running"),
            "{command}: {err}"
        );
    }
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

/// A fake core on `socket`, for as many connections as come: `hello` gets a `welcome`
/// speaking `protocol` (core 9.9.9 with `pid`), or with `None` the core's
/// `protocol_mismatch` refusal; any other request gets `reply(id)`.
fn fake_core(socket: &Path, protocol: Option<u32>, pid: u32, reply: fn(u64) -> serde_json::Value) {
    use std::io::{Read, Write};
    let listener = std::os::unix::net::UnixListener::bind(socket).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            loop {
                let mut len = [0u8; 4];
                if stream.read_exact(&mut len).is_err() {
                    break;
                }
                let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
                if stream.read_exact(&mut body).is_err() {
                    break;
                }
                let msg: serde_json::Value = serde_json::from_slice(&body).unwrap();
                let id = msg["id"].as_u64().unwrap_or(0);
                let answer = match (msg["type"] == "hello", protocol) {
                    (true, Some(protocol)) => {
                        serde_json::json!({"type": "welcome", "id": id, "protocol": protocol,
                            "core_version": "9.9.9", "store_id": "fake", "pid": pid})
                    }
                    (true, None) => serde_json::json!({"type": "error", "id": id,
                        "code": "protocol_mismatch", "details": null,
                        "message": format!("client speaks intercom protocol {}, this core speaks 1; update the older of the two", msg["protocol"])}),
                    (false, _) => reply(id),
                };
                let bytes = serde_json::to_vec(&answer).unwrap();
                let mut frame = (bytes.len() as u32).to_be_bytes().to_vec();
                frame.extend(bytes);
                if stream.write_all(&frame).is_err() {
                    break;
                }
            }
        }
    });
}

/// What a fake core answers every request with: an error whose text carries escape
/// sequences (colour, a window title, a bell, a carriage return).
fn coloured_error(id: u64) -> serde_json::Value {
    serde_json::json!({"type": "error", "id": id, "code": "internal",
        "message": "\u{1b}[31mboom\u{1b}[0m\u{7}\r and \u{1b}]0;pwned\u{7}more", "details": null})
}

/// A core that welcomes the CLI with another protocol version is refused before any
/// request: the message names both versions and says what to do (the older side is
/// replaced: upgrade this shepherd, or restart the core with it).
#[test]
fn a_core_speaking_another_protocol_is_refused_saying_what_to_do() {
    use shepherd_core::protocol::PROTOCOL_VERSION as OURS;
    for (theirs, todo) in [
        (OURS + 1, "this shepherd is older than the core: upgrade it"),
        (
            OURS - 1,
            "the core is older: restart it with this version (`shepherd restart`)",
        ),
    ] {
        let env = Env::new();
        fake_core(&env.socket(), Some(theirs), 4242, coloured_error);
        let out = env.run(&["status"]);
        assert_eq!(out.status.code(), Some(1));
        let err = stderr(&out);
        assert!(
            err.contains(&format!(
                "the running shepherd core 9.9.9 (pid 4242) speaks intercom protocol {theirs}"
            )) && err.contains(&format!("speaks protocol {OURS}"))
                && err.contains(todo)
                && err.contains("shepherd restart"),
            "{err}"
        );
        assert!(!err.contains("boom"), "no request was made: {err}");

        let out = env.run(&["status", "--json"]);
        let body: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(body["error"]["code"], "protocol_mismatch", "{body:#}");
        assert_eq!(body["error"]["details"]["core_protocol"], theirs);
        assert_eq!(body["error"]["details"]["protocol"], OURS);
    }
}

/// A core's error text is printed without its escape sequences and control characters,
/// on stderr and in `--json`.
#[test]
fn a_core_error_is_printed_without_its_control_characters() {
    let env = Env::new();
    fake_core(
        &env.socket(),
        Some(shepherd_core::protocol::PROTOCOL_VERSION),
        4242,
        coloured_error,
    );
    let out = env.run(&["status"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("shepherd: boom and more"), "{err:?}");
    assert!(
        !err.contains(['\u{1b}', '\u{7}', '\r']) && !err.contains("pwned"),
        "{err:?}"
    );
    let out = env.run(&["status", "--json"]);
    let body: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("boom and more"), "{message:?}");
    assert!(!message.chars().any(char::is_control), "{message:?}");
}

/// `shepherd stop` (and so `restart`, the fix the mismatch message gives) stops a core of
/// another protocol: one that welcomes the CLI by the pid in its welcome, one that refuses
/// the CLI's hello by the pid in the state directory's lock it holds.
#[test]
fn stop_ends_a_core_of_another_protocol() {
    for refuses_hello in [false, true] {
        let env = Env::new();
        // The "core" process: signalled by `stop`; when it is gone its socket and lock go.
        let mut core = Command::new("sleep").arg("60").spawn().unwrap();
        let pid = core.id();
        let state = env.agent_dir().join("shepherd");
        std::fs::create_dir_all(&state).unwrap();
        let lock = std::fs::File::create(state.join("shepherd.lock")).unwrap();
        lock.try_lock().unwrap();
        std::fs::write(state.join("shepherd.lock"), format!("{pid}\n")).unwrap();
        let protocol = (!refuses_hello).then_some(shepherd_core::protocol::PROTOCOL_VERSION + 1);
        fake_core(&env.socket(), protocol, pid, coloured_error);
        let socket = env.socket();
        let gone = std::thread::spawn(move || {
            let status = core.wait().unwrap();
            std::fs::remove_file(&socket).unwrap();
            drop(lock);
            status
        });
        let out = env.run(&["stop"]);
        assert!(
            out.status.success(),
            "refuses hello: {refuses_hello}: {}",
            stderr(&out)
        );
        assert_eq!(stdout(&out), format!("stopped the core (pid {pid})\n"));
        let status = gone.join().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(15),
            "SIGTERM"
        );
    }
}

/// `shepherd hosts add` writes a `[[hosts]]` entry the config reads back; a bad name, an
/// empty command, a name already taken or a file that would not read are refused with
/// nothing written.
#[test]
fn hosts_add_writes_an_entry_and_refuses_what_would_not_work() {
    let env = Env::new();
    let config = env.path().join("config.toml");
    std::fs::write(&config, "[core]\nresults = \"all\"\n").unwrap();
    let add = |args: &[&str]| {
        let mut all = vec!["--config", config.to_str().unwrap(), "hosts", "add"];
        all.extend_from_slice(args);
        env.run(&all)
    };
    let out = add(&["gpu", "--", "ssh", "-T", "me@gpu-box", "shepherd", "link"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("shepherd restart"),
        "{}",
        stdout(&out)
    );
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.starts_with("[core]\nresults = \"all\"\n\n[[hosts]]\n"),
        "{text}"
    );
    let parsed = shepherd_core::config::Config::from_toml(&text, "test").unwrap();
    assert_eq!(parsed.hosts[0].name.as_str(), "gpu");
    assert_eq!(
        parsed.hosts[0].command.argv(),
        ["ssh", "-T", "me@gpu-box", "shepherd", "link"]
    );

    let refused = |args: &[&str], says: &str| {
        let out = add(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert_eq!(
            std::fs::read_to_string(&config).unwrap(),
            text,
            "{args:?} wrote"
        );
    };
    refused(&["gpu", "--", "ssh", "other"], "already configured");
    refused(&["GPU box", "--", "ssh"], "not a host name");
    refused(&["box", "--", ""], "at least a program");
    let out = add(&["box"]);
    assert_eq!(out.status.code(), Some(2), "a command is required");
}

/// `shepherd doctor` checks that each linked host's link command can run here, and the
/// speech-to-text command of `[phone] transcribe`.
#[test]
fn doctor_checks_each_hosts_link_command() {
    let env = Env::new();
    let config = env.path().join("config.toml");
    std::fs::write(
        &config,
        "[phone]\ntranscribe = [\"whisper-nowhere\", \"-f\", \"{file}\"]\n\n[[hosts]]\nname = \"near\"\ncommand = [\"sh\", \"-c\", \"true\"]\n\n[[hosts]]\nname = \"far\"\ncommand = [\"/nonexistent/ssh\", \"far\"]\n",
    )
    .unwrap();
    let out = env
        .command()
        .args(["--config", config.to_str().unwrap(), "doctor"])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        text.contains("ok    host: near: its link command runs /"),
        "{text}"
    );
    assert!(
        text.contains(
            "FAIL  host: far: its link command's program `/nonexistent/ssh` is not found"
        ),
        "{text}"
    );
    // And that `[phone] transcribe`'s program can.
    assert!(
        text.contains(
            "FAIL  transcribe: [phone] transcribe's program `whisper-nowhere` is not found"
        ),
        "{text}"
    );
}

/// `shepherd approvals check`: each rule kind decides as written, with the rule named;
/// a project's file tightens, or is refused naming the file and rule when it would
/// loosen; a malformed rule is a config error naming the rule.
#[test]
fn approvals_check_names_the_deciding_rule_of_each_kind() {
    let env = Env::new();
    let config = env.path().join("config.toml");
    std::fs::write(
        &config,
        r#"
[approvals]
preset = "careful"
[[approvals.rules]]
tool = "bash"
match = "git push origin main"
decision = "deny"
[[approvals.rules]]
tool = ["write", "edit"]
match = "**/.env"
decision = "deny"
[[approvals.rules]]
tool = "fetch"
regex = "prod\\.example"
decision = "ask"
"#,
    )
    .unwrap();
    let repo = env.path().join("app");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(&repo)
            .output()
            .unwrap();
        assert!(ok.status.success(), "{ok:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    let check = |args: &[&str]| {
        let mut all = vec!["approvals", "check", "--cwd"];
        let cwd = repo.join("src");
        all.push(cwd.to_str().unwrap());
        all.push("--");
        all.extend_from_slice(args);
        let out = env
            .command()
            .env("SHEPHERD_CONFIG", &config)
            .args(&all)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        stdout(&out)
    };
    let shown = config.display().to_string();
    assert_eq!(
        check(&["bash", "git push origin main"]),
        format!("deny: rule 1 of {shown} (tool bash, match \"git push origin main\", deny)\n")
    );
    let env_file = check(&["write", "../.env"]);
    assert!(
        env_file.starts_with(&format!("deny: rule 2 of {shown}")),
        "{env_file}"
    );
    let fetch = check(&["fetch", r#"{"url": "https://prod.example/x"}"#]);
    assert!(
        fetch.starts_with(&format!("ask: rule 3 of {shown}")),
        "{fetch}"
    );
    let push = check(&["bash", "git", "push", "--force"]);
    assert!(
        push.starts_with(&format!("ask: rule 1 of the careful preset in {shown}")),
        "{push}"
    );
    let outside = check(&["edit", "/etc/hosts"]);
    assert!(outside.contains("outside cwd, ask"), "{outside}");
    assert_eq!(
        check(&["bash", "cargo test"]),
        format!("allow: no rule matches: the default of {shown}\n")
    );

    // The project's file tightens: its deny wins over the user's allow.
    std::fs::create_dir_all(repo.join(".pi")).unwrap();
    let project = repo.join(".pi/shepherd.toml");
    std::fs::write(
        &project,
        "[[approvals.rules]]\ntool = \"bash\"\nmatch = \"cargo publish*\"\ndecision = \"deny\"\n",
    )
    .unwrap();
    let publish = check(&["bash", "cargo publish"]);
    assert!(
        publish.starts_with("deny: rule 1 of ") && publish.contains(".pi/shepherd.toml"),
        "{publish}"
    );
    // One that would loosen is refused whole, naming the file and the rule.
    std::fs::write(
        &project,
        "[[approvals.rules]]\ntool = \"bash\"\nmatch = \"git push*\"\ndecision = \"allow\"\n",
    )
    .unwrap();
    let refused = check(&["bash", "git push origin feat"]);
    assert!(
        refused.starts_with("ask: rule 1 of the careful preset")
            && refused.contains("refused")
            && refused.contains(&project.display().to_string())
            && refused.contains("rule 1 (tool bash, match \"git push*\", allow) would loosen"),
        "{refused}"
    );

    // A malformed rule is a config error naming it.
    std::fs::write(
        &config,
        "[[approvals.rules]]\ntool = \"bash\"\nmatch = \"x\"\nregex = \"y\"\ndecision = \"ask\"\n",
    )
    .unwrap();
    let out = env
        .command()
        .env("SHEPHERD_CONFIG", &config)
        .args(["approvals", "check", "--", "bash", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = stderr(&out);
    assert!(
        err.contains("approvals.rules[0]") && err.contains("keep one"),
        "{err}"
    );
    // A call without what it needs says how to write one.
    let out = env.run(&["approvals", "check", "--", "bash"]);
    assert!(stderr(&out).contains("give the command"), "{out:?}");
}

/// `shepherd completions SHELL` and `shepherd man` are written from the command line's
/// own definition: every subcommand is in them; an unknown shell is a usage error.
#[test]
fn completions_and_the_manual_page_know_every_command() {
    let env = Env::new();
    for (shell, starts) in [
        ("bash", "_shepherd()"),
        ("zsh", "#compdef shepherd"),
        ("fish", ""),
    ] {
        let out = env.run(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {out:?}");
        let script = stdout(&out);
        assert!(script.starts_with(starts), "{shell}: {script:.200}");
        for command in ["approvals", "approve", "hosts", "supervise", "workers"] {
            assert!(script.contains(command), "{shell} lacks {command}");
        }
    }
    let man = env.run(&["man"]);
    assert!(man.status.success(), "{man:?}");
    let page = stdout(&man);
    assert!(page.contains(".TH shepherd 1"), "{page:.300}");
    assert!(
        page.contains("approvals") && page.contains("completions"),
        "{page:.300}"
    );
    assert_eq!(env.run(&["completions", "tcsh"]).status.code(), Some(2));
}
