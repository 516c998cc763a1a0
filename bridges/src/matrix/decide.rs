//! # From a Matrix event to what the bridge does
//!
//! Pure decisions, so they are tested without a homeserver: an incoming message or
//! reaction, already reduced to the few fields that matter ([`Incoming`]), and what the
//! bridge knows about its own events ([`Known`]: cards, threads, what is about which
//! session) give one [`Action`]. The rules, in order: the bot's own events are ignored;
//! senders not in `allowed_users` and rooms other than the bridge's are refused (audit
//! log); edits are ignored; a `!command` is a command (`!close` in reply to a `!workers`
//! line names that line's worker); a reply to a card answers its ask;
//! a reply to a message about another session than the thread's steers that one (a
//! `!staff` line); a message in a session's thread is typed text for that session
//! (`relay::typed`: its one open ask's answer, else a steer); in a thread of no session it answers the thread's
//! newest open card; a reply to anything else about a session steers it; any other
//! message gets the help. A reaction on a card answers it with that option; ↩️ on the
//! bot's "answered ask N" takes that typed answer back. On a held tool call's card a
//! reaction decides it (✅ once, 🔁 for the session, ❌ deny) and a reply denies it with
//! the reply as the reason. A file (image, file, audio) goes to the session of the message it
//! replies to, else of its thread.

use crate::chat::approvals::ApprovalRef;
use shepherd_core::protocol::AskRef;

use crate::chat::access::{Allowlist, Decision};
use crate::chat::commands::{self, ChatCommand};

/// A message or reaction, reduced to what the decision needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    pub room: String,
    pub sender: String,
    pub kind: IncomingKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IncomingKind {
    /// A text message (`m.text`, `m.notice` or `m.emote`).
    Text {
        /// The body, without a reply fallback (`> <@user> …` lines).
        body: String,
        /// The root of the thread it is in (`m.thread`).
        thread_root: Option<String>,
        /// The event it genuinely replies to (not a thread's fallback reply).
        reply_to: Option<String>,
        /// An edit (`m.replace`) of an earlier message.
        is_edit: bool,
    },
    /// A reaction (`m.annotation`) with `key` on event `target`.
    Reaction { target: String, key: String },
    /// A file (`m.image`, `m.file`, `m.audio`, `m.video`), encrypted or not.
    File {
        file: MatrixFile,
        thread_root: Option<String>,
        reply_to: Option<String>,
    },
}

impl IncomingKind {
    /// What it is, for the audit log.
    pub fn noun(&self) -> &'static str {
        match self {
            IncomingKind::Text { .. } => "message",
            IncomingKind::Reaction { .. } => "reaction",
            IncomingKind::File { .. } => "file",
        }
    }
}

/// A file event's media and what it says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatrixFile {
    /// Its `MediaSource` as JSON (a plain `mxc://` URL or an encrypted file's keys).
    pub source: String,
    pub name: String,
    pub mime: Option<String>,
    /// What the event says it weighs.
    pub size: Option<u64>,
    pub kind: shepherd_core::protocol::FileKind,
    pub caption: Option<String>,
}

/// What the bridge knows about its own events.
pub trait Known {
    /// The ask a card event shows, and whether the card is already answered.
    fn card(&self, event_id: &str) -> Option<(AskRef, bool)>;
    /// The ask of the newest open card in the thread starting at `root`.
    fn open_card_in_thread(&self, root: &str) -> Option<AskRef>;
    /// The session whose thread starts at `root`.
    fn session_of_thread(&self, root: &str) -> Option<String>;
    /// The session a bot event is about.
    fn about(&self, event_id: &str) -> Option<String>;
    /// The ask whose typed answer a bot event offers to take back.
    fn undo_offer(&self, event_id: &str) -> Option<AskRef>;
    /// The held tool call a bot event is the card of.
    fn approval_card(&self, _event_id: &str) -> Option<ApprovalRef> {
        None
    }
    /// What the peek a bot event shows is of.
    fn peek(&self, _event_id: &str) -> Option<String> {
        None
    }
}

