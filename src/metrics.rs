//! Prometheus metrics: the series the gateway keeps, and `GET /metrics`.
//!
//! Built on `prometheus-client` (the Prometheus project's crate): one
//! [`Registry`] per gateway, OpenMetrics text out. Names start with
//! `toolgate_`, counters end in `_total`, durations are histograms in
//! seconds. Every label comes from a closed set ([`labels`]): methods
//! toolgate does not know are `other`, upstream and client names come from
//! the configuration (clients past [`MAX_CLIENTS`] are `other`), and nothing
//! is labelled by session, tool or argument (a catalog may hold hundreds of
//! tools and change at run time; traces carry the tool of each call), but
//! the count of calls refused for invalid arguments, whose `tool` names the
//! few tools models call wrongly (at most [`MAX_TOOL_SERIES`] of them; later
//! ones are `other`).
//!
//! The hot path counts through [`Cells`](cells::Cells): a request's series
//! are found by index, created in their family on first use, so counting
//! is an index and an atomic add. State that can be read at scrape time
//! (live sessions, upstream connections) is read then ([`gauges`]), not
//! kept up to date on every change. The catalog's token counts are made
//! once per catalog change, on a blocking thread ([`catalog`]).
//!
//! The metrics name none of the gateway's types: the gateway hands them its
//! live state as a [`LiveState`] and counts its catalogs itself, so the
//! dependency runs one way (gateway → metrics).

mod arguments;
mod catalog;
mod cells;
mod clients;
mod gauges;
pub mod labels;
mod serve;

#[cfg(test)]
mod tests;

use std::sync::{Arc, Weak};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};

pub use arguments::MAX_TOOL_SERIES;
pub use catalog::CatalogCounts;
pub use clients::MAX_CLIENTS;
pub use gauges::{Live, LiveState, LiveUpstream};
pub use labels::{Method, Outcome, UpstreamOutcome, Via};
pub use serve::{Access, CONTENT_TYPE, METRICS_PATH, guarded_routes, routes};

use crate::jsonrpc;
use crate::upstream::UpstreamError;
use cells::{Cells, index3};
use labels::{Label, Labels};

/// Latency buckets, in seconds: from the gateway's own answers (well under
/// a millisecond) to long tool calls.
const BUCKETS: [f64; 15] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

fn histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// The label value of a request toolgate answered itself (or merged from
/// several upstreams): Prometheus reads an empty value as "no upstream".
const NO_UPSTREAM: &str = "";

/// Every series of one gateway.
pub struct Metrics {
    registry: Registry,
    /// Upstream names, by configuration index.
    upstreams: Box<[Arc<str>]>,
    requests: Family<Labels<3>, Counter>,
    /// `[method][upstream or none][outcome]`.
    request_cells: Cells<Counter>,
    request_seconds: Family<Labels<1>, Histogram, fn() -> Histogram>,
    /// `[method]`.
    request_seconds_cells: Cells<Histogram>,
    upstream_requests: Family<Labels<3>, Counter>,
    /// `[upstream][method][outcome]`.
    upstream_request_cells: Cells<Counter>,
    upstream_seconds: Family<Labels<2>, Histogram, fn() -> Histogram>,
    /// `[upstream][method]`.
    upstream_seconds_cells: Cells<Histogram>,
    sessions_started: Counter,
    sessions_ended: Counter,
    /// Sessions another replica created, taken over from the shared store.
    sessions_adopted: Counter,
    /// Commands to the shared state store (Redis) that failed or timed out.
    state_store_errors: Counter,
    restarts: Box<[Counter]>,
    gate_refusals: Box<[Counter]>,
    /// Calls routed through the call tool, by upstream and real tool.
    routed_calls: Family<Labels<2>, Counter>,
    /// Tools whose definitions drifted from the lock, by upstream, tool and kind.
    tool_drift: Family<Labels<3>, prometheus_client::metrics::gauge::Gauge>,
    /// Calls refused by a per-tool budget, by client and limit.
    limit_refusals: Family<Labels<2>, Counter>,
    /// Calls whose budgets were counted in this process alone because the
    /// shared store did not answer.
    limit_fallbacks: Counter,
    /// Audit events dropped because the writer's queue was full.
    audit_dropped: Counter,
    /// OAuth consent and token events, by upstream and event.
    oauth_events: Family<Labels<2>, Counter>,
    described: Box<[Counter]>,
    fetches: [Counter; 2],
    /// Calls refused for invalid arguments, by upstream and tool.
    argument_errors: arguments::ArgumentErrors,
    catalog: Arc<catalog::CatalogGauges>,
    clients: Arc<clients::Clients>,
    gauges: Arc<gauges::LiveGauges>,
    /// Whether metrics are served (`[metrics] enabled`); requests are
    /// counted and the catalog's tokens measured only then.
    enabled: bool,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").field("upstreams", &self.upstreams).finish_non_exhaustive()
    }
}

