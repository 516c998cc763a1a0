//! A scripted OpenAI-compatible model server on 127.0.0.1 for driving a real Pi.
//!
//! Pi POSTs `/v1/chat/completions` with `stream: true`; the server logs every request
//! body and answers with the SSE chunks Pi expects (role, `reasoning_content`, content or
//! `tool_calls` deltas, `finish_reason`, usage, `[DONE]`). What it answers is decided by a
//! script: a function from the request (with everything the model was shown) to a
//! [`Reply`].

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// What the fake model says next.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Plain assistant text; the turn ends (`finish_reason: stop`).
    Text(String),
    /// Call tools (`finish_reason: tool_calls`): name and JSON arguments each.
    Tools(Vec<(String, Value)>),
    /// Reasoning streamed as `reasoning_content` deltas (Pi records a thinking block),
    /// then the inner reply.
    Reasoning(String, Box<Reply>),
    /// Text, then this `finish_reason` (e.g. `content_filter`, which Pi records as an
    /// assistant message with `stopReason: "error"` and does not retry).
    Finish(String, String),
}

/// A script that runs one `bash` command per prompt: the command of the first marker the
/// newest user message contains (`steps`: marker, command), then says what the tool
/// returned (`TOOL-SAID …`); anything else: "nothing to do".
pub fn bash_steps(
    steps: Vec<(String, String)>,
) -> impl Fn(&ModelRequest) -> Reply + Send + Sync + 'static {
    move |req| {
        let (role, last) = req.last();
        if role == "tool" {
            return Reply::text(format!("TOOL-SAID {last}"));
        }
        match steps
            .iter()
            .find(|(marker, _)| last.contains(marker.as_str()))
        {
            Some((_, command)) => Reply::tool("bash", serde_json::json!({ "command": command })),
            None => Reply::text("nothing to do"),
        }
    }
}

impl Reply {
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::Text(text.into())
    }

    pub fn tool(name: &str, args: Value) -> Reply {
        Reply::Tools(vec![(name.to_string(), args)])
    }

    /// This reply, preceded by reasoning.
    pub fn with_reasoning(self, reasoning: impl Into<String>) -> Reply {
        Reply::Reasoning(reasoning.into(), Box::new(self))
    }

    /// Text ending with `finish_reason` (see [`Reply::Finish`]).
    pub fn finish(text: impl Into<String>, finish_reason: impl Into<String>) -> Reply {
        Reply::Finish(text.into(), finish_reason.into())
    }
}

/// One request as the model received it.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    pub body: Value,
}