/// What to do with an incoming event. `thread` is where a reply goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing (the bot's own event, an edit, a reaction on something else).
    Ignore,
    /// Ignore, and write `reason` to the audit log.
    Refuse { reason: String },
    Command {
        command: ChatCommand,
        thread: Option<String>,
    },
    /// Answer an ask with text (free text or an option's number, read by
    /// [`commands::answer_text`] once the ask is known).
    Answer {
        ask: AskRef,
        text: String,
        thread: Option<String>,
    },
    /// Decide a held tool call by the reaction `key` on its card.
    Approval { approval: ApprovalRef, key: String },
    /// Deny a held tool call with `reason` (a reply to its card).
    DenyApproval {
        approval: ApprovalRef,
        reason: String,
        thread: Option<String>,
    },
    /// Answer an ask with the option a reaction `key` on its `card` stands for.
    React {
        ask: AskRef,
        key: String,
        card: String,
    },
    Steer {
        session: String,
        text: String,
        thread: Option<String>,
    },
    /// Text typed in `session`'s thread, not a reply: its one open ask's answer, else a
    /// steer (decided by the relay, which knows the open asks).
    Typed {
        session: String,
        text: String,
        thread: Option<String>,
    },
    /// Take the peek `event` shows of `target` again, and edit it (🔄 on the peek).
    RefreshPeek { target: String, event: String },
    /// Take ask `ask`'s typed answer back (↩️ on the bot's `offer`).
    Undo { ask: AskRef, offer: String },
    /// A file for `session` (`None`: sent where no session is: say where to send it).
    File {
        session: Option<String>,
        file: MatrixFile,
        thread: Option<String>,
    },
    /// A message the bot cannot place: answer with the help.
    Help { thread: Option<String> },
}

/// Decide what an incoming event means.
pub fn decide(
    incoming: &Incoming,
    me: &str,
    allow: &Allowlist<String>,
    known: &impl Known,
) -> Action {
    if incoming.sender == me {
        return Action::Ignore;
    }
    if let Decision::Refused { reason, .. } = allow.allows(&incoming.sender, &incoming.room) {
        return Action::Refuse { reason };
    }
    match &incoming.kind {
        IncomingKind::Reaction { target, key } => reaction(target, key, known),
        IncomingKind::File {
            file,
            thread_root,
            reply_to,
        } => {
            // The session it is sent to: the message replied to, else the thread's.
            let session = reply_to
                .as_deref()
                .and_then(|r| known.about(r))
                .or_else(|| {
                    thread_root
                        .as_deref()
                        .and_then(|r| known.session_of_thread(r))
                });
            Action::File {
                session,
                file: file.clone(),
                thread: thread_root.clone(),
            }
        }
        IncomingKind::Text {
            body,
            thread_root,
            reply_to,
            is_edit,
        } => {
            if *is_edit || body.trim().is_empty() {
                return Action::Ignore;
            }
            let thread = thread_root.clone();
            if let Some(command) = commands::parse(body, '!', None) {
                // `!close` in reply to a `!workers` line closes that worker.
                let command = match command {
                    ChatCommand::Close(None) => ChatCommand::Close(
                        reply_to
                            .as_deref()
                            .and_then(|r| known.about(r))
                            .filter(|a| crate::chat::workers::worker_ref(a).is_some()),
                    ),
                    other => other,
                };
                return Action::Command { command, thread };
            }
            let text = body.trim().to_string();
            // A reply to an approval card denies it, with the reply as the reason.
            if let Some(approval) = reply_to.as_deref().and_then(|r| known.approval_card(r)) {
                return Action::DenyApproval {
                    approval,
                    reason: text,
                    thread,
                };
            }
            if let Some((ask, _)) = reply_to.as_deref().and_then(|r| known.card(r)) {
                return Action::Answer { ask, text, thread };
            }
            if let Some(root) = thread_root.as_deref() {
                let of_thread = known.session_of_thread(root);
                // A reply to a line about another session (a `!staff` line) steers that one.
                if let Some(session) = reply_to
                    .as_deref()
                    .and_then(|r| known.about(r))
                    .filter(|s| of_thread.as_ref() != Some(s))
                {
                    return Action::Steer {
                        session,
                        text,
                        thread,
                    };
                }
                if let Some(session) = of_thread {
                    return Action::Typed {
                        session,
                        text,
                        thread,
                    };
                }
                if let Some(ask) = known.open_card_in_thread(root) {
                    return Action::Answer { ask, text, thread };
                }
            }
            if let Some(session) = reply_to.as_deref().and_then(|r| known.about(r)) {
                return Action::Steer {
                    session,
                    text,
                    thread,
                };
            }
            Action::Help { thread }
        }
    }
}

