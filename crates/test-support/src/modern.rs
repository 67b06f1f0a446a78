//! Raw 2026-07-28 (sessionless) requests for tests: the `_meta` envelope
//! every request carries, and a POST with the revision's routing headers.

use reqwest::Method;
use serde_json::{Value, json};

use crate::client::Client;

/// The sessionless revision.
pub const MODERN: &str = "2026-07-28";

/// The per-request `_meta` envelope of client `name`, declaring `capabilities`.
pub fn envelope(name: &str, capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"},
    })
}

/// A 2026 request body of client `name` (no capabilities): `params` with the
/// envelope in `_meta`.
pub fn modern_body(name: &str, id: Value, method: &str, mut params: Value) -> Value {
    params["_meta"] = envelope(name, json!({}));
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A POST of `body` with the revision's headers: `MCP-Protocol-Version`,
/// `Mcp-Method` from the body and, when given, `Mcp-Name`.
pub fn modern_post(c: &Client, body: &Value, name: Option<&str>) -> reqwest::RequestBuilder {
    let method = body["method"].as_str().unwrap_or_default();
    let mut b = c
        .bare(Method::POST)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", method);
    if let Some(name) = name {
        b = b.header("mcp-name", name);
    }
    b.body(body.to_string())
}
