//! Typed calls: each request struct in [`crate::protocol::requests`] names the reply the
//! core answers it with ([`Request::Reply`]), so [`Client::call`] returns that value
//! instead of a [`ServerMsg`] every caller must match. Named helpers below cover the
//! calls that read better as a method (`client.subscribe()`, `client.ask("Ship it?")`).

use super::{Client, ClientError, Welcome};
use crate::protocol::{
    AgentDef, Approval, Ask, AskId, Assignment, ClientMsg, CoreStatus, HostLink, Integration,
    Lease, MessageId, Pairing, Project, Registration, Report, ReportsTo, Role, ServerMsg,
    SessionId, SessionInfo, SessionStatus, StaffMember, StaffView, UsageReport, Verdict, View,
    Worker, requests,
};

/// A request the core answers with one reply of type [`Request::Reply`].
pub trait Request: Sized {
    /// What the core's answer carries.
    type Reply;
    /// The wire `type`, for errors.
    const TYPE: &'static str;
    /// The message to send, with the client's request id.
    fn with_id(self, id: u64) -> ClientMsg;
    /// The reply's value, or the `type` of the message the core answered with instead.
    fn reply(msg: ServerMsg) -> Result<Self::Reply, &'static str>;
}

/// The core's answer to `register`.
#[derive(Debug, Clone, PartialEq)]
pub struct Registered {
    pub session: SessionInfo,
    /// Deliveries that follow as `deliver` events.
    pub pending: u32,
    /// Active pairings the session is in.
    pub pairings: Vec<Pairing>,
}

/// The core's answer to `send`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    pub message_id: MessageId,
    pub session_id: SessionId,
    pub session_name: String,
    pub connected: bool,
}

/// The core's answer to `interrupt`.
#[derive(Debug, Clone, PartialEq)]
pub struct Interrupted {
    pub message_id: MessageId,
    pub session_id: SessionId,
    pub session_name: String,
    pub connected: bool,
    /// The session's status when asked (`idle`: no run to abort).
    pub was: SessionStatus,
}

/// The core's answer to `verdict`.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictAccepted {
    pub pairing: Pairing,
    pub verdict: Verdict,
    /// Set when a steer repeats a recent one.
    pub hint: Option<String>,
}

/// One `impl Request` per line: `Request => Reply type: reply pattern => value`. The
/// pattern reads the response the request's declaration names (`-> "sent"` in
/// [`crate::protocol::ClientMsg`]'s table); a test holds each to the golden fixture of that
/// response.
macro_rules! replies {
    ($( $req:ident => $reply:ty : $pat:pat => $value:expr ),* $(,)?) => {
        $(
            impl Request for requests::$req {
                type Reply = $reply;
                const TYPE: &'static str = requests::$req::TYPE;

                fn with_id(mut self, id: u64) -> ClientMsg {
                    self.id = id;
                    ClientMsg::$req(self)
                }

                fn reply(msg: ServerMsg) -> Result<$reply, &'static str> {
                    match msg {
                        $pat => Ok($value),
                        other => Err(other.kind()),
                    }
                }
            }
        )*

        /// Each reply pattern reads the golden fixture of the response its request
        /// declares, and every request has a line here.
        #[cfg(test)]
        #[test]
        fn every_reply_reads_the_response_its_request_declares() {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../tests/fixtures/protocol/server");
            let mut read = Vec::new();
            $(
                let declared = requests::$req::REPLY;
                let body = std::fs::read(dir.join(format!("{declared}.json")))
                    .unwrap_or_else(|e| panic!("the fixture of `{declared}`: {e}"));
                let msg: ServerMsg = serde_json::from_slice(&body).expect("a golden fixture decodes");
                if let Err(got) = <requests::$req as Request>::reply(msg) {
                    panic!(
                        "{} declares `{declared}`, but its line in replies! does not read that response (it refused `{got}`)",
                        requests::$req::TYPE,
                    );
                }
                read.push(requests::$req::TYPE);
            )*
            let declared: Vec<&str> = ClientMsg::REPLIES.iter().map(|(t, _)| *t).collect();
            assert_eq!(read, declared, "one reply line per request, in the table's order");
        }
    };
}

