//! Supervision against the real daemon, at the protocol level: pairing by roll call and
//! by name, the bad inputs that change nothing, briefs and views delivered to the
//! supervisor, verdicts and their guards (no goal, runaway, a worker still in a tool),
//! steers landing in the worker, the human's side (CLI), the timer's skipping, and a core
//! restart that keeps the pairing. The worker's session file is written by the test in
//! Pi's JSONL format.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use serde_json::{Value, json};
use shepherd_core::client::{Client, Registered, VerdictAccepted};
use shepherd_core::protocol::{
    ClientKind, Delivery, DeliveryKind, EndReason, ErrorCode, Pairing, PairingChange, PairingState,
    Registration, Role, ServerMsg, SessionStatus, VerdictKind, ViewReason, requests,
};
use shepherd_harness::{Core, Pi, error_code, error_details, next_event_where, registration};

const WAIT: Duration = Duration::from_secs(10);

/// A worker's Pi session file, appended to as the "worker" works.
struct SessionFile {
    path: PathBuf,
    n: u32,
}

impl SessionFile {
    fn create(dir: &Path, id: &str) -> SessionFile {
        let path = dir.join(format!("{id}.jsonl"));
        let header = json!({"type": "session", "version": 3, "id": id,
            "timestamp": "2026-12-02T10:00:00.000Z", "cwd": dir.display().to_string()});
        std::fs::write(&path, format!("{header}\n")).unwrap();
        SessionFile { path, n: 0 }
    }

