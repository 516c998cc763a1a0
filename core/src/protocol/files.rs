//! Files from the phone on the wire (`send_file` → `file_sent`): a photo, a document or a
//! voice note the human sent in a session's place, its bytes in base64. The core saves it
//! under the session's directory in `.shepherd/inbox/` (never over a file already there)
//! and, unless told not to, steers the session: the steer names the saved file, and a
//! photo's steer carries it as an image the model sees ([`DeliveredImage`]).

use serde::{Deserialize, Serialize};

use super::{MessageId, SessionId};

/// What kind of file the human sent: it decides what the session is told.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// A photo or an image file: the model sees it (PNG, JPEG, GIF or WebP).
    Image,
    /// Any other file: the steer names where it was saved.
    #[default]
    File,
    /// A voice note or audio file: saved like a file; the steer carries its transcript when
    /// the bridge made one (`[phone] transcribe`).
    Voice,
}

/// An image a delivery carries: the file it was saved to, read by the extension when it
/// hands the delivery to the model.
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveredImage {
    /// Absolute path of the saved image.
    pub path: String,
    /// Its type: `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime: String,
}

/// A file the core saved for a session (`file_sent`).
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedFile {
    pub session_id: SessionId,
    pub session_name: String,
    /// Absolute path it was saved to (a new name when the one sent was taken).
    pub path: String,
    pub bytes: u64,
    /// The steer that names it; absent when the request asked for none (`steer: false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<MessageId>,
    /// Whether the session was connected (the steer delivered now, else on its return).
    pub connected: bool,
}
