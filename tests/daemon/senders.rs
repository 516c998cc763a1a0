//! Who may send each request, against a real daemon: for every request type, the senders
//! this test expects (client kinds, and a Pi session's roles), and for every other kind and
//! role the refusal the hub answers, code, reason and message byte for byte (and, for a
//! request for some roles only, `not_registered` to a Pi connection that has not
//! registered, whose role is not known yet). Each request is sent as its golden fixture
//! (`tests/fixtures/protocol/client/<type>.json`), so a new request is covered by adding
//! its row here. The rows are this test's own: a declaration loosened in
//! `core/src/protocol/messages.rs` fails here twice, once as a table that no longer matches
//! and once as a refusal that no longer comes (the handler goes on to other answers).

use std::time::Duration;

use anyhow::{Context, Result, bail};
use shepherd_core::client::Client;
use shepherd_core::protocol::{ClientKind, ClientMsg, ErrorCode, Role, ServerMsg};
use shepherd_harness::git_repo::repo_with_worktree;
use shepherd_harness::{Core, Pi, registration};

/// One sender of the matrix: a client kind, and for a Pi session the role it holds.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Who {
    Cli,
    Bridge,
    /// A linked core (`shepherd link`): it has the CLI's authority.
    Core,
    Pi(Role),
}

impl Who {
    const ALL: [Who; 7] = [
        Who::Cli,
        Who::Bridge,
        Who::Core,
        Who::Pi(Role::Lead),
        Who::Pi(Role::Supervisor),
        Who::Pi(Role::Manager),
        Who::Pi(Role::Chief),
    ];
}

/// A refusal as the client sees it: code, `details.reason`, message.
type Refusal = (ErrorCode, Option<&'static str>, &'static str);

// How a client of a kind a request does not list is refused today.
const NO_SESSION: Refusal = (
    ErrorCode::NotRegistered,
    None,
    "this connection has no registered session: only Pi sessions (client kind `pi`) can do this",
);
const ONLY_PI_REGISTERS: Refusal = (
    ErrorCode::Forbidden,
    None,
    "only Pi sessions (client kind `pi`) register",
);
const ONLY_A_MANAGER: Refusal = (
    ErrorCode::Forbidden,
    None,
    "delegate_project is the Manager's (a Pi session holding /manager); the human resumes, stops and integrates with `shepherd resume`, `shepherd integrate`",
);
const DELEGATE_IS_PIS: Refusal = (
    ErrorCode::Forbidden,
    None,
    "only a Pi session delegates to workers (it owns them and gets their results)",
);
const CONTINUE_IS_PIS: Refusal = (
    ErrorCode::Forbidden,
    None,
    "only a Pi session continues a worker session (it becomes the owner)",
);
const ONLY_A_LINK: Refusal = (
    ErrorCode::Forbidden,
    None,
    "only a linked core (client kind `core`, through `shepherd link`) sends this",
);
const SEND_IS_HUMANS: Refusal = (
    ErrorCode::Forbidden,
    Some("direct_edges_only"),
    "a Pi session does not send to arbitrary sessions: it reaches its supervisor with message_supervisor, its staff with message_staff and its peers with message_peer; `send` is the human's (CLI and chat)",
);
const INTERRUPT_IS_HUMANS: Refusal = (
    ErrorCode::Forbidden,
    None,
    "only the human interrupts a session (the CLI's `shepherd stop <session>` or a chat's /stop); a session reaches others along its edges (message_supervisor, message_staff, message_peer)",
);
const UNANSWER_IS_HUMANS: Refusal = (
    ErrorCode::Forbidden,
    None,
    "Pi sessions cannot take answers back; only the human who answers can (CLI or chat)",
);
const APPROVE_AGENT_IS_OWNERS: Refusal = (
    ErrorCode::Forbidden,
    None,
    "approve_agent is a worker's owner's (a Pi session); the human decides with decide_approval (`shepherd approve`, `shepherd deny`)",
);
const DECIDE_IS_HUMANS: Refusal = (
    ErrorCode::Forbidden,
    Some("human_only"),
    "only the human decides a tool call's approval (`shepherd approve` or `shepherd deny`, or the card on the phone)",
);
const PEEK_IS_HUMANS: Refusal = (
    ErrorCode::Forbidden,
    Some("human_only"),
    "only the human peeks at a session (`shepherd peek`, or /peek in a chat); a Manager or the Chief looks at its staff with inspect_staff, an owner at its worker with inspect_agent",
);
const DIFF_IS_HUMANS: Refusal = (
    ErrorCode::Forbidden,
    Some("human_only"),
    "only the human asks for a session's diff (`shepherd diff`, or /diff in a chat); a session reads its own changes with git",
);
const START_IS_HUMANS: Refusal = (
    ErrorCode::Forbidden,
    Some("human_only"),
    "only the human starts, continues or closes a session this way (`shepherd new`, `shepherd continue`, /new, /continue); a session starts workers with delegate_agent",
);
const RELEASE_IS_HUMANS: Refusal = (
    ErrorCode::Forbidden,
    Some("human_only"),
    "only the human releases another session's role (`shepherd roles release`, or /release in a chat); a session leaves its own with set_role lead (/manager leave, /chief leave)",
);

