//! Linked hosts, with three real cores on one machine ("home", "a" and "b", each its own
//! agent directory and socket): home's `[[hosts]]` reach a and b through `shepherd link`
//! run by a local command, as `ssh -T me@box shepherd link` would run it on another
//! machine. Home mirrors their connected sessions and open asks: `shepherd hosts` says
//! where each link stands, `shepherd sessions` and `shepherd asks` list the far ones with
//! their host; `shepherd answer b:ID` and `shepherd send a:NAME` reach the far sessions
//! once, applied by their own cores. A
//! link command that cannot run is reported with why; a link whose command dies shows its
//! host's sessions as unreachable, then reconnects and lists them once.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;
use shepherd_core::protocol::{DeliveryKind, PROTOCOL_VERSION, requests};
use shepherd_harness::{Core, eventually, shepherd_bin};

const LINKED: Duration = Duration::from_secs(30);

/// The `[[hosts]]` entry that links to `far` through `shepherd link` on its socket.
fn host_entry(name: &str, far: &Core) -> String {
    format!(
        "[[hosts]]\nname = \"{name}\"\ncommand = [{:?}, \"--socket\", {:?}, \"link\"]\n\n",
        shepherd_bin().display().to_string(),
        far.socket().display().to_string()
    )
}

/// Home's view of one host (`shepherd hosts --json`), once `ready` holds for it.
async fn host_where(
    home: &Core,
    name: &str,
    what: &str,
    ready: impl Fn(&Value) -> bool,
) -> Result<Value> {
    eventually(LINKED, what, || {
        let hosts = home.cli_json(&["hosts"]).ok()?;
        let host = hosts
            .as_array()?
            .iter()
            .find(|h| h["name"] == name)?
            .clone();
        ready(&host).then_some(host)
    })
    .await
    .with_context(|| home.log())
}

/// The sessions home lists with their host (`shepherd sessions --json`), by name.
fn far_sessions(home: &Core) -> Vec<(String, String, bool)> {
    let listed = home.cli_json(&["sessions"]).unwrap_or(Value::Null);
    let mut all: Vec<(String, String, bool)> = listed
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| {
            Some((
                s["host"].as_str()?.to_string(),
                s["name"].as_str()?.to_string(),
                s["connected"].as_bool()?,
            ))
        })
        .collect();
    all.sort();
    all
}

