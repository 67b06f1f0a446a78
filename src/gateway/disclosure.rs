//! Progressive disclosure as a layer over the forwarder.
//!
//! The layer serves the minimal `tools/list`, the descriptions resource
//! (`resource:///tool_descriptions?tools=…`, its listing, its template and
//! the completion of its `tools` argument) and the `describe_tools` tool,
//! and refuses `tools/call` for a progressive tool until the session has
//! fetched that tool's current description. Everything else passes through
//! to the forwarder untouched. While every upstream is in `passthrough`
//! mode the layer steps aside (a reload may make one progressive).

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use std::future::Future;

use super::catalogs::CatalogView;
use super::layer::{Exchange, Layer, Next};
use super::pages::Pager;
use super::resolve::Target;
use super::state::GwSession;
use super::views::Views;
use crate::config::Mode;
use crate::disclosure::{self, Selection};
use crate::grants::Unavailable;
use crate::jsonrpc::{Outcome, Request, member};
use crate::metrics::{Metrics, Via};
use crate::protocol::method;
use crate::server::ServerOffer;

/// Longest URI echoed back as given in a descriptions answer (and cached
/// by); a longer one (query parameters toolgate ignores) is answered with the
/// canonical URI of its selection, and not cached.
const ECHOED_URI: usize = 4096;

/// The disclosure layer.
pub struct Disclosure {
    /// The catalog views a session sees, and the start-up wait.
    views: Views,
    metrics: Arc<Metrics>,
    /// Pages the minimal `tools/list`.
    pager: Arc<Pager>,
    /// Rendered `resources/read` results of the descriptions resource, by
    /// catalog epoch and URI (cheap answers to repeated fetches), weighed in
    /// bytes (`disclosure.cache_bytes`).
    rendered: moka::sync::Cache<(u64, String), Arc<Rendered>>,
}

/// The cache of rendered answers, weighed in bytes (keys included), at most
/// `cache_bytes`.
fn rendered_cache(cache_bytes: u64) -> moka::sync::Cache<(u64, String), Arc<Rendered>> {
    moka::sync::Cache::builder()
        .weigher(|key: &(u64, String), rendered: &Arc<Rendered>| {
            let names: usize = rendered.authorized.iter().map(|(n, _)| n.len() + 32).sum();
            u32::try_from(key.1.len() + rendered.result.get().len() + names + 64).unwrap_or(u32::MAX)
        })
        .max_capacity(cache_bytes)
        .build()
}

/// A rendered read of the descriptions resource.
struct Rendered {
    /// The `resources/read` result.
    result: Arc<RawValue>,
    /// The tools it authorizes, with the fingerprints of their definitions.
    authorized: Vec<(String, u64)>,
}

impl Disclosure {
    /// The layer, keeping at most `cache_bytes` of rendered answers and
    /// paging with `pager`.
    pub fn new(cache_bytes: u64, pager: Arc<Pager>, views: Views, metrics: Arc<Metrics>) -> Self {
        Self { views, metrics, pager, rendered: rendered_cache(cache_bytes) }
    }

    async fn serve_request<'a, N: Next<'a>>(&'a self, cx: Exchange<'a>, request: Request, next: N) -> Outcome {
        // A call the lock holds, whatever the tool's mode.
        if let Some(entry) = cx.resolved.call().and_then(|c| c.entry())
            && self.views.catalogs().approved().is_held(entry.upstream, &entry.original)
        {
            tracing::info!(tool = %entry.exposed, "call refused: the tool's definition changed upstream and awaits approval");
            cx.note.refused(super::note::Refusal::DriftHold);
            return Outcome::Result(crate::lock::held_call(&entry.exposed));
        }
        // No progressive upstream (a reload may add one): the forwarder alone.
        if !self.views.catalogs().current().catalog.has_progressive() {
            return next.run(cx, request).await;
        }
        match request.method.as_str() {
            method::TOOLS_LIST => {
                self.views.wait_ready(cx.session).await;
                let view = self.views.listing_for(cx.session);
                self.pager.tools_page(view.catalog.list_result_raw(), request.params.as_ref())
            }
            method::TOOLS_CALL => self.call_tool(cx, request, next).await,
            method::RESOURCES_LIST | method::RESOURCES_TEMPLATES_LIST => {
                let first_page = request.params.as_ref().and_then(|p| p.get("cursor")).is_none_or(Value::is_null);
                let listed = request.method == method::RESOURCES_LIST;
                let outcome = next.run(cx, request).await;
                if !first_page {
                    return outcome;
                }
                // toolgate's own resource heads the first page.
                let view = self.views.catalog_for(cx.session);
                let describe = view.catalog.describe_tool_name();
                let (key, entry) = match listed {
                    true => ("resources", disclosure::resource_entry(describe)),
                    false => ("resourceTemplates", disclosure::template_entry(describe)),
                };
                prepend(outcome, key, entry)
            }
            method::RESOURCES_READ => match cx.resolved.descriptions() {
                Some(read) => {
                    self.views.wait_ready(cx.session).await;
                    self.read_descriptions(cx.session, &read.uri, &read.selection).await
                }
                None => next.run(cx, request).await,
            },
            // toolgate's own resource: accepted, nothing upstream to tell.
            method::RESOURCES_SUBSCRIBE | method::RESOURCES_UNSUBSCRIBE
                if own_uri(&request).is_some_and(|u| disclosure::parse_selection(&u).is_some()) =>
            {
                Outcome::Result(json!({}))
            }
            method::COMPLETION_COMPLETE if completes_tool_names(&request) => {
                let value = request.params.as_ref().and_then(|p| p.pointer("/argument/value")).and_then(Value::as_str);
                let view = self.views.catalog_for(cx.session);
                Outcome::Result(disclosure::complete_tool_names(&view.catalog, value.unwrap_or("")))
            }
            _ => next.run(cx, request).await,
        }
    }

