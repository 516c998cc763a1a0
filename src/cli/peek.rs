//! # `shepherd peek` and `shepherd diff`
//!
//! The human's looks at one session. `peek`: what it is doing now, as the core reads it:
//! the status and for how long, the call running, the last text and the last output's
//! tail. `diff`: what it changed (the core's `diff`), the patch on stdout for `git apply`
//! (a patch cut to fit is said on stderr, and the exit status is 1), or `--stat`. A
//! session on a linked host is named `gpu:train-7`; a name that fits several sessions or
//! none is explained as `shepherd send` explains it.

use std::process::ExitCode;

use shepherd_core::client::ClientError;
use shepherd_core::protocol::requests;

use super::{Ctx, Failure, print, print_json};

/// Run `shepherd peek SESSION`.
pub async fn run(ctx: &Ctx, selector: &str) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let (host, session) = super::split_host(selector);
    let reply = conn
        .try_call(requests::Peek {
            session: session.to_string(),
            host: host.map(str::to_string),
            ..Default::default()
        })
        .await?;
    match reply {
        Ok(mut peek) => {
            peek.host = peek.host.or(host.map(str::to_string));
            if ctx.json {
                print_json(&peek)?;
            } else {
                print(&format!("{}\n", shepherd_core::peek::text(&peek)))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(ClientError::Remote {
            code,
            message,
            details,
        }) => Err(super::send::explain(selector, code, &message, details).into()),
        Err(e) => Err(Failure::from_client(e, &conn.socket).into()),
    }
}

/// Run `shepherd diff SESSION [--stat]`.
pub async fn diff(ctx: &Ctx, selector: &str, stat: bool) -> anyhow::Result<ExitCode> {
    let mut conn = ctx.connect().await?;
    let (host, session) = super::split_host(selector);
    let reply = conn
        .try_call(requests::Diff {
            session: session.to_string(),
            host: host.map(str::to_string),
            ..Default::default()
        })
        .await?;
    let mut diff = match reply {
        Ok(diff) => diff,
        Err(ClientError::Remote {
            code,
            message,
            details,
        }) => return Err(super::send::explain(selector, code, &message, details).into()),
        Err(e) => return Err(Failure::from_client(e, &conn.socket).into()),
    };
    diff.host = diff.host.or(host.map(str::to_string));
    if ctx.json {
        print_json(&diff)?;
    } else if stat {
        let branch = diff.branch.as_deref().unwrap_or("a detached HEAD");
        print(&format!(
            "{} ({branch} against {} {}, in {}):\n{}",
            diff.name,
            diff.base_name,
            &diff.base[..diff.base.len().min(12)],
            diff.root,
            if diff.files == 0 {
                " no changes\n"
            } else {
                &diff.stat
            }
        ))?;
    } else {
        print(&diff.patch)?;
    }
    if diff.complete {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "shepherd: the patch of {} is cut short (too large to send whole, or not UTF-8 text): \
         it does not apply; `git diff {}` in {} shows the tracked part",
        diff.name, diff.base, diff.root
    );
    Ok(ExitCode::FAILURE)
}