impl Metrics {
    /// The series of a gateway with these upstreams (in configuration
    /// order). `enabled`: whether they are served, which is when the
    /// catalog's tokens are worth counting.
    pub fn new(upstreams: Vec<Arc<str>>, enabled: bool) -> Self {
        let n = upstreams.len();
        let mut registry = Registry::default();
        registry.register(
            "toolgate_build",
            "toolgate's version",
            Info::new([("version", Label::Static(env!("CARGO_PKG_VERSION")))]),
        );

        let requests = Family::<Labels<3>, Counter>::default();
        registry.register(
            "toolgate_requests",
            "Client requests answered, by method, the upstream that answered (empty: toolgate itself) and outcome",
            requests.clone(),
        );
        let request_seconds = Family::<Labels<1>, Histogram, fn() -> Histogram>::new_with_constructor(histogram);
        registry.register_with_unit(
            "toolgate_request_duration",
            "Time to answer a client request, by method",
            Unit::Seconds,
            request_seconds.clone(),
        );
        let upstream_requests = Family::<Labels<3>, Counter>::default();
        registry.register(
            "toolgate_upstream_requests",
            "Requests forwarded to upstreams on behalf of clients, by upstream, method and outcome",
            upstream_requests.clone(),
        );
        let upstream_seconds = Family::<Labels<2>, Histogram, fn() -> Histogram>::new_with_constructor(histogram);
        registry.register_with_unit(
            "toolgate_upstream_request_duration",
            "Time an upstream took to answer a forwarded request (connection included), by upstream and method",
            Unit::Seconds,
            upstream_seconds.clone(),
        );

        let sessions_started = Counter::default();
        registry.register("toolgate_sessions_started", "Client sessions started", sessions_started.clone());
        let sessions_adopted = Counter::default();
        registry.register(
            "toolgate_sessions_adopted",
            "Client sessions another replica created, adopted from the shared store",
            sessions_adopted.clone(),
        );
        let state_store_errors = Counter::default();
        registry.register(
            "toolgate_state_store_errors",
            "Commands to the shared state store (Redis) that failed or did not answer in time",
            state_store_errors.clone(),
        );
        let sessions_ended = Counter::default();
        registry.register(
            "toolgate_sessions_ended",
            "Client sessions ended (closed by the client, expired, or shut down)",
            sessions_ended.clone(),
        );

        let per_upstream = |registry: &mut Registry, name: &str, help: &str| {
            let family = Family::<Labels<1>, Counter>::default();
            registry.register(name, help, family.clone());
            upstreams
                .iter()
                .map(|u| family.get_or_create_owned(&[("upstream", Label::Name(u.clone()))]))
                .collect::<Box<[Counter]>>()
        };
        let restarts = per_upstream(
            &mut registry,
            "toolgate_upstream_restarts",
            "Upstream connections started again: the gateway's own after it was lost or failed, a session's own after it closed",
        );
        let gate_refusals = per_upstream(
            &mut registry,
            "toolgate_gate_refusals",
            "Tool calls refused until the session fetches the tool's description, by upstream",
        );
        let routed_calls = Family::<Labels<2>, Counter>::default();
        registry.register(
            "toolgate_routed_calls",
            "Tool calls made through the call tool of the search listing, by upstream and the tool called",
            routed_calls.clone(),
        );
        let tool_drift = Family::<Labels<3>, prometheus_client::metrics::gauge::Gauge>::default();
        registry.register(
            "toolgate_tool_drift",
            "Tools whose definitions differ from the lock ([disclosure] lock), by upstream, tool and kind (changed, \
             new, renamed, removed): 1 while it lasts",
            tool_drift.clone(),
        );
        let limit_refusals = Family::<Labels<2>, Counter>::default();
        registry.register(
            "toolgate_limit_refusals",
            "Tool calls refused by a per-tool budget ([[limits]]), by client and limit",
            limit_refusals.clone(),
        );
        let oauth_events = Family::<Labels<2>, Counter>::default();
        registry.register(
            "toolgate_oauth_events",
            "OAuth toward protected upstreams (auth = \"oauth\"), by upstream and event: consent started, completed \
             or failed; token refreshed, refresh failed, dropped (refused by the upstream) or revoked",
            oauth_events.clone(),
        );
        let limit_fallbacks = Counter::default();
        registry.register(
            "toolgate_limit_fallbacks",
            "Tool calls whose budgets were counted by this replica alone, because the shared store (Redis) did not \
             answer",
            limit_fallbacks.clone(),
        );
        let audit_dropped = Counter::default();
        registry.register(
            "toolgate_audit_dropped",
            "Audit events dropped because the audit writer's queue ([audit] queue) was full",
            audit_dropped.clone(),
        );
        let described = per_upstream(
            &mut registry,
            "toolgate_described_tools",
            "Full tool definitions served by description fetches, by upstream",
        );
        let fetch_family = Family::<Labels<1>, Counter>::default();
        registry.register(
            "toolgate_description_fetches",
            "Reads of the tool descriptions, by how they were asked for (resource or tool)",
            fetch_family.clone(),
        );
        let fetches = [Via::Resource, Via::Tool]
            .map(|via| fetch_family.get_or_create_owned(&[("via", Label::Static(via.as_str()))]));

        let argument_errors = arguments::ArgumentErrors::register(&mut registry);
        let catalog = Arc::new(catalog::CatalogGauges::register(&mut registry, &upstreams));
        let clients = Arc::new(clients::Clients::register(&mut registry));
        let gauges = Arc::new(gauges::LiveGauges::new(clients.clone()));
        registry.register_collector(Box::new(gauges.clone()));

        Self {
            registry,
            request_cells: Cells::new(Method::COUNT * (n + 1) * Outcome::COUNT),
            request_seconds_cells: Cells::new(Method::COUNT),
            upstream_request_cells: Cells::new(n * Method::COUNT * UpstreamOutcome::COUNT),
            upstream_seconds_cells: Cells::new(n * Method::COUNT),
            upstreams: upstreams.into(),
            requests,
            request_seconds,
            upstream_requests,
            upstream_seconds,
            sessions_started,
            sessions_ended,
            sessions_adopted,
            state_store_errors,
            restarts,
            gate_refusals,
            routed_calls,
            tool_drift,
            limit_refusals,
            oauth_events,
            limit_fallbacks,
            audit_dropped,
            described,
            fetches,
            argument_errors,
            catalog,
            clients,
            gauges,
            enabled,
        }
    }

