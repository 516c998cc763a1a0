//! The Synapse harness itself: the pinned Synapse installs, starts on a free loopback
//! port, registers users with the shared secret, and those users can log in; the test
//! "human" client talks through it, encrypted rooms included.

use std::time::Duration;

use anyhow::Result;
use serde_json::json;
use shepherd_harness::matrix_user::MatrixUser;
use shepherd_harness::synapse::{Method, Synapse, skip_e2e};

#[tokio::test]
async fn synapse_starts_and_registered_users_can_log_in() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    let started = std::time::Instant::now();
    let synapse = Synapse::start().await?;
    eprintln!("Synapse answered after {:?}", started.elapsed());
    assert!(synapse.url().starts_with("http://127.0.0.1:"));

    let ada = synapse.register("ada", "ada-password", false).await?;
    assert_eq!(ada, "@ada:localhost");
    let admin = synapse.register("root", "root-password", true).await?;
    assert_eq!(admin, "@root:localhost");

    let token = synapse.login("ada", "ada-password").await?;
    let whoami = synapse
        .api(
            Method::GET,
            "/_matrix/client/v3/account/whoami",
            Some(&token),
            None,
        )
        .await?;
    assert_eq!(whoami["user_id"], "@ada:localhost");
    assert!(
        synapse.login("ada", "wrong").await.is_err(),
        "a wrong password is refused"
    );
    assert!(
        synapse.register("ada", "again", false).await.is_err(),
        "a taken name is refused"
    );

    // Open registration is off: only the shared secret makes users.
    let open = synapse
        .api(
            Method::POST,
            "/_matrix/client/v3/register",
            None,
            Some(serde_json::json!({"username": "eve", "password": "x"})),
        )
        .await;
    assert!(open.is_err(), "{open:?}");

    // The admin API answers for the admin: ada has two devices, the registration's and
    // the login's.
    let root_token = synapse.login("root", "root-password").await?;
    let devices = synapse.devices(&root_token, &ada).await?;
    assert_eq!(devices.len(), 2, "{devices:?}");
    Ok(())
}

/// The test's "human" client works against it, encrypted rooms included: two users
/// exchange a message, a threaded reply, a reaction and an edit, each seeing the other's.
#[tokio::test]
async fn two_test_clients_talk_in_an_encrypted_room() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    let wait = Duration::from_secs(30);
    let synapse = Synapse::start().await?;
    synapse.register("ada", "pw-ada", false).await?;
    synapse.register("bob", "pw-bob", false).await?;
    let ada = MatrixUser::login(&synapse.url(), "ada", "pw-ada").await?;
    let bob = MatrixUser::login(&synapse.url(), "bob", "pw-bob").await?;
    assert_eq!(ada.user_id(), "@ada:localhost");

    let room = ada.create_room("secret", &["@bob:localhost"], true).await?;
    assert_eq!(bob.accept_invite(Some(&room), wait).await?, room);
    ada.wait_for_member(&room, "@bob:localhost", wait).await?;

    let root = ada.send_text(&room, "hello bob").await?;
    let seen = bob
        .wait_for_message(&room, wait, |m| m.body() == "hello bob")
        .await?;
    assert_eq!(
        (seen.event_id.as_str(), seen.sender.as_str()),
        (root.as_str(), "@ada:localhost")
    );
    let raw = bob
        .events(&room)
        .into_iter()
        .find(|e| e["event_id"] == root.as_str())
        .unwrap();
    assert!(
        bob.undecrypted(&room).is_empty() && raw["type"] == "m.room.message",
        "bob decrypted it: {raw}"
    );

    let reply = bob
        .send_thread_reply(&room, &root, &root, "hi ada, in a thread")
        .await?;
    let in_thread = ada
        .wait_for_message(&room, wait, |m| m.event_id == reply)
        .await?;
    assert_eq!(in_thread.thread_root(), Some(root.as_str()));
    assert_eq!(in_thread.in_reply_to(), Some(root.as_str()));

    bob.react(&room, &root, "1️⃣").await?;
    ada.wait_for_message(&room, wait, |m| {
        m.event_id == root && m.reaction_keys_by("@bob:localhost") == ["1️⃣"]
    })
    .await?;

    ada.send_event(
        &room,
        "m.room.message",
        json!({
            "msgtype": "m.text",
            "body": "* hello bob (edited)",
            "m.new_content": {"msgtype": "m.text", "body": "hello bob (edited)"},
            "m.relates_to": {"rel_type": "m.replace", "event_id": root},
        }),
    )
    .await?;
    let edited = bob
        .wait_for_message(&room, wait, |m| m.event_id == root && m.edits == 1)
        .await?;
    assert_eq!(edited.body(), "hello bob (edited)");
    Ok(())
}
