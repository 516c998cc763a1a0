//! Roles against a real daemon: who may take the Manager and Chief leases and from where,
//! what each role may do along which edge (every refusal says what was missing and changes
//! nothing), lease races, leases across a kill -9, an ask addressed to a Manager that
//! outlives the Manager, and the race between the addressed supervisor and the phone.

use std::path::Path;
use std::time::Duration;

use anyhow::{Result, bail, ensure};
use serde_json::Value;
use shepherd_core::client::Client;
use shepherd_core::protocol::{
    AskState, ClientKind, DeliveryKind, EdgeKind, ErrorCode, Role, ServerMsg, Superior, requests,
};
use shepherd_harness::git_repo::repo_with_worktree;
use shepherd_harness::{Core, Pi, error_code, error_details, next_event_where};

const WAIT: Duration = Duration::from_secs(10);

async fn set_role(pi: &mut Pi, role: Role) -> Result<shepherd_core::client::RoleSet> {
    Ok(pi
        .client
        .call(requests::SetRole {
            role,
            ..Default::default()
        })
        .await?)
}

async fn refusal(pi: &mut Pi, role: Role) -> Result<(ErrorCode, String, Value)> {
    match pi
        .client
        .call(requests::SetRole {
            role,
            ..Default::default()
        })
        .await
    {
        Ok(granted) => bail!("{role:?} was granted: {granted:?}"),
        Err(e) => {
            let e = anyhow::Error::from(e);
            Ok((
                error_code(&e).unwrap_or(ErrorCode::Internal),
                e.to_string(),
                error_details(&e).unwrap_or(Value::Null),
            ))
        }
    }
}

async fn leases(core: &Core) -> Result<Vec<shepherd_core::protocol::Lease>> {
    let mut cli = core.client(ClientKind::Cli).await?;
    Ok(cli.call(requests::ListRoles::default()).await?)
}

async fn code_of<T: std::fmt::Debug>(
    call: impl std::future::Future<Output = Result<T, shepherd_core::client::ClientError>>,
) -> Result<(ErrorCode, String)> {
    match call.await {
        Ok(v) => bail!("expected a refusal, got {v:?}"),
        Err(e) => Ok((e.code().unwrap_or(ErrorCode::Internal), e.to_string())),
    }
}

async fn pi_in(core: &Core, id: &str, cwd: &Path) -> Result<Pi> {
    Pi::register(&core.socket(), id, id, cwd).await
}

#[tokio::test]
async fn leases_are_granted_from_the_right_place_once_and_refusals_say_why() -> Result<()> {
    let core = Core::start().await?;
    let (app, linked) = repo_with_worktree(core.agent_dir(), "app", "fix-login")?;
    let plain = core.agent_dir().join("plain");
    std::fs::create_dir_all(&plain)?;

    let mut outside = pi_in(&core, "outside", &plain).await?;
    let (code, msg, details) = refusal(&mut outside, Role::Manager).await?;
    assert_eq!(code, ErrorCode::RoleRefused);
    assert_eq!(details["reason"], "not_a_repository", "{msg}");
    assert!(msg.contains("primary worktree"), "{msg}");

    let mut lead = pi_in(&core, "lead", &linked).await?;
    let (_, msg, details) = refusal(&mut lead, Role::Manager).await?;
    assert_eq!(details["reason"], "linked_worktree", "{msg}");
    assert!(msg.contains("linked worktree of app"), "{msg}");

    let mut mgr = pi_in(&core, "mgr", &app).await?;
    let granted = set_role(&mut mgr, Role::Manager).await?;
    assert_eq!(granted.session.role, Role::Manager);
    assert_eq!(granted.previous, Role::Lead);
    let lease = granted.lease.expect("a lease");
    assert_eq!(lease.project.as_deref(), Some("app"));
    assert_eq!(lease.session_id, "mgr");

    // A second session in the primary worktree: the lease is held, and the holder named.
    let mut second = pi_in(&core, "second", &app.join(".")).await?;
    let (_, msg, details) = refusal(&mut second, Role::Manager).await?;
    assert_eq!(details["reason"], "held", "{msg}");
    assert_eq!(details["holder"]["id"], "mgr");
    assert!(msg.contains("mgr"), "{msg}");

    // A Manager cannot become the Chief; a Lead can, once.
    let (_, msg, details) = refusal(&mut mgr, Role::Chief).await?;
    assert_eq!(details["reason"], "wrong_role", "{msg}");
    let chief = set_role(&mut outside, Role::Chief).await?;
    assert_eq!(chief.session.role, Role::Chief);
    let (_, _, details) = refusal(&mut second, Role::Chief).await?;
    assert_eq!(details["reason"], "held");
    let (_, msg, details) = refusal(&mut outside, Role::Manager).await?;
    assert_eq!(details["reason"], "wrong_role", "{msg}");

    // Claiming a granted role by `update` is refused too; a Lead's supervisor hint is not.
    let (code, msg) = code_of(pi_update_role(&mut second, Role::Manager)).await?;
    assert_eq!(code, ErrorCode::InvalidArgument, "{msg}");
    assert!(msg.contains("set_role"), "{msg}");

    // Nothing a refusal touched changed.
    let held = leases(&core).await?;
    let holders: Vec<(Role, &str)> = held
        .iter()
        .map(|l| (l.role, l.session_id.as_str()))
        .collect();
    assert_eq!(
        holders,
        vec![(Role::Chief, "outside"), (Role::Manager, "mgr")]
    );
    assert!(held.iter().all(|l| l.connected));

    // Leaving restores Lead and frees the lease for the next one.
    let left = set_role(&mut mgr, Role::Lead).await?;
    assert_eq!(
        (left.previous, left.session.role),
        (Role::Manager, Role::Lead)
    );
    assert!(left.lease.is_none());
    assert_eq!(
        set_role(&mut second, Role::Manager).await?.session.role,
        Role::Manager
    );
    Ok(())
}

