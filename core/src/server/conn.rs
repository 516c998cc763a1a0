//! One connection: a reader loop (this task) and a writer task.
//!
//! The reader enforces the handshake (`hello` first, within the timeout, same protocol
//! version; leaving early when the accept loop needs its greeting place), turns frames
//! into [`ClientMsg`]s, answers what is wrong with a frame itself (with the stable error
//! code, closing when the framing can no longer be trusted, a frame stalls half-sent or
//! unfinished frames would hold more than their shared budget), looks
//! up the repository context off the async threads, and forwards everything else to the
//! hub in order. The writer drains the connection's bounded outbox, coalescing queued
//! frames into one write; it shares the socket's write half with the hub, which writes a
//! quiet connection's lone frame itself ([`crate::hub::ConnHandle`]) while nothing is
//! queued.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::greeting::Ticket;
use super::{ConnSettings, MAX_GREETING, MAX_HELLO_FRAME, Open};
use crate::clock::now_ms;
use crate::framing::{Arrival, FrameError, read_frame_arriving};
use crate::git::{self, RepoContext};
use crate::hub::{ConnHandle, ConnId, HubCommand, HubHandle};
use crate::protocol::requests::GitContext;
use crate::protocol::{
    ClientKind, ClientMsg, ErrorCode, PROTOCOL_VERSION, ServerMsg, frame, requests,
};

/// Largest write the writer assembles from queued frames.
const MAX_COALESCED: usize = 256 * 1024;

fn error_frame(id: Option<u64>, code: ErrorCode, message: impl Into<String>) -> Bytes {
    Bytes::from(frame::encode(&ServerMsg::error(id, code, message)))
}

/// A connection the accept loop let in.
pub(super) struct Accepted {
    pub id: ConnId,
    pub stream: UnixStream,
    pub pid: Option<u32>,
    /// Its place among the connections greeting.
    pub place: Arc<Ticket>,
    /// Counts it as open until it closes.
    pub open: Open,
}

/// Serve one accepted connection until it closes.
pub(super) async fn run(
    accepted: Accepted,
    hub: HubHandle,
    settings: Arc<ConnSettings>,
    shutdown: CancellationToken,
) {
    let Accepted {
        id,
        stream,
        pid,
        place,
        open: _open,
    } = accepted;
    let (read, write) = stream.into_split();
    // Shared with the hub, which writes a quiet connection's lone frame itself.
    let write = Arc::new(write);
    // Small: tokio zero-fills the buffer, so it is resident for every connection.
    let mut reader = BufReader::with_capacity(8 * 1024, read);
    let (tx, rx) = mpsc::channel(settings.max_outbound);
    let abort = CancellationToken::new();
    let drain_wanted = Arc::new(AtomicBool::new(false));
    let queued = Arc::new(AtomicUsize::new(0));
    let drained = Drained {
        conn: id,
        wanted: drain_wanted.clone(),
        hub: hub.clone(),
        queued: queued.clone(),
    };
    let writer = tokio::spawn(write_loop(write.clone(), rx, abort.clone(), drained));

    let mut conn = Reader {
        id,
        tx,
        hub,
        max_frame: settings.max_frame,
        settings,
        cwd: None,
        drain_wanted,
        queued,
        socket: write,
    };
    let greeted = match conn.hello(&mut reader, pid, place).await {
        Some(close) => {
            let code = conn.serve(&mut reader, close, &shutdown).await;
            if code == Some(ErrorCode::SlowConsumer) {
                abort.cancel();
            }
            true
        }
        None => false,
    };
    if greeted {
        conn.hub.send(HubCommand::Disconnect { conn: id }).await;
    }
    let Reader {
        tx,
        settings,
        socket,
        ..
    } = conn;
    drop((tx, socket));
    // The writer ends once the hub has dropped its sender too; don't wait forever on a
    // peer that stopped reading.
    let finished = tokio::time::timeout(Duration::from_secs(5), writer).await;
    let (write, clean) = match finished {
        Ok(Ok(result)) => result,
        _ => return,
    };
    if abort.is_cancelled() && clean {
        let frame = error_frame(
            None,
            ErrorCode::SlowConsumer,
            format!(
                "more than {} frames or {} bytes were waiting for you; reconnect to resume (nothing is lost)",
                settings.max_outbound, settings.max_outbound_bytes
            ),
        );
        let _ = tokio::time::timeout(Duration::from_millis(200), write_all(&write, &frame)).await;
    }
    // Dropping the last handle shuts the write side down too; the hub has dropped its own
    // once the writer ended (it held it beside the writer's sender).
    if let Ok(mut write) = Arc::try_unwrap(write) {
        let _ = write.shutdown().await;
    }
}

