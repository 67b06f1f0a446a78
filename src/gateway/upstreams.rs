//! One configured upstream as the gateway sees it: its control connection,
//! its last known tools and capabilities, and the task that keeps it up.
//!
//! The control connection is toolgate's own session with the upstream (its
//! own `clientInfo`, no reverse-routing capabilities unless the upstream is
//! shared over Streamable HTTP). It crawls the tool list into the catalog, answers list
//! requests when a session has no connection of its own, and hears
//! `list_changed`. With `sharing = "shared"` it is also the connection every
//! session's calls use.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::{ArcSwap, ArcSwapOption};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::catalog::Extras;
use crate::config::{Sharing, TransportKind, UpstreamConfig};
use crate::jsonrpc::Outcome;
use crate::upstream::{ClientHello, Peer, ServerHello, UpstreamError};

/// Most pages followed in one list crawl (against servers that page forever).
const MAX_PAGES: usize = 1000;
/// First and longest pause between restarts of a failed upstream.
const MIN_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A configured upstream.
pub struct UpstreamHandle {
    /// Position in the configuration (and in `tools/list`).
    pub index: usize,
    /// Its configuration.
    pub config: Arc<UpstreamConfig>,
    /// Its name, for logs and errors.
    pub label: Arc<str>,
    /// Extras from `descriptions_dir`, keyed by upstream tool name.
    pub extras: HashMap<String, Extras>,
    control: ArcSwapOption<Peer>,
    hello: ArcSwapOption<ServerHello>,
    tools: ArcSwap<Vec<Value>>,
    /// Why the upstream is down, while it is.
    down_reason: Mutex<Option<String>>,
    /// `true` once the first connection attempt finished, either way.
    ready: watch::Sender<bool>,
    /// Asks the supervisor to crawl the tool list again.
    refresh: Notify,
}

impl UpstreamHandle {
    pub(crate) fn new(index: usize, config: UpstreamConfig, extras: HashMap<String, Extras>) -> Self {
        let label: Arc<str> = Arc::from(config.name.as_str());
        Self {
            index,
            config: Arc::new(config),
            label,
            extras,
            control: ArcSwapOption::empty(),
            hello: ArcSwapOption::empty(),
            tools: ArcSwap::from_pointee(Vec::new()),
            down_reason: Mutex::new(Some("starting".into())),
            ready: watch::channel(false).0,
            refresh: Notify::new(),
        }
    }

    /// The control connection, while it is up.
    pub fn control(&self) -> Option<Arc<Peer>> {
        self.control.load_full().filter(|p| !p.is_closed())
    }

    /// The upstream's last `initialize` answer (kept while it restarts).
    pub fn hello(&self) -> Option<Arc<ServerHello>> {
        self.hello.load_full()
    }

    /// Whether the upstream declared capability `name`.
    pub fn has(&self, name: &str) -> bool {
        self.hello().is_some_and(|h| h.has(name))
    }

    /// The last tool list crawled (kept while the upstream restarts, so the
    /// catalog does not flap).
    pub fn tools(&self) -> Arc<Vec<Value>> {
        self.tools.load_full()
    }

    /// The error for requests while the upstream is down.
    pub fn unavailable(&self) -> UpstreamError {
        let reason = self.down_reason.lock().clone().unwrap_or_else(|| "not connected".into());
        UpstreamError::Unavailable { upstream: self.label.clone(), reason }
    }

    /// Whether its transport can tell which call a message belongs to
    /// (Streamable HTTP, with a response stream per call), which decides what
    /// a shared connection may declare. Stdio and legacy SSE carry everything
    /// on one channel.
    pub fn attributes_messages(&self) -> bool {
        self.config.transport_kind() == TransportKind::StreamableHttp
    }

