//! Who may send a request. Each request's line in the [`ClientMsg`](super::ClientMsg)
//! table declares it (`[pi]`, `[cli bridge] else SEND_IS_HUMANS`,
//! `[pi(manager|chief else NOT_STAFF_HOLDER) cli bridge]`),
//! and the hub checks it once, before the handler runs: a client of another kind, or a Pi
//! session of another role, gets the declared [`Refusal`] and the handler never sees the
//! request. Only refusals decided by who the sender is belong here; a check that also
//! reads the request's arguments or its target stays in the handler.
//!
//! A Pi session's role is its lease's (Manager, Chief), else a Lead's; `lead` in a
//! declaration admits the `supervisor` hint too, as the core counts it as a Lead.

use super::{ClientKind, ErrorCode, Role};

/// How a sender a request does not admit is refused: the error's code, its
/// `details.reason` when it has one, and its message (`{role}`: the sender's role).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    pub code: ErrorCode,
    pub reason: Option<&'static str>,
    pub message: &'static str,
}

impl Refusal {
    /// The message for a sender of `role` (the role only matters where it says `{role}`).
    pub fn message_for(&self, role: Option<Role>) -> String {
        match role {
            Some(role) => self.message.replace("{role}", role.as_str()),
            None => self.message.to_string(),
        }
    }
}

/// The senders one request admits: client kinds, and for a Pi session the roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Senders {
    pub pi: bool,
    pub cli: bool,
    pub bridge: bool,
    /// A linked core only (`core`): what one core asks of another. A linked core may
    /// also send whatever the CLI may.
    pub core: bool,
    /// For a Pi session: the roles admitted, and how another role is refused (`None`:
    /// any role).
    pub roles: Option<(&'static [Role], Refusal)>,
    /// How a client of another kind is refused.
    pub other_kind: Refusal,
}

impl Senders {
    /// Nobody yet: the table's lines add kinds to this.
    pub const NONE: Senders = Senders {
        pi: false,
        cli: false,
        bridge: false,
        core: false,
        roles: None,
        other_kind: NO_SESSION,
    };

    pub const fn cli(self) -> Senders {
        Senders { cli: true, ..self }
    }

    pub const fn core(self) -> Senders {
        Senders { core: true, ..self }
    }

    pub const fn bridge(self) -> Senders {
        Senders {
            bridge: true,
            ..self
        }
    }

    pub const fn pi(self) -> Senders {
        Senders { pi: true, ..self }
    }

    /// Pi sessions of `roles` only; the others get `refusal`.
    pub const fn pi_as(self, roles: &'static [Role], refusal: Refusal) -> Senders {
        Senders {
            pi: true,
            roles: Some((roles, refusal)),
            ..self
        }
    }

    /// How a client of a kind not admitted is refused, when not [`NO_SESSION`].
    pub const fn refusing(self, refusal: Refusal) -> Senders {
        Senders {
            other_kind: refusal,
            ..self
        }
    }

    /// Whether a client of `kind` may send the request at all (a Pi session then still
    /// needs one of [`Senders::roles`]).
    pub fn admits_kind(&self, kind: ClientKind) -> bool {
        match kind {
            ClientKind::Pi => self.pi,
            ClientKind::Cli => self.cli,
            ClientKind::Bridge => self.bridge,
            // A linked core acts for the human with the CLI's authority.
            ClientKind::Core => self.cli || self.core,
        }
    }

    /// Whether a Pi session of `role` may send the request (`supervisor` counts as a Lead).
    pub fn admits_role(&self, role: Role) -> bool {
        self.role_refusal(role).is_none()
    }

    /// How a Pi session of `role` is refused, if the request does not admit that role
    /// (`supervisor` counts as a Lead).
    pub fn role_refusal(&self, role: Role) -> Option<Refusal> {
        let role = match role {
            Role::Supervisor => Role::Lead,
            r => r,
        };
        match self.roles {
            Some((roles, refusal)) if !roles.contains(&role) => Some(refusal),
            _ => None,
        }
    }
}

/// The senders as the table declares them: `pi(manager|chief) cli bridge`.
impl std::fmt::Display for Senders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut words = Vec::new();
        if self.pi {
            words.push(match self.roles {
                None => "pi".to_string(),
                Some((roles, _)) => {
                    let roles: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
                    format!("pi({})", roles.join("|"))
                }
            });
        }
        if self.cli {
            words.push("cli".into());
        }
        if self.bridge {
            words.push("bridge".into());
        }
        if self.core {
            words.push("core".into());
        }
        f.write_str(&words.join(" "))
    }
}

// How a client of a kind a request does not admit is refused.

