//! Redaction of call arguments: values under properties the tool's input
//! schema marks `writeOnly: true` or `format: "password"`, or whose names
//! contain one of the configured words, become `redacted:` and the first
//! 12 hex digits of the SHA-256 of their canonical JSON (so equal secrets
//! can be told equal, and nothing more). Objects and arrays are followed
//! into their schema's `properties` and `items`.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// `arguments` with secrets replaced, copied only when there is one.
pub fn redacted<'a>(arguments: &'a Value, schema: Option<&Value>, words: &[String]) -> Cow<'a, Value> {
    if !has_secret(arguments, schema, words) {
        return Cow::Borrowed(arguments);
    }
    let mut copy = arguments.clone();
    redact(&mut copy, schema, words);
    Cow::Owned(copy)
}

/// Whether [`redact`] would replace anything.
fn has_secret(arguments: &Value, schema: Option<&Value>, words: &[String]) -> bool {
    match arguments {
        Value::Object(map) => {
            let properties = schema.and_then(|s| s.get("properties")).and_then(Value::as_object);
            map.iter().any(|(name, value)| {
                let property = properties.and_then(|p| p.get(name));
                secret(name, property, words) || has_secret(value, property, words)
            })
        }
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.get("items"));
            items.iter().any(|item| has_secret(item, item_schema, words))
        }
        _ => false,
    }
}

/// `arguments` with secrets replaced, by `schema` (the tool's input schema)
/// and `words` (lowercase).
pub fn redact(arguments: &mut Value, schema: Option<&Value>, words: &[String]) {
    match arguments {
        Value::Object(map) => redact_object(map, schema, words),
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.get("items"));
            for item in items {
                redact(item, item_schema, words);
            }
        }
        _ => {}
    }
}

fn redact_object(map: &mut Map<String, Value>, schema: Option<&Value>, words: &[String]) {
    let properties = schema.and_then(|s| s.get("properties")).and_then(Value::as_object);
    for (name, value) in map.iter_mut() {
        let property = properties.and_then(|p| p.get(name));
        if secret(name, property, words) {
            *value = Value::String(hashed(value));
        } else {
            redact(value, property, words);
        }
    }
}

fn secret(name: &str, property: Option<&Value>, words: &[String]) -> bool {
    let marked = property.is_some_and(|p| {
        p.get("writeOnly").and_then(Value::as_bool) == Some(true)
            || p.get("format").and_then(Value::as_str) == Some("password")
    });
    marked || {
        let lower = name.to_ascii_lowercase();
        words.iter().any(|w| lower.contains(w.as_str()))
    }
}

fn hashed(value: &Value) -> String {
    // A string (the usual secret) is its own canonical form.
    let hash = match value {
        Value::String(text) => crate::config::sha256(text.as_bytes()),
        other => crate::config::sha256(&serde_json_canonicalizer::to_vec(other).unwrap_or_default()),
    };
    format!("redacted:{}", hex::encode(&hash[..6]))
}
