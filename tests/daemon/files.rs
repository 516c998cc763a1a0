//! What `shepherd up` does to the files and directories it is pointed at: a directory it
//! did not create is never chmodded (a shared one that others could write into is refused
//! instead), only a socket nothing answers on is removed as stale, and the database, its
//! companions and the lock are 0600 whatever the umask; a core whose state directory is
//! deleted under it stops.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use shepherd_harness::shepherd_bin;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `shepherd up` on the agent dir `agent` with `env`, through `sh` so a umask can be set.
fn up(agent: &Path, env: &[(&str, &Path)], umask: &str) -> Command {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("umask {umask}; exec \"$0\" up"))
        .arg(shepherd_bin())
        .env("PI_CODING_AGENT_DIR", agent)
        .env("NO_COLOR", "1")
        .env_remove("SHEPHERD_SOCKET")
        .env_remove("SHEPHERD_CONFIG")
        .env_remove("SHEPHERD_STATE_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        cmd.env(key, value);
    }
    cmd
}

/// Run `up` expecting it to refuse; its output.
fn refused(mut cmd: Command) -> Result<Output> {
    let out = cmd.output()?;
    if out.status.success() {
        bail!("shepherd up should have refused to start");
    }
    Ok(out)
}

/// A running core, terminated on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.0.id().to_string())
            .status();
        let _ = self.0.wait();
    }
}

