//! The legacy HTTP+SSE transport (MCP 2024-11-05), for clients that predate
//! Streamable HTTP: `GET /sse` opens an event stream whose first event
//! (`endpoint`) names where to POST (`/messages?sessionId=…`); every message
//! the server sends, responses included, goes down that one stream as a
//! `message` event. The stream is the connection: when it closes, the
//! session ends.

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
use super::{EmptyResponse, HttpState, accepts, reply};
use crate::jsonrpc::{ErrorObject, Message, Response as RpcResponse, codes};
use crate::protocol::method;
use crate::server::handler::Handler;
use crate::server::session::{Downlink, Session};
use crate::server::single::{self, Outbox};
use crate::server::store::SessionStore;

/// Path of the event stream.
pub const SSE_PATH: &str = "/sse";
/// Path client messages are POSTed to.
pub const MESSAGES_PATH: &str = "/messages";

/// Open legacy connections, by the id in their endpoint URL.
pub struct Connections<S: Send + Sync + 'static> {
    open: Mutex<HashMap<String, Arc<Connection<S>>>>,
}

impl<S: Send + Sync + 'static> Default for Connections<S> {
    fn default() -> Self {
        Self { open: Mutex::new(HashMap::new()) }
    }
}

struct Connection<S: Send + Sync + 'static> {
    outbox: Outbox,
    downlink: Downlink,
    /// The MCP session, once `initialize` succeeded.
    session: Mutex<Option<Arc<Session<S>>>>,
}

#[derive(Deserialize)]
pub struct MessagesQuery {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

/// Ends the connection's session when its stream goes away.
struct Closer<S: Send + Sync + 'static> {
    id: String,
    connections: Arc<Connections<S>>,
    store: std::sync::Weak<SessionStore<S>>,
}

impl<S: Send + Sync + 'static> Drop for Closer<S> {
    fn drop(&mut self) {
        let Some(conn) = self.connections.open.lock().remove(&self.id) else { return };
        if let (Some(session), Some(store)) = (conn.session.lock().take(), self.store.upgrade()) {
            tracing::debug!(session = session.id(), "legacy SSE stream closed; ending its session");
            store.remove(session.id());
        }
    }
}

/// `GET /sse`: opens a connection.
pub async fn open<H: Handler>(State(state): State<Arc<HttpState<H>>>, request: Request) -> Response {
    if !accepts(request.headers(), "text/event-stream") {
        return reply::error(
            StatusCode::NOT_ACCEPTABLE,
            codes::SERVER_ERROR,
            "Not Acceptable: use Accept: text/event-stream",
        );
    }
    let id = SessionStore::<H::State>::new_id().to_string();
    let (outbox, lines) = mpsc::unbounded_channel();
    let conn =
        Arc::new(Connection { downlink: single::downlink_to(outbox.clone()), outbox, session: Mutex::new(None) });
    state.legacy.open.lock().insert(id.clone(), conn);
    let closer =
        Closer { id: id.clone(), connections: state.legacy.clone(), store: Arc::downgrade(state.engine.store()) };
    // The endpoint is relative: clients resolve it against the stream's URL.
    let endpoint: Item = Ok(Sse::default().event("endpoint").data(format!("{MESSAGES_PATH}?sessionId={id}")));
    let messages = stream::unfold((lines, closer), |(mut lines, closer)| async move {
        let line = lines.recv().await?;
        let event: Item = Ok(Sse::default().event("message").data(&*line));
        Some((event, (lines, closer)))
    });
    sse(stream::iter([endpoint]).chain(messages), state.options.keep_alive)
}

/// `POST /messages?sessionId=…`: one client message; answered `202`, with
/// the response (if any) sent down the connection's stream.
pub async fn post<H: Handler>(
    State(state): State<Arc<HttpState<H>>>,
    Query(query): Query<MessagesQuery>,
    request: Request,
) -> Response {
    let conn = query.session_id.as_deref().and_then(|id| state.legacy.open.lock().get(id).cloned());
    let Some(conn) = conn else {
        return reply::error(StatusCode::NOT_FOUND, codes::SESSION_NOT_FOUND, "Session not found");
    };
    let bytes = match axum::body::to_bytes(request.into_body(), state.options.max_body_bytes).await {
        Ok(b) => b,
        Err(_) => return reply::error(StatusCode::PAYLOAD_TOO_LARGE, codes::INVALID_REQUEST, "Payload Too Large"),
    };
    let message = match Message::decode(&bytes) {
        Ok(m) => m,
        Err(e) => return reply::json(StatusCode::BAD_REQUEST, &Message::Response(e.to_response())),
    };
    let session = conn.session.lock().clone();
    match session {
        Some(session) => match message {
            Message::Request(_) => single::dispatch(&state.engine, &session, message, &conn.downlink),
            other => {
                state.engine.handle(&session, other, conn.downlink.clone()).await;
            }
        },
        None => match message {
            Message::Request(req) if req.method == method::INITIALIZE => {
                let (session, response) = state.engine.initialize(req).await;
                send(&conn.outbox, &Message::Response(response));
                if let Some(session) = session {
                    single::attach_standalone(&session, conn.outbox.clone());
                    *conn.session.lock() = Some(session);
                }
            }
            Message::Request(req) => {
                let e = ErrorObject::new(codes::INVALID_REQUEST, "Invalid request: send initialize first");
                send(&conn.outbox, &Message::Response(RpcResponse::error(Some(req.id), e)));
            }
            _ => {}
        },
    }
    StatusCode::ACCEPTED.into_response_empty()
}

fn send(outbox: &Outbox, message: &Message) {
    let _ = outbox.send(Arc::from(message.encode()));
}