fn pi_update_role(
    pi: &mut Pi,
    role: Role,
) -> impl std::future::Future<
    Output = Result<shepherd_core::protocol::SessionInfo, shepherd_core::client::ClientError>,
> + '_ {
    pi.client.call(requests::Update {
        role: Some(role),
        ..Default::default()
    })
}

#[tokio::test]
async fn two_claims_at_once_make_exactly_one_manager() -> Result<()> {
    let core = Core::start().await?;
    let (app, _) = repo_with_worktree(core.agent_dir(), "app", "x")?;
    for round in 0..5 {
        let mut a = pi_in(&core, &format!("a{round}"), &app).await?;
        let mut b = pi_in(&core, &format!("b{round}"), &app).await?;
        let (ra, rb) = tokio::join!(
            a.client.call(requests::SetRole {
                id: 0,
                role: Role::Manager,
                ..Default::default()
            }),
            b.client.call(requests::SetRole {
                id: 0,
                role: Role::Manager,
                ..Default::default()
            }),
        );
        let winners = [ra.is_ok(), rb.is_ok()].iter().filter(|w| **w).count();
        ensure!(winners == 1, "round {round}: {ra:?} / {rb:?}");
        let loser = if ra.is_ok() { rb } else { ra };
        assert_eq!(loser.unwrap_err().code(), Some(ErrorCode::RoleRefused));
        let winner = if winners == 1 && a.client.ping().await.is_ok() {
            leases(&core).await?[0].session_id.clone()
        } else {
            bail!("no winner")
        };
        // The winner leaves so the next round starts free.
        let mut w = if winner == a.session_id { a } else { b };
        set_role(&mut w, Role::Lead).await?;
    }
    Ok(())
}

#[tokio::test]
async fn a_lease_survives_kill_9_and_a_holder_that_is_away_loses_it_to_the_next() -> Result<()> {
    let mut core = Core::start().await?;
    let (app, _) = repo_with_worktree(core.agent_dir(), "app", "x")?;
    let mut mgr = pi_in(&core, "mgr", &app).await?;
    set_role(&mut mgr, Role::Manager).await?;
    drop(mgr);
    core.kill9();
    core.restart().await?;

    // The holder comes back into its role by registering: the lease is the record.
    let (mgr, info) = Pi::register_full(
        &core.socket(),
        shepherd_harness::registration("mgr", "mgr", &app),
    )
    .await?;
    assert_eq!(info.role, Role::Manager, "kept across kill -9");
    drop(mgr);

    // Away, it can be replaced; on its return it is a Lead and can see who holds it.
    let mut next = pi_in(&core, "next", &app).await?;
    let mut sub = core.subscriber().await?;
    set_role(&mut next, Role::Manager).await?;
    let changed = next_event_where(
        &mut sub,
        WAIT,
        |m| matches!(m, ServerMsg::RoleChanged { session, .. } if session.id == "mgr"),
    )
    .await?;
    let ServerMsg::RoleChanged { session, previous } = changed else {
        unreachable!()
    };
    assert_eq!((previous, session.role), (Role::Manager, Role::Lead));
    let (mut back, info) = Pi::register_full(
        &core.socket(),
        shepherd_harness::registration("mgr", "mgr", &app),
    )
    .await?;
    assert_eq!(info.role, Role::Lead);
    let (_, msg, details) = refusal(&mut back, Role::Manager).await?;
    assert_eq!(details["holder"]["id"], "next", "{msg}");
    Ok(())
}

