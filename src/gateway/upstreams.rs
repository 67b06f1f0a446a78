//! One configured upstream as the gateway sees it: where it lives, its
//! control connection, its last known tools and capabilities, and the place
//! of a session's own connection to it. The supervisor that keeps the
//! control connection up is [`super::supervise`].
//!
//! The control connection is toolgate's own session with the upstream (its
//! own `clientInfo`, no reverse-routing capabilities unless the upstream is
//! shared over Streamable HTTP). It crawls the tool list into the catalog,
//! answers list requests when a session has no connection of its own, and
//! hears `list_changed`. With `sharing = "shared"` it is also the connection
//! every session's calls use.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::{ArcSwap, ArcSwapOption};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use super::instances::Instances;
use crate::auth::PrincipalId;
use crate::catalog::{Extras, load_extras_dir};
use crate::config::{Sharing, Target, UpstreamAuth, UpstreamConfig};
use crate::upstream::modern::UpstreamEra;
use crate::upstream::{Cause, ClientHello, Peer, ServerHello, UpstreamError, toolgate_info};

/// The place of one per-session upstream connection.
pub type ConnectionSlot = Arc<tokio::sync::Mutex<Option<Arc<Peer>>>>;

/// A configured upstream.
pub struct UpstreamHandle {
    /// Position in the configuration (and in `tools/list`).
    pub index: usize,
    /// How its tools are presented (mode, prefix, overrides) and shared.
    pub config: Arc<UpstreamConfig>,
    /// Where it lives, resolved once.
    pub target: Target,
    /// Its name, for logs and errors.
    pub label: Arc<str>,
    /// Extras from `descriptions_dir`, keyed by upstream tool name.
    pub extras: HashMap<String, Extras>,
    control: ArcSwapOption<Peer>,
    /// Bumped whenever the control connection changes, for callers waiting
    /// for a new one.
    generation: watch::Sender<u64>,
    hello: ArcSwapOption<ServerHello>,
    tools: ArcSwap<Vec<Value>>,
    /// Why the upstream is down, while it is.
    down: Mutex<Option<Cause>>,
    /// `true` once the first connection attempt finished, either way.
    ready: watch::Sender<bool>,
    /// Asks the supervisor to crawl the tool list again.
    pub(super) refresh: Notify,
    /// Asks the supervisor to reconnect now rather than after its backoff.
    pub(super) reconnect: Notify,
    /// The places of its per-session children (stdio, `per_session` only).
    pub(crate) instances: Option<Instances>,
    /// Cancelled when a reload removes or replaces this upstream: its
    /// supervisor stops, and its slot serves nothing until a reload fills
    /// it again (see [`super::reload`]).
    pub(super) retired: CancellationToken,
    /// Its era as last probed, and its tools' `x-mcp-header`s, shared by
    /// all its connections.
    pub era: Arc<UpstreamEra>,
    /// Each authenticated client's own upstream session for its sessionless
    /// (2026-07-28) calls, when the upstream is `per_session` (see
    /// `connections::for_call`); forgotten when it closes.
    client_connections: Mutex<HashMap<PrincipalId, ConnectionSlot>>,
    /// Its configuration as an OAuth upstream, once it refused a client's
    /// call with a `Bearer` challenge naming protected-resource metadata
    /// while not configured `auth = "oauth"` (see [`UpstreamHandle::oauth`]).
    protected: ArcSwapOption<UpstreamConfig>,
}

impl UpstreamHandle {
    pub(crate) fn new(index: usize, config: UpstreamConfig, target: Target, extras: HashMap<String, Extras>) -> Self {
        let label: Arc<str> = Arc::from(config.name.as_str());
        let instances = Instances::of(&config, &target);
        Self {
            instances,
            index,
            config: Arc::new(config),
            target,
            label,
            extras,
            control: ArcSwapOption::empty(),
            generation: watch::channel(0).0,
            hello: ArcSwapOption::empty(),
            tools: ArcSwap::from_pointee(Vec::new()),
            down: Mutex::new(Some(Cause::msg("starting"))),
            ready: watch::channel(false).0,
            refresh: Notify::new(),
            reconnect: Notify::new(),
            retired: CancellationToken::new(),
            era: UpstreamEra::shared(),
            client_connections: Mutex::new(HashMap::new()),
            protected: ArcSwapOption::empty(),
        }
    }

    /// Its configuration as an OAuth upstream: configured `auth = "oauth"`,
    /// or found protected by a call ([`UpstreamHandle::found_protected`]).
    pub fn oauth(&self) -> Option<Arc<UpstreamConfig>> {
        match self.config.auth {
            UpstreamAuth::Oauth => Some(self.config.clone()),
            UpstreamAuth::None => self.protected.load_full(),
        }
    }

