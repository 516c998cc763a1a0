//! Supervision from the phones, end to end, one scenario run on each ([`Phone`]: the real
//! `shepherd up` against the strict fake Bot API in a forum, or a real Synapse with a
//! matrix-sdk client playing the human): `supervise <goal>` typed in the worker's place
//! (no session named: the place's) pairs it with the free supervisor-role session; the
//! place shows the start and goal (once), a goal changed on the CLI, a steer (not a
//! let_it_run), the supervisor's own question (answered by choosing an option), and the
//! end when `unpair` typed there stops it, saying who did.

use anyhow::{Context, Result};
use serde_json::json;
use shepherd_core::protocol::{DeliveryKind, Role, VerdictKind, requests};
use shepherd_harness::phone::{MatrixPhone, PHONE_WAIT, Phone, TelegramPhone};
use shepherd_harness::synapse::skip_e2e;
use shepherd_harness::{Core, Pi, registration};

#[tokio::test]
async fn on_telegram_supervision_shows_in_the_workers_place_and_is_steered_from_it() -> Result<()> {
    supervision_on(TelegramPhone::start().await?).await
}

#[tokio::test]
async fn on_matrix_supervision_shows_in_the_workers_place_and_is_steered_from_it() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    supervision_on(MatrixPhone::start().await?).await
}

async fn supervision_on(mut phone: impl Phone) -> Result<()> {
    let core = Core::start_for(&phone, &[]).await?;
    phone.ready().await?;
    let p = phone.prefix();
    let human = phone.human().to_string();
    let mut worker = core.pi("w1", "fix-login").await?;
    let mut reg = registration("sup1", "watch-login", core.agent_dir());
    reg.role = Role::Supervisor;
    let (mut sup, _) = Pi::register_full(&core.socket(), reg).await?;
    worker.client.report("starting on the login form").await?;
    let place = phone.place_of("fix-login").await?;
    let report = phone
        .bot_says(|m| m.text.contains("starting on the login form"))
        .await?;
    assert_eq!(phone.thread_of(&report), place, "in the worker's place");
    let here = |m: &shepherd_harness::phone::Said| phone.thread_of(m) == place;

    phone
        .type_in(
            &place,
            &format!("{p}supervise the login form accepts SSO users"),
        )
        .await?;
    let start = phone
        .bot_says(|m| here(m) && m.text.contains("watch-login supervises fix-login"))
        .await
        .with_context(|| core.log())?;
    assert!(
        start
            .text
            .contains("Goal: the login form accepts SSO users")
            && start.text.contains(&format!("started by {human}")),
        "{}",
        start.text
    );
    let pairings = core.cli_json(&["pairings"])?;
    let list = pairings.as_array().context("a list")?;
    assert_eq!(list.len(), 1, "{pairings}");
    assert_eq!(list[0]["worker_name"], "fix-login");
    assert_eq!(list[0]["supervisor_name"], "watch-login");
    assert_eq!(list[0]["state"], "active");
    assert_eq!(list[0]["goal"], "the login form accepts SSO users");

    // A goal changed on the CLI shows in the place too.
    let out = core.cli(&[
        "supervise",
        "goal",
        "fix-login",
        "SSO and password logins both work",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let goal = phone
        .bot_says(|m| here(m) && m.text.contains("New goal for fix-login"))
        .await?;
    assert!(
        goal.text.contains("SSO and password logins both work") && goal.text.contains("set by cli"),
        "{}",
        goal.text
    );

    // The supervisor's verdicts: a let_it_run is not posted, a steer is.
    for (verdict, text) in [
        (VerdictKind::LetItRun, "on track so far"),
        (
            VerdictKind::Steer,
            "run the SSO tests before touching the form",
        ),
    ] {
        sup.client
            .call(requests::Verdict {
                id: 0,
                verdict,
                text: text.into(),
            })
            .await?;
    }
    let steer = phone
        .bot_says(|m| here(m) && m.text.contains("👁 steer:"))
        .await?;
    assert!(
        steer
            .text
            .contains("run the SSO tests before touching the form"),
        "{}",
        steer.text
    );
    let delivered = worker.next_delivery(PHONE_WAIT).await?;
    assert_eq!(delivered.kind, DeliveryKind::Steer);
    worker.ack(&[delivered.id]).await?;

    // The supervisor's question is shown where the human watches the worker.
    sup.client
        .call(requests::Ask {
            id: 0,
            question: "Is the staging SSO provider safe to use?".into(),
            options: vec!["yes".into(), "no".into()],
            details: None,
            key: None,
        })
        .await?;
    let card = phone
        .bot_says(|m| m.text.contains("staging SSO provider") && phone.is_open_card(m))
        .await?;
    assert_eq!(
        phone.thread_of(&card),
        place,
        "the supervisor's ask is in the worker's place"
    );
    phone.choose(&card, 2).await?;
    let answer = loop {
        let d = sup.next_delivery(PHONE_WAIT).await?;
        sup.ack(&[d.id]).await?;
        if d.kind == DeliveryKind::Answer {
            break d;
        }
    };
    assert_eq!(answer.text, "no");

    // `unpair` in the place, without a session: the place's.
    phone.type_in(&place, &format!("{p}unpair")).await?;
    let stopped = phone
        .bot_says(|m| here(m) && m.text.contains("stopped by"))
        .await?;
    assert!(
        stopped.text.contains(&format!("stopped by {human}"))
            && stopped
                .text
                .contains("watch-login no longer supervises fix-login"),
        "{}",
        stopped.text
    );
    assert_eq!(core.cli_json(&["pairings"])?, json!([]));
    let all = core.cli_json(&["pairings", "--all"])?;
    assert_eq!(all[0]["end_reason"], "stopped", "{all}");
    assert_eq!(all[0]["ended_by"], human.as_str(), "{all}");

    assert_eq!(
        phone.count_said("supervises fix-login."),
        1,
        "the start is said once"
    );
    assert_eq!(
        phone.count_said(&format!("stopped by {human}")),
        1,
        "the stop is said once"
    );
    assert_eq!(
        phone.count_said("on track so far"),
        0,
        "let_it_run is not posted"
    );
    Ok(())
}
