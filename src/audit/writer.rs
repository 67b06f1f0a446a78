//! The writer: one thread of its own (file writes block), which takes
//! events off the queue in batches, turns each into one line of JSON
//! (arguments redacted and digested here, off the request path) and
//! flushes once per batch.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::event::{Call, Event, Kind, Who};
use super::{AuditError, SCHEMA};
use crate::config::AuditArguments;

pub(super) struct Settings {
    pub arguments: AuditArguments,
    /// Lowercase words whose properties are redacted.
    pub redact: Vec<String>,
    pub max_bytes: usize,
}

impl Settings {
    pub(super) fn of(config: &crate::config::AuditConfig) -> Self {
        Self {
            arguments: config.arguments,
            redact: config.redact.iter().map(|n| n.to_ascii_lowercase()).collect(),
            max_bytes: config.max_bytes,
        }
    }
}

/// Where lines go.
pub(super) enum Sink {
    Stdout,
    File { path: PathBuf, out: BufWriter<File> },
}

impl Sink {
    pub(super) fn open(path: &str) -> Result<Self, AuditError> {
        if path == "-" {
            return Ok(Sink::Stdout);
        }
        let path = PathBuf::from(path);
        let out = append(&path).map_err(|source| AuditError { path: path.display().to_string(), source })?;
        Ok(Sink::File { path, out: BufWriter::new(out) })
    }

    /// Opens the file again (it was moved away by a rotation).
    fn reopen(&mut self) {
        if let Sink::File { path, out } = self {
            let _ = out.flush();
            match append(path) {
                Ok(file) => *out = BufWriter::new(file),
                Err(e) => {
                    tracing::warn!(error = %e, path = %path.display(), "cannot reopen the audit file; writing on to the old one")
                }
            }
        }
    }

    fn write_line(&mut self, line: &str) {
        let written = match self {
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(line.as_bytes()).and_then(|()| out.write_all(b"\n"))
            }
            Sink::File { out, .. } => out.write_all(line.as_bytes()).and_then(|()| out.write_all(b"\n")),
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, "cannot write the audit trail");
        }
    }

    fn flush(&mut self) {
        let flushed = match self {
            Sink::Stdout => std::io::stdout().flush(),
            Sink::File { out, .. } => out.flush(),
        };
        if let Err(e) = flushed {
            tracing::warn!(error = %e, "cannot write the audit trail");
        }
    }
}

fn append(path: &PathBuf) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// Starts the writer thread; it ends when every sender is gone.
pub(super) fn start(mut sink: Sink, mut events: mpsc::Receiver<Event>, settings: Settings, reopen: Arc<AtomicBool>) {
    let spawned = std::thread::Builder::new().name("toolgate-audit".into()).spawn(move || {
        while let Some(first) = events.blocking_recv() {
            if reopen.swap(false, Ordering::AcqRel) {
                sink.reopen();
            }
            sink.write_line(&line(&first, &settings));
            while let Ok(next) = events.try_recv() {
                sink.write_line(&line(&next, &settings));
            }
            sink.flush();
        }
    });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the audit writer; no audit events will be written");
    }
}

/// One event as a line of JSON, within `max_bytes`.
pub(super) fn line(event: &Event, settings: &Settings) -> String {
    let time = humantime::format_rfc3339_millis(event.time).to_string();
    let head = Head { schema: SCHEMA, time: &time };
    let text = match &event.kind {
        Kind::Describe { who, tools } => {
            let tools: Vec<Described<'_>> = tools.iter().map(|(tool, digest)| Described { tool, digest }).collect();
            to_line(&Line { head, kind: "describe", who: Some(who.into()), body: DescribeBody { tools: &tools } })
        }
        Kind::Search { who, query, returned } => {
            to_line(&Line { head, kind: "search", who: Some(who.into()), body: SearchBody { query, returned } })
        }
        Kind::Drift { upstream, tool, kind } => {
            to_line(&Line { head, kind: "drift", who: None, body: DriftBody { upstream, tool, kind } })
        }
        Kind::Call(call) | Kind::Refusal(call) => {
            let refused = matches!(event.kind, Kind::Refusal(_));
            let kind = if refused { "refusal" } else { "call" };
            let mut body = call_body(call, settings, refused);
            let text = to_line(&Line { head, kind, who: Some((&call.who).into()), body: &body });
            if text.len() <= settings.max_bytes {
                return text;
            }
            // Too large: the arguments go.
            body.arguments = None;
            body.truncated = true;
            to_line(&Line { head, kind, who: Some((&call.who).into()), body: &body })
        }
    };
    if text.len() <= settings.max_bytes {
        return text;
    }
    // Still too large (a huge search or description list): who and what only.
    let kind = match &event.kind {
        Kind::Describe { .. } => "describe",
        Kind::Search { .. } => "search",
        Kind::Drift { .. } => "drift",
        Kind::Call(_) => "call",
        Kind::Refusal(_) => "refusal",
    };
    let who = match &event.kind {
        Kind::Describe { who, .. } | Kind::Search { who, .. } => Some(who.into()),
        Kind::Call(call) | Kind::Refusal(call) => Some((&call.who).into()),
        Kind::Drift { .. } => None,
    };
    to_line(&Line { head, kind, who, body: Truncated { truncated: true } })
}

