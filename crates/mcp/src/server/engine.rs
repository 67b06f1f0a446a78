//! The engine: the MCP lifecycle for every downstream transport, and the
//! bookkeeping of live sessions.
//!
//! A transport decodes a body with [`Body::decode`](crate::jsonrpc::Body),
//! says which session it belongs to ([`SessionRef`]) and hands both to
//! [`Engine::accept`]. The engine negotiates the revision and answers
//! `initialize`, answers `ping` and the pre-2026 `server/discover` refusal,
//! applies the batch policy of the session's revision, takes notifications
//! (`initialized`, `cancelled`) and responses to its own requests, and
//! returns the requests the transport must run ([`Engine::run`]) and the
//! answers it already has. Transports only move frames and map
//! [`Refusal`]s to their own status codes.
//!
//! Which era a body belongs to is the engine's call too ([`era`]): a
//! transport hands it the body and what it knows besides (an HTTP header, the
//! era its connection is pinned to).
//!
//! Requests of the sessionless 2026-07-28 era take another way in
//! ([`Engine::accept_modern`], see `engine/sessionless.rs`): validated one by one,
//! answered (`server/discover`) or run on a transient session, never stored.
//! A `server/discover` without the modern envelope still gets the
//! handshake-era refusal below, which sends a probing client to `initialize`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use super::caller::Caller;
use super::handler::{Handler, Held, InitContext, RequestCtx, ServerOffer, TraceHeaders};
use super::limits;
use super::session::{Downlink, Session};
use super::store::{Reservation, SessionStore};
use crate::jsonrpc::{Body, DecodeError, ErrorObject, Id, Message, Notification, Request, Response, codes};
use crate::protocol::{Version, method};

/// How often idle sessions are looked for, at most (short idle timeouts are
/// checked more often).
const EXPIRY_TICK: Duration = Duration::from_secs(5);

/// The session a body belongs to, as far as its transport can tell.
pub enum SessionRef<S: Send + Sync + 'static> {
    /// A connection that carries one session and has none yet (stdio, legacy
    /// HTTP+SSE before `initialize`).
    Unbound,
    /// The request named no session (Streamable HTTP without `Mcp-Session-Id`).
    Missing,
    /// The request named a session that does not exist, or has ended.
    Unknown,
    /// The request named a session this process does not hold, and the
    /// store shared with other processes, which may, could not be asked
    /// ([`SessionBackend::load`](super::SessionBackend::load), [`Handler::restore`]): the error says so; the client may retry.
    Unavailable(ErrorObject),
    /// A live session.
    Live(Arc<Session<S>>),
}

/// Why the engine refused a body before anything ran. Transports map it to
/// their own status (an HTTP code; nothing on stdio, where the error
/// response says it all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not JSON, or not a JSON-RPC message.
    Malformed,
    /// A request other than `initialize` without a session.
    SessionRequired,
    /// The session the request named does not exist.
    SessionUnknown,
    /// `initialize` on a live session.
    AlreadyInitialized,
    /// A request before `initialize` on a connection that carries one session.
    NotInitialized,
    /// A JSON-RPC batch where the session's revision has none.
    BatchNotAllowed,
    /// `initialize` while [`Limits::max_sessions`](super::Limits) sessions
    /// live, or while the caller holds as many sessions as it may (the
    /// application answered [`codes::LIMIT_EXCEEDED`]) (HTTP 429).
    TooManySessions,
    /// The server is shutting down and takes no new sessions (HTTP 503).
    ShuttingDown,
    /// The state store shared with other processes could not be reached:
    /// the session could not be looked up, recorded or ended there (HTTP 503
    /// with `Retry-After`).
    StoreUnavailable,
}

/// What the engine made of a body.
pub enum Accepted<S: Send + Sync + 'static> {
    /// Nothing to run. `responses` answer the body (none for notifications
    /// and responses; an array if `batch`); `refusal` says why it was
    /// refused, if it was.
    Answered { responses: Vec<Response>, refusal: Option<Refusal>, batch: bool },
    /// `initialize` created a session.
    Initialized { session: Arc<Session<S>>, response: Response },
    /// Requests to run on a live session with [`Engine::run`]. The body's
    /// notifications and responses have been taken; `answered` holds the
    /// answers the engine gave itself (`ping`, bad batch elements), in order.
    Run { session: Arc<Session<S>>, requests: Vec<Request>, answered: Vec<Response>, batch: bool },
}

