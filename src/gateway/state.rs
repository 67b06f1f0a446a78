//! What the gateway keeps per downstream session.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use serde_json::Value;

use super::CatalogView;
use super::upstreams::{ConnectionSlot, UpstreamHandle};
use crate::auth::{Principal, SessionGuard};
use crate::concerns::{Configured, Filter};
pub use crate::grants::Grants;
use crate::jsonrpc::{ErrorObject, codes};
use crate::server::Session;
use crate::shared::record::{self, Mutable};
use crate::shared::{Record, SessionLink, Unavailable};
use crate::upstream::Peer;
use crate::upstream::modern::ClientContext;

/// A downstream session of the gateway: the engine's session, holding the
/// gateway's state for it.
pub type GwSession = Session<GatewaySession>;

/// Tool lists this session's own upstream sessions reported that differ
/// from the gateway-wide ones (servers with per-session toolsets), and the
/// catalog built from them.
#[derive(Default)]
pub struct SessionTools {
    /// Upstream index → that upstream's tools as this session sees them.
    pub overrides: HashMap<usize, Arc<Vec<Value>>>,
    /// The session's catalog, and the gateway-wide epoch it was built on.
    pub view: Option<(u64, Arc<CatalogView>)>,
    /// The listing of that catalog under the session's concern filter, and
    /// the epoch of the view it was made of: kept here, not in a cache the
    /// gateway shares, so that it goes with the session and the next change.
    pub listing: Option<(u64, Filter, Arc<CatalogView>)>,
}

/// Longest resource URI a session may subscribe to, in bytes.
pub const MAX_SUBSCRIBED_URI: usize = 4096;

/// Per-session gateway state: the client it belongs to, the tools this
/// session may call, its own upstream sessions, and what it subscribed to.
pub struct GatewaySession {
    /// The client (anonymous without `[auth]`, and on stdio) and its policy.
    /// A reload that changes its client's policy replaces it.
    principal: RwLock<Principal>,
    /// The client's name (a reload never changes it).
    client_name: Arc<str>,
    /// Upstream index → whether the client may use that upstream at all
    /// (refitted when a reload adds or removes upstreams).
    uses: RwLock<Box<[bool]>>,
    /// The client's `max_sessions` slot, released when the session ends.
    slot: Mutex<Option<SessionGuard>>,
    /// What the disclosure layer allows this session to call: its own
    /// grants, or (sessionless) its client's in the gateway's store.
    pub grants: Grants,
    /// This session's own upstream sessions (`sharing = "per_session"`), by
    /// upstream index, created on first use. The async lock makes concurrent
    /// first uses share one connection instead of racing two. A reload
    /// appends the slots of upstreams it adds.
    connections: RwLock<Vec<ConnectionSlot>>,
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
    /// The client's concern configuration, if it has one (see
    /// [`crate::concerns`]): what its lists show.
    concerns: RwLock<Option<Configured>>,
    /// The tasks its upstreams created for it, and where they live.
    pub tasks: tasks::SessionTasks,
    /// Its record in the shared store (`[state] sessions = "shared"`).
    shared: Option<Arc<SessionLink>>,
    /// What a call to a modern upstream says of the client, without and
    /// with `roots` (see `connections::client_context`): made on first use
    /// and shared by every call after it (its capabilities never change),
    /// made again only with a new log level.
    contexts: Mutex<[Option<Arc<ClientContext>>; 2]>,
}

impl GatewaySession {
    /// State for an anonymous session of a gateway with `upstreams` upstreams.
    pub fn new(upstreams: usize) -> Self {
        Self::build(Principal::anonymous(), vec![true; upstreams].into_boxed_slice(), None, Grants::session())
    }

    /// State for a session of `principal`, holding its `max_sessions` slot
    /// (if it has a limit).
    pub fn for_client(upstreams: &[Arc<UpstreamHandle>], principal: Principal, slot: Option<SessionGuard>) -> Self {
        let uses = uses_of(upstreams, &principal);
        Self::build(principal, uses, slot, Grants::session())
    }

