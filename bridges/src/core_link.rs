//! # The bridge's link to the core
//!
//! A bridge is a client of the core like any other (client kind `bridge`). It keeps two
//! connections: one subscribed to events (sessions, asks, reports, pairings), read by a task that
//! forwards them to the bridge and reconnects with backoff when the core restarts, and
//! one for requests (answer, send, lists), connected on demand and re-established once
//! when it finds the connection gone.

use std::path::{Path, PathBuf};
use std::time::Duration;

use shepherd_core::client::{Client, ClientError, Request};
use std::collections::HashMap;

use shepherd_core::protocol::{
    Ask, AskState, ClientKind, Pairing, ServerMsg, SessionInfo, requests,
};

use crate::chat::commands::ChatCommand;
use crate::chat::render::{self, Rendered};
use crate::chat::replies::{failure, pick, plain};
use crate::supervision::Here;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What the event task tells the bridge.
#[derive(Debug)]
pub enum CoreEvent {
    /// (Re)connected and subscribed: resynchronise (the bridge may have missed events).
    Connected,
    /// An event from the core.
    Event(Box<ServerMsg>),
    /// The connection dropped; reconnecting.
    Disconnected(String),
}

/// Requests to the core, reconnecting when needed.
pub struct CoreLink {
    socket: PathBuf,
    name: String,
    client: Option<Client>,
}

impl CoreLink {
    pub fn new(socket: &Path, name: &str) -> CoreLink {
        CoreLink {
            socket: socket.to_path_buf(),
            name: name.to_string(),
            client: None,
        }
    }

    /// Send a request; on a dead connection, reconnect and try once more.
    pub async fn call<R: Request + Clone>(&mut self, request: R) -> Result<R::Reply, ClientError> {
        for attempt in 0..2 {
            if self.client.is_none() {
                self.client =
                    Some(Client::connect(&self.socket, ClientKind::Bridge, &self.name).await?);
            }
            let client = self.client.as_mut().expect("just connected");
            match client.call(request.clone()).await {
                Err(ClientError::Closed | ClientError::Io(_)) if attempt == 0 => self.client = None,
                Err(e @ (ClientError::Closed | ClientError::Io(_))) => {
                    self.client = None;
                    return Err(e);
                }
                other => return other,
            }
        }
        unreachable!("the loop returns")
    }
}

/// What a bridge needs to catch up after (re)connecting: every known session, every ask
/// split into the ones still open and the ones answered, and the active pairings.
pub struct Snapshot {
    pub sessions: HashMap<String, SessionInfo>,
    pub open: Vec<Ask>,
    pub answered: HashMap<u64, Ask>,
    pub pairings: Vec<Pairing>,
}

impl CoreLink {
    /// Read the sessions and asks a bridge resynchronises from.
    pub async fn snapshot(&mut self) -> Result<Snapshot, ClientError> {
        let sessions = self
            .call(requests::ListSessions { id: 0, all: true })
            .await?
            .into_iter()
            .map(|s| (s.id.to_string(), s))
            .collect();
        let asks = self.call(requests::ListAsks { id: 0, all: true }).await?;
        let (open, answered): (Vec<Ask>, Vec<Ask>) =
            asks.into_iter().partition(|a| a.state == AskState::Open);
        let answered = answered.into_iter().map(|a| (a.id.get(), a)).collect();
        // A core that cannot list pairings still gets its asks and sessions shown.
        let pairings = match self
            .call(requests::ListPairings { id: 0, all: false })
            .await
        {
            Ok(pairings) => pairings,
            Err(e @ ClientError::Unexpected { .. }) => {
                tracing::warn!(error = %e, "bridge: unexpected reply to list_pairings");
                Vec::new()
            }
            Err(e @ ClientError::Remote { .. }) => {
                tracing::warn!(error = %e, "bridge: the core did not list its pairings");
                Vec::new()
            }
            Err(e) => return Err(e),
        };
        Ok(Snapshot {
            sessions,
            open,
            answered,
            pairings,
        })
    }
}