/// The place a connection holds, from its opening, for the session it has
/// yet to initialize (legacy HTTP+SSE): one of the store's and what the
/// application's [`Handler::hold`] took. The connection's `initialize` uses
/// it ([`Engine::accept_unbound`]); dropped unused, it is given back.
pub struct Hold {
    place: Reservation,
    held: Held,
}

/// The engine: a handler plus its live sessions.
pub struct Engine<H: Handler> {
    handler: Arc<H>,
    store: Arc<SessionStore<H::State>>,
    /// Sessions being released ([`Handler::closed`] runs on its own task so a
    /// slow upstream shutdown does not hold up the others).
    closing: TaskTracker,
    /// Asks the expiry task to hand over every ended session now.
    flush: mpsc::UnboundedSender<oneshot::Sender<()>>,
    /// Set once shutdown began: new sessions and requests are refused.
    draining: AtomicBool,
    /// Requests running now (every session), and a wake-up when none is,
    /// sent only while someone waits in [`Engine::drain`] (`drainers`): at
    /// concurrency 1 every request ends with none running.
    running: AtomicUsize,
    idle: Notify,
    drainers: AtomicUsize,
    /// Fires at [`Engine::begin_shutdown`]: long-lived requests (listen
    /// streams) end then, so the drain does not wait for them.
    stopping: CancellationToken,
    /// What every modern result carries in `_meta` as the server's identity
    /// ([`Handler::server_info`], asked once).
    server_info: Option<sessionless::ServerInfo>,
    /// The tag of requests to clients ([`Handler::request_tag`], asked once).
    request_tag: Option<Arc<str>>,
    /// Sessions being adopted ([`SessionBackend::load`](super::SessionBackend::load), [`Handler::restore`]) now, so that concurrent
    /// requests naming one adopt it once.
    adopting: parking_lot::Mutex<std::collections::HashMap<Arc<str>, Arc<tokio::sync::Mutex<()>>>>,
}

