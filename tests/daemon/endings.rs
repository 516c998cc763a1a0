//! Endings and interrupts against the real daemon: a session that says `bye` leaves as
//! `closed`, one that vanishes as `lost` with what it was doing, one that is coming
//! straight back (`/reload`) with no reason at all; `interrupt` is stored mail of kind
//! `interrupt` that says what the session was doing, waits for a session that is away,
//! and is the human's (a Pi session may not send it).

use std::time::Duration;

use anyhow::Result;
use shepherd_core::client::Client;
use shepherd_core::protocol::{
    ClientKind, ClientMsg, DeliveryKind, ErrorCode, LeaveReason, ServerMsg, SessionStatus, requests,
};
use shepherd_harness::{Core, next_event_where};

const WAIT: Duration = Duration::from_secs(10);

/// The next `session_left` of `id`: its reason and last status.
async fn left(sub: &mut Client, id: &str) -> Result<(Option<LeaveReason>, Option<SessionStatus>)> {
    let msg = next_event_where(
        sub,
        WAIT,
        |m| matches!(m, ServerMsg::SessionLeft { session, .. } if session.id == id),
    )
    .await?;
    let ServerMsg::SessionLeft {
        reason,
        last_status,
        session,
    } = msg
    else {
        unreachable!()
    };
    assert_eq!(
        session.status, "idle",
        "the record is idle once it has left"
    );
    Ok((reason, last_status))
}

#[tokio::test]
async fn bye_means_closed_silence_means_lost_and_returning_means_no_ending() -> Result<()> {
    let core = Core::start().await?;
    let mut sub = core.subscriber().await?;

    let mut pi = core.pi("s-closed", "closing").await?;
    pi.client
        .send(&ClientMsg::Bye(requests::Bye { returning: false }))
        .await?;
    drop(pi);
    assert_eq!(
        left(&mut sub, "s-closed").await?,
        (Some(LeaveReason::Closed), Some(SessionStatus::Idle))
    );

    let mut pi = core.pi("s-lost", "crashing").await?;
    pi.client
        .call(requests::Update {
            status: Some("tool:bash".into()),
            ..Default::default()
        })
        .await?;
    drop(pi);
    assert_eq!(
        left(&mut sub, "s-lost").await?,
        (
            Some(LeaveReason::Lost),
            Some(SessionStatus::parse("tool:bash"))
        )
    );

    let mut pi = core.pi("s-reload", "reloading").await?;
    pi.client
        .send(&ClientMsg::Bye(requests::Bye { returning: true }))
        .await?;
    drop(pi);
    let (reason, _) = left(&mut sub, "s-reload").await?;
    assert_eq!(reason, None, "a /reload is no ending");

    Ok(())
}

