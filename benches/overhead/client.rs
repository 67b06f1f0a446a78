//! A minimal MCP client over Streamable HTTP for the load generator: one
//! session on one keep-alive HTTP/1.1 connection, requests with a known id,
//! and answers read as plain JSON or as SSE (toolgate streams forwarded tool
//! calls: a priming event with empty data, then the response event).
//!
//! It speaks 2025-11-25 (an `initialize`d session), or, with
//! `TOOLGATE_BENCH_CLIENT=2026-07-28`, the sessionless revision: no
//! handshake, each request carrying its `_meta` envelope and the
//! `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers.
//!
//! Timing stops when the whole body has arrived; decoding and checking the
//! answer happen after, so the client's JSON parsing is not counted.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use bytes::Bytes;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};

/// The revision the benchmark's session client speaks.
pub const VERSION: &str = "2025-11-25";

/// The sessionless revision (`TOOLGATE_BENCH_CLIENT=2026-07-28`).
pub const MODERN: &str = "2026-07-28";

/// Whether the benchmark client is a sessionless 2026-07-28 one.
pub fn sessionless() -> bool {
    static SESSIONLESS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SESSIONLESS.get_or_init(|| std::env::var("TOOLGATE_BENCH_CLIENT").is_ok_and(|v| v == MODERN))
}

/// The `_meta` envelope of a sessionless request, as JSON object members.
const ENVELOPE: &str = concat!(
    r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
    r#""io.modelcontextprotocol/clientCapabilities":{},"#,
    r#""io.modelcontextprotocol/clientInfo":{"name":"toolgate-overhead-bench","version":"1"}"#
);

/// A request body, with what the sessionless revision mirrors in headers.
pub struct Body {
    json: String,
    method: &'static str,
    name: Option<String>,
}

/// Why a request did not give the expected answer.
#[derive(Debug, Clone)]
pub enum Failure {
    /// The HTTP exchange failed.
    Transport(String),
    /// A status other than 200.
    Status(u16),
    /// The body was not JSON-RPC, or held no message.
    Body(String),
    /// No response carried the request's id.
    WrongId(String),
    /// The response had the id but not the expected content.
    WrongContent(String),
    /// A JSON-RPC error or a tool error.
    Error(String),
}

impl Failure {
    /// The failure class, for counting.
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Transport(_) => "transport",
            Failure::Status(_) => "http-status",
            Failure::Body(_) => "bad-body",
            Failure::WrongId(_) => "wrong-id",
            Failure::WrongContent(_) => "wrong-content",
            Failure::Error(_) => "error",
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Transport(e) => write!(f, "transport: {e}"),
            Failure::Status(s) => write!(f, "HTTP {s}"),
            Failure::Body(e) => write!(f, "bad body: {e}"),
            Failure::WrongId(e) => write!(f, "no response with the request's id: {e}"),
            Failure::WrongContent(e) => write!(f, "wrong content: {e}"),
            Failure::Error(e) => write!(f, "error: {e}"),
        }
    }
}

/// A raw answer: the body as received, and how long the round trip took.
pub struct Answer {
    pub elapsed: Duration,
    content_type: String,
    body: Bytes,
}

impl Answer {
    /// The body size in bytes.
    pub fn len(&self) -> usize {
        self.body.len()
    }

    /// The JSON-RPC messages in the body (one JSON message, or the data of
    /// every SSE event that has any).
    pub fn messages(&self) -> Result<Vec<Value>, Failure> {
        if self.content_type.starts_with("text/event-stream") {
            let text = std::str::from_utf8(&self.body).map_err(|e| Failure::Body(e.to_string()))?;
            sse_data(text)
                .into_iter()
                .map(|d| serde_json::from_str(&d).map_err(|e| Failure::Body(format!("{e}: {d}"))))
                .collect()
        } else {
            serde_json::from_slice(&self.body).map(|v| vec![v]).map_err(|e| Failure::Body(e.to_string()))
        }
    }

    /// The response to request `id`.
    pub fn response(&self, id: u64) -> Result<Value, Failure> {
        let messages = self.messages()?;
        let found = messages.iter().find(|m| m.get("id").and_then(Value::as_u64) == Some(id));
        match found {
            Some(m) if m.get("error").is_some() => Err(Failure::Error(m["error"].to_string())),
            Some(m) => Ok(m.clone()),
            None => Err(Failure::WrongId(format!("wanted {id}, got {}", Value::Array(messages)))),
        }
    }
}

/// The data of each SSE event that has non-empty data.
fn sse_data(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut data: Option<String> = None;
    for line in text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)) {
        if line.is_empty() {
            if let Some(d) = data.take().filter(|d| !d.is_empty()) {
                out.push(d);
            }
            continue;
        }
        if let Some(v) = line.strip_prefix("data:") {
            let v = v.strip_prefix(' ').unwrap_or(v);
            match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(v);
                }
                None => data = Some(v.to_owned()),
            }
        }
    }
    if let Some(d) = data.filter(|d| !d.is_empty()) {
        out.push(d);
    }
    out
}

