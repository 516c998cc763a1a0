//! `unanswer` against the real daemon: an answer the session cannot have seen (it was
//! away when it was given, and still is) is taken back, the ask opens again and the text
//! reaches the session as a steer, exactly once; an answer that may have reached it (the
//! session connected then, or since) stays an answer with `already_delivered`.

use std::time::Duration;

use anyhow::Result;
use shepherd_core::client::{Client, ClientError};
use shepherd_core::protocol::{
    AskId, AskState, ClientKind, DeliveryKind, ErrorCode, ServerMsg, requests,
};
use shepherd_harness::{Core, Pi, next_event_where};

const WAIT: Duration = Duration::from_secs(10);

async fn ask(pi: &mut Pi, question: &str) -> Result<AskId> {
    let ask = pi
        .client
        .call(requests::Ask {
            id: 0,
            question: question.into(),
            options: vec!["ship".into(), "hold".into()],
            details: None,
            key: None,
        })
        .await?;
    Ok(ask.id)
}

async fn unanswer(
    client: &mut Client,
    ask: AskId,
) -> Result<shepherd_core::client::Unanswered, ClientError> {
    client
        .call(requests::Unanswer {
            ask,
            by: Some("telegram:@ada".into()),
            ..Default::default()
        })
        .await
}

async fn left(sub: &mut Client, id: &str) -> Result<()> {
    next_event_where(
        sub,
        WAIT,
        |m| matches!(m, ServerMsg::SessionLeft { session, .. } if session.id == id),
    )
    .await?;
    Ok(())
}

#[tokio::test]
async fn an_unseen_answer_becomes_a_steer_and_the_ask_opens_again() -> Result<()> {
    let core = Core::start().await?;
    let mut sub = core.subscriber().await?;
    let mut pi = core.pi("un-1", "away").await?;
    let ask_id = ask(&mut pi, "Deploy?").await?;
    drop(pi);
    left(&mut sub, "un-1").await?;

    let mut bridge = core.client(ClientKind::Bridge).await?;
    core.past_last_seen("un-1").await?;
    bridge.answer(ask_id, "go ahead and deploy").await?;
    let undone = unanswer(&mut bridge, ask_id).await?;
    assert_eq!(undone.ask.state, AskState::Open);
    assert_eq!(undone.ask.answer, None);
    assert_eq!(undone.session_name, "away");
    // Subscribers see it open again, as a new ask.
    next_event_where(
        &mut sub,
        WAIT,
        |m| matches!(m, ServerMsg::AskOpened { ask } if ask.id == ask_id),
    )
    .await?;
    let listed = core.cli_json(&["asks"])?;
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["id"] == ask_id.get()),
        "listed as open: {listed:#}"
    );

    // Back, the session gets the text once, as a steer from the human, and no answer.
    let mut pi = core.pi("un-1", "away").await?;
    assert_eq!(pi.pending, 1);
    let d = pi.next_delivery(WAIT).await?;
    assert_eq!(
        (d.kind, d.text.as_str(), d.from.name.as_str(), d.ask_id),
        (
            DeliveryKind::Steer,
            "go ahead and deploy",
            "telegram:@ada",
            None
        )
    );
    pi.ack(&[d.id]).await?;

    // Open again, it can be answered again; that answer reaches the connected session
    // at once, so it cannot be taken back.
    bridge.answer(ask_id, "ship").await?;
    let d = pi.next_delivery(WAIT).await?;
    assert_eq!((d.kind, d.text.as_str()), (DeliveryKind::Answer, "ship"));
    let err = unanswer(&mut bridge, ask_id).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::AlreadyDelivered), "{err}");
    assert!(
        err.to_string().contains("may have read the answer"),
        "{err}"
    );
    let ask = core.cli_json(&["asks", "--all"])?;
    let ask = ask
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == ask_id.get())
        .cloned();
    assert_eq!(ask.unwrap()["state"], "answered");

    // Even unacknowledged and with the session gone again: it may have read it.
    drop(pi);
    left(&mut sub, "un-1").await?;
    let err = unanswer(&mut bridge, ask_id).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::AlreadyDelivered), "{err}");
    Ok(())
}

#[tokio::test]
async fn an_answer_the_session_came_back_for_stays_an_answer() -> Result<()> {
    let core = Core::start().await?;
    let mut sub = core.subscriber().await?;
    let mut pi = core.pi("un-2", "roamer").await?;
    let ask_id = ask(&mut pi, "Merge?").await?;
    drop(pi);
    left(&mut sub, "un-2").await?;
    let mut cli = core.client(ClientKind::Cli).await?;
    cli.answer(ask_id, "ship").await?;
    // The session comes back (the answer is handed to it) and leaves without acking.
    let pi = core.pi("un-2", "roamer").await?;
    assert_eq!(pi.pending, 1);
    drop(pi);
    left(&mut sub, "un-2").await?;
    let err = unanswer(&mut cli, ask_id).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::AlreadyDelivered), "{err}");

    // Refusals say what is wrong.
    let mut pi = core.pi("un-3", "asker").await?;
    let open = ask(&mut pi, "Still open?").await?;
    let err = unanswer(&mut cli, open).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::InvalidArgument), "{err}");
    assert!(err.to_string().contains("is open"), "{err}");
    let err = unanswer(&mut cli, AskId::new(9999)).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::UnknownAsk), "{err}");
    let err = unanswer(&mut pi.client, open).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::Forbidden), "{err}");
    Ok(())
}