#[tokio::test]
async fn edges_go_where_the_leases_say_and_nowhere_else() -> Result<()> {
    let core = Core::start().await?;
    let (app, linked) = repo_with_worktree(core.agent_dir(), "app", "fix-login")?;
    let (other, _) = repo_with_worktree(core.agent_dir(), "other", "y")?;
    let mut sub = core.subscriber().await?;
    let mut lead = pi_in(&core, "lead", &linked).await?;
    let mut loner = pi_in(&core, "loner", &other).await?;

    // Nobody above: message_supervisor becomes a report for the human.
    let routed = lead
        .client
        .call(requests::MessageSupervisor {
            id: 0,
            text: "tests need a database".into(),
        })
        .await?;
    assert_eq!(routed.to.to, Superior::Human);
    assert!(routed.report_id.is_some() && routed.message_id.is_none());
    next_event_where(&mut sub, WAIT, |m| {
        matches!(m, ServerMsg::ReportPosted { report } if report.text == "tests need a database")
    })
    .await?;

    // A Chief and a Manager of app: the Lead in app's worktree reports to the Manager, the
    // Lead in `other` (no Manager) to the Chief, the Manager to the Chief.
    let plain = core.agent_dir().join("hq");
    std::fs::create_dir_all(&plain)?;
    let mut chief = pi_in(&core, "chief", &plain).await?;
    set_role(&mut chief, Role::Chief).await?;
    let mut mgr = pi_in(&core, "mgr", &app).await?;
    set_role(&mut mgr, Role::Manager).await?;

    let routed = lead
        .client
        .call(requests::MessageSupervisor {
            id: 0,
            text: "blocked on the schema".into(),
        })
        .await?;
    assert_eq!(routed.to.to, Superior::Manager);
    assert_eq!(routed.to.session_id.as_deref(), Some("mgr"));
    let d = mgr.next_delivery(WAIT).await?;
    assert_eq!(d.kind, DeliveryKind::SupervisorMessage);
    assert!(
        d.text.contains("blocked on the schema") && d.text.contains("lead"),
        "{}",
        d.text
    );
    assert_eq!(d.from.session_id.as_deref(), Some("lead"));
    let edge = next_event_where(&mut sub, WAIT, |m| {
        matches!(m, ServerMsg::EdgeMessaged { .. })
    })
    .await?;
    let ServerMsg::EdgeMessaged { message } = edge else {
        unreachable!()
    };
    assert_eq!(message.kind, EdgeKind::Supervisor);
    assert_eq!(
        (message.from_id.as_str(), message.to_id.as_str()),
        ("lead", "mgr")
    );
    assert_eq!(message.to_role, Role::Manager);
    assert_eq!(message.text, "blocked on the schema");

    let routed = loner
        .client
        .call(requests::MessageSupervisor {
            id: 0,
            text: "done with y".into(),
        })
        .await?;
    assert_eq!(routed.to.session_id.as_deref(), Some("chief"));
    assert_eq!(
        chief.next_delivery(WAIT).await?.kind,
        DeliveryKind::SupervisorMessage
    );
    let routed = mgr
        .client
        .call(requests::MessageSupervisor {
            id: 0,
            text: "app is on track".into(),
        })
        .await?;
    assert_eq!(routed.to.to, Superior::Chief);
    assert_eq!(
        chief.next_delivery(WAIT).await?.from.session_id.as_deref(),
        Some("mgr")
    );

    // Staff: the Manager's is the Lead in its repository; the Chief's the Manager and the
    // Lead without a Manager. Each steers its own and nobody else's.
    let staff = mgr.client.call(requests::ListStaff::default()).await?;
    let ids: Vec<&str> = staff.iter().map(|m| m.session.id.as_str()).collect();
    assert_eq!(ids, vec!["lead"]);
    let staff = chief.client.call(requests::ListStaff::default()).await?;
    let mut ids: Vec<&str> = staff.iter().map(|m| m.session.id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, vec!["loner", "mgr"]);

    let sent = mgr
        .client
        .call(requests::MessageStaff {
            id: 0,
            session: "lead".into(),
            text: "stop after the tests pass".into(),
        })
        .await?;
    assert!(sent.connected);
    let d = lead.next_delivery(WAIT).await?;
    assert_eq!(d.kind, DeliveryKind::StaffMessage);
    assert!(d.text.contains("manager of app") && d.text.ends_with("stop after the tests pass"));
    let (code, msg) = code_of(mgr.client.call(requests::MessageStaff {
        id: 0,
        session: "loner".into(),
        text: "not yours".into(),
    }))
    .await?;
    assert_eq!(code, ErrorCode::UnknownSession, "outside its staff: {msg}");
    let (code, _) = code_of(chief.client.call(requests::MessageStaff {
        id: 0,
        session: "lead".into(),
        text: "the Manager's, not the Chief's".into(),
    }))
    .await?;
    assert_eq!(code, ErrorCode::UnknownSession);
    let (code, msg) = code_of(lead.client.call(requests::ListStaff::default())).await?;
    assert_eq!(code, ErrorCode::Forbidden, "{msg}");
    assert!(msg.contains("Manager or the Chief"), "{msg}");

    // The staff view is bounded and names the session.
    let view = mgr
        .client
        .call(requests::InspectStaff {
            id: 0,
            session: "lead".into(),
        })
        .await?;
    assert_eq!(view.session_id, "lead");
    assert!(view.text.len() <= 16 * 1024);

    // Peers: Lead to Lead; never the Chief, and the Chief has none.
    let peers = lead.client.call(requests::ListPeers::default()).await?;
    let ids: Vec<&str> = peers.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, vec!["loner"]);
    lead.client
        .message_peer("loner", "I touch the schema")
        .await?;
    let d = loner.next_delivery(WAIT).await?;
    assert_eq!(d.kind, DeliveryKind::PeerMessage);
    assert_eq!(d.text, "Peer message from lead (lead): I touch the schema");
    let (code, _) = code_of(lead.client.message_peer("chief", "hi")).await?;
    assert_eq!(code, ErrorCode::UnknownSession, "never to a Chief");
    let (code, _) = code_of(lead.client.message_peer("mgr", "hi")).await?;
    assert_eq!(
        code,
        ErrorCode::UnknownSession,
        "a Manager is no Lead's peer"
    );
    let (code, _) = code_of(chief.client.call(requests::ListPeers::default())).await?;
    assert_eq!(code, ErrorCode::Forbidden);

    // A Pi session's plain send is the human's, refused.
    let (code, msg) = code_of(lead.client.send_to("loner", "psst")).await?;
    assert_eq!(code, ErrorCode::Forbidden);
    assert!(msg.contains("message_peer"), "{msg}");
    Ok(())
}

