//! A disk that fills under the running core. Made real without root: the test lowers the
//! core's file-size limit (`prlimit`, as `ulimit -f` would) just above its WAL, so the next
//! commits that grow a file fail as they would on a full disk (EFBIG; the core listens
//! for SIGXFSZ instead of dying of it).

use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use rustix::process::{Pid, Resource, Rlimit, getrlimit, prlimit};
use shepherd_core::client::ClientError;
use shepherd_core::protocol::{ClientKind, ErrorCode, MessageId};
use shepherd_harness::Core;

const WAIT: Duration = Duration::from_secs(10);
const RECEIVER: &str = "disk-receiver";

/// Set the core's soft file-size limit (`None`: back to its hard limit, which it inherited
/// from this process).
fn file_size_limit(pid: u32, bytes: Option<u64>) -> Result<()> {
    let pid = Pid::from_raw(pid as i32).context("a pid is not 0")?;
    let hard = getrlimit(Resource::Fsize).maximum;
    let limit = Rlimit {
        current: bytes.or(hard),
        maximum: hard,
    };
    prlimit(Some(pid), Resource::Fsize, limit)?;
    Ok(())
}

/// Every send while the disk is full is refused with `store_failed`, saying which disk and
/// what to do; the core keeps serving (it answers, its sessions stay); its log says so
/// once, not per refusal, and says when it works again. Once there is room, every message
/// accepted before, during and after reaches the receiver once and in order, and no
/// refused one ever does: on a fresh connection, and again after a `kill -9`.
#[tokio::test]
async fn a_full_disk_refuses_changes_and_loses_nothing() -> Result<()> {
    let mut core = Core::start().await?;
    let pid = core.pid().context("the core runs")?;
    let receiver = core.pi(RECEIVER, RECEIVER).await?;
    let mut cli = core.client(ClientKind::Cli).await?;
    let text = |i: usize| format!("message {i:04} {}", "x".repeat(2000));
    let mut accepted: Vec<(MessageId, usize)> = Vec::new();
    for i in 0..5 {
        accepted.push((cli.send_to(RECEIVER, text(i)).await?.message_id, i));
    }

    // Room for a few more commits, then none.
    let wal = core.state_dir().join("shepherd.db-wal");
    let room = std::fs::metadata(&wal)?.len() + 16 * 1024;
    file_size_limit(pid, Some(room))?;
    let (mut refused, mut refusal) = (0, String::new());
    // Until 50 are refused: a few more may be taken meanwhile (a checkpoint that empties
    // the WAL makes room), and every one taken must then be kept like the rest.
    for i in 5..1000 {
        if refused == 50 {
            break;
        }
        match cli.send_to(RECEIVER, text(i)).await {
            Ok(sent) => accepted.push((sent.message_id, i)),
            Err(ClientError::Remote {
                code: ErrorCode::StoreFailed,
                message,
                ..
            }) => {
                refused += 1;
                refusal = message;
            }
            Err(e) => bail!("send {i}: {e}"),
        }
    }
    ensure!(
        refused == 50,
        "the disk did not fill: only {refused} refused"
    );
    let db = core.state_dir().join("shepherd.db");
    assert_eq!(
        refusal,
        format!(
            "writing {} failed (disk I/O error): nothing was kept; check the disk holding it (free space, errors, the core's `ulimit -f`), then retry",
            db.display()
        )
    );
    // The CLI adds where to look, not a second "nothing was kept".
    let out = core.cli(&["send", RECEIVER, "one more"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && said.contains("nothing was kept; check the disk"),
        "{said}"
    );
    assert_eq!(said.matches("nothing was kept").count(), 1, "{said}");
    // Still serving: it answers, and the receiver is still there.
    cli.ping().await?;
    let listed = cli.list_sessions(false).await?;
    ensure!(
        listed
            .iter()
            .any(|s| s.id.as_str() == RECEIVER && s.connected)
    );

    file_size_limit(pid, None)?;
    for i in 1000..1010 {
        accepted.push((cli.send_to(RECEIVER, text(i)).await?.message_id, i));
    }
    let log = core.log();
    // One line for the stretch, one for the signal: not one per refusal.
    let errors = log.lines().filter(|l| l.contains("ERROR")).count();
    ensure!(
        errors <= 3,
        "{errors} ERROR lines for one failing stretch:\n{log}"
    );
    ensure!(
        log.contains("the database failed, every request of the batch was refused"),
        "{log}"
    );
    ensure!(log.contains("the database works again"), "{log}");
    ensure!(log.contains("file-size limit"), "{log}");

    drop(receiver);
    let expect: Vec<(MessageId, String)> = accepted.iter().map(|&(id, i)| (id, text(i))).collect();
    assert_eq!(
        mailbox(&core).await?,
        expect,
        "after the disk had room again"
    );
    core.kill9();
    core.restart().await?;
    assert_eq!(mailbox(&core).await?, expect, "after a kill -9");
    ensure!(!core.log_has_panic(), "{}", core.log());
    Ok(())
}

/// The receiver's whole mailbox on a fresh connection, in order (left unread).
async fn mailbox(core: &Core) -> Result<Vec<(MessageId, String)>> {
    let mut receiver = core.pi(RECEIVER, RECEIVER).await?;
    let mut got = Vec::new();
    for _ in 0..receiver.pending {
        let d = receiver.next_delivery(WAIT).await?;
        got.push((d.id, d.text));
    }
    // Nothing after what `registered` announced.
    ensure!(
        receiver
            .next_delivery(Duration::from_millis(300))
            .await
            .is_err(),
        "a delivery beyond the announced mailbox"
    );
    Ok(got)
}