replies! {
    Hello => Welcome: ServerMsg::Welcome { protocol, core_version, store_id, pid, .. } =>
        Welcome { protocol, core_version, store_id, pid },
    Register => Registered: ServerMsg::Registered { session, pending, pairings, .. } =>
        Registered { session, pending, pairings },
    Update => SessionInfo: ServerMsg::Updated { session, .. } => session,
    Ask => Ask: ServerMsg::Asked { ask, .. } => ask,
    Report => Report: ServerMsg::Reported { report, .. } => report,
    Answer => Ask: ServerMsg::Answered { ask, .. } => ask,
    Send => Sent: ServerMsg::Sent { message_id, session_id, session_name, connected, .. } =>
        Sent { message_id, session_id, session_name, connected },
    ListSessions => Vec<SessionInfo>: ServerMsg::Sessions { sessions, .. } => sessions,
    ListAsks => Vec<Ask>: ServerMsg::Asks { asks, .. } => asks,
    Status => CoreStatus: ServerMsg::CoreStatus { status, .. } => status,
    Subscribe => (): ServerMsg::Subscribed { .. } => (),
    Ping => (): ServerMsg::Pong { .. } => (),
    Supervise => Pairing: ServerMsg::Paired { pairing, .. } => pairing,
    Unpair => Pairing: ServerMsg::Unpaired { pairing, .. } => pairing,
    SetGoal => Pairing: ServerMsg::GoalSet { pairing, .. } => pairing,
    Look => Pairing: ServerMsg::LookRequested { pairing, .. } => pairing,
    WorkerView => View: ServerMsg::View { view, .. } => view,
    Verdict => VerdictAccepted: ServerMsg::VerdictAccepted { pairing, verdict, hint, .. } =>
        VerdictAccepted { pairing, verdict, hint },
    ListPairings => Vec<Pairing>: ServerMsg::Pairings { pairings, .. } => pairings,
    Unanswer => Unanswered: ServerMsg::Unanswered { ask, message_id, session_name, .. } =>
        Unanswered { ask, message_id, session_name },
    Interrupt => Interrupted: ServerMsg::Interrupted {
        message_id, session_id, session_name, connected, was, ..
    } => Interrupted { message_id, session_id, session_name, connected, was },
    RunResult => Report: ServerMsg::Reported { report, .. } => report,
    ListReports => Vec<Report>: ServerMsg::Reports { reports, .. } => reports,
    SetRole => RoleSet: ServerMsg::RoleSet { session, previous, lease, .. } =>
        RoleSet { session, previous, lease },
    ListRoles => Vec<Lease>: ServerMsg::Roles { leases, .. } => leases,
    ReleaseRole => Lease: ServerMsg::RoleReleased { lease, .. } => lease,
    MessageSupervisor => Routed: ServerMsg::Routed { to, message_id, report_id, connected, .. } =>
        Routed { to, message_id, report_id, connected },
    AskSupervisor => Ask: ServerMsg::Asked { ask, .. } => ask,
    ListStaff => Vec<StaffMember>: ServerMsg::Staff { members, .. } => members,
    InspectStaff => StaffView: ServerMsg::StaffViewed { view, .. } => view,
    MessageStaff => Sent: ServerMsg::Sent { message_id, session_id, session_name, connected, .. } =>
        Sent { message_id, session_id, session_name, connected },
    ListPeers => Vec<SessionInfo>: ServerMsg::Sessions { sessions, .. } => sessions,
    MessagePeer => Sent: ServerMsg::Sent { message_id, session_id, session_name, connected, .. } =>
        Sent { message_id, session_id, session_name, connected },
    DelegateAgent => Worker: ServerMsg::WorkerIs { worker, .. } => worker,
    ContinueAgent => Worker: ServerMsg::WorkerIs { worker, .. } => worker,
    ListWorkers => Vec<Worker>: ServerMsg::Workers { workers, .. } => workers,
    SteerAgent => Worker: ServerMsg::WorkerIs { worker, .. } => worker,
    InterruptAgent => Worker: ServerMsg::WorkerIs { worker, .. } => worker,
    ReplyAgent => Worker: ServerMsg::WorkerIs { worker, .. } => worker,
    CloseAgent => Worker: ServerMsg::WorkerIs { worker, .. } => worker,
    InspectAgent => (Worker, String): ServerMsg::AgentText { worker, text, .. } => (worker, text),
    ReadAgentTranscript => (Worker, String): ServerMsg::AgentText { worker, text, .. } => (worker, text),
    AskOwner => Ask: ServerMsg::Asked { ask, .. } => ask,
    ListAgents => Vec<AgentDef>: ServerMsg::Agents { agents, .. } => agents,
    Usage => UsageReport: ServerMsg::UsageReported { report, .. } => report,
    DelegateProject => Assignment: ServerMsg::AssignmentIs { assignment, .. } => *assignment,
    ResumeWork => Assignment: ServerMsg::AssignmentIs { assignment, .. } => *assignment,
    StopLead => Assignment: ServerMsg::AssignmentIs { assignment, .. } => *assignment,
    IntegrateBranch => Integration: ServerMsg::Integrated { integration, .. } => *integration,
    ListProjects => Vec<Project>: ServerMsg::Projects { projects, .. } => projects,
    ListHosts => Vec<HostLink>: ServerMsg::Hosts { hosts, .. } => hosts,
    LinkHerd => (): ServerMsg::HerdLinked { .. } => (),
    DeliverHostMail => u64: ServerMsg::HostMailStored { mail_id, .. } => mail_id,
    RequestApproval => ApprovalRuling: ServerMsg::ApprovalRuled { ruling, rule, approval, .. } =>
        ApprovalRuling { ruling, rule, approval },
    DecideApproval => Approval: ServerMsg::ApprovalIs { approval, .. } => approval,
    WithdrawApproval => Approval: ServerMsg::ApprovalIs { approval, .. } => approval,
    ListApprovals => Vec<Approval>: ServerMsg::Approvals { approvals, .. } => approvals,
    Peek => Box<crate::protocol::Peek>: ServerMsg::Peeked { peek, .. } => peek,
    Diff => Box<crate::protocol::SessionDiff>: ServerMsg::Diffed { diff, .. } => diff,
    SendFile => Box<crate::protocol::SavedFile>: ServerMsg::FileSent { file, .. } => file,
    NewSession => Box<crate::protocol::StartedSession>: ServerMsg::SessionStarted { started, .. } => started,
    ContinueSession => Box<crate::protocol::StartedSession>: ServerMsg::SessionStarted { started, .. } => started,
    CloseSession => Box<crate::protocol::StartedSession>: ServerMsg::SessionStarted { started, .. } => started,
    ListStarted => Vec<crate::protocol::StartedSession>: ServerMsg::StartedSessions { started, .. } => started,
    ApproveAgent => Approval: ServerMsg::ApprovalIs { approval, .. } => approval,
}

