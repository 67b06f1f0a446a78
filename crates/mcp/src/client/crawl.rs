//! Reading a whole paged list from an upstream: `tools/list`,
//! `resources/list` and the like, following `nextCursor` to the end.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::error::{Cause, UpstreamError};
use super::peer::{Call, Peer};
use super::service;
use crate::jsonrpc::Outcome;

/// Most pages followed in one crawl (against servers that page forever).
const MAX_PAGES: usize = 1000;

/// Follows `nextCursor` through every page of the list `method` and returns
/// the items under `key`. Each page may take `timeout`.
pub async fn crawl(peer: &Arc<Peer>, timeout: Duration, method: &str, key: &str) -> Result<Vec<Value>, UpstreamError> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    for _ in 0..MAX_PAGES {
        let params = cursor.as_ref().map(|c| json!({"cursor": c}));
        let result = match service::call_on(peer.clone(), timeout, Call::new(method, params)).await? {
            Outcome::Error(e) => {
                let cause = Cause::msg(format!("{method} failed: {e}"));
                return Err(UpstreamError::Protocol { upstream: peer.label().clone(), source: cause });
            }
            ok => ok.result_value().unwrap_or(Value::Null),
        };
        if let Some(Value::Array(page)) = result.get(key) {
            items.extend(page.iter().cloned());
        }
        match result.get("nextCursor").and_then(Value::as_str) {
            // A repeated cursor would loop forever.
            Some(next) if !next.is_empty() && seen.insert(next.to_owned()) => cursor = Some(next.to_owned()),
            _ => return Ok(items),
        }
    }
    tracing::warn!(upstream = %peer.label(), %method, "stopped after {MAX_PAGES} pages");
    Ok(items)
}
