//! # `shepherd peek`
//!
//! What one session is doing now, as the core reads it (`peek`): the status and for how
//! long, the call running, the last text and the last output's tail. A session on a
//! linked host is named `gpu:train-7`; a name that fits several sessions or none is
//! explained as `shepherd send` explains it.

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