struct Reader {
    id: ConnId,
    tx: mpsc::Sender<Bytes>,
    hub: HubHandle,
    settings: Arc<ConnSettings>,
    /// The registered session's cwd, to refresh the repository context.
    cwd: Option<String>,
    /// This client's frame limit once greeted: `max_frame` for a Pi session, the larger
    /// `max_file_frame` for the human's clients and linked cores (files from the phone).
    max_frame: usize,
    drain_wanted: Arc<AtomicBool>,
    /// Bytes queued for the writer (see [`ConnHandle::queued_bytes`]).
    queued: Arc<AtomicUsize>,
    /// The socket's write half, for the hub ([`ConnHandle::socket`]).
    socket: Arc<OwnedWriteHalf>,
}

impl Reader {
    async fn reply(&self, frame: Bytes) {
        self.queued.fetch_add(frame.len(), Ordering::AcqRel);
        let _ = self.tx.send(frame).await;
    }

    /// Read a frame, answering framing errors. `None` means the connection is over.
    async fn next_body(&self, reader: &mut BufReader<OwnedReadHalf>) -> Option<Vec<u8>> {
        self.next_body_within(reader, self.max_frame).await
    }

    /// [`Self::next_body`] with the limit `max` (smaller before `hello`).
    async fn next_body_within(
        &self,
        reader: &mut BufReader<OwnedReadHalf>,
        max: usize,
    ) -> Option<Vec<u8>> {
        let arrival = Arrival {
            within: self.settings.frame_timeout,
            budget: &self.settings.frame_budget,
        };
        match read_frame_arriving(reader, max, arrival).await {
            Ok(Some(body)) => Some(body),
            Ok(None) => None,
            Err(FrameError::TooLarge { len, max }) => {
                tracing::warn!(conn = self.id, len, max, "closing: frame over the limit");
                let msg = if max < self.settings.max_frame {
                    format!(
                        "frame of {len} bytes is over the {max}-byte limit before hello; say hello first (see docs/PROTOCOL.md); closing"
                    )
                } else if max > self.settings.max_frame {
                    format!(
                        "frame of {len} bytes is over the {max}-byte limit of the human's clients (a file of phone.max_file_mb in base64); closing"
                    )
                } else {
                    format!(
                        "frame of {len} bytes is over the {max}-byte limit (core.limits.max_frame_bytes); closing"
                    )
                };
                self.reply(error_frame(None, ErrorCode::FrameTooLarge, msg))
                    .await;
                None
            }
            Err(FrameError::Truncated { got, want }) => {
                tracing::warn!(conn = self.id, got, want, "closing: truncated frame");
                let msg =
                    format!("the stream ended inside a frame ({got} of {want} bytes); closing");
                self.reply(error_frame(None, ErrorCode::TruncatedFrame, msg))
                    .await;
                None
            }
            Err(FrameError::Stalled { got, want, within }) => {
                let ms = within.as_millis();
                tracing::warn!(
                    conn = self.id,
                    got,
                    want,
                    within_ms = ms,
                    "closing: a frame stalled unfinished (core.limits.frame_timeout_ms)"
                );
                let msg = format!(
                    "the frame did not arrive within {ms} ms of its first byte ({got} of {want} bytes; core.limits.frame_timeout_ms); send each frame whole; closing"
                );
                self.reply(error_frame(None, ErrorCode::TruncatedFrame, msg))
                    .await;
                None
            }
            Err(FrameError::OverBudget { len, held, max }) => {
                tracing::warn!(
                    conn = self.id,
                    len,
                    held,
                    max,
                    "closing: unfinished frames would hold more than their budget (core.limits.max_unfinished_frame_bytes)"
                );
                let msg = format!(
                    "frame of {len} bytes does not fit now: unfinished frames hold {held} of at most {max} bytes (core.limits.max_unfinished_frame_bytes); reconnect and send it again; closing"
                );
                self.reply(error_frame(None, ErrorCode::FrameTooLarge, msg))
                    .await;
                None
            }
            Err(FrameError::Io(e)) => {
                tracing::debug!(conn = self.id, error = %e, "read failed");
                None
            }
        }
    }