    fn append(&mut self, role: &str, text: &str) {
        self.n += 1;
        let message = if role == "assistant" {
            json!({"role": "assistant", "content": [{"type": "text", "text": text}],
                "api": "openai-completions", "provider": "fake", "model": "fake-model",
                "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                "stopReason": "stop", "timestamp": 1_764_669_600_000u64 + u64::from(self.n)})
        } else {
            json!({"role": "user", "content": [{"type": "text", "text": text}],
                "timestamp": 1_764_669_600_000u64 + u64::from(self.n)})
        };
        let entry = json!({"type": "message", "id": format!("e{}", self.n),
            "parentId": if self.n > 1 { Value::from(format!("e{}", self.n - 1)) } else { Value::Null },
            "timestamp": "2026-12-02T10:00:01.000Z", "message": message});
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .unwrap();
        writeln!(f, "{entry}").unwrap();
    }
}

async fn register(core: &Core, id: &str, name: &str, cwd: &Path, role: Role) -> Result<Pi> {
    register_with(core, id, name, cwd, role, None).await
}

async fn register_with(
    core: &Core,
    id: &str,
    name: &str,
    cwd: &Path,
    role: Role,
    session_file: Option<&Path>,
) -> Result<Pi> {
    let mut reg: Registration = registration(id, name, cwd);
    reg.role = role;
    reg.session_file = session_file.map(|p| p.display().to_string());
    Ok(Pi::register_full(&core.socket(), reg).await?.0)
}

async fn supervise(
    client: &mut Client,
    worker: Option<&str>,
    goal: Option<&str>,
) -> Result<Pairing> {
    Ok(client
        .call(requests::Supervise {
            worker: worker.map(str::to_string),
            goal: goal.map(str::to_string),
            ..Default::default()
        })
        .await?)
}

async fn verdict(pi: &mut Pi, kind: VerdictKind, text: &str) -> Result<VerdictAccepted> {
    Ok(pi
        .client
        .call(requests::Verdict {
            id: 0,
            verdict: kind,
            text: text.into(),
        })
        .await?)
}

async fn pairings(client: &mut Client, all: bool) -> Result<Vec<Pairing>> {
    Ok(client.list_pairings(all).await?)
}

/// The next delivery of `kind`, acknowledged; other deliveries are acknowledged too.
async fn next_of(pi: &mut Pi, kind: DeliveryKind) -> Result<Delivery> {
    loop {
        let d = pi.next_delivery(WAIT).await?;
        pi.ack(&[d.id]).await?;
        if d.kind == kind {
            return Ok(d);
        }
    }
}

async fn set_status(pi: &mut Pi, status: &str) -> Result<()> {
    update(pi, None, Some(status)).await
}

/// An `update` of the session's name and/or status.
async fn update(pi: &mut Pi, name: Option<&str>, status: Option<&str>) -> Result<()> {
    pi.client
        .call(requests::Update {
            name: name.map(str::to_string),
            status: status.map(SessionStatus::from),
            ..Default::default()
        })
        .await?;
    Ok(())
}

#[tokio::test]
async fn roll_call_pairs_the_one_free_session_and_lists_several() -> Result<()> {
    let core = Core::start().await?;
    let dir = tempfile::tempdir()?;
    let elsewhere = tempfile::tempdir()?;
    let mut sup = register(&core, "sup-1", "watcher", dir.path(), Role::Lead).await?;

    // Nobody else in this cwd: a clear no_candidate.
    let _far = register(&core, "far-1", "far", elsewhere.path(), Role::Lead).await?;
    let mut child = registration("kid-1", "subagent-child", dir.path());
    child.subagent = true;
    let _kid = Pi::register_full(&core.socket(), child).await?;
    let err = supervise(&mut sup.client, None, Some("ship it"))
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(ErrorCode::NoCandidate), "{err:#}");

    // Two free sessions: ambiguous, with both as candidates, and nothing paired.
    let _a = register(&core, "work-a", "alpha", dir.path(), Role::Lead).await?;
    let _b = register(&core, "work-b", "beta", dir.path(), Role::Lead).await?;
    let err = supervise(&mut sup.client, None, Some("ship it"))
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(ErrorCode::AmbiguousSession));
    let details = error_details(&err).unwrap();
    let mut names: Vec<&str> = details["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["alpha", "beta"]);
    assert!(pairings(&mut sup.client, true).await?.is_empty());

    // The picker's answer: the exact id.
    let p = supervise(&mut sup.client, Some("work-b"), Some("ship it")).await?;
    assert_eq!(
        (p.worker_name.as_str(), p.supervisor_name.as_str()),
        ("beta", "watcher")
    );
    assert_eq!(p.goal.as_deref(), Some("ship it"));
    assert!(p.worker_connected && p.supervisor_connected);

    // Now only alpha is free: a second supervisor pairs with it at once.
    let mut sup2 = register(&core, "sup-2", "watcher-2", dir.path(), Role::Lead).await?;
    let p2 = supervise(&mut sup2.client, None, None).await?;
    assert_eq!(p2.worker_id, "work-a");
    assert_eq!(p2.goal, None);
    Ok(())
}

#[tokio::test]
async fn bad_input_is_refused_and_changes_nothing() -> Result<()> {
    let core = Core::start().await?;
    let dir = tempfile::tempdir()?;
    let mut sup = register(&core, "sup-1", "watcher", dir.path(), Role::Lead).await?;
    let _w = register(&core, "work-1", "worker", dir.path(), Role::Lead).await?;
    let _x = register(&core, "other-1", "other", dir.path(), Role::Lead).await?;

    let err = supervise(&mut sup.client, Some("sup-1"), Some("x"))
        .await
        .unwrap_err();
    assert_eq!(
        error_code(&err),
        Some(ErrorCode::InvalidArgument),
        "{err:#}"
    );
    assert!(format!("{err:#}").contains("itself"), "{err:#}");

    let err = supervise(&mut sup.client, Some("nobody"), Some("x"))
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(ErrorCode::UnknownSession));

    let err = supervise(&mut sup.client, Some("worker"), Some("docs/MISSING.md"))
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(ErrorCode::GoalUnreadable));
    let missing = dir.path().join("docs/MISSING.md");
    assert!(
        format!("{err:#}").contains(&missing.display().to_string()),
        "names the path: {err:#}"
    );
    assert!(pairings(&mut sup.client, true).await?.is_empty());

    // A goal file is read whole, relative to the supervisor's cwd.
    std::fs::write(
        dir.path().join("GOAL.md"),
        "Make login work.\nKeep tests green.\n",
    )?;
    let p = supervise(&mut sup.client, Some("worker"), Some("GOAL.md")).await?;
    assert_eq!(
        p.goal.as_deref(),
        Some("Make login work.\nKeep tests green.")
    );
    assert_eq!(
        p.goal_file.as_deref(),
        Some(dir.path().join("GOAL.md").to_str().unwrap())
    );

    // Either side already paired.
    let mut other = register(&core, "sup-2", "watcher-2", dir.path(), Role::Lead).await?;
    let err = supervise(&mut other.client, Some("worker"), None)
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(ErrorCode::AlreadyPaired));
    assert_eq!(error_details(&err).unwrap()["pairing"]["id"], p.id.get());
    let err = supervise(&mut sup.client, Some("other"), None)
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(ErrorCode::AlreadyPaired));

    // Verdicts from a session that is not a supervisor.
    let err = verdict(&mut other, VerdictKind::LetItRun, "")
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(ErrorCode::NotPaired));
    assert_eq!(pairings(&mut sup.client, true).await?.len(), 1);
    Ok(())
}

