//! # Sending to the room
//!
//! Every event the bridge sends (messages, edits, reactions, files) goes through here, one
//! at a time from the bridge's outbox ([`super::outbox`]), so the room sees them in the
//! order they were meant.
//! Each send is retried until it succeeds or cannot: `M_LIMIT_EXCEEDED` is waited out for
//! the `retry_after_ms` the homeserver asks for (1 s when it names none), network errors
//! are retried with backoff (0.5 s doubling to 30 s, for up to ten minutes), anything else
//! (forbidden, too large) is returned at once. matrix-sdk encrypts for encrypted rooms.
//! Messages carry HTML (`formatted_body`, via [`html::for_matrix`]) and a plain `body`;
//! messages about a session go into its thread (`m.thread`, with the fallback reply for
//! clients without threads).

use std::future::Future;
use std::time::{Duration, SystemTime};

use matrix_sdk::attachment::AttachmentConfig;
use matrix_sdk::config::RequestConfig;
use matrix_sdk::room::reply::{EnforceThread, Reply};
use matrix_sdk::room::{IncludeRelations, RelationsOptions};
use matrix_sdk::ruma::api::error::{ErrorKind, RetryAfter};
use matrix_sdk::ruma::events::MessageLikeEventContent;
use matrix_sdk::ruma::events::reaction::ReactionEventContent;
use matrix_sdk::ruma::events::relation::{Annotation, RelationType, Thread};
use matrix_sdk::ruma::events::room::message::{
    AddMentions, ReplacementMetadata, ReplyWithinThread, RoomMessageEventContent,
    TextMessageEventContent,
};
use matrix_sdk::ruma::{EventId, OwnedEventId};
use matrix_sdk::{Error as SdkError, HttpError, Room};
use tokio_util::sync::CancellationToken;

use crate::chat::{html, split};

/// Longest chunk of a message, in characters of text ([`split::MATRIX_LIMIT`]).
pub const MAX_TEXT: usize = split::MATRIX_LIMIT;
/// More chunks than this and the content goes as a `.md` file.
pub const MAX_MESSAGES: usize = 4;
/// How long a send keeps retrying network errors.
const GIVE_UP_AFTER: Duration = Duration::from_secs(600);

/// Why a send failed for good.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("the bridge is shutting down")]
    Shutdown,
    #[error(transparent)]
    Matrix(#[from] SdkError),
}

/// How to react to a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Rate limited: wait this long, then try again.
    After(Duration),
    /// A network error: back off and try again.
    Backoff,
    /// Give up.
    Never,
}

/// What to do after `e`.
pub fn classify(e: &SdkError) -> Retry {
    if let Some(ErrorKind::LimitExceeded(data)) = e.client_api_error_kind() {
        return Retry::After(retry_after(data.retry_after.as_ref()));
    }
    match e {
        SdkError::Http(http) if matches!(**http, HttpError::Reqwest(_)) => Retry::Backoff,
        _ => Retry::Never,
    }
}

/// The wait a `retry_after` asks for: a delay, or until a time; 1 s when absent.
pub fn retry_after(after: Option<&RetryAfter>) -> Duration {
    match after {
        Some(RetryAfter::Delay(d)) => *d,
        Some(RetryAfter::DateTime(t)) => t
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
        None => Duration::from_secs(1),
    }
}

