//! Where a call's upstream connection comes from: the session's own upstream
//! session (`sharing = "per_session"`, opened on first use), or the
//! upstream's shared connection.

use std::sync::{Arc, Weak};

use serde_json::{Value, json};
use tracing::Instrument as _;

use super::instances::stop_when_idle;
use super::reach::Reach;
use super::state::GwSession;
use super::upstreams::UpstreamHandle;
use crate::auth::{Principal, PrincipalKind};
use crate::config::Target;
use crate::identity::Identity;
use crate::protocol::method;
use crate::upstream::modern::ClientContext;
use crate::upstream::toolgate_info;
use crate::upstream::{self, Call, ClientHello, ConnectOptions, Connections, Peer, PeerEvents, UpstreamError};

/// The connections a call of `session` to upstream `up` uses.
///
/// A sessionless (2026-07-28) request has no session to own an upstream
/// session. Where the upstream is `per_session`, each authenticated client
/// gets one of its own for all its sessionless calls ([`ClientConnection`]),
/// so clients with different credentials never share an upstream session's
/// state; it counts against `max_instances` like a session's child, and is
/// stopped after `instance_idle_timeout` without calls. Without `[auth]`
/// there is one client (anonymous): its sessionless calls use the
/// upstream's control connection, toolgate's own session with it.
///
/// A client with credentials of its own for the upstream
/// (`upstream_headers`, `upstream_env`, or the upstream's `identity`) never
/// shares an upstream session with another client: its sessions get their
/// own, whatever `sharing` says, and so do its sessionless calls.
pub(crate) fn for_call<'a>(
    reach: &'a Arc<Reach>,
    session: &'a Arc<GwSession>,
    up: &'a Arc<UpstreamHandle>,
) -> CallConnections<'a> {
    if session.is_sessionless() {
        return unowned(reach, session, up.clone());
    }
    if up.is_shared() && !is_personal(up, &session.state.principal_ref()) {
        return CallConnections::Shared(up.clone());
    }
    CallConnections::PerSession { reach, session, up }
}

/// The connections of a call that no session's own upstream session
/// carries: a shared upstream's, or a sessionless client's (see
/// [`for_call`]). Owned, so a held call's task can take them along.
pub(crate) fn unowned(reach: &Arc<Reach>, session: &GwSession, up: Arc<UpstreamHandle>) -> CallConnections<'static> {
    let principal = session.state.principal_ref();
    if up.is_shared() && !is_personal(&up, &principal) {
        return CallConnections::Shared(up);
    }
    match principal.kind() {
        PrincipalKind::Anonymous => CallConnections::Shared(up),
        PrincipalKind::ApiKey | PrincipalKind::Jwt => {
            let principal = principal.clone();
            CallConnections::PerClient(ClientConnection { reach: reach.clone(), up, principal })
        }
    }
}

/// Where one call's connection comes from.
pub(crate) enum CallConnections<'a> {
    /// The upstream's one connection, shared by every session.
    Shared(Arc<UpstreamHandle>),
    /// A downstream session's own upstream session.
    PerSession { reach: &'a Arc<Reach>, session: &'a Arc<GwSession>, up: &'a Arc<UpstreamHandle> },
    /// A client's own upstream session for its sessionless calls.
    PerClient(ClientConnection),
}

/// One authenticated client's upstream session for its sessionless calls
/// (owned, so a held multi-round-trip call can take it along).
pub(crate) struct ClientConnection {
    reach: Arc<Reach>,
    up: Arc<UpstreamHandle>,
    principal: Principal,
}

impl Connections for CallConnections<'_> {
    async fn connection(&self, fresh: bool) -> Result<Arc<Peer>, UpstreamError> {
        match self {
            CallConnections::Shared(up) => match up.control() {
                Some(peer) => Ok(peer),
                // The connection this call just used is being replaced.
                None if fresh => Box::pin(up.fresh_control(up.config.timeout)).await,
                None => Err(up.unavailable()),
            },
            CallConnections::PerSession { reach, session, up } => session_connection(reach, session, up).await,
            CallConnections::PerClient(client) => client.connection().await,
        }
    }

    fn modern(&self) -> bool {
        self.upstream().is_modern()
    }

    fn sessions_expire(&self) -> bool {
        self.upstream().target.sessions_expire()
    }
}

impl CallConnections<'_> {
    fn upstream(&self) -> &Arc<UpstreamHandle> {
        match self {
            CallConnections::Shared(up) | CallConnections::PerClient(ClientConnection { up, .. }) => up,
            CallConnections::PerSession { up, .. } => up,
        }
    }
}