    /// What the control connection declares: it routes server-to-client
    /// requests only when it is shared over Streamable HTTP, where each
    /// call's stream names the session it belongs to. Over shared stdio or
    /// legacy SSE nothing ties such a request to a session, so none are
    /// declared.
    pub fn control_hello(&self) -> ClientHello {
        let capabilities = if self.config.sharing == Sharing::Shared && self.attributes_messages() {
            json!({"sampling": {}, "elicitation": {}})
        } else {
            json!({})
        };
        ClientHello { capabilities, client_info: toolgate_info() }
    }

    /// Asks for a fresh crawl of the tool list.
    pub fn request_refresh(&self) {
        self.refresh.notify_one();
    }

    /// Waits until the first connection attempt is over.
    pub async fn wait_ready(&self) {
        let mut rx = self.ready.subscribe();
        let _ = rx.wait_for(|r| *r).await;
    }

    pub(crate) fn set_up(&self, peer: Arc<Peer>) {
        self.hello.store(peer.hello().cloned().map(Arc::new));
        self.control.store(Some(peer));
        *self.down_reason.lock() = None;
    }

    pub(crate) fn set_down(&self, reason: String) {
        self.control.store(None);
        *self.down_reason.lock() = Some(reason);
    }

    pub(crate) fn set_tools(&self, tools: Vec<Value>) {
        self.tools.store(Arc::new(tools));
    }

    pub(crate) fn mark_ready(&self) {
        self.ready.send_replace(true);
    }

    pub(crate) async fn refresh_requested(&self) {
        self.refresh.notified().await;
    }
}

/// toolgate's own `clientInfo` / `serverInfo` identity.
pub fn toolgate_info() -> Value {
    json!({"name": "toolgate", "version": env!("CARGO_PKG_VERSION")})
}

/// Follows `nextCursor` through every page of a list method and returns the
/// items under `key`.
pub async fn crawl(peer: &Arc<Peer>, method: &str, key: &str) -> Result<Vec<Value>, UpstreamError> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = std::collections::HashSet::new();
    let never = CancellationToken::new();
    for _ in 0..MAX_PAGES {
        let params = cursor.as_ref().map(|c| json!({"cursor": c}));
        let result = match peer.call(method, params, None, &never).await? {
            Outcome::Error(e) => {
                let detail = format!("{method} failed: {e}");
                return Err(UpstreamError::Protocol { upstream: peer.label().clone(), detail });
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

/// The pause before restart attempt `n` (0-based): doubling, capped.
pub fn backoff(attempt: u32) -> Duration {
    MIN_BACKOFF.saturating_mul(1u32 << attempt.min(16)).min(MAX_BACKOFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handle(transport: &str, sharing: &str) -> UpstreamHandle {
        let config = match transport {
            "stdio" => json!({"name": "u", "command": "x", "sharing": sharing}),
            t => json!({"name": "u", "url": "http://127.0.0.1:1/mcp", "transport": t, "sharing": sharing}),
        };
        UpstreamHandle::new(0, serde_json::from_value(config).expect("config"), HashMap::new())
    }

    #[test]
    fn only_shared_streamable_http_control_connections_declare_reverse_capabilities() {
        for (transport, sharing, reverse) in [
            ("streamable_http", "shared", true),
            ("streamable_http", "per_session", false),
            ("sse", "shared", false),
            ("sse", "per_session", false),
            ("stdio", "shared", false),
        ] {
            let up = handle(transport, sharing);
            assert_eq!(up.attributes_messages(), transport == "streamable_http", "{transport}");
            let declared = up.control_hello().capabilities;
            let expected = if reverse { json!({"sampling": {}, "elicitation": {}}) } else { json!({}) };
            assert_eq!(declared, expected, "{transport} {sharing}");
        }
    }

    #[test]
    fn backoff_doubles_and_caps() {
        assert_eq!(backoff(0), Duration::from_millis(500));
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(3), Duration::from_secs(4));
        assert_eq!(backoff(20), MAX_BACKOFF);
    }
}
