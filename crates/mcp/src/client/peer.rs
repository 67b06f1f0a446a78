//! One MCP session with an upstream: id allocation, the pending-call table,
//! progress-token rewriting, the deadline and cancellation of calls in
//! flight (see [`watch`]), and routing of what the upstream sends. The wire
//! is a [`Transport`]; the choice of connection and retries are layers
//! around [`Peer::call`] (see `service.rs`), not part of it.

mod watch;

// foldhash: these maps are looked up on every call (see Cargo.toml).
use foldhash::{HashMap, HashMapExt as _};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::error::{Cause, UpstreamError};
use super::modern::{ClientContext, UpstreamEra, envelope, headers};
use super::transport::{Inbox, Transport};
use crate::jsonrpc::{self, Id, Message, Notification, Outcome, Request, Response};
use crate::protocol::{Version, method};
#[cfg(test)]
pub(crate) use watch::TICK;
use watch::{GivenUp, Watch};

/// What toolgate declares when it initializes an upstream session.
#[derive(Debug, Clone)]
pub struct ClientHello {
    /// `capabilities` sent upstream.
    pub capabilities: Value,
    /// `clientInfo` sent upstream.
    pub client_info: Value,
}

/// What the upstream answered to `initialize` (or, for a modern upstream,
/// to `server/discover`).
#[derive(Debug, Clone)]
pub struct ServerHello {
    /// The revision negotiated on this leg (for a modern upstream: the
    /// newest handshake revision, which is what toolgate's translation of
    /// content assumes of it).
    pub version: Version,
    /// The modern revision this leg speaks sessionless, if it does.
    pub modern: Option<&'static str>,
    /// The upstream's `capabilities`.
    pub capabilities: Value,
    /// The upstream's `serverInfo`.
    pub server_info: Value,
    /// The upstream's `instructions`.
    pub instructions: Option<String>,
}

impl ServerHello {
    /// Whether the upstream declared capability `name` (e.g. `"prompts"`).
    pub fn has(&self, name: &str) -> bool {
        self.capabilities.get(name).is_some_and(|c| !c.is_null())
    }

    /// Whether `capabilities.<name>.<flag>` is `true`.
    pub fn flag(&self, name: &str, flag: &str) -> bool {
        self.capabilities.get(name).and_then(|c| c.get(flag)).and_then(Value::as_bool).unwrap_or(false)
    }
}

/// Where traffic related to one call goes: the downstream request's stream.
pub trait Route: Send + Sync {
    /// A notification about the call (progress, with the client's own token
    /// restored; log messages).
    fn notification(&self, notification: Notification);
    /// A server-to-client request issued while serving the call. Answer it
    /// with [`Peer::respond`]; `cancel` fires if the upstream withdraws it.
    fn request(&self, peer: Arc<Peer>, request: Request, cancel: CancellationToken);

    /// Asks the client a server-to-client request on toolgate's own
    /// account (a modern upstream's `InputRequiredResult`, answered for a
    /// client of an older revision) and returns its answer. The default
    /// route cannot reach a client.
    fn ask(
        &self,
        method: String,
        params: Option<Value>,
        cancel: CancellationToken,
    ) -> futures::future::BoxFuture<'static, Outcome> {
        let _ = (params, cancel);
        let e = crate::jsonrpc::ErrorObject::new(
            crate::jsonrpc::codes::METHOD_NOT_FOUND,
            format!("no client to ask {method} on this route"),
        );
        Box::pin(async move { Outcome::error(e) })
    }

    /// Whether what a connection without per-call streams (stdio, legacy
    /// SSE) sends while this call is the only one in flight that says so
    /// may be taken as this call's. A held call of a 2026-07-28 client says
    /// so while a client request waits on it; others keep the connection's
    /// own rule.
    fn takes_unattributed(&self) -> bool {
        false
    }
}

