//! The contract between the server engine and the application behind it.

use std::future::Future;
use std::sync::Arc;

use http::{HeaderMap, HeaderValue};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::caller::Caller;
use super::session::{Downlink, Session};
use crate::jsonrpc::{ErrorObject, Notification, Outcome, Request, Response};
use crate::protocol::Version;

/// What an `initialize` request told the server.
#[derive(Debug, Clone)]
pub struct InitContext {
    /// The revision the engine negotiated for this session.
    pub version: Version,
    /// The `params` of the `initialize` request, as sent.
    pub params: Value,
    /// Who is initializing: the session will belong to this caller.
    pub caller: Caller,
}

/// What a server offers a client in its `initialize` result (the engine
/// adds the negotiated `protocolVersion`).
#[derive(Debug, Clone)]
pub struct ServerOffer {
    /// `capabilities`: what the server honours for this client.
    pub capabilities: Value,
    /// `serverInfo`: the server's identity.
    pub server_info: Value,
    /// `instructions`, if any.
    pub instructions: Option<String>,
}

/// Per-request context handed to [`Handler::request`].
#[derive(Clone)]
pub struct RequestCtx {
    /// Where messages related to this request go (its SSE stream on HTTP).
    pub downlink: Downlink,
    /// Fires when the client cancels the request (`notifications/cancelled`).
    pub cancel: CancellationToken,
    /// The request's span (disabled unless debug logging is on): what the
    /// application handles later on the request's behalf belongs there.
    pub span: tracing::Span,
}

/// The W3C trace context of the HTTP request that carried a client request
/// (its `traceparent` and `tracestate` headers).
#[derive(Debug, Clone)]
pub struct TraceHeaders {
    /// `traceparent`, as sent.
    pub traceparent: HeaderValue,
    /// `tracestate`, if sent.
    pub tracestate: Option<HeaderValue>,
}

impl TraceHeaders {
    /// The trace context of a request with these headers, if it has one.
    pub fn from_headers(headers: &HeaderMap) -> Option<Self> {
        let traceparent = headers.get(crate::protocol::header::TRACEPARENT)?.clone();
        Some(Self { traceparent, tracestate: headers.get(crate::protocol::header::TRACESTATE).cloned() })
    }
}

/// The application served by the engine.
pub trait Handler: Send + Sync + 'static {
    /// Per-session application state.
    type State: Send + Sync + 'static;

    /// Says what the server offers this client and creates the session's
    /// state (the engine negotiated `ctx.version` and answers `initialize`).
    fn initialize(
        self: &Arc<Self>,
        ctx: &InitContext,
    ) -> impl Future<Output = Result<(ServerOffer, Self::State), ErrorObject>> + Send;

    /// Answers a request. Messages produced while answering (progress, logs,
    /// server-to-client requests) go to `ctx.downlink`.
    fn request(
        self: &Arc<Self>,
        session: &Arc<Session<Self::State>>,
        request: Request,
        ctx: RequestCtx,
    ) -> impl Future<Output = Outcome> + Send;

    /// Called with a request's span, when it is enabled, before the request
    /// runs (and before the span is entered): the application may make it
    /// part of the client's trace. `remote` is the trace context of the HTTP
    /// request that carried it, if any. Does nothing by default.
    fn link_span(self: &Arc<Self>, span: &tracing::Span, request: &Request, remote: Option<&TraceHeaders>) {
        let _ = (span, request, remote);
    }

    /// Takes a client notification the engine does not handle itself.
    fn notification(
        self: &Arc<Self>,
        session: &Arc<Session<Self::State>>,
        notification: Notification,
    ) -> impl Future<Output = ()> + Send;

    /// A client response to a request the engine did not send itself (an
    /// application that allocates its own request ids). Ignored by default.
    fn response(
        self: &Arc<Self>,
        session: &Arc<Session<Self::State>>,
        response: Response,
    ) -> impl Future<Output = ()> + Send {
        let _ = (session, response);
        async {}
    }

    /// The session ended (client `DELETE`, idle expiry or shutdown): release
    /// what it holds.
    fn closed(self: &Arc<Self>, session: Arc<Session<Self::State>>) -> impl Future<Output = ()> + Send;
}
