//! Views built on a REAL Pi's live session file: the pinned Pi in RPC mode against the
//! scripted fake model, working in a git repository, with the real core delivering a
//! steer. Between views the worker answers a prompt (reasoning, a bash call that commits,
//! more reasoning, text), fails (a tool error, then a model error), compacts its context
//! (the `compact` RPC command), gets a steer, and runs a slow tool, which one view catches
//! without a result and the next one with it. Each view covers only what is new, and the
//! views together cover every entry of the file once.
//!
//! `SHEPHERD_RECORD_SESSIONS=<dir>` also copies the session file (`worker.jsonl`) and its
//! state during the slow tool call (`worker-mid-tool.jsonl`) there: that is how
//! `tests/fixtures/sessions/` was recorded.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::json;
use shepherd_core::protocol::{SessionStatus, ViewReason};
use shepherd_core::supervise::view::{self, BuiltView, Cursor, ViewInput, WorkerFacts};
use shepherd_harness::Core;
use shepherd_harness::fake_model::{FakeModel, ModelRequest, Reply};
use shepherd_harness::pi_process::{PiOptions, PiSession};

const LONG: Duration = Duration::from_secs(60);

const FIRST_THOUGHT: &str = "First thought: the user wants the build checked. I will record \
    a note in the repository and commit it, so the change is visible in git, and then echo a \
    greeting to prove the shell works. After that I will read the output carefully, compare \
    it with what a healthy build prints, and only then report back. If anything looks off I \
    will say so plainly instead of guessing, because a wrong green report costs more than a \
    slow one. END-OF-FIRST-THOUGHT";

/// The fake model's script: a summary for compaction requests (no tools offered), else an
/// answer chosen by the last message.
fn script(req: &ModelRequest) -> Reply {
    if req.tool_names().is_empty() {
        return Reply::text("## Goal\nSUMMARY-7: keep the build green.");
    }
    let (role, last) = req.last();
    if role == "tool" {
        return if last.contains("SLOW-DONE") {
            Reply::text("The slow step finished.")
        } else if last.contains("missing-file") {
            Reply::finish("", "content_filter")
        } else {
            Reply::text("The build is green.")
                .with_reasoning("Second thought: the output says hello and the commit landed.")
        };
    }
    if last.contains("STEER-9") {
        Reply::text("Looking at the tests now.")
            .with_reasoning("Third thought: the human wants the tests looked at first.")
    } else if last.contains("slow") {
        Reply::tool("bash", json!({"command": "sleep 2; echo SLOW-DONE"}))
    } else if last.contains("broken") {
        Reply::tool("bash", json!({"command": "cat missing-file"}))
    } else {
        Reply::tool(
            "bash",
            json!({"command": "echo note > notes.txt && git add notes.txt && \
                git -c user.name=w -c user.email=w@example.invalid commit -qm 'add notes' && \
                echo hello"}),
        )
        .with_reasoning(FIRST_THOUGHT)
    }
}

