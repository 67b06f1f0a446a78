//! How the Streamable HTTP endpoint answers a sessionless (2026-07-28)
//! request (the engine decides which bodies are: [`era`](crate::server::engine::era)).
//!
//! A modern request never reads, mints nor echoes `Mcp-Session-Id`. Its
//! answer ([`answer`]) is plain JSON, with the HTTP status its error code
//! calls for, or an SSE stream when something (progress, a log message)
//! goes out first: no event ids, no replay, and closing the stream cancels
//! the request.

use std::sync::Arc;

use axum::response::Response;
use http::{HeaderMap, HeaderValue, StatusCode};

use super::answer::{self, CancelOnDrop, Streamed};
use super::reply::{self, Reply, boxed};
use crate::jsonrpc::{Message, Request, codes};
use crate::server::caller::Caller;
use crate::server::engine::{ModernAccepted, RoutingHeaders};
use crate::server::handler::{Handler, TraceHeaders};

/// Serves a modern request: the engine's checks, then a run on a transient
/// session. `remote`: the request's trace context, found in the POST's walk
/// over its headers.
pub(super) async fn serve<H: Handler>(
    state: Arc<super::HttpState<H>>,
    request: Request,
    headers: &HeaderMap,
    remote: Option<TraceHeaders>,
    caller: Caller,
) -> Reply {
    let routing = RoutingHeaders::from_headers(headers);
    match state.engine.accept_modern(request, Some(&routing), &caller).await {
        ModernAccepted::Answered { response, status } => {
            boxed(reply::json(StatusCode::from_u16(status).unwrap_or(StatusCode::OK), &Message::Response(response)))
        }
        ModernAccepted::Run { session, request } => {
            let streamed = Streamed::Sessionless(CancelOnDrop::new(session.clone()));
            answer::respond(&state, session, vec![request], Vec::new(), false, remote, streamed).await
        }
    }
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
