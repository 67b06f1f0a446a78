//! Logs and traces: the `tracing` subscriber (logs on stderr, and, when
//! `[tracing] otlp_endpoint` is set, OpenTelemetry spans exported over
//! OTLP/HTTP, with `[audit]` its events as log records), and the W3C trace
//! context of requests.
//!
//! What is traced: each client request is one span (the engine's `request`
//! span, a server span named after the method), with a child span per
//! upstream exchange (`upstream call`, a client span). A request joins the
//! client's trace when it carries a W3C `traceparent`, in `params._meta`
//! (SEP-414) or in the HTTP request's headers; the upstream exchange passes
//! its own context on in the forwarded request's `_meta.traceparent` (and
//! `tracestate`), which HTTP upstreams also get as headers
//! ([`trace_headers`](crate::upstream::trace_headers)).
//!
//! OpenTelemetry is compiled in with the `otel` cargo feature (on by
//! default) and costs nothing at run time until configured: without an
//! exporter the spans stay disabled at the default log level.

#[cfg(feature = "otel")]
mod context;
#[cfg(feature = "otel")]
mod logs;
#[cfg(feature = "otel")]
mod otlp;

#[cfg(feature = "otel")]
pub use logs::audit_logger;

#[cfg(all(test, feature = "otel"))]
mod tests;

use serde_json::Value;
use tracing_subscriber::EnvFilter;

use crate::config::TracingConfig;
use crate::server::TraceHeaders;

/// Why logging or tracing could not start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The OTLP exporter could not be built.
    #[error("cannot start the OTLP exporter: {0}")]
    Exporter(String),
    /// Tracing was configured in a build without the `otel` feature.
    #[error("this toolgate was built without OpenTelemetry support (cargo feature `otel`)")]
    NotBuilt,
}

/// What runs behind the logs: flushes the traces (and audit log records)
/// still buffered when shut down.
#[derive(Default)]
pub struct Telemetry {
    #[cfg(feature = "otel")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
    #[cfg(feature = "otel")]
    logs: Option<opentelemetry_sdk::logs::SdkLoggerProvider>,
}

impl Telemetry {
    /// Whether spans are exported.
    pub fn exports(&self) -> bool {
        #[cfg(feature = "otel")]
        return self.provider.is_some();
        #[cfg(not(feature = "otel"))]
        false
    }

    /// Exports the spans and log records still buffered and stops the
    /// exporters (blocks; call it outside the runtime's tasks, while the
    /// runtime still runs).
    pub fn shutdown(self) {
        #[cfg(feature = "otel")]
        if let Some(logs) = self.logs
            && let Err(e) = logs.shutdown()
        {
            tracing::warn!(error = %e, "could not export the last audit log records");
        }
        #[cfg(feature = "otel")]
        if let Some(provider) = self.provider
            && let Err(e) = provider.shutdown()
        {
            tracing::warn!(error = %e, "could not export the last spans");
        }
    }
}

/// The log filter: `TOOLGATE_LOG` (or `RUST_LOG`); default `info`.
fn log_filter() -> EnvFilter {
    EnvFilter::try_from_env("TOOLGATE_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new("info"))
}

/// Starts logging on stderr (as JSON lines if `json`) and, if `tracing`
/// names an OTLP endpoint, the trace exporter, and with `audit` (`[audit]
/// enabled`) the exporter of audit events as log records
/// ([`audit_logger`]). Call it once, inside the runtime's context (the
/// exporters send on it).
pub fn init(json: bool, tracing: Option<&TracingConfig>, audit: bool) -> Result<Telemetry, TelemetryError> {
    let filter = log_filter();
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    match tracing.filter(|t| t.enabled()) {
        // Exactly the subscriber toolgate always had: one global filter, so
        // disabled spans and events cost nothing.
        None => {
            let builder =
                tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
            if json {
                builder.json().init();
            } else {
                builder.init();
            }
            Ok(Telemetry::default())
        }
        #[cfg(feature = "otel")]
        Some(config) => otlp::init(json, ansi, filter, config, audit),
        #[cfg(not(feature = "otel"))]
        Some(_) => {
            let _ = audit;
            Err(TelemetryError::NotBuilt)
        }
    }
}

/// Makes a request's span part of the client's trace: the W3C context in
/// the request's `_meta` if there is one, else the HTTP request's headers.
/// Only an exported span has anywhere to go; otherwise nothing happens.
pub fn link_to_client(span: &tracing::Span, params: Option<&Value>, remote: Option<&TraceHeaders>) {
    #[cfg(feature = "otel")]
    context::link_to_client(span, params, remote);
    #[cfg(not(feature = "otel"))]
    let _ = (span, params, remote);
}

/// The params of an upstream request, with the trace context of its
/// (exported) span in `_meta.traceparent` and `_meta.tracestate`, replacing
/// the client's; unchanged when the span is not exported.
pub fn inject(span: &tracing::Span, params: Option<Value>) -> Option<Value> {
    if span.is_disabled() {
        return params;
    }
    #[cfg(feature = "otel")]
    return context::inject(span, params);
    #[cfg(not(feature = "otel"))]
    params
}
