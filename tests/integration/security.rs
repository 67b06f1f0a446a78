//! What must never cross from one leg to the other: downstream credentials
//! and session ids; and what must not leave for another server: the
//! configured upstream headers, through a redirect to another origin.

use std::sync::Arc;

use anyhow::Result;
use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::common::*;

/// A minimal Streamable HTTP MCP server that records every request's headers.
pub(crate) async fn recording_upstream() -> Result<(String, Arc<Mutex<Vec<HeaderMap>>>)> {
    let seen: Arc<Mutex<Vec<HeaderMap>>> = Arc::default();
    let record = seen.clone();
    let app = Router::new().route(
        "/mcp",
        axum::routing::any(move |headers: HeaderMap, body: Bytes| {
            let record = record.clone();
            async move {
                record.lock().push(headers);
                let Ok(message) = serde_json::from_slice::<Value>(&body) else {
                    return StatusCode::METHOD_NOT_ALLOWED.into_response();
                };
                let Some(id) = message.get("id").cloned() else { return StatusCode::ACCEPTED.into_response() };
                let result = match message["method"].as_str().unwrap_or("") {
                    "initialize" => json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                           "serverInfo": {"name": "recorder", "version": "1"}}),
                    "tools/list" => json!({"tools": [{"name": "whoami", "description": "Says who is asking.",
                                                      "inputSchema": {"type": "object"}}]}),
                    "tools/call" => json!({"content": [{"type": "text", "text": "ok"}]}),
                    _ => json!({}),
                };
                let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
                let mut r: Response = ([("content-type", "application/json")], body).into_response();
                r.headers_mut().insert("mcp-session-id", "upstream-session-1".parse().unwrap());
                r
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((url, seen))
}

#[tokio::test]
async fn downstream_credentials_and_session_ids_never_reach_the_upstream() -> Result<()> {
    let (url, seen) = recording_upstream().await?;
    let gw = Toolgate::start(&http_upstream(
        "rec",
        &url,
        "headers = { Authorization = \"Bearer upstream-secret\", X-Team = \"blue\" }",
    ))
    .await?;
    let mut c = Client::new(&gw.url);
    c.initialize(json!({})).await?;
    let downstream_session = c.session.clone().unwrap();
    let sneaky = |b: reqwest::RequestBuilder| {
        b.header("authorization", "Bearer downstream-secret").header("cookie", "sid=downstream")
    };
    for body in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "resource:///tool_descriptions?tools=whoami"}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}),
    ] {
        let r = c.send(sneaky(c.raw(reqwest::Method::POST)).body(body.to_string())).await?;
        assert_eq!(r.status, reqwest::StatusCode::OK);
    }
    let seen = seen.lock().clone();
    assert!(seen.len() >= 4, "initialize, initialized, tools/list, tools/call at least: {}", seen.len());
    for headers in &seen {
        assert_eq!(headers["authorization"], "Bearer upstream-secret", "only the configured credential");
        assert_eq!(headers["x-team"], "blue");
        assert!(headers.get("cookie").is_none());
        let text = format!("{headers:?}");
        assert!(!text.contains("downstream-secret") && !text.contains(&downstream_session), "{text}");
    }
    // After the handshake, the upstream sees its own session id and revision.
    let call = seen.last().unwrap();
    assert_eq!(call["mcp-session-id"], "upstream-session-1");
    assert_eq!(call["mcp-protocol-version"], "2025-06-18");
    Ok(())
}

#[tokio::test]
async fn upstream_redirects_to_another_origin_are_not_followed() -> Result<()> {
    // B records every request; A answers every request with a redirect to B
    // (another port: another origin). A legacy SSE upstream, whose stream is
    // opened by the general HTTP client (the one that could follow).
    let (elsewhere, seen) = recording_upstream().await?;
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = hits.clone();
    let app = Router::new().route(
        "/mcp",
        axum::routing::any(move || {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let location = elsewhere.clone();
            async move { (StatusCode::TEMPORARY_REDIRECT, [("location", location)]).into_response() }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });

    let gw = Toolgate::start(&http_upstream(
        "moved",
        &url,
        "transport = \"sse\"\nheaders = { Authorization = \"Bearer upstream-secret\", X-Team = \"blue\" }",
    ))
    .await?;
    let mut c = Client::new(&gw.url);
    c.initialize(json!({})).await?;
    // Whatever toolgate answers, it has tried the upstream by then.
    let _ = c.request("tools/list", json!({})).await;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while hits.load(std::sync::atomic::Ordering::SeqCst) == 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(hits.load(std::sync::atomic::Ordering::SeqCst) > 0, "toolgate never contacted the upstream");
    // Time for a followed redirect to arrive, had there been one.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let reached = seen.lock().clone();
    assert!(reached.is_empty(), "a redirect to another origin was followed: {reached:?}");
    Ok(())
}

#[tokio::test]
async fn client_notifications_named_like_requests_reach_no_upstream() -> Result<()> {
    let (url, seen) = recording_upstream().await?;
    let gw = Toolgate::start(&http_upstream("rec", &url, "mode = \"passthrough\"\nsharing = \"per_session\"")).await?;
    let mut c = Client::new(&gw.url);
    c.initialize(json!({})).await?;
    // The session's own upstream connection.
    c.result("tools/call", json!({"name": "whoami", "arguments": {}})).await?;
    let count = || seen.lock().len();
    let settle = || tokio::time::sleep(std::time::Duration::from_millis(300));
    settle().await;
    let before = count();
    // A request without its id: dropped, whatever its method.
    for method in ["tools/call", "resources/read", "initialize"] {
        c.notify(method, Some(json!({"name": "whoami", "arguments": {}}))).await?;
    }
    settle().await;
    assert_eq!(count(), before, "a notification named like a request reached the upstream");
    // A vendor notification does reach the session's upstream (the control
    // that shows the upstream would have seen the others).
    c.notify("notifications/vendor/hello", None).await?;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while count() == before && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(count(), before + 1, "the vendor notification did not reach the upstream");
    Ok(())
}
