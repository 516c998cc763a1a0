//! # Files from the phone
//!
//! A photo, a document or a voice note sent in a session's place (or as a reply to one of
//! its messages), downloaded by the platform ([`Upload`]), goes to the core's `send_file`:
//! saved in the session's `.shepherd/inbox/`, and a steer names it (a photo's steer carries
//! it as an image the model sees, its caption as the text). What the platform said a file
//! weighs is checked against `[phone] max_file_mb` before it is downloaded
//! ([`Relay::too_large`]).
//!
//! A voice note with `[phone] transcribe` set is turned into text by that command first
//! (run on a copy in the bridge's state directory, without a shell, stopped after
//! `transcribe_timeout_secs`): the audio is saved without a steer, the transcript is shown
//! back, and then it goes where typed text goes ([`Relay::typed`]: the answer of the one
//! open ask there, else a steer), naming the saved audio. A failing command is said once,
//! with its stderr, and the audio is saved and named in the steer. Without the setting the
//! steer names the audio file.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use shepherd_core::config::PhoneConfig;
use shepherd_core::protocol::{FileKind, SavedFile};

use super::{Platform, Relay, on_host};
use crate::chat::render::Rendered;
use crate::chat::replies::plain;
use crate::chat::workers;

/// A file the human sent, as downloaded from the platform.
#[derive(Debug, Clone)]
pub struct Upload {
    /// Its name as sent (a photo has none: the platform's own or `photo.jpg`).
    pub name: String,
    pub mime: Option<String>,
    pub kind: FileKind,
    pub bytes: Vec<u8>,
    /// What the human wrote with it.
    pub caption: Option<String>,
}

/// A file the human sent, as the platform describes it before it is fetched.
#[derive(Debug, Clone)]
pub struct Offered {
    pub name: String,
    pub mime: Option<String>,
    pub kind: FileKind,
    pub caption: Option<String>,
    /// What the platform says it weighs, when it says.
    pub size: Option<u64>,
}

impl<P: Platform> Relay<P> {
    /// A file offered at `place` for `session` (`None`: sent where no session is): refused
    /// when the platform says it is too large, else fetched with `fetch` and sent.
    pub async fn offered_file(
        &mut self,
        session: Option<String>,
        offered: Offered,
        fetch: impl Future<Output = Result<Vec<u8>, String>> + Send,
        by: &str,
        place: Option<P::Place>,
    ) {
        let Some(session) = session else {
            let said = "To hand a file to a session, send it in the session's topic or thread, or as a reply to one of its messages.";
            self.say(place, plain(said.to_string())).await;
            return;
        };
        if let Some(refusal) = offered.size.and_then(|size| self.too_large(size)) {
            self.say(place, refusal).await;
            return;
        }
        let bytes = match fetch.await {
            Ok(bytes) => bytes,
            Err(why) => {
                let said = format!(
                    "Not sent: the file could not be fetched from {} ({why}); send it again.",
                    P::NAME
                );
                self.say(place, plain(said)).await;
                return;
            }
        };
        let Offered {
            name,
            mime,
            kind,
            caption,
            ..
        } = offered;
        let upload = Upload {
            name,
            mime,
            kind,
            bytes,
            caption,
        };
        self.sent_file(&session, upload, by, place).await;
    }

    /// The refusal of a file the platform says weighs `bytes`, when that is over the limit.
    pub fn too_large(&self, bytes: u64) -> Option<Rendered> {
        let max = self.phone.max_file_bytes();
        (bytes > max).then(|| {
            plain(format!(
                "Not sent: {}. Send a smaller file, or raise [phone] max_file_mb.",
                shepherd_core::inbox::too_large(bytes, max)
            ))
        })
    }

