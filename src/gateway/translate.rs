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
mod tests {
    use super::*;

    #[test]
    fn new_block_types_become_old_ones_keeping_their_information() {
        let original = json!({"content": [
            {"type": "text", "text": "hi"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt", "description": "the file"}
        ]});

        let mut r = original.clone();
        result("tools/call", &mut r, Version::V2024_11_05);
        assert_eq!(r["content"][0], json!({"type": "text", "text": "hi"}));
        assert_eq!(r["content"][1]["type"], "resource");
        assert_eq!(r["content"][1]["resource"]["blob"], "UklGRg==");
        assert_eq!(r["content"][1]["resource"]["mimeType"], "audio/wav");
        assert_eq!(r["content"][2], json!({"type": "text", "text": "Resource link: a.txt <file:///a.txt> (the file)"}));

        let mut r = original.clone();
        result("tools/call", &mut r, Version::V2025_03_26);
        assert_eq!(r["content"][1]["type"], "audio", "2025-03-26 knows audio");
        assert_eq!(r["content"][2]["type"], "text");

        let mut r = original.clone();
        result("tools/call", &mut r, Version::V2025_06_18);
        assert_eq!(r, original, "nothing to do for current clients");
    }

    #[test]
    fn raw_results_are_parsed_only_for_older_clients() {
        let raw: std::sync::Arc<serde_json::value::RawValue> = serde_json::value::to_raw_value(
            &json!({"content": [{"type": "resource_link", "uri": "x://y", "name": "y"}]}),
        )
        .unwrap()
        .into();
        let kept = outcome("tools/call", Outcome::Prepared(raw.clone()), Version::V2025_06_18);
        assert!(matches!(kept, Outcome::Prepared(r) if r.get() == raw.get()), "passed through as text");
        let Outcome::Result(v) = outcome("tools/call", Outcome::Prepared(raw), Version::V2025_03_26) else {
            panic!("a translated result");
        };
        assert_eq!(v["content"][0]["type"], "text");
    }

    #[test]
    fn structured_only_results_get_a_text_block() {
        let mut r = json!({"content": [], "structuredContent": {"n": 1}});
        result("tools/call", &mut r, Version::V2025_03_26);
        assert_eq!(r["content"], json!([{"type": "text", "text": "{\"n\":1}"}]));
    }

    #[test]
    fn prompt_and_sampling_messages_are_translated() {
        let mut p =
            json!({"messages": [{"role": "user", "content": {"type": "resource_link", "uri": "x://y", "name": "y"}}]});
        result("prompts/get", &mut p, Version::V2025_03_26);
        assert_eq!(p["messages"][0]["content"]["type"], "text");
        let mut s = json!({"messages": [{"role": "user", "content": [{"type": "audio", "data": "", "mimeType": "audio/mp3"}]}]});
        request_params("sampling/createMessage", &mut s, Version::V2024_11_05);
        assert_eq!(s["messages"][0]["content"][0]["type"], "resource");
    }
}
