//! # matrix-sdk's events, as the bridge's
//!
//! The sync handlers registered after the first sync: room messages (decrypted already in
//! encrypted rooms), reactions and invites. Each is reduced to a [`MatrixEvent`] and sent
//! to the bridge's actor, which handles them one at a time; nothing is decided here.

use matrix_sdk::ruma::OwnedRoomId;
use matrix_sdk::ruma::events::reaction::OriginalSyncReactionEvent;
use matrix_sdk::ruma::events::room::member::{MembershipState, StrippedRoomMemberEvent};
use matrix_sdk::ruma::events::room::message::{
    MessageType, OriginalSyncRoomMessageEvent, Relation, RoomMessageEventContent,
};
use matrix_sdk::{Client, Room, RoomState};
use tokio::sync::mpsc;

use shepherd_core::protocol::FileKind;

use super::decide::{Incoming, IncomingKind, MatrixFile, strip_reply_fallback};

/// What the sync hands the actor.
#[derive(Debug)]
pub enum MatrixEvent {
    /// A message or reaction in a joined room.
    Incoming(Incoming),
    /// The bot was invited to `room` by `inviter`.
    Invite { room: OwnedRoomId, inviter: String },
}

/// Register the handlers; call only after the first sync.
pub fn register(client: &Client, tx: mpsc::Sender<MatrixEvent>) {
    let t = tx.clone();
    client.add_event_handler(move |ev: OriginalSyncRoomMessageEvent, room: Room| {
        let t = t.clone();
        async move {
            if room.state() != RoomState::Joined {
                return;
            }
            if let Some(kind) = message_kind(&ev.content) {
                let incoming = Incoming {
                    room: room.room_id().to_string(),
                    sender: ev.sender.to_string(),
                    kind,
                };
                let _ = t.send(MatrixEvent::Incoming(incoming)).await;
            }
        }
    });
    let t = tx.clone();
    client.add_event_handler(move |ev: OriginalSyncReactionEvent, room: Room| {
        let t = t.clone();
        async move {
            if room.state() != RoomState::Joined {
                return;
            }
            let incoming = Incoming {
                room: room.room_id().to_string(),
                sender: ev.sender.to_string(),
                kind: IncomingKind::Reaction {
                    target: ev.content.relates_to.event_id.to_string(),
                    key: ev.content.relates_to.key.clone(),
                },
            };
            let _ = t.send(MatrixEvent::Incoming(incoming)).await;
        }
    });
    client.add_event_handler(
        move |ev: StrippedRoomMemberEvent, room: Room, client: Client| {
            let t = tx.clone();
            async move {
                let me = client.user_id().map(ToOwned::to_owned);
                if ev.content.membership != MembershipState::Invite
                    || me.as_deref() != Some(&*ev.state_key)
                {
                    return;
                }
                let _ = t
                    .send(MatrixEvent::Invite {
                        room: room.room_id().to_owned(),
                        inviter: ev.sender.to_string(),
                    })
                    .await;
            }
        },
    );
}

/// A message's kind for the bridge: a text's body, or a file's media, with its relations;
/// `None` for other message types (locations, polls).
pub fn message_kind(content: &RoomMessageEventContent) -> Option<IncomingKind> {
    let (mut thread_root, mut reply_to, mut is_edit) = (None, None, false);
    match &content.relates_to {
        Some(Relation::Thread(t)) => {
            thread_root = Some(t.event_id.to_string());
            if !t.is_falling_back {
                reply_to = t.in_reply_to.as_ref().map(|r| r.event_id.to_string());
            }
        }
        Some(Relation::Reply(r)) => reply_to = Some(r.in_reply_to.event_id.to_string()),
        Some(Relation::Replacement(_)) => is_edit = true,
        _ => {}
    }
    let body = match &content.msgtype {
        MessageType::Text(t) => t.body.clone(),
        MessageType::Notice(n) => n.body.clone(),
        MessageType::Emote(e) => e.body.clone(),
        other => {
            let file = file_of(other)?;
            return (!is_edit).then_some(IncomingKind::File {
                file,
                thread_root,
                reply_to,
            });
        }
    };
    let body = if reply_to.is_some() {
        strip_reply_fallback(&body).to_string()
    } else {
        body
    };
    Some(IncomingKind::Text {
        body,
        thread_root,
        reply_to,
        is_edit,
    })
}

