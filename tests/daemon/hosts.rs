//! Linked hosts, with three real cores on one machine ("home", "a" and "b", each its own
//! agent directory and socket): home's `[[hosts]]` reach a and b through `shepherd link`
//! run by a local command, as `ssh -T me@box shepherd link` would run it on another
//! machine. Home mirrors their connected sessions and open asks: `shepherd hosts` says
//! where each link stands, `shepherd sessions` and `shepherd asks` list the far ones with
//! their host; `shepherd answer b:ID` and `shepherd send a:NAME` reach the far sessions
//! once, applied by their own cores. A
//! link command that cannot run is reported with why; a link whose command dies shows its
//! host's sessions as unreachable, then reconnects and lists them once; a bridge at home
//! hears the far asks opened and answered, those of the time the link was down once. The
//! herd's Chief on home and a Lead on a linked host mail each other (also through a real
//! sshd), once each however often either core is killed.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;
use shepherd_core::protocol::{
    ClientKind, DeliveryKind, PROTOCOL_VERSION, Role, ServerMsg, Superior, requests,
};
use shepherd_harness::{Core, eventually, link_pid, next_event_where, shepherd_bin};

const LINKED: Duration = Duration::from_secs(30);

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

/// `pi`'s next delivery, which must be `kind` with `text`; acknowledged.
async fn receives(pi: &mut shepherd_harness::Pi, kind: DeliveryKind, text: &str) -> Result<()> {
    let got = pi.next_delivery(LINKED).await?;
    assert_eq!((got.kind, got.text.as_str()), (kind, text));
    pi.ack(&[got.id]).await?;
    Ok(())
}

/// Make `chief` the herd's Chief (the Chief's lease on its core).
async fn become_chief(chief: &mut shepherd_harness::Pi) -> Result<()> {
    chief
        .client
        .call(requests::SetRole {
            role: Role::Chief,
            ..Default::default()
        })
        .await?;
    Ok(())
}