/// Whether a reaction key is ↩️ (with or without its variation selector).
/// What a reaction `key` on bot event `target` means: an approval's decision, a peek's
/// refresh, an option of an ask card, or the undo of a typed answer.
fn reaction(target: &str, key: &str, known: &impl Known) -> Action {
    if let Some(approval) = known.approval_card(target) {
        return Action::Approval {
            approval,
            key: key.to_string(),
        };
    }
    if is_refresh_key(key)
        && let Some(peek) = known.peek(target)
    {
        return Action::RefreshPeek {
            target: peek,
            event: target.to_string(),
        };
    }
    match known.card(target) {
        Some((ask, _)) => Action::React {
            ask,
            key: key.to_string(),
            card: target.to_string(),
        },
        None => match known.undo_offer(target) {
            Some(ask) if is_undo_key(key) => Action::Undo {
                ask,
                offer: target.to_string(),
            },
            _ => Action::Ignore,
        },
    }
}

/// 🔄 (with or without its variation selector), and 🔃.
fn is_refresh_key(key: &str) -> bool {
    matches!(key.trim_end_matches('\u{fe0f}'), "🔄" | "🔃")
}

fn is_undo_key(key: &str) -> bool {
    key.trim_end_matches('\u{fe0f}') == "↩"
}

/// `body` without the reply fallback some clients still put in front of a reply: the
/// leading `> ` lines and the blank line after them.
pub fn strip_reply_fallback(body: &str) -> &str {
    if !body.starts_with("> ") {
        return body;
    }
    let mut rest = body;
    while rest.starts_with('>') {
        match rest.find('\n') {
            Some(end) => rest = &rest[end + 1..],
            None => return body,
        }
    }
    rest.strip_prefix('\n').unwrap_or(rest)
}