    /// The gate: the describe tool is served here; a progressive tool whose
    /// current description the session has not fetched is refused.
    async fn call_tool<'a, N: Next<'a>>(&'a self, cx: Exchange<'a>, request: Request, next: N) -> Outcome {
        let Some(call) = cx.resolved.call() else { return next.run(cx, request).await };
        let entry = match &call.target {
            // The resolution waited for what it describes (as for the resource).
            Target::Describe => {
                let arguments = request.params.as_ref().and_then(|p| member(p, "arguments"));
                return self.describe_tool(cx.session, &call.view, arguments).await;
            }
            Target::Tool(entry) => entry,
            Target::Other(_) => return next.run(cx, request).await,
        };
        // The retry of a held call (a sessionless client answering what its
        // upstream asked) was admitted in its first round; the forwarder
        // checks that its state is for exactly this call.
        let retry = call.retry.as_ref().is_some_and(|state| state.own);
        if entry.mode == Mode::Progressive && !retry {
            let (name, view) = (entry.exposed.as_str(), &call.view);
            match cx.session.state.grants.allows(name, entry.fingerprint).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::debug!(tool = %name, "call refused until the description is fetched");
                    cx.note.refused(super::note::Refusal::Gate);
                    self.metrics.gate_refused(entry.upstream);
                    return Outcome::Result(disclosure::description_required(name, view.catalog.describe_tool_name()));
                }
                Err(e) => return store_unavailable(&e),
            }
        }
        next.run(cx, request).await
    }
    /// Reads `resource:///tool_descriptions?tools=...`: the full definitions,
    /// which authorizes exactly the tools returned, for this session (or,
    /// sessionless, its client).
    async fn read_descriptions(&self, session: &GwSession, uri: &str, selection: &Selection) -> Outcome {
        let view = self.views.catalog_for(session);
        let key = (view.epoch, uri.to_owned());
        let rendered = self.rendered.get(&key).unwrap_or_else(|| {
            let echoed = match selection {
                _ if uri.len() <= ECHOED_URI => uri.to_owned(),
                Selection::Tools(names) if view.catalog.fetch_limits().refusal(names).is_none() => {
                    disclosure::selection_uri(names)
                }
                _ => disclosure::RESOURCE_URI.to_owned(),
            };
            let (body, authorized) = match selection {
                Selection::Missing => (disclosure::missing_selection(&view.catalog), Vec::new()),
                Selection::Tools(names) => {
                    let budget = view.catalog.fetch_limits().body_budget(disclosure::escaped_len(&echoed));
                    let described = disclosure::describe_within(&view.catalog, names, budget);
                    (described.body, fingerprints(&view, described.authorized))
                }
            };
            let result = disclosure::read_result(&echoed, &body);
            let result = serde_json::value::to_raw_value(&result).unwrap_or_else(|_| RawValue::NULL.to_owned());
            let rendered = Arc::new(Rendered { result: Arc::from(result), authorized });
            if uri.len() <= ECHOED_URI {
                self.rendered.insert(key, rendered.clone());
            }
            rendered
        });
        if !rendered.authorized.is_empty() {
            let tools: Vec<_> = rendered.authorized.iter().map(|(n, _)| n).collect();
            tracing::debug!(?tools, "descriptions fetched");
        }
        // Granted before it counts as fetched: without the grant, the client
        // is told to retry rather than handed definitions it cannot call.
        if let Err(e) = session.state.grants.grant(&rendered.authorized).await {
            return store_unavailable(&e);
        }
        let upstreams = rendered.authorized.iter().filter_map(|(n, _)| view.catalog.get(n)).map(|e| e.upstream);
        self.metrics.descriptions_fetched(Via::Resource, upstreams);
        self.audit_described(session, &view, rendered.authorized.iter().map(|(n, _)| n.as_str()));
        Outcome::Prepared(rendered.result.clone().into())
    }

    /// Tells the audit trail which definitions (by digest) `session` was served.
    fn audit_described<'n>(&self, session: &GwSession, view: &CatalogView, names: impl Iterator<Item = &'n str>) {
        let Some(audit) = self.views.audit() else { return };
        let tools: Vec<_> =
            names.filter_map(|n| view.catalog.get(n)).map(|e| (e.exposed.clone(), e.digest.clone())).collect();
        if !tools.is_empty() {
            let who = super::audited::who(session);
            audit.emit(crate::audit::Event::now(crate::audit::Kind::Describe { who, tools }));
        }
    }

    /// The synthesized describe tool: the same bodies as the resource, and the
    /// same authorization.
    async fn describe_tool(&self, session: &GwSession, view: &CatalogView, arguments: Option<&Value>) -> Outcome {
        match disclosure::parse_describe_args(arguments) {
            Err(_) => Outcome::Result(disclosure::describe_args_error(&view.catalog)),
            Ok(names) if let Some(refused) = view.catalog.fetch_limits().refusal(&names) => {
                Outcome::Result(disclosure::describe_refused(&refused))
            }
            Ok(names) => {
                let described = disclosure::describe(&view.catalog, &names);
                let upstreams: Vec<_> =
                    described.authorized.iter().filter_map(|n| view.catalog.get(n)).map(|e| e.upstream).collect();
                self.audit_described(session, view, described.authorized.iter().map(String::as_str));
                if let Err(e) = session.state.grants.grant(&fingerprints(view, described.authorized)).await {
                    return store_unavailable(&e);
                }
                self.metrics.descriptions_fetched(Via::Tool, upstreams);
                Outcome::Result(disclosure::describe_tool_result(&described.body))
            }
        }
    }
}