/// Where everything that belongs to no call goes.
pub trait PeerEvents: Send + Sync {
    /// An unsolicited notification (list changes, resource updates, logs).
    fn notification(&self, peer: &Arc<Peer>, notification: Notification);
    /// An unsolicited server-to-client request. Answer it with [`Peer::respond`].
    fn request(&self, peer: Arc<Peer>, request: Request, cancel: CancellationToken);
    /// The connection ended.
    fn closed(&self, peer: &Arc<Peer>, reason: &str);
}

struct Pending {
    tx: oneshot::Sender<Result<Outcome, UpstreamError>>,
    route: Option<Arc<dyn Route>>,
    /// The client's own progress token, replaced on this leg by the call's id.
    progress_token: Option<Value>,
    /// The call's deadline and cancellation, for a call with a timeout.
    watch: Option<Watch>,
    /// A modern request: over HTTP, closing its stream is the cancellation.
    modern: bool,
}

/// One upstream call: what to send, where its related traffic goes, and
/// the hooks the layers around [`Peer::call`] use.
pub struct Call {
    /// The method, e.g. `tools/call`.
    pub method: String,
    /// Its params, as the client sent them (the peer rewrites the progress
    /// token for its leg).
    pub params: Option<Value>,
    /// Where progress, logs and server-to-client requests about this call go.
    pub route: Option<Arc<dyn Route>>,
    /// Fires when the client cancels the request (watched, with the
    /// deadline, for a call with a timeout); `None`: no one can cancel it.
    pub(crate) cancel: Option<CancellationToken>,
    /// Give the call up when this passes without an answer (each progress
    /// notification restarts it) or when `cancel` fires; `None`: the call
    /// ends only when answered or dropped. Set by the deadline layer.
    pub(crate) timeout: Option<Duration>,
    /// Why the call was given up, for whoever gives it up from outside the
    /// layers (see [`Call::give_up`]); `None` until someone asks for it.
    give_up: Option<Arc<GiveUp>>,
    /// 0 for the first attempt, then 1 for a retry.
    pub(crate) attempt: u32,
    /// The downstream client this call is for (modern upstreams only).
    pub client: Option<Arc<ClientContext>>,
    /// The request came from a client of the modern era (its `_meta` names a
    /// protocol version): a modern upstream's result goes back as it is.
    pub downstream_modern: bool,
    /// Send as a modern request at this version before the leg's era is
    /// known (the era probe).
    pub(crate) probe: Option<&'static str>,
    /// Hand the request back with the answer ([`Answered::request`]): the
    /// multi-round driver sends it again with the client's answers, and
    /// keeps no copy of its own.
    pub(crate) hand_back: bool,
}

/// Why a call was given up, shared between the peer that sends it and
/// whoever gives it up from outside the layers (a held multi-round-trip
/// call): the upstream is told in `notifications/cancelled`.
#[derive(Default)]
pub struct GiveUp {
    /// Why the call was given up, set by whoever gives it up.
    pub reason: OnceLock<&'static str>,
}

impl GiveUp {
    /// Why a call is given up when its deadline passed.
    pub const TIMED_OUT: &'static str = "timed out";
    /// Why a call is given up when its client cancelled it.
    pub const CANCELLED_BY_CLIENT: &'static str = "cancelled by the client";
}

/// A request the peer hands back: the method and the client's own params
/// (its progress token restored), moved rather than copied, to send again.
#[derive(Debug)]
pub struct Returned {
    pub(crate) method: String,
    pub(crate) params: Option<Value>,
}

/// A call answered, with its request when the call asked for it back
/// ([`Call::hand_back`]).
#[derive(Debug)]
pub struct Answered {
    /// The upstream's answer.
    pub outcome: Outcome,
    /// The request, handed back for the next round of a multi-round call.
    pub(crate) request: Option<Returned>,
}

/// A call that failed, with its request when the upstream never saw it (it
/// forgot the session), so that the retry layer can send it again without
/// copying every call's params up front: what hyper's `TrySendError` does
/// for a request that was never sent.
#[derive(Debug)]
pub struct Failed {
    /// Why it failed.
    pub error: UpstreamError,
    /// The request, which the upstream never saw.
    pub(crate) unsent: Option<Returned>,
}

