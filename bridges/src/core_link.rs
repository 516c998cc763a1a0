//! # The bridge's link to the core
//!
//! Transport only: a bridge is a client of the core like any other (client kind
//! `bridge`). It keeps two connections: one subscribed to events (sessions, asks, reports,
//! pairings), read by [`forward_events`], which hands them to the bridge's actor and
//! reconnects with backoff when the core restarts; and one for requests ([`CoreLink`]),
//! connected on demand and re-established once when it finds the connection gone.
//!
//! Every request a bridge sends is built here, one method per request
//! ([`CoreLink::answer`], [`CoreLink::steer`], [`CoreLink::supervise`], …) over the
//! core's typed calls, each returning the reply's content or a [`ClientError`] (a reply of
//! another type is [`ClientError::Unexpected`]); what the replies mean to a human is
//! decided elsewhere (`relay::commands`, `chat::replies`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use shepherd_core::client::{Client, ClientError, Herd, Request};
pub use shepherd_core::client::{Interrupted, Sent, Unanswered};
use shepherd_core::protocol::{
    Approval, ApprovalScope, Ask, AskRef, AskState, ClientKind, CoreStatus, ErrorCode, HostLink,
    Lease, Pairing, Peek, Project, Report, ServerMsg, SessionDiff, SessionId, SessionInfo,
    StaffMember, StartedSession, UsageReport, Worker, requests,
};
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
    /// The core refused this bridge: another live bridge serves the same bot. The event
    /// task has stopped; the bridge must stop too (the message names the other one).
    Refused(String),
}

/// Wait for the event task's first word: `Ok(Some(Connected))` once subscribed (hand it
/// on to the relay), `Err` with the core's reason when another bridge serves the bot,
/// `Ok(None)` when the task ended (shutdown). A bridge calls this before it starts
/// reading its platform, so two bridges never poll one bot.
pub async fn first_contact(
    rx: &mut mpsc::Receiver<CoreEvent>,
) -> Result<Option<CoreEvent>, String> {
    match rx.recv().await {
        Some(CoreEvent::Refused(why)) => Err(why),
        other => Ok(other),
    }
}

/// A reply's content, or why there is none.
pub type Reply<T> = Result<T, ClientError>;

/// What a bridge needs to catch up after (re)connecting: every known session, every ask
/// split into the ones still open and the ones answered, and the active pairings.
pub struct Snapshot {
    pub sessions: HashMap<SessionId, SessionInfo>,
    pub open: Vec<Ask>,
    pub answered: HashMap<AskRef, Ask>,
    pub pairings: Vec<Pairing>,
}

