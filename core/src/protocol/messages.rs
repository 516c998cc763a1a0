//! The two message enums, named by direction. Requests carry a client-chosen `id` that the
//! response echoes; events carry none. Every variant has a golden fixture in
//! `tests/fixtures/protocol/` that the Rust and TypeScript tests both check.

use serde::{Deserialize, Serialize};

use super::{
    Ask, ClientKind, ContextUsage, CoreStatus, Delivery, ErrorCode, Pairing, PairingChange,
    Registration, Report, Role, SessionInfo, Verdict, VerdictKind, View, frame,
};

/// Declares [`ClientMsg`] (internally tagged, the wire form) and a private externally
/// tagged twin with the same variants. Decoding goes through the twin so that
/// `serde_path_to_error` can name the offending field (`ask.question: invalid type …`);
/// internally tagged enums buffer their content and lose the path.
macro_rules! client_messages {
    ($(
        $(#[$vmeta:meta])*
        $variant:ident { $( $(#[$fmeta:meta])* $field:ident : $ty:ty ),* $(,)? }
    ),* $(,)?) => {
        /// Client → core.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        pub enum ClientMsg {
            $( $(#[$vmeta])* $variant { $( $(#[$fmeta])* $field: $ty ),* } ),*
        }

        #[derive(Deserialize)]
        #[serde(rename_all = "snake_case")]
        enum ExternallyTagged {
            $( $variant { $( $(#[$fmeta])* $field: $ty ),* } ),*
        }

        impl From<ExternallyTagged> for ClientMsg {
            fn from(msg: ExternallyTagged) -> Self {
                match msg {
                    $( ExternallyTagged::$variant { $($field),* } => ClientMsg::$variant { $($field),* } ),*
                }
            }
        }
    };
}

client_messages! {
    /// First message on every connection. Answered by `welcome`.
    Hello {
        id: u64,
        protocol: u32,
        client: ClientKind,
        /// Free-form label: `telegram`, `shepherd-cli 0.1.0`, `pi-ext 0.1.0`.
        #[serde(default)]
        client_name: Option<String>,
    },
    /// Pi only: bind this connection to a Pi session. Answered by `registered`, then every
    /// unacknowledged delivery for the session follows as `deliver` events.
    Register { id: u64, session: Registration },
    /// Pi only: change what the session says about itself. Absent fields stay as they are.
    Update {
        id: u64,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        model: Option<String>,
        #[serde(default)]
        context: Option<ContextUsage>,
        #[serde(default)]
        status: Option<String>,
        #[serde(default)]
        cwd: Option<String>,
        #[serde(default)]
        role: Option<Role>,
        #[serde(default)]
        session_file: Option<String>,
    },
    /// Pi only: open a question for whoever supervises the session. Answered by `asked`.
    Ask {
        id: u64,
        question: String,
        #[serde(default)]
        options: Vec<String>,
        #[serde(default)]
        details: Option<String>,
    },
    /// Pi only: post information (no question) for whoever supervises the session.
    Report { id: u64, text: String },
    /// CLI and bridges: give an ask its one answer. Answered by `answered`.
    Answer {
        id: u64,
        ask: u64,
        text: String,
        /// Bridges only: the human who answered (`telegram:@alice`). Ignored for the CLI.
        #[serde(default)]
        by: Option<String>,
    },
    /// Send text to a session (exact id, unique id prefix or unique name). From the CLI or
    /// a bridge it is a steer; from a Pi session, a message. Answered by `sent`.
    Send {
        id: u64,
        to: String,
        text: String,
        /// Bridges only: the human who wrote it.
        #[serde(default)]
        by: Option<String>,
    },
    /// Pi only: these deliveries reached the model (or were dropped as duplicates).
    /// No response.
    Ack { ids: Vec<u64> },
    /// Answered by `sessions`. `all` adds sessions that are not connected.
    ListSessions {
        id: u64,
        #[serde(default)]
        all: bool,
    },
    /// Answered by `asks`. `all` adds answered asks.
    ListAsks {
        id: u64,
        #[serde(default)]
        all: bool,
    },
    /// Answered by `core_status`.
    Status { id: u64 },
    /// Receive presence, ask and report events on this connection. Answered by
    /// `subscribed`.
    Subscribe { id: u64 },
    /// Answered by `pong`.
    Ping { id: u64 },
    /// Start a pairing. From a Pi session: it becomes the supervisor of `worker` (exact id,
    /// unique prefix or unique name; absent: the one free session in its cwd). From the CLI
    /// or a bridge: `worker` is required and `supervisor` defaults to the one free
    /// supervisor-role session in the worker's cwd. A `goal` that is one word containing
    /// `/` or `.` is a file, read whole (relative to `cwd`, else the requester's or the
    /// worker's cwd). Answered by `paired`.
    Supervise {
        id: u64,
        #[serde(default)]
        worker: Option<String>,
        #[serde(default)]
        supervisor: Option<String>,
        #[serde(default)]
        goal: Option<String>,
        /// CLI: the directory a goal path is relative to.
        #[serde(default)]
        cwd: Option<String>,
        /// Bridges only: the human who asked.
        #[serde(default)]
        by: Option<String>,
    },
    /// End a pairing without a verdict. From a Pi session: its own pairing; from the CLI or
    /// a bridge: the pairing of `session` (either side). Answered by `unpaired`.
    Unpair {
        id: u64,
        #[serde(default)]
        session: Option<String>,
        #[serde(default)]
        by: Option<String>,
    },
    /// Change a pairing's goal in place (the steer history stays). `session` as for
    /// `unpair`. Answered by `goal_set`.
    SetGoal {
        id: u64,
        goal: String,
        #[serde(default)]
        session: Option<String>,
        #[serde(default)]
        cwd: Option<String>,
        #[serde(default)]
        by: Option<String>,
    },
    /// Deliver a view to the supervisor now. `session` as for `unpair`. Answered by
    /// `look_requested`; the view follows as a `deliver` of kind `view`.
    Look {
        id: u64,
        #[serde(default)]
        session: Option<String>,
        #[serde(default)]
        by: Option<String>,
    },
    /// Supervisor only: what the worker did since the last view, returned (not delivered)
    /// and not counted as a look. Answered by `view`.
    WorkerView { id: u64 },
    /// Supervisor only: the answer to the current look. Answered by `verdict_accepted`,
    /// or refused by a guard (`verdict_refused`, `runaway`).
    Verdict {
        id: u64,
        verdict: VerdictKind,
        #[serde(default)]
        text: String,
    },
    /// Answered by `pairings`. `all` adds ended pairings.
    ListPairings {
        id: u64,
        #[serde(default)]
        all: bool,
    },
}

impl ClientMsg {
    /// Decode one frame body. Errors name the offending field
    /// (`invalid ask message: ask.question: invalid type: integer, expected a string`).
    pub fn decode(body: &[u8]) -> Result<ClientMsg, frame::DecodeFailure> {
        let mut obj = frame::parse_object(body, Self::TYPES)?;
        obj.fields.remove("type");
        let mut outer = serde_json::Map::new();
        outer.insert(obj.kind.clone(), serde_json::Value::Object(obj.fields));
        let msg: ExternallyTagged =
            frame::deserialize_traced(serde_json::Value::Object(outer), &obj.kind, obj.id)?;
        Ok(msg.into())
    }

    /// Every `type` a client may send.
    pub const TYPES: &'static [&'static str] = &[
        "hello",
        "register",
        "update",
        "ask",
        "report",
        "answer",
        "send",
        "ack",
        "list_sessions",
        "list_asks",
        "status",
        "subscribe",
        "ping",
        "supervise",
        "unpair",
        "set_goal",
        "look",
        "worker_view",
        "verdict",
        "list_pairings",
    ];

    /// The request id, for messages that expect a response.
    pub fn request_id(&self) -> Option<u64> {
        use ClientMsg::*;
        match self {
            Hello { id, .. }
            | Register { id, .. }
            | Update { id, .. }
            | Ask { id, .. }
            | Report { id, .. }
            | Answer { id, .. }
            | Send { id, .. }
            | ListSessions { id, .. }
            | ListAsks { id, .. }
            | Status { id }
            | Subscribe { id }
            | Ping { id }
            | Supervise { id, .. }
            | Unpair { id, .. }
            | SetGoal { id, .. }
            | Look { id, .. }
            | WorkerView { id }
            | Verdict { id, .. }
            | ListPairings { id, .. } => Some(*id),
            Ack { .. } => None,
        }
    }
}

/// Core → client: responses (with the request's `id`) and events (without).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMsg {
    /// Response to `hello`.
    Welcome {
        id: u64,
        protocol: u32,
        core_version: String,
        /// Identifies the database; delivery ids are unique within one store.
        store_id: String,
        /// The core's pid.
        pid: u32,
    },
    /// Response to `register`: the session as stored, and how many deliveries follow.
    Registered {
        id: u64,
        session: SessionInfo,
        pending: u32,
        /// Active pairings this session is in (as supervisor or worker), with whether the
        /// other side is connected.
        #[serde(default)]
        pairings: Vec<Pairing>,
    },
    /// Response to `update`.
    Updated { id: u64, session: SessionInfo },
    /// Response to `ask`: the ask is stored and announced.
    Asked { id: u64, ask: Ask },
    /// Response to `report`.
    Reported { id: u64, report: Report },
    /// Response to `answer`: this answer won and is on its way to the session.
    Answered { id: u64, ask: Ask },
    /// Response to `send`: stored, and delivered now if the session is connected, else on
    /// its next connection.
    Sent {
        id: u64,
        message_id: u64,
        session_id: String,
        session_name: String,
        connected: bool,
    },
    /// Response to `list_sessions`.
    Sessions { id: u64, sessions: Vec<SessionInfo> },
    /// Response to `list_asks`.
    Asks { id: u64, asks: Vec<Ask> },
    /// Response to `status`.
    CoreStatus { id: u64, status: CoreStatus },
    /// Response to `subscribe`.
    Subscribed { id: u64 },
    /// Response to `ping`.
    Pong { id: u64 },
    /// A request failed, or (without `id`) the connection did.
    Error {
        #[serde(default)]
        id: Option<u64>,
        code: ErrorCode,
        message: String,
        #[serde(default)]
        details: Option<serde_json::Value>,
    },
    /// Event to a Pi session: a message for it. Acknowledge with `ack`.
    Deliver { message: Delivery },
    /// Event to subscribers: a session connected.
    SessionJoined { session: SessionInfo },
    /// Event to subscribers: a connected session changed (status, name, model, …).
    SessionChanged { session: SessionInfo },
    /// Event to subscribers: a session's connection closed.
    SessionLeft { session: SessionInfo },
    /// Event to subscribers: a session opened an ask.
    AskOpened { ask: Ask },
    /// Event to subscribers: an ask got its answer.
    AskAnswered { ask: Ask },
    /// Event to subscribers: a session posted a report.
    ReportPosted { report: Report },
    /// Response to `supervise`.
    Paired { id: u64, pairing: Pairing },
    /// Response to `unpair`.
    Unpaired { id: u64, pairing: Pairing },
    /// Response to `set_goal`.
    GoalSet { id: u64, pairing: Pairing },
    /// Response to `look`.
    LookRequested { id: u64, pairing: Pairing },
    /// Response to `worker_view`.
    View { id: u64, view: View },
    /// Response to `verdict`. `hint` is set when a steer repeats a recent one.
    VerdictAccepted {
        id: u64,
        pairing: Pairing,
        verdict: Verdict,
        #[serde(default)]
        hint: Option<String>,
    },
    /// Response to `list_pairings`.
    Pairings { id: u64, pairings: Vec<Pairing> },
    /// Event to subscribers and to both sessions of the pairing: something changed.
    PairingEvent {
        change: PairingChange,
        pairing: Pairing,
        #[serde(default)]
        verdict: Option<Verdict>,
        /// Who caused it (`supervisor`, `cli`, `telegram:@alice`), when not the core.
        #[serde(default)]
        by: Option<String>,
    },
}

impl ServerMsg {
    /// Every `type` the core may send.
    pub const TYPES: &'static [&'static str] = &[
        "welcome",
        "registered",
        "updated",
        "asked",
        "reported",
        "answered",
        "sent",
        "sessions",
        "asks",
        "core_status",
        "subscribed",
        "pong",
        "error",
        "deliver",
        "session_joined",
        "session_changed",
        "session_left",
        "ask_opened",
        "ask_answered",
        "report_posted",
        "paired",
        "unpaired",
        "goal_set",
        "look_requested",
        "view",
        "verdict_accepted",
        "pairings",
        "pairing_event",
    ];

    /// An error response or connection error.
    pub fn error(id: Option<u64>, code: ErrorCode, message: impl Into<String>) -> Self {
        ServerMsg::Error {
            id,
            code,
            message: message.into(),
            details: None,
        }
    }

    /// The id of the request this answers; `None` for events and connection errors.
    pub fn response_id(&self) -> Option<u64> {
        use ServerMsg::*;
        match self {
            Welcome { id, .. }
            | Registered { id, .. }
            | Updated { id, .. }
            | Asked { id, .. }
            | Reported { id, .. }
            | Answered { id, .. }
            | Sent { id, .. }
            | Sessions { id, .. }
            | Asks { id, .. }
            | CoreStatus { id, .. }
            | Subscribed { id }
            | Pong { id }
            | Paired { id, .. }
            | Unpaired { id, .. }
            | GoalSet { id, .. }
            | LookRequested { id, .. }
            | View { id, .. }
            | VerdictAccepted { id, .. }
            | Pairings { id, .. } => Some(*id),
            Error { id, .. } => *id,
            Deliver { .. }
            | SessionJoined { .. }
            | SessionChanged { .. }
            | SessionLeft { .. }
            | AskOpened { .. }
            | AskAnswered { .. }
            | ReportPosted { .. }
            | PairingEvent { .. } => None,
        }
    }
}
