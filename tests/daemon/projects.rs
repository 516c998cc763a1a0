//! Project work against the real core and REAL Lead Pi processes (the pinned Pi with the
//! shepherd extension, launched by the core's worker host in their own linked worktrees,
//! talking to a scripted fake model). The Manager is a harness client registered in the
//! repository's primary worktree, so each step on its side is exact: what it is mailed,
//! when it acks.
//!
//! - `delegate_project` makes the branch and its linked worktree, and the Lead works
//!   there; its completed turn reaches the Manager as exactly one `assignment_update`
//!   (text, branch, HEAD); its question reaches the Manager and the answer comes back;
//! - with the Manager gone, the Lead's updates wait for the role and the next Manager gets
//!   the backlog once; the Lead's message_supervisor waits too, never going to the Chief;
//! - `stop_lead` pauses it (process gone, everything kept); `resume_work` relaunches the
//!   same session in the same checkout;
//! - `stop_lead` closes the Lead's own workers and stops their processes, as closing a
//!   worker closes its tree;
//! - a registration of a Lead's session by any process but the one launched for it is
//!   refused (`launch_mismatch`); a headless Lead is relaunched on its session after a core
//!   restart, told why once, and its next run is one update;
//! - a first launch that fails (no Pi at the configured path) undoes its delegation: no
//!   assignment (the branch kept), or a closed worker whose label is free again;
//! - `integrate_branch` waits for the human's approval, then fast-forwards the primary
//!   branch, removes the worktree, retires the assignment and keeps the branch; a denial's
//!   reason reaches the Manager; a diverged primary, a wrong sha and a dirty primary are
//!   refused with nothing changed; a dirty checkout leaves `cleanup_pending`, finished by
//!   the same call;
//! - with `[projects] integrate = "deny"` the Manager is refused and the human's
//!   `shepherd integrate` runs it;
//! - a core killed (-9) at points of a delegation leaves no assignment (the branch can be
//!   delegated again; git's leftovers are named with what to do) or a complete one whose
//!   Lead runs and reports;
//! - a ref lock held by another git command refuses an integration before any file is
//!   touched; a core killed (-9) while an integration writes thousands of files undoes it
//!   at its next start (the primary holds the old tree, clean, its lock gone), tells the
//!   Manager, and the same integration then runs;
//! - `list_staff` gives a Manager its assignments with git's ahead/behind;
//! - a checkout deleted by hand is reported as moved or missing, and retired only once git
//!   has forgotten it (`git worktree prune`); one moved or renamed by hand is reported as
//!   moved (with `git worktree repair <new path>`), never pruned, and repairs with its
//!   staged state;
//! - a checkout holding what git would not commit (ignored files, a nested repository,
//!   edits hidden by skip-worktree) is kept, `cleanup_pending` naming them, only after the
//!   Lead's process exited; the human's `--remove-anyway` moves it aside whole;
//! - refusals say what is missing (not a Manager, branch already assigned, occupied
//!   checkout, no assignment).

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;
use shepherd_core::protocol::{
    AssignmentState, ClientKind, DeliveryKind, ErrorCode, IntegrationStatus, LeadState, Worker,
    WorkerState, requests,
};
use shepherd_harness::fake_model::{FakeModel, ModelRequest, Reply};
use shepherd_harness::git_repo::{git, status};
use shepherd_harness::projects::{assignment, manager, projects, repo, rev, wait_assignment};
use shepherd_harness::workers::{listed, next_of_kind, wait_state, worker_core_with, worker_pid};
use shepherd_harness::{Core, Pi, error_code, error_details, registration};

/// What the Leads' model does, by the marker in the newest user message.
fn lead_script(req: &ModelRequest) -> Reply {
    let (role, _) = req.last();
    let user = req.last_user_text();
    let commit_cmd = |file: &str| {
        format!(
            "echo {file} > {file} && git add {file} && git -c user.name=lead -c user.email=lead@example.invalid -c commit.gpgsign=false commit -qm 'add {file}'"
        )
    };
    // A Lead that delegates a worker (TASK-W), and the worker that then works on.
    if user.contains("TASK-W-CHILD") {
        return Reply::tool("bash", json!({"command": "sleep 120"}));
    }
    if user.contains("TASK-W") {
        return match role.as_str() {
            "tool" => Reply::text("UPDATE-W delegated a helper"),
            _ => Reply::tool(
                "delegate_agent",
                json!({"definition": "implementer", "task": "TASK-W-CHILD look around", "label": "helper"}),
            ),
        };
    }
    if user.contains("TASK-A") {
        return match role.as_str() {
            "tool" => Reply::text("UPDATE-A committed a.txt"),
            _ => Reply::tool("bash", json!({"command": commit_cmd("a.txt")})),
        };
    }
    if user.contains("TASK-B") {
        return match role.as_str() {
            "tool" => Reply::text("UPDATE-B committed b.txt"),
            _ => Reply::tool("bash", json!({"command": commit_cmd("b.txt")})),
        };
    }
    if user.contains("[shepherd] Answer") && user.contains("blue") {
        return Reply::text("UPDATE-Q the colour is blue");
    }
    if user.contains("TASK-Q") {
        return match role.as_str() {
            "tool" => Reply::text("asked the manager"),
            _ => Reply::tool(
                "ask_supervisor",
                json!({"question": "Which colour, red or blue?"}),
            ),
        };
    }
    if user.contains("TASK-M") {
        return match role.as_str() {
            "tool" => Reply::text("UPDATE-M told the manager"),
            _ => Reply::tool(
                "message_supervisor",
                json!({"message": "RISK-M the schema may change"}),
            ),
        };
    }
    if user.contains("interrupted by a restart of shepherd") {
        return Reply::text("UPDATE-R went on after the restart");
    }
    for turn in ["TURN-1", "TURN-2"] {
        if user.contains(turn) {
            return Reply::text(format!("UPDATE-{turn} done"));
        }
    }
    Reply::text("nothing to do")
}

async fn start(env: &[(&str, &str)]) -> Result<(FakeModel, Core)> {
    let model = FakeModel::start(lead_script).await?;
    let core = worker_core_with(&model, "headless", env).await?;
    Ok((model, core))
}

/// What the core refused `request` with (the test fails if it was accepted).
async fn refusal<R>(pi: &mut Pi, request: R) -> anyhow::Error
where
    R: shepherd_core::client::Request,
    R::Reply: std::fmt::Debug,
{
    pi.client
        .call(request)
        .await
        .map_err(anyhow::Error::from)
        .unwrap_err()
}

/// A project refusal's reason (`details.reason`).
fn reason(err: &anyhow::Error) -> serde_json::Value {
    error_details(err).unwrap()["reason"].clone()
}