impl From<UpstreamError> for Failed {
    fn from(error: UpstreamError) -> Self {
        Self { error, unsent: None }
    }
}

/// What one attempt at a call comes to (the output of each layer of a call,
/// see `service.rs`).
pub type Attempt = Result<Answered, Failed>;

/// Everything of a call but its request: what another attempt or round
/// needs (see [`Call::resend`]). Cloning it copies no params.
#[derive(Clone)]
pub(crate) struct Resend {
    route: Option<Arc<dyn Route>>,
    cancel: Option<CancellationToken>,
    client: Option<Arc<ClientContext>>,
    downstream_modern: bool,
    probe: Option<&'static str>,
    attempt: u32,
    hand_back: bool,
    give_up: Option<Arc<GiveUp>>,
}

impl Resend {
    fn call(self, method: String, params: Option<Value>, give_up: Option<Arc<GiveUp>>, attempt: u32) -> Call {
        Call {
            method,
            params,
            route: self.route,
            cancel: self.cancel,
            client: self.client,
            downstream_modern: self.downstream_modern,
            probe: self.probe,
            timeout: None,
            give_up,
            attempt,
            hand_back: self.hand_back,
        }
    }

    /// The next attempt at the same request (one the peer handed back
    /// because the upstream never saw it), with a deadline of its own. It
    /// is given up the same way (the first attempt ended without being
    /// given up).
    pub(crate) fn with(self, request: Returned) -> Call {
        let (give_up, attempt) = (self.give_up.clone(), self.attempt + 1);
        self.call(request.method, request.params, give_up, attempt)
    }

    /// Fires when the client cancels the request.
    pub(crate) fn cancel(&self) -> Option<&CancellationToken> {
        self.cancel.as_ref()
    }

    /// The same call as a new request with `params` (the next round of a
    /// multi-round-trip request).
    pub(crate) fn round(self, method: String, params: Value) -> Call {
        self.call(method, Some(params), None, 0)
    }
}

impl Call {
    /// A call of `method` with `params`.
    pub fn new(method: impl Into<String>, params: Option<Value>) -> Self {
        Self {
            method: method.into(),
            downstream_modern: envelope::is_modern(params.as_ref()),
            client: None,
            probe: None,
            params,
            route: None,
            cancel: None,
            timeout: None,
            give_up: None,
            attempt: 0,
            hand_back: false,
        }
    }

    /// Sends the call's related traffic to `route`.
    pub fn routed(mut self, route: Arc<dyn Route>) -> Self {
        self.route = Some(route);
        self
    }

