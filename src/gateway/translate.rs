//! Downgrading payloads for clients on older protocol revisions.
//!
//! Each leg negotiates its own revision, so an upstream on 2025-11-25 may
//! answer a client on 2024-11-05. Content block types a client's revision
//! predates would fail its schema (and confuse it), so they are translated
//! into blocks it knows, keeping the information:
//! - `audio` (2025-03-26) becomes an embedded `resource` with the same data
//!   as a blob, for 2024-11-05 clients;
//! - `resource_link` (2025-06-18) becomes a `text` block naming the link,
//!   for clients before 2025-06-18;
//! - a tool result with `structuredContent` (2025-06-18) but no content gets
//!   the structured value as a `text` block.
//!
//! Unknown fields need no translation: every revision's schema is open.

use serde_json::{Value, json};

use crate::jsonrpc::Outcome;
use crate::protocol::Version;

/// The first revision every content block type is known to.
const NEWEST_CONTENT: Version = Version::V2025_06_18;

/// Downgrades a result outcome of `method` for a client on `client`,
/// parsing a raw result only when the client's revision needs it.
pub fn outcome(method: &str, outcome: Outcome, client: Version) -> Outcome {
    if client >= NEWEST_CONTENT {
        return outcome;
    }
    let mut value = match outcome {
        Outcome::Result(v) => v,
        Outcome::Prepared(raw) => match serde_json::from_str(raw.get()) {
            Ok(v) => v,
            Err(_) => return Outcome::Prepared(raw),
        },
        error @ Outcome::Error(_) => return error,
    };
    result(method, &mut value, client);
    Outcome::Result(value)
}

/// Downgrades the result of `method` for a client on `client`.
pub fn result(method: &str, result: &mut Value, client: Version) {
    if client >= NEWEST_CONTENT {
        return;
    }
    match method {
        "tools/call" => {
            if let Some(blocks) = result.get_mut("content").and_then(Value::as_array_mut) {
                blocks.iter_mut().for_each(|b| block(b, client));
            }
            let empty = result.get("content").and_then(Value::as_array).is_none_or(Vec::is_empty);
            if empty && let Some(structured) = result.get("structuredContent") {
                let text = structured.to_string();
                result["content"] = json!([{"type": "text", "text": text}]);
            }
        }
        "prompts/get" => messages(result, client),
        _ => {}
    }
}

/// Downgrades a server-to-client request's params for a client on `client`.
pub fn request_params(method: &str, params: &mut Value, client: Version) {
    if client >= NEWEST_CONTENT {
        return;
    }
    if method == "sampling/createMessage" {
        messages(params, client);
    }
}

/// `messages[].content` (one block, or an array of them).
fn messages(holder: &mut Value, client: Version) {
    let Some(messages) = holder.get_mut("messages").and_then(Value::as_array_mut) else { return };
    for m in messages {
        match m.get_mut("content") {
            Some(Value::Array(blocks)) => blocks.iter_mut().for_each(|b| block(b, client)),
            Some(b @ Value::Object(_)) => block(b, client),
            _ => {}
        }
    }
}

/// Rewrites one content block the client's revision does not know.
fn block(b: &mut Value, client: Version) {
    match b.get("type").and_then(Value::as_str) {
        Some("audio") if client < Version::V2025_03_26 => {
            let mime = b.get("mimeType").and_then(Value::as_str).unwrap_or("application/octet-stream").to_owned();
            let data = b.get("data").cloned().unwrap_or(Value::String(String::new()));
            *b = json!({
                "type": "resource",
                "resource": {"uri": format!("data:{mime};base64,"), "mimeType": mime, "blob": data},
            });
        }
        Some("resource_link") => {
            let field = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
            let (uri, name, description) = (field("uri"), field("name"), field("description"));
            let mut text = format!("Resource link: {name} <{uri}>");
            if !description.is_empty() {
                text.push_str(&format!(" ({description})"));
            }
            *b = json!({"type": "text", "text": text});
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
