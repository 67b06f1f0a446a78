//! Multi-round-trip translation for sessionless (2026-07-28) clients of a
//! handshake-era upstream (see [`crate::mrtr`]).
//!
//! The call goes upstream on a task of its own, with a [`HeldRoute`] that
//! collects the server-to-client requests the upstream sends while serving
//! it. When one arrives, the requests that come within a short window more
//! become one `InputRequiredResult` (keys `r1`, `r2`, …; a request the
//! client did not declare the capability for is answered to the upstream
//! with an error instead), the call is put in the hold table, and the
//! client's request is answered. The client's retry (same request, new id,
//! `inputResponses` and the byte-exact `requestState`) takes the call out
//! again: the answers go upstream as the JSON-RPC responses to its requests,
//! and the retry waits on the same upstream call (its result, or another
//! round). Requests the retry left unanswered are asked again under a new
//! state. A held call that expires, is refused or is dropped answers the
//! upstream's open requests (elicitation with `{"action": "cancel"}`, the
//! others with an error) and cancels the upstream call.
//!
//! With a shared `[mrtr] key` and shared sessions, a retry whose state names
//! another replica is passed to that one over Redis and answered from there
//! ([`remote`]).

mod remote;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::layer::Exchange;
use super::reach::Reach;
use super::resolve::{CheckRetry, RetryState};
use super::upstreams::UpstreamHandle;
use crate::auth::Principal;
use crate::config::MrtrConfig;
use crate::grants::Scope;
use crate::jsonrpc::{ErrorObject, Notification, Outcome, Request, codes, member};
use crate::mrtr::{Binding, Codec, Holds, MrtrError, StateError, Verified};
use crate::protocol::method;
use crate::protocol::modern::{input, result};
use crate::server::Downlink;
use crate::shared::SharedSessions;
use crate::upstream::{self, Call, GiveUp, Peer, Route, UpstreamError};

/// How long toolgate waits, after the upstream's first request of a round,
/// for more of them to put in the same `InputRequiredResult` (an upstream
/// that asks several things at once sends them back to back).
const COLLECT_WINDOW: Duration = Duration::from_millis(50);

/// How long after cancelling a dropped held call its open requests are
/// answered: the cancellation goes out first, so an upstream that honours
/// it never acts on the answers; one that does not still gets them.
const ANSWER_AFTER_CANCEL: Duration = Duration::from_secs(1);

/// The held upstream call's own deadline: none (toolgate applies the
/// upstream's `timeout` to each round a client waits on, and the hold time
/// between rounds).
const NO_DEADLINE: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// The translator: the state codec and the held calls.
pub(crate) struct Translator {
    codec: Codec,
    holds: Arc<Holds<Held>>,
    /// With shared sessions: the bus to the replicas holding other calls.
    shared: Option<Arc<SharedSessions>>,
    /// Rounds driven here for a retry that reached another replica, by the
    /// asker's exchange id: what cancels them when that client goes away.
    remote_rounds: remote::Rounds,
}

impl Translator {
    /// A translator bounded by `[mrtr]`, signing with its `key` (else a
    /// fresh random one); with shared sessions its states name this
    /// replica's tag, and retries holding another replica's go there.
    pub fn new(config: &MrtrConfig, shared: Option<Arc<SharedSessions>>) -> Self {
        let mut codec = match &config.key {
            Some(key) => Codec::keyed(key.expose().as_bytes()),
            None => Codec::random(),
        };
        if let Some(shared) = &shared {
            codec = codec.naming(shared.replica());
            if config.key.is_none() {
                tracing::warn!(
                    "sessions are shared across replicas but [mrtr] key is not set: a 2026-07-28 client's retry \
                     of a held call that reaches another replica is refused (-32602); set the same key on every replica"
                );
            }
        }
        Self {
            codec,
            holds: Holds::new(config.hold_timeout, config.max_held_per_client, config.max_held),
            shared,
            remote_rounds: remote::Rounds::default(),
        }
    }

    /// Drops every held call (shutdown): the upstream calls are cancelled.
    pub fn clear(&self) {
        self.holds.clear();
    }

    /// Whether `params` carry a `requestState` toolgate issued (its
    /// signature verifies). Such a request is a retry of a call the gate and
    /// the rate limit already admitted, and only ever reaches its held call.
    pub fn is_own_state(&self, params: Option<&Value>) -> bool {
        params
            .and_then(|p| member(p, result::REQUEST_STATE))
            .and_then(Value::as_str)
            .is_some_and(|s| self.codec.is_own(s))
    }