    /// Gives the call up when `cancel` fires.
    pub fn cancelled_by(mut self, cancel: CancellationToken) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Tells a modern upstream about the client the call is for (its
    /// capabilities, log level and `Mcp-Param-*` headers): shared, as one
    /// client's calls say the same.
    pub fn for_client(mut self, client: Arc<ClientContext>) -> Self {
        self.client = Some(client);
        self
    }

    /// Where whoever gives the call up from outside the layers says why
    /// (set [`GiveUp::reason`] before dropping it, and the upstream hears
    /// it). Made on first use: most calls never need it.
    pub fn give_up(&mut self) -> Arc<GiveUp> {
        self.give_up.get_or_insert_with(Arc::default).clone()
    }

    /// What another attempt at this call needs besides its request.
    pub(crate) fn resend(&self) -> Resend {
        Resend {
            route: self.route.clone(),
            cancel: self.cancel.clone(),
            client: self.client.clone(),
            downstream_modern: self.downstream_modern,
            probe: self.probe,
            attempt: self.attempt,
            hand_back: self.hand_back,
            give_up: self.give_up.clone(),
        }
    }
}

/// A leg that speaks the modern era.
struct ModernLeg {
    version: &'static str,
    /// The capabilities the connection declares for toolgate's own requests
    /// (and for clients that say nothing of theirs).
    capabilities: Value,
    era: Option<Arc<UpstreamEra>>,
}

/// How long telling an upstream that a call was abandoned may take, unless
/// its configuration says otherwise (`cancel_timeout`), in milliseconds.
const DEFAULT_CANCEL_TIMEOUT_MS: u64 = 5_000;

/// One initialized MCP session with an upstream.
pub struct Peer {
    /// The peer itself, for the inbox (transports hold it weakly).
    me: Weak<Peer>,
    label: Arc<str>,
    transport: Box<dyn Transport>,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, Pending>>,
    /// Server-to-client requests being answered, so the upstream can cancel them.
    incoming: Mutex<HashMap<Id, CancellationToken>>,
    events: Arc<dyn PeerEvents>,
    /// Attribute unsolicited requests and logs to the newest call in flight.
    /// Right for a connection without per-call streams (stdio, legacy SSE)
    /// that serves exactly one downstream session.
    attribute_to_latest_call: bool,
    hello: OnceLock<ServerHello>,
    modern: OnceLock<ModernLeg>,
    closed: CancellationToken,
    close_reason: Mutex<Option<String>>,
    /// Whether a ticker task watches the calls in flight (see [`watch`]).
    ticking: AtomicBool,
    /// How long telling the upstream of an abandoned call may take, in
    /// milliseconds (the upstream's `cancel_timeout`).
    cancel_timeout_ms: AtomicU64,
}

impl Peer {
    /// A peer over the transport `make_transport` builds (it gets the peer as
    /// the [`Inbox`] its reading tasks feed).
    pub(crate) fn new(
        label: Arc<str>,
        make_transport: impl FnOnce(Weak<dyn Inbox>) -> Box<dyn Transport>,
        events: Arc<dyn PeerEvents>,
        attribute_to_latest_call: bool,
    ) -> Arc<Self> {
        Arc::new_cyclic(|weak: &Weak<Peer>| {
            let inbox: Weak<dyn Inbox> = weak.clone();
            Self {
                me: weak.clone(),
                label,
                transport: make_transport(inbox),
                next_id: AtomicU64::new(1),
                pending: Mutex::new(HashMap::new()),
                incoming: Mutex::new(HashMap::new()),
                events,
                attribute_to_latest_call,
                hello: OnceLock::new(),
                modern: OnceLock::new(),
                closed: CancellationToken::new(),
                close_reason: Mutex::new(None),
                ticking: AtomicBool::new(false),
                cancel_timeout_ms: AtomicU64::new(DEFAULT_CANCEL_TIMEOUT_MS),
            }
        })
    }

    /// Bounds the telling of abandoned calls (the upstream's `cancel_timeout`).
    pub(crate) fn set_cancel_timeout(&self, timeout: std::time::Duration) {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        self.cancel_timeout_ms.store(ms, Ordering::Relaxed);
    }

    /// The upstream's name (for logs and errors).
    pub fn label(&self) -> &Arc<str> {
        &self.label
    }

    /// The upstream's `initialize` answer. Set once the handshake is done.
    pub fn hello(&self) -> Option<&ServerHello> {
        self.hello.get()
    }

    pub(crate) fn set_hello(&self, hello: ServerHello) {
        let _ = self.hello.set(hello);
    }

    /// Makes this a modern leg at `version`: every request carries the
    /// envelope (`capabilities` for requests that bring none) and, over
    /// HTTP, the routing headers (`era` holds the tools' `x-mcp-header`s).
    pub(crate) fn set_modern(&self, version: &'static str, capabilities: Value, era: Option<Arc<UpstreamEra>>) {
        let _ = self.modern.set(ModernLeg { version, capabilities, era });
    }

    /// The modern revision this leg speaks, if it does.
    pub fn modern(&self) -> Option<&'static str> {
        self.modern.get().map(|m| m.version)
    }

    /// Whether its requests carry the modern routing headers (a modern leg
    /// over HTTP).
    pub fn sends_routing_headers(&self) -> bool {
        self.modern().is_some() && self.transport.carries_headers()
    }

    pub(crate) fn transport(&self) -> &dyn Transport {
        &*self.transport
    }

    /// Whether what the upstream sends while serving a call can be tied to
    /// that call (each call has its own response stream).
    pub fn attributes_calls(&self) -> bool {
        self.transport.attributes_calls()
    }

