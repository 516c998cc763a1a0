//! Files from the phone, on both phones, with a REAL Pi whose scripted model records what
//! it is shown. A photo sent in the session's topic or thread reaches the model as image
//! content (the request carries the very bytes, as a data URL) with its caption; a
//! document lands in the session's `.shepherd/inbox/` (a second of the same name beside
//! it, never over it) and the steer names its path; the inbox stays out of `git status`; a
//! file over `[phone] max_file_mb` is refused before it is fetched. Voice notes: on
//! Telegram without `[phone] transcribe` the steer names the saved audio; on Matrix
//! (encrypted media) a fake `transcribe` command's text steers the session and is shown
//! back, and a failing one is said with its stderr while the audio is still saved and named.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use base64::Engine;
use shepherd_harness::Core;
use shepherd_harness::fake_model::{FakeModel, ModelRequest, Reply};
use shepherd_harness::git_repo::{git, status};
use shepherd_harness::phone::{MatrixPhone, Phone, PhoneFile, TelegramPhone, UserFileKind};
use shepherd_harness::pi_process::{PiOptions, PiSession};
use shepherd_harness::synapse::skip_e2e;

const LONG: Duration = Duration::from_secs(60);

/// The start of a JPEG file, then bytes of this test's own.
const PHOTO: &[u8] = &[
    0xFF, 0xD8, 0xFF, 0xE0, 0, 16, b'J', b'F', b'I', b'F', 0, 7, 7, 7,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_telegram_a_photo_reaches_the_model_and_files_land_in_the_inbox() -> Result<()> {
    files_on(TelegramPhone::start().await?, false).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_matrix_encrypted_media_reaches_the_session_and_voice_is_transcribed() -> Result<()> {
    if skip_e2e() {
        return Ok(());
    }
    files_on(MatrixPhone::start().await?, true).await
}

/// The data URLs of the images in the newest user message of `r`.
fn images_in(r: &ModelRequest) -> Vec<String> {
    let Some(user) = r.messages().iter().rev().find(|m| m["role"] == "user") else {
        return Vec::new();
    };
    user["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["type"] == "image_url")
        .filter_map(|p| p["image_url"]["url"].as_str().map(str::to_string))
        .collect()
}

async fn files_on(mut phone: impl Phone, transcribe: bool) -> Result<()> {
    let tools = tempfile::tempdir()?;
    let script = tools.path().join("transcribe");
    std::fs::write(
        &script,
        "#!/bin/sh\n# A stand-in for a speech-to-text command: fails on audio that says FAIL.\n\
         test -s \"$1\" || { echo \"no audio at $1\" >&2; exit 3; }\n\
         if grep -q FAIL \"$1\"; then echo 'model ggml-base.bin not found' >&2; exit 2; fi\n\
         echo 'please also update the changelog'\n",
    )?;
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let command = format!("[\"{}\", \"{{file}}\"]", script.display());
    let mut env = vec![("SHEPHERD_PHONE__MAX_FILE_MB", "1")];
    if transcribe {
        env.push(("SHEPHERD_PHONE__TRANSCRIBE", command.as_str()));
    }
    let core = Core::start_for(&phone, &env).await?;
    phone.ready().await?;
    let model = FakeModel::start(|_| Reply::text("Noted.")).await?;
    let project = tempfile::tempdir()?;
    let cwd = project.path();
    git(cwd, &["init", "-q"])?;
    // The user's work in every state git knows: committed, staged, untracked, ignored.
    let work = [
        ("README", "committed\n"),
        ("staged.txt", "staged\n"),
        ("scratch.txt", "untracked\n"),
        (".env", "SECRET=1\n"),
        (".gitignore", ".env\n"),
    ];
    for (name, body) in work {
        std::fs::write(cwd.join(name), body)?;
    }
    git(cwd, &["add", "README", ".gitignore"])?;
    git(cwd, &["commit", "-q", "-m", "init"])?;
    git(cwd, &["add", "staged.txt"])?;
    let status_before = status(cwd)?;
    let mut opts = PiOptions::new(core.agent_dir());
    opts.name = Some("viewer".into());
    opts.cwd = cwd.to_path_buf();
    let mut pi = PiSession::spawn(&model, opts).await?;
    core.connected_session("viewer", LONG).await?;
    let place = phone.place_of("viewer").await?;
    let inbox = cwd.join(".shepherd/inbox");

    // A photo with a caption: the model sees the image and reads the caption.
    phone
        .send_file(
            &place,
            file(
                UserFileKind::Photo,
                "photo.jpg",
                "image/jpeg",
                PHOTO,
                "why is the login button grey?",
            ),
        )
        .await?;
    let said = phone
        .bot_says(|m| m.text.starts_with("🖼 image for viewer: saved as "))
        .await
        .with_context(|| core.log())?;
    assert_eq!(phone.thread_of(&said), place, "said in the session's place");
    let url = format!(
        "data:image/jpeg;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(PHOTO)
    );
    let seen = shepherd_harness::eventually(LONG, "the model to be shown the photo", || {
        model
            .requests()
            .into_iter()
            .find(|r| images_in(r).contains(&url))
    })
    .await
    .with_context(|| core.log())?;
    let text = seen.last_user_text();
    assert!(text.contains("why is the login button grey?"), "{text}");
    assert!(text.contains(&inbox.display().to_string()), "{text}");
    let saved = std::fs::read_dir(&inbox)?.count();
    assert_eq!(saved, 1, "the photo is saved in the inbox");
    pi.wait_settled(LONG).await?;

    // A document lands in the inbox; one of the same name goes beside it.
    for (n, body) in [(1, "first notes\n"), (2, "second notes\n")] {
        phone
            .send_file(
                &place,
                file(
                    UserFileKind::Document,
                    "notes.txt",
                    "text/plain",
                    body.as_bytes(),
                    "",
                ),
            )
            .await?;
        let name = if n == 1 { "notes.txt" } else { "notes-2.txt" };
        let path = inbox.join(name);
        phone
            .bot_says(|m| {
                m.text.starts_with("📎 file for viewer: saved as ")
                    && m.text.contains(&path.display().to_string())
            })
            .await
            .with_context(|| core.log())?;
        assert_eq!(std::fs::read_to_string(&path)?, body);
        steered_with(&model, &path.display().to_string()).await?;
        pi.wait_settled(LONG).await?;
    }
    assert_eq!(
        std::fs::read_to_string(inbox.join("notes.txt"))?,
        "first notes\n",
        "never overwritten"
    );
    // The inbox is not the project's (git sees nothing new: `.shepherd/` ignores itself),
    // and every byte of the user's work, ignored `.env` included, is as it was.
    assert_eq!(
        status(cwd)?,
        status_before,
        "the inbox is not the project's"
    );
    for (name, body) in work {
        assert_eq!(std::fs::read_to_string(cwd.join(name))?, body, "{name}");
    }

    // Over `[phone] max_file_mb`: refused before it is fetched, nothing saved.
    let big = vec![b'x'; 1536 * 1024];
    phone
        .send_file(
            &place,
            file(UserFileKind::Document, "big.log", "text/plain", &big, ""),
        )
        .await?;
    let refused = phone
        .bot_says(|m| m.text.starts_with("Not sent: the file is 1.5 MB"))
        .await?;
    assert!(
        refused.text.contains("phone.max_file_mb"),
        "{}",
        refused.text
    );
    assert!(!inbox.join("big.log").exists());

    // A voice note.
    phone.send_file(&place, voice(b"OggS voice")).await?;
    if transcribe {
        phone
            .bot_says(|m| m.text == "🎙 “please also update the changelog”")
            .await
            .with_context(|| core.log())?;
        let text = steered_with(&model, "please also update the changelog").await?;
        assert!(
            text.contains("voice note") && text.contains(&inbox.display().to_string()),
            "{text}"
        );
        pi.wait_settled(LONG).await?;
        // A failing command: said with its stderr; the audio is saved and named.
        phone.send_file(&place, voice(b"OggS FAIL")).await?;
        let failed = phone
            .bot_says(|m| m.text.starts_with("🎙 Not transcribed:"))
            .await?;
        assert!(
            failed.text.contains("model ggml-base.bin not found"),
            "{}",
            failed.text
        );
        let text = steered_with(&model, "not transcribed").await?;
        assert!(inbox_file_named_in(&inbox, &text), "{text}");
    } else {
        phone
            .bot_says(|m| m.text.starts_with("🎙 voice note for viewer: saved as "))
            .await
            .with_context(|| core.log())?;
        let text = steered_with(&model, "not transcribed").await?;
        assert!(inbox_file_named_in(&inbox, &text), "{text}");
    }
    pi.wait_settled(LONG).await?;
    pi.shutdown().await?;
    Ok(())
}

/// A voice note of `bytes`.
fn voice(bytes: &[u8]) -> PhoneFile {
    file(UserFileKind::Voice, "voice.ogg", "audio/ogg", bytes, "")
}

fn file(kind: UserFileKind, name: &str, mime: &str, bytes: &[u8], caption: &str) -> PhoneFile {
    PhoneFile {
        kind,
        name: name.to_string(),
        mime: mime.to_string(),
        bytes: bytes.to_vec(),
        caption: caption.to_string(),
    }
}

/// The text of the first steer the model was shown that holds `needle`.
async fn steered_with(model: &FakeModel, needle: &str) -> Result<String> {
    shepherd_harness::eventually(LONG, &format!("a steer with {needle:?}"), || {
        model
            .requests()
            .iter()
            .map(ModelRequest::last_user_text)
            .find(|t| t.contains(needle) && t.contains("Steer from"))
    })
    .await
}

/// Whether `text` names a file that is in `inbox`.
fn inbox_file_named_in(inbox: &Path, text: &str) -> bool {
    std::fs::read_dir(inbox)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| text.contains(&e.path().display().to_string()))
}
