//! The other downstream transports: `toolgate stdio` for clients that launch
//! their servers, and legacy HTTP+SSE for 2024-11-05 clients; and payloads
//! translated for clients on older revisions.

use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow};
use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};
use sse_stream::SseByteStream;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use crate::common::*;

/// `toolgate stdio` as a child, spoken to line by line.
pub(crate) struct StdioGateway {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    _dir: tempfile::TempDir,
}

impl StdioGateway {
    pub(crate) async fn start(upstreams: &str) -> Result<Self> {
        let dir = tempfile::tempdir()?;
        let config = dir.path().join("toolgate.toml");
        std::fs::write(&config, upstreams)?;
        let mut child = Command::new(toolgate_exe())
            .arg("stdio")
            .arg("--config")
            .arg(&config)
            .env("TOOLGATE_LOG", "info")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take().context("stdin")?;
        let lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
        Ok(Self { child, stdin, lines, _dir: dir })
    }

    pub(crate) async fn send(&mut self, message: Value) -> Result<()> {
        self.stdin.write_all(format!("{message}\n").as_bytes()).await?;
        Ok(self.stdin.flush().await?)
    }

    /// Every line until the response with `id`; every line must be JSON.
    pub(crate) async fn until(&mut self, id: Value) -> Result<(Value, Vec<Value>)> {
        let mut others = Vec::new();
        loop {
            let line = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
                .await
                .map_err(|_| anyhow!("no response {id} within 20 s"))??
                .ok_or_else(|| anyhow!("stdout closed"))?;
            let message: Value =
                serde_json::from_str(&line).with_context(|| format!("stdout carried a non-JSON line: {line:?}"))?;
            if message.get("id") == Some(&id) && (message.get("result").is_some() || message.get("error").is_some()) {
                return Ok((message, others));
            }
            others.push(message);
        }
    }

    pub(crate) async fn request(&mut self, id: i64, method: &str, params: Value) -> Result<(Value, Vec<Value>)> {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await?;
        self.until(json!(id)).await
    }
}

/// A Streamable HTTP upstream (2025-11-25, JSON answers) that writes every
/// answer pretty-printed, over several lines, as some servers do.
async fn pretty_printing_upstream() -> Result<(String, tokio::sync::oneshot::Sender<()>)> {
    use axum::response::IntoResponse as _;
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::any(|method: axum::http::Method, body: axum::body::Bytes| async move {
            if method != axum::http::Method::POST {
                return axum::http::StatusCode::METHOD_NOT_ALLOWED.into_response();
            }
            let Ok(message) = serde_json::from_slice::<Value>(&body) else {
                return axum::http::StatusCode::BAD_REQUEST.into_response();
            };
            let Some(id) = message.get("id").cloned() else { return axum::http::StatusCode::ACCEPTED.into_response() };
            let result = match message["method"].as_str().unwrap_or("") {
                "initialize" => json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                       "serverInfo": {"name": "pretty", "version": "1"}}),
                "tools/list" => json!({"tools": [{"name": "lines", "description": "Answers over several lines.",
                                                  "inputSchema": {"type": "object"}}]}),
                "tools/call" => json!({"content": [{"type": "text", "text": "one\ntwo"}], "isError": false}),
                _ => json!({}),
            };
            let body = serde_json::to_string_pretty(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
                .expect("a value is written");
            let mut r = ([("content-type", "application/json")], body).into_response();
            r.headers_mut().insert("mcp-session-id", axum::http::HeaderValue::from_static("pretty-session"));
            r
        }),
    );
    serve_mcp_app(app).await
}

/// A host speaking to `toolgate stdio` reads one message per line. An
/// upstream's result passes through as the text it came as, so one written
/// over several lines must still reach the host as one line: the host
/// lists the tool, reads its description, calls it, and reads the answer.
#[tokio::test]
async fn a_pretty_printed_upstream_answer_reaches_a_stdio_host_as_one_line() -> Result<()> {
    let (url, _stop) = pretty_printing_upstream().await?;
    let mut gw = StdioGateway::start(&http_upstream("pretty", &url, "protocol = \"2025-11-25\"")).await?;
    let (init, _) = gw
        .request(1, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "host", "version": "1"}}))
        .await?;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    gw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
    let (listed, _) = gw.request(2, "tools/list", json!({})).await?;
    let name = listed["result"]["tools"][0]["name"].as_str().context("a listed tool")?.to_owned();
    gw.request(3, "resources/read", json!({"uri": format!("resource:///tool_descriptions?tools={name}")})).await?;
    // `until` fails on any line that is not a whole JSON message.
    let (called, others) = gw.request(4, "tools/call", json!({"name": name, "arguments": {}})).await?;
    assert!(others.is_empty(), "nothing but the answer: {others:?}");
    assert_eq!(called["result"], json!({"content": [{"type": "text", "text": "one\ntwo"}], "isError": false}));
    Ok(())
}