/// `request_approval`'s reply: how the call was ruled, by which rule, and the approval
/// that holds it when it waits (or held it, when the call was asked about before).
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRuling {
    pub ruling: crate::protocol::Ruling,
    pub rule: String,
    pub approval: Option<Approval>,
}

/// `set_role`'s reply: the session with its new role, the one it had, and its lease.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleSet {
    pub session: SessionInfo,
    pub previous: Role,
    pub lease: Option<Lease>,
}

/// `message_supervisor`'s reply: whom it went to, and as what.
#[derive(Debug, Clone, PartialEq)]
pub struct Routed {
    pub to: ReportsTo,
    pub message_id: Option<MessageId>,
    pub report_id: Option<u64>,
    pub connected: bool,
}

/// `unanswer`'s reply: the reopened ask and the steer its former answer became.
#[derive(Debug, Clone, PartialEq)]
pub struct Unanswered {
    pub ask: Ask,
    pub message_id: MessageId,
    pub session_name: String,
}

impl Client {
    /// Receive presence, ask, report and pairing events on this connection.
    pub async fn subscribe(&mut self) -> Result<(), ClientError> {
        self.call(requests::Subscribe::default()).await
    }

    /// Bridges: [`Client::subscribe`] as the one bridge serving `bot`
    /// (`telegram:@name`); refused with `already_served` while another serves it.
    pub async fn subscribe_serving(&mut self, bot: &str) -> Result<(), ClientError> {
        self.call(requests::Subscribe {
            serves: Some(bot.to_string()),
            ..Default::default()
        })
        .await
    }