    /// Whether a call found it protected (not configured so).
    pub fn is_found_protected(&self) -> bool {
        self.protected.load().is_some()
    }

    /// Notes that it answered an authenticated client's call with a 401
    /// naming protected-resource metadata: from now on its clients
    /// authorize toolgate for it, each with consent, as if it were
    /// configured `auth = "oauth"` (with its `headers` left to the catalog).
    /// Only for an HTTP upstream that has no `[upstream.identity]`.
    pub fn found_protected(&self) -> bool {
        if self.config.url.is_none() || self.config.identity.is_some() || self.config.auth == UpstreamAuth::Oauth {
            return false;
        }
        if self.protected.load().is_none() {
            let config = UpstreamConfig { auth: UpstreamAuth::Oauth, ..(*self.config).clone() };
            self.protected.store(Some(Arc::new(config)));
            tracing::warn!(
                upstream = %self.label,
                "the upstream answered a client's call with 401 and protected-resource metadata: its clients now \
                 authorize toolgate for it (set auth = \"oauth\" to make it so from the start)"
            );
        }
        true
    }

    /// The handle of configured upstream `config` at slot `index`, with
    /// the extras of its `descriptions_dir` (problems there are logged).
    pub(crate) fn configured(index: usize, config: UpstreamConfig, target: Target) -> Self {
        let extras = match &config.descriptions_dir {
            Some(dir) => {
                let (extras, warnings) = load_extras_dir(dir);
                for w in warnings {
                    tracing::warn!(upstream = %config.name, "{w}");
                }
                extras
            }
            None => Default::default(),
        };
        Self::new(index, config, target, extras)
    }

    /// Whether a reload removed or replaced this upstream.
    pub fn is_retired(&self) -> bool {
        self.retired.is_cancelled()
    }

    /// Stops serving this upstream (a reload removed or replaced it): its
    /// supervisor ends, calls get `why` as the cause of their error, and
    /// its tools and capabilities leave every list. The caller shuts its
    /// connections down, starting with the control connection returned.
    pub(crate) fn retire(&self, why: &str) -> Vec<Arc<Peer>> {
        self.retired.cancel();
        let control = self.control.swap(None);
        self.set_down(Cause::msg(why.to_owned()));
        self.hello.store(None);
        self.set_tools(Vec::new());
        self.mark_ready();
        control.into_iter().chain(self.take_client_connections()).collect()
    }

    /// The place of `client`'s own connection for its sessionless calls.
    pub(crate) fn client_slot(&self, client: &PrincipalId) -> ConnectionSlot {
        self.client_connections.lock().entry(client.clone()).or_default().clone()
    }

    /// Forgets `client`'s connection if it is still `peer` (which closed).
    pub(crate) fn forget_client(&self, client: &PrincipalId, peer: &Arc<Peer>) {
        let mut connections = self.client_connections.lock();
        let stale = connections
            .get(client)
            .is_some_and(|slot| slot.try_lock().is_ok_and(|held| held.as_ref().is_none_or(|p| Arc::ptr_eq(p, peer))));
        if stale {
            connections.remove(client);
        }
    }

    /// The sessionless connections of the clients `which` picks, taken out
    /// (a reload changed their credentials, or removed them).
    pub(crate) fn take_connections_of(&self, which: impl Fn(&PrincipalId) -> bool) -> Vec<Arc<Peer>> {
        let slots: Vec<ConnectionSlot> = {
            let mut connections = self.client_connections.lock();
            let picked: Vec<PrincipalId> = connections.keys().filter(|id| which(id)).cloned().collect();
            picked.iter().filter_map(|id| connections.remove(id)).collect()
        };
        slots.iter().filter_map(|slot| slot.try_lock().ok().and_then(|mut held| held.take())).collect()
    }

    /// Every client's sessionless connection, taken out (the upstream stops).
    /// One being opened right now sees the upstream retired and stops itself.
    pub(crate) fn take_client_connections(&self) -> Vec<Arc<Peer>> {
        let slots: Vec<ConnectionSlot> = self.client_connections.lock().drain().map(|(_, slot)| slot).collect();
        slots.iter().filter_map(|slot| slot.try_lock().ok().and_then(|mut held| held.take())).collect()
    }

