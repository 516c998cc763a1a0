//! Project work on the phones, end to end, one scenario run on each ([`Phone`]): the real
//! `shepherd up` (core + bridge) against the strict fake Bot API in a forum, or a real
//! Synapse with a matrix-sdk client playing the human; a temp repository `app`, its
//! Manager a harness client registered in the primary checkout (holding the Manager
//! lease), and its Lead a REAL Pi process the core launches in the assignment's worktree
//! (headless, the scripted fake model). One core for the whole scenario:
//!
//! - the Manager's place (its topic, renamed `🧭 manager · app` on Telegram; its thread on
//!   Matrix) says it took the role;
//! - the Manager delegates `feat/a`; the Lead (its own topic `app@feat/a` on Telegram)
//!   commits and ends its turn: the update is posted once in the Manager's place, tagged
//!   `app@feat/a`, with its text, and the Manager gets it as mail; a reply to it steers
//!   the Manager;
//! - `/projects` (`!projects`) lists the repository, its Manager and the assignment
//!   (state, Lead state, 1 ahead / 0 behind, the last update's first line, tokens and
//!   cost);
//! - the Manager asks to integrate: the approval card (question, commits, approve/deny as
//!   buttons or keycap reactions) is in the Manager's place; a reply typed to it denies it
//!   with that reason (the Manager is told, `main` is unchanged); asked again, choosing
//!   approve fast-forwards `main` to the branch's tip (checked with git2) and the
//!   retirement is said in the Manager's place;
//! - the Manager stops the Lead and resumes it: `paused`, `active again` and its Lead
//!   running are said in the Manager's place;
//! - the core restarts (the bridge with it; the Lead is relaunched): its Lead running is
//!   not said again;
//! - of the assignment's changes only the delegation, the pause, the resumption, its Lead
//!   running (twice) and its retirement are said, once each.

use crate::projects_phone::{
    COMMIT, UPDATE, delegate, integrate, manager, model, next_of_kind, project_core, repo,
    resume_work, stop_lead, tip, wait_committed,
};
use anyhow::{Context, Result};
use shepherd_core::protocol::{AssignmentState, DeliveryKind, IntegrationStatus};
use shepherd_harness::phone::{MatrixPhone, PHONE_WAIT, Phone, TelegramPhone};
use shepherd_harness::synapse::skip_e2e;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_telegram_lists_updates_and_approves() -> Result<()> {
    project_work_on(TelegramPhone::start().await?, "tp-manager").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_matrix_lists_updates_and_approves() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    project_work_on(MatrixPhone::start().await?, "mp-manager").await
}

