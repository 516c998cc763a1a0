//! `shepherd up --log-file`: the way the Pi extension starts the core in the background.
//! Logs go to `<state dir>/core.log` (private state dir), not to the terminal.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Result;
use shepherd_harness::shepherd_bin;

#[test]
fn up_with_log_file_writes_its_log_under_the_state_dir() -> Result<()> {
    let dir = tempfile::Builder::new().prefix("shp").tempdir_in("/tmp")?;
    let child = Command::new(shepherd_bin())
        .args(["up", "--log-file"])
        .env("PI_CODING_AGENT_DIR", dir.path())
        .env_remove("SHEPHERD_SOCKET")
        .env_remove("SHEPHERD_CONFIG")
        .env_remove("SHEPHERD_STATE_DIR")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let log = dir.path().join("shepherd/core.log");
    let deadline = Instant::now() + Duration::from_secs(15);
    let text = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("accepting connections") {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "no log in {}: {text:?}",
            log.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!text.contains('\u{1b}'), "no terminal colours in a file");
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let out = child.wait_with_output()?;
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "nothing on stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(dir.path().join("shepherd"))?.permissions(),
    );
    assert_eq!(mode & 0o777, 0o700);
    assert_eq!(
        mode_of(&log)?,
        0o600,
        "the log is private whatever the umask"
    );
    assert!(!text.contains("readable by others"), "a new log: {text}");
    Ok(())
}

fn mode_of(path: &std::path::Path) -> Result<u32> {
    use std::os::unix::fs::PermissionsExt;
    Ok(std::fs::metadata(path)?.permissions().mode() & 0o777)
}

/// A core started in the background that cannot start leaves the reason in its log, in
/// one line the Pi extension and `shepherd restart` look for; even when the configuration
/// that would place the log is what failed (then the log is where the environment puts it).
#[test]
fn up_with_log_file_that_cannot_start_writes_the_reason_to_the_log() -> Result<()> {
    let dir = tempfile::Builder::new().prefix("shp").tempdir_in("/tmp")?;
    let config = dir.path().join("bad.toml");
    std::fs::write(&config, "[core]\nno_such_setting = 1\n[telegram]\n")?;
    let run = |args: &[&str]| {
        Command::new(shepherd_bin())
            .args(args)
            .env("PI_CODING_AGENT_DIR", dir.path())
            .env("SHEPHERD_CONFIG", &config)
            .env_remove("SHEPHERD_SOCKET")
            .env_remove("SHEPHERD_STATE_DIR")
            .env("RUST_LOG", "off")
            .output()
    };
    let out = run(&["up", "--log-file"])?;
    assert_eq!(out.status.code(), Some(1));
    let log = std::fs::read_to_string(dir.path().join("shepherd/core.log"))?;
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 1, "{log}");
    let (stamp, rest) = lines[0].split_once(' ').unwrap();
    assert!(stamp.ends_with('Z') && stamp.contains('T'), "{stamp}");
    assert!(
        rest.starts_with("ERROR shepherd up: the core did not start: "),
        "{rest}"
    );
    assert!(rest.contains("no_such_setting"), "{rest}");

    // An explicit log file, and a bridge that refuses to start.
    std::fs::write(
        &config,
        "[telegram]\ntoken = \"123:SECRET\"\nallowed_users = [1]\nchat_id = 1\n[matrix]\n",
    )?;
    let explicit = dir.path().join("explicit.log");
    let out = run(&["up", "--log-file", explicit.to_str().unwrap()])?;
    assert_eq!(out.status.code(), Some(1));
    let log = std::fs::read_to_string(&explicit)?;
    let line = log
        .lines()
        .find(|l| l.contains("the core did not start: "))
        .unwrap_or_else(|| panic!("no start-up error in {log}"));
    assert!(line.contains("matrix"), "{line}");
    assert!(!log.contains("SECRET"), "{log}");
    Ok(())
}

/// A core that cannot write its files at start-up (here a file-size limit of 0, as
/// `ulimit -f 0` sets; a full disk reads the same with "free space on that disk") says
/// why and what to do, and exits 1 (SIGXFSZ, listened for from the start, does not end
/// it first).
#[test]
fn up_that_cannot_write_says_what_to_do() -> Result<()> {
    let dir = tempfile::Builder::new().prefix("shp").tempdir_in("/tmp")?;
    let out = Command::new("sh")
        .args(["-c", "ulimit -S -f 0; exec \"$0\" up"])
        .arg(shepherd_bin())
        .env("PI_CODING_AGENT_DIR", dir.path())
        .env_remove("SHEPHERD_SOCKET")
        .env_remove("SHEPHERD_STATE_DIR")
        .env_remove("SHEPHERD_CONFIG")
        .env("RUST_LOG", "off")
        .output()?;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let lock = dir.path().join("shepherd/shepherd.lock");
    assert!(
        err.contains(&format!("cannot use lock file {}", lock.display()))
            && err.contains(
                ": a file reached this process's file-size limit (`ulimit -f`): start the core without it"
            ),
        "{err}"
    );
    Ok(())
}

