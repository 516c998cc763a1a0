//! Tool-call approvals in the core, end to end over the socket with a real core: a Pi
//! session's `request_approval` is ruled by the `[approvals]` policy (allow and deny at
//! once, naming the rule; ask kept pending and announced to the subscribers); asking again
//! for the same call re-attaches to its approval; the CLI and a bridge deciding at the
//! same moment (20 rounds): one decision, the other refused naming who decided; a denial's
//! reason and an allow for the session reach the session; an approval pending when the
//! core is killed (-9) is pending after the restart and decided once; a session that
//! closes withdraws what it waited for and a late decision is told it no longer waits.

use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;
use shepherd_core::client::{ApprovalRuling, Client};
use shepherd_core::protocol::{
    Approval, ApprovalScope, ApprovalState, ClientKind, ClientMsg, ErrorCode, Ruling, ServerMsg,
    requests,
};
use shepherd_harness::{Core, Pi, next_event_where};

const WAIT: Duration = Duration::from_secs(10);

const POLICY: &str = r#"
[approvals]
[[approvals.rules]]
tool = "bash"
match = "git push*"
decision = "ask"
[[approvals.rules]]
tool = "bash"
regex = "rm -rf /$"
decision = "deny"
"#;

async fn request(pi: &mut Pi, command: &str, call: &str) -> Result<ApprovalRuling> {
    Ok(pi
        .client
        .call(requests::RequestApproval {
            tool: "bash".into(),
            input: json!({ "command": command }),
            tool_call_id: call.into(),
            ..Default::default()
        })
        .await?)
}

async fn decide(
    client: &mut Client,
    approval: &Approval,
    allow: bool,
    scope: ApprovalScope,
    reason: Option<&str>,
) -> Result<Approval> {
    Ok(client
        .call(requests::DecideApproval {
            approval: approval.id,
            allow,
            scope,
            reason: reason.map(str::to_string),
            by: Some("telegram:@ada".into()),
            ..Default::default()
        })
        .await?)
}

/// The subscriber's next `approval_changed` for far's approval `id` in `state`.
async fn heard(watcher: &mut Client, id: u64, state: ApprovalState) -> Result<()> {
    next_event_where(watcher, WAIT, move |m| {
        matches!(m, ServerMsg::ApprovalChanged { approval }
            if approval.id.get() == id && approval.state == state && approval.host.as_deref() == Some("far"))
    })
    .await?;
    Ok(())
}

/// The session's next `approval_changed` for `approval`.
async fn told(pi: &mut Pi, approval: &Approval) -> Result<Approval> {
    let id = approval.id;
    let msg = next_event_where(&mut pi.client, WAIT, |m| {
        matches!(m, ServerMsg::ApprovalChanged { approval } if approval.id == id && approval.state != ApprovalState::Pending)
    })
    .await?;
    let ServerMsg::ApprovalChanged { approval } = msg else {
        unreachable!()
    };
    Ok(approval)
}

