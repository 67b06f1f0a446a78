//! The sessionless (2026-07-28) era on the Streamable HTTP endpoint: which
//! era a POST belongs to, and how a modern request is answered.
//!
//! The era is decided per request, body first (as the TypeScript SDK does),
//! in this order:
//!
//! 1. a batch is handshake-era; one with an element claiming the modern era
//!    (`params._meta` naming a protocol version) is refused (400 `-32600`);
//! 2. a response is handshake-era (an answer to a session's request);
//! 3. `initialize` without a claim is handshake-era, unless the
//!    `MCP-Protocol-Version` header names a modern revision (400 `-32020`);
//! 4. anything with a claim is modern (a modern notification: 202, dropped;
//!    cancelling is closing the response stream);
//! 5. without a claim, a header naming a revision that is not a handshake one
//!    makes a malformed modern request (400 `-32602`, the envelope is missing),
//!    or a modern notification (202, dropped);
//! 6. everything else is handshake-era: today's session logic.
//!
//! A modern request never reads, mints nor echoes `Mcp-Session-Id`. Its
//! answer is plain JSON, with the HTTP status its error code calls for, or
//! an SSE stream when something (progress, a log message) goes out first:
//! no event ids, no replay, and closing the stream cancels the request.

use std::convert::Infallible;
use std::sync::Arc;

use axum::response::Response;
use futures::{StreamExt as _, stream};
use http::{HeaderMap, HeaderValue, StatusCode};
use sse_stream::Sse;

use super::grace::STREAM_GRACE;
use super::{EmptyResponse, HttpState, reply};
use crate::jsonrpc::{Body, DecodeError, ErrorObject, Message, Request, Response as RpcResponse, codes};
use crate::protocol::{self, method, modern};
use crate::server::caller::Caller;
use crate::server::engine::{ModernAccepted, RoutingHeaders};
use crate::server::handler::{Handler, TraceHeaders};
use crate::server::session::{Downlink, Frame, Session};

/// Which era a POSTed body belongs to.
pub(super) enum Era {
    /// The handshake era: the body, for the session logic.
    Legacy(Result<Body, DecodeError>),
    /// A modern request.
    Modern(Request),
    /// Answered already (a refusal, or a dropped notification).
    Answered(Response),
}

/// Decides the era of a POSTed body (see the module doc).
pub(super) fn classify(body: Result<Body, DecodeError>, headers: &HeaderMap) -> Era {
    // Borrowed: a valid header is not copied on every POST.
    let raw = headers.get(protocol::header::PROTOCOL_VERSION).map(|v| String::from_utf8_lossy(v.as_bytes()));
    let header = raw.as_deref().map(|v| v.trim_matches([' ', '\t']));
    let modern_header = header.is_some_and(|h| !modern::is_handshake_version(h));
    let single = match body {
        Ok(Body::Batch(items)) => {
            let claims = items.iter().any(|item| match item {
                Ok(Message::Request(r)) => modern::claim(r.params.as_ref()).is_some(),
                Ok(Message::Notification(n)) => modern::claim(n.params.as_ref()).is_some(),
                _ => false,
            });
            if claims {
                let e = ErrorObject::new(
                    codes::INVALID_REQUEST,
                    "Invalid request: JSON-RPC batches are not part of the 2026-07-28 revision",
                );
                return Era::Answered(error(StatusCode::BAD_REQUEST, None, e));
            }
            return Era::Legacy(Ok(Body::Batch(items)));
        }
        Ok(Body::Single(message)) => message,
        other => return Era::Legacy(other),
    };
    match single {
        Message::Request(r) if modern::claim(r.params.as_ref()).is_some() => Era::Modern(r),
        Message::Request(r) if r.method == method::INITIALIZE && modern_header => {
            let e = modern::header_mismatch(
                "MCP-Protocol-Version",
                header,
                "a handshake revision (initialize is not part of the 2026-07-28 revision)",
            );
            Era::Answered(error(StatusCode::BAD_REQUEST, Some(r.id), e))
        }
        Message::Request(r) if modern_header => {
            let e = modern::Envelope::read(r.params.as_ref()).err().unwrap_or_else(|| {
                ErrorObject::invalid_params("Invalid params: the request has no params._meta envelope")
            });
            Era::Answered(error(StatusCode::BAD_REQUEST, Some(r.id), e))
        }
        Message::Notification(n) if modern_header || modern::claim(n.params.as_ref()).is_some() => {
            // No client notification means anything on the modern HTTP wire.
            Era::Answered(StatusCode::ACCEPTED.into_response_empty())
        }
        other => Era::Legacy(Ok(Body::Single(other))),
    }
}

fn error(status: StatusCode, id: Option<crate::jsonrpc::Id>, e: ErrorObject) -> Response {
    reply::json(status, &Message::Response(RpcResponse::error(id, e)))
}

