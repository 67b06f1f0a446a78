//! Why a call to an upstream failed, and whether it may be tried again.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::jsonrpc::{ErrorObject, codes};

/// A failure on an upstream leg. Each maps to a JSON-RPC error the client
/// sees ([`UpstreamError::to_error_object`]); causes are kept as sources, so
/// logs and messages can show the whole chain ([`UpstreamError::report`]).
///
/// Clone, because one failure (a connection closing) fails every call in
/// flight on it: causes are shared.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamError {
    /// The upstream is not connected (not started yet, failed, restarting).
    #[error("upstream '{upstream}' is unavailable")]
    Unavailable { upstream: Arc<str>, source: Cause },
    /// The process could not be started, or the handshake failed.
    #[error("upstream '{upstream}' failed to start")]
    Start { upstream: Arc<str>, source: Cause },
    /// No answer within the configured timeout.
    #[error("upstream '{upstream}' did not answer within {}", humantime::format_duration(*.after))]
    Timeout { upstream: Arc<str>, after: Duration },
    /// The connection closed (process exited, stream ended) before the answer.
    #[error("upstream '{upstream}' closed the connection")]
    Closed { upstream: Arc<str>, source: Cause },
    /// The upstream forgot our session (HTTP 404); a new one is needed.
    #[error("upstream '{upstream}' ended its session")]
    SessionExpired { upstream: Arc<str> },
    /// The HTTP exchange failed.
    #[error("upstream '{upstream}' HTTP error")]
    Http { upstream: Arc<str>, source: Cause },
    /// The upstream broke the protocol.
    #[error("upstream '{upstream}' protocol error")]
    Protocol { upstream: Arc<str>, source: Cause },
    /// The client cancelled the request.
    /// Every instance of a per-session stdio upstream is in use
    /// (`max_instances`), and none came free within `instance_wait`.
    #[error(
        "upstream '{upstream}' is busy: all {max} of its instances serve other sessions (max_instances); none came free within {}; try again later",
        humantime::format_duration(*.waited)
    )]
    Busy { upstream: Arc<str>, max: usize, waited: Duration },
    /// No credential for the client this connection is for (a token
    /// exchange refused, an identity provider down). Nothing was sent.
    #[error("upstream '{upstream}': no credential for this client")]
    Credentials { upstream: Arc<str>, source: Cause },
    #[error("the request was cancelled")]
    Cancelled,
}

/// Whether a failed call may be sent again (on a new connection), judged
/// where the facts are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// The upstream never saw the request (nothing to connect to, or it
    /// refused the session before processing): safe for any method.
    NotSent,
    /// The request went out and no answer came: safe only for methods
    /// without side effects.
    SentNoReply,
    /// Not worth repeating (the client cancelled, the upstream broke the
    /// protocol).
    Never,
}

impl UpstreamError {
    /// The upstream this error is about, if any.
    pub fn upstream(&self) -> Option<&Arc<str>> {
        match self {
            UpstreamError::Unavailable { upstream, .. }
            | UpstreamError::Start { upstream, .. }
            | UpstreamError::Timeout { upstream, .. }
            | UpstreamError::Closed { upstream, .. }
            | UpstreamError::SessionExpired { upstream }
            | UpstreamError::Busy { upstream, .. }
            | UpstreamError::Credentials { upstream, .. }
            | UpstreamError::Http { upstream, .. }
            | UpstreamError::Protocol { upstream, .. } => Some(upstream),
            UpstreamError::Cancelled => None,
        }
    }

    /// Whether (and when) the call may be retried.
    pub fn retry(&self) -> Retry {
        match self {
            UpstreamError::Unavailable { .. } | UpstreamError::Start { .. } | UpstreamError::SessionExpired { .. } => {
                Retry::NotSent
            }
            UpstreamError::Timeout { .. } | UpstreamError::Closed { .. } | UpstreamError::Http { .. } => {
                Retry::SentNoReply
            }
            UpstreamError::Busy { .. } => Retry::NotSent,
            // Asking again at once would ask the identity provider again.
            UpstreamError::Credentials { .. } => Retry::Never,
            UpstreamError::Protocol { .. } | UpstreamError::Cancelled => Retry::Never,
        }
    }