impl<H: Handler> Engine<H> {
    /// Starts an engine whose sessions expire after `idle`. Spawns the task
    /// that applies expiries and hands ended sessions to [`Handler::closed`].
    pub fn start(
        handler: Arc<H>,
        store: Arc<SessionStore<H::State>>,
        mut ended: mpsc::UnboundedReceiver<Arc<Session<H::State>>>,
    ) -> Arc<Self> {
        let idle = store.idle_timeout();
        let closing = TaskTracker::new();
        let (flush, mut flushes) = mpsc::unbounded_channel::<oneshot::Sender<()>>();
        let engine = Arc::new(Self {
            handler: handler.clone(),
            store: store.clone(),
            closing: closing.clone(),
            flush,
            draining: AtomicBool::new(false),
            running: AtomicUsize::new(0),
            idle: Notify::new(),
            drainers: AtomicUsize::new(0),
            stopping: CancellationToken::new(),
            server_info: handler.server_info().map(sessionless::ServerInfo::new),
            request_tag: store.backend().tag(),
            adopting: Default::default(),
        });
        let weak_store = Arc::downgrade(&store);
        let period = EXPIRY_TICK.min(idle / 2).max(Duration::from_millis(100));
        let release = move |session: Arc<Session<H::State>>| {
            tracing::debug!(session = session.id(), "session ended");
            let handler = handler.clone();
            // Outside any request: the session ended (expiry, DELETE, its
            // connection); tracked so that shutdown waits for its release.
            #[allow(clippy::disallowed_methods)]
            closing.spawn(async move { handler.closed(session).await });
        };
        crate::spawn(async move {
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

    /// Starts a graceful shutdown: from now on `initialize` is refused
    /// ([`Refusal::ShuttingDown`]) and new requests are answered with an
    /// error, while the requests already running go on (see [`Engine::drain`]).
    pub fn begin_shutdown(&self) {
        self.draining.store(true, Ordering::Release);
        self.stopping.cancel();
    }

    /// Fires once [`Engine::begin_shutdown`] was called.
    pub(crate) fn stopping(&self) -> CancellationToken {
        self.stopping.clone()
    }

    /// Whether [`Engine::begin_shutdown`] was called.
    pub fn is_shutting_down(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// How many requests are running now, over every session.
    pub fn running(&self) -> usize {
        // Sequentially consistent, as the count's decrement and `drainers`
        // are: a drain that counts itself in after a request ended unseen
        // then sees that request gone (see `Running`).
        self.running.load(Ordering::SeqCst)
    }

    /// Waits until no request is running, or `within` passes. Returns
    /// whether every request finished.
    pub async fn drain(&self, within: Duration) -> bool {
        self.drainers.fetch_add(1, Ordering::SeqCst);
        let _counted = Drainer(&self.drainers);
        let all_done = async {
            loop {
                let notified = self.idle.notified();
                if self.running() == 0 {
                    return;
                }
                notified.await;
            }
        };
        tokio::time::timeout(within, all_done).await.is_ok()
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

    /// The live session `id` if it belongs to `caller` (counts as activity).
    pub fn live_session(&self, id: &str, caller: &Caller) -> Option<Arc<Session<H::State>>> {
        self.store.get(id).filter(|s| s.belongs_to(caller))
    }

    /// Looks up the session an `Mcp-Session-Id` names for `caller`, here or,
    /// if this process does not hold it, in the store it shares with others
    /// ([`SessionBackend::load`](super::SessionBackend::load), [`Handler::restore`]): a session found there is adopted (served here
    /// from now on as well). Counts as activity.
    pub async fn find_session(&self, id: Option<&str>, caller: &Caller) -> SessionRef<H::State> {
        let Some(id) = id else { return SessionRef::Missing };
        if let Some(session) = self.live_session(id, caller) {
            return SessionRef::Live(session);
        }
        // Only ids of the form this engine issues may name a session held
        // elsewhere: anything else never reaches the shared store.
        if !SessionStore::<H::State>::is_issued_form(id) {
            return SessionRef::Unknown;
        }
        let gate = self.adopting.lock().entry(Arc::from(id)).or_default().clone();
        let adopted = {
            let _one = gate.lock().await;
            // Another request may have adopted it meanwhile.
            match self.live_session(id, caller) {
                Some(session) => SessionRef::Live(session),
                None => self.adopt(id, caller).await,
            }
        };
        let mut adopting = self.adopting.lock();
        if Arc::strong_count(&gate) <= 2 {
            adopting.remove(id);
        }
        adopted
    }

    /// The session a handshake-era `body` naming session `id` is for:
    /// `initialize` names none (a stale id just gets a new session) unless it
    /// names a live one (re-initializing is a client bug, refused by
    /// [`Engine::accept`]); a malformed body none, whatever it names (it is
    /// answered as such); anything else the one [`Engine::find_session`]
    /// finds.
    pub async fn session_of(
        &self,
        body: &Result<Body, DecodeError>,
        id: Option<&str>,
        caller: &Caller,
    ) -> SessionRef<H::State> {
        if era::opens_session(body) {
            return match id.and_then(|id| self.live_session(id, caller)) {
                Some(live) => SessionRef::Live(live),
                None => SessionRef::Missing,
            };
        }
        match body {
            Err(_) => SessionRef::Missing,
            Ok(_) => self.find_session(id, caller).await,
        }
    }

    /// Adopts session `id` of `caller` from the shared store, if it is there.
    async fn adopt(&self, id: &str, caller: &Caller) -> SessionRef<H::State> {
        if self.is_shutting_down() {
            return SessionRef::Unknown;
        }
        let stored = match self.store.backend().load(id, caller).await {
            Ok(Some(stored)) => stored,
            Ok(None) => return SessionRef::Unknown,
            Err(e) => return SessionRef::Unavailable(e),
        };
        let (version, params) = (stored.version, stored.params.clone());
        let state = match self.handler.restore(id, stored, caller) {
            Ok(Some(state)) => state,
            Ok(None) => return SessionRef::Unknown,
            Err(e) => return SessionRef::Unavailable(e),
        };
        let Some(place) = self.store.reserve() else {
            tracing::warn!(session = id, "session not adopted: too many sessions");
            return SessionRef::Unavailable(limits::too_many_sessions(self.store.limits().max_sessions));
        };
        let session = Session::new(Arc::from(id), version, &params, state, caller.clone())
            .with_max_in_flight(self.store.limits().max_requests_per_session)
            .with_request_tag(self.request_tag.clone());
        session.mark_initialized();
        let session = Arc::new(session);
        self.store.insert(place, session.clone());
        tracing::debug!(session = id, caller = caller.id(), "session adopted from the shared store");
        SessionRef::Live(session)
    }

    /// The session an `Mcp-Session-Id` names for `caller`, for a transport
    /// request that is not a message (`GET`, `DELETE`), or the refusal (a
    /// session of another caller is refused as unknown). Adopts a session
    /// from the shared store as [`Engine::find_session`] does.
    pub async fn find_required(
        &self,
        id: Option<&str>,
        caller: &Caller,
    ) -> Result<Arc<Session<H::State>>, (Refusal, Response)> {
        match self.find_session(id, caller).await {
            SessionRef::Live(session) => Ok(session),
            other => {
                let refusal = refusal_of(&other).unwrap_or(Refusal::SessionRequired);
                Err((refusal, no_session_error(&other, None, "")))
            }
        }
    }

    /// Ends `session` at its client's request (`DELETE`): wherever else it
    /// lives ([`SessionBackend::end`](super::SessionBackend::end)), then here.
    pub async fn delete(&self, session: &Arc<Session<H::State>>) -> Result<(), (Refusal, Response)> {
        if let Err(e) = self.store.backend().end(session).await {
            let refusal = unavailable_or(&e, Refusal::SessionUnknown);
            return Err((refusal, Response::error(None, e)));
        }
        self.store.remove(session.id());
        Ok(())
    }

    /// Takes a place for the session of a connection `caller` opens before
    /// initializing it ([`Hold`]), or refuses the connection: too many
    /// sessions (with the application's answer if it refused), or shutting
    /// down.
    pub fn hold(&self, caller: &Caller) -> Result<Hold, (Refusal, Response)> {
        if self.is_shutting_down() {
            return Err((Refusal::ShuttingDown, Response::error(None, limits::shutting_down())));
        }
        let Some(place) = self.store.reserve() else {
            let max = self.store.limits().max_sessions;
            return Err((Refusal::TooManySessions, Response::error(None, limits::too_many_sessions(max))));
        };
        match self.handler.hold(caller) {
            Ok(held) => Ok(Hold { place, held: held.map(Held::new).unwrap_or_default() }),
            Err(e) => Err((Refusal::TooManySessions, Response::error(None, e))),
        }
    }

    /// [`Engine::accept`] for a connection without a session yet
    /// ([`SessionRef::Unbound`]): an `initialize` uses the connection's
    /// `hold`, if it has one (taken then, whatever the outcome).
    pub async fn accept_unbound(
        &self,
        hold: &mut Option<Hold>,
        body: Result<Body, DecodeError>,
        caller: &Caller,
    ) -> Accepted<H::State> {
        match body {
            Ok(body) => self.unbound(SessionRef::Unbound, body, caller, hold).await,
            Err(e) => refused(Refusal::Malformed, e.to_response()),
        }
    }

    /// Takes one decoded body (or the reason it did not decode) from an
    /// anonymous client (see [`Engine::accept`]), for tests.
    #[cfg(any(test, feature = "test-util"))]
    pub async fn accept_anonymous(
        &self,
        session: SessionRef<H::State>,
        body: Result<Body, DecodeError>,
    ) -> Accepted<H::State> {
        self.accept(session, body, &Caller::anonymous()).await
    }

    /// Takes one decoded body (or the reason it did not decode) from
    /// `caller`; a session its `initialize` creates belongs to `caller`. The
    /// transport has looked `session` up for this caller
    /// ([`Engine::find_session`]).
    pub async fn accept(
        &self,
        session: SessionRef<H::State>,
        body: Result<Body, DecodeError>,
        caller: &Caller,
    ) -> Accepted<H::State> {
        let body = match body {
            Ok(body) => body,
            Err(e) => return refused(Refusal::Malformed, e.to_response()),
        };
        let session = match session {
            SessionRef::Live(session) => session,
            other => return self.unbound(other, body, caller, &mut None).await,
        };
        let (items, batch) = match body {
            Body::Single(Message::Request(r)) if r.method == method::INITIALIZE => {
                let e = ErrorObject::new(codes::INVALID_REQUEST, "Invalid request: the session is already initialized");
                return refused(Refusal::AlreadyInitialized, Response::error(Some(r.id), e));
            }
            // The usual body, one request to run: straight to it.
            Body::Single(Message::Request(r)) if r.method != method::PING && !self.is_shutting_down() => {
                return Accepted::Run { session, requests: vec![r], answered: Vec::new(), batch: false };
            }
            Body::Single(m) => (vec![Ok(m)], false),
            Body::Batch(_) if !session.version().allows_batches() => {
                let e = ErrorObject::new(
                    codes::INVALID_REQUEST,
                    format!("Invalid request: JSON-RPC batches are not part of protocol version {}", session.version()),
                );
                return refused(Refusal::BatchNotAllowed, Response::error(None, e));
            }
            Body::Batch(items) => (items, true),
        };
        // Answers the engine gives itself, in the body's order.
        let mut answered = Vec::new();
        let mut requests = Vec::new();
        for item in items {
            match item {
                Ok(Message::Request(r)) if r.method == method::PING => answered.push(Response::result(r.id, json!({}))),
                Ok(Message::Request(r)) if r.method == method::INITIALIZE => {
                    let e = ErrorObject::new(codes::INVALID_REQUEST, "initialize must not be part of a batch");
                    answered.push(Response::error(Some(r.id), e));
                }
                Ok(Message::Request(r)) if self.is_shutting_down() => {
                    answered.push(Response::error(Some(r.id), limits::shutting_down()));
                }
                Ok(Message::Request(r)) => requests.push(r),
                Ok(Message::Notification(n)) => self.notification(&session, n).await,
                Ok(Message::Response(r)) => self.response(&session, r).await,
                Err(e) => answered.push(e.to_response()),
            }
        }
        if requests.is_empty() {
            return Accepted::Answered { responses: answered, refusal: None, batch };
        }
        Accepted::Run { session, requests, answered, batch }
    }

    /// A body without a live session: `initialize` (with the connection's
    /// `hold`, if any), `ping`, or a refusal.
    async fn unbound(
        &self,
        session: SessionRef<H::State>,
        body: Body,
        caller: &Caller,
        hold: &mut Option<Hold>,
    ) -> Accepted<H::State> {
        let request = match body {
            Body::Single(Message::Request(r)) => r,
            // Notifications and responses before a session are dropped; a
            // transport that names sessions refuses them.
            Body::Single(_) => {
                return match refusal_of(&session) {
                    Some(refusal) => refused(refusal, no_session_error(&session, None, "")),
                    None => Accepted::Answered { responses: Vec::new(), refusal: None, batch: false },
                };
            }
            Body::Batch(_) => {
                let refusal = refusal_of(&session).unwrap_or(Refusal::NotInitialized);
                return refused(refusal, no_session_error(&session, None, ""));
            }
        };
        match request.method.as_str() {
            method::INITIALIZE => self.initialize(request, caller, hold.take()).await,
            // `ping` is answered before initialization too; over HTTP it
            // still needs the session it would belong to.
            method::PING if matches!(session, SessionRef::Unbound) => answer(Response::result(request.id, json!({}))),
            _ => {
                let refusal = refusal_of(&session).unwrap_or(Refusal::NotInitialized);
                refused(refusal, no_session_error(&session, Some(request.id), &request.method))
            }
        }
    }

    /// Answers `initialize`, creating a session on success (if there is
    /// room for one, or its connection `hold`s one, and the server is not
    /// shutting down).
    async fn initialize(&self, request: Request, caller: &Caller, hold: Option<Hold>) -> Accepted<H::State> {
        if self.is_shutting_down() {
            return refused(Refusal::ShuttingDown, Response::error(Some(request.id), limits::shutting_down()));
        }
        let (place, held) = match hold {
            Some(Hold { place, held }) => (place, held),
            None => match self.store.reserve() {
                Some(place) => (place, Held::default()),
                None => {
                    let max = self.store.limits().max_sessions;
                    tracing::warn!(max_sessions = max, "initialize refused: too many sessions");
                    return refused(
                        Refusal::TooManySessions,
                        Response::error(Some(request.id), limits::too_many_sessions(max)),
                    );
                }
            },
        };
        let params = request.params.unwrap_or_else(|| json!({}));
        if !params.is_object() {
            let e = ErrorObject::invalid_params("initialize params must be an object");
            return answer(Response::error(Some(request.id), e));
        }
        if let Some(e) = limits::oversized_client_description(&params) {
            return answer(Response::error(Some(request.id), e));
        }
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        let session_id = SessionStore::<H::State>::new_id();
        let ctx =
            InitContext { version: Version::negotiate(requested), params, caller: caller.clone(), held, session_id };
        match self.handler.initialize(&ctx).await {
            Ok((offer, state)) => {
                let session = Session::new(ctx.session_id, ctx.version, &ctx.params, state, ctx.caller)
                    .with_max_in_flight(self.store.limits().max_requests_per_session)
                    .with_request_tag(self.request_tag.clone());
                let session = Arc::new(session);
                self.store.insert(place, session.clone());
                if let Err(e) = self.store.backend().record(&session).await {
                    self.store.remove(session.id());
                    tracing::warn!(error = %e, "initialize refused: the session could not be recorded");
                    let refusal = unavailable_or(&e, Refusal::StoreUnavailable);
                    return refused(refusal, Response::error(Some(request.id), e));
                }
                tracing::debug!(session = session.id(), version = %ctx.version, client = %session.client_info(), caller = session.caller().id(), "session started");
                Accepted::Initialized {
                    session,
                    response: Response::result(request.id, initialize_result(ctx.version, offer)),
                }
            }
            Err(e) if e.code == codes::LIMIT_EXCEEDED => {
                refused(Refusal::TooManySessions, Response::error(Some(request.id), e))
            }
            Err(e) => answer(Response::error(Some(request.id), e)),
        }
    }

    /// A client notification: the lifecycle's own, or the application's.
    async fn notification(&self, session: &Arc<Session<H::State>>, n: Notification) {
        match n.method.as_str() {
            method::INITIALIZED => {
                session.mark_initialized();
                // The application may read what it carries (extensions).
                self.handler.notification(session, n).await;
            }
            method::CANCELLED => {
                let id = n.params.as_ref().and_then(|p| p.get("requestId")).and_then(Id::from_value);
                // Unknown or finished: the spec lets the receiver ignore it;
                // the application may know where else it runs.
                if let Some(id) = id {
                    if session.cancel_request(&id) {
                        tracing::debug!(session = session.id(), %id, "client cancelled a request");
                    } else {
                        self.store.backend().forward_cancel(session, &id).await;
                    }
                }
            }
            _ => self.handler.notification(session, n).await,
        }
    }

    /// A client response: to a request the engine sent, or the application's.
    async fn response(&self, session: &Arc<Session<H::State>>, response: Response) {
        match response {
            Response { id: Some(id), outcome } => {
                if let Err(outcome) = session.resolve(&id, outcome) {
                    self.store.backend().forward_answer(session, Response { id: Some(id), outcome }).await;
                }
            }
            Response { id: None, outcome } => {
                tracing::warn!(session = session.id(), error = ?outcome, "client sent an error without an id");
            }
        }
    }

    /// Runs one request of a live session. Returns its response, or `None`
    /// when the client cancelled it (a cancelled request is not answered).
    ///
    /// The request runs in a span (`request`, with the session, the method
    /// and the id; the application records `upstream` and `tool` when it
    /// knows them) that the tasks it spawns carry along.
    pub async fn run(
        &self,
        session: &Arc<Session<H::State>>,
        request: Request,
        downlink: Downlink,
    ) -> Option<Response> {
        self.run_traced(session, request, downlink, None).await
    }

    /// [`Engine::run`] for a request whose HTTP request carried a trace
    /// context (`remote`), which the handler may link the span to
    /// ([`Handler::link_span`]).
    pub async fn run_traced(
        &self,
        session: &Arc<Session<H::State>>,
        request: Request,
        downlink: Downlink,
        remote: Option<&TraceHeaders>,
    ) -> Option<Response> {
        let id = request.id.clone();
        // A modern request's answer is completed on the way out; its
        // downlink drops the log messages its `logLevel` does not ask for.
        // What the way out needs of the request (which the handler takes):
        // whether its method is cacheable, and the URI a read asked for.
        let modern = session.modern().map(|_| {
            let cacheable = crate::protocol::modern::method::CACHEABLE.into_iter().find(|m| *m == request.method);
            let uri = (request.method == crate::protocol::method::RESOURCES_READ)
                .then(|| request.params.as_ref().and_then(|p| crate::jsonrpc::member(p, "uri")).cloned())
                .flatten();
            (cacheable, uri)
        });
        let downlink = match session.modern() {
            Some(ctx) => downlink.for_modern(ctx.log_level.as_deref()),
            None => downlink,
        };
        // At debug level: a span costs little when disabled, and the default
        // `info` filter leaves the hot path without one (`TOOLGATE_LOG=debug`
        // follows every request, an OpenTelemetry exporter traces it; the
        // `otel.*` fields name and classify it there).
        let span = tracing::debug_span!(
            "request",
            otel.name = %loggable(&request.method),
            otel.kind = "server",
            session = session.id(),
            caller = session.caller().id(),
            method = %loggable(&request.method),
            id = %id,
            upstream = tracing::field::Empty,
            tool = tracing::field::Empty,
            routed = tracing::field::Empty,
        );
        if !span.is_disabled() {
            self.handler.link_span(&span, &request, remote);
        }
        let Some(cancel) = session.begin_request(&id) else {
            let max = self.store.limits().max_requests_per_session;
            tracing::debug!(session = session.id(), %id, max, "request refused: too many in flight");
            return Some(Response::error(Some(id), limits::too_many_requests(max)));
        };
        let _running = Running::start(self);
        // Ends the request's registration however the run ends (answered,
        // or dropped with its connection).
        let registered = Registered { session, id: &id };
        let ctx = RequestCtx { downlink, cancel: cancel.clone(), span: span.clone() };
        let outcome =
            if session.is_sessionless() && request.method == crate::protocol::modern::method::SUBSCRIPTIONS_LISTEN {
                self.listen(session, request, ctx).instrument(span).await
            } else {
                self.handler.request(session, request, ctx).instrument(span).await
            };
        drop(registered);
        if cancel.is_cancelled() {
            return None;
        }
        let outcome = match modern {
            Some((cacheable, uri)) => self.finish_modern(session, cacheable, uri, outcome),
            None => outcome,
        };
        Some(Response { id: Some(id), outcome })
    }
}

/// A request registered in its session's in-flight table.
struct Registered<'a, S> {
    session: &'a Session<S>,
    id: &'a Id,
}

impl<S> Drop for Registered<'_, S> {
    fn drop(&mut self) {
        self.session.end_request(self.id);
    }
}

/// One request running, counted for [`Engine::drain`].
struct Running<'a, H: Handler>(&'a Engine<H>);

impl<'a, H: Handler> Running<'a, H> {
    fn start(engine: &'a Engine<H>) -> Self {
        engine.running.fetch_add(1, Ordering::SeqCst);
        Running(engine)
    }
}

impl<H: Handler> Drop for Running<'_, H> {
    fn drop(&mut self) {
        // The last request out wakes the drains, if any wait. A drain that
        // counts itself in after this looks at `running` after that, and
        // finds this request gone (all four accesses sequentially
        // consistent).
        if self.0.running.fetch_sub(1, Ordering::SeqCst) == 1 && self.0.drainers.load(Ordering::SeqCst) > 0 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Counts a waiting [`Engine::drain`] out, however its wait ends.
struct Drainer<'a>(&'a AtomicUsize);

impl Drop for Drainer<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl<H: Handler> Drop for Engine<H> {
    fn drop(&mut self) {
        self.store.clear();
    }
}

fn answer<S: Send + Sync + 'static>(response: Response) -> Accepted<S> {
    Accepted::Answered { responses: vec![response], refusal: None, batch: false }
}

fn refused<S: Send + Sync + 'static>(refusal: Refusal, response: Response) -> Accepted<S> {
    Accepted::Answered { responses: vec![response], refusal: Some(refusal), batch: false }
}