async fn ask_supervisor(pi: &mut Pi, question: &str) -> Result<shepherd_core::protocol::Ask> {
    Ok(pi
        .client
        .call(requests::AskSupervisor {
            id: 0,
            question: question.into(),
            ..Default::default()
        })
        .await?)
}

async fn answer(
    client: &mut Client,
    ask: shepherd_core::protocol::AskId,
    text: &str,
) -> Result<shepherd_core::protocol::Ask, shepherd_core::client::ClientError> {
    client
        .call(requests::Answer {
            id: 0,
            ask,
            text: text.into(),
            by: Some("telegram:@ada".into()),
            host: None,
        })
        .await
}

#[tokio::test]
async fn an_ask_to_the_manager_role_outlives_the_manager_and_is_answered_once() -> Result<()> {
    let core = Core::start().await?;
    let (app, linked) = repo_with_worktree(core.agent_dir(), "app", "fix-login")?;
    let mut lead = pi_in(&core, "lead", &linked).await?;
    let mut first = pi_in(&core, "first", &app).await?;
    set_role(&mut first, Role::Manager).await?;

    let ask = ask_supervisor(&mut lead, "Rebase or merge?").await?;
    let to = ask.to.clone().expect("addressed");
    assert_eq!(
        (to.role, to.project.as_deref()),
        (Role::Manager, Some("app"))
    );
    let d = first.next_delivery(WAIT).await?;
    assert_eq!((d.kind, d.ask_id), (DeliveryKind::Ask, Some(ask.id)));
    assert!(d.text.contains("answer_staff"), "{}", d.text);

    // Another session cannot answer for the role; the asker neither.
    let mut stranger = pi_in(&core, "stranger", &linked).await?;
    let (code, msg) = code_of(answer(&mut stranger.client, ask.id, "merge")).await?;
    assert_eq!(code, ErrorCode::Forbidden, "{msg}");

    // The Manager leaves without answering; the next Manager gets the ask, once.
    set_role(&mut first, Role::Lead).await?;
    let mut second = pi_in(&core, "second", &app).await?;
    set_role(&mut second, Role::Manager).await?;
    let d = second.next_delivery(WAIT).await?;
    assert_eq!((d.kind, d.ask_id), (DeliveryKind::Ask, Some(ask.id)));
    second.ack(&[d.id]).await?;
    let (code, _) = code_of(answer(&mut first.client, ask.id, "too late")).await?;
    assert_eq!(code, ErrorCode::Forbidden, "no longer the Manager");

    let answered = answer(&mut second.client, ask.id, "rebase").await?;
    assert_eq!(answered.state, AskState::Answered);
    assert_eq!(
        answered.answered_by.as_deref(),
        Some("manager of app second")
    );
    let d = lead.next_delivery(WAIT).await?;
    assert_eq!((d.kind, d.text.as_str()), (DeliveryKind::Answer, "rebase"));
    lead.ack(&[d.id]).await?;
    // Exactly one answer: nothing more for the Lead, and nothing for the old Manager.
    lead.sync().await?;
    assert!(
        lead.next_delivery(Duration::from_millis(300))
            .await
            .is_err()
    );
    Ok(())
}