// How a Pi session of a role a request does not list is refused today (`{role}`: its role).
const NOT_STAFF_HOLDER: Refusal = (
    ErrorCode::Forbidden,
    Some("not_manager_or_chief"),
    "only a Manager or the Chief has staff; this session is a {role}",
);
const CHIEF_HAS_NO_SUPERVISOR: Refusal = (
    ErrorCode::Forbidden,
    Some("chief"),
    "the Chief reports to the human: use report (or ask_human) instead",
);
const CHIEF_HAS_NO_PEERS: Refusal = (
    ErrorCode::Forbidden,
    Some("chief"),
    "the Chief has no peers; it reaches Managers and Leads with message_staff",
);
const NOT_MANAGER: Refusal = (
    ErrorCode::ProjectRefused,
    Some("not_manager"),
    "project work is the Manager's: run /manager in the repository's primary worktree first (set_role manager)",
);

/// One request: its type, its senders as the core's table prints them, and how another
/// kind and another role are refused.
struct Row {
    kind: &'static str,
    senders: &'static str,
    other_kind: Refusal,
    other_role: Option<Refusal>,
}

const fn row(kind: &'static str, senders: &'static str) -> Row {
    Row {
        kind,
        senders,
        other_kind: NO_SESSION,
        other_role: None,
    }
}

const fn refusing(kind: &'static str, senders: &'static str, other_kind: Refusal) -> Row {
    Row {
        kind,
        senders,
        other_kind,
        other_role: None,
    }
}

const fn by_role(
    kind: &'static str,
    senders: &'static str,
    other_kind: Refusal,
    other_role: Refusal,
) -> Row {
    Row {
        kind,
        senders,
        other_kind,
        other_role: Some(other_role),
    }
}

const ANYONE: &str = "pi cli bridge";
const PI: &str = "pi";
const HUMAN: &str = "cli bridge";