#[tokio::test]
async fn views_verdicts_and_guards() -> Result<()> {
    let core = Core::start().await?;
    let dir = tempfile::tempdir()?;
    let mut file = SessionFile::create(dir.path(), "work-1");
    file.append("user", "Make the login form accept SSO users");
    file.append("assistant", "I will start with the failing SSO test.");
    let mut worker = register_with(
        &core,
        "work-1",
        "fix-login",
        dir.path(),
        Role::Lead,
        Some(&file.path),
    )
    .await?;
    let mut sup = register(&core, "sup-1", "watch-login", dir.path(), Role::Lead).await?;
    let mut events = core.subscriber().await?;

    let p = supervise(&mut sup.client, Some("fix-login"), None).await?;
    // The brief (no turn) comes first, then the first view.
    let brief = sup.next_delivery(WAIT).await?;
    assert_eq!(brief.kind, DeliveryKind::Brief);
    assert_eq!(brief.pairing_id, Some(p.id));
    assert!(brief.text.contains("fix-login"), "{}", brief.text);
    assert!(brief.text.contains("No goal"), "{}", brief.text);
    sup.ack(&[brief.id]).await?;
    let view = next_of(&mut sup, DeliveryKind::View).await?;
    assert_eq!((view.pairing_id, view.look), (Some(p.id), Some(1)));
    assert!(view.text.contains("accept SSO users"), "{}", view.text);
    assert!(view.text.contains("failing SSO test"), "{}", view.text);
    // The worker and the bridges heard of it.
    let started = next_event_where(&mut worker.client, WAIT, |m| {
        matches!(
            m,
            ServerMsg::PairingEvent {
                change: PairingChange::Started,
                ..
            }
        )
    })
    .await?;
    let ServerMsg::PairingEvent { pairing, by, .. } = started else {
        unreachable!()
    };
    assert_eq!((pairing.id, by.as_deref()), (p.id, Some("watch-login")));
    next_event_where(&mut events, WAIT, |m| {
        matches!(
            m,
            ServerMsg::PairingEvent {
                change: PairingChange::Look,
                ..
            }
        )
    })
    .await?;

    // No goal: steer is refused, let_it_run is fine.
    let err = verdict(&mut sup, VerdictKind::Steer, "run the tests")
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(ErrorCode::VerdictRefused));
    assert_eq!(error_details(&err).unwrap()["reason"], "no_goal");
    verdict(&mut sup, VerdictKind::LetItRun, "").await?;

    // The goal, set by the supervisor: a brief (no turn), the steer history kept.
    sup.client
        .call(requests::SetGoal {
            goal: "SSO users can log in; the suite passes".into(),
            ..Default::default()
        })
        .await?;
    let brief = next_of(&mut sup, DeliveryKind::Brief).await?;
    assert!(
        brief.text.contains("SSO users can log in"),
        "{}",
        brief.text
    );

    // A steer lands in the worker, from the supervisor, as a steer.
    let VerdictAccepted { hint, pairing, .. } = verdict(
        &mut sup,
        VerdictKind::Steer,
        "Run the SSO tests before refactoring further",
    )
    .await?;
    assert_eq!((hint, pairing.steers), (None, 1));
    let steer = next_of(&mut worker, DeliveryKind::Steer).await?;
    assert_eq!(steer.text, "Run the SSO tests before refactoring further");
    assert_eq!(steer.from.session_id.as_deref(), Some("sup-1"));
    assert_eq!(steer.from.name, "watch-login");
    assert_eq!(steer.pairing_id, Some(p.id));

    // The same steer in other words: accepted, with a repetition hint.
    let VerdictAccepted { hint, .. } = verdict(
        &mut sup,
        VerdictKind::Steer,
        "Please run the SSO tests before any further refactoring",
    )
    .await?;
    assert!(hint.is_some_and(|h| h.contains("repeats")));

    // Verdicts in this look: let_it_run, steer, steer; two more make five, a sixth is a runaway.
    verdict(&mut sup, VerdictKind::LetItRun, "").await?;
    verdict(&mut sup, VerdictKind::LetItRun, "").await?;
    let err = verdict(&mut sup, VerdictKind::LetItRun, "")
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(ErrorCode::Runaway), "{err:#}");

    // The worker is inside a tool: done is refused.
    set_status(&mut worker, "tool:bash").await?;
    file.append("assistant", "Running the SSO suite now.");
    let err = verdict(&mut sup, VerdictKind::Done, "all green")
        .await
        .unwrap_err();
    // Still the same look: the runaway guard comes first.
    assert_eq!(error_code(&err), Some(ErrorCode::Runaway));

    // The worker stops: a new view (look 2) arrives and opens a new look.
    set_status(&mut worker, "idle").await?;
    let view = next_of(&mut sup, DeliveryKind::View).await?;
    assert_eq!(view.look, Some(2));
    assert!(view.text.contains("Running the SSO suite"), "{}", view.text);
    assert!(
        !view.text.contains("accept SSO users"),
        "incremental: {}",
        view.text
    );

    set_status(&mut worker, "tool:bash").await?;
    let err = verdict(&mut sup, VerdictKind::Done, "all green")
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(ErrorCode::VerdictRefused));
    assert_eq!(error_details(&err).unwrap()["reason"], "pending_tool_call");
    let err = verdict(&mut sup, VerdictKind::Done, "").await.unwrap_err();
    assert_eq!(error_code(&err), Some(ErrorCode::InvalidArgument));

    set_status(&mut worker, "idle").await?;
    let _ = next_of(&mut sup, DeliveryKind::View).await?;
    let VerdictAccepted { pairing, .. } = verdict(
        &mut sup,
        VerdictKind::Done,
        "SSO suite passes: 41 tests, 0 failures",
    )
    .await?;
    assert_eq!(pairing.state, PairingState::Ended);
    assert_eq!(pairing.end_reason.map(EndReason::as_str), Some("done"));
    assert_eq!(
        pairing.evidence.as_deref(),
        Some("SSO suite passes: 41 tests, 0 failures")
    );
    next_event_where(&mut worker.client, WAIT, |m| {
        matches!(
            m,
            ServerMsg::PairingEvent {
                change: PairingChange::Ended,
                ..
            }
        )
    })
    .await?;
    let err = verdict(&mut sup, VerdictKind::LetItRun, "")
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(ErrorCode::NotPaired));
    Ok(())
}