    /// Whether the call `state` names is held on this replica now.
    pub(crate) fn holds_here(&self, state: &Verified) -> bool {
        state.replica == self.codec.replica() && self.holds.contains(&state.hold)
    }

    /// Whether `retry` is the retry of a call held now for that very client
    /// and request: its state verifies in full and names a held call. Only
    /// such a retry is the same call as its first round; a state that is
    /// merely authentic proves nothing. A call held on another replica is
    /// asked about there (a short exchange over the bus; `false` if it does
    /// not answer).
    pub async fn resumes(&self, retry: &RetryState) -> bool {
        match &retry.checked {
            Ok(state) if state.replica == self.codec.replica() => retry.held_here,
            Ok(state) => match &self.shared {
                Some(shared) => remote::holds(shared, &state.replica, &retry.token, &retry.binding).await,
                None => false,
            },
            Err(_) => false,
        }
    }

    /// Serves a sessionless request to the handshake-era upstream `up`,
    /// reached with `reach`: a first round starts the call; a retry
    /// carrying a `requestState` resumes the held call it names. Errors of
    /// the translation itself (state, answers, limits) are JSON-RPC errors
    /// in the outcome.
    pub(crate) async fn call(
        &self,
        cx: Exchange<'_>,
        reach: &Arc<Reach>,
        up: &Arc<UpstreamHandle>,
        method: &str,
        params: Option<Value>,
    ) -> Result<Outcome, UpstreamError> {
        let principal = Scope::of(&cx.session.state.principal());
        let binding = Binding::of(&up.label, method, params.as_ref(), principal.as_str());
        let retry = params.as_ref().is_some_and(|p| p.get(result::REQUEST_STATE).is_some());
        let waiter = Waiter {
            sink: Sink::Local(cx.ctx.downlink.clone()),
            cancel: cx.ctx.cancel.clone(),
            capabilities: cx.session.client_capabilities().clone(),
        };
        let outcome = if retry {
            let checked = cx.resolved.retry().filter(|_| method == method::TOOLS_CALL);
            self.retry(&waiter, up, binding, params.as_ref(), checked).await
        } else {
            // The client's own upstream session where it has one (a
            // `per_session` upstream), else the shared one.
            let connections = super::connections::unowned(reach, cx.session, up.clone());
            self.start(connections, &waiter, up, binding, method, params).await
        };
        match outcome {
            Ok(outcome) => outcome,
            Err(Failure::Mrtr(e)) => {
                tracing::debug!(error = %e, "multi-round-trip request refused");
                Ok(Outcome::error(e.to_error_object()))
            }
            Err(Failure::Upstream(e)) => Err(e),
        }
    }

    /// The first round: the call goes upstream on a task of its own.
    async fn start(
        &self,
        connections: super::connections::CallConnections<'static>,
        waiter: &Waiter,
        up: &Arc<UpstreamHandle>,
        binding: Binding,
        method: &str,
        params: Option<Value>,
    ) -> Result<Result<Outcome, UpstreamError>, Failure> {
        let (asks_tx, asks) = mpsc::unbounded_channel();
        // Waited on from the start: what the upstream asks at once is this call's.
        let downlink = Mutex::new(Some(waiter.sink.clone()));
        let route = Arc::new(HeldRoute { asks: asks_tx, downlink, progressed: Notify::new() });
        let cancel = CancellationToken::new();
        let mut call = Call::new(method, params).routed(route.clone()).cancelled_by(cancel.clone());
        call.downstream_modern = true;
        let give_up = call.give_up();
        let (tx, result) = oneshot::channel();
        crate::spawn(async move {
            let _ = tx.send(upstream::service::call(connections, NO_DEADLINE, call).await);
        });
        let held = Held { result, asks, open: BTreeMap::new(), next_key: 1, cancel, give_up, route, binding };
        self.drive(waiter, up, held).await
    }

