//! The two shapes of a tool definition: the full one (every upstream field plus
//! extras) and the minimal one `tools/list` shows for progressive tools.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use serde_json::{Map, Value, json};

use super::extras::{EXTRA_KEYS, Extras};
use super::summary::minimal_description;
use crate::config::ToolOverride;

/// The upstream object with `name` set to the exposed name (in place, so key
/// order is kept), plus extras: a config override wins over a
/// `descriptions_dir` file; an extra replaces an upstream field of that name.
pub(crate) fn full_form(
    tool: &Map<String, Value>,
    exposed: &str,
    config: Option<&ToolOverride>,
    dir: Option<&Extras>,
) -> Value {
    let mut full = tool.clone();
    full.insert("name".to_owned(), Value::String(exposed.to_owned()));
    for key in EXTRA_KEYS {
        let from_config = config.and_then(|o| match key {
            "examples" => o.examples.as_ref(),
            "usage_guidance" => o.usage_guidance.as_ref(),
            _ => o.error_guidance.as_ref(),
        });
        if let Some(extra) = from_config.or_else(|| dir.and_then(|d| d.get(key))) {
            full.insert(key.to_owned(), extra.clone());
        }
    }
    Value::Object(full)
}

/// The upstream object verbatim except `name` (a passthrough tool's listing).
pub(crate) fn renamed(tool: &Map<String, Value>, exposed: &str) -> Value {
    let mut out = tool.clone();
    out.insert("name".to_owned(), Value::String(exposed.to_owned()));
    Value::Object(out)
}

/// The minimal form: `name`, `title`, the short `description` (the configured
/// override, else derived), `inputSchema: {"type":"object"}`, `annotations`,
/// `_meta`; every other field is dropped.
pub(crate) fn minimal_form(
    tool: &Map<String, Value>,
    exposed: &str,
    description_override: Option<&str>,
    max_chars: usize,
) -> Value {
    let description = match description_override.map(str::trim).filter(|d| !d.is_empty()) {
        Some(d) => d.to_owned(),
        None => minimal_description(tool, max_chars),
    };
    let mut out = Map::new();
    out.insert("name".to_owned(), Value::String(exposed.to_owned()));
    if let Some(title) = tool.get("title") {
        out.insert("title".to_owned(), title.clone());
    }
    out.insert("description".to_owned(), Value::String(description));
    out.insert("inputSchema".to_owned(), json!({"type": "object"}));
    for key in ["annotations", "_meta"] {
        if let Some(v) = tool.get(key) {
            out.insert(key.to_owned(), v.clone());
        }
    }
    Value::Object(out)
}

/// Sets `_meta.<key>` of a definition to `value` (creating `_meta`, keeping
/// what else it holds).
pub(crate) fn set_meta(definition: &mut Value, key: &str, value: Value) {
    let Some(object) = definition.as_object_mut() else { return };
    let meta = object.entry("_meta").or_insert_with(|| json!({}));
    match meta.as_object_mut() {
        Some(meta) => {
            meta.insert(key.to_owned(), value);
        }
        // An upstream's `_meta` that is not an object is left as sent.
        None => tracing::debug!("a tool's _meta is not an object; its concern values are not added"),
    }
}

/// A hash of a definition, stable within a process.
pub(crate) fn fingerprint(value: &Value) -> u64 {
    let mut hasher = DefaultHasher::new();
    // serde_json's compact form of a preserve_order map is deterministic.
    value.to_string().hash(&mut hasher);
    hasher.finish()
}
