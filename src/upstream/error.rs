//! Why a call to an upstream failed.

use std::sync::Arc;
use std::time::Duration;

use crate::jsonrpc::{ErrorObject, codes};

/// A failure on an upstream leg. Each maps to a JSON-RPC error the client sees.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamError {
    /// The upstream is not connected (not started yet, failed, restarting).
    #[error("upstream '{upstream}' is unavailable: {reason}")]
    Unavailable { upstream: Arc<str>, reason: String },
    /// The process could not be started, or the handshake failed.
    #[error("upstream '{upstream}' failed to start: {reason}")]
    Start { upstream: Arc<str>, reason: String },
    /// No answer within the configured timeout.
    #[error("upstream '{upstream}' did not answer within {}", humantime::format_duration(*.after))]
    Timeout { upstream: Arc<str>, after: Duration },
    /// The connection closed (process exited, stream ended) before the answer.
    #[error("upstream '{upstream}' closed the connection: {reason}")]
    Closed { upstream: Arc<str>, reason: String },
    /// The upstream forgot our session (HTTP 404); a new one is needed.
    #[error("upstream '{upstream}' ended its session")]
    SessionExpired { upstream: Arc<str> },
    /// The HTTP exchange failed.
    #[error("upstream '{upstream}' HTTP error: {detail}")]
    Http { upstream: Arc<str>, detail: String },
    /// The upstream broke the protocol.
    #[error("upstream '{upstream}' protocol error: {detail}")]
    Protocol { upstream: Arc<str>, detail: String },
    /// The client cancelled the request.
    #[error("the request was cancelled")]
    Cancelled,
}

impl UpstreamError {
    /// The JSON-RPC error the downstream client receives.
    pub fn to_error_object(&self) -> ErrorObject {
        let code = match self {
            UpstreamError::Unavailable { .. } | UpstreamError::Start { .. } => codes::UPSTREAM_UNAVAILABLE,
            UpstreamError::Timeout { .. } => codes::UPSTREAM_TIMEOUT,
            UpstreamError::Closed { .. } | UpstreamError::SessionExpired { .. } => codes::UPSTREAM_CLOSED,
            UpstreamError::Http { .. } | UpstreamError::Protocol { .. } => codes::INTERNAL_ERROR,
            UpstreamError::Cancelled => codes::SERVER_ERROR,
        };
        ErrorObject::new(code, self.to_string())
    }
}