/// `lead`'s `message_supervisor` of `text`, sent again until it goes to the herd's Chief
/// (its core learns who that is once its link says so; before, it goes to the human).
async fn up_to_the_chief(
    lead: &mut shepherd_harness::Pi,
    text: &str,
    home: &Core,
) -> Result<shepherd_core::protocol::ReportsTo> {
    let deadline = tokio::time::Instant::now() + LINKED;
    loop {
        let routed = lead
            .client
            .call(requests::MessageSupervisor {
                text: text.into(),
                ..Default::default()
            })
            .await?;
        if routed.to.to == Superior::Chief {
            return Ok(routed.to);
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "never routed to the herd's Chief: {}",
            home.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
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
        a.host_entry("a"),
        b.host_entry("b")
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
    let only_b = home.cli_json(&["sessions", "--host", "b"])?;
    let names: Vec<&str> = only_b
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["lead-b"]);
    assert_eq!(
        home.cli_json(&["sessions", "--host", "here"])?,
        serde_json::json!([])
    );
    let b_asks = home.cli_json(&["asks", "--host", "b"])?;
    assert_eq!(b_asks.as_array().map(Vec::len), Some(1), "{b_asks}");
    assert_eq!(
        home.cli_json(&["asks", "--host", "a"])?,
        serde_json::json!([])
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

    // A bridge at home (the phone's side) hears a far ask opened, with its host.
    let mut watcher = home.client(ClientKind::Bridge).await?;
    watcher.call(requests::Subscribe::default()).await?;
    let before = lead_a
        .client
        .call(requests::Ask {
            question: "Before the drop?".into(),
            ..Default::default()
        })
        .await?;
    let opened = next_event_where(
        &mut watcher,
        LINKED,
        |e| matches!(e, ServerMsg::AskOpened { ask } if ask.id == before.id),
    )
    .await?;
    let ServerMsg::AskOpened { ask } = opened else {
        unreachable!()
    };
    assert_eq!(ask.host.as_deref(), Some("a"));

    // The link's command dies: a's sessions are unreachable (listed, not connected),
    // then the link comes back by itself and lists each once. What changed on a
    // meanwhile (an ask answered there, another opened) reaches the bridge once, when
    // the link is back.
    let pid = link_pid(&a.socket()).context("the link process for a")?;
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()?;
    let answered = a.cli(&["answer", &before.id.to_string(), "yes"]);
    assert!(answered.status.success(), "{answered:?}");
    let reported = lead_a
        .client
        .call(requests::Report {
            text: "reported while the link was down".into(),
            ..Default::default()
        })
        .await?;
    let during = lead_a
        .client
        .call(requests::Ask {
            question: "During the drop?".into(),
            ..Default::default()
        })
        .await?;
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
    let mut heard = Vec::new();
    while let Ok(Ok(event)) =
        tokio::time::timeout(Duration::from_secs(2), watcher.next_event()).await
    {
        match event {
            ServerMsg::AskOpened { ask } if ask.host.as_deref() == Some("a") => {
                heard.push(("opened", ask.id.get()))
            }
            ServerMsg::AskAnswered { ask } if ask.host.as_deref() == Some("a") => {
                assert_eq!(ask.answer.as_deref(), Some("yes"));
                heard.push(("answered", ask.id.get()))
            }
            ServerMsg::ReportPosted { report } if report.host.as_deref() == Some("a") => {
                heard.push(("reported", report.id))
            }
            _ => {}
        }
    }
    heard.sort();
    assert_eq!(
        heard,
        vec![
            ("answered", before.id.get()),
            ("opened", during.id.get()),
            ("reported", reported.id)
        ],
        "each change on a while its link was down, heard once"
    );
    // Home's CLI lists a's reports through the link, with their host.
    let listed = home.cli_json(&["reports", "--host", "a"])?;
    let texts: Vec<(&str, &str)> = listed
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| Some((r["host"].as_str()?, r["text"].as_str()?)))
        .collect();
    assert_eq!(texts, [("a", "reported while the link was down")]);
    let table = home.cli(&["reports", "a:lead-a"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.starts_with("HOST") && table.contains("reported while the link was down"),
        "{table}"
    );
    let both = home.cli(&["reports", "a:lead-a", "--host", "b"]);
    assert_eq!(both.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&both.stderr).contains("give one of them"),
        "{both:?}"
    );
    Ok(())
}

/// A throwaway sshd on loopback: its own host key, config and authorized key in a temp
/// directory, for the user running the test; stopped on drop.
struct Sshd {
    dir: tempfile::TempDir,
    port: u16,
    child: std::process::Child,
}

impl Sshd {
    fn start() -> Result<Sshd> {
        let sshd = std::env::var("SHEPHERD_SSHD").unwrap_or_else(|_| "/usr/sbin/sshd".into());
        anyhow::ensure!(
            Path::new(&sshd).is_file(),
            "no sshd at {sshd}: run scripts/test-deps.sh (it installs openssh-server as root) or set SHEPHERD_SSHD"
        );
        let dir = tempfile::Builder::new()
            .prefix("shp-sshd")
            .tempdir_in("/tmp")?;
        let keygen = |file: &str| -> Result<()> {
            let path = dir.path().join(file);
            let out = std::process::Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(&path)
                .output()
                .context("running ssh-keygen (openssh-client)")?;
            anyhow::ensure!(
                out.status.success(),
                "ssh-keygen: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            Ok(())
        };
        keygen("host_key")?;
        keygen("user_key")?;
        std::fs::copy(
            dir.path().join("user_key.pub"),
            dir.path().join("authorized_keys"),
        )?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let config = dir.path().join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\nPidFile {d}/sshd.pid\nStrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n",
                d = dir.path().display()
            ),
        )?;
        // Privilege separation wants its empty directory.
        let _ = std::fs::create_dir_all("/run/sshd");
        let child = std::process::Command::new(&sshd)
            .args(["-D", "-e", "-f"])
            .arg(&config)
            .stderr(std::fs::File::create(dir.path().join("sshd.log"))?)
            .spawn()
            .with_context(|| format!("starting {sshd}"))?;
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            anyhow::ensure!(
                std::time::Instant::now() < deadline,
                "sshd did not listen on {port}: {}",
                std::fs::read_to_string(dir.path().join("sshd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(Sshd { dir, port, child })
    }

    /// The ssh command line that runs `remote` on this sshd as the current user.
    fn ssh(&self, port: u16, remote: &[String]) -> Vec<String> {
        let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
        let mut argv: Vec<String> = [
            "ssh",
            "-T",
            "-p",
            &port.to_string(),
            "-i",
            &self.dir.path().join("user_key").display().to_string(),
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "LogLevel=ERROR",
            &format!("{user}@127.0.0.1"),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        argv.extend_from_slice(remote);
        argv
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The same link through a real sshd on loopback, as on two machines: the link comes up,
/// a far ask is answered from home once, a far session is steered; a link to a port where
/// nothing listens fails with ssh's own words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_through_a_real_sshd_answers_and_steers_and_shows_sshs_own_errors() -> Result<()> {
    let sshd = Sshd::start()?;
    let far = Core::start().await?;
    let mut lead = far
        .pi("0193a5c2-0000-7000-8000-0000000c0001", "lead-far")
        .await?;
    let ask = lead
        .client
        .call(requests::Ask {
            question: "Merge now?".into(),
            ..Default::default()
        })
        .await?;
    let remote = vec![
        shepherd_bin().display().to_string(),
        "--socket".to_string(),
        far.socket().display().to_string(),
        "link".to_string(),
    ];
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let toml_list = |argv: Vec<String>| format!("{argv:?}");
    let config = tempfile::NamedTempFile::new()?;
    std::fs::write(
        config.path(),
        format!(
            "[[hosts]]\nname = \"box\"\ncommand = {}\n\n[[hosts]]\nname = \"nowhere\"\ncommand = {}\n",
            toml_list(sshd.ssh(sshd.port, &remote)),
            toml_list(sshd.ssh(closed_port, &remote)),
        ),
    )?;
    let config_path = config.path().display().to_string();
    let home = Core::start_with(&[("SHEPHERD_CONFIG", &config_path)]).await?;

    host_where(&home, "box", "box linked over ssh", |h| {
        h["state"] == "connected" && h["sessions"] == 1 && h["open_asks"] == 1
    })
    .await
    .with_context(|| {
        std::fs::read_to_string(sshd.dir.path().join("sshd.log")).unwrap_or_default()
    })?;
    let nowhere = host_where(&home, "nowhere", "nowhere failed", |h| {
        h["state"] == "failed"
    })
    .await?;
    let why = nowhere["error"].as_str().unwrap_or_default();
    assert!(
        why.contains("the link command said") && why.contains("Connection refused"),
        "{why}"
    );

    let ask_ref = format!("box:{}", ask.id);
    let out = home.cli(&["answer", &ask_ref, "merge"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer = lead.next_delivery(LINKED).await?;
    assert_eq!(answer.kind, DeliveryKind::Answer);
    assert!(answer.text.contains("merge"), "{}", answer.text);
    lead.ack(&[answer.id]).await?;
    let out = home.cli(&["stop", "box:lead-far"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stop = lead.next_delivery(LINKED).await?;
    assert_eq!(stop.kind, DeliveryKind::Interrupt);
    lead.ack(&[stop.id]).await?;
    let out = home.cli(&["send", "box:lead-far", "rebase first"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let steer = lead.next_delivery(LINKED).await?;
    assert_eq!(
        (steer.kind, steer.text.as_str()),
        (DeliveryKind::Steer, "rebase first")
    );
    lead.ack(&[steer.id]).await?;

    // A cross-host edge through ssh: the herd's Chief here and the far Lead mail each
    // other.
    let mut chief = home
        .pi("0193a5c2-0000-7000-8000-0000000c0002", "chief-home")
        .await?;
    become_chief(&mut chief).await?;
    up_to_the_chief(&mut lead, "merged over ssh", &home).await?;
    let up = chief.next_delivery(LINKED).await?;
    assert!(up.text.ends_with("on box: merged over ssh"), "{}", up.text);
    chief
        .client
        .call(requests::MessageStaff {
            session: "box:lead-far".into(),
            text: "thanks".into(),
            ..Default::default()
        })
        .await?;
    let down = lead.next_delivery(LINKED).await?;
    assert_eq!(down.kind, DeliveryKind::StaffMessage);
    assert!(down.text.ends_with(": thanks"), "{}", down.text);
    Ok(())
}

/// A far end that speaks another protocol version: its link fails, saying which side to
/// upgrade, and is not retried in a tight loop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_far_core_of_another_protocol_is_refused_saying_which_side_to_upgrade() -> Result<()> {
    // Reads the hello, answers a welcome of protocol 99, then waits for the end.
    let fake = "import sys,struct,json\n\
i=sys.stdin.buffer; o=sys.stdout.buffer\n\
n=struct.unpack('>I', i.read(4))[0]; hello=json.loads(i.read(n))\n\
w=json.dumps({'type':'welcome','id':hello['id'],'protocol':99,'core_version':'9.0.0','store_id':'x','pid':1}).encode()\n\
o.write(struct.pack('>I',len(w))+w); o.flush(); i.read()\n";
    let config = tempfile::NamedTempFile::new()?;
    std::fs::write(
        config.path(),
        format!("[[hosts]]\nname = \"future\"\ncommand = [\"python3\", \"-c\", {fake:?}]\n"),
    )?;
    let config_path = config.path().display().to_string();
    let home = Core::start_with(&[("SHEPHERD_CONFIG", &config_path)]).await?;
    let host = host_where(&home, "future", "the link refused", |h| {
        h["state"] == "failed"
    })
    .await?;
    let why = host["error"].as_str().unwrap_or_default();
    assert!(
        why.contains("shepherd 9.0.0 speaking protocol 99")
            && why.contains("upgrade this machine's shepherd"),
        "{why}"
    );
    // Tried again after a pause, not in a loop: at most a few attempts in 2 s.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let attempts = home.log().matches("host link failed").count();
    assert!(
        (1..=3).contains(&attempts),
        "{attempts} attempts:\n{}",
        home.log()
    );
    Ok(())
}

/// The link's command killed (-9) while the human's answers cross it, five rounds of 200
/// asks: every answer that was in flight is either applied by the far core or reported
/// `host_unreachable`; the human answers again what is still open once the link is back;
/// in the end each of the 1,000 asks has exactly one answer and its session got it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_across_a_link_killed_mid_way_are_applied_once_and_none_lost() -> Result<()> {
    const ROUNDS: usize = 5;
    const ASKS: usize = 200;
    let far =
        Core::start_with(&[("SHEPHERD_CORE__LIMITS__MAX_OPEN_ASKS_PER_SESSION", "500")]).await?;
    let mut lead = far
        .pi("0193a5c2-0000-7000-8000-0000000d0001", "lead-d")
        .await?;
    let (_config, config_path) = Core::hosts_config(&[("far", &far)])?;
    let home = Core::start_with(&[("SHEPHERD_CONFIG", &config_path)]).await?;
    host_where(&home, "far", "far linked", |h| h["state"] == "connected").await?;

    let mut delivered: std::collections::HashMap<u64, usize> = Default::default();
    let (mut unreachable, mut refused_as_answered) = (0, 0);
    for round in 0..ROUNDS {
        let mut asks = Vec::new();
        for n in 0..ASKS {
            let ask = lead
                .client
                .call(requests::Ask {
                    question: format!("round {round} question {n}?"),
                    ..Default::default()
                })
                .await?;
            asks.push(ask.id);
        }
        let connects = host_where(&home, "far", "the asks mirrored", |h| {
            h["state"] == "connected" && h["open_asks"] == ASKS
        })
        .await?["connects"]
            .as_u64()
            .unwrap_or_default();
        // Answer them all from home while the link's command is killed part way.
        let mut cli = home
            .client(shepherd_core::protocol::ClientKind::Cli)
            .await?;
        let pid = link_pid(&far.socket()).context("the link process")?;
        let answering = tokio::spawn({
            let asks = asks.clone();
            async move {
                let mut outcomes = Vec::new();
                for ask in asks {
                    let answer = requests::Answer {
                        ask,
                        text: format!("answer to {ask}"),
                        host: Some("far".into()),
                        ..Default::default()
                    };
                    outcomes.push(cli.call(answer).await.map_err(|e| e.code()));
                }
                outcomes
            }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()?;
        for outcome in answering.await? {
            match outcome {
                Ok(_) => {}
                Err(Some(shepherd_core::protocol::ErrorCode::HostUnreachable)) => unreachable += 1,
                Err(other) => anyhow::bail!("an answer failed otherwise: {other:?}"),
            }
        }
        // The link comes back by itself; what is still open is answered again, once.
        host_where(&home, "far", "far linked again", |h| {
            h["state"] == "connected" && h["connects"].as_u64() > Some(connects)
        })
        .await?;
        let mut cli = home
            .client(shepherd_core::protocol::ClientKind::Cli)
            .await?;
        for ask in &asks {
            let again = cli
                .call(requests::Answer {
                    ask: *ask,
                    text: format!("answer to {ask}"),
                    host: Some("far".into()),
                    ..Default::default()
                })
                .await;
            match again {
                Ok(_) => {}
                Err(e) if e.code() == Some(shepherd_core::protocol::ErrorCode::AlreadyAnswered) => {
                    refused_as_answered += 1
                }
                Err(e) => anyhow::bail!("answering ask {ask} again: {e}"),
            }
        }
        // The session gets each answer once.
        let mut got = 0;
        while got < ASKS {
            let d = lead.next_delivery(LINKED).await?;
            if d.kind == DeliveryKind::Answer {
                let ask = d.ask_id.context("an answer names its ask")?.get();
                *delivered.entry(ask).or_default() += 1;
                got += 1;
            }
            lead.ack(&[d.id]).await?;
        }
    }
    assert!(
        lead.next_delivery(Duration::from_millis(500))
            .await
            .is_err(),
        "no answer arrives twice"
    );
    assert_eq!(delivered.len(), ROUNDS * ASKS, "every ask answered");
    assert!(
        delivered.values().all(|n| *n == 1),
        "an answer was delivered twice"
    );
    let open = far.cli_json(&["asks"])?;
    assert_eq!(open.as_array().map(Vec::len), Some(0), "{open}");
    eprintln!(
        "{} answers: {unreachable} reported host_unreachable while the link was down, {refused_as_answered} refused as already answered on the second pass",
        ROUNDS * ASKS
    );
    Ok(())
}

/// `shepherd link` on a machine whose core is not running starts it first (in the
/// background, logging to its state directory), then links it; that core keeps running
/// after the link drops, as it would after any client leaves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shepherd_link_starts_the_far_core_when_none_runs() -> Result<()> {
    let far_dir = tempfile::Builder::new()
        .prefix("shp-far")
        .tempdir_in("/tmp")?;
    let agent = far_dir.path().display().to_string();
    let config = tempfile::NamedTempFile::new()?;
    std::fs::write(
        config.path(),
        format!(
            "[[hosts]]\nname = \"cold\"\ncommand = [\"env\", \"PI_CODING_AGENT_DIR={agent}\", {:?}, \"link\"]\n",
            shepherd_bin().display().to_string()
        ),
    )?;
    let config_path = config.path().display().to_string();
    let home = Core::start_with(&[("SHEPHERD_CONFIG", &config_path)]).await?;
    let stop_far = || {
        std::process::Command::new(shepherd_bin())
            .arg("stop")
            .env("PI_CODING_AGENT_DIR", &agent)
            .env_remove("SHEPHERD_SOCKET")
            .env_remove("SHEPHERD_CONFIG")
            .env_remove("SHEPHERD_STATE_DIR")
            .output()
    };
    let linked = host_where(&home, "cold", "the cold host linked", |h| {
        h["state"] == "connected"
    })
    .await;
    let socket = far_dir.path().join("shepherd").join("shepherd.sock");
    let started = socket.exists();
    let log = std::fs::read_to_string(far_dir.path().join("shepherd").join("core.log"))
        .unwrap_or_default();
    let stopped = stop_far()?;
    linked?;
    assert!(started, "no far core on {}", socket.display());
    assert!(
        log.contains("accepting connections"),
        "the far core logs to its state directory:\n{log}"
    );
    assert!(
        stopped.status.success(),
        "{}",
        String::from_utf8_lossy(&stopped.stderr)
    );
    Ok(())
}

/// The herd's Chief on home and an ordinary Lead on a linked host (nobody above it there):
/// the Lead's `message_supervisor` reaches the Chief over the link, and the Chief's
/// `message_staff` reaches the Lead; the Lead's `ask_supervisor` reaches the Chief, which
/// answers it (nobody else here may); a Lead with a Manager of its own here is not the
/// Chief's to steer, and the Chief is told so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_herds_chief_and_a_lead_on_a_linked_host_mail_each_other() -> Result<()> {
    let a = Core::start().await?;
    let mut lead = a
        .pi("0193a5c2-0000-7000-8000-0000000a00c1", "gpu-lead")
        .await?;
    let (_config, config_path) = Core::hosts_config(&[("a", &a)])?;
    let home = Core::start_with(&[("SHEPHERD_CONFIG", &config_path)]).await?;
    let mut chief = home
        .pi("0193a5c2-0000-7000-8000-0000000c0001", "the-chief")
        .await?;
    become_chief(&mut chief).await?;
    host_where(&home, "a", "host a linked", |h| {
        h["state"] == "connected" && h["sessions"] == 1
    })
    .await?;

    // Up: once a knows the herd's Chief, the Lead's message goes to it.
    // Before the link named the Chief, it went to the human as a report.
    let to = up_to_the_chief(&mut lead, "probe", &home).await?;
    assert_eq!(to.session_name.as_deref(), Some("the-chief"));
    let up = chief.next_delivery(LINKED).await?;
    assert_eq!(up.kind, DeliveryKind::SupervisorMessage);
    assert!(
        up.text.contains("gpu-lead") && up.text.contains("on a") && up.text.ends_with("probe"),
        "{}",
        up.text
    );
    chief.ack(&[up.id]).await?;

    // The Chief's staff lists the Lead on a, with its host; so does the human's.
    let staff = chief.client.call(requests::ListStaff::default()).await?;
    let far: Vec<(&str, Option<&str>)> = staff
        .iter()
        .map(|m| (m.session.name.as_str(), m.session.host.as_deref()))
        .collect();
    assert_eq!(far, vec![("gpu-lead", Some("a"))]);
    assert_eq!(staff[0].reports_to.to, Superior::Chief);
    let human = home.cli_json(&["staff"])?;
    let lead_row = human
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["session"]["name"] == "gpu-lead")
        .cloned()
        .context("the human's staff lists the far Lead")?;
    assert_eq!(lead_row["session"]["host"], "a");
    assert_eq!(lead_row["reports_to"]["session_name"], "the-chief");

    // Down: the Chief names the Lead as `a:gpu-lead`.
    let sent = chief
        .client
        .call(requests::MessageStaff {
            session: "a:gpu-lead".into(),
            text: "use the small batch".into(),
            ..Default::default()
        })
        .await?;
    assert_eq!(sent.session_name, "gpu-lead");
    let down = lead.next_delivery(LINKED).await?;
    assert_eq!(down.kind, DeliveryKind::StaffMessage);
    assert!(
        down.text.contains("the-chief") && down.text.ends_with("use the small batch"),
        "{}",
        down.text
    );
    lead.ack(&[down.id]).await?;

    // The Chief inspects its far Lead: a's core builds the view from its own record.
    let lead_id = "0193a5c2-0000-7000-8000-0000000a00c1";
    let view = chief
        .client
        .call(requests::InspectStaff {
            session: lead_id.into(),
            ..Default::default()
        })
        .await?;
    assert_eq!(
        (view.session_id.as_str(), view.session_name.as_str()),
        (lead_id, "gpu-lead")
    );
    assert!(view.text.contains("gpu-lead"), "{}", view.text);

    // A question up: the Chief gets it (`ask a:N`), answers it with `host`; the Lead gets
    // that answer once, from the Chief.
    let asked = lead
        .client
        .call(requests::AskSupervisor {
            question: "Use the big GPU?".into(),
            options: vec!["yes".into(), "no".into()],
            ..Default::default()
        })
        .await?;
    let to = asked.to.clone().context("addressed")?;
    assert_eq!(
        (to.role, to.session_name.as_deref()),
        (Role::Chief, Some("the-chief"))
    );
    let question = chief.next_delivery(LINKED).await?;
    assert_eq!(question.kind, DeliveryKind::Ask);
    assert!(
        question.text.contains(&format!("(ask a:{})", asked.id))
            && question
                .text
                .contains(&format!("answer_staff {{ask: {}, host: \"a\"", asked.id)),
        "{}",
        question.text
    );
    chief.ack(&[question.id]).await?;
    // Only the Chief answers it this way: another session here is refused.
    let mut other = home
        .pi("0193a5c2-0000-7000-8000-0000000c0009", "not-chief")
        .await?;
    let answer = |text: &str| requests::Answer {
        ask: asked.id,
        text: text.into(),
        host: Some("a".into()),
        ..Default::default()
    };
    let refused = other
        .client
        .call(answer("no"))
        .await
        .expect_err("not the Chief");
    assert_eq!(
        refused.code(),
        Some(shepherd_core::protocol::ErrorCode::Forbidden)
    );
    // The mirror has the question once the link passed its event on.
    let deadline = tokio::time::Instant::now() + LINKED;
    let answered = loop {
        match chief.client.call(answer("yes")).await {
            Ok(ask) => break ask,
            Err(e)
                if e.code() == Some(shepherd_core::protocol::ErrorCode::UnknownAsk)
                    && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(e) => anyhow::bail!("the Chief's answer: {e}"),
        }
    };
    assert_eq!(answered.host.as_deref(), Some("a"));
    assert_eq!(answered.answered_by.as_deref(), Some("chief the-chief"));
    let got = lead.next_delivery(LINKED).await?;
    assert_eq!((got.kind, got.text.as_str()), (DeliveryKind::Answer, "yes"));
    lead.ack(&[got.id]).await?;

    // One Chief for the whole herd: a's sessions cannot take a Chief of their own.
    let refused = lead
        .client
        .call(requests::SetRole {
            role: Role::Chief,
            ..Default::default()
        })
        .await
        .expect_err("the herd has its Chief");
    assert_eq!(
        refused.code(),
        Some(shepherd_core::protocol::ErrorCode::RoleRefused)
    );
    assert!(refused.to_string().contains("the-chief"), "{refused}");

    // A Manager taken on a is a role change home's bridges hear, with its host.
    let mut watcher = home.client(ClientKind::Bridge).await?;
    watcher.call(requests::Subscribe::default()).await?;
    let repos = tempfile::tempdir()?;
    let (primary, _) = shepherd_harness::git_repo::repo_with_worktree(repos.path(), "app", "f")?;
    let mut manager = shepherd_harness::Pi::register(
        &a.socket(),
        "0193a5c2-0000-7000-8000-0000000a00c2",
        "gpu-manager",
        &primary,
    )
    .await?;
    manager
        .client
        .call(requests::SetRole {
            role: Role::Manager,
            ..Default::default()
        })
        .await?;
    let changed = next_event_where(
        &mut watcher,
        LINKED,
        |e| matches!(e, ServerMsg::RoleChanged { session, .. } if session.name == "gpu-manager"),
    )
    .await?;
    let ServerMsg::RoleChanged { session, previous } = changed else {
        unreachable!()
    };
    assert_eq!(
        (session.host.as_deref(), session.role, previous),
        (Some("a"), Role::Manager, Role::Lead)
    );
    // Home's CLI lists a's leases, project work, workers and usage through the link.
    let roles = home.cli_json(&["roles", "--host", "a"])?;
    assert_eq!(roles[0]["session_name"], "gpu-manager", "{roles}");
    assert_eq!(roles[0]["host"], "a", "{roles}");
    // Without --host: the whole herd, each lease with its host (none for home's own).
    let herd = home.cli_json(&["roles"])?;
    let held: Vec<(&str, &str)> = herd
        .as_array()
        .context("roles")?
        .iter()
        .map(|l| {
            let name = l["session_name"].as_str().unwrap_or("?");
            (name, l["host"].as_str().unwrap_or("(here)"))
        })
        .collect();
    assert_eq!(held, [("the-chief", "(here)"), ("gpu-manager", "a")]);
    // `a:app@main` names the session on branch main of a's repository app.
    let out = home.cli(&["send", "a:app@main", "merge when green"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let steer = manager.next_delivery(LINKED).await?;
    assert_eq!(
        (steer.kind, steer.text.as_str()),
        (DeliveryKind::Steer, "merge when green")
    );
    manager.ack(&[steer.id]).await?;
    let table = String::from_utf8(home.cli(&["roles"]).stdout)?;
    let rows: Vec<&str> = table.lines().collect();
    assert!(rows[0].starts_with("HOST    ROLE"), "{table}");
    assert!(rows[2].starts_with("a       manager"), "{table}");
    // A linked host's projects are its core's, each marked with the host.
    let far_projects = home.cli_json(&["projects", "--host", "a"])?;
    let mut own = a.cli_json(&["projects"])?;
    for p in own.as_array_mut().context("projects")? {
        p["host"] = "a".into();
        if p["manager"].is_object() {
            p["manager"]["host"] = "a".into();
        }
    }
    assert_eq!(far_projects, own);
    assert_eq!(
        home.cli_json(&["projects"])?,
        own,
        "home has none of its own"
    );
    assert_eq!(
        home.cli_json(&["workers", "--host", "a"])?,
        serde_json::json!([])
    );
    let usage = home.cli_json(&["usage", "a:gpu-lead"])?;
    assert!(usage.is_object(), "{usage}");
    let nowhere = home.cli(&["roles", "--host", "nowhere"]);
    assert_eq!(nowhere.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&nowhere.stderr).contains("no linked host is named `nowhere`"),
        "{nowhere:?}"
    );

    // Once each.
    assert!(
        lead.next_delivery(Duration::from_millis(500))
            .await
            .is_err()
    );
    assert!(
        chief
            .next_delivery(Duration::from_millis(300))
            .await
            .is_err()
    );
    Ok(())
}

/// Mail between the herd's Chief (home) and a Lead on a linked host while either core is
/// killed (-9) and started again: six rounds, each 100 messages up and 100 down sent at
/// once and the home core or the linked one killed with them in flight. Every message
/// whose send was answered arrives once; none twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_across_a_link_survives_kill_9_of_either_core_once_each() -> Result<()> {
    const ROUNDS: usize = 6;
    const EACH: usize = 100;
    const LEAD: &str = "0193a5c2-0000-7000-8000-0000000a00d1";
    const CHIEF: &str = "0193a5c2-0000-7000-8000-0000000c00d1";
    let limits = [("SHEPHERD_CORE__LIMITS__MAX_PENDING_PER_SESSION", "5000")];
    let mut a = Core::start_with(&limits).await?;
    let (_config, config_path) = Core::hosts_config(&[("a", &a)])?;
    let mut env = limits.to_vec();
    env.push(("SHEPHERD_CONFIG", &config_path));
    let mut home = Core::start_with(&env).await?;
    let mut lead = a.pi(LEAD, "gpu-lead").await?;
    let mut chief = home.pi(CHIEF, "the-chief").await?;
    become_chief(&mut chief).await?;
    // a learns the herd's Chief once linked.
    up_to_the_chief(&mut lead, "probe", &home).await?;
    let probe = chief.next_delivery(LINKED).await?;
    chief.ack(&[probe.id]).await?;

    // What each side was told was sent, and what each got (by text).
    let (mut up_sent, mut down_sent) = (Vec::new(), Vec::new());
    let mut got: std::collections::HashMap<String, usize> = Default::default();
    let said = |text: &str| text.rsplit(": ").next().unwrap_or_default().to_string();
    for round in 0..ROUNDS {
        // Down needs a's Lead in home's mirror (after a restart of home: linked again).
        host_where(&home, "a", "a linked", |h| {
            h["state"] == "connected" && h["sessions"] == 1
        })
        .await?;
        for n in 0..EACH {
            let up = format!("up {round}.{n}");
            let routed = lead
                .client
                .call(requests::MessageSupervisor {
                    text: up.clone(),
                    ..Default::default()
                })
                .await?;
            assert_eq!(routed.to.to, Superior::Chief, "{up}");
            up_sent.push(up);
            let down = format!("down {round}.{n}");
            chief
                .client
                .call(requests::MessageStaff {
                    session: LEAD.into(),
                    text: down.clone(),
                    ..Default::default()
                })
                .await?;
            down_sent.push(down);
        }
        // Killed with the mail in flight; its session comes back when it does.
        if round % 2 == 0 {
            a.kill9();
            a.restart().await?;
            lead = a.pi(LEAD, "gpu-lead").await?;
        } else {
            home.kill9();
            home.restart().await?;
            chief = home.pi(CHIEF, "the-chief").await?;
        }
        // Everything sent so far arrives, once.
        let want_up = up_sent.len();
        let want_down = down_sent.len();
        let count = |got: &std::collections::HashMap<String, usize>, prefix: &str| {
            got.keys().filter(|k| k.starts_with(prefix)).count()
        };
        while count(&got, "up ") < want_up {
            let d = chief
                .next_delivery(LINKED)
                .await
                .with_context(|| format!("round {round}: up mail missing\n{}", home.log()))?;
            *got.entry(said(&d.text)).or_default() += 1;
            chief.ack(&[d.id]).await?;
        }
        while count(&got, "down ") < want_down {
            let d = lead
                .next_delivery(LINKED)
                .await
                .with_context(|| format!("round {round}: down mail missing\n{}", a.log()))?;
            *got.entry(said(&d.text)).or_default() += 1;
            lead.ack(&[d.id]).await?;
        }
    }
    assert!(
        chief
            .next_delivery(Duration::from_millis(500))
            .await
            .is_err()
    );
    assert!(
        lead.next_delivery(Duration::from_millis(500))
            .await
            .is_err()
    );
    for text in up_sent.iter().chain(&down_sent) {
        assert_eq!(got.get(text), Some(&1), "{text}");
    }
    assert_eq!(got.len(), up_sent.len() + down_sent.len());
    eprintln!(
        "{} messages up and {} down across {ROUNDS} kill -9 rounds: each arrived once",
        up_sent.len(),
        down_sent.len()
    );
    Ok(())
}

/// Peers on different hosts: Leads on a and b message each other through home, a Lead on
/// home and one on a too; a peer that is not there is said back to its sender.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leads_on_different_hosts_message_each_other_as_peers() -> Result<()> {
    const LEAD_A: &str = "0193a5c2-0000-7000-8000-0000000a00e1";
    const LEAD_B: &str = "0193a5c2-0000-7000-8000-0000000b00e1";
    const LEAD_HOME: &str = "0193a5c2-0000-7000-8000-0000000c00e1";
    let a = Core::start().await?;
    let b = Core::start().await?;
    let mut lead_a = a.pi(LEAD_A, "lead-a").await?;
    let mut lead_b = b.pi(LEAD_B, "lead-b").await?;
    let (_config, config_path) = Core::hosts_config(&[("a", &a), ("b", &b)])?;
    let home = Core::start_with(&[("SHEPHERD_CONFIG", &config_path)]).await?;
    let mut lead_home = home.pi(LEAD_HOME, "lead-home").await?;
    for host in ["a", "b"] {
        host_where(&home, host, "linked", |h| {
            h["state"] == "connected" && h["sessions"] == 1
        })
        .await?;
    }
    let peer = |session: &str, text: &str| requests::MessagePeer {
        session: session.into(),
        text: text.into(),
        ..Default::default()
    };

    // a → b, named b:lead-b (a learns it has a home once its link says so).
    let deadline = tokio::time::Instant::now() + LINKED;
    let sent = loop {
        match lead_a.client.call(peer("b:lead-b", "which CUDA?")).await {
            Ok(sent) => break sent,
            Err(e) if tokio::time::Instant::now() < deadline => {
                assert_eq!(
                    e.code(),
                    Some(shepherd_core::protocol::ErrorCode::UnknownSession)
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => anyhow::bail!("a never reached its home: {e}"),
        }
    };
    assert_eq!(sent.session_name, "b:lead-b");
    receives(
        &mut lead_b,
        DeliveryKind::PeerMessage,
        &format!("Peer message from lead-a ({LEAD_A}) on a: which CUDA?"),
    )
    .await?;
    // b answers by a's exact id.
    lead_b.client.call(peer(LEAD_A, "12.4")).await?;
    receives(
        &mut lead_a,
        DeliveryKind::PeerMessage,
        &format!("Peer message from lead-b ({LEAD_B}) on b: 12.4"),
    )
    .await?;

    // home ↔ a; home's list_peers has a's and b's Leads, with their hosts.
    let listed = lead_home
        .client
        .call(requests::ListPeers::default())
        .await?;
    let hosts: Vec<(Option<&str>, &str)> = listed
        .iter()
        .map(|s| (s.host.as_deref(), s.name.as_str()))
        .collect();
    assert_eq!(hosts, [(Some("a"), "lead-a"), (Some("b"), "lead-b")]);
    let sent = lead_home.client.call(peer("a:lead-a", "lunch?")).await?;
    assert_eq!(sent.session_id.as_str(), LEAD_A);
    receives(
        &mut lead_a,
        DeliveryKind::PeerMessage,
        &format!("Peer message from lead-home ({LEAD_HOME}) on the home core: lunch?"),
    )
    .await?;
    lead_a.client.call(peer(LEAD_HOME, "yes")).await?;
    receives(
        &mut lead_home,
        DeliveryKind::PeerMessage,
        &format!("Peer message from lead-a ({LEAD_A}) on a: yes"),
    )
    .await?;

    // Nobody by that name in the herd: a's Lead is told so.
    lead_a.client.call(peer("b:nobody", "hello?")).await?;
    let got = lead_a.next_delivery(LINKED).await?;
    assert_eq!(got.kind, DeliveryKind::PeerMessage);
    assert!(
        got.text.contains("b:nobody") && got.text.contains("not delivered"),
        "{}",
        got.text
    );
    lead_a.ack(&[got.id]).await?;
    // On home, an unlinked host's session is unknown at once.
    let err = lead_home
        .client
        .call(peer("c:lead-c", "hi"))
        .await
        .expect_err("no host c");
    assert_eq!(
        err.code(),
        Some(shepherd_core::protocol::ErrorCode::UnknownSession)
    );
    // Once each.
    for pi in [&mut lead_a, &mut lead_b, &mut lead_home] {
        assert!(pi.next_delivery(Duration::from_millis(300)).await.is_err());
    }
    Ok(())
}