impl ClientConnection {
    /// The client's connection, opened (or reopened, after it closed) on use.
    async fn connection(&self) -> Result<Arc<Peer>, UpstreamError> {
        let up = &self.up;
        if up.control().is_none() {
            return Err(up.unavailable());
        }
        let slot = up.client_slot(self.principal.id());
        let mut slot = slot.lock().await;
        if let Some(peer) = slot.as_ref().filter(|p| !p.is_closed()) {
            return Ok(peer.clone());
        }
        let peer = Box::pin(self.open()).await?;
        *slot = Some(peer.clone());
        Ok(peer)
    }

    async fn open(&self) -> Result<Arc<Peer>, UpstreamError> {
        let up = &self.up;
        // What toolgate's control connection declares for these calls (a
        // sessionless client states its capabilities per request). No
        // session owns it: what the upstream sends outside a call reaches
        // no one (requests are refused).
        let events = self.reach.upward.session_events(Weak::new(), up.index);
        let client = self.principal.id();
        let span = tracing::info_span!(parent: None, "upstream", upstream = %up.label, %client);
        let target = target_for(&self.reach, up, &self.principal);
        let peer = open_own(&self.reach, up, target, up.control_hello(), events, span).await?;
        tracing::debug!(upstream = %up.label, %client, "opened a client's upstream session for its sessionless calls");
        if up.instances.is_none() {
            // Nothing else ends it (no session does): stopped when idle.
            stop_when_idle(peer.clone(), up.config.instance_idle_timeout);
        }
        let (up, client, closing) = (self.up.clone(), client.clone(), peer.clone());
        crate::spawn(async move {
            closing.closed().cancelled().await;
            up.forget_client(&client, &closing);
        });
        Ok(peer)
    }
}

/// The session's own connection to upstream `up`, opened (or reopened,
/// after it closed) on use.
async fn session_connection(
    reach: &Reach,
    session: &Arc<GwSession>,
    up: &Arc<UpstreamHandle>,
) -> Result<Arc<Peer>, UpstreamError> {
    let index = up.index;
    // A down control connection means the upstream cannot start: fail
    // fast instead of spawning a doomed child per request.
    if up.control().is_none() {
        return Err(up.unavailable());
    }
    let Some(slot) = session.state.connection_slot(index) else { return Err(up.unavailable()) };
    let mut slot = slot.lock().await;
    if let Some(peer) = slot.as_ref().filter(|p| !p.is_closed()) {
        return Ok(peer.clone());
    }
    // Boxed: opening is rare, and inline its state (the handshake's) would
    // size the future of every call that goes through here.
    let peer = Box::pin(open_session_connection(reach, session, index, up, slot.is_some())).await?;
    *slot = Some(peer.clone());
    Ok(peer)
}

/// Opens the session's own connection to upstream `up` (`restart`: its
/// last one closed under it).
async fn open_session_connection(
    reach: &Reach,
    session: &Arc<GwSession>,
    index: usize,
    up: &Arc<UpstreamHandle>,
    restart: bool,
) -> Result<Arc<Peer>, UpstreamError> {
    // The session's own connection closed under it (a crashed child): this is a restart.
    if restart {
        reach.metrics.upstream_restarted(index);
    }
    if session.closed().is_cancelled() {
        return Err(UpstreamError::Cancelled);
    }
    let events = reach.upward.session_events(Arc::downgrade(session), index);
    // The connection's tasks outlive this request: they get a span of their own.
    let span = tracing::info_span!(parent: None, "upstream", upstream = %up.label, session = session.id());
    let target = target_for(reach, up, &session.state.principal());
    let peer = open_own(reach, up, target, session_hello(session, up.config.forward_roots), events, span).await?;
    tracing::debug!(upstream = %up.label, "opened a per-session upstream session");
    // A modern upstream takes the level on each request instead.
    let takes_level = peer.hello().is_some_and(|h| h.has("logging") && h.modern.is_none());
    if let Some(level) = session.state.log_level().filter(|_| takes_level) {
        let set = Call::new(method::LOGGING_SET_LEVEL, Some(json!({"level": level})));
        let _ = upstream::service::call_on(peer.clone(), up.config.timeout, set).await;
    }
    Ok(peer)
}

