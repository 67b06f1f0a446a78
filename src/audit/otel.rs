//! Audit events as OpenTelemetry log records, when `[tracing]` exports
//! ([`crate::telemetry::audit_logger`]): the writer thread hands each
//! event's finished line here after writing it, so the collector gets the
//! same redacted, size-capped line as the file, and nothing of it happens
//! on a request's path.
//!
//! A record is named `toolgate.audit.<type>`, at severity INFO, timed at
//! the event; its body is the line, and its attributes `audit.schema`,
//! `audit.type` and, where the event has them, `audit.principal`,
//! `audit.tool`, `audit.upstream`, `audit.outcome` and `audit.digest`.

use std::sync::Arc;

use opentelemetry::StringValue;
use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, Severity};
use opentelemetry_sdk::logs::SdkLogger;

use super::SCHEMA;
use super::event::{Event, Kind};

/// Where the writer emits log records.
pub(super) struct Logs {
    logger: SdkLogger,
}

impl Logs {
    /// The exporting logger; `None` without `[tracing]`.
    pub(super) fn current() -> Option<Self> {
        crate::telemetry::audit_logger().map(Self::new)
    }

    /// Emits on `logger`.
    pub(super) fn new(logger: SdkLogger) -> Self {
        Self { logger }
    }

    /// Emits `event`, whose line the file got as `line`.
    pub(super) fn emit(&self, event: &Event, line: &[u8]) {
        let mut record = self.logger.create_log_record();
        record.set_event_name(name(&event.kind));
        record.set_timestamp(event.time);
        record.set_severity_number(Severity::Info);
        record.set_severity_text("INFO");
        record.set_body(AnyValue::String(String::from_utf8_lossy(line).into_owned().into()));
        record.add_attribute("audit.schema", i64::from(SCHEMA));
        record.add_attribute("audit.type", event.kind.name());
        let text = |value: &Arc<str>| AnyValue::String(StringValue::from(value.clone()));
        let mut add = |key: &'static str, value: AnyValue| record.add_attribute(key, value);
        if let Some(who) = event.kind.who() {
            add("audit.principal", text(&who.principal));
        }
        match &event.kind {
            Kind::Describe { .. } | Kind::Search { .. } | Kind::Concerns { .. } => {}
            Kind::Call(call) | Kind::Refusal(call) => {
                // As in the line: a refusal's outcome is `refused`.
                let outcome = if matches!(event.kind, Kind::Refusal(_)) { "refused" } else { call.outcome };
                add("audit.tool", call.entry.exposed.clone().into());
                add("audit.upstream", text(&call.upstream));
                add("audit.outcome", outcome.into());
                add("audit.digest", text(&call.entry.digest));
            }
            Kind::Drift { upstream, tool, .. } => {
                add("audit.upstream", text(upstream));
                add("audit.tool", tool.clone().into());
            }
        }
        self.logger.emit(record);
    }
}

/// The record's event name: `toolgate.audit.<type>`.
fn name(kind: &Kind) -> &'static str {
    match kind {
        Kind::Describe { .. } => "toolgate.audit.describe",
        Kind::Call(_) => "toolgate.audit.call",
        Kind::Refusal(_) => "toolgate.audit.refusal",
        Kind::Concerns { .. } => "toolgate.audit.concerns",
        Kind::Search { .. } => "toolgate.audit.search",
        Kind::Drift { .. } => "toolgate.audit.drift",
    }
}

#[cfg(test)]
mod tests;