/// A config file holding a secret that group or others can read: `up` warns once (with the
/// `chmod 600` that fixes it, never the value) and `doctor` reports it with the fix.
#[test]
fn a_config_file_with_a_secret_others_can_read_is_warned_about() -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new().prefix("shp").tempdir_in("/tmp")?;
    let config = dir.path().join("shepherd.toml");
    std::fs::write(
        &config,
        "[telegram]\ntoken = \"123:VERY-SECRET\"\nallowed_users = [1]\nchat_id = 1\n\
         api_url = \"http://127.0.0.1:9\"\n",
    )?;
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644))?;
    let command = |args: &[&str]| {
        let mut cmd = Command::new(shepherd_bin());
        cmd.args(args)
            .env("PI_CODING_AGENT_DIR", dir.path())
            .env("SHEPHERD_CONFIG", &config)
            .env_remove("SHEPHERD_SOCKET")
            .env_remove("SHEPHERD_STATE_DIR")
            .env_remove("SHEPHERD_TELEGRAM_TOKEN")
            .env("RUST_LOG", "info");
        cmd
    };
    let fix = format!("chmod 600 {}", config.display());

    let doctor = command(&["doctor"]).output()?;
    let text = String::from_utf8_lossy(&doctor.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("config secrets"))
        .unwrap_or_else(|| panic!("no config secrets line:\n{text}"));
    assert!(
        line.starts_with("warn") && line.contains("telegram.token") && line.contains(&fix),
        "{line}"
    );
    assert!(!text.contains("VERY-SECRET"), "{text}");

    let child = command(&["up", "--log-file"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let log = dir.path().join("shepherd/core.log");
    let deadline = Instant::now() + Duration::from_secs(15);
    let text = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("accepting connections") {
            break text;
        }
        assert!(Instant::now() < deadline, "no start in the log: {text:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    child.wait_with_output()?;
    assert_eq!(text.matches(&fix).count(), 1, "warned once: {text}");
    assert!(!text.contains("VERY-SECRET"), "{text}");

    // Private again: no warning.
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600))?;
    let doctor = command(&["doctor"]).output()?;
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(!text.contains("config secrets"), "{text}");
    Ok(())
}

/// A `token_file` group or others can read is warned about like a config file holding a
/// secret: by `doctor` (with the `chmod 600` that fixes it) and once by `up`, never with
/// the value. A `core.log` an older version left 0644 is made 0600 when `up` opens it,
/// and `up` says so.
#[test]
fn a_token_file_others_can_read_is_warned_about_and_a_loose_log_made_private() -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new().prefix("shp").tempdir_in("/tmp")?;
    let token = dir.path().join("telegram.token");
    std::fs::write(&token, "123:VERY-SECRET\n")?;
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644))?;
    let config = dir.path().join("shepherd.toml");
    std::fs::write(
        &config,
        format!(
            "[telegram]\ntoken_file = \"{}\"\nallowed_users = [1]\nchat_id = 1\n\
             api_url = \"http://127.0.0.1:9\"\n",
            token.display()
        ),
    )?;
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644))?;
    let state = dir.path().join("shepherd");
    std::fs::create_dir(&state)?;
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700))?;
    let log = state.join("core.log");
    std::fs::write(&log, "an older core's line\n")?;
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644))?;
    let command = |args: &[&str]| {
        let mut cmd = Command::new(shepherd_bin());
        cmd.args(args)
            .env("PI_CODING_AGENT_DIR", dir.path())
            .env("SHEPHERD_CONFIG", &config)
            .env_remove("SHEPHERD_SOCKET")
            .env_remove("SHEPHERD_STATE_DIR")
            .env_remove("SHEPHERD_TELEGRAM_TOKEN")
            .env("RUST_LOG", "info");
        cmd
    };
    let fix = format!("chmod 600 {}", token.display());

    let doctor = command(&["doctor"]).output()?;
    let text = String::from_utf8_lossy(&doctor.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("secret file"))
        .unwrap_or_else(|| panic!("no secret file line:\n{text}"));
    assert!(
        line.starts_with("warn")
            && line.contains("telegram.token_file")
            && line.contains("0644")
            && line.contains(&fix),
        "{line}"
    );
    assert!(
        !text.contains("config secrets"),
        "the config file itself holds no secret: {text}"
    );
    assert!(!text.contains("VERY-SECRET"), "{text}");

    let child = command(&["up", "--log-file"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let deadline = Instant::now() + Duration::from_secs(15);
    let text = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("accepting connections") {
            break text;
        }
        assert!(Instant::now() < deadline, "no start in the log: {text:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    child.wait_with_output()?;
    assert_eq!(text.matches(&fix).count(), 1, "warned once: {text}");
    assert!(text.contains("telegram.token_file"), "{text}");
    assert!(!text.contains("VERY-SECRET"), "{text}");
    assert!(
        text.starts_with("an older core's line\n"),
        "appended: {text}"
    );
    assert_eq!(mode_of(&log)?, 0o600);
    assert_eq!(
        text.matches("was readable by others (mode 0644); it is now 0600")
            .count(),
        1,
        "{text}"
    );

    // Private again: no warning.
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600))?;
    let doctor = command(&["doctor"]).output()?;
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(!text.contains("secret file"), "{text}");
    Ok(())
}
