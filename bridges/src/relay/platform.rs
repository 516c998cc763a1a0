//! # What a phone platform does for the relay
//!
//! The few things that differ between Telegram and Matrix once the relay has decided what
//! to say and about which session: where a session's messages go (a forum topic, a
//! thread), how a message is posted (split, or a file), how an ask's card carries its
//! options (buttons, reactions), loses them while its session is gone and is closed once
//! answered, and what the platform
//! remembers about what it posted (which message is a card, which is about which session)
//! so that a reply can be read later. Everything else (which event means what, what is
//! said, which request goes to the core) is the relay's, written once.

use std::future::Future;

use crate::chat::approvals::ApprovalRef;
use crate::chat::workers::WorkerRef;
use shepherd_core::protocol::{Approval, Ask, AskRef, Peek, SessionInfo};

use crate::chat::render::{AskCard, Rendered};

/// One phone platform, as the relay uses it.
pub trait Platform: Send {
    /// Where a message is (or goes) within the bridge's chat: Telegram's topic (thread
    /// id), Matrix's thread (its root event). `None` wherever one is taken is the chat's
    /// main timeline.
    type Place: Clone + Send + Sync;

    /// The command character (`/` or `!`).
    const PREFIX: char;
    /// The platform's name, for logs.
    const NAME: &'static str;
    /// How a typed answer is taken back here (a button, a reaction), said after it.
    const UNDO_HINT: &'static str;
    /// How a held tool call is decided here, said on its card.
    const APPROVAL_HINT: &'static str;

    /// Whether the ask has a card here that still shows it open (a reopened ask's old
    /// cards show its former answer: it gets a new one).
    fn has_card(&self, ask: &AskRef) -> bool;

    /// The asks whose cards still show them open.
    fn open_cards(&self) -> Vec<AskRef>;

    /// The place of `session`'s messages (`info`: what the relay knows of it): Telegram
    /// creates its topic on first need; Matrix knows its thread once one was started.
    fn place_of(
        &mut self,
        session: &str,
        info: Option<&SessionInfo>,
    ) -> impl Future<Output = Option<Self::Place>> + Send;

    /// Post rendered content at `place`: split below the platform's limit, or as a `.md`
    /// file named after `what` when it would take more than a few messages. `about`: the
    /// session it is about, so that a reply to it steers that session (and Matrix starts
    /// that session's thread with it when it has none).
    fn post(
        &mut self,
        place: Option<Self::Place>,
        rendered: Rendered,
        about: Option<&str>,
        what: &str,
    ) -> impl Future<Output = ()> + Send;

    /// Post one short message at `place` about `session` (a reply to it steers that
    /// session), never starting a topic or thread: a line of the `/staff` tree.
    fn post_line(
        &mut self,
        place: Option<Self::Place>,
        line: Rendered,
        session: &str,
    ) -> impl Future<Output = ()> + Send;

    /// Post `/staff` at `place`: Telegram one message, the tree, with a `✍️ name` button
    /// per session (tapping one asks what to tell it); Matrix the head, then a line each
    /// about its session (a reply to it steers that session).
    fn post_staff(
        &mut self,
        place: Option<Self::Place>,
        head: Rendered,
        lines: Vec<super::commands::StaffLine>,
    ) -> impl Future<Output = ()> + Send;

    /// Post `head` at `place` with `choices` (label, target): Telegram as one message with a
    /// button each (tapping one asks what to do, as a `/staff` line's ✍️ does), Matrix as a
    /// line each about its target (a reply to it is about that target).
    fn post_choices(
        &mut self,
        place: Option<Self::Place>,
        head: Rendered,
        choices: Vec<(String, String)>,
    ) -> impl Future<Output = ()> + Send;

    /// Post one line of `/workers` at `place` about managed worker `worker` (remembered as
    /// about `#<id>`, `gpu#<id>` on a linked host, so a reply to it steers that worker), never starting a topic or
    /// thread; Telegram adds a `✖ close` button.
    fn post_worker_line(
        &mut self,
        place: Option<Self::Place>,
        line: Rendered,
        worker: &WorkerRef,
    ) -> impl Future<Output = ()> + Send;

    /// Post an open ask's card at `place` (the place of `home`, the session the ask is
    /// shown with) with its options as buttons or reactions, and remember it.
    fn post_card(
        &mut self,
        place: Option<Self::Place>,
        home: &str,
        ask: &Ask,
        card: AskCard,
    ) -> impl Future<Output = ()> + Send;