/// Start `up` and wait until `socket` is a socket.
fn started(mut cmd: Command, socket: &Path) -> Result<Running> {
    let mut child = Running(cmd.spawn()?);
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if std::fs::symlink_metadata(socket).is_ok_and(|m| m.file_type().is_socket())
            && std::os::unix::net::UnixStream::connect(socket).is_ok()
        {
            return Ok(child);
        }
        if let Some(status) = child.0.try_wait()? {
            let mut err = String::new();
            use std::io::Read;
            if let Some(mut stderr) = child.0.stderr.take() {
                stderr.read_to_string(&mut err)?;
            }
            bail!("shepherd up exited ({status}) before accepting:\n{err}");
        }
        if Instant::now() > deadline {
            bail!("shepherd up did not bind {} within 15 s", socket.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn tempdir() -> Result<tempfile::TempDir> {
    Ok(tempfile::Builder::new().prefix("shp").tempdir_in("/tmp")?)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_socket_in_a_shared_directory_is_refused_and_the_directory_left_alone() -> Result<()> {
    let agent = tempdir()?;
    let shared = tempdir()?;
    set_mode(shared.path(), 0o777);
    let socket = shared.path().join("s.sock");
    let out = refused(up(agent.path(), &[("SHEPHERD_SOCKET", &socket)], "022"))?;
    let err = stderr(&out);
    assert!(err.contains(&shared.path().display().to_string()), "{err}");
    assert!(err.contains("writable by others"), "{err}");
    assert!(
        err.contains("SHEPHERD_SOCKET"),
        "says what to change: {err}"
    );
    assert_eq!(
        mode(shared.path()),
        0o777,
        "the shared directory is unchanged"
    );
    assert!(!socket.exists());
    Ok(())
}

#[test]
fn a_socket_in_a_sticky_or_home_like_directory_leaves_its_mode_alone() -> Result<()> {
    for dir_mode in [0o1777, 0o755] {
        let agent = tempdir()?;
        let parent = tempdir()?;
        set_mode(parent.path(), dir_mode);
        let socket = parent.path().join("s.sock");
        let core = started(
            up(agent.path(), &[("SHEPHERD_SOCKET", &socket)], "022"),
            &socket,
        )?;
        assert_eq!(mode(parent.path()), dir_mode, "{dir_mode:o} is not changed");
        assert_eq!(mode(&socket), 0o600);
        drop(core);
        assert_eq!(mode(parent.path()), dir_mode);
    }
    Ok(())
}

#[test]
fn a_missing_socket_directory_is_created_private() -> Result<()> {
    let agent = tempdir()?;
    let base = tempdir()?;
    let socket: PathBuf = base.path().join("run/shepherd/s.sock");
    let _core = started(
        up(agent.path(), &[("SHEPHERD_SOCKET", &socket)], "000"),
        &socket,
    )?;
    assert_eq!(mode(socket.parent().unwrap()), 0o700);
    assert_eq!(mode(&socket), 0o600);
    Ok(())
}

#[test]
fn a_symlinked_state_dir_keeps_its_target_mode_and_a_shared_target_is_refused() -> Result<()> {
    let agent = tempdir()?;
    let target = tempdir()?;
    set_mode(target.path(), 0o755);
    let link = agent.path().join("state");
    std::os::unix::fs::symlink(target.path(), &link)?;
    let socket = link.join("shepherd.sock");
    let core = started(
        up(agent.path(), &[("SHEPHERD_STATE_DIR", &link)], "022"),
        &socket,
    )?;
    assert_eq!(
        mode(target.path()),
        0o755,
        "the link's target is not changed"
    );
    drop(core);

    set_mode(target.path(), 0o777);
    let out = refused(up(agent.path(), &[("SHEPHERD_STATE_DIR", &link)], "022"))?;
    assert!(
        stderr(&out).contains("writable by others"),
        "{}",
        stderr(&out)
    );
    assert_eq!(mode(target.path()), 0o777);
    Ok(())
}

#[test]
fn a_shared_state_dir_is_refused_not_chmodded() -> Result<()> {
    let agent = tempdir()?;
    let shared = tempdir()?;
    set_mode(shared.path(), 0o1777);
    let out = refused(up(
        agent.path(),
        &[("SHEPHERD_STATE_DIR", shared.path())],
        "022",
    ))?;
    let err = stderr(&out);
    assert!(err.contains("is shared (mode 1777)"), "{err}");
    assert!(err.contains("SHEPHERD_STATE_DIR"), "{err}");
    assert_eq!(mode(shared.path()), 0o1777);
    Ok(())
}

#[test]
fn a_file_at_the_socket_path_is_an_error_not_a_stale_socket() -> Result<()> {
    let agent = tempdir()?;
    let dir = tempdir()?;
    let socket = dir.path().join("s.sock");
    std::fs::write(&socket, "my notes")?;
    let out = refused(up(agent.path(), &[("SHEPHERD_SOCKET", &socket)], "022"))?;
    let err = stderr(&out);
    assert!(err.contains("is not a socket"), "{err}");
    assert!(err.contains(&socket.display().to_string()), "{err}");
    assert_eq!(
        std::fs::read_to_string(&socket)?,
        "my notes",
        "nothing is deleted"
    );

    // A socket nothing answers on is stale, and replaced.
    std::fs::remove_file(&socket)?;
    drop(std::os::unix::net::UnixListener::bind(&socket)?);
    let _core = started(
        up(agent.path(), &[("SHEPHERD_SOCKET", &socket)], "022"),
        &socket,
    )?;
    Ok(())
}

#[test]
fn the_database_its_companions_and_the_lock_are_0600_with_umask_000() -> Result<()> {
    let agent = tempdir()?;
    let state = agent.path().join("shepherd");
    let socket = state.join("shepherd.sock");
    let core = started(up(agent.path(), &[], "000"), &socket)?;
    for name in [
        "shepherd.db",
        "shepherd.db-wal",
        "shepherd.db-shm",
        "shepherd.lock",
    ] {
        assert_eq!(mode(&state.join(name)), 0o600, "{name}");
    }
    assert_eq!(mode(&state), 0o700);
    drop(core);

    // Files an older version left loose are tightened at the next start.
    set_mode(&state.join("shepherd.db"), 0o644);
    set_mode(&state.join("shepherd.lock"), 0o666);
    let _core = started(up(agent.path(), &[], "000"), &socket)?;
    assert_eq!(mode(&state.join("shepherd.db")), 0o600);
    assert_eq!(mode(&state.join("shepherd.lock")), 0o600);
    Ok(())
}

/// A core whose state directory is deleted under it (to start afresh) stops at once and
/// says why, rather than serving the sessions it has from a deleted database while the
/// next session starts a second core; files coming and going beside its own do not stop
/// it. The sessions reach the next core, which starts on a fresh directory; a core whose
/// database file is replaced (a backup restored) stops the same way.
#[tokio::test]
async fn a_core_whose_state_directory_is_deleted_stops_and_the_next_starts_fresh() -> Result<()> {
    use shepherd_core::client::Client;
    use shepherd_core::protocol::ClientKind;
    let mut core = shepherd_harness::Core::start().await?;
    let state = core.state_dir();
    let mut pi = core.pi("left-behind", "left-behind").await?;
    core.cli(&["send", "left-behind", "kept in the old core"]);
    // Other files in the directory: nothing.
    std::fs::write(state.join("notes.txt"), "x")?;
    std::fs::remove_file(state.join("notes.txt"))?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut cli = Client::connect(&core.socket(), ClientKind::Cli, "files-test").await?;
    cli.ping().await?;

    std::fs::remove_dir_all(&state)?;
    let status = core.exited_within(Duration::from_secs(5))?;
    assert!(status.success(), "{status}");
    let log = core.log();
    let why = format!(
        "stopping: the socket {} was removed or moved",
        state.join("shepherd.sock").display()
    );
    assert!(log.contains(&why), "{log}");
    // The session's connection was closed, not left talking to a deleted database.
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if pi.client.next_event().await.is_err() {
                break;
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the session's connection stayed open");

    // The next core starts on a fresh directory, and the session registers there.
    core.restart().await?;
    let again = core.pi("left-behind", "left-behind").await?;
    assert_eq!(again.pending, 0, "a fresh state has no mail");
    let sessions = core.cli_json(&["sessions", "--all"])?;
    assert_eq!(sessions.as_array().map(Vec::len), Some(1), "{sessions}");

    // A database file replaced under the core: it stops too, and removes only its own
    // socket.
    let db = state.join("shepherd.db");
    let backup = state.join("backup.db");
    std::fs::copy(&db, &backup)?;
    std::fs::rename(&backup, &db)?;
    let status = core.exited_within(Duration::from_secs(5))?;
    assert!(status.success(), "{status}");
    let log = core.log();
    assert!(
        log.contains(&format!(
            "stopping: the database {} was replaced by another file",
            db.display()
        )),
        "{log}"
    );
    Ok(())
}