    /// Whether the connection has ended.
    /// What tells an idle connection: how many requests it has sent so far
    /// (changes with every call), and how many await their answer.
    pub fn activity(&self) -> (u64, usize) {
        (self.next_id.load(Ordering::Relaxed), self.pending.lock().len())
    }

    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Fires when the connection ends.
    pub fn closed(&self) -> &CancellationToken {
        &self.closed
    }

    /// Why the connection ended, once it has.
    pub fn close_reason(&self) -> Option<String> {
        self.close_reason.lock().clone()
    }

    fn closed_error(&self) -> UpstreamError {
        let reason = self.close_reason().unwrap_or_else(|| "connection closed".into());
        UpstreamError::Closed { upstream: self.label.clone(), source: Cause::msg(reason) }
    }

    /// Calls upstream and waits for the outcome; related traffic goes to the
    /// call's route. A call with a `timeout` is given up when it passes
    /// (restarted by progress) or when the client cancels it; dropping the
    /// future gives any call up. Either way the upstream hears
    /// `notifications/cancelled`.
    pub async fn call(self: &Arc<Self>, call: Call) -> Result<Outcome, UpstreamError> {
        self.attempt(call).await.map(|a| a.outcome).map_err(|f| f.error)
    }

    /// [`Peer::call`], handing the request back with what it came to: with
    /// the answer when the call asks for it ([`Call::hand_back`]), with the
    /// error when the upstream never saw it (it forgot the session).
    pub(crate) async fn attempt(self: &Arc<Self>, call: Call) -> Attempt {
        if self.is_closed() {
            return Err(self.closed_error().into());
        }
        let Call { method, mut params, route, cancel, timeout, give_up, client, probe, hand_back, .. } = call;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        // Tokens must be unique among all requests on this leg, and several
        // clients may share it: the call's own id is.
        let progress_token = jsonrpc::progress_token(params.as_ref()).cloned();
        // The client's own token, for a request handed back.
        let restore = progress_token.clone();
        if progress_token.is_some() {
            jsonrpc::set_progress_token(&mut params, json!(id));
        }
        let modern = probe.or_else(|| self.modern());
        let mut extra = http::HeaderMap::new();
        if let Some(version) = modern
            && self.transport.carries_headers()
        {
            let tool = (method == method::TOOLS_CALL)
                .then(|| jsonrpc::member(params.as_ref()?, "name")?.as_str())
                .flatten()
                .and_then(|name| self.modern.get()?.era.as_ref()?.tools.get(name));
            let forwarded = client.as_ref().map(|c| c.param_headers.as_slice()).unwrap_or_default();
            extra = headers::request_headers(version, &method, params.as_ref(), tool.as_deref(), forwarded);
        }
        let (tx, mut rx) = oneshot::channel();
        let watch = timeout.map(|after| Watch::new(after, cancel));
        let watched = watch.is_some();
        let pending = Pending { tx, route, progress_token, watch, modern: modern.is_some() };
        self.pending.lock().insert(id, pending);
        if watched {
            self.watch();
        }
        let guard = Abandon { peer: self, id, give_up: give_up.as_deref() };
        let request = Request { id: Id::number(id), method, params };
        // The envelope is written as the request is encoded (its params stay
        // the client's, as a retry or the next round wants them).
        let stamped = modern
            .zip(self.modern.get())
            .map(|(version, leg)| envelope::encode(&request, version, &leg.capabilities, client.as_deref()));
        let request = Message::Request(request);
        let sent = async {
            if modern.is_some() {
                let text = stamped.unwrap_or_else(|| request.encode().into_bytes());
                self.transport.request_modern(id, &request, text, extra).await
            } else {
                self.transport.request(id, &request).await
            }
        };
        let closed = |_| Err(self.closed_error());
        let outcome = tokio::select! {
            // The answer, or the watch giving the call up (then the
            // exchange still under way is dropped).
            biased;
            answer = &mut rx => answer.unwrap_or_else(closed),
            sent = sent => match sent {
                Err(e) => Err(e),
                // The exchange carried the answer back itself.
                Ok(Some(response)) => Ok(response.outcome),
                Ok(None) => rx.await.unwrap_or_else(closed),
            },
        };
        guard.done();
        // The request goes back (moved, with the client's own progress
        // token): with the error when the upstream never saw it (it forgot
        // the session), with the answer when the call asked for it.
        let expired = modern.is_none() && matches!(outcome, Err(UpstreamError::SessionExpired { .. }));
        let returned = match request {
            Message::Request(r) if expired || (hand_back && outcome.is_ok()) => {
                let mut params = r.params;
                if let Some(token) = restore {
                    jsonrpc::set_progress_token(&mut params, token);
                }
                Some(Returned { method: r.method, params })
            }
            _ => None,
        };
        match outcome {
            Ok(outcome) => Ok(Answered { outcome, request: returned }),
            Err(error) => Err(Failed { error, unsent: returned }),
        }
    }

