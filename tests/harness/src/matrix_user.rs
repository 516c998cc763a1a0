//! A "human" Matrix client for tests: matrix-sdk with its own SQLite state and crypto
//! store in a temp dir (so encrypted rooms work), syncing in a background task. It creates
//! and joins rooms, sends text (optionally as a threaded reply), reacts, and reads the
//! room's timeline as the raw events it synced (decrypted where it could), folded into
//! [`Message`]s with their latest edit (`m.replace`) and reactions applied.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use matrix_sdk::config::SyncSettings;
use matrix_sdk::event_handler::RawEvent;
use matrix_sdk::ruma::api::client::room::create_room;
use matrix_sdk::ruma::events::AnySyncTimelineEvent;
use matrix_sdk::ruma::events::InitialStateEvent;
use matrix_sdk::ruma::events::room::encryption::RoomEncryptionEventContent;
use matrix_sdk::ruma::{OwnedEventId, OwnedRoomId, OwnedUserId, RoomId};
use matrix_sdk::{Client, Room};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

pub use matrix_sdk;

/// One synced timeline event: its room and its JSON (decrypted when it could be).
#[derive(Debug, Clone)]
pub struct SyncedEvent {
    pub room_id: String,
    pub event: Value,
}

#[derive(Default)]
struct Events {
    list: Mutex<Vec<SyncedEvent>>,
    changed: Notify,
}

/// A room message as a reader sees it now: latest edit applied, reactions gathered.
#[derive(Debug, Clone)]
pub struct Message {
    pub event_id: String,
    pub sender: String,
    /// The current content (the latest `m.new_content` if edited).
    pub content: Value,
    /// The original content's `m.relates_to` (threads and replies; edits keep it).
    pub relates_to: Value,
    /// How many edits (`m.replace` by the same sender) were applied.
    pub edits: usize,
    /// Reactions on this message: (sender, key).
    pub reactions: Vec<(String, String)>,
}

impl Message {
    /// `content.body`.
    pub fn body(&self) -> &str {
        self.content["body"].as_str().unwrap_or("")
    }

    /// `content.formatted_body` (HTML), if any.
    pub fn html(&self) -> Option<&str> {
        self.content["formatted_body"].as_str()
    }

    /// Body and HTML together, for "does it mention X" checks.
    pub fn text(&self) -> String {
        format!("{}\n{}", self.body(), self.html().unwrap_or(""))
    }

    /// The thread root this message belongs to (`rel_type: m.thread`), if any.
    pub fn thread_root(&self) -> Option<&str> {
        (self.relates_to["rel_type"] == "m.thread")
            .then(|| self.relates_to["event_id"].as_str())
            .flatten()
    }

    /// The event this message replies to (`m.in_reply_to`), if any.
    pub fn in_reply_to(&self) -> Option<&str> {
        self.relates_to["m.in_reply_to"]["event_id"].as_str()
    }

    /// Reaction keys `sender` put on this message.
    pub fn reaction_keys_by(&self, sender: &str) -> Vec<&str> {
        self.reactions
            .iter()
            .filter(|(s, _)| s == sender)
            .map(|(_, k)| k.as_str())
            .collect()
    }
}

/// A file to send: its `msgtype` (`m.image`, `m.file`, `m.audio`), name, type and bytes.
pub struct Media<'a> {
    pub msgtype: &'a str,
    pub name: &'a str,
    pub mime: &'a str,
    pub bytes: &'a [u8],
}