#[tokio::test]
async fn stdio_clients_get_the_whole_workflow_and_stdout_stays_clean() -> Result<()> {
    let mut gw = StdioGateway::start(&fixture_upstream("fx", &[], "")).await?;
    // A 2026-era probe first: an error, so dual-era clients fall back.
    let (probe, _) = gw.request(0, "server/discover", json!({})).await?;
    assert_eq!(probe["error"]["code"], -32601);
    let (init, _) = gw
        .request(1, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {"sampling": {}}, "clientInfo": {"name": "t", "version": "1"}}))
        .await?;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    gw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
    gw.send(json!("not a message")).await?;
    let (refused, before) =
        gw.request(2, "tools/call", json!({"name": "test_tool_with_progress", "arguments": {}})).await?;
    assert!(before.iter().any(|m| m["error"]["code"] == -32600), "the invalid line was answered: {before:?}");
    assert_eq!(json_of(&refused["result"])["error"]["code"], "TOOL_DESCRIPTION_REQUIRED");
    gw.request(
        3,
        "resources/read",
        json!({"uri": "resource:///tool_descriptions?tools=test_tool_with_progress,test_sampling"}),
    )
    .await?;
    let (done, related) = gw
        .request(
            4,
            "tools/call",
            json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "t"}}),
        )
        .await?;
    assert!(done["result"].is_object(), "{done}");
    assert!(
        related.iter().any(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == "t"),
        "{related:?}"
    );

    // Sampling round trip over stdio: answer the server's request mid-call.
    gw.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "test_sampling", "arguments": {"prompt": "hi"}}})).await?;
    let request = loop {
        let line = gw.lines.next_line().await?.context("stdout closed")?;
        let m: Value = serde_json::from_str(&line)?;
        if m["method"] == "sampling/createMessage" {
            break m;
        }
    };
    gw.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"role": "assistant",
        "content": {"type": "text", "text": "sampled over stdio"}, "model": "m", "stopReason": "endTurn"}}))
        .await?;
    let (answer, _) = gw.until(json!(5)).await?;
    assert!(answer.to_string().contains("sampled over stdio"), "{answer}");

    // Closing stdin ends toolgate cleanly.
    drop(gw.stdin);
    let status = tokio::time::timeout(Duration::from_secs(15), gw.child.wait()).await??;
    assert!(status.success(), "{status}");
    Ok(())
}

/// A legacy HTTP+SSE client: the stream, and the endpoint it names.
pub(crate) struct LegacyClient {
    http: reqwest::Client,
    base: String,
    endpoint: String,
    events: tokio::sync::mpsc::UnboundedReceiver<Value>,
}

impl LegacyClient {
    pub(crate) async fn connect(gw: &Toolgate) -> Result<Self> {
        let base = gw.url.trim_end_matches("/mcp").to_owned();
        let http = reqwest::Client::new();
        let response = http.get(format!("{base}/sse")).header("accept", "text/event-stream").send().await?;
        assert_eq!(response.status(), StatusCode::OK);
        let mut stream = SseByteStream::new(response.bytes_stream());
        let first = stream.next().await.context("no endpoint event")??;
        assert_eq!(first.event.as_deref(), Some("endpoint"));
        let endpoint = first.data.context("endpoint data")?;
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(Ok(e)) = stream.next().await {
                if e.event.as_deref() == Some("message")
                    && let Some(v) = e.data.and_then(|d| serde_json::from_str::<Value>(&d).ok())
                    && tx.send(v).is_err()
                {
                    return;
                }
            }
        });
        Ok(Self { http, base, endpoint, events })
    }

    async fn post(&self, message: Value) -> Result<StatusCode> {
        let url = format!("{}{}", self.base, self.endpoint);
        Ok(self
            .http
            .post(url)
            .header("content-type", "application/json")
            .body(message.to_string())
            .send()
            .await?
            .status())
    }

    pub(crate) async fn request(&mut self, id: i64, method: &str, params: Value) -> Result<Value> {
        assert_eq!(
            self.post(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await?,
            StatusCode::ACCEPTED
        );
        loop {
            let m = tokio::time::timeout(Duration::from_secs(20), self.events.recv()).await?.context("stream ended")?;
            if m["id"] == id && m.get("method").is_none() {
                return Ok(m);
            }
        }
    }
}

#[tokio::test]
async fn legacy_sse_clients_on_2024_11_05_are_served_and_their_content_translated() -> Result<()> {
    let gw = Toolgate::start(&fixture_upstream("fx", &[], "")).await?;
    let mut c = LegacyClient::connect(&gw).await?;
    assert!(c.endpoint.starts_with("/messages?sessionId="), "{}", c.endpoint);
    let init = c
        .request(
            1,
            "initialize",
            json!({"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}),
        )
        .await?;
    assert_eq!(init["result"]["protocolVersion"], "2024-11-05");
    c.post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
    let tools = c.request(2, "tools/list", json!({})).await?;
    assert!(tools["result"]["tools"].as_array().unwrap().len() > 10);
    c.request(3, "resources/read", json!({"uri": "resource:///tool_descriptions?tools=test_audio_content"})).await?;
    let audio = c.request(4, "tools/call", json!({"name": "test_audio_content", "arguments": {}})).await?;
    // 2024-11-05 has no audio content: it arrives as an embedded resource with the same data.
    let block = &audio["result"]["content"][0];
    assert_eq!(block["type"], "resource", "{audio}");
    assert_eq!(block["resource"]["mimeType"], "audio/wav");
    assert!(block["resource"]["blob"].as_str().is_some_and(|b| !b.is_empty()));

    let bogus = c
        .http
        .post(format!("{}/messages?sessionId=nope", c.base))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await?;
    assert_eq!(bogus.status(), StatusCode::NOT_FOUND);
    Ok(())
}

#[tokio::test]
async fn streamable_clients_on_older_revisions_get_translated_content() -> Result<()> {
    let gw = Toolgate::start(&fixture_upstream("fx", &[], "")).await?;
    for (version, expected) in [("2025-03-26", "audio"), ("2024-11-05", "resource"), ("2025-11-25", "audio")] {
        let mut c = Client::new(&gw.url);
        c.version = version.into();
        c.initialize(json!({})).await?;
        c.read_descriptions("test_audio_content").await?;
        let r = c.call_tool("test_audio_content", json!({})).await?;
        assert_eq!(r["content"][0]["type"], expected, "{version}: {r}");
    }
    Ok(())
}
