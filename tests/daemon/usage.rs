//! `usage` against the real daemon with raw clients: who sees which sessions (a Pi its own
//! tree, the CLI any session's tree or everything with a session file), each session
//! counted once, and sessions whose file cannot be counted flagged, never estimated.
//! The session files are the recorded real Pi file (`tests/fixtures/sessions/worker.jsonl`)
//! with its header's id rewritten to each test session's id.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;
use shepherd_core::protocol::{ClientKind, ErrorCode, requests};
use shepherd_harness::{Core, Pi, error_code, registration};

fn recorded() -> String {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sessions/worker.jsonl");
    std::fs::read_to_string(path).unwrap()
}

/// The recorded session file as session `id`'s, written to `dir`.
fn session_file(dir: &Path, id: &str) -> String {
    let text = recorded();
    let (head, rest) = text.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(head).unwrap();
    header["id"] = Value::String(id.to_string());
    let path = dir.join(format!("{id}.jsonl"));
    std::fs::write(&path, format!("{header}\n{rest}")).unwrap();
    path.to_string_lossy().into_owned()
}

/// The recorded file's total input tokens (summed independently as plain JSON).
fn recorded_input() -> u64 {
    recorded()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|e| {
            let u = match e["type"].as_str()? {
                "message" => e["message"]["usage"].clone(),
                _ => e["usage"].clone(),
            };
            u["input"].as_u64()
        })
        .sum()
}

async fn pi_with_file(core: &Core, id: &str, name: &str, file: Option<String>) -> Result<Pi> {
    let mut reg = registration(id, name, core.state_dir().as_path());
    reg.session_file = file;
    Ok(Pi::register_full(&core.socket(), reg).await?.0)
}

