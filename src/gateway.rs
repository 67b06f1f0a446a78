//! The gateway: the MCP application behind the server engine.
//!
//! A client request is [`resolve`]d once (the tool it calls, its caller, a
//! retry's checked state), then goes through the gateway's [`layer`]s to
//! the [`forward`]er, which routes it to the upstream that owns it:
//!
//! ```text
//! engine → resolve → Policy ([auth] only) → Concerns ([[concerns]] only) → Search (search listing only)
//!        → Disclosure (progressive upstreams only) → Forwarder → upstream stack
//! ```
//!
//! Each session belongs to a client ([`GatewaySession::principal`]): the
//! anonymous one without `[auth]` and on stdio. What a client may see is
//! decided by its catalog view and the forwarder's routes, which every layer
//! uses; the [`policy`] layer applies its call rate.
//!
//! Nouns, at the bottom (what the others read):
//! - [`upstreams`]: each configured upstream, its control connection, and
//!   the place of a session's own connection to it; [`instances`] bounds
//!   per-session children;
//! - [`state`]: what the gateway keeps per downstream session;
//! - [`catalogs`]: the merged tool catalog, gateway-wide and per session,
//!   built from what [`approved`] (the lock) lets through, and [`views`],
//!   the one handle on it (and on the configuration and the
//!   upstream slots) the layers hold;
//! - [`resolve`]: a request resolved once (the tool, its upstream, the
//!   caller, a retry's checked state); [`note`], what a request learned on
//!   its way; [`limits`], method namespaces; [`pages`], list paging.
//!
//! The layers, in their order ([`layer`] is their contract): [`policy`]
//! (the per-client call rate), [`concerns`], [`search`] (the search listing
//! and its call tool), [`disclosure`] (the gate, the descriptions
//! resource, the describe tool), [`budgets`] (per-tool budgets).
//!
//! Actors, above them:
//! - [`forward`]: the transparent forwarder, with its task and subscription
//!   routes; [`lists`] merges lists; [`translate`] downgrades content for
//!   older clients; [`connections`]: which upstream connection a call uses;
//! - [`events`]: where upstream traffic goes back to;
//! - [`supervise`]: the supervisor of each upstream's control connection;
//!   [`startup`], the wait for upstreams still starting;
//! - [`mrtr`]: held calls of sessionless clients whose handshake-era
//!   upstream asks for input mid-call;
//! - [`listeners`]: `subscriptions/listen` streams of 2026-07-28 clients;
//! - [`clients`] and [`admission`]: authentication of HTTP requests, the
//!   protected resource metadata, per-client session counts and call rates;
//! - [`reload`]: a new configuration swapped in under running sessions
//!   (SIGHUP, file watcher);
//! - [`replicas`]: sessions kept in the shared store (the engine's session
//!   backend), adopted by any replica, and the messages replicas pass each
//!   other; [`gauges`], what the metrics read of the live state.

mod admission;
mod approved;
mod audited;
mod budgets;
mod catalogs;
mod clients;
mod concerns;
mod connections;
mod disclosure;
mod events;
mod forward;
mod gauges;
mod instances;
mod layer;
mod limits;
mod listeners;
mod lists;
mod mrtr;
mod note;
mod oauth;
mod pages;
mod policy;
mod reach;
mod reload;
mod replicas;
mod resolve;
mod search;
mod startup;
mod state;
mod supervise;
mod translate;
mod upstreams;
mod views;

#[cfg(test)]
mod tests;

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt as _;
use tokio_util::sync::CancellationToken;

pub use catalogs::{CatalogView, Catalogs};
pub use reload::{Changes, ReloadError, watch as watch_config};
pub use state::{GatewaySession, GwSession};
pub use upstreams::UpstreamHandle;

