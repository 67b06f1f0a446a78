//! Health endpoints on the main listener: `GET /healthz` (the process
//! answers) and `GET /readyz` (every upstream's first connection attempt is
//! over, so the catalog is served), for container health checks and
//! Kubernetes probes.
//!
//! They are merged beside the MCP routes but outside the `Host`/`Origin`
//! check: a kubelet probes with the pod's IP as `Host`, which the loopback
//! default would refuse. They carry no session and no tool data; `/readyz`
//! names the upstreams and their states only.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use http::StatusCode;
use serde_json::{Map, Value, json};

use super::reply;

/// Liveness: 200 `{"status":"ok"}` while the process serves HTTP.
pub const HEALTHZ_PATH: &str = "/healthz";
/// Readiness: 200 `{"status":"ready",…}` once every upstream's first
/// connection attempt is over, 503 `{"status":"starting",…}` before.
pub const READYZ_PATH: &str = "/readyz";

/// What `/readyz` reports, computed on each probe.
#[derive(Clone)]
pub struct Readiness(Arc<dyn Fn() -> Ready + Send + Sync>);

/// One readiness report.
#[derive(Debug, Clone, PartialEq)]
pub struct Ready {
    /// Whether the gateway is ready to serve its catalog.
    pub ready: bool,
    /// Each upstream's state by name: `starting`, `up` or `down`.
    pub upstreams: Map<String, Value>,
    /// The shared state store's (Redis), if there is one: `up` or `down`
    /// (its last command, at most a second old, failed). Sessions held here
    /// keep working while it is down, so it never makes the answer 503.
    pub state: Option<&'static str>,
}

impl std::fmt::Debug for Readiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Readiness").finish_non_exhaustive()
    }
}

impl Readiness {
    /// Readiness computed by `report`.
    pub fn new(report: impl Fn() -> Ready + Send + Sync + 'static) -> Self {
        Self(Arc::new(report))
    }

    fn report(&self) -> Ready {
        (self.0)()
    }
}

/// The routes, to merge into the main router.
pub fn routes(readiness: Readiness) -> Router {
    Router::new().route(HEALTHZ_PATH, get(healthz)).route(READYZ_PATH, get(readyz)).with_state(readiness)
}

async fn healthz() -> Response {
    reply::json(StatusCode::OK, &json!({"status": "ok"}))
}

async fn readyz(State(readiness): State<Readiness>) -> Response {
    let Ready { ready, upstreams, state } = readiness.report();
    let (status, word) = if ready { (StatusCode::OK, "ready") } else { (StatusCode::SERVICE_UNAVAILABLE, "starting") };
    let mut body = json!({"status": word, "upstreams": upstreams});
    if let Some(state) = state {
        body["state"] = json!(state);
    }
    reply::json(status, &body)
}

#[cfg(test)]
mod tests;
