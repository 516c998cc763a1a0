//! Example records for tests: one [`Pairing`], [`Ask`], [`SessionInfo`] and [`AgentDef`] with every
//! field filled, so a test names only the fields it cares about with struct update syntax
//! (`Pairing { goal: None, ..examples::pairing() }`). Compiled for shepherd-core's own tests
//! and, through the `test-support` feature, for the dev-dependencies of the other crates;
//! never part of a release build.

use crate::protocol::{
    AgentDef, Ask, AskState, DefSource, Pairing, PairingId, PairingState, Role, SessionInfo,
    Thinking,
};

/// An active pairing: `watch-login` (`sup-1`) supervises `fix-login` (`w-1`) in
/// `/src/app` with the goal "SSO works", after 3 looks and 1 steer; both sides connected.
pub fn pairing() -> Pairing {
    Pairing {
        id: PairingId::from(7),
        supervisor_id: "sup-1".into(),
        supervisor_name: "watch-login".into(),
        worker_id: "w-1".into(),
        worker_name: "fix-login".into(),
        cwd: "/src/app".into(),
        goal: Some("SSO works".into()),
        goal_file: None,
        state: PairingState::Active,
        looks: 3,
        steers: 1,
        created_at: 0,
        last_look_at: None,
        ended_at: None,
        end_reason: None,
        ended_by: None,
        evidence: None,
        supervisor_connected: true,
        worker_connected: true,
        host: None,
    }
}

/// An open ask 7 from `fix-login`: "Deploy?" with the options `yes` and `no`.
pub fn ask() -> Ask {
    Ask {
        id: 7.into(),
        session_id: "s".into(),
        session_name: "fix-login".into(),
        question: "Deploy?".into(),
        options: vec!["yes".into(), "no".into()],
        details: None,
        state: AskState::Open,
        answer: None,
        answered_by: None,
        created_at: 0,
        answered_at: None,
        to: None,
        host: None,
    }
}

/// A connected, idle lead session `fix-login` in `/home/ada/src/app` on `main`, first and
/// last seen at 1,000,000,000 ms.
pub fn session_info() -> SessionInfo {
    SessionInfo {
        id: "3f2a9c1b-77aa-4c1e-9d2b-000000000001".into(),
        name: "fix-login".into(),
        cwd: "/home/ada/src/app".into(),
        pid: Some(4242),
        model: Some("anthropic/claude-sonnet".into()),
        status: "idle".into(),
        role: Role::Lead,
        connected: true,
        context_tokens: Some(41_234),
        context_window: Some(200_000),
        context_percent: Some(20.6),
        repo: Some("/home/ada/src/app".into()),
        branch: Some("main".into()),
        head: Some("9f3c2b1d0e".into()),
        worktree: false,
        repo_id: Some("/home/ada/src/app/.git".into()),
        project: Some("app".into()),
        session_file: None,
        subagent: false,
        open_asks: 0,
        pending_messages: 0,
        first_seen: 1_000_000_000,
        last_seen: 1_000_000_000,
        host: None,
    }
}

/// A usable project definition `docs` in `/src/app/.pi/agents/docs.md`: model `m1` at
/// thinking `high`, tools `read` and `grep` without `bash`, may delegate to `scout`.
pub fn agent_def() -> AgentDef {
    AgentDef {
        name: "docs".into(),
        description: "Writes the docs.".into(),
        source: DefSource::Project,
        path: Some("/src/app/.pi/agents/docs.md".into()),
        model: Some("m1".into()),
        thinking: Some(Thinking::High),
        tools: Some(vec!["read".into(), "grep".into()]),
        exclude_tools: vec!["bash".into()],
        agents: vec!["scout".into()],
        enabled: true,
        error: None,
    }
}

/// A link to host `name` in `state` since 0, reached by `ssh -T me@<name> shepherd link`:
/// when connected, 1.84 ms round trip, shepherd 0.1.0 at this protocol, 2 sessions and 1
/// open ask; `error` as given.
pub fn host_link(
    name: &str,
    state: crate::protocol::LinkState,
    error: Option<&str>,
) -> crate::protocol::HostLink {
    let up = state == crate::protocol::LinkState::Connected;
    crate::protocol::HostLink {
        name: name.into(),
        command: ["ssh", "-T", &format!("me@{name}"), "shepherd", "link"]
            .map(str::to_string)
            .to_vec(),
        state,
        since: 0,
        error: error.map(str::to_string),
        rtt_us: up.then_some(1840),
        core_version: up.then(|| "0.1.0".to_string()),
        protocol: up.then_some(crate::protocol::PROTOCOL_VERSION),
        sessions: 2,
        open_asks: 1,
        connects: 1,
    }
}