    /// Lets the scrape read the live state (sessions, upstream
    /// connections) from `source`, while it lives.
    pub fn attach(&self, source: Weak<dyn LiveState>) {
        self.gauges.attach(source);
    }

    /// Whether metrics are served.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The OpenMetrics text of every series.
    pub fn render(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::with_capacity(16 * 1024);
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }

    fn upstream_label(&self, index: Option<usize>) -> Label {
        match index.and_then(|i| self.upstreams.get(i)) {
            Some(name) => Label::Name(name.clone()),
            None => Label::Static(NO_UPSTREAM),
        }
    }

    /// A client request was answered: `upstream` answered it (`None`:
    /// toolgate did) with `outcome`, after `took`, for client `client`.
    pub fn request(&self, method: Method, upstream: Option<usize>, outcome: Outcome, took: Duration, client: &str) {
        if !self.enabled {
            return;
        }
        let n = self.upstreams.len();
        let slot = upstream.filter(|&i| i < n).unwrap_or(n);
        let index = index3(method as usize, slot, n + 1, outcome as usize, Outcome::COUNT);
        let counter = self.request_cells.get(index, || {
            self.requests.get_or_create_owned(&[
                ("method", method.label()),
                ("upstream", self.upstream_label(upstream)),
                ("outcome", Label::Static(outcome.as_str())),
            ])
        });
        if let Some(c) = counter {
            c.inc();
        }
        let histogram = self
            .request_seconds_cells
            .get(method as usize, || self.request_seconds.get_or_create_owned(&[("method", method.label())]));
        if let Some(h) = histogram {
            h.observe(took.as_secs_f64());
        }
        self.clients.request(client, outcome);
    }

    /// A request forwarded to upstream `index` ended with `result` after `took`.
    pub fn upstream_request(
        &self,
        index: usize,
        method: Method,
        result: &Result<jsonrpc::Outcome, UpstreamError>,
        took: Duration,
    ) {
        if !self.enabled || index >= self.upstreams.len() {
            return;
        }
        let outcome = UpstreamOutcome::of(method, result);
        let cell = index3(index, method as usize, Method::COUNT, outcome as usize, UpstreamOutcome::COUNT);
        let counter = self.upstream_request_cells.get(cell, || {
            self.upstream_requests.get_or_create_owned(&[
                ("upstream", self.upstream_label(Some(index))),
                ("method", method.label()),
                ("outcome", Label::Static(outcome.as_str())),
            ])
        });
        if let Some(c) = counter {
            c.inc();
        }
        let histogram = self.upstream_seconds_cells.get(index * Method::COUNT + method as usize, || {
            self.upstream_seconds
                .get_or_create_owned(&[("upstream", self.upstream_label(Some(index))), ("method", method.label())])
        });
        if let Some(h) = histogram {
            h.observe(took.as_secs_f64());
        }
    }

