//! Typed calls for the role requests (protocol 2): `set_role`, `list_roles`,
//! `message_supervisor`, `ask_supervisor`, `list_staff`, `inspect_staff`, `message_staff`,
//! `list_peers` and `message_peer`, each tied to the reply the core answers it with, plus
//! named helpers for the ones the CLI, the bridges and the tests use most.

use super::calls::replies;
use super::{Client, ClientError, Request, Sent};
use crate::protocol::{
    Ask, ClientMsg, Lease, MessageId, ReportsTo, Role, ServerMsg, SessionInfo, StaffMember,
    StaffView, requests,
};

/// The core's answer to `set_role`.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleSet {
    /// The session with its new role.
    pub session: SessionInfo,
    pub previous: Role,
    /// The lease it now holds (none after leaving a role).
    pub lease: Option<Lease>,
}

/// The core's answer to `message_supervisor`.
#[derive(Debug, Clone, PartialEq)]
pub struct Routed {
    pub to: ReportsTo,
    /// Set when it went to a session's mailbox.
    pub message_id: Option<MessageId>,
    /// Set when it went to the human as a report.
    pub report_id: Option<u64>,
    pub connected: bool,
}

replies! {
    SetRole => RoleSet: ServerMsg::RoleSet { session, previous, lease, .. } =>
        RoleSet { session, previous, lease },
    ListRoles => Vec<Lease>: ServerMsg::Roles { leases, .. } => leases,
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
}

impl Client {
    /// Pi: take a role (`manager`, `chief`) or leave it (`lead`).
    pub async fn set_role(&mut self, role: Role) -> Result<RoleSet, ClientError> {
        self.call(requests::SetRole { id: 0, role }).await
    }

    /// The leases the core holds.
    pub async fn list_roles(&mut self) -> Result<Vec<Lease>, ClientError> {
        self.call(requests::ListRoles::default()).await
    }

    /// A Manager or Chief: its direct staff; the CLI and bridges: every connected session
    /// and lease holder with whom it reports to.
    pub async fn list_staff(&mut self) -> Result<Vec<StaffMember>, ClientError> {
        self.call(requests::ListStaff::default()).await
    }

    /// Pi (a Lead or Manager): mail to its effective supervisor.
    pub async fn message_supervisor(
        &mut self,
        text: impl Into<String>,
    ) -> Result<Routed, ClientError> {
        let text = text.into();
        self.call(requests::MessageSupervisor { id: 0, text }).await
    }

    /// Pi (a Lead or Manager): an ask addressed to its effective supervisor.
    pub async fn ask_supervisor(
        &mut self,
        question: impl Into<String>,
        options: Vec<String>,
    ) -> Result<Ask, ClientError> {
        self.call(requests::AskSupervisor {
            question: question.into(),
            options,
            ..Default::default()
        })
        .await
    }

    /// A Manager or Chief: steer one of its staff (exact session id).
    pub async fn message_staff(
        &mut self,
        session: impl Into<String>,
        text: impl Into<String>,
    ) -> Result<Sent, ClientError> {
        self.call(requests::MessageStaff {
            id: 0,
            session: session.into(),
            text: text.into(),
        })
        .await
    }
}
