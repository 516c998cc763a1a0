//! A file sent in a session's thread (`m.image`, `m.file`, `m.audio`, `m.video`; in an
//! encrypted room its media is decrypted by matrix-sdk): its size is checked against
//! `[phone] max_file_mb` from what the event says, then its media is fetched from the
//! homeserver and handed to the relay ([`Relay::sent_file`]).

use matrix_sdk::media::{MediaFormat, MediaRequestParameters};
use matrix_sdk::ruma::events::room::MediaSource;

use super::bridge::Matrix;
use super::decide::MatrixFile;
use crate::chat::replies::plain;
use crate::relay::Relay;
use crate::relay::files::Upload;

impl Relay<Matrix> {
    /// `file` sent at `thread` for `session` (`None`: sent where no session is).
    pub(super) async fn on_file(
        &mut self,
        session: Option<String>,
        file: MatrixFile,
        by: &str,
        thread: Option<String>,
    ) {
        let Some(session) = session else {
            let said = "To hand a file to a session, send it in the session's thread, or as a reply to one of its messages.";
            self.say(thread, plain(said.to_string())).await;
            return;
        };
        if let Some(refusal) = file.size.and_then(|size| self.too_large(size)) {
            self.say(thread, refusal).await;
            return;
        }
        let bytes = match download(self.platform.client.clone(), &file.source).await {
            Ok(bytes) => bytes,
            Err(why) => {
                let said = format!(
                    "Not sent: the file could not be fetched from the homeserver ({why}); send it again."
                );
                self.say(thread, plain(said)).await;
                return;
            }
        };
        let upload = Upload {
            name: file.name,
            mime: file.mime,
            kind: file.kind,
            bytes,
            caption: file.caption,
        };
        self.sent_file(&session, upload, by, thread).await;
    }
}

/// Fetch (and decrypt, for an encrypted file) the media `source` (JSON) names.
async fn download(client: matrix_sdk::Client, source: &str) -> Result<Vec<u8>, String> {
    let source: MediaSource = serde_json::from_str(source).map_err(|e| e.to_string())?;
    let request = MediaRequestParameters {
        source,
        format: MediaFormat::File,
    };
    client
        .media()
        .get_media_content(&request, false)
        .await
        .map_err(|e| e.to_string())
}