#[tokio::test]
async fn the_human_pairs_looks_changes_the_goal_and_stops_from_the_cli() -> Result<()> {
    let core = Core::start().await?;
    let dir = tempfile::tempdir()?;
    let mut file = SessionFile::create(dir.path(), "work-1");
    file.append("user", "Port the parser to nom");
    let _worker = register_with(
        &core,
        "work-1",
        "port-parser",
        dir.path(),
        Role::Lead,
        Some(&file.path),
    )
    .await?;
    let mut cli = core.client(ClientKind::Cli).await?;

    // No supervisor-role session is free: no_candidate, with what to do.
    let err = supervise(&mut cli, Some("port-parser"), Some("all tests pass"))
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(ErrorCode::NoCandidate));
    assert!(
        format!("{err:#}").contains("SHEPHERD_ROLE=supervisor"),
        "{err:#}"
    );

    let mut sup = register(&core, "sup-1", "overseer", dir.path(), Role::Supervisor).await?;
    let p = supervise(&mut cli, Some("port-parser"), Some("all tests pass")).await?;
    assert_eq!(p.supervisor_name, "overseer");
    let brief = next_of(&mut sup, DeliveryKind::Brief).await?;
    assert!(
        brief.text.contains("all tests pass") && brief.text.contains("cli"),
        "{}",
        brief.text
    );
    let first = next_of(&mut sup, DeliveryKind::View).await?;
    assert_eq!(first.look, Some(1));

    // A look on demand, even with nothing new.
    cli.look("port-parser").await?;
    let second = next_of(&mut sup, DeliveryKind::View).await?;
    assert_eq!(second.look, Some(2));

    // worker_view returns the view without delivering it or opening a look.
    file.append("assistant", "nom combinators are in place");
    let view = sup.client.call(requests::WorkerView::default()).await?;
    assert_eq!((view.reason, view.look), (ViewReason::Request, 2));
    assert!(view.text.contains("nom combinators"), "{}", view.text);

    // The goal from the human: the supervisor gets a brief.
    let pairing = cli
        .call(requests::SetGoal {
            goal: "also keep the old API".into(),
            session: Some("overseer".into()),
            ..Default::default()
        })
        .await?;
    assert_eq!(pairing.goal.as_deref(), Some("also keep the old API"));
    let brief = next_of(&mut sup, DeliveryKind::Brief).await?;
    assert!(brief.text.contains("also keep the old API"));

    // Stop: the supervisor is told, the pairing is ended by cli.
    let pairing = cli.unpair("port-parser").await?;
    assert_eq!(
        (
            pairing.state,
            pairing.end_reason.map(EndReason::as_str),
            pairing.ended_by.as_deref()
        ),
        (PairingState::Ended, Some("stopped"), Some("cli"))
    );
    let brief = next_of(&mut sup, DeliveryKind::Brief).await?;
    assert!(brief.text.contains("stopped by cli"), "{}", brief.text);
    let err = cli.unpair("port-parser").await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::NotPaired));
    Ok(())
}