    /// The handshake. Returns the hub's close signal once greeted.
    async fn hello(
        &mut self,
        reader: &mut BufReader<OwnedReadHalf>,
        pid: Option<u32>,
        place: Arc<Ticket>,
    ) -> Option<oneshot::Receiver<ErrorCode>> {
        let body = self.first_frame(reader, pid, place).await?;
        let hello = self.accept_hello(&body, pid).await?;
        self.welcome(hello, pid).await
    }

    /// The first frame, read while this connection holds its place among those greeting;
    /// None (the peer told why) when it came too late, the place was needed, or the
    /// connection ended first.
    async fn first_frame(
        &mut self,
        reader: &mut BufReader<OwnedReadHalf>,
        pid: Option<u32>,
        place: Arc<Ticket>,
    ) -> Option<Vec<u8>> {
        let first = {
            // Holds a place among the connections greeting until the hello is read.
            let _place = Finish(&place);
            let hello = self.next_body_within(reader, MAX_HELLO_FRAME.min(self.settings.max_frame));
            tokio::select! {
                // The hello first: one already in the socket buffer is read even when
                // this connection was told to make room.
                biased;
                body = hello => Greeting::Read(body),
                _ = place.evicted() => Greeting::Evicted,
                _ = tokio::time::sleep(self.settings.hello_timeout) => Greeting::Late,
            }
        };
        match first {
            Greeting::Read(body) => body,
            Greeting::Late => {
                tracing::warn!(conn = self.id, pid, "closing: no hello in time");
                let msg = format!(
                    "no hello within {} ms; say hello first (see docs/PROTOCOL.md)",
                    self.settings.hello_timeout.as_millis()
                );
                self.reply(error_frame(None, ErrorCode::HelloTimeout, msg))
                    .await;
                None
            }
            Greeting::Evicted => {
                tracing::warn!(
                    conn = self.id,
                    pid,
                    "closing: no hello yet and newer connections need its place"
                );
                let msg = format!(
                    "no hello yet, and newer connections need this one's place (at most {MAX_GREETING} wait for their hello at once); closing it to make room: say hello as soon as you connect (see docs/PROTOCOL.md)"
                );
                self.reply(error_frame(None, ErrorCode::HelloTimeout, msg))
                    .await;
                None
            }
        }
    }

    /// The hello in the first frame, of this core's protocol. None (the peer told why) when
    /// it is not a hello or speaks another protocol.
    async fn accept_hello(&mut self, body: &[u8], pid: Option<u32>) -> Option<requests::Hello> {
        match ClientMsg::decode(body) {
            Ok(ClientMsg::Hello(hello)) => {
                let requests::Hello { id, protocol, .. } = hello;
                if protocol != PROTOCOL_VERSION {
                    tracing::warn!(conn = self.id, pid, protocol, "closing: protocol mismatch");
                    let msg = format!(
                        "client speaks intercom protocol {protocol}, this core speaks {PROTOCOL_VERSION}; update the older of the two"
                    );
                    self.reply(error_frame(Some(id), ErrorCode::ProtocolMismatch, msg))
                        .await;
                    return None;
                }
                Some(hello)
            }
            Ok(other) => {
                let msg = "the first message must be hello; closing";
                self.reply(error_frame(
                    other.request_id(),
                    ErrorCode::HelloRequired,
                    msg,
                ))
                .await;
                None
            }
            Err((e, id)) => {
                let code = match e.code() {
                    ErrorCode::MalformedFrame => ErrorCode::MalformedFrame,
                    _ => ErrorCode::HelloRequired,
                };
                let msg = format!("{e}; the first message must be a valid hello; closing");
                self.reply(error_frame(id, code, msg)).await;
                None
            }
        }
    }

