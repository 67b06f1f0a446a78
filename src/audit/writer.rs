//! The writer: one thread of its own (file writes block), which takes
//! events off the queue in batches, turns each into one line of JSON
//! (arguments redacted and digested here, off the request path) and
//! flushes once per batch.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::event::{Call, Event, Kind};
use super::redact::Redacted;
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

    fn write_line(&mut self, line: &[u8]) {
        let written = match self {
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(line).and_then(|()| out.write_all(b"\n"))
            }
            Sink::File { out, .. } => out.write_all(line).and_then(|()| out.write_all(b"\n")),
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
    let logs = super::Logs::current();
    let spawned = std::thread::Builder::new().name("toolgate-audit".into()).spawn(move || {
        let mut lines = Lines::default();
        while let Some(first) = events.blocking_recv() {
            if reopen.swap(false, Ordering::AcqRel) {
                sink.reopen();
            }
            write(&mut sink, &mut lines, logs.as_ref(), &first, &settings);
            while let Ok(next) = events.try_recv() {
                write(&mut sink, &mut lines, logs.as_ref(), &next, &settings);
            }
            sink.flush();
        }
    });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the audit writer; no audit events will be written");
    }
}

/// Writes `event`'s line, and with `[tracing]` emits it as a log record.
fn write(sink: &mut Sink, lines: &mut Lines, logs: Option<&super::Logs>, event: &Event, settings: &Settings) {
    let line = lines.render(event, settings);
    sink.write_line(line);
    if let Some(logs) = logs {
        logs.emit(event, line);
    }
}

/// One event as a line of JSON, within `max_bytes`.
#[cfg(test)]
pub(super) fn line(event: &Event, settings: &Settings) -> String {
    String::from_utf8(Lines::default().render(event, settings).to_vec()).expect("JSON is UTF-8")
}

/// The room kept in each of the writer's buffers between events, or
/// `max_bytes` if larger.
const KEEP: usize = 64 * 1024;

/// What the writer keeps from one event to the next, so that a line costs
/// no allocation once they have grown: the line being written, the
/// arguments' JSON (for their digest), and the time's text to the second.
#[derive(Default)]
pub(super) struct Lines {
    out: Vec<u8>,
    scratch: Vec<u8>,
    clock: Clock,
}

impl Lines {
    /// `event` as one line of JSON (without its newline), within
    /// `max_bytes`: the line's fields in a fixed order, `schema`, `time`,
    /// `type`, who (but for `drift`), then the type's own.
    pub(super) fn render(&mut self, event: &Event, settings: &Settings) -> &[u8] {
        let Self { out, scratch, clock } = self;
        // What a huge event grew the buffers to is let go.
        let keep = settings.max_bytes.max(KEEP);
        for buffer in [&mut *out, &mut *scratch] {
            buffer.clear();
            buffer.shrink_to(keep);
        }
        let (kind, who) = (event.kind.name(), event.kind.who());
        out.extend_from_slice(b"{\"schema\":");
        json(out, &SCHEMA);
        out.extend_from_slice(b",\"time\":\"");
        clock.push(out, event.time);
        out.extend_from_slice(b"\",\"type\":\"");
        out.extend_from_slice(kind.as_bytes());
        out.push(b'"');
        if let Some(who) = who {
            field(out, "principal", &*who.principal);
            field(out, "client", &*who.client);
            field(out, "session", &who.session.as_deref());
        }
        // Where a line too large to write whole is cut.
        let head = out.len();
        match &event.kind {
            Kind::Describe { tools, .. } => {
                out.extend_from_slice(b",\"tools\":[");
                for (i, (tool, digest)) in tools.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(b"{\"tool\":");
                    json(out, tool.as_str());
                    field(out, "digest", &**digest);
                    out.push(b'}');
                }
                out.push(b']');
            }
            Kind::Search { query, returned, .. } => {
                field(out, "query", query.as_str());
                field(out, "returned", returned.as_slice());
            }
            Kind::Drift { upstream, tool, kind } => {
                field(out, "upstream", &**upstream);
                field(out, "tool", tool.as_str());
                field(out, "kind", *kind);
            }
            Kind::Concerns { concerns, .. } => field(out, "concerns", concerns),
            Kind::Call(call) | Kind::Refusal(call) => {
                let refused = matches!(event.kind, Kind::Refusal(_));
                let arguments = call_fields(out, scratch, call, settings, refused);
                if out.len() + 1 > settings.max_bytes {
                    // Too large: the arguments go.
                    out.truncate(arguments);
                    out.extend_from_slice(b",\"truncated\":true");
                }
            }
        }
        out.push(b'}');
        if out.len() > settings.max_bytes {
            // Still too large (a huge search or description list): who and what only.
            out.truncate(head);
            out.extend_from_slice(b",\"truncated\":true}");
        }
        out
    }
}

