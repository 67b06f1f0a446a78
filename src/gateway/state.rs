//! What the gateway keeps per downstream session.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use super::CatalogView;
use super::upstreams::UpstreamHandle;
use crate::auth::{Principal, SessionGuard};
use crate::upstream::Peer;

/// Tool lists this session's own upstream sessions reported that differ
/// from the gateway-wide ones (servers with per-session toolsets), and the
/// catalog built from them.
#[derive(Default)]
pub struct SessionTools {
    /// Upstream index → that upstream's tools as this session sees them.
    pub overrides: HashMap<usize, Arc<Vec<Value>>>,
    /// The session's catalog, and the gateway-wide epoch it was built on.
    pub view: Option<(u64, Arc<CatalogView>)>,
}

/// The tools a session may call (the disclosure layer's): those whose
/// description it fetched, with the fingerprint of the definition it saw,
/// since a changed definition must be fetched again.
#[derive(Default)]
pub struct Grants(Mutex<HashMap<String, u64>>);

impl Grants {
    /// Records that the session fetched these definitions.
    pub fn grant(&self, tools: impl IntoIterator<Item = (String, u64)>) {
        self.0.lock().extend(tools);
    }

    /// Whether the session fetched the current definition of `tool`.
    pub fn allows(&self, tool: &str, fingerprint: u64) -> bool {
        self.0.lock().get(tool) == Some(&fingerprint)
    }

    /// Every grant, with its fingerprint (carried from one sessionless
    /// request to the next; see `Gateway::sessionless`).
    pub fn snapshot(&self) -> Vec<(String, u64)> {
        self.0.lock().iter().map(|(t, f)| (t.clone(), *f)).collect()
    }
}

/// Per-session gateway state: the client it belongs to, the tools this
/// session may call, its own upstream sessions, and what it subscribed to.
pub struct GatewaySession {
    /// The client (anonymous without `[auth]`, and on stdio) and its policy.
    principal: Principal,
    /// Upstream index → whether the client may use that upstream at all.
    uses: Box<[bool]>,
    /// The client's `max_sessions` slot, released when the session ends.
    slot: Mutex<Option<SessionGuard>>,
    /// What the disclosure layer allows this session to call.
    pub grants: Grants,
    /// This session's own upstream sessions (`sharing = "per_session"`), by
    /// upstream index, created on first use. The async lock makes concurrent
    /// first uses share one connection instead of racing two.
    connections: Box<[tokio::sync::Mutex<Option<Arc<Peer>>>]>,
    /// Resource URIs this session subscribed to.
    subscriptions: Mutex<HashSet<String>>,
    /// The level from the client's last `logging/setLevel`, replayed on
    /// upstream sessions created later.
    log_level: Mutex<Option<Value>>,
    /// Session-specific tool lists, if any upstream session reported one.
    pub tools: Mutex<SessionTools>,
    /// Until when the session's requests may wait for upstreams still
    /// starting (set from `initialize`'s wait).
    startup_deadline: tokio::time::Instant,
}

impl GatewaySession {
    /// State for an anonymous session of a gateway with `upstreams` upstreams.
    pub fn new(upstreams: usize) -> Self {
        Self::build(Principal::anonymous(), vec![true; upstreams].into_boxed_slice(), None)
    }

    /// State for a session of `principal`, holding its `max_sessions` slot
    /// (if it has a limit).
    pub fn for_client(upstreams: &[Arc<UpstreamHandle>], principal: Principal, slot: Option<SessionGuard>) -> Self {
        let uses = upstreams.iter().map(|u| principal.tools().allows_upstream(&u.config.name)).collect();
        Self::build(principal, uses, slot)
    }

    fn build(principal: Principal, uses: Box<[bool]>, slot: Option<SessionGuard>) -> Self {
        let upstreams = uses.len();
        Self {
            principal,
            uses,
            slot: Mutex::new(slot),
            grants: Grants::default(),
            connections: (0..upstreams).map(|_| tokio::sync::Mutex::new(None)).collect(),
            subscriptions: Mutex::new(HashSet::new()),
            log_level: Mutex::new(None),
            tools: Mutex::new(SessionTools::default()),
            startup_deadline: tokio::time::Instant::now(),
        }
    }

    /// This state, whose requests may wait for upstreams still starting
    /// until `deadline`.
    pub fn with_startup_deadline(mut self, deadline: tokio::time::Instant) -> Self {
        self.startup_deadline = deadline;
        self
    }

    /// Until when the session's requests may wait for upstreams still starting.
    pub fn startup_deadline(&self) -> tokio::time::Instant {
        self.startup_deadline
    }

    /// The client this session belongs to.
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// The client's name, for logs and metrics labels: the `[[auth.clients]]`
    /// name, the JWT's client claim, or `anonymous` without authentication.
    pub fn client_name(&self) -> &str {
        self.principal.name()
    }

    /// Whether the client may use upstream `index` at all (its tools,
    /// resources, templates, prompts and completions).
    pub fn uses(&self, index: usize) -> bool {
        self.uses.get(index).copied().unwrap_or(false)
    }

    /// Frees the client's `max_sessions` slot (the session has ended).
    pub fn release_slot(&self) {
        self.slot.lock().take();
    }

    /// The slot of upstream `index`'s per-session connection.
    pub fn connection_slot(&self, index: usize) -> Option<&tokio::sync::Mutex<Option<Arc<Peer>>>> {
        self.connections.get(index)
    }

    /// Every per-session connection, taken out (the session is ending).
    pub async fn take_connections(&self) -> Vec<Arc<Peer>> {
        let mut peers = Vec::new();
        for slot in self.connections.iter() {
            if let Some(p) = slot.lock().await.take() {
                peers.push(p);
            }
        }
        peers
    }

    /// The live per-session connections (without waiting on one being made).
    pub fn live_connections(&self) -> Vec<(usize, Arc<Peer>)> {
        self.connections
            .iter()
            .enumerate()
            .filter_map(|(i, slot)| slot.try_lock().ok().and_then(|s| s.clone()).map(|p| (i, p)))
            .filter(|(_, p)| !p.is_closed())
            .collect()
    }

    /// Adds a subscription; returns whether it is new.
    pub fn subscribe(&self, uri: &str) -> bool {
        self.subscriptions.lock().insert(uri.to_owned())
    }

    /// Removes a subscription; returns whether it existed.
    pub fn unsubscribe(&self, uri: &str) -> bool {
        self.subscriptions.lock().remove(uri)
    }

    /// Whether the session subscribed to `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.subscriptions.lock().contains(uri)
    }

    /// Every subscription (the session is ending).
    pub fn subscriptions(&self) -> Vec<String> {
        self.subscriptions.lock().iter().cloned().collect()
    }

    /// Remembers the client's logging level.
    pub fn set_log_level(&self, level: Value) {
        *self.log_level.lock() = Some(level);
    }

    /// The client's logging level, if it set one.
    pub fn log_level(&self) -> Option<Value> {
        self.log_level.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_are_per_definition() {
        let s = GatewaySession::new(2);
        assert!(!s.grants.allows("a", 1));
        s.grants.grant([("a".to_owned(), 1)]);
        assert!(s.grants.allows("a", 1));
        assert!(!s.grants.allows("a", 2), "a changed definition must be fetched again");
        assert!(!GatewaySession::new(2).grants.allows("a", 1), "sessions do not share grants");
    }
}
