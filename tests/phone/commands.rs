//! Chat commands and steering on the phones, end to end, one scenario run on each
//! ([`Phone`]: the real `shepherd up` against the strict fake Bot API in a forum, or a
//! real Synapse with a matrix-sdk client playing the human): a session's report is in its
//! place; `sessions` lists it; an unknown command gets the help; a plain message in the
//! session's place steers it, and so does `steer <session> <text>` (confirmed); a renamed
//! session renames its place where places have names; `hosts` lists a machine linked to
//! the core (another core, through `shepherd link`) with its link up and its session; that
//! machine's asks arrive as cards numbered `#far:N`, answered there once by a tap or by
//! `answer far:N`, and its place (named `far · …`) and `steer far:NAME` steer it, and
//! `stop` there interrupts it; its link
//! killed is said once, and its return; what it reported while this machine's core and
//! bot were down (killed) is posted once when they are back;
//! `status` on the CLI lists the bridge once.

use anyhow::{Context, Result};
use shepherd_core::protocol::{DeliveryKind, requests};
use shepherd_harness::phone::{MatrixPhone, PHONE_WAIT, Phone, TelegramPhone};
use shepherd_harness::synapse::skip_e2e;
use shepherd_harness::{Core, eventually};

#[tokio::test]
async fn on_telegram_commands_answer_unknown_ones_get_help_and_the_place_steers() -> Result<()> {
    // The bot's command menu (setMyCommands) offers them.
    let menu = async |phone: &TelegramPhone| {
        let commands = phone
            .tg
            .wait_for("setMyCommands", PHONE_WAIT, |tg| tg.commands())
            .await?;
        assert!(commands.to_string().contains("steer"), "{commands}");
        Ok(())
    };
    commands_on(TelegramPhone::start().await?, menu).await
}

#[tokio::test]
async fn on_matrix_commands_answer_unknown_ones_get_help_and_the_place_steers() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    commands_on(MatrixPhone::start().await?, async |_: &MatrixPhone| Ok(())).await
}

