//! The relay baseline: the floor under the round trip. Its own process, like the core,
//! forwarding length-prefixed frames between the two connections of each pair without
//! parsing them. The bench re-executes itself with [`RELAY_ENV`] set to run it.

use std::io::{BufRead as _, Write as _};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};

use anyhow::{Context, Result, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// Set in the environment of the bench's own child process that runs the relay.
pub const RELAY_ENV: &str = "SHEPHERD_BENCH_RELAY";

pub fn relay_main(socket: PathBuf) -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("relay runtime");
    let result: Result<()> = runtime.block_on(async move {
        let listener = tokio::net::UnixListener::bind(&socket)?;
        println!("ready");
        std::io::stdout().flush()?;
        loop {
            let (a, _) = listener.accept().await?;
            let (b, _) = listener.accept().await?;
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

/// Forward every complete frame read from `r` to `w`, all that are buffered in one write.
pub async fn pump(mut r: OwnedReadHalf, mut w: OwnedWriteHalf) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    loop {
        let mut end = 0;
        while end + 4 <= buf.len() {
            let len = u32::from_be_bytes(buf[end..end + 4].try_into().expect("4 bytes")) as usize;
            if end + 4 + len > buf.len() {
                break;
            }
            end += 4 + len;
        }
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

/// The relay child process, killed on drop.
pub struct Relay {
    pub child: Child,
    pub socket: PathBuf,
    pub _dir: tempfile::TempDir,
}

impl Relay {
    pub fn start() -> Result<Relay> {
        let dir = tempfile::Builder::new().prefix("shpr").tempdir_in("/tmp")?;
        let socket = dir.path().join("relay.sock");
        let mut child = Command::new(std::env::current_exe()?)
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
