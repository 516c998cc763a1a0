//! Roles on the phones, end to end, one scenario run on each ([`Phone`]): the real
//! `shepherd up` (core + bridge) against the strict fake Bot API in a forum, or a real
//! Synapse with a matrix-sdk client playing the human, with protocol-level Pi sessions in
//! a temp git repository (a Manager in its primary checkout, a Lead in a linked worktree)
//! and a Chief outside it. One core for the whole scenario: a role change said in the
//! session's place (a Telegram topic is renamed after the role, `🧭 manager · app`,
//! `👑 chief`, and back; a Matrix thread has no name to change), an ask addressed to the
//! Manager tagged on its card and answered from the phone (the Manager gets a notice, the
//! Lead the answer once), one the Manager answers first (the card says who), staff and
//! supervisor edges shown in the receiver's place, and `/staff` (`!staff`) with a reply
//! to a line steering that session, and a line's steer (Telegram: its ✍️ button and the
//! reply it asks for) steering the Manager. On Telegram alone: a role taken while the
//! bridge was away renames the topic when it is back.

use std::time::Duration;

use anyhow::{Context, Result};
use shepherd_core::protocol::{DeliveryKind, Role};
use shepherd_harness::fake_telegram::{FakeTelegram, FakeTelegramOptions, FakeUser};
use shepherd_harness::git_repo::repo_with_worktree;
use shepherd_harness::phone::{MatrixPhone, Phone, TelegramPhone};
use shepherd_harness::synapse::skip_e2e;
use shepherd_harness::{Core, Pi};

const WAIT: Duration = Duration::from_secs(30);
const ADA: i64 = 4242;
const FORUM: i64 = -1_001_234_567;

#[tokio::test]
async fn on_telegram_roles_get_places_tagged_cards_edges_and_staff() -> Result<()> {
    roles_on(TelegramPhone::start().await?, "tr").await
}

#[tokio::test]
async fn on_matrix_roles_get_places_tagged_cards_edges_and_staff() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    roles_on(MatrixPhone::start().await?, "mr").await
}

/// `ids`: the sessions' id prefix (`tr-mara`), as the `/staff` lines show them.
async fn roles_on(mut phone: impl Phone, ids: &str) -> Result<()> {
    let core = Core::start_for(&phone, &[]).await?;
    phone.ready().await?;
    let work = tempfile::tempdir()?;
    let (repo, linked) = repo_with_worktree(work.path(), "app", "fix-login")?;
    let elsewhere = work.path().join("notes");
    std::fs::create_dir_all(&elsewhere)?;

    // Each session gets its place when it registers.
    let socket = core.socket();
    let mut mara = Pi::register(&socket, &format!("{ids}-mara"), "mara", &repo).await?;
    let mut lead = Pi::register(&socket, &format!("{ids}-lead"), "fix-login", &linked).await?;
    let mut cleo = Pi::register(&socket, &format!("{ids}-cleo"), "cleo", &elsewhere).await?;
    let mara_place = phone.place_of("mara").await?;
    let lead_place = phone.place_of("fix-login").await?;
    let cleo_place = phone.place_of("cleo").await?;

    // Taking a role is said in the session's place (and renames a topic after it).
    mara.client.set_role(Role::Manager).await?;
    cleo.client.set_role(Role::Chief).await?;
    for (place, name, line) in [
        (
            &mara_place,
            "🧭 manager · app",
            "mara is now the manager of app",
        ),
        (&cleo_place, "👑 chief", "cleo is now the chief"),
    ] {
        phone.place_named(place, |n| n == name).await?;
        let said = phone.bot_says(|m| m.text.contains(line)).await?;
        assert_eq!(said.place.as_ref(), Some(place), "{line}");
    }

    // The Lead asks its supervisor: the card in the Lead's place says whom it is for.
    let ask = lead
        .client
        .ask_supervisor("Merge the login fix?", vec!["merge".into(), "wait".into()])
        .await?;
    assert_eq!(ask.to.as_ref().map(|t| t.role), Some(Role::Manager));
    let card = phone
        .bot_says(|m| m.text.contains("Merge the login fix?") && phone.is_open_card(m))
        .await?;
    assert_eq!(card.place.as_ref(), Some(&lead_place));
    assert!(card.text.contains("→ manager of app"), "{}", card.text);
    let to_mara = mara.next_delivery(WAIT).await?;
    assert_eq!(to_mara.kind, DeliveryKind::Ask);
    mara.ack(&[to_mara.id]).await?;

    // Ada answers from the phone: the Lead gets it once, the Manager a notice.
    phone.choose(&card, 1).await?;
    let answer = lead.next_delivery(WAIT).await?;
    assert_eq!(
        (answer.kind, answer.text.as_str()),
        (DeliveryKind::Answer, "merge")
    );
    lead.ack(&[answer.id]).await?;
    let notice = mara.next_delivery(WAIT).await?;
    assert_eq!(notice.kind, DeliveryKind::Notice);
    assert!(notice.text.contains(phone.human()), "{}", notice.text);
    mara.ack(&[notice.id]).await?;
    let answered_by = format!("answered by {}", phone.human());
    phone
        .bot_says(|m| m.id == card.id && m.edited && m.text.contains(&answered_by))
        .await?;

    // The Manager answers the next one first: the card says it was the Manager.
    let ask2 = lead
        .client
        .ask_supervisor("Squash the commits?", vec![])
        .await?;
    let card2 = phone
        .bot_says(|m| m.text.contains("Squash the commits?") && !m.edited)
        .await?;
    let to_mara = mara.next_delivery(WAIT).await?;
    assert_eq!(to_mara.kind, DeliveryKind::Ask);
    mara.ack(&[to_mara.id]).await?;
    mara.client.answer(ask2.id, "yes, squash").await?;
    let edited2 = phone
        .bot_says(|m| m.id == card2.id && m.text.contains("yes, squash"))
        .await?;
    assert!(
        edited2.text.contains("answered by manager of app mara"),
        "{}",
        edited2.text
    );
    let answer2 = lead.next_delivery(WAIT).await?;
    assert_eq!(answer2.text, "yes, squash");
    lead.ack(&[answer2.id]).await?;

    // Edges: a steer from the Manager in the Lead's place, mail up in the Manager's.
    mara.client
        .message_staff(lead.session_id.as_str(), "rebase on main first")
        .await?;
    let down = phone
        .bot_says(|m| m.text.contains("manager → fix-login: rebase on main first"))
        .await?;
    assert_eq!(down.place.as_ref(), Some(&lead_place));
    let steer = lead.next_delivery(WAIT).await?;
    assert_eq!(steer.kind, DeliveryKind::StaffMessage);
    lead.ack(&[steer.id]).await?;
    lead.client
        .message_supervisor("rebased, tests pass")
        .await?;
    let up = phone
        .bot_says(|m| m.text.contains("fix-login → manager: rebased, tests pass"))
        .await?;
    assert_eq!(up.place.as_ref(), Some(&mara_place));
    let mail = mara.next_delivery(WAIT).await?;
    assert_eq!(mail.kind, DeliveryKind::SupervisorMessage);
    mara.ack(&[mail.id]).await?;

    // /staff: chief → manager → lead, one line each (Telegram: one message with a ✍️
    // button per session; Matrix: a message per line), in the main timeline; the Lead and
    // the Manager are steered from it.
    phone.command("staff").await?;
    let tree = phone
        .bot_says(|m| m.text.contains("Staff: 1 chief, 1 manager"))
        .await?;
    assert!(tree.place.is_none(), "{tree:?}");
    let texts = phone.staff_lines(&tree, 3).await?;
    assert!(texts[0].starts_with("👑 chief · "), "{texts:?}");
    assert!(texts[1].starts_with("└ 🧭 manager of app · "), "{texts:?}");
    assert!(
        texts[2].contains("└ ")
            && texts[2].contains("fix-login")
            && texts[2].contains(&format!(" · {ids}-lead")),
        "{texts:?}"
    );
    phone
        .steer_from_staff(&tree, "fix-login", "add a test for the SSO path")
        .await?;
    let steer = lead.next_delivery(WAIT).await?;
    assert_eq!(
        (steer.kind, steer.text.as_str()),
        (DeliveryKind::Steer, "add a test for the SSO path")
    );
    lead.ack(&[steer.id]).await?;
    phone
        .steer_from_staff(&tree, "mara", "hold merges until 5pm")
        .await?;
    let steer = mara.next_delivery(WAIT).await?;
    assert_eq!(
        (steer.kind, steer.text.as_str()),
        (DeliveryKind::Steer, "hold merges until 5pm")
    );
    mara.ack(&[steer.id]).await?;

    // Leaving the role is said in its place (and names a topic after the session again).
    mara.client.set_role(Role::Lead).await?;
    phone
        .place_named(&mara_place, |n| n.contains("mara"))
        .await?;
    let left = phone
        .bot_says(|m| m.text.contains("mara left the manager role"))
        .await
        .context("the leaving is said")?;
    assert_eq!(left.place.as_ref(), Some(&mara_place));
    Ok(())
}

