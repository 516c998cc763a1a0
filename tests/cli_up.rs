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
    Ok(())
}
