//! The bench's lean frames for what it measures: sends, acks and pings are encoded by
//! hand into reused buffers, and incoming frames pass a prefix dispatch before typed
//! decoding, so that the clients spend as little of the shared CPU as they can while the
//! core is measured. Setting a connection up (hello, register) is not measured and goes
//! through shepherd_core's typed client ([`connect`]).

use std::borrow::Cow;
use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;
use shepherd_core::client::Client;
use shepherd_core::protocol::{ClientKind, Registration};
use tokio::io::{AsyncReadExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// The text of every message after its sequence number and timestamp: a typical steer.
pub const PAD: &str = "run the full test suite before you push, then report what failed";

/// Append one frame whose body `body` writes.
pub fn push_frame(buf: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>)) {
    let start = buf.len();
    buf.extend_from_slice(&[0; 4]);
    body(buf);
    let len = (buf.len() - start - 4) as u32;
    buf[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

/// A `message_peer` (Pi sessions reach each other along the peer edge) whose text carries
/// the sender's sequence number and a timestamp.
pub fn push_send(buf: &mut Vec<u8>, id: u64, to: &str, seq: u64, t_ns: u64) {
    push_frame(buf, |b| {
        let _ = write!(
            b,
            r#"{{"type":"message_peer","id":{id},"session":"{to}","text":"{seq} {t_ns} {PAD}"}}"#
        );
    });
}

/// A `send` (a steer, as the CLI or a phone sends it): how the one-session ring reaches
/// its session, which no other Pi session can message.
pub fn push_steer(buf: &mut Vec<u8>, id: u64, to: &str, seq: u64, t_ns: u64) {
    push_frame(buf, |b| {
        let _ = write!(
            b,
            r#"{{"type":"send","id":{id},"to":"{to}","text":"{seq} {t_ns} {PAD}"}}"#
        );
    });
}

pub fn push_ack(buf: &mut Vec<u8>, ids: &[u64]) {
    push_frame(buf, |b| {
        b.extend_from_slice(br#"{"type":"ack","ids":["#);
        for (i, id) in ids.iter().enumerate() {
            if i > 0 {
                b.push(b',');
            }
            let _ = write!(b, "{id}");
        }
        b.extend_from_slice(b"]}");
    });
}

/// (sequence number, send timestamp) from a bench message's text (after the core's
/// `Peer message from <name> (<id>): ` prefix, which the relay does not add).
pub fn stamp(text: &str) -> (u64, u64) {
    let text = text
        .strip_prefix("Peer message from ")
        .and_then(|t| t.split_once("): ").map(|(_, rest)| rest))
        .unwrap_or(text);
    let mut parts = text.split(' ');
    let seq = parts
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(u64::MAX);
    let t = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    (seq, t)
}

#[derive(Deserialize)]
pub struct DeliverFrame<'a> {
    #[serde(borrow)]
    pub message: DeliverMsg<'a>,
}

#[derive(Deserialize)]
pub struct DeliverMsg<'a> {
    pub id: u64,
    #[serde(borrow)]
    pub text: Cow<'a, str>,
}

#[derive(Deserialize)]
pub struct SentFrame {
    pub message_id: u64,
}

/// A `send` as the peer sees it through the relay.
#[derive(Deserialize)]
pub struct PeerFrame<'a> {
    #[serde(borrow)]
    pub text: Cow<'a, str>,
}

#[derive(Deserialize)]
pub struct AnyFrame {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub message: Option<serde_json::Value>,
}

/// What the bench cares about in an incoming frame.
pub enum In<'a> {
    Deliver {
        id: u64,
        text: Cow<'a, str>,
    },
    Sent {
        message_id: u64,
    },
    /// A `send` frame forwarded by the relay.
    Peer {
        text: Cow<'a, str>,
    },
    Pong,
    Error {
        code: String,
        message: String,
    },
    Other,
}

/// Decode a frame body: the core writes `type` first, so a prefix picks the typed decoder;
/// anything else goes through a generic one.
pub fn parse(body: &[u8]) -> Result<In<'_>> {
    let kind: Cow<'_, str> = if body.starts_with(br#"{"type":"deliver""#) {
        "deliver".into()
    } else if body.starts_with(br#"{"type":"sent""#) {
        "sent".into()
    } else if body.starts_with(br#"{"type":"message_peer""#) {
        "message_peer".into()
    } else {
        let any: AnyFrame = serde_json::from_slice(body)
            .with_context(|| format!("bad frame {}", String::from_utf8_lossy(body)))?;
        if any.kind == "error" {
            let message = match any.message {
                Some(serde_json::Value::String(s)) => s,
                other => format!("{other:?}"),
            };
            return Ok(In::Error {
                code: any.code.unwrap_or_default(),
                message,
            });
        }
        any.kind.into()
    };
    Ok(match kind.as_ref() {
        "deliver" => {
            let f: DeliverFrame<'_> = serde_json::from_slice(body)?;
            In::Deliver {
                id: f.message.id,
                text: f.message.text,
            }
        }
        "sent" => {
            let f: SentFrame = serde_json::from_slice(body)?;
            In::Sent {
                message_id: f.message_id,
            }
        }
        "message_peer" => {
            let f: PeerFrame<'_> = serde_json::from_slice(body)?;
            In::Peer { text: f.text }
        }
        "pong" => In::Pong,
        _ => In::Other,
    })
}

/// Reads frames into one reused buffer.
pub struct FrameReader {
    pub rd: BufReader<OwnedReadHalf>,
    pub body: Vec<u8>,
}

impl FrameReader {
    pub fn new(rd: OwnedReadHalf) -> FrameReader {
        FrameReader {
            rd: BufReader::with_capacity(64 * 1024, rd),
            body: Vec::with_capacity(4096),
        }
    }

    /// The next frame's body; `None` at end of stream.
    pub async fn next(&mut self) -> Result<Option<&[u8]>> {
        let mut header = [0u8; 4];
        match self.rd.read_exact(&mut header).await {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
                ) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        }
        let len = u32::from_be_bytes(header) as usize;
        self.body.resize(len, 0);
        self.rd.read_exact(&mut self.body).await?;
        Ok(Some(&self.body))
    }
}

/// A greeted connection; registered as a Pi session when `session` is given. The setup is
/// not measured, so it goes through the typed client; the connection is then taken apart
/// for the hand-rolled frames above.
pub async fn connect(
    socket: &Path,
    session: Option<&str>,
) -> Result<(FrameReader, OwnedWriteHalf)> {
    let kind = if session.is_some() {
        ClientKind::Pi
    } else {
        ClientKind::Cli
    };
    let mut client = Client::connect(socket, kind, "bench").await?;
    if let Some(id) = session {
        client.register(registration(id, id, "/tmp")).await?;
    }
    let (rd, wr) = client.into_split()?;
    Ok((FrameReader::new(rd), wr))
}

/// A bench session's registration: `id`, `name`, `cwd`, the rest as the tests' harness has it.
pub fn registration(id: &str, name: &str, cwd: &str) -> Registration {
    shepherd_harness::registration(id, name, std::path::Path::new(cwd))
}
