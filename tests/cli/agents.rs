//! `shepherd agents` and `list_agents` against the real core, definitions in real files:
//! with none written the bundled scout, implementer and reviewer are listed; a global
//! file in the core's agent dir overrides a bundled one, a project file in the directory
//! given (`--cwd`, or the command's own directory) overrides both, a disabled one is
//! marked, and a broken one is listed at the end with its error naming the file and the
//! field; `--json` prints the protocol's `AgentDef` objects. A Pi session that leaves out
//! `cwd` gets its own directory's definitions, a bridge without one only the global and
//! bundled ones, and a relative `cwd` is refused.

use anyhow::{Context, Result};
use serde_json::Value;
use shepherd_core::client::{Client, ClientError};
use shepherd_core::protocol::{ClientKind, DefSource, ErrorCode, requests};
use shepherd_harness::{Core, Pi};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `shepherd agents <args>` with a wide table; fails the test on a non-zero exit.
fn agents(core: &Core, args: &[&str]) -> String {
    let out = core
        .command()
        .env("COLUMNS", "250")
        .arg("agents")
        .args(args)
        .output()
        .expect("running shepherd");
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

fn write(dir: &std::path::Path, file: &str, body: &str) -> Result<std::path::PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(file);
    std::fs::write(&path, body)?;
    Ok(path)
}

fn row<'a>(table: &'a str, name: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no row {name}: {table}"))
}

