//! The transparent forwarder: the bottom of the gateway's layers.
//!
//! It serves `tools/list` and the merged resource, template and prompt lists,
//! and routes every other request to the upstream that owns it, over the
//! session's own upstream session or the shared one. It changes nothing but
//! names (a prefix per upstream when several are configured), ids (each
//! upstream leg numbers its own requests) and content a client's revision
//! predates.
//!
//! It routes only to upstreams the session's client may use
//! ([`GatewaySession::uses`](super::GatewaySession::uses)): the others are
//! left out of merged lists, and what names them (a resource, a template, a
//! prompt) resolves as if they were not configured.

use std::collections::VecDeque;
use std::ops::Deref;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tracing::Instrument as _;

use super::layer::{Exchange, Next};
use super::lists::{ListKind, RouteMaps, crawl_all};
use super::mrtr::Translator;
use super::pages::Pager;
use super::reach::Reach;
use super::state::GwSession;
use super::upstreams::UpstreamHandle;
use super::{connections, translate};
use crate::catalog::ToolEntry;
use crate::config::Mode;
use crate::jsonrpc::{ErrorObject, Outcome, Request, codes, member, member_mut};
use crate::metrics::Method;
use crate::protocol::{LOG_LEVELS, Version, method};
use crate::server::ServerOffer;
use crate::upstream::modern::headers::{self, ParamCheck};
use crate::upstream::{self, Call, UpstreamError};

mod consent;
mod subscriptions;
mod tasks;

pub(crate) use subscriptions::{hold, let_go};

/// How long a URL-mode elicitation's owner is remembered.
const ELICITATION_TTL: Duration = Duration::from_secs(3600);
/// The sessions one URL elicitation was sent to, in order.
type Asked = parking_lot::Mutex<VecDeque<Arc<str>>>;

/// Most sessions one URL elicitation id of one upstream is remembered for.
const SESSIONS_PER_ELICITATION: usize = 8;

/// One client request as the forwarder sees it: the layers' [`Exchange`],
/// and the forwarder serving it (its routes, its dependencies), for the
/// routes that live beside it.
#[derive(Clone, Copy)]
pub struct Forwarding<'a> {
    pub forwarder: &'a Forwarder,
    pub exchange: Exchange<'a>,
}

impl<'a> Deref for Forwarding<'a> {
    type Target = Exchange<'a>;

    fn deref(&self) -> &Exchange<'a> {
        &self.exchange
    }
}

/// The end of the chain: the forwarder.
pub struct Terminal<'a>(pub &'a Forwarder);

impl<'a> Next<'a> for Terminal<'a> {
    fn run(self, cx: Exchange<'a>, request: Request) -> impl Future<Output = Outcome> + Send + 'a {
        self.0.serve(Forwarding { forwarder: self.0, exchange: cx }, request)
    }
}

/// The forwarder: its dependencies (what it reaches upstreams with, the
/// translator of sessionless clients' held calls, the argument checks), what
/// the merged lists taught about ownership, the pager it shares with the
/// layers, and who started which URL-mode elicitation.
pub struct Forwarder {
    reach: Arc<Reach>,
    /// Held upstream calls of sessionless clients (multi-round-trip
    /// translation in front of handshake-era upstreams).
    mrtr: Arc<Translator>,
    /// Tool call arguments checked against the tools' schemas
    /// (`validate_arguments`), with the compiled schemas.
    arguments: crate::catalog::Arguments,
    /// Shared with the concerns layer, which asks which upstreams map
    /// their lists to concerns.
    routes: Arc<RouteMaps>,
    pager: Arc<Pager>,
    /// URL-mode elicitations: (upstream index, elicitation id) → the
    /// sessions it was sent to, in order, so a shared upstream's unsolicited
    /// `notifications/elicitation/complete` reaches only a client that was
    /// asked. Should two sessions be sent the same id by the same upstream,
    /// each completion goes to the session asked first that has not heard
    /// one: a later session never takes an earlier one's over.
    elicitations: moka::sync::Cache<(usize, String), Arc<Asked>>,
}

