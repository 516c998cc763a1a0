//! The two message enums, named by direction, each declared by one macro from one line per
//! message. Requests carry a client-chosen `id` that the response echoes; events carry
//! none. A request's fields are its struct in [`requests`]. Every variant has a golden fixture in
//! `tests/fixtures/protocol/` that the Rust and TypeScript tests both check.

use serde::{Deserialize, Serialize};

use super::{
    AgentDef, Approval, Ask, Assignment, CoreStatus, Delivery, EdgeMessage, ErrorCode, HostLink,
    HostMail, Integration, Lease, LeaveReason, MessageId, Pairing, PairingChange, Project, Report,
    ReportsTo, Role, Ruling, SessionId, SessionInfo, SessionStatus, StaffMember, StaffView,
    UsageReport, Verdict, View, Worker, frame, requests, senders,
};

/// Declares [`ClientMsg`] from one line per message: `"send" => Send [cli bridge] else
/// SEND_IS_HUMANS -> "sent"`. A request whose handling needs the repository context of a directory
/// is marked `git` (its struct says which directory in `git_context`); the brackets say
/// who may send it ([`senders`]: `pi`, `cli`, `bridge`, and `pi(manager|chief else
/// REFUSAL)` for Pi sessions of those roles only), and `else` names the refusal a client
/// of another kind gets when it is not [`senders::NO_SESSION`]; `->` names the `type` of
/// the response that answers it (the core answers `error` instead when it refuses; the
/// Rust client's `Request` impls and the generated TypeScript client read their replies by
/// it, and tests hold both to it). The macro makes the
/// internally tagged wire enum with one newtype variant per struct in [`requests`], a
/// private externally tagged twin for decoding, `TYPES`, `request_id`, each struct's
/// `TYPE`, `SENDERS`, `REPLY` and its `From` into [`ClientMsg`], `git_context`, `senders`,
/// `reply_type` and `REPLIES`. Decoding goes through the twin so that
/// `serde_path_to_error` can name the offending field (`ask.question: invalid type …`);
/// internally tagged enums buffer their content and lose the path.
macro_rules! client_messages {
    // What a request line marked `git` needs read before the hub handles it.
    (@git $m:ident) => { requests::GitContext::None };
    (@git $m:ident git) => { $m.git_context() };
    // A line's senders: its bracket read word by word onto `Senders::NONE`.
    (@senders [$($who:tt)*] $($refusal:ident)?) => {
        client_messages!(@who senders::Senders::NONE $(.refusing(senders::$refusal))? ; $($who)*)
    };
    (@who $s:expr ;) => { $s };
    (@who $s:expr ; cli $($rest:tt)*) => { client_messages!(@who $s.cli() ; $($rest)*) };
    (@who $s:expr ; bridge $($rest:tt)*) => { client_messages!(@who $s.bridge() ; $($rest)*) };
    (@who $s:expr ; core $($rest:tt)*) => { client_messages!(@who $s.core() ; $($rest)*) };
    (@who $s:expr ; pi ($($role:ident)|+ else $refusal:ident) $($rest:tt)*) => {
        client_messages!(
            @who $s.pi_as(&[$(client_messages!(@role $role)),+], senders::$refusal) ; $($rest)*
        )
    };
    (@who $s:expr ; pi $($rest:tt)*) => { client_messages!(@who $s.pi() ; $($rest)*) };
    (@role lead) => { Role::Lead };
    (@role manager) => { Role::Manager };
    (@role chief) => { Role::Chief };
    (
        requests { $(
            $rtype:literal => $req:ident $($git:ident)? [$($who:tt)*] $(else $refusal:ident)?
                -> $reply:literal
        ),* $(,)? }
        notices { $(
            $ntype:literal => $notice:ident [$($nwho:tt)*] $(else $nrefusal:ident)?
        ),* $(,)? }
    ) => {
        /// Client → core: requests (with an `id` the response echoes) and notices
        /// (without). Each variant's fields are the struct of the same name in
        /// [`requests`].
        #[cfg_attr(test, derive(schemars::JsonSchema))]
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "type")]
        pub enum ClientMsg {
            $(
                #[doc = concat!("`", $rtype, "`: [`requests::", stringify!($req), "`].")]
                #[serde(rename = $rtype)]
                $req(requests::$req),
            )*
            $(
                #[doc = concat!("`", $ntype, "`: [`requests::", stringify!($notice), "`].")]
                #[serde(rename = $ntype)]
                $notice(requests::$notice),
            )*
        }

        #[derive(Deserialize)]
        enum ExternallyTagged {
            $( #[serde(rename = $rtype)] $req(requests::$req), )*
            $( #[serde(rename = $ntype)] $notice(requests::$notice), )*
        }

        impl ClientMsg {
            /// The common case of [`ClientMsg::decode`]: a well-formed frame read straight
            /// into its request struct, without building a JSON tree first (one pass to
            /// find `type`, one into the struct). `None` for anything else (bad JSON, an
            /// unknown type, a wrong field, a duplicate key, a lone surrogate): the full
            /// decode then gives the same answer it always gave, with its error.
            fn decode_direct(body: &[u8]) -> Option<ClientMsg> {
                #[derive(Deserialize)]
                struct Head<'a> {
                    #[serde(rename = "type", borrow)]
                    kind: std::borrow::Cow<'a, str>,
                }
                // UTF-8 first: serde_json would skip an unknown field's bytes unchecked.
                let text = std::str::from_utf8(body).ok()?;
                let kind = match leading_type(text) {
                    Some(kind) => std::borrow::Cow::Borrowed(kind),
                    None => serde_json::from_str::<Head<'_>>(text).ok()?.kind,
                };
                match kind.as_ref() {
                    $( $rtype => serde_json::from_str(text).ok().map(ClientMsg::$req), )*
                    $( $ntype => serde_json::from_str(text).ok().map(ClientMsg::$notice), )*
                    _ => None,
                }
            }
        }

        impl From<ExternallyTagged> for ClientMsg {
            fn from(msg: ExternallyTagged) -> Self {
                match msg {
                    $( ExternallyTagged::$req(m) => ClientMsg::$req(m), )*
                    $( ExternallyTagged::$notice(m) => ClientMsg::$notice(m), )*
                }
            }
        }

        impl ClientMsg {
            /// Every `type` a client may send.
            pub const TYPES: &'static [&'static str] = &[$($rtype,)* $($ntype,)*];

            /// The request id, for messages that expect a response.
            pub fn request_id(&self) -> Option<u64> {
                match self {
                    $( ClientMsg::$req(m) => Some(m.id), )*
                    $( ClientMsg::$notice(_) => None, )*
                }
            }

            /// The repository context this request needs read before the hub handles it
            /// (its line says `git`; the connection task reads it off the hub).
            pub fn git_context(&self) -> requests::GitContext<'_> {
                match self {
                    $( ClientMsg::$req(_m) => client_messages!(@git _m $($git)?), )*
                    $( ClientMsg::$notice(_) => requests::GitContext::None, )*
                }
            }

            /// The wire `type`.
            pub fn kind(&self) -> &'static str {
                match self {
                    $( ClientMsg::$req(_) => $rtype, )*
                    $( ClientMsg::$notice(_) => $ntype, )*
                }
            }

            /// Who may send this message, as its line declares; the hub checks it before
            /// the handler runs.
            pub fn senders(&self) -> senders::Senders {
                match self {
                    $( ClientMsg::$req(_) => requests::$req::SENDERS, )*
                    $( ClientMsg::$notice(_) => requests::$notice::SENDERS, )*
                }
            }

            /// The `type` of the response that answers this request (an `error` aside);
            /// `None` for a notice, which gets no answer.
            pub fn reply_type(&self) -> Option<&'static str> {
                match self {
                    $( ClientMsg::$req(_) => Some($reply), )*
                    $( ClientMsg::$notice(_) => None, )*
                }
            }

            /// Every request's `type` with the `type` of the response that answers it, in
            /// the table's order.
            pub const REPLIES: &'static [(&'static str, &'static str)] = &[
                $( ($rtype, $reply), )*
            ];

            /// Every `type` with its senders, in the table's order.
            pub const SENDERS: &'static [(&'static str, senders::Senders)] = &[
                $( ($rtype, requests::$req::SENDERS), )*
                $( ($ntype, requests::$notice::SENDERS), )*
            ];
        }

        $(
            impl requests::$req {
                /// The wire `type`.
                pub const TYPE: &'static str = $rtype;
                /// Who may send it.
                pub const SENDERS: senders::Senders =
                    client_messages!(@senders [$($who)*] $($refusal)?);
                /// The `type` of the response that answers it (an `error` aside).
                pub const REPLY: &'static str = $reply;
            }

            impl From<requests::$req> for ClientMsg {
                fn from(m: requests::$req) -> Self {
                    ClientMsg::$req(m)
                }
            }
        )*
        $(
            impl requests::$notice {
                /// The wire `type`.
                pub const TYPE: &'static str = $ntype;
                /// Who may send it.
                pub const SENDERS: senders::Senders =
                    client_messages!(@senders [$($nwho)*] $($nrefusal)?);
            }

            impl From<requests::$notice> for ClientMsg {
                fn from(m: requests::$notice) -> Self {
                    ClientMsg::$notice(m)
                }
            }
        )*
    };
}