#[tokio::test]
async fn unchanged_timer_views_are_skipped_three_times_then_sent() -> Result<()> {
    let core = Core::start_with(&[("SHEPHERD_CORE__SUPERVISE__LOOK_INTERVAL_SECS", "1")]).await?;
    let dir = tempfile::tempdir()?;
    let mut file = SessionFile::create(dir.path(), "work-1");
    file.append("user", "Write the changelog");
    let _worker = register_with(
        &core,
        "work-1",
        "changelog",
        dir.path(),
        Role::Lead,
        Some(&file.path),
    )
    .await?;
    let mut sup = register(&core, "sup-1", "watcher", dir.path(), Role::Lead).await?;
    supervise(
        &mut sup.client,
        Some("changelog"),
        Some("a changelog exists"),
    )
    .await?;
    let first = next_of(&mut sup, DeliveryKind::View).await?;
    let start = std::time::Instant::now();
    // Nothing changes: timer views at ~1 s, 2 s, 3 s are skipped; the fourth is sent.
    let timer = next_of(&mut sup, DeliveryKind::View).await?;
    let waited = start.elapsed();
    assert_eq!((first.look, timer.look), (Some(1), Some(2)));
    assert!(
        waited >= Duration::from_millis(3500),
        "sent after {waited:?}"
    );
    // Something changes: the next timer view comes at once (about a second).
    file.append("assistant", "CHANGELOG.md written");
    let start = std::time::Instant::now();
    let changed = next_of(&mut sup, DeliveryKind::View).await?;
    assert!(
        changed.text.contains("CHANGELOG.md written"),
        "{}",
        changed.text
    );
    assert!(
        start.elapsed() < Duration::from_millis(3000),
        "{:?}",
        start.elapsed()
    );
    Ok(())
}

#[tokio::test]
async fn a_core_restart_keeps_the_pairing_and_tells_each_side_about_the_other() -> Result<()> {
    let mut core = Core::start().await?;
    let dir = tempfile::tempdir()?;
    let file = SessionFile::create(dir.path(), "work-1");
    let worker = register_with(
        &core,
        "work-1",
        "worker",
        dir.path(),
        Role::Lead,
        Some(&file.path),
    )
    .await?;
    let mut sup = register(&core, "sup-1", "watcher", dir.path(), Role::Lead).await?;
    let p = supervise(&mut sup.client, Some("worker"), Some("ship it")).await?;
    drop(worker);
    drop(sup);
    core.kill9();
    core.restart().await?;

    // The supervisor comes back first: its pairing, with the worker not connected.
    let mut sup = Client::connect(&core.socket(), ClientKind::Pi, "harness-pi").await?;
    let reg = registration("sup-1", "watcher", dir.path());
    let Registered { pairings, .. } = sup.register(reg).await?;
    assert_eq!(pairings.len(), 1);
    assert_eq!(pairings[0].id, p.id);
    assert!(pairings[0].supervisor_connected && !pairings[0].worker_connected);

    // The worker returns: both learn it, and the worker's registration shows the pairing.
    let mut wreg = registration("work-1", "worker", dir.path());
    wreg.session_file = Some(file.path.display().to_string());
    let mut client = Client::connect(&core.socket(), ClientKind::Pi, "harness-pi").await?;
    let Registered { pairings, .. } = client.register(wreg).await?;
    assert!(pairings[0].supervisor_connected && pairings[0].worker_connected);
    let ev = next_event_where(&mut sup, WAIT, |m| {
        matches!(
            m,
            ServerMsg::PairingEvent {
                change: PairingChange::Presence,
                ..
            }
        )
    })
    .await?;
    let ServerMsg::PairingEvent { pairing, .. } = ev else {
        unreachable!()
    };
    assert!(pairing.worker_connected);
    assert_eq!(pairing.goal.as_deref(), Some("ship it"));
    Ok(())
}

