//! # The Telegram bridge
//!
//! Relays asks (as cards with buttons), reports and status to one Telegram chat (a private
//! chat, or a forum supergroup with one topic per Pi session) and carries answers, steers
//! and commands back to the core. Built on teloxide's raw API: our own polling loop
//! persists the update offset, the bridge's outbox keeps order and rate limits. The
//! bridge is a [`Relay`] over [`bridge::Telegram`] (topics, posts, cards); what the human
//! does arrives as updates ([`updates`]).

pub mod bridge;
mod media;
pub mod outbox;
pub mod pairing_mode;
pub mod poller;
pub mod store;
pub mod updates;

use std::path::PathBuf;
use std::time::Duration;

use shepherd_core::config::{ConfigError, TelegramConfig};
use teloxide::Bot;
use teloxide::prelude::Requester;
use teloxide::types::{BotCommand, Me};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::chat::access::Allowlist;
use crate::chat::commands::COMMANDS;
use crate::core_link::{self, CoreEvent, CoreLink};
use crate::relay::Relay;

/// Why the Telegram bridge cannot run.
#[derive(Debug, thiserror::Error)]
pub enum TelegramError {
    #[error(
        "telegram.chat_id is missing: set it to your user id (private chat) or to the forum supergroup's id (-100…)"
    )]
    NoChat,
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("telegram.api_url {0:?} is not a URL")]
    BadUrl(String),
    #[error("Telegram refused the bot token: check SHEPHERD_TELEGRAM_TOKEN / telegram.token_file")]
    BadToken,
    #[error("another bridge serves this bot: {0}")]
    AlreadyServed(String),
    #[error("cannot open the bridge state {path}: {source}")]
    Store {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(transparent)]
    Open(#[from] crate::local_db::OpenError),
}

/// Check the configuration before anything starts. No allowed users is not an error: the
/// bridge then runs in [`pairing_mode`](mod@pairing_mode), telling whoever writes to it their user id.
pub fn validate(config: &TelegramConfig) -> Result<(), TelegramError> {
    if !config.allowed_users.is_empty() && config.chat_id.is_none() {
        return Err(TelegramError::NoChat);
    }
    config.resolve_token()?;
    Ok(())
}

/// Whether the bridge would run in [`pairing_mode`](mod@pairing_mode) (a token, nobody allowed yet).
pub fn pairing_mode(config: &TelegramConfig) -> bool {
    config.allowed_users.is_empty()
}

/// Run the bridge until `shutdown`: connect to Telegram and to the core at `socket`,
/// keeping state in `state_dir`.
pub async fn run(
    config: TelegramConfig,
    phone: shepherd_core::config::PhoneConfig,
    socket: PathBuf,
    state_dir: PathBuf,
    shutdown: CancellationToken,
) -> Result<(), TelegramError> {
    validate(&config)?;
    let bot = bot(&config)?;
    let db = state_dir.join("telegram.db");
    let store = bridge_store(&db)?;
    let Some(me) = who_we_are(&bot, &shutdown).await? else {
        return Ok(());
    };
    let username = me.username.clone().unwrap_or_default();
    tracing::info!(bot = %username, chat = ?config.chat_id, "telegram bridge started");
    register_commands(&bot).await;

    let limits = outbox::RateLimits {
        per_chat_per_second: config.limits.per_chat_per_second,
        per_group_per_minute: config.limits.per_group_per_minute,
        global_per_second: config.limits.global_per_second,
    };
    let outbox = outbox::spawn(bot.clone(), limits, shutdown.clone());
    let (core_tx, mut core_rx) = mpsc::channel(1024);
    let serves = match &me.username {
        Some(name) => format!("telegram:@{name}"),
        None => format!("telegram:{}", me.id),
    };
    tokio::spawn(core_link::forward_events(
        socket.clone(),
        "telegram".into(),
        serves,
        core_tx,
        shutdown.clone(),
    ));
    // Claim the bot with the core before polling: two pollers of one bot would each get
    // some of the human's messages.
    let Some(connected) = core_link::first_contact(&mut core_rx)
        .await
        .map_err(TelegramError::AlreadyServed)?
    else {
        return Ok(());
    };
    if pairing_mode(&config) {
        return pairing_mode::run(bot, store, &db, shutdown).await;
    }
    let chat_id = config.chat_id.ok_or(TelegramError::NoChat)?;
    let (poll_tx, mut poll_rx) = mpsc::channel(16);
    let offset = store.offset().map_err(|source| TelegramError::Store {
        path: db.clone(),
        source,
    })?;
    tokio::spawn(poller::run(bot.clone(), offset, poll_tx, shutdown.clone()));

    let telegram = bridge::Telegram {
        bot,
        outbox,
        store,
        chat_id,
        allow: Allowlist::new(config.allowed_users.iter().copied(), [chat_id]),
        username,
        forum: if chat_id > 0 { Some(false) } else { None },
        places: config.topics,
    };
    let core = CoreLink::new(&socket, "telegram");
    let mut bridge = Relay::new(telegram, core, state_dir.join("audit.log"), phone);
    bridge.on_core(connected).await;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            Some(event) = core_rx.recv() => match event {
                CoreEvent::Refused(why) => return Err(TelegramError::AlreadyServed(why)),
                event => bridge.on_core(event).await,
            },
            Some((update, done)) = poll_rx.recv() => {
                let next = i64::from(update.id.0) + 1;
                bridge.on_update(update).await;
                if let Err(e) = bridge.platform.store.set_offset(next) {
                    tracing::error!(error = %e, "telegram: could not save the update offset");
                }
                let _ = done.send(());
            }
            else => break,
        }
    }
    tracing::info!("telegram bridge stopped");
    Ok(())
}

/// The Bot API client for the configured token, at `telegram.api_url` when set.
fn bot(config: &TelegramConfig) -> Result<Bot, TelegramError> {
    let token = config.resolve_token()?;
    let mut bot = Bot::new(token);
    if let Some(url) = &config.api_url {
        let url = url
            .parse()
            .map_err(|_| TelegramError::BadUrl(url.clone()))?;
        bot = bot.set_api_url(url);
    }
    Ok(bot)
}

/// Who we are (`getMe`), retried with backoff while Telegram is unreachable; None when
/// shut down first.
async fn who_we_are(bot: &Bot, shutdown: &CancellationToken) -> Result<Option<Me>, TelegramError> {
    let mut backoff = Duration::from_secs(1);
    loop {
        let attempt = tokio::select! {
            _ = shutdown.cancelled() => return Ok(None),
            r = bot.get_me() => r,
        };
        match attempt {
            Ok(me) => return Ok(Some(me)),
            Err(teloxide::RequestError::Api(teloxide::ApiError::InvalidToken)) => {
                return Err(TelegramError::BadToken);
            }
            Err(e) => {
                tracing::warn!(error = %e, "telegram: cannot reach the Bot API yet; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(60));
            }
        }
    }
}

/// The chat commands in Telegram's command menu; a failure is only logged.
async fn register_commands(bot: &Bot) {
    let commands: Vec<BotCommand> = COMMANDS
        .iter()
        .map(|c| match c.args {
            "" => BotCommand::new(c.name, c.about),
            args => BotCommand::new(c.name, format!("{args}: {}", c.about)),
        })
        .collect();
    if let Err(e) = bot.set_my_commands(commands).await {
        tracing::warn!(error = %e, "telegram: could not register the command list");
    }
}

fn bridge_store(path: &std::path::Path) -> Result<store::BridgeStore, TelegramError> {
    Ok(store::BridgeStore::open(path)?)
}