fn to_line<T: Serialize>(line: &T) -> String {
    serde_json::to_string(line).unwrap_or_default()
}

#[derive(Serialize, Clone, Copy)]
struct Head<'a> {
    schema: u32,
    time: &'a str,
}

#[derive(Serialize)]
struct WhoLine<'a> {
    principal: &'a str,
    client: &'a str,
    session: Option<&'a str>,
}

impl<'a> From<&'a Who> for WhoLine<'a> {
    fn from(who: &'a Who) -> Self {
        Self { principal: &who.principal, client: &who.client, session: who.session.as_deref() }
    }
}

#[derive(Serialize)]
struct Line<'a, B: Serialize> {
    #[serde(flatten)]
    head: Head<'a>,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    who: Option<WhoLine<'a>>,
    #[serde(flatten)]
    body: B,
}

#[derive(Serialize)]
struct Described<'a> {
    tool: &'a str,
    digest: &'a str,
}

#[derive(Serialize)]
struct DescribeBody<'a> {
    tools: &'a [Described<'a>],
}

#[derive(Serialize)]
struct SearchBody<'a> {
    query: &'a str,
    returned: &'a [String],
}

#[derive(Serialize)]
struct DriftBody<'a> {
    upstream: &'a str,
    tool: &'a str,
    kind: &'a str,
}

#[derive(Serialize)]
struct Truncated {
    truncated: bool,
}

#[derive(Serialize)]
struct CallBody<'a> {
    tool: &'a str,
    upstream_tool: &'a str,
    upstream: &'a str,
    digest: &'a str,
    granted: Option<bool>,
    routed: bool,
    outcome: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result_bytes: Option<usize>,
    latency_ms: f64,
    arguments_digest: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<Cow<'a, Value>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    truncated: bool,
}

fn call_body<'a>(call: &'a Call, settings: &Settings, refused: bool) -> CallBody<'a> {
    static EMPTY: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    let entry = &call.entry;
    let arguments = call.arguments.as_ref().unwrap_or_else(|| EMPTY.get_or_init(|| Value::Object(Map::new())));
    let kept = match settings.arguments {
        AuditArguments::None => None,
        AuditArguments::Full => Some(Cow::Borrowed(arguments)),
        AuditArguments::Redacted => {
            Some(super::redact::redacted(arguments, entry.full.get("inputSchema"), &settings.redact))
        }
    };
    CallBody {
        tool: &entry.exposed,
        upstream_tool: &entry.original,
        upstream: &call.upstream,
        digest: &entry.digest,
        granted: call.granted,
        routed: call.routed,
        outcome: if refused { "refused" } else { call.outcome },
        reason: refused.then_some(call.outcome),
        result_bytes: if refused { None } else { call.result_bytes },
        latency_ms: call.latency.as_secs_f64() * 1000.0,
        arguments_digest: arguments_digest(arguments),
        arguments: kept,
        truncated: false,
    }
}

/// `sha256:` of the arguments' JSON as the client sent them (key order
/// kept). Not their canonical form, which would cost each call about 2 µs
/// more (`cargo bench --bench audit`); the identical-call breaker, which
/// must not tell reordered arguments apart, digests the canonical form.
fn arguments_digest(arguments: &Value) -> String {
    let json = serde_json::to_vec(arguments).unwrap_or_default();
    format!("sha256:{}", hex::encode(crate::config::sha256(&json)))
}
