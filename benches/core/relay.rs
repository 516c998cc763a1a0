//! The relay baselines: the floors under the round trip. Each is its own process, like the
//! core, forwarding length-prefixed frames between the two connections of each pair
//! without parsing them. The bench re-executes itself with [`RELAY_ENV`] set to run one.
//!
//! - The plain relay only forwards: what the sockets and the wake-ups cost.
//! - The storing relay ([`STORE_ENV`] names its database) does the least a broker that
//!   stores before it acknowledges must: each batch of frames read is inserted into SQLite
//!   (WAL, `synchronous=NORMAL`, like the core's default) and committed, then forwarded,
//!   and the sender gets a small `sent` frame. What the core adds over it is the core's own
//!   work (decoding, checks, its schema, encoding), not the promise.

use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};
use rusqlite::Connection;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

use crate::wire::push_frame;

/// Set in the environment of the bench's own child process that runs the relay.
pub const RELAY_ENV: &str = "SHEPHERD_BENCH_RELAY";
/// Set (to a database path) beside [`RELAY_ENV`] for the storing relay.
pub const STORE_ENV: &str = "SHEPHERD_BENCH_RELAY_STORE";

pub fn relay_main(socket: PathBuf) -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("relay runtime");
    let result: Result<()> = runtime.block_on(async move {
        let db = match std::env::var_os(STORE_ENV) {
            Some(path) => Some(Arc::new(Mutex::new(open_store(Path::new(&path))?))),
            None => None,
        };
        let listener = tokio::net::UnixListener::bind(&socket)?;
        println!("ready");
        std::io::stdout().flush()?;
        loop {
            let (a, _) = listener.accept().await?;
            let (b, _) = listener.accept().await?;
            if let Some(db) = &db {
                tokio::spawn(store_and_forward(a, b, db.clone()));
                continue;
            }
            let (ar, aw) = a.into_split();
            let (br, bw) = b.into_split();
            tokio::spawn(pump(ar, bw));
            tokio::spawn(pump(br, aw));
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("relay: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The bodies of the complete frames at the start of `buf`, in order.
fn bodies(buf: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let head = buf.get(at..at + 4)?;
        let len = u32::from_be_bytes(head.try_into().expect("4 bytes")) as usize;
        let body = buf.get(at + 4..at + 4 + len)?;
        at += 4 + len;
        Some(body)
    })
}

/// The end of the complete frames at the start of `buf`.
fn complete_frames(buf: &[u8]) -> usize {
    bodies(buf).map(|body| 4 + body.len()).sum()
}

/// Forward every complete frame read from `r` to `w`, all that are buffered in one write.
pub async fn pump(mut r: OwnedReadHalf, mut w: OwnedWriteHalf) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    loop {
        let end = complete_frames(&buf);
        if end > 0 {
            w.write_all(&buf[..end]).await?;
            buf.drain(..end);
            continue;
        }
        if r.read_buf(&mut buf).await? == 0 {
            return Ok(());
        }
    }
}

fn open_store(path: &Path) -> Result<Connection> {
    let db = Connection::open(path)?;
    db.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
         CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, body BLOB NOT NULL);",
    )?;
    Ok(db)
}

/// The storing relay's pair: frames from either side are stored (one transaction for all
/// that one read brought), forwarded, and acknowledged to their sender with `sent`.
async fn store_and_forward(a: UnixStream, b: UnixStream, db: Arc<Mutex<Connection>>) -> Result<()> {
    let (mut ar, mut aw) = a.into_split();
    let (mut br, mut bw) = b.into_split();
    let (mut from_a, mut from_b) = (Vec::with_capacity(64 * 1024), Vec::with_capacity(64 * 1024));
    loop {
        // `read_buf` is cancel safe: the side that did not win keeps what it had.
        let a_turn = tokio::select! {
            n = ar.read_buf(&mut from_a) => if n? == 0 { return Ok(()) } else { true },
            n = br.read_buf(&mut from_b) => if n? == 0 { return Ok(()) } else { false },
        };
        let (buf, to, sender) = match a_turn {
            true => (&mut from_a, &mut bw, &mut aw),
            false => (&mut from_b, &mut aw, &mut bw),
        };
        let end = complete_frames(buf);
        if end == 0 {
            continue;
        }
        let last_id = {
            let db = db.lock().expect("the relay's database");
            let tx = db.unchecked_transaction()?;
            let mut insert = tx.prepare_cached("INSERT INTO messages (body) VALUES (?1)")?;
            for body in bodies(&buf[..end]) {
                insert.execute([body])?;
            }
            drop(insert);
            let id = tx.last_insert_rowid();
            tx.commit()?;
            id
        };
        to.write_all(&buf[..end]).await?;
        let mut sent = Vec::with_capacity(48);
        push_frame(&mut sent, |b| {
            let _ = write!(b, r#"{{"type":"sent","message_id":{last_id}}}"#);
        });
        sender.write_all(&sent).await?;
        buf.drain(..end);
    }
}

/// The relay child process, killed on drop.
pub struct Relay {
    pub child: Child,
    pub socket: PathBuf,
    pub _dir: tempfile::TempDir,
}

impl Relay {
    /// The plain relay (`storing == false`) or the storing one.
    pub fn start(storing: bool) -> Result<Relay> {
        let dir = tempfile::Builder::new().prefix("shpr").tempdir_in("/tmp")?;
        let socket = dir.path().join("relay.sock");
        let mut command = Command::new(std::env::current_exe()?);
        if storing {
            command.env(STORE_ENV, dir.path().join("relay.db"));
        }
        let mut child = command
            .env(RELAY_ENV, &socket)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .context("spawning the relay")?;
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().context("relay stdout")?)
            .read_line(&mut line)?;
        if line.trim() != "ready" {
            bail!("relay did not start: {line:?}");
        }
        Ok(Relay {
            child,
            socket,
            _dir: dir,
        })
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
