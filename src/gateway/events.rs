//! Where upstream traffic goes: back to the downstream request that caused
//! it ([`SessionRoute`]), to the session that owns an upstream session
//! ([`SessionEvents`]), or to the gateway itself ([`ControlEvents`]).

use std::sync::{Arc, Weak};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::Gateway;
use super::reach::Upward;
use super::state::GwSession;
use crate::jsonrpc::{ErrorObject, Message, Notification, Outcome, Request, codes};
use crate::protocol::method;
use crate::protocol::modern::{listen, method as modern_method};
use crate::server::{ClientRequestError, Downlink, RequestCtx};
use crate::upstream::{Peer, PeerEvents, Route};

/// The gateway as the forwarder sees it above itself (see [`Upward`]).
pub(crate) struct ToGateway(pub Weak<Gateway>);

impl Upward for ToGateway {
    fn route(&self, session: &Arc<GwSession>, ctx: &RequestCtx, index: usize) -> Arc<dyn Route> {
        Arc::new(SessionRoute::new(self.0.clone(), session, ctx, index))
    }

    fn session_events(&self, session: Weak<GwSession>, index: usize) -> Arc<dyn PeerEvents> {
        Arc::new(SessionEvents::new(self.0.clone(), session, index))
    }

    fn audience(&self) -> Vec<Arc<GwSession>> {
        self.0.upgrade().map(|gw| gw.audience()).unwrap_or_default()
    }
}

/// Traffic about one forwarded call: onto that request's stream.
pub struct SessionRoute {
    gateway: Weak<Gateway>,
    session: Arc<GwSession>,
    /// The upstream the call went to.
    index: usize,
    downlink: Downlink,
    /// The span of the client request the call serves: what the upstream
    /// sends about it is handled there.
    span: tracing::Span,
}

impl SessionRoute {
    /// The route of a call made while serving a client request.
    pub fn new(gateway: Weak<Gateway>, session: &Arc<GwSession>, ctx: &RequestCtx, index: usize) -> Self {
        let (downlink, span) = (ctx.downlink.clone(), ctx.span.clone());
        Self { gateway, session: session.clone(), index, downlink, span }
    }
}

impl Route for SessionRoute {
    fn notification(&self, notification: Notification) {
        // A closed stream means the client went away; progress for it is moot.
        self.downlink.send(notification);
    }

    fn request(&self, peer: Arc<Peer>, request: Request, cancel: CancellationToken) {
        let _entered = self.span.enter();
        if let Some(gw) = self.gateway.upgrade() {
            if roots_withheld(&gw, &peer, &request) {
                return refuse(peer, request, "this upstream is not given the client's roots (forward_roots)");
            }
            gw.forwarder().note_url_elicitation(self.index, &self.session, &request);
        }
        relay_request(self.session.clone(), Some(self.downlink.clone()), peer, request, cancel);
    }

    /// A modern upstream's input request, asked of a client of an older
    /// revision on this request's stream.
    fn ask(
        &self,
        method: String,
        params: Option<Value>,
        cancel: CancellationToken,
    ) -> futures::future::BoxFuture<'static, Outcome> {
        let (session, via) = (self.session.clone(), self.downlink.clone());
        Box::pin(async move {
            if !session.client_supports(&method) {
                let why = format!("the client did not declare support for {method}");
                return Outcome::error(ErrorObject::new(codes::METHOD_NOT_FOUND, why));
            }
            let mut params = params;
            if let Some(p) = params.as_mut() {
                super::translate::request_params(&method, p, session.version());
            }
            match session.request_client(&method, params, Some(&via), &cancel).await {
                Ok(outcome) => outcome,
                Err(ClientRequestError::Cancelled) => {
                    Outcome::error(ErrorObject::new(codes::INTERNAL_ERROR, "the request was cancelled"))
                }
                Err(ClientRequestError::SessionClosed) => Outcome::error(ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    "the client session ended before it answered",
                )),
            }
        })
    }
}

