//! Long polling (`getUpdates`) with the offset the bridge persisted: each update is handed
//! to the bridge and the next one is only fetched after the bridge has handled (and
//! persisted) it. A second poller on the same token (409) is reported once, clearly, and
//! polling backs off instead of fighting it; 429s are waited out; network errors retried.

use std::time::Duration;

use teloxide::payloads::GetUpdatesSetters;
use teloxide::prelude::Requester;
use teloxide::types::{AllowedUpdate, Update};
use teloxide::{ApiError, Bot, RequestError};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// An update and the signal that it was handled.
pub type Polled = (Update, oneshot::Sender<()>);

/// How long one `getUpdates` waits for news: below teloxide's 17 s HTTP timeout.
const LONG_POLL_S: u32 = 10;

/// Poll from `offset` until `shutdown`.
pub async fn run(bot: Bot, mut offset: i64, tx: mpsc::Sender<Polled>, shutdown: CancellationToken) {
    let mut backoff = Duration::from_secs(1);
    let mut conflict_reported = false;
    loop {
        let request = bot
            .get_updates()
            .offset(offset as i32)
            .timeout(LONG_POLL_S)
            .allowed_updates(vec![AllowedUpdate::Message, AllowedUpdate::CallbackQuery]);
        let result = tokio::select! {
            _ = shutdown.cancelled() => return,
            r = request => r,
        };
        let wait = match result {
            Ok(updates) => {
                backoff = Duration::from_secs(1);
                if conflict_reported {
                    tracing::info!("telegram: the other poller is gone; polling again");
                    conflict_reported = false;
                }
                for update in updates {
                    let id = i64::from(update.id.0);
                    let (done, handled) = oneshot::channel();
                    if tx.send((update, done)).await.is_err() {
                        return;
                    }
                    // The bridge persists the offset once the update is handled.
                    let _ = handled.await;
                    offset = id + 1;
                }
                continue;
            }
            Err(RequestError::Api(ApiError::TerminatedByOtherGetUpdates)) => {
                if !conflict_reported {
                    tracing::error!(
                        "telegram: another program is polling this bot token (409 Conflict); only one may. \
                         Stop the other shepherd (or bot) using this token; retrying every 30 s"
                    );
                    conflict_reported = true;
                }
                Duration::from_secs(30)
            }
            Err(RequestError::RetryAfter(secs)) => secs.duration(),
            Err(RequestError::Api(ApiError::InvalidToken)) => {
                tracing::error!(
                    "telegram refused the bot token; check telegram.token / SHEPHERD_TELEGRAM_TOKEN"
                );
                Duration::from_secs(60)
            }
            Err(e) => {
                tracing::warn!(error = %e, retry_in_s = backoff.as_secs(), "telegram: getUpdates failed; retrying");
                let wait = backoff;
                backoff = (backoff * 2).min(Duration::from_secs(60));
                wait
            }
        };
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
        }
    }
}
