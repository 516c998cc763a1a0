//! # Pairing mode: a bot that nobody may use yet
//!
//! With a bot token but no `telegram.allowed_users`, the bridge serves nobody: no session's
//! asks, reports or steers go through it. It answers every private message with the
//! sender's numeric Telegram id and the two settings that allow it, so a first-time user
//! learns their id from the bot itself instead of a third-party bot or the log. In a group
//! (a forum, for one topic per session) only a command gets an answer, the same with that
//! group's chat id: other messages there are ignored. The update offset is kept like the
//! relay's, so a restart does not answer the same message twice.

use std::path::Path;

use teloxide::Bot;
use teloxide::payloads::SendMessageSetters;
use teloxide::prelude::Requester;
use teloxide::types::{ChatKind, Update, UpdateKind, User};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::store::BridgeStore;
use super::{TelegramError, poller};

/// What the bot says to `user`, who wrote to it in a private chat (`group`: `None`) or
/// sent a command in group `group`.
pub fn reply(user: &User, group: Option<i64>) -> String {
    let id = user.id.0;
    let (chat, here) = match group {
        None => (id as i64, "this chat".to_string()),
        Some(g) => (g, format!("this group (chat id {g})")),
    };
    let topics = match group {
        Some(_) => "\nWith topics turned on in the group, each session gets a topic of its own.\n",
        None => "",
    };
    format!(
        "👋 This shepherd bot has no allowed users yet, so it serves nobody.\n\
         Your Telegram user id is {id}.\n\n\
         To use shepherd from {here}, add to shepherd's config file \
         (`shepherd doctor` shows where):\n\n\
         [telegram]\n\
         allowed_users = [{id}]\n\
         chat_id = {chat}\n\n\
         (or set SHEPHERD_TELEGRAM__ALLOWED_USERS='[{id}]' and SHEPHERD_TELEGRAM__CHAT_ID={chat}), \
         then run `shepherd restart`.{topics}"
    )
}

/// Answer private messages with the sender's id until `shutdown`.
pub async fn run(
    bot: Bot,
    store: BridgeStore,
    db: &Path,
    shutdown: CancellationToken,
) -> Result<(), TelegramError> {
    tracing::warn!(
        "telegram: telegram.allowed_users is empty: pairing mode. The bot serves nobody and \
         answers private messages with the sender's user id and how to allow it"
    );
    let offset = store.offset().map_err(|source| TelegramError::Store {
        path: db.to_path_buf(),
        source,
    })?;
    let (tx, mut rx) = mpsc::channel(16);
    tokio::spawn(poller::run(bot.clone(), offset, tx, shutdown.clone()));
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            Some((update, done)) = rx.recv() => {
                let next = i64::from(update.id.0) + 1;
                answer(&bot, update).await;
                if let Err(e) = store.set_offset(next) {
                    tracing::error!(error = %e, "telegram: could not save the update offset");
                }
                let _ = done.send(());
            }
            else => break,
        }
    }
    Ok(())
}

async fn answer(bot: &Bot, update: Update) {
    let UpdateKind::Message(msg) = update.kind else {
        return;
    };
    let Some(user) = msg.from.as_ref() else {
        return;
    };
    let group = match &msg.chat.kind {
        ChatKind::Private(_) => None,
        // In a group, only a command is answered (with the group's id).
        _ if msg.text().is_some_and(|t| t.starts_with('/')) => Some(msg.chat.id.0),
        _ => {
            tracing::info!(
                chat = msg.chat.id.0,
                "telegram (pairing mode): ignored a message in a group that is no command"
            );
            return;
        }
    };
    tracing::warn!(
        user = user.id.0,
        username = ?user.username,
        "telegram (pairing mode): a user wrote; add their id to telegram.allowed_users to let them in"
    );
    let mut send = bot.send_message(msg.chat.id, reply(user, group));
    if let Some(thread) = msg.thread_id {
        send = send.message_thread_id(thread);
    }
    if let Err(e) = send.await {
        tracing::warn!(error = %e, "telegram (pairing mode): could not answer");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use teloxide::types::UserId;

    #[test]
    fn the_reply_names_the_id_and_both_settings() {
        let user = User {
            id: UserId(4242),
            is_bot: false,
            first_name: "Ada".into(),
            last_name: None,
            username: Some("ada".into()),
            language_code: None,
            is_premium: false,
            added_to_attachment_menu: false,
        };
        let text = reply(&user, None);
        assert!(text.contains("Your Telegram user id is 4242."), "{text}");
        assert!(text.contains("allowed_users = [4242]"), "{text}");
        assert!(text.contains("chat_id = 4242"), "{text}");
        assert!(text.contains("shepherd restart"), "{text}");
        // In a group: that group's id as the chat.
        let text = reply(&user, Some(-1001234567));
        assert!(text.contains("allowed_users = [4242]"), "{text}");
        assert!(text.contains("chat_id = -1001234567"), "{text}");
        assert!(text.contains("this group (chat id -1001234567)"), "{text}");
    }
}
