//! What a modern result gets on its way out, written into the result as it
//! is: `resultType`, the cache hints of a cacheable result, and the server's
//! own `serverInfo` in `_meta`.
//!
//! A result the application built ([`Outcome::Result`]) is changed in place.
//! A result that is JSON text already ([`Outcome::Prepared`]: an upstream's
//! answer as decoded, a cached list) is not decoded into a tree and encoded
//! again: only its top-level keys are located (their values stay text), and
//! the few fields to add or replace are spliced into one copy of the text.
//! Large tool results cost one scan and one copy.

use std::sync::Arc;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::jsonrpc::Outcome;
use crate::protocol::modern::{meta, result};
use crate::server::handler::{CacheHints, CacheScope};

/// The server's identity as the engine stamps it, encoded once.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    value: Value,
}

impl ServerInfo {
    /// Stamps `value` (an `Implementation`: `name`, `version`, …).
    pub fn new(value: Value) -> Self {
        Self { value }
    }
}

/// What to stamp on one result.
pub(crate) struct Stamp<'a> {
    /// The hints of a cacheable method (applied to a complete result only,
    /// where it has none of its own; a `private` hint wins).
    pub cache: Option<CacheHints>,
    /// The server's identity (`None`: `_meta` is left as it is).
    pub server_info: Option<&'a ServerInfo>,
}

impl Stamp<'_> {
    /// Applies the stamp to a result outcome (an error passes unchanged).
    pub fn apply(&self, outcome: Outcome) -> Outcome {
        match outcome {
            Outcome::Result(Value::Object(mut fields)) => {
                self.apply_fields(&mut fields);
                Outcome::Result(Value::Object(fields))
            }
            Outcome::Prepared(raw) => match self.splice(raw.get()) {
                Some(Ok(text)) => match RawValue::from_string(text) {
                    Ok(spliced) => Outcome::Prepared(Arc::from(spliced)),
                    // Cannot happen (valid JSON spliced with valid JSON); if
                    // it did, the slow path below still answers.
                    Err(_) => self.reparsed(&raw),
                },
                Some(Err(())) => self.reparsed(&raw),
                // Not an object: nothing to stamp.
                None => Outcome::Prepared(raw),
            },
            other => other,
        }
    }

    /// The slow path: a result whose top level could not be read key by
    /// key (duplicate keys), decoded whole.
    fn reparsed(&self, raw: &RawValue) -> Outcome {
        match serde_json::from_str::<Value>(raw.get()) {
            Ok(value) => self.apply(Outcome::Result(value)),
            Err(_) => Outcome::Prepared(Arc::from(raw.to_owned())),
        }
    }

    fn apply_fields(&self, fields: &mut Map<String, Value>) {
        let kind = fields.entry(result::RESULT_TYPE).or_insert_with(|| json!(result::COMPLETE));
        let complete = kind.as_str() == Some(result::COMPLETE);
        if let Some(hints) = self.cache.filter(|_| complete) {
            fields.entry(result::TTL_MS).or_insert_with(|| json!(hints.ttl_ms));
            let scope = fields.entry(result::CACHE_SCOPE).or_insert_with(|| json!(hints.scope.as_str()));
            if hints.scope == CacheScope::Private {
                *scope = json!(result::PRIVATE);
            }
        }
        if let Some(info) = self.server_info {
            let meta = fields.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
            if !meta.is_object() {
                *meta = Value::Object(Map::new());
            }
            if let Value::Object(meta) = meta {
                stamp_meta(meta, info);
            }
        }
    }

    /// The stamped text of a JSON object, `None` if `text` is not an object,
    /// `Err` if its top level cannot be read key by key.
    fn splice(&self, text: &str) -> Option<Result<String, ()>> {
        if !text.trim_start().starts_with('{') {
            return None;
        }
        let Ok(top) = serde_json::from_str::<Top<'_>>(text) else { return Some(Err(())) };
        let at = |raw: &RawValue| {
            let start = raw.get().as_ptr() as usize - text.as_ptr() as usize;
            start..start + raw.get().len()
        };
        let mut inserted: Vec<String> = Vec::new();
        let mut replaced: Vec<(std::ops::Range<usize>, String)> = Vec::new();
        let complete = match top.result_type {
            None => {
                inserted.push(format!("\"{}\":\"{}\"", result::RESULT_TYPE, result::COMPLETE));
                true
            }
            Some(kind) => serde_json::from_str::<&str>(kind.get()).ok() == Some(result::COMPLETE),
        };
        if let Some(hints) = self.cache.filter(|_| complete) {
            if top.ttl_ms.is_none() {
                inserted.push(format!("\"{}\":{}", result::TTL_MS, hints.ttl_ms));
            }
            let scope = format!("\"{}\"", hints.scope.as_str());
            match top.cache_scope {
                None => inserted.push(format!("\"{}\":{scope}", result::CACHE_SCOPE)),
                Some(sent) if hints.scope == CacheScope::Private => replaced.push((at(sent), scope)),
                Some(_) => {}
            }
        }
        if let Some(info) = self.server_info {
            let mut meta = match top.meta.map(|m| serde_json::from_str::<Value>(m.get())) {
                Some(Ok(Value::Object(meta))) => meta,
                _ => Map::new(),
            };
            stamp_meta(&mut meta, info);
            let encoded = Value::Object(meta).to_string();
            match top.meta {
                Some(sent) => replaced.push((at(sent), encoded)),
                None => inserted.push(format!("\"_meta\":{encoded}")),
            }
        }
        if inserted.is_empty() && replaced.is_empty() {
            return Some(Ok(text.to_owned()));
        }
        // New keys go first, right after the opening brace.
        let open = text.len() - text.trim_start().len() + 1;
        let empty = text[open..].trim_start().starts_with('}');
        let mut out = String::with_capacity(text.len() + 64 + replaced.iter().map(|(_, r)| r.len()).sum::<usize>());
        out.push_str(&text[..open]);
        out.push_str(&inserted.join(","));
        if !inserted.is_empty() && !empty {
            out.push(',');
        }
        replaced.sort_by_key(|(range, _)| range.start);
        let mut from = open;
        for (range, replacement) in replaced {
            out.push_str(&text[from..range.start]);
            out.push_str(&replacement);
            from = range.end;
        }
        out.push_str(&text[from..]);
        Some(Ok(out))
    }
}

/// Puts the server's identity in a result's `_meta`; an identity already
/// there (an upstream's, relayed by a gateway) moves to
/// [`meta::UPSTREAM_SERVER_INFO`] unless that is taken.
fn stamp_meta(meta: &mut Map<String, Value>, info: &ServerInfo) {
    if let Some(previous) = meta.insert(meta::SERVER_INFO.into(), info.value.clone())
        && previous != info.value
    {
        meta.entry(meta::UPSTREAM_SERVER_INFO).or_insert(previous);
    }
}

/// The top-level keys a stamp reads, located in the text (values stay raw);
/// every other key is skipped without being decoded.
#[derive(Deserialize)]
struct Top<'a> {
    #[serde(rename = "resultType", borrow, default, deserialize_with = "present")]
    result_type: Option<&'a RawValue>,
    #[serde(rename = "ttlMs", borrow, default, deserialize_with = "present")]
    ttl_ms: Option<&'a RawValue>,
    #[serde(rename = "cacheScope", borrow, default, deserialize_with = "present")]
    cache_scope: Option<&'a RawValue>,
    #[serde(rename = "_meta", borrow, default, deserialize_with = "present")]
    meta: Option<&'a RawValue>,
}

/// A key that is present, whatever its value (`null` included: a present
/// key must be replaced, never added a second time).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests;