fn pending(ruling: &ApprovalRuling) -> Result<Approval> {
    anyhow::ensure!(ruling.ruling == Ruling::Pending, "not pending: {ruling:?}");
    ruling
        .approval
        .clone()
        .context("a pending ruling has its approval")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_call_is_decided_once_from_anywhere_and_survives_kill_9() -> Result<()> {
    let config = tempfile::NamedTempFile::new()?;
    std::fs::write(config.path(), POLICY)?;
    let config_path = config.path().display().to_string();
    let mut core = Core::start_with(&[("SHEPHERD_CONFIG", &config_path)]).await?;
    let mut pi = core
        .pi("0193a5c2-0000-7000-8000-00000000a001", "pusher")
        .await?;
    let mut watcher = core.client(ClientKind::Cli).await?;
    watcher.call(requests::Subscribe::default()).await?;

    // The policy rules at once, naming the rule.
    let ls = request(&mut pi, "ls", "c-ls").await?;
    assert_eq!(ls.ruling, Ruling::Allow);
    assert!(
        ls.rule.contains("no rule matches") && ls.rule.contains(&config_path),
        "{}",
        ls.rule
    );
    let rm = request(&mut pi, "rm -rf /", "c-rm").await?;
    assert_eq!(rm.ruling, Ruling::Deny);
    assert!(
        rm.rule.starts_with(&format!("rule 2 of {config_path}")),
        "{}",
        rm.rule
    );

    // An ask is kept pending and announced; asked again, it is the same approval.
    let held = pending(&request(&mut pi, "git push origin main", "c-push").await?)?;
    assert_eq!(
        (held.tool.as_str(), held.subject.as_str()),
        ("bash", "git push origin main")
    );
    let opened = next_event_where(&mut watcher, WAIT, |m| {
        matches!(m, ServerMsg::ApprovalChanged { .. })
    })
    .await?;
    assert!(
        matches!(&opened, ServerMsg::ApprovalChanged { approval } if approval.id == held.id && approval.state == ApprovalState::Pending),
        "{opened:?}"
    );
    let again = pending(&request(&mut pi, "git push origin main", "c-push").await?)?;
    assert_eq!(again.id, held.id);
    let listed = core.cli_json(&["approvals"])?;
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["id"], held.id.get());
    // While it waits, that is the session's status, whatever tool status it reports.
    let status = |core: &Core| -> Result<String> {
        let s = core.session_named("pusher").context("the session")?;
        Ok(s["status"].as_str().unwrap_or("").to_string())
    };
    assert_eq!(status(&core)?, "waiting for approval");
    pi.client
        .call(requests::Update {
            status: Some("tool:bash".into()),
            ..Default::default()
        })
        .await?;
    assert_eq!(status(&core)?, "waiting for approval");

    // Denied with a reason: the session is told, with the reason.
    let mut bridge = core.client(ClientKind::Bridge).await?;
    decide(
        &mut bridge,
        &held,
        false,
        ApprovalScope::Once,
        Some("push to a branch"),
    )
    .await?;
    let denied = told(&mut pi, &held).await?;
    assert_eq!(denied.state, ApprovalState::Denied);
    assert_eq!(denied.reason.as_deref(), Some("push to a branch"));
    assert_eq!(denied.decided_by.as_deref(), Some("telegram:@ada"));
    assert_eq!(status(&core)?, "tool:bash", "no longer waiting");
    // The call asked about again is denied as decided.
    assert_eq!(
        request(&mut pi, "git push origin main", "c-push")
            .await?
            .ruling,
        Ruling::Deny
    );

    // The CLI and a bridge at the same moment, 20 times: one decision each time.
    let mut cli = core.client(ClientKind::Cli).await?;
    for round in 0..20 {
        let a = pending(&request(&mut pi, "git push", &format!("c-race-{round}")).await?)?;
        let (by_cli, by_bridge) = tokio::join!(
            decide(&mut cli, &a, true, ApprovalScope::Once, None),
            decide(&mut bridge, &a, false, ApprovalScope::Once, Some("no"))
        );
        let (won, lost) = match (by_cli, by_bridge) {
            (Ok(w), Err(l)) => (w, l),
            (Err(l), Ok(w)) => (w, l),
            other => anyhow::bail!("round {round}: not exactly one decision: {other:?}"),
        };
        assert_eq!(
            shepherd_harness::error_code(&lost),
            Some(ErrorCode::AlreadyDecided),
            "{lost}"
        );
        assert!(lost.to_string().contains("no longer waiting"), "{lost}");
        let heard = told(&mut pi, &a).await?;
        assert_eq!(heard.state, won.state, "round {round}");
    }

    // Allowed for the session: the same rule stops asking it.
    let a = pending(&request(&mut pi, "git push --tags", "c-tags").await?)?;
    decide(&mut cli, &a, true, ApprovalScope::Session, None).await?;
    assert_eq!(told(&mut pi, &a).await?.state, ApprovalState::Allowed);
    let next = request(&mut pi, "git push origin feat", "c-feat").await?;
    assert_eq!(next.ruling, Ruling::Allow);
    assert!(
        next.rule.starts_with("allowed for this session by cli"),
        "{}",
        next.rule
    );

    // Pending across a kill -9: the same approval after the restart, decided once.
    let mut other = core
        .pi("0193a5c2-0000-7000-8000-00000000a002", "other")
        .await?;
    let kept = pending(&request(&mut other, "git push", "c-kept").await?)?;
    core.kill9();
    core.restart().await?;
    let mut other = core
        .pi("0193a5c2-0000-7000-8000-00000000a002", "other")
        .await?;
    let after = pending(&request(&mut other, "git push", "c-kept").await?)?;
    assert_eq!(after.id, kept.id);
    let out = core.cli(&["approve", &kept.id.to_string()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(told(&mut other, &kept).await?.state, ApprovalState::Allowed);
    let twice = core.cli(&["deny", &kept.id.to_string(), "too", "late"]);
    assert_eq!(twice.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&twice.stderr).contains("no longer waiting: allowed by cli"),
        "{twice:?}"
    );

    // A session that closes withdraws what it waited for.
    let gone = pending(&request(&mut other, "git push", "c-gone").await?)?;
    other
        .client
        .send(&ClientMsg::Bye(requests::Bye { returning: false }))
        .await?;
    drop(other);
    shepherd_harness::eventually(WAIT, "withdrawn when the session closed", || {
        let all = core.cli_json(&["approvals", "--all"]).ok()?;
        let row = all
            .as_array()?
            .iter()
            .find(|a| a["id"] == gone.id.get())?
            .clone();
        (row["state"] == "withdrawn").then_some(())
    })
    .await?;
    let late = core.cli(&["approve", &gone.id.to_string()]);
    assert!(
        String::from_utf8_lossy(&late.stderr).contains("no longer waiting: withdrawn"),
        "{late:?}"
    );
    assert!(!core.log_has_panic());
    Ok(())
}

/// `approvals.timeout_secs`: nobody decides, `on_timeout` does (here `deny`, with the
/// reason the model reads); a pending approval that came due while the core was down is
/// timed out once the core is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_nobody_decides_is_denied_by_its_timeout_also_across_a_restart() -> Result<()> {
    let config = tempfile::NamedTempFile::new()?;
    std::fs::write(config.path(), POLICY)?;
    let config_path = config.path().display().to_string();
    let env = [
        ("SHEPHERD_CONFIG", config_path.as_str()),
        ("SHEPHERD_APPROVALS__TIMEOUT_SECS", "1"),
    ];
    let mut core = Core::start_with(&env).await?;
    let mut pi = core
        .pi("0193a5c2-0000-7000-8000-00000000a003", "waiter")
        .await?;
    let held = pending(&request(&mut pi, "git push", "c-wait").await?)?;
    let timed_out = told(&mut pi, &held).await?;
    assert_eq!(timed_out.state, ApprovalState::Denied);
    assert_eq!(timed_out.decided_by.as_deref(), Some("the timeout (1 s)"));
    assert!(
        timed_out
            .reason
            .as_deref()
            .unwrap_or("")
            .contains("nobody decided within 1 s"),
        "{timed_out:?}"
    );

    // Due while the core was down: timed out when it is back.
    let kept = pending(&request(&mut pi, "git push", "c-down").await?)?;
    core.kill9();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    core.restart().await?;
    shepherd_harness::eventually(WAIT, "timed out after the restart", || {
        let all = core.cli_json(&["approvals", "--all"]).ok()?;
        let row = all
            .as_array()?
            .iter()
            .find(|a| a["id"] == kept.id.get())?
            .clone();
        (row["state"] == "denied").then_some(())
    })
    .await?;
    Ok(())
}

