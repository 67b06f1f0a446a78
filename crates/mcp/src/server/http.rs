//! The Streamable HTTP transport (MCP 2025-03-26 and later): `POST`, `GET`
//! and `DELETE` on one endpoint.
//!
//! A POSTed request is answered with plain JSON when its response is the
//! first thing ready, and with an SSE stream when something related to it
//! (progress, a log message, a sampling request) has to go out first. Either
//! way the request is handled on its own task, so a client that disconnects
//! does not cancel the work upstream (the spec says a disconnect is not a
//! cancellation).

mod admit;
mod answer;
mod app;
mod body;
mod grace;
mod guard;
pub mod health;
mod legacy;
mod listener;
mod post;
mod reply;
mod sessionless;
mod stream;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::any;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use hyper::body::Incoming;

pub use admit::Admit;
pub use app::App;
pub use body::BodyError;
pub use guard::{Guard, Refused};
pub use listener::{
    BadNetwork, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_KEEP_ALIVE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, ListenOptions,
    REFUSAL_WINDOW, REFUSALS_BEFORE_CLOSE, Server, TrustedProxies, parse_network,
};

/// Default time a request body may take to arrive, in total.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

use self::body::ReadBody;
use self::reply::{Reply, boxed};
use super::caller::Caller;
use super::engine::Engine;
use super::handler::Handler;
use super::session::Session;
use crate::jsonrpc::codes;
use crate::protocol::{self, Version};

/// A listener whose accepted connections have `TCP_NODELAY` set. An SSE
/// answer is several small writes (the priming event, then the response);
/// with Nagle's algorithm the second one waits for the client's delayed ACK,
/// which costs 40 ms per streamed answer on Linux.
pub fn no_delay(
    listener: tokio::net::TcpListener,
) -> axum::serve::TapIo<tokio::net::TcpListener, fn(&mut tokio::net::TcpStream)> {
    use axum::serve::ListenerExt as _;
    let set: fn(&mut tokio::net::TcpStream) = |tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY on a connection");
        }
    };
    listener.tap_io(set)
}

/// What the HTTP transport needs to know.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Endpoint path, e.g. `/mcp`.
    pub path: String,
    /// `Host`/`Origin` validation.
    pub guard: Guard,
    /// Largest accepted body, in bytes (413 above it).
    pub max_body_bytes: usize,
    /// How long a request body may take to arrive, in total (408 after it).
    pub body_read_timeout: Duration,
    /// SSE keep-alive interval.
    pub keep_alive: Duration,
    /// Also serve the legacy HTTP+SSE transport at `/sse` and `/messages`.
    pub legacy_sse: bool,
    /// Decides who each request comes from, before its body is read
    /// (authentication); `None`: everyone is [`Caller::anonymous`].
    pub admit: Option<Arc<dyn Admit>>,
}

struct HttpState<H: Handler> {
    engine: Arc<Engine<H>>,
    options: HttpOptions,
    legacy: Arc<legacy::Connections>,
    /// When streaming graces of `POST` answers end.
    grace: grace::GraceClock,
}

/// The axum router serving `engine` at `options.path`.
pub fn router<H: Handler>(engine: Arc<Engine<H>>, options: HttpOptions) -> Router {
    build(engine, options).1
}

/// What a listener serves for `engine` at `options.path`: the router of
/// [`router`], with the endpoint's requests answered without it (see
/// [`App`]).
pub fn app<H: Handler>(engine: Arc<Engine<H>>, options: HttpOptions) -> App {
    let path = options.path.clone();
    let (state, router) = build(engine, options);
    App::new(&path, state, router)
}

impl<H: Handler> app::Serve for HttpState<H> {
    fn serve(self: Arc<Self>, request: http::Request<Incoming>) -> futures::future::BoxFuture<'static, Reply> {
        crate::boxed::pinned(|| endpoint::<H, _>(State(self), request))
    }
}