/// `,"<name>":` and `value`'s JSON.
fn field<T: Serialize + ?Sized>(out: &mut Vec<u8>, name: &str, value: &T) {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
    json(out, value);
}

/// `value`'s JSON (into a `Vec`, which cannot fail to take it).
fn json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let _ = serde_json::to_writer(out, value);
}

/// A call's own fields (all but the closing brace); returns where its
/// arguments begin, to leave them out of a line too large.
fn call_fields(out: &mut Vec<u8>, scratch: &mut Vec<u8>, call: &Call, settings: &Settings, refused: bool) -> usize {
    static EMPTY: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    let entry = &call.entry;
    field(out, "tool", entry.exposed.as_str());
    field(out, "upstream_tool", entry.original.as_str());
    field(out, "upstream", &*call.upstream);
    field(out, "digest", &*entry.digest);
    field(out, "granted", &call.granted);
    field(out, "routed", &call.routed);
    if refused {
        field(out, "outcome", "refused");
        field(out, "reason", call.outcome);
    } else {
        field(out, "outcome", call.outcome);
        if let Some(bytes) = call.result_bytes {
            field(out, "result_bytes", &bytes);
        }
    }
    field(out, "latency_ms", &(call.latency.as_secs_f64() * 1000.0));
    // The digest of the arguments' JSON as sent (key order kept): not their
    // canonical form, which would cost each call about 2 µs more (`cargo
    // bench --bench audit`); the identical-call breaker, which must not tell
    // reordered arguments apart, digests the canonical form.
    let arguments = call.arguments.as_ref().unwrap_or_else(|| EMPTY.get_or_init(|| Value::Object(Map::new())));
    json(scratch, arguments);
    let mut digest = *b"sha256:0000000000000000000000000000000000000000000000000000000000000000";
    let _ = hex::encode_to_slice(crate::config::sha256(scratch), &mut digest[7..]);
    out.extend_from_slice(b",\"arguments_digest\":\"");
    out.extend_from_slice(&digest);
    out.push(b'"');
    let start = out.len();
    match settings.arguments {
        AuditArguments::None => {}
        // As sent: the JSON just digested.
        AuditArguments::Full => {
            out.extend_from_slice(b",\"arguments\":");
            out.extend_from_slice(scratch);
        }
        AuditArguments::Redacted => {
            let schema = entry.full.get("inputSchema");
            field(out, "arguments", &Redacted { arguments, schema, words: &settings.redact });
        }
    }
    start
}

/// The time as RFC 3339 (UTC, milliseconds), its text to the second made
/// once a second.
#[derive(Default)]
struct Clock {
    /// The second of `text`, since the epoch.
    second: Option<u64>,
    /// `YYYY-MM-DDTHH:MM:SS`.
    text: String,
}

/// The last second RFC 3339 can write (9999-12-31T23:59:59Z).
const LAST_SECOND: u64 = 253_402_300_799;

impl Clock {
    fn push(&mut self, out: &mut Vec<u8>, time: SystemTime) {
        // A clock before 1970 or after 9999 writes the nearest time it can.
        let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
        let (second, millis) = match since.as_secs() {
            s if s > LAST_SECOND => (LAST_SECOND, 999),
            s => (s, since.subsec_millis()),
        };
        if self.second != Some(second) {
            let text = humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(second)).to_string();
            self.text.clear();
            self.text.push_str(text.trim_end_matches('Z'));
            self.second = Some(second);
        }
        out.extend_from_slice(self.text.as_bytes());
        // `millis` < 1000: three digits.
        out.extend_from_slice(&[b'.', digit(millis / 100), digit(millis / 10), digit(millis), b'Z']);
    }
}

/// The last decimal digit of `n`.
fn digit(n: u32) -> u8 {
    b'0' + (n % 10) as u8
}