impl Layer for Disclosure {
    fn serve<'a, N: Next<'a>>(
        &'a self,
        cx: Exchange<'a>,
        request: Request,
        next: N,
    ) -> impl Future<Output = Outcome> + Send + 'a {
        self.serve_request(cx, request, next)
    }

    /// toolgate serves the descriptions resource and completes its template,
    /// and explains the workflow first in the instructions.
    fn offer(&self, offer: &mut ServerOffer) {
        let view = self.views.catalogs().current();
        if !view.catalog.has_progressive() {
            return;
        }
        let Value::Object(caps) = &mut offer.capabilities else { return };
        let resources = caps.entry("resources").or_insert_with(|| json!({}));
        if let Value::Object(r) = resources {
            r.insert("listChanged".into(), json!(true));
        }
        caps.entry("completions").or_insert_with(|| json!({}));
        sort_capabilities(caps);
        let workflow = disclosure::instructions(view.catalog.describe_tool_name());
        offer.instructions = Some(match offer.instructions.take() {
            Some(upstreams) => format!("{workflow}\n\n{upstreams}"),
            None => workflow,
        });
    }
}

/// The capabilities in the order toolgate has always listed them (JSON
/// objects keep insertion order here).
fn sort_capabilities(caps: &mut Map<String, Value>) {
    const ORDER: [&str; 5] = ["tools", "resources", "prompts", "logging", "completions"];
    let mut sorted = Map::new();
    for key in ORDER {
        if let Some(v) = caps.remove(key) {
            sorted.insert(key.into(), v);
        }
    }
    sorted.append(caps);
    *caps = sorted;
}

/// The `uri` param of a resource request.
fn own_uri(request: &Request) -> Option<String> {
    request.params.as_ref()?.get("uri")?.as_str().map(str::to_owned)
}

/// Whether a completion asks for the `tools` argument of the descriptions
/// resource (its template, or a selection URI).
fn completes_tool_names(request: &Request) -> bool {
    let Some(params) = request.params.as_ref() else { return false };
    if params.pointer("/ref/type").and_then(Value::as_str) != Some("ref/resource") {
        return false;
    }
    let uri = params.pointer("/ref/uri").and_then(Value::as_str).unwrap_or("");
    uri == disclosure::TEMPLATE_URI || disclosure::parse_selection(uri).is_some()
}

/// A list result with `entry` first in `key`.
fn prepend(outcome: Outcome, key: &str, entry: Value) -> Outcome {
    let mut result = match outcome {
        Outcome::Result(v) => v,
        Outcome::Prepared(raw) => match serde_json::from_str(raw.get()) {
            Ok(v) => v,
            Err(_) => return Outcome::Prepared(raw),
        },
        error @ Outcome::Error(_) => return error,
    };
    match result.get_mut(key) {
        Some(Value::Array(items)) => items.insert(0, entry),
        _ => {
            if let Value::Object(map) = &mut result {
                map.insert(key.into(), Value::Array(vec![entry]));
            }
        }
    }
    Outcome::Result(result)
}

/// The answer to a request whose grants could not be read or written.
fn store_unavailable(e: &Unavailable) -> Outcome {
    tracing::warn!(error = %e, "a request failed: the grant store is unavailable");
    Outcome::error(e.to_error())
}

fn fingerprints(view: &CatalogView, names: Vec<String>) -> Vec<(String, u64)> {
    names.into_iter().filter_map(|n| view.catalog.get(&n).map(|e| e.fingerprint).map(|f| (n, f))).collect()
}

#[cfg(test)]
mod tests;
