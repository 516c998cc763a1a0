//! Roles on Matrix, end to end: the real `shepherd up` (core + bridge) against a real
//! Synapse with a matrix-sdk client playing the human, and protocol-level Pi sessions in a
//! temp git repository (a Manager in its primary checkout, a Lead in a linked worktree) and a Chief
//! outside it. One core for the whole scenario: a role change said in the session's
//! thread (a thread has no name to change: it keeps its root), an ask addressed to the
//! Manager tagged on its card and answered with a reaction (the Manager gets a notice,
//! the Lead the answer once), one the Manager answers first (the card says who), staff
//! and supervisor edges in the receiver's thread, and `!staff` with a reply to a line
//! steering that session.

use std::time::Duration;

use anyhow::Result;
use shepherd_core::protocol::{DeliveryKind, Role};
use shepherd_harness::git_repo::repo_with_worktree;
use shepherd_harness::matrix_user::{MatrixUser, Message};
use shepherd_harness::synapse::{Synapse, skip_e2e};
use shepherd_harness::{Core, Pi};

const WAIT: Duration = Duration::from_secs(45);
const BOT: &str = "@bot:localhost";
const ADA: &str = "@ada:localhost";
const KEY1: &str = "1\u{fe0f}\u{20e3}";

/// Wait for a message from the bot for which `pred` holds.
async fn bot_says(
    ada: &MatrixUser,
    room: &str,
    pred: impl Fn(&Message) -> bool,
) -> Result<Message> {
    ada.wait_for_message(room, WAIT, |m| m.sender == BOT && pred(m))
        .await
}

fn thread_of(m: &Message) -> String {
    m.thread_root().unwrap_or(&m.event_id).to_string()
}