    /// A round trip that changes nothing.
    pub async fn ping(&mut self) -> Result<(), ClientError> {
        self.call(requests::Ping::default()).await
    }

    /// The core's status.
    pub async fn status(&mut self) -> Result<CoreStatus, ClientError> {
        self.call(requests::Status::default()).await
    }

    /// Connected sessions; with `all`, every known one.
    pub async fn list_sessions(&mut self, all: bool) -> Result<Vec<SessionInfo>, ClientError> {
        self.call(requests::ListSessions { id: 0, all }).await
    }

    /// Open asks; with `all`, answered ones too.
    pub async fn list_asks(&mut self, all: bool) -> Result<Vec<Ask>, ClientError> {
        self.call(requests::ListAsks {
            all,
            ..Default::default()
        })
        .await
    }

    /// Active pairings; with `all`, ended ones too.
    pub async fn list_pairings(&mut self, all: bool) -> Result<Vec<Pairing>, ClientError> {
        self.call(requests::ListPairings {
            all,
            ..Default::default()
        })
        .await
    }

    /// Pi: bind this connection to a session.
    pub async fn register(&mut self, session: Registration) -> Result<Registered, ClientError> {
        self.call(requests::Register { id: 0, session }).await
    }

    /// Pi: open a question with no options or details.
    pub async fn ask(&mut self, question: impl Into<String>) -> Result<Ask, ClientError> {
        let question = question.into();
        self.call(requests::Ask {
            question,
            ..Default::default()
        })
        .await
    }

    /// Pi: post a report.
    pub async fn report(&mut self, text: impl Into<String>) -> Result<Report, ClientError> {
        let text = text.into();
        self.call(requests::Report {
            id: 0,
            text,
            key: None,
        })
        .await
    }

    /// Answer an ask (CLI and bridges).
    pub async fn answer(
        &mut self,
        ask: impl Into<AskId>,
        text: impl Into<String>,
    ) -> Result<Ask, ClientError> {
        let text = text.into();
        self.call(requests::Answer {
            ask: ask.into(),
            text,
            ..Default::default()
        })
        .await
    }

    /// A Pi session: `message_peer` to the peer with exact id `session`.
    pub async fn message_peer(
        &mut self,
        session: impl Into<String>,
        text: impl Into<String>,
    ) -> Result<Sent, ClientError> {
        self.call(requests::MessagePeer {
            session: session.into(),
            text: text.into(),
            ..Default::default()
        })
        .await
    }

    /// Send text to a session: a steer from the CLI or a bridge, a message from Pi.
    pub async fn send_to(
        &mut self,
        to: impl Into<String>,
        text: impl Into<String>,
    ) -> Result<Sent, ClientError> {
        let (to, text) = (to.into(), text.into());
        self.call(requests::Send {
            to,
            text,
            ..Default::default()
        })
        .await
    }

    /// Pi: these deliveries reached the model. No reply.
    pub async fn ack(&mut self, ids: Vec<MessageId>) -> Result<(), ClientError> {
        self.send(&ClientMsg::Ack(requests::Ack { ids })).await
    }

    /// Pair `worker` with the free supervisor-role session in its cwd (CLI and bridges),
    /// or from Pi, become its supervisor.
    pub async fn supervise(
        &mut self,
        worker: impl Into<String>,
        goal: impl Into<String>,
    ) -> Result<Pairing, ClientError> {
        self.call(requests::Supervise {
            worker: Some(worker.into()),
            goal: Some(goal.into()),
            ..Default::default()
        })
        .await
    }

    /// End the pairing of `session` (either side) without a verdict.
    pub async fn unpair(&mut self, session: impl Into<String>) -> Result<Pairing, ClientError> {
        self.call(requests::Unpair {
            session: Some(session.into()),
            ..Default::default()
        })
        .await
    }

    /// Have the supervisor of `session`'s pairing look now.
    pub async fn look(&mut self, session: impl Into<String>) -> Result<Pairing, ClientError> {
        self.call(requests::Look {
            session: Some(session.into()),
            ..Default::default()
        })
        .await
    }
}
