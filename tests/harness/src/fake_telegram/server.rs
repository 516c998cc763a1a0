//! The HTTP side: `POST /bot<token>/<method>` (any case), parameters from JSON, multipart,
//! urlencoded bodies or the query string, and `getUpdates` long polling where a new
//! waiting poll terminates the one already waiting with a 409, as the Bot API server does.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRequest, Multipart, Request, State as AxumState};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use super::ApiCall;
use super::state::{ApiError, Params, State, Upload};

/// What the server and the test handle share.
pub(crate) struct Shared {
    pub state: Mutex<State>,
    /// Bumped after every change, for long polls and `wait_for`.
    pub changed: watch::Sender<u64>,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn touch(&self) {
        self.changed.send_modify(|v| *v += 1);
    }
}

/// Uploads up to 50 MB, like Telegram's cloud Bot API.
const BODY_LIMIT: usize = 50 << 20;

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .fallback(handle)
        .with_state(shared)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
}

/// Canonical spellings for the call log; teloxide sends PascalCase.
const METHODS: &[&str] = &[
    "getMe",
    "getUpdates",
    "getWebhookInfo",
    "deleteWebhook",
    "sendMessage",
    "editMessageText",
    "editMessageReplyMarkup",
    "deleteMessage",
    "answerCallbackQuery",
    "createForumTopic",
    "editForumTopic",
    "closeForumTopic",
    "reopenForumTopic",
    "deleteForumTopic",
    "sendDocument",
    "getFile",
    "setMyCommands",
    "getMyCommands",
    "deleteMyCommands",
    "sendChatAction",
    "getChat",
];

pub(crate) fn canonical(method: &str) -> String {
    METHODS
        .iter()
        .find(|m| m.eq_ignore_ascii_case(method))
        .map_or_else(|| method.to_string(), |m| m.to_string())
}

fn reply(status: u16, body: Value) -> Response {
    (
        StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn handle(AxumState(shared): AxumState<Arc<Shared>>, req: Request) -> Response {
    let arrived = Instant::now();
    let path = req.uri().path().to_string();
    // `/file/bot<token>/<file_path>`: a download, as the Bot API server serves it.
    if let Some((_, rest)) = path.split_once("/file/bot") {
        return download(&shared, rest);
    }
    // `/bot<token>/<method>`, possibly under a prefix.
    let mut segments = path.rsplitn(3, '/');
    let method = segments.next().unwrap_or("").to_string();
    let token = segments
        .next()
        .and_then(|s| s.strip_prefix("bot"))
        .map(|t| percent_decode(t.as_bytes()));

    let (params, result) = match read_params(req).await {
        Err(e) => (Params::default(), Err(e)),
        Ok(params) => {
            let result = match token {
                None => Err(ApiError::new(404, "Not Found")),
                Some(t) if t != shared.lock().token => Err(ApiError::new(401, "Unauthorized")),
                Some(_) if method.eq_ignore_ascii_case("getUpdates") => {
                    get_updates(&shared, &params).await
                }
                Some(_) => {
                    let lower = method.to_ascii_lowercase();
                    shared.lock().call(&lower, &params, Instant::now())
                }
            };
            (params, result)
        }
    };

    let (status, body) = match result {
        Ok(v) => (200, json!({"ok": true, "result": v})),
        Err(e) => (e.code, e.to_json()),
    };
    {
        let mut st = shared.lock();
        let seq = st.calls.len();
        let started = st.started;
        st.calls.push(ApiCall {
            seq,
            method: canonical(&method),
            params: params.logged(),
            status,
            response: body.clone(),
            at: arrived.saturating_duration_since(started),
            took: arrived.elapsed(),
        });
    }
    shared.touch();
    reply(status, body)
}

/// A file download: the token, then a path `getFile` gave; 404 for anything else.
fn download(shared: &Shared, rest: &str) -> Response {
    let st = shared.lock();
    let bytes = rest
        .split_once('/')
        .filter(|(token, _)| percent_decode(token.as_bytes()) == st.token)
        .and_then(|(_, path)| st.download(&percent_decode(path.as_bytes())));
    match bytes {
        Some(bytes) => (StatusCode::OK, bytes).into_response(),
        None => reply(
            404,
            json!({"ok": false, "error_code": 404, "description": "Not Found"}),
        ),
    }
}

/// Parameters from whatever encoding the request used, plus the query string.
async fn read_params(req: Request) -> Result<Params, ApiError> {
    let mut params = Params::default();
    if let Some(query) = req.uri().query() {
        parse_urlencoded(query.as_bytes(), &mut params.fields);
    }
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if content_type.starts_with("multipart/form-data") {
        let mut form = Multipart::from_request(req, &())
            .await
            .map_err(|e| ApiError::bad(format!("can't parse multipart body: {e}")))?;
        while let Some(field) = form
            .next_field()
            .await
            .map_err(|e| ApiError::bad(format!("can't parse multipart body: {e}")))?
        {
            let name = field.name().unwrap_or("").to_string();
            let file_name = field.file_name().map(str::to_string);
            let content_type = field.content_type().map(str::to_string);
            let bytes = field
                .bytes()
                .await
                .map_err(|e| ApiError::bad(format!("can't parse multipart body: {e}")))?;
            if file_name.is_some() {
                params.files.insert(
                    name,
                    Upload {
                        file_name,
                        content_type,
                        bytes: bytes.to_vec(),
                    },
                );
            } else {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                params.fields.insert(name, Value::String(text));
            }
        }
        return Ok(params);
    }
    let body = axum::body::to_bytes(req.into_body(), BODY_LIMIT)
        .await
        .map_err(|_| ApiError::new(413, "Request Entity Too Large"))?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(params);
    }
    if content_type.starts_with("application/x-www-form-urlencoded") {
        parse_urlencoded(&body, &mut params.fields);
        return Ok(params);
    }
    match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Object(map)) => params.fields.extend(map),
        _ => return Err(ApiError::bad("can't parse JSON object")),
    }
    Ok(params)
}

