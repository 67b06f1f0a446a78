//! One MCP session with an upstream: id allocation, the pending-call table,
//! progress-token rewriting, and routing of what the upstream sends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use super::error::UpstreamError;
use super::http::HttpLink;
use super::sse::SseLink;
use super::stdio::StdioLink;
use crate::jsonrpc::{self, Id, Message, Notification, Outcome, Request, Response};
use crate::protocol::{Version, method};

/// What toolgate declares when it initializes an upstream session.
#[derive(Debug, Clone)]
pub struct ClientHello {
    /// `capabilities` sent upstream.
    pub capabilities: Value,
    /// `clientInfo` sent upstream.
    pub client_info: Value,
}

/// What the upstream answered to `initialize`.
#[derive(Debug, Clone)]
pub struct ServerHello {
    /// The revision negotiated on this leg.
    pub version: Version,
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

/// The transport under a peer.
pub(crate) enum Link {
    Stdio(StdioLink),
    Http(HttpLink),
    Sse(SseLink),
}

struct Pending {
    tx: oneshot::Sender<Result<Outcome, UpstreamError>>,
    route: Option<Arc<dyn Route>>,
    /// The client's own progress token, replaced on this leg by the call's id.
    progress_token: Option<Value>,
    /// Signalled on each progress notification: progress restarts the
    /// call's timeout (a long job that reports progress is not hung).
    progressed: Option<Arc<Notify>>,
}

/// One initialized MCP session with an upstream.
pub struct Peer {
    label: Arc<str>,
    link: Link,
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
    closed: CancellationToken,
    close_reason: Mutex<Option<String>>,
    timeout: Duration,
}

impl Peer {
    /// A peer over the link `make_link` builds (it gets a weak handle to the
    /// peer, for the tasks that feed it).
    pub(crate) fn new(
        label: Arc<str>,
        make_link: impl FnOnce(Weak<Peer>) -> Link,
        events: Arc<dyn PeerEvents>,
        attribute_to_latest_call: bool,
        timeout: Duration,
    ) -> Arc<Self> {
        Arc::new_cyclic(|weak| Self {
            label,
            link: make_link(weak.clone()),
            next_id: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            incoming: Mutex::new(HashMap::new()),
            events,
            attribute_to_latest_call,
            hello: OnceLock::new(),
            closed: CancellationToken::new(),
            close_reason: Mutex::new(None),
            timeout,
        })
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

    pub(crate) fn link(&self) -> &Link {
        &self.link
    }

    /// Whether the connection has ended.
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
        UpstreamError::Closed {
            upstream: self.label.clone(),
            reason: self.close_reason().unwrap_or_else(|| "connection closed".into()),
        }
    }

    /// Calls `method` upstream and waits for the outcome. Related traffic goes
    /// to `route`. If `cancel` fires or the timeout passes, the upstream gets
    /// `notifications/cancelled` and the call fails.
    pub async fn call(
        self: &Arc<Self>,
        method: &str,
        mut params: Option<Value>,
        route: Option<Arc<dyn Route>>,
        cancel: &CancellationToken,
    ) -> Result<Outcome, UpstreamError> {
        if self.is_closed() {
            return Err(self.closed_error());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        // Tokens must be unique among all requests on this leg, and several
        // clients may share it: the call's own id is.
        let progress_token = jsonrpc::progress_token(params.as_ref()).cloned();
        if progress_token.is_some() {
            jsonrpc::set_progress_token(&mut params, json!(id));
        }
        let (tx, mut rx) = oneshot::channel();
        let progressed = progress_token.is_some().then(|| Arc::new(Notify::new()));
        self.pending.lock().insert(id, Pending { tx, route, progress_token, progressed: progressed.clone() });
        let request = Message::Request(Request { id: Id::number(id), method: method.to_owned(), params });
        let sent = match &self.link {
            Link::Stdio(link) => link.send(&request).await,
            Link::Sse(link) => link.send(&request).await,
            Link::Http(_) => Ok(()),
        };
        if let Err(e) = sent {
            self.pending.lock().remove(&id);
            return Err(e);
        }
        // Over HTTP the exchange runs in this task and feeds the answer into
        // `rx` (dropped, and the request with it, on timeout or cancellation).
        // Boxed: the HTTP exchange is a large future, and every call future
        // (stdio ones too) would otherwise carry its size through each move.
        let exchange = async {
            if let Link::Http(link) = &self.link {
                Box::pin(link.exchange(self, &request, id)).await;
            }
            std::future::pending::<()>().await
        };
        tokio::pin!(exchange);
        let deadline = tokio::time::sleep(self.timeout);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                outcome = &mut rx => return outcome.unwrap_or_else(|_| Err(self.closed_error())),
                () = &mut exchange => return Err(self.closed_error()),
                _ = &mut deadline => {
                    self.abandon(id, "timed out").await;
                    return Err(UpstreamError::Timeout { upstream: self.label.clone(), after: self.timeout });
                }
                _ = cancel.cancelled() => {
                    self.abandon(id, "cancelled by the client").await;
                    return Err(UpstreamError::Cancelled);
                }
                _ = progress_of(&progressed) => deadline.as_mut().reset(tokio::time::Instant::now() + self.timeout),
            }
        }
    }