/// The refusal for a body without a live session, if the transport names
/// sessions (`None` for a connection that has not initialized yet).
fn refusal_of<S: Send + Sync + 'static>(session: &SessionRef<S>) -> Option<Refusal> {
    match session {
        SessionRef::Missing => Some(Refusal::SessionRequired),
        SessionRef::Unknown => Some(Refusal::SessionUnknown),
        SessionRef::Unavailable(e) => Some(unavailable_or(e, Refusal::TooManySessions)),
        SessionRef::Unbound | SessionRef::Live(_) => None,
    }
}

/// The error answering a request that has no session to run in. The 2026
/// era's `server/discover` probe gets what a session-based (pre-2026)
/// server answers, which makes dual-era clients fall back to `initialize`.
fn no_session_error<S: Send + Sync + 'static>(session: &SessionRef<S>, id: Option<Id>, method: &str) -> Response {
    let error = match session {
        SessionRef::Unknown => ErrorObject::new(codes::SESSION_NOT_FOUND, "Session not found"),
        SessionRef::Unavailable(e) => e.clone(),
        SessionRef::Missing if method == method::SERVER_DISCOVER => ErrorObject::new(
            codes::SERVER_ERROR,
            "Bad Request: this server uses the initialize handshake (MCP 2025-11-25 and earlier); send initialize first",
        ),
        SessionRef::Missing => ErrorObject::new(codes::SERVER_ERROR, "Bad Request: Mcp-Session-Id header is required"),
        SessionRef::Unbound | SessionRef::Live(_) if method == method::SERVER_DISCOVER => {
            ErrorObject::method_not_found(method)
        }
        SessionRef::Unbound | SessionRef::Live(_) => {
            ErrorObject::new(codes::INVALID_REQUEST, "Invalid request: send initialize first")
        }
    };
    Response::error(id, error)
}

