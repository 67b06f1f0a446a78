//! A raw Streamable HTTP client: every POST's answer read whole (JSON or
//! SSE) with its status and headers, live message streams for exchanges
//! where the client must answer mid-request, and raw SSE events with their
//! ids for resumption tests. It checks nothing itself, so tests see exactly
//! what the server sent.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use futures::StreamExt;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use sse_stream::SseByteStream;

/// Protocol revision the raw client speaks unless told otherwise.
pub const VERSION: &str = "2025-11-25";

/// What one POST produced.
#[derive(Debug)]
pub struct Reply {
    /// The HTTP status.
    pub status: StatusCode,
    /// The response headers.
    pub headers: HeaderMap,
    /// `application/json`, `text/event-stream` or empty.
    pub content_type: String,
    /// Every JSON-RPC message in the body, in order (one for JSON, the events
    /// for SSE; an array body is flattened).
    pub messages: Vec<Value>,
}

impl Reply {
    /// The response with `id` (the final one of a request).
    pub fn response(&self, id: &Value) -> Option<&Value> {
        self.messages
            .iter()
            .find(|m| m.get("id") == Some(id) && (m.get("result").is_some() || m.get("error").is_some()))
    }

    /// Messages other than responses (notifications, server requests).
    pub fn related(&self) -> Vec<&Value> {
        self.messages.iter().filter(|m| m.get("method").is_some()).collect()
    }
}

/// A raw Streamable HTTP client.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    /// The MCP endpoint.
    pub url: String,
    /// The `Mcp-Session-Id` once initialized.
    pub session: Option<String>,
    /// The revision sent as `MCP-Protocol-Version` (the negotiated one once
    /// initialized).
    pub version: String,
    next_id: Arc<std::sync::atomic::AtomicI64>,
}

impl Client {
    /// A client for `url`, not initialized yet.
    pub fn new(url: &str) -> Client {
        Client {
            http: reqwest::Client::new(),
            url: url.to_owned(),
            session: None,
            version: VERSION.to_owned(),
            next_id: Arc::new(std::sync::atomic::AtomicI64::new(1)),
        }
    }

