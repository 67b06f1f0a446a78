//! The per-request details of the 2026-07-28 revision through the real
//! binary: a 2026 client's `Mcp-Param-*` headers (checked against the
//! arguments where the tool's schema declares them, forwarded to a 2026 HTTP
//! upstream where it does not, never duplicated, nothing else of the
//! client's headers passed on), toolgate's own `serverInfo` on every 2026
//! result, and a 2025 session's `logging/setLevel` carried to a 2026
//! upstream as the per-request log level.

use std::time::Duration;

use anyhow::{Result, anyhow};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::*;

/// A 2026 request: the envelope in `params._meta`, and the routing headers.
async fn post(c: &Client, id: i64, method: &str, params: Value, extra: &[(&str, &str)]) -> Result<Reply> {
    let body = modern_body("params-test", json!(id), method, params);
    let name = body["params"].get("name").or_else(|| body["params"].get("uri")).and_then(Value::as_str);
    let mut b = modern_post(c, &body, name);
    for (k, v) in extra {
        b = b.header(*k, *v);
    }
    c.send(b).await
}

/// The answer of a 2026 request (the last message: progress may come first).
fn answer(r: &Reply) -> Result<&Value> {
    r.messages.last().ok_or_else(|| anyhow!("no answer: {r:?}"))
}

/// What the echo upstream saw: its headers and envelope.
fn seen(r: &Reply) -> Result<Value> {
    let result = &answer(r)?["result"];
    Ok(serde_json::from_str(text_of(result))?)
}

/// toolgate in front of the modern-only Python echo server, in `mode`.
async fn echo_gateway(mode: &str) -> Result<(Proc, Toolgate)> {
    let script = repo_path("tests/python/modern_echo_server.py").display().to_string();
    let (upstream, url) = start_http_server(&python(), &[&script, "--port", "0"]).await?;
    let gw = Toolgate::start(&http_upstream("echo", &url, &format!("mode = \"{mode}\""))).await?;
    gw.wait_log("upstream speaks the sessionless revision upstream=echo", Duration::from_secs(20)).await?;
    Ok((upstream, gw))
}

fn assert_header_mismatch(r: &Reply, header: &str) -> Result<()> {
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r:?}");
    let e = &answer(r)?["error"];
    assert_eq!(e["code"], -32020, "{e}");
    assert_eq!(e["data"]["mismatch"]["header"], header, "{e}");
    Ok(())
}