    /// Sends a notification upstream. Failures are logged: a notification has
    /// no one to report to.
    pub async fn notify(&self, method: &str, mut params: Option<Value>) {
        if let Some(leg) = self.modern.get() {
            // A modern HTTP upstream takes no notifications (cancellation is
            // closing the response stream); over stdio they carry the envelope.
            if self.transport.carries_headers() {
                tracing::trace!(upstream = %self.label, %method, "no notifications to a modern HTTP upstream");
                return;
            }
            envelope::stamp(&mut params, leg.version, &leg.capabilities, None);
        }
        let message = Message::Notification(Notification::new(method, params));
        if let Err(e) = self.transport.send(&message).await {
            tracing::debug!(upstream = %self.label, %method, error = %e.report(), "notification not delivered");
        }
    }

    /// Answers a server-to-client request of this upstream.
    pub async fn respond(&self, id: Id, outcome: Outcome) {
        if self.incoming.lock().remove(&id).is_none() {
            // The upstream withdrew it (notifications/cancelled): no answer is due.
            return;
        }
        if let Err(e) = self.transport.send(&Message::Response(Response { id: Some(id), outcome })).await {
            tracing::debug!(upstream = %self.label, error = %e.report(), "response not delivered");
        }
    }

    /// Ends the connection: every call in flight fails, every withdrawn
    /// server request is cancelled, and the owner hears about it once.
    pub(crate) fn close(self: &Arc<Self>, reason: &str) {
        {
            let mut r = self.close_reason.lock();
            if r.is_some() {
                return;
            }
            *r = Some(reason.to_owned());
        }
        self.closed.cancel();
        let error = self.closed_error();
        let pending: Vec<_> = self.pending.lock().drain().collect();
        for (_, p) in pending {
            let _ = p.tx.send(Err(error.clone()));
        }
        for (_, token) in self.incoming.lock().drain() {
            token.cancel();
        }
        self.events.closed(self, reason);
    }

    /// Shuts the connection down the polite way (see [`Transport::shutdown`]).
    pub async fn shutdown(self: &Arc<Self>) {
        self.transport.shutdown().await;
        self.close("shut down by toolgate");
    }

    // === inbound ===

    /// Takes one message from the transport. `related` is the call whose
    /// response stream carried it, when the transport knows (Streamable HTTP).
    pub(crate) fn dispatch(self: &Arc<Self>, message: Message, related: Option<u64>) {
        match message {
            Message::Response(response) => self.on_response(response, related),
            Message::Request(request) => self.on_request(request, related),
            Message::Notification(n) => self.on_notification(n, related),
        }
    }

    fn on_response(&self, response: Response, related: Option<u64>) {
        let id = match response.id.as_ref().and_then(Id::as_u64).or(related) {
            Some(id) => id,
            None => {
                tracing::warn!(upstream = %self.label, outcome = ?response.outcome, "upstream sent a response without a usable id");
                return;
            }
        };
        match self.pending.lock().remove(&id) {
            Some(p) => {
                let _ = p.tx.send(Ok(response.outcome));
            }
            // A late answer to a call that timed out or was cancelled.
            None => tracing::debug!(upstream = %self.label, id, "response to a call no longer waiting"),
        }
    }

