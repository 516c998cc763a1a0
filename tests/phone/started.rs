//! Starting and continuing work from the phone, on both phones, with REAL Pi sessions the
//! core launches (headless) against the scripted model below: `/new`, then `app` chosen
//! and `--branch feat/new --agent reviewer TASK-NEW …` as its task, starts a session in a
//! new linked worktree on a new branch; its first run gets the task (started as the `reviewer` agent definition: its prompt reaches the
//! model, and still does once continued; an unknown definition is refused before any
//! branch is made) and its result reaches its place; `/close` there ends it (its place says
//! so) and `/continue MORE-WORK` there brings the same session back on its own file, its
//! next run getting the message. The refusals say why: an existing branch, an unknown
//! project (naming the known ones). `/new` alone offers the projects (Telegram: a button
//! each, whose prompt's reply is the task; Matrix: a line each, replied to with the task).

use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;
use shepherd_harness::eventually;
use shepherd_harness::fake_model::{FakeModel, ModelRequest, Reply};
use shepherd_harness::git_repo::git;
use shepherd_harness::phone::{MatrixPhone, Phone, TelegramPhone};
use shepherd_harness::synapse::skip_e2e;
use shepherd_harness::workers::worker_core_for;

const LONG: Duration = Duration::from_secs(90);

/// The started session's model: the task writes a file with bash, then says RESULT-NEW;
/// the continuing message is answered RESULT-MORE.
fn script(req: &ModelRequest) -> Reply {
    let (role, last) = req.last();
    if role == "tool" {
        return Reply::text(format!("RESULT-NEW {}", last.trim()));
    }
    if last.contains("TASK-NEW") {
        return Reply::tool(
            "bash",
            json!({ "command": "echo made > new.txt && echo WROTE" }),
        );
    }
    if last.contains("MORE-WORK") {
        return Reply::text("RESULT-MORE the tests pass");
    }
    Reply::text("nothing to do")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_telegram_new_starts_a_session_on_a_new_branch_and_continue_brings_it_back() -> Result<()>
{
    new_and_continue_on(TelegramPhone::start().await?).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_matrix_new_starts_a_session_on_a_new_branch_and_continue_brings_it_back() -> Result<()>
{
    if skip_e2e() {
        return Ok(());
    }
    new_and_continue_on(MatrixPhone::start().await?).await
}

async fn new_and_continue_on(mut phone: impl Phone) -> Result<()> {
    let src = tempfile::tempdir()?;
    let repo = src.path().join("app");
    std::fs::create_dir_all(&repo)?;
    git(&repo, &["init", "-q", "-b", "main"])?;
    std::fs::write(repo.join("README"), "x\n")?;
    git(&repo, &["add", "."])?;
    git(&repo, &["commit", "-q", "-m", "init"])?;
    let roots = serde_json::to_string(&[src.path().display().to_string()])?;
    let model = FakeModel::start(script).await?;
    let core = worker_core_for(
        &model,
        "headless",
        &phone,
        &[("SHEPHERD_PROJECTS__ROOTS", &roots)],
    )
    .await?;
    phone.ready().await?;
    // An agent definition the new session is started as: its prompt reaches the model.
    let agents = core.agent_dir().join("agents");
    std::fs::create_dir_all(&agents)?;
    std::fs::write(
        agents.join("reviewer.md"),
        "---\nname: reviewer\ndescription: reviews\n---\nREVIEWER-PROMPT: keep changes small.\n",
    )?;

    // `/new` alone offers the projects; choosing one asks for the task, and the reply
    // (with `--branch` first) starts the session.
    phone.command("new").await?;
    let list = phone
        .bot_says(|m| m.text.starts_with("▶️ Start a session in which project?"))
        .await
        .with_context(|| core.log())?;
    let prompt = phone.pick_choice(&list, "▶️ app").await?;
    phone
        .reply(
            &prompt,
            "--branch feat/new --agent reviewer TASK-NEW write the file",
        )
        .await?;
    let starting = phone
        .bot_says(|m| {
            m.text
                .contains("▶️ starting app@feat/new on the new branch feat/new")
        })
        .await
        .with_context(|| core.log())?;
    assert!(
        starting.text.contains("app-feat-new") || starting.text.contains("feat"),
        "{}",
        starting.text
    );
    let session = eventually(LONG, "the new session to connect", || {
        let list = core.cli_json(&["sessions"]).ok()?;
        list.as_array()?
            .iter()
            .find(|s| s["branch"] == "feat/new")
            .cloned()
    })
    .await
    .with_context(|| core.log())?;
    let id = session["id"].as_str().context("an id")?.to_string();
    let name = session["name"].as_str().context("a name")?.to_string();
    let checkout = std::path::PathBuf::from(session["cwd"].as_str().context("a cwd")?);
    assert_ne!(
        checkout,
        repo.canonicalize()?,
        "a linked worktree, not the primary"
    );
    let place = phone.place_of(&name).await?;
    let result = phone
        .bot_says(|m| phone.thread_of(m) == place && m.text.contains("RESULT-NEW WROTE"))
        .await
        .with_context(|| core.log())?;
    assert!(!result.text.is_empty());
    assert_eq!(std::fs::read_to_string(checkout.join("new.txt"))?, "made\n");
    let first = model.requests();
    assert!(
        first
            .iter()
            .any(|r| r.transcript().contains("TASK-NEW write the file")),
        "the first run got the task"
    );
    assert!(
        first.iter().all(|r| r
            .transcript()
            .contains("REVIEWER-PROMPT: keep changes small.")),
        "started as the reviewer definition"
    );
    // A definition nobody has is refused before anything is made.
    phone
        .command("new app --branch feat/other --agent nobody try")
        .await?;
    phone
        .bot_says(|m| m.text.contains("no agent definition named \"nobody\""))
        .await
        .with_context(|| core.log())?;
    assert!(
        !std::process::Command::new("git")
            .args(["rev-parse", "--verify", "-q", "refs/heads/feat/other"])
            .current_dir(&repo)
            .status()?
            .success(),
        "no branch made for an unknown definition"
    );

    // The branch exists now: a second /new on it is refused, saying so; so is a project
    // nobody knows.
    phone.command("new app --branch feat/new again").await?;
    phone
        .bot_says(|m| m.text.contains("branch feat/new exists in app"))
        .await?;
    phone.command("new nowhere do it").await?;
    phone
        .bot_says(|m| m.text.contains("no project \"nowhere\"; known: app"))
        .await?;

    // `/close` in its place ends it; `/continue` there brings the same session back.
    let p = phone.prefix();
    phone.type_in(&place, &format!("{p}close")).await?;
    phone
        .bot_says(|m| m.text.contains("⏹ closing") && m.text.contains(&name))
        .await
        .with_context(|| core.log())?;
    phone
        .bot_says(|m| phone.thread_of(m) == place && m.text.contains(&format!("{name} closed")))
        .await
        .with_context(|| core.log())?;
    phone
        .type_in(&place, &format!("{p}continue MORE-WORK run the tests"))
        .await?;
    phone
        .bot_says(|m| m.text.contains("▶️ continuing") && m.text.contains(&name))
        .await
        .with_context(|| core.log())?;
    phone
        .bot_says(|m| phone.thread_of(m) == place && m.text.contains(&format!("{name} is back")))
        .await
        .with_context(|| core.log())?;
    phone
        .bot_says(|m| phone.thread_of(m) == place && m.text.contains("RESULT-MORE the tests pass"))
        .await
        .with_context(|| core.log())?;
    let back = core.connected_session(&name, LONG).await?;
    assert_eq!(back["id"], id.as_str(), "the same session id");
    let asked = model.requests();
    let resumed = asked.last().context("a request")?.transcript();
    assert!(
        resumed.contains("TASK-NEW") && resumed.contains("MORE-WORK"),
        "the continued run has its earlier conversation and the message"
    );
    assert!(
        resumed.contains("REVIEWER-PROMPT"),
        "continued as the same definition"
    );

    // `shepherd close` ends it too.
    let out = core.cli(&["close", &name]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("closed "));
    Ok(())
}
