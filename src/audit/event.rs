//! The events, as built on the request path: owned, cheap to build (shared
//! strings, the arguments moved or cloned once), serialized by the writer.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::catalog::ToolEntry;
use crate::config::ConcernValues;

/// One event, and when it happened.
pub struct Event {
    pub time: SystemTime,
    pub kind: Kind,
}

impl Event {
    /// `kind`, now.
    pub fn now(kind: Kind) -> Self {
        Self { time: SystemTime::now(), kind }
    }
}

/// Who asked: the client's identity, its configured name, its session.
#[derive(Clone)]
pub struct Who {
    /// The principal (`jwt:<sub>` for JWT clients).
    pub principal: Arc<str>,
    /// The `[[auth.clients]]` entry (`anonymous` without `[auth]`).
    pub client: Arc<str>,
    /// The session; `None` for a sessionless (2026-07-28) request.
    pub session: Option<Arc<str>>,
}

/// What happened.
pub enum Kind {
    /// Full definitions were served (a read of the descriptions resource,
    /// or the describe tool): the tools and the digest of each.
    Describe { who: Who, tools: Vec<(String, Arc<str>)> },
    /// A call of a catalog tool was answered.
    Call(Box<Call>),
    /// A call was refused before it reached its upstream.
    Refusal(Box<Call>),
    /// The search tool answered `query` with `returned`.
    Search { who: Who, query: String, returned: Vec<String> },
    /// A tool's definition drifted from the lock.
    Drift { upstream: Arc<str>, tool: String, kind: &'static str },
    /// A session's concern configuration changed (`concerns/update`, or
    /// concerns sent in `notifications/initialized`): the values it set now
    /// (`None`: it has no configuration).
    Concerns { who: Who, concerns: Option<ConcernValues> },
}

impl Kind {
    /// The event's `type`, as its line and its log record name it.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Describe { .. } => "describe",
            Kind::Call(_) => "call",
            Kind::Refusal(_) => "refusal",
            Kind::Search { .. } => "search",
            Kind::Drift { .. } => "drift",
            Kind::Concerns { .. } => "concerns",
        }
    }

    /// Who acted (`None` for drift, which no client caused).
    pub fn who(&self) -> Option<&Who> {
        match self {
            Kind::Describe { who, .. } | Kind::Search { who, .. } | Kind::Concerns { who, .. } => Some(who),
            Kind::Call(call) | Kind::Refusal(call) => Some(&call.who),
            Kind::Drift { .. } => None,
        }
    }
}

/// A call (or its refusal).
pub struct Call {
    pub who: Who,
    /// The tool, as its catalog entry (its exposed name, its upstream's
    /// name for it, its digest, its schema for redaction).
    pub entry: Arc<ToolEntry>,
    /// The upstream's configured name.
    pub upstream: Arc<str>,
    /// Whether a description grant was checked and held (`None`: the tool
    /// needs none, e.g. a passthrough tool or a held call's retry).
    pub granted: Option<bool>,
    /// Whether it came through the call tool of the search listing.
    pub routed: bool,
    /// The arguments as sent (redacted, digested or left out by the writer).
    pub arguments: Option<Value>,
    /// `ok`, `tool_error`, `protocol_error`, or for a refusal why: `gate`,
    /// `rate_limit`, `budget`, `arguments`, `drift_hold`.
    pub outcome: &'static str,
    /// The result's size in bytes, when it passed through as text.
    pub result_bytes: Option<usize>,
    pub latency: Duration,
}