/// What to do about a chat command.
pub enum CommandReply {
    /// Say this where the command was written.
    Say(Rendered),
    /// Steer a session (the bridge confirms in its own way).
    Steer { session: String, text: String },
    /// A pairing command's result, `reply` to be said where the command was written.
    /// `announced`: the worker's topic or thread gets the same news from the core's
    /// `pairing_event`, so where that is also where the command was written, the bridge
    /// says it once.
    Pairing {
        pairing: Box<Pairing>,
        reply: Rendered,
        announced: bool,
    },
}

impl CoreLink {
    /// Answer a chat command from the core's state, the same way on every platform.
    /// `prefix` is the platform's command character (`/` or `!`); `here` says where it
    /// was written and by whom.
    pub async fn answer_command(
        &mut self,
        command: ChatCommand,
        prefix: char,
        here: Here<'_>,
    ) -> CommandReply {
        let reply = match command {
            ChatCommand::Sessions => match self
                .call(requests::ListSessions { id: 0, all: false })
                .await
            {
                Ok(sessions) => render::sessions_list(&sessions),
                Err(e) => failure(e),
            },
            ChatCommand::Asks => match self.call(requests::ListAsks { id: 0, all: false }).await {
                Ok(asks) => render::asks_list(&asks),
                Err(e) => failure(e),
            },
            ChatCommand::Status(None) => match self.call(requests::Status::default()).await {
                Ok(status) => render::core_status(&status),
                Err(e) => failure(e),
            },
            ChatCommand::Status(Some(selector)) => {
                match self.call(requests::ListSessions { id: 0, all: true }).await {
                    Ok(sessions) => match pick(&sessions, &selector, prefix) {
                        Ok(s) => render::session_status(s),
                        Err(text) => plain(text),
                    },
                    Err(e) => failure(e),
                }
            }
            ChatCommand::Steer { session, text } => return CommandReply::Steer { session, text },
            ChatCommand::Supervise(args) => return self.supervise(&args, prefix, here).await,
            ChatCommand::Goal(args) => return self.set_goal(&args, prefix, here).await,
            ChatCommand::Look(session) => return self.look(session.as_deref(), prefix, here).await,
            ChatCommand::Stop(session) => return self.stop(session.as_deref(), prefix, here).await,
            ChatCommand::Help => render::help(prefix),
            ChatCommand::Usage(error) => render::usage(prefix, &error),
            ChatCommand::Unknown(name) => render::unknown_command(prefix, &name),
        };
        CommandReply::Say(reply)
    }
}

/// Forward the core's events to `tx` until `shutdown`, reconnecting with backoff.
pub async fn forward_events(
    socket: PathBuf,
    name: String,
    tx: mpsc::Sender<CoreEvent>,
    shutdown: CancellationToken,
) {
    let mut backoff = Duration::from_millis(200);
    loop {
        let attempt = async {
            let mut client = Client::connect(&socket, ClientKind::Bridge, &name).await?;
            client.subscribe().await?;
            Ok::<_, ClientError>(client)
        };
        let result = tokio::select! {
            _ = shutdown.cancelled() => return,
            r = attempt => r,
        };
        match result {
            Ok(mut client) => {
                backoff = Duration::from_millis(200);
                if tx.send(CoreEvent::Connected).await.is_err() {
                    return;
                }
                loop {
                    let event = tokio::select! {
                        _ = shutdown.cancelled() => return,
                        e = client.next_event() => e,
                    };
                    match event {
                        Ok(msg) => {
                            if tx.send(CoreEvent::Event(Box::new(msg))).await.is_err() {
                                return;
                            }
                        }
                        Err(e) => {
                            let _ = tx.send(CoreEvent::Disconnected(e.to_string())).await;
                            break;
                        }
                    }
                }
            }
            Err(e) => tracing::debug!(error = %e, "core not reachable yet"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}
