//! A downstream session: what one MCP client negotiated, its open streams,
//! the requests it has in flight, and the requests toolgate has sent it.

// foldhash: these maps are looked up on every call (see Cargo.toml).
use foldhash::{HashMap, HashMapExt as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::caller::Caller;
use super::engine::{ListenSink, Subscriptions};
use super::handler::ModernContext;
use super::limits::{DEFAULT_MAX_REQUESTS_PER_SESSION, DEFAULT_STREAM_BUFFER};
use super::replay::{self, Replay};
use crate::jsonrpc::{Id, Message, Notification, Outcome, Request, Response};
use crate::protocol::{Version, method};
use link::{Link, Received};

/// One frame on a response stream.
#[derive(Debug, Clone)]
pub enum Frame {
    /// A notification or server-to-client request related to the request.
    Message(Message),
    /// The response that ends a request.
    Final(Response),
    /// Every request of the POST has been answered (or cancelled): the
    /// stream may end even if late messages could still arrive.
    End,
}

/// The way back to the client for one request: its own SSE stream on
/// Streamable HTTP, the session's single stream on stdio or legacy SSE.
///
/// Bounded where a slow client could grow memory: at most `capacity`
/// notifications (progress, log messages) wait in it; past that, further
/// notifications are dropped (and counted) until the client catches up.
/// Final responses and server-to-client requests are never dropped: there is
/// one final per request, and the requests in flight are capped per session.
#[derive(Debug)]
pub struct Downlink {
    link: Arc<Link>,
    /// For a modern request: the rank of its `logLevel` (`Some(None)`: it
    /// sent none, so no `notifications/message` may go out for it).
    log_floor: Option<Option<u8>>,
}

impl Clone for Downlink {
    fn clone(&self) -> Self {
        self.link.add_sender();
        Downlink { link: self.link.clone(), log_floor: self.log_floor }
    }
}

impl Drop for Downlink {
    fn drop(&mut self) {
        self.link.drop_sender();
    }
}

/// The receiving end of a [`Downlink`], drained by the transport.
#[derive(Debug)]
pub struct Frames {
    link: Arc<Link>,
}

impl Drop for Frames {
    fn drop(&mut self) {
        self.link.close();
    }
}

impl Frames {
    /// The next frame; `None` once every [`Downlink`] is gone.
    pub async fn recv(&mut self) -> Option<Frame> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Whether no frame waits.
    pub fn is_empty(&self) -> bool {
        self.link.is_empty()
    }

    /// The next frame if one is queued.
    pub fn try_recv(&mut self) -> Result<Frame, TryRecvError> {
        match self.link.try_recv() {
            Received::Frame(frame) => Ok(self.took(frame)),
            Received::Empty => Err(TryRecvError::Empty),
            Received::Ended => Err(TryRecvError::Disconnected),
        }
    }

    /// Polls for the next frame.
    pub fn poll_recv(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<Frame>> {
        let frame = std::task::ready!(self.link.poll_recv(cx));
        std::task::Poll::Ready(frame.map(|f| self.took(f)))
    }

    /// Whether the application asked for a streamed answer since the last
    /// look (see [`Downlink::prefer_stream`]).
    pub fn take_stream_hint(&self) -> bool {
        // A plain load first: the usual answer is no, without a write.
        self.link.stream.load(Ordering::Relaxed) && self.link.stream.swap(false, Ordering::AcqRel)
    }

    fn took(&self, frame: Frame) -> Frame {
        if let Frame::Message(Message::Notification(_)) = &frame {
            self.link.notes.fetch_sub(1, Ordering::AcqRel);
        }
        frame
    }
}

impl Downlink {
    /// A downlink holding at most [`DEFAULT_STREAM_BUFFER`] notifications,
    /// and the receiving end the transport drains.
    pub fn channel() -> (Downlink, Frames) {
        Self::with_capacity(DEFAULT_STREAM_BUFFER)
    }

    /// A downlink holding at most `capacity` notifications.
    pub fn with_capacity(capacity: usize) -> (Downlink, Frames) {
        let link = Arc::new(Link::new(capacity));
        (Downlink { link: link.clone(), log_floor: None }, Frames { link })
    }

    /// Sends a message related to the request. Returns `false` when the
    /// stream is gone (the client disconnected). A notification the queue
    /// has no room for is dropped (the stream is still there: `true`).
    pub fn send(&self, message: impl Into<Message>) -> bool {
        self.offer(message.into()).is_ok()
    }

    /// This downlink for a modern request with `log_level` (its `_meta`
    /// `logLevel`): `notifications/message` below that level, or any at all
    /// without one, is dropped, as the 2026-07-28 revision requires.
    pub fn for_modern(&self, log_level: Option<&str>) -> Downlink {
        let floor = log_level.map(|l| crate::protocol::modern::log_rank(l).unwrap_or(0));
        let mut modern = self.clone();
        modern.log_floor = Some(floor);
        modern
    }

    /// Whether a modern request's log floor lets `message` through.
    fn admits(&self, message: &Message) -> bool {
        let (Some(floor), Message::Notification(n)) = (self.log_floor, message) else { return true };
        if n.method != method::MESSAGE {
            return true;
        }
        let level = n.params.as_ref().and_then(|p| p.get("level")).and_then(Value::as_str);
        let rank = level.and_then(crate::protocol::modern::log_rank).unwrap_or(u8::MAX);
        floor.is_some_and(|floor| rank >= floor)
    }

    /// Queues a message, or hands it back when the stream is gone.
    fn offer(&self, message: Message) -> Result<(), Message> {
        if !self.admits(&message) {
            return Ok(());
        }
        let note = matches!(message, Message::Notification(_));
        let link = &self.link;
        if note {
            let queued = link.notes.fetch_add(1, Ordering::AcqRel);
            if queued >= link.capacity {
                link.notes.fetch_sub(1, Ordering::AcqRel);
                if link.is_closed() {
                    return Err(message);
                }
                let dropped = link.dropped.fetch_add(1, Ordering::Relaxed);
                if dropped.is_power_of_two() || dropped == 0 {
                    tracing::debug!(dropped = dropped + 1, "the client reads slowly: notification dropped");
                }
                return Ok(());
            }
        }
        match link.send(Frame::Message(message)) {
            Ok(()) => Ok(()),
            Err(frame) => {
                if note {
                    link.notes.fetch_sub(1, Ordering::AcqRel);
                }
                match frame {
                    Frame::Message(m) => Err(m),
                    _ => Ok(()),
                }
            }
        }
    }

    /// How many notifications were dropped because the client read slowly.
    pub fn dropped(&self) -> u64 {
        self.link.dropped.load(Ordering::Relaxed)
    }

    /// Sends the final response (never dropped).
    pub(crate) fn finish(&self, response: Response) -> bool {
        self.link.send(Frame::Final(response)).is_ok()
    }

    /// Asks for a streamed answer: the transport streams it unless it is
    /// ready within a short grace period (Streamable HTTP; the other
    /// transports stream everything anyway). Read by
    /// [`Frames::take_stream_hint`] when the work yields.
    pub fn prefer_stream(&self) {
        self.link.stream.store(true, Ordering::Release);
    }

    /// Marks the end of the requests this downlink serves.
    pub(crate) fn end(&self) {
        let _ = self.link.send(Frame::End);
    }

    /// Whether the receiving end is gone.
    pub fn is_closed(&self) -> bool {
        self.link.is_closed()
    }
}

/// Why a server-to-client request got no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ClientRequestError {
    /// The request was cancelled by whoever asked for it.
    #[error("the request was cancelled")]
    Cancelled,
    /// The session ended before the client answered.
    #[error("the client session ended")]
    SessionClosed,
}

/// One downstream session. `S` is the application's per-session state.
pub struct Session<S> {
    id: Arc<str>,
    version: Version,
    /// Who initialized the session: only this caller may use it.
    caller: Caller,
    client_capabilities: Value,
    client_info: Value,
    /// The application's state for this session.
    pub state: S,
    /// Set for the transient session of one sessionless (modern) request.
    modern: Option<Arc<ModernContext>>,
    initialized: AtomicBool,
    /// Lives as long as its connection: never expires when idle.
    pinned: AtomicBool,
    /// Most client requests in flight at once.
    max_in_flight: usize,
    next_request_id: AtomicU64,
    /// Set when the ids of requests to the client are tagged
    /// ([`Handler::request_tag`](super::Handler::request_tag)).
    request_tag: Option<Arc<str>>,
    /// Server-to-client requests awaiting the client's response.
    awaiting: Mutex<HashMap<Id, oneshot::Sender<Outcome>>>,
    /// Client requests being answered, so `notifications/cancelled` can stop them.
    in_flight: Mutex<HashMap<Id, CancellationToken>>,
    /// The session's SSE streams, resumable with `Last-Event-ID`.
    replay: Mutex<Replay>,
    /// For the transient session of a `subscriptions/listen` request: where
    /// its standalone messages go instead (see [`Session::deliver_to`]).
    listen: std::sync::OnceLock<(ListenSink, Subscriptions)>,
    closed: CancellationToken,
}

impl<S> Session<S> {
    pub(crate) fn new(id: Arc<str>, version: Version, init_params: &Value, state: S, caller: Caller) -> Self {
        let capabilities = init_params.get("capabilities").cloned().unwrap_or_else(|| json!({}));
        let client_info = init_params.get("clientInfo").cloned().unwrap_or(Value::Null);
        Self::build(id, version, capabilities, client_info, state, caller)
    }

    fn build(
        id: Arc<str>,
        version: Version,
        capabilities: Value,
        client_info: Value,
        state: S,
        caller: Caller,
    ) -> Self {
        Self {
            id,
            version,
            caller,
            client_capabilities: capabilities,
            client_info,
            state,
            modern: None,
            initialized: AtomicBool::new(false),
            pinned: AtomicBool::new(false),
            max_in_flight: DEFAULT_MAX_REQUESTS_PER_SESSION,
            next_request_id: AtomicU64::new(0),
            request_tag: None,
            awaiting: Mutex::new(HashMap::new()),
            in_flight: Mutex::new(HashMap::new()),
            replay: Mutex::new(Replay::default()),
            listen: std::sync::OnceLock::new(),
            closed: CancellationToken::new(),
        }
    }

    /// A session that no `initialize` opened and no store holds, with the
    /// application's `state`: for an application's tests that run requests
    /// on a state of their own making (e.g. a sessionless request's). Its id
    /// is empty.
    pub fn detached(version: Version, state: S, caller: Caller) -> Self {
        Self::new(Arc::from(""), version, &Value::Null, state, caller)
    }

    /// The transient session one sessionless (modern) request runs in: the
    /// envelope's capabilities and client info stand in for `initialize`'s,
    /// and the revision is the newest handshake one (what the application
    /// may send is the latest content; the envelope names the real revision).
    ///
    /// The envelope's capabilities and client info stay in the context
    /// alone (the accessors read them there): one sessionless request is
    /// one session, so copying them per request would be pure cost.
    pub(crate) fn sessionless(id: Arc<str>, ctx: ModernContext, state: S) -> Self {
        let caller = ctx.caller.clone();
        let mut session =
            Self::build(id, Version::LATEST, Value::Null, Value::Null, state, caller).with_max_in_flight(1);
        session.initialized = AtomicBool::new(true);
        session.modern = Some(Arc::new(ctx));
        session
    }

    /// The envelope of the sessionless request this transient session
    /// serves; `None` for a real (handshake-era) session.
    pub fn modern(&self) -> Option<&ModernContext> {
        self.modern.as_deref()
    }

    /// Whether this is the transient session of a sessionless request.
    pub fn is_sessionless(&self) -> bool {
        self.modern.is_some()
    }

    /// Tags the ids of the requests this session sends its client (see
    /// [`Handler::request_tag`](super::Handler::request_tag)).
    pub(crate) fn with_request_tag(mut self, tag: Option<Arc<str>>) -> Self {
        self.request_tag = tag;
        self
    }

    /// Caps the client requests this session may have in flight.
    pub(crate) fn with_max_in_flight(mut self, max: usize) -> Self {
        self.max_in_flight = max;
        self
    }

    /// Whether the session lives as long as its connection (see
    /// [`SessionStore::pin`](super::SessionStore::pin)).
    pub fn is_pinned(&self) -> bool {
        self.pinned.load(Ordering::Relaxed)
    }

    pub(crate) fn set_pinned(&self) {
        self.pinned.store(true, Ordering::Relaxed);
    }

    /// The session id toolgate issued (`Mcp-Session-Id`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session id, shared.
    pub fn id_arc(&self) -> Arc<str> {
        self.id.clone()
    }

    /// Who initialized the session (its owner).
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// Whether `caller` may use this session: only the one that initialized it.
    pub fn belongs_to(&self, caller: &Caller) -> bool {
        self.caller.same_as(caller)
    }

    /// The revision negotiated with this client.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The capabilities the client declared in `initialize`.
    /// For a sessionless request, its envelope's `clientCapabilities`.
    pub fn client_capabilities(&self) -> &Value {
        match &self.modern {
            Some(modern) => &modern.capabilities,
            None => &self.client_capabilities,
        }
    }

    /// The client's `clientInfo` (for a sessionless request, its envelope's).
    pub fn client_info(&self) -> &Value {
        match &self.modern {
            Some(modern) => &modern.client_info,
            None => &self.client_info,
        }
    }

    /// Whether the client declared the capability a server-to-client request
    /// needs (`sampling`, `elicitation`, `roots`).
    pub fn client_supports(&self, method: &str) -> bool {
        let cap = match method {
            "sampling/createMessage" => "sampling",
            "elicitation/create" => "elicitation",
            "roots/list" => "roots",
            _ => return true,
        };
        self.client_capabilities().get(cap).is_some_and(|c| !c.is_null())
    }

    /// Whether `notifications/initialized` has arrived.
    #[cfg(any(test, feature = "test-util"))]
    pub fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Relaxed)
    }

    pub(crate) fn mark_initialized(&self) {
        self.initialized.store(true, Ordering::Relaxed);
    }

    /// Fires when the session ends.
    pub fn closed(&self) -> &CancellationToken {
        &self.closed
    }

    pub(crate) fn close(&self) {
        self.closed.cancel();
        for (_, token) in self.in_flight.lock().drain() {
            token.cancel();
        }
        // Dropping the senders wakes every waiter with `SessionClosed`.
        self.awaiting.lock().clear();
        *self.replay.lock() = Replay::default();
    }

    // === client requests in flight ===

    /// Registers a client request in flight; `None` when the session has
    /// [`Limits::max_requests_per_session`](super::Limits) in flight already.
    pub(crate) fn begin_request(&self, id: &Id) -> Option<CancellationToken> {
        let mut in_flight = self.in_flight.lock();
        if in_flight.len() >= self.max_in_flight && !in_flight.contains_key(id) {
            return None;
        }
        // A token of its own, not a child of `closed`: a child costs a node
        // in the session's tree, added and removed under its lock on every
        // request. Closing cancels what is in flight here instead (`close`
        // cancels `closed`, then drains this table under its lock), and a
        // request that begins once the session is closed starts cancelled.
        let token = CancellationToken::new();
        if self.closed.is_cancelled() {
            token.cancel();
        }
        in_flight.insert(id.clone(), token.clone());
        Some(token)
    }

    /// How many client requests are in flight.
    #[cfg(any(test, feature = "test-util"))]
    pub fn requests_in_flight(&self) -> usize {
        self.in_flight.lock().len()
    }

    pub(crate) fn end_request(&self, id: &Id) {
        self.in_flight.lock().remove(id);
    }

    /// Cancels client request `id` if it is in flight here; returns whether it was.
    pub fn cancel_request(&self, id: &Id) -> bool {
        match self.in_flight.lock().remove(id) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    // === server-to-client requests ===

    /// Sends a request to the client and waits for its answer. The request
    /// goes on `via` (the stream of the client request it belongs to) when
    /// that is still open, otherwise on the standalone stream. If `cancel`
    /// fires first, or the returned future is dropped before the answer
    /// (the work that asked was itself cancelled), the client is told with
    /// `notifications/cancelled` and a late answer is ignored.
    pub async fn request_client(
        &self,
        method: &str,
        params: Option<Value>,
        via: Option<&Downlink>,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ClientRequestError> {
        let n = self.next_request_id.fetch_add(1, Ordering::Relaxed);
        let id = match &self.request_tag {
            Some(tag) => Id::string(&format!("{tag}-{n}")),
            None => Id::number(n),
        };
        let (tx, rx) = oneshot::channel();
        self.awaiting.lock().insert(id.clone(), tx);
        let waiting = Awaiting { session: self, id: id.clone(), via: via.cloned() };
        let request = Message::Request(Request { id, method: method.to_owned(), params });
        self.send_related(request, via);
        let answer = tokio::select! {
            answer = rx => answer.map_err(|_| ClientRequestError::SessionClosed),
            _ = cancel.cancelled() => Err(ClientRequestError::Cancelled),
            _ = self.closed.cancelled() => Err(ClientRequestError::SessionClosed),
        };
        drop(waiting);
        answer
    }

    /// Routes the client's response to the request that awaits it. Hands
    /// the outcome back for an id the engine never sent (or already forgot).
    pub fn resolve(&self, id: &Id, outcome: Outcome) -> Result<(), Outcome> {
        match self.awaiting.lock().remove(id) {
            // A waiter that gave up (cancelled) no longer wants it.
            Some(tx) => {
                let _ = tx.send(outcome);
                Ok(())
            }
            None => Err(outcome),
        }
    }

    /// Sends a message related to a client request on `via` (its stream)
    /// while that is open, else on the standalone stream (see [`notify`](Self::notify)).
    pub fn send_related(&self, message: Message, via: Option<&Downlink>) {
        let message = match via {
            Some(downlink) if !downlink.is_closed() => match downlink.offer(message) {
                Ok(()) => return,
                Err(m) => m,
            },
            _ => message,
        };
        self.notify(message);
    }

    // === streams ===

    /// Sends a message that belongs to no request (list changes, resource
    /// updates, unsolicited requests) on the standalone stream, or keeps it
    /// (bounded) for when one opens.
    ///
    /// On the transient session of a listen stream ([`Session::deliver_to`])
    /// it goes to that stream instead, if it is a notification of a type
    /// the stream honours, and is dropped otherwise.
    pub fn notify(&self, message: Message) {
        if let Some((sink, wants)) = self.listen.get() {
            if let Message::Notification(n) = message
                && wants.wants(&n.method, n.params.as_ref())
            {
                sink.send(n);
            }
            return;
        }
        self.replay.lock().push(replay::STANDALONE, Arc::from(message.encode()));
    }

    /// Whether a live connection holds this session's standalone stream
    /// (`GET`) here now: what [`notify`](Self::notify) sends goes out at
    /// once rather than into its backlog.
    pub fn has_standalone(&self) -> bool {
        self.replay.lock().has_standalone()
    }

    /// Makes this (transient) session the listener of a listen stream: what
    /// the application sends it with [`Session::notify`], as it does to its
    /// handshake-era sessions' standalone streams, goes to `sink` when
    /// `honoured` covers it. Set once; later calls are ignored.
    pub fn deliver_to(&self, sink: ListenSink, honoured: Subscriptions) {
        let _ = self.listen.set((sink, honoured));
    }

    /// What the listen stream of this session honours, if it is one.
    pub fn listening(&self) -> Option<&Subscriptions> {
        self.listen.get().map(|(_, wants)| wants)
    }

    /// The session's resumable streams.
    pub(crate) fn replay(&self) -> parking_lot::MutexGuard<'_, Replay> {
        self.replay.lock()
    }
}

/// A server-to-client request still waiting for its answer. Dropped when the
/// wait ends, however it ends: if the answer has not arrived (cancelled,
/// or the waiting future itself dropped), the request is forgotten and the
/// client told it is withdrawn.
struct Awaiting<'a, S> {
    session: &'a Session<S>,
    id: Id,
    via: Option<Downlink>,
}

impl<S> Drop for Awaiting<'_, S> {
    fn drop(&mut self) {
        if self.session.awaiting.lock().remove(&self.id).is_none() || self.session.closed.is_cancelled() {
            return;
        }
        let params = json!({"requestId": self.id.to_value(), "reason": "cancelled by the server"});
        let note = Notification::new(method::CANCELLED, Some(params));
        self.session.send_related(note.into(), self.via.as_ref());
    }
}

mod link;
#[cfg(test)]
mod tests;
