//! The legacy HTTP+SSE transport (MCP 2024-11-05), for clients that predate
//! Streamable HTTP: `GET /sse` opens an event stream whose first event
//! (`endpoint`) names where to POST (`/messages?sessionId=…`); every message
//! the server sends, responses included, goes down that one stream as a
//! `message` event. The stream is the connection: when it closes, the
//! session ends.
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
use http::StatusCode;
use parking_lot::Mutex;
use serde::Deserialize;
use sse_stream::Sse;
use tokio::sync::mpsc;

use super::stream::{Item, sse};
use super::{EmptyResponse, HttpState, accepts, admit, reply};
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
    inbound: mpsc::UnboundedSender<Result<Body, DecodeError>>,
    /// The caller that opened the stream.
    owner: Caller,
}

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
    let id = SessionStore::<H::State>::new_id().to_string();
    let (outbox, lines) = mpsc::unbounded_channel();
    let (inbound, bodies) = mpsc::unbounded_channel();
    state.legacy.open.lock().insert(id.clone(), Connection { inbound, owner: caller.clone() });
    let closer = Closer { id: id.clone(), connections: state.legacy.clone() };
    let engine = state.engine.clone();
    crate::spawn(async move {
        let bodies = tokio_stream::wrappers::UnboundedReceiverStream::new(bodies);
        if let Some(session) = single::drive_as(&engine, bodies, &outbox, caller).await {
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
    let bytes = match axum::body::to_bytes(request.into_body(), state.options.max_body_bytes).await {
        Ok(b) => b,
        Err(_) => return reply::error(StatusCode::PAYLOAD_TOO_LARGE, codes::INVALID_REQUEST, "Payload Too Large"),
    };
    // A body that is not JSON-RPC is refused here, where the client can see it.
    let body = match Body::decode(&bytes) {
        Ok(body) => body,
        Err(e) => return reply::json(StatusCode::BAD_REQUEST, &Message::Response(e.to_response())),
    };
    if conn.inbound.send(Ok(body)).is_err() {
        return reply::error(StatusCode::NOT_FOUND, codes::SESSION_NOT_FOUND, "Session not found");
    }
    StatusCode::ACCEPTED.into_response_empty()
}
