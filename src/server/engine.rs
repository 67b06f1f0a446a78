//! Transport-independent message handling for downstream sessions.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::task::TaskTracker;

use super::handler::{Handler, InitContext, RequestCtx};
use super::session::{Downlink, Session};
use super::store::SessionStore;
use crate::jsonrpc::{ErrorObject, Id, Message, Request, Response, codes};
use crate::protocol::{Version, method};

/// How often idle sessions are looked for, at most (short idle timeouts are
/// checked more often).
const EXPIRY_TICK: Duration = Duration::from_secs(5);

/// The engine: a handler plus its live sessions.
pub struct Engine<H: Handler> {
    handler: Arc<H>,
    store: Arc<SessionStore<H::State>>,
    /// Sessions being released ([`Handler::closed`] runs on its own task so a
    /// slow upstream shutdown does not hold up the others).
    closing: TaskTracker,
    /// Asks the expiry task to hand over every ended session now.
    flush: mpsc::UnboundedSender<oneshot::Sender<()>>,
}

impl<H: Handler> Engine<H> {
    /// Starts an engine whose sessions expire after `idle`. Spawns the task
    /// that applies expiries and hands ended sessions to [`Handler::closed`].
    pub fn start(
        handler: Arc<H>,
        store: Arc<SessionStore<H::State>>,
        mut ended: mpsc::UnboundedReceiver<Arc<Session<H::State>>>,
    ) -> Arc<Self> {
        let closing = TaskTracker::new();
        let (flush, mut flushes) = mpsc::unbounded_channel::<oneshot::Sender<()>>();
        let engine = Arc::new(Self { handler: handler.clone(), store: store.clone(), closing: closing.clone(), flush });
        let weak_store = Arc::downgrade(&store);
        let period = EXPIRY_TICK.min(store.idle_timeout() / 2).max(Duration::from_millis(100));
        let release = move |session: Arc<Session<H::State>>| {
            tracing::debug!(session = session.id(), "session ended");
            let handler = handler.clone();
            closing.spawn(async move { handler.closed(session).await });
        };
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            loop {
                tokio::select! {
                    _ = tick.tick() => match weak_store.upgrade() {
                        Some(store) => store.run_pending(),
                        None => return,
                    },
                    session = ended.recv() => match session {
                        Some(session) => release(session),
                        None => return,
                    },
                    Some(done) = flushes.recv() => {
                        while let Ok(session) = ended.try_recv() {
                            release(session);
                        }
                        let _ = done.send(());
                    }
                }
            }
        });
        engine
    }

    /// Ends every session and waits until each has released what it holds
    /// (upstream sessions shut down, child processes stopped).
    pub async fn shutdown(&self) {
        self.store.clear();
        let (done, flushed) = oneshot::channel();
        if self.flush.send(done).is_ok() {
            let _ = flushed.await;
        }
        self.closing.close();
        self.closing.wait().await;
    }

    /// The application.
    pub fn handler(&self) -> &Arc<H> {
        &self.handler
    }

    /// The live sessions.
    pub fn store(&self) -> &Arc<SessionStore<H::State>> {
        &self.store
    }

    /// Answers `initialize`, creating a session on success.
    pub async fn initialize(&self, request: Request) -> (Option<Arc<Session<H::State>>>, Response) {
        let params = request.params.unwrap_or_else(|| json!({}));
        if !params.is_object() {
            let e = ErrorObject::invalid_params("initialize params must be an object");
            return (None, Response::error(Some(request.id), e));
        }
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        let ctx = InitContext { version: Version::negotiate(requested), params };
        match self.handler.initialize(&ctx).await {
            Ok((result, state)) => {
                let session =
                    Arc::new(Session::new(SessionStore::<H::State>::new_id(), ctx.version, &ctx.params, state));
                self.store.insert(session.clone());
                tracing::debug!(session = session.id(), version = %ctx.version, client = %session.client_info(), "session started");
                (Some(session), Response::result(request.id, result))
            }
            Err(e) => (None, Response::error(Some(request.id), e)),
        }
    }

    /// Handles one message from the client of `session`. Returns the response
    /// for a request; `None` for notifications, responses, and requests the
    /// client cancelled (which must not be answered).
    pub async fn handle(
        &self,
        session: &Arc<Session<H::State>>,
        message: Message,
        downlink: Downlink,
    ) -> Option<Response> {
        match message {
            Message::Request(request) => self.request(session, request, downlink).await,
            Message::Notification(n) => {
                match n.method.as_str() {
                    method::INITIALIZED => session.mark_initialized(),
                    method::CANCELLED => {
                        let id = n.params.as_ref().and_then(|p| p.get("requestId")).and_then(Id::from_value);
                        match id {
                            Some(id) if session.cancel_request(&id) => {
                                tracing::debug!(session = session.id(), %id, "client cancelled a request");
                            }
                            // Unknown or finished: the spec lets the receiver ignore it.
                            _ => {}
                        }
                    }
                    _ => self.handler.notification(session, n).await,
                }
                None
            }
            Message::Response(Response { id: Some(id), outcome }) => {
                if let Err(outcome) = session.resolve(&id, outcome) {
                    self.handler.response(session, Response { id: Some(id), outcome }).await;
                }
                None
            }
            Message::Response(Response { id: None, outcome }) => {
                tracing::warn!(session = session.id(), error = ?outcome, "client sent an error without an id");
                None
            }
        }
    }

    async fn request(
        &self,
        session: &Arc<Session<H::State>>,
        request: Request,
        downlink: Downlink,
    ) -> Option<Response> {
        let id = request.id.clone();
        match request.method.as_str() {
            method::PING => return Some(Response::result(id, json!({}))),
            method::INITIALIZE => {
                let e = ErrorObject::new(codes::INVALID_REQUEST, "Invalid request: the session is already initialized");
                return Some(Response::error(Some(id), e));
            }
            _ => {}
        }
        let cancel = session.begin_request(&id);
        let ctx = RequestCtx { downlink, cancel: cancel.clone() };
        let outcome = self.handler.request(session, request, ctx).await;
        session.end_request(&id);
        if cancel.is_cancelled() {
            return None;
        }
        Some(Response { id: Some(id), outcome })
    }

    /// Whether a request is one the engine answers without a session
    /// (nothing today but `initialize`).
    pub fn is_initialize(message: &Message) -> bool {
        matches!(message, Message::Request(r) if r.method == method::INITIALIZE)
    }
}

/// The answer to a request that cannot be served without a session, such as
/// the 2026 era's `server/discover` probe: a plain JSON-RPC error that tells
/// clients this is a session-based (pre-2026) server, so they fall back to
/// `initialize`.
pub fn sessionless_error(id: Option<Id>, method: &str) -> Response {
    let message = if method == method::SERVER_DISCOVER {
        "Bad Request: this server uses the initialize handshake (MCP 2025-11-25 and earlier); send initialize first"
    } else {
        "Bad Request: Mcp-Session-Id header is required"
    };
    Response::error(id, ErrorObject::new(codes::SERVER_ERROR, message))
}

impl<H: Handler> Drop for Engine<H> {
    fn drop(&mut self) {
        self.store.clear();
    }
}