client_messages! {
    requests {
        "hello" => Hello [pi cli bridge] -> "welcome",
        "register" => Register git [pi] else ONLY_PI_REGISTERS -> "registered",
        "update" => Update git [pi] -> "updated",
        "ask" => Ask [pi] -> "asked",
        "report" => Report [pi] -> "reported",
        "answer" => Answer [pi cli bridge] -> "answered",
        "send" => Send [cli bridge] else SEND_IS_HUMANS -> "sent",
        "list_sessions" => ListSessions [pi cli bridge] -> "sessions",
        "list_asks" => ListAsks [pi cli bridge] -> "asks",
        "status" => Status [pi cli bridge] -> "core_status",
        "subscribe" => Subscribe [pi cli bridge] -> "subscribed",
        "ping" => Ping [pi cli bridge] -> "pong",
        "supervise" => Supervise [pi cli bridge] -> "paired",
        "unpair" => Unpair [pi cli bridge] -> "unpaired",
        "set_goal" => SetGoal [pi cli bridge] -> "goal_set",
        "look" => Look [pi cli bridge] -> "look_requested",
        "worker_view" => WorkerView [pi] -> "view",
        "verdict" => Verdict [pi] -> "verdict_accepted",
        "list_pairings" => ListPairings [pi cli bridge] -> "pairings",
        "unanswer" => Unanswer [cli bridge] else UNANSWER_IS_HUMANS -> "unanswered",
        "interrupt" => Interrupt [cli bridge] else INTERRUPT_IS_HUMANS -> "interrupted",
        "result" => RunResult git [pi] -> "reported",
        "list_reports" => ListReports [pi cli bridge] -> "reports",
        "set_role" => SetRole [pi] -> "role_set",
        "list_roles" => ListRoles [pi cli bridge] -> "roles",
        "release_role" => ReleaseRole [cli bridge] else RELEASE_IS_HUMANS -> "role_released",
        "message_supervisor" => MessageSupervisor [pi(lead|manager else CHIEF_HAS_NO_SUPERVISOR)] -> "routed",
        "ask_supervisor" => AskSupervisor [pi] -> "asked",
        "list_staff" => ListStaff [pi(manager|chief else NOT_STAFF_HOLDER) cli bridge] -> "staff",
        "inspect_staff" => InspectStaff [pi(manager|chief else NOT_STAFF_HOLDER) core] -> "staff_view",
        "message_staff" => MessageStaff [pi(manager|chief else NOT_STAFF_HOLDER)] -> "sent",
        "list_peers" => ListPeers [pi(lead|manager else CHIEF_HAS_NO_PEERS)] -> "sessions",
        "message_peer" => MessagePeer [pi(lead|manager else CHIEF_HAS_NO_PEERS)] -> "sent",
        "delegate_agent" => DelegateAgent [pi] else DELEGATE_IS_PIS -> "worker",
        "continue_agent" => ContinueAgent [pi] else CONTINUE_IS_PIS -> "worker",
        "list_workers" => ListWorkers [pi cli bridge] -> "workers",
        "steer_agent" => SteerAgent [pi cli bridge] -> "worker",
        "interrupt_agent" => InterruptAgent [pi cli bridge] -> "worker",
        "reply_agent" => ReplyAgent [pi cli bridge] -> "worker",
        "close_agent" => CloseAgent [pi cli bridge] -> "worker",
        "inspect_agent" => InspectAgent [pi cli bridge] -> "agent_text",
        "read_agent_transcript" => ReadAgentTranscript [pi cli bridge] -> "agent_text",
        "ask_owner" => AskOwner [pi] -> "asked",
        "list_agents" => ListAgents [pi cli bridge] -> "agents",
        "usage" => Usage [pi cli bridge] -> "usage",
        "delegate_project" => DelegateProject [pi(manager else NOT_MANAGER)] else ONLY_A_MANAGER -> "assignment",
        "resume_work" => ResumeWork [pi(manager else NOT_MANAGER) cli bridge] -> "assignment",
        "stop_lead" => StopLead [pi(manager else NOT_MANAGER) cli bridge] -> "assignment",
        "integrate_branch" => IntegrateBranch [pi(manager else NOT_MANAGER) cli bridge] -> "integration",
        "list_projects" => ListProjects [pi(manager else NOT_MANAGER) cli bridge] -> "projects",
        "list_hosts" => ListHosts [pi cli bridge] -> "hosts",
        "link_herd" => LinkHerd [core] else ONLY_A_LINK -> "herd_linked",
        "deliver_host_mail" => DeliverHostMail [core] else ONLY_A_LINK -> "host_mail_stored",
        "request_approval" => RequestApproval [pi] -> "approval_ruling",
        "decide_approval" => DecideApproval [cli bridge] else DECIDE_IS_HUMANS -> "approval",
        "withdraw_approval" => WithdrawApproval [pi] -> "approval",
        "list_approvals" => ListApprovals [pi cli bridge] -> "approvals",
        "peek" => Peek [cli bridge] else PEEK_IS_HUMANS -> "peeked",
        "diff" => Diff [cli bridge] else DIFF_IS_HUMANS -> "diffed",
        "send_file" => SendFile [cli bridge] else SEND_IS_HUMANS -> "file_sent",
        "new_session" => NewSession [cli bridge] else START_IS_HUMANS -> "session_started",
        "continue_session" => ContinueSession [cli bridge] else START_IS_HUMANS -> "session_started",
        "close_session" => CloseSession [cli bridge] else START_IS_HUMANS -> "session_started",
        "list_started" => ListStarted [cli bridge] else START_IS_HUMANS -> "started_sessions",
        "approve_agent" => ApproveAgent [pi] else APPROVE_AGENT_IS_OWNERS -> "approval",
    }
    notices {
        "ack" => Ack [pi],
        "bye" => Bye [pi],
        "host_mail_ack" => HostMailAck [core] else ONLY_A_LINK,
    }
}