fn git(dir: &Path, args: &[&str]) -> Result<()> {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .current_dir(dir)
        .output()
        .context("running git")?;
    ensure!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// The builder's caller: one pairing's cursor, advanced view by view.
struct Watcher {
    cursor: Cursor,
    look: u32,
    cwd: String,
    file: String,
    views: Vec<BuiltView>,
}

impl Watcher {
    fn look(&mut self, reason: ViewReason) -> &BuiltView {
        self.look += 1;
        let input = ViewInput {
            cursor: &self.cursor,
            worker: WorkerFacts {
                name: "worker",
                status: &SessionStatus::Idle,
                model: Some("fake/fake-model"),
                context_percent: Some(1.5),
                context_tokens: Some(1500),
                context_window: Some(100_000),
                cwd: &self.cwd,
                repo: Some(&self.cwd),
                branch: Some("main"),
                session_file: Some(&self.file),
            },
            goal: Some("Keep the build green."),
            look: self.look,
            reason,
            now: shepherd_core::clock::now_ms(),
        };
        let built = view::build(&input);
        // Shown when the test fails (the harness captures it otherwise).
        println!("{}", built.text);
        self.cursor = built.cursor.clone();
        self.views.push(built);
        self.views.last().unwrap()
    }
}

fn occurrences(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

#[tokio::test]
async fn views_follow_a_live_pi_session_incrementally() -> Result<()> {
    let core = Core::start().await?;
    let model = FakeModel::start(script).await?;
    // Compact everything but the latest turn, so a short session has something to compact.
    std::fs::write(
        core.agent_dir().join("settings.json"),
        r#"{"compaction": {"keepRecentTokens": 1}}"#,
    )?;
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some("worker".into());
    let cwd = opts.cwd.clone();
    std::fs::create_dir_all(&cwd)?;
    git(&cwd, &["init", "-q", "-b", "main"])?;
    std::fs::write(cwd.join("README"), "worker repo\n")?;
    git(&cwd, &["add", "README"])?;
    git(&cwd, &["commit", "-qm", "initial"])?;

    let mut pi = PiSession::spawn(&model, opts).await?;
    let file = pi.session_file().await?;
    let mut w = Watcher {
        cursor: Cursor::default(),
        look: 0,
        cwd: cwd.to_string_lossy().into_owned(),
        file: file.to_string_lossy().into_owned(),
        views: Vec::new(),
    };

    // Paired before the worker did anything: no file yet, HEAD remembered.
    let v = w.look(ViewReason::Paired);
    ensure!(v.entries == 0, "{}", v.text);
    ensure!(v.text.contains("does not exist yet"), "{}", v.text);
    ensure!(v.text.contains("HEAD is "), "{}", v.text);
    ensure!(v.cursor.head.is_some());

    // 1. A prompt: reasoning, a bash call that commits, reasoning, text.
    pi.prompt("Check the build please.").await?;
    pi.wait_settled(LONG).await?;
    let v = w.look(ViewReason::Stopped);
    let t = &v.text;
    ensure!(v.entries > 0 && !v.unchanged, "{t}");
    ensure!(t.contains("- User: Check the build please."), "{t}");
    ensure!(
        t.contains("- Tool bash: echo note > notes.txt") && t.contains("-> ok: hello"),
        "{t}"
    );
    ensure!(t.contains("- Assistant: The build is green."), "{t}");
    ensure!(
        t.contains("- Reasoning: First thought") && t.contains("more chars)"),
        "the long reasoning is cut with a marker: {t}"
    );
    ensure!(!t.contains("END-OF-FIRST-THOUGHT"), "{t}");
    ensure!(t.contains("- Reasoning: Second thought"), "{t}");
    ensure!(
        t.contains("New commits (1):") && t.contains(" add notes"),
        "{t}"
    );
    ensure!(
        v.cursor.last_turn_at.is_some() && t.contains("last turn "),
        "{t}"
    );
    ensure!(v.pending_tool_calls == 0, "{t}");

    // 2. A tool error, then a model error.
    pi.prompt("Now the broken part.").await?;
    pi.wait_settled(LONG).await?;
    let v = w.look(ViewReason::Stopped);
    let t = &v.text;
    ensure!(
        !t.contains("Check the build please."),
        "old entries again: {t}"
    );
    ensure!(t.contains("- User: Now the broken part."), "{t}");
    ensure!(
        t.contains("- Tool bash: cat missing-file -> ERROR: cat: missing-file")
            && t.contains("Command exited with code 1"),
        "{t}"
    );
    ensure!(
        t.contains("ERROR: the model call failed: Provider finish_reason: content_filter"),
        "{t}"
    );
    ensure!(t.contains("HEAD unchanged at"), "{t}");

    // 3. Compaction.
    pi.command(json!({"type": "compact"})).await?;
    let v = w.look(ViewReason::Look);
    let t = &v.text;
    ensure!(
        t.contains("The worker compacted its context") && t.contains("SUMMARY-7"),
        "{t}"
    );

    // 4. A steer from the core, which starts a turn.
    let out = core.cli(&["send", "worker", "STEER-9 look at the tests"]);
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    pi.wait_settled(LONG).await?;
    let v = w.look(ViewReason::Stopped);
    let t = &v.text;
    ensure!(
        t.contains("- Steer from cli: STEER-9 look at the tests"),
        "{t}"
    );
    ensure!(t.contains("- Assistant: Looking at the tests now."), "{t}");
    ensure!(t.contains("- Reasoning: Third thought"), "{t}");

    // 5. A slow tool: one view while it runs, one after.
    pi.prompt("Run the slow step.").await?;
    pi.wait_for(LONG, |r| r["type"] == "tool_execution_start")
        .await?;
    let mid = std::fs::read(&file)?;
    let v = w.look(ViewReason::Look);
    let t = &v.text;
    ensure!(v.pending_tool_calls == 1, "{t}");
    ensure!(
        t.contains("- Tool bash: sleep 2; echo SLOW-DONE -> no result yet"),
        "{t}"
    );
    ensure!(
        t.contains("## Tool calls still without a result (1)"),
        "{t}"
    );
    ensure!(v.cursor.pending[0].name == "bash");
    pi.wait_settled(LONG).await?;
    let v = w.look(ViewReason::Stopped);
    let t = &v.text;
    ensure!(
        v.pending_tool_calls == 0 && v.cursor.pending.is_empty(),
        "{t}"
    );
    ensure!(
        t.contains("- Result of the earlier tool call bash") && t.contains("ok: SLOW-DONE"),
        "{t}"
    );
    ensure!(t.contains("- Assistant: The slow step finished."), "{t}");
    ensure!(!t.contains("without a result ("), "{t}");

    // 6. Nothing new.
    let v = w.look(ViewReason::Timer);
    ensure!(v.unchanged && v.entries == 0, "{}", v.text);
    ensure!(v.text.contains("Nothing new since the previous view."));

    // Every entry of the file (all but the header line) was covered exactly once.
    let full = std::fs::read_to_string(&file)?;
    let total: u32 = w.views.iter().map(|v| v.entries).sum();
    ensure!(
        total as usize == full.lines().count() - 1,
        "views covered {total} entries of {}",
        full.lines().count() - 1
    );
    for prompt in [
        "Check the build please.",
        "Now the broken part.",
        "Run the slow step.",
    ] {
        let n: usize = w.views.iter().map(|v| occurrences(&v.text, prompt)).sum();
        ensure!(n == 1, "{prompt:?} shown {n} times");
    }
    ensure!(w.cursor.offset == full.len() as u64);

    if let Some(dir) = std::env::var_os("SHEPHERD_RECORD_SESSIONS").map(PathBuf::from) {
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("worker.jsonl"), &full)?;
        std::fs::write(dir.join("worker-mid-tool.jsonl"), &mid)?;
    }
    pi.shutdown().await?;
    Ok(())
}