    /// Starts from what `old` (the handle this one replaces) last knew: its
    /// tools and capabilities, so lists do not flap while this one connects.
    pub(crate) fn seed_from(&self, old: &UpstreamHandle) {
        self.hello.store(old.hello());
        self.set_tools(old.tools().as_ref().clone());
    }

    /// The control connection, while it is up.
    pub fn control(&self) -> Option<Arc<Peer>> {
        self.control.load_full().filter(|p| !p.is_closed() && !self.is_retired())
    }

    /// A control connection that replaces one that just failed: the
    /// supervisor reconnects at once, and this waits up to `within` for it.
    pub async fn fresh_control(&self, within: Duration) -> Result<Arc<Peer>, UpstreamError> {
        let mut generation = self.generation.subscribe();
        self.reconnect.notify_one();
        let wait = async {
            loop {
                if let Some(peer) = self.control() {
                    return peer;
                }
                if generation.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::time::timeout(within, wait).await.map_err(|_| self.unavailable())
    }

    /// The upstream's last `initialize` answer (kept while it restarts).
    pub fn hello(&self) -> Option<Arc<ServerHello>> {
        self.hello.load_full()
    }

    /// Whether the upstream declared capability `name`.
    pub fn has(&self, name: &str) -> bool {
        self.hello.load().as_ref().is_some_and(|h| h.has(name))
    }

    /// The last tool list crawled (kept while the upstream restarts, so the
    /// catalog does not flap).
    pub fn tools(&self) -> Arc<Vec<Value>> {
        self.tools.load_full()
    }

    /// Whether its connections are shared by every session.
    pub fn is_shared(&self) -> bool {
        self.config.sharing == Sharing::Shared
    }

    /// Whether its control connection is up.
    pub fn is_up(&self) -> bool {
        self.down.lock().is_none()
    }

    /// The error for requests while the upstream is down.
    pub fn unavailable(&self) -> UpstreamError {
        let cause = self.down.lock().clone().unwrap_or_else(|| Cause::msg("not connected"));
        UpstreamError::Unavailable { upstream: self.label.clone(), source: cause }
    }

    /// What the control connection declares. It carries the calls of
    /// sessionless (2026-07-28) clients, which toolgate answers input
    /// requests for (multi-round-trip translation: sampling, elicitation,
    /// and roots with `forward_roots`), and with `sharing = "shared"` every
    /// session's calls. Shared over stdio or legacy SSE, nothing ties a
    /// server-to-client request to the session whose call caused it, so
    /// none are declared there.
    pub fn control_hello(&self) -> ClientHello {
        let capabilities = if self.is_shared() && !self.target.attributes_calls() {
            json!({})
        } else {
            // Everything toolgate carries to a client end to end, so that
            // the catalog lists every tool a capable client may use.
            let mut caps = json!({
                "sampling": {},
                "elicitation": {"form": {}, "url": {}},
                "tasks": {"list": {}, "cancel": {},
                          "requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}}},
            });
            if self.config.forward_roots {
                caps["roots"] = json!({});
            }
            caps
        };
        ClientHello { capabilities, client_info: toolgate_info() }
    }

    /// Asks for a fresh crawl of the tool list.
    pub fn request_refresh(&self) {
        self.refresh.notify_one();
    }

    /// Whether the first connection attempt is over.
    pub fn is_ready(&self) -> bool {
        *self.ready.borrow()
    }

    /// Waits until the first connection attempt is over.
    pub async fn wait_ready(&self) {
        let mut rx = self.ready.subscribe();
        let _ = rx.wait_for(|r| *r).await;
    }

    fn set_control(&self, peer: Option<Arc<Peer>>) {
        self.control.store(peer);
        self.generation.send_modify(|g| *g += 1);
    }

    pub(super) fn set_up(&self, peer: Arc<Peer>) {
        self.hello.store(peer.hello().cloned().map(Arc::new));
        *self.down.lock() = None;
        self.set_control(Some(peer));
    }

    pub(super) fn set_down(&self, cause: Cause) {
        *self.down.lock() = Some(cause);
        self.set_control(None);
    }

    pub(super) fn set_tools(&self, tools: Vec<Value>) {
        self.tools.store(Arc::new(tools));
    }

    /// Whether it speaks the sessionless revision (2026-07-28: no
    /// `resources/subscribe`, no `logging/setLevel`).
    pub fn is_modern(&self) -> bool {
        // A look, not a copy of the `Arc` (two atomic counts per call).
        self.hello.load().as_ref().is_some_and(|h| h.modern.is_some())
    }

    pub(super) fn mark_ready(&self) {
        self.ready.send_replace(true);
    }
}

#[cfg(test)]
mod tests;
