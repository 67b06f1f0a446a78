//! Builders for `CallToolResult` objects.

use serde_json::{Value, json};

/// A result with one text block.
pub fn text(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}]})
}

/// A result with `isError: true` and one text block explaining the failure.
pub fn error(message: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": message.into()}], "isError": true})
}

/// A result carrying `structuredContent`, plus the same JSON serialized in a
/// text block for clients that do not read structured output (as the spec
/// recommends).
pub fn structured(data: Value) -> Value {
    let text = serde_json::to_string_pretty(&data).unwrap_or_default();
    json!({"content": [{"type": "text", "text": text}], "structuredContent": data})
}

/// Like [`structured`], with a one-line human summary before the JSON.
pub fn structured_with_summary(summary: &str, data: Value) -> Value {
    let text = serde_json::to_string_pretty(&data).unwrap_or_default();
    json!({
        "content": [{"type": "text", "text": summary}, {"type": "text", "text": text}],
        "structuredContent": data,
    })
}