    /// State for one sessionless request (MCP 2026-07-28) of `principal`,
    /// whose gate consults `grants`: its client's in the gateway's store
    /// ([`Gateway::grants_for`](super::Gateway::grants_for)), so that every
    /// request of that client, on any replica sharing the store, sees the
    /// same grants. It holds no `max_sessions` slot.
    pub fn sessionless(upstreams: &[Arc<UpstreamHandle>], principal: Principal, grants: Grants) -> Self {
        let uses = uses_of(upstreams, &principal);
        Self::build(principal, uses, None, grants)
    }

    fn build(principal: Principal, uses: Box<[bool]>, slot: Option<SessionGuard>, grants: Grants) -> Self {
        let upstreams = uses.len();
        Self {
            client_name: principal.id().name_arc(),
            principal: RwLock::new(principal),
            uses: RwLock::new(uses),
            slot: Mutex::new(slot),
            grants,
            connections: RwLock::new((0..upstreams).map(|_| ConnectionSlot::default()).collect()),
            subscriptions: Mutex::new(HashSet::new()),
            log_level: Mutex::new(None),
            tools: Mutex::new(SessionTools::default()),
            startup_deadline: tokio::time::Instant::now(),
            concerns: RwLock::new(None),
            tasks: Default::default(),
            shared: None,
            contexts: Mutex::new([None, None]),
        }
    }

    /// What a call to a modern upstream says of this session's client
    /// (with `roots` or not), made by `make` the first time.
    pub fn client_context(&self, forward_roots: bool, make: impl FnOnce() -> ClientContext) -> Arc<ClientContext> {
        self.contexts.lock()[usize::from(forward_roots)].get_or_insert_with(|| Arc::new(make())).clone()
    }

    /// This state, for a session kept in the shared store through `link`,
    /// with what `record` says it had (its log level, subscriptions and
    /// grants; the caller puts its concerns in effect).
    pub fn shared_as(mut self, link: Arc<SessionLink>, record: &Record) -> Self {
        self.grants = Grants::replicated(link.clone(), &record.grants);
        *self.log_level.get_mut() = record.state.log_level.clone();
        self.subscriptions.get_mut().extend(record.state.subscriptions.iter().cloned());
        for (id, upstream) in &record.tasks {
            self.tasks.note(id, &Arc::from(upstream.as_str()));
        }
        self.shared = Some(link);
        self
    }

    /// Its record in the shared store, if it is kept there.
    pub fn link(&self) -> Option<&Arc<SessionLink>> {
        self.shared.as_ref()
    }

    /// The record of this session as this replica knows it (to write it
    /// back whole), if it is kept in the shared store.
    pub fn record(&self) -> Option<Record> {
        let link = self.shared.as_ref()?;
        let mut record = link.base().clone();
        record.state = self.mutable();
        record.grants = self.grants.known();
        record.tasks = self.tasks.known();
        Some(record)
    }

    /// The parts of its record that change while it lives.
    fn mutable(&self) -> Mutable {
        let mut subscriptions: Vec<String> = self.subscriptions.lock().iter().cloned().collect();
        subscriptions.sort();
        Mutable {
            log_level: self.log_level.lock().clone(),
            concerns: self.concerns.read().as_ref().map(|c| c.values().clone()),
            subscriptions,
        }
    }

    /// Writes `fields` of the session's record, if it is shared (in the
    /// background: the session works from this replica's state meanwhile,
    /// and a failed write is retried whole once Redis answers).
    fn write(&self, fields: Vec<(String, String)>) {
        let Some(link) = self.shared.clone() else { return };
        crate::spawn(async move { link.settle(link.sessions.update(&link.id, &fields).await) });
    }

    /// Removes `fields` from the session's record, if it is shared (as
    /// [`Self::write`] does).
    fn forget(&self, fields: Vec<String>) {
        let Some(link) = self.shared.clone() else { return };
        crate::spawn(async move { link.settle(link.sessions.remove(&link.id, &fields).await) });
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
    pub fn principal(&self) -> Principal {
        self.principal.read().clone()
    }

    /// The client this session belongs to, without a copy (held briefly:
    /// a reload waits for it).
    pub fn principal_ref(&self) -> parking_lot::RwLockReadGuard<'_, Principal> {
        self.principal.read()
    }