/// [`Refusal::StoreUnavailable`] for an error saying the shared state store
/// is unreachable, else `otherwise`.
fn unavailable_or(error: &ErrorObject, otherwise: Refusal) -> Refusal {
    if error.code == codes::STATE_STORE_UNAVAILABLE { Refusal::StoreUnavailable } else { otherwise }
}

/// The `initialize` result: the negotiated revision and what the
/// application offers.
/// `text`, a client's, for the log: as it is, or escaped where it holds a
/// control character, so that no client can forge log lines or send
/// terminal escapes through the text format.
fn loggable(text: &str) -> std::borrow::Cow<'_, str> {
    match text.chars().any(char::is_control) {
        true => std::borrow::Cow::Owned(text.escape_debug().to_string()),
        false => std::borrow::Cow::Borrowed(text),
    }
}

fn initialize_result(version: Version, offer: ServerOffer) -> Value {
    let mut result = Map::new();
    result.insert("protocolVersion".into(), json!(version.as_str()));
    result.insert("capabilities".into(), offer.capabilities);
    result.insert("serverInfo".into(), offer.server_info);
    if let Some(instructions) = offer.instructions {
        result.insert("instructions".into(), Value::String(instructions));
    }
    Value::Object(result)
}

pub mod era;
mod listen;
mod sessionless;

pub(crate) use listen::not_served as listen_not_served;
pub use listen::{Listen, ListenSink, Subscriptions};
pub use sessionless::{ModernAccepted, RoutingHeaders};

#[cfg(test)]
mod tests;
