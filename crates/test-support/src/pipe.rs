//! A scripted MCP client over an in-memory pipe, for handler tests: it
//! drives an [`Engine`] through the engine's real stdio transport
//! ([`stdio::serve`]) with newline-delimited JSON-RPC, so what a test sees is
//! what a stdio client would.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;

use toolgate_mcp::server::{Engine, Handler, stdio};

/// How long a test waits for a message it expects.
pub const WAIT: Duration = Duration::from_secs(10);

/// One client session over a pipe to an engine.
pub struct PipeClient {
    writer: WriteHalf<DuplexStream>,
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    /// Messages read while waiting for something else, oldest first.
    pub backlog: VecDeque<Value>,
    /// The server task: ends when the pipe closes.
    pub server: JoinHandle<io::Result<()>>,
    next_id: u64,
}

impl PipeClient {
    /// Serves `engine` on a fresh duplex pipe, as a stdio server would.
    pub fn start<H: Handler>(engine: Arc<Engine<H>>) -> Self {
        let (client, server) = tokio::io::duplex(1 << 20);
        let (sr, sw) = tokio::io::split(server);
        let server = toolgate_mcp::spawn(stdio::serve(engine, sr, sw));
        let (cr, cw) = tokio::io::split(client);
        Self { writer: cw, lines: BufReader::new(cr).lines(), backlog: VecDeque::new(), server, next_id: 1000 }
    }

    /// Starts and completes the handshake with `capabilities`.
    pub async fn initialized<H: Handler>(engine: Arc<Engine<H>>, capabilities: Value) -> Self {
        let mut c = Self::start(engine);
        let r = c
            .request(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": capabilities, "clientInfo": {"name": "t", "version": "0"}}),
            )
            .await;
        assert!(r.get("result").is_some(), "{r}");
        c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        c
    }

    /// Writes raw text (the caller adds the newline).
    pub async fn send_raw(&mut self, text: &str) {
        self.send_bytes(text.as_bytes()).await;
    }

    /// Writes raw bytes.
    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.expect("write");
        self.writer.flush().await.expect("flush");
    }

    /// Writes one message and its newline.
    pub async fn send(&mut self, message: Value) {
        self.send_raw(&format!("{message}\n")).await;
    }

    /// Closes the client's side of the pipe (EOF for the server).
    pub async fn close(&mut self) {
        self.writer.shutdown().await.expect("shutdown");
    }

    /// The next message from the server, or `None` after `wait`.
    pub async fn recv_within(&mut self, wait: Duration) -> Option<Value> {
        if let Some(v) = self.backlog.pop_front() {
            return Some(v);
        }
        let line = tokio::time::timeout(wait, self.lines.next_line()).await.ok()?.expect("read")?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("server wrote invalid JSON {line:?}: {e}")))
    }

    /// The next message from the server; fails the test after [`WAIT`].
    pub async fn recv(&mut self) -> Value {
        self.recv_within(WAIT).await.expect("timed out waiting for the server")
    }

    /// Sends a request with a fresh id and returns its id.
    pub async fn send_request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        id
    }

    /// Waits for the response with `id`; other messages go to the backlog.
    pub async fn response(&mut self, id: &Value) -> Value {
        let mut skipped = Vec::new();
        let found = loop {
            let line = tokio::time::timeout(WAIT, async {
                if let Some(v) = self.backlog.pop_front() {
                    return Some(v);
                }
                let line = self.lines.next_line().await.expect("read")?;
                Some(serde_json::from_str::<Value>(&line).expect("server wrote invalid JSON"))
            })
            .await
            .expect("timed out waiting for a response")
            .expect("server closed the pipe");
            if line.get("id") == Some(id) && line.get("method").is_none() {
                break line;
            }
            skipped.push(line);
        };
        for v in skipped.into_iter().rev() {
            self.backlog.push_front(v);
        }
        found
    }

    /// Sends a request and waits for its response (the whole message).
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params).await;
        self.response(&json!(id)).await
    }

    /// Sends a request and returns its `result`, failing the test on an error.
    pub async fn result(&mut self, method: &str, params: Value) -> Value {
        let r = self.request(method, params).await;
        r.get("result").cloned().unwrap_or_else(|| panic!("{method} failed: {r}"))
    }

    /// Calls a tool and returns the `CallToolResult`.
    pub async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.result("tools/call", json!({"name": tool, "arguments": arguments})).await
    }

    /// Takes the backlog messages that are notifications with `method`.
    pub fn take_notifications(&mut self, method: &str) -> Vec<Value> {
        let (hits, rest): (Vec<_>, Vec<_>) = self
            .backlog
            .drain(..)
            .partition(|m| m.get("method").and_then(Value::as_str) == Some(method) && m.get("id").is_none());
        self.backlog = rest.into();
        hits
    }
}

/// The text of the first content block of a `CallToolResult`.
pub fn first_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text content in {result}"))
}