    /// The error and its causes, `outer: inner: …`, for logs and clients.
    pub fn report(&self) -> Report<'_> {
        Report(self)
    }

    /// The JSON-RPC error the downstream client receives.
    pub fn to_error_object(&self) -> ErrorObject {
        let code = match self {
            UpstreamError::Unavailable { .. } | UpstreamError::Start { .. } => codes::UPSTREAM_UNAVAILABLE,
            UpstreamError::Timeout { .. } => codes::UPSTREAM_TIMEOUT,
            UpstreamError::Closed { .. } | UpstreamError::SessionExpired { .. } => codes::UPSTREAM_CLOSED,
            UpstreamError::Http { .. } | UpstreamError::Protocol { .. } => codes::INTERNAL_ERROR,
            UpstreamError::Busy { .. } => codes::UPSTREAM_BUSY,
            UpstreamError::Credentials { .. } => codes::UPSTREAM_CREDENTIALS,
            UpstreamError::Cancelled => codes::SERVER_ERROR,
        };
        ErrorObject::new(code, self.report().to_string())
    }
}

/// An error with its chain of causes (see [`UpstreamError::report`]).
pub struct Report<'a>(&'a dyn std::error::Error);

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(s) = source {
            write!(f, ": {s}")?;
            source = s.source();
        }
        Ok(())
    }
}

/// The error and its causes of any error, `outer: inner: …`.
pub fn report(e: &dyn std::error::Error) -> Report<'_> {
    Report(e)
}

/// The cause of an [`UpstreamError`]: any error, shared.
#[derive(Clone)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync>);

impl Cause {
    /// A cause from an error value (its own sources are kept).
    pub fn new(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(Arc::new(e))
    }

    /// A cause that is just a sentence (the peer said so, a limit was hit).
    pub fn msg(text: impl Into<String>) -> Self {
        Self(Arc::new(Reason(text.into())))
    }
}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// An HTTP answer with an error status and no JSON-RPC answer in its body
/// (the era probe tells a legacy server by it).
#[derive(Debug, thiserror::Error)]
#[error("HTTP {status}: {body}")]
pub struct HttpStatus {
    /// The status.
    pub status: http::StatusCode,
    /// The start of the body.
    pub body: String,
    /// The `WWW-Authenticate` challenge of a 401 (its start), which may name
    /// the upstream's protected-resource metadata.
    pub challenge: Option<String>,
}

impl UpstreamError {
    /// The status of an HTTP answer that carried no JSON-RPC answer.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            UpstreamError::Http { source, .. } => {
                let e: &(dyn std::error::Error + 'static) = &*source.0;
                e.downcast_ref::<HttpStatus>().map(|s| s.status.as_u16())
            }
            _ => None,
        }
    }

    /// Whether the upstream refused the credential (HTTP 401), on this
    /// request or on the handshake of the connection it needed.
    pub fn is_unauthorized(&self) -> bool {
        self.refusal().is_some_and(|s| s.status == http::StatusCode::UNAUTHORIZED)
    }

    /// The `resource_metadata` URL of a 401's `Bearer` challenge (RFC 9728
    /// §5.1): the upstream is an OAuth protected resource.
    pub fn resource_metadata(&self) -> Option<String> {
        let refusal = self.refusal().filter(|s| s.status == http::StatusCode::UNAUTHORIZED)?;
        resource_metadata_of(refusal.challenge.as_deref()?)
    }

    /// The HTTP answer without a JSON-RPC answer this error comes from, on
    /// this request or on the handshake of the connection it needed.
    fn refusal(&self) -> Option<&HttpStatus> {
        let source = match self {
            UpstreamError::Http { source, .. }
            | UpstreamError::Start { source, .. }
            | UpstreamError::Unavailable { source, .. }
            | UpstreamError::Closed { source, .. } => source,
            _ => return None,
        };
        let mut e: Option<&(dyn std::error::Error + 'static)> = Some(&*source.0);
        while let Some(inner) = e {
            if let Some(status) = inner.downcast_ref::<HttpStatus>() {
                return Some(status);
            }
            if let Some(upstream) = inner.downcast_ref::<UpstreamError>() {
                return upstream.refusal();
            }
            if let Some(cause) = inner.downcast_ref::<Cause>() {
                e = Some(&*cause.0);
                continue;
            }
            e = inner.source();
        }
        None
    }
}

/// The `resource_metadata` parameter of a `Bearer` challenge.
pub fn resource_metadata_of(challenge: &str) -> Option<String> {
    let (scheme, params) = challenge.trim().split_once(char::is_whitespace)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let at = params.to_ascii_lowercase().find("resource_metadata=")?;
    let value = params[at + "resource_metadata=".len()..].trim_start();
    let value = match value.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next()?,
        None => value.split([',', ' ']).next()?,
    };
    (!value.is_empty()).then(|| value.to_owned())
}

/// A cause told in words.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Reason(String);

#[cfg(test)]
mod tests;