    /// A retry: checks its state (unless `checked` already, as the request
    /// was resolved) and resumes the held call it names, here or on the
    /// replica holding it.
    async fn retry(
        &self,
        waiter: &Waiter,
        up: &Arc<UpstreamHandle>,
        binding: Binding,
        params: Option<&Value>,
        checked: Option<&RetryState>,
    ) -> Result<Result<Outcome, UpstreamError>, Failure> {
        let answers = input_responses(params)?;
        // Everything but where the call is held is checked here, whichever
        // replica holds it (a tool call's state as the request was resolved).
        let (token, state) = match checked {
            Some(retry) => (&*retry.token, retry.checked.clone()),
            None => {
                let token = params.and_then(|p| p.get(result::REQUEST_STATE)).and_then(Value::as_str);
                let token = token.ok_or(MrtrError::InvalidState(StateError::Malformed))?;
                (token, self.codec.check(token, &binding, SystemTime::now()))
            }
        };
        let state = state.map_err(MrtrError::InvalidState)?;
        if state.replica == self.codec.replica() {
            return self.resume(waiter, up, &state.hold, answers).await;
        }
        match &self.shared {
            Some(shared) => remote::resume(shared, &state.replica, token, &binding, answers, waiter).await,
            None => Err(MrtrError::InvalidState(StateError::OtherReplica).into()),
        }
    }

    /// Consumes the held call `hold` (single use), sends the answers
    /// upstream, and waits on it again.
    async fn resume(
        &self,
        waiter: &Waiter,
        up: &Arc<UpstreamHandle>,
        hold: &str,
        answers: Map<String, Value>,
    ) -> Result<Result<Outcome, UpstreamError>, Failure> {
        let mut held = self.holds.take(hold).ok_or(MrtrError::InvalidState(StateError::NotHeld))?;
        // Waited on again before the answers go: what the upstream asks next is this call's.
        held.route.attach(Some(waiter.sink.clone()));
        for (key, answer) in answers {
            // Unknown keys are ignored (the spec says so).
            if let Some(ask) = held.open.remove(&key) {
                ask.peer.respond(ask.request.id, Outcome::Result(answer)).await;
            }
        }
        // What the upstream withdrew needs no answer.
        held.open.retain(|_, ask| !ask.withdrawn.is_cancelled());
        if !held.open.is_empty() {
            let requests = held.open.iter().map(|(key, ask)| (key.clone(), ask.input_request())).collect();
            return Ok(Ok(self.hold(held, requests)?));
        }
        self.drive(waiter, up, held).await
    }

    /// Waits on the held call for this client request: its result, or the
    /// upstream's next requests (then the call is held again and the client
    /// gets them), within the upstream's `timeout` (restarted by progress).
    async fn drive(
        &self,
        waiter: &Waiter,
        up: &Arc<UpstreamHandle>,
        mut held: Held,
    ) -> Result<Result<Outcome, UpstreamError>, Failure> {
        held.route.attach(Some(waiter.sink.clone()));
        let after = up.config.timeout;
        let mut deadline = std::pin::pin!(tokio::time::sleep(after));
        loop {
            tokio::select! {
                biased;
                outcome = &mut held.result => {
                    held.route.attach(None);
                    return outcome.map_err(|_| Failure::Upstream(UpstreamError::Cancelled));
                }
                Some(first) = held.asks.recv() => {
                    let mut asks = vec![first];
                    let window = tokio::time::sleep(COLLECT_WINDOW);
                    tokio::pin!(window);
                    loop {
                        tokio::select! {
                            Some(more) = held.asks.recv() => asks.push(more),
                            _ = &mut window => break,
                        }
                    }
                    let mut requests = Map::new();
                    for ask in asks {
                        if let Err(why) = admissible(&waiter.capabilities, up, &ask.request) {
                            let e = ErrorObject::new(codes::METHOD_NOT_FOUND, why);
                            ask.peer.respond(ask.request.id, Outcome::error(e)).await;
                            continue;
                        }
                        let key = format!("r{}", held.next_key);
                        held.next_key += 1;
                        requests.insert(key.clone(), ask.input_request());
                        held.open.insert(key, ask);
                    }
                    if !requests.is_empty() {
                        return Ok(Ok(self.hold(held, requests)?));
                    }
                }
                _ = held.route.progressed.notified() => deadline.as_mut().reset(tokio::time::Instant::now() + after),
                _ = &mut deadline => {
                    let _ = held.give_up.reason.set(GiveUp::TIMED_OUT);
                    return Err(Failure::Upstream(UpstreamError::Timeout { upstream: up.label.clone(), after }));
                }
                _ = waiter.cancel.cancelled() => {
                    let _ = held.give_up.reason.set(GiveUp::CANCELLED_BY_CLIENT);
                    return Err(Failure::Upstream(UpstreamError::Cancelled));
                }
            }
        }
    }