    /// A client for `url` that sends `Authorization: Bearer <token>` on
    /// every request (toolgate with `[auth]`).
    pub fn with_bearer(url: &str, token: &str) -> Result<Client> {
        let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))?;
        value.set_sensitive(true);
        let mut headers = HeaderMap::new();
        headers.insert(reqwest::header::AUTHORIZATION, value);
        let mut client = Client::new(url);
        client.http = reqwest::Client::builder().default_headers(headers).build()?;
        Ok(client)
    }

    fn id(&self) -> Value {
        json!(self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }

    /// `initialize` + `notifications/initialized`; returns the result.
    pub async fn initialize(&mut self, capabilities: Value) -> Result<Value> {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": self.version,
            "capabilities": capabilities,
            "clientInfo": {"name": "toolgate-tests", "version": "1.0"},
        }});
        let reply = self.post(&body).await?;
        if reply.status != StatusCode::OK {
            bail!("initialize answered {}: {:?}", reply.status, reply.messages);
        }
        self.session =
            Some(reply.headers.get("mcp-session-id").ok_or_else(|| anyhow!("no Mcp-Session-Id"))?.to_str()?.to_owned());
        let result = reply
            .response(&json!(0))
            .and_then(|r| r.get("result"))
            .cloned()
            .ok_or_else(|| anyhow!("no result: {:?}", reply.messages))?;
        if let Some(v) = result.get("protocolVersion").and_then(Value::as_str) {
            self.version = v.to_owned();
        }
        self.notify("notifications/initialized", None).await?;
        Ok(result)
    }

    /// A client that has initialized with the given capabilities.
    pub async fn connected(url: &str, capabilities: Value) -> Result<Client> {
        let mut c = Client::new(url);
        c.initialize(capabilities).await?;
        Ok(c)
    }

    fn builder(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        let mut b = self
            .http
            .request(method, &self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        if let Some(s) = &self.session {
            b = b.header("mcp-session-id", s);
            b = b.header("mcp-protocol-version", &self.version);
        }
        b
    }

    /// POSTs a raw body and reads the whole answer.
    pub async fn post(&self, body: &Value) -> Result<Reply> {
        self.send(self.builder(reqwest::Method::POST).body(body.to_string())).await
    }

    /// Sends a prepared request and reads the whole answer.
    pub async fn send(&self, request: reqwest::RequestBuilder) -> Result<Reply> {
        let response = request.send().await?;
        read_reply(response).await
    }

    /// A request builder with this client's headers, to tweak in tests.
    pub fn raw(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        self.builder(method)
    }

    /// A request builder with only the session headers.
    pub fn bare(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        let mut b = self.http.request(method, &self.url);
        if let Some(s) = &self.session {
            b = b.header("mcp-session-id", s).header("mcp-protocol-version", &self.version);
        }
        b
    }

    /// Sends a request and returns its response message (panicking tests
    /// get the whole reply in the error).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value> {
        Ok(self.exchange(method, params).await?.0)
    }

    /// Sends a request; returns its response and the related messages.
    pub async fn exchange(&self, method: &str, params: Value) -> Result<(Value, Vec<Value>)> {
        let id = self.id();
        let reply = self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await?;
        let response = reply.response(&id).cloned().ok_or_else(|| anyhow!("no response to {method}: {reply:?}"))?;
        Ok((response, reply.related().into_iter().cloned().collect()))
    }

    /// The `result` of a request (an error response is an Err).
    pub async fn result(&self, method: &str, params: Value) -> Result<Value> {
        let response = self.request(method, params).await?;
        response.get("result").cloned().ok_or_else(|| anyhow!("{method} failed: {response}"))
    }

    /// Sends a notification; returns the HTTP status (202 when accepted).
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<StatusCode> {
        let mut body = json!({"jsonrpc": "2.0", "method": method});
        if let Some(p) = params {
            body["params"] = p;
        }
        Ok(self.post(&body).await?.status)
    }

    /// Answers a server-to-client request.
    pub async fn respond(&self, id: &Value, result: Value) -> Result<StatusCode> {
        Ok(self.post(&json!({"jsonrpc": "2.0", "id": id, "result": result})).await?.status)
    }

    /// Polls `tasks/get` for `task_id` every half second until the task
    /// completes; an error once it ends otherwise, or is still working
    /// after `within`.
    pub async fn task_completed(&self, task_id: &str, within: Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let task = self.result("tasks/get", json!({"taskId": task_id})).await?;
            match task["status"].as_str() {
                Some("completed") => return Ok(()),
                Some("working") if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                _ => bail!("the task did not complete: {task}"),
            }
        }
    }

    /// Calls a tool; returns the `tools/call` result (or the error response).
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value> {
        let response = self.request("tools/call", json!({"name": name, "arguments": arguments})).await?;
        Ok(response.get("result").cloned().unwrap_or(response))
    }

    /// POSTs a request and returns its SSE/JSON messages as a live stream,
    /// for exchanges where the client must answer mid-request.
    pub async fn open(&self, body: &Value) -> Result<MessageStream> {
        let response = self.builder(reqwest::Method::POST).body(body.to_string()).send().await?;
        MessageStream::new(response).await
    }

    /// POSTs a body and returns the raw SSE events of the answer.
    pub async fn open_events(&self, body: &Value) -> Result<EventStream> {
        let response = self.builder(reqwest::Method::POST).body(body.to_string()).send().await?;
        Ok(EventStream::new(response).await)
    }

    /// `GET` with `Last-Event-ID`: resumes a stream.
    pub async fn resume(&self, last_event_id: &str) -> Result<EventStream> {
        let mut b =
            self.http.get(&self.url).header("accept", "text/event-stream").header("last-event-id", last_event_id);
        if let Some(s) = &self.session {
            b = b.header("mcp-session-id", s).header("mcp-protocol-version", &self.version);
        }
        Ok(EventStream::new(b.send().await?).await)
    }

    /// Opens the standalone GET stream.
    pub async fn listen(&self) -> Result<MessageStream> {
        let mut b = self.http.get(&self.url).header("accept", "text/event-stream");
        if let Some(s) = &self.session {
            b = b.header("mcp-session-id", s).header("mcp-protocol-version", &self.version);
        }
        MessageStream::new(b.send().await?).await
    }

    /// `DELETE`: ends the session.
    pub async fn delete(&self) -> Result<StatusCode> {
        let mut b = self.http.delete(&self.url);
        if let Some(s) = &self.session {
            b = b.header("mcp-session-id", s);
        }
        Ok(b.send().await?.status())
    }
}

/// One SSE event as sent: its id (if any), `retry` (if any) and data.
#[derive(Debug, Clone)]
pub struct RawEvent {
    /// The `id` field.
    pub id: Option<String>,
    /// The `retry` field, in milliseconds.
    pub retry: Option<u64>,
    /// The `data` field (empty when absent).
    pub data: String,
}