#[tokio::test]
async fn agents_lists_definitions_by_precedence_with_broken_files_last() -> Result<()> {
    let core = Core::start().await?;

    // Nothing written: the bundled ones.
    let empty = tempfile::tempdir()?;
    let dir = empty.path().to_str().context("utf-8")?;
    let table = agents(&core, &["--cwd", dir]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("NAME ")
            && lines[0].contains(" SOURCE ")
            && lines[0].ends_with("DESCRIPTION"),
        "{table}"
    );
    assert!(
        lines[0].contains(" MODEL ") && lines[0].contains(" TOOLS "),
        "{table}"
    );
    assert_eq!(lines.len(), 4, "{table}");
    for (name, tools) in [
        ("implementer", "all"),
        ("reviewer", "read,grep,find,ls"),
        ("scout", "read,grep,find,ls"),
    ] {
        let r = row(&table, name);
        assert!(
            r.contains(" bundled ") && r.contains(&format!(" {tools} ")),
            "{table}"
        );
    }
    assert!(
        row(&table, "scout").contains("Read-only reconnaissance"),
        "{table}"
    );

    // A global scout and a global docs; in the project a docs, a disabled reviewer and a
    // broken file.
    let global = core.agent_dir().join("agents");
    write(
        &global,
        "scout.md",
        "---\nname: scout\ndescription: Our scout.\nmodel: m-global\nthinking: low\n---\nLook.\n",
    )?;
    write(
        &global,
        "docs.md",
        "---\nname: docs\ndescription: Global docs.\n---\n",
    )?;
    let work = tempfile::tempdir()?;
    let project = work.path().join(".pi").join("agents");
    let docs = write(
        &project,
        "docs.md",
        "---\nname: docs\ndescription: Project docs.\ntools: read, edit\nexcludeTools: [bash]\nagents: [scout]\n---\nWrite docs.\n",
    )?;
    write(
        &project,
        "reviewer.md",
        "---\nname: reviewer\ndescription: Not here.\nenabled: false\n---\n",
    )?;
    let broken = write(
        &project,
        "helper.md",
        "---\nname: helper\ndescription: Helps.\ncolour: red\n---\n",
    )?;
    let wdir = work.path().canonicalize()?;
    let wdir = wdir.to_str().context("utf-8")?;

    let table = agents(&core, &["--cwd", wdir]);
    let lines: Vec<&str> = table.lines().collect();
    let names: Vec<&str> = lines[1..5]
        .iter()
        .map(|l| l.split_whitespace().next().unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        ["docs", "implementer", "reviewer", "scout"],
        "{table}"
    );
    let r = row(&table, "docs");
    assert!(
        r.contains(" project ")
            && r.contains(" read,edit except bash ")
            && r.ends_with("Project docs."),
        "{table}"
    );
    assert!(
        row(&table, "reviewer").contains(" project (disabled) "),
        "{table}"
    );
    let r = row(&table, "scout");
    assert!(
        r.contains(" global ") && r.contains(" m-global (low) ") && r.ends_with("Our scout."),
        "{table}"
    );
    assert!(row(&table, "implementer").contains(" bundled "), "{table}");
    // The broken file at the end, with the file and the field.
    assert_eq!(lines[5], "", "{table}");
    assert!(lines[6].starts_with("1 definition is broken"), "{table}");
    assert_eq!(
        lines[7],
        format!(
            "  helper (project): {}: frontmatter: unknown field `colour`, expected one of `name`, \
             `description`, `model`, `thinking`, `tools`, `excludeTools`, `agents`, `enabled` at line 4 column 1",
            broken.display()
        ),
        "{table}"
    );
    assert_eq!(lines.len(), 8, "{table}");

    // Without --cwd: the command's own directory.
    let out = core
        .command()
        .env("COLUMNS", "250")
        .current_dir(work.path())
        .arg("agents")
        .output()?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), table);
    // Elsewhere, the project's definitions do not count.
    let elsewhere = agents(&core, &["--cwd", dir]);
    assert!(row(&elsewhere, "docs").contains(" global "), "{elsewhere}");
    assert!(
        row(&elsewhere, "reviewer").contains(" bundled "),
        "{elsewhere}"
    );
    assert!(!elsewhere.contains("helper"), "{elsewhere}");

    // --json: the AgentDef records.
    let json = core.cli_json(&["agents", "--cwd", wdir])?;
    let defs = json.as_array().context("an array")?;
    assert_eq!(defs.len(), 5, "{json:#}");
    let docs_json = &defs[0];
    assert_eq!(
        docs_json,
        &serde_json::json!({
            "name": "docs",
            "description": "Project docs.",
            "source": "project",
            "path": docs.display().to_string(),
            "model": null,
            "thinking": null,
            "tools": ["read", "edit"],
            "exclude_tools": ["bash"],
            "agents": ["scout"],
            "enabled": true,
            "error": null,
        })
    );
    let last = defs.last().context("last")?;
    assert_eq!(last["name"], "helper");
    assert!(
        last["error"]
            .as_str()
            .unwrap_or_default()
            .contains("unknown field `colour`")
    );
    let bundled: Vec<&Value> = defs.iter().filter(|d| d["source"] == "bundled").collect();
    assert_eq!(bundled.len(), 1, "only implementer stays bundled: {json:#}");
    assert_eq!(bundled[0]["path"], Value::Null);

    // A directory that is not there.
    let out = core
        .command()
        .args(["agents", "--cwd", "/nonexistent/shepherd-agents"])
        .output()?;
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--cwd /nonexistent/shepherd-agents: ")
            && text(&out.stderr).contains("give an existing directory"),
        "{}",
        text(&out.stderr)
    );
    Ok(())
}

