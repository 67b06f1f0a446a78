//! The gateway: the MCP application behind the server engine.
//!
//! It answers `initialize` and `tools/list` itself, serves the
//! `tool_descriptions` resource and the `describe_tools` tool, gates
//! `tools/call` per session, and forwards everything else to the upstream
//! that owns it, over that session's own upstream session or the shared one.

mod events;
mod init;
mod lists;
mod pages;
mod requests;
mod state;
mod translate;
mod upstreams;

use std::sync::{Arc, Weak};
use std::time::Duration;

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub use state::GatewaySession;
pub use upstreams::{UpstreamHandle, crawl, toolgate_info};

use crate::catalog::{Catalog, UpstreamTools, load_extras_dir};
use crate::config::{Config, Sharing};
use crate::jsonrpc::{ErrorObject, Message, Notification, Outcome, Request};
use crate::protocol::method;
use crate::server::{Handler, InitContext, RequestCtx, ServerOffer, Session, SessionStore};
use crate::upstream::{self, ClientHello, ConnectOptions, Peer, UpstreamError};

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The HTTP client for upstreams could not be built (e.g. no CA certificates).
    #[error("cannot build the HTTP client for upstreams: {0}")]
    HttpClient(String),
}

/// A downstream session of the gateway.
pub type GwSession = Session<GatewaySession>;

/// The catalog as served.
pub struct CatalogView {
    /// The merged catalog.
    pub catalog: Catalog,
    /// Bumped on every rebuild; keys cached description bodies.
    pub epoch: u64,
}

/// A rendered read of the descriptions resource.
pub(crate) struct RenderedDescriptions {
    /// The `resources/read` result.
    pub result: Arc<RawValue>,
    /// The tools it authorizes, with the fingerprints of their definitions.
    pub authorized: Vec<(String, u64)>,
}

/// The gateway.
pub struct Gateway {
    config: Arc<Config>,
    upstreams: Vec<Arc<UpstreamHandle>>,
    catalog: ArcSwap<CatalogView>,
    /// Serializes catalog rebuilds (several upstreams may change at once).
    rebuild_lock: Mutex<()>,
    /// Source of catalog epochs, gateway-wide and per-session alike.
    epochs: std::sync::atomic::AtomicU64,
    sessions: Arc<SessionStore<GatewaySession>>,
    http: reqwest::Client,
    lists: lists::RouteMaps,
    pager: pages::Pager,
    /// URL-mode elicitation id → the session it was sent to, so a shared
    /// upstream's unsolicited `notifications/elicitation/complete` reaches
    /// only that client.
    elicitations: moka::sync::Cache<String, Arc<str>>,
    /// Rendered `resources/read` results of the descriptions resource, by
    /// catalog epoch and URI (cheap answers to repeated fetches).
    descriptions: moka::sync::Cache<(u64, String), Arc<RenderedDescriptions>>,
    shutdown: CancellationToken,
}