impl ModelRequest {
    /// The `messages` array.
    pub fn messages(&self) -> &[Value] {
        self.body["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The text of every message, concatenated, for "was the model shown X" checks.
    pub fn transcript(&self) -> String {
        self.messages()
            .iter()
            .map(message_text)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The last message's role and text.
    pub fn last(&self) -> (String, String) {
        match self.messages().last() {
            Some(m) => (
                m["role"].as_str().unwrap_or("").to_string(),
                message_text(m),
            ),
            None => (String::new(), String::new()),
        }
    }

    /// The text of the newest user message (the prompt or delivery a run started from);
    /// empty when there is none.
    pub fn last_user_text(&self) -> String {
        self.messages()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .map(message_text)
            .unwrap_or_default()
    }

    /// How many messages have this role.
    pub fn count_role(&self, role: &str) -> usize {
        self.messages().iter().filter(|m| m["role"] == role).count()
    }

    /// Names of the tools offered to the model.
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Text content of one chat message (string or array-of-parts form).
pub fn message_text(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

type Script = dyn Fn(&ModelRequest) -> Reply + Send + Sync;

struct Shared {
    script: Box<Script>,
    requests: Mutex<Vec<ModelRequest>>,
    /// Cache-read and cache-write tokens each usage chunk reports (`None`: no
    /// `prompt_tokens_details`).
    cache_tokens: Mutex<Option<(u64, u64)>>,
}

/// A running fake model server.
pub struct FakeModel {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    /// The model's prices in `models.json` (USD per million tokens), when set.
    cost: Option<Value>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeModel {
    /// Serve on a free loopback port, answering with `script`.
    pub async fn start(
        script: impl Fn(&ModelRequest) -> Reply + Send + Sync + 'static,
    ) -> Result<FakeModel> {
        let shared = Arc::new(Shared {
            script: Box::new(script),
            requests: Mutex::new(Vec::new()),
            cache_tokens: Mutex::new(None),
        });
        let app = axum::Router::new()
            .route("/v1/chat/completions", axum::routing::post(completions))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FakeModel {
            addr,
            shared,
            cost: None,
            task,
        })
    }

    /// Give the model prices in `models.json` (USD per million input, output, cache-read
    /// and cache-write tokens), so Pi records a cost for each response.
    pub fn with_cost(mut self, input: f64, output: f64, cache_read: f64, cache_write: f64) -> Self {
        self.cost = Some(json!({"input": input, "output": output,
            "cacheRead": cache_read, "cacheWrite": cache_write}));
        self
    }

    /// From now on, each usage chunk says that `read` of the prompt's tokens were read
    /// from a cache and `write` were written to it (`prompt_tokens_details`).
    pub fn set_cache_tokens(&self, read: u64, write: u64) {
        *self.shared.cache_tokens.lock().unwrap() = Some((read, write));
    }

    /// Base URL for `models.json`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The `models.json` that points Pi's provider `fake` at this server.
    pub fn models_json(&self) -> Value {
        // A vision model: images in a user message reach it (Pi drops them for text-only ones).
        let mut model = json!({"id": "fake-model", "contextWindow": 100000, "maxTokens": 4096,
            "input": ["text", "image"]});
        if let Some(cost) = &self.cost {
            model["cost"] = cost.clone();
        }
        json!({"providers": {"fake": {
            "baseUrl": self.base_url(),
            "api": "openai-completions",
            "apiKey": "fake-key",
            "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
            "models": [model]
        }}})
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Wait until at least `n` requests have arrived; returns them all.
    pub async fn wait_requests(&self, n: usize, timeout: Duration) -> Result<Vec<ModelRequest>> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let requests = self.requests();
            if requests.len() >= n {
                return Ok(requests);
            }
            if tokio::time::Instant::now() > deadline {
                let seen: Vec<_> = requests.iter().map(|r| r.last()).collect();
                return Err(anyhow::anyhow!(
                    "expected {n} model requests, got {}: {seen:?}",
                    requests.len()
                ))
                .context("waiting for model requests");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn completions(State(shared): State<Arc<Shared>>, body: axum::Json<Value>) -> Response {
    let request = ModelRequest { body: body.0 };
    let reply = (shared.script)(&request);
    let prompt_tokens = request.transcript().len() as u64 / 4 + 1;
    shared.requests.lock().unwrap().push(request);
    let n = shared.requests.lock().unwrap().len();
    let cache = *shared.cache_tokens.lock().unwrap();
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        sse_body(&reply, n, prompt_tokens, cache),
    )
        .into_response()
}

fn chunk(id: &str, delta: Value, finish: Option<&str>) -> String {
    let value = json!({
        "id": id, "object": "chat.completion.chunk", "created": 0, "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    });
    format!("data: {value}\n\n")
}

fn sse_body(reply: &Reply, n: usize, prompt_tokens: u64, cache: Option<(u64, u64)>) -> String {
    let id = format!("chatcmpl-{n}");
    let mut out = chunk(&id, json!({"role": "assistant", "content": ""}), None);
    let finish = reply_chunks(reply, &id, n, &mut out);
    out.push_str(&chunk(&id, json!({}), Some(&finish)));
    let mut usage = json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": "fake-model",
        "choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 10,
        "total_tokens": prompt_tokens + 10}});
    if let Some((read, write)) = cache {
        usage["usage"]["prompt_tokens_details"] =
            json!({"cached_tokens": read, "cache_write_tokens": write});
    }
    out.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
    out
}

/// Append the content chunks of `reply` to `out`; returns its `finish_reason`.
fn reply_chunks(reply: &Reply, id: &str, n: usize, out: &mut String) -> String {
    match reply {
        Reply::Text(text) => {
            out.push_str(&chunk(id, json!({"content": text}), None));
            "stop".to_string()
        }
        Reply::Tools(calls) => {
            for (i, (name, args)) in calls.iter().enumerate() {
                let call = json!({"index": i, "id": format!("call_{n}_{i}"), "type": "function",
                    "function": {"name": name, "arguments": args.to_string()}});
                out.push_str(&chunk(id, json!({"tool_calls": [call]}), None));
            }
            "tool_calls".to_string()
        }
        Reply::Reasoning(reasoning, then) => {
            // In a few deltas, as real providers stream it.
            let chars: Vec<char> = reasoning.chars().collect();
            for part in chars.chunks(200) {
                let part: String = part.iter().collect();
                out.push_str(&chunk(id, json!({"reasoning_content": part}), None));
            }
            reply_chunks(then, id, n, out)
        }
        Reply::Finish(text, finish_reason) => {
            if !text.is_empty() {
                out.push_str(&chunk(id, json!({"content": text}), None));
            }
            finish_reason.clone()
        }
    }
}
