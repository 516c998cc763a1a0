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

use super::decide::{Incoming, IncomingKind, strip_reply_fallback};

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

/// A text message's body and relations; `None` for other message types (images, files).
pub fn message_kind(content: &RoomMessageEventContent) -> Option<IncomingKind> {
    let body = match &content.msgtype {
        MessageType::Text(t) => t.body.clone(),
        MessageType::Notice(n) => n.body.clone(),
        MessageType::Emote(e) => e.body.clone(),
        _ => return None,
    };
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
        // Not text.
        let k = parse(serde_json::json!({
            "msgtype": "m.image", "body": "cat.png", "url": "mxc://hs/abc"
        }));
        assert_eq!(k, None);
    }
}
