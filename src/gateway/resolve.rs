//! A client request resolved once, before the layers: the tool a
//! `tools/call` names (parsed, looked up in the session's catalog view),
//! the selection a read of the descriptions resource asks for, the caller,
//! and the verified multi-round-trip state of a sessionless retry.
//!
//! Every layer and the forwarder read this one value ([`Exchange::resolved`](super::layer::Exchange))
//! rather than parsing the name, looking the tool up or verifying the
//! state again: the gate checks the very entry the forwarder routes.

use std::sync::Arc;

use serde_json::Value;

use super::catalogs::CatalogView;
use super::state::GwSession;
use super::upstreams::UpstreamHandle;
use super::views::Views;
use crate::auth::Principal;
use crate::catalog::ToolEntry;
use crate::disclosure::{self, Selection};
use crate::jsonrpc::{Request, member};
use crate::mrtr::{Binding, StateError, Verified};
use crate::protocol::method;
use crate::protocol::modern::result;
use crate::server::RequestCtx;

/// What the gateway learned about a request before its layers run.
pub struct Resolved {
    /// The client the request comes from.
    caller: Principal,
    /// What a `tools/call` with a string `name` calls.
    call: Option<ToolCall>,
    /// What a `resources/read` of the descriptions resource selects.
    read: Option<DescriptionsRead>,
    /// Whether the request came through the call tool (see
    /// [`super::search`]): a routed call of `call`.
    routed: bool,
}

/// The tool a `tools/call` names, in the catalog the session sees.
pub struct ToolCall {
    /// The session's catalog view the name was looked up in (after waiting
    /// for upstreams still starting when the name was not in it).
    pub view: Arc<CatalogView>,
    /// What the name names.
    pub target: Target,
    /// The upstream of the catalog tool it names, resolved once here for
    /// the gate, the checks and the forwarder.
    pub upstream: Option<Arc<UpstreamHandle>>,
    /// A sessionless retry's `requestState`, checked once.
    pub retry: Option<RetryState>,
}

/// What a called name names.
pub enum Target {
    /// A tool of the catalog.
    Tool(Arc<ToolEntry>),
    /// The synthesized describe tool.
    Describe,
    /// Nothing in the catalog (the search tool, or an unknown name).
    Other(Box<str>),
}

/// A read of `resource:///tool_descriptions?tools=…`.
pub struct DescriptionsRead {
    /// The URI as the client sent it.
    pub uri: String,
    /// The tools it selects.
    pub selection: Selection,
}

/// The `requestState` of a sessionless client's tool call to a
/// handshake-era upstream, checked once against the call it claims to be.
pub struct RetryState {
    /// Signed with toolgate's key: the retry of a call the gate and the rate
    /// limit admitted in its first round (it only ever reaches its held
    /// call, which checks the rest).
    pub own: bool,
    /// The state as the client sent it (passed on to the replica holding
    /// its call, which checks it again).
    pub token: Box<str>,
    /// What it must be bound to: the call as it goes upstream.
    pub binding: Binding,
    /// What it names (the held call and the replica holding it), once
    /// signature, expiry, client and request all check out; or why not.
    pub checked: Result<Verified, StateError>,
    /// Whether it names a call held on this replica now: only then, here,
    /// is the retry the same call as its first round (for the rate limit).
    pub held_here: bool,
}

impl Resolved {
    /// Resolves `request` of `session`: waits for upstreams still starting
    /// only when a called name is not (yet) in the session's catalog.
    /// `routed`: the request is a call the call tool routed.
    /// `views`: what the gateway reads of its live state; `retries`: the
    /// check of a sessionless retry's `requestState`.
    pub async fn of(
        views: &Views,
        retries: &dyn CheckRetry,
        session: &GwSession,
        request: &Request,
        ctx: &RequestCtx,
        routed: bool,
    ) -> Self {
        let caller = session.state.principal();
        let params = request.params.as_ref();
        let (mut call, mut read) = (None, None);
        match request.method.as_str() {
            method::TOOLS_CALL => {
                if let Some(name) = params.and_then(|p| member(p, "name")).and_then(Value::as_str) {
                    ctx.span.record("tool", name);
                    if routed {
                        ctx.span.record("routed", true);
                    }
                    call = Some(ToolCall::of(views, retries, session, &caller, name, params).await);
                }
            }
            method::RESOURCES_READ => {
                let uri = params.and_then(|p| p.get("uri")).and_then(Value::as_str);
                read = uri.and_then(|uri| {
                    let selection = disclosure::parse_selection(uri)?;
                    Some(DescriptionsRead { uri: uri.to_owned(), selection })
                });
            }
            _ => {}
        }
        Self { caller, call, read, routed }
    }