/// Checks the `Mcp-Param-*` headers of a sessionless (2026) client's
/// `tools/call` over HTTP against its arguments, where the tool's full schema
/// mirrors arguments in headers (`x-mcp-header`): toolgate processes the
/// body, so it validates them before anything is forwarded (`-32020`, which
/// the engine answers with HTTP 400). A client of a `passthrough` upstream
/// saw the annotations and must send every header; the minimal schema of a
/// `progressive` tool hides them, so there only the headers sent are checked
/// (as for a call routed through the call tool).
/// Over stdio (no headers) and for session clients there is nothing to check.
fn check_param_headers(cx: Forwarding<'_>, entry: &ToolEntry, params: &Value) -> Result<(), ErrorObject> {
    let Some(sent) = cx.session.modern().and_then(|m| m.param_headers.as_deref()) else { return Ok(()) };
    let Some(up) = cx.resolved.call().and_then(|c| c.upstream.clone()) else { return Ok(()) };
    let Some(tool) = up.era.tools.get(&entry.original).filter(|t| !t.params.is_empty()) else { return Ok(()) };
    // A call routed through the call tool was sent for the call tool's
    // schema, which mirrors no argument in a header.
    let check = match entry.mode {
        Mode::Passthrough if !cx.resolved.is_routed() => ParamCheck::Required,
        _ => ParamCheck::PresentOnly,
    };
    headers::check_client_params(&tool.params, params.get("arguments").and_then(Value::as_object), sent, check)
}

/// toolgate's `serverInfo` for a client of `version` (`title` exists from
/// 2025-06-18 on).
pub fn server_info(version: Version) -> Value {
    let mut info = json!({"name": "toolgate", "version": env!("CARGO_PKG_VERSION")});
    if version >= Version::V2025_06_18 {
        info["title"] = json!("toolgate MCP gateway");
    }
    info
}

/// The index of the one upstream, when exactly one is configured (slots a
/// reload retired do not count).
fn only_upstream(upstreams: &[Arc<UpstreamHandle>]) -> Option<usize> {
    let mut live = upstreams.iter().filter(|u| !u.is_retired());
    match (live.next(), live.next()) {
        (Some(up), None) => Some(up.index),
        _ => None,
    }
}

fn invalid(message: impl Into<String>) -> Outcome {
    Outcome::error(ErrorObject::invalid_params(message))
}

fn str_param<'a>(params: Option<&'a Value>, key: &str) -> Option<&'a str> {
    params?.get(key)?.as_str()
}

impl Forwarder {
    /// A forwarder that reaches upstreams with `reach`, holds sessionless
    /// clients' calls with `mrtr`, pages lists with `pager` and keeps what
    /// they teach about ownership in `routes`.
    pub(super) fn new(reach: Reach, mrtr: Arc<Translator>, pager: Arc<Pager>, routes: Arc<RouteMaps>) -> Self {
        Self {
            reach: Arc::new(reach),
            mrtr,
            arguments: crate::catalog::Arguments::default(),
            routes,
            pager,
            elicitations: moka::sync::Cache::builder().max_capacity(10_000).time_to_live(ELICITATION_TTL).build(),
        }
    }

    /// Answers one client request.
    pub async fn serve(&self, cx: Forwarding<'_>, request: Request) -> Outcome {
        let Request { method, params, .. } = request;
        // Its method goes upstream with it (moved, not copied).
        if method == method::TOOLS_CALL {
            return self.call_tool(cx, method, params).await;
        }
        match method.as_str() {
            method::TOOLS_LIST => {
                self.reach.views.wait_ready(cx.session).await;
                let view = self.reach.views.listing_for(cx.session);
                self.pager.tools_page(view.catalog.forwarded_list_raw(), params.as_ref())
            }
            method::RESOURCES_LIST | method::RESOURCES_TEMPLATES_LIST | method::PROMPTS_LIST => {
                let kind = ListKind::of(&method).unwrap_or(ListKind::Resources);
                self.merged_list(cx, kind, params.as_ref()).await
            }
            method::RESOURCES_READ => {
                let Some(uri) = str_param(params.as_ref(), "uri").map(str::to_owned) else {
                    return invalid("resources/read needs a string \"uri\"");
                };
                let candidates = self.resource_candidates(cx.session, &uri);
                if candidates.is_empty() {
                    return Outcome::error(
                        ErrorObject::new(codes::RESOURCE_NOT_FOUND, "Resource not found")
                            .with_data(json!({"uri": uri})),
                    );
                }
                self.forward_to_candidates(cx, &candidates, method::RESOURCES_READ, params).await
            }
            method::RESOURCES_SUBSCRIBE | method::RESOURCES_UNSUBSCRIBE => self.subscription(cx, &method, params).await,
            method::PROMPTS_GET => self.get_prompt(cx, params).await,
            method::COMPLETION_COMPLETE => self.complete(cx, params).await,
            method::LOGGING_SET_LEVEL => self.set_level(cx, params).await,
            task if tasks::routes(task) => tasks::serve(cx, task, params).await,
            // Anything else (vendor methods) belongs to the upstream when
            // there is only one; with several there is no owner to pick.
            other => match only_upstream(&self.upstreams()) {
                Some(index) if cx.session.state.uses(index) => self.forward(cx, index, other, params).await,
                _ => Outcome::error(ErrorObject::method_not_found(other)),
            },
        }
    }

