//! `shepherd roles` and `shepherd staff` against the real core, one core for the file:
//! with no role held both say what to do; with a Manager (in a temp git repository's
//! primary checkout), a Lead in a linked worktree and a Chief, `roles` lists both leases with their
//! holders (connected, then away once the Manager's session is gone), `staff` draws chief →
//! manager → lead with whom each reports to, their `--json` forms are the protocol's
//! `Lease` and `StaffMember` objects, `sessions` shows each session's role, and
//! `sessions --follow` prints a line when a session takes one; `asks` says whom an ask
//! is for.

use std::time::Duration;

use anyhow::{Context, Result};
use shepherd_core::protocol::Role;
use shepherd_harness::git_repo::repo_with_worktree;
use shepherd_harness::{Core, Pi, eventually};
use tokio::io::{AsyncBufReadExt, BufReader};

const WAIT: Duration = Duration::from_secs(10);

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `shepherd <args>` with a wide table; fails the test on a non-zero exit.
fn run(core: &Core, args: &[&str]) -> String {
    let out = core
        .command()
        .env("COLUMNS", "200")
        .args(args)
        .output()
        .expect("running shepherd");
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

#[tokio::test]
async fn roles_and_staff_list_leases_and_the_tree() -> Result<()> {
    let core = Core::start().await?;
    let none = run(&core, &["roles"]);
    assert!(
        none.starts_with("no roles held: `/manager`"),
        "says how to take one: {none}"
    );
    assert_eq!(core.cli_json(&["roles"])?, serde_json::json!([]));
    let empty = run(&core, &["staff"]);
    assert!(empty.starts_with("no staff"), "{empty}");

    let work = tempfile::tempdir()?;
    let (repo, linked) = repo_with_worktree(work.path(), "app", "fix-login")?;
    let notes = work.path().join("notes");
    std::fs::create_dir_all(&notes)?;
    let mut mara = Pi::register(&core.socket(), "cr-mara-0001", "mara", &repo).await?;
    let mut lead = Pi::register(&core.socket(), "cr-lead-0001", "fix-login", &linked).await?;
    let mut cleo = Pi::register(&core.socket(), "cr-cleo-0001", "cleo", &notes).await?;
    // `sessions --follow` prints a line when a session takes a role.
    let mut follow = tokio::process::Command::from(core.command())
        .env("COLUMNS", "200")
        .args(["sessions", "--follow"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut followed = BufReader::new(follow.stdout.take().context("stdout")?).lines();
    // The list comes after the subscription: once it shows, no event is missed.
    let header = tokio::time::timeout(WAIT, followed.next_line())
        .await
        .context("no list from --follow")??
        .context("--follow ended")?;
    assert!(header.starts_with("ID "), "{header}");
    mara.client.set_role(Role::Manager).await?;
    cleo.client.set_role(Role::Chief).await?;
    let role_line = loop {
        let line = tokio::time::timeout(WAIT, followed.next_line())
            .await
            .context("no role line from --follow")??
            .context("--follow ended")?;
        if line.contains("  role  ") {
            break line;
        }
    };
    assert!(
        role_line.ends_with("ara-0001  mara  manager (was lead)"),
        "{role_line}"
    );
    follow.kill().await?;

    let roles = run(&core, &["roles"]);
    let lines: Vec<&str> = roles.lines().collect();
    assert!(
        lines[0].starts_with("ROLE     REPOSITORY  HOLDER  ID        STATE"),
        "{roles}"
    );
    let manager = lines
        .iter()
        .find(|l| l.starts_with("manager"))
        .context(roles.clone())?;
    assert!(
        manager.contains("  app  ") && manager.contains("mara"),
        "{roles}"
    );
    assert!(manager.contains("connected"), "{roles}");
    let chief = lines
        .iter()
        .find(|l| l.starts_with("chief"))
        .context(roles.clone())?;
    assert!(
        chief.contains("cleo") && chief.contains("connected"),
        "{roles}"
    );
    let json = core.cli_json(&["roles"])?;
    let leases = json.as_array().context("an array")?;
    assert_eq!(leases.len(), 2, "{json}");
    let m = leases
        .iter()
        .find(|l| l["role"] == "manager")
        .context("manager")?;
    assert_eq!(m["session_name"], "mara");
    assert_eq!(m["project"], "app");

    let staff = run(&core, &["staff"]);
    let lines: Vec<&str> = staff.lines().collect();
    assert!(lines[0].starts_with("ROLE"), "{staff}");
    assert!(
        lines[1].starts_with("chief ") && lines[1].contains("cleo"),
        "{staff}"
    );
    assert!(
        lines[1].contains(" you "),
        "the chief reports to you: {staff}"
    );
    assert!(
        lines[2].starts_with("└ manager of app") && lines[2].contains("chief cleo"),
        "{staff}"
    );
    assert!(
        lines[3].starts_with("  └ lead") && lines[3].contains("manager mara"),
        "{staff}"
    );
    // One name for the worktree session: its repository's, as everywhere.
    assert!(
        lines[3].contains(" app@fix-login ") && lines[3].contains("ead-0001"),
        "{staff}"
    );
    let json = core.cli_json(&["staff"])?;
    let member = json
        .as_array()
        .context("an array")?
        .iter()
        .find(|m| m["session"]["name"] == "fix-login")
        .context("the lead is staff")?;
    assert_eq!(member["reports_to"]["to"], "manager");
    assert_eq!(member["reports_to"]["session_name"], "mara");

    // An ask for the Manager says so in `shepherd asks`.
    lead.client
        .ask_supervisor("Merge the login fix?", vec![])
        .await?;
    let asks = run(&core, &["asks"]);
    let row = asks.lines().nth(1).context(asks.clone())?;
    assert!(
        row.contains("Merge the login fix?") && row.ends_with("manager of app"),
        "{asks}"
    );

    let sessions = run(&core, &["sessions"]);
    let mara_row = sessions
        .lines()
        .find(|l| l.contains("mara"))
        .context(sessions.clone())?;
    assert!(mara_row.contains("manager"), "{sessions}");

    // The Manager's session goes away: its lease stays, held by a session that is away.
    drop(mara);
    let away = eventually(WAIT, "the Manager shown away", || {
        let roles = run(&core, &["roles"]);
        roles
            .lines()
            .any(|l| l.starts_with("manager") && l.contains("away"))
            .then_some(roles)
    })
    .await?;
    assert!(away.contains("mara"), "{away}");
    Ok(())
}

/// Issue 23 item 13: `shepherd roles release` takes a lease away and says from whom; a
/// missing project and a lease nobody holds are refused in words that say what to do.
#[tokio::test]
async fn roles_release_takes_a_lease_away_and_says_why_not() -> Result<()> {
    let core = Core::start().await?;
    let work = tempfile::tempdir()?;
    let (repo, _) = repo_with_worktree(work.path(), "app", "x")?;
    let mut mara = Pi::register(&core.socket(), "cr-mara-0002", "mara", &repo).await?;
    mara.client
        .call(shepherd_core::protocol::requests::SetRole {
            id: 0,
            role: Role::Manager,
            ..Default::default()
        })
        .await?;

    let fail = |args: &[&str]| {
        let out = core.cli(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        text(&out.stderr)
    };
    let e = fail(&["roles", "release", "manager"]);
    assert!(
        e.contains("shepherd roles release manager <project>"),
        "{e}"
    );
    let e = fail(&["roles", "release", "chief"]);
    assert!(e.contains("nobody holds the chief"), "{e}");
    assert!(e.contains("manager of app (mara)"), "{e}");
    let help = run(&core, &["roles", "release", "--help"]);
    assert!(help.contains("connected or away"), "{help}");

    let out = run(&core, &["roles", "release", "manager", "app"]);
    assert!(
        out.starts_with("released manager of app from mara (ara-000"),
        "{out}"
    );
    assert!(out.contains("connected; told now"), "{out}");
    assert_eq!(core.cli_json(&["roles"])?, serde_json::json!([]));
    let told = mara.next_delivery(WAIT).await?;
    assert!(told.text.contains("released it"), "{}", told.text);
    Ok(())
}
