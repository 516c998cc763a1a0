//! # A session's inbox
//!
//! Files the human sends a session from the phone are saved under its directory in
//! `.shepherd/inbox/`, never over a file already there: a taken name gets `-2`, `-3`, …
//! before its extension, and the file is created with `O_EXCL` (a symlink planted at the
//! name is not followed). The name sent is reduced to a plain file name (no directories,
//! no leading dots, no control characters). `.shepherd/.gitignore` (`*`, written only when
//! there is none) keeps the inbox out of `git status`, diffs and integrations. An image is
//! recognised by its first bytes, not by the type the platform claimed.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use base64::Engine;

use crate::protocol::{DeliveredImage, FileKind};

/// A file saved in a session's inbox.
#[derive(Debug, Clone)]
pub struct Saved {
    pub path: PathBuf,
    pub bytes: u64,
    /// The image the model is to see, when it is one (by its first bytes).
    pub image: Option<DeliveredImage>,
    pub kind: FileKind,
    pub mime: Option<String>,
}

/// Decode `data` (base64) and save it as `name` in `cwd`'s inbox; at most `max` bytes.
pub fn save(
    cwd: &Path,
    name: &str,
    mime: Option<String>,
    kind: FileKind,
    data: &str,
    max: u64,
) -> Result<Saved, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("the file's data is not base64 ({e})"))?;
    if bytes.len() as u64 > max {
        return Err(too_large(bytes.len() as u64, max));
    }
    if !cwd.is_dir() {
        return Err(format!(
            "its directory {} is gone; nothing was saved",
            cwd.display()
        ));
    }
    let dir = cwd.join(".shepherd");
    let inbox = dir.join("inbox");
    std::fs::create_dir_all(&inbox).map_err(|e| format!("cannot make {}: {e}", inbox.display()))?;
    keep_out_of_git(&dir);
    let image = image_type(&bytes);
    let name = file_name(name, image.or(mime.as_deref()));
    let path = write_new(&inbox, &name, &bytes)
        .map_err(|e| format!("cannot save {}: {e}", inbox.join(&name).display()))?;
    let image = image
        .filter(|_| kind == FileKind::Image)
        .map(|mime| DeliveredImage {
            path: path.display().to_string(),
            mime: mime.to_string(),
        });
    Ok(Saved {
        path,
        bytes: bytes.len() as u64,
        image,
        kind,
        mime,
    })
}

/// The refusal of a file over the limit.
pub fn too_large(bytes: u64, max: u64) -> String {
    format!(
        "the file is {}; the most a session takes from the phone is {} (phone.max_file_mb)",
        size(bytes),
        size(max)
    )
}

/// What the session is told about a saved file; `text`: the caption or transcript.
pub fn steer_text(saved: &Saved, text: Option<&str>) -> String {
    let path = saved.path.display();
    let size = size(saved.bytes);
    let text = text.map(str::trim).filter(|t| !t.is_empty());
    let note = match (saved.kind, &saved.image, text) {
        (FileKind::Image, Some(_), _) => {
            format!("[An image from the human's phone, shown here; saved at {path} ({size}).]")
        }
        (FileKind::Voice, _, Some(_)) => format!(
            "[A voice note from the human's phone, transcribed above; the audio is at {path} ({size}).]"
        ),
        (FileKind::Voice, _, None) => format!(
            "[A voice note from the human's phone, not transcribed: the audio is at {path} ({size}).]"
        ),
        (FileKind::Image, None, _) => format!(
            "[A file sent as an image from the human's phone, but not a PNG, JPEG, GIF or WebP image, so it is not shown: saved at {path} ({size}).]"
        ),
        (FileKind::File, ..) => {
            let mime = saved
                .mime
                .as_deref()
                .map(|m| format!(", {m}"))
                .unwrap_or_default();
            format!("[A file from the human's phone: saved at {path} ({size}{mime}).]")
        }
    };
    match text {
        Some(text) => format!("{text}\n\n{note}"),
        None => note,
    }
}

/// A byte count as people read it.
pub fn size(bytes: u64) -> String {
    match bytes {
        b if b < 1024 => format!("{b} bytes"),
        b if b < 1024 * 1024 => format!("{:.1} KB", b as f64 / 1024.0),
        b => format!("{:.1} MB", b as f64 / (1024.0 * 1024.0)),
    }
}

/// The image type of `bytes` by their signature, when they are one a model takes.
pub fn image_type(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0x89, b'P', b'N', b'G', ..] => Some("image/png"),
        [0xFF, 0xD8, 0xFF, ..] => Some("image/jpeg"),
        [b'G', b'I', b'F', b'8', ..] => Some("image/gif"),
        [
            b'R',
            b'I',
            b'F',
            b'F',
            _,
            _,
            _,
            _,
            b'W',
            b'E',
            b'B',
            b'P',
            ..,
        ] => Some("image/webp"),
        _ => None,
    }
}

