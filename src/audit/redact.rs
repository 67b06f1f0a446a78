//! Redaction of call arguments: values under properties the tool's input
//! schema marks `writeOnly: true` or `format: "password"`, or whose names
//! contain one of the configured words, become `redacted:` and the first
//! 12 hex digits of the SHA-256 of their canonical JSON (so equal secrets
//! can be told equal, and nothing more). Objects and arrays are followed
//! into their schema's `properties` and `items`.
//!
//! The writer serializes arguments through [`Redacted`], which replaces
//! secrets as it writes them: no copy of the arguments is made.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

/// `arguments` as they serialize with their secrets replaced, by `schema`
/// (the tool's input schema) and `words` (lowercase).
pub struct Redacted<'a> {
    pub arguments: &'a Value,
    pub schema: Option<&'a Value>,
    pub words: &'a [String],
}

impl Serialize for Redacted<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let words = self.words;
        match self.arguments {
            Value::Object(map) => {
                let properties = self.schema.and_then(|s| s.get("properties")).and_then(Value::as_object);
                let mut out = serializer.serialize_map(Some(map.len()))?;
                for (name, value) in map {
                    let property = properties.and_then(|p| p.get(name));
                    if secret(name, property, words) {
                        out.serialize_entry(name, &Hashed(value))?;
                    } else {
                        out.serialize_entry(name, &Redacted { arguments: value, schema: property, words })?;
                    }
                }
                out.end()
            }
            Value::Array(items) => {
                let schema = self.schema.and_then(|s| s.get("items"));
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&Redacted { arguments: item, schema, words })?;
                }
                out.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// Whether the value of property `name` (with `property` its schema) is a
/// secret: marked so by its schema, or named with one of `words`.
fn secret(name: &str, property: Option<&Value>, words: &[String]) -> bool {
    named(name, words) || property.is_some_and(marked)
}

/// Whether `name` contains one of `words` (lowercase), ignoring ASCII case.
fn named(name: &str, words: &[String]) -> bool {
    let name = name.as_bytes();
    words.iter().any(|word| {
        let word = word.as_bytes();
        word.is_empty() || name.windows(word.len()).any(|part| part.eq_ignore_ascii_case(word))
    })
}

/// Whether a property's schema marks it `writeOnly: true` or `format:
/// "password"`.
fn marked(property: &Value) -> bool {
    let Some(keywords) = property.as_object() else { return false };
    // A property's schema has a few keywords: read them in order rather
    // than hashing two names.
    keywords.iter().any(|(keyword, value)| match keyword.as_str() {
        "writeOnly" => value.as_bool() == Some(true),
        "format" => value.as_str() == Some("password"),
        _ => false,
    })
}

/// A secret, as `redacted:` and 12 hex digits of its hash.
struct Hashed<'a>(&'a Value);

impl Serialize for Hashed<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // A string (the usual secret) is its own canonical form.
        let hash = match self.0 {
            Value::String(text) => crate::config::sha256(text.as_bytes()),
            other => crate::config::sha256(&serde_json_canonicalizer::to_vec(other).unwrap_or_default()),
        };
        let mut text = *b"redacted:000000000000";
        let _ = hex::encode_to_slice(&hash[..6], &mut text[9..]);
        serializer.serialize_str(std::str::from_utf8(&text).unwrap_or_default())
    }
}