    fn on_request(self: &Arc<Self>, request: Request, related: Option<u64>) {
        if request.method == method::PING {
            let peer = self.clone();
            self.incoming.lock().insert(request.id.clone(), CancellationToken::new());
            crate::spawn(async move { peer.respond(request.id, Outcome::Result(json!({}))).await });
            return;
        }
        let cancel = CancellationToken::new();
        self.incoming.lock().insert(request.id.clone(), cancel.clone());
        match self.route_for(related) {
            Some(route) => route.request(self.clone(), request, cancel),
            None => self.events.request(self.clone(), request, cancel),
        }
    }

    fn on_notification(self: &Arc<Self>, mut n: Notification, related: Option<u64>) {
        match n.method.as_str() {
            method::PROGRESS => {
                let token = n.params.as_ref().and_then(|p| p.get("progressToken")).and_then(Value::as_u64);
                let target = token.and_then(|t| {
                    let mut pending = self.pending.lock();
                    let p = pending.get_mut(&t)?;
                    // Only a call that asked for progress can be told about it.
                    let original = p.progress_token.clone()?;
                    if let Some(watch) = &mut p.watch {
                        watch.restart();
                    }
                    Some((p.route.clone()?, original))
                });
                match target {
                    Some((route, original)) => {
                        if let Some(Value::Object(p)) = &mut n.params {
                            p.insert("progressToken".into(), original);
                        }
                        route.notification(n);
                    }
                    // Progress for a finished call: clients choke on unknown tokens.
                    None => tracing::trace!(upstream = %self.label, "progress for no active call dropped"),
                }
            }
            method::CANCELLED => {
                let id = n.params.as_ref().and_then(|p| p.get("requestId")).and_then(Id::from_value);
                if let Some(token) = id.and_then(|id| self.incoming.lock().remove(&id)) {
                    token.cancel();
                }
            }
            method::MESSAGE => match self.route_for(related) {
                Some(route) => route.notification(n),
                None => self.events.notification(self, n),
            },
            _ => self.events.notification(self, n),
        }
    }

    // === calls given up ===

    /// Whether a ticker watches the calls in flight.
    #[cfg(test)]
    pub(crate) fn is_watching(&self) -> bool {
        self.ticking.load(Ordering::SeqCst)
    }

    /// Makes sure a ticker watches the calls in flight.
    fn watch(&self) {
        if !self.ticking.swap(true, Ordering::SeqCst) {
            // The connection's, not the span of the call that started it.
            let span = tracing::debug_span!(parent: None, "watch", upstream = %self.label);
            crate::spawn(tracing::Instrument::instrument(watch::ticker(self.me.clone()), span));
        }
    }

    /// Gives up the watched calls whose deadline passed by `now` or whose
    /// client cancelled them. `false` once no call is watched: the ticker
    /// ends.
    fn sweep(self: &Arc<Self>, now: tokio::time::Instant) -> bool {
        let (given_up, watching) = {
            let mut pending = self.pending.lock();
            let due: Vec<_> =
                pending.iter().filter_map(|(&id, p)| Some((id, p.watch.as_ref()?.given_up(now)?))).collect();
            let given_up: Vec<_> =
                due.into_iter().filter_map(|(id, why)| Some((id, pending.remove(&id)?, why))).collect();
            (given_up, pending.values().any(|p| p.watch.is_some()))
        };
        for (id, p, why) in given_up {
            self.give_up(id, p, why);
        }
        if watching {
            return true;
        }
        self.ticking.store(false, Ordering::SeqCst);
        // A call that came in meanwhile either saw `ticking` still set (then
        // it is in the table by now, and this ticker goes on) or started a
        // ticker of its own.
        self.pending.lock().values().any(|p| p.watch.is_some()) && !self.ticking.swap(true, Ordering::SeqCst)
    }

