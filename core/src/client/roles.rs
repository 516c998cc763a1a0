//! Named helpers for the role requests (protocol 2) that the CLI, the bridges and the
//! tests use most: `set_role`, `list_roles`, `list_staff`, `message_supervisor`,
//! `ask_supervisor` and `message_staff` (their replies are tied to them in
//! [`super::calls`]).

use super::{Client, ClientError, RoleSet, Routed, Sent};
use crate::protocol::{Ask, Lease, Role, StaffMember, requests};

impl Client {
    /// Pi: take a role (`manager`, `chief`) or leave it (`lead`).
    pub async fn set_role(&mut self, role: Role) -> Result<RoleSet, ClientError> {
        self.call(requests::SetRole {
            role,
            ..Default::default()
        })
        .await
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