/// Serves a modern request: the engine's checks, then a run on a transient
/// session.
pub(super) async fn serve<H: Handler>(
    state: Arc<super::HttpState<H>>,
    request: Request,
    headers: &HeaderMap,
    caller: Caller,
) -> Response {
    let routing = RoutingHeaders::from_headers(headers);
    match state.engine.accept_modern(request, Some(&routing), &caller).await {
        ModernAccepted::Answered { response, status } => {
            reply::json(StatusCode::from_u16(status).unwrap_or(StatusCode::OK), &Message::Response(response))
        }
        ModernAccepted::Run { session, request } => respond(&state, session, request, headers).await,
    }
}

/// Cancels the request of a transient session unless disarmed: dropped with
/// the response (the client went away), it is the client's cancellation.
struct CancelOnDrop<S: Send + Sync + 'static>(Option<Arc<Session<S>>>);

impl<S: Send + Sync + 'static> Drop for CancelOnDrop<S> {
    fn drop(&mut self) {
        if let Some(session) = self.0.take() {
            tracing::debug!(session = session.id(), "the client closed a modern request's stream: cancelled");
            session.close();
        }
    }
}

/// Runs the request on its own task and answers with JSON if the response
/// is the first thing ready, else with an SSE stream.
async fn respond<H: Handler>(
    state: &Arc<HttpState<H>>,
    session: Arc<Session<H::State>>,
    request: Request,
    headers: &HeaderMap,
) -> Response {
    let remote = TraceHeaders::from_headers(headers);
    let (downlink, mut rx) = Downlink::with_capacity(state.engine.store().limits().stream_buffer);
    let engine = state.engine.clone();
    let mut guard = CancelOnDrop(Some(session.clone()));
    crate::spawn(async move {
        if let Some(response) = Box::pin(engine.run_traced(&session, request, downlink.clone(), remote.as_ref())).await
        {
            downlink.finish(response);
        }
        downlink.end();
    });
    let mut grace: Option<tokio::time::Instant> = None;
    loop {
        let frame = match grace {
            None => rx.recv().await,
            Some(until) => match tokio::time::timeout_at(until, rx.recv()).await {
                Ok(frame) => frame,
                Err(_) => return sse(Vec::new(), rx, guard, state.options.keep_alive),
            },
        };
        match frame {
            Some(Frame::Final(response)) => {
                guard.0 = None;
                let status = match response.outcome.error_code() {
                    Some(code) => StatusCode::from_u16(modern::http_status(code)).unwrap_or(StatusCode::OK),
                    None => StatusCode::OK,
                };
                return reply::json(status, &Message::Response(response));
            }
            Some(Frame::Stream) => {
                grace.get_or_insert_with(|| tokio::time::Instant::now() + STREAM_GRACE);
            }
            Some(Frame::Message(message)) => return sse(vec![message], rx, guard, state.options.keep_alive),
            Some(Frame::End) | None => {
                // Cancelled before it answered: nothing to say.
                guard.0 = None;
                return StatusCode::ACCEPTED.into_response_empty();
            }
        }
    }
}

/// The SSE answer of a modern request: `prelude`, then its frames up to and
/// including the response. No ids (modern streams do not resume); dropping
/// the body before the response cancels the request.
fn sse<S: Send + Sync + 'static>(
    prelude: Vec<Message>,
    rx: crate::server::session::Frames,
    guard: CancelOnDrop<S>,
    keep_alive: std::time::Duration,
) -> Response {
    let frames = stream::unfold((rx, Some(guard)), |(mut rx, guard)| async move {
        let mut guard = guard?;
        loop {
            match rx.recv().await {
                Some(Frame::Message(m)) => return Some((m, (rx, Some(guard)))),
                Some(Frame::Final(r)) => {
                    guard.0 = None;
                    return Some((Message::Response(r), (rx, None)));
                }
                Some(Frame::Stream) => continue,
                Some(Frame::End) | None => {
                    guard.0 = None;
                    return None;
                }
            }
        }
    });
    let events = stream::iter(prelude).chain(frames).map(event);
    let mut response = super::stream::sse(events, keep_alive);
    response.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

fn event(message: Message) -> Result<Sse, Infallible> {
    Ok(Sse::default().data(message.encode()))
}

/// The answer to a `GET` or `DELETE` that names no session: the modern era
/// has only `POST` (405, `Allow: POST`), and without a session there is no
/// handshake-era stream to open or session to end.
pub(super) fn not_allowed() -> Response {
    let mut r = reply::error(
        StatusCode::METHOD_NOT_ALLOWED,
        codes::SERVER_ERROR,
        "Method not allowed: without an Mcp-Session-Id only POST is served",
    );
    r.headers_mut().insert(http::header::ALLOW, HeaderValue::from_static("POST"));
    r
}
