//! What a modern result gets on its way out, written into the result as it
//! is: `resultType`, the cache hints of a cacheable result, and the server's
//! own `serverInfo` in `_meta`.
//!
//! A result the application built ([`Outcome::Result`]) is changed in place.
//! A result that is JSON text already ([`Outcome::Prepared`]: an upstream's
//! answer as decoded, a cached list) is not decoded into a tree and encoded
//! again: its top-level members ([`Object`]: an upstream's were found as
//! its answer was decoded; a cached list's are read now) are edited in its
//! text, in place: a replaced value is cut in, added members go after the
//! last one (where a tree's `entry` puts them), and the rest of the text
//! does not move. Only a `_meta` of its own is written again.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::jsonrpc::members;
use crate::jsonrpc::{Object, Outcome, Raw};
use crate::protocol::modern::{meta, result};
use crate::server::handler::{CacheHints, CacheScope};

/// The server's identity as the engine stamps it, encoded once.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    value: Value,
    raw: Arc<RawValue>,
    /// `_meta` holding the identity alone, for the usual result, which has
    /// no `_meta` of its own.
    meta_alone: Arc<str>,
}

impl ServerInfo {
    /// Stamps `value` (an `Implementation`: `name`, `version`, …).
    pub fn new(value: Value) -> Self {
        let raw: Arc<RawValue> = Arc::from(members::raw(&value));
        let mut alone = Object::writer(raw.get().len() + meta::SERVER_INFO.len() + 8);
        alone.member(meta::SERVER_INFO, raw.get());
        let meta_alone = Arc::from(alone.finish().into_text());
        Self { value, raw, meta_alone }
    }

    /// Whether `sent`, the identity a result carries, is this one: the same
    /// text, or the same value written otherwise.
    fn is(&self, sent: &str) -> bool {
        sent == self.raw.get() || serde_json::from_str::<Value>(sent).is_ok_and(|v| v == self.value)
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

/// The keys a stamp sets: the text path falls back to a tree when one of
/// them appears twice (a parser keeps the last).
const STAMPED: [&str; 4] = [result::RESULT_TYPE, result::TTL_MS, result::CACHE_SCOPE, "_meta"];

impl Stamp<'_> {
    /// Applies the stamp to a result outcome (an error passes unchanged).
    pub fn apply(&self, outcome: Outcome) -> Outcome {
        match outcome {
            Outcome::Result(Value::Object(mut fields)) => {
                self.apply_fields(&mut fields);
                Outcome::Result(Value::Object(fields))
            }
            // Not an object: nothing to stamp.
            Outcome::Prepared(raw) if !raw.get().trim_ascii_start().starts_with('{') => Outcome::Prepared(raw),
            Outcome::Prepared(mut raw) => match raw.object_mut().is_some_and(|top| self.splice(top)) {
                true => Outcome::Prepared(raw),
                false => self.reparsed(raw),
            },
            other => other,
        }
    }

    /// The slow path: a result whose top level could not be read key by
    /// key (duplicate keys, escaped keys), decoded whole.
    fn reparsed(&self, raw: Raw) -> Outcome {
        match serde_json::from_str::<Value>(raw.get()) {
            Ok(value) => self.apply(Outcome::Result(value)),
            Err(_) => Outcome::Prepared(raw),
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
            if let Value::Object(meta) = meta
                && let Some(previous) = meta.insert(meta::SERVER_INFO.into(), info.value.clone())
                && previous != info.value
            {
                meta.entry(meta::UPSTREAM_SERVER_INFO).or_insert(previous);
            }
        }
    }

    /// Stamps the object in its text, in place: replaced members keep their
    /// place, added ones go after the last (where a tree's `entry` puts
    /// them). `false`, with nothing changed, if its members cannot be
    /// spliced as text (a stamped key appears twice; `_meta`'s cannot be
    /// read).
    fn splice(&self, top: &mut Object) -> bool {
        if STAMPED.iter().any(|key| top.count(key) > 1) {
            return false;
        }
        // Everything is worked out before the text changes. At most four
        // members are added and two replaced: no list is allocated for them.
        let mut added: [Option<(&str, Cow<'_, str>)>; 4] = [None, None, None, None];
        let mut replaced: [Option<(usize, Cow<'_, str>)>; 2] = [None, None];
        let complete = match top.get(result::RESULT_TYPE) {
            None => {
                added[0] = Some((result::RESULT_TYPE, Cow::Borrowed(COMPLETE.get())));
                true
            }
            Some(kind) => serde_json::from_str::<&str>(kind).ok() == Some(result::COMPLETE),
        };
        if let Some(hints) = self.cache.filter(|_| complete) {
            if top.get(result::TTL_MS).is_none() {
                added[1] = Some((result::TTL_MS, Cow::Owned(hints.ttl_ms.to_string())));
            }
            match top.position(result::CACHE_SCOPE) {
                None => {
                    added[2] = Some((result::CACHE_SCOPE, Cow::Owned(members::raw(hints.scope.as_str()).get().into())))
                }
                Some(at) if hints.scope == CacheScope::Private => {
                    replaced[0] = Some((at, Cow::Borrowed(PRIVATE.get())))
                }
                Some(_) => {}
            }
        }
        if let Some(info) = self.server_info {
            match top.position("_meta") {
                // The usual result: the identity alone, written once.
                None => added[3] = Some(("_meta", Cow::Borrowed(&*info.meta_alone))),
                Some(at) => {
                    let Some(stamped) = stamp_meta(top.value_at(at), info) else { return false };
                    replaced[1] = Some((at, Cow::Owned(stamped)));
                }
            }
        }
        top.reserve(added.iter().flatten().map(|(k, v)| k.len() + v.len() + 4).sum());
        for (at, value) in replaced.iter().flatten() {
            top.replace_value(*at, value);
        }
        for (key, value) in added.iter().flatten() {
            top.push(key, value);
        }
        true
    }
}

/// The constant values a stamp writes, encoded once.
static COMPLETE: LazyLock<Box<RawValue>> = LazyLock::new(|| members::raw(result::COMPLETE));
static PRIVATE: LazyLock<Box<RawValue>> = LazyLock::new(|| members::raw(result::PRIVATE));

/// `_meta` as sent (its text, if any) with the server's identity in it; an
/// identity already there (an upstream's, relayed by a gateway) moves to
/// [`meta::UPSTREAM_SERVER_INFO`] unless that is taken. A `_meta` that is
/// not an object is replaced. `None` where its members cannot be read as
/// text (an escaped or doubled identity key): the caller uses a tree.
fn stamp_meta(sent: Option<&str>, info: &ServerInfo) -> Option<String> {
    let own = match sent.filter(|m| m.trim_start().starts_with('{')) {
        Some(m) => Object::parse(m)?,
        None => Object::empty(),
    };
    if own.count(meta::SERVER_INFO) > 1 || own.count(meta::UPSTREAM_SERVER_INFO) > 1 {
        return None;
    }
    let previous = own.get(meta::SERVER_INFO);
    let moved = previous.filter(|p| own.get(meta::UPSTREAM_SERVER_INFO).is_none() && !info.is(p));
    let info_raw = info.raw.get();
    let mut out = Object::writer(own.text().len() + info_raw.len() + 64);
    for (key, value) in own.iter() {
        out.member(key, if key == meta::SERVER_INFO { info_raw } else { value });
    }
    if previous.is_none() {
        out.member(meta::SERVER_INFO, info_raw);
    }
    if let Some(previous) = moved {
        out.member(meta::UPSTREAM_SERVER_INFO, previous);
    }
    Some(out.finish().into_text())
}

#[cfg(test)]
mod tests;
