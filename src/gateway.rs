//! The gateway: the MCP application behind the server engine.
//!
//! A client request goes through the gateway's [`layer`]s, then to the
//! [`forward`]er, which routes it to the upstream that owns it:
//!
//! ```text
//! engine → Disclosure (progressive upstreams only) → Forwarder → upstream stack
//! ```
//!
//! - [`upstreams`]: each configured upstream, its control connection and
//!   the supervisor that keeps it up;
//! - [`catalogs`]: the merged tool catalog, gateway-wide and per session;
//! - [`connections`]: which upstream connection a call uses;
//! - [`disclosure`]: the progressive-disclosure layer (the gate, the
//!   descriptions resource, the describe tool);
//! - [`forward`]: the transparent forwarder; [`lists`] and [`pages`] merge and
//!   page lists; [`translate`] downgrades content for older clients;
//! - [`events`]: where upstream traffic goes back to;
//! - [`state`]: what the gateway keeps per downstream session.

mod catalogs;
mod connections;
mod disclosure;
mod events;
mod forward;
mod layer;
mod lists;
mod note;
mod pages;
mod startup;
mod state;
mod translate;
mod upstreams;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt as _;
use tokio_util::sync::CancellationToken;

pub use catalogs::{CatalogView, Catalogs};
pub use state::GatewaySession;
pub use upstreams::{UpstreamHandle, crawl, toolgate_info};

use crate::catalog::{ToolEntry, load_extras_dir};
use crate::config::{Config, Mode, Target};
use crate::jsonrpc::{ErrorObject, Message, Notification, Outcome, Request};
use crate::metrics::{self, Metrics};
use crate::server::http::health::{Readiness, Ready};
use crate::server::{Handler, InitContext, RequestCtx, ServerOffer, Session, SessionStore, TraceHeaders};
use forward::Forwarder;
use layer::{Exchange, Layer, Next, Then};
use note::RequestNote;

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
}

/// A downstream session of the gateway.
pub type GwSession = Session<GatewaySession>;

/// How long connecting to an upstream may take at the TCP level.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The gateway.
pub struct Gateway {
    config: Arc<Config>,
    upstreams: Vec<Arc<UpstreamHandle>>,
    catalogs: Catalogs,
    sessions: Arc<SessionStore<GatewaySession>>,
    /// The disclosure layer, when any upstream is progressive.
    disclosure: Option<disclosure::Disclosure>,
    forwarder: Forwarder,
    http: reqwest::Client,
    shutdown: CancellationToken,
    metrics: Arc<Metrics>,
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
        let http =
            reqwest::Client::builder().connect_timeout(CONNECT_TIMEOUT).build().map_err(StartError::HttpClient)?;
        let upstreams = config
            .upstreams
            .iter()
            .cloned()
            .zip(targets)
            .enumerate()
            .map(|(i, (cfg, target))| {
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
                Arc::new(UpstreamHandle::new(i, cfg, target, extras))
            })
            .collect();
        let names = config.upstreams.iter().map(|u| Arc::from(u.name.as_str())).collect();
        let metrics = Arc::new(Metrics::new(names, config.metrics.enabled));
        let disclosure = config.upstreams.iter().any(|u| u.mode == Mode::Progressive).then(disclosure::Disclosure::new);
        let gateway = Arc::new(Self {
            catalogs: Catalogs::new(config.disclosure.clone()),
            forwarder: Forwarder::new(config.server.page_size),
            config: Arc::new(config),
            upstreams,
            sessions,
            disclosure,
            http,
            shutdown: CancellationToken::new(),
            metrics,
        });
        gateway.metrics.attach(&gateway);
        gateway.catalogs.rebuild(&gateway);
        upstreams::supervise_all(&gateway);
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

    /// The merged tool catalog.
    pub fn catalogs(&self) -> &Catalogs {
        &self.catalogs
    }

    /// The current catalog.
    pub fn catalog(&self) -> Arc<CatalogView> {
        self.catalogs.current()
    }

    /// The catalog as `session` sees it.
    pub(crate) fn catalog_for(&self, session: &GwSession) -> Arc<CatalogView> {
        self.catalogs.for_session(&self.upstreams, session)
    }

    /// The live downstream sessions.
    pub fn sessions(&self) -> &Arc<SessionStore<GatewaySession>> {
        &self.sessions
    }

    /// The gateway's metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
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