    /// Forgets a call and tells the upstream to stop working on it.
    async fn abandon(&self, id: u64, reason: &str) {
        if self.pending.lock().remove(&id).is_some() && !self.is_closed() {
            self.notify(method::CANCELLED, Some(json!({"requestId": id, "reason": reason}))).await;
        }
    }

    /// Sends a notification upstream. Failures are logged: a notification has
    /// no one to report to.
    pub async fn notify(&self, method: &str, params: Option<Value>) {
        let message = Message::Notification(Notification::new(method, params));
        if let Err(e) = self.send(&message).await {
            tracing::debug!(upstream = %self.label, %method, error = %e, "notification not delivered");
        }
    }

    /// Answers a server-to-client request of this upstream.
    pub async fn respond(&self, id: Id, outcome: Outcome) {
        if self.incoming.lock().remove(&id).is_none() {
            // The upstream withdrew it (notifications/cancelled): no answer is due.
            return;
        }
        if let Err(e) = self.send(&Message::Response(Response { id: Some(id), outcome })).await {
            tracing::debug!(upstream = %self.label, error = %e, "response not delivered");
        }
    }

    /// Sends a notification or a response.
    async fn send(&self, message: &Message) -> Result<(), UpstreamError> {
        match &self.link {
            Link::Stdio(link) => link.send(message).await,
            Link::Http(link) => link.send_other(message).await,
            Link::Sse(link) => link.send(message).await,
        }
    }

    /// Whether call `id` still waits for its response.
    pub(crate) fn is_pending(&self, id: u64) -> bool {
        self.pending.lock().contains_key(&id)
    }

    /// Fails call `id` (its transport could not deliver an answer).
    pub(crate) fn fail(&self, id: u64, error: UpstreamError) {
        if let Some(p) = self.pending.lock().remove(&id) {
            let _ = p.tx.send(Err(error));
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

    /// Shuts the connection down the polite way (stdio: close stdin, then
    /// SIGTERM, then SIGKILL; Streamable HTTP: DELETE the session; legacy
    /// SSE: drop the stream).
    pub async fn shutdown(self: &Arc<Self>) {
        match &self.link {
            Link::Stdio(link) => link.shutdown().await,
            Link::Http(link) => link.shutdown().await,
            Link::Sse(link) => link.shutdown().await,
        }
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
            tokio::spawn(async move { peer.respond(request.id, Outcome::Result(json!({}))).await });
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
                    let pending = self.pending.lock();
                    let p = pending.get(&t)?;
                    if let Some(progressed) = &p.progressed {
                        progressed.notify_one();
                    }
                    Some((p.route.clone()?, p.progress_token.clone()?))
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
        None
    }
}

/// Resolves on the next progress of a call that asked for progress; never
/// for one that did not.
async fn progress_of(progressed: &Option<Arc<Notify>>) {
    match progressed {
        Some(n) => n.notified().await,
        None => std::future::pending().await,
    }
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer").field("label", &self.label).field("closed", &self.is_closed()).finish()
    }
}