/// The transport's state, and the router serving it.
fn build<H: Handler>(engine: Arc<Engine<H>>, options: HttpOptions) -> (Arc<HttpState<H>>, Router) {
    let path = options.path.clone();
    let legacy_sse = options.legacy_sse;
    let state = Arc::new(HttpState { engine, options, legacy: Arc::default(), grace: Default::default() });
    // The MCP endpoint checks `Host`/`Origin` itself (a middleware layer
    // costs a boxed future and a service clone on every request); the other
    // routes go through the same check as a layer.
    let mut router = Router::new();
    if legacy_sse {
        router = router
            .route(legacy::SSE_PATH, axum::routing::get(legacy::open::<H>))
            .route(legacy::MESSAGES_PATH, axum::routing::post(legacy::post::<H>));
    }
    let router = router
        .layer(middleware::from_fn_with_state(state.clone(), guard_layer::<H>))
        .route(&path, any(endpoint::<H, Body>))
        .with_state(state.clone());
    (state, router)
}

/// The DNS-rebinding check: a 403 for a refused `Host` or `Origin`.
fn refused<H: Handler, B>(state: &HttpState<H>, request: &http::Request<B>) -> Option<Response> {
    let why = state.options.guard.check(request.headers(), request.uri()).err()?;
    tracing::warn!(%why, "request refused (DNS-rebinding protection)");
    Some(reply::error(StatusCode::FORBIDDEN, codes::SERVER_ERROR, &format!("Forbidden: {why}")))
}

async fn guard_layer<H: Handler>(State(state): State<Arc<HttpState<H>>>, request: Request, next: Next) -> Response {
    if let Some(response) = refused(&state, &request) {
        return response;
    }
    next.run(request).await
}

/// The MCP endpoint. `B`: the request's body, hyper's own from the listener
/// (`app::Serve`), axum's boxed one through the router.
async fn endpoint<H: Handler, B: ReadBody>(
    State(state): State<Arc<HttpState<H>>>,
    mut request: http::Request<B>,
) -> Reply {
    if let Some(response) = refused(&state, &request) {
        return boxed(response);
    }
    let caller = match admit(&state, request.headers_mut()).await {
        Ok(caller) => caller,
        Err(refusal) => return boxed(refusal),
    };
    let response = match *request.method() {
        // The one answer that may go out unboxed.
        Method::POST => return post::handle(state, request, caller).await,
        Method::GET | Method::DELETE if !request.headers().contains_key(protocol::header::SESSION_ID) => {
            sessionless::not_allowed()
        }
        Method::GET => stream::open(state, request.headers(), &caller).await,
        Method::DELETE => delete(state, request.headers(), &caller).await,
        _ => {
            let mut r = reply::error(StatusCode::METHOD_NOT_ALLOWED, codes::SERVER_ERROR, "Method not allowed");
            r.headers_mut().insert(header::ALLOW, http::HeaderValue::from_static("GET, POST, DELETE"));
            r
        }
    };
    boxed(response)
}

/// Who a request comes from, or the application's refusal (see [`Admit`]).
async fn admit<H: Handler>(state: &HttpState<H>, headers: &mut HeaderMap) -> Result<Caller, Response> {
    admit::admit(state.options.admit.as_deref(), headers).await
}

async fn delete<H: Handler>(state: Arc<HttpState<H>>, headers: &HeaderMap, caller: &Caller) -> Response {
    let session = match session_of(&state, headers, caller).await {
        Ok(s) => s,
        Err(r) => return *r,
    };
    if let Err(refused) = state.engine.delete(&session).await {
        return *refusal_reply(refused);
    }
    tracing::debug!(session = session.id(), "session deleted by the client");
    StatusCode::OK.into_response_empty()
}

/// A request the transport refuses before the engine sees it.
#[derive(Debug)]
struct Reject {
    status: StatusCode,
    code: i64,
    message: String,
}

impl Reject {
    fn new(status: StatusCode, code: i64, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into() }
    }

    fn into_response(self) -> Response {
        reply::error(self.status, self.code, &self.message)
    }
}

/// The `Mcp-Session-Id` a request names.
fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers.get(protocol::header::SESSION_ID).map(|v| v.to_str().unwrap_or_default())
}

/// The live session of `caller` a `GET` or `DELETE` names, or the answer
/// refusing it (400 without the header, 404 for an unknown session or
/// another caller's).
async fn session_of<H: Handler>(
    state: &HttpState<H>,
    headers: &HeaderMap,
    caller: &Caller,
) -> Result<Arc<Session<H::State>>, Box<Response>> {
    check_version_header(headers).map_err(|r| Box::new(r.into_response()))?;
    state.engine.find_required(session_id(headers), caller).await.map_err(refusal_reply)
}