/// `matrix:@ada:example.org`: who acted, for the core's records.
pub fn who(sender: &str) -> String {
    format!("matrix:{sender}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[derive(Default)]
    struct Fake {
        cards: HashMap<String, (AskRef, bool, String)>,
        threads: HashMap<String, String>,
        about: HashMap<String, String>,
        undo: HashMap<String, AskRef>,
    }

    impl Known for Fake {
        fn card(&self, event_id: &str) -> Option<(AskRef, bool)> {
            self.cards
                .get(event_id)
                .map(|(a, done, _)| (a.clone(), *done))
        }
        fn open_card_in_thread(&self, root: &str) -> Option<AskRef> {
            self.cards
                .values()
                .filter(|(_, done, r)| !done && r == root)
                .map(|(a, _, _)| a.clone())
                .max()
        }
        fn session_of_thread(&self, root: &str) -> Option<String> {
            self.threads.get(root).cloned()
        }
        fn about(&self, event_id: &str) -> Option<String> {
            self.about.get(event_id).cloned()
        }
        fn undo_offer(&self, event_id: &str) -> Option<AskRef> {
            self.undo.get(event_id).cloned()
        }
        fn peek(&self, event_id: &str) -> Option<String> {
            (event_id == "$peek").then(|| "gpu:s1".to_string())
        }
    }

    const ME: &str = "@bot:hs";
    const ROOM: &str = "!room:hs";

    fn allow() -> Allowlist<String> {
        Allowlist::new(["@ada:hs".to_string()], [ROOM.to_string()]).chat_noun("room")
    }

    fn text(sender: &str, body: &str, root: Option<&str>, reply: Option<&str>) -> Incoming {
        Incoming {
            room: ROOM.into(),
            sender: sender.into(),
            kind: IncomingKind::Text {
                body: body.into(),
                thread_root: root.map(Into::into),
                reply_to: reply.map(Into::into),
                is_edit: false,
            },
        }
    }

    fn known() -> Fake {
        let mut k = Fake::default();
        k.threads.insert("$root".into(), "s1".into());
        k.cards.insert(
            "$card".into(),
            (AskRef::here(7.into()), false, "$root".into()),
        );
        k.about.insert("$report".into(), "s2".into());
        k
    }

    #[test]
    fn close_in_reply_to_a_workers_line_names_that_worker() {
        let mut k = known();
        k.about.insert("$line".into(), "#5".into());
        let close = |reply: Option<&str>, body: &str| {
            decide(&text("@ada:hs", body, None, reply), ME, &allow(), &k)
        };
        assert_eq!(
            close(Some("$line"), "!close"),
            Action::Command {
                command: ChatCommand::Close(Some("#5".into())),
                thread: None
            }
        );
        // Named, the name wins; a reply to a session's message names no worker.
        assert_eq!(
            close(Some("$line"), "!close scout-1"),
            Action::Command {
                command: ChatCommand::Close(Some("scout-1".into())),
                thread: None
            }
        );
        assert_eq!(
            close(Some("$report"), "!close"),
            Action::Command {
                command: ChatCommand::Close(None),
                thread: None
            }
        );
        // A plain reply to the line steers the worker.
        assert_eq!(
            close(Some("$line"), "look at the tests"),
            Action::Steer {
                session: "#5".into(),
                text: "look at the tests".into(),
                thread: None
            }
        );
    }

    #[test]
    fn own_events_are_ignored_and_strangers_refused() {
        let k = known();
        assert_eq!(
            decide(&text(ME, "hi", None, None), ME, &allow(), &k),
            Action::Ignore
        );
        let refused = decide(&text("@eve:hs", "!sessions", None, None), ME, &allow(), &k);
        assert!(matches!(refused, Action::Refuse { reason } if reason.contains("@eve:hs")));
        let mut other_room = text("@ada:hs", "!sessions", None, None);
        other_room.room = "!elsewhere:hs".into();
        let refused = decide(&other_room, ME, &allow(), &k);
        assert!(matches!(refused, Action::Refuse { reason } if reason.contains("!elsewhere:hs")));
    }

    #[test]
    fn commands_replies_and_thread_messages() {
        let mut k = known();
        assert_eq!(
            decide(
                &text("@ada:hs", "!asks", Some("$root"), None),
                ME,
                &allow(),
                &k
            ),
            Action::Command {
                command: ChatCommand::Asks,
                thread: Some("$root".into())
            }
        );
        // A plain message in a session's thread is typed text for it (the relay answers
        // its one open ask or steers).
        assert_eq!(
            decide(
                &text("@ada:hs", " 2 ", Some("$root"), None),
                ME,
                &allow(),
                &k
            ),
            Action::Typed {
                session: "s1".into(),
                text: "2".into(),
                thread: Some("$root".into())
            }
        );
        // In a thread of no session (a card that started its own), it answers the card.
        k.cards.insert(
            "$lone".into(),
            (AskRef::here(9.into()), false, "$lone".into()),
        );
        assert_eq!(
            decide(
                &text("@ada:hs", "yes", Some("$lone"), None),
                ME,
                &allow(),
                &k
            ),
            Action::Answer {
                ask: AskRef::here(9.into()),
                text: "yes".into(),
                thread: Some("$lone".into())
            }
        );
        // A reply to a card answers that card, even outside its thread.
        assert_eq!(
            decide(
                &text("@ada:hs", "yes", None, Some("$card")),
                ME,
                &allow(),
                &k
            ),
            Action::Answer {
                ask: AskRef::here(7.into()),
                text: "yes".into(),
                thread: None
            }
        );
        // Once answered, still typed text for the session.
        k.cards.insert(
            "$card".into(),
            (AskRef::here(7.into()), true, "$root".into()),
        );
        assert_eq!(
            decide(
                &text("@ada:hs", "go on", Some("$root"), None),
                ME,
                &allow(),
                &k
            ),
            Action::Typed {
                session: "s1".into(),
                text: "go on".into(),
                thread: Some("$root".into())
            }
        );
        // A reply to a report steers its session; anything else gets the help.
        assert_eq!(
            decide(
                &text("@ada:hs", "more", None, Some("$report")),
                ME,
                &allow(),
                &k
            ),
            Action::Steer {
                session: "s2".into(),
                text: "more".into(),
                thread: None
            }
        );
        assert_eq!(
            decide(&text("@ada:hs", "hello", None, None), ME, &allow(), &k),
            Action::Help { thread: None }
        );
    }

    #[test]
    fn a_reply_in_a_thread_to_a_line_about_another_session_steers_that_one() {
        let mut k = known();
        // `$line` (a `!staff` line about s2) was posted in s1's thread.
        k.about.insert("$line".into(), "s2".into());
        k.about.insert("$mine".into(), "s1".into());
        assert_eq!(
            decide(
                &text("@ada:hs", "go on", Some("$root"), Some("$line")),
                ME,
                &allow(),
                &k
            ),
            Action::Steer {
                session: "s2".into(),
                text: "go on".into(),
                thread: Some("$root".into()),
            }
        );
        // A reply to a message about the thread's own session is typed text, as before.
        assert_eq!(
            decide(
                &text("@ada:hs", "go on", Some("$root"), Some("$mine")),
                ME,
                &allow(),
                &k
            ),
            Action::Typed {
                session: "s1".into(),
                text: "go on".into(),
                thread: Some("$root".into()),
            }
        );
    }

    #[test]
    fn edits_and_reactions() {
        let k = known();
        let mut edit = text("@ada:hs", "2", Some("$root"), None);
        if let IncomingKind::Text { is_edit, .. } = &mut edit.kind {
            *is_edit = true;
        }
        assert_eq!(decide(&edit, ME, &allow(), &k), Action::Ignore);
        let reaction = |target: &str| Incoming {
            room: ROOM.into(),
            sender: "@ada:hs".into(),
            kind: IncomingKind::Reaction {
                target: target.into(),
                key: "2\u{fe0f}\u{20e3}".into(),
            },
        };
        assert_eq!(
            decide(&reaction("$card"), ME, &allow(), &k),
            Action::React {
                ask: AskRef::here(7.into()),
                key: "2\u{fe0f}\u{20e3}".into(),
                card: "$card".into()
            }
        );
        assert_eq!(
            decide(&reaction("$report"), ME, &allow(), &k),
            Action::Ignore
        );
        // 🔄 on a peek takes it again; another key on it does nothing.
        let refresh = |key: &str| Incoming {
            room: ROOM.into(),
            sender: "@ada:hs".into(),
            kind: IncomingKind::Reaction {
                target: "$peek".into(),
                key: key.into(),
            },
        };
        for key in ["🔄", "🔄\u{fe0f}", "🔃"] {
            assert_eq!(
                decide(&refresh(key), ME, &allow(), &k),
                Action::RefreshPeek {
                    target: "gpu:s1".into(),
                    event: "$peek".into()
                }
            );
        }
        assert_eq!(decide(&refresh("👍"), ME, &allow(), &k), Action::Ignore);
        let mut own = reaction("$card");
        own.sender = ME.into();
        assert_eq!(decide(&own, ME, &allow(), &k), Action::Ignore);
        // ↩️ on an "answered ask" message takes the answer back; other keys do nothing.
        let mut k = k;
        k.undo.insert("$said".into(), AskRef::here(7.into()));
        let mut undo = reaction("$said");
        if let IncomingKind::Reaction { key, .. } = &mut undo.kind {
            *key = "↩\u{fe0f}".into();
        }
        assert_eq!(
            decide(&undo, ME, &allow(), &k),
            Action::Undo {
                ask: AskRef::here(7.into()),
                offer: "$said".into()
            }
        );
        assert_eq!(decide(&reaction("$said"), ME, &allow(), &k), Action::Ignore);
    }

    #[test]
    fn reply_fallbacks_are_stripped() {
        assert_eq!(
            strip_reply_fallback("> <@bot:hs> ❓ question\n> more\n\nyes please"),
            "yes please"
        );
        assert_eq!(strip_reply_fallback("plain"), "plain");
        assert_eq!(strip_reply_fallback("> only a quote"), "> only a quote");
        assert_eq!(who("@ada:hs"), "matrix:@ada:hs");
    }
}