fn percent_decode(s: &[u8]) -> String {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < s.len() => {
                let hex = std::str::from_utf8(&s[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_urlencoded(s: &[u8], into: &mut Map<String, Value>) {
    for pair in s.split(|b| *b == b'&').filter(|p| !p.is_empty()) {
        let mut kv = pair.splitn(2, |b| *b == b'=');
        let key = percent_decode(kv.next().unwrap_or(b""));
        let value = percent_decode(kv.next().unwrap_or(b""));
        into.insert(key, Value::String(value));
    }
}

fn conflict() -> ApiError {
    ApiError::new(
        409,
        "Conflict: terminated by other getUpdates request; make sure that only one bot instance \
         is running",
    )
}

/// Clears the long-poll slot when the waiting request ends, however it ends.
struct PollSlot<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for PollSlot<'_> {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        if st.long_poll.as_ref().is_some_and(|(id, _)| *id == self.id) {
            st.long_poll = None;
            drop(st);
            self.shared.touch();
        }
    }
}

async fn get_updates(shared: &Arc<Shared>, p: &Params) -> Result<Value, ApiError> {
    let (offset, limit, timeout) = State::get_updates_params(p)?;
    let deadline = Instant::now() + Duration::from_secs(timeout);
    // Subscribe before looking, so an update injected in between still wakes us.
    let mut changed = shared.changed.subscribe();
    let (id, mut terminated) = {
        let mut st = shared.lock();
        st.set_allowed_updates(p)?;
        st.apply_offset(offset);
        let updates = st.take_updates(limit);
        if !updates.is_empty() || timeout == 0 {
            return Ok(Value::Array(updates));
        }
        // A request that is going to wait terminates the one already waiting.
        if let Some((_, terminate)) = st.long_poll.take() {
            let _ = terminate.send(());
        }
        let (tx, rx) = oneshot::channel();
        let id = st.next_poll_id;
        st.next_poll_id += 1;
        st.long_poll = Some((id, tx));
        (id, rx)
    };
    shared.touch();
    let _slot = PollSlot { shared, id };
    loop {
        tokio::select! {
            biased;
            _ = &mut terminated => {
                let delay = {
                    let mut st = shared.lock();
                    let now = Instant::now();
                    if st.next_conflict_at.is_none_or(|at| now >= at) {
                        st.next_conflict_at = Some(now + st.conflict_cooldown);
                        Duration::ZERO
                    } else {
                        st.conflict_cooldown
                    }
                };
                tokio::time::sleep(delay).await;
                return Err(conflict());
            }
            _ = tokio::time::sleep_until(deadline) => return Ok(json!([])),
            _ = changed.changed() => {}
        }
        let updates = shared.lock().take_updates(limit);
        if !updates.is_empty() {
            return Ok(Value::Array(updates));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_forms() {
        let mut map = Map::new();
        parse_urlencoded(b"chat_id=-100&text=a%20b+c%26&empty=", &mut map);
        assert_eq!(map["chat_id"], "-100");
        assert_eq!(map["text"], "a b c&");
        assert_eq!(map["empty"], "");
        assert_eq!(percent_decode(b"100%"), "100%");
        assert_eq!(canonical("SENDMESSAGE"), "sendMessage");
        assert_eq!(canonical("fooBar"), "fooBar");
    }
}
