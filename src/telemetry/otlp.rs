//! The OTLP/HTTP trace exporter and the subscriber that feeds it.
//!
//! The SDK's batch processor exports from a thread of its own, blocking on
//! each export; the export itself is a request on the gateway's runtime
//! with its reqwest client ([`ExportClient`]), so neither a blocking HTTP
//! client nor a second runtime is built. The audit log records
//! ([`super::logs`]) are exported the same way.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{HttpClient, HttpError};
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use tracing::{Level, Metadata};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _, Registry};

use super::{Telemetry, TelemetryError};
use crate::config::TracingConfig;

/// How long one export may take.
pub(super) const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The name of the instrumentation scope of toolgate's spans (and log records).
pub(super) const SCOPE: &str = "toolgate";

/// Logs (filtered by `filter`) and traces to `config`'s collector, and
/// with `audit` the audit events as log records.
pub fn init(
    json: bool,
    ansi: bool,
    filter: EnvFilter,
    config: &TracingConfig,
    audit: bool,
) -> Result<Telemetry, TelemetryError> {
    let provider = provider(config)?;
    let logs = if audit { Some(super::logs::start(config)?) } else { None };
    let otel = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer(SCOPE))
        .with_location(false)
        .with_threads(false)
        .with_filter(tracing_subscriber::filter::filter_fn(traced));
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(ansi);
    let fmt: Box<dyn tracing_subscriber::Layer<Registry> + Send + Sync> =
        if json { fmt.json().boxed() } else { fmt.boxed() };
    tracing_subscriber::registry().with(fmt.with_filter(filter)).with(otel).init();
    tracing::info!(endpoint = config.traces_url().unwrap_or_default(), "exporting traces over OTLP/HTTP");
    if logs.is_some() {
        tracing::info!(endpoint = config.logs_url().unwrap_or_default(), "exporting audit events over OTLP/HTTP");
    }
    Ok(Telemetry { provider: Some(provider), logs })
}

/// What the exporter sees: the request span and its upstream exchanges,
/// and toolgate's events at `info` and above inside them (span events).
/// Decided by metadata alone, so each callsite is judged once.
fn traced(meta: &Metadata<'_>) -> bool {
    let ours = meta.target().starts_with("toolgate");
    if meta.is_span() {
        ours && matches!(meta.name(), "request" | "upstream call")
    } else {
        ours && *meta.level() <= Level::INFO
    }
}

fn provider(config: &TracingConfig) -> Result<SdkTracerProvider, TelemetryError> {
    let url = config.traces_url().ok_or_else(|| TelemetryError::Exporter("no otlp_endpoint".into()))?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url)
        .with_timeout(EXPORT_TIMEOUT)
        .with_headers(headers(config))
        .with_http_client(ExportClient::new("traces")?)
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(config.sample_ratio))))
        .with_resource(resource(config))
        .build())
}

/// The headers sent with every export.
pub(super) fn headers(config: &TracingConfig) -> HashMap<String, String> {
    config.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// What every export says of toolgate: `service.name` and `service.version`.
pub(super) fn resource(config: &TracingConfig) -> Resource {
    Resource::builder()
        .with_service_name(config.service_name.clone())
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build()
}

/// Sends the exporter's requests with reqwest on the gateway's runtime
/// (the exporter's thread only waits for the answer).
#[derive(Debug)]
pub(super) struct ExportClient {
    /// What it exports, for its log lines (`traces`).
    what: &'static str,
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
    /// Whether the last export failed: a failing collector is reported once
    /// (at `warn`), then at `debug` until an export gets through.
    failing: std::sync::Arc<AtomicBool>,
}

impl ExportClient {
    /// A client exporting `what`, on the current runtime.
    pub(super) fn new(what: &'static str) -> Result<Self, TelemetryError> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| TelemetryError::Exporter("no async runtime to export on".into()))?;
        let client = reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| TelemetryError::Exporter(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self { what, client, runtime, failing: Default::default() })
    }
}

/// Logs a failed export (see [`ExportClient::failing`]).
fn export_failed(failing: &AtomicBool, what: &str, why: &str) {
    if !failing.swap(true, Ordering::Relaxed) {
        tracing::warn!(%why, "cannot export {what} (further failures are logged at debug level)");
    } else {
        tracing::debug!(%why, "cannot export {what}");
    }
}

type Export = Pin<Box<dyn Future<Output = Result<http::Response<Bytes>, HttpError>> + Send>>;

impl ExportClient {
    fn export(&self, request: http::Request<Bytes>) -> Export {
        let client = self.client.clone();
        let failing = self.failing.clone();
        let what = self.what;
        // The exporter's own runtime: exporting traces is not traced.
        #[allow(clippy::disallowed_methods)]
        let task = self.runtime.spawn(async move {
            let request = reqwest::Request::try_from(request)?;
            let response = match client.execute(request).await {
                Ok(r) => r,
                Err(e) => {
                    export_failed(&failing, what, &crate::upstream::report(&e).to_string());
                    return Err(e.into());
                }
            };
            let status = response.status();
            if status.is_success() {
                if failing.swap(false, Ordering::Relaxed) {
                    tracing::info!("exporting {what} again");
                }
            } else {
                export_failed(&failing, what, &format!("the collector answered HTTP {status}"));
            }
            let mut answer = http::Response::builder().status(status);
            if let Some(headers) = answer.headers_mut() {
                headers.extend(response.headers().iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            let body = response.bytes().await?;
            Ok::<_, HttpError>(answer.body(body)?)
        });
        Box::pin(async move { task.await.map_err(|e| -> HttpError { Box::new(e) })? })
    }
}

impl HttpClient for ExportClient {
    // `HttpClient` is an `async_trait`; this is the signature it expands to.
    fn send_bytes<'life0, 'async_trait>(
        &'life0 self,
        request: http::Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<http::Response<Bytes>, HttpError>> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        self.export(request)
    }
}