    /// Edit every card of an answered ask to show `answered` (and drop its buttons).
    fn close_cards(&mut self, ask: &Ask, answered: Rendered) -> impl Future<Output = ()> + Send;

    /// Post a pending approval's card at `place` with its decisions (Telegram's buttons,
    /// Matrix's reactions), and remember it: a reply to it denies with a reason.
    fn post_approval(
        &mut self,
        place: Option<Self::Place>,
        approval: &Approval,
        card: Rendered,
    ) -> impl Future<Output = ()> + Send;

    /// Edit every card of an approval that ended to show `ended` (and drop its buttons).
    fn close_approval(
        &mut self,
        approval: &Approval,
        ended: Rendered,
    ) -> impl Future<Output = ()> + Send;

    /// Post a session's peek at `place` with a way to refresh it in place (Telegram's
    /// button, Matrix's 🔄 reaction: [`crate::relay::Relay::refreshed_peek`]).
    fn post_peek(
        &mut self,
        place: Option<Self::Place>,
        peek: &Peek,
    ) -> impl Future<Output = ()> + Send;

    /// Post a file (`name`, its bytes) at `place`: a document, an `m.file`.
    fn post_file(
        &mut self,
        place: Option<Self::Place>,
        name: String,
        bytes: Vec<u8>,
    ) -> impl Future<Output = ()> + Send;

    /// A session ended and its last line is said: close its place (Telegram: its forum
    /// topic; Matrix: the thread stays, noted as ended).
    fn close_place(&mut self, session: &str) -> impl Future<Output = ()> + Send;

    /// A session is back: reopen its place if its ending closed it; true when it did.
    fn reopen_place(&mut self, session: &str) -> impl Future<Output = bool> + Send;

    /// The sessions whose place here is open (not closed since they last ended).
    fn open_places(&self) -> Vec<String>;

    /// What was last said here under `key` (kept across restarts), so that news already
    /// told is not told again: an assignment's state after a restart of the core.
    fn last_said(&self, key: &str) -> Option<String>;

    /// Remember `said` as what was last said here under `key`.
    fn set_last_said(&mut self, key: &str, said: &str);

    /// The approvals whose cards here still show them pending.
    fn open_approvals(&self) -> Vec<ApprovalRef>;

    /// Say at `place` that typed text answered ask `ask` of `session` (`said`), with the
    /// way to take it back ([`crate::relay::Relay::undo`]): a button, a reaction.
    fn offer_undo(
        &mut self,
        place: Option<Self::Place>,
        session: &str,
        ask: &AskRef,
        said: Rendered,
    ) -> impl Future<Output = ()> + Send;

    /// Edit every open card of `ask` to show `rendered`, with its options as buttons or
    /// reactions (`buttons`) or without them (its session is gone: a reply still answers
    /// it). The cards stay open: an answer closes them as usual.
    fn mark_cards(
        &mut self,
        ask: &Ask,
        rendered: Rendered,
        buttons: bool,
    ) -> impl Future<Output = ()> + Send;

    /// Whether `session` has yet to get its place here (a topic, a thread) that
    /// [`Platform::place_of`] or a post about it would create; false where the chat has
    /// no such places.
    fn needs_place(&self, session: &str) -> bool;

    /// Confirm a steer of `session`, written at `place`.
    fn steered(
        &mut self,
        place: Option<Self::Place>,
        session: &str,
        confirmation: Rendered,
    ) -> impl Future<Output = ()> + Send;

    /// Whether what is posted in `session`'s place shows at `place` (so the same news
    /// need not be said twice there).
    fn shows_in(&self, session: &str, place: Option<&Self::Place>) -> bool;

    /// The id of the last report posted in this chat from the core whose store is
    /// `store` (`None`: never posted from it).
    fn last_report(&self, store: &str) -> Option<u64>;

    /// Remember durably that reports up to `id` of `store` were posted in this chat.
    fn set_last_report(&mut self, store: &str, id: u64);

    /// The key of the place `session` was put in: its repository's (`project:app`, with
    /// `per_project` places), else its own id.
    fn place_key_of(&self, session: &str) -> String;

    /// A session's name or place changed (`old` is what was known before): Telegram
    /// renames its topic. Nothing by default.
    fn session_changed(
        &mut self,
        old: Option<&SessionInfo>,
        new: &SessionInfo,
    ) -> impl Future<Output = ()> + Send {
        let _ = (old, new);
        async {}
    }
}
