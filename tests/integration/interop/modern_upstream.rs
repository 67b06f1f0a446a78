//! A modern-only (2026-07-28) upstream over Streamable HTTP
//! (`tests/python/modern_echo_server.py`, which echoes what it received):
//! toolgate finds the era with `server/discover`, sends every request with
//! the `_meta` envelope and the routing headers (`Mcp-Param-*` from the
//! tools' `x-mcp-header`), leaves out a tool whose annotation is invalid,
//! and gives a 2025 client results without the modern-only fields.

use std::time::Duration;

use anyhow::Result;
use serde_json::{Value, json};

use crate::common::*;

#[tokio::test]
async fn a_modern_http_upstream_gets_the_envelope_and_the_routing_headers() -> Result<()> {
    let script = repo_path("tests/python/modern_echo_server.py").display().to_string();
    let (_upstream, url) = start_http_server(&python(), &[&script, "--port", "0"]).await?;
    let gw = Toolgate::start(&http_upstream("echo", &url, "mode = \"passthrough\"")).await?;
    gw.wait_log("upstream speaks the sessionless revision upstream=echo", Duration::from_secs(20)).await?;

    let c = Client::connected(&gw.url, json!({"sampling": {}})).await?;
    let list = c.result("tools/list", json!({})).await?;
    let names: Vec<&str> = list["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["echo_headers"], "the tool with an invalid x-mcp-header is left out: {list}");
    gw.wait_log("tool `bad_number_header`", Duration::from_secs(5)).await?;

    let r = c
        .call_tool("echo_headers", json!({"region": "us-west1", "note": " padded ", "count": 42, "flag": true}))
        .await?;
    assert!(r.get("resultType").is_none(), "a 2025 client gets no modern-only fields: {r}");
    let seen: Value = serde_json::from_str(text_of(&r))?;
    let h = &seen["headers"];
    assert_eq!(h["mcp-protocol-version"], "2026-07-28", "{h}");
    assert_eq!(h["mcp-method"], "tools/call", "{h}");
    assert_eq!(h["mcp-name"], "echo_headers", "{h}");
    assert_eq!(h["mcp-param-region"], "us-west1", "{h}");
    assert_eq!(h["mcp-param-note"], "=?base64?IHBhZGRlZCA=?=", "surrounding spaces go base64: {h}");
    assert_eq!(h["mcp-param-count"], "42", "{h}");
    assert_eq!(h["mcp-param-flag"], "true", "{h}");
    assert!(h.get("mcp-session-id").is_none(), "no session on this era: {h}");
    let m = &seen["meta"];
    assert_eq!(m["io.modelcontextprotocol/protocolVersion"], "2026-07-28", "{m}");
    assert_eq!(m["io.modelcontextprotocol/clientCapabilities"], json!({"sampling": {}}), "the client's own: {m}");
    assert_eq!(m["io.modelcontextprotocol/clientInfo"]["name"], "toolgate", "{m}");

    // Absent arguments send no header.
    let r = c.call_tool("echo_headers", json!({"region": "eu"})).await?;
    let seen: Value = serde_json::from_str(text_of(&r))?;
    assert!(seen["headers"].get("mcp-param-count").is_none(), "{seen}");
    assert_eq!(seen["headers"]["mcp-param-region"], "eu");
    Ok(())
}
