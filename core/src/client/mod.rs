//! # Intercom client
//!
//! A small sequential client for the core's socket, used by the CLI, the chat bridges, the
//! tests and the benchmarks: connect and greet, make typed calls ([`Client::call`] takes a
//! request struct from [`crate::protocol::requests`] and returns its reply type, see
//! [`calls`]), read events. Events that arrive while a response is awaited are queued,
//! not dropped.

mod calls;
mod herd;
mod roles;

pub use calls::{
    ApprovalRuling, Interrupted, Registered, Request, RoleSet, Routed, Sent, Unanswered,
    VerdictAccepted,
};
pub use herd::Herd;

use std::collections::VecDeque;
use std::path::Path;

use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

use crate::framing::{self, FrameError};
use crate::protocol::{
    ClientKind, ClientMsg, ErrorCode, PROTOCOL_VERSION, ServerMsg, frame, requests,
};

/// What went wrong talking to the core.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing listens on the socket.
    #[error(
        "the shepherd core is not running (no answer on {socket}): start it with `shepherd up`"
    )]
    NotRunning { socket: String },
    /// The core answered with an error frame.
    #[error("{message} [{code}]")]
    Remote {
        code: ErrorCode,
        message: String,
        details: Option<serde_json::Value>,
    },
    /// The core welcomed this client with another protocol version than its own (a
    /// core that speaks several): the two cannot talk.
    #[error(
        "the shepherd core {core_version} (pid {pid}) speaks intercom protocol {core}, this client speaks {PROTOCOL_VERSION}"
    )]
    ProtocolMismatch {
        core: u32,
        core_version: String,
        pid: u32,
    },
    /// The core closed the connection.
    #[error("the core closed the connection")]
    Closed,
    /// The core sent something this client cannot read.
    #[error("unexpected reply from the core: {0}")]
    Protocol(String),
    /// The core answered a request with a reply of another type: this client and the
    /// core are out of step.
    #[error("the core answered `{request}` with `{reply}`")]
    Unexpected {
        request: &'static str,
        reply: &'static str,
    },
    #[error("socket error: {0}")]
    Io(#[from] std::io::Error),
}

impl ClientError {
    /// The wire code, for remote errors.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Remote { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// `details.reason`, for remote errors that give one.
    pub fn reason(&self) -> Option<&str> {
        match self {
            ClientError::Remote {
                details: Some(details),
                ..
            } => details["reason"].as_str(),
            _ => None,
        }
    }
}

/// The core's `welcome`.
#[derive(Debug, Clone)]
pub struct Welcome {
    pub protocol: u32,
    pub core_version: String,
    pub store_id: String,
    pub pid: u32,
}

/// A greeted connection to the core: over its socket (the default), or over any byte
/// stream that reaches it ([`Client::over`]: a host link's command).
pub struct Client<R = OwnedReadHalf, W = OwnedWriteHalf> {
    reader: BufReader<R>,
    writer: W,
    next_id: u64,
    queued: VecDeque<ServerMsg>,
    welcome: Welcome,
}

/// Frames the client reads may be as large as the core's limit allows for anything it
/// sends (lists of sessions and asks can be long).
const MAX_INBOUND: usize = 64 * 1024 * 1024;

impl Client {
    /// Connect to `socket` and say hello as `kind`. A `welcome` with another protocol
    /// version than [`PROTOCOL_VERSION`] is [`ClientError::ProtocolMismatch`].
    pub async fn connect(
        socket: &Path,
        kind: ClientKind,
        client_name: &str,
    ) -> Result<Client, ClientError> {
        let stream = UnixStream::connect(socket)
            .await
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused => {
                    ClientError::NotRunning {
                        socket: socket.display().to_string(),
                    }
                }
                _ => ClientError::Io(e),
            })?;
        let (read, writer) = stream.into_split();
        Client::over(read, writer, kind, client_name).await
    }

    /// Take the greeted connection apart, for a caller that reads and writes raw frames
    /// from here on (the benchmark's measured loops). Fails if a frame is already queued
    /// or buffered, since the raw reader would never see it.
    pub fn into_split(self) -> Result<(OwnedReadHalf, OwnedWriteHalf), ClientError> {
        if !self.queued.is_empty() || !self.reader.buffer().is_empty() {
            return Err(ClientError::Protocol(
                "frames arrived before the connection was taken apart".into(),
            ));
        }
        Ok((self.reader.into_inner(), self.writer))
    }
}