#[tokio::test]
async fn param_headers_are_checked_then_forwarded_to_a_2026_http_upstream() -> Result<()> {
    let (_upstream, gw) = echo_gateway("passthrough").await?;
    let c = gw.client();
    let args = json!({"name": "echo_headers", "arguments": {"region": "us-west1", "count": 42}});

    let r = post(
        &c,
        1,
        "tools/call",
        args.clone(),
        &[
            ("mcp-param-region", "us-west1"),
            ("mcp-param-count", "42.0"),
            ("mcp-param-custom", "=?base64?w6k=?="),
            ("authorization", "Bearer client-secret"),
            ("x-client-other", "no"),
        ],
    )
    .await?;
    assert_eq!(r.status, StatusCode::OK, "{r:?}");
    let h = &seen(&r)?["headers"];
    // The client's header toolgate does not know travels as sent.
    assert_eq!(h["mcp-param-custom"], "=?base64?w6k=?=", "{h}");
    // Declared ones are toolgate's own, from the arguments: once each.
    assert_eq!(h["mcp-param-region"], "us-west1", "{h}");
    assert_eq!(h["mcp-param-count"], "42", "generated from the body, not the client's 42.0: {h}");
    assert!(h.get("authorization").is_none(), "the client's Authorization never goes upstream: {h}");
    assert!(h.get("x-client-other").is_none(), "{h}");
    assert_eq!(h["mcp-name"], "echo_headers", "{h}");

    // toolgate's identity on the result; the upstream's kept aside.
    let meta = &answer(&r)?["result"]["_meta"];
    assert_eq!(meta["io.modelcontextprotocol/serverInfo"]["name"], "toolgate", "{meta}");
    assert_eq!(meta["dev.toolgate/upstreamServerInfo"]["name"], "modern-echo", "{meta}");
    let list = post(&c, 2, "tools/list", json!({}), &[]).await?;
    let list = &answer(&list)?["result"];
    assert_eq!(list["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "toolgate", "{list}");
    assert_eq!(list["resultType"], "complete");

    // The client saw the annotations (passthrough): a header that disagrees
    // with the body, or one missing for an argument it sent, is refused
    // before anything is forwarded.
    let r = post(&c, 3, "tools/call", args.clone(), &[("mcp-param-region", "eu"), ("mcp-param-count", "42")]).await?;
    assert_header_mismatch(&r, "mcp-param-region")?;
    let r = post(&c, 4, "tools/call", args.clone(), &[("mcp-param-region", "us-west1")]).await?;
    assert_header_mismatch(&r, "mcp-param-count")?;
    let r = post(
        &c,
        5,
        "tools/call",
        args.clone(),
        &[("mcp-param-region", "=?base64?dXMtd2VzdDE?="), ("mcp-param-count", "42")],
    )
    .await?;
    assert_header_mismatch(&r, "mcp-param-region")?;
    // Base64 that decodes to the argument is the argument.
    let r =
        post(&c, 6, "tools/call", args, &[("mcp-param-region", "=?base64?dXMtd2VzdDE=?="), ("mcp-param-count", "42")])
            .await?;
    assert_eq!(r.status, StatusCode::OK, "{r:?}");

    // A 2025 session's calls carry no client headers: toolgate's own only.
    let s = Client::connected(&gw.url, json!({})).await?;
    let r = s.call_tool("echo_headers", json!({"region": "eu"})).await?;
    let seen: Value = serde_json::from_str(text_of(&r))?;
    assert_eq!(seen["headers"]["mcp-param-region"], "eu");
    assert!(r.get("_meta").and_then(|m| m.get("dev.toolgate/upstreamServerInfo")).is_none(), "{r}");
    Ok(())
}

#[tokio::test]
async fn progressive_mode_checks_only_the_param_headers_sent() -> Result<()> {
    let (_upstream, gw) = echo_gateway("progressive").await?;
    let c = gw.client();
    let read =
        post(&c, 1, "resources/read", json!({"uri": "resource:///tool_descriptions?tools=echo_headers"}), &[]).await?;
    assert_eq!(read.status, StatusCode::OK, "{read:?}");
    let args = json!({"name": "echo_headers", "arguments": {"region": "us-west1", "count": 7}});

    // The minimal schema hides the annotations: none sent is fine, and the
    // upstream still gets them, generated from the full schema.
    let r = post(&c, 2, "tools/call", args.clone(), &[]).await?;
    assert_eq!(r.status, StatusCode::OK, "{r:?}");
    let h = &seen(&r)?["headers"];
    assert_eq!((h["mcp-param-region"].clone(), h["mcp-param-count"].clone()), (json!("us-west1"), json!("7")), "{h}");
    // One sent is checked.
    let r = post(&c, 3, "tools/call", args.clone(), &[("mcp-param-count", "8")]).await?;
    assert_header_mismatch(&r, "mcp-param-count")?;
    let r = post(&c, 4, "tools/call", args, &[("mcp-param-count", "7")]).await?;
    assert_eq!(r.status, StatusCode::OK, "{r:?}");
    Ok(())
}

#[tokio::test]
async fn a_2025_sessions_log_level_reaches_a_2026_upstream() -> Result<()> {
    // The fixture speaks both eras; `protocol = "auto"` makes it a 2026
    // upstream, which sends logs only for a request that names a level.
    let gw = Toolgate::start(&fixture_upstream("fx", &[], "mode = \"passthrough\"")).await?;
    gw.wait_log("upstream speaks the sessionless revision upstream=fx", Duration::from_secs(20)).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let logs = |related: &[Value]| -> Vec<String> {
        related
            .iter()
            .filter(|m| m["method"] == "notifications/message")
            .filter_map(|m| m["params"]["level"].as_str().map(str::to_owned))
            .collect()
    };
    let call = || c.exchange("tools/call", json!({"name": "test_tool_with_logging", "arguments": {}}));

    let (response, related) = call().await?;
    assert!(response["result"].is_object(), "{response}");
    assert_eq!(logs(&related), Vec::<String>::new(), "no level set, none asked for: {related:?}");

    // Answered by toolgate (the 2026 upstream has no such method)...
    assert_eq!(c.result("logging/setLevel", json!({"level": "debug"})).await?, json!({}));
    // ...and stamped on the session's requests to the upstream.
    let (response, related) = call().await?;
    assert!(response["result"].is_object(), "{response}");
    let all = logs(&related);
    assert_eq!(all.len(), 5, "every level at debug: {related:?}");
    assert!(all.contains(&"debug".to_owned()), "{all:?}");

    assert_eq!(c.result("logging/setLevel", json!({"level": "error"})).await?, json!({}));
    let (_, related) = call().await?;
    assert_eq!(logs(&related), ["error"], "{related:?}");
    Ok(())
}
