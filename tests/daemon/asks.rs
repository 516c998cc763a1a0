//! Asks end to end against the real daemon: a Pi session asks, two humans answer at the
//! same moment, exactly one wins and the other is told who did, and the answer reaches
//! the asking session once.

use std::time::Duration;

use shepherd_core::protocol::{AskState, ClientKind, DeliveryKind, ErrorCode, requests};
use shepherd_harness::Core;

#[tokio::test]
async fn two_concurrent_answers_exactly_one_wins() -> anyhow::Result<()> {
    let core = Core::start().await?;
    let mut pi = core.pi("sess-ask-1", "asker").await?;
    let ask = pi
        .client
        .call(requests::Ask {
            question: "Squash before merging?".into(),
            options: vec!["squash".into(), "keep".into()],
            ..Default::default()
        })
        .await?;
    assert_eq!(ask.state, AskState::Open);

    let listed = core.cli_json(&["asks"])?;
    assert_eq!(listed[0]["question"], "Squash before merging?");
    assert_eq!(listed[0]["session_name"], "asker");
    assert_eq!(listed[0]["state"], "open");

    let mut a = core.client(ClientKind::Cli).await?;
    let mut b = core.client(ClientKind::Bridge).await?;
    let ask_id = ask.id;
    let (ra, rb) = tokio::join!(
        a.answer(ask_id, "squash"),
        b.call(requests::Answer {
            id: 0,
            ask: ask_id,
            text: "keep".into(),
            by: Some("telegram:@alice".into()),
            host: None,
        }),
    );
    let (winner, loser) = match (ra, rb) {
        (Ok(w), Err(l)) => (w, l),
        (Err(l), Ok(w)) => (w, l),
        other => panic!("exactly one answer must win: {other:?}"),
    };
    let answered = winner;
    assert_eq!(loser.code(), Some(ErrorCode::AlreadyAnswered));
    assert!(
        loser
            .to_string()
            .contains(answered.answered_by.as_deref().unwrap()),
        "{loser}"
    );

    let delivery = pi.next_delivery(Duration::from_secs(5)).await?;
    assert_eq!(delivery.kind, DeliveryKind::Answer);
    assert_eq!(delivery.ask_id, Some(ask_id));
    assert_eq!(Some(delivery.text.clone()), answered.answer);
    pi.ack(&[delivery.id]).await?;

    let all = core.cli_json(&["asks", "--all"])?;
    assert_eq!(all[0]["state"], "answered");
    assert_eq!(all[0]["answer"], delivery.text.as_str());
    Ok(())
}

/// `list_asks {ask}`: just that ask, open and then answered, among others; an id the core
/// never gave lists nothing.
#[tokio::test]
async fn one_ask_is_listed_by_its_id_open_or_answered() -> anyhow::Result<()> {
    let core = Core::start().await?;
    let mut pi = core.pi("sess-ask-one", "asker").await?;
    let ask = |q: &str| requests::Ask {
        question: q.into(),
        ..Default::default()
    };
    let first = pi.client.call(ask("First?")).await?;
    let second = pi.client.call(ask("Second?")).await?;
    let mut bridge = core.client(ClientKind::Bridge).await?;
    let one = |ask| requests::ListAsks {
        ask: Some(ask),
        ..Default::default()
    };
    let listed = bridge.call(one(second.id)).await?;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(
        (listed[0].id, listed[0].question.as_str(), listed[0].state),
        (second.id, "Second?", AskState::Open)
    );
    bridge.answer(first.id, "yes").await?;
    let listed = bridge.call(one(first.id)).await?;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(
        (listed[0].state, listed[0].answer.as_deref()),
        (AskState::Answered, Some("yes"))
    );
    let none = bridge.call(one((second.id.get() + 100).into())).await?;
    assert!(none.is_empty(), "{none:?}");
    Ok(())
}
