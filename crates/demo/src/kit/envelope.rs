//! What a kit application reads from a request of the 2026-07-28 revision:
//! the per-request envelope in `params._meta` (the client's capabilities and
//! log level for this one request) and the retry fields of a multi-round-trip
//! request (`inputResponses`, `requestState`).
//!
//! The engine decides the era and validates the envelope; the kit only reads
//! it, from the params the engine hands over unchanged. A request is of the
//! 2026 era when its `_meta` names a protocol version, as the spec's
//! backward-compatibility rules say; everything else is a session-era
//! request and keeps the session's capabilities and `logging/setLevel` level.

use serde_json::{Map, Value, json};
use toolgate_mcp::protocol::modern::{meta, result};

use super::level::LogLevel;

/// How long a 2026-era client may reuse a list or `resources/read` result
/// of the kit, in milliseconds. Short: tools can change at run time (the
/// fixture's dynamic tools), and `subscriptions/listen` tells listeners
/// sooner.
pub const CACHE_TTL_MS: u64 = 60_000;

/// A request's params, seen through the 2026-07-28 envelope.
#[derive(Debug, Clone, Default)]
pub struct Envelope {
    /// The params other than `arguments` (`name`, `_meta`, the retry fields).
    params: Map<String, Value>,
}

impl Envelope {
    /// The envelope of a request with these params (`arguments` left out by
    /// the caller where it took them).
    pub fn new(params: Map<String, Value>) -> Self {
        Self { params }
    }

    /// The envelope of optional params (anything but an object has none).
    pub fn of(params: Option<&Value>) -> Self {
        match params {
            Some(Value::Object(p)) => Self::new(p.clone()),
            _ => Self::default(),
        }
    }

    /// `params._meta`, if it is an object.
    pub fn meta(&self) -> Option<&Map<String, Value>> {
        self.params.get("_meta").and_then(Value::as_object)
    }

    /// Whether this is a 2026-07-28 (sessionless) request: its `_meta` names
    /// its protocol version.
    pub fn is_modern(&self) -> bool {
        self.meta().is_some_and(|m| m.contains_key(meta::PROTOCOL_VERSION))
    }

    /// The capabilities the client declared for this request (2026 era); an
    /// absent or malformed declaration declares nothing.
    pub fn client_capabilities(&self) -> Value {
        self.meta()
            .and_then(|m| m.get(meta::CLIENT_CAPABILITIES))
            .filter(|c| c.is_object())
            .cloned()
            .unwrap_or_else(|| json!({}))
    }

    /// The lowest level the client wants logged for this request (2026 era);
    /// `None`: no log messages at all.
    pub fn log_level(&self) -> Option<LogLevel> {
        self.meta().and_then(|m| m.get(meta::LOG_LEVEL)).and_then(Value::as_str).and_then(LogLevel::parse)
    }

    /// `params.inputResponses` as sent (`Some(Null)` for an explicit null).
    pub fn input_responses(&self) -> Option<&Value> {
        self.params.get(result::INPUT_RESPONSES)
    }

    /// `params.requestState` as sent.
    pub fn request_state(&self) -> Option<&Value> {
        self.params.get(result::REQUEST_STATE)
    }
}
