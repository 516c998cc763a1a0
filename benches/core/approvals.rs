//! Section 16: approvals. What the policy adds to a tool call that it allows: the
//! extension's `request_approval` round trip to a core whose `[approvals]` holds 50 rules
//! and the careful preset (none of which matches, so every rule is tried), for a `bash`
//! call and for an `edit` (whose path is resolved for `outside = "cwd"`), next to a
//! `ping` round trip on the same connection (the floor of any request).

use std::time::Instant;

use anyhow::Result;
use serde_json::json;
use shepherd_core::client::Client;
use shepherd_core::protocol::{ClientKind, Registration, Ruling, requests};

use crate::Settings;
use crate::daemon::CoreProc;
use crate::report::{Report, quantile, us};

const SESSION: &str = "bench-appr-0000-7000-8000-000000000016";

/// 50 rules that never match an everyday call, then the careful preset.
fn policy() -> String {
    let mut text = String::from("[approvals]\npreset = \"careful\"\n");
    for i in 0..50 {
        text.push_str(&format!(
            "[[approvals.rules]]\ntool = \"bash\"\nregex = \"\\\\bdeploy-{i}\\\\b\"\ndecision = \"ask\"\n"
        ));
    }
    text
}

pub async fn approvals(s: &Settings, report: &mut Report) -> Result<()> {
    eprintln!("[bench] 16. approvals: an allowed call's round trip through 50 rules");
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("config.toml");
    std::fs::write(&config, policy())?;
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work)?;
    let config = config.display().to_string();
    let (core, _) = CoreProc::start_with(&[("SHEPHERD_CONFIG", &config)])?;
    let mut pi = Client::connect(&core.socket(), ClientKind::Pi, "bench").await?;
    pi.register(Registration {
        session_id: SESSION.into(),
        name: Some("approver".into()),
        cwd: work.display().to_string(),
        pid: None,
        model: None,
        context: Default::default(),
        status: "idle".into(),
        role: Default::default(),
        session_file: None,
        subagent: false,
        launch: None,
    })
    .await?;
    let runs = if s.quick { 200 } else { 5000 };
    let mut ping = Vec::with_capacity(runs);
    let mut bash = Vec::with_capacity(runs);
    let mut edit = Vec::with_capacity(runs);
    for i in 0..runs {
        let t = Instant::now();
        pi.call(requests::Ping::default()).await?;
        ping.push(t.elapsed().as_nanos() as u64);
        for (tool, input, times) in [
            (
                "bash",
                json!({ "command": "cargo test --workspace" }),
                &mut bash,
            ),
            (
                "edit",
                json!({ "path": "src/main.rs", "edits": [] }),
                &mut edit,
            ),
        ] {
            let t = Instant::now();
            let ruled = pi
                .call(requests::RequestApproval {
                    tool: tool.into(),
                    input,
                    tool_call_id: format!("{tool}-{i}"),
                    ..Default::default()
                })
                .await?;
            times.push(t.elapsed().as_nanos() as u64);
            if ruled.ruling != Ruling::Allow {
                report.failures.push(format!(
                    "16 approvals: {tool} was ruled {:?} ({}), not allowed",
                    ruled.ruling, ruled.rule
                ));
                return Ok(());
            }
        }
    }
    for v in [&mut ping, &mut bash, &mut edit] {
        v.sort_unstable();
    }
    let floor = quantile(&ping, 0.5);
    report.info("16 approvals", "ping round trip p50 (floor)", us(floor));
    for (what, times) in [("bash", &bash), ("edit (path resolved)", &edit)] {
        let p50 = quantile(times, 0.5);
        report.info(
            "16 approvals",
            &format!("{what}: request_approval p99"),
            us(quantile(times, 0.99)),
        );
        report.row(
            "16 approvals",
            &format!("{what}: request_approval p50 (an allowed call's cost)"),
            us(p50),
            "≤ 1 ms".into(),
            Some(p50 <= 1_000_000),
        );
    }
    drop(pi);
    drop(core);
    Ok(())
}
