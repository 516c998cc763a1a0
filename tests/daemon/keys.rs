//! Idempotency keys on `ask` and `report` against the real daemon: the same ask or report
//! sent again with its key (a queued one resent after a lost reply, over a new connection
//! or after a core restart) is stored and announced once; the reply is the first one's.

use std::time::Duration;

use anyhow::Result;
use shepherd_core::protocol::{ErrorCode, ServerMsg, requests};
use shepherd_harness::Core;

const WAIT: Duration = Duration::from_secs(10);

fn ask(key: Option<&str>) -> requests::Ask {
    requests::Ask {
        id: 0,
        question: "Deploy?".into(),
        options: vec!["yes".into(), "no".into()],
        details: None,
        key: key.map(str::to_string),
    }
}

#[tokio::test]
async fn a_keyed_ask_or_report_sent_twice_is_stored_once() -> Result<()> {
    let core = Core::start().await?;
    let mut sub = core.subscriber().await?;
    let mut pi = core.pi("key-1", "keeper").await?;
    let first = pi.client.call(ask(Some("k-ask-1"))).await?;
    // Resent over a new connection (the extension reconnected): the same ask.
    drop(pi);
    let mut pi = core.pi("key-1", "keeper").await?;
    let again = pi.client.call(ask(Some("k-ask-1"))).await?;
    assert_eq!(again.id, first.id);
    let other = pi.client.call(ask(Some("k-ask-2"))).await?;
    assert_ne!(other.id, first.id);
    let unkeyed = pi.client.call(ask(None)).await?;
    assert_ne!(unkeyed.id, other.id);
    let asks = core.cli_json(&["asks"])?;
    assert_eq!(asks.as_array().map(Vec::len), Some(3), "{asks:#}");

    let r1 = pi
        .client
        .call(requests::Report {
            id: 0,
            text: "done".into(),
            key: Some("k-rep".into()),
        })
        .await?;
    let r2 = pi
        .client
        .call(requests::Report {
            id: 0,
            text: "done".into(),
            key: Some("k-rep".into()),
        })
        .await?;
    assert_eq!((r1.id, r1.created_at), (r2.id, r2.created_at));

    // Subscribers saw each ask and the report once: everything before a last report (the
    // fence: events reach a subscriber in the order they were stored).
    let fence = pi
        .client
        .call(requests::Report {
            id: 0,
            text: "fence".into(),
            key: Some("k-fence".into()),
        })
        .await?;
    let mut opened = Vec::new();
    let mut reports = 0;
    loop {
        match tokio::time::timeout(WAIT, sub.next_event()).await?? {
            ServerMsg::AskOpened { ask } => opened.push(ask.id),
            ServerMsg::ReportPosted { report } if report.id == fence.id => break,
            ServerMsg::ReportPosted { .. } => reports += 1,
            _ => {}
        }
    }
    assert_eq!(opened, [first.id, other.id, unkeyed.id]);
    assert_eq!(reports, 1);

    // A bad key is refused, saying what a key may be.
    let err = pi.client.call(ask(Some(""))).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::InvalidArgument), "{err}");
    assert!(err.to_string().contains("1-128 characters"), "{err}");
    Ok(())
}