/// Run `attempt` until it succeeds, waiting out rate limits and network errors.
pub async fn with_retry<T, F, Fut>(
    what: &str,
    shutdown: &CancellationToken,
    mut attempt: F,
) -> Result<T, SendError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, SdkError>>,
{
    let started = tokio::time::Instant::now();
    let mut backoff = Duration::from_millis(500);
    loop {
        let result = tokio::select! {
            _ = shutdown.cancelled() => return Err(SendError::Shutdown),
            r = attempt() => r,
        };
        let e = match result {
            Ok(value) => return Ok(value),
            Err(e) => e,
        };
        let wait = match classify(&e) {
            Retry::After(wait) => {
                tracing::info!(
                    what,
                    wait_ms = wait.as_millis() as u64,
                    "matrix rate limit (M_LIMIT_EXCEEDED): waiting before retrying"
                );
                wait
            }
            Retry::Backoff if started.elapsed() < GIVE_UP_AFTER => {
                tracing::warn!(what, error = %e, retry_in_ms = backoff.as_millis() as u64,
                    "matrix homeserver unreachable; retrying");
                let wait = backoff;
                backoff = (backoff * 2).min(Duration::from_secs(30));
                wait
            }
            _ => return Err(e.into()),
        };
        tokio::select! {
            _ = shutdown.cancelled() => return Err(SendError::Shutdown),
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// Where a message goes: a thread (`root`, and the latest event in it for the fallback
/// reply), or the room's main timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InThread {
    pub root: OwnedEventId,
    pub latest: OwnedEventId,
}

/// A text message with HTML (one chunk: `html` is shepherd's HTML with `\n` line breaks).
pub fn message_content(
    html: &str,
    plain: &str,
    thread: Option<&InThread>,
) -> RoomMessageEventContent {
    let mut content = RoomMessageEventContent::text_html(plain, html::for_matrix(html));
    if let Some(t) = thread {
        content.relates_to = Some(matrix_sdk::ruma::events::room::message::Relation::Thread(
            Thread::plain(t.root.clone(), t.latest.clone()),
        ));
    }
    content
}

/// One-request sends, not retried by matrix-sdk itself: [`with_retry`] owns retrying.
fn once() -> RequestConfig {
    RequestConfig::new().disable_retry()
}

/// Send one chunk of HTML (its plain `body` is the chunk's text).
pub async fn message(
    room: &Room,
    shutdown: &CancellationToken,
    html: &str,
    plain: &str,
    thread: Option<&InThread>,
) -> Result<OwnedEventId, SendError> {
    let content = message_content(html, plain, thread);
    send_event("message", room, shutdown, content).await
}

/// Send one event, retried (rate limits, network) until it goes or shutdown.
async fn send_event<C>(
    what: &'static str,
    room: &Room,
    shutdown: &CancellationToken,
    content: C,
) -> Result<OwnedEventId, SendError>
where
    C: MessageLikeEventContent + Clone,
{
    with_retry(what, shutdown, || {
        let content = content.clone();
        async move {
            room.send(content)
                .with_request_config(once())
                .await
                .map(|r| r.response.event_id)
        }
    })
    .await
}

/// Replace an event's content (`m.replace`).
pub async fn edit(
    room: &Room,
    shutdown: &CancellationToken,
    event_id: &EventId,
    html: &str,
    plain: &str,
) -> Result<OwnedEventId, SendError> {
    let content = RoomMessageEventContent::text_html(plain, html::for_matrix(html))
        .make_replacement(ReplacementMetadata::new(event_id.to_owned(), None));
    send_event("edit", room, shutdown, content).await
}

/// React to an event with `key`.
pub async fn react(
    room: &Room,
    shutdown: &CancellationToken,
    event_id: &EventId,
    key: &str,
) -> Result<OwnedEventId, SendError> {
    let content = ReactionEventContent::new(Annotation::new(event_id.to_owned(), key.to_string()));
    send_event("reaction", room, shutdown, content).await
}

/// Take back `me`'s reactions to an event (an ask card whose session is gone): find them
/// among the event's annotations and redact each. Returns the event's id.
pub async fn unreact(
    room: &Room,
    shutdown: &CancellationToken,
    event_id: &EventId,
    me: &str,
) -> Result<OwnedEventId, SendError> {
    let relations = with_retry("reactions", shutdown, || async move {
        let opts = RelationsOptions {
            include_relations: IncludeRelations::RelationsOfType(RelationType::Annotation),
            limit: Some(50u32.into()),
            ..Default::default()
        };
        room.relations(event_id.to_owned(), opts).await
    })
    .await?;
    for ev in relations.chunk {
        let (Some(id), Some(sender)) = (ev.event_id(), ev.sender()) else {
            continue;
        };
        if sender.as_str() != me {
            continue;
        }
        with_retry("redaction", shutdown, || {
            let id = id.clone();
            async move {
                room.redact(&id, None, None)
                    .await
                    .map(|_| ())
                    .map_err(SdkError::from)
            }
        })
        .await?;
    }
    Ok(event_id.to_owned())
}

/// Upload `bytes` as an `m.file` named `file_name` (Markdown), captioned with `caption`,
/// into a thread (given its root) or the main timeline. Encrypted in encrypted rooms.
pub async fn file(
    room: &Room,
    shutdown: &CancellationToken,
    file_name: &str,
    bytes: Vec<u8>,
    caption: &str,
    thread_root: Option<&EventId>,
) -> Result<OwnedEventId, SendError> {
    let mime: mime::Mime = match file_name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("md") => "text/markdown".parse().expect("a valid MIME type"),
        Some("diff" | "patch") => "text/x-diff".parse().expect("a valid MIME type"),
        _ => mime::APPLICATION_OCTET_STREAM,
    };
    let caption = (!caption.is_empty()).then(|| TextMessageEventContent::plain(caption));
    with_retry("file", shutdown, || {
        let reply = thread_root.map(|root| Reply {
            event_id: root.to_owned(),
            enforce_thread: EnforceThread::Threaded(ReplyWithinThread::No),
            add_mentions: AddMentions::No,
        });
        let config = AttachmentConfig::new()
            .caption(caption.clone())
            .reply(reply);
        let (mime, bytes) = (&mime, bytes.clone());
        async move {
            room.send_attachment(file_name, mime, bytes, config)
                .await
                .map(|r| r.event_id)
        }
    })
    .await
}

/// How to post `html`: as chunks of at most [`MAX_TEXT`] characters, or (`None`) as a
/// file because it would take more than [`MAX_MESSAGES`] messages.
pub fn chunks(html: &str) -> Option<Vec<(String, String)>> {
    if split::as_document(html, MAX_TEXT, MAX_MESSAGES) {
        return None;
    }
    Some(
        split::split_html(html, MAX_TEXT)
            .into_iter()
            .filter(|c| !split::text_of(c).trim().is_empty())
            .map(|c| {
                let plain = split::text_of(&c);
                (c, plain)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_the_delay() {
        assert_eq!(
            retry_after(Some(&RetryAfter::Delay(Duration::from_millis(1500)))),
            Duration::from_millis(1500)
        );
        assert_eq!(retry_after(None), Duration::from_secs(1));
        let past = SystemTime::now() - Duration::from_secs(5);
        assert_eq!(
            retry_after(Some(&RetryAfter::DateTime(past))),
            Duration::ZERO
        );
    }

    /// The error matrix-sdk returns for a `429 M_LIMIT_EXCEEDED`.
    fn limit_exceeded(retry_after: Option<RetryAfter>) -> SdkError {
        use matrix_sdk::ruma::api::client::uiaa::UiaaResponse;
        use matrix_sdk::ruma::api::error::{
            Error, ErrorBody, FromHttpResponseError, LimitExceededErrorData, StandardErrorBody,
        };
        use matrix_sdk::ruma::exports::http::StatusCode;
        let mut data = LimitExceededErrorData::new();
        data.retry_after = retry_after;
        let body = StandardErrorBody::new(ErrorKind::LimitExceeded(data), "slow down".into());
        let error = Error::new(StatusCode::TOO_MANY_REQUESTS, ErrorBody::Standard(body));
        let http = HttpError::Api(Box::new(FromHttpResponseError::Server(
            UiaaResponse::MatrixError(error),
        )));
        SdkError::Http(Box::new(http))
    }

    #[test]
    fn rate_limits_are_waited_out_for_retry_after() {
        let e = limit_exceeded(Some(RetryAfter::Delay(Duration::from_millis(2500))));
        assert_eq!(classify(&e), Retry::After(Duration::from_millis(2500)));
        assert_eq!(
            classify(&limit_exceeded(None)),
            Retry::After(Duration::from_secs(1))
        );
        assert_eq!(
            classify(&SdkError::UnknownError("boom".into())),
            Retry::Never
        );
    }

    #[tokio::test]
    async fn with_retry_waits_then_succeeds_in_order() {
        let shutdown = CancellationToken::new();
        let started = tokio::time::Instant::now();
        let mut attempts = 0;
        let result = with_retry("test", &shutdown, || {
            attempts += 1;
            let n = attempts;
            async move {
                if n < 3 {
                    Err(limit_exceeded(Some(RetryAfter::Delay(
                        Duration::from_millis(100),
                    ))))
                } else {
                    Ok(n)
                }
            }
        })
        .await;
        assert_eq!(result.unwrap(), 3);
        assert!(
            started.elapsed() >= Duration::from_millis(200),
            "{:?}",
            started.elapsed()
        );
        let refused = with_retry("test", &shutdown, || async {
            Err::<(), _>(SdkError::UnknownError("forbidden".into()))
        })
        .await;
        assert!(matches!(refused, Err(SendError::Matrix(_))));
    }

    #[test]
    fn thread_messages_carry_html_body_and_relation() {
        let t = InThread {
            root: "$root:hs".try_into().unwrap(),
            latest: "$last:hs".try_into().unwrap(),
        };
        let content = message_content("<b>a</b>\nb", "a\nb", Some(&t));
        let json = serde_json::to_value(&content).unwrap();
        assert_eq!(json["body"], "a\nb");
        assert_eq!(json["format"], "org.matrix.custom.html");
        assert_eq!(json["formatted_body"], "<b>a</b><br>b");
        assert_eq!(json["m.relates_to"]["rel_type"], "m.thread");
        assert_eq!(json["m.relates_to"]["event_id"], "$root:hs");
        assert_eq!(
            json["m.relates_to"]["m.in_reply_to"]["event_id"],
            "$last:hs"
        );
        assert_eq!(json["m.relates_to"]["is_falling_back"], true);
    }

    #[test]
    fn long_content_goes_as_a_file() {
        let short = chunks("<b>hi</b>").unwrap();
        assert_eq!(short, vec![("<b>hi</b>".to_string(), "hi".to_string())]);
        let long = "word ".repeat(MAX_TEXT * MAX_MESSAGES);
        assert!(chunks(&long).is_none());
        let medium = "word ".repeat(2000); // 10 000 characters: two messages
        let parts = chunks(&medium).unwrap();
        assert_eq!(parts.len(), 2);
        let joined: String = parts.iter().map(|(_, plain)| plain.as_str()).collect();
        assert_eq!(joined, medium);
    }
}
