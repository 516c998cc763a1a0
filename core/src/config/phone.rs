//! # The `[phone]` section
//!
//! What the phone may hand a session besides text: files up to `max_file_mb` (a photo
//! the model sees, a document saved in the session's `.shepherd/inbox/`), and voice notes
//! turned into text by the person's own speech-to-text command (`transcribe`, run by the
//! bridge with `{file}` replaced by the saved audio's path).

use serde::{Deserialize, Serialize};

/// The `[phone]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PhoneConfig {
    /// Largest file a session may be sent from the phone, in MB (1–100). Telegram's own
    /// Bot API hands bots files up to 20 MB.
    pub max_file_mb: u64,
    /// A speech-to-text command for voice notes, without a shell: `{file}` in an argument
    /// is replaced by the audio file's path, and what it prints is the text. Empty: voice
    /// notes are saved and the steer names the file.
    pub transcribe: Vec<String>,
    /// Seconds `transcribe` may run before it is stopped (and the file is named instead).
    pub transcribe_timeout_secs: u64,
}

impl Default for PhoneConfig {
    fn default() -> Self {
        PhoneConfig {
            max_file_mb: 20,
            transcribe: Vec::new(),
            transcribe_timeout_secs: 120,
        }
    }
}

/// The most `max_file_mb` may be: a file travels in one frame, in base64.
pub const MOST_FILE_MB: u64 = 100;

impl PhoneConfig {
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_mb.clamp(1, MOST_FILE_MB) * 1024 * 1024
    }

    /// The largest frame a `send_file` of the largest file takes: its base64 and room for
    /// the rest of the request.
    pub fn max_file_frame(&self) -> usize {
        (self.max_file_bytes() as usize).div_ceil(3) * 4 + 64 * 1024
    }

    /// What is wrong with the section: (key, what to do).
    pub fn problem(&self) -> Option<(&'static str, String)> {
        if !(1..=MOST_FILE_MB).contains(&self.max_file_mb) {
            return Some((
                "phone.max_file_mb",
                format!(
                    "{} is out of range: give 1 to {MOST_FILE_MB} (MB)",
                    self.max_file_mb
                ),
            ));
        }
        match self.transcribe.first() {
            None => None,
            Some(program) if program.trim().is_empty() => Some((
                "phone.transcribe",
                "the first element is the program to run; it is empty".to_string(),
            )),
            Some(_) if !self.transcribe.iter().any(|a| a.contains("{file}")) => Some((
                "phone.transcribe",
                "no argument holds `{file}`, where the audio file's path goes (for example [\"whisper-cli\", \"-f\", \"{file}\"])".to_string(),
            )),
            Some(_) => None,
        }
    }
}