    /// What the forwarder offers a client: toolgate's identity, the
    /// capabilities of the upstreams it may use (`uses`), and their
    /// instructions.
    pub fn offer(&self, version: Version, uses: impl Fn(usize) -> bool) -> ServerOffer {
        let all = self.upstreams();
        let upstreams: Vec<_> = all.iter().filter(|u| uses(u.index)).collect();
        let any = |cap: &str| upstreams.iter().any(|u| u.has(cap));
        let any_flag = |cap: &str, flag: &str| upstreams.iter().any(|u| u.hello().is_some_and(|h| h.flag(cap, flag)));

        let mut caps = Map::new();
        caps.insert("tools".into(), json!({"listChanged": true}));
        if any("resources") {
            let mut resources = json!({"listChanged": true});
            if any_flag("resources", "subscribe") {
                resources["subscribe"] = json!(true);
            }
            caps.insert("resources".into(), resources);
        }
        if any("prompts") {
            caps.insert("prompts".into(), json!({"listChanged": true}));
        }
        if any("logging") {
            caps.insert("logging".into(), json!({}));
        }
        if any("completions") {
            caps.insert("completions".into(), json!({}));
        }
        if let Some(tasks) = tasks::capability(upstreams.iter().map(|u| &***u)) {
            caps.insert("tasks".into(), tasks);
        }

        let info = server_info(version);
        let sections: Vec<String> = upstreams
            .iter()
            .filter_map(|up| {
                let text = up.hello().and_then(|h| h.instructions.clone()).filter(|t| !t.trim().is_empty())?;
                Some(if only_upstream(&all).is_some() { text } else { format!("## {}\n{text}", up.label) })
            })
            .collect();
        let instructions = (!sections.is_empty()).then(|| sections.join("\n\n"));
        ServerOffer { capabilities: Value::Object(caps), server_info: info, instructions }
    }

    /// Forwards a request to upstream `index` over the session's connection,
    /// with the upstream's timeout, the client's cancellation and the retry
    /// of a forgotten session (see [`upstream::service`]).
    pub async fn forward(&self, cx: Forwarding<'_>, index: usize, method: &str, params: Option<Value>) -> Outcome {
        match self.upstreams().get(index) {
            Some(up) => self.forward_to(cx, up, method, params).await,
            None => Outcome::error(ErrorObject::method_not_found(method)),
        }
    }

    /// [`Forwarder::forward`] to an upstream already resolved (a tool call's:
    /// see [`ToolCall`](super::resolve::ToolCall)).
    pub async fn forward_to(
        &self,
        cx: Forwarding<'_>,
        up: &Arc<UpstreamHandle>,
        method: &str,
        params: Option<Value>,
    ) -> Outcome {
        let task_augmented = params.as_ref().is_some_and(|p| member(p, "task").is_some());
        let result = self.forward_to_raw(cx, up, method.to_owned(), params).await;
        self.finish(cx, up, method, task_augmented, result).await
    }