/// Every request the core takes, in the order of its declaration.
const ROWS: &[Row] = &[
    row("hello", ANYONE),
    refusing("register", PI, ONLY_PI_REGISTERS),
    row("update", PI),
    row("ask", PI),
    row("report", PI),
    row("answer", ANYONE),
    refusing("send", HUMAN, SEND_IS_HUMANS),
    row("list_sessions", ANYONE),
    row("list_asks", ANYONE),
    row("status", ANYONE),
    row("subscribe", ANYONE),
    row("ping", ANYONE),
    row("supervise", ANYONE),
    row("unpair", ANYONE),
    row("set_goal", ANYONE),
    row("look", ANYONE),
    row("worker_view", PI),
    row("verdict", PI),
    row("list_pairings", ANYONE),
    refusing("unanswer", HUMAN, UNANSWER_IS_HUMANS),
    refusing("interrupt", HUMAN, INTERRUPT_IS_HUMANS),
    row("result", PI),
    row("list_reports", ANYONE),
    row("set_role", PI),
    row("list_roles", ANYONE),
    refusing("release_role", HUMAN, RELEASE_IS_HUMANS),
    by_role(
        "message_supervisor",
        "pi(lead|manager)",
        NO_SESSION,
        CHIEF_HAS_NO_SUPERVISOR,
    ),
    row("ask_supervisor", PI),
    by_role(
        "list_staff",
        "pi(manager|chief) cli bridge",
        NO_SESSION,
        NOT_STAFF_HOLDER,
    ),
    by_role(
        "inspect_staff",
        "pi(manager|chief) core",
        NO_SESSION,
        NOT_STAFF_HOLDER,
    ),
    by_role(
        "message_staff",
        "pi(manager|chief)",
        NO_SESSION,
        NOT_STAFF_HOLDER,
    ),
    by_role(
        "list_peers",
        "pi(lead|manager)",
        NO_SESSION,
        CHIEF_HAS_NO_PEERS,
    ),
    by_role(
        "message_peer",
        "pi(lead|manager)",
        NO_SESSION,
        CHIEF_HAS_NO_PEERS,
    ),
    refusing("delegate_agent", PI, DELEGATE_IS_PIS),
    refusing("continue_agent", PI, CONTINUE_IS_PIS),
    row("list_workers", ANYONE),
    row("steer_agent", ANYONE),
    row("interrupt_agent", ANYONE),
    row("reply_agent", ANYONE),
    row("close_agent", ANYONE),
    row("inspect_agent", ANYONE),
    row("read_agent_transcript", ANYONE),
    row("ask_owner", PI),
    row("list_agents", ANYONE),
    row("usage", ANYONE),
    by_role(
        "delegate_project",
        "pi(manager)",
        ONLY_A_MANAGER,
        NOT_MANAGER,
    ),
    by_role(
        "resume_work",
        "pi(manager) cli bridge",
        NO_SESSION,
        NOT_MANAGER,
    ),
    by_role(
        "stop_lead",
        "pi(manager) cli bridge",
        NO_SESSION,
        NOT_MANAGER,
    ),
    by_role(
        "integrate_branch",
        "pi(manager) cli bridge",
        NO_SESSION,
        NOT_MANAGER,
    ),
    by_role(
        "list_projects",
        "pi(manager) cli bridge",
        NO_SESSION,
        NOT_MANAGER,
    ),
    row("list_hosts", ANYONE),
    refusing("link_herd", "core", ONLY_A_LINK),
    refusing("deliver_host_mail", "core", ONLY_A_LINK),
    row("request_approval", PI),
    refusing("decide_approval", HUMAN, DECIDE_IS_HUMANS),
    row("withdraw_approval", PI),
    row("list_approvals", ANYONE),
    refusing("peek", HUMAN, PEEK_IS_HUMANS),
    refusing("diff", HUMAN, DIFF_IS_HUMANS),
    refusing("send_file", HUMAN, SEND_IS_HUMANS),
    refusing("new_session", HUMAN, START_IS_HUMANS),
    refusing("continue_session", HUMAN, START_IS_HUMANS),
    refusing("close_session", HUMAN, START_IS_HUMANS),
    refusing("list_started", HUMAN, START_IS_HUMANS),
    refusing("approve_agent", PI, APPROVE_AGENT_IS_OWNERS),
    row("ack", PI),
    row("bye", PI),
    refusing("host_mail_ack", "core", ONLY_A_LINK),
];

impl Row {
    /// Whether this row lets `who` send it (`lead` stands for a supervisor too: the core
    /// counts the supervisor hint as a Lead).
    fn allows(&self, who: Who) -> bool {
        let words: Vec<&str> = self.senders.split([' ', '(', ')', '|']).collect();
        match who {
            Who::Cli => words.contains(&"cli"),
            Who::Core => words.contains(&"cli") || words.contains(&"core"),
            Who::Bridge => words.contains(&"bridge"),
            Who::Pi(role) => {
                if self.senders.split(' ').any(|w| w == "pi") {
                    return true;
                }
                let role = match role {
                    Role::Supervisor => "lead",
                    r => r.as_str(),
                };
                self.senders.starts_with("pi(") && words.contains(&role)
            }
        }
    }

    /// The refusal `who` gets, as the client sees it.
    fn refusal(&self, who: Who) -> (ErrorCode, Option<String>, String) {
        let (code, reason, message) = match who {
            Who::Pi(_) if self.senders.contains("pi") => {
                self.other_role.expect("a row that refuses a role says how")
            }
            _ => self.other_kind,
        };
        let role = match who {
            Who::Pi(role) => role.as_str(),
            _ => "",
        };
        (
            code,
            reason.map(str::to_string),
            message.replace("{role}", role),
        )
    }
}

