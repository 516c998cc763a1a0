//! The worker process host with a fake "pi": a shell script that records its argv, pid
//! and environment, prints a line, and then either reads stdin until it closes (headless,
//! `--mode rpc`), exits with a chosen status, or sleeps (tmux). Headless and tmux
//! backends: launch line, stop, exits seen from outside, tmux windows, dead panes,
//! captures, and adopting a live pane after the host was dropped (a core restart).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use shepherd_core::workers::{
    Backend, Host, HostConfig, HostError, HostEvent, LaunchSpec, SessionStart,
};
use tokio::sync::mpsc;

const FAKE_PI: &str = r#"#!/bin/sh
# A fake pi: records what it was given, then behaves as FAKE_PI_MODE says.
out="$FAKE_PI_DIR/$SHEPHERD_WORKER_ID"
printf '%s\n' "$@" > "$out.args"
env | grep -E '^(SHEPHERD_(LAUNCH|AUTOSTART|SOCKET|WORKER|WORKER_ID)|FAKE_PI_[A-Z]+)=' | sort > "$out.env"
pwd > "$out.cwd"
echo $$ > "$out.pid"
echo "fake pi $SHEPHERD_WORKER_ID ready"
echo "fake pi $SHEPHERD_WORKER_ID on stderr" >&2
case "$FAKE_PI_MODE.$SHEPHERD_WORKER_ID" in
  *.3) sleep 0.5; exit 3 ;;
  ignore.*) exec sleep 600 ;;
  stubborn.*) trap '' TERM; exec sleep 600 ;;
esac
case " $* " in
  *" --mode rpc "*) cat > /dev/null; echo "stdin closed" >&2; exit 0 ;;
esac
exec sleep 600
"#;

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::Builder::new().prefix("wh").tempdir().unwrap();
        let script = dir.path().join("fake-pi");
        std::fs::write(&script, FAKE_PI).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir(dir.path().join("state")).unwrap();
        std::fs::set_permissions(
            dir.path().join("state"),
            std::fs::Permissions::from_mode(0o700),
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("rec")).unwrap();
        std::fs::create_dir(dir.path().join("work")).unwrap();
        Fixture { dir }
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn config(&self, backend: Backend, mode: &str) -> HostConfig {
        HostConfig {
            backend,
            pi: vec![self.dir.path().join("fake-pi").display().to_string()],
            extension: "/ext/index.ts".into(),
            state_dir: self.state(),
            socket: self.dir.path().join("core.sock"),
            extra_env: vec![
                (
                    "FAKE_PI_DIR".into(),
                    self.dir.path().join("rec").display().to_string(),
                ),
                ("FAKE_PI_MODE".into(), mode.into()),
            ],
        }
    }

    fn spec(&self, worker: i64, label: &str) -> LaunchSpec {
        LaunchSpec {
            worker,
            label: label.into(),
            cwd: self.dir.path().join("work"),
            start: SessionStart::New {
                id: format!("session-{worker}"),
            },
            model: None,
            thinking: None,
            tools: None,
            exclude_tools: Vec::new(),
            system_prompt: None,
            nonce: format!("nonce-{worker}"),
        }
    }

    /// What the fake pi of `worker` recorded in `<what>` (args, env, cwd, pid), once it has.
    async fn recorded(&self, worker: i64, what: &str) -> String {
        let path = self.dir.path().join("rec").join(format!("{worker}.{what}"));
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(text) = std::fs::read_to_string(&path)
                && text.ends_with('\n')
            {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "{} never written",
                path.display()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("tmux")
            .arg("-S")
            .arg(self.state().join("tmux.sock"))
            .args(args)
            .env_remove("TMUX")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        // tmux workers outlive hosts: end this test's private server.
        if self.state().join("tmux.sock").exists() {
            self.tmux(&["kill-server"]);
        }
    }
}

/// Worker `worker`'s exit as the host reports it: with the nonce its spec was launched
/// with (`Fixture::spec`: `nonce-<worker>`).
fn exited(worker: i64, code: Option<i32>) -> HostEvent {
    HostEvent::Exited {
        worker,
        code,
        nonce: format!("nonce-{worker}"),
    }
}

async fn next_event(rx: &mut mpsc::Receiver<HostEvent>, within: Duration) -> HostEvent {
    tokio::time::timeout(within, rx.recv())
        .await
        .expect("no host event in time")
        .expect("event channel closed")
}