/// A request only a registered Pi session makes, from another kind of client (the
/// default).
pub const NO_SESSION: Refusal = Refusal {
    code: ErrorCode::NotRegistered,
    reason: None,
    message: "this connection has no registered session: only Pi sessions (client kind `pi`) can do this",
};
pub const ONLY_PI_REGISTERS: Refusal = Refusal {
    code: ErrorCode::Forbidden,
    reason: None,
    message: "only Pi sessions (client kind `pi`) register",
};
pub const ONLY_A_MANAGER: Refusal = Refusal {
    code: ErrorCode::Forbidden,
    reason: None,
    message: "delegate_project is the Manager's (a Pi session holding /manager); the human resumes, stops and integrates with `shepherd resume`, `shepherd integrate`",
};
pub const DELEGATE_IS_PIS: Refusal = Refusal {
    code: ErrorCode::Forbidden,
    reason: None,
    message: "only a Pi session delegates to workers (it owns them and gets their results)",
};
pub const CONTINUE_IS_PIS: Refusal = Refusal {
    code: ErrorCode::Forbidden,
    reason: None,
    message: "only a Pi session continues a worker session (it becomes the owner)",
};
pub const ONLY_A_LINK: Refusal = Refusal {
    code: ErrorCode::Forbidden,
    reason: None,
    message: "only a linked core (client kind `core`, through `shepherd link`) sends this",
};
pub const SEND_IS_HUMANS: Refusal = Refusal {
    code: ErrorCode::Forbidden,
    reason: Some("direct_edges_only"),
    message: "a Pi session does not send to arbitrary sessions: it reaches its supervisor with message_supervisor, its staff with message_staff and its peers with message_peer; `send` is the human's (CLI and chat)",
};
pub const INTERRUPT_IS_HUMANS: Refusal = Refusal {
    code: ErrorCode::Forbidden,
    reason: None,
    message: "only the human interrupts a session (the CLI's `shepherd stop <session>` or a chat's /stop); a session reaches others along its edges (message_supervisor, message_staff, message_peer)",
};
pub const UNANSWER_IS_HUMANS: Refusal = Refusal {
    code: ErrorCode::Forbidden,
    reason: None,
    message: "Pi sessions cannot take answers back; only the human who answers can (CLI or chat)",
};
pub const APPROVE_AGENT_IS_OWNERS: Refusal = Refusal {
    code: ErrorCode::Forbidden,
    reason: None,
    message: "approve_agent is a worker's owner's (a Pi session); the human decides with decide_approval (`shepherd approve`, `shepherd deny`)",
};
pub const DECIDE_IS_HUMANS: Refusal = Refusal {
    code: ErrorCode::Forbidden,
    reason: Some("human_only"),
    message: "only the human decides a tool call's approval (`shepherd approve` or `shepherd deny`, or the card on the phone)",
};
pub const PEEK_IS_HUMANS: Refusal = Refusal {
    code: ErrorCode::Forbidden,
    reason: Some("human_only"),
    message: "only the human peeks at a session (`shepherd peek`, or /peek in a chat); a Manager or the Chief looks at its staff with inspect_staff, an owner at its worker with inspect_agent",
};
pub const DIFF_IS_HUMANS: Refusal = Refusal {
    code: ErrorCode::Forbidden,
    reason: Some("human_only"),
    message: "only the human asks for a session's diff (`shepherd diff`, or /diff in a chat); a session reads its own changes with git",
};
pub const START_IS_HUMANS: Refusal = Refusal {
    code: ErrorCode::Forbidden,
    reason: Some("human_only"),
    message: "only the human starts, continues or closes a session this way (`shepherd new`, `shepherd continue`, /new, /continue); a session starts workers with delegate_agent",
};
pub const RELEASE_IS_HUMANS: Refusal = Refusal {
    code: ErrorCode::Forbidden,
    reason: Some("human_only"),
    message: "only the human releases another session's role (`shepherd roles release`, or /release in a chat); a session leaves its own with set_role lead (/manager leave, /chief leave)",
};

// How a Pi session of a role a request does not admit is refused.

pub const NOT_STAFF_HOLDER: Refusal = Refusal {
    code: ErrorCode::Forbidden,
    reason: Some("not_manager_or_chief"),
    message: "only a Manager or the Chief has staff; this session is a {role}",
};
pub const CHIEF_HAS_NO_SUPERVISOR: Refusal = Refusal {
    code: ErrorCode::Forbidden,
    reason: Some("chief"),
    message: "the Chief reports to the human: use report (or ask_human) instead",
};
pub const CHIEF_HAS_NO_PEERS: Refusal = Refusal {
    code: ErrorCode::Forbidden,
    reason: Some("chief"),
    message: "the Chief has no peers; it reaches Managers and Leads with message_staff",
};
pub const NOT_MANAGER: Refusal = Refusal {
    code: ErrorCode::ProjectRefused,
    reason: Some("not_manager"),
    message: "project work is the Manager's: run /manager in the repository's primary worktree first (set_role manager)",
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declaration_admits_its_kinds_and_roles_and_reads_as_written() {
        let peers = Senders::NONE
            .cli()
            .pi_as(&[Role::Lead, Role::Manager], CHIEF_HAS_NO_PEERS);
        assert_eq!(peers.to_string(), "pi(lead|manager) cli");
        assert!(peers.admits_kind(ClientKind::Pi) && peers.admits_kind(ClientKind::Cli));
        assert!(!peers.admits_kind(ClientKind::Bridge));
        assert!(
            peers.admits_role(Role::Supervisor),
            "the hint counts as a Lead"
        );
        assert!(!peers.admits_role(Role::Chief));
        assert_eq!(peers.other_kind, NO_SESSION);
        let humans = Senders::NONE.cli().bridge().refusing(SEND_IS_HUMANS);
        assert_eq!(humans.to_string(), "cli bridge");
        assert!(!humans.admits_kind(ClientKind::Pi));
        assert!(humans.admits_role(Role::Chief), "no roles declared: any");
        assert_eq!(
            NOT_STAFF_HOLDER.message_for(Some(Role::Lead)),
            "only a Manager or the Chief has staff; this session is a lead"
        );
    }
}