#[tokio::test]
async fn a_worker_leaving_mid_turn_is_a_stop_and_an_absent_supervisor_catches_up_on_return()
-> Result<()> {
    let core = Core::start().await?;
    let dir = tempfile::tempdir()?;
    let mut file = SessionFile::create(dir.path(), "work-1");
    file.append("user", "Tidy the imports");
    let mut worker = register_with(
        &core,
        "work-1",
        "tidy",
        dir.path(),
        Role::Lead,
        Some(&file.path),
    )
    .await?;
    let mut sup = register(&core, "sup-1", "watcher", dir.path(), Role::Lead).await?;
    let p = supervise(&mut sup.client, Some("tidy"), Some("imports tidy")).await?;
    assert_eq!(next_of(&mut sup, DeliveryKind::View).await?.look, Some(1));

    // The worker's Pi goes away in the middle of a turn: that is a stop.
    set_status(&mut worker, "thinking").await?;
    file.append("assistant", "Half-way through the imports");
    drop(worker);
    let view = next_of(&mut sup, DeliveryKind::View).await?;
    assert_eq!(view.look, Some(2));
    assert!(view.text.contains("Half-way through"), "{}", view.text);

    // The supervisor goes away; the worker comes back and works: nothing piles up.
    drop(sup);
    let mut worker = register_with(
        &core,
        "work-1",
        "tidy",
        dir.path(),
        Role::Lead,
        Some(&file.path),
    )
    .await?;
    for step in ["first while away", "second while away"] {
        set_status(&mut worker, "thinking").await?;
        file.append("assistant", step);
        set_status(&mut worker, "idle").await?;
    }
    let mut cli = core.client(ClientKind::Cli).await?;
    worker.sync().await?;
    // A time allowance, not an order: each stop starts a view build on a blocking thread,
    // and while the supervisor is away the hub drops the result, with no event after it to
    // wait for. The builds read a small file (well under 300 ms); the catch-up below (one
    // view, look 3, with both steps) would also show a look taken meanwhile.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let listed = pairings(&mut cli, false).await?;
    assert_eq!(
        (listed[0].id, listed[0].looks),
        (p.id, 2),
        "no look while away"
    );
    assert!(!listed[0].supervisor_connected);

    // On its return: exactly one view, with everything it missed.
    let mut sup = register(&core, "sup-1", "watcher", dir.path(), Role::Lead).await?;
    let view = next_of(&mut sup, DeliveryKind::View).await?;
    assert_eq!(view.look, Some(3));
    assert!(
        view.text.contains("first while away") && view.text.contains("second while away"),
        "{}",
        view.text
    );
    // One catch-up view only: a look asked now is the very next delivery, as look 4, with
    // only what came after (a second catch-up would come before it: builds of a pairing
    // run one after another).
    file.append("assistant", "third, after the return");
    cli.look("tidy").await?;
    let next = sup.next_delivery(WAIT).await?;
    assert_eq!(
        (next.kind, next.look),
        (DeliveryKind::View, Some(4)),
        "{}",
        next.text
    );
    assert!(
        next.text.contains("third, after the return") && !next.text.contains("while away"),
        "one catch-up view only: {}",
        next.text
    );
    Ok(())
}

#[tokio::test]
async fn a_renamed_worker_is_shown_under_its_new_name_on_the_other_side() -> Result<()> {
    let core = Core::start().await?;
    let dir = tempfile::tempdir()?;
    let mut worker = register(&core, "work-1", "old-name", dir.path(), Role::Lead).await?;
    let mut sup = register(&core, "sup-1", "watcher", dir.path(), Role::Lead).await?;
    supervise(&mut sup.client, Some("old-name"), Some("ship it")).await?;
    update(&mut worker, Some("new-name"), None).await?;
    let ev = next_event_where(&mut sup.client, WAIT, |m| {
        matches!(
            m,
            ServerMsg::PairingEvent {
                change: PairingChange::Presence,
                ..
            }
        )
    })
    .await?;
    let ServerMsg::PairingEvent { pairing, .. } = ev else {
        unreachable!()
    };
    assert_eq!(pairing.worker_name, "new-name");
    Ok(())
}