    /// `upload` sent by `by` at `place`, the place of `session`.
    pub async fn sent_file(
        &mut self,
        session: &str,
        upload: Upload,
        by: &str,
        place: Option<P::Place>,
    ) {
        let session = match self.here_session(session) {
            Ok(session) => session,
            Err(which) => return self.say(place, which).await,
        };
        let session = session.as_str();
        if workers::worker_ref(session).is_some() {
            let said = "Not sent: a file goes to a session, not to a managed worker; send it in its owner's topic.";
            self.say(place, plain(said.to_string())).await;
            return;
        }
        if let Some(refusal) = self.too_large(upload.bytes.len() as u64) {
            self.say(place, refusal).await;
            return;
        }
        let known = self.sessions.get(session).and_then(|s| s.host.as_deref());
        let (host, to) = on_host(session, known);
        let (host, to) = (host.map(str::to_string), to.to_string());
        let transcript = match upload.kind {
            FileKind::Voice if !self.phone.transcribe.is_empty() => {
                let spool = self.audit_log.with_file_name("voice");
                match transcribe(&self.phone, &spool, &upload).await {
                    Ok(text) => Some(text),
                    Err(why) => {
                        let said = format!(
                            "🎙 Not transcribed: {why}. The audio is saved and the steer names it."
                        );
                        self.say(place.clone(), plain(said)).await;
                        None
                    }
                }
            }
            _ => None,
        };
        let steer = transcript.is_none();
        let caption = upload.caption.as_deref();
        let sent = self
            .core
            .send_file(&to, host.as_deref(), &upload, caption, steer, by)
            .await;
        let saved = match sent {
            Ok(saved) => saved,
            Err(e) => {
                let said = format!("Not sent: {e}");
                self.say(place, plain(said)).await;
                return;
            }
        };
        match transcript {
            Some(text) => {
                let shown = format!("🎙 “{text}”");
                self.say(place.clone(), plain(shown)).await;
                let with_file = format!(
                    "{text}\n\n[A voice note from the human's phone, transcribed; the audio is at {}.]",
                    saved.path
                );
                self.typed(session, &with_file, by, place).await;
            }
            None => {
                let said = plain(confirmation(&upload, &saved));
                self.platform.steered(place, &saved.session_id, said).await;
            }
        }
    }
}

/// What the human is told once the core has the file.
fn confirmation(upload: &Upload, saved: &SavedFile) -> String {
    let how = match saved.connected {
        true => "delivered",
        false => "queued until it reconnects",
    };
    let what = match upload.kind {
        FileKind::Image => "🖼 image",
        FileKind::Voice => "🎙 voice note",
        FileKind::File => "📎 file",
    };
    format!(
        "{what} for {}: saved as {} ({}), {how}",
        saved.session_name,
        saved.path,
        shepherd_core::inbox::size(saved.bytes)
    )
}

/// Run `[phone] transcribe` on a copy of the voice note in `spool`; its output's text.
async fn transcribe(phone: &PhoneConfig, spool: &Path, upload: &Upload) -> Result<String, String> {
    let program = phone.transcribe.first().cloned().unwrap_or_default();
    std::fs::create_dir_all(spool).map_err(|e| format!("cannot make {}: {e}", spool.display()))?;
    let file = spool_file(spool, upload);
    std::fs::write(&file, &upload.bytes)
        .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    let path = file.display().to_string();
    let args: Vec<String> = phone.transcribe[1..]
        .iter()
        .map(|a| a.replace("{file}", &path))
        .collect();
    let ran = tokio::process::Command::new(&program)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let outcome = match ran {
        Err(e) => Err(format!("cannot run `{program}` ([phone] transcribe): {e}")),
        Ok(child) => {
            let limit = Duration::from_secs(phone.transcribe_timeout_secs.max(1));
            match tokio::time::timeout(limit, child.wait_with_output()).await {
                Err(_) => Err(format!(
                    "`{program}` ran longer than {} s (phone.transcribe_timeout_secs) and was stopped",
                    limit.as_secs()
                )),
                Ok(Err(e)) => Err(format!("`{program}` failed: {e}")),
                Ok(Ok(out)) => read_output(&program, out),
            }
        }
    };
    let _ = std::fs::remove_file(&file);
    outcome
}

fn read_output(program: &str, out: std::process::Output) -> Result<String, String> {
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stderr = stderr.trim();
        let tail: String = stderr
            .chars()
            .rev()
            .take(500)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        return Err(format!("`{program}` failed ({}): {tail}", out.status));
    }
    match text.is_empty() {
        true => Err(format!("`{program}` printed no text")),
        false => Ok(text),
    }
}

/// A new file in `spool` for the voice note, keeping its extension.
fn spool_file(spool: &Path, upload: &Upload) -> PathBuf {
    let name = shepherd_core::inbox::file_name(&upload.name, upload.mime.as_deref());
    let stamp = shepherd_core::clock::now_ms();
    spool.join(format!("{stamp}-{name}"))
}