    /// [`Forwarder::forward_to`] up to the upstream's answer, before it is
    /// made the client's. `method` becomes the upstream request's (moved).
    async fn forward_to_raw(
        &self,
        cx: Forwarding<'_>,
        up: &Arc<UpstreamHandle>,
        method: String,
        params: Option<Value>,
    ) -> Result<Outcome, UpstreamError> {
        let index = up.index;
        // Every route above resolves only to upstreams the client may use;
        // this keeps it so whatever a future route gets wrong.
        if !cx.session.state.uses(index) {
            return Ok(Outcome::error(ErrorObject::method_not_found(&method)));
        }
        let label = Method::of(&method);
        cx.ctx.span.record("upstream", &*up.label);
        cx.note.forwarded_to(index);
        // The upstream exchange, a child of the request's span (disabled,
        // at no cost, unless debug logging or tracing is on).
        let span = tracing::debug_span!(
            "upstream call",
            otel.name = method.as_str(),
            otel.kind = "client",
            upstream = &*up.label,
            method = method.as_str()
        );
        // A sessionless (2026) client's envelope goes to a modern upstream as
        // sent (its own capabilities win), but never into a handshake-era
        // upstream session, where a dual-era server refuses it.
        let sessionless = cx.session.is_sessionless();
        let modern_upstream = up.is_modern();
        let params = if sessionless && !modern_upstream { strip_envelope(params) } else { params };
        // A traced call carries its span's context to the upstream (`_meta`,
        // and the `traceparent` header over HTTP).
        let params = crate::telemetry::inject(&span, params);
        let started = Instant::now();
        // A 2026 client of a handshake-era upstream gets what the upstream
        // asks mid-call as input requests (toolgate holds the call); a retry
        // carrying toolgate's own requestState only ever reaches its held call.
        // (A tool call's state was checked as the request was resolved.)
        let own_state = |params: Option<&Value>| match cx.resolved.retry() {
            Some(state) => state.own,
            None => self.mrtr.is_own_state(params),
        };
        let translated = sessionless && (!modern_upstream || own_state(params.as_ref()));
        let result = if translated {
            // Boxed, as below: a held call's state would otherwise size every
            // forwarded call's future.
            Box::pin(self.mrtr.call(cx.exchange, &self.reach, up, &method, params)).instrument(span).await
        } else {
            let route = self.reach.upward.route(cx.session, cx.ctx, index);
            let mut call = Call::new(method, params).routed(route).cancelled_by(cx.ctx.cancel.clone());
            if modern_upstream {
                call = call.for_client(connections::client_context(cx.session, up.config.forward_roots));
            }
            // A 2026 client takes a modern upstream's answers (input-required
            // results included) as they are, and retries by itself.
            call.downstream_modern |= sessionless;
            let connections = connections::for_call(&self.reach, cx.session, up);
            // Boxed: the exchange's state machine is several kilobytes, and
            // inline it would be copied into every future that awaits this
            // one on the way up to the transport (measured with callgrind:
            // ~10k instructions per call fewer boxed).
            toolgate_mcp::boxed::pinned(|| upstream::service::call(connections, up.config.timeout, call))
                .instrument(span)
                .await
        };
        self.reach.metrics.upstream_request(index, label, &result, started.elapsed());
        result
    }

    /// The upstream's answer `result`, made the client's.
    async fn finish(
        &self,
        cx: Forwarding<'_>,
        up: &Arc<UpstreamHandle>,
        method: &str,
        task_augmented: bool,
        result: Result<Outcome, UpstreamError>,
    ) -> Outcome {
        let index = up.index;
        match result {
            Ok(Outcome::Error(error)) => {
                // URLElicitationRequiredError: remember who may hear the completions.
                if let Some(elicitations) = error.pointer("/data/elicitations").and_then(Value::as_array) {
                    for id in elicitations.iter().filter_map(|e| e.get("elicitationId")).filter_map(Value::as_str) {
                        self.own_elicitation(index, id, cx.session);
                    }
                }
                Outcome::Error(error)
            }
            // Content the client's revision predates is translated.
            Ok(outcome) => {
                // A task-augmented call created a task there: its tasks/*
                // requests go to this upstream.
                if task_augmented && let Some(task) = outcome.result_value().as_ref().and_then(tasks::created) {
                    tasks::note(cx, task, index).await;
                }
                translate::outcome(method, outcome, cx.session.version())
            }
            Err(e) => Outcome::error(e.to_error_object()),
        }
    }

    /// Remembers which session a URL-mode `elicitation/create` of upstream
    /// `index` went to.
    pub fn note_url_elicitation(&self, index: usize, session: &GwSession, request: &Request) {
        let params = request.params.as_ref();
        if request.method == "elicitation/create"
            && params.and_then(|p| p.get("mode")).and_then(Value::as_str) == Some("url")
            && let Some(id) = params.and_then(|p| p.get("elicitationId")).and_then(Value::as_str)
        {
            self.own_elicitation(index, id, session);
        }
    }