async fn no_event(rx: &mut mpsc::Receiver<HostEvent>, within: Duration) {
    if let Ok(Some(event)) = tokio::time::timeout(within, rx.recv()).await {
        panic!("unexpected {event:?}");
    }
}

fn kill9(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

async fn wait_for_capture(host: &Host, worker: i64, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = host.capture(worker).await.unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "capture never showed {needle:?}: {text:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn headless_launch_line_and_stop_by_closing_stdin() {
    let fx = Fixture::new();
    let (tx, mut events) = mpsc::channel(16);
    let host = Host::start(fx.config(Backend::Headless, "rpc"), tx);
    let spec = LaunchSpec {
        model: Some("fake/fake-model".into()),
        thinking: Some("low".into()),
        tools: Some(vec!["read".into()]),
        exclude_tools: vec!["write".into()],
        system_prompt: Some("You are scout-1.".into()),
        ..fx.spec(5, "scout-1")
    };
    let launched = host.launch(spec.clone()).await.unwrap();
    assert_eq!(launched.backend, Backend::Headless);
    assert_eq!(launched.pane, None);

    let prompt = fx.state().join("workers/5.prompt");
    let args: Vec<String> = fx
        .recorded(5, "args")
        .await
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(
        args,
        [
            "--mode",
            "rpc",
            "--session-id",
            "session-5",
            "--model",
            "fake/fake-model",
            "--thinking",
            "low",
            "--tools",
            "read,ask_owner",
            "--exclude-tools",
            "write",
            "-ne",
            "-e",
            "/ext/index.ts",
            "--append-system-prompt",
            prompt.to_str().unwrap(),
        ]
    );
    let env = fx.recorded(5, "env").await;
    let rec = fx.dir.path().join("rec");
    assert_eq!(
        env,
        format!(
            "FAKE_PI_DIR={}\nFAKE_PI_MODE=rpc\nSHEPHERD_AUTOSTART=0\nSHEPHERD_LAUNCH=nonce-5\n\
             SHEPHERD_SOCKET={}\nSHEPHERD_WORKER=1\nSHEPHERD_WORKER_ID=5\n",
            rec.display(),
            fx.dir.path().join("core.sock").display()
        )
    );
    assert_eq!(
        fx.recorded(5, "cwd").await.trim(),
        fx.dir.path().join("work").to_str().unwrap()
    );
    assert_eq!(fx.recorded(5, "pid").await.trim(), launched.pid.to_string());
    assert_eq!(
        std::fs::read_to_string(&prompt).unwrap(),
        "You are scout-1."
    );
    assert_eq!(mode(&prompt), 0o600);
    assert_eq!(mode(&fx.state().join("workers")), 0o700);

    // stdout is drained and its tail kept.
    let text = wait_for_capture(&host, 5, "fake pi 5 ready").await;
    assert_eq!(text, "fake pi 5 ready");
    // A second launch of a live worker is refused.
    let again = host.launch(spec).await.unwrap_err();
    assert!(
        matches!(again, HostError::AlreadyRunning { worker: 5 }),
        "{again}"
    );

    // Stop closes stdin: the fake exits 0 at once (no SIGTERM after 5 s).
    let began = Instant::now();
    host.stop(5).await;
    assert!(
        began.elapsed() < Duration::from_secs(4),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(
        next_event(&mut events, Duration::from_secs(1)).await,
        exited(5, Some(0))
    );
    let log = fx.state().join("workers/5.log");
    let stderr = std::fs::read_to_string(&log).unwrap();
    assert_eq!(stderr, "fake pi 5 on stderr\nstdin closed\n");
    assert_eq!(mode(&log), 0o600);

    // Idempotent: nothing more happens, and the worker is forgotten.
    host.stop(5).await;
    host.stop(99).await;
    no_event(&mut events, Duration::from_millis(300)).await;
    assert_eq!(host.capture(5).await, None);
}

#[tokio::test]
async fn headless_exits_seen_from_outside_and_when_the_host_is_dropped() {
    let fx = Fixture::new();
    let (tx, mut events) = mpsc::channel(16);
    let host = Host::start(fx.config(Backend::Headless, "rpc"), tx);

    // Killed from outside: reported, its last stdout kept until stopped.
    let one = host.launch(fx.spec(1, "one")).await.unwrap();
    wait_for_capture(&host, 1, "fake pi 1 ready").await;
    kill9(one.pid);
    assert_eq!(
        next_event(&mut events, Duration::from_secs(5)).await,
        exited(1, None)
    );
    assert_eq!(host.capture(1).await.as_deref(), Some("fake pi 1 ready"));
    // Its id can run again (a relaunch after a crash).
    host.launch(fx.spec(1, "one")).await.unwrap();
    wait_for_capture(&host, 1, "fake pi 1 ready").await;

    // Exiting by itself (status 3): reported with its status.
    host.launch(fx.spec(3, "three")).await.unwrap();
    assert_eq!(
        next_event(&mut events, Duration::from_secs(5)).await,
        exited(3, Some(3))
    );
    host.stop(3).await;
    no_event(&mut events, Duration::from_millis(300)).await;

    // The core stops (every handle dropped): headless workers' stdin closes, they exit.
    drop(host);
    assert_eq!(
        next_event(&mut events, Duration::from_secs(5)).await,
        exited(1, Some(0))
    );
}

#[tokio::test]
async fn headless_stop_escalates_to_sigterm_then_sigkill() {
    let fx = Fixture::new();
    // Ignores its closed stdin: SIGTERM after 5 s ends it.
    let (tx, mut events) = mpsc::channel(16);
    let host = Host::start(fx.config(Backend::Headless, "ignore"), tx);
    host.launch(fx.spec(8, "deaf")).await.unwrap();
    // Ignores SIGTERM too: SIGKILL 2 s later.
    let (tx2, mut events2) = mpsc::channel(16);
    let host2 = Host::start(fx.config(Backend::Headless, "stubborn"), tx2);
    host2.launch(fx.spec(9, "stubborn")).await.unwrap();
    fx.recorded(8, "pid").await;
    fx.recorded(9, "pid").await;

    let began = Instant::now();
    let timed = |host: Host, worker: i64| async move {
        host.stop(worker).await;
        began.elapsed()
    };
    let (deaf, stubborn) = tokio::join!(timed(host.clone(), 8), timed(host2.clone(), 9));
    assert!(
        deaf >= Duration::from_secs(5) && deaf < Duration::from_secs(7),
        "closed stdin, waited 5 s, then SIGTERM: {deaf:?}"
    );
    assert!(
        stubborn >= Duration::from_secs(7) && stubborn < Duration::from_secs(9),
        "then SIGKILL 2 s after SIGTERM: {stubborn:?}"
    );
    for (events, worker) in [(&mut events, 8), (&mut events2, 9)] {
        assert_eq!(
            next_event(events, Duration::from_secs(1)).await,
            exited(worker, None)
        );
    }
}

/// A launch while the worker's previous process is still being stopped (a Lead's
/// `resume_work` right after `stop_lead`) waits for that process to exit, then starts,
/// instead of being refused because the old one is still there.
#[tokio::test]
async fn a_launch_during_a_stop_waits_for_the_old_process_then_starts() {
    let fx = Fixture::new();
    // Ignores its closed stdin: the stop takes 5 s (then SIGTERM).
    let (tx, mut events) = mpsc::channel(16);
    let host = Host::start(fx.config(Backend::Headless, "ignore"), tx);
    host.launch(fx.spec(11, "again")).await.unwrap();
    let first = fx.recorded(11, "pid").await;
    let stopping = tokio::spawn({
        let host = host.clone();
        async move { host.stop(11).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    std::fs::remove_file(fx.dir.path().join("rec").join("11.pid")).unwrap();
    let began = Instant::now();
    let launched = host.launch(fx.spec(11, "again")).await;
    assert!(launched.is_ok(), "{launched:?}");
    assert!(
        began.elapsed() >= Duration::from_secs(3),
        "it waited for the old process: {:?}",
        began.elapsed()
    );
    stopping.await.unwrap();
    assert_eq!(
        next_event(&mut events, Duration::from_secs(1)).await,
        exited(11, None)
    );
    let second = fx.recorded(11, "pid").await;
    assert_ne!(first, second, "a new process");
    host.stop(11).await;
}

#[tokio::test]
async fn tmux_windows_dead_panes_captures_and_stop() {
    let fx = Fixture::new();
    let (tx, mut events) = mpsc::channel(16);
    let host = Host::start(fx.config(Backend::Tmux, "sleep"), tx);
    let a = host.launch(fx.spec(11, "scout-1")).await.unwrap();
    let b = host.launch(fx.spec(12, "review")).await.unwrap();
    assert_eq!(a.backend, Backend::Tmux);
    let (pane_a, pane_b) = (a.pane.clone().unwrap(), b.pane.clone().unwrap());
    assert!(pane_a.starts_with('%') && pane_a != pane_b);

    // Interactive Pi: no --mode; the same environment.
    let args = fx.recorded(11, "args").await;
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        ["--session-id", "session-11", "-ne", "-e", "/ext/index.ts"]
    );
    let env = fx.recorded(11, "env").await;
    assert!(env.contains("SHEPHERD_LAUNCH=nonce-11\n"), "{env}");
    assert!(env.contains("SHEPHERD_WORKER_ID=11\n"), "{env}");
    assert!(env.contains("SHEPHERD_AUTOSTART=0\n"), "{env}");
    assert_eq!(fx.recorded(11, "pid").await.trim(), a.pid.to_string());
    assert_eq!(
        fx.recorded(12, "cwd").await.trim(),
        fx.dir.path().join("work").to_str().unwrap()
    );

    // One window per worker, named by its label, in session `shepherd`; private socket.
    let windows = fx.tmux(&[
        "list-windows",
        "-t",
        "=shepherd",
        "-F",
        "#{window_name} #{pane_id}",
    ]);
    assert_eq!(windows, format!("scout-1 {pane_a}\nreview {pane_b}\n"));
    assert_eq!(mode(&fx.state().join("tmux.sock")), 0o600);
    assert_eq!(
        fx.tmux(&["show-options", "-p", "-t", &pane_a, "remain-on-exit"]),
        "remain-on-exit on\n"
    );
    assert_eq!(
        fx.tmux(&["show-options", "-w", "-t", &pane_a, "automatic-rename"]),
        "automatic-rename off\n"
    );
    assert_eq!(
        fx.tmux(&["show-options", "-s", "extended-keys"]),
        "extended-keys on\n",
        "interactive Pi warns without it"
    );

    assert_eq!(
        wait_for_capture(&host, 11, "fake pi 11 ready").await,
        "fake pi 11 ready\nfake pi 11 on stderr"
    );

    // Killed from outside: the pane stays (remain-on-exit), dead; the poll reports it.
    kill9(a.pid);
    assert_eq!(
        next_event(&mut events, Duration::from_secs(5)).await,
        exited(11, None)
    );
    let panes = fx.tmux(&[
        "list-panes",
        "-s",
        "-t",
        "=shepherd",
        "-F",
        "#{pane_id} #{pane_dead}",
    ]);
    assert!(panes.contains(&format!("{pane_a} 1\n")), "{panes}");
    // A dead pane's screen is still there.
    assert!(host.capture(11).await.unwrap().contains("fake pi 11 ready"));

    // A worker exiting by itself is reported with its status when tmux recorded it:
    // tmux 3.3a loses an exited pane's status about one time in three (measured with
    // plain tmux: `pane_dead_status` and `pane_dead_signal` stay empty for good), and
    // then the code is unknown, never a guess.
    let c = host.launch(fx.spec(3, "quick")).await.unwrap();
    match next_event(&mut events, Duration::from_secs(5)).await {
        HostEvent::Exited {
            worker: 3,
            code: Some(3) | None,
            nonce,
        } if nonce == "nonce-3" => {}
        other => panic!("expected worker 3's exit, got {other:?}"),
    }

    // Stop kills the pane: a dead one silently, a live one with its exit event.
    host.stop(11).await;
    host.stop(3).await;
    no_event(&mut events, Duration::from_millis(300)).await;
    host.stop(12).await;
    assert_eq!(
        next_event(&mut events, Duration::from_secs(1)).await,
        exited(12, None)
    );
    host.stop(12).await;
    for pane in [pane_a, pane_b, c.pane.unwrap()] {
        let listed = fx.tmux(&["list-panes", "-a", "-F", "#{pane_id}"]);
        assert!(
            !listed.lines().any(|p| p == pane),
            "{pane} still in {listed}"
        );
    }
    assert_eq!(host.capture(12).await, None);
    no_event(&mut events, Duration::from_secs(3)).await;
}

#[tokio::test]
async fn tmux_workers_outlive_the_host_and_are_adopted_again() {
    let fx = Fixture::new();
    let (tx, mut events) = mpsc::channel(16);
    let host = Host::start(fx.config(Backend::Tmux, "sleep"), tx);
    let live = host.launch(fx.spec(21, "keeper")).await.unwrap();
    let doomed = host.launch(fx.spec(22, "doomed")).await.unwrap();
    fx.recorded(21, "pid").await;
    fx.recorded(22, "pid").await;
    // The core goes away: tmux workers keep running.
    drop(host);
    no_event(&mut events, Duration::from_millis(500)).await;
    assert!(Path::new(&format!("/proc/{}", live.pid)).exists());
    // One of them dies while no core watches.
    kill9(doomed.pid);
    tokio::time::sleep(Duration::from_millis(300)).await;

    // A new core's host adopts them by pane.
    let (tx, mut events) = mpsc::channel(16);
    let host = Host::start(fx.config(Backend::Tmux, "sleep"), tx);
    let adopted = host
        .adopt(21, live.pane.clone().unwrap(), "nonce-21".into())
        .await
        .unwrap();
    assert_eq!(adopted, live);
    assert!(
        wait_for_capture(&host, 21, "fake pi 21 ready")
            .await
            .contains("fake pi 21 ready")
    );
    // The dead one is adopted and reported at once, so it can still be read and closed.
    let dead = host
        .adopt(22, doomed.pane.clone().unwrap(), "nonce-22".into())
        .await
        .unwrap();
    assert_eq!(dead.pid, doomed.pid);
    assert_eq!(
        next_event(&mut events, Duration::from_secs(1)).await,
        exited(22, None)
    );
    assert!(host.capture(22).await.unwrap().contains("fake pi 22 ready"));
    host.stop(22).await;

    // A pane that is not there is refused, saying so.
    let err = host
        .adopt(23, "%999".into(), "nonce-23".into())
        .await
        .unwrap_err();
    assert!(matches!(err, HostError::PaneNotFound { .. }), "{err}");
    assert!(err.to_string().contains("%999"), "{err}");

    // The adopted live one is watched again: killed from outside, it is reported.
    kill9(live.pid);
    assert_eq!(
        next_event(&mut events, Duration::from_secs(5)).await,
        exited(21, None)
    );
    host.stop(21).await;
    no_event(&mut events, Duration::from_millis(300)).await;
}

#[tokio::test]
async fn launches_that_cannot_start_say_why() {
    let fx = Fixture::new();
    for backend in [Backend::Headless, Backend::Tmux] {
        let (tx, mut events) = mpsc::channel(16);
        let host = Host::start(fx.config(backend, "rpc"), tx);
        let nowhere = LaunchSpec {
            cwd: fx.dir.path().join("missing"),
            ..fx.spec(1, "lost")
        };
        let err = host.launch(nowhere).await.unwrap_err();
        assert!(matches!(err, HostError::NoCwd { .. }), "{backend:?}: {err}");
        assert!(err.to_string().contains("missing"), "{err}");

        let no_pi = Host::start(
            HostConfig {
                pi: Vec::new(),
                ..fx.config(backend, "rpc")
            },
            mpsc::channel(1).0,
        );
        let err = no_pi.launch(fx.spec(2, "two")).await.unwrap_err();
        assert!(matches!(err, HostError::NoPi), "{err}");
        assert!(err.to_string().contains("workers.pi"), "{err}");
        no_event(&mut events, Duration::from_millis(100)).await;
    }

    for backend in [Backend::Headless, Backend::Tmux] {
        let (tx, mut events) = mpsc::channel(16);
        let host = Host::start(
            HostConfig {
                pi: vec!["/nonexistent/pi".into()],
                ..fx.config(backend, "rpc")
            },
            tx,
        );
        let err = host.launch(fx.spec(3, "three")).await.unwrap_err();
        assert!(matches!(err, HostError::Spawn { .. }), "{backend:?}: {err}");
        let said = err.to_string();
        assert!(
            said.contains("/nonexistent/pi") && said.contains("workers.pi"),
            "{said}"
        );
        // Nothing half-started stays behind.
        assert_eq!(host.capture(3).await, None);
        no_event(&mut events, Duration::from_millis(100)).await;
    }
}