/// Write `.shepherd/.gitignore` (`*`) unless one is there: the inbox is not the project's.
fn keep_out_of_git(dir: &Path) {
    let ignore = dir.join(".gitignore");
    if let Ok(mut f) = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&ignore)
    {
        let _ = f.write_all(b"# shepherd's own files (the phone's inbox): not the project's\n*\n");
    }
}

/// A plain file name from what was sent: its last path component, without control
/// characters or leading dots, at most 100 characters (the extension kept); an extension
/// from `mime` when it has none.
pub fn file_name(sent: &str, mime: Option<&str>) -> String {
    let last = sent.rsplit(['/', '\\']).next().unwrap_or("");
    let clean: String = last
        .chars()
        .filter(|c| !c.is_control())
        .collect::<String>()
        .trim()
        .trim_start_matches('.')
        .to_string();
    let (stem, ext) = split_ext(&clean);
    let ext = ext
        .map(str::to_string)
        .or_else(|| extension_of(mime?).map(str::to_string));
    let stem: String = match stem.is_empty() {
        true => "file".to_string(),
        false => stem.chars().take(90).collect(),
    };
    match ext {
        Some(ext) => format!("{stem}.{}", ext.chars().take(9).collect::<String>()),
        None => stem,
    }
}

fn split_ext(name: &str) -> (&str, Option<&str>) {
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => (stem, Some(ext)),
        _ => (name, None),
    }
}

fn extension_of(mime: &str) -> Option<&'static str> {
    Some(match mime {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "audio/ogg" => "ogg",
        "audio/mpeg" => "mp3",
        "audio/mp4" => "m4a",
        "application/pdf" => "pdf",
        "text/plain" => "txt",
        _ => return None,
    })
}

/// Create `name` in `dir`, or the first free `stem-N.ext`, never opening an existing file.
fn write_new(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<PathBuf> {
    let (stem, ext) = split_ext(name);
    for n in 1..=1000 {
        let candidate = match (n, ext) {
            (1, _) => name.to_string(),
            (n, Some(ext)) => format!("{stem}-{n}.{ext}"),
            (n, None) => format!("{stem}-{n}"),
        };
        let path = dir.join(candidate);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&path);
        match file {
            Ok(mut f) => {
                f.write_all(bytes)?;
                f.sync_all()?;
                return Ok(path);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "1000 files named like {name} are there already"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn names_are_plain_and_never_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let first = save(
            dir.path(),
            "../../etc/notes.txt",
            None,
            FileKind::File,
            &b64(b"one"),
            10,
        )
        .unwrap();
        assert_eq!(first.path, dir.path().join(".shepherd/inbox/notes.txt"));
        let second = save(
            dir.path(),
            "notes.txt",
            None,
            FileKind::File,
            &b64(b"two"),
            10,
        )
        .unwrap();
        assert_eq!(second.path, dir.path().join(".shepherd/inbox/notes-2.txt"));
        assert_eq!(std::fs::read(&first.path).unwrap(), b"one");
        assert_eq!(std::fs::read(&second.path).unwrap(), b"two");
        let ignore = std::fs::read_to_string(dir.path().join(".shepherd/.gitignore")).unwrap();
        assert!(ignore.lines().any(|l| l == "*"), "{ignore}");
        assert_eq!(file_name(".bashrc", None), "bashrc");
        assert_eq!(file_name("", Some("image/jpeg")), "file.jpg");
        assert_eq!(file_name("a\u{7}b", None), "ab");
    }

    #[test]
    fn a_symlink_at_the_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "keep").unwrap();
        let inbox = dir.path().join("s/.shepherd/inbox");
        std::fs::create_dir_all(&inbox).unwrap();
        std::os::unix::fs::symlink(&outside, inbox.join("x.txt")).unwrap();
        let saved = save(
            &dir.path().join("s"),
            "x.txt",
            None,
            FileKind::File,
            &b64(b"new"),
            10,
        )
        .unwrap();
        assert_eq!(saved.path, inbox.join("x-2.txt"));
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
    }

    #[test]
    fn images_by_their_bytes_and_limits() {
        let dir = tempfile::tempdir().unwrap();
        let png = [0x89, b'P', b'N', b'G', 1, 2, 3];
        let saved = save(
            dir.path(),
            "shot",
            Some("image/png".into()),
            FileKind::Image,
            &b64(&png),
            100,
        )
        .unwrap();
        assert_eq!(saved.path.file_name().unwrap(), "shot.png");
        assert_eq!(saved.image.as_ref().unwrap().mime, "image/png");
        let fake = save(
            dir.path(),
            "x.png",
            None,
            FileKind::Image,
            &b64(b"text"),
            100,
        )
        .unwrap();
        assert!(fake.image.is_none());
        assert!(steer_text(&fake, None).contains("not shown"));
        let err = save(dir.path(), "big", None, FileKind::File, &b64(&[0; 11]), 10).unwrap_err();
        assert!(err.contains("phone.max_file_mb"), "{err}");
        let gone = save(
            &dir.path().join("gone"),
            "x",
            None,
            FileKind::File,
            &b64(b"x"),
            10,
        )
        .unwrap_err();
        assert!(gone.contains("is gone"), "{gone}");
    }
}