    /// Records that elicitation `id` of upstream `index` was sent to
    /// `session` (after any other session it was sent to).
    fn own_elicitation(&self, index: usize, id: &str, session: &GwSession) {
        let asked = self.elicitations.get_with((index, id.to_owned()), Default::default);
        let mut asked = asked.lock();
        if asked.iter().any(|s| **s == *session.id()) {
            return;
        }
        if asked.len() < SESSIONS_PER_ELICITATION {
            asked.push_back(session.id_arc());
        } else {
            tracing::debug!(
                session = session.id(),
                "a URL elicitation id sent to many sessions: this one hears no completion"
            );
        }
    }

    /// The id of the session the completion of URL-mode elicitation `id` of
    /// upstream `index` is for: the first asked that has not heard one.
    pub fn elicitation_completed(&self, index: usize, elicitation_id: &str) -> Option<Arc<str>> {
        let key = (index, elicitation_id.to_owned());
        let asked = self.elicitations.get(&key)?;
        let mut queue = asked.lock();
        let session = queue.pop_front();
        if queue.is_empty() {
            self.elicitations.invalidate(&key);
        }
        session
    }

    /// A `tools/call` (`method`, the client's own, goes upstream).
    async fn call_tool(&self, cx: Forwarding<'_>, method: String, params: Option<Value>) -> Outcome {
        let Some(mut params) = params.filter(Value::is_object) else {
            return invalid("tools/call needs params with a tool name");
        };
        // The name was parsed and looked up as the request was resolved.
        let Some(call) = cx.resolved.call() else {
            return invalid("tools/call needs a string \"name\"");
        };
        let Some(entry) = call.entry() else {
            let name = call.name();
            let why = match self.reach.views.removed_tool(name, cx.resolved.caller()) {
                Some(upstream) => {
                    format!(
                        "Unknown tool: {name} (its upstream `{upstream}` was removed from toolgate's configuration)"
                    )
                }
                None => format!("Unknown tool: {name}"),
            };
            // Through the call tool, a name the model got wrong is the
            // model's to correct: a tool error, which hosts show it, rather
            // than a protocol error on the call tool the host listed.
            if cx.resolved.is_routed() {
                let search = &self.reach.views.config().disclosure.search_tool_name;
                let text = format!("{why}. Use the exact name {search} returned, or search again.");
                return Outcome::Result(json!({"content": [{"type": "text", "text": text}], "isError": true}));
            }
            return invalid(why);
        };
        if let Err(e) = check_param_headers(cx, entry, &params) {
            return Outcome::error(e);
        }
        // Past the disclosure gate: the arguments against the tool's schema.
        if let Err(invalid) = self.check_arguments(entry, member(&params, "arguments")) {
            cx.note.refused_with_error(super::note::Refusal::Arguments);
            return Outcome::Result(invalid.tool_result());
        }
        // The upstream's own name, in place (indexing by "name" would copy
        // the key, and a lookup hash it): nothing to do when the tool is
        // exposed under it.
        match member_mut(&mut params, "name") {
            Some(name) if name.as_str() == Some(entry.original.as_str()) => {}
            Some(name) => *name = Value::String(entry.original.clone()),
            None => params["name"] = json!(entry.original),
        }
        let up = match &call.upstream {
            Some(up) => up.clone(),
            None => match self.upstreams().get(entry.upstream) {
                Some(up) => up.clone(),
                None => return Outcome::error(ErrorObject::method_not_found(method::TOOLS_CALL)),
            },
        };
        // An OAuth upstream: the user's consent first (its retry carries
        // toolgate's own state, which the upstream never sees).
        let oauth = up.oauth();
        if let Some(config) = &oauth {
            consent::strip_retry(&mut params);
            // Boxed, as every OAuth-only step below: inline, their state
            // would size (and be copied with) every tool call's future.
            if let Err(ask) = Box::pin(consent::check(cx, &up, config)).await {
                return ask;
            }
        }
        // Tool calls may run long: stream the answer (resumable on HTTP)
        // unless it is ready within the transport's grace period.
        cx.ctx.downlink.prefer_stream();
        let task_augmented = member(&params, "task").is_some();
        // Kept only where a refused credential may send the call again.
        let again = oauth.is_some().then(|| params.clone());
        let outcome = self.forward_to_raw(cx, &up, method, Some(params)).await;
        let refused = match &outcome {
            Err(e) if e.is_unauthorized() => e,
            _ => return self.finish(cx, &up, method::TOOLS_CALL, task_augmented, outcome).await,
        };
        let principal = cx.session.state.principal();
        match (&oauth, again) {
            // The upstream refused the user's token: the OAuth client
            // refreshes it once, and the call is sent again (the upstream
            // did not run it); else consent is asked anew.
            (Some(config), Some(again)) => {
                if Box::pin(self.reach.identity.oauth().refused(config, &principal)).await {
                    return Box::pin(self.forward_to(cx, &up, method::TOOLS_CALL, Some(again))).await;
                }
                match Box::pin(consent::check(cx, &up, config)).await {
                    Ok(()) => self.finish(cx, &up, method::TOOLS_CALL, task_augmented, outcome).await,
                    Err(ask) => ask,
                }
            }
            // Not configured OAuth, but the upstream says it is a protected
            // resource: an authenticated client is asked for consent.
            _ if refused.resource_metadata().is_some()
                && principal.kind() != crate::auth::PrincipalKind::Anonymous
                && up.found_protected() =>
            {
                // This client's connections went without its token: closed,
                // so its next call opens its own with it.
                let mut stale = up.take_connections_of(|id| id == principal.id());
                stale.extend(Box::pin(cx.session.state.take_connection(up.index)).await);
                for peer in stale {
                    crate::spawn(async move { peer.shutdown().await });
                }
                let config = up.oauth().unwrap_or_else(|| up.config.clone());
                match Box::pin(consent::check(cx, &up, &config)).await {
                    Ok(()) => self.finish(cx, &up, method::TOOLS_CALL, task_augmented, outcome).await,
                    Err(ask) => ask,
                }
            }
            _ => self.finish(cx, &up, method::TOOLS_CALL, task_augmented, outcome).await,
        }
    }

