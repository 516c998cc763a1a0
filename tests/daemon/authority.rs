//! The authority matrix against a real daemon: every edge request from a Lead, a Manager
//! and the Chief, each either carried out or refused with the code and reason that say what
//! was missing, and a refused request leaves nothing behind (no mail, no ask, no report, no
//! lease). One core, one repository with a linked worktree, sessions in each role.

use std::time::Duration;

use anyhow::Result;
use shepherd_core::client::{Client, ClientError};
use shepherd_core::protocol::{ClientKind, ErrorCode, Role, requests};
use shepherd_harness::git_repo::repo_with_worktree;
use shepherd_harness::{Core, Pi};

/// What the core answered: `Ok` or the refusal's code and `details.reason`.
type Outcome = Result<(), (ErrorCode, Option<String>)>;

fn outcome<T>(r: Result<T, ClientError>) -> Outcome {
    match r {
        Ok(_) => Ok(()),
        Err(ClientError::Remote { code, details, .. }) => Err((
            code,
            details.and_then(|d| d["reason"].as_str().map(str::to_string)),
        )),
        Err(e) => panic!("not a refusal: {e}"),
    }
}

/// One request of each edge kind from `pi`, aimed at `target` where it needs one.
async fn try_all(pi: &mut Pi, target: &str) -> Vec<(&'static str, Outcome)> {
    let c = &mut pi.client;
    vec![
        (
            "message_supervisor",
            outcome(
                c.call(requests::MessageSupervisor {
                    id: 0,
                    text: "m".into(),
                })
                .await,
            ),
        ),
        (
            "ask_supervisor",
            outcome(
                c.call(requests::AskSupervisor {
                    question: "q?".into(),
                    ..Default::default()
                })
                .await,
            ),
        ),
        (
            "list_staff",
            outcome(c.call(requests::ListStaff::default()).await),
        ),
        (
            "inspect_staff",
            outcome(
                c.call(requests::InspectStaff {
                    id: 0,
                    session: target.into(),
                })
                .await,
            ),
        ),
        (
            "message_staff",
            outcome(
                c.call(requests::MessageStaff {
                    id: 0,
                    session: target.into(),
                    text: "s".into(),
                })
                .await,
            ),
        ),
        (
            "list_peers",
            outcome(c.call(requests::ListPeers::default()).await),
        ),
        ("message_peer", outcome(c.message_peer(target, "p").await)),
        ("send", outcome(c.send_to(target, "x").await)),
    ]
}

fn ok() -> Outcome {
    Ok(())
}

fn no(code: ErrorCode, reason: Option<&str>) -> Outcome {
    Err((code, reason.map(str::to_string)))
}

/// Rows of the store that a refusal must not have added.
async fn footprint(core: &Core) -> Result<(usize, usize, usize, usize)> {
    let mut cli = core.client(ClientKind::Cli).await?;
    let asks = cli
        .call(requests::ListAsks {
            all: true,
            ..Default::default()
        })
        .await?
        .len();
    let reports = cli.call(requests::ListReports::default()).await?.len();
    let leases = cli.call(requests::ListRoles::default()).await?.len();
    let pending: u32 = cli
        .call(requests::ListSessions { id: 0, all: true })
        .await?
        .iter()
        .map(|s| s.pending_messages)
        .sum();
    Ok((asks, reports, leases, pending as usize))
}

async fn drain(pi: &mut Pi) -> Result<()> {
    pi.sync().await?;
    while let Ok(d) = pi.next_delivery(Duration::from_millis(100)).await {
        pi.ack(&[d.id]).await?;
    }
    pi.sync().await?;
    Ok(())
}

