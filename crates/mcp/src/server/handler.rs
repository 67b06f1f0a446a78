//! The contract between the server engine and the application behind it.

use std::any::Any;
use std::future::Future;
use std::sync::Arc;

use parking_lot::Mutex;

use http::{HeaderMap, HeaderValue};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::backend::Stored;
use super::caller::Caller;
use super::engine::Listen;
use super::session::{Downlink, Session};
use crate::jsonrpc::{ErrorObject, Notification, Outcome, Request};
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
    /// The id the session gets if the application accepts it (its
    /// `Mcp-Session-Id`), so that its state may name it (a shared store).
    pub session_id: Arc<str>,
    /// What [`Handler::hold`] took for this session when its connection
    /// opened (legacy HTTP+SSE), if anything: the application takes it over
    /// instead of taking a place again.
    pub held: Held,
}

/// What an application's [`Handler::hold`] took, type-erased (the engine
/// never looks inside), until the connection's `initialize` takes it back.
#[derive(Clone, Default)]
pub struct Held(Arc<Mutex<Option<Box<dyn Any + Send + Sync>>>>);

impl Held {
    /// Something held for the application.
    pub fn new(value: Box<dyn Any + Send + Sync>) -> Self {
        Self(Arc::new(Mutex::new(Some(value))))
    }

    /// Takes what is held, if it is a `T` (once).
    pub fn take<T: Any>(&self) -> Option<T> {
        let mut slot = self.0.lock();
        if !slot.as_ref().is_some_and(|v| v.is::<T>()) {
            return None;
        }
        slot.take().and_then(|v| v.downcast::<T>().ok()).map(|v| *v)
    }
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.lock().is_some() { "Held(..)" } else { "Held(empty)" })
    }
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

/// What a sessionless (2026-07-28, "modern") request tells the server about
/// its client: the `_meta` envelope every such request carries, and who sent
/// it. There is no session behind it: the application builds what the one
/// request needs from this ([`Handler::sessionless`]) and drops it after.
#[derive(Debug, Clone)]
pub struct ModernContext {
    /// The request's revision (one of [`modern::VERSIONS`](crate::protocol::modern::VERSIONS)).
    pub version: String,
    /// `clientCapabilities`, for this request only.
    pub capabilities: Value,
    /// `clientInfo`, or `null` when the client sent none.
    pub client_info: Value,
    /// `logLevel`: the lowest level of `notifications/message` the client
    /// wants on this request's stream; none at all without one.
    pub log_level: Option<String>,
    /// Who sent the request (as [`Admit`](super::http::Admit) decided).
    pub caller: Caller,
    /// The request's `Mcp-Param-*` headers (SEP-2243: arguments a tool's
    /// schema mirrors in headers with `x-mcp-header`), as sent. `None` when
    /// the transport has no headers (stdio); over HTTP an empty list (no
    /// allocation) when the request carries none. The engine leaves them to
    /// the application, which knows the schemas: to check them against the
    /// arguments, and to forward those it does not know.
    pub param_headers: Option<Vec<(http::HeaderName, HeaderValue)>>,
}

/// `cacheScope` of a modern cacheable result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheScope {
    /// Any cache may serve it to anyone.
    Public,
    /// It may differ by authorization context: caches must not share it.
    Private,
}

impl CacheScope {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheScope::Public => crate::protocol::modern::result::PUBLIC,
            CacheScope::Private => crate::protocol::modern::result::PRIVATE,
        }
    }
}

/// The cache hints of a modern cacheable result (`ttlMs`, `cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHints {
    /// How long the result stays fresh, in milliseconds.
    pub ttl_ms: u64,
    /// Who may share it.
    pub scope: CacheScope,
}

impl Default for CacheHints {
    /// Not to be reused without asking again, by anyone.
    fn default() -> Self {
        Self { ttl_ms: 0, scope: CacheScope::Public }
    }
}