    /// The client's name, for logs and metrics labels: the `[[auth.clients]]`
    /// name, the JWT's client claim, or `anonymous` without authentication.
    pub fn client_name(&self) -> &str {
        &self.client_name
    }

    /// Whether the client may use upstream `index` at all (its tools,
    /// resources, templates, prompts and completions).
    pub fn uses(&self, index: usize) -> bool {
        self.uses.read().get(index).copied().unwrap_or(false)
    }

    /// Frees the client's `max_sessions` slot (the session has ended).
    pub fn release_slot(&self) {
        self.slot.lock().take();
    }

    /// The slot of upstream `index`'s per-session connection.
    pub fn connection_slot(&self, index: usize) -> Option<ConnectionSlot> {
        self.connections.read().get(index).cloned()
    }

    /// Fits the session to the upstream slots after a reload: a place for
    /// each new slot, and which upstreams its client may use (none that is
    /// retired).
    pub(crate) fn refit(&self, upstreams: &[Arc<UpstreamHandle>]) {
        {
            let mut connections = self.connections.write();
            let missing = upstreams.len().saturating_sub(connections.len());
            connections.extend((0..missing).map(|_| ConnectionSlot::default()));
        }
        *self.uses.write() = uses_of(upstreams, &self.principal.read());
    }

    /// Gives the session its client's policy as a reload changed it (the
    /// caller refits the session and tells it what it now sees).
    pub(crate) fn set_principal(&self, principal: Principal) {
        *self.principal.write() = principal;
    }

    /// The session's own connection to upstream `index`, taken out (a
    /// reload removed or replaced that upstream).
    pub(crate) async fn take_connection(&self, index: usize) -> Option<Arc<Peer>> {
        let slot = self.connection_slot(index)?;
        slot.lock().await.take()
    }

    /// Every per-session connection, taken out (the session is ending).
    pub async fn take_connections(&self) -> Vec<Arc<Peer>> {
        let mut peers = Vec::new();
        let slots = self.connections.read().clone();
        for slot in slots.iter() {
            if let Some(p) = slot.lock().await.take() {
                peers.push(p);
            }
        }
        peers
    }

    /// The live per-session connections (without waiting on one being made).
    pub fn live_connections(&self) -> Vec<(usize, Arc<Peer>)> {
        self.connections
            .read()
            .iter()
            .enumerate()
            .filter_map(|(i, slot)| slot.try_lock().ok().and_then(|s| s.clone()).map(|p| (i, p)))
            .filter(|(_, p)| !p.is_closed())
            .collect()
    }

    /// Adds a subscription; returns whether it is new.
    pub fn subscribe(&self, uri: &str) -> bool {
        let new = self.subscriptions.lock().insert(uri.to_owned());
        if new {
            self.write(vec![(record::subscription_field(uri), "1".to_owned())]);
        }
        new
    }

    /// Removes a subscription; returns whether it existed.
    pub fn unsubscribe(&self, uri: &str) -> bool {
        let existed = self.subscriptions.lock().remove(uri);
        if existed {
            self.forget(vec![record::subscription_field(uri)]);
        }
        existed
    }