impl Gateway {
    /// Builds the gateway and starts one supervisor per upstream. Requests
    /// that need the catalog wait (up to `server.startup_timeout`) for the
    /// upstreams' first connection attempts.
    pub fn start(config: Config, sessions: Arc<SessionStore<GatewaySession>>) -> Result<Arc<Self>, StartError> {
        let page_size = config.server.page_size;
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| StartError::HttpClient(e.to_string()))?;
        let upstreams = config
            .upstreams
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, cfg)| {
                let extras = match &cfg.descriptions_dir {
                    Some(dir) => {
                        let (extras, warnings) = load_extras_dir(dir);
                        for w in warnings {
                            tracing::warn!(upstream = %cfg.name, "{w}");
                        }
                        extras
                    }
                    None => Default::default(),
                };
                Arc::new(UpstreamHandle::new(i, cfg, extras))
            })
            .collect();
        let gateway = Arc::new(Self {
            config: Arc::new(config),
            upstreams,
            catalog: ArcSwap::from_pointee(CatalogView { catalog: Catalog::empty(), epoch: 0 }),
            rebuild_lock: Mutex::new(()),
            epochs: std::sync::atomic::AtomicU64::new(1),
            sessions,
            http,
            lists: lists::RouteMaps::default(),
            pager: pages::Pager::new(page_size),
            elicitations: moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(Duration::from_secs(3600))
                .build(),
            descriptions: moka::sync::Cache::builder().max_capacity(1024).build(),
            shutdown: CancellationToken::new(),
        });
        gateway.rebuild_catalog();
        for up in &gateway.upstreams {
            tokio::spawn(supervise(Arc::downgrade(&gateway), up.clone()));
        }
        Ok(gateway)
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The configured upstreams, in order.
    pub fn upstreams(&self) -> &[Arc<UpstreamHandle>] {
        &self.upstreams
    }

    /// The current catalog.
    pub fn catalog(&self) -> Arc<CatalogView> {
        self.catalog.load_full()
    }

    /// Waits until every upstream's first connection attempt is over, or
    /// `server.startup_timeout` passes.
    pub async fn wait_ready(&self) {
        let all = futures::future::join_all(self.upstreams.iter().map(|u| u.wait_ready()));
        if tokio::time::timeout(self.config.server.startup_timeout, all).await.is_err() {
            tracing::debug!("answering before every upstream finished starting");
        }
    }

    /// Stops the supervisors and every upstream connection.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        self.sessions.clear();
        let controls: Vec<_> = self.upstreams.iter().filter_map(|u| u.control()).collect();
        futures::future::join_all(controls.iter().map(|p| p.shutdown())).await;
    }

    /// Merges every upstream's tools into a new catalog. Sessions hear
    /// `tools/list_changed` when the served list actually changed.
    pub(crate) fn rebuild_catalog(&self) {
        let _guard = self.rebuild_lock.lock();
        let view = self.build_view(|_| None);
        let old = self.catalog.load();
        for p in view.catalog.problems() {
            if !old.catalog.problems().contains(p) {
                tracing::warn!("{p}");
            }
        }
        let changed = view.catalog.list_result_raw().get() != old.catalog.list_result_raw().get();
        let tools = view.catalog.len();
        self.catalog.store(Arc::new(view));
        if changed && !self.sessions.is_empty() {
            tracing::info!(tools, "tool catalog changed; notifying sessions");
            self.broadcast(Notification::new(method::TOOLS_LIST_CHANGED, None));
        }
    }

    /// Builds a catalog from every upstream's tools, or `replaced(i)` where
    /// that gives a list.
    fn build_view(&self, replaced: impl Fn(usize) -> Option<Arc<Vec<Value>>>) -> CatalogView {
        let tools: Vec<_> = self.upstreams.iter().map(|u| replaced(u.index).unwrap_or_else(|| u.tools())).collect();
        let inputs: Vec<UpstreamTools<'_>> = self
            .upstreams
            .iter()
            .zip(&tools)
            .map(|(u, t)| UpstreamTools { config: &u.config, tools: t, extras: &u.extras })
            .collect();
        let catalog = Catalog::build(&inputs, &self.config.disclosure);
        CatalogView { catalog, epoch: self.epochs.fetch_add(1, std::sync::atomic::Ordering::Relaxed) }
    }

    /// The catalog as `session` sees it: the gateway-wide one, unless one of
    /// its own upstream sessions reported a different tool list.
    pub(crate) fn catalog_for(&self, session: &GwSession) -> Arc<CatalogView> {
        let global = self.catalog();
        let mut tools = session.state.tools.lock();
        if tools.overrides.is_empty() {
            return global;
        }
        if let Some((epoch, view)) = &tools.view
            && *epoch == global.epoch
        {
            return view.clone();
        }
        let view = Arc::new(self.build_view(|i| tools.overrides.get(&i).cloned()));
        tools.view = Some((global.epoch, view.clone()));
        view
    }

    /// A session's own upstream session says its tools changed: list them
    /// there, and tell that session (only) if what it sees changed.
    pub(crate) async fn session_tools_changed(&self, session: &Arc<GwSession>, index: usize, peer: Option<&Arc<Peer>>) {
        let before = self.catalog_for(session);
        let tools = match peer {
            Some(peer) => match upstreams::crawl(peer, method::TOOLS_LIST, "tools").await {
                Ok(tools) => Some(tools),
                Err(e) => {
                    tracing::warn!(upstream = %peer.label(), error = %e, "could not list the session's tools");
                    return;
                }
            },
            None => None,
        };
        {
            let mut state = session.state.tools.lock();
            let global = self.upstreams[index].tools();
            match tools.filter(|t| *t != *global) {
                Some(t) => state.overrides.insert(index, Arc::new(t)),
                None => state.overrides.remove(&index),
            };
            state.view = None;
        }
        let after = self.catalog_for(session);
        if before.catalog.list_result_raw().get() != after.catalog.list_result_raw().get() {
            session.notify(Message::Notification(Notification::new(method::TOOLS_LIST_CHANGED, None)));
        }
    }

    /// Sends a notification to every live session's standalone stream.
    pub(crate) fn broadcast(&self, notification: Notification) {
        for s in self.sessions.sessions() {
            s.notify(Message::Notification(notification.clone()));
        }
    }

    /// The connection session `session` uses for upstream `index`: the
    /// shared one, or its own (created on first use).
    pub(crate) async fn connection(
        self: &Arc<Self>,
        session: &Arc<GwSession>,
        index: usize,
    ) -> Result<Arc<Peer>, UpstreamError> {
        let up = &self.upstreams[index];
        let control = up.control();
        if up.config.sharing == Sharing::Shared {
            return control.ok_or_else(|| up.unavailable());
        }
        // A down control connection means the upstream cannot start: fail
        // fast instead of spawning a doomed child per request.
        if control.is_none() {
            return Err(up.unavailable());
        }
        let Some(slot) = session.state.connection_slot(index) else { return Err(up.unavailable()) };
        let mut slot = slot.lock().await;
        if let Some(peer) = slot.as_ref().filter(|p| !p.is_closed()) {
            return Ok(peer.clone());
        }
        if session.closed().is_cancelled() {
            return Err(UpstreamError::Cancelled);
        }
        let options = ConnectOptions {
            label: up.label.clone(),
            hello: session_hello(session),
            events: Arc::new(events::SessionEvents::new(Arc::downgrade(self), Arc::downgrade(session), index)),
            // Without per-call streams, whatever the upstream sends belongs
            // to this session's newest call.
            attribute_to_latest_call: !up.attributes_messages(),
        };
        let peer = upstream::connect(&up.config, &self.http, options).await?;
        tracing::debug!(upstream = %up.label, session = session.id(), "opened a per-session upstream session");
        if let Some(level) = session.state.log_level().filter(|_| peer.hello().is_some_and(|h| h.has("logging"))) {
            let _ = peer
                .call(method::LOGGING_SET_LEVEL, Some(json!({"level": level})), None, &CancellationToken::new())
                .await;
        }
        *slot = Some(peer.clone());
        Ok(peer)
    }
}