/// A linked host's held calls at the home core: announced with their host, decided from
/// home once; what happened while the link was down (one decided there, one opened) is
/// announced once the link is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linked_hosts_approvals_reach_home_also_after_the_link_was_down() -> Result<()> {
    let config = tempfile::NamedTempFile::new()?;
    std::fs::write(config.path(), POLICY)?;
    let far =
        Core::start_with(&[("SHEPHERD_CONFIG", &config.path().display().to_string())]).await?;
    let mut pi = far
        .pi("0193a5c2-0000-7000-8000-00000000a004", "far-pusher")
        .await?;
    let (_hosts, hosts_path) = Core::hosts_config(&[("far", &far)])?;
    let home = Core::start_with(&[("SHEPHERD_CONFIG", &hosts_path)]).await?;
    let mut watcher = home.client(ClientKind::Bridge).await?;
    watcher.call(requests::Subscribe::default()).await?;
    shepherd_harness::eventually(WAIT, "the link up", || {
        let hosts = home.cli_json(&["hosts"]).ok()?;
        (hosts[0]["state"] == "connected").then_some(())
    })
    .await?;
    let first = pending(&request(&mut pi, "git push", "c-far-1").await?)?;
    heard(&mut watcher, first.id.get(), ApprovalState::Pending).await?;
    let out = home.cli(&["approve", &format!("far:{}", first.id)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        told(&mut pi, &first).await?.decided_by.as_deref(),
        Some("cli")
    );
    heard(&mut watcher, first.id.get(), ApprovalState::Allowed).await?;

    // The link dies; meanwhile one is decided on far and another opened.
    let second = pending(&request(&mut pi, "git push --tags", "c-far-2").await?)?;
    heard(&mut watcher, second.id.get(), ApprovalState::Pending).await?;
    let pid = shepherd_harness::link_pid(&far.socket()).context("the link process")?;
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()?;
    let out = far.cli(&["deny", &second.id.to_string(), "not", "now"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let third = pending(&request(&mut pi, "git push origin feat", "c-far-3").await?)?;
    // Both announced once the link is back, in whichever order.
    let mut want = vec![
        (second.id.get(), ApprovalState::Denied),
        (third.id.get(), ApprovalState::Pending),
    ];
    while !want.is_empty() {
        let msg = next_event_where(&mut watcher, WAIT, |m| {
            matches!(m, ServerMsg::ApprovalChanged { approval } if approval.host.as_deref() == Some("far"))
        })
        .await?;
        if let ServerMsg::ApprovalChanged { approval } = msg {
            want.retain(|w| *w != (approval.id.get(), approval.state));
        }
    }
    let listed = home.cli_json(&["approvals"])?;
    assert_eq!(listed[0]["id"], third.id.get(), "{listed}");
    assert_eq!(listed[0]["host"], "far", "{listed}");
    Ok(())
}