    /// Whether the request is a call the call tool routed.
    pub fn is_routed(&self) -> bool {
        self.routed
    }

    /// The client the request comes from.
    pub fn caller(&self) -> &Principal {
        &self.caller
    }

    /// What a `tools/call` calls (`None` for other requests, and for a
    /// call without a string `name`).
    pub fn call(&self) -> Option<&ToolCall> {
        self.call.as_ref()
    }

    /// The name a `tools/call` calls.
    pub fn tool_name(&self) -> Option<&str> {
        self.call.as_ref().map(ToolCall::name)
    }

    /// What a read of the descriptions resource selects (`None` for other
    /// requests and other URIs).
    pub fn descriptions(&self) -> Option<&DescriptionsRead> {
        self.read.as_ref()
    }

    /// The `requestState` of a sessionless tool call, as checked.
    pub fn retry(&self) -> Option<&RetryState> {
        self.call.as_ref()?.retry.as_ref()
    }
}

impl ToolCall {
    async fn of(
        views: &Views,
        retries: &dyn CheckRetry,
        session: &GwSession,
        caller: &Principal,
        name: &str,
        params: Option<&Value>,
    ) -> Self {
        let mut view = views.catalog_for(session);
        let mut found = view.catalog.get(name).cloned();
        // Not there (the describe tool included, whose tools may still be
        // loading): perhaps the catalog is.
        if found.is_none() {
            views.wait_ready(session).await;
            view = views.catalog_for(session);
            found = view.catalog.get(name).cloned();
        }
        // No catalog tool takes the describe tool's name (it is reserved).
        let target = match found {
            _ if view.catalog.describe_tool_name() == Some(name) => Target::Describe,
            Some(entry) => Target::Tool(entry),
            None => Target::Other(name.into()),
        };
        let upstream = match &target {
            Target::Tool(entry) => views.upstreams().get(entry.upstream).cloned(),
            _ => None,
        };
        let retry = match (&target, &upstream, params) {
            (Target::Tool(entry), Some(up), Some(params)) if session.is_sessionless() => {
                retry_state(retries, caller, up, entry, params)
            }
            _ => None,
        };
        Self { view, target, upstream, retry }
    }

    /// The called name.
    pub fn name(&self) -> &str {
        match &self.target {
            Target::Tool(entry) => &entry.exposed,
            Target::Describe => self.view.catalog.describe_tool_name().unwrap_or_default(),
            Target::Other(name) => name,
        }
    }

    /// The catalog tool called, if the name is one.
    pub fn entry(&self) -> Option<&Arc<ToolEntry>> {
        match &self.target {
            Target::Tool(entry) => Some(entry),
            _ => None,
        }
    }
}

/// The check of a sessionless retry's `requestState` (the multi-round-trip
/// translator's, which the gateway gives [`Resolved::of`]).
pub(crate) trait CheckRetry: Sync {
    /// Checks `token`, the `requestState` of the request `method` with
    /// `params` (in the upstream's terms: its own tool name) to upstream
    /// `upstream` from `principal`, once.
    fn check(&self, token: &str, principal: &Principal, upstream: &str, method: &str, params: &Value) -> RetryState;
}

/// The check of a string `requestState` in a sessionless call of `entry`,
/// bound as the call goes upstream (under the upstream's own tool name).
fn retry_state(
    retries: &dyn CheckRetry,
    caller: &Principal,
    up: &UpstreamHandle,
    entry: &ToolEntry,
    params: &Value,
) -> Option<RetryState> {
    let token = member(params, result::REQUEST_STATE)?.as_str()?;
    let mut upstream_params = params.clone();
    upstream_params["name"] = Value::from(entry.original.as_str());
    Some(retries.check(token, caller, &up.label, method::TOOLS_CALL, &upstream_params))
}