/// The pid of the `shepherd link` process on `socket`.
fn link_pid(socket: &Path) -> Option<u32> {
    let socket = socket.display().to_string();
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            let has = |word: &str| args.contains(&word.as_bytes());
            (has("link") && has(&socket)).then_some(pid)
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_home_core_links_two_cores_and_lists_their_sessions_with_their_host() -> Result<()> {
    let a = Core::start().await?;
    let b = Core::start().await?;
    let mut lead_a = a
        .pi("0193a5c2-0000-7000-8000-0000000a0001", "lead-a")
        .await?;
    let mut lead_b = b
        .pi("0193a5c2-0000-7000-8000-0000000b0001", "lead-b")
        .await?;
    lead_b
        .client
        .call(requests::Ask {
            question: "Ship it?".into(),
            ..Default::default()
        })
        .await?;
    let config = tempfile::NamedTempFile::new()?;
    let text = format!(
        "{}{}[[hosts]]\nname = \"gone\"\ncommand = [\"/nonexistent/ssh\", \"-T\", \"me@gone\"]\n",
        host_entry("a", &a),
        host_entry("b", &b)
    );
    std::fs::write(config.path(), text)?;
    let config_path = config.path().display().to_string();
    let home = Core::start_with(&[("SHEPHERD_CONFIG", &config_path)]).await?;

    // Both links come up, each with its far core's sessions and open asks.
    let connected = |h: &Value| h["state"] == "connected";
    let host_a = host_where(&home, "a", "host a linked", |h| {
        connected(h) && h["sessions"] == 1
    })
    .await?;
    let host_b = host_where(&home, "b", "host b linked", |h| {
        connected(h) && h["sessions"] == 1 && h["open_asks"] == 1
    })
    .await?;
    assert_eq!(host_a["open_asks"], 0);
    assert_eq!(host_a["protocol"], PROTOCOL_VERSION);
    assert_eq!(host_b["core_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(host_a["connects"], 1);
    // A link command that cannot run says why, and the others are not held up by it.
    let gone = host_where(&home, "gone", "host gone failed", |h| {
        h["state"] == "failed"
    })
    .await?;
    let why = gone["error"].as_str().unwrap_or_default();
    assert!(
        why.contains("cannot run the link command") && why.contains("/nonexistent/ssh"),
        "{why}"
    );

    // Home lists the far sessions with their host; the far cores list only their own.
    assert_eq!(
        far_sessions(&home),
        vec![
            ("a".to_string(), "lead-a".to_string(), true),
            ("b".to_string(), "lead-b".to_string(), true)
        ]
    );
    assert!(
        far_sessions(&a).is_empty(),
        "a linked core's listing stays its own"
    );
    let table = String::from_utf8(home.cli(&["sessions"]).stdout)?;
    assert!(table.starts_with("HOST"), "{table}");
    assert!(table.contains("lead-b"), "{table}");
    let hosts_table = String::from_utf8(home.cli(&["hosts"]).stdout)?;
    assert!(
        hosts_table.contains("connected") && hosts_table.contains("failed"),
        "{hosts_table}"
    );

    // The human's answer and steer from home reach the far sessions, once, applied by
    // their own cores (the first answer wins there).
    let asks = home.cli_json(&["asks"])?;
    let ask = asks
        .as_array()
        .and_then(|all| all.iter().find(|a| a["host"] == "b"))
        .context("b's ask listed at home")?;
    assert_eq!(ask["question"], "Ship it?");
    let ask_ref = format!("b:{}", ask["id"]);
    let listed = String::from_utf8(home.cli(&["asks"]).stdout)?;
    assert!(listed.contains(&ask_ref), "{listed}");
    let out = home.cli(&["answer", &ask_ref, "yes, ship it"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let delivered = lead_b.next_delivery(LINKED).await?;
    assert_eq!(delivered.kind, DeliveryKind::Answer);
    assert!(
        delivered.text.contains("yes, ship it"),
        "{}",
        delivered.text
    );
    lead_b.ack(&[delivered.id]).await?;
    let again = home.cli(&["answer", &ask_ref, "no"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already answered"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(
        lead_b
            .next_delivery(Duration::from_millis(500))
            .await
            .is_err(),
        "the second answer reached the session"
    );
    let out = home.cli(&["send", "a:lead-a", "steer from home"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let steer = lead_a.next_delivery(LINKED).await?;
    assert_eq!(steer.kind, DeliveryKind::Steer);
    assert_eq!(steer.text, "steer from home");
    lead_a.ack(&[steer.id]).await?;
    for (args, says) in [
        (["answer", "zz:1", "x"], "no linked host is named `zz`"),
        (["send", "gone:lead", "x"], "host `gone` is not connected"),
    ] {
        let out = home.cli(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(err.contains(says), "{args:?}: {err}");
    }

    // What a far core announces reaches home: a session joining, one leaving.
    let lead_a2 = a
        .pi("0193a5c2-0000-7000-8000-0000000a0002", "lead-a2")
        .await?;
    eventually(LINKED, "lead-a2 mirrored", || {
        far_sessions(&home)
            .contains(&("a".to_string(), "lead-a2".to_string(), true))
            .then_some(())
    })
    .await?;
    drop(lead_a2);
    eventually(LINKED, "lead-a2 gone from home's list", || {
        (!far_sessions(&home).iter().any(|s| s.1 == "lead-a2")).then_some(())
    })
    .await?;

    // The link's command dies: a's sessions are unreachable (listed, not connected),
    // then the link comes back by itself and lists each once.
    let pid = link_pid(&a.socket()).context("the link process for a")?;
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()?;
    let dropped = host_where(&home, "a", "host a dropped", |h| {
        h["state"] != "connected" || h["connects"] == 2
    })
    .await?;
    if dropped["state"] != "connected" {
        assert!(
            far_sessions(&home).contains(&("a".to_string(), "lead-a".to_string(), false)),
            "{:?}",
            far_sessions(&home)
        );
    }
    host_where(&home, "a", "host a linked again", |h| {
        connected(h) && h["connects"] == 2
    })
    .await?;
    assert_eq!(
        far_sessions(&home)
            .iter()
            .filter(|s| s.0 == "a")
            .cloned()
            .collect::<Vec<_>>(),
        vec![("a".to_string(), "lead-a".to_string(), true)]
    );
    Ok(())
}
