//! JSON-RPC error objects and the codes toolgate uses.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Error codes: the JSON-RPC reserved ones, the MCP ones, and toolgate's own
/// (in the `-32000..-32099` server-error range).
pub mod codes {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters (also: unknown tool, bad cursor).
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Generic transport-level rejection (the TS SDK's choice for bad HTTP requests).
    pub const SERVER_ERROR: i64 = -32000;
    /// The `Mcp-Session-Id` names no live session (TS SDK convention).
    pub const SESSION_NOT_FOUND: i64 = -32001;
    /// MCP: the resource does not exist (2025-06-18 .. 2025-11-25).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// toolgate: the upstream that owns the request is not connected.
    pub const UPSTREAM_UNAVAILABLE: i64 = -32010;
    /// toolgate: the upstream did not answer in time.
    pub const UPSTREAM_TIMEOUT: i64 = -32011;
    /// toolgate: the upstream connection closed before answering.
    pub const UPSTREAM_CLOSED: i64 = -32012;
    /// toolgate: every instance of a per-session stdio upstream is in use
    /// (`max_instances`), and none came free within `instance_wait`.
    pub const UPSTREAM_BUSY: i64 = -32013;
    /// toolgate: a limit was reached (too many sessions, for the server or
    /// for this client; too many requests in flight in one session). Like
    /// HTTP 429: the same request may succeed later.
    pub const LIMIT_EXCEEDED: i64 = -32014;
    /// toolgate: the client's call rate limit (`calls_per_minute`) is
    /// exhausted; `data.retryAfterSeconds` says when to retry.
    pub const RATE_LIMITED: i64 = -32015;
    /// toolgate: no credential could be had for the upstream on the
    /// client's behalf (its identity provider refused or did not answer a
    /// token exchange); the call was not sent.
    pub const UPSTREAM_CREDENTIALS: i64 = -32016;
    /// toolgate: the shared state store (Redis, with `[state] redis_url`:
    /// sessionless clients' grants, shared sessions) did not answer in time;
    /// nothing was called or granted, and the same request may succeed later.
    pub const STATE_STORE_UNAVAILABLE: i64 = -32019;
    /// MCP 2025-11-25: URL-mode elicitation is required.
    pub const URL_ELICITATION_REQUIRED: i64 = -32042;
}

/// A JSON-RPC error object (`{"code", "message", "data"?}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message} ({code})")]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error without `data`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), data: None }
    }

    /// Attaches `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32601` for `method`.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(codes::METHOD_NOT_FOUND, format!("Method not found: {method}"))
    }

    /// `-32602` with a message.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_PARAMS, message)
    }

    /// The object as JSON.
    pub fn into_value(self) -> Value {
        serde_json::to_value(self).expect("error objects serialize")
    }
}