#[tokio::test]
async fn each_role_may_use_its_edges_and_is_refused_the_rest_with_nothing_changed() -> Result<()> {
    let core = Core::start().await?;
    let (app, linked) = repo_with_worktree(core.agent_dir(), "app", "fix")?;
    let hq = core.agent_dir().join("hq");
    std::fs::create_dir_all(&hq)?;
    let mut lead = Pi::register(&core.socket(), "lead", "lead", &linked).await?;
    let mut peer = Pi::register(&core.socket(), "peer", "peer", &linked).await?;
    let mut mgr = Pi::register(&core.socket(), "mgr", "mgr", &app).await?;
    let mut chief = Pi::register(&core.socket(), "chief", "chief", &hq).await?;
    mgr.client
        .call(requests::SetRole {
            id: 0,
            role: Role::Manager,
            ..Default::default()
        })
        .await?;
    chief
        .client
        .call(requests::SetRole {
            id: 0,
            role: Role::Chief,
            ..Default::default()
        })
        .await?;
    use ErrorCode::{Forbidden, UnknownSession};

    // A Lead: its supervisor edges and a fellow Lead; no staff, not the Manager as a peer.
    let lead_to_peer = try_all(&mut lead, "peer").await;
    let expected = [
        ok(),
        ok(),
        no(Forbidden, Some("not_manager_or_chief")),
        no(Forbidden, Some("not_manager_or_chief")),
        no(Forbidden, Some("not_manager_or_chief")),
        ok(),
        ok(),
        no(Forbidden, Some("direct_edges_only")),
    ];
    for ((what, got), want) in lead_to_peer.iter().zip(expected) {
        assert_eq!(got, &want, "lead → peer: {what}");
    }
    let lead_to_mgr = try_all(&mut lead, "mgr").await;
    assert_eq!(
        lead_to_mgr[6].1,
        no(UnknownSession, None),
        "a Manager is no Lead's peer"
    );

    // A Manager: staff tools on its Lead; Managers as peers, so a Lead is not one.
    let mgr_to_lead = try_all(&mut mgr, "lead").await;
    let expected = [
        ok(),
        ok(),
        ok(),
        ok(),
        ok(),
        ok(),
        no(UnknownSession, None),
        no(Forbidden, Some("direct_edges_only")),
    ];
    for ((what, got), want) in mgr_to_lead.iter().zip(expected) {
        assert_eq!(got, &want, "manager → lead: {what}");
    }

    // The Chief: staff tools on the Manager, not on the Manager's Lead; no supervisor, no peers.
    let chief_to_mgr = try_all(&mut chief, "mgr").await;
    let expected = [
        no(Forbidden, Some("chief")),
        ok(), // The Chief's ask goes to the human.
        ok(),
        ok(),
        ok(),
        no(Forbidden, Some("chief")),
        no(Forbidden, Some("chief")),
        no(Forbidden, Some("direct_edges_only")),
    ];
    for ((what, got), want) in chief_to_mgr.iter().zip(expected) {
        assert_eq!(got, &want, "chief → manager: {what}");
    }
    let chief_to_lead = try_all(&mut chief, "lead").await;
    assert_eq!(chief_to_lead[3].1, no(UnknownSession, None), "inspect");
    assert_eq!(chief_to_lead[4].1, no(UnknownSession, None), "message");

    // Refusals leave nothing behind: with every delivery read, a second round of only the
    // refused requests adds no ask, report, lease or mail.
    for pi in [&mut lead, &mut peer, &mut mgr, &mut chief] {
        drain(pi).await?;
    }
    let before = footprint(&core).await?;
    let c = &mut lead.client;
    assert!(c.call(requests::ListStaff::default()).await.is_err());
    assert!(c.message_peer("mgr", "no").await.is_err());
    assert!(c.message_peer("chief", "no").await.is_err());
    assert!(c.send_to("peer", "no").await.is_err());
    let c = &mut chief.client;
    assert!(
        c.call(requests::MessageSupervisor {
            id: 0,
            text: "no".into()
        })
        .await
        .is_err()
    );
    assert!(
        c.call(requests::MessageStaff {
            id: 0,
            session: "lead".into(),
            text: "no".into()
        })
        .await
        .is_err()
    );
    assert!(
        peer.client
            .call(requests::SetRole {
                id: 0,
                role: Role::Manager,
                ..Default::default()
            })
            .await
            .is_err(),
        "a linked worktree"
    );
    assert!(
        peer.client
            .call(requests::SetRole {
                id: 0,
                role: Role::Chief,
                ..Default::default()
            })
            .await
            .is_err(),
        "the Chief is connected"
    );
    assert_eq!(footprint(&core).await?, before);

    // The human's clients list everyone's staff tree but hold no role themselves.
    let mut cli: Client = core.client(ClientKind::Cli).await?;
    let tree = cli.call(requests::ListStaff::default()).await?;
    assert_eq!(tree.len(), 4);
    let refused = outcome(
        cli.call(requests::SetRole {
            id: 0,
            role: Role::Chief,
            ..Default::default()
        })
        .await,
    );
    assert_eq!(refused.unwrap_err().0, ErrorCode::NotRegistered);
    Ok(())
}