    /// Ends call `id`, which the watch gave up (out of the pending table):
    /// it fails, and the upstream is told why.
    fn give_up(self: &Arc<Self>, id: u64, p: Pending, why: GivenUp) {
        let error = match why {
            GivenUp::TimedOut(after) => UpstreamError::Timeout { upstream: self.label.clone(), after },
            GivenUp::Cancelled => UpstreamError::Cancelled,
        };
        let _ = p.tx.send(Err(error));
        self.tell_abandoned(id, why.reason(), p.modern);
    }

    /// Tells the upstream that toolgate gave up call `id` (already out of the
    /// pending table).
    fn tell_abandoned(self: &Arc<Self>, id: u64, reason: &'static str, modern: bool) {
        if self.is_closed() {
            return;
        }
        if modern && self.transport.carries_headers() {
            self.transport.abandon(id);
            return;
        }
        // An unanswered era probe: the connection is about to initialize (or
        // restart); a cancellation before `initialize` would only confuse it.
        if modern && self.modern().is_none() {
            return;
        }
        let peer = self.clone();
        // The caller cannot wait: the notification goes out on its own
        // task, with a time limit of its own (an upstream that stops
        // reading its input must not hold the task).
        crate::spawn(async move {
            let cancel = peer.notify(method::CANCELLED, Some(json!({"requestId": id, "reason": reason})));
            let bound = std::time::Duration::from_millis(peer.cancel_timeout_ms.load(Ordering::Relaxed));
            if tokio::time::timeout(bound, cancel).await.is_err() {
                tracing::debug!(upstream = %peer.label(), "telling the upstream of a cancellation timed out");
            }
        });
    }

    /// The route of the call `related` names, or for a single-session
    /// connection without per-call streams, the newest call in flight.
    fn route_for(&self, related: Option<u64>) -> Option<Arc<dyn Route>> {
        let pending = self.pending.lock();
        if let Some(route) = related.and_then(|id| pending.get(&id)).and_then(|p| p.route.clone()) {
            return Some(route);
        }
        if self.attribute_to_latest_call {
            return pending
                .iter()
                .filter(|(_, p)| p.route.is_some())
                .max_by_key(|(id, _)| **id)
                .and_then(|(_, p)| p.route.clone());
        }
        // Nothing on the wire names the call: only when exactly one call in
        // flight takes such traffic is it certainly that call's.
        if related.is_none() && !self.transport.attributes_calls() {
            let mut willing = pending.values().filter_map(|p| p.route.as_ref()).filter(|r| r.takes_unattributed());
            if let (Some(route), None) = (willing.next(), willing.next()) {
                return Some(route.clone());
            }
        }
        None
    }
}

/// Gives up a call whose future is dropped before its answer came (a
/// timeout, a client's cancellation): forgets it and tells the upstream.
struct Abandon<'a> {
    peer: &'a Arc<Peer>,
    id: u64,
    give_up: Option<&'a GiveUp>,
}

impl Abandon<'_> {
    /// The call is over: its answer arrived, or it failed on its own.
    fn done(self) {
        self.peer.pending.lock().remove(&self.id);
        std::mem::forget(self);
    }
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        // Whether the call was modern is kept with its entry.
        let Some(pending) = self.peer.pending.lock().remove(&self.id) else { return };
        let reason = self.give_up.and_then(|g| g.reason.get().copied()).unwrap_or("abandoned by toolgate");
        self.peer.tell_abandoned(self.id, reason, pending.modern);
    }
}

impl Inbox for Peer {
    fn deliver(&self, message: Message, call: Option<u64>) {
        if let Some(peer) = self.me.upgrade() {
            peer.dispatch(message, call);
        }
    }

    fn is_waiting(&self, call: u64) -> bool {
        self.pending.lock().contains_key(&call)
    }

    fn fail(&self, call: u64, error: UpstreamError) {
        if let Some(p) = self.pending.lock().remove(&call) {
            let _ = p.tx.send(Err(error));
        }
    }

    fn close(&self, reason: &str) {
        if let Some(peer) = self.me.upgrade() {
            Peer::close(&peer, reason);
        }
    }
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer").field("label", &self.label).field("closed", &self.is_closed()).finish()
    }
}