    /// Whether the session may subscribe to `uris` besides what it holds,
    /// and hold at most `max` subscriptions; the refusal otherwise (a URI
    /// over [`MAX_SUBSCRIBED_URI`] bytes is refused too). Requests checked
    /// at once may together pass `max` by as many as run at once.
    pub fn admit_subscriptions<'u>(
        &self,
        uris: impl IntoIterator<Item = &'u str>,
        max: usize,
    ) -> Result<(), ErrorObject> {
        let held = self.subscriptions.lock();
        let mut more = 0;
        for uri in uris {
            if uri.len() > MAX_SUBSCRIBED_URI {
                return Err(ErrorObject::invalid_params(format!(
                    "A resource URI to subscribe to may be at most {MAX_SUBSCRIBED_URI} bytes long"
                )));
            }
            more += usize::from(!held.contains(uri));
        }
        if held.len() + more > max {
            return Err(ErrorObject::new(
                codes::LIMIT_EXCEEDED,
                format!(
                    "Too many resource subscriptions: a session may hold at most {max}; unsubscribe from some first"
                ),
            ));
        }
        Ok(())
    }

    /// Remembers that upstream `upstream` created task `id` for this
    /// session (and in its record, if it is shared, for the replicas that
    /// serve it later).
    pub fn note_task(&self, id: &str, upstream: &Arc<str>) {
        let forgotten = self.tasks.note(id, upstream);
        if self.shared.is_some() {
            self.write(vec![(record::task_field(id), upstream.to_string())]);
            if let Some(forgotten) = forgotten {
                self.forget(vec![record::task_field(&forgotten)]);
            }
        }
    }

    /// For each of `ids`, the upstream holding that task if this session
    /// created it: what this replica knows, else (a shared session) what
    /// its record says another replica noted.
    pub async fn task_owners(&self, ids: &[&str]) -> Result<Vec<Option<Arc<str>>>, Unavailable> {
        let mut owners: Vec<Option<Arc<str>>> = ids.iter().map(|id| self.tasks.owner(id)).collect();
        let Some(link) = &self.shared else { return Ok(owners) };
        let unknown: Vec<usize> = (0..ids.len()).filter(|&i| owners[i].is_none()).collect();
        if unknown.is_empty() {
            return Ok(owners);
        }
        let fields: Vec<String> = unknown.iter().map(|&i| record::task_field(ids[i])).collect();
        let found = link.sessions.fields(&link.id, &fields).await?;
        for (&i, upstream) in unknown.iter().zip(found) {
            if let Some(upstream) = upstream {
                let upstream: Arc<str> = Arc::from(upstream);
                self.tasks.note(ids[i], &upstream);
                owners[i] = Some(upstream);
            }
        }
        Ok(owners)
    }

    /// Whether the session subscribed to `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.subscriptions.lock().contains(uri)
    }

    /// Every subscription (the session is ending).
    pub fn subscriptions(&self) -> Vec<String> {
        self.subscriptions.lock().iter().cloned().collect()
    }

    /// The client's concern configuration.
    pub fn concerns(&self) -> Option<Configured> {
        self.concerns.read().clone()
    }

    /// Puts a concern configuration in effect; returns the one it replaces.
    pub fn set_concerns(&self, configured: Option<Configured>) -> Option<Configured> {
        let values = configured.as_ref().map(|c| c.values().clone());
        let old = std::mem::replace(&mut *self.concerns.write(), configured);
        self.write(vec![record::concerns_field(values.as_ref())]);
        old
    }

    /// This state, with a concern configuration.
    pub fn with_concerns(self, configured: Option<Configured>) -> Self {
        *self.concerns.write() = configured;
        self
    }

    /// Remembers the client's logging level.
    pub fn set_log_level(&self, level: Value) {
        self.write(vec![record::log_field(Some(&level))]);
        *self.log_level.lock() = Some(level.clone());
        // Calls made from now on say the new level (set after the level
        // itself, so a context made meanwhile is remade here).
        for context in self.contexts.lock().iter_mut().flatten() {
            *context = Arc::new(ClientContext { log_level: Some(level.clone()), ..ClientContext::clone(context) });
        }
    }

    /// The client's logging level, if it set one.
    pub fn log_level(&self) -> Option<Value> {
        self.log_level.lock().clone()
    }
}

/// Which of `upstreams` `principal` may use: retired slots never.
fn uses_of(upstreams: &[Arc<UpstreamHandle>], principal: &Principal) -> Box<[bool]> {
    upstreams.iter().map(|u| !u.is_retired() && principal.tools().allows_upstream(&u.config.name)).collect()
}

mod tasks;

#[cfg(test)]
mod tests;