/// A logged-in Matrix user with a background sync.
pub struct MatrixUser {
    pub client: Client,
    user_id: String,
    events: Arc<Events>,
    sync_task: JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl MatrixUser {
    /// Log in as `localpart` with a password on `homeserver`, sync once, then keep
    /// syncing in the background.
    pub async fn login(homeserver: &str, localpart: &str, password: &str) -> Result<MatrixUser> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("mx-{localpart}"))
            .tempdir()?;
        let client = Client::builder()
            .homeserver_url(homeserver)
            .sqlite_store(dir.path(), None)
            .build()
            .await
            .context("building the matrix client")?;
        client
            .matrix_auth()
            .login_username(localpart, password)
            .initial_device_display_name(&format!("test human {localpart}"))
            .await
            .with_context(|| format!("logging in as {localpart}"))?;
        let user_id = client
            .user_id()
            .context("no user id after login")?
            .to_string();
        let events = Arc::new(Events::default());
        let sink = events.clone();
        client.add_event_handler(
            move |_ev: AnySyncTimelineEvent, room: Room, raw: RawEvent| {
                let sink = sink.clone();
                async move {
                    if let Ok(event) = serde_json::from_str::<Value>(raw.get()) {
                        sink.list.lock().unwrap().push(SyncedEvent {
                            room_id: room.room_id().to_string(),
                            event,
                        });
                        sink.changed.notify_waiters();
                    }
                }
            },
        );
        client
            .sync_once(SyncSettings::default())
            .await
            .context("first sync")?;
        let syncer = client.clone();
        let sync_task = tokio::spawn(async move {
            let settings = SyncSettings::default().timeout(Duration::from_millis(500));
            loop {
                if let Err(e) = syncer.sync(settings.clone()).await {
                    eprintln!("matrix test client sync error (retrying): {e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        });
        Ok(MatrixUser {
            client,
            user_id,
            events,
            sync_task,
            _dir: dir,
        })
    }

    /// `@localpart:server`.
    pub fn user_id(&self) -> &str {
        &self.user_id
    }

    /// This client's device id.
    pub fn device_id(&self) -> String {
        self.client
            .device_id()
            .map(|d| d.to_string())
            .unwrap_or_default()
    }

    /// The client's access token.
    pub fn access_token(&self) -> String {
        self.client.access_token().unwrap_or_default()
    }

    /// Create a private room (optionally encrypted) and invite `invite`; its id.
    pub async fn create_room(
        &self,
        name: &str,
        invite: &[&str],
        encrypted: bool,
    ) -> Result<String> {
        let mut req = create_room::v3::Request::new();
        req.name = Some(name.to_string());
        req.preset = Some(create_room::v3::RoomPreset::PrivateChat);
        req.invite = invite
            .iter()
            .map(|u| OwnedUserId::try_from(*u).map_err(|e| anyhow!("{u}: {e}")))
            .collect::<Result<_>>()?;
        if encrypted {
            req.initial_state = vec![
                InitialStateEvent::with_empty_state_key(
                    RoomEncryptionEventContent::with_recommended_defaults(),
                )
                .to_raw_any(),
            ];
        }
        let room = self
            .client
            .create_room(req)
            .await
            .context("creating a room")?;
        Ok(room.room_id().to_string())
    }

    /// Wait until this user is invited to a room (optionally a given one) and join it;
    /// the room id.
    pub async fn accept_invite(&self, room_id: Option<&str>, timeout: Duration) -> Result<String> {
        let deadline = tokio::time::Instant::now() + timeout;
        let room = loop {
            let invited = self
                .client
                .invited_rooms()
                .into_iter()
                .find(|r| room_id.is_none_or(|id| r.room_id().as_str() == id));
            if let Some(room) = invited {
                break room;
            }
            if tokio::time::Instant::now() > deadline {
                bail!("{} was not invited within {timeout:?}", self.user_id);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let id = room.room_id().to_owned();
        self.client
            .join_room_by_id(&id)
            .await
            .with_context(|| format!("joining {id}"))?;
        Ok(id.to_string())
    }

    /// Join a room by id.
    pub async fn join(&self, room_id: &str) -> Result<()> {
        let id = OwnedRoomId::try_from(room_id).map_err(|e| anyhow!("{room_id}: {e}"))?;
        self.client
            .join_room_by_id(&id)
            .await
            .with_context(|| format!("joining {room_id}"))?;
        Ok(())
    }

    /// Wait until `user_id` is a joined member of the room (as this client's sync sees it).
    pub async fn wait_for_member(
        &self,
        room_id: &str,
        user_id: &str,
        timeout: Duration,
    ) -> Result<()> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let joined = self.events(room_id).iter().any(|e| {
                e["type"] == "m.room.member"
                    && e["state_key"] == user_id
                    && e["content"]["membership"] == "join"
            });
            if joined {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                bail!("{user_id} did not join {room_id} within {timeout:?}");
            }
            self.wait_change(Duration::from_millis(200)).await;
        }
    }

    async fn room(&self, room_id: &str) -> Result<Room> {
        let id = <&RoomId>::try_from(room_id).map_err(|e| anyhow!("{room_id}: {e}"))?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(room) = self.client.get_room(id) {
                return Ok(room);
            }
            if tokio::time::Instant::now() > deadline {
                bail!("{} does not know room {room_id}", self.user_id);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Send any message-like event content; the event id.
    pub async fn send_event(
        &self,
        room_id: &str,
        event_type: &str,
        content: Value,
    ) -> Result<String> {
        let room = self.room(room_id).await?;
        let sent = room
            .send_raw(event_type, content)
            .await
            .with_context(|| format!("sending {event_type} to {room_id}"))?;
        Ok(sent.response.event_id.to_string())
    }

    /// Send a plain text message; the event id.
    pub async fn send_text(&self, room_id: &str, text: &str) -> Result<String> {
        self.send_event(
            room_id,
            "m.room.message",
            json!({"msgtype": "m.text", "body": text}),
        )
        .await
    }

    /// Send a text message in the thread rooted at `thread_root`, as a reply to
    /// `in_reply_to` (the root itself or a message in the thread); the event id.
    pub async fn send_thread_reply(
        &self,
        room_id: &str,
        thread_root: &str,
        in_reply_to: &str,
        text: &str,
    ) -> Result<String> {
        self.send_event(
            room_id,
            "m.room.message",
            json!({
                "msgtype": "m.text",
                "body": text,
                "m.relates_to": {
                    "rel_type": "m.thread",
                    "event_id": thread_root,
                    "is_falling_back": in_reply_to == thread_root,
                    "m.in_reply_to": {"event_id": in_reply_to},
                },
            }),
        )
        .await
    }

    /// Send a file (`msgtype`: `m.image`, `m.file` or `m.audio`) in the thread rooted at
    /// `thread_root`, as Element does in an encrypted room: its media encrypted and
    /// uploaded (`file`), the caption as `body` with the name as `filename`; the
    /// event id.
    pub async fn send_file_in_thread(
        &self,
        room_id: &str,
        thread_root: &str,
        media: Media<'_>,
        caption: Option<&str>,
    ) -> Result<String> {
        let Media {
            msgtype,
            name,
            mime,
            bytes,
        } = media;
        let room = self.room(room_id).await?;
        let mut content = json!({
            "msgtype": msgtype,
            "body": caption.unwrap_or(name),
            "filename": name,
            "info": {"mimetype": mime, "size": bytes.len()},
            "m.relates_to": {
                "rel_type": "m.thread",
                "event_id": thread_root,
                "is_falling_back": true,
                "m.in_reply_to": {"event_id": thread_root},
            },
        });
        // The bot's rooms are encrypted: the media is encrypted as Element encrypts it.
        anyhow::ensure!(
            room.latest_encryption_state().await?.is_encrypted(),
            "{room_id} is not encrypted; this helper sends encrypted media only"
        );
        let mut reader = std::io::Cursor::new(bytes.to_vec());
        let file = self
            .client
            .upload_encrypted_file(&mut reader)
            .await
            .context("uploading the encrypted file")?;
        content["file"] = serde_json::to_value(file)?;
        if msgtype == "m.audio" {
            content["org.matrix.msc3245.voice"] = json!({});
        }
        self.send_event(room_id, "m.room.message", content).await
    }

    /// Send a plain (non-threaded) reply to `in_reply_to`; the event id.
    pub async fn send_reply(&self, room_id: &str, in_reply_to: &str, text: &str) -> Result<String> {
        self.send_event(
            room_id,
            "m.room.message",
            json!({
                "msgtype": "m.text",
                "body": text,
                "m.relates_to": {"m.in_reply_to": {"event_id": in_reply_to}},
            }),
        )
        .await
    }

    /// React to `event_id` with `key` (e.g. "1️⃣"); the reaction's event id.
    pub async fn react(&self, room_id: &str, event_id: &str, key: &str) -> Result<String> {
        self.send_event(
            room_id,
            "m.reaction",
            json!({"m.relates_to": {"rel_type": "m.annotation", "event_id": event_id, "key": key}}),
        )
        .await
    }

    /// Every event synced in this room so far, oldest first.
    pub fn events(&self, room_id: &str) -> Vec<Value> {
        self.events
            .list
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.room_id == room_id)
            .map(|e| e.event.clone())
            .collect()
    }

    /// The room's messages (sent by anyone), oldest first, edits and reactions applied.
    pub fn messages(&self, room_id: &str) -> Vec<Message> {
        fold_messages(&self.events(room_id))
    }

    /// Events still encrypted (this client could not decrypt them when they synced).
    pub fn undecrypted(&self, room_id: &str) -> Vec<Value> {
        self.events(room_id)
            .into_iter()
            .filter(|e| e["type"] == "m.room.encrypted")
            .collect()
    }

    /// Wait until a message for which `pred` holds is in the room; that message.
    pub async fn wait_for_message(
        &self,
        room_id: &str,
        timeout: Duration,
        pred: impl Fn(&Message) -> bool,
    ) -> Result<Message> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut last_retry = tokio::time::Instant::now();
        loop {
            if let Some(m) = self.messages(room_id).into_iter().find(|m| pred(m)) {
                return Ok(m);
            }
            if tokio::time::Instant::now() > deadline {
                let seen: Vec<String> = self
                    .messages(room_id)
                    .iter()
                    .map(|m| {
                        format!(
                            "{} {}: {:?} (edits {}, reactions {:?})",
                            m.event_id,
                            m.sender,
                            m.body(),
                            m.edits,
                            m.reactions
                        )
                    })
                    .collect();
                bail!(
                    "no matching message in {room_id} within {timeout:?}; {} undecryptable events; messages seen:\n{}",
                    self.undecrypted(room_id).len(),
                    seen.join("\n")
                );
            }
            // Room keys can arrive after the event: retry decrypting now and then.
            if last_retry.elapsed() > Duration::from_millis(500) {
                last_retry = tokio::time::Instant::now();
                self.retry_decryption(room_id).await;
            }
            self.wait_change(Duration::from_millis(200)).await;
        }
    }

    /// Re-fetch events that are still encrypted and decrypt them if the keys are here now.
    pub async fn retry_decryption(&self, room_id: &str) {
        let pending = self.undecrypted(room_id);
        if pending.is_empty() {
            return;
        }
        let Ok(room) = self.room(room_id).await else {
            return;
        };
        for event in pending {
            let Some(id) = event["event_id"]
                .as_str()
                .and_then(|id| OwnedEventId::try_from(id).ok())
            else {
                continue;
            };
            let Ok(fetched) = room.event(&id, None).await else {
                continue;
            };
            let Ok(value) = serde_json::from_str::<Value>(fetched.raw().json().get()) else {
                continue;
            };
            if value["type"] != "m.room.encrypted" {
                let mut list = self.events.list.lock().unwrap();
                for e in list.iter_mut() {
                    if e.room_id == room_id && e.event["event_id"] == event["event_id"] {
                        e.event = value.clone();
                    }
                }
                drop(list);
                self.events.changed.notify_waiters();
            }
        }
    }

    async fn wait_change(&self, max: Duration) {
        let notified = self.events.changed.notified();
        let _ = tokio::time::timeout(max, notified).await;
    }
}

impl Drop for MatrixUser {
    fn drop(&mut self) {
        self.sync_task.abort();
    }
}

/// Fold raw timeline events into messages: `m.replace` edits (by the original sender)
/// replace the content, `m.annotation` reactions attach to their target unless redacted.
pub fn fold_messages(events: &[Value]) -> Vec<Message> {
    let mut messages: Vec<Message> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    // Redacted events (a reaction taken back) count as gone.
    let redacted: std::collections::HashSet<&str> = events
        .iter()
        .filter(|e| e["type"] == "m.room.redaction")
        .filter_map(|e| e["redacts"].as_str().or(e["content"]["redacts"].as_str()))
        .collect();
    for e in events {
        let Some(id) = e["event_id"].as_str() else {
            continue;
        };
        if !seen.insert(id.to_string()) {
            continue;
        }
        let rel = &e["content"]["m.relates_to"];
        let sender = e["sender"].as_str().unwrap_or("").to_string();
        match e["type"].as_str() {
            Some("m.room.message") if rel["rel_type"] == "m.replace" => {
                let target = rel["event_id"].as_str().unwrap_or("");
                if let Some(m) = messages
                    .iter_mut()
                    .find(|m| m.event_id == target && m.sender == sender)
                {
                    m.content = e["content"]["m.new_content"].clone();
                    m.edits += 1;
                }
            }
            Some("m.room.message") => messages.push(Message {
                event_id: id.to_string(),
                sender,
                content: e["content"].clone(),
                relates_to: rel.clone(),
                edits: 0,
                reactions: Vec::new(),
            }),
            Some("m.reaction") if rel["rel_type"] == "m.annotation" && !redacted.contains(id) => {
                let target = rel["event_id"].as_str().unwrap_or("");
                if let Some(m) = messages.iter_mut().find(|m| m.event_id == target) {
                    m.reactions
                        .push((sender, rel["key"].as_str().unwrap_or("").to_string()));
                }
            }
            _ => {}
        }
    }
    messages
}