async fn project_work_on(mut phone: impl Phone, manager_id: &str) -> Result<()> {
    let model = model().await?;
    let mut core = project_core(&model, &phone).await?;
    phone.ready().await?;
    let repo = repo(&core, "app")?;
    let main_before = tip(&repo, "main")?;

    // The Manager's place says it took the role (and on Telegram is named after it).
    let mut mgr = manager(&core, &repo, manager_id).await?;
    let took = phone
        .bot_says(|m| m.text.contains("app-manager is now the manager of app"))
        .await
        .with_context(|| core.log())?;
    let place = took.place.clone().context("the role is said in a place")?;
    phone
        .place_named(&place, |name| name == "🧭 manager · app")
        .await?;

    // Delegated: the Lead commits and ends its turn; its update is said once, tagged, in
    // the Manager's place, and mailed to the Manager.
    let assignment = delegate(&mut mgr, "TASK-A add a file", "feat/a").await?;
    assert_eq!(assignment.branch, "feat/a");
    let sha = wait_committed(&repo, "feat/a").await?;
    let mail = next_of_kind(&mut mgr, DeliveryKind::AssignmentUpdate)
        .await
        .with_context(|| core.log())?;
    assert!(mail.text.contains(UPDATE), "{}", mail.text);
    mgr.ack(&[mail.id]).await?;
    let update = phone
        .bot_says(|m| m.text.contains("📬 app@feat/a · update from the Lead"))
        .await
        .with_context(|| core.log())?;
    assert_eq!(update.place.as_ref(), Some(&place), "{}", update.text);
    assert!(update.text.contains(UPDATE), "{}", update.text);
    assert!(update.text.contains(&sha[..7]), "{}", update.text);
    // Where places have names, the Lead's is named after the repository and branch (not
    // the worktree's directory).
    if phone.names_places() {
        let names = phone.place_names();
        assert!(names.iter().any(|t| t == "app@feat/a"), "{names:?}");
    }

    // A reply to the update steers the Manager.
    phone
        .reply(&update, "integrate it once it is green")
        .await?;
    let steer = next_of_kind(&mut mgr, DeliveryKind::Steer).await?;
    assert_eq!(steer.text, "integrate it once it is green");
    mgr.ack(&[steer.id]).await?;

    // /projects: the repository, its Manager, the assignment with its numbers.
    phone.command("projects").await?;
    let list = phone
        .bot_says(|m| m.text.contains("Projects: 1 repository, 1 assignment"))
        .await?;
    for part in [
        "🗂 app · primary main · 🧭 manager app-manager",
        "app@feat/a · active · Lead running · 1 ahead, 0 behind",
        " tokens · $",
        "last update ",
        UPDATE,
    ] {
        assert!(list.text.contains(part), "{part:?} not in {}", list.text);
    }

    // Stopped, then resumed: one line each in the Manager's place, then its Lead running.
    let paused = stop_lead(&mut mgr, "feat/a").await?;
    assert_eq!(paused.state, AssignmentState::Paused);
    let line = phone
        .bot_says(|m| m.text.contains("⏸️ app@feat/a paused: Lead stopped"))
        .await?;
    assert_eq!(line.place.as_ref(), Some(&place));
    // Its session is gone (said in the Lead's own place) before it is resumed.
    phone
        // One name, not `app@feat/a (app@feat/a)`.
        .bot_says(|m| m.text.contains("⏹ app@feat/a closed"))
        .await?;
    let resumed = resume_work(&mut mgr, "feat/a").await?;
    assert_eq!(
        resumed.session_id, assignment.session_id,
        "the same session"
    );
    let line = phone
        .bot_says(|m| m.text.contains("app@feat/a active again: Lead "))
        .await
        .with_context(|| core.log())?;
    assert_eq!(line.place.as_ref(), Some(&place));
    phone
        .wait_said_times("🟢 app@feat/a: Lead running", 2)
        .await
        .with_context(|| core.log())?;

    // The core (and its bridge) restart: the Lead reconnects, and its running is not said
    // a third time (the bridge's memory of what it said outlives it).
    core.restart().await?;
    phone.bridge_back(|| core.log(), 2).await?;
    let mut mgr = manager(&core, &repo, manager_id).await?;
    core.connected_session("app@feat/a", PHONE_WAIT)
        .await
        .with_context(|| core.log())?;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(
        phone.count_said("🟢 app@feat/a: Lead running"),
        2,
        "{}",
        core.log()
    );

    // The Manager asks to integrate: the approval card is in its place, offering approve
    // and deny.
    let asked = integrate(&mut mgr, "feat/a", &sha).await?;
    assert_eq!(asked.status, IntegrationStatus::AwaitingApproval);
    let card = phone
        .bot_says(|m| m.text.contains("Integrate app@feat/a into main at") && phone.is_open_card(m))
        .await
        .with_context(|| core.log())?;
    assert_eq!(card.place.as_ref(), Some(&place));
    assert!(card.text.contains(&sha[..7]), "{}", card.text);
    assert!(card.text.contains(COMMIT), "the commits: {}", card.text);
    phone.offers(&card, &["approve", "deny"]).await?;
    // Its diff, from the card: the Lead's changes against main, as /diff shows them.
    phone.diff_from_card(&card).await?;
    let diff = phone
        .bot_says(|m| m.text.starts_with("🧾 app@feat/a · feat/a against main"))
        .await
        .with_context(|| core.log())?;
    assert_eq!(diff.place.as_ref(), Some(&place), "beside the card");
    phone
        .bot_says(|m| m.file.as_deref() == Some("feat-a.diff"))
        .await?;

    // A reply typed to the card denies it with that reason; main is unchanged.
    phone.reply(&card, "not yet: add a test first").await?;
    let outcome = next_of_kind(&mut mgr, DeliveryKind::Integration).await?;
    assert!(
        outcome.text.contains("not yet: add a test first"),
        "{}",
        outcome.text
    );
    mgr.ack(&[outcome.id]).await?;
    // The card says it was denied (not "answered"), with the reason.
    let denied = format!("⛔ denied by {}: not yet: add a test first", phone.human());
    phone
        .bot_says(|m| m.id == card.id && m.text.contains(&denied))
        .await?;
    assert_eq!(tip(&repo, "main")?, main_before, "denied: main unchanged");

    // Asked again and approved: main is fast-forwarded to the tip.
    let asked = integrate(&mut mgr, "feat/a", &sha).await?;
    assert_eq!(asked.status, IntegrationStatus::AwaitingApproval);
    let card = phone
        .bot_says(|m| {
            m.text.contains("Integrate app@feat/a into main at")
                && phone.is_open_card(m)
                && m.id != card.id
        })
        .await?;
    phone.choose(&card, 1).await?;
    let outcome = next_of_kind(&mut mgr, DeliveryKind::Integration).await?;
    mgr.ack(&[outcome.id]).await?;
    assert_eq!(tip(&repo, "main")?, sha, "approved: main fast-forwarded");
    let approved_by = format!("✅ approved by {}", phone.human());
    phone
        .bot_says(|m| m.id == card.id && m.text.contains(&approved_by))
        .await?;
    let retired = phone
        .bot_says(|m| m.text.contains("✅ app@feat/a integrated at"))
        .await
        .with_context(|| core.log())?;
    assert_eq!(retired.place.as_ref(), Some(&place));
    // Retired work is kept in the listings that ask for it: its sha and when.
    let integrated = format!("integrated at {}", &sha[..7]);
    phone.command("projects all").await?;
    phone
        .bot_says(|m| m.text.contains("app@feat/a") && m.text.contains(&integrated))
        .await?;
    let listed = String::from_utf8_lossy(&core.cli(&["projects", "--all"]).stdout).into_owned();
    assert!(listed.contains(&integrated), "{listed}");
    let open_only = String::from_utf8_lossy(&core.cli(&["projects"]).stdout).into_owned();
    assert!(!open_only.contains(&integrated), "{open_only}");

    // The update was said once; of the assignment's changes, the delegation, its Lead
    // running and its retirement, once each, in the Manager's place. Counted once a
    // report of the Manager's is posted: the bridge posts in the order of the core's
    // events, and the report comes after the retired Lead's session left the core (the
    // last thing about the assignment that could be said again).
    core.disconnected(assignment.session_id.as_str(), PHONE_WAIT)
        .await
        .with_context(|| core.log())?;
    mgr.client.report("MARKER-end of the scenario").await?;
    phone
        .bot_says(|m| m.text.contains("MARKER-end of the scenario"))
        .await?;
    let here = vec![Some(place.clone())];
    // Each update once, in the Manager's place (the Lead relaunched after the restart may
    // post one more of its own).
    let updates = phone.places_said("update from the Lead");
    assert!(
        !updates.is_empty() && updates.iter().all(|p| p.as_ref() == Some(&place)),
        "{updates:?}"
    );
    assert_eq!(
        phone.places_said("🧭 app@feat/a assigned by app-manager: Lead starting in "),
        here
    );
    assert_eq!(
        phone.places_said("🟢 app@feat/a: Lead running"),
        [here.clone(), here.clone()].concat(),
        "delegated, then resumed"
    );
    assert_eq!(
        phone.places_said("⏸️ app@feat/a paused: Lead stopped"),
        here
    );
    assert_eq!(phone.places_said("✅ app@feat/a integrated at"), here);
    assert!(phone.places_said("app@feat/a: Lead stopped").is_empty());
    Ok(())
}