/// Carries a server-to-client request to the client and its answer back.
/// Requests the client did not declare support for are refused upstream, as
/// the client itself would.
fn relay_request(
    session: Arc<GwSession>,
    via: Option<Downlink>,
    peer: Arc<Peer>,
    request: Request,
    cancel: CancellationToken,
) {
    crate::spawn(async move {
        if !session.client_supports(&request.method) {
            let e = ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("the client did not declare support for {}", request.method),
            );
            return peer.respond(request.id, Outcome::error(e)).await;
        }
        let mut params = request.params;
        if let Some(p) = params.as_mut() {
            super::translate::request_params(&request.method, p, session.version());
        }
        match session.request_client(&request.method, params, via.as_ref(), &cancel).await {
            Ok(outcome) => peer.respond(request.id, outcome).await,
            // The upstream withdrew the request: it expects no answer.
            Err(ClientRequestError::Cancelled) => {}
            Err(ClientRequestError::SessionClosed) => {
                let e = ErrorObject::new(codes::INTERNAL_ERROR, "the client session ended before it answered");
                peer.respond(request.id, Outcome::error(e)).await;
            }
        }
    });
}

/// Whether `request` asks for the client's roots on behalf of an upstream
/// without `forward_roots` (some servers let the client's roots replace the
/// directories their operator configured).
fn roots_withheld(gateway: &Gateway, peer: &Peer, request: &Request) -> bool {
    request.method == ROOTS_LIST
        && gateway.upstreams().iter().find(|u| u.label == *peer.label()).is_none_or(|u| !u.config.forward_roots)
}

/// The server-to-client request for the client's roots.
const ROOTS_LIST: &str = "roots/list";

/// Refuses a server-to-client request nobody can answer.
fn refuse(peer: Arc<Peer>, request: Request, why: &str) {
    let e =
        ErrorObject::new(codes::METHOD_NOT_FOUND, format!("{} cannot be routed to a client: {why}", request.method));
    crate::spawn(async move { peer.respond(request.id, Outcome::error(e)).await });
}

/// Unsolicited traffic of a session's own upstream session.
pub struct SessionEvents {
    gateway: Weak<Gateway>,
    session: Weak<GwSession>,
    index: usize,
}

impl SessionEvents {
    pub fn new(gateway: Weak<Gateway>, session: Weak<GwSession>, index: usize) -> Self {
        Self { gateway, session, index }
    }
}

impl PeerEvents for SessionEvents {
    fn notification(&self, peer: &Arc<Peer>, notification: Notification) {
        if notification.method == method::TOOLS_LIST_CHANGED {
            // This upstream session's tools may now differ from everyone
            // else's (per-session toolsets): list them for this session.
            // Gateway-wide changes arrive on the control connection too.
            if let (Some(gw), Some(session)) = (self.gateway.upgrade(), self.session.upgrade()) {
                let (peer, index) = (peer.clone(), self.index);
                crate::spawn(async move {
                    gw.catalogs().session_tools_changed(&gw.upstreams(), &session, index, Some(&peer)).await
                });
            }
            return;
        }
        if let Some(session) = self.session.upgrade() {
            // Perhaps to the replica holding its `GET` stream.
            match self.gateway.upgrade() {
                Some(gw) => gw.notify_session(&session, notification),
                None => session.notify(Message::Notification(notification)),
            }
        }
    }

    fn request(&self, peer: Arc<Peer>, request: Request, cancel: CancellationToken) {
        if let Some(gw) = self.gateway.upgrade()
            && roots_withheld(&gw, &peer, &request)
        {
            return refuse(peer, request, "this upstream is not given the client's roots (forward_roots)");
        }
        match self.session.upgrade() {
            Some(session) => relay_request(session, None, peer, request, cancel),
            None => refuse(peer, request, "the session has ended"),
        }
    }

    fn closed(&self, peer: &Arc<Peer>, reason: &str) {
        tracing::debug!(upstream = %peer.label(), %reason, "per-session upstream session ended");
        // Its replacement starts with the upstream's usual tools.
        if let (Some(gw), Some(session)) = (self.gateway.upgrade(), self.session.upgrade())
            && session.state.tools.lock().overrides.contains_key(&self.index)
        {
            let index = self.index;
            crate::spawn(
                async move { gw.catalogs().session_tools_changed(&gw.upstreams(), &session, index, None).await },
            );
        }
    }
}

/// Unsolicited traffic of an upstream's control (or shared) connection.
pub struct ControlEvents {
    gateway: Weak<Gateway>,
    index: usize,
}

impl ControlEvents {
    pub fn new(gateway: Weak<Gateway>, index: usize) -> Self {
        Self { gateway, index }
    }
}

