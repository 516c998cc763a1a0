//! # `shepherd approvals check`
//!
//! Which rule decides a tool call, without running an agent: `shepherd approvals check --
//! bash "git push origin main"`, `-- write /etc/hosts`, `-- fetch '{"url": "…"}'`. The
//! policy is read as the core reads it (the config file, the environment) and, when the
//! directory (`--cwd`, else the current one) is in a git worktree, that project's
//! `.pi/shepherd.toml`; the answer is the decision, the rule that made it and, when the
//! project's file was refused, why. With `--json`: `{decision, rule, subject,
//! project_refused}`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use shepherd_core::approvals::{Call, Layer, Policy, ProjectPolicy, project_policy};

use super::{Ctx, Failure, print, print_json};

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
    let origin = match &loaded.file {
        Some(file) => file.display().to_string(),
        None => "the built-in defaults".to_string(),
    };
    let worktree = shepherd_core::git::repo::discover(&cwd)
        .root
        .map(PathBuf::from);
    let (project, refused) = match worktree.as_deref().map(project_policy) {
        Some(ProjectPolicy::Layer(layer)) => (Some(layer), None),
        Some(ProjectPolicy::Refused(why)) => (None, Some(why)),
        Some(ProjectPolicy::None) | None => (None, None),
    };
    let policy = Policy {
        user: Layer::user(&loaded.config.approvals, &origin),
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
