//! # Who may speak
//!
//! A bridge acts for its owner: answers and steers reach sessions that can run commands.
//! So every incoming update is checked against an [`Allowlist`]: the sender must be one of
//! the configured users (Telegram numeric ids, Matrix MXIDs compared exactly) and the
//! message must come from a configured chat (Telegram chat id, Matrix room id; resolve
//! aliases first). Anything else is refused with a reason for the audit log. The list
//! fails closed: no users means nobody. For a Telegram bot without a configured chat,
//! pass the allowed users as the chats too (a private chat's id is the user's id).

use std::fmt::Display;

/// Users allowed to talk to a bridge, and the chats it listens in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowlist<T> {
    users: Vec<T>,
    chats: Chats<T>,
    /// What a chat is called in reasons: `chat` (Telegram) or `room` (Matrix).
    noun: &'static str,
}

/// Which chats are listened in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chats<T> {
    /// Only these.
    Only(Vec<T>),
    /// Any chat the bridge is in (the sender check alone decides).
    Any,
}

/// Why an update was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The sender is not an allowed user.
    User,
    /// An allowed user, in a chat the bridge does not listen in.
    Chat,
}

/// The verdict on one update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allowed,
    /// Ignore the update and write `reason` to the audit log.
    Refused {
        why: Refusal,
        reason: String,
    },
}

impl Decision {
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allowed)
    }

    /// The audit-log reason, when refused.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Decision::Allowed => None,
            Decision::Refused { reason, .. } => Some(reason),
        }
    }
}

impl<T: PartialEq + Display> Allowlist<T> {
    /// `users` in `chats` only.
    pub fn new(users: impl IntoIterator<Item = T>, chats: impl IntoIterator<Item = T>) -> Self {
        Allowlist {
            users: users.into_iter().collect(),
            chats: Chats::Only(chats.into_iter().collect()),
            noun: "chat",
        }
    }

    /// `users`, in any chat.
    pub fn in_any_chat(users: impl IntoIterator<Item = T>) -> Self {
        Allowlist {
            users: users.into_iter().collect(),
            chats: Chats::Any,
            noun: "chat",
        }
    }

    /// Call chats `noun` in reasons (`room` for Matrix).
    pub fn chat_noun(mut self, noun: &'static str) -> Self {
        self.noun = noun;
        self
    }

    /// Whether `user`, writing in `chat`, is listened to.
    pub fn allows(&self, user: &T, chat: &T) -> Decision {
        let noun = self.noun;
        if !self.allows_user(user) {
            return Decision::Refused {
                why: Refusal::User,
                reason: format!("sender {user} is not in allowed_users ({noun} {chat})"),
            };
        }
        if !self.allows_chat(chat) {
            return Decision::Refused {
                why: Refusal::Chat,
                reason: format!("{noun} {chat} is not a configured {noun} (sender {user})"),
            };
        }
        Decision::Allowed
    }

    /// Whether `user` is allowed anywhere (say, to invite the bot into a room).
    pub fn allows_user(&self, user: &T) -> bool {
        self.users.contains(user)
    }

    /// Whether the bridge listens in `chat`.
    pub fn allows_chat(&self, chat: &T) -> bool {
        match &self.chats {
            Chats::Only(chats) => chats.contains(chat),
            Chats::Any => true,
        }
    }

    /// The allowed users.
    pub fn users(&self) -> &[T] {
        &self.users
    }

    /// The chats listened in.
    pub fn chats(&self) -> &Chats<T> {
        &self.chats
    }

    /// True when nobody is allowed (a bridge should refuse to start).
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn telegram_ids() {
        let list = Allowlist::new([42_i64, 7], [-100_123_i64]);
        assert_eq!(list.allows(&42, &-100_123), Decision::Allowed);
        let refused = list.allows(&99, &-100_123);
        assert!(!refused.is_allowed());
        assert!(matches!(
            refused,
            Decision::Refused {
                why: Refusal::User,
                ..
            }
        ));
        assert_eq!(
            refused.reason(),
            Some("sender 99 is not in allowed_users (chat -100123)")
        );
        let elsewhere = list.allows(&7, &555);
        assert!(matches!(
            elsewhere,
            Decision::Refused {
                why: Refusal::Chat,
                ..
            }
        ));
        assert_eq!(
            elsewhere.reason(),
            Some("chat 555 is not a configured chat (sender 7)")
        );
        assert_eq!(list.users(), &[42, 7]);
    }

    #[test]
    fn private_chats_are_the_users_own() {
        let users = [42_i64];
        let list = Allowlist::new(users, users);
        assert!(list.allows(&42, &42).is_allowed());
        assert!(!list.allows(&42, &43).is_allowed());
    }

    #[test]
    fn matrix_ids_compare_exactly() {
        let list = Allowlist::new(
            ["@ada:example.org".to_string()],
            ["!room:example.org".to_string()],
        )
        .chat_noun("room");
        let ada = "@ada:example.org".to_string();
        let room = "!room:example.org".to_string();
        assert!(list.allows(&ada, &room).is_allowed());
        assert!(
            !list
                .allows(&"@Ada:example.org".to_string(), &room)
                .is_allowed()
        );
        let other_room = "!other:example.org".to_string();
        assert_eq!(
            list.allows(&ada, &other_room).reason(),
            Some("room !other:example.org is not a configured room (sender @ada:example.org)")
        );
        assert!(list.allows_user(&ada));
        assert!(!list.allows_user(&"@eve:example.org".to_string()));
    }

    #[test]
    fn any_chat_and_failing_closed() {
        let anywhere = Allowlist::in_any_chat([1_i64]);
        assert!(anywhere.allows(&1, &12345).is_allowed());
        assert_eq!(anywhere.chats(), &Chats::Any);
        let nobody: Allowlist<i64> = Allowlist::in_any_chat([]);
        assert!(nobody.is_empty());
        assert!(!nobody.allows(&1, &1).is_allowed());
    }
}