/// A role taken while the bridge was down (`shepherd bot` killed) renames the session's
/// topic once the bridge is back: the resync compares each topic with its session.
#[tokio::test]
async fn a_role_taken_while_the_bridge_was_away_renames_the_topic_on_its_return() -> Result<()> {
    let ada = FakeUser::new(ADA, "Ada").with_username("ada");
    let tg = FakeTelegram::start(
        FakeTelegramOptions::default()
            .user(ada)
            .forum(FORUM, "shepherd"),
    )
    .await?;
    let core = Core::start().await?;
    let api = tg.api_url();
    let chat = FORUM.to_string();
    let env = [
        ("SHEPHERD_TELEGRAM_TOKEN", tg.token()),
        ("SHEPHERD_TELEGRAM__ALLOWED_USERS", "[4242]"),
        ("SHEPHERD_TELEGRAM__CHAT_ID", chat.as_str()),
        ("SHEPHERD_TELEGRAM__API_URL", api.as_str()),
    ];
    let mut bot = core.spawn_bot(&env)?;
    tg.wait_for("the bot's first long poll", WAIT, |tg| {
        tg.long_poll_waiting().then_some(())
    })
    .await?;
    let work = tempfile::tempdir()?;
    let (repo, _linked) = repo_with_worktree(work.path(), "app", "fix-login")?;
    let mut mara = Pi::register(&core.socket(), "tw-mara", "mara", &repo).await?;
    let topic = tg
        .wait_for("mara's topic", WAIT, |tg| {
            tg.topics(FORUM)
                .into_iter()
                .find(|t| t.name.contains("mara"))
        })
        .await?;
    // The start is posted once the bridge has stored the topic.
    tg.wait_for_message(FORUM, WAIT, |m| {
        m.thread_id == Some(topic.thread_id) && m.text.contains("started")
    })
    .await?;
    bot.kill9();
    mara.client.set_role(Role::Manager).await?;
    let bot = core.spawn_bot(&env)?;
    tg.wait_for("the topic renamed after the bridge's return", WAIT, |tg| {
        tg.topics(FORUM)
            .into_iter()
            .find(|t| t.thread_id == topic.thread_id && t.name == "🧭 manager · app")
    })
    .await
    .with_context(|| bot.log())?;
    assert_eq!(tg.topics(FORUM).len(), 1, "no second topic");
    Ok(())
}