    /// Welcome a greeted client and hand the connection to the hub; the hub's close
    /// signal, None when the hub is gone.
    async fn welcome(
        &mut self,
        hello: requests::Hello,
        pid: Option<u32>,
    ) -> Option<oneshot::Receiver<ErrorCode>> {
        let requests::Hello {
            id,
            client: kind,
            client_name,
            ..
        } = hello;
        let client_name = client_name.unwrap_or_else(|| default_name(kind).to_string());
        if kind != ClientKind::Pi {
            self.max_frame = self.settings.max_file_frame.max(self.settings.max_frame);
        }
        let welcome = ServerMsg::Welcome {
            id,
            protocol: PROTOCOL_VERSION,
            core_version: env!("CARGO_PKG_VERSION").to_string(),
            store_id: self.settings.store_id.clone(),
            pid: std::process::id(),
        };
        self.reply(Bytes::from(frame::encode(&welcome))).await;
        let (close_tx, close_rx) = oneshot::channel();
        let handle = ConnHandle {
            kind,
            client_name,
            pid,
            outbox: self.tx.clone(),
            socket: self.socket.clone(),
            drain_wanted: self.drain_wanted.clone(),
            queued_bytes: self.queued.clone(),
            connected_at: now_ms(),
        };
        let connected = self
            .hub
            .send(HubCommand::Connect {
                conn: self.id,
                handle,
                close: close_tx,
            })
            .await;
        connected.then_some(close_rx)
    }

    /// Requests until the peer leaves or the hub closes us; the close code, if any.
    async fn serve(
        &mut self,
        reader: &mut BufReader<OwnedReadHalf>,
        mut close: oneshot::Receiver<ErrorCode>,
        shutdown: &CancellationToken,
    ) -> Option<ErrorCode> {
        // Waited on across frames: registered once, not again for every frame.
        let mut shutting_down = std::pin::pin!(shutdown.cancelled());
        loop {
            let body = tokio::select! {
                body = self.next_body(reader) => body?,
                code = &mut close => {
                    let code = code.unwrap_or(ErrorCode::ShuttingDown);
                    if code != ErrorCode::SlowConsumer && code != ErrorCode::Replaced {
                        self.reply(error_frame(None, code, "the core is closing this connection")).await;
                    }
                    return Some(code);
                }
                _ = &mut shutting_down => {
                    self.reply(error_frame(None, ErrorCode::ShuttingDown, "the core is shutting down; reconnect after it restarts")).await;
                    return Some(ErrorCode::ShuttingDown);
                }
            };
            match ClientMsg::decode(&body) {
                Ok(msg) => {
                    let repo = self.repo_for(&msg).await;
                    let cmd = HubCommand::Request {
                        conn: self.id,
                        msg: Box::new(msg),
                        repo,
                    };
                    if !self.hub.send(cmd).await {
                        return Some(ErrorCode::ShuttingDown);
                    }
                }
                Err((e, id)) => {
                    let code = e.code();
                    tracing::debug!(conn = self.id, %code, "bad message: {e}");
                    self.reply(error_frame(id, code, e.to_string())).await;
                    if code.closes_connection() {
                        return Some(code);
                    }
                }
            }
        }
    }