/// The answer to a `GET` or `DELETE` the engine refused.
fn refusal_reply((refusal, response): (super::Refusal, crate::jsonrpc::Response)) -> Box<Response> {
    let status = post::refusal_status(Some(refusal));
    Box::new(post::refusal_response(status, Some(refusal), &crate::jsonrpc::Message::Response(response)))
}

/// Rejects an `MCP-Protocol-Version` header naming a revision toolgate does not
/// speak (400, as the spec requires).
fn check_version_header(headers: &HeaderMap) -> Result<(), Reject> {
    check_version_value(headers.get(protocol::header::PROTOCOL_VERSION))
}

/// [`check_version_header`] on the header's value, for a caller that has
/// it already (a custom header's lookup hashes its name).
fn check_version_value(value: Option<&http::HeaderValue>) -> Result<(), Reject> {
    match value {
        None => Ok(()),
        Some(v) => match v.to_str().ok().and_then(Version::parse) {
            Some(_) => Ok(()),
            None => Err(Reject::new(
                StatusCode::BAD_REQUEST,
                codes::SERVER_ERROR,
                format!(
                    "Bad Request: Unsupported protocol version {:?}; supported: {}",
                    v.to_str().unwrap_or("?"),
                    Version::ALL.map(Version::as_str).join(", ")
                ),
            )),
        },
    }
}

/// A media range's or `Content-Type`'s type: what comes before its
/// parameters, trimmed. A byte search: these are read on every request.
fn media_type(value: &[u8]) -> &[u8] {
    match value.iter().position(|&b| b == b';') {
        Some(semicolon) => value[..semicolon].trim_ascii(),
        None => value.trim_ascii(),
    }
}

/// Whether an `Accept` header admits `wanted` (`type/subtype`).
fn accepts(headers: &HeaderMap, wanted: &str) -> bool {
    accepts_all(headers, &[wanted])
}

/// Whether an `Accept` header admits every type in `wanted` (the first 32
/// count). Runs on every POST, so it reads the header once and compares in
/// place instead of lowercasing copies.
fn accepts_all(headers: &HeaderMap, wanted: &[&str]) -> bool {
    accepts_all_of(|| headers.get_all(header::ACCEPT).iter(), wanted)
}

/// [`accepts_all`] over the `Accept` header's values (each call of `values`
/// walks them from the start).
fn accepts_all_of<'v, I: Iterator<Item = &'v HeaderValue>>(values: impl Fn() -> I, wanted: &[&str]) -> bool {
    // What the SDKs send on every POST, answered without parsing it.
    const BOTH: &[u8] = b"application/json, text/event-stream";
    let mut first = values();
    if let (Some(only), None) = (first.next(), first.next())
        && only.as_bytes() == BOTH
        && wanted.iter().all(|w| matches!(*w, "application/json" | "text/event-stream"))
    {
        return true;
    }
    let wanted = &wanted[..wanted.len().min(32)];
    // One bit per wanted type; none wanted: every header admits them.
    let all = u32::MAX.checked_shr(32 - wanted.len() as u32).unwrap_or(0);
    let mut seen = 0u32;
    for value in values() {
        for item in value.as_bytes().split(|&b| b == b',') {
            let media = media_type(item);
            for (i, w) in wanted.iter().enumerate() {
                let kind = w.split_once('/').map_or(*w, |(k, _)| k);
                if media.eq_ignore_ascii_case(w.as_bytes())
                    || media == b"*/*"
                    || media.strip_suffix(b"/*").is_some_and(|k| k.eq_ignore_ascii_case(kind.as_bytes()))
                {
                    seen |= 1 << i;
                }
            }
            if seen == all {
                return true;
            }
        }
    }
    seen == all
}

trait EmptyResponse {
    fn into_response_empty(self) -> Response;
}

impl EmptyResponse for StatusCode {
    fn into_response_empty(self) -> Response {
        let mut r = Response::new(axum::body::Body::empty());
        *r.status_mut() = self;
        r
    }
}

#[cfg(test)]
mod tests;