impl<In: AsyncRead + Unpin, Out: AsyncWrite + Unpin> Client<In, Out> {
    /// Say hello as `kind` over a byte stream that reaches a core (`reader` from it,
    /// `writer` to it). A `welcome` with another protocol version than
    /// [`PROTOCOL_VERSION`] is [`ClientError::ProtocolMismatch`].
    pub async fn over(
        reader: In,
        writer: Out,
        kind: ClientKind,
        client_name: &str,
    ) -> Result<Client<In, Out>, ClientError> {
        let mut client = Client {
            reader: BufReader::new(reader),
            writer,
            next_id: 1,
            queued: VecDeque::new(),
            welcome: Welcome {
                protocol: 0,
                core_version: String::new(),
                store_id: String::new(),
                pid: 0,
            },
        };
        client.welcome = client
            .call(requests::Hello {
                id: 0,
                protocol: PROTOCOL_VERSION,
                client: kind,
                client_name: Some(client_name.to_string()),
            })
            .await?;
        let welcome = &client.welcome;
        if welcome.protocol != PROTOCOL_VERSION {
            return Err(ClientError::ProtocolMismatch {
                core: welcome.protocol,
                core_version: welcome.core_version.clone(),
                pid: welcome.pid,
            });
        }
        Ok(client)
    }

    /// The core's greeting.
    pub fn welcome(&self) -> &Welcome {
        &self.welcome
    }

    /// Send a request with a fresh id and wait for its reply, as the request's reply
    /// type. An `error` response becomes [`ClientError::Remote`] (the core's code,
    /// message and details); a reply of another type, [`ClientError::Unexpected`].
    pub async fn call<R: Request>(&mut self, request: R) -> Result<R::Reply, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&request.with_id(id)).await?;
        let reply = self.response(id).await?;
        R::reply(reply).map_err(|reply| ClientError::Unexpected {
            request: R::TYPE,
            reply,
        })
    }

    /// Wait for the response to request `id`, queueing events that come first.
    async fn response(&mut self, id: u64) -> Result<ServerMsg, ClientError> {
        loop {
            let msg = self.read().await?;
            match msg.response_id() {
                Some(rid) if rid == id => return into_result(msg),
                _ if matches!(msg, ServerMsg::Error { id: None, .. }) => return into_result(msg),
                _ => self.queued.push_back(msg),
            }
        }
    }

    /// Send a message as it is, without waiting (for `ack`, or a test's raw message).
    pub async fn send(&mut self, msg: &ClientMsg) -> Result<(), ClientError> {
        framing::write_frame(&mut self.writer, &frame::encode(msg)).await?;
        Ok(())
    }

    /// The next event (or stray frame), queued ones first.
    pub async fn next_event(&mut self) -> Result<ServerMsg, ClientError> {
        match self.queued.pop_front() {
            Some(msg) => Ok(msg),
            None => self.read().await,
        }
    }

    async fn read(&mut self) -> Result<ServerMsg, ClientError> {
        let body = match framing::read_frame(&mut self.reader, MAX_INBOUND).await {
            Ok(Some(body)) => body,
            Ok(None) => return Err(ClientError::Closed),
            Err(FrameError::Io(e)) => return Err(ClientError::Io(e)),
            Err(e) => return Err(ClientError::Protocol(e.to_string())),
        };
        frame::decode(&body, ServerMsg::TYPES)
            .map_err(|(e, _)| ClientError::Protocol(e.to_string()))
    }
}

fn into_result(msg: ServerMsg) -> Result<ServerMsg, ClientError> {
    match msg {
        ServerMsg::Error {
            code,
            message,
            details,
            ..
        } => Err(ClientError::Remote {
            code,
            message,
            details,
        }),
        other => Ok(other),
    }
}