#[tokio::test]
async fn roles_get_threads_tagged_cards_edges_and_staff_on_matrix() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    let synapse = Synapse::start().await?;
    synapse.register("bot", "bot-password", false).await?;
    synapse.register("ada", "ada-password", false).await?;
    let ada = MatrixUser::login(&synapse.url(), "ada", "ada-password").await?;
    let url = synapse.url();
    let allowed = format!("[\"{ADA}\"]");
    let core = Core::start_with(&[
        ("SHEPHERD_MATRIX__HOMESERVER", url.as_str()),
        ("SHEPHERD_MATRIX__USER_ID", BOT),
        ("SHEPHERD_MATRIX_PASSWORD", "bot-password"),
        ("SHEPHERD_MATRIX__ALLOWED_USERS", allowed.as_str()),
    ])
    .await?;
    let room = ada.accept_invite(None, WAIT).await?;
    ada.wait_for_member(&room, BOT, WAIT).await?;

    let work = tempfile::tempdir()?;
    let (repo, linked) = repo_with_worktree(work.path(), "app", "fix-login")?;
    let elsewhere = work.path().join("notes");
    std::fs::create_dir_all(&elsewhere)?;
    let mut mara = Pi::register(&core.socket(), "mr-mara", "mara", &repo).await?;
    let mut lead = Pi::register(&core.socket(), "mr-lead", "fix-login", &linked).await?;
    let mut cleo = Pi::register(&core.socket(), "mr-cleo", "cleo", &elsewhere).await?;
    let started = |name: &'static str| {
        move |m: &Message| m.body().contains(&format!("▶️ {name}")) && m.body().contains("started")
    };
    let mara_thread = thread_of(&bot_says(&ada, &room, started("mara")).await?);
    let lead_thread = thread_of(&bot_says(&ada, &room, started("fix-login")).await?);
    let cleo_thread = thread_of(&bot_says(&ada, &room, started("cleo")).await?);

    // Taking a role is said in the session's own thread.
    mara.client.set_role(Role::Manager).await?;
    cleo.client.set_role(Role::Chief).await?;
    let line = bot_says(&ada, &room, |m| {
        m.body().contains("mara is now the manager of app")
    })
    .await?;
    assert_eq!(line.thread_root(), Some(mara_thread.as_str()));
    let line = bot_says(&ada, &room, |m| m.body().contains("cleo is now the chief")).await?;
    assert_eq!(line.thread_root(), Some(cleo_thread.as_str()));

    // The Lead asks its supervisor: the card in the Lead's thread says whom it is for.
    lead.client
        .ask_supervisor("Merge the login fix?", vec!["merge".into(), "wait".into()])
        .await?;
    let card = bot_says(&ada, &room, |m| {
        m.edits == 0 && m.body().contains("Merge the login fix?")
    })
    .await?;
    assert_eq!(thread_of(&card), lead_thread);
    assert!(card.body().contains("→ manager of app"), "{}", card.body());
    let to_mara = mara.next_delivery(WAIT).await?;
    assert_eq!(to_mara.kind, DeliveryKind::Ask);
    mara.ack(&[to_mara.id]).await?;

    // Ada answers with a reaction: the Lead gets it once, the Manager a notice.
    ada.wait_for_message(&room, WAIT, |m| {
        m.event_id == card.event_id && m.reaction_keys_by(BOT).contains(&KEY1)
    })
    .await?;
    ada.react(&room, &card.event_id, KEY1).await?;
    let answer = lead.next_delivery(WAIT).await?;
    assert_eq!(
        (answer.kind, answer.text.as_str()),
        (DeliveryKind::Answer, "merge")
    );
    lead.ack(&[answer.id]).await?;
    let notice = mara.next_delivery(WAIT).await?;
    assert_eq!(notice.kind, DeliveryKind::Notice);
    assert!(
        notice.text.contains("matrix:@ada:localhost"),
        "{}",
        notice.text
    );
    mara.ack(&[notice.id]).await?;

    // The Manager answers the next one first: the card says it was the Manager.
    let ask2 = lead
        .client
        .ask_supervisor("Squash the commits?", vec![])
        .await?;
    let card2 = bot_says(&ada, &room, |m| {
        m.edits == 0 && m.body().contains("Squash the commits?")
    })
    .await?;
    let to_mara = mara.next_delivery(WAIT).await?;
    assert_eq!(to_mara.kind, DeliveryKind::Ask);
    mara.ack(&[to_mara.id]).await?;
    mara.client.answer(ask2.id, "yes, squash").await?;
    let edited = bot_says(&ada, &room, |m| {
        m.event_id == card2.event_id && m.body().contains("yes, squash")
    })
    .await?;
    assert!(
        edited.body().contains("answered by manager of app mara"),
        "{}",
        edited.body()
    );
    let answer2 = lead.next_delivery(WAIT).await?;
    assert_eq!(answer2.text, "yes, squash");
    lead.ack(&[answer2.id]).await?;

    // Edges: a steer from the Manager in the Lead's thread, mail up in the Manager's.
    mara.client
        .message_staff(lead.session_id.as_str(), "rebase on main first")
        .await?;
    let down = bot_says(&ada, &room, |m| {
        m.body()
            .contains("manager → fix-login: rebase on main first")
    })
    .await?;
    assert_eq!(down.thread_root(), Some(lead_thread.as_str()));
    let steer = lead.next_delivery(WAIT).await?;
    assert_eq!(steer.kind, DeliveryKind::StaffMessage);
    lead.ack(&[steer.id]).await?;
    lead.client
        .message_supervisor("rebased, tests pass")
        .await?;
    let up = bot_says(&ada, &room, |m| {
        m.body()
            .contains("fix-login → manager: rebased, tests pass")
    })
    .await?;
    assert_eq!(up.thread_root(), Some(mara_thread.as_str()));
    let mail = mara.next_delivery(WAIT).await?;
    assert_eq!(mail.kind, DeliveryKind::SupervisorMessage);
    mara.ack(&[mail.id]).await?;

    // !staff: chief → manager → lead, one line each; a reply to the Lead's line steers it.
    ada.send_text(&room, "!staff").await?;
    bot_says(&ada, &room, |m| {
        m.body().contains("Staff: 1 chief, 1 manager")
    })
    .await?;
    let lead_line = bot_says(&ada, &room, |m| {
        m.body().starts_with("   └ ") && m.body().contains("fix-login")
    })
    .await?;
    assert_eq!(lead_line.thread_root(), None, "in the main timeline");
    let lines: Vec<String> = ada
        .messages(&room)
        .into_iter()
        .filter(|m| m.sender == BOT && m.body().contains(" · mr-"))
        .map(|m| m.body().to_string())
        .collect();
    assert!(lines[0].starts_with("👑 chief · "), "{lines:?}");
    assert!(lines[1].starts_with("└ 🧭 manager of app · "), "{lines:?}");
    ada.send_reply(&room, &lead_line.event_id, "add a test for the SSO path")
        .await?;
    let steer = lead.next_delivery(WAIT).await?;
    assert_eq!(
        (steer.kind, steer.text.as_str()),
        (DeliveryKind::Steer, "add a test for the SSO path")
    );
    lead.ack(&[steer.id]).await?;

    // Leaving the role is said too.
    mara.client.set_role(Role::Lead).await?;
    let left = bot_says(&ada, &room, |m| {
        m.body().contains("mara left the manager role")
    })
    .await?;
    assert_eq!(left.thread_root(), Some(mara_thread.as_str()));
    Ok(())
}