/// The golden fixture of a request type, as the message a client sends.
fn fixture(kind: &str) -> Result<ClientMsg> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/protocol/client")
        .join(format!("{kind}.json"));
    let body = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    ClientMsg::decode(&body).map_err(|e| anyhow::anyhow!("{kind}: {e:?}"))
}

/// Send `msg` as it is and read what the core answers it: `Err` with the refusal, `Ok`
/// when it carried the request out.
async fn answer_to(
    client: &mut Client,
    msg: &ClientMsg,
) -> Result<std::result::Result<(), (ErrorCode, Option<String>, String)>> {
    client.send(msg).await?;
    let id = msg.request_id();
    loop {
        let got = tokio::time::timeout(Duration::from_secs(10), client.next_event())
            .await
            .with_context(|| format!("no answer to {}", msg.kind()))??;
        match got {
            ServerMsg::Error {
                id: got_id,
                code,
                message,
                details,
            } if got_id == id => {
                let reason = details.and_then(|d| d["reason"].as_str().map(str::to_string));
                return Ok(Err((code, reason, message)));
            }
            other if id.is_some() && other.response_id() == id => return Ok(Ok(())),
            _ => {} // An event: not the answer.
        }
    }
}

#[tokio::test]
async fn every_request_refuses_each_sender_it_does_not_list_as_before() -> Result<()> {
    // The core declares, for every request type in its order, the senders of its row.
    let declared: Vec<String> = ClientMsg::SENDERS
        .iter()
        .map(|(kind, senders)| format!("{kind:<22} {senders}"))
        .collect();
    println!("{}", declared.join("\n"));
    let expected: Vec<String> = ROWS
        .iter()
        .map(|r| format!("{:<22} {}", r.kind, r.senders))
        .collect();
    assert_eq!(declared, expected, "the declared senders");

    let core = Core::start().await?;
    let (app, linked) = repo_with_worktree(core.agent_dir(), "app", "fix")?;
    let hq = core.agent_dir().join("hq");
    std::fs::create_dir_all(&hq)?;
    let lead = Pi::register(&core.socket(), "lead", "lead", &linked).await?;
    let mut hinted = registration("sup", "sup", &linked);
    hinted.role = Role::Supervisor;
    let (supervisor, _) = Pi::register_full(&core.socket(), hinted).await?;
    let mut mgr = Pi::register(&core.socket(), "mgr", "mgr", &app).await?;
    mgr.client.set_role(Role::Manager).await?;
    let mut chief = Pi::register(&core.socket(), "chief", "chief", &hq).await?;
    chief.client.set_role(Role::Chief).await?;
    let mut clients = [
        (Who::Cli, core.client(ClientKind::Cli).await?),
        (Who::Bridge, core.client(ClientKind::Bridge).await?),
        (Who::Core, core.client(ClientKind::Core).await?),
        (Who::Pi(Role::Lead), lead.client),
        (Who::Pi(Role::Supervisor), supervisor.client),
        (Who::Pi(Role::Manager), mgr.client),
        (Who::Pi(Role::Chief), chief.client),
    ];

    let mut unregistered = core.client(ClientKind::Pi).await?;

    let mut refused = Vec::new();
    let mut wrong = Vec::new();
    for row in ROWS {
        let msg = fixture(row.kind)?;
        for (who, client) in &mut clients {
            if row.allows(*who) {
                continue;
            }
            let got = answer_to(client, &msg).await?;
            let want = Err(row.refusal(*who));
            if got != want {
                wrong.push(format!(
                    "{} from {who:?}:\n  got  {got:?}\n  want {want:?}",
                    row.kind
                ));
            }
            refused.push(*who);
        }
        // A request for some roles only needs the Pi session registered to know its role.
        if row.other_role.is_some() {
            let got = answer_to(&mut unregistered, &msg).await?;
            let want = Err((
                ErrorCode::NotRegistered,
                None,
                "this connection has no registered session: send `register` first".to_string(),
            ));
            if got != want {
                wrong.push(format!(
                    "{} from an unregistered Pi:\n  got  {got:?}\n  want {want:?}",
                    row.kind
                ));
            }
        }
    }
    if !wrong.is_empty() {
        bail!("{} refusals differ:\n{}", wrong.len(), wrong.join("\n"));
    }
    // Every sender was refused something.
    for who in Who::ALL {
        assert!(refused.contains(&who), "nothing refused from {who:?}");
    }
    println!("{} refusals checked", refused.len());
    Ok(())
}