    async fn merged_list(&self, cx: Forwarding<'_>, kind: ListKind, params: Option<&Value>) -> Outcome {
        // A bad cursor fails before any upstream is asked.
        if let Err(e) = self.pager.offset(kind.key(), params) {
            return Outcome::error(e);
        }
        let upstreams = self.upstreams();
        let pages = crawl_all(&upstreams, cx.session, kind).await;
        // What the session's concern configuration filters out is not listed
        // (its route is still learned: filtering is not access control).
        let declared = self.reach.views.catalogs().concerns();
        let configured = cx.session.state.concerns();
        let shown = |i: usize, item: &Value| match &configured {
            None => true,
            Some(c) => {
                let meta = item.get("_meta");
                let mapping = declared.resolve(&[&upstreams[i].config.concerns], meta);
                c.filter().shows(&mapping)
            }
        };
        let items = self.routes.merge(&upstreams, kind, pages, shown);
        match self.pager.page(kind.key(), kind.key(), &items, params) {
            Ok(page) => Outcome::Result(page),
            Err(e) => Outcome::error(e),
        }
    }

    /// The upstreams `session` may use that may own resource `uri`.
    pub(crate) fn resource_candidates(&self, session: &GwSession, uri: &str) -> Vec<usize> {
        self.routes.resource_candidates(&self.upstreams(), uri, |i| session.state.uses(i))
    }

    /// The upstream slots (see [`Views::upstreams`](super::views::Views::upstreams)).
    pub(crate) fn upstreams(&self) -> Arc<Vec<Arc<UpstreamHandle>>> {
        self.reach.views.upstreams()
    }

    /// Everyone who hears about list changes and resource updates.
    fn audience(&self) -> Vec<Arc<GwSession>> {
        self.reach.upward.audience()
    }

    /// Checks the `arguments` of a call to catalog tool `entry` (missing:
    /// `{}`) against the tool's full `inputSchema`, when its upstream or
    /// tool has `validate_arguments` (as the catalog entry says: a reload
    /// rebuilds it). Every `tools/call` of a catalog tool passes here once
    /// past the disclosure gate; an invalid call is counted and answered
    /// with the error's
    /// [`tool_result`](crate::catalog::InvalidArguments::tool_result), and
    /// never reaches the upstream.
    fn check_arguments(
        &self,
        entry: &ToolEntry,
        arguments: Option<&Value>,
    ) -> Result<(), crate::catalog::InvalidArguments> {
        let checked = self.arguments.check(entry, arguments);
        if let Err(e) = &checked {
            tracing::debug!(tool = %entry.exposed, errors = e.errors, "call refused: invalid arguments");
            if let Some(up) = self.upstreams().get(entry.upstream) {
                self.reach.metrics.argument_errors(&up.label, &entry.original);
            }
        }
        checked
    }

