//! Readable default names against the real daemon: an unnamed session is called after its
//! repository and branch (`repo@main`, `repo@main-2` for a second live one, a linked
//! worktree after its repository), after its cwd outside a repository; a given name wins;
//! selectors, `shepherd sessions` and events use the name, the ids stay shown.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use shepherd_core::protocol::{ClientKind, ServerMsg};
use shepherd_harness::{Core, Pi, next_event_where, registration};

const WAIT: Duration = Duration::from_secs(10);

/// `<base>/webapp` on `main` with a linked worktree `<base>/webapp-fix-login` on `fix-login`.
fn webapp(base: &Path) -> Result<(PathBuf, PathBuf)> {
    shepherd_harness::git_repo::repo_with_worktree(base, "webapp", "fix-login")
}

/// Register `id` without a name in `cwd`; the name the core gave it.
async fn unnamed(core: &Core, id: &str, cwd: &Path) -> Result<(Pi, String)> {
    let reg = shepherd_core::protocol::Registration {
        name: None,
        ..registration(id, "unused", cwd)
    };
    let (pi, info) = Pi::register_full(&core.socket(), reg).await?;
    Ok((pi, info.name))
}

async fn resolve(core: &Core, to: &str) -> Result<String> {
    let mut client = core.client(ClientKind::Cli).await?;
    Ok(client
        .send_to(to, "where are you?")
        .await?
        .session_id
        .to_string())
}

#[tokio::test]
async fn unnamed_sessions_are_called_after_repository_and_branch() -> Result<()> {
    let core = Core::start().await?;
    let mut sub = core.subscriber().await?;
    let (repo, worktree) = webapp(core.agent_dir())?;
    let notes = core.agent_dir().join("notes");
    std::fs::create_dir_all(&notes)?;

    // UUIDv7 ids started in the same minute share their first 8 characters.
    let (first, name) = unnamed(&core, "0193ffee-0000-7000-8000-000000000001", &repo).await?;
    assert_eq!(name, "webapp@main");
    let (_second, name) = unnamed(&core, "0193ffee-0000-7000-8000-000000000002", &repo).await?;
    assert_eq!(name, "webapp@main-2", "a second live one gets a number");
    let (_wt, name) = unnamed(&core, "0193ffee-0000-7000-8000-000000000003", &worktree).await?;
    assert_eq!(
        name, "webapp@fix-login",
        "a worktree is named after its repository"
    );
    let (_notes, name) = unnamed(&core, "0193ffee-0000-7000-8000-000000000004", &notes).await?;
    assert_eq!(
        name, "notes",
        "outside a repository, the cwd's last component"
    );
    let (named, info) = Pi::register_full(
        &core.socket(),
        registration("0193ffee-0000-7000-8000-000000000005", "webapp@main", &repo),
    )
    .await?;
    assert_eq!(info.name, "webapp@main", "a given name wins");

    // Selectors accept the names (a connected session wins a shared one).
    assert_eq!(
        resolve(&core, "webapp@main-2").await?,
        "0193ffee-0000-7000-8000-000000000002"
    );
    assert_eq!(
        resolve(&core, "webapp@fix-login").await?,
        "0193ffee-0000-7000-8000-000000000003"
    );

    // `shepherd sessions` shows both the id and the name.
    let out = core.cli(&["sessions"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}");
    let line = table
        .lines()
        .find(|l| l.contains("webapp@main-2"))
        .with_context(|| format!("no row for webapp@main-2 in\n{table}"))?;
    // Its id's random end, the part that tells sessions started together apart.
    assert!(line.starts_with("00000002 "), "{table}");

    // The first leaves; a new unnamed session in the repository takes the free name, and
    // the first, back, gets the next number instead of a duplicate.
    for (pi, id) in [
        (first, "0193ffee-0000-7000-8000-000000000001"),
        (named, "0193ffee-0000-7000-8000-000000000005"),
    ] {
        drop(pi);
        next_event_where(
            &mut sub,
            WAIT,
            |m| matches!(m, ServerMsg::SessionLeft { session, .. } if session.id == id),
        )
        .await?;
    }
    let (_third, name) = unnamed(&core, "0193ffee-0000-7000-8000-000000000006", &repo).await?;
    assert_eq!(name, "webapp@main");
    let (_back, name) = unnamed(&core, "0193ffee-0000-7000-8000-000000000001", &repo).await?;
    assert_eq!(name, "webapp@main-3");
    // A session keeps its name across reconnects when nobody took it.
    let (again, name) = unnamed(&core, "0193ffee-0000-7000-8000-000000000004", &notes).await?;
    assert_eq!(name, "notes");
    drop(again);

    // A session still called by its id prefix (the rule before) gets a readable name.
    let old = "0193ffee-0000-7000-8000-000000000007";
    let (pi, info) =
        Pi::register_full(&core.socket(), registration(old, "0193ffee", &notes)).await?;
    assert_eq!(info.name, "0193ffee");
    drop(pi);
    next_event_where(
        &mut sub,
        WAIT,
        |m| matches!(m, ServerMsg::SessionLeft { session, .. } if session.id == old),
    )
    .await?;
    let (_pi, name) = unnamed(&core, old, &notes).await?;
    assert_eq!(name, "notes", "(the other notes session left)");
    Ok(())
}

/// Two sessions started together have UUIDv7 ids that differ only at their ends: the
/// short id listings show is that end, and a selector may give it.
#[tokio::test]
async fn the_short_id_is_the_ids_random_end_and_selects_the_session() -> Result<()> {
    let core = Core::start().await?;
    let first = "0193a5c2-7d1e-7b8a-9c3f-1e2d3c4b5a69";
    let second = "0193a5c2-7d1e-7b8a-9c3f-8f7e6d5c4b3a";
    let _a = core.pi(first, "alpha").await?;
    let _b = core.pi(second, "beta").await?;
    let listed = core.cli(&["sessions"]);
    let table = String::from_utf8_lossy(&listed.stdout);
    assert!(
        table.contains("3c4b5a69") && table.contains("5c4b3a"),
        "{table}"
    );
    assert_eq!(resolve(&core, "3c4b5a69").await?, first);
    assert_eq!(resolve(&core, "8f7e6d5c4b3a").await?, second);
    // The shared start is no way to tell them apart.
    let both = core.cli(&["send", "0193a5c2-7d1e", "hi"]);
    let err = String::from_utf8_lossy(&both.stderr);
    assert!(
        !both.status.success() && err.contains("matches several sessions"),
        "{err}"
    );
    Ok(())
}
