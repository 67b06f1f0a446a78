//! `GET /metrics`: the OpenMetrics text of a gateway's series, merged into
//! the main listener beside the health routes, or served on a listener of
//! its own (`[metrics] listen`).
//!
//! Like `/healthz` and `/readyz`, the route is outside the `Host`/`Origin`
//! check and client authentication: a scraper in Kubernetes addresses the
//! pod by IP, which the loopback default refuses, and carries no client
//! credential. The text holds counts, upstream and client names, and
//! nothing from a session (no ids, tool arguments or results). Where even
//! that must stay private, `[metrics] listen` moves it to an address only
//! the scraper reaches.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{StatusCode, header};

use super::Metrics;

/// Where the metrics are served.
pub const METRICS_PATH: &str = "/metrics";

/// The media type of OpenMetrics text, which Prometheus asks for.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The `/metrics` route, to merge into a router (or serve alone).
pub fn routes(metrics: Arc<Metrics>) -> Router {
    Router::new().route(METRICS_PATH, get(scrape)).with_state(metrics)
}

async fn scrape(State(metrics): State<Arc<Metrics>>) -> Response {
    match metrics.render() {
        Ok(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "cannot encode the metrics\n").into_response(),
    }
}
