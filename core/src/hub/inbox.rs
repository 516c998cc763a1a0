//! Files from the phone (`send_file`): the session is found as `send` finds it, the file
//! is decoded and saved in its directory's `.shepherd/inbox/` on a blocking thread
//! ([`crate::inbox::save`]), and then, back on the hub, the steer that names it is mailed
//! like any other (a photo's carries the image for the model). The file is on disk before
//! the steer is stored, so a delivered steer never names a file that is not there. A
//! session on a linked host gets the file from that host's core (`host`).

use rusqlite::Connection;

use super::{Cx, HubError, HubResult, Out, State};
use crate::protocol::requests::SendFile;
use crate::protocol::{DeliveryKind, ErrorCode, SavedFile, ServerMsg};
use crate::store::messages::NewMessage;

impl State {
    pub(super) fn send_file(&mut self, cx: Cx, req: SendFile, db: &Connection) -> HubResult<()> {
        let max = self.facts.max_file_bytes;
        // Decoded, base64 is three bytes in four: refuse what is surely too large unread.
        let at_least = (req.data.trim().len() as u64 / 4)
            .saturating_mul(3)
            .saturating_sub(2);
        if at_least > max {
            return Err(HubError::new(
                ErrorCode::LimitExceeded,
                crate::inbox::too_large(at_least, max),
            )
            .with_details(serde_json::json!({ "limit": "phone.max_file_mb", "max": max })));
        }
        let from = self.human_sender(cx.conn, cx.kind, req.by.clone());
        let info = self.resolve_info(&req.to, db)?;
        let reply = (cx.conn, cx.id);
        let SendFile {
            name,
            mime,
            kind,
            data,
            text,
            steer,
            ..
        } = req;
        let cwd = std::path::PathBuf::from(&info.cwd);
        self.blocking_then(
            Some(reply),
            move || crate::inbox::save(&cwd, &name, mime, kind, &data, max),
            move |state, saved, db, out: &mut Out| {
                let saved = saved.map_err(|why| {
                    HubError::new(
                        ErrorCode::InvalidArgument,
                        format!("the file was not saved for {}: {why}", info.name),
                    )
                })?;
                let (message_id, connected) = match steer {
                    true => {
                        let text = crate::inbox::steer_text(&saved, text.as_deref());
                        let images: Vec<_> = saved.image.iter().cloned().collect();
                        let message = NewMessage {
                            images: &images,
                            ..NewMessage::plain(&info.id, DeliveryKind::Steer, &text, &from)
                        };
                        let mailed = state.mail(message, db, out)?;
                        (Some(mailed.id), mailed.connected)
                    }
                    false => (None, state.presence.live(&info.id).is_some()),
                };
                let file = Box::new(SavedFile {
                    session_id: info.id,
                    session_name: info.name,
                    path: saved.path.display().to_string(),
                    bytes: saved.bytes,
                    message_id,
                    connected,
                });
                out.send(reply.0, &ServerMsg::FileSent { id: reply.1, file });
                Ok(())
            },
        );
        Ok(())
    }
}
