//! A photo, document, voice note or audio file sent in a session's topic (or as a reply to
//! one of its messages): its size is checked against `[phone] max_file_mb` from what
//! Telegram says, then it is fetched (`getFile`, then the file download URL) and handed to
//! the relay ([`Relay::sent_file`]). A photo is its largest size; a document whose type is
//! an image is treated as one (the core checks its bytes).

use teloxide::net::Download;
use teloxide::prelude::Requester;
use teloxide::types::{FileId, Message};

use shepherd_core::protocol::FileKind;

use super::bridge::Telegram;
use crate::relay::Relay;
use crate::relay::files::Offered;

/// What a message carries that can be sent to a session.
pub(super) struct Media {
    file: FileId,
    /// What Telegram says it weighs.
    size: u64,
    name: String,
    mime: Option<String>,
    kind: FileKind,
}

/// The file `msg` carries, if it carries one.
pub(super) fn media_of(msg: &Message) -> Option<Media> {
    if let Some(photo) = msg
        .photo()
        .and_then(|sizes| sizes.iter().max_by_key(|p| p.width * p.height))
    {
        return Some(Media {
            file: photo.file.id.clone(),
            size: photo.file.size.into(),
            name: "photo.jpg".to_string(),
            mime: Some("image/jpeg".to_string()),
            kind: FileKind::Image,
        });
    }
    if let Some(doc) = msg.document() {
        let mime = doc.mime_type.as_ref().map(ToString::to_string);
        let image = mime.as_deref().is_some_and(|m| m.starts_with("image/"));
        return Some(Media {
            file: doc.file.id.clone(),
            size: doc.file.size.into(),
            name: doc.file_name.clone().unwrap_or_else(|| "file".to_string()),
            mime,
            kind: if image {
                FileKind::Image
            } else {
                FileKind::File
            },
        });
    }
    if let Some(voice) = msg.voice() {
        return Some(Media {
            file: voice.file.id.clone(),
            size: voice.file.size.into(),
            name: "voice.ogg".to_string(),
            mime: Some(
                voice
                    .mime_type
                    .as_ref()
                    .map_or("audio/ogg".to_string(), ToString::to_string),
            ),
            kind: FileKind::Voice,
        });
    }
    let audio = msg.audio()?;
    Some(Media {
        file: audio.file.id.clone(),
        size: audio.file.size.into(),
        name: audio
            .file_name
            .clone()
            .unwrap_or_else(|| "audio".to_string()),
        mime: audio.mime_type.as_ref().map(ToString::to_string),
        kind: FileKind::Voice,
    })
}

impl Relay<Telegram> {
    /// A file sent at `thread` about `session` (`None`: about no session).
    pub(super) async fn on_media(
        &mut self,
        msg: &Message,
        media: Media,
        session: Option<String>,
        by: &str,
        thread: Option<i32>,
    ) {
        let offered = Offered {
            name: media.name,
            mime: media.mime,
            kind: media.kind,
            caption: msg.caption().map(str::to_string),
            size: Some(media.size),
        };
        let fetch = download(self.platform.bot.clone(), media.file);
        self.offered_file(session, offered, fetch, by, thread).await;
    }
}

/// Fetch a file: `getFile` for its path, then its bytes.
async fn download(bot: teloxide::Bot, file: FileId) -> Result<Vec<u8>, String> {
    let file = bot.get_file(file).await.map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    bot.download_file(&file.path, &mut bytes)
        .await
        .map_err(|e| e.to_string())?;
    Ok(bytes)
}