#[tokio::test]
async fn a_pi_sees_its_own_tree_and_the_cli_sees_any_or_all() -> Result<()> {
    let core = Core::start().await?;
    let files = tempfile::tempdir()?;
    let a = "aaaa0000-0000-7000-8000-000000000001";
    let b = "bbbb0000-0000-7000-8000-000000000002";
    let mut pa = pi_with_file(&core, a, "usage-a", Some(session_file(files.path(), a))).await?;
    let _pb = pi_with_file(&core, b, "usage-b", Some(session_file(files.path(), b))).await?;
    // Known, but without a session file: not in "everything", and not counted when named.
    let _pc = pi_with_file(
        &core,
        "cccc0000-0000-7000-8000-000000000003",
        "usage-c",
        None,
    )
    .await?;
    let input = recorded_input();

    // A Pi without `session`: itself.
    let mine = pa.client.call(requests::Usage::default()).await?;
    assert!(mine.complete, "{mine:?}");
    assert_eq!(mine.sessions.len(), 1);
    assert_eq!(mine.sessions[0].session_id.as_str(), a);
    assert_eq!(mine.sessions[0].name, "usage-a");
    assert_eq!(mine.total.input, input);
    assert_eq!(mine.total.records, 8);
    let models: Vec<Option<&str>> = mine.models.iter().map(|m| m.model.as_deref()).collect();
    assert_eq!(models, [Some("fake/fake-model"), None]);
    // Naming itself (by exact id, as sessions name targets) is the same; another
    // session's tree does not exist for it.
    let named = pa
        .client
        .call(requests::Usage {
            session: Some(a.into()),
            ..Default::default()
        })
        .await?;
    assert_eq!(named, mine);
    let err = pa
        .client
        .call(requests::Usage {
            session: Some(b.into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(error_code(&err.into()), Some(ErrorCode::UnknownSession));

    // The CLI: everything with a session file, each once.
    let mut cli = core.client(ClientKind::Cli).await?;
    let all = cli.call(requests::Usage::default()).await?;
    assert!(all.complete, "{all:?}");
    let mut ids: Vec<&str> = all.sessions.iter().map(|s| s.session_id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, [a, b]);
    assert_eq!(all.total.input, 2 * input);
    assert_eq!(all.total.records, 16);
    // One session's tree, by unique id prefix.
    let one = cli
        .call(requests::Usage {
            session: Some("bbbb".into()),
            ..Default::default()
        })
        .await?;
    assert_eq!(one.sessions.len(), 1);
    assert_eq!(one.sessions[0].session_id.as_str(), b);
    // A session without a file: named, it is not counted and says why.
    let none = cli
        .call(requests::Usage {
            session: Some("usage-c".into()),
            ..Default::default()
        })
        .await?;
    assert!(!none.complete);
    assert_eq!(none.total.records, 0);
    assert!(
        none.missing[0].reason.contains("no session file"),
        "{none:?}"
    );
    // An unknown selector is the usual refusal.
    let err = cli
        .call(requests::Usage {
            session: Some("nobody".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(error_code(&err.into()), Some(ErrorCode::UnknownSession));
    Ok(())
}

#[tokio::test]
async fn a_garbage_or_foreign_file_is_incomplete_coverage_and_the_cli_says_so() -> Result<()> {
    let core = Core::start().await?;
    let files = tempfile::tempdir()?;
    let good = "dddd0000-0000-7000-8000-000000000004";
    let bad = "eeee0000-0000-7000-8000-000000000005";
    let foreign = "ffff0000-0000-7000-8000-000000000006";
    let _g = pi_with_file(
        &core,
        good,
        "usage-good",
        Some(session_file(files.path(), good)),
    )
    .await?;
    let garbage = files.path().join("garbage.jsonl");
    std::fs::write(&garbage, "\u{0}\u{1}binary garbage\n")?;
    let _b = pi_with_file(
        &core,
        bad,
        "usage-bad",
        Some(garbage.to_string_lossy().into()),
    )
    .await?;
    // A file whose header names another session.
    let _f = pi_with_file(
        &core,
        foreign,
        "usage-foreign",
        Some(session_file(files.path(), good)),
    )
    .await?;

    let report = core.cli_json(&["usage"])?;
    assert_eq!(report["complete"], false, "{report:#}");
    let missing: Vec<&str> = report["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(missing.len(), 2, "{report:#}");
    assert!(
        missing.contains(&bad) && missing.contains(&foreign),
        "{report:#}"
    );
    // Only the readable session is in the total.
    assert_eq!(report["total"]["input"], recorded_input());

    let out = core.cli(&["usage"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("coverage incomplete: 2 sessions not counted"),
        "{text}"
    );
    assert!(
        text.contains(&format!("usage-bad ({bad}): "))
            && text.contains("line 1 is not a session entry"),
        "{text}"
    );
    assert!(
        text.contains(&format!("the header names session {good}, not {foreign}")),
        "{text}"
    );
    assert!(
        text.contains("usage-good") && text.contains("fake/fake-model"),
        "{text}"
    );
    Ok(())
}

/// A session's `session_file` is its word, so untrusted input: `/dev/zero` (which never
/// ends), a FIFO nobody writes to (whose open blocks) and a directory are not counted,
/// each with what it is, and nothing waits for them: the report answers, other clients
/// are served meanwhile, a new session registers, and SIGTERM stops the core. (Before:
/// `/dev/zero` grew the core until it aborted, and each report left a thread blocked on the
/// FIFO for good, which also kept SIGTERM from ending the core.)
#[tokio::test]
async fn a_session_file_that_is_no_regular_file_is_not_counted_and_blocks_nothing() -> Result<()> {
    let mut core = Core::start().await?;
    let files = tempfile::tempdir()?;
    let fifo = files.path().join("fifo.jsonl");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status()?;
    assert!(made.success());
    let good = "a1110000-0000-7000-8000-000000000001";
    let odd = [
        (
            "a2220000-0000-7000-8000-000000000002",
            "/dev/zero".to_string(),
            "a character device",
        ),
        (
            "a3330000-0000-7000-8000-000000000003",
            fifo.to_string_lossy().into_owned(),
            "a FIFO",
        ),
        (
            "a4440000-0000-7000-8000-000000000004",
            files.path().to_string_lossy().into_owned(),
            "a directory",
        ),
    ];
    let _g = pi_with_file(
        &core,
        good,
        "usage-good",
        Some(session_file(files.path(), good)),
    )
    .await?;
    let mut pis = Vec::new();
    for (i, (id, file, _)) in odd.iter().enumerate() {
        pis.push(pi_with_file(&core, id, &format!("usage-odd-{i}"), Some(file.clone())).await?);
    }
    let bound = std::time::Duration::from_secs(30);
    let mut cli = core.client(ClientKind::Cli).await?;
    let mut bystander = core.client(ClientKind::Cli).await?;
    // Several reports at once, and one from the FIFO's own session.
    for id in 9000..9003 {
        let usage = requests::Usage {
            id,
            ..Default::default()
        };
        cli.send(&shepherd_core::protocol::ClientMsg::Usage(usage))
            .await?;
    }
    let own = tokio::time::timeout(bound, pis[1].client.call(requests::Usage::default()))
        .await
        .expect("a session's own report answers")?;
    assert!(
        !own.complete && own.missing[0].reason.contains("a FIFO"),
        "{own:?}"
    );
    tokio::time::timeout(bound, bystander.ping())
        .await
        .expect("another client is served")?;
    let all = tokio::time::timeout(bound, cli.call(requests::Usage::default()))
        .await
        .expect("the report answers")?;
    assert!(!all.complete, "{all:?}");
    assert_eq!(all.total.input, recorded_input(), "{all:?}");
    for (id, file, what) in &odd {
        let missing = all
            .missing
            .iter()
            .find(|m| m.session_id.as_str() == *id)
            .unwrap_or_else(|| panic!("{id} is not listed as not counted: {all:?}"));
        assert!(
            missing.reason.contains(what)
                && missing.reason.contains("not a regular file")
                && missing.reason.contains(file.as_str()),
            "{missing:?}"
        );
    }
    // The CLI says why.
    let text = String::from_utf8_lossy(&core.cli(&["usage"]).stdout).into_owned();
    assert!(
        text.contains("coverage incomplete: 3 sessions not counted") && text.contains("a FIFO"),
        "{text}"
    );
    // Registrations go on, and the core stops on SIGTERM.
    let _late = pi_with_file(
        &core,
        "a5550000-0000-7000-8000-000000000005",
        "usage-late",
        None,
    );
    tokio::time::timeout(bound, _late)
        .await
        .expect("a registration answers")?;
    let status = core.terminate()?;
    assert!(status.success(), "{status:?}");
    Ok(())
}