/// What a per-session upstream session declares: the client's own
/// reverse-routing capabilities (each request from that upstream session
/// belongs to this client), nothing toolgate cannot carry (tasks, experimental).
fn session_hello(session: &GwSession) -> ClientHello {
    let caps = session.client_capabilities();
    let mut declared = serde_json::Map::new();
    for key in ["sampling", "elicitation", "roots"] {
        if let Some(v) = caps.get(key).filter(|v| !v.is_null()) {
            declared.insert(key.into(), v.clone());
        }
    }
    let client_info = match session.client_info() {
        Value::Object(_) => session.client_info().clone(),
        _ => upstreams::toolgate_info(),
    };
    ClientHello { capabilities: Value::Object(declared), client_info }
}

/// Keeps one upstream's control connection up: connect, crawl its tools,
/// refresh on `list_changed`, and restart with backoff when it dies.
async fn supervise(gateway: Weak<Gateway>, up: Arc<UpstreamHandle>) {
    let mut attempt = 0u32;
    loop {
        let Some(gw) = gateway.upgrade() else { return };
        if gw.shutdown.is_cancelled() {
            return;
        }
        let options = ConnectOptions {
            label: up.label.clone(),
            hello: up.control_hello(),
            events: Arc::new(events::ControlEvents::new(gateway.clone(), up.index)),
            attribute_to_latest_call: false,
        };
        let connected = upstream::connect(&up.config, &gw.http, options).await;
        let shutdown = gw.shutdown.clone();
        drop(gw);
        match connected {
            Ok(peer) => {
                attempt = 0;
                up.set_up(peer.clone());
                refresh_tools(&gateway, &up, &peer).await;
                up.mark_ready();
                loop {
                    tokio::select! {
                        _ = peer.closed().cancelled() => break,
                        _ = shutdown.cancelled() => return,
                        _ = up.refresh_requested() => refresh_tools(&gateway, &up, &peer).await,
                    }
                }
                let reason = peer.close_reason().unwrap_or_else(|| "connection closed".into());
                tracing::warn!(upstream = %up.label, %reason, "upstream connection lost; restarting");
                up.set_down(reason);
            }
            Err(e) => {
                tracing::error!(upstream = %up.label, error = %e, retry_in = ?upstreams::backoff(attempt), "upstream unavailable");
                up.set_down(e.to_string());
                up.mark_ready();
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(upstreams::backoff(attempt)) => {}
            _ = shutdown.cancelled() => return,
        }
        attempt = attempt.saturating_add(1);
    }
}

/// Crawls an upstream's tools and rebuilds the catalog.
async fn refresh_tools(gateway: &Weak<Gateway>, up: &Arc<UpstreamHandle>, peer: &Arc<Peer>) {
    if !peer.hello().is_some_and(|h| h.has("tools")) {
        up.set_tools(Vec::new());
    } else {
        match upstreams::crawl(peer, method::TOOLS_LIST, "tools").await {
            Ok(tools) => {
                tracing::info!(upstream = %up.label, tools = tools.len(), "tool list loaded");
                up.set_tools(tools);
            }
            Err(e) => {
                tracing::warn!(upstream = %up.label, error = %e, "could not list tools; keeping the previous list");
                return;
            }
        }
    }
    if let Some(gw) = gateway.upgrade() {
        gw.rebuild_catalog();
    }
}

impl Handler for Gateway {
    type State = GatewaySession;

    async fn initialize(self: &Arc<Self>, ctx: &InitContext) -> Result<(ServerOffer, GatewaySession), ErrorObject> {
        self.wait_ready().await;
        Ok((self.offer(ctx.version), GatewaySession::new(self.upstreams.len())))
    }

    async fn request(self: &Arc<Self>, session: &Arc<GwSession>, request: Request, ctx: RequestCtx) -> Outcome {
        self.route(session, request, ctx).await
    }

    async fn notification(self: &Arc<Self>, session: &Arc<GwSession>, notification: Notification) {
        // Client notifications (roots changes, vendor ones) concern the
        // session's own upstream sessions.
        for (_, peer) in session.state.live_connections() {
            peer.notify(&notification.method, notification.params.clone()).await;
        }
    }

    async fn closed(self: &Arc<Self>, session: Arc<GwSession>) {
        let peers = session.state.take_connections().await;
        futures::future::join_all(peers.iter().map(|p| p.shutdown())).await;
        self.release_subscriptions(&session).await;
    }
}
