//! Domain values that travel as plain strings: a session's status (`idle`, `thinking`,
//! `tool:<name>`) and why a pairing ended (`done`, `stopped`). Each is an enum in Rust and
//! serializes exactly as the string it replaces, so the golden fixtures do not move.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a session is doing, as Pi reports it. On the wire a string: `idle`, `thinking` or
/// `tool:<name>`. Any other string reads as [`SessionStatus::Other`], kept as it came, so
/// a record from a newer peer still decodes; the core refuses it in `register` and
/// `update` ([`SessionStatus::is_valid`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum SessionStatus {
    /// Waiting for input.
    #[default]
    Idle,
    /// The model is producing a turn.
    Thinking,
    /// Inside a tool call (never an empty name).
    Tool(String),
    /// Not one of the above.
    Other(String),
}

impl SessionStatus {
    /// Read the wire form; never fails (see [`SessionStatus::Other`]).
    pub fn parse(text: &str) -> SessionStatus {
        match text {
            "idle" => SessionStatus::Idle,
            "thinking" => SessionStatus::Thinking,
            _ => match text.strip_prefix("tool:") {
                Some(tool) if !tool.is_empty() => SessionStatus::Tool(tool.to_string()),
                _ => SessionStatus::Other(text.to_string()),
            },
        }
    }

    pub fn is_idle(&self) -> bool {
        *self == SessionStatus::Idle
    }

    /// The tool the session is in, if any.
    pub fn tool(&self) -> Option<&str> {
        match self {
            SessionStatus::Tool(tool) => Some(tool),
            _ => None,
        }
    }

    /// One of the forms a session may report (not [`SessionStatus::Other`]).
    pub fn is_valid(&self) -> bool {
        !matches!(self, SessionStatus::Other(_))
    }
}

impl fmt::Display for SessionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionStatus::Idle => f.write_str("idle"),
            SessionStatus::Thinking => f.write_str("thinking"),
            SessionStatus::Tool(tool) => write!(f, "tool:{tool}"),
            SessionStatus::Other(text) => f.write_str(text),
        }
    }
}

impl From<&str> for SessionStatus {
    fn from(text: &str) -> Self {
        SessionStatus::parse(text)
    }
}

impl From<String> for SessionStatus {
    fn from(text: String) -> Self {
        SessionStatus::parse(&text)
    }
}

/// Compares with the wire form (`status == "idle"`).
impl PartialEq<str> for SessionStatus {
    fn eq(&self, other: &str) -> bool {
        match self {
            SessionStatus::Idle => other == "idle",
            SessionStatus::Thinking => other == "thinking",
            SessionStatus::Tool(tool) => other.strip_prefix("tool:") == Some(tool.as_str()),
            SessionStatus::Other(text) => other == text,
        }
    }
}

impl PartialEq<&str> for SessionStatus {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

impl Serialize for SessionStatus {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SessionStatus {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(SessionStatus::from)
    }
}

/// On the wire a string (the TypeScript wire reads it as one).
#[cfg(test)]
impl schemars::JsonSchema for SessionStatus {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SessionStatus".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string" })
    }
}

/// Why a pairing ended.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The supervisor's `done` verdict.
    Done,
    /// Stopped without a verdict (`unpair`: the human, or the supervisor's `/supervise stop`).
    Stopped,
}

impl EndReason {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Done => "done",
            EndReason::Stopped => "stopped",
        }
    }

    /// Read the wire name (as stored).
    pub fn parse(text: &str) -> Option<EndReason> {
        match text {
            "done" => Some(EndReason::Done),
            "stopped" => Some(EndReason::Stopped),
            _ => None,
        }
    }
}

impl fmt::Display for EndReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a session's connection ended, in `session_left`: it said goodbye (`bye`, Pi closed
/// the session) or the connection was lost without one (Pi exited or crashed).
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaveReason {
    /// The session said `bye`: Pi closed it (quit, or switched to another session).
    Closed,
    /// The connection closed without a `bye`.
    Lost,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_round_trips_its_wire_form() {
        for text in ["idle", "thinking", "tool:bash", "tool:", "sleeping", ""] {
            let status = SessionStatus::parse(text);
            assert_eq!(status.to_string(), text);
            assert_eq!(status, text);
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, serde_json::to_string(text).unwrap());
            assert_eq!(
                serde_json::from_str::<SessionStatus>(&json).unwrap(),
                status
            );
        }
        assert_eq!(SessionStatus::parse("tool:edit").tool(), Some("edit"));
        assert!(!SessionStatus::parse("tool:").is_valid());
        assert!(SessionStatus::parse("thinking").is_valid());
    }

    #[test]
    fn end_reason_reads_what_it_writes() {
        for reason in [EndReason::Done, EndReason::Stopped] {
            assert_eq!(EndReason::parse(reason.as_str()), Some(reason));
            let json = serde_json::to_value(reason).unwrap();
            assert_eq!(json, reason.as_str());
        }
    }
}