    /// Forwards to each candidate in turn until one knows the resource.
    async fn forward_to_candidates(
        &self,
        cx: Forwarding<'_>,
        candidates: &[usize],
        method: &str,
        params: Option<Value>,
    ) -> Outcome {
        let uri = params.as_ref().and_then(|p| p.get("uri")).cloned().unwrap_or(Value::Null);
        let mut last = Outcome::error(
            ErrorObject::new(codes::RESOURCE_NOT_FOUND, "Resource not found").with_data(json!({"uri": uri})),
        );
        for (n, &i) in candidates.iter().enumerate() {
            let outcome = self.forward(cx, i, method, params.clone()).await;
            let not_found = matches!(outcome.error_code(), Some(codes::RESOURCE_NOT_FOUND | codes::INVALID_PARAMS));
            if !not_found || n + 1 == candidates.len() {
                return outcome;
            }
            last = outcome;
        }
        last
    }

    async fn subscription(&self, cx: Forwarding<'_>, method: &str, params: Option<Value>) -> Outcome {
        let Some(uri) = str_param(params.as_ref(), "uri").map(str::to_owned) else {
            return invalid(format!("{method} needs a string \"uri\""));
        };
        let subscribe = method == method::RESOURCES_SUBSCRIBE;
        let max = self.reach.views.config().server.max_subscriptions_per_session;
        if subscribe && let Err(e) = cx.session.state.admit_subscriptions([uri.as_str()], max) {
            return Outcome::error(e);
        }
        let candidates = self.resource_candidates(cx.session, &uri);
        let upstreams = self.upstreams();
        if let Some(&index) = candidates.first()
            && upstreams[index].is_modern()
        {
            // Boxed: rare, and its state would size every forwarded request's future.
            return Box::pin(subscriptions::modern_subscription(cx, index, &uri, subscribe)).await;
        }
        let shared = candidates.first().is_some_and(|&i| upstreams[i].is_shared());
        if !subscribe && shared {
            cx.session.state.unsubscribe(&uri);
            // A shared upstream keeps the subscription while another session
            // (or a listen stream) holds it.
            if self.audience().iter().any(|s| s.state.is_subscribed(&uri)) {
                return Outcome::Result(json!({}));
            }
        }
        let outcome = self.forward_to_candidates(cx, &candidates, method, params).await;
        if outcome.error_code().is_none() {
            if subscribe {
                cx.session.state.subscribe(&uri);
            } else {
                cx.session.state.unsubscribe(&uri);
            }
        }
        outcome
    }

    /// When a session ends, shared upstreams drop the subscriptions only it
    /// held, and it lets go of those it held at 2026-07-28 upstreams.
    pub async fn release_subscriptions(&self, session: &GwSession) {
        let upstreams = self.upstreams();
        for uri in session.state.subscriptions() {
            let first = self.resource_candidates(session, &uri).first().copied();
            if let Some(i) = first
                && upstreams[i].is_modern()
            {
                let_go(self, i, &uri).await;
                continue;
            }
            if self.audience().iter().any(|s| s.state.is_subscribed(&uri)) {
                continue;
            }
            let Some(i) = first else { continue };
            let up = &upstreams[i];
            if up.is_shared()
                && let Some(peer) = up.control()
            {
                let call = Call::new(method::RESOURCES_UNSUBSCRIBE, Some(json!({"uri": uri})));
                let _ = upstream::service::call_on(peer, up.config.timeout, call).await;
            }
        }
    }