/// A media message's file: its source, name, type, size and caption.
macro_rules! media {
    ($m:expr, $kind:expr) => {{
        let info = $m.info.as_deref();
        MatrixFile {
            source: serde_json::to_string(&$m.source).ok()?,
            name: $m.filename().to_string(),
            mime: info.and_then(|i| i.mimetype.clone()),
            size: info.and_then(|i| i.size).map(u64::from),
            kind: $kind,
            caption: $m.caption().map(str::to_string),
        }
    }};
}

/// The media of an image, file, audio or video message.
fn file_of(msgtype: &MessageType) -> Option<MatrixFile> {
    let mut file = match msgtype {
        MessageType::Image(m) => media!(m, FileKind::Image),
        MessageType::File(m) => media!(m, FileKind::File),
        MessageType::Audio(m) => media!(m, FileKind::Voice),
        MessageType::Video(m) => media!(m, FileKind::File),
        _ => return None,
    };
    // A file whose type is an image is shown as one (the core checks its bytes).
    if matches!(msgtype, MessageType::File(_))
        && file
            .mime
            .as_deref()
            .is_some_and(|m| m.starts_with("image/"))
    {
        file.kind = FileKind::Image;
    }
    Some(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: serde_json::Value) -> Option<IncomingKind> {
        let content: RoomMessageEventContent = serde_json::from_value(json).unwrap();
        message_kind(&content)
    }

    #[test]
    fn thread_messages_replies_and_edits() {
        // Element's message in a thread: a fallback reply to the latest event.
        let k = parse(serde_json::json!({
            "msgtype": "m.text", "body": "2",
            "m.relates_to": {"rel_type": "m.thread", "event_id": "$root",
                "is_falling_back": true, "m.in_reply_to": {"event_id": "$latest"}}
        }));
        assert_eq!(
            k,
            Some(IncomingKind::Text {
                body: "2".into(),
                thread_root: Some("$root".into()),
                reply_to: None,
                is_edit: false
            })
        );
        // A genuine reply inside a thread.
        let k = parse(serde_json::json!({
            "msgtype": "m.text", "body": "yes",
            "m.relates_to": {"rel_type": "m.thread", "event_id": "$root",
                "m.in_reply_to": {"event_id": "$card"}}
        }));
        assert!(matches!(k, Some(IncomingKind::Text { reply_to: Some(r), .. }) if r == "$card"));
        // A plain reply with a fallback quote.
        let k = parse(serde_json::json!({
            "msgtype": "m.text", "body": "> <@bot:hs> question\n\nno",
            "m.relates_to": {"m.in_reply_to": {"event_id": "$card"}}
        }));
        assert!(
            matches!(k, Some(IncomingKind::Text { body, reply_to: Some(_), .. }) if body == "no")
        );
        // An edit.
        let k = parse(serde_json::json!({
            "msgtype": "m.text", "body": "* 3",
            "m.new_content": {"msgtype": "m.text", "body": "3"},
            "m.relates_to": {"rel_type": "m.replace", "event_id": "$mine"}
        }));
        assert!(matches!(k, Some(IncomingKind::Text { is_edit: true, .. })));
        // An image with a caption, in a thread: a file for the thread's session.
        let k = parse(serde_json::json!({
            "msgtype": "m.image", "body": "the login page", "filename": "cat.png",
            "url": "mxc://hs/abc", "info": {"mimetype": "image/png", "size": 70},
            "m.relates_to": {"rel_type": "m.thread", "event_id": "$root", "is_falling_back": true,
                             "m.in_reply_to": {"event_id": "$root"}}
        }));
        let Some(IncomingKind::File {
            file,
            thread_root,
            reply_to,
        }) = k
        else {
            panic!("not a file: {k:?}");
        };
        assert_eq!((thread_root.as_deref(), reply_to), (Some("$root"), None));
        assert_eq!(
            (file.name.as_str(), file.caption.as_deref()),
            ("cat.png", Some("the login page"))
        );
        assert_eq!(
            (file.mime.as_deref(), file.size, file.kind),
            (Some("image/png"), Some(70), FileKind::Image)
        );
        // A voice note without a caption; a location is nothing the bridge takes.
        let k = parse(serde_json::json!({
            "msgtype": "m.audio", "body": "voice.ogg", "url": "mxc://hs/v"
        }));
        assert!(
            matches!(k, Some(IncomingKind::File { file, .. }) if file.kind == FileKind::Voice && file.caption.is_none())
        );
        let k = parse(serde_json::json!({
            "msgtype": "m.location", "body": "here", "geo_uri": "geo:0,0"
        }));
        assert_eq!(k, None);
    }
}