/// An HTTP client for benchmark sessions: HTTP/1.1 only, keep-alive; with
/// `TOOLGATE_BENCH_HTTP2` set, HTTP/2 with prior knowledge instead (every
/// session's calls multiplexed on one connection).
pub fn http_client() -> reqwest::Client {
    let builder = reqwest::Client::builder();
    let builder = match std::env::var_os("TOOLGATE_BENCH_HTTP2") {
        Some(_) => builder.http2_prior_knowledge(),
        None => builder.http1_only(),
    };
    builder
        .tcp_nodelay(true)
        .pool_max_idle_per_host(64)
        .timeout(Duration::from_secs(60))
        .build()
        .expect("a plain HTTP client builds")
}

/// One initialized MCP session, or a sessionless client.
pub struct Session {
    http: reqwest::Client,
    url: String,
    /// `None`: a sessionless (2026-07-28) client.
    id: Option<HeaderValue>,
}

impl Session {
    /// `initialize` + `notifications/initialized` on `http` (nothing for a
    /// sessionless client: see [`sessionless`]).
    pub async fn open(http: reqwest::Client, url: &str) -> Result<Session> {
        if sessionless() {
            return Ok(Session { http, url: url.to_owned(), id: None });
        }
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": VERSION, "capabilities": {},
            "clientInfo": {"name": "toolgate-overhead-bench", "version": "1"}}});
        let init = Body { json: init.to_string(), method: "initialize", name: None };
        let response = post(&http, url, None, init).await.context("initialize")?;
        let id = response.headers().get("mcp-session-id").cloned().context("initialize: no Mcp-Session-Id")?;
        let status = response.status();
        let body = response.text().await?;
        if status != 200 {
            bail!("initialize: HTTP {status}: {body}");
        }
        let session = Session { http, url: url.to_owned(), id: Some(id) };
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let note = Body { json: note.to_string(), method: "notifications/initialized", name: None };
        let r = post(&session.http, url, session.id.as_ref(), note).await?;
        if r.status() != 202 {
            bail!("notifications/initialized: HTTP {}", r.status());
        }
        Ok(session)
    }

    /// Sends a request body (with id `id` inside) and reads the whole answer.
    pub async fn send(&self, body: Body) -> Result<Answer, Failure> {
        let start = Instant::now();
        let response =
            post(&self.http, &self.url, self.id.as_ref(), body).await.map_err(|e| Failure::Transport(e.to_string()))?;
        let status = response.status().as_u16();
        let content_type =
            response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
        let body = response.bytes().await.map_err(|e| Failure::Transport(e.to_string()))?;
        let elapsed = start.elapsed();
        if status != 200 {
            return Err(Failure::Status(status));
        }
        Ok(Answer { elapsed, content_type, body })
    }

    /// Sends request `method` with `params` as id `id` and returns its response.
    pub async fn request(&self, id: u64, method: &'static str, mut params: Value) -> Result<(Value, Answer)> {
        let name = ["name", "uri"].iter().find_map(|k| params.get(*k)?.as_str()).map(str::to_owned);
        if self.id.is_none() {
            let envelope: Value = serde_json::from_str(&format!("{{{ENVELOPE}}}"))?;
            params["_meta"] = envelope;
        }
        let json = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        let body = Body { json, method, name };
        let answer = self.send(body).await.map_err(|e| anyhow!("{method}: {e}"))?;
        let response = answer.response(id).map_err(|e| anyhow!("{method}: {e}"))?;
        Ok((response, answer))
    }

    /// Ends the session (`DELETE`; nothing to end for a sessionless client).
    pub async fn close(&self) {
        if let Some(id) = &self.id {
            let _ = self.http.delete(&self.url).header("mcp-session-id", id).send().await;
        }
    }
}

async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&HeaderValue>,
    body: Body,
) -> reqwest::Result<reqwest::Response> {
    let req =
        http.post(url).header(ACCEPT, "application/json, text/event-stream").header(CONTENT_TYPE, "application/json");
    let req = match session {
        Some(id) => req.header("mcp-protocol-version", VERSION).header("mcp-session-id", id),
        None if body.method == "initialize" || !sessionless() => req.header("mcp-protocol-version", VERSION),
        None => {
            let req = req.header("mcp-protocol-version", MODERN).header("mcp-method", body.method);
            match &body.name {
                Some(name) => req.header("mcp-name", name),
                None => req,
            }
        }
    };
    req.body(body.json).send().await
}

/// The body of `tools/call echo {"text": text}` with id `id`.
pub fn echo_body(id: u64, text: &str) -> Body {
    call_body(id, "echo", text)
}

/// The body of `tools/call tool {"text": text}` with id `id` (with the
/// `_meta` envelope, from a sessionless client). `tool` and `text` are
/// plain ASCII without quotes or backslashes: nothing to escape.
pub fn call_body(id: u64, tool: &str, text: &str) -> Body {
    let meta = if sessionless() { format!(r#","_meta":{{{ENVELOPE}}}"#) } else { String::new() };
    let json = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"text":"{text}"}}{meta}}}}}"#
    );
    Body { json, method: "tools/call", name: Some(tool.to_owned()) }
}

/// Checks the answer to an echo call: the right id, and `text` back.
pub fn verify_echo(answer: &Answer, id: u64, text: &str) -> Result<(), Failure> {
    let response = answer.response(id)?;
    let result = &response["result"];
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(Failure::Error(result.to_string()));
    }
    match result.pointer("/content/0/text").and_then(Value::as_str) {
        Some(t) if t == text => Ok(()),
        _ => Err(Failure::WrongContent(format!("sent {text:?}, got {result}"))),
    }
}
