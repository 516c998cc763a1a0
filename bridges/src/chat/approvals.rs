//! # Approvals on the phone
//!
//! A held tool call's card, the same on both phones and pure: who waits (the session),
//! the tool and the command or path it would run (`pre`, at most [`SHOWN`] characters),
//! the rule that asked, and how to decide it here (buttons on Telegram, reactions on
//! Matrix, or a reply, which denies it with that reply as the reason the agent reads).
//! Once decided or withdrawn the card shows how, and by whom.

use shepherd_core::protocol::{Approval, ApprovalId, ApprovalScope, ApprovalState};

use super::format::{one_line, truncate};
use super::html::{Html, Rendered};

/// An approval across the herd: its id on its core and the linked host that core is
/// (`None`: this core's). Written `4`, or `gpu:4` on a linked host.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ApprovalRef {
    pub host: Option<String>,
    pub id: ApprovalId,
}

impl ApprovalRef {
    pub fn of(a: &Approval) -> ApprovalRef {
        ApprovalRef {
            host: a.host.clone(),
            id: a.id,
        }
    }

    /// `4` or `gpu:4`, as [`std::fmt::Display`] writes it.
    pub fn parse(text: &str) -> Option<ApprovalRef> {
        let (host, id) = shepherd_core::protocol::split_host(text);
        Some(ApprovalRef {
            host: host.map(str::to_string),
            id: id.parse().ok()?,
        })
    }
}

impl std::fmt::Display for ApprovalRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            Some(host) => write!(f, "{host}:{}", self.id),
            None => write!(f, "{}", self.id),
        }
    }
}

/// How much of the command or path a card shows.
pub const SHOWN: usize = 1500;
/// Longest session name or rule shown.
const NAME: usize = 200;

/// The card of a pending approval; `how` says how to decide it on this phone.
pub fn card(a: &Approval, how: &str) -> Rendered {
    let mut h = head(a);
    h.line().italic(how);
    h.into()
}

/// The card once the approval ended: how, and by whom.
pub fn ended(a: &Approval) -> Rendered {
    let mut h = head(a);
    let by = a.decided_by.as_deref().unwrap_or("?");
    let line = match (a.state, a.scope) {
        (ApprovalState::Allowed, Some(ApprovalScope::Session)) => {
            format!("✅ allowed for this session by {by}")
        }
        (ApprovalState::Allowed, _) => format!("✅ allowed once by {by}"),
        (ApprovalState::Denied, _) => match &a.reason {
            Some(reason) => format!("⛔ denied by {by}: {}", truncate(&one_line(reason), NAME)),
            None => format!("⛔ denied by {by}"),
        },
        (ApprovalState::Withdrawn, _) => format!("⏹ {by}"),
        (ApprovalState::Pending, _) => "⏳ waiting".to_string(),
    };
    h.line().bold(&line);
    h.into()
}

/// `🔐 fix-login waits for approval #4`, the call, the rule.
fn head(a: &Approval) -> Html {
    let mut h = Html::new();
    h.text("🔐 ")
        .bold(&truncate(&one_line(&a.session_name), NAME))
        .text(&format!(
            " waits for approval #{} · {}",
            a.reference(),
            a.tool
        ));
    h.line().pre(&truncate(&a.subject, SHOWN), None);
    h.line()
        .italic(&format!("asked by {}", truncate(&one_line(&a.rule), NAME)));
    h
}

/// What a decision from the phone said back to the human who tried it, when the core
/// refused it (decided elsewhere first, withdrawn, unknown).
pub fn refused(e: &shepherd_core::client::ClientError) -> String {
    match e {
        shepherd_core::client::ClientError::Remote { message, .. } => {
            format!("Not decided: {message}")
        }
        other => format!("Not decided: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approval() -> Approval {
        Approval {
            id: 4.into(),
            session_id: "s".into(),
            session_name: "fix-login".into(),
            tool: "bash".into(),
            subject: "git push origin <main>".into(),
            rule: "rule 1 of the careful preset in /c.toml (tool bash, ask)".into(),
            cwd: "/src/app".into(),
            tool_call_id: "c".into(),
            state: ApprovalState::Pending,
            scope: None,
            decided_by: None,
            reason: None,
            created_at: 0,
            decided_at: None,
            host: None,
        }
    }

    #[test]
    fn a_card_shows_the_call_escaped_and_how_to_decide() {
        let c = card(&approval(), "reply to deny with a reason");
        assert_eq!(
            c.plain,
            "🔐 fix-login waits for approval #4 · bash\ngit push origin <main>\nasked by rule 1 of the careful preset in /c.toml (tool bash, ask)\nreply to deny with a reason"
        );
        assert!(c.html.contains("&lt;main&gt;"), "{}", c.html);
    }

    #[test]
    fn an_ended_card_says_how_and_by_whom() {
        let mut a = approval();
        a.state = ApprovalState::Denied;
        a.decided_by = Some("telegram:@ada".into());
        a.reason = Some("push to a branch".into());
        assert!(
            ended(&a)
                .plain
                .ends_with("⛔ denied by telegram:@ada: push to a branch")
        );
        a.state = ApprovalState::Allowed;
        a.scope = Some(ApprovalScope::Session);
        a.decided_by = Some("cli".into());
        assert!(
            ended(&a)
                .plain
                .ends_with("✅ allowed for this session by cli")
        );
        a.state = ApprovalState::Withdrawn;
        a.decided_by = Some("withdrawn: the session ended".into());
        assert!(ended(&a).plain.ends_with("⏹ withdrawn: the session ended"));
    }

    #[test]
    fn a_linked_hosts_approval_is_named_with_its_host() {
        let mut a = approval();
        a.host = Some("gpu".into());
        assert!(card(&a, "").plain.contains("approval #gpu:4"));
        let r = ApprovalRef::of(&a);
        assert_eq!(r.to_string(), "gpu:4");
        assert_eq!(ApprovalRef::parse("gpu:4"), Some(r));
        assert_eq!(ApprovalRef::parse("4").map(|r| r.host), Some(None));
        assert_eq!(ApprovalRef::parse("gpu:x"), None);
    }
}
