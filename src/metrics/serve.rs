//! `GET /metrics`: the OpenMetrics text of a gateway's series, served on a
//! listener of its own (`[metrics] listen`) or merged into the main listener
//! beside the health routes.
//!
//! The text holds counts, and the names of upstreams and clients (JWT
//! subjects among them); nothing from a session (no ids, tool arguments or
//! results). Who may read it:
//! - on its own listener ([`routes`]), whoever reaches that address: it is
//!   meant for a port only the scraper reaches (in Kubernetes the scraper
//!   addresses the pod by IP, which a `Host` check would refuse, and
//!   carries no client credential);
//! - on the main listener ([`guarded_routes`]), only what the MCP endpoint
//!   would let in: the same `Host`/`Origin` check (so a DNS-rebinding page
//!   cannot read it from a loopback toolgate) and, with `[auth]`, a client
//!   credential (so an anonymous caller does not learn the clients' names).

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{StatusCode, header};

use super::Metrics;
use crate::server::http::{Admit, Guard};

/// Where the metrics are served.
pub const METRICS_PATH: &str = "/metrics";

/// The media type of OpenMetrics text, which Prometheus asks for.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The `/metrics` route for a listener of its own: open to whoever reaches it.
pub fn routes(metrics: Arc<Metrics>) -> Router {
    Router::new().route(METRICS_PATH, get(scrape)).with_state(metrics)
}

/// Who may read `/metrics` on the main listener.
#[derive(Clone)]
pub struct Access {
    /// The MCP endpoint's `Host`/`Origin` check.
    pub guard: Guard,
    /// The MCP endpoint's authentication (with `[auth]`).
    pub admit: Option<Arc<dyn Admit>>,
}

/// The `/metrics` route for the main listener, behind `access`.
pub fn guarded_routes(metrics: Arc<Metrics>, access: Access) -> Router {
    Router::new().route(METRICS_PATH, get(guarded_scrape)).with_state((metrics, Arc::new(access)))
}

async fn scrape(State(metrics): State<Arc<Metrics>>) -> Response {
    match metrics.render() {
        Ok(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "cannot encode the metrics\n").into_response(),
    }
}

async fn guarded_scrape(State((metrics, access)): State<(Arc<Metrics>, Arc<Access>)>, request: Request) -> Response {
    if let Err(why) = access.guard.check(request.headers(), request.uri()) {
        tracing::warn!(%why, "metrics request refused (DNS-rebinding protection)");
        return (StatusCode::FORBIDDEN, format!("Forbidden: {why}\n")).into_response();
    }
    if let Some(admit) = &access.admit
        && let Err(refusal) = admit.admit(request.headers()).await
    {
        return refusal;
    }
    scrape(State(metrics)).await
}