    /// Holds the call and answers the client with `requests` and the state
    /// naming the hold.
    fn hold(&self, held: Held, requests: Map<String, Value>) -> Result<Outcome, MrtrError> {
        held.route.attach(None);
        let binding = held.binding.clone();
        let id = self.holds.insert(&binding.principal, held).map_err(|(e, refused)| {
            let _ = refused.give_up.reason.set("too many calls held for client input");
            e
        })?;
        let state = self.codec.sign(&id, &binding, SystemTime::now() + self.holds.hold_timeout());
        Ok(Outcome::Result(json!({
            result::RESULT_TYPE: result::INPUT_REQUIRED,
            result::INPUT_REQUESTS: requests,
            result::REQUEST_STATE: state,
        })))
    }
}

impl CheckRetry for Translator {
    /// Checks `token`, the `requestState` of the request `method` with
    /// `params` (in the upstream's terms: its own tool name) to upstream
    /// `upstream` from `principal`, once: whether toolgate signed it, what it
    /// verifies as (signature, expiry, client, request: everything but
    /// which replica holds the call), and whether its call is held here now.
    fn check(&self, token: &str, principal: &Principal, upstream: &str, method: &str, params: &Value) -> RetryState {
        let binding = Binding::of(upstream, method, Some(params), Scope::of(principal).as_str());
        let checked = self.codec.check(token, &binding, SystemTime::now());
        let own = !matches!(checked, Err(StateError::Malformed | StateError::Tampered));
        let held_here = checked.as_ref().is_ok_and(|state| self.holds_here(state));
        RetryState { own, token: token.into(), binding, checked, held_here }
    }
}

/// The client request waiting on a round: here, or on the replica the
/// retry reached (then its notifications travel back over the bus).
pub(crate) struct Waiter {
    /// Where the call's notifications go while the round lasts.
    sink: Sink,
    /// Fires when the client gives up the request.
    cancel: CancellationToken,
    /// What the client declared it can be asked (its envelope's capabilities).
    capabilities: Value,
}

/// Where a held call's notifications go while a client request waits on it.
#[derive(Clone)]
enum Sink {
    /// The client request's own stream, on this replica.
    Local(Downlink),
    /// Back to the replica that passed the retry here.
    Remote(mpsc::UnboundedSender<Notification>),
}

impl Sink {
    fn send(&self, notification: Notification) {
        match self {
            Sink::Local(downlink) => {
                downlink.send(notification);
            }
            // The round's relay ended: the retry was answered.
            Sink::Remote(to) => {
                let _ = to.send(notification);
            }
        }
    }
}

/// Why a round failed: the translation refused it, or the upstream call did.
enum Failure {
    Mrtr(MrtrError),
    Upstream(UpstreamError),
}

impl From<MrtrError> for Failure {
    fn from(e: MrtrError) -> Self {
        Failure::Mrtr(e)
    }
}

/// The retry's answers by key: `inputResponses` must be an object of
/// objects (absent: no answers).
fn input_responses(params: Option<&Value>) -> Result<Map<String, Value>, MrtrError> {
    match params.and_then(|p| p.get(result::INPUT_RESPONSES)) {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(answers)) => match answers.iter().find(|(_, a)| !a.is_object()) {
            Some((key, _)) => Err(MrtrError::MalformedResponses(format!("the answer to {key:?} is not an object"))),
            None => Ok(answers.clone()),
        },
        Some(_) => Err(MrtrError::MalformedResponses("inputResponses must be an object of answers by key".into())),
    }
}

/// Whether the client, which declared `capabilities`, may be asked
/// `request`: an input request it declared the capability for (roots only
/// where the upstream may have them), or why not.
fn admissible(capabilities: &Value, up: &UpstreamHandle, request: &Request) -> Result<(), String> {
    let Some(capability) = input::capability(&request.method) else {
        return Err(format!("{} cannot be carried to a 2026-07-28 client", request.method));
    };
    if capabilities.get(capability).is_none_or(Value::is_null) {
        return Err(format!("the client did not declare support for {} (capability {capability})", request.method));
    }
    if request.method == input::ROOTS_LIST && !up.config.forward_roots {
        return Err("roots/list cannot be routed to a client: this upstream is not given the client's roots \
                    (forward_roots)"
            .into());
    }
    Ok(())
}

