//! The bridge as a process, end to end, one scenario run on each phone ([`Phone`]: the
//! real `shepherd up` against the strict fake Bot API or a real Synapse): a second bridge
//! on the same bot account (`shepherd bot` next to the running core's bridge) is refused
//! by the core before it reaches the chat: it exits naming the running bridge and its
//! process, `status` lists one bridge, and the running one still answers.

use anyhow::{Context, Result};
use shepherd_harness::Core;
use shepherd_harness::phone::{MatrixPhone, PHONE_WAIT, Phone, TelegramPhone};
use shepherd_harness::synapse::skip_e2e;

#[tokio::test]
async fn on_telegram_a_second_bridge_on_the_same_bot_is_refused_naming_the_running_one()
-> Result<()> {
    let polls = |phone: &TelegramPhone| phone.tg.calls_to("getUpdates").len();
    second_bridge_refused_on(TelegramPhone::start().await?, polls, |phone, before| {
        assert_eq!(polls(phone), before, "the refused bridge never polled");
        assert!(
            phone.tg.long_poll_waiting(),
            "the running bridge still polls"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn on_matrix_a_second_bridge_on_the_same_bot_is_refused_naming_the_running_one() -> Result<()>
{
    if skip_e2e() {
        return Ok(());
    }
    second_bridge_refused_on(MatrixPhone::start().await?, |_| (), |_, ()| Ok(())).await
}

/// `before` and `after`: the phone's own checks that the refused bridge never reached the
/// chat (what `before` notes, `after` compares).
async fn second_bridge_refused_on<P: Phone, B>(
    mut phone: P,
    before: impl Fn(&P) -> B,
    after: impl Fn(&P, B) -> Result<()>,
) -> Result<()> {
    let core = Core::start_for(&phone, &[]).await?;
    phone.ready().await?;
    let noted = before(&phone);
    let mut second = tokio::process::Command::from(core.command());
    let out = tokio::time::timeout(PHONE_WAIT, second.arg("bot").output())
        .await
        .context("the second bridge did not stop")??;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&phone.bot_account())
            && err.contains(&format!("already served by the bridge `{}`", phone.name())),
        "{err}"
    );
    assert!(
        err.contains("pid "),
        "names the running bridge's process: {err}"
    );
    after(&phone, noted)?;
    let status = core.cli_json(&["status"])?;
    let bridges = status["bridges"].as_array().context("bridges")?;
    assert_eq!(bridges.len(), 1, "{status}");
    // The running bridge still answers.
    phone.command("sessions").await?;
    phone
        .bot_says(|m| m.text.to_lowercase().contains("session"))
        .await?;
    Ok(())
}