impl PeerEvents for ControlEvents {
    fn notification(&self, peer: &Arc<Peer>, notification: Notification) {
        let Some(gw) = self.gateway.upgrade() else { return };
        let notification = untag(notification);
        match notification.method.as_str() {
            method::TOOLS_LIST_CHANGED => gw.upstreams()[self.index].request_refresh(),
            // The upstream hears toolgate's listen stream from now on. A tool
            // change before this was announced to nobody (the first crawl
            // runs beside the stream's opening, and a reopened stream had a
            // gap): list again. Clients hear of it only if the list changed.
            modern_method::SUBSCRIPTIONS_ACKNOWLEDGED => {
                let honoured = notification.params.as_ref().and_then(|p| p.get(listen::NOTIFICATIONS));
                if honoured.and_then(|n| n.get(listen::TOOLS_LIST_CHANGED)).and_then(Value::as_bool) == Some(true) {
                    gw.upstreams()[self.index].request_refresh();
                }
            }
            // Only to the clients that may use this upstream.
            method::RESOURCES_LIST_CHANGED | method::PROMPTS_LIST_CHANGED => {
                for s in gw.audience().into_iter().filter(|s| s.state.uses(self.index)) {
                    s.notify(Message::Notification(notification.clone()));
                }
            }
            method::RESOURCES_UPDATED => {
                let uri = notification.params.as_ref().and_then(|p| p.get("uri")).and_then(Value::as_str).unwrap_or("");
                // A `per_session` handshake-era upstream's control connection
                // holds only listen streams' subscriptions (its sessions hold
                // theirs on their own connections, whose updates reach them
                // through `SessionEvents`).
                let up = &gw.upstreams()[self.index];
                let hearers =
                    if !up.is_shared() && !up.is_modern() { gw.listeners().sessions() } else { gw.audience() };
                for s in hearers {
                    if s.state.is_subscribed(uri) {
                        gw.notify_session(&s, notification.clone());
                    }
                }
            }
            method::MESSAGE => log_upstream_message(peer, notification.params.as_ref()),
            // Only the client that started a URL-mode elicitation may hear it finished.
            method::ELICITATION_COMPLETE => {
                let id = notification.params.as_ref().and_then(|p| p.get("elicitationId")).and_then(Value::as_str);
                let owner = id.and_then(|id| gw.forwarder().elicitation_completed(self.index, id));
                match owner.and_then(|session| gw.sessions().get(&session)) {
                    Some(session) => gw.notify_session(&session, notification),
                    None => tracing::debug!(upstream = %peer.label(), "completion of an unknown elicitation dropped"),
                }
            }
            other => tracing::debug!(upstream = %peer.label(), method = other, "unsolicited notification dropped"),
        }
    }

    fn request(&self, peer: Arc<Peer>, request: Request, _cancel: CancellationToken) {
        refuse(peer, request, "it was not sent while serving a client request");
    }

    fn closed(&self, _peer: &Arc<Peer>, _reason: &str) {
        // The supervisor watches the connection and restarts it.
    }
}

/// An upstream log message that belongs to no client: into toolgate's log.
fn log_upstream_message(peer: &Peer, params: Option<&Value>) {
    let level = params.and_then(|p| p.get("level")).and_then(Value::as_str).unwrap_or("info");
    let data = params.and_then(|p| p.get("data")).cloned().unwrap_or_else(|| json!(null));
    match level {
        "debug" => tracing::debug!(upstream = %peer.label(), %data, "upstream log"),
        "info" | "notice" => tracing::info!(upstream = %peer.label(), %data, "upstream log"),
        "warning" => tracing::warn!(upstream = %peer.label(), %data, "upstream log"),
        _ => tracing::error!(upstream = %peer.label(), level, %data, "upstream log"),
    }
}

/// A notification from an upstream's listen stream, without the stream's
/// `subscriptionId` (toolgate's own subscription upstream, meaningless to
/// its clients: a listener gets its own, a session none). An emptied
/// `_meta` goes too; everything else stays.
pub(crate) fn untag(mut notification: crate::jsonrpc::Notification) -> crate::jsonrpc::Notification {
    if let Some(serde_json::Value::Object(params)) = notification.params.as_mut()
        && let Some(serde_json::Value::Object(meta)) = params.get_mut("_meta")
        && meta.remove(crate::protocol::modern::meta::SUBSCRIPTION_ID).is_some()
        && meta.is_empty()
    {
        params.remove("_meta");
    }
    notification
}

#[cfg(test)]
mod tests;
