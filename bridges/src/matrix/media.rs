//! A file sent in a session's thread (`m.image`, `m.file`, `m.audio`, `m.video`; in an
//! encrypted room its media is decrypted by matrix-sdk): its size is checked against
//! `[phone] max_file_mb` from what the event says, then its media is fetched from the
//! homeserver and handed to the relay ([`Relay::sent_file`]).

use matrix_sdk::media::{MediaFormat, MediaRequestParameters};
use matrix_sdk::ruma::events::room::MediaSource;

use super::bridge::Matrix;
use super::decide::MatrixFile;
use crate::relay::Relay;
use crate::relay::files::Offered;

impl Relay<Matrix> {
    /// `file` sent at `thread` for `session` (`None`: sent where no session is).
    pub(super) async fn on_file(
        &mut self,
        session: Option<String>,
        file: MatrixFile,
        by: &str,
        thread: Option<String>,
    ) {
        let offered = Offered {
            name: file.name,
            mime: file.mime,
            kind: file.kind,
            caption: file.caption,
            size: file.size,
        };
        let fetch = download(self.platform.client.clone(), file.source);
        self.offered_file(session, offered, fetch, by, thread).await;
    }
}

/// Fetch (and decrypt, for an encrypted file) the media `source` (JSON) names.
async fn download(client: matrix_sdk::Client, source: String) -> Result<Vec<u8>, String> {
    let source: MediaSource = serde_json::from_str(&source).map_err(|e| e.to_string())?;
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
