//! MCP protocol revisions and method names.
//!
//! Each leg (a downstream session, an upstream connection) negotiates its own
//! revision; this module only knows which revisions exist and what toolgate
//! supports on each side.

use std::fmt;

pub mod modern;

/// An MCP protocol revision toolgate knows how to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    /// HTTP+SSE era; offered to legacy SSE and stdio clients.
    V2024_11_05,
    /// Streamable HTTP, JSON-RPC batches, tool annotations, audio content.
    V2025_03_26,
    /// `MCP-Protocol-Version` header, elicitation, structured tool output.
    V2025_06_18,
    /// SSE polling, URL elicitation, icons, tasks.
    V2025_11_25,
}

impl Version {
    /// The newest revision toolgate speaks.
    pub const LATEST: Version = Version::V2025_11_25;

    /// Every revision toolgate speaks, oldest first.
    pub const ALL: [Version; 4] =
        [Version::V2024_11_05, Version::V2025_03_26, Version::V2025_06_18, Version::V2025_11_25];

    /// The revision string, e.g. `"2025-06-18"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::V2024_11_05 => "2024-11-05",
            Version::V2025_03_26 => "2025-03-26",
            Version::V2025_06_18 => "2025-06-18",
            Version::V2025_11_25 => "2025-11-25",
        }
    }

    /// Parses a revision string toolgate speaks.
    pub fn parse(s: &str) -> Option<Version> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// The revision a server answers when a client asks for `requested`: the
    /// same one if toolgate speaks it, otherwise toolgate's latest.
    pub fn negotiate(requested: Option<&str>) -> Version {
        requested.and_then(Version::parse).unwrap_or(Version::LATEST)
    }

    /// Whether this revision carries `MCP-Protocol-Version` on HTTP requests.
    pub fn has_version_header(self) -> bool {
        self >= Version::V2025_06_18
    }

    /// Whether JSON-RPC batches are part of this revision.
    pub fn allows_batches(self) -> bool {
        self == Version::V2025_03_26
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The log levels MCP names (RFC 5424's severities), lowest first: what
/// `logging/setLevel` accepts and a modern request's `logLevel` ranks by.
pub const LOG_LEVELS: [&str; 8] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/// Method names toolgate treats specially. Everything else is forwarded.
pub mod method {
    pub const INITIALIZE: &str = "initialize";
    pub const PING: &str = "ping";
    pub const TOOLS_LIST: &str = "tools/list";
    pub const TOOLS_CALL: &str = "tools/call";
    pub const RESOURCES_LIST: &str = "resources/list";
    pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
    pub const RESOURCES_READ: &str = "resources/read";
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
    pub const PROMPTS_LIST: &str = "prompts/list";
    pub const PROMPTS_GET: &str = "prompts/get";
    pub const COMPLETION_COMPLETE: &str = "completion/complete";
    pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
    /// The 2026-07-28 era probe; toolgate answers it like a pre-2026 server.
    pub const SERVER_DISCOVER: &str = "server/discover";

    pub const INITIALIZED: &str = "notifications/initialized";
    pub const CANCELLED: &str = "notifications/cancelled";
    pub const PROGRESS: &str = "notifications/progress";
    pub const MESSAGE: &str = "notifications/message";
    pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
    pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
    pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
    pub const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
    pub const TASKS_GET: &str = "tasks/get";
    pub const TASKS_RESULT: &str = "tasks/result";
    pub const TASKS_CANCEL: &str = "tasks/cancel";
    pub const TASKS_LIST: &str = "tasks/list";
}

/// HTTP header names of the Streamable HTTP transport, as `HeaderName`s so
/// that a lookup hashes the name without parsing it first (a `&str` key is
/// validated and lowercased on every use).
pub mod header {
    use http::HeaderName;

    pub const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
    pub const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
    pub const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
    /// W3C Trace Context: the caller's span (read from clients, sent upstream).
    pub const TRACEPARENT: HeaderName = HeaderName::from_static(TRACEPARENT_KEY);
    /// W3C Trace Context: vendor trace state that goes with `traceparent`.
    pub const TRACESTATE: HeaderName = HeaderName::from_static(TRACESTATE_KEY);
    /// The same names as text, as trace propagators and `_meta` spell them.
    pub const TRACEPARENT_KEY: &str = "traceparent";
    pub const TRACESTATE_KEY: &str = "tracestate";

    /// A header value's bytes as text: borrowed when they are UTF-8 (always,
    /// in practice), mended with U+FFFD when not. What
    /// `String::from_utf8_lossy` gives, at less cost on the usual value:
    /// these are read on every request.
    pub fn text(value: &[u8]) -> std::borrow::Cow<'_, str> {
        match std::str::from_utf8(value) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(value),
        }
    }
}

#[cfg(test)]
mod tests;
