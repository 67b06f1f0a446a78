//! The OTLP/HTTP log exporter of the audit trail: with `[tracing]` and
//! `[audit]`, each audit event is also a log record, posted to
//! `<otlp_endpoint>/v1/logs` with the traces' headers, timeout and resource
//! through the SDK's batch processor.
//!
//! Only the audit writer emits on it ([`audit_logger`]): toolgate's log
//! lines are not log records (no tracing appender is installed).

use std::sync::OnceLock;

use opentelemetry::InstrumentationScope;
use opentelemetry::logs::LoggerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::logs::{SdkLogger, SdkLoggerProvider};

use super::TelemetryError;
use super::otlp::{EXPORT_TIMEOUT, ExportClient, SCOPE, headers, resource};
use crate::config::TracingConfig;

/// The logger of audit events, once [`start`] ran.
static AUDIT_LOGGER: OnceLock<SdkLogger> = OnceLock::new();

/// The logger audit events are emitted on; `None` unless log records are
/// exported.
pub fn audit_logger() -> Option<SdkLogger> {
    AUDIT_LOGGER.get().cloned()
}

/// Starts the log exporter to `config`'s collector and publishes its
/// logger; the provider returned flushes it when shut down.
pub fn start(config: &TracingConfig) -> Result<SdkLoggerProvider, TelemetryError> {
    let url = config.logs_url().ok_or_else(|| TelemetryError::Exporter("no otlp_endpoint".into()))?;
    let exporter = opentelemetry_otlp::LogExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url)
        .with_timeout(EXPORT_TIMEOUT)
        .with_headers(headers(config))
        .with_http_client(ExportClient::new("audit log records")?)
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let provider = SdkLoggerProvider::builder().with_batch_exporter(exporter).with_resource(resource(config)).build();
    let scope = InstrumentationScope::builder(SCOPE).with_version(env!("CARGO_PKG_VERSION")).build();
    // Set once: `init` runs once per process.
    let _ = AUDIT_LOGGER.set(provider.logger_with_scope(scope));
    Ok(provider)
}