/// The `type` of a frame that begins `{"type":"<name>"`, as every client of this
/// protocol writes it, read without a first parse. `None` (parse it) for any other start,
/// an escape in the name, or a second key that could also be `type` (the bytes `"type"`
/// again, or a `\u` escape that could spell it): there the first parse's duplicate check
/// decides. The typed read that follows checks the rest of the frame.
fn leading_type(text: &str) -> Option<&str> {
    let rest = text.strip_prefix(r#"{"type":""#)?;
    let (kind, after) = rest.split_at(rest.find(['"', '\\'])?);
    let after = after.strip_prefix('"')?;
    (!after.contains(r#""type""#) && !after.contains(r"\u")).then_some(kind)
}

impl ClientMsg {
    /// Decode one frame body. Errors name the offending field
    /// (`invalid ask message: ask.question: invalid type: integer, expected a string`).
    pub fn decode(body: &[u8]) -> Result<ClientMsg, frame::DecodeFailure> {
        match Self::decode_direct(body) {
            Some(msg) => Ok(msg),
            None => Self::decode_tree(body),
        }
    }

    /// Decode through a JSON tree, so that a failure names the offending field.
    fn decode_tree(body: &[u8]) -> Result<ClientMsg, frame::DecodeFailure> {
        let mut obj = frame::parse_object(body, Self::TYPES)?;
        obj.fields.remove("type");
        let mut outer = serde_json::Map::new();
        outer.insert(obj.kind.clone(), serde_json::Value::Object(obj.fields));
        let msg: ExternallyTagged =
            frame::deserialize_traced(serde_json::Value::Object(outer), &obj.kind, obj.id)?;
        Ok(msg.into())
    }
}

/// Declares [`ServerMsg`] from its responses (each with the `id` of the request it
/// answers), the error (with an optional `id`) and its events (no `id`): the wire enum,
/// `TYPES` and `response_id`.
macro_rules! server_messages {
    (
        responses { $(
            $(#[$rmeta:meta])* $rtype:literal => $resp:ident {
                $( $(#[$rfmeta:meta])* $rfield:ident : $rty:ty ),* $(,)?
            }
        ),* $(,)? }
        errors { $(
            $(#[$emeta:meta])* $etype:literal => $err:ident {
                $( $(#[$efmeta:meta])* $efield:ident : $ety:ty ),* $(,)?
            }
        ),* $(,)? }
        events { $(
            $(#[$vmeta:meta])* $vtype:literal => $event:ident {
                $( $(#[$vfmeta:meta])* $vfield:ident : $vty:ty ),* $(,)?
            }
        ),* $(,)? }
    ) => {
        /// Core → client: responses (with the request's `id`) and events (without).
        #[cfg_attr(test, derive(schemars::JsonSchema))]
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "type")]
        pub enum ServerMsg {
            $(
                $(#[$rmeta])*
                #[serde(rename = $rtype)]
                $resp { $( $(#[$rfmeta])* $rfield: $rty ),* },
            )*
            $(
                $(#[$emeta])*
                #[serde(rename = $etype)]
                $err { $( $(#[$efmeta])* $efield: $ety ),* },
            )*
            $(
                $(#[$vmeta])*
                #[serde(rename = $vtype)]
                $event { $( $(#[$vfmeta])* $vfield: $vty ),* },
            )*
        }

        impl ServerMsg {
            /// Every `type` the core may send.
            pub const TYPES: &'static [&'static str] = &[$($rtype,)* $($etype,)* $($vtype,)*];

            /// The id of the request this answers; `None` for events and connection
            /// errors.
            pub fn response_id(&self) -> Option<u64> {
                match self {
                    $( ServerMsg::$resp { id, .. } => Some(*id), )*
                    $( ServerMsg::$err { id, .. } => *id, )*
                    $( ServerMsg::$event { .. } => None, )*
                }
            }

            /// The wire `type`.
            pub fn kind(&self) -> &'static str {
                match self {
                    $( ServerMsg::$resp { .. } => $rtype, )*
                    $( ServerMsg::$err { .. } => $etype, )*
                    $( ServerMsg::$event { .. } => $vtype, )*
                }
            }
        }
    };
}

server_messages! {
    responses {
        /// Response to `hello`.
        "welcome" => Welcome {
            id: u64,
            protocol: u32,
            core_version: String,
            /// Identifies the database; delivery ids are unique within one store.
            store_id: String,
            /// The core's pid.
            pid: u32,
        },
        /// Response to `register`: the session as stored, and how many deliveries follow.
        "registered" => Registered {
            id: u64,
            session: SessionInfo,
            pending: u32,
            /// Active pairings this session is in (as supervisor or worker), with whether
            /// the other side is connected.
            #[serde(default)]
            pairings: Vec<Pairing>,
            /// Set when this session is a managed worker the core launched (bound by its
            /// launch nonce): its record, so the extension offers `ask_owner`.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            worker: Option<Box<Worker>>,
            /// Set when this session is the Lead the core launched for a work assignment
            /// (bound by its launch nonce): its assignment.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            assignment: Option<Box<Assignment>>,
        },
        /// Response to `update`.
        "updated" => Updated { id: u64, session: SessionInfo },
        /// Response to `ask`: the ask is stored and announced.
        "asked" => Asked { id: u64, ask: Ask },
        /// Response to `report`.
        "reported" => Reported { id: u64, report: Report },
        /// Response to `answer`: this answer won and is on its way to the session.
        "answered" => Answered { id: u64, ask: Ask },
        /// Response to `send`: stored, and delivered now if the session is connected, else
        /// on its next connection.
        "sent" => Sent {
            id: u64,
            message_id: MessageId,
            session_id: SessionId,
            session_name: String,
            connected: bool,
        },
        /// Response to `list_sessions`.
        "sessions" => Sessions { id: u64, sessions: Vec<SessionInfo> },
        /// Response to `list_asks`.
        "asks" => Asks { id: u64, asks: Vec<Ask> },
        /// Response to `request_approval`: `allow` or `deny` at once (`rule` says why), or
        /// `pending` with the approval that holds the call.
        "approval_ruling" => ApprovalRuled { id: u64, ruling: Ruling, rule: String, approval: Option<Approval> },
        /// Response to `decide_approval` and `withdraw_approval`.
        "approval" => ApprovalIs { id: u64, approval: Approval },
        /// Response to `list_approvals`.
        "approvals" => Approvals { id: u64, approvals: Vec<Approval> },
        /// Response to `status`.
        "core_status" => CoreStatus { id: u64, status: CoreStatus },
        /// Response to `subscribe`.
        "subscribed" => Subscribed { id: u64 },
        /// Response to `ping`.
        "pong" => Pong { id: u64 },
        /// Response to `supervise`.
        "paired" => Paired { id: u64, pairing: Pairing },
        /// Response to `unpair`.
        "unpaired" => Unpaired { id: u64, pairing: Pairing },
        /// Response to `set_goal`.
        "goal_set" => GoalSet { id: u64, pairing: Pairing },
        /// Response to `look`.
        "look_requested" => LookRequested { id: u64, pairing: Pairing },
        /// Response to `worker_view`.
        "view" => View { id: u64, view: View },
        /// Response to `verdict`. `hint` is set when a steer repeats a recent one.
        "verdict_accepted" => VerdictAccepted {
            id: u64,
            pairing: Pairing,
            verdict: Verdict,
            #[serde(default)]
            hint: Option<String>,
        },
        /// Response to `list_pairings`.
        "pairings" => Pairings { id: u64, pairings: Vec<Pairing> },
        /// Response to `unanswer`: the ask is open again and its former answer is queued
        /// for the session as steer `message_id`.
        "unanswered" => Unanswered {
            id: u64,
            ask: Ask,
            message_id: MessageId,
            session_name: String,
        },
        /// Response to `interrupt`: stored, and delivered now if the session is connected,
        /// else on its next connection. `was`: the session's status when it was asked
        /// (`idle`: there was no run to abort; the steer still goes).
        "interrupted" => Interrupted {
            id: u64,
            message_id: MessageId,
            session_id: SessionId,
            session_name: String,
            connected: bool,
            was: SessionStatus,
        },
        /// Response to `list_reports`: oldest first.
        "reports" => Reports { id: u64, reports: Vec<Report> },
        /// Response to `set_role`: the session with its new role, the role it had, and the
        /// lease it now holds (none after leaving a role).
        "role_set" => RoleSet {
            id: u64,
            session: SessionInfo,
            previous: Role,
            #[serde(default)]
            lease: Option<Lease>,
        },
        /// Response to `list_roles`.
        "roles" => Roles { id: u64, leases: Vec<Lease> },
        /// Response to `release_role`: the lease as it was (its holder, connected or not),
        /// now free.
        "role_released" => RoleReleased { id: u64, lease: Lease },
        /// Response to `message_supervisor`: whom it went to, and as what (`message_id`
        /// for a session's mailbox, `report_id` when it went to the human as a report).
        "routed" => Routed {
            id: u64,
            to: ReportsTo,
            #[serde(default)]
            message_id: Option<MessageId>,
            #[serde(default)]
            report_id: Option<u64>,
            connected: bool,
        },
        /// Response to `list_staff`.
        "staff" => Staff {
            id: u64,
            members: Vec<StaffMember>,
            /// A Manager: its repository's assignments (not retired); the CLI and bridges:
            /// every one.
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            assignments: Vec<Assignment>,
        },
        /// Response to `inspect_staff`.
        "staff_view" => StaffViewed { id: u64, view: StaffView },
        /// Response to `delegate_agent`, `continue_agent`, `steer_agent`,
        /// `interrupt_agent`, `reply_agent` and `close_agent`: the worker as it is now.
        "worker" => WorkerIs { id: u64, worker: Worker },
        /// Response to `list_workers`: by owner, then id.
        "workers" => Workers { id: u64, workers: Vec<Worker> },
        /// Response to `list_started`.
        "started_sessions" => StartedSessions { id: u64, started: Vec<super::StartedSession> },
        /// Response to `new_session`, `continue_session` and `close_session`.
        "session_started" => SessionStarted { id: u64, started: Box<super::StartedSession> },
        /// Response to `diff`.
        "diffed" => Diffed { id: u64, diff: Box<super::SessionDiff> },
        /// Response to `send_file`: saved, and the steer that names it stored.
        "file_sent" => FileSent { id: u64, file: Box<super::SavedFile> },
        /// Response to `peek`.
        "peeked" => Peeked { id: u64, peek: Box<super::Peek> },
        /// Response to `inspect_agent` and `read_agent_transcript`.
        "agent_text" => AgentText { id: u64, worker: Worker, text: String },
        /// Response to `list_agents`: the effective definitions by name, then the broken files.
        "agents" => Agents { id: u64, agents: Vec<AgentDef> },
        /// Response to `usage`.
        "usage" => UsageReported { id: u64, report: UsageReport },
        /// Response to `delegate_project`, `resume_work` and `stop_lead`: the assignment
        /// as it is now.
        "assignment" => AssignmentIs { id: u64, assignment: Box<Assignment> },
        /// Response to `integrate_branch`.
        "integration" => Integrated { id: u64, integration: Box<Integration> },
        /// Response to `list_projects`: by repository name.
        "projects" => Projects { id: u64, projects: Vec<Project> },
        /// Response to `list_hosts`: in the config's order.
        "hosts" => Hosts { id: u64, hosts: Vec<HostLink> },
        /// Response to `link_herd`.
        "herd_linked" => HerdLinked { id: u64 },
        /// Response to `deliver_host_mail`: the mail is stored here (now, or before).
        "host_mail_stored" => HostMailStored { id: u64, mail_id: u64 },
    }
    errors {
        /// A request failed, or (without `id`) the connection did.
        "error" => Error {
            #[serde(default)]
            id: Option<u64>,
            code: ErrorCode,
            message: String,
            #[serde(default)]
            details: Option<serde_json::Value>,
        },
    }
    events {
        /// Event to a Pi session: a message for it. Acknowledge with `ack`.
        "deliver" => Deliver { message: Delivery },
        /// Event to subscribers: a session connected.
        "session_joined" => SessionJoined { session: SessionInfo },
        /// Event to subscribers: a connected session changed (status, name, model, …).
        "session_changed" => SessionChanged { session: SessionInfo },
        /// Event to subscribers: a session's connection closed. `reason`: `closed` (it said
        /// `bye`) or `lost` (no goodbye); absent when it said it comes straight back (a
        /// `/reload`). `last_status`: what it was doing until then (`session.status` is
        /// already `idle`).
        "session_left" => SessionLeft {
            session: SessionInfo,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            reason: Option<LeaveReason>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            last_status: Option<SessionStatus>,
        },
        /// Event to subscribers: a session opened an ask.
        "ask_opened" => AskOpened { ask: Ask },
        /// Event to subscribers: an ask got its answer.
        "ask_answered" => AskAnswered { ask: Ask },
        /// Event to subscribers: a session posted a report.
        "report_posted" => ReportPosted { report: Report },
        /// Event to subscribers: a session took or left a role (`session.role` is the new
        /// one).
        "role_changed" => RoleChanged { session: SessionInfo, previous: Role },
        /// Event to subscribers: a message along a supervisor or staff edge that touches a
        /// Manager or the Chief.
        "edge_message" => EdgeMessaged { message: EdgeMessage },
        /// Event to a home core's CLI and bridge subscribers: a link dropped after it was
        /// up (its sessions are unreachable, not gone), or came back after such a drop.
        "host_link" => HostLinkChanged { link: HostLink },
        /// Event to a linked home core (client kind `core`): mail up to the herd's Chief.
        /// Sent again after each `subscribe` until `host_mail_ack` names its id.
        "host_mail" => HostMailed { mail: HostMail },
        /// Event to subscribers: a managed worker was started, changed state or ended.
        "worker_changed" => WorkerChanged { worker: Worker },
        /// Event to subscribers: an assignment was created or changed (state, Lead, cleanup).
        "assignment_changed" => AssignmentChanged { assignment: Box<Assignment> },
        /// Event to subscribers: an assigned Lead finished a turn; `text` is its final text,
        /// also mailed to the repository's Manager role as `assignment_update`.
        "assignment_update" => AssignmentUpdated {
            assignment: Box<Assignment>,
            text: String,
            message_id: MessageId,
        },
        /// Event to subscribers and to both sessions of the pairing: something changed.
        /// Event to subscribers, and to the session whose call it holds: an approval was
        /// opened, decided or withdrawn.
        "approval_changed" => ApprovalChanged { approval: Approval },
        "pairing_event" => PairingEvent {
            change: PairingChange,
            pairing: Pairing,
            #[serde(default)]
            verdict: Option<Verdict>,
            /// Who caused it (`supervisor`, `cli`, `telegram:@alice`), when not the core.
            #[serde(default)]
            by: Option<String>,
        },
    }
}

impl ServerMsg {
    /// An error response or connection error.
    pub fn error(id: Option<u64>, code: ErrorCode, message: impl Into<String>) -> Self {
        ServerMsg::Error {
            id,
            code,
            message: message.into(),
            details: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ClientMsg;

    /// Only the requests declared `git` ask for a repository context, each for the
    /// directory it says.
    #[test]
    fn the_git_context_is_what_each_request_declares() {
        use super::requests::GitContext;
        let decode = |body: &str| ClientMsg::decode(body.as_bytes()).unwrap();
        let cases = [
            (
                r#"{"type":"register","id":1,"session":{"session_id":"s","cwd":"/w/app","pid":1}}"#,
                GitContext::Cwd("/w/app"),
            ),
            (
                r#"{"type":"update","id":2,"cwd":"/w/b"}"#,
                GitContext::Cwd("/w/b"),
            ),
            (
                r#"{"type":"update","id":3,"status":"idle"}"#,
                GitContext::SessionCwd,
            ),
            (
                r#"{"type":"update","id":4,"status":"thinking"}"#,
                GitContext::None,
            ),
            (
                r#"{"type":"result","id":5,"text":"done"}"#,
                GitContext::SessionCwd,
            ),
            (r#"{"type":"ping","id":6}"#, GitContext::None),
            (r#"{"type":"ack","ids":[1]}"#, GitContext::None),
        ];
        for (body, want) in cases {
            assert_eq!(decode(body).git_context(), want, "{body}");
        }
    }

    /// The direct read and the read through a JSON tree agree on every golden client
    /// fixture, and the direct read steps aside (so the tree's error or repair stands)
    /// wherever the two could differ.
    #[test]
    fn the_direct_decode_reads_what_the_tree_reads_and_nothing_else() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/protocol/client");
        let mut read = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let body = std::fs::read(&path).unwrap();
            let direct = ClientMsg::decode_direct(&body);
            let tree = ClientMsg::decode_tree(&body).map_err(|(e, _)| e.to_string());
            assert_eq!(
                direct.as_ref().ok_or(()),
                tree.as_ref().map_err(|_| ()),
                "{path:?}"
            );
            read += 1;
        }
        assert!(read > 50, "only {read} fixtures in {dir:?}");
        for body in [
            // A duplicate key: the tree keeps the last, the direct read refuses.
            &br#"{"type":"send","id":1,"to":"a","text":"x","text":"y"}"#[..],
            br#"{"type":"ping","type":"ping","id":1}"#,
            // ... also when the second `type` is spelled with an escape.
            br#"{"type":"ack","t\u0079pe":"ping","id":1,"ids":[1]}"#,
            // A lone surrogate: the tree repairs it.
            br#"{"type":"send","id":1,"to":"a","text":"\ud83d"}"#,
            br#"{"type":"no_such","id":1}"#,
            br#"{"type":7,"id":1}"#,
            br#"{"type":"send","id":"1","to":"a","text":"x"}"#,
            br#"{"type":"send","id":1,"to":"a","text":"x"} trailing"#,
            // Not UTF-8, in a field nobody reads: malformed all the same.
            b"{\"type\":\"ping\",\"id\":1,\"x\":\"\xff\xfe\"}",
        ] {
            assert_eq!(
                ClientMsg::decode_direct(body),
                None,
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        // `type` need not come first, nor without spaces.
        for body in [
            &br#"{"id":1,"type":"ping"}"#[..],
            br#"{ "type": "ping", "id": 1 }"#,
        ] {
            assert!(
                matches!(ClientMsg::decode_direct(body), Some(ClientMsg::Ping(p)) if p.id == 1)
            );
        }
        let malformed = ClientMsg::decode(b"{\"type\":\"ping\",\"id\":1,\"x\":\"\xff\"}");
        assert!(matches!(
            malformed,
            Err((super::frame::DecodeError::Malformed(_), None))
        ));
        let repaired = ClientMsg::decode(br#"{"type":"send","id":1,"to":"a","text":"\ud83d"}"#);
        assert!(matches!(repaired, Ok(ClientMsg::Send(s)) if s.text == "\u{fffd}"));
        let last = ClientMsg::decode(br#"{"type":"send","id":1,"to":"a","text":"x","text":"y"}"#);
        assert!(matches!(last, Ok(ClientMsg::Send(s)) if s.text == "y"));
    }
}
