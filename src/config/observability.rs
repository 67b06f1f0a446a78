//! `[metrics]` and `[tracing]`: how toolgate is watched (Prometheus metrics,
//! OpenTelemetry traces and audit log records), and the checks of those
//! sections.

use std::net::SocketAddr;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::path::TomlPath;
use super::validate::Problem;

/// `[metrics]`: Prometheus metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// Serve `GET /metrics` (OpenMetrics text) and count the catalog's tokens (the tokenizer is
    /// only loaded then).
    pub enabled: bool,
    /// Serve `/metrics` on this address of its own instead of the main listener (then the main
    /// listener has no `/metrics`), open to whoever reaches it: for a port only the scraper
    /// reaches. Unset: `/metrics` on the main listener, where it gets the `Host`/`Origin` check
    /// and, with `[auth]`, needs a client credential. Must differ from `server.listen`. Also works
    /// with `toolgate stdio`, which has no listener otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<SocketAddr>,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self { enabled: true, listen: None }
    }
}

/// `[tracing]`: OpenTelemetry traces, exported over OTLP/HTTP (protobuf). Off unless
/// `otlp_endpoint` is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TracingConfig {
    /// The collector's OTLP/HTTP base URL, e.g. `"http://otel-collector:4318"`; spans are POSTed as
    /// protobuf to `<otlp_endpoint>/v1/traces` (a URL already ending in `/v1/traces` is used as it
    /// is), and with `[audit]` its events as log records to `<otlp_endpoint>/v1/logs`. `http://` or
    /// `https://`. Unset: no traces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub otlp_endpoint: Option<String>,
    /// Headers sent with every export, e.g. `{ "x-api-key" = "${OTEL_KEY}" }` for a hosted
    /// collector. `check-config` redacts their values.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(extend("default" = {}))]
    pub headers: IndexMap<String, String>,
    /// The `service.name` resource attribute. Not empty.
    pub service_name: String,
    /// Share of new traces recorded, 0 to 1. A request whose client sent a trace context follows
    /// the client's decision (parent-based sampling).
    #[schemars(range(min = 0.0, max = 1.0))]
    pub sample_ratio: f64,
}

impl Default for TracingConfig {
    fn default() -> Self {
        Self { otlp_endpoint: None, headers: IndexMap::new(), service_name: "toolgate".into(), sample_ratio: 1.0 }
    }
}

impl TracingConfig {
    /// Whether traces are exported.
    pub fn enabled(&self) -> bool {
        self.otlp_endpoint.is_some()
    }

    /// Where spans are POSTed: the endpoint with `/v1/traces` appended
    /// unless it is already there.
    pub fn traces_url(&self) -> Option<String> {
        let endpoint = self.otlp_endpoint.as_deref()?.trim_end_matches('/');
        Some(if endpoint.ends_with("/v1/traces") { endpoint.to_owned() } else { format!("{endpoint}/v1/traces") })
    }

    /// Where log records (audit events) are POSTed: the endpoint with
    /// `/v1/logs` appended, or in place of a `/v1/traces` it ends with.
    pub fn logs_url(&self) -> Option<String> {
        let endpoint = self.otlp_endpoint.as_deref()?.trim_end_matches('/');
        Some(format!("{}/v1/logs", endpoint.strip_suffix("/v1/traces").unwrap_or(endpoint)))
    }
}

/// Whether this build can export traces (the `otel` cargo feature).
pub const OTEL_BUILT: bool = cfg!(feature = "otel");

/// The problems of `[metrics]` and `[tracing]`; `listen` is `server.listen`.
pub(super) fn check(metrics: &MetricsConfig, tracing: &TracingConfig, listen: SocketAddr) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut push = |path: TomlPath, message: String| out.push(Problem { path: path.to_string(), message });
    let root = TomlPath::root();
    if let Some(addr) = metrics.listen
        && addr == listen
        && addr.port() != 0
    {
        push(
            root.key("metrics").key("listen"),
            format!("`{addr}` is server.listen; leave metrics.listen unset to serve /metrics on the main listener"),
        );
    }

    let path = root.key("tracing");
    if let Some(endpoint) = &tracing.otlp_endpoint {
        if !OTEL_BUILT {
            push(
                path.key("otlp_endpoint"),
                "this toolgate was built without OpenTelemetry support (cargo feature `otel`)".into(),
            );
        }
        match url::Url::parse(endpoint) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {
                if url.query().is_some() || url.fragment().is_some() {
                    push(path.key("otlp_endpoint"), format!("`{endpoint}` must not have a query or fragment"));
                }
            }
            Ok(_) => push(path.key("otlp_endpoint"), format!("`{endpoint}` must be an http:// or https:// URL")),
            Err(e) => push(path.key("otlp_endpoint"), format!("`{endpoint}` is not a URL: {e}")),
        }
    }
    for (name, value) in &tracing.headers {
        let header_path = path.key("headers").key(name);
        if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
            push(header_path.clone(), format!("`{name}` is not a valid HTTP header name"));
        }
        if http::HeaderValue::from_str(value).is_err() {
            push(header_path, "is not a valid HTTP header value (control characters?)".into());
        }
    }
    if tracing.service_name.trim().is_empty() {
        push(path.key("service_name"), "must not be empty".into());
    }
    if !(0.0..=1.0).contains(&tracing.sample_ratio) {
        push(path.key("sample_ratio"), format!("must be between 0 and 1 (found {})", tracing.sample_ratio));
    }
    out
}

#[cfg(test)]
mod tests;
