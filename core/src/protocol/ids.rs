//! Ids as types: a session id is a [`SessionId`], an ask id an [`AskId`], so one can no
//! longer be passed where the other is expected. Each serializes exactly as the string or
//! number it replaces (`#[serde(transparent)]`), so the golden fixtures do not move.
//!
//! The conversions keep call sites readable: a [`SessionId`] compares with `str`, is
//! built `From` a `&str` or `String` and borrows as `str` for map lookups; the numeric ids
//! come `From<u64>`, give their number back with `.get()` and parse from user input
//! (`shepherd answer 7 …`) with `FromStr`.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Pi's exact session id (`ctx.sessionManager.getSessionId()`).
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(String);

/// `id` as people see it: its last 8 characters (all of it when shorter); see
/// [`SessionId::short`].
pub fn short_id(id: &str) -> &str {
    let count = id.chars().count();
    match id.char_indices().nth(count.saturating_sub(8)) {
        Some((start, _)) => &id[start..],
        None => id,
    }
}

impl SessionId {
    pub fn new(id: impl Into<String>) -> Self {
        SessionId(id.into())
    }

    /// The id as people see it in listings: its last 8 characters. Pi's ids are UUIDv7,
    /// whose first characters are the time (sessions started together share them) and
    /// whose end is random; a selector may give this suffix ([`short_id`]).
    pub fn short(&self) -> &str {
        short_id(&self.0)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Deref for SessionId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SessionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for SessionId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for SessionId {
    fn from(id: &str) -> Self {
        SessionId(id.to_owned())
    }
}

impl From<String> for SessionId {
    fn from(id: String) -> Self {
        SessionId(id)
    }
}

impl From<&String> for SessionId {
    fn from(id: &String) -> Self {
        SessionId(id.clone())
    }
}

impl From<&SessionId> for SessionId {
    fn from(id: &SessionId) -> Self {
        id.clone()
    }
}

impl From<SessionId> for String {
    fn from(id: SessionId) -> Self {
        id.0
    }
}

impl PartialEq<str> for SessionId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for SessionId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for SessionId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl PartialEq<SessionId> for str {
    fn eq(&self, other: &SessionId) -> bool {
        self == other.0
    }
}

impl PartialEq<SessionId> for &str {
    fn eq(&self, other: &SessionId) -> bool {
        *self == other.0
    }
}

impl PartialEq<SessionId> for String {
    fn eq(&self, other: &SessionId) -> bool {
        *self == other.0
    }
}

/// The largest numeric id: the store's row ids are SQLite's signed 64-bit integers.
pub const MAX_ID: u64 = i64::MAX as u64;

/// Why text or a number is not a numeric id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdError {
    NotANumber(std::num::ParseIntError),
    OutOfRange(u64),
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdError::NotANumber(e) => e.fmt(f),
            IdError::OutOfRange(id) => write!(f, "{id} is out of range: ids are at most {MAX_ID}"),
        }
    }
}

impl std::error::Error for IdError {}

/// `id` if the store can hold it (at most [`MAX_ID`]).
pub fn check_range(id: u64) -> Result<u64, IdError> {
    if id > MAX_ID {
        Err(IdError::OutOfRange(id))
    } else {
        Ok(id)
    }
}

/// `#[serde(default, deserialize_with = "…")]` for an optional plain `u64` that reaches
/// the store as an id (`list_reports {after}`): a number above [`MAX_ID`] is refused at
/// decode, the sender's `invalid_message` naming the field, like the typed ids.
pub(crate) fn optional_store_id<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<u64>, D::Error> {
    Option::<u64>::deserialize(d)?
        .map(check_range)
        .transpose()
        .map_err(serde::de::Error::custom)
}

/// Declares a numeric id: a `u64` newtype with `From<u64>`, `.get()`, `Display`,
/// `FromStr` and comparisons with `u64`.
macro_rules! numeric_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[cfg_attr(test, derive(schemars::JsonSchema))]
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize,
        )]
        #[serde(transparent)]
        pub struct $name(u64);

        /// Refuses a number above [`MAX_ID`] at decode, so it becomes the sender's
        /// `invalid_message` naming the field instead of a store failure.
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let id = u64::deserialize(d)?;
                check_range(id).map($name).map_err(serde::de::Error::custom)
            }
        }

        impl $name {
            pub const fn new(id: u64) -> Self {
                $name(id)
            }

            /// The number, as on the wire.
            pub const fn get(self) -> u64 {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                let id = s.parse().map_err(IdError::NotANumber)?;
                check_range(id).map($name)
            }
        }

        impl From<u64> for $name {
            fn from(id: u64) -> Self {
                $name(id)
            }
        }

        impl From<$name> for u64 {
            fn from(id: $name) -> Self {
                id.0
            }
        }

        impl PartialEq<u64> for $name {
            fn eq(&self, other: &u64) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<$name> for u64 {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }
    };
}

numeric_id!(
    /// An ask's number, unique within the store (`shepherd answer <ask> …`).
    AskId
);

numeric_id!(
    /// A pairing's number, unique within the store.
    PairingId
);

numeric_id!(
    /// A tool-call approval's number, unique within the store (`shepherd approve <id>`).
    ApprovalId
);

numeric_id!(
    /// A delivery's (message's) number: unique within the store and increasing in
    /// delivery order, so a receiver can drop anything it has seen.
    MessageId
);

numeric_id!(
    /// A worker's id: one generation of one assignment, assigned by the core, growing.
    WorkerId
);

numeric_id!(
    /// An assignment's id, assigned by the core, growing.
    AssignmentId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_serialize_as_before() {
        assert_eq!(
            serde_json::to_string(&SessionId::from("s-1")).unwrap(),
            "\"s-1\""
        );
        assert_eq!(serde_json::to_string(&AskId::from(7)).unwrap(), "7");
        assert_eq!(
            serde_json::from_str::<PairingId>("3").unwrap(),
            PairingId::new(3)
        );
        assert_eq!(serde_json::from_str::<SessionId>("\"ab\"").unwrap(), "ab");
    }

    #[test]
    fn numeric_ids_parse_and_print() {
        assert_eq!("12".parse::<AskId>().unwrap().get(), 12);
        assert!("x".parse::<MessageId>().is_err());
        assert_eq!(MessageId::new(5).to_string(), "5");
    }

    #[test]
    fn ids_beyond_the_stores_range_are_refused() {
        let max = MAX_ID.to_string();
        assert_eq!(max.parse::<AskId>().unwrap().get(), MAX_ID);
        let over = (MAX_ID + 1).to_string();
        assert_eq!(
            over.parse::<AskId>().unwrap_err().to_string(),
            format!("{over} is out of range: ids are at most {max}")
        );
        let err = serde_json::from_str::<Vec<MessageId>>(&format!("[1, {over}]")).unwrap_err();
        assert!(err.to_string().contains("out of range"), "{err}");
        assert_eq!(
            serde_json::from_str::<PairingId>(&max).unwrap().get(),
            MAX_ID
        );
    }

    #[test]
    fn session_ids_look_up_by_str() {
        let mut map = std::collections::HashMap::new();
        map.insert(SessionId::from("abc"), 1);
        assert_eq!(map.get("abc"), Some(&1));
    }
}