#[tokio::test]
async fn interrupt_is_mail_that_says_what_the_session_was_doing() -> Result<()> {
    let core = Core::start().await?;
    let mut pi = core.pi("s-int", "busy").await?;
    pi.client
        .call(requests::Update {
            status: Some("tool:bash".into()),
            ..Default::default()
        })
        .await?;
    let mut bridge = core.client(ClientKind::Bridge).await?;
    let reply = bridge
        .call(requests::Interrupt {
            session: "busy".into(),
            then: Some("  run the tests instead ".into()),
            by: Some("telegram:@ada".into()),
            ..Default::default()
        })
        .await?;
    assert!(reply.connected);
    assert_eq!(reply.was, "tool:bash");
    assert_eq!(reply.session_name, "busy");
    let d = pi.next_delivery(WAIT).await?;
    assert_eq!(d.id, reply.message_id);
    assert_eq!(d.kind, DeliveryKind::Interrupt);
    assert_eq!(d.text, "run the tests instead");
    assert_eq!(d.from.name, "telegram:@ada");
    pi.ack(&[d.id]).await?;

    // Idle: nothing to abort, said so; no steer: empty text.
    pi.client
        .call(requests::Update {
            status: Some("idle".into()),
            ..Default::default()
        })
        .await?;
    let mut cli = core.client(ClientKind::Cli).await?;
    let reply = cli
        .call(requests::Interrupt {
            session: "busy".into(),
            ..Default::default()
        })
        .await?;
    assert_eq!(reply.was, "idle");
    let d = pi.next_delivery(WAIT).await?;
    assert_eq!((d.kind, d.text.as_str()), (DeliveryKind::Interrupt, ""));
    assert_eq!(d.from.name, "cli");
    pi.ack(&[d.id]).await?;

    // A Pi session may not interrupt another.
    let mut other = core.pi("s-other", "other").await?;
    let err = other
        .client
        .call(requests::Interrupt {
            session: "busy".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::Forbidden), "{err}");

    // Away: stored, and delivered on its return.
    drop(pi);
    let reply = cli
        .call(requests::Interrupt {
            session: "busy".into(),
            then: Some("when you are back, rebase".into()),
            ..Default::default()
        })
        .await?;
    assert!(!reply.connected);
    let mut pi = core.pi("s-int", "busy").await?;
    let d = pi.next_delivery(WAIT).await?;
    assert_eq!(
        (d.kind, d.text.as_str()),
        (DeliveryKind::Interrupt, "when you are back, rebase")
    );

    // An unknown session is refused with the usual selector error.
    let err = cli
        .call(requests::Interrupt {
            session: "nobody".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::UnknownSession), "{err}");
    Ok(())
}

#[tokio::test]
async fn shepherd_stop_with_a_session_interrupts_it_and_without_one_stops_the_core() -> Result<()> {
    let mut core = Core::start().await?;
    let mut pi = core.pi("s-cli", "cli-target").await?;
    pi.client
        .call(requests::Update {
            status: Some("thinking".into()),
            ..Default::default()
        })
        .await?;
    let out = core.cli_json(&["stop", "cli-target", "--then", "commit what you have"])?;
    assert_eq!(out["was"], "thinking", "{out}");
    assert_eq!(out["connected"], true, "{out}");
    let d = pi.next_delivery(WAIT).await?;
    assert_eq!(
        (d.kind, d.text.as_str(), d.from.name.as_str()),
        (DeliveryKind::Interrupt, "commit what you have", "cli")
    );
    let text = core.cli(&["stop", "cli-target"]);
    let said = String::from_utf8_lossy(&text.stdout);
    assert!(
        said.contains("interrupting cli-target (it was thinking)"),
        "{said}"
    );
    let unknown = core.cli(&["stop", "nobody"]);
    assert!(!unknown.status.success());
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("no session matches \"nobody\""),
        "{}",
        String::from_utf8_lossy(&unknown.stderr)
    );
    // No session: the core itself stops, as before.
    let stopped = core.cli(&["stop"]);
    assert!(stopped.status.success());
    assert!(
        String::from_utf8_lossy(&stopped.stdout).contains("stopped the core"),
        "{}",
        String::from_utf8_lossy(&stopped.stdout)
    );
    let _ = core.terminate();
    Ok(())
}

#[tokio::test]
async fn a_core_that_stops_announces_no_endings() -> Result<()> {
    let mut core = Core::start().await?;
    let mut sub = core.subscriber().await?;
    let _a = core.pi("s-stay-a", "stays-a").await?;
    let _b = core.pi("s-stay-b", "stays-b").await?;
    core.terminate()?;
    // Everything the subscriber hears until its connection closes.
    loop {
        match tokio::time::timeout(WAIT, sub.next_event()).await {
            Ok(Ok(ServerMsg::SessionLeft {
                session, reason, ..
            })) => {
                assert_eq!(reason, None, "{} left as if it ended", session.name);
            }
            Ok(Ok(_)) => {}
            Ok(Err(_)) => break,
            Err(_) => anyhow::bail!("the subscriber's connection did not close"),
        }
    }
    Ok(())
}
