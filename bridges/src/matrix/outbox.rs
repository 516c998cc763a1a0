//! # Matrix's outbox
//!
//! Matrix's [`Courier`] for the bridge's [`Outbox`]: the events the bridge sends to its
//! room (a message, an edit, a reaction, a file) go through one actor, in the order they
//! were queued, at most [`PER_ROOM_PER_SECOND`] a second; a newer edit of an event
//! replaces one still queued. Each is sent by [`send`], which waits out
//! `M_LIMIT_EXCEEDED` for its `retry_after` and retries network errors, so the bridge's
//! actor goes on reading the room and the core meanwhile; it waits only for the ids it
//! needs (a message it threads or remembers), never for an edit or a reaction.

use std::time::Duration;

use matrix_sdk::Room;
use matrix_sdk::ruma::OwnedEventId;
use tokio_util::sync::CancellationToken;

use super::send::{self, InThread};
use crate::outbox::{Courier, Outbox, Window};

/// The most events the bridge sends to its room in a second.
pub const PER_ROOM_PER_SECOND: u32 = 10;

/// The bridge's outbox to its room.
pub type MatrixOutbox = Outbox<MatrixCourier>;

/// What to send; the result is the new event's id.
#[derive(Debug)]
pub enum MatrixOp {
    /// One chunk of HTML (`plain` its `body`), in a thread or the main timeline.
    Message {
        html: String,
        plain: String,
        thread: Option<InThread>,
    },
    /// Replace an event's content (`m.replace`).
    Edit {
        event: OwnedEventId,
        html: String,
        plain: String,
    },
    /// React to an event with `key`.
    React { event: OwnedEventId, key: String },
    /// Take back the reactions `me` (the bot) put on an event.
    Unreact { event: OwnedEventId, me: String },
    /// A Markdown file, captioned, in a thread (by its root) or the main timeline.
    File {
        file_name: String,
        bytes: Vec<u8>,
        caption: String,
        thread_root: Option<OwnedEventId>,
    },
}

/// Sends to one room.
pub struct MatrixCourier {
    pub room: Room,
    pub shutdown: CancellationToken,
}

/// Start the outbox actor for `room`.
pub fn spawn(room: Room, shutdown: CancellationToken) -> MatrixOutbox {
    let courier = MatrixCourier {
        room,
        shutdown: shutdown.clone(),
    };
    Outbox::spawn(courier, shutdown)
}

impl Courier for MatrixCourier {
    type Op = MatrixOp;
    /// One room.
    type Chat = ();
    type Sent = OwnedEventId;
    const NAME: &'static str = "matrix";

    fn chat(_: &MatrixOp) {}

    fn replaces(new: &MatrixOp, old: &MatrixOp) -> bool {
        matches!(
            (new, old),
            (MatrixOp::Edit { event, .. }, MatrixOp::Edit { event: e, .. }) if event == e
        )
    }

    fn global(&self) -> Vec<Window> {
        Vec::new()
    }

    fn per_chat(&self, _: &()) -> Vec<Window> {
        vec![Window {
            max: PER_ROOM_PER_SECOND,
            span: Duration::from_secs(1),
        }]
    }

    async fn deliver(&mut self, op: &MatrixOp) -> Result<OwnedEventId, String> {
        let (room, shutdown) = (&self.room, &self.shutdown);
        let (what, result) = match op {
            MatrixOp::Message {
                html,
                plain,
                thread,
            } => (
                "message",
                send::message(room, shutdown, html, plain, thread.as_ref()).await,
            ),
            MatrixOp::Edit { event, html, plain } => {
                ("edit", send::edit(room, shutdown, event, html, plain).await)
            }
            MatrixOp::React { event, key } => {
                ("reaction", send::react(room, shutdown, event, key).await)
            }
            MatrixOp::Unreact { event, me } => (
                "reaction removal",
                send::unreact(room, shutdown, event, me).await,
            ),
            MatrixOp::File {
                file_name,
                bytes,
                caption,
                thread_root,
            } => (
                "file",
                send::file(
                    room,
                    shutdown,
                    file_name,
                    bytes.clone(),
                    caption,
                    thread_root.as_deref(),
                )
                .await,
            ),
        };
        result.map_err(|e| {
            tracing::warn!(what, error = %e, "matrix: could not send");
            e.to_string()
        })
    }
}