/// Opens an upstream session of `up` for one session or client (not the
/// control connection): a place among the upstream's capped children first
/// (taken or refused before anything starts), held while it runs; the
/// upstream's traffic outside calls goes to `events`.
async fn open_own(
    reach: &Reach,
    up: &Arc<UpstreamHandle>,
    target: Target,
    hello: ClientHello,
    events: Arc<dyn PeerEvents>,
    span: tracing::Span,
) -> Result<Arc<Peer>, UpstreamError> {
    let place = match &up.instances {
        Some(instances) => Some(instances.acquire(&up.label).await?),
        None => None,
    };
    let options = ConnectOptions {
        label: up.label.clone(),
        hello,
        events,
        // Without per-call streams, whatever the upstream sends belongs to
        // the newest call on the connection.
        attribute_to_latest_call: !up.target.attributes_calls(),
        timeout: up.config.timeout,
        cancel_timeout: up.config.cancel_timeout,
        protocol: up.config.protocol.into(),
        era: Some(up.era.clone()),
        control: false,
    };
    let peer = upstream::connect(&target, &reach.http, options).instrument(span).await?;
    if up.is_retired() {
        // A reload removed or replaced the upstream while this connected.
        peer.shutdown().await;
        return Err(up.unavailable());
    }
    if let (Some(instances), Some(place)) = (&up.instances, place) {
        instances.hold(peer.clone(), place);
    }
    Ok(peer)
}

/// Where a connection of `up` made for `principal` goes: the upstream's
/// target, with the client's own credentials when it has some.
fn target_for(reach: &Reach, up: &UpstreamHandle, principal: &Principal) -> Target {
    match (is_personal(up, principal), up.oauth()) {
        (true, Some(oauth)) => reach.identity.personal_target(&oauth, &up.target, principal),
        (true, None) => reach.identity.personal_target(&up.config, &up.target, principal),
        (false, _) => up.target.clone(),
    }
}

/// Whether `principal` reaches `up` with credentials of its own (see
/// [`Identity::is_personal`]), counting an upstream a call found protected.
fn is_personal(up: &UpstreamHandle, principal: &Principal) -> bool {
    Identity::is_personal(&up.config, principal)
        || (up.is_found_protected() && principal.kind() != crate::auth::PrincipalKind::Anonymous)
}

/// What a call to a modern upstream says of the client it is for (when the
/// client's request is itself modern, its own `_meta` wins): the session's
/// declared reverse-routing capabilities (as [`session_hello`] filters them)
/// its log level, and the `Mcp-Param-*` headers a sessionless (2026) client
/// sent over HTTP (the upstream leg forwards those the tool's schema does not
/// declare). A session's is made once and shared by its calls.
pub(crate) fn client_context(session: &GwSession, forward_roots: bool) -> Arc<ClientContext> {
    match session.modern() {
        // A sessionless client's request always carries its own capabilities
        // (the envelope requires them), and those win: none are built for it.
        Some(modern) => Arc::new(ClientContext {
            capabilities: None,
            log_level: session.state.log_level(),
            param_headers: modern.param_headers.clone().unwrap_or_default(),
        }),
        None => session.state.client_context(forward_roots, || ClientContext {
            capabilities: Some(Arc::new(declared_capabilities(session, forward_roots))),
            log_level: session.state.log_level(),
            param_headers: Vec::new(),
        }),
    }
}

/// What a per-session upstream session declares: the client's own
/// reverse-routing capabilities (each request from that upstream session
/// belongs to this client), its client-side `tasks` among them, and nothing
/// toolgate cannot carry (experimental).
/// `roots` only with `forward_roots`: some servers let the client's roots
/// replace the directories their operator configured.
fn session_hello(session: &GwSession, forward_roots: bool) -> ClientHello {
    let client_info = match session.client_info() {
        Value::Object(_) => session.client_info().clone(),
        _ => toolgate_info(),
    };
    ClientHello { capabilities: declared_capabilities(session, forward_roots), client_info }
}

/// The client's capabilities an upstream session declares for it (see
/// [`session_hello`]).
fn declared_capabilities(session: &GwSession, forward_roots: bool) -> Value {
    let caps = session.client_capabilities();
    let mut declared = serde_json::Map::new();
    for key in ["sampling", "elicitation", "roots", "tasks"] {
        if key == "roots" && !forward_roots {
            continue;
        }
        if let Some(v) = caps.get(key).filter(|v| !v.is_null()) {
            declared.insert(key.into(), v.clone());
        }
    }
    Value::Object(declared)
}