/// `menu`: the phone's own check of its command menu, once the bridge runs.
async fn commands_on<P: Phone>(mut phone: P, menu: impl AsyncFn(&P) -> Result<()>) -> Result<()> {
    // Another machine's core, linked to this one through `shepherd link`.
    let far = Core::start().await?;
    let mut far_lead = far.pi("s5-far", "far-lead").await?;
    let (_config, config_path) = Core::hosts_config(&[("far", &far)])?;
    let core = Core::start_for(&phone, &[("SHEPHERD_CONFIG", &config_path)]).await?;
    phone.ready().await?;
    let p = phone.prefix();
    let mut pi = core.pi("s5", "listed").await?;
    pi.client.report("hello from the place").await?;
    let place = phone.place_of("listed").await?;
    let report = phone
        .bot_says(|m| m.text.contains("hello from the place"))
        .await?;
    assert_eq!(phone.thread_of(&report), place, "in the session's place");
    menu(&phone).await?;

    phone.command("sessions").await?;
    let listing = phone
        .bot_says(|m| {
            m.text.contains("listed")
                && !m.text.contains("hello from")
                && !m.text.contains("listed started")
        })
        .await?;
    assert_ne!(listing.id, report.id);

    phone.command("frobnicate").await?;
    let help = phone.bot_says(|m| m.text.contains("frobnicate")).await?;
    for command in ["steer", "sessions"] {
        assert!(
            help.text.contains(&format!("{p}{command}")),
            "unknown commands get the help: {}",
            help.text
        );
    }
    phone.command("help").await?;
    phone
        .bot_says(|m| m.text.contains(&format!("{p}steer")) && m.id != help.id)
        .await?;

    // A plain message in the session's place steers that session.
    phone.type_in(&place, "please run the linter").await?;
    let steer = pi.next_delivery(PHONE_WAIT).await?;
    assert_eq!(
        (steer.kind, steer.text.as_str()),
        (DeliveryKind::Steer, "please run the linter")
    );
    pi.ack(&[steer.id]).await?;

    phone.command("steer listed check the logs").await?;
    let steer = pi.next_delivery(PHONE_WAIT).await?;
    assert_eq!(
        (steer.kind, steer.text.as_str()),
        (DeliveryKind::Steer, "check the logs")
    );
    pi.ack(&[steer.id]).await?;
    phone
        .bot_says(|m| m.text.contains("steered listed"))
        .await?;

    // Renamed: its place follows, where places have names.
    pi.client
        .call(requests::Update {
            name: Some("renamed".into()),
            ..Default::default()
        })
        .await?;
    phone
        .place_named(&place, |name| name.contains("renamed"))
        .await?;

    // hosts: the linked machine, its link up, its session counted.
    eventually(PHONE_WAIT, "far linked", || {
        let hosts = core.cli_json(&["hosts"]).ok()?;
        (hosts[0]["state"] == "connected" && hosts[0]["sessions"] == 1).then_some(())
    })
    .await?;
    phone.command("hosts").await?;
    phone
        .bot_says(|m| m.text.contains("far · connected") && m.text.contains("1 session"))
        .await?;

    // The linked machine's ask: its card here, named with its host (`ask #far:N`); a
    // tap (a button, a keycap) answers it there, once, and the card says so.
    far_lead
        .client
        .call(requests::Ask {
            question: "Deploy the GPU build?".into(),
            options: vec!["ship-gpu".into(), "hold".into()],
            ..Default::default()
        })
        .await?;
    let card = phone
        .bot_says(|m| m.text.contains("Deploy the GPU build?") && phone.is_open_card(m))
        .await?;
    assert!(
        card.text.contains("#far:"),
        "the card names the ask with its host: {}",
        card.text
    );
    phone.offers(&card, &["ship-gpu", "hold"]).await?;
    phone.choose(&card, 1).await?;
    let answer = far_lead.next_delivery(PHONE_WAIT).await?;
    assert_eq!(
        (answer.kind, answer.text.as_str()),
        (DeliveryKind::Answer, "ship-gpu")
    );
    far_lead.ack(&[answer.id]).await?;
    let edited = phone.bot_says(|m| m.id == card.id && m.edited).await?;
    assert!(
        edited.text.contains("ship-gpu") && !phone.is_open_card(&edited),
        "the far ask's card closes with its answer: {edited:?}"
    );
    // A second one, answered with the command that names it (`answer far:N 2`).
    let asked = far_lead
        .client
        .call(requests::Ask {
            question: "Keep the old weights?".into(),
            options: vec!["keep".into(), "drop".into()],
            ..Default::default()
        })
        .await?;
    phone
        .bot_says(|m| m.text.contains("Keep the old weights?") && phone.is_open_card(m))
        .await?;
    phone.command(&format!("answer far:{} 2", asked.id)).await?;
    let answer = far_lead.next_delivery(PHONE_WAIT).await?;
    assert_eq!(answer.text, "drop");
    // Acknowledged where it was typed (the main timeline), not only on the card.
    let ack = phone
        .bot_says(|m| {
            m.text
                .contains(&format!("✅ answered #far:{}: drop", asked.id))
        })
        .await?;
    assert_eq!(ack.place, None, "{}", ack.text);
    far_lead.ack(&[answer.id]).await?;
    // The far session's place (where its cards are) steers it, as a local one's does; its
    // name says its host where places have names.
    let far_place = phone.thread_of(&card);
    if phone.names_places() {
        phone
            .place_named(&far_place, |name| name.starts_with("far · far-lead"))
            .await?;
    }
    phone.type_in(&far_place, "use the small batch").await?;
    let steer = far_lead.next_delivery(PHONE_WAIT).await?;
    assert_eq!(
        (steer.kind, steer.text.as_str()),
        (DeliveryKind::Steer, "use the small batch")
    );
    far_lead.ack(&[steer.id]).await?;
    phone.command("steer far:far-lead check the GPU").await?;
    let steer = far_lead.next_delivery(PHONE_WAIT).await?;
    assert_eq!(steer.text, "check the GPU");
    far_lead.ack(&[steer.id]).await?;
    // `stop` in its place interrupts it there.
    phone
        .type_in(&far_place, &format!("{p}stop then use the small batch"))
        .await?;
    let stop = far_lead.next_delivery(PHONE_WAIT).await?;
    assert_eq!(
        (stop.kind, stop.text.as_str()),
        (DeliveryKind::Interrupt, "use the small batch"),
        "the interrupt carries the steer that follows it"
    );
    far_lead.ack(&[stop.id]).await?;
    // Once each: nothing more reaches the far session.
    assert!(
        far_lead
            .next_delivery(std::time::Duration::from_millis(500))
            .await
            .is_err(),
        "each answer reaches the far session once"
    );

    // Its results reach the phone too, in its place.
    far_lead
        .client
        .call(requests::RunResult {
            text: "GPU-RESULT: the model trains at 41 it/s".into(),
            ..Default::default()
        })
        .await?;
    let result = phone.bot_says(|m| m.text.contains("GPU-RESULT")).await?;
    assert_eq!(
        phone.thread_of(&result),
        far_place,
        "in the far session's place"
    );

    // The link's command dies: said once in the chat, and its return once.
    let pid = shepherd_harness::link_pid(&far.socket()).context("the link process")?;
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()?;
    phone
        .bot_says(|m| m.text.contains("Lost the link to far"))
        .await?;
    phone
        .bot_says(|m| m.text.contains("far is back: 1 session"))
        .await?;
    assert_eq!(phone.count_said("Lost the link to far"), 1);

    // This machine's core and bot killed (-9) while the far session reports: back, the
    // bot posts that report once (its cursor for the host, the link's for the core).
    let mut core = core;
    core.kill9();
    far_lead
        .client
        .call(requests::Report {
            text: "REPORT-WHILE-HOME-DOWN".into(),
            ..Default::default()
        })
        .await?;
    core.restart().await?;
    phone.bridge_back(|| core.log(), 2).await?;
    phone
        .bot_says(|m| m.text.contains("REPORT-WHILE-HOME-DOWN"))
        .await?;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(phone.count_said("REPORT-WHILE-HOME-DOWN"), 1);

    let status = core.cli_json(&["status"])?;
    let bridges = status["bridges"].as_array().context("bridges")?;
    assert_eq!(
        bridges.iter().filter(|b| b["name"] == phone.name()).count(),
        1,
        "{status}"
    );
    Ok(())
}