    /// Repository context for the requests declared to need it (`git` in
    /// `client_messages!`, [`ClientMsg::git_context`]). `cwd` is this
    /// task's best knowledge of the session's directory; the hub ignores a context read
    /// for any directory other than the session's accepted cwd.
    async fn repo_for(&mut self, msg: &ClientMsg) -> Option<RepoContext> {
        let cwd = match msg.git_context() {
            GitContext::None => return None,
            GitContext::Cwd(cwd) => cwd.to_string(),
            GitContext::SessionCwd => self.cwd.clone()?,
        };
        if !cwd.starts_with('/') {
            return None; // The hub refuses it; nothing to read.
        }
        self.cwd = Some(cwd.clone());
        let path = PathBuf::from(cwd);
        tokio::task::spawn_blocking(move || git::discover(&path))
            .await
            .ok()
    }
}

/// How a greeting's wait ended.
enum Greeting {
    /// The first frame, or `None` when the connection is over.
    Read(Option<Vec<u8>>),
    /// The accept loop needed the place.
    Evicted,
    /// The hello timeout passed.
    Late,
}

/// Frees a greeting place when the wait for the hello ends, however it ends.
struct Finish<'a>(&'a Ticket);

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        self.0.finish();
    }
}

fn default_name(kind: ClientKind) -> &'static str {
    match kind {
        ClientKind::Pi => "pi",
        ClientKind::Bridge => "bridge",
        ClientKind::Cli => "cli",
        ClientKind::Core => "core",
    }
}

/// How the writer tells the hub its queue is empty, when the hub asked.
struct Drained {
    conn: ConnId,
    wanted: Arc<AtomicBool>,
    hub: HubHandle,
    /// The connection's queued bytes, taken off as they are written.
    queued: Arc<AtomicUsize>,
}

/// Write all of `bytes` on a write half shared with the hub (which writes only while
/// nothing is queued, so never between the frames written here).
async fn write_all(write: &OwnedWriteHalf, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        match write.try_write(bytes) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => write.writable().await?,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// What one write of the writer carries: a frame as it was queued, or several gathered
/// in the writer's buffer.
enum Frames {
    One(Bytes),
    Gathered,
}

impl Frames {
    fn len(&self, buf: &[u8]) -> usize {
        self.bytes(buf).len()
    }

    /// Add `more` behind what is here, gathering into `buf`.
    fn push(&mut self, buf: &mut Vec<u8>, more: &[u8]) {
        if let Frames::One(first) = self {
            buf.clear();
            buf.extend_from_slice(first);
            *self = Frames::Gathered;
        }
        buf.extend_from_slice(more);
    }

    fn bytes<'a>(&'a self, buf: &'a [u8]) -> &'a [u8] {
        match self {
            Frames::One(frame) => frame,
            Frames::Gathered => buf,
        }
    }
}

/// Write queued frames until every sender is gone or `abort` fires. Returns the write half
/// and whether it stopped between frames (so one more frame may still be written).
async fn write_loop(
    write: Arc<OwnedWriteHalf>,
    mut rx: mpsc::Receiver<Bytes>,
    abort: CancellationToken,
    drained: Drained,
) -> (Arc<OwnedWriteHalf>, bool) {
    let mut buf = Vec::with_capacity(64 * 1024);
    // Waited on across frames: registered once, not again for every frame.
    let mut aborted = std::pin::pin!(abort.cancelled());
    loop {
        let first = tokio::select! {
            _ = &mut aborted => return (write, true),
            first = rx.recv() => first,
        };
        let Some(first) = first else {
            return (write, true);
        };
        // A frame alone (the common case: one response, one delivery) is written as it
        // is; frames queued behind it are gathered into one write.
        let mut frames = Frames::One(first);
        while frames.len(&buf) < MAX_COALESCED {
            match rx.try_recv() {
                Ok(more) => frames.push(&mut buf, &more),
                Err(_) => break,
            }
        }
        let bytes = frames.bytes(&buf);
        tokio::select! {
            _ = &mut aborted => return (write, false),
            written = write_all(&write, bytes) => if written.is_err() { return (write, false) },
        }
        drained.queued.fetch_sub(bytes.len(), Ordering::AcqRel);
        if rx.is_empty() && drained.wanted.swap(false, Ordering::AcqRel) {
            drained
                .hub
                .send(HubCommand::Drained { conn: drained.conn })
                .await;
        }
    }
}