/// Run `$body` with `$client` bound to the link's connection (connecting first when
/// there is none); when the connection turns out dead, reconnect and run it once more.
macro_rules! retrying {
    ($link:ident, |$client:ident| $body:expr) => {{
        for attempt in 0..2 {
            if $link.client.is_none() {
                $link.client =
                    Some(Client::connect(&$link.socket, ClientKind::Bridge, &$link.name).await?);
            }
            let $client = $link.client.as_mut().expect("just connected");
            match $body {
                Err(ClientError::Closed | ClientError::Io(_)) if attempt == 0 => {
                    $link.client = None
                }
                Err(e @ (ClientError::Closed | ClientError::Io(_))) => {
                    $link.client = None;
                    return Err(e);
                }
                other => return other,
            }
        }
        unreachable!("the loop returns")
    }};
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
    async fn call<R: Request + Clone>(&mut self, request: R) -> Reply<R::Reply> {
        retrying!(self, |client| client.call(request.clone()).await)
    }

    /// `list_sessions`: the connected sessions, or (`all`) every known one.
    pub async fn sessions(&mut self, all: bool) -> Reply<Vec<SessionInfo>> {
        self.call(requests::ListSessions { id: 0, all }).await
    }

    /// `list_staff` as a bridge: every connected session and every lease holder, each
    /// with whom it reports to.
    pub async fn staff(&mut self) -> Reply<Vec<StaffMember>> {
        self.call(requests::ListStaff::default()).await
    }

    /// `list_asks`: the open asks, or (`all`) the answered ones too; the linked hosts'
    /// open asks with them, each with its host.
    pub async fn asks(&mut self, all: bool) -> Reply<Vec<Ask>> {
        self.call(requests::ListAsks {
            all,
            ..Default::default()
        })
        .await
    }

    /// One ask (open or answered), if the core (or, for `gpu:17`, that host's core) knows
    /// it: `list_asks {ask, host}`.
    pub async fn ask(&mut self, ask: &AskRef) -> Option<Ask> {
        let one = requests::ListAsks {
            ask: Some(ask.id),
            host: ask.host.clone(),
            ..Default::default()
        };
        self.call(one).await.ok()?.into_iter().next()
    }

    /// A listing of this core and every connected linked host ([`Client::across_hosts`]):
    /// `make(None)` for this core's, `make(Some(host))` for each host's.
    async fn herd<R, T>(&mut self, make: impl Fn(Option<String>) -> R) -> Reply<Herd<T>>
    where
        R: Request<Reply = Vec<T>>,
    {
        retrying!(self, |client| client.across_hosts(&make).await)
    }

    /// `list_workers` as a bridge, of this core and every connected linked host: every
    /// live managed worker (`all`: ended ones too).
    pub async fn herd_workers(&mut self, all: bool) -> Reply<Herd<Worker>> {
        self.herd(|host| requests::ListWorkers {
            all,
            host,
            ..Default::default()
        })
        .await
    }

    /// `usage {session}`: tokens and cost of `session`'s tree (a worker's session id; on
    /// linked host `host` when given).
    pub async fn usage(&mut self, session: &str, host: Option<&str>) -> Reply<UsageReport> {
        self.call(requests::Usage {
            session: Some(session.to_string()),
            host: host.map(str::to_string),
            ..Default::default()
        })
        .await
    }

    /// `steer_agent`: steer a managed worker (`#<id>` or a label naming one live worker;
    /// on linked host `host` when given).
    pub async fn steer_agent(
        &mut self,
        agent: &str,
        host: Option<&str>,
        message: &str,
    ) -> Reply<Worker> {
        self.call(requests::SteerAgent {
            id: 0,
            agent: agent.to_string(),
            message: message.to_string(),
            host: host.map(str::to_string),
        })
        .await
    }

    /// `close_agent`: close a managed worker (its own workers first; on linked host
    /// `host` when given).
    pub async fn close_agent(&mut self, agent: &str, host: Option<&str>) -> Reply<Worker> {
        self.call(requests::CloseAgent {
            id: 0,
            agent: agent.to_string(),
            host: host.map(str::to_string),
        })
        .await
    }

    /// `list_projects` as a bridge: every repository with assignments (not retired), with
    /// ahead/behind and the Leads' usage filled in; this core's and every connected
    /// linked host's.
    pub async fn projects(&mut self, all: bool) -> Reply<Herd<Project>> {
        self.herd(|host| requests::ListProjects {
            host,
            all,
            ..Default::default()
        })
        .await
    }

    /// `list_approvals`: the held tool calls (`all`: the newest 200 of every state), this
    /// core's and every connected linked host's.
    pub async fn approvals(&mut self, all: bool) -> Reply<Herd<Approval>> {
        self.herd(|host| requests::ListApprovals {
            all,
            host,
            ..Default::default()
        })
        .await
    }

    /// `decide_approval` for the human `by`: allow (`scope`) or deny (`reason`).
    pub async fn decide_approval(
        &mut self,
        approval: &crate::chat::approvals::ApprovalRef,
        allow: bool,
        scope: ApprovalScope,
        reason: Option<&str>,
        by: &str,
    ) -> Reply<Approval> {
        self.call(requests::DecideApproval {
            approval: approval.id,
            allow,
            scope,
            reason: reason.map(str::to_string),
            by: Some(by.to_string()),
            host: approval.host.clone(),
            ..Default::default()
        })
        .await
    }

    /// `list_hosts`: the other machines' cores this one links to.
    pub async fn hosts(&mut self) -> Reply<Vec<HostLink>> {
        self.call(requests::ListHosts::default()).await
    }

    /// `list_roles`: the Manager and Chief leases (held, whether or not connected), of
    /// this core or of linked host `host`.
    pub async fn roles(&mut self, host: Option<&str>) -> Reply<Vec<Lease>> {
        self.call(requests::ListRoles {
            host: host.map(str::to_string),
            ..Default::default()
        })
        .await
    }

    /// `release_role`: take a lease away from its holder (the human's `release`).
    pub async fn release_role(&mut self, req: requests::ReleaseRole) -> Reply<Lease> {
        self.call(req).await
    }

    /// `status`: the core's own status.
    pub async fn status(&mut self) -> Reply<CoreStatus> {
        self.call(requests::Status::default()).await
    }

    /// `answer`: answer an ask (of this core, or of a linked host: the core passes it on)
    /// for the human `by`.
    pub async fn answer(&mut self, ask: &AskRef, text: &str, by: &str) -> Reply<()> {
        let request = requests::Answer {
            id: 0,
            ask: ask.id,
            text: text.to_string(),
            by: Some(by.to_string()),
            host: ask.host.clone(),
        };
        self.call(request).await.map(|_| ())
    }

    /// `unanswer`: take ask `ask`'s answer back and steer its text instead, for `by`.
    pub async fn unanswer(&mut self, ask: &AskRef, by: &str) -> Reply<Unanswered> {
        let request = requests::Unanswer {
            id: 0,
            ask: ask.id,
            by: Some(by.to_string()),
            host: ask.host.clone(),
        };
        self.call(request).await
    }

    /// `send` from a bridge: steer a session (id, id prefix or name; on linked host `host`
    /// when given) for the human `by`.
    pub async fn steer(
        &mut self,
        to: &str,
        host: Option<&str>,
        text: &str,
        by: &str,
    ) -> Reply<Sent> {
        let request = requests::Send {
            id: 0,
            to: to.to_string(),
            text: text.to_string(),
            by: Some(by.to_string()),
            host: host.map(str::to_string),
        };
        self.call(request).await
    }

    /// `send_file`: save `file` in session `to`'s inbox (on linked host `host` when given)
    /// and, with `steer`, steer it with the file (`text`: a caption).
    pub async fn send_file(
        &mut self,
        to: &str,
        host: Option<&str>,
        file: &crate::relay::files::Upload,
        text: Option<&str>,
        steer: bool,
        by: &str,
    ) -> Reply<Box<shepherd_core::protocol::SavedFile>> {
        use base64::Engine;
        let request = requests::SendFile {
            id: 0,
            to: to.to_string(),
            name: file.name.clone(),
            mime: file.mime.clone(),
            kind: file.kind,
            data: base64::engine::general_purpose::STANDARD.encode(&file.bytes),
            text: text.map(str::to_string),
            steer,
            by: Some(by.to_string()),
            host: host.map(str::to_string),
        };
        self.call(request).await
    }

    /// `supervise`: pair a free supervisor with `worker` (on linked host `host` when
    /// given: a supervisor of that host), for the human `by`. The pairing requests below
    /// take `host` the same way.
    pub async fn supervise(
        &mut self,
        worker: &str,
        host: Option<&str>,
        goal: Option<&str>,
        by: &str,
    ) -> Reply<Pairing> {
        let request = requests::Supervise {
            worker: Some(worker.to_string()),
            goal: goal.map(str::to_string),
            by: Some(by.to_string()),
            host: host.map(str::to_string),
            ..Default::default()
        };
        self.call(request).await
    }

    /// `set_goal`: change the goal of `session`'s pairing, for the human `by`.
    pub async fn set_goal(
        &mut self,
        session: &str,
        host: Option<&str>,
        goal: &str,
        by: &str,
    ) -> Reply<Pairing> {
        let request = requests::SetGoal {
            goal: goal.to_string(),
            session: Some(session.to_string()),
            by: Some(by.to_string()),
            host: host.map(str::to_string),
            ..Default::default()
        };
        self.call(request).await
    }

    /// `look`: deliver a view to `session`'s supervisor now, for the human `by`.
    pub async fn look(&mut self, session: &str, host: Option<&str>, by: &str) -> Reply<Pairing> {
        let request = requests::Look {
            session: Some(session.to_string()),
            by: Some(by.to_string()),
            host: host.map(str::to_string),
            ..Default::default()
        };
        self.call(request).await
    }

    /// `peek`: what `session` (on linked host `host` when given) is doing now, marked
    /// with its host.
    pub async fn peek(&mut self, session: &str, host: Option<&str>) -> Reply<Peek> {
        let request = requests::Peek {
            session: session.to_string(),
            host: host.map(str::to_string),
            ..Default::default()
        };
        let mut peek = *self.call(request).await?;
        if peek.host.is_none() {
            peek.host = host.map(str::to_string);
        }
        Ok(peek)
    }

    /// `diff`: what `session` (on linked host `host` when given) changed, marked with its
    /// host.
    pub async fn diff(&mut self, session: &str, host: Option<&str>) -> Reply<SessionDiff> {
        let request = requests::Diff {
            session: session.to_string(),
            host: host.map(str::to_string),
            ..Default::default()
        };
        let mut diff = *self.call(request).await?;
        if diff.host.is_none() {
            diff.host = host.map(str::to_string);
        }
        Ok(diff)
    }

    /// `new_session` for the human `by`: `project` (on linked host `host`), `task`, in a new
    /// worktree on `branch` when given.
    pub async fn new_session(
        &mut self,
        project: Option<&str>,
        host: Option<&str>,
        branch: Option<&str>,
        agent: Option<&str>,
        task: &str,
        by: &str,
    ) -> Reply<StartedSession> {
        let request = requests::NewSession {
            project: project.map(str::to_string),
            task: task.to_string(),
            branch: branch.map(str::to_string),
            agent: agent.map(str::to_string),
            by: Some(by.to_string()),
            host: host.map(str::to_string),
            ..Default::default()
        };
        Ok(*self.call(request).await?)
    }

    /// `continue_session` for the human `by`, with `message` when not empty.
    pub async fn continue_session(
        &mut self,
        session: &str,
        host: Option<&str>,
        message: &str,
        by: &str,
    ) -> Reply<StartedSession> {
        let request = requests::ContinueSession {
            session: session.to_string(),
            message: Some(message.to_string()).filter(|m| !m.trim().is_empty()),
            by: Some(by.to_string()),
            host: host.map(str::to_string),
            ..Default::default()
        };
        Ok(*self.call(request).await?)
    }

    /// `close_session` for the human `by`.
    pub async fn close_session(
        &mut self,
        session: &str,
        host: Option<&str>,
        by: &str,
    ) -> Reply<StartedSession> {
        let request = requests::CloseSession {
            session: session.to_string(),
            by: Some(by.to_string()),
            host: host.map(str::to_string),
            ..Default::default()
        };
        Ok(*self.call(request).await?)
    }

    /// `unpair`: end `session`'s pairing, for the human `by`.
    pub async fn unpair(&mut self, session: &str, host: Option<&str>, by: &str) -> Reply<Pairing> {
        let request = requests::Unpair {
            session: Some(session.to_string()),
            by: Some(by.to_string()),
            host: host.map(str::to_string),
            ..Default::default()
        };
        self.call(request).await
    }

    /// `interrupt`: abort the session's current run for the human `by`, then steer it
    /// with `then` if given.
    pub async fn interrupt(
        &mut self,
        session: &str,
        host: Option<&str>,
        then: Option<&str>,
        by: &str,
    ) -> Reply<Interrupted> {
        let request = requests::Interrupt {
            session: session.to_string(),
            then: then.map(str::to_string),
            by: Some(by.to_string()),
            host: host.map(str::to_string),
            ..Default::default()
        };
        self.call(request).await
    }

    /// `list_reports`: announced and held reports with ids above `after`, the newest
    /// `limit`, oldest first.
    pub async fn reports(&mut self, after: Option<u64>, limit: Option<u32>) -> Reply<Vec<Report>> {
        self.call(requests::ListReports {
            after,
            limit,
            ..Default::default()
        })
        .await
    }

    /// `list_reports {host}`: a linked host's reports, through the core's link to it.
    pub async fn reports_on(
        &mut self,
        host: &str,
        after: Option<u64>,
        limit: Option<u32>,
    ) -> Reply<Vec<Report>> {
        self.call(requests::ListReports {
            after,
            limit,
            host: Some(host.to_string()),
            ..Default::default()
        })
        .await
    }

    /// The store id of the core the request link is connected to (connecting if needed):
    /// report ids are unique within one store.
    pub async fn store_id(&mut self) -> Reply<String> {
        if self.client.is_none() {
            self.client =
                Some(Client::connect(&self.socket, ClientKind::Bridge, &self.name).await?);
        }
        let client = self.client.as_ref().expect("just connected");
        Ok(client.welcome().store_id.clone())
    }

    /// Read the sessions, asks and pairings a bridge resynchronises from.
    pub async fn snapshot(&mut self) -> Reply<Snapshot> {
        let sessions = self.sessions(true).await?;
        let sessions = sessions.into_iter().map(|s| (s.id.clone(), s)).collect();
        let asks = self.asks(true).await?;
        let (open, answered): (Vec<Ask>, Vec<Ask>) =
            asks.into_iter().partition(|a| a.state == AskState::Open);
        let answered = answered.into_iter().map(|a| (a.key(), a)).collect();
        // A core that cannot list pairings still gets its asks and sessions shown. The
        // linked hosts' pairings too: a far supervisor's asks show in its worker's place.
        let herd = self
            .herd(|host| requests::ListPairings {
                host,
                ..Default::default()
            })
            .await;
        let pairings = match herd {
            Ok(herd) => herd.items,
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

/// Forward the core's events to `tx` until `shutdown`, reconnecting with backoff.
pub async fn forward_events(
    socket: PathBuf,
    name: String,
    serves: String,
    tx: mpsc::Sender<CoreEvent>,
    shutdown: CancellationToken,
) {
    let mut backoff = Duration::from_millis(200);
    loop {
        let attempt = async {
            let mut client = Client::connect(&socket, ClientKind::Bridge, &name).await?;
            client.subscribe_serving(&serves).await?;
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
            Err(e) if e.code() == Some(ErrorCode::AlreadyServed) => {
                let _ = tx.send(CoreEvent::Refused(e.to_string())).await;
                return;
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
