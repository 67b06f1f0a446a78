//! The audit trail (`[audit]`): one JSON object per line for every
//! description fetch (`describe`), call (`call`), refusal (`refusal`),
//! search (`search`), drift from the lock (`drift`) and change of a
//! session's concern configuration (`concerns`), each with a `schema`
//! version, a `type` and a `time`.
//!
//! A call's event names the digest of the definition its client was shown
//! (`digest`, as in the lockfile) and whether a description grant let it
//! through (`granted`): together with the `describe` events, which name the
//! digest of each definition served, the trail proves which version of a
//! tool's description the model had read when it called the tool.
//!
//! Nothing of it is on a call's critical path beyond building the event:
//! events go into a bounded queue ([`Audit::emit`]), and one writer task
//! ([`writer`]) redacts, digests, serializes and writes them. A full queue
//! drops the event and counts it (`toolgate_audit_dropped_total`); the call
//! is never delayed. When `[tracing]` exports, the writer also emits each
//! line as an OpenTelemetry log record (`otel`).

pub mod event;
#[cfg(feature = "otel")]
mod otel;
pub mod redact;
mod writer;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use prometheus_client::metrics::counter::Counter;
use tokio::sync::mpsc;

use crate::config::{AuditArguments, AuditConfig};

pub use event::{Call, Event, Kind, Who};

/// The version of the events' schema (the `schema` field).
pub const SCHEMA: u32 = 1;

#[cfg(feature = "otel")]
use otel::Logs;

/// Without the `otel` feature there are no log records: never built.
#[cfg(not(feature = "otel"))]
enum Logs {}

#[cfg(not(feature = "otel"))]
impl Logs {
    fn current() -> Option<Self> {
        None
    }

    fn emit(&self, _: &Event, _: &[u8]) {
        match *self {}
    }
}

/// Why the audit trail cannot be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot open the audit file {path}: {source}")]
pub struct AuditError {
    path: String,
    source: std::io::Error,
}

/// Renders events as the writer does (for benchmarks and tools).
pub struct Renderer {
    settings: writer::Settings,
    lines: writer::Lines,
}

impl Renderer {
    /// The rendering `config` asks for.
    pub fn new(config: &AuditConfig) -> Self {
        Self { settings: writer::Settings::of(config), lines: writer::Lines::default() }
    }

    /// `event` as its line of JSON (arguments redacted and digested), without
    /// its newline, in a buffer the next event's line reuses.
    pub fn render(&mut self, event: &Event) -> &[u8] {
        self.lines.render(event, &self.settings)
    }
}

/// The audit trail's entry point: cheap to emit into from any request.
pub struct Audit {
    queue: mpsc::Sender<Event>,
    arguments: AuditArguments,
    dropped: Counter,
    reopen: Arc<AtomicBool>,
}

impl Audit {
    /// Opens `config.path` and starts the writer; `None` when auditing is off.
    pub fn start(config: &AuditConfig, dropped: Counter) -> Result<Option<Arc<Self>>, AuditError> {
        if !config.enabled {
            return Ok(None);
        }
        let sink = writer::Sink::open(&config.path)?;
        let (queue, events) = mpsc::channel(config.queue.max(1));
        let reopen = Arc::new(AtomicBool::new(false));
        writer::start(sink, events, writer::Settings::of(config), reopen.clone());
        Ok(Some(Arc::new(Self { queue, arguments: config.arguments, dropped, reopen })))
    }

    /// What call events keep of arguments.
    pub fn arguments(&self) -> AuditArguments {
        self.arguments
    }

    /// Queues `event`; drops and counts it when the queue is full.
    pub fn emit(&self, event: Event) {
        if self.queue.try_send(event).is_err() {
            self.dropped.inc();
        }
    }

    /// Reopens the file before the next write (SIGHUP: it was rotated).
    pub fn reopen(&self) {
        self.reopen.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests;