    /// The tool `session` may reach under `name`, waiting for the catalog
    /// if it is not (yet) there.
    pub(crate) async fn tool(&self, session: &GwSession, name: &str) -> Option<Arc<ToolEntry>> {
        if let Some(entry) = self.catalog_for(session).catalog.get(name) {
            return Some(entry.clone());
        }
        // Perhaps the catalog is still loading.
        self.wait_ready(session).await;
        self.catalog_for(session).catalog.get(name).cloned()
    }

    /// Waits for upstreams still starting, within the session's one
    /// start-up wait: `initialize` waits up to `server.startup_timeout`,
    /// and whatever the session asks later waits no longer than that
    /// wait's end (see [`startup`]).
    pub(crate) async fn wait_ready(&self, session: &GwSession) {
        startup::wait(&self.upstreams, session.state.startup_deadline(), &self.config.server).await;
    }

    /// Stops the supervisors and every upstream connection.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        self.sessions.clear();
        let controls: Vec<_> = self.upstreams.iter().filter_map(|u| u.control()).collect();
        futures::future::join_all(controls.iter().map(|p| p.shutdown())).await;
    }

    /// What `/readyz` reports: ready once each upstream's first connection
    /// attempt finished, either way (a failed upstream is restarted in the
    /// background and reported `down`; the rest of the catalog is served).
    pub fn readiness(&self) -> Readiness {
        let upstreams = self.upstreams.clone();
        Readiness::new(move || {
            let mut ready = true;
            let states = upstreams
                .iter()
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
            Ready { ready, upstreams: states }
        })
    }

    /// Sends a notification to every live session's standalone stream.
    pub(crate) fn broadcast(&self, notification: Notification) {
        for s in self.sessions.sessions() {
            s.notify(Message::Notification(notification.clone()));
        }
    }

    /// What toolgate offers a client: the forwarder's, as the layers add to it.
    fn offer(&self, version: crate::protocol::Version) -> ServerOffer {
        let mut offer = self.forwarder.offer(self, version);
        self.disclosure.offer(self, &mut offer);
        offer
    }
}

impl Handler for Gateway {
    type State = GatewaySession;

    async fn initialize(self: &Arc<Self>, ctx: &InitContext) -> Result<(ServerOffer, GatewaySession), ErrorObject> {
        let started = Instant::now();
        // The session's one start-up wait: what it asks later waits no longer.
        let deadline = tokio::time::Instant::now() + self.config.server.startup_timeout;
        startup::wait(&self.upstreams, deadline, &self.config.server).await;
        let state = GatewaySession::new(self.upstreams.len()).with_startup_deadline(deadline);
        self.metrics.session_started();
        let (method, outcome) = (metrics::Method::Initialize, metrics::Outcome::Ok);
        self.metrics.request(method, None, outcome, started.elapsed(), state.client_name());
        Ok((self.offer(ctx.version), state))
    }

    async fn request(self: &Arc<Self>, session: &Arc<GwSession>, request: Request, ctx: RequestCtx) -> Outcome {
        let started = Instant::now();
        let method = metrics::Method::of(&request.method);
        let note = RequestNote::default();
        let cx = Exchange { gateway: self, session, ctx: &ctx, note: &note };
        let outcome = Then { layer: &self.disclosure, next: &self.forwarder }.run(cx, request).await;
        let counted = metrics::Outcome::of(method, &outcome, note.was_refused(), ctx.cancel.is_cancelled());
        self.metrics.request(method, note.upstream(), counted, started.elapsed(), session.state.client_name());
        outcome
    }

    fn link_span(self: &Arc<Self>, span: &tracing::Span, request: &Request, remote: Option<&TraceHeaders>) {
        crate::telemetry::link_to_client(span, request.params.as_ref(), remote);
    }

    async fn notification(self: &Arc<Self>, session: &Arc<GwSession>, notification: Notification) {
        // Client notifications (roots changes, vendor ones) concern the
        // session's own upstream sessions.
        for (_, peer) in session.state.live_connections() {
            peer.notify(&notification.method, notification.params.clone()).await;
        }
    }

    async fn closed(self: &Arc<Self>, session: Arc<GwSession>) {
        self.metrics.session_ended();
        let peers = session.state.take_connections().await;
        futures::future::join_all(peers.iter().map(|p| p.shutdown())).await;
        self.forwarder.release_subscriptions(self, &session).await;
    }
}