/// A server-to-client request of the upstream, asked of the client.
struct Ask {
    peer: Arc<Peer>,
    request: Request,
    /// Fires if the upstream withdraws it.
    withdrawn: CancellationToken,
}

impl Ask {
    /// The request as an `InputRequest` (`{method, params}`, no id).
    fn input_request(&self) -> Value {
        let params = self.request.params.clone().unwrap_or_else(|| json!({}));
        json!({"method": self.request.method, "params": params})
    }

    /// What the upstream hears when the client never answered.
    fn unanswered(&self) -> Outcome {
        if self.request.method == input::ELICITATION_CREATE {
            Outcome::Result(json!({"action": "cancel"}))
        } else {
            let why = format!("the client did not answer {} in time", self.request.method);
            Outcome::error(ErrorObject::new(codes::INTERNAL_ERROR, why))
        }
    }
}

/// An upstream call waiting for the client, between rounds or during one.
/// Dropping it (expiry, shutdown, refusal, a failed round) answers what the
/// upstream asked and cancels its call.
pub(crate) struct Held {
    /// The call's outcome, from its task.
    result: oneshot::Receiver<Result<Outcome, UpstreamError>>,
    /// The upstream's requests not yet put to the client.
    asks: mpsc::UnboundedReceiver<Ask>,
    /// The requests put to the client, by key, awaiting its answers.
    open: BTreeMap<String, Ask>,
    next_key: usize,
    /// Cancels the upstream call.
    cancel: CancellationToken,
    /// Why the call was given up (told to the upstream).
    give_up: Arc<GiveUp>,
    route: Arc<HeldRoute>,
    binding: Binding,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.route.attach(None);
        let mut unanswered: Vec<Ask> = std::mem::take(&mut self.open).into_values().collect();
        while let Ok(ask) = self.asks.try_recv() {
            unanswered.push(ask);
        }
        let running = matches!(self.result.try_recv(), Err(oneshot::error::TryRecvError::Empty));
        if running {
            let _ = self.give_up.reason.set("toolgate stopped holding the call for client input");
            tracing::debug!(upstream = %self.binding.upstream, "a held call ended unanswered: cancelling its upstream call");
        }
        // Cancel first (see ANSWER_AFTER_CANCEL).
        self.cancel.cancel();
        if unanswered.is_empty() {
            return;
        }
        crate::spawn(async move {
            tokio::time::sleep(ANSWER_AFTER_CANCEL).await;
            for ask in unanswered {
                let outcome = ask.unanswered();
                ask.peer.respond(ask.request.id, outcome).await;
            }
        });
    }
}

/// Where the held call's traffic goes: its requests to the translator, its
/// notifications (progress, logs) to the client request waiting on it, if any.
struct HeldRoute {
    asks: mpsc::UnboundedSender<Ask>,
    downlink: Mutex<Option<Sink>>,
    /// Signalled on each progress notification (restarts the round's timeout).
    progressed: Notify,
}

impl HeldRoute {
    /// Sends the call's notifications to `downlink` (`None`: between rounds,
    /// when they are dropped).
    fn attach(&self, downlink: Option<Sink>) {
        *self.downlink.lock() = downlink;
    }
}

impl Route for HeldRoute {
    fn notification(&self, notification: Notification) {
        if notification.method == method::PROGRESS {
            self.progressed.notify_one();
        }
        if let Some(downlink) = self.downlink.lock().as_ref() {
            downlink.send(notification);
        }
    }

    fn request(&self, peer: Arc<Peer>, request: Request, cancel: CancellationToken) {
        if let Err(mpsc::error::SendError(ask)) = self.asks.send(Ask { peer, request, withdrawn: cancel }) {
            // The call is no longer held.
            let e = ErrorObject::new(codes::INTERNAL_ERROR, "the call this request belongs to has ended");
            crate::spawn(async move { ask.peer.respond(ask.request.id, Outcome::error(e)).await });
        }
    }

    /// Only while a client request waits on the call: a call held between
    /// rounds (perhaps abandoned by its client) must not make every other
    /// call's requests ambiguous for its whole hold time.
    fn takes_unattributed(&self) -> bool {
        self.downlink.lock().is_some()
    }
}