#[tokio::test]
async fn the_phone_and_the_manager_race_to_answer_and_both_sides_hear_the_winner() -> Result<()> {
    let core = Core::start().await?;
    let (app, linked) = repo_with_worktree(core.agent_dir(), "app", "fix-login")?;
    let mut mgr = pi_in(&core, "mgr", &app).await?;
    set_role(&mut mgr, Role::Manager).await?;
    let mut phone = core.client(ClientKind::Bridge).await?;
    let mut sub = core.subscriber().await?;
    for round in 0..6 {
        let mut lead = pi_in(&core, &format!("lead{round}"), &linked).await?;
        let ask = ask_supervisor(&mut lead, &format!("ship {round}?")).await?;
        let opened = next_event_where(
            &mut sub,
            WAIT,
            |m| matches!(m, ServerMsg::AskOpened { ask: a } if a.id == ask.id),
        )
        .await?;
        let ServerMsg::AskOpened { ask: shown } = opened else {
            unreachable!()
        };
        assert_eq!(
            shown.to.as_ref().map(|t| t.role),
            Some(Role::Manager),
            "tagged for the phone"
        );
        let d = mgr.next_delivery(WAIT).await?;
        mgr.ack(&[d.id]).await?;
        let (by_mgr, by_phone) = tokio::join!(
            answer(&mut mgr.client, ask.id, "manager says yes"),
            answer(&mut phone, ask.id, "phone says no"),
        );
        ensure!(
            by_mgr.is_ok() != by_phone.is_ok(),
            "round {round}: exactly one wins: {by_mgr:?} / {by_phone:?}"
        );
        let loser = by_mgr.as_ref().err().or(by_phone.as_ref().err()).unwrap();
        assert_eq!(loser.code(), Some(ErrorCode::AlreadyAnswered));
        let winner_text = if by_mgr.is_ok() {
            "manager says yes"
        } else {
            "phone says no"
        };
        let d = lead.next_delivery(WAIT).await?;
        assert_eq!(d.text, winner_text, "the asker gets the winning answer");
        lead.ack(&[d.id]).await?;
        lead.sync().await?;
        assert!(
            lead.next_delivery(Duration::from_millis(200))
                .await
                .is_err(),
            "once"
        );
        // The phone hears it through ask_answered; the Manager, when the phone won, by notice.
        let answered = next_event_where(
            &mut sub,
            WAIT,
            |m| matches!(m, ServerMsg::AskAnswered { ask: a } if a.id == ask.id),
        )
        .await?;
        let ServerMsg::AskAnswered { ask: a } = answered else {
            unreachable!()
        };
        assert_eq!(a.answer.as_deref(), Some(winner_text));
        if by_phone.is_ok() {
            let n = mgr.next_delivery(WAIT).await?;
            assert_eq!(n.kind, DeliveryKind::Notice);
            assert!(
                n.text.contains("telegram:@ada") && n.text.contains("phone says no"),
                "{}",
                n.text
            );
            mgr.ack(&[n.id]).await?;
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_holder_that_was_away_gets_the_answer_as_a_notice_not_the_answered_ask() -> Result<()> {
    let core = Core::start().await?;
    let (app, linked) = repo_with_worktree(core.agent_dir(), "app", "fix-login")?;
    let mut mgr = pi_in(&core, "mgr", &app).await?;
    set_role(&mut mgr, Role::Manager).await?;
    drop(mgr);
    let mut lead = pi_in(&core, "lead", &linked).await?;
    let ask = ask_supervisor(&mut lead, "Squash?").await?;
    assert_eq!(
        ask.to.as_ref().and_then(|t| t.session_id.as_deref()),
        Some("mgr")
    );
    let mut phone = core.client(ClientKind::Bridge).await?;
    answer(&mut phone, ask.id, "yes, squash").await?;

    let (mut back, info) = Pi::register_full(
        &core.socket(),
        shepherd_harness::registration("mgr", "mgr", &app),
    )
    .await?;
    assert_eq!(info.role, Role::Manager);
    assert_eq!(back.pending, 1, "only the notice waits");
    let d = back.next_delivery(WAIT).await?;
    assert_eq!((d.kind, d.ask_id), (DeliveryKind::Notice, Some(ask.id)));
    assert!(d.text.contains("yes, squash"), "{}", d.text);
    Ok(())
}

async fn release(
    client: &mut Client,
    role: Role,
    project: Option<&str>,
) -> Result<shepherd_core::protocol::Lease, shepherd_core::client::ClientError> {
    client
        .call(requests::ReleaseRole {
            role,
            project: project.map(str::to_string),
            ..Default::default()
        })
        .await
}

/// Issue 23 item 13: the human takes a lease away, whether its holder is away (told on
/// its return) or connected (told at once); a Pi session cannot; nobody holding it is
/// said with the leases that are held.
#[tokio::test]
async fn the_human_releases_a_lease_and_its_holder_is_told_now_or_on_return() -> Result<()> {
    let core = Core::start().await?;
    let (app, _) = repo_with_worktree(core.agent_dir(), "app", "x")?;
    let plain = core.agent_dir().join("plain");
    std::fs::create_dir_all(&plain)?;
    let mut mgr = pi_in(&core, "mgr", &app).await?;
    set_role(&mut mgr, Role::Manager).await?;
    drop(mgr);
    core.disconnected("mgr", WAIT).await?;

    // A Pi session may not take another's role away.
    let mut chief = pi_in(&core, "chief", &plain).await?;
    set_role(&mut chief, Role::Chief).await?;
    let e = anyhow::Error::from(
        release(&mut chief.client, Role::Manager, Some("app"))
            .await
            .expect_err("a Pi session's release_role is refused"),
    );
    assert_eq!(error_code(&e), Some(ErrorCode::Forbidden), "{e}");
    assert_eq!(error_details(&e).unwrap()["reason"], "human_only", "{e}");
    assert_eq!(leases(&core).await?.len(), 2, "the refusal changed nothing");

    // The human releases the away Manager: the lease is free and the next takes it.
    let mut cli = core.client(ClientKind::Cli).await?;
    let released = release(&mut cli, Role::Manager, Some("app")).await?;
    assert_eq!(
        (
            released.role,
            released.session_id.as_str(),
            released.connected
        ),
        (Role::Manager, "mgr", false)
    );
    let held: Vec<Role> = leases(&core).await?.iter().map(|l| l.role).collect();
    assert_eq!(held, vec![Role::Chief]);
    let mut next = pi_in(&core, "next", &app.join(".")).await?;
    assert_eq!(
        set_role(&mut next, Role::Manager).await?.session.role,
        Role::Manager
    );

    // On its return the old holder is a Lead and finds the notice: what, and by whom.
    let (mut back, info) = Pi::register_full(
        &core.socket(),
        shepherd_harness::registration("mgr", "mgr", &app),
    )
    .await?;
    assert_eq!(info.role, Role::Lead);
    let d = back.next_delivery(WAIT).await?;
    assert_eq!(d.kind, DeliveryKind::Notice, "{}", d.text);
    assert!(
        d.text.contains("no longer the manager of app"),
        "{}",
        d.text
    );
    assert!(d.text.contains("the human (cli) released it"), "{}", d.text);

    // A connected holder is told at once and is a Lead from then on.
    let released = release(&mut cli, Role::Chief, None).await?;
    assert_eq!(
        (released.session_id.as_str(), released.connected),
        ("chief", true)
    );
    let d = chief.next_delivery(WAIT).await?;
    assert_eq!(d.kind, DeliveryKind::Notice, "{}", d.text);
    assert!(d.text.contains("no longer the chief"), "{}", d.text);
    let routed = chief
        .client
        .call(requests::MessageSupervisor {
            id: 0,
            text: "still here".into(),
        })
        .await?;
    assert_eq!(routed.to.to, Superior::Human, "a Lead now, not the Chief");

    // Nobody holds it any more: refused, naming what is held.
    let e = anyhow::Error::from(
        release(&mut cli, Role::Chief, None)
            .await
            .expect_err("nobody holds the chief"),
    );
    assert_eq!(error_code(&e), Some(ErrorCode::RoleRefused), "{e}");
    let details = error_details(&e).unwrap();
    assert_eq!(details["reason"], "not_held", "{e}");
    assert_eq!(details["leases"][0]["session_id"], "next", "{e}");
    assert!(e.to_string().contains("manager of app (next)"), "{e}");

    // The released Chief's extension asks for its role again as a reclaim (what it does on
    // every registration while its session file says it held one): refused, saying why;
    // asked for explicitly, it is granted, and a later reclaim is an ordinary one again.
    let reclaim = || requests::SetRole {
        role: Role::Chief,
        reclaim: true,
        ..Default::default()
    };
    let e = anyhow::Error::from(
        chief
            .client
            .call(reclaim())
            .await
            .expect_err("a reclaim after a release"),
    );
    assert_eq!(error_code(&e), Some(ErrorCode::RoleRefused), "{e}");
    assert_eq!(error_details(&e).unwrap()["reason"], "released", "{e}");
    assert!(e.to_string().contains("the human (cli) released it"), "{e}");
    assert_eq!(leases(&core).await?.len(), 1, "the refusal changed nothing");
    assert_eq!(
        set_role(&mut chief, Role::Chief).await?.session.role,
        Role::Chief
    );
    assert_eq!(
        chief.client.call(reclaim()).await?.session.role,
        Role::Chief
    );
    Ok(())
}

/// Issue 23 item 13: `roles.away_expiry_hours` releases an away holder's lease (a
/// connected holder keeps its own), and the holder is told on its return.
#[tokio::test]
async fn an_away_holders_lease_expires_and_it_is_told_on_return() -> Result<()> {
    // 0.0005 h: 1.8 s.
    let core = Core::start_with(&[("SHEPHERD_ROLES__AWAY_EXPIRY_HOURS", "0.0005")]).await?;
    let (app, _) = repo_with_worktree(core.agent_dir(), "app", "x")?;
    let plain = core.agent_dir().join("plain");
    std::fs::create_dir_all(&plain)?;
    let mut chief = pi_in(&core, "chief", &plain).await?;
    set_role(&mut chief, Role::Chief).await?;
    let mut mgr = pi_in(&core, "mgr", &app).await?;
    set_role(&mut mgr, Role::Manager).await?;
    drop(mgr);
    core.disconnected("mgr", WAIT).await?;

    // Listing the leases checks them: the away Manager's goes, the connected Chief's stays.
    let mut cli = core.client(ClientKind::Cli).await?;
    let mut left = Vec::new();
    for _ in 0..100 {
        left = cli.call(requests::ListRoles::default()).await?;
        if left.len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let held: Vec<(Role, &str)> = left
        .iter()
        .map(|l| (l.role, l.session_id.as_str()))
        .collect();
    assert_eq!(held, vec![(Role::Chief, "chief")]);

    let (mut back, info) = Pi::register_full(
        &core.socket(),
        shepherd_harness::registration("mgr", "mgr", &app),
    )
    .await?;
    assert_eq!(info.role, Role::Lead);
    let d = back.next_delivery(WAIT).await?;
    assert_eq!(d.kind, DeliveryKind::Notice, "{}", d.text);
    assert!(
        d.text.contains("no longer the manager of app"),
        "{}",
        d.text
    );
    assert!(d.text.contains("expired after 2 s away"), "{}", d.text);
    Ok(())
}