#[tokio::test]
async fn list_agents_takes_a_pi_sessions_own_cwd() -> Result<()> {
    let core = Core::start().await?;
    let work = tempfile::tempdir()?;
    write(
        &work.path().join(".pi").join("agents"),
        "docs.md",
        "---\nname: docs\ndescription: Project docs.\n---\n",
    )?;
    write(
        &core.agent_dir().join("agents"),
        "scout.md",
        "---\nname: scout\ndescription: Our scout.\n---\n",
    )?;

    // A Pi session leaving cwd out: its own directory's project definitions.
    let mut pi = Pi::register(&core.socket(), "ag-pi-0001", "app", work.path()).await?;
    let defs = pi.client.call(requests::ListAgents::default()).await?;
    let find = |defs: &[shepherd_core::protocol::AgentDef], name: &str| {
        defs.iter().find(|d| d.name == name).map(|d| d.source)
    };
    assert_eq!(find(&defs, "docs"), Some(DefSource::Project), "{defs:?}");
    assert_eq!(find(&defs, "scout"), Some(DefSource::Global), "{defs:?}");

    // A bridge without a cwd: global and bundled only.
    let mut bridge = Client::connect(&core.socket(), ClientKind::Bridge, "test-bridge").await?;
    let defs = bridge.call(requests::ListAgents::default()).await?;
    assert_eq!(find(&defs, "docs"), None, "{defs:?}");
    assert_eq!(find(&defs, "scout"), Some(DefSource::Global), "{defs:?}");
    assert_eq!(
        find(&defs, "reviewer"),
        Some(DefSource::Bundled),
        "{defs:?}"
    );

    // A relative cwd is refused, saying what to send.
    let err = bridge
        .call(requests::ListAgents {
            cwd: Some("src/app".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    match err {
        ClientError::Remote { code, message, .. } => {
            assert_eq!(code, ErrorCode::InvalidArgument);
            assert!(message.contains("not an absolute path"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    Ok(())
}

/// A repository's agent definitions are untrusted input. A frontmatter nested 20 000
/// levels deep (40 KB; before: seconds of the hub's own time, parsed twice), one of 200 KB
/// (before: no answer from the core for over 20 s, SIGTERM ignored) and a FIFO nobody
/// writes to are listed as broken with the reason, a launch naming one is refused with it,
/// and meanwhile another client is served; SIGTERM right after such a launch stops the core.
#[tokio::test]
async fn deep_huge_or_fifo_definitions_are_broken_with_the_reason_and_block_no_one() -> Result<()> {
    let mut core = Core::start().await?;
    let work = tempfile::tempdir()?;
    let dir = work.path().join(".pi").join("agents");
    let nested = |n: usize| {
        format!(
            "---\nname: {}\ndescription: {}x{}\n---\nBody.\n",
            if n > 50_000 { "huge" } else { "deep" },
            "[".repeat(n),
            "]".repeat(n)
        )
    };
    write(&dir, "deep.md", &nested(20_000))?;
    write(&dir, "huge.md", &nested(100_000))?;
    let made = std::process::Command::new("mkfifo")
        .arg(dir.join("pipe.md"))
        .status()?;
    assert!(made.success());
    let bound = std::time::Duration::from_secs(30);
    let mut pi = Pi::register(&core.socket(), "ag-pi-0003", "app", work.path()).await?;
    let mut bystander = Client::connect(&core.socket(), ClientKind::Cli, "bystander").await?;

    // A launch naming each is refused with the file's reason; a bystander is served.
    for (name, why) in [
        ("huge", "too large"),
        ("deep", "too deep"),
        ("pipe", "a FIFO"),
    ] {
        let launch = pi.client.call(requests::DelegateAgent {
            definition: name.into(),
            task: "x".into(),
            ..Default::default()
        });
        let (launched, pinged) =
            tokio::time::timeout(bound, async { tokio::join!(launch, bystander.ping()) })
                .await
                .with_context(|| {
                    format!("no answer to a launch of {name} or to a bystander's ping")
                })?;
        pinged?;
        match launched.expect_err("refused") {
            ClientError::Remote {
                message, details, ..
            } => {
                assert_eq!(
                    details.as_ref().map(|d| d["reason"].clone()),
                    Some(Value::from("unknown_definition")),
                    "{message}"
                );
                assert!(
                    message.contains(&format!("{name}.md")) && message.contains(why),
                    "{name}: {message}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
    // Listed as broken, each with its reason.
    let defs = tokio::time::timeout(bound, pi.client.call(requests::ListAgents::default()))
        .await
        .context("list_agents answers")??;
    for (name, why) in [
        ("huge", "too large"),
        ("deep", "too deep"),
        ("pipe", "a FIFO"),
    ] {
        let def = defs
            .iter()
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("{name} is not listed: {defs:?}"));
        let error = def.error.as_deref().unwrap_or_default();
        assert!(error.contains(why), "{name}: {error}");
    }
    // SIGTERM right after a launch of the largest: the core stops.
    pi.client
        .send(&shepherd_core::protocol::ClientMsg::DelegateAgent(
            requests::DelegateAgent {
                id: 9000,
                definition: "huge".into(),
                task: "x".into(),
                ..Default::default()
            },
        ))
        .await?;
    let status = core.terminate()?;
    assert!(status.success(), "{status:?}");
    Ok(())
}