use crate::auth::{Principal, SessionGuard};
use crate::config::{Config, Target};
use crate::grants::{GrantStore, Grants, Scope};
use crate::jsonrpc::{ErrorObject, Notification, Outcome, Request, member};
use crate::metrics::{self, Live, LiveState, LiveUpstream, Metrics};
use crate::protocol::method;
use crate::server::http::Admit;
use crate::server::http::health::{Readiness, Ready};
use crate::server::{
    CacheHints, CacheScope, Caller, Discovery, Handler, InitContext, Listen, ModernContext, RequestCtx, ServerOffer,
    SessionStore, TraceHeaders,
};
use crate::shared::SharedSessions;
use forward::Forwarder;
use forward::Terminal;
use layer::{Exchange, Layer, Next, Then};
use note::RequestNote;
use resolve::Resolved;
use views::Views;

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The HTTP client for upstreams could not be built (e.g. no CA certificates).
    #[error("cannot build the HTTP client for upstreams")]
    HttpClient(#[source] reqwest::Error),
    /// An upstream's configuration names no usable target (the loader
    /// validates this; a configuration built in code may not).
    #[error("upstream `{upstream}` has no usable target")]
    Target {
        upstream: String,
        #[source]
        source: crate::config::TargetError,
    },
    /// `[auth]` could not be set up (e.g. an unreadable JWKS file).
    #[error("cannot set up authentication")]
    Auth(#[from] crate::auth::BuildError),
    /// `[state]` names no usable Redis (the loader validates the URL; a
    /// configuration built in code may not, and the CA file may be gone).
    #[error("cannot set up the shared state store")]
    StateStore(#[from] crate::shared::OpenError),
    /// `[disclosure] lock` names a file that cannot be read as a lockfile.
    #[error(transparent)]
    Lock(#[from] crate::lock::LockError),
    /// `[audit] path` cannot be opened.
    #[error(transparent)]
    Audit(#[from] crate::audit::AuditError),
    /// `[identity]` keys or `[state] encryption_keys` cannot be used.
    #[error(transparent)]
    Identity(#[from] crate::identity::IdentityError),
}

/// How long connecting to an upstream may take at the TCP level.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The gateway.
pub struct Gateway {
    /// The configuration in effect (a reload swaps it; sections that need
    /// a restart keep their values from the start), the upstream slots (an
    /// upstream's index is its identity for as long as it runs; a reload
    /// retires the slots of removed upstreams and appends new ones, see
    /// [`reload`]) and the catalogs: what the layers read, shared with them.
    views: Views,
    /// Serializes reloads; remembers the tools of removed upstreams.
    reload: reload::ReloadState,
    sessions: Arc<SessionStore<GatewaySession>>,
    /// Who may connect, and each client's session count.
    clients: clients::Clients,
    /// The policy layer, when `[auth]` configures credentials (outermost).
    policy: Option<policy::Policy>,
    /// The concerns layer, when `[[concerns]]` declares some.
    concerns: Option<concerns::Concerns>,
    /// The search listing, when `[disclosure] listing` may show it.
    search: Option<search::Search>,
    /// The disclosure layer (it steps aside while no upstream is progressive).
    disclosure: disclosure::Disclosure,
    /// The per-tool budgets, when `[[limits]]` or a client sets some (innermost).
    budgets: Option<budgets::BudgetLayer>,
    /// Sessionless clients' grants (`[state]`): in memory, or in Redis.
    grant_store: Arc<GrantStore>,
    /// Client sessions in Redis (`[state] sessions = "shared"`).
    shared: Option<Arc<SharedSessions>>,
    /// The Redis of `[state]`, if it names one.
    connection: Option<Arc<crate::shared::Connection>>,
    /// The forwarder, with its own dependencies (shared with the gateway:
    /// the supervisors and reloads use them too).
    forwarder: Forwarder,
    /// Held upstream calls of sessionless clients (multi-round-trip
    /// translation in front of handshake-era upstreams).
    mrtr: Arc<mrtr::Translator>,
    http: reqwest::Client,
    /// What connections made for a client present upstream
    /// (`[upstream.identity]`, signed with `[identity]`'s keys).
    identity: Arc<crate::identity::Identity>,
    shutdown: CancellationToken,
    metrics: Arc<Metrics>,
    /// The open `subscriptions/listen` streams.
    listeners: listeners::Listeners,
}

impl Gateway {
    /// Builds the gateway and starts one supervisor per upstream. Requests
    /// that need the catalog wait (up to `server.startup_timeout`) for the
    /// upstreams' first connection attempts.
    pub fn start(config: Config, sessions: Arc<SessionStore<GatewaySession>>) -> Result<Arc<Self>, StartError> {
        let targets = config
            .upstreams
            .iter()
            .map(|u| {
                u.target()
                    .map_err(|mut errors| StartError::Target { upstream: u.name.clone(), source: errors.remove(0) })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::start_with(config, targets, sessions)
    }

    /// As [`Gateway::start`], with each upstream's target given (tests run
    /// upstreams in this process).
    pub fn start_with(
        config: Config,
        targets: Vec<Target>,
        sessions: Arc<SessionStore<GatewaySession>>,
    ) -> Result<Arc<Self>, StartError> {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(crate::upstream::same_origin_redirects())
            .build()
            .map_err(StartError::HttpClient)?;
        let clients = clients::Clients::new(&config)?;
        let names = config.upstreams.iter().map(|u| Arc::from(u.name.as_str())).collect();
        let metrics = Arc::new(Metrics::new(names, config.metrics.enabled));
        // Present even while every upstream is in passthrough mode (it then
        // steps aside), so a reload may make one progressive.
        // List answers are paged alike by the forwarder and the layers that
        // serve `tools/list` themselves.
        let pager = Arc::new(pages::Pager::new(config.server.page_size));
        let connection = match &config.state.redis_url {
            Some(url) => Some(Arc::new(crate::shared::Connection::open(url.expose(), &config.state)?)),
            None => None,
        };
        if let Some(connection) = &connection {
            connection.count_errors(metrics.state_store_errors());
        }
        let identity = Arc::new(crate::identity::Identity::new(&config, http.clone(), connection.clone())?);
        let service = &config.identity.service_subject;
        let upstreams = config
            .upstreams
            .iter()
            .cloned()
            .zip(targets)
            .enumerate()
            .map(|(i, (cfg, target))| {
                let target = identity.service_target(&cfg, target, service);
                Arc::new(UpstreamHandle::configured(i, cfg, target))
            })
            .collect();
        let grant_store = GrantStore::from_config(&config.disclosure, &config.state, connection.clone());
        let replica: Arc<str> = Arc::from(&uuid::Uuid::new_v4().simple().to_string()[..12]);
        let shared = connection.clone().filter(|_| config.state.shares_sessions()).map(|connection| {
            let idle = sessions.idle_timeout();
            Arc::new(SharedSessions::new(connection, &config.state.session_prefix, idle, replica.clone()))
        });
        let declared = Arc::new(crate::concerns::Declared::new(&config.concerns));
        let approved = approved::Approved::load(&config.disclosure)?;
        let catalogs = Catalogs::new(config.disclosure.clone(), declared.clone(), approved);
        let mrtr = Arc::new(mrtr::Translator::new(&config.mrtr, shared.clone()));
        let audit = crate::audit::Audit::start(&config.audit, metrics.audit_dropped())?;
        let views = Views::new(config, upstreams, catalogs, audit);
        let disclosure_config = &views.config().disclosure;
        if let Some(connection) = &connection {
            clients.calls().share(connection.clone(), &views.config().state.key_prefix, metrics.limit_fallbacks());
        }
        let policy =
            clients.is_enabled().then(|| policy::Policy::new(clients.calls().clone(), mrtr.clone(), metrics.clone()));
        let budgets = crate::budgets::Budgets::new(&views.config(), connection.clone(), metrics.limit_fallbacks())
            .map(|b| budgets::BudgetLayer::new(b, metrics.clone()));
        let routes = Arc::new(lists::RouteMaps::default());
        let concerns =
            concerns::Concerns::new(&declared, concerns::Lists { views: views.clone(), routes: routes.clone() });
        let gateway = Arc::new_cyclic(|gateway| Self {
            concerns,
            search: search::Search::new(disclosure_config, &pager, &views),
            disclosure: disclosure::Disclosure::new(
                disclosure_config.cache_bytes,
                pager.clone(),
                views.clone(),
                metrics.clone(),
            ),
            budgets,
            forwarder: Forwarder::new(
                reach::Reach {
                    views: views.clone(),
                    http: http.clone(),
                    identity: identity.clone(),
                    metrics: metrics.clone(),
                    upward: Arc::new(events::ToGateway(gateway.clone())),
                },
                mrtr.clone(),
                pager,
                routes,
            ),
            mrtr,
            views,
            reload: reload::ReloadState::default(),
            sessions,
            clients,
            policy,
            grant_store: Arc::new(grant_store),
            shared,
            connection,
            http,
            identity,
            shutdown: CancellationToken::new(),
            metrics,
            listeners: listeners::Listeners::default(),
        });
        gateway.metrics.attach(Arc::<Gateway>::downgrade(&gateway));
        gateway.identity.oauth().observe(Arc::new(oauth::Observer(Arc::downgrade(&gateway))));
        if let Some(authenticator) = gateway.clients.authenticator().filter(|a| a.has_jwt()) {
            // Load the issuer's keys now rather than on the first request.
            crate::spawn(async move {
                match authenticator.prefetch_keys().await {
                    Ok(keys) => tracing::info!(keys, "JWT signing keys loaded"),
                    Err(e) => tracing::warn!(error = %e, "cannot load the JWT signing keys yet; retrying on use"),
                }
            });
        }
        if matches!(*gateway.grant_store, GrantStore::Redis(_)) {
            // Say early whether sessionless grants will work, rather than on
            // the first request.
            let store = gateway.grant_store.clone();
            crate::spawn(async move {
                match store.ping().await {
                    Ok(()) => tracing::info!("the grant store (Redis) answers"),
                    Err(e) => {
                        tracing::warn!(error = %e, "the grant store (Redis) does not answer yet; sessionless requests that need a grant fail until it does")
                    }
                }
            });
        }
        replicas::start(&gateway, gateway.connection.clone());
        gateway.rebuild_catalog();
        supervise::supervise_all(&gateway);
        Ok(gateway)
    }

    /// The configuration in effect.
    pub fn config(&self) -> Arc<Config> {
        self.views.config()
    }

    /// The upstream slots, by index: the configured upstreams in order,
    /// then those a reload added; a slot whose upstream a reload removed is
    /// retired ([`UpstreamHandle::is_retired`]).
    pub fn upstreams(&self) -> Arc<Vec<Arc<UpstreamHandle>>> {
        self.views.upstreams()
    }

    /// The merged tool catalog.
    pub fn catalogs(&self) -> &Catalogs {
        self.views.catalogs()
    }

    /// The current catalog.
    pub fn catalog(&self) -> Arc<CatalogView> {
        self.catalogs().current()
    }

    /// The catalog as `session` sees it.
    pub(crate) fn catalog_for(&self, session: &GwSession) -> Arc<CatalogView> {
        self.views.catalog_for(session)
    }

    /// Merges every upstream's tools into a new catalog: what is made from
    /// it (the search index, the token counts) starts, and sessions hear
    /// `tools/list_changed` when the served list actually changed.
    pub(crate) fn rebuild_catalog(&self) {
        let rebuilt = self.catalogs().rebuild(|| self.upstreams(), self.views.audit().map(|a| &**a));
        self.metrics.tool_drift(&rebuilt.drift);
        if let Some(search) = &self.search {
            search.catalog_changed(&rebuilt.view);
        }
        gauges::count_catalog(&self.metrics, &rebuilt.view);
        if rebuilt.changed && !(self.sessions.is_empty() && self.listeners.is_empty()) {
            tracing::info!(tools = rebuilt.view.catalog.len(), "tool catalog changed; notifying sessions");
            self.catalogs().notify_changed(&rebuilt.upstreams, self.audience(), &rebuilt.old);
        }
    }

    /// The grants of `principal`'s sessionless requests: its scope in the
    /// gateway's grant store (every anonymous client shares one), for
    /// [`GatewaySession::sessionless`].
    pub fn grants_for(&self, principal: &Principal) -> Grants {
        Grants::shared(self.grant_store.clone(), Scope::of(principal))
    }

    /// The live downstream sessions.
    pub fn sessions(&self) -> &Arc<SessionStore<GatewaySession>> {
        &self.sessions
    }

    /// The gateway's metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The hook that authenticates HTTP requests (`None` when `[auth]`
    /// configures no credentials: everyone is anonymous). For
    /// [`HttpOptions::admit`](crate::server::http::HttpOptions).
    pub fn admission(&self) -> Option<Arc<dyn Admit>> {
        self.clients.admission(self.identity.subjects())
    }

    /// The routes of the RFC 9728 Protected Resource Metadata (with
    /// `[auth.jwt]`), to merge beside the MCP routes: they need no
    /// credentials.
    pub fn metadata_routes(&self) -> Option<axum::Router> {
        self.clients.metadata_routes()
    }

    /// The public OAuth routes (consent links, the callback, the client
    /// metadata document), for the main listener bound at `addr`.
    pub fn oauth_routes(
        self: &Arc<Self>,
        guard: crate::server::http::Guard,
        addr: std::net::SocketAddr,
    ) -> axum::Router {
        let oauth = self.identity.oauth().clone();
        oauth.listening_on(addr);
        let views = self.views.clone();
        let upstreams: crate::oauth::pages::Upstreams = Arc::new(move || views.config().upstreams.clone().into());
        crate::oauth::pages::routes(oauth, upstreams, guard)
    }

    /// The route of the JWK Set of toolgate's identity assertions (with
    /// `[identity] signing_keys`), behind `guard`'s `Host`/`Origin` checks.
    pub fn jwks_routes(&self, guard: crate::server::http::Guard) -> Option<axum::Router> {
        self.identity.jwks().map(|jwks| admission::jwks_routes(jwks, guard))
    }

    /// The identity service (what connections made for a client present).
    pub(crate) fn identity(&self) -> &crate::identity::Identity {
        &self.identity
    }

    pub(crate) fn forwarder(&self) -> &Forwarder {
        &self.forwarder
    }

    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    pub(crate) fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutdown.is_cancelled()
    }

    /// Stops the supervisors and every upstream connection.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        self.sessions.clear();
        // Held calls end with toolgate: their upstream calls are cancelled.
        self.mrtr.clear();
        let controls: Vec<_> =
            self.upstreams().iter().flat_map(|u| u.control().into_iter().chain(u.take_client_connections())).collect();
        futures::future::join_all(controls.iter().map(|p| p.shutdown())).await;
    }

    /// What `/readyz` reports: ready once each upstream's first connection
    /// attempt finished, either way (a failed upstream is restarted in the
    /// background and reported `down`; the rest of the catalog is served).
    pub fn readiness(self: &Arc<Self>) -> Readiness {
        let gateway = Arc::downgrade(self);
        Readiness::new(move || {
            let mut ready = true;
            let gateway = gateway.upgrade();
            let upstreams = gateway.as_ref().map(|g| g.upstreams()).unwrap_or_default();
            let store = gateway.as_ref().and_then(|g| g.connection.as_ref());
            let state = store.map(|c| if c.is_failing() { "down" } else { "up" });
            let states = upstreams
                .iter()
                .filter(|u| !u.is_retired())
                .map(|u| {
                    let state = if u.wait_ready().now_or_never().is_none() {
                        ready = false;
                        "starting"
                    } else if u.control().is_some() {
                        "up"
                    } else {
                        "down"
                    };
                    (u.label.to_string(), serde_json::Value::from(state))
                })
                .collect();
            Ready { ready, upstreams: states, state }
        })
    }

    /// The `cacheScope` of what toolgate answers modern clients: `private`
    /// when `[auth]` identifies clients (a client's allowlist or token can
    /// change what it is shown), else `public`.
    fn cache_scope(&self) -> CacheScope {
        if self.clients.is_enabled() { CacheScope::Private } else { CacheScope::Public }
    }

    /// What toolgate offers a client that may use every upstream.
    #[cfg(test)]
    fn offer(&self, version: crate::protocol::Version) -> ServerOffer {
        self.offer_for(version, |_| true)
    }

    /// Gives `session` its client's policy under the clients in effect, or
    /// ends it when its client is gone (what a reload does to the sessions
    /// alive when it runs).
    fn refresh_session(&self, session: &GwSession) -> Result<(), ErrorObject> {
        match self.clients.current(&session.state.principal()) {
            Ok(principal) => {
                session.state.set_principal(principal);
                session.state.refit(&self.upstreams());
                Ok(())
            }
            Err(e) => {
                self.sessions.remove(session.id());
                Err(e)
            }
        }
    }

    /// What toolgate offers a client that may use the upstreams `uses`
    /// allows: the forwarder's, as the layers add to it.
    fn offer_for(&self, version: crate::protocol::Version, uses: impl Fn(usize) -> bool) -> ServerOffer {
        let mut offer = self.forwarder.offer(version, uses);
        self.policy.offer(&mut offer);
        self.concerns.offer(&mut offer);
        self.disclosure.offer(&mut offer);
        // Last, so its workflow comes first.
        self.search.offer(&mut offer);
        offer
    }
}

impl Handler for Gateway {
    type State = GatewaySession;

    /// A legacy stream takes its client's `max_sessions` place when it
    /// opens; its `initialize` takes it over.
    fn hold(self: &Arc<Self>, caller: &Caller) -> Result<Option<Box<dyn Any + Send + Sync>>, ErrorObject> {
        let principal = self.clients.current(&caller_principal(caller))?;
        Ok(self.clients.open_session(&principal)?.map(|slot| Box::new(slot) as Box<dyn Any + Send + Sync>))
    }

    async fn initialize(self: &Arc<Self>, ctx: &InitContext) -> Result<(ServerOffer, GatewaySession), ErrorObject> {
        let started = Instant::now();
        let principal = self.clients.current(&caller_principal(&ctx.caller))?;
        // Counted before waiting for upstreams, so a burst over the limit is
        // refused at once (a legacy stream took its place when it opened).
        let slot = match ctx.held.take::<SessionGuard>() {
            Some(held) => Some(held),
            None => self.clients.open_session(&principal)?,
        };
        // The session's one start-up wait: what it asks later waits no longer.
        let server = self.config().server.clone();
        let deadline = tokio::time::Instant::now() + server.startup_timeout;
        startup::wait(&self.upstreams(), deadline, &server).await;
        let concerns = self.initial_concerns(&principal, crate::concerns::sent_in(Some(&ctx.params)))?;
        // Counted across replicas last, once nothing else can refuse it.
        self.take_shared_slot(ctx, &principal).await?;
        let state = GatewaySession::for_client(&self.upstreams(), principal, slot)
            .with_startup_deadline(deadline)
            .with_concerns(concerns);
        let state = self.share_new(state, ctx);
        self.metrics.session_started();
        let (method, outcome) = (metrics::Method::Initialize, metrics::Outcome::Ok);
        self.metrics.request(method, None, outcome, started.elapsed(), state.client_name());
        Ok((self.offer_for(ctx.version, |i| state.uses(i)), state))
    }

    /// `server/discover`: the offer `initialize` would make this client
    /// (toolgate's workflow instructions plus the upstreams'), once the
    /// upstreams' first connection attempts are done; no session, no slot.
    fn serves_modern(&self) -> bool {
        true
    }

    async fn discover(self: &Arc<Self>, ctx: &ModernContext) -> Result<Discovery, ErrorObject> {
        let principal = self.clients.current(&caller_principal(&ctx.caller))?;
        let deadline = tokio::time::Instant::now() + self.config().server.startup_timeout;
        startup::wait(&self.upstreams(), deadline, &self.config().server).await;
        let upstreams = self.upstreams();
        let offer = self.offer_for(crate::protocol::Version::LATEST, |i| {
            upstreams.get(i).is_some_and(|u| principal.tools().allows_upstream(&u.config.name))
        });
        Ok(Discovery { offer, hints: CacheHints { ttl_ms: 0, scope: self.cache_scope() } })
    }

    /// The state of one sessionless request: the client's view, without a
    /// `max_sessions` slot (nothing outlives the request). Its calls use each
    /// upstream's shared (control) connection, `per_session` upstreams
    /// included (see `connections::for_call`).
    async fn sessionless(self: &Arc<Self>, ctx: &ModernContext) -> Result<GatewaySession, ErrorObject> {
        let principal = self.clients.current(&caller_principal(&ctx.caller))?;
        let deadline = tokio::time::Instant::now() + self.config().server.startup_timeout;
        let grants = self.grants_for(&principal);
        let concerns = concerns::stored(self.catalogs().concerns(), &principal);
        let state = GatewaySession::sessionless(&self.upstreams(), principal, grants);
        Ok(state.with_startup_deadline(deadline).with_concerns(concerns))
    }

    /// `subscriptions/listen`: toolgate serves it itself (see [`listeners`]).
    fn serves_listen(&self) -> bool {
        true
    }

    async fn listen(self: &Arc<Self>, session: &Arc<GwSession>, listen: Listen) -> Result<(), ErrorObject> {
        self.serve_listen(session, listen).await
    }

    /// toolgate's own identity on every 2026 result (an upstream's moves to
    /// `dev.toolgate/upstreamServerInfo`), as in `server/discover`.
    fn server_info(&self) -> Option<serde_json::Value> {
        Some(forward::server_info(crate::protocol::Version::LATEST))
    }

    fn cache_hints(self: &Arc<Self>, _: &Arc<GwSession>, _: &str) -> CacheHints {
        CacheHints { ttl_ms: 0, scope: self.cache_scope() }
    }

    async fn request(self: &Arc<Self>, session: &Arc<GwSession>, request: Request, ctx: RequestCtx) -> Outcome {
        let started = Instant::now();
        if !self.clients.is_current(&session.state.principal_ref()) {
            // A reload replaced the clients and this session was not among
            // those it refitted (it was being created meanwhile).
            if let Err(e) = self.refresh_session(session) {
                return Outcome::error(e);
            }
        }
        let method = metrics::Method::of(&request.method);
        let note = RequestNote::default();
        // A call of the call tool is the call it routes, from here on.
        let (request, routed) = match &self.search {
            None => (request, false),
            Some(search) => match search.route(session, request) {
                search::Routed::Untouched(request) => (request, false),
                search::Routed::Call(request) => (request, true),
                search::Routed::Refused(outcome) => {
                    // A call like any other in `calls_per_minute`, guesses included.
                    let outcome = match self.policy.is_some() {
                        true => match self.clients.take_calls(&session.state.principal(), 1).await {
                            Ok(()) => outcome,
                            Err(e) => Outcome::error(e),
                        },
                        false => outcome,
                    };
                    let counted = metrics::Outcome::of(method, &outcome, true, false);
                    self.metrics.request(method, None, counted, started.elapsed(), session.state.client_name());
                    return outcome;
                }
            },
        };
        let resolved = Resolved::of(&self.views, &*self.mrtr, session, &request, &ctx, routed).await;
        // A call of a catalog tool is audited with the arguments it was sent.
        let audited = self
            .views
            .audit()
            .filter(|_| resolved.call().and_then(|c| c.entry()).is_some())
            .map(|audit| (audit.clone(), request.params.as_ref().and_then(|p| member(p, "arguments")).cloned()));
        let cx = Exchange { session, ctx: &ctx, resolved: &resolved, note: &note };
        let end = Terminal(&self.forwarder);
        let chain = Then { layer: &self.budgets, next: end };
        let chain = Then { layer: &self.disclosure, next: chain };
        let chain = Then { layer: &self.search, next: chain };
        let chain = Then { layer: &self.concerns, next: chain };
        let outcome = Then { layer: &self.policy, next: chain }.run(cx, request).await;
        if let Some(entry) = resolved.call().and_then(|c| c.entry()).filter(|_| routed) {
            self.metrics.routed_call(entry.upstream, &entry.exposed);
        }
        if let Some((audit, arguments)) = audited {
            let answer = (&outcome, &note, started.elapsed());
            audited::call(&audit, session, &resolved, &self.upstreams(), arguments, answer);
        }
        let counted = metrics::Outcome::of(method, &outcome, note.was_refused(), ctx.cancel.is_cancelled());
        self.metrics.request(method, note.upstream(), counted, started.elapsed(), session.state.client_name());
        outcome
    }

    fn link_span(self: &Arc<Self>, span: &tracing::Span, request: &Request, remote: Option<&TraceHeaders>) {
        crate::telemetry::link_to_client(span, request.params.as_ref(), remote);
    }

    async fn notification(self: &Arc<Self>, session: &Arc<GwSession>, notification: Notification) {
        // The client's own: what it may carry is toolgate's (concerns);
        // each upstream session had its own.
        if notification.method == method::INITIALIZED {
            return self.concerns_notified(session, notification.params.as_ref());
        }
        // Client notifications (roots changes, vendor ones) concern the
        // session's own upstream sessions; one named like a request is a
        // request without its id, which no upstream should act on.
        if limits::is_request_method(&notification.method) {
            tracing::debug!(method = ?notification.method, "client notification named like a request dropped");
            return;
        }
        let upstreams = self.upstreams();
        for (index, peer) in session.state.live_connections() {
            if notification.method == method::ROOTS_LIST_CHANGED && !upstreams[index].config.forward_roots {
                continue;
            }
            peer.notify(&notification.method, notification.params.clone()).await;
        }
    }

    /// A shared session another replica created, from its record.
    fn restore(
        self: &Arc<Self>,
        id: &str,
        stored: crate::server::Stored,
        caller: &Caller,
    ) -> Result<Option<GatewaySession>, ErrorObject> {
        self.restore_session(id, stored, caller)
    }

    async fn closed(self: &Arc<Self>, session: Arc<GwSession>) {
        session.state.release_slot();
        self.metrics.session_ended();
        let peers = session.state.take_connections().await;
        futures::future::join_all(peers.iter().map(|p| p.shutdown())).await;
        self.forwarder.release_subscriptions(&session).await;
    }
}

/// What the metrics' gauges read at scrape time.
impl LiveState for Gateway {
    fn live(&self) -> Live {
        let sessions = self.sessions().sessions();
        let upstreams = self.upstreams();
        let mut connections: Vec<i64> = upstreams.iter().map(|u| i64::from(u.control().is_some())).collect();
        for s in &sessions {
            for (index, _) in s.state.live_connections() {
                if let Some(n) = connections.get_mut(index) {
                    *n += 1;
                }
            }
        }
        Live {
            sessions: sessions.iter().map(|s| Arc::from(s.state.client_name())).collect(),
            listening: self.listeners().len(),
            upstreams: upstreams
                .iter()
                .zip(connections)
                // Slots a reload retired are no upstream any more.
                .filter(|(u, _)| !u.is_retired())
                .map(|(u, connections)| LiveUpstream { name: u.label.clone(), up: u.control().is_some(), connections })
                .collect(),
        }
    }
}

impl Gateway {
    /// The configuration a new session of `principal` starts with: what it
    /// sent (`initialize` params), else its client's stored one, else none.
    pub(crate) fn initial_concerns(
        &self,
        principal: &Principal,
        sent: Option<&serde_json::Value>,
    ) -> Result<Option<crate::concerns::Configured>, ErrorObject> {
        let declared = self.catalogs().concerns();
        if declared.is_empty() {
            return Ok(None);
        }
        if let Some(sent) = sent {
            return declared.configure(sent).map(|c| Some(Arc::new(c))).map_err(|e| e.to_error_object());
        }
        Ok(concerns::stored(declared, principal))
    }

    /// A configuration a session sent where no error can answer it
    /// (`notifications/initialized`): applied if valid, else logged. The
    /// concerns layer is present exactly when concerns are declared.
    pub(crate) fn concerns_notified(&self, session: &GwSession, params: Option<&serde_json::Value>) {
        if let Some(layer) = &self.concerns {
            layer.notified(session, params);
        }
    }
}

/// The principal the admission hook attached to `caller` (anonymous without
/// `[auth]`).
fn caller_principal(caller: &Caller) -> Principal {
    caller.principal::<Principal>().cloned().unwrap_or_else(Principal::anonymous)
}