/// Raw SSE events of a response, with their ids (for resumption tests).
pub struct EventStream {
    /// The HTTP status.
    pub status: StatusCode,
    rx: tokio::sync::mpsc::UnboundedReceiver<RawEvent>,
    task: tokio::task::JoinHandle<()>,
}

impl EventStream {
    /// Reads the events of `response` as they arrive.
    pub async fn new(response: reqwest::Response) -> EventStream {
        let status = response.status();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let task = toolgate_mcp::spawn(async move {
            let mut events = SseByteStream::new(response.bytes_stream());
            while let Some(Ok(e)) = events.next().await {
                if e.id.is_none() && e.data.is_none() && e.retry.is_none() {
                    continue;
                }
                let event = RawEvent { id: e.id, retry: e.retry, data: e.data.unwrap_or_default() };
                if tx.send(event).is_err() {
                    return;
                }
            }
        });
        EventStream { status, rx, task }
    }

    /// The next event, waiting up to 20 s; None when the stream ended.
    pub async fn next(&mut self) -> Option<RawEvent> {
        tokio::time::timeout(Duration::from_secs(20), self.rx.recv()).await.ok().flatten()
    }

    /// Drops the connection, as a client whose network failed would.
    pub fn disconnect(self) {
        self.task.abort();
    }
}

/// Messages arriving on an open response (JSON or SSE).
pub struct MessageStream {
    /// The HTTP status.
    pub status: StatusCode,
    /// The `Content-Type`, lowercased.
    pub content_type: String,
    rx: tokio::sync::mpsc::UnboundedReceiver<Value>,
}

impl MessageStream {
    async fn new(response: reqwest::Response) -> Result<MessageStream> {
        let status = response.status();
        let content_type = content_type(response.headers());
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        if content_type.starts_with("text/event-stream") {
            toolgate_mcp::spawn(async move {
                let mut events = SseByteStream::new(response.bytes_stream());
                while let Some(Ok(event)) = events.next().await {
                    if let Some(data) = event.data.filter(|d| !d.is_empty()) {
                        match serde_json::from_str::<Value>(&data) {
                            Ok(v) => {
                                if tx.send(v).is_err() {
                                    return;
                                }
                            }
                            Err(e) => eprintln!("bad SSE data {data:?}: {e}"),
                        }
                    }
                }
            });
        } else {
            let bytes = response.bytes().await?;
            for m in body_messages(&bytes) {
                let _ = tx.send(m);
            }
        }
        Ok(MessageStream { status, content_type, rx })
    }

    /// The next message, waiting up to 20 s.
    pub async fn next(&mut self) -> Result<Value> {
        tokio::time::timeout(Duration::from_secs(20), self.rx.recv())
            .await
            .map_err(|_| anyhow!("no message within 20 s"))?
            .ok_or_else(|| anyhow!("the stream ended"))
    }

    /// The next message within `d`, or None.
    pub async fn next_within(&mut self, d: Duration) -> Option<Value> {
        tokio::time::timeout(d, self.rx.recv()).await.ok().flatten()
    }
}

fn content_type(headers: &HeaderMap) -> String {
    headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase()
}

fn body_messages(bytes: &[u8]) -> Vec<Value> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Array(items)) => items,
        Ok(v) => vec![v],
        Err(_) => Vec::new(),
    }
}

async fn read_reply(response: reqwest::Response) -> Result<Reply> {
    let status = response.status();
    let headers = response.headers().clone();
    let content_type = content_type(&headers);
    let mut messages = Vec::new();
    if content_type.starts_with("text/event-stream") {
        let mut events = SseByteStream::new(response.bytes_stream());
        let read = async {
            while let Some(event) = events.next().await {
                let event = event?;
                if let Some(data) = event.data.filter(|d| !d.is_empty()) {
                    messages.push(serde_json::from_str(&data).with_context(|| format!("bad SSE data {data:?}"))?);
                }
            }
            anyhow::Ok(())
        };
        tokio::time::timeout(Duration::from_secs(60), read).await.map_err(|_| anyhow!("SSE answer did not end"))??;
    } else {
        let bytes = response.bytes().await?;
        messages = body_messages(&bytes);
    }
    Ok(Reply { status, headers, content_type, messages })
}

/// The text of the first content block of a tool result.
pub fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or("")
}

/// The JSON inside the first text block of a tool result.
pub fn json_of(result: &Value) -> Value {
    serde_json::from_str(text_of(result)).unwrap_or(Value::Null)
}
