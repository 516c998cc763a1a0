//! # `shepherd approvals`, `approve`, `deny` and `approvals check`
//!
//! `approvals`: the tool calls held for a decision (`--all`: the decided ones too, with
//! who decided); `approve <id> [--session]` and `deny <id> [reason]` decide one, the first
//! decision winning wherever it is made (a later one is refused naming who decided).
//! `check`: which rule decides a tool call, without running an agent: `shepherd approvals check --
//! bash "git push origin main"`, `-- write /etc/hosts`, `-- fetch '{"url": "…"}'`. The
//! policy is read as the core reads it (the config file, the environment) and, when the
//! directory (`--cwd`, else the current one) is in a git worktree, that project's
//! `.pi/shepherd.toml`; the answer is the decision, the rule that made it and, when the
//! project's file was refused, why. With `--json`: `{decision, rule, subject,
//! project_refused}`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use shepherd_core::approvals::{Call, Layer, Policy, ProjectPolicy, project_policy};
use shepherd_core::protocol::{Approval, ApprovalScope, ApprovalState, requests};

use super::format::{ago, here_or, now_ms};
use super::table::{Align, Table};
use super::{Ctx, Failure, print, print_json, terminal_width};

/// Run `shepherd approvals [--all]`.
pub async fn list(ctx: &Ctx, all: bool) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let approvals = conn
        .herd_list(None, |host| requests::ListApprovals {
            all,
            host,
            ..Default::default()
        })
        .await?;
    if ctx.json {
        print_json(&approvals)?;
    } else if approvals.is_empty() {
        print(if all {
            "no approvals yet: a tool call waits for one when an [approvals] rule asks (`shepherd approvals check` tests the policy)\n"
        } else {
            "nothing waits for approval (`shepherd approvals --all` lists the decided ones)\n"
        })?;
    } else {
        print(&render(&approvals, now_ms(), terminal_width()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The approvals as a table: id, state (and who decided), session, tool, age, the command
/// or path, the rule.
pub fn render(approvals: &[Approval], now: u64, width: usize) -> String {
    let hosts = approvals.iter().any(|a| a.host.is_some());
    let mut table = Table::new();
    if hosts {
        table = table.column("HOST", Align::Left);
    }
    let mut table = table
        .column("ID", Align::Right)
        .column("STATE", Align::Left)
        .middle("SESSION", 10)
        .column("TOOL", Align::Left)
        .column("AGE", Align::Right)
        .flexible("CALL", 20)
        .flexible("RULE", 10);
    for a in approvals {
        let state = match (a.state, a.scope, &a.decided_by) {
            (ApprovalState::Allowed, Some(ApprovalScope::Session), Some(by)) => {
                format!("allowed for the session by {by}")
            }
            (ApprovalState::Pending, _, _) | (ApprovalState::Withdrawn, _, _) => {
                a.state.as_str().to_string()
            }
            (state, _, Some(by)) => format!("{} by {by}", state.as_str()),
            (state, _, None) => state.as_str().to_string(),
        };
        let host = hosts.then(|| here_or(&a.host));
        table.row(
            host.into_iter()
                .chain([
                    a.reference(),
                    state,
                    a.session_name.clone(),
                    a.tool.clone(),
                    ago(a.created_at, now),
                    a.subject.replace('\n', " "),
                    a.rule.clone(),
                ])
                .collect(),
        );
    }
    table.render(width)
}

/// Run `shepherd approve <id> [--session]` (`allow`) or `shepherd deny <id> [reason]`.
pub async fn decide(
    ctx: &Ctx,
    approval: &str,
    allow: bool,
    session: bool,
    reason: Option<String>,
) -> anyhow::Result<ExitCode> {
    let scope = match session {
        true => ApprovalScope::Session,
        false => ApprovalScope::Once,
    };
    // `gpu:4` names an approval on a linked host, whose ids are its own core's.
    let (host, id) = shepherd_core::protocol::split_host(approval.trim());
    let id: u64 = id.parse().map_err(|_| {
        Failure::new(
            "invalid_argument",
            format!(
                "{approval:?} is not an approval: its number (`4`), or `gpu:4` on a linked host; `shepherd approvals` lists them"
            ),
        )
    })?;
    let mut conn = ctx.connect().await?;
    let decided = conn
        .call(requests::DecideApproval {
            approval: id.into(),
            allow,
            scope,
            reason,
            host: host.map(str::to_string),
            ..Default::default()
        })
        .await?;
    if ctx.json {
        print_json(&decided)?;
    } else {
        let what = match (allow, session) {
            (true, true) => "allowed, and the same rule stops asking this session until it ends",
            (true, false) => "allowed once",
            (false, _) => "denied",
        };
        print(&format!(
            "approval {} ({} of {}): {what}\n",
            decided.reference(),
            decided.tool,
            decided.session_name
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Run `shepherd approvals check [--cwd DIR] -- TOOL ARG…`.
pub fn check(
    ctx: &Ctx,
    cwd: Option<&Path>,
    tool: &str,
    args: &[String],
) -> anyhow::Result<ExitCode> {
    let loaded = ctx.load_config()?;
    let cwd = match cwd {
        Some(dir) => std::path::absolute(dir)?,
        None => std::env::current_dir()?,
    };
    let input = input_of(tool, args)?;
    let origin = loaded.config.approvals_origin();
    let worktree = shepherd_core::git::repo::discover(&cwd)
        .root
        .map(PathBuf::from);
    let (project, refused) = match worktree.as_deref().map(project_policy) {
        Some(ProjectPolicy::Layer(layer)) => (Some(layer), None),
        Some(ProjectPolicy::Refused(why)) => (None, Some(why)),
        Some(ProjectPolicy::None) | None => (None, None),
    };
    let policy = Policy {
        user: std::sync::Arc::new(Layer::user(&loaded.config.approvals, &origin)),
        project,
    };
    let call = Call {
        tool,
        input: &input,
        cwd: &cwd,
        worktree: worktree.as_deref(),
    };
    let ruling = policy.decide(&call);
    if ctx.json {
        print_json(&serde_json::json!({
            "decision": ruling.decision.as_str(),
            "rule": ruling.source.to_string(),
            "subject": call.subject(),
            "project_refused": refused,
        }))?;
    } else {
        let mut out = format!("{}: {}\n", ruling.decision.as_str(), ruling.source);
        if let Some(why) = refused {
            out.push_str(&format!(
                "the project's file is refused, so your policy alone applies: {why}\n"
            ));
        }
        print(&out)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The call's arguments as the tool gets them: a `bash` command (the words joined), a
/// path tool's path, or another tool's JSON object.
fn input_of(tool: &str, args: &[String]) -> Result<serde_json::Value, Failure> {
    let usage = |what: &str| {
        Failure::new(
            "invalid_argument",
            format!(
                "{what}: `shepherd approvals check -- bash \"git push origin main\"`, `-- write /etc/hosts`, or `-- TOOL '{{\"key\": \"value\"}}'`"
            ),
        )
    };
    match tool {
        "" => Err(usage("say which tool")),
        "bash" if args.is_empty() => Err(usage("give the command")),
        "bash" => Ok(serde_json::json!({ "command": args.join(" ") })),
        "write" | "edit" | "read" => match args {
            [path] => Ok(serde_json::json!({ "path": path })),
            _ => Err(usage(&format!("give the one path {tool} is called with"))),
        },
        _ => match args {
            [] => Ok(serde_json::json!({})),
            [json] => match serde_json::from_str::<serde_json::Value>(json) {
                Ok(v) if v.is_object() => Ok(v),
                _ => Err(usage(&format!("{tool}'s arguments are one JSON object"))),
            },
            _ => Err(usage(&format!("{tool}'s arguments are one JSON object"))),
        },
    }
}