    async fn get_prompt(&self, cx: Forwarding<'_>, params: Option<Value>) -> Outcome {
        let Some(mut params) = params.filter(Value::is_object) else {
            return invalid("prompts/get needs params with a prompt name");
        };
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return invalid("prompts/get needs a string \"name\"");
        };
        let Some((index, original)) = self.resolve_prompt(cx, name) else {
            return invalid(format!("Unknown prompt: {name}"));
        };
        params["name"] = json!(original);
        self.forward(cx, index, method::PROMPTS_GET, Some(params)).await
    }

    async fn complete(&self, cx: Forwarding<'_>, params: Option<Value>) -> Outcome {
        let Some(mut params) = params.filter(Value::is_object) else {
            return invalid("completion/complete needs params");
        };
        let kind = params.pointer("/ref/type").and_then(Value::as_str).unwrap_or("").to_owned();
        match kind.as_str() {
            "ref/resource" => {
                let uri = params.pointer("/ref/uri").and_then(Value::as_str).unwrap_or("");
                let candidates = self.routes.template_candidates(&self.upstreams(), uri, |i| cx.session.state.uses(i));
                if candidates.is_empty() {
                    return invalid(format!("Unknown resource template: {uri}"));
                }
                self.forward_to_candidates(cx, &candidates, method::COMPLETION_COMPLETE, Some(params)).await
            }
            "ref/prompt" => {
                let name = params.pointer("/ref/name").and_then(Value::as_str).unwrap_or("");
                let Some((index, original)) = self.resolve_prompt(cx, name) else {
                    return invalid(format!("Unknown prompt: {name}"));
                };
                params["ref"]["name"] = json!(original);
                self.forward(cx, index, method::COMPLETION_COMPLETE, Some(params)).await
            }
            other => invalid(format!("Unknown completion reference type: {other:?}")),
        }
    }

    /// The upstream and upstream name of an exposed prompt name, among the
    /// upstreams the client may use.
    fn resolve_prompt(&self, cx: Forwarding<'_>, name: &str) -> Option<(usize, String)> {
        self.routes.resolve_prompt(&self.upstreams(), name).filter(|(i, _)| cx.session.state.uses(*i))
    }

    /// `logging/setLevel`: remembered for the session and applied to every
    /// upstream session it uses (a shared upstream's level is shared).
    async fn set_level(&self, cx: Forwarding<'_>, params: Option<Value>) -> Outcome {
        let Some(level) = params.as_ref().and_then(|p| p.get("level")).filter(|l| l.is_string()).cloned() else {
            return invalid("logging/setLevel needs a string \"level\"");
        };
        if !level.as_str().is_some_and(|l| LOG_LEVELS.contains(&l)) {
            return invalid(format!("Invalid log level: \"level\" must be one of {}", LOG_LEVELS.join(", ")));
        }
        let live = cx.session.state.live_connections();
        let mut targets = Vec::new();
        // A modern upstream has no `logging/setLevel`: the level travels on
        // each request (`_meta` logLevel, from the session's).
        let modern = |u: &UpstreamHandle| u.hello().is_some_and(|h| h.modern.is_some());
        let uses = |u: &UpstreamHandle| u.has("logging") && !modern(u) && cx.session.state.uses(u.index);
        for up in self.upstreams().iter().filter(|u| uses(u)) {
            let peer = match up.is_shared() {
                true => up.control(),
                false => live.iter().find(|(i, _)| *i == up.index).map(|(_, p)| p.clone()),
            };
            targets.extend(peer.map(|p| (p, up.config.timeout)));
        }
        let calls = targets.iter().map(|(peer, timeout)| {
            let call = Call::new(method::LOGGING_SET_LEVEL, Some(json!({"level": level})));
            upstream::service::call_on(peer.clone(), *timeout, call)
        });
        for ((peer, _), result) in targets.iter().zip(futures::future::join_all(calls).await) {
            match result {
                Ok(outcome) if outcome.error_code().is_some() => {
                    // An invalid level is the client's mistake: say so, and
                    // keep nothing an upstream refused (later upstream
                    // sessions would be given it too).
                    return outcome;
                }
                Err(e) => debug_not_applied(peer.label(), &e),
                Ok(_) => {}
            }
        }
        cx.session.state.set_log_level(level);
        Outcome::Result(json!({}))
    }
}

/// `params` without the 2026-07-28 envelope keys in `_meta` (and without an
/// empty `_meta` left behind); everything else, `progressToken` and vendor
/// keys included, is kept.
fn strip_envelope(params: Option<Value>) -> Option<Value> {
    use crate::protocol::modern::meta;
    let mut params = params?;
    if let Some(Value::Object(m)) = params.get_mut("_meta") {
        for key in [meta::PROTOCOL_VERSION, meta::CLIENT_CAPABILITIES, meta::CLIENT_INFO, meta::LOG_LEVEL] {
            m.remove(key);
        }
        if m.is_empty()
            && let Some(p) = params.as_object_mut()
        {
            p.remove("_meta");
        }
    }
    Some(params)
}

fn debug_not_applied(upstream: &str, e: &UpstreamError) {
    tracing::debug!(%upstream, error = %e.report(), "logging/setLevel not applied");
}