    /// A client session started.
    pub fn session_started(&self) {
        self.sessions_started.inc();
    }

    /// A session another replica created was adopted here.
    pub fn session_adopted(&self) {
        self.sessions_adopted.inc();
    }

    /// The count of failed commands to the shared state store, for the
    /// connection to count them in.
    pub fn state_store_errors(&self) -> Counter {
        self.state_store_errors.clone()
    }

    /// A client session ended.
    pub fn session_ended(&self) {
        self.sessions_ended.inc();
    }

    /// A connection to upstream `index` is being started again.
    pub fn upstream_restarted(&self, index: usize) {
        if let Some(c) = self.restarts.get(index) {
            c.inc();
        }
    }

    /// A call of `tool` at upstream `index` came through the call tool.
    pub fn routed_call(&self, index: usize, tool: &str) {
        if !self.enabled {
            return;
        }
        let upstream = self.upstream_label(Some(index));
        self.routed_calls.get_or_create(&[("upstream", upstream), ("tool", Label::Name(Arc::from(tool)))]).inc();
    }

    /// The drift from the lock now (the gauge holds exactly these).
    pub fn tool_drift(&self, drift: &[(Arc<str>, String, crate::lock::DriftKind)]) {
        self.tool_drift.clear();
        for (upstream, tool, kind) in drift {
            let labels = [
                ("upstream", Label::Name(upstream.clone())),
                ("tool", Label::Name(Arc::from(tool.as_str()))),
                ("kind", Label::Static(kind.as_str())),
            ];
            self.tool_drift.get_or_create(&labels).set(1);
        }
    }

    /// A per-tool budget (`limit`) refused a call of `client`.
    pub fn limit_refused(&self, client: &str, limit: &'static str) {
        let client = self.clients.label_of(client);
        self.limit_refusals.get_or_create(&[("client", client), ("limit", Label::Static(limit))]).inc();
    }

    /// An OAuth event (`started`, `completed`, `failed`, `refreshed`,
    /// `refresh_failed`, `dropped`, `revoked`) for upstream `upstream`.
    pub fn oauth_event(&self, upstream: &str, event: &'static str) {
        let labels = [("upstream", Label::Name(Arc::from(upstream))), ("event", Label::Static(event))];
        self.oauth_events.get_or_create(&labels).inc();
    }

    /// Counts calls and sessions counted here alone because the shared
    /// store did not answer (the budgets and `calls_per_minute` count into
    /// it themselves).
    pub fn limit_fallbacks(&self) -> Counter {
        self.limit_fallbacks.clone()
    }

    /// The counter of dropped audit events (the audit trail counts into it).
    pub fn audit_dropped(&self) -> Counter {
        self.audit_dropped.clone()
    }

    /// The gate refused a call to a tool of upstream `index`.
    pub fn gate_refused(&self, index: usize) {
        if let Some(c) = self.gate_refusals.get(index) {
            c.inc();
        }
    }

    /// A call to tool `tool` (its upstream's own name) of upstream
    /// `upstream` was refused: its arguments do not match the tool's schema.
    pub fn argument_errors(&self, upstream: &Arc<str>, tool: &str) {
        self.argument_errors.count(upstream, tool);
    }

    /// A client read tool descriptions (`via`), which served the full
    /// definitions of tools of these upstreams (one index per tool).
    pub fn descriptions_fetched(&self, via: Via, tools: impl IntoIterator<Item = usize>) {
        self.fetches[via as usize].inc();
        for index in tools {
            if let Some(c) = self.described.get(index) {
                c.inc();
            }
        }
    }

    /// The gateway-wide catalog of `epoch` changed: `count` counts its
    /// tokens for this many upstreams (only when metrics are served), on a
    /// blocking thread.
    pub fn catalog_changed(&self, epoch: u64, count: impl FnOnce(usize) -> CatalogCounts + Send + 'static) {
        if self.enabled {
            self.catalog.count_later(epoch, count);
        }
    }

    /// Shows the counts of the catalog of `epoch` now, on this thread (tests).
    #[cfg(test)]
    pub(crate) fn show_catalog_now(&self, epoch: u64, counts: &CatalogCounts) {
        self.catalog.show(epoch, counts);
    }
}
