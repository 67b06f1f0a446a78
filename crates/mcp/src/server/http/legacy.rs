//! The legacy HTTP+SSE transport (MCP 2024-11-05), for clients that predate
//! Streamable HTTP: `GET /sse` opens an event stream whose first event
//! (`endpoint`) names where to POST (`/messages?sessionId=…`); every message
//! the server sends, responses included, goes down that one stream as a
//! `message` event. The stream is the connection: when it closes, the
//! session ends; when the session ends (idle for the session idle timeout:
//! POSTs and messages sent both count as activity), the stream closes.
//!
//! A connection counts as a session from `GET /sse` on (`max_sessions`, the
//! server's and its caller's), and ends unless it sends `initialize` within
//! the body read timeout.
//!
//! Both endpoints admit each request (authentication, see
//! [`Admit`](super::Admit)); the connection belongs to the caller that opened
//! its stream, and a POST from another caller is answered as if the
//! connection did not exist (404).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, Request, State};
use axum::response::Response;
use futures::{StreamExt, stream};
use http::{StatusCode, header};
use parking_lot::Mutex;
use serde::Deserialize;
use sse_stream::Sse;
use tokio::sync::mpsc;

use super::stream::{Item, sse};
use super::{EmptyResponse, HttpState, accepts, admit, body, reply};
use crate::jsonrpc::{Body, DecodeError, Message, codes};
use crate::server::caller::Caller;
use crate::server::handler::Handler;
use crate::server::single;
use crate::server::store::SessionStore;

/// Path of the event stream.
pub const SSE_PATH: &str = "/sse";
/// Path client messages are POSTed to.
pub const MESSAGES_PATH: &str = "/messages";

/// Open legacy connections, by the id in their endpoint URL: where their
/// POSTed bodies go, and who may post them.
pub struct Connections {
    open: Mutex<HashMap<String, Connection>>,
}

/// One open legacy connection.
#[derive(Clone)]
struct Connection {
    inbound: mpsc::Sender<Result<Body, DecodeError>>,
    /// The caller that opened the stream.
    owner: Caller,
}

/// Bodies POSTed to one connection and not yet taken by its driver. More
/// wait (each POST until there is room, at most the body read timeout).
const INBOUND_QUEUE: usize = 64;

impl Default for Connections {
    fn default() -> Self {
        Self { open: Mutex::new(HashMap::new()) }
    }
}

#[derive(Deserialize)]
pub struct MessagesQuery {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

/// Forgets the connection when its stream goes away, which ends its
/// inbound bodies and with them the connection's driver.
struct Closer {
    id: String,
    connections: Arc<Connections>,
}

impl Drop for Closer {
    fn drop(&mut self) {
        self.connections.open.lock().remove(&self.id);
    }
}

/// `GET /sse`: opens a connection.
pub async fn open<H: Handler>(State(state): State<Arc<HttpState<H>>>, mut request: Request) -> Response {
    let caller = match admit(&state, request.headers_mut()).await {
        Ok(caller) => caller,
        Err(refusal) => return refusal,
    };
    if !accepts(request.headers(), "text/event-stream") {
        return reply::error(
            StatusCode::NOT_ACCEPTABLE,
            codes::SERVER_ERROR,
            "Not Acceptable: use Accept: text/event-stream",
        );
    }
    // The connection stands for the session its `initialize` will create:
    // it takes that session's place now (the server's `max_sessions` and
    // the caller's own), and must initialize within the body read timeout.
    // Otherwise idle streams that never initialize could pile up for ever.
    let hold = match state.engine.hold(&caller) {
        Ok(hold) => hold,
        Err((refusal, response)) => {
            return reply::json(super::post::refusal_status(Some(refusal)), &Message::Response(response));
        }
    };
    let unopened = single::Unopened { hold, deadline: tokio::time::Instant::now() + state.options.body_read_timeout };
    let id = SessionStore::<H::State>::new_id().to_string();
    let (outbox, lines) = mpsc::channel(state.engine.store().limits().stream_buffer.max(1));
    let (inbound, bodies) = mpsc::channel(INBOUND_QUEUE);
    state.legacy.open.lock().insert(id.clone(), Connection { inbound, owner: caller.clone() });
    let closer = Closer { id: id.clone(), connections: state.legacy.clone() };
    let engine = state.engine.clone();
    crate::spawn(async move {
        let bodies = tokio_stream::wrappers::ReceiverStream::new(bodies);
        let lifetime = single::Lifetime::Idle;
        if let Some(session) = single::drive(&engine, bodies, &outbox, lifetime, caller, Some(unopened)).await {
            tracing::debug!(session = session.id(), "legacy SSE stream closed; ending its session");
            engine.store().remove(session.id());
        }
    });
    // The endpoint is relative: clients resolve it against the stream's URL.
    let endpoint: Item = Ok(Sse::default().event("endpoint").data(format!("{MESSAGES_PATH}?sessionId={id}")));
    let messages = stream::unfold((lines, closer), |(mut lines, closer)| async move {
        let line = lines.recv().await?;
        let event: Item = Ok(Sse::default().event("message").data(&*line));
        Some((event, (lines, closer)))
    });
    sse(stream::iter([endpoint]).chain(messages), state.options.keep_alive)
}

/// `POST /messages?sessionId=…`: one client body; answered `202`, with the
/// responses (if any) sent down the connection's stream.
pub async fn post<H: Handler>(
    State(state): State<Arc<HttpState<H>>>,
    Query(query): Query<MessagesQuery>,
    mut request: Request,
) -> Response {
    let caller = match admit(&state, request.headers_mut()).await {
        Ok(caller) => caller,
        Err(refusal) => return refusal,
    };
    let conn = query.session_id.as_deref().and_then(|id| state.legacy.open.lock().get(id).cloned());
    // Another caller's connection is answered like one that does not exist.
    let Some(conn) = conn.filter(|c| c.owner.same_as(&caller)) else {
        return reply::error(StatusCode::NOT_FOUND, codes::SESSION_NOT_FOUND, "Session not found");
    };
    let (parts, body) = request.into_parts();
    let bytes = match body::read(
        body,
        parts.headers.get(header::CONTENT_LENGTH),
        state.options.max_body_bytes,
        state.options.body_read_timeout,
    )
    .await
    {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    // A body that is not JSON-RPC is refused here, where the client can see it.
    let body = match Body::decode(&bytes) {
        Ok(body) => body,
        Err(e) => return reply::json(StatusCode::BAD_REQUEST, &Message::Response(e.to_response())),
    };
    // Waits while the connection's queue is full (its driver is held up by
    // a client that reads its stream slowly), within the body read timeout.
    match tokio::time::timeout(state.options.body_read_timeout, conn.inbound.send(Ok(body))).await {
        Ok(Ok(())) => {}
        Ok(Err(_)) => return reply::error(StatusCode::NOT_FOUND, codes::SESSION_NOT_FOUND, "Session not found"),
        Err(_) => {
            return reply::error(
                StatusCode::SERVICE_UNAVAILABLE,
                codes::SERVER_ERROR,
                "Service Unavailable: the connection is not reading its messages; try again later",
            );
        }
    }
    StatusCode::ACCEPTED.into_response_empty()
}
