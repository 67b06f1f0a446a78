//! Pagination of merged lists toward clients, when `server.page_size` asks
//! for it: opaque cursors that only toolgate can have issued.
//!
//! A cursor names the list and the offset of the next page, with a keyed
//! hash (a per-process secret) so a client cannot forge or alter one: a
//! cursor toolgate did not issue is `-32602`, as the spec recommends.

use std::hash::{BuildHasher, Hasher};

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::jsonrpc::{ErrorObject, Outcome};

/// Pages lists of `size` items (0: one page).
pub struct Pager {
    size: usize,
    secret: std::collections::hash_map::RandomState,
}

impl Pager {
    /// A pager with a fresh secret.
    pub fn new(size: usize) -> Self {
        Self { size, secret: std::collections::hash_map::RandomState::new() }
    }

    /// Whether lists are served whole.
    pub fn is_off(&self) -> bool {
        self.size == 0
    }

    fn mac(&self, list: &str, offset: usize) -> u64 {
        let mut h = self.secret.build_hasher();
        h.write(list.as_bytes());
        h.write_usize(offset);
        h.finish()
    }

    fn cursor(&self, list: &str, offset: usize) -> String {
        format!("{offset:x}.{:016x}", self.mac(list, offset))
    }

    /// The offset a client's `params.cursor` points at (0 without one).
    pub fn offset(&self, list: &str, params: Option<&Value>) -> Result<usize, ErrorObject> {
        let cursor = match params.and_then(|p| p.get("cursor")) {
            None | Some(Value::Null) => return Ok(0),
            Some(Value::String(c)) => c,
            Some(_) => return Err(invalid()),
        };
        if self.is_off() {
            return Err(invalid());
        }
        let (offset, mac) = cursor.split_once('.').ok_or_else(invalid)?;
        let offset = usize::from_str_radix(offset, 16).map_err(|_| invalid())?;
        let mac = u64::from_str_radix(mac, 16).map_err(|_| invalid())?;
        if mac != self.mac(list, offset) {
            return Err(invalid());
        }
        Ok(offset)
    }

    /// The page of `items` starting at the client's cursor, as a list result
    /// `{<key>: [...], "nextCursor"?: ...}`.
    pub fn page(&self, list: &str, key: &str, items: &[Value], params: Option<&Value>) -> Result<Value, ErrorObject> {
        let offset = self.offset(list, params)?;
        let mut result = Map::new();
        if self.is_off() {
            result.insert(key.into(), Value::Array(items.to_vec()));
            return Ok(Value::Object(result));
        }
        // A list that shrank since the cursor was issued just ends early.
        let start = offset.min(items.len());
        let end = (start + self.size).min(items.len());
        result.insert(key.into(), Value::Array(items[start..end].to_vec()));
        if end < items.len() {
            result.insert("nextCursor".into(), Value::String(self.cursor(list, end)));
        }
        Ok(Value::Object(result))
    }
}

impl Pager {
    /// A page of a prepared `tools/list` result: the result itself when
    /// lists are served whole (encoded once per catalog).
    pub fn tools_page(&self, list: &Arc<RawValue>, params: Option<&Value>) -> Outcome {
        if self.is_off() {
            return match self.offset("tools", params) {
                Ok(_) => Outcome::Prepared(list.clone().into()),
                Err(e) => Outcome::error(e),
            };
        }
        let parsed: Value = serde_json::from_str(list.get()).unwrap_or(Value::Null);
        let tools = parsed.get("tools").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        match self.page("tools", "tools", tools, params) {
            Ok(page) => Outcome::Result(page),
            Err(e) => Outcome::error(e),
        }
    }
}

fn invalid() -> ErrorObject {
    ErrorObject::invalid_params("Invalid cursor")
}

#[cfg(test)]
mod tests;