async fn delegate(
    mgr: &mut Pi,
    task: &str,
    branch: &str,
) -> Result<shepherd_core::protocol::Assignment> {
    Ok(mgr
        .client
        .call(requests::DelegateProject {
            task: task.into(),
            branch: Some(branch.into()),
            ..Default::default()
        })
        .await?)
}

/// The next `assignment_update` to the Manager, acked.
async fn update(mgr: &mut Pi) -> Result<String> {
    let d = next_of_kind(mgr, DeliveryKind::AssignmentUpdate).await?;
    mgr.ack(&[d.id]).await?;
    Ok(d.text)
}

/// Nothing of `kind` reaches `pi` within `wait` (other deliveries are acked).
async fn none_of_kind(pi: &mut Pi, kind: DeliveryKind, wait: Duration) -> Result<()> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        match pi.next_delivery(left).await {
            Ok(d) if d.kind == kind => anyhow::bail!("unexpected {kind:?}: {}", d.text),
            Ok(d) => pi.ack(&[d.id]).await?,
            Err(_) => return Ok(()),
        }
    }
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

async fn steer(core: &Core, session: &str, text: &str) -> Result<()> {
    let mut cli = core.client(ClientKind::Cli).await?;
    cli.call(requests::Send {
        to: session.into(),
        text: text.into(),
        ..Default::default()
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_works_in_its_worktree_and_each_turn_is_one_update_for_the_manager() -> Result<()> {
    let (model, core) = start(&[]).await?;
    let app = repo(&core, "app")?;
    let mut mgr = manager(&core, &app, "0193a5c2-0000-7000-8000-00000000a001").await?;

    let a = delegate(&mut mgr, "TASK-A add a.txt and commit it", "feat/a").await?;
    assert_eq!(a.branch, "feat/a");
    assert_eq!(a.project, "app");
    assert_eq!(a.state, AssignmentState::Active);
    let checkout = Path::new(&a.checkout);
    assert!(
        checkout.join(".git").is_file(),
        "a linked worktree at {}",
        a.checkout
    );
    assert_eq!(
        a.checkout,
        app.parent()
            .unwrap()
            .join("app.worktrees/feat-a")
            .display()
            .to_string()
    );

    let text = update(&mut mgr).await?;
    let head = rev(checkout, "HEAD")?;
    assert!(text.contains("UPDATE-A committed a.txt"), "{text}");
    assert!(text.contains("app@feat/a"), "{text}");
    assert!(
        text.contains(&format!("head {}", &head[..7])),
        "{text} vs {head}"
    );
    assert_eq!(
        rev(&app, "feat/a")?,
        head,
        "the Lead committed on its branch"
    );
    assert_ne!(rev(&app, "main")?, head, "not on the primary branch");
    none_of_kind(
        &mut mgr,
        DeliveryKind::AssignmentUpdate,
        Duration::from_secs(2),
    )
    .await?;

    let listed = wait_assignment(&core, "feat/a", "running with its update", |a| {
        a.lead == LeadState::Running && a.last_update.is_some()
    })
    .await?;
    assert_eq!((listed.ahead, listed.behind), (Some(1), Some(0)));
    assert!(listed.last_update.unwrap().contains("UPDATE-A"));
    assert_eq!(listed.session_id, a.session_id);
    let usage = listed.usage.expect("the Lead's usage");
    assert!(usage.total_tokens > 0);
    // The Manager's list_staff carries its assignments, with git's ahead/behind.
    mgr.client
        .send(&shepherd_core::protocol::ClientMsg::ListStaff(
            requests::ListStaff { id: 9000 },
        ))
        .await?;
    let staff = loop {
        let msg = mgr.client.next_event().await?;
        if msg.response_id() == Some(9000) {
            break msg;
        }
    };
    let shepherd_core::protocol::ServerMsg::Staff { assignments, .. } = staff else {
        anyhow::bail!("not a staff reply: {staff:?}");
    };
    assert_eq!(assignments.len(), 1, "{assignments:?}");
    assert_eq!(assignments[0].branch, "feat/a");
    assert_eq!(
        (assignments[0].ahead, assignments[0].behind),
        (Some(1), Some(0))
    );

    // The Lead asks its Manager; the Manager's answer comes back to it.
    steer(&core, a.session_id.as_str(), "TASK-Q pick a colour").await?;
    let ask = match next_of_kind(&mut mgr, DeliveryKind::Ask).await {
        Ok(ask) => ask,
        Err(e) => {
            for r in model.requests().iter().rev().take(3) {
                eprintln!("REQ last={:?} user={:?}", r.last(), r.last_user_text());
            }
            eprintln!("{}", core.log());
            return Err(e);
        }
    };
    assert!(ask.text.contains("Which colour"), "{}", ask.text);
    mgr.ack(&[ask.id]).await?;
    mgr.client
        .call(requests::Answer {
            ask: ask.ask_id.expect("an ask"),
            text: "blue".into(),
            ..Default::default()
        })
        .await?;
    loop {
        let text = update(&mut mgr).await?;
        if text.contains("UPDATE-Q the colour is blue") {
            break;
        }
        assert!(text.contains("asked the manager"), "{text}");
    }
    assert!(
        model
            .requests()
            .iter()
            .any(|r| r.last_user_text().contains("blue"))
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_manager_the_role_keeps_the_updates_and_the_next_manager_gets_them_once()
-> Result<()> {
    let (_model, core) = start(&[]).await?;
    let app = repo(&core, "app")?;
    let mut mgr = manager(&core, &app, "0193a5c2-0000-7000-8000-00000000b001").await?;
    let a = delegate(&mut mgr, "TASK-A add a.txt", "feat/a").await?;
    assert!(update(&mut mgr).await?.contains("UPDATE-A"));
    // A Chief exists: an assigned Lead's mail must not go to it.
    let mut chief = Pi::register(
        &core.socket(),
        "0193a5c2-0000-7000-8000-00000000b0c1",
        "chief",
        &shepherd_harness::workers::work_dir(&core),
    )
    .await?;
    chief
        .client
        .call(requests::SetRole {
            role: shepherd_core::protocol::Role::Chief,
            ..Default::default()
        })
        .await?;
    drop(mgr); // The Manager dies.

    let mut events = core.subscriber().await?;
    for turn in ["TURN-1", "TURN-2", "TASK-M"] {
        steer(&core, a.session_id.as_str(), turn).await?;
        shepherd_harness::next_event_where(&mut events, Duration::from_secs(90), |m| {
            matches!(m, shepherd_core::protocol::ServerMsg::AssignmentUpdated { text, .. } if text.contains(if turn == "TASK-M" { "UPDATE-M" } else { turn }))
        })
        .await?;
    }
    none_of_kind(
        &mut chief,
        DeliveryKind::SupervisorMessage,
        Duration::from_millis(500),
    )
    .await?;

    // A new Manager session takes the lease from the one that is gone.
    let mut next = manager(&core, &app, "0193a5c2-0000-7000-8000-00000000b002").await?;
    let mut got = Vec::new();
    while got.len() < 4 {
        let d = next.next_delivery(Duration::from_secs(30)).await?;
        next.ack(&[d.id]).await?;
        got.push((d.kind, d.text));
    }
    let kinds: Vec<_> = got.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        kinds,
        [
            DeliveryKind::AssignmentUpdate,
            DeliveryKind::AssignmentUpdate,
            DeliveryKind::SupervisorMessage,
            DeliveryKind::AssignmentUpdate
        ],
        "{got:?}"
    );
    assert!(
        got[0].1.contains("UPDATE-TURN-1") && got[1].1.contains("UPDATE-TURN-2"),
        "{got:?}"
    );
    assert!(got[2].1.contains("RISK-M"), "{got:?}");
    assert!(got[3].1.contains("UPDATE-M"), "{got:?}");
    none_of_kind(
        &mut next,
        DeliveryKind::AssignmentUpdate,
        Duration::from_secs(2),
    )
    .await?;
    none_of_kind(
        &mut chief,
        DeliveryKind::SupervisorMessage,
        Duration::from_millis(200),
    )
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_lead_pauses_and_resume_work_relaunches_the_same_session_in_the_same_checkout()
-> Result<()> {
    let (_model, core) = start(&[]).await?;
    let app = repo(&core, "app")?;
    let mut mgr = manager(&core, &app, "0193a5c2-0000-7000-8000-00000000c001").await?;
    let a = delegate(&mut mgr, "TASK-A add a.txt", "feat/a").await?;
    update(&mut mgr).await?;
    let running =
        wait_assignment(&core, "feat/a", "running", |a| a.lead == LeadState::Running).await?;
    let pid = running.pid.expect("a running Lead has a pid");
    let file_before = core
        .cli_json(&["sessions"])
        .ok()
        .and_then(|v| {
            v.as_array()?
                .iter()
                .find(|s| s["id"] == a.session_id.as_str())
                .cloned()
        })
        .and_then(|s| s["session_file"].as_str().map(str::to_string));

    let stopped = mgr
        .client
        .call(requests::StopLead {
            branch: "feat/a".into(),
            ..Default::default()
        })
        .await?;
    assert_eq!(stopped.state, AssignmentState::Paused);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while alive(pid) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the Lead {pid} still runs"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let paused =
        wait_assignment(&core, "feat/a", "stopped", |a| a.lead == LeadState::Stopped).await?;
    assert_eq!(paused.state, AssignmentState::Paused);
    assert!(Path::new(&a.checkout).is_dir(), "the checkout is kept");
    assert!(rev(&app, "feat/a").is_ok(), "the branch is kept");

    let resumed = mgr
        .client
        .call(requests::ResumeWork {
            branch: "feat/a".into(),
            ..Default::default()
        })
        .await?;
    assert_eq!(resumed.session_id, a.session_id);
    assert_eq!(resumed.checkout, a.checkout);
    assert_eq!(resumed.state, AssignmentState::Active);
    let back = wait_assignment(&core, "feat/a", "running again", |a| {
        a.lead == LeadState::Running
    })
    .await?;
    assert_ne!(back.pid, Some(pid));
    // It runs on the same session file, on the same branch.
    let file_after = core
        .cli_json(&["sessions"])?
        .as_array()
        .and_then(|v| v.iter().find(|s| s["id"] == a.session_id.as_str()).cloned())
        .and_then(|s| s["session_file"].as_str().map(str::to_string));
    assert!(file_after.is_some());
    assert_eq!(file_before, file_after);
    assert_eq!(back.current_branch.as_deref(), Some("feat/a"));
    // Running already: resume_work returns it.
    let again = mgr
        .client
        .call(requests::ResumeWork {
            branch: "feat/a".into(),
            ..Default::default()
        })
        .await?;
    assert_eq!(again.pid, back.pid);

    // A Lead that dies on its own: the Manager is told, with how to start it again.
    let pid = back.pid.expect("a pid");
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()?;
    let told = loop {
        let text = update(&mut mgr).await?;
        if text.contains("ended on its own") {
            break text;
        }
    };
    assert!(
        told.contains("app@feat/a") && told.contains("resume_work"),
        "{told}"
    );
    let stopped =
        wait_assignment(&core, "feat/a", "stopped", |a| a.lead == LeadState::Stopped).await?;
    assert_eq!(stopped.state, AssignmentState::Active, "kept as it was");
    Ok(())
}

/// Stopping a Lead is one step with closing a worker: the Lead's own workers are closed
/// and their processes stopped first, then the Lead's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_lead_closes_the_leads_workers_and_stops_their_processes() -> Result<()> {
    let (_model, core) = start(&[]).await?;
    let app = repo(&core, "app")?;
    let mut mgr = manager(&core, &app, "0193a5c2-0000-7000-8000-00000000c0a1").await?;
    let a = delegate(&mut mgr, "TASK-W split the work", "feat/w").await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    let helper = loop {
        let all: Vec<Worker> = serde_json::from_value(core.cli_json(&["workers"])?)?;
        if let Some(w) = all.into_iter().find(|w| w.owner_id == a.session_id) {
            break w;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the Lead never delegated:\n{}",
            core.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    wait_state(&core, helper.id, WorkerState::Working).await?;
    let helper_pid = worker_pid(&core, helper.id)?;
    let running =
        wait_assignment(&core, "feat/w", "running", |a| a.lead == LeadState::Running).await?;
    let lead_pid = running.pid.expect("a running Lead has a pid");

    let stopped = mgr
        .client
        .call(requests::StopLead {
            branch: "feat/w".into(),
            ..Default::default()
        })
        .await?;
    assert_eq!(stopped.state, AssignmentState::Paused);
    assert_eq!(listed(&core, helper.id)?.state, WorkerState::Closed);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while alive(helper_pid) || alive(lead_pid) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "still running: helper {} ({helper_pid}), Lead {} ({lead_pid})",
            alive(helper_pid),
            alive(lead_pid)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = core.log();
    assert!(
        log.lines().any(|l| l.contains("worker closed")
            && l.contains(&format!("worker={}", helper.id))
            && l.contains("the manager")),
        "the helper is closed by the Manager's stop:\n{log}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leads_session_is_its_launched_process_and_a_restart_relaunches_it_on_that_session()
-> Result<()> {
    let (model, mut core) = start(&[]).await?;
    let app = repo(&core, "app")?;
    let mgr_id = "0193a5c2-0000-7000-8000-00000000c00e";
    let mut mgr = manager(&core, &app, mgr_id).await?;
    let a = delegate(&mut mgr, "TURN-1 say hello", "feat/r").await?;
    assert!(update(&mut mgr).await?.contains("UPDATE-TURN-1 done"));
    let running =
        wait_assignment(&core, "feat/r", "running", |a| a.lead == LeadState::Running).await?;
    let pid = running.pid.expect("a running Lead has a pid");

    // Only the process launched for the Lead's session may register it.
    for launch in [None, Some("not-the-nonce".to_string())] {
        let mut reg = registration(a.session_id.as_str(), "impostor", Path::new(&a.checkout));
        reg.launch = launch.clone();
        let err = Pi::register_full(&core.socket(), reg)
            .await
            .err()
            .with_context(|| format!("registered with launch {launch:?}"))?;
        assert_eq!(error_code(&err), Some(ErrorCode::ProjectRefused), "{err:#}");
        assert_eq!(reason(&err), "launch_mismatch", "{err:#}");
        assert!(err.to_string().contains("app@feat/r"), "{err:#}");
    }
    let same =
        wait_assignment(&core, "feat/r", "running", |a| a.lead == LeadState::Running).await?;
    assert_eq!(same.pid, Some(pid), "the Lead is untouched");

    // A headless Lead dies with the core; the next core relaunches it on its session.
    drop(mgr);
    core.terminate()?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while alive(pid) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the Lead {pid} outlived the core"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    core.restart().await?;
    let mut mgr = manager(&core, &app, mgr_id).await?;
    let back = wait_assignment(&core, "feat/r", "running again", |a| {
        a.lead == LeadState::Running && a.pid != Some(pid)
    })
    .await?;
    assert_eq!(back.session_id, a.session_id, "the same session");
    assert_eq!(back.state, AssignmentState::Active);
    assert!(core.log().contains("relaunching an assignment's Lead"));
    let text = loop {
        let text = update(&mut mgr).await?;
        if text.contains("UPDATE-R") {
            break text;
        }
    };
    assert!(text.contains("app@feat/r"), "{text}");
    let told = model
        .requests()
        .iter()
        .filter(|r| {
            r.last_user_text()
                .contains("interrupted by a restart of shepherd")
        })
        .count();
    assert!(told >= 1, "the Lead was told why it was started again");
    let file = core
        .cli_json(&["sessions"])?
        .as_array()
        .and_then(|v| v.iter().find(|s| s["id"] == a.session_id.as_str()).cloned())
        .and_then(|s| s["session_file"].as_str().map(str::to_string))
        .context("the Lead's session file")?;
    let transcript = std::fs::read_to_string(file)?;
    assert_eq!(
        transcript
            .matches("interrupted by a restart of shepherd")
            .count(),
        1,
        "told once, in the same session file"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_launch_that_fails_undoes_its_delegation_for_a_lead_and_for_a_worker() -> Result<()>
{
    let (_model, core) = start(&[("SHEPHERD_WORKERS__PI", r#"["/nonexistent/pi"]"#)]).await?;
    let app = repo(&core, "app")?;
    let mut mgr = manager(&core, &app, "0193a5c2-0000-7000-8000-00000000c00f").await?;

    // A Lead that cannot start: nothing is assigned, the worktree is kept.
    let err = refusal(
        &mut mgr,
        requests::DelegateProject {
            task: "TURN-1 never runs".into(),
            branch: Some("feat/nope".into()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(error_code(&err), Some(ErrorCode::ProjectRefused), "{err:#}");
    assert_eq!(reason(&err), "launch_failed", "{err:#}");
    assert!(err.to_string().contains("nothing was assigned"), "{err:#}");
    assert!(assignment(&core, "feat/nope").await?.is_none());
    assert!(rev(&app, "feat/nope").is_ok(), "the branch is kept");

    // A worker that cannot start: the delegation did not happen, its row is closed.
    let err = refusal(
        &mut mgr,
        requests::DelegateAgent {
            definition: "scout".into(),
            task: "TASK-X never runs".into(),
            label: Some("never".into()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(error_code(&err), Some(ErrorCode::WorkerRefused), "{err:#}");
    assert_eq!(reason(&err), "launch_failed", "{err:#}");
    assert!(err.to_string().contains("could not be started"), "{err:#}");
    let all = core.cli_json(&["workers", "--all"])?;
    let states: Vec<&str> = all
        .as_array()
        .context("a list")?
        .iter()
        .filter(|w| w["label"] == "never")
        .filter_map(|w| w["state"].as_str())
        .collect();
    assert_eq!(states, ["closed"], "{all}");
    // The label is free again: the next attempt is refused for the same reason only.
    let err = refusal(
        &mut mgr,
        requests::DelegateAgent {
            definition: "scout".into(),
            task: "TASK-X again".into(),
            label: Some("never".into()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(reason(&err), "launch_failed", "{err:#}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn integration_waits_for_the_human_then_fast_forwards_removes_the_worktree_and_retires()
-> Result<()> {
    let (_model, core) = start(&[]).await?;
    let app = repo(&core, "app")?;
    let mut mgr = manager(&core, &app, "0193a5c2-0000-7000-8000-00000000d001").await?;
    let a = delegate(&mut mgr, "TASK-A add a.txt", "feat/a").await?;
    update(&mut mgr).await?;
    let b = delegate(&mut mgr, "TASK-B add b.txt", "feat/b").await?;
    update(&mut mgr).await?;
    let main_before = rev(&app, "main")?;
    let sha_a = rev(&app, "feat/a")?;

    let waiting = mgr
        .client
        .call(requests::IntegrateBranch {
            branch: "feat/a".into(),
            sha: sha_a.clone(),
            ..Default::default()
        })
        .await?;
    assert_eq!(waiting.status, IntegrationStatus::AwaitingApproval);
    assert_eq!(waiting.primary_branch, "main");
    let ask_id = waiting.ask_id.expect("an approval ask");
    assert_eq!(
        rev(&app, "main")?,
        main_before,
        "nothing happens before the approval"
    );
    let mut cli = core.client(ClientKind::Cli).await?;
    let asks = cli.call(requests::ListAsks::default()).await?;
    let ask = asks
        .iter()
        .find(|x| x.id == ask_id)
        .expect("the approval ask is open");
    assert_eq!(ask.options, ["approve", "deny"]);
    assert!(
        ask.question.contains("app@feat/a") && ask.question.contains(&sha_a[..7]),
        "{}",
        ask.question
    );
    assert!(
        ask.details.as_deref().unwrap_or("").contains("add a.txt"),
        "{:?}",
        ask.details
    );

    cli.call(requests::Answer {
        ask: ask_id,
        text: "approve".into(),
        ..Default::default()
    })
    .await?;
    let told = next_of_kind(&mut mgr, DeliveryKind::Integration).await?;
    mgr.ack(&[told.id]).await?;
    assert!(
        told.text.contains("approved") && told.text.contains("retired"),
        "{}",
        told.text
    );
    assert_eq!(rev(&app, "main")?, sha_a, "main fast-forwarded");
    assert!(
        app.join("a.txt").is_file(),
        "the primary worktree has the work"
    );
    assert!(!Path::new(&a.checkout).exists(), "the worktree is removed");
    assert_eq!(rev(&app, "feat/a")?, sha_a, "the branch is kept");
    assert!(assignment(&core, "feat/a").await?.is_none(), "retired");
    let refused = refusal(
        &mut mgr,
        requests::ResumeWork {
            branch: "feat/a".into(),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(reason(&refused), "retired", "{refused}");

    // feat/b now diverged from main: its integration is refused before the human is asked.
    let sha_b = rev(&app, "feat/b")?;
    let err = refusal(
        &mut mgr,
        requests::IntegrateBranch {
            branch: "feat/b".into(),
            sha: sha_b.clone(),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(error_code(&err), Some(ErrorCode::ProjectRefused));
    assert_eq!(reason(&err), "not_fast_forward", "{err}");
    assert_eq!(rev(&app, "main")?, sha_a, "nothing changed");

    // Rebased on main, it may be proposed again; the human denies it with a reason.
    git(Path::new(&b.checkout), &["rebase", "-q", "main"])?;
    let sha_b = rev(&app, "feat/b")?;
    let waiting = mgr
        .client
        .call(requests::IntegrateBranch {
            branch: "feat/b".into(),
            sha: sha_b.clone(),
            ..Default::default()
        })
        .await?;
    cli.call(requests::Answer {
        ask: waiting.ask_id.unwrap(),
        text: "needs tests first".into(),
        ..Default::default()
    })
    .await?;
    let told = next_of_kind(&mut mgr, DeliveryKind::Integration).await?;
    mgr.ack(&[told.id]).await?;
    assert!(
        told.text.contains("denied") && told.text.contains("needs tests first"),
        "{}",
        told.text
    );
    assert_eq!(rev(&app, "main")?, sha_a, "a denial changes nothing");
    assert!(Path::new(&b.checkout).is_dir());

    // The human integrates it directly (`shepherd integrate`'s request).
    let done = cli
        .call(requests::IntegrateBranch {
            branch: "feat/b".into(),
            sha: sha_b.clone(),
            repo: Some("app".into()),
            ..Default::default()
        })
        .await?;
    assert_eq!(
        done.status,
        IntegrationStatus::Integrated,
        "{}",
        done.message
    );
    assert_eq!(rev(&app, "main")?, sha_b);
    assert!(!Path::new(&b.checkout).exists());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn integration_refusals_change_nothing_and_a_dirty_checkout_leaves_cleanup_pending()
-> Result<()> {
    let (_model, core) = start(&[("SHEPHERD_PROJECTS__INTEGRATE", "allow")]).await?;
    let app = repo(&core, "app")?;
    let mut mgr = manager(&core, &app, "0193a5c2-0000-7000-8000-00000000e001").await?;
    let a = delegate(&mut mgr, "TASK-A add a.txt", "feat/a").await?;
    update(&mut mgr).await?;
    let sha = rev(&app, "feat/a")?;
    let main_before = rev(&app, "main")?;
    let integrate = |sha: String| requests::IntegrateBranch {
        branch: "feat/a".into(),
        sha,
        ..Default::default()
    };
    let reason = |e: &anyhow::Error| error_details(e).map(|d| d["reason"].clone());

    let err = mgr
        .client
        .call(integrate(main_before.clone()))
        .await
        .map_err(anyhow::Error::from)
        .unwrap_err();
    assert_eq!(reason(&err), Some(json!("sha_mismatch")), "{err}");
    std::fs::write(app.join("README"), "changed\n")?;
    let err = mgr
        .client
        .call(integrate(sha.clone()))
        .await
        .map_err(anyhow::Error::from)
        .unwrap_err();
    assert_eq!(reason(&err), Some(json!("dirty_primary")), "{err}");
    assert!(err.to_string().contains("README"), "{err}");
    git(&app, &["checkout", "-q", "--", "README"])?;
    assert_eq!(rev(&app, "main")?, main_before, "nothing changed");

    // Allowed: it runs at once; an untracked file in the checkout keeps it there.
    std::fs::write(Path::new(&a.checkout).join("notes.txt"), "mine\n")?;
    let pending = mgr.client.call(integrate(sha.clone())).await?;
    assert_eq!(
        pending.status,
        IntegrationStatus::CleanupPending,
        "{}",
        pending.message
    );
    assert!(pending.message.contains("notes.txt"), "{}", pending.message);
    assert_eq!(rev(&app, "main")?, sha, "the primary branch advanced");
    assert!(Path::new(&a.checkout).is_dir());
    let listed = assignment(&core, "feat/a").await?.expect("still open");
    assert!(listed.cleanup_pending);
    std::fs::remove_file(Path::new(&a.checkout).join("notes.txt"))?;
    let done = mgr.client.call(integrate(sha.clone())).await?;
    assert_eq!(
        done.status,
        IntegrationStatus::Integrated,
        "{}",
        done.message
    );
    assert!(!Path::new(&a.checkout).exists());
    assert!(assignment(&core, "feat/a").await?.is_none());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkout_deleted_by_hand_is_retired_after_the_inventory_and_refusals_say_why()
-> Result<()> {
    let (_model, core) = start(&[]).await?;
    let app = repo(&core, "app")?;

    // Not a Manager: a Lead in the repository may not delegate.
    let mut lead = Pi::register(
        &core.socket(),
        "0193a5c2-0000-7000-8000-00000000f0aa",
        "lead",
        &app,
    )
    .await?;
    let err = delegate(&mut lead, "TASK-A", "feat/x").await.unwrap_err();
    assert_eq!(reason(&err), "not_manager", "{err}");
    assert!(err.to_string().contains("/manager"), "{err}");
    drop(lead);

    let mut mgr = manager(&core, &app, "0193a5c2-0000-7000-8000-00000000f001").await?;
    let a = delegate(&mut mgr, "TASK-A add a.txt", "feat/a").await?;
    update(&mut mgr).await?;
    let err = delegate(&mut mgr, "TASK-A again", "feat/a")
        .await
        .unwrap_err();
    assert_eq!(reason(&err), "branch_assigned", "{err}");
    assert!(err.to_string().contains("resume_work"), "{err}");
    let err = refusal(
        &mut mgr,
        requests::StopLead {
            branch: "feat/none".into(),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(reason(&err), "no_assignment", "{err}");

    // A worktree someone works in by hand is not handed to a second writer.
    git(
        &app,
        &["worktree", "add", "-q", "-b", "feat/busy", "../busy"],
    )?;
    let busy = app.parent().unwrap().join("busy").canonicalize()?;
    let _hand = Pi::register(
        &core.socket(),
        "0193a5c2-0000-7000-8000-00000000f0bb",
        "by-hand",
        &busy,
    )
    .await?;
    let err = delegate(&mut mgr, "TASK-B", "feat/busy").await.unwrap_err();
    assert_eq!(reason(&err), "checkout_occupied", "{err}");
    assert!(err.to_string().contains("by-hand"), "{err}");

    // Deleted by hand while paused: the next inventory retires it, the branch stays.
    mgr.client
        .call(requests::StopLead {
            branch: "feat/a".into(),
            ..Default::default()
        })
        .await?;
    wait_assignment(&core, "feat/a", "stopped", |a| a.lead == LeadState::Stopped).await?;
    shepherd_harness::eventually(Duration::from_secs(30), "the Lead's session gone", || {
        let all = core.cli_json(&["sessions", "--all"]).ok()?;
        let lead = all
            .as_array()?
            .iter()
            .find(|s| s["id"] == a.session_id.as_str())?
            .clone();
        (lead["connected"] == false).then_some(())
    })
    .await?;
    std::fs::remove_dir_all(&a.checkout)?;
    // Git still records it (it may have been moved): kept and reported, nothing pruned.
    let kept = assignment(&core, "feat/a").await?.expect("kept");
    let why = kept.checkout_missing.expect("reported as moved or missing");
    assert!(why.contains("git worktree prune"), "{why}");
    assert!(app.join(".git/worktrees/feat-a").is_dir(), "not pruned");
    // Once git forgets it, the next inventory verifies its absence and retires it.
    git(&app, &["worktree", "prune"])?;
    let all = projects(&core).await?;
    assert!(
        all.iter()
            .all(|p| p.assignments.iter().all(|x| x.branch != "feat/a")),
        "{all:?}"
    );
    assert!(rev(&app, "feat/a").is_ok(), "the branch is kept");
    // A new delegation may reuse the branch.
    let again = delegate(&mut mgr, "TASK-A once more", "feat/a").await?;
    assert_ne!(again.session_id, a.session_id);
    assert!(Path::new(&again.checkout).is_dir());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_core_killed_during_a_delegation_leaves_no_assignment_or_a_complete_one() -> Result<()> {
    let (_model, mut core) = start(&[]).await?;
    let app = repo(&core, "app")?;
    // Killed at different points of the delegation (before the worktree, between the
    // worktree and the record, after the record and before the launch, after it).
    for (i, delay_ms) in [0u64, 40, 120, 400].into_iter().enumerate() {
        let branch = format!("feat/k{i}");
        let id = format!("0193a5c2-0000-7000-8000-0000000a{i:04}");
        let mut mgr = manager(&core, &app, &id).await?;
        let call = mgr.client.call(requests::DelegateProject {
            task: format!("TASK-A number {i}"),
            branch: Some(branch.clone()),
            ..Default::default()
        });
        let _ = tokio::time::timeout(Duration::from_millis(delay_ms), call).await;
        core.kill9();
        drop(mgr);
        core.restart().await?;
        let next = format!("0193a5c2-0000-7000-8000-0000000b{i:04}");
        let mut mgr = manager(&core, &app, &next).await?;
        match assignment(&core, &branch).await? {
            None => {
                // No assignment: the branch may be delegated again, as if never asked. A
                // kill inside git's own ref update leaves its lock file; the refusal names
                // it and says to remove it.
                // A kill inside git's worktree add leaves a half-made directory; the
                // refusal names it and says to delete it.
                let task = format!("TASK-A again {i}");
                let mut tries = 0;
                let a = loop {
                    tries += 1;
                    let e = match delegate(&mut mgr, &task, &branch).await {
                        Ok(a) => break a,
                        Err(e) if tries < 3 => e,
                        Err(e) => return Err(e),
                    };
                    let msg = e.to_string();
                    if msg.contains(".lock") {
                        assert!(msg.contains("remove"), "{msg}");
                        let lock = app.join(format!(".git/refs/heads/{branch}.lock"));
                        assert!(msg.contains(&lock.display().to_string()), "{msg}");
                        std::fs::remove_file(&lock)?;
                    } else if msg.contains("is in the way") {
                        assert!(msg.contains("delete it"), "{msg}");
                        let dir = app
                            .parent()
                            .unwrap()
                            .join(format!("app.worktrees/{}", branch.replace('/', "-")));
                        assert!(msg.contains(&dir.display().to_string()), "{msg}");
                        std::fs::remove_dir_all(&dir)?;
                    } else {
                        return Err(e);
                    }
                };
                assert_eq!(a.state, AssignmentState::Active);
            }
            Some(a) => {
                assert_eq!(a.state, AssignmentState::Active, "{a:?}");
                assert!(Path::new(&a.checkout).is_dir(), "{a:?}");
            }
        }
        // Either way the Lead runs and its first turn reaches the Manager once.
        let a =
            wait_assignment(&core, &branch, "running", |a| a.lead == LeadState::Running).await?;
        loop {
            let text = update(&mut mgr).await?;
            if text.contains(&format!("app@{branch}")) {
                break;
            }
        }
        assert!(rev(&app, &branch).is_ok());
        assert!(Path::new(&a.checkout).join(".git").is_file());
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_integrate_deny_only_the_human_integrates() -> Result<()> {
    let (_model, core) = start(&[("SHEPHERD_PROJECTS__INTEGRATE", "deny")]).await?;
    let app = repo(&core, "app")?;
    let mut mgr = manager(&core, &app, "0193a5c2-0000-7000-8000-0000000de001").await?;
    let a = delegate(&mut mgr, "TASK-A add a.txt", "feat/a").await?;
    update(&mut mgr).await?;
    let sha = rev(&app, "feat/a")?;
    let main_before = rev(&app, "main")?;
    let err = refusal(
        &mut mgr,
        requests::IntegrateBranch {
            branch: "feat/a".into(),
            sha: sha.clone(),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(reason(&err), "integrate_denied", "{err}");
    assert!(
        err.to_string().contains("shepherd integrate app feat/a"),
        "{err}"
    );
    assert_eq!(rev(&app, "main")?, main_before, "nothing changed");
    assert!(Path::new(&a.checkout).is_dir());

    let out = core
        .command()
        .args(["integrate", "app", "feat/a", &sha])
        .output()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(rev(&app, "main")?, sha, "the human's integration runs");
    assert!(!Path::new(&a.checkout).exists());
    // The Manager is told, though it was not asked.
    let told = next_of_kind(&mut mgr, DeliveryKind::Integration).await?;
    assert!(
        told.text.contains("app@feat/a") && told.text.contains(&sha[..7]),
        "{}",
        told.text
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_ref_lock_or_a_core_killed_mid_integration_never_leaves_the_primary_half_done()
-> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let (_model, mut core) = start(&[]).await?;
    let app = repo(&core, "app")?;
    let mgr_id = "0193a5c2-0000-7000-8000-00000000f001";
    let mut mgr = manager(&core, &app, mgr_id).await?;
    let a = delegate(&mut mgr, "TASK-A add a.txt", "feat/a").await?;
    update(&mut mgr).await?;
    // A large change on the branch: 4,000 files to write.
    let checkout = Path::new(&a.checkout);
    std::fs::create_dir_all(checkout.join("bulk"))?;
    for n in 0..4000 {
        std::fs::write(checkout.join(format!("bulk/{n:04}.txt")), format!("{n}\n"))?;
    }
    git(checkout, &["add", "bulk"])?;
    git(
        checkout,
        &[
            "-c",
            "user.name=lead",
            "-c",
            "user.email=lead@example.invalid",
            "commit",
            "-qm",
            "bulk",
        ],
    )?;
    let sha = rev(&app, "feat/a")?;
    let main_before = rev(&app, "main")?;
    let integrate = || requests::IntegrateBranch {
        branch: "feat/a".into(),
        sha: sha.clone(),
        repo: Some("app".into()),
        ..Default::default()
    };
    let readme = std::fs::metadata(app.join("README"))?;

    // Another git command holds main's ref lock (or a crashed one left it).
    let lock = app.join(".git/refs/heads/main.lock");
    std::fs::write(&lock, "")?;
    let mut cli = core.client(ClientKind::Cli).await?;
    let err = cli
        .call(integrate())
        .await
        .map_err(anyhow::Error::from)
        .unwrap_err();
    assert_eq!(reason(&err), "ref_locked", "{err}");
    assert!(
        err.to_string().contains(&lock.display().to_string()) && err.to_string().contains("remove"),
        "{err}"
    );
    assert_eq!(rev(&app, "main")?, main_before);
    assert!(!app.join("a.txt").exists() && !app.join("bulk").exists());
    let after = std::fs::metadata(app.join("README"))?;
    assert_eq!(
        (after.ino(), after.mtime_nsec()),
        (readme.ino(), readme.mtime_nsec()),
        "no file of the primary was rewritten"
    );
    assert_eq!(status(&app)?, "");
    std::fs::remove_file(&lock)?;

    // The core is killed while the integration writes the files.
    let call = tokio::spawn({
        let request = integrate();
        async move { cli.call(request).await }
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !app.join("bulk/0500.txt").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_micros(200));
    }
    core.kill9();
    let _ = call.await;
    let written = std::fs::read_dir(app.join("bulk")).map_or(0, |d| d.count());
    let moved = rev(&app, "main")? == sha;
    eprintln!("killed with {written} of 4000 files written; main moved: {moved}");
    drop(mgr);
    core.restart().await?;
    let mut mgr = manager(&core, &app, mgr_id).await?;
    let told = next_of_kind(&mut mgr, DeliveryKind::Integration).await?;
    mgr.ack(&[told.id]).await?;
    assert!(
        told.text.contains("interrupted by a restart"),
        "{}",
        told.text
    );
    assert!(!lock.exists(), "the killed core's own lock is gone");
    assert_eq!(
        status(&app)?,
        "",
        "the primary is clean: one tree or the other"
    );
    if moved {
        assert!(told.text.contains("complete"), "{}", told.text);
        assert_eq!(std::fs::read_dir(app.join("bulk"))?.count(), 4000);
    } else {
        assert!(told.text.contains("undone"), "{}", told.text);
        assert_eq!(rev(&app, "main")?, main_before);
        assert!(!app.join("a.txt").exists() && !app.join("bulk").exists());
    }
    assert!(
        std::fs::read_dir(core.state_dir().join("integrating"))?
            .next()
            .is_none(),
        "no journal is left"
    );

    // The same integration now runs to its end.
    let mut cli = core.client(ClientKind::Cli).await?;
    let done = cli.call(integrate()).await?;
    assert_eq!(
        done.status,
        IntegrationStatus::Integrated,
        "{}",
        done.message
    );
    assert_eq!(rev(&app, "main")?, sha);
    assert_eq!(std::fs::read_dir(app.join("bulk"))?.count(), 4000);
    assert_eq!(status(&app)?, "");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkout_holding_what_git_would_not_commit_is_kept_until_the_human_removes_it_anyway()
-> Result<()> {
    let (_model, core) = start(&[("SHEPHERD_PROJECTS__INTEGRATE", "allow")]).await?;
    let app = repo(&core, "app")?;
    let mut mgr = manager(&core, &app, "0193a5c2-0000-7000-8000-0000000ee001").await?;
    let a = delegate(&mut mgr, "TASK-A add a.txt", "feat/a").await?;
    update(&mut mgr).await?;
    let running =
        wait_assignment(&core, "feat/a", "running", |a| a.lead == LeadState::Running).await?;
    let pid = running.pid.expect("a running Lead has a pid");
    let sha = rev(&app, "feat/a")?;
    let checkout = Path::new(&a.checkout);

    // What git would not commit: ignored secrets (.gitignore-less: info/exclude), a nested
    // repository with its own commit under an ignored directory, an edit hidden by
    // skip-worktree.
    std::fs::write(app.join(".git/info/exclude"), ".env\n*.local\nbuild/\n")?;
    std::fs::write(checkout.join(".env"), "TOKEN=secret\n")?;
    std::fs::write(checkout.join("db.local"), "password\n")?;
    let nested = checkout.join("build/vendored");
    std::fs::create_dir_all(&nested)?;
    git(&nested, &["init", "-q", "-b", "main"])?;
    std::fs::write(nested.join("n.txt"), "n\n")?;
    git(&nested, &["add", "."])?;
    git(&nested, &["commit", "-q", "-m", "nested work"])?;
    git(checkout, &["update-index", "--skip-worktree", "a.txt"])?;
    std::fs::write(checkout.join("a.txt"), "hidden edit\n")?;

    let pending = mgr
        .client
        .call(requests::IntegrateBranch {
            branch: "feat/a".into(),
            sha: sha.clone(),
            ..Default::default()
        })
        .await?;
    // The removal waited for the Lead's exit: it is gone by the time of the answer.
    assert!(
        !alive(pid),
        "the Lead {pid} still runs after the removal ran"
    );
    assert_eq!(
        pending.status,
        IntegrationStatus::CleanupPending,
        "{}",
        pending.message
    );
    for named in [
        ".env (ignored)",
        "db.local (ignored)",
        "build/ (ignored)",
        "a.txt (hidden by skip-worktree)",
        "--remove-anyway",
    ] {
        assert!(
            pending.message.contains(named),
            "{named}: {}",
            pending.message
        );
    }
    assert_eq!(rev(&app, "main")?, sha, "the primary branch advanced");
    assert_eq!(
        std::fs::read_to_string(checkout.join(".env"))?,
        "TOKEN=secret\n"
    );
    assert_eq!(
        std::fs::read_to_string(checkout.join("a.txt"))?,
        "hidden edit\n"
    );
    assert!(nested.join(".git").is_dir());
    assert!(
        assignment(&core, "feat/a")
            .await?
            .expect("open")
            .cleanup_pending
    );

    // Removing anyway is the human's choice, never the Manager's.
    let err = refusal(
        &mut mgr,
        requests::IntegrateBranch {
            branch: "feat/a".into(),
            sha: sha.clone(),
            remove_anyway: true,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(reason(&err), "remove_anyway_human", "{err}");
    assert!(checkout.join(".env").is_file());

    let out = core
        .command()
        .args(["integrate", "app", "feat/a", &sha, "--remove-anyway"])
        .output()?;
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{said} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!checkout.exists(), "the checkout is gone from its path");
    let kept = std::fs::read_dir(checkout.parent().unwrap())?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<Vec<_>>>()?
        .into_iter()
        .find(|p| p.to_string_lossy().contains("feat-a.kept-"))
        .expect("moved aside next to it");
    assert!(said.contains(&kept.display().to_string()), "{said}");
    assert_eq!(
        std::fs::read_to_string(kept.join(".env"))?,
        "TOKEN=secret\n"
    );
    assert_eq!(
        std::fs::read_to_string(kept.join("db.local"))?,
        "password\n"
    );
    assert_eq!(
        std::fs::read_to_string(kept.join("a.txt"))?,
        "hidden edit\n"
    );
    assert_eq!(rev(&kept.join("build/vendored"), "HEAD")?.len(), 40);
    assert!(!app.join(".git/worktrees/feat-a").exists(), "git forgot it");
    assert!(assignment(&core, "feat/a").await?.is_none(), "retired");
    assert_eq!(rev(&app, "feat/a")?, sha, "the branch is kept");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkout_moved_by_hand_is_reported_as_moved_and_never_pruned() -> Result<()> {
    let (_model, core) = start(&[]).await?;
    let app = repo(&core, "app")?;
    let mut mgr = manager(&core, &app, "0193a5c2-0000-7000-8000-0000000ff001").await?;
    let a = delegate(&mut mgr, "TASK-A add a.txt", "feat/a").await?;
    update(&mut mgr).await?;
    mgr.client
        .call(requests::StopLead {
            branch: "feat/a".into(),
            ..Default::default()
        })
        .await?;
    wait_assignment(&core, "feat/a", "stopped", |a| a.lead == LeadState::Stopped).await?;
    let checkout = Path::new(&a.checkout).to_path_buf();
    // Staged work lives in git's admin entry for the worktree.
    std::fs::write(checkout.join("staged.txt"), "staged\n")?;
    git(&checkout, &["add", "staged.txt"])?;

    let renamed = checkout.with_file_name("feat-a-renamed");
    std::fs::rename(&checkout, &renamed)?;
    for _ in 0..2 {
        let listed = assignment(&core, "feat/a").await?.expect("kept");
        let why = listed.checkout_missing.expect("reported as moved");
        assert!(
            why.contains(&format!("git worktree repair {}", renamed.display())),
            "{why}"
        );
        assert!(app.join(".git/worktrees/feat-a").is_dir(), "not pruned");
    }
    let text = core
        .command()
        .args(["projects"])
        .env("COLUMNS", "200")
        .output()?;
    let text = String::from_utf8_lossy(&text.stdout).to_string();
    assert!(text.contains("checkout moved or missing"), "{text}");
    assert!(text.contains("git worktree repair"), "{text}");
    let err = refusal(
        &mut mgr,
        requests::ResumeWork {
            branch: "feat/a".into(),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(reason(&err), "checkout_moved", "{err}");

    // git can still find it: repair works and the staged state is there.
    git(
        &app,
        &["worktree", "repair", &renamed.display().to_string()],
    )?;
    assert_eq!(status(&renamed)?, "A  staged.txt\n");
    let listed = assignment(&core, "feat/a").await?.expect("still kept");
    assert!(listed.checkout_missing.is_some(), "{listed:?}");
    Ok(())
}

/// A session's `session_file` is untrusted input: with a paused Lead's session file
/// replaced by a FIFO nobody writes to, `list_projects` (which sums the Leads' usage)
/// still answers, without that usage, and the git lane it used to block for good still
/// serves `delegate_project` and `list_projects` after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_session_file_turned_fifo_blocks_no_listing_or_delegation() -> Result<()> {
    let (_model, core) = start(&[]).await?;
    let app = repo(&core, "app")?;
    let mut mgr = manager(&core, &app, "0193a5c2-0000-7000-8000-00000000f1f0").await?;
    let a = delegate(&mut mgr, "TASK-A add a.txt", "feat/a").await?;
    update(&mut mgr).await?;
    let running =
        wait_assignment(&core, "feat/a", "running", |a| a.lead == LeadState::Running).await?;
    let pid = running.pid.expect("a running Lead has a pid");
    assert!(running.usage.is_some(), "{running:?}");
    let file = core
        .cli_json(&["sessions"])?
        .as_array()
        .and_then(|v| v.iter().find(|s| s["id"] == a.session_id.as_str()).cloned())
        .and_then(|s| s["session_file"].as_str().map(str::to_string))
        .expect("the Lead's session file");
    mgr.client
        .call(requests::StopLead {
            branch: "feat/a".into(),
            ..Default::default()
        })
        .await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while alive(pid) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the Lead still runs"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    std::fs::remove_file(&file)?;
    let made = std::process::Command::new("mkfifo").arg(&file).status()?;
    assert!(made.success());

    let bound = Duration::from_secs(30);
    let listed = tokio::time::timeout(bound, projects(&core))
        .await
        .expect("list_projects answers")?;
    let paused = listed
        .iter()
        .flat_map(|p| &p.assignments)
        .find(|x| x.branch == "feat/a")
        .expect("feat/a is listed");
    assert_eq!(paused.usage, None, "{paused:?}");
    // The lane goes on: a delegation and another listing answer.
    let b = tokio::time::timeout(bound, delegate(&mut mgr, "TASK-B add b.txt", "feat/b"))
        .await
        .expect("delegate_project answers")?;
    assert_eq!(b.branch, "feat/b");
    let listed = tokio::time::timeout(bound, projects(&core))
        .await
        .expect("list_projects answers again")?;
    assert_eq!(listed.iter().map(|p| p.assignments.len()).sum::<usize>(), 2);
    Ok(())
}