/// What a server says in its `server/discover` result (the engine adds
/// `supportedVersions` and `resultType`, and `serverInfo` goes in `_meta`).
#[derive(Debug, Clone)]
pub struct Discovery {
    /// `capabilities`, `serverInfo` and `instructions`, as for `initialize`.
    pub offer: ServerOffer,
    /// The discover result's own cache hints.
    pub hints: CacheHints,
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
        Self::from_values(
            headers.get(crate::protocol::header::TRACEPARENT),
            headers.get(crate::protocol::header::TRACESTATE),
        )
    }

    /// The trace context of a request whose `traceparent` and `tracestate`
    /// headers (the first value of each) were already found.
    pub fn from_values(traceparent: Option<&HeaderValue>, tracestate: Option<&HeaderValue>) -> Option<Self> {
        Some(Self { traceparent: traceparent?.clone(), tracestate: tracestate.cloned() })
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

    /// Takes what a session of `caller` will need (a per-caller session
    /// place), for a connection that is open before its session exists
    /// (legacy HTTP+SSE, from `GET /sse` to its `initialize`), so that the
    /// application's per-caller limits apply to open connections and not
    /// only to sessions. What it returns comes back in
    /// [`InitContext::held`] at that connection's `initialize`, and is
    /// dropped if the connection ends first. `Err` refuses the connection.
    /// Nothing by default.
    fn hold(self: &Arc<Self>, caller: &Caller) -> Result<Option<Box<dyn Any + Send + Sync>>, ErrorObject> {
        let _ = caller;
        Ok(None)
    }

    /// Answers `server/discover` for a modern client: what the server offers
    /// `ctx`'s caller. Must not create per-client state. By default the
    /// application serves no modern revision: `-32022` naming the
    /// handshake-era revisions, which sends a dual-era client to `initialize`.
    fn discover(self: &Arc<Self>, ctx: &ModernContext) -> impl Future<Output = Result<Discovery, ErrorObject>> + Send {
        let refused = legacy_only(&ctx.version);
        async move { Err(refused) }
    }

    /// Whether the application serves the sessionless era (it implements
    /// [`Handler::discover`] and [`Handler::sessionless`]). A stdio
    /// connection to one that does not is a handshake-era connection from
    /// its first byte, so a client's `server/discover` probe cannot pin it to
    /// an era its `initialize` would then be refused in. `false` by default.
    fn serves_modern(&self) -> bool {
        false
    }

    /// Builds the state one sessionless (modern) request runs with: the
    /// engine then hands the request to [`Handler::request`] with a
    /// transient [`Session`] holding it ([`Session::modern`] says so), and
    /// drops both once it is answered ([`Handler::closed`] is not called).
    /// By default refused like [`Handler::discover`].
    fn sessionless(
        self: &Arc<Self>,
        ctx: &ModernContext,
    ) -> impl Future<Output = Result<Self::State, ErrorObject>> + Send {
        let refused = legacy_only(&ctx.version);
        async move { Err(refused) }
    }

    /// The server's identity (`serverInfo`: `name`, `version`, …), which the
    /// engine puts in `_meta["io.modelcontextprotocol/serverInfo"]` of every
    /// result of a modern request (asked once, when the engine starts). `None`
    /// by default: results keep the `_meta` the application gave them.
    fn server_info(&self) -> Option<Value> {
        None
    }

    /// The cache hints of a cacheable result for a modern request (the list
    /// methods and `resources/read`), where the result has none of its own.
    /// Public and not to be reused by default.
    fn cache_hints(self: &Arc<Self>, session: &Arc<Session<Self::State>>, method: &str) -> CacheHints {
        let _ = (session, method);
        CacheHints::default()
    }

    /// Whether the application serves `subscriptions/listen`
    /// ([`Handler::listen`]). Without it a modern client's listen gets
    /// `-32601` (HTTP 404) and `server/discover` loses every `listChanged`
    /// and resource `subscribe` of the application's capabilities (they
    /// would need a listen stream); with it, the capabilities are declared
    /// as the application offers them. `false` by default.
    fn serves_listen(&self) -> bool {
        false
    }

    /// Holds one `subscriptions/listen` stream of a modern client (only
    /// called when [`Handler::serves_listen`]): acknowledge the honoured
    /// subset of `listen.requested()` first ([`Listen::acknowledge`]), then
    /// send notifications of the requested types through
    /// [`Listen::sink`] (the engine tags each with the `subscriptionId`),
    /// and return once [`Listen::ended`] resolves (the client closed or
    /// cancelled the stream, or the server shuts down), or earlier to end
    /// the stream from the server side. `Ok` lets the engine end the
    /// stream gracefully (its result); `Err` answers the request with that
    /// error instead (e.g. before acknowledging: too many listeners).
    /// `session` is the request's transient session, alive while the
    /// stream is. Refused with `-32601` by default.
    fn listen(
        self: &Arc<Self>,
        session: &Arc<Session<Self::State>>,
        listen: Listen,
    ) -> impl Future<Output = Result<(), ErrorObject>> + Send {
        let _ = (session, listen);
        async { Err(super::engine::listen_not_served()) }
    }

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

    /// Takes a client notification the engine does not handle itself, and
    /// `notifications/initialized` after the engine marked the session
    /// initialized (its params may carry extensions).
    fn notification(
        self: &Arc<Self>,
        session: &Arc<Session<Self::State>>,
        notification: Notification,
    ) -> impl Future<Output = ()> + Send;

    /// The session ended here (client `DELETE`, idle expiry, shutdown, or
    /// another process told this one it ended): release what it holds here.
    fn closed(self: &Arc<Self>, session: Arc<Session<Self::State>>) -> impl Future<Output = ()> + Send;

    /// The state of a session this process does not hold, which the session
    /// store's [`SessionBackend`](super::SessionBackend) found (adoption):
    /// rebuilt from what the application stored of it ([`Stored::record`],
    /// its own type). `Ok(None)`: not served here after all (its client no
    /// longer may, say); the client gets 404. Sessions are not shared by
    /// default, and nothing is restored: `Ok(None)`.
    fn restore(
        self: &Arc<Self>,
        id: &str,
        stored: Stored,
        caller: &Caller,
    ) -> Result<Option<Self::State>, ErrorObject> {
        let _ = (id, stored, caller);
        Ok(None)
    }
}

/// The refusal of an application that serves no modern revision.
fn legacy_only(requested: &str) -> ErrorObject {
    let supported: Vec<&str> = Version::ALL.iter().rev().map(|v| v.as_str()).collect();
    ErrorObject::new(
        crate::protocol::modern::code::UNSUPPORTED_PROTOCOL_VERSION,
        format!("This server speaks only the initialize handshake ({}); send initialize", supported.join(", ")),
    )
    .with_data(serde_json::json!({"supported": supported, "requested": requested}))
}
