//! Request routing: what the gateway answers itself, what it gates, and
//! where it forwards the rest.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::events::SessionRoute;
use super::lists::ListKind;
use super::{CatalogView, Gateway, GwSession, RenderedDescriptions};
use crate::config::{Mode, Sharing, TransportKind};
use crate::disclosure::{self, Selection};
use crate::jsonrpc::{ErrorObject, Outcome, Request};
use crate::protocol::method;
use crate::server::RequestCtx;
use crate::upstream::{Route, UpstreamError};

fn invalid(message: impl Into<String>) -> Outcome {
    Outcome::error(ErrorObject::invalid_params(message))
}

fn str_param<'a>(params: Option<&'a Value>, key: &str) -> Option<&'a str> {
    params?.get(key)?.as_str()
}

impl Gateway {
    /// Answers one client request.
    pub(crate) async fn route(
        self: &Arc<Self>,
        session: &Arc<GwSession>,
        request: Request,
        ctx: RequestCtx,
    ) -> Outcome {
        let Request { method, params, .. } = request;
        match method.as_str() {
            method::TOOLS_LIST => self.list_tools(session, params.as_ref()).await,
            method::TOOLS_CALL => self.call_tool(session, params, &ctx).await,
            method::RESOURCES_LIST => self.merged_list(session, ListKind::Resources, params.as_ref()).await,
            method::RESOURCES_TEMPLATES_LIST => self.merged_list(session, ListKind::Templates, params.as_ref()).await,
            method::PROMPTS_LIST => self.merged_list(session, ListKind::Prompts, params.as_ref()).await,
            method::RESOURCES_READ => self.read_resource(session, params, &ctx).await,
            method::RESOURCES_SUBSCRIBE | method::RESOURCES_UNSUBSCRIBE => {
                self.subscription(session, &method, params, &ctx).await
            }
            method::PROMPTS_GET => self.get_prompt(session, params, &ctx).await,
            method::COMPLETION_COMPLETE => self.complete(session, params, &ctx).await,
            method::LOGGING_SET_LEVEL => self.set_level(session, params).await,
            // Anything else (vendor methods) belongs to the upstream when
            // there is only one; with several there is no owner to pick.
            other if self.upstreams.len() == 1 => self.forward(session, 0, other, params, &ctx).await,
            other => Outcome::error(ErrorObject::method_not_found(other)),
        }
    }

    /// Forwards a request to upstream `index` over the session's connection.
    /// An upstream that forgot the session (HTTP 404) gets one fresh session
    /// and one retry.
    pub(crate) async fn forward(
        self: &Arc<Self>,
        session: &Arc<GwSession>,
        index: usize,
        method: &str,
        params: Option<Value>,
        ctx: &RequestCtx,
    ) -> Outcome {
        let is_http = self.upstreams[index].config.transport_kind() != TransportKind::Stdio;
        let retry_params = is_http.then(|| params.clone());
        let outcome = match self.forward_once(session, index, method, params, ctx).await {
            Err(UpstreamError::SessionExpired { upstream }) if retry_params.is_some() => {
                tracing::info!(%upstream, "upstream session expired; retrying on a new one");
                self.forward_once(session, index, method, retry_params.flatten(), ctx).await
            }
            other => other,
        };
        match outcome {
            Ok(Outcome::Error(error)) => {
                // URLElicitationRequiredError: remember who may hear the completions.
                if let Some(elicitations) = error.pointer("/data/elicitations").and_then(Value::as_array) {
                    for id in elicitations.iter().filter_map(|e| e.get("elicitationId")).filter_map(Value::as_str) {
                        self.elicitations.insert(id.to_owned(), session.id_arc());
                    }
                }
                Outcome::Error(error)
            }
            // Content the client's revision predates is translated.
            Ok(outcome) => super::translate::outcome(method, outcome, session.version()),
            Err(e) => Outcome::error(e.to_error_object()),
        }
    }

    /// Remembers which session a URL-mode `elicitation/create` went to.
    pub(crate) fn note_url_elicitation(&self, session: &GwSession, request: &Request) {
        let params = request.params.as_ref();
        if request.method == "elicitation/create"
            && params.and_then(|p| p.get("mode")).and_then(Value::as_str) == Some("url")
            && let Some(id) = params.and_then(|p| p.get("elicitationId")).and_then(Value::as_str)
        {
            self.elicitations.insert(id.to_owned(), session.id_arc());
        }
    }

    /// The live session a URL-mode elicitation belongs to.
    pub(crate) fn elicitation_owner(&self, elicitation_id: &str) -> Option<Arc<GwSession>> {
        self.elicitations.get(elicitation_id).and_then(|id| self.sessions.get(&id))
    }

    async fn forward_once(
        self: &Arc<Self>,
        session: &Arc<GwSession>,
        index: usize,
        method: &str,
        params: Option<Value>,
        ctx: &RequestCtx,
    ) -> Result<Outcome, UpstreamError> {
        let peer = self.connection(session, index).await?;
        let route: Arc<dyn Route> = Arc::new(SessionRoute {
            gateway: Arc::downgrade(self),
            session: session.clone(),
            downlink: ctx.downlink.clone(),
        });
        peer.call(method, params, Some(route), &ctx.cancel).await
    }

    async fn list_tools(&self, session: &GwSession, params: Option<&Value>) -> Outcome {
        self.wait_ready().await;
        let view = self.catalog_for(session);
        if self.pager.is_off() {
            // The whole catalog, encoded once per catalog.
            return match self.pager.offset("tools", params) {
                Ok(_) => Outcome::Prepared(view.catalog.list_result_raw().clone()),
                Err(e) => Outcome::error(e),
            };
        }
        let tools = view.catalog.list_result()["tools"].as_array().map(Vec::as_slice).unwrap_or_default();
        match self.pager.page("tools", "tools", tools, params) {
            Ok(page) => Outcome::Result(page),
            Err(e) => Outcome::error(e),
        }
    }

    async fn call_tool(self: &Arc<Self>, session: &Arc<GwSession>, params: Option<Value>, ctx: &RequestCtx) -> Outcome {
        let Some(mut params) = params.filter(Value::is_object) else {
            return invalid("tools/call needs params with a tool name");
        };
        let Some(name) = params.get("name").and_then(Value::as_str).map(str::to_owned) else {
            return invalid("tools/call needs a string \"name\"");
        };
        let mut view = self.catalog_for(session);
        if view.catalog.get(&name).is_none() && view.catalog.describe_tool_name() != Some(&name) {
            // Perhaps the catalog is still loading.
            self.wait_ready().await;
            view = self.catalog_for(session);
        }
        if view.catalog.describe_tool_name() == Some(name.as_str()) {
            return describe_tool(session, &view, params.get("arguments"));
        }
        let Some(entry) = view.catalog.get(&name).cloned() else {
            return invalid(format!("Unknown tool: {name}"));
        };
        if entry.mode == Mode::Progressive && !session.state.is_authorized(&name, entry.fingerprint) {
            tracing::debug!(session = session.id(), tool = %name, "call refused until the description is fetched");
            return Outcome::Result(disclosure::description_required(&name, view.catalog.describe_tool_name()));
        }
        params["name"] = json!(entry.original);
        // Tool calls may run long: stream the answer (resumable on HTTP)
        // unless it is ready within the transport's grace period.
        ctx.downlink.prefer_stream();
        self.forward(session, entry.upstream, method::TOOLS_CALL, Some(params), ctx).await
    }

    async fn read_resource(
        self: &Arc<Self>,
        session: &Arc<GwSession>,
        params: Option<Value>,
        ctx: &RequestCtx,
    ) -> Outcome {
        let Some(uri) = str_param(params.as_ref(), "uri").map(str::to_owned) else {
            return invalid("resources/read needs a string \"uri\"");
        };
        match disclosure::parse_selection(&uri) {
            Some(selection) => {
                self.wait_ready().await;
                self.read_descriptions(session, &uri, selection)
            }
            None => {
                let candidates = self.resource_candidates(&uri);
                if candidates.is_empty() {
                    return Outcome::error(
                        ErrorObject::new(crate::jsonrpc::codes::RESOURCE_NOT_FOUND, "Resource not found")
                            .with_data(json!({"uri": uri})),
                    );
                }
                self.forward_to_candidates(session, &candidates, method::RESOURCES_READ, params, ctx).await
            }
        }
    }

    /// Reads `resource:///tool_descriptions?tools=...`: the full definitions,
    /// which authorizes exactly the tools returned, for this session.
    fn read_descriptions(&self, session: &GwSession, uri: &str, selection: Selection) -> Outcome {
        let view = self.catalog_for(session);
        let key = (view.epoch, uri.to_owned());
        let rendered = self.descriptions.get(&key).unwrap_or_else(|| {
            let (body, authorized) = match selection {
                Selection::Missing => (disclosure::missing_selection(&view.catalog), Vec::new()),
                Selection::Tools(names) => {
                    let described = disclosure::describe(&view.catalog, &names);
                    (described.body, fingerprints(&view, described.authorized))
                }
            };
            let result = disclosure::read_result(uri, &body);
            let raw: Arc<RawValue> = serde_json::value::to_raw_value(&result).expect("JSON values serialize").into();
            let rendered = Arc::new(RenderedDescriptions { result: raw, authorized });
            self.descriptions.insert(key, rendered.clone());
            rendered
        });
        if !rendered.authorized.is_empty() {
            let tools: Vec<_> = rendered.authorized.iter().map(|(n, _)| n).collect();
            tracing::debug!(session = session.id(), ?tools, "descriptions fetched");
        }
        session.state.authorize(rendered.authorized.iter().cloned());
        Outcome::Prepared(rendered.result.clone())
    }

    async fn subscription(
        self: &Arc<Self>,
        session: &Arc<GwSession>,
        method: &str,
        params: Option<Value>,
        ctx: &RequestCtx,
    ) -> Outcome {
        let Some(uri) = str_param(params.as_ref(), "uri").map(str::to_owned) else {
            return invalid(format!("{method} needs a string \"uri\""));
        };
        if disclosure::parse_selection(&uri).is_some() {
            // toolgate's own resource: accepted, nothing upstream to tell.
            return Outcome::Result(json!({}));
        }
        let subscribe = method == method::RESOURCES_SUBSCRIBE;
        let candidates = self.resource_candidates(&uri);
        let shared = candidates.first().is_some_and(|&i| self.upstreams[i].config.sharing == Sharing::Shared);
        if !subscribe && shared {
            session.state.unsubscribe(&uri);
            // A shared upstream keeps the subscription while another session holds it.
            if self.sessions.sessions().iter().any(|s| s.state.is_subscribed(&uri)) {
                return Outcome::Result(json!({}));
            }
        }
        let outcome = self.forward_to_candidates(session, &candidates, method, params, ctx).await;
        if outcome.error_code().is_none() {
            if subscribe {
                session.state.subscribe(&uri);
            } else {
                session.state.unsubscribe(&uri);
            }
        }
        outcome
    }

    /// When a session ends, shared upstreams drop the subscriptions only it held.
    pub(crate) async fn release_subscriptions(&self, session: &GwSession) {
        for uri in session.state.subscriptions() {
            if self.sessions.sessions().iter().any(|s| s.state.is_subscribed(&uri)) {
                continue;
            }
            let Some(&i) = self.resource_candidates(&uri).first() else { continue };
            let up = &self.upstreams[i];
            if up.config.sharing == Sharing::Shared
                && let Some(peer) = up.control()
            {
                let never = tokio_util::sync::CancellationToken::new();
                let _ = peer.call(method::RESOURCES_UNSUBSCRIBE, Some(json!({"uri": uri})), None, &never).await;
            }
        }
    }

    async fn get_prompt(
        self: &Arc<Self>,
        session: &Arc<GwSession>,
        params: Option<Value>,
        ctx: &RequestCtx,
    ) -> Outcome {
        let Some(mut params) = params.filter(Value::is_object) else {
            return invalid("prompts/get needs params with a prompt name");
        };
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return invalid("prompts/get needs a string \"name\"");
        };
        let Some((index, original)) = self.resolve_prompt(name) else {
            return invalid(format!("Unknown prompt: {name}"));
        };
        params["name"] = json!(original);
        self.forward(session, index, method::PROMPTS_GET, Some(params), ctx).await
    }

    async fn complete(self: &Arc<Self>, session: &Arc<GwSession>, params: Option<Value>, ctx: &RequestCtx) -> Outcome {
        let Some(mut params) = params.filter(Value::is_object) else {
            return invalid("completion/complete needs params");
        };
        let kind = params.pointer("/ref/type").and_then(Value::as_str).unwrap_or("").to_owned();
        match kind.as_str() {
            "ref/resource" => {
                let uri = params.pointer("/ref/uri").and_then(Value::as_str).unwrap_or("").to_owned();
                if uri == disclosure::TEMPLATE_URI || disclosure::parse_selection(&uri).is_some() {
                    let value = params.pointer("/argument/value").and_then(Value::as_str).unwrap_or("");
                    return Outcome::Result(disclosure::complete_tool_names(&self.catalog_for(session).catalog, value));
                }
                let candidates = self.template_candidates(&uri);
                if candidates.is_empty() {
                    return invalid(format!("Unknown resource template: {uri}"));
                }
                self.forward_to_candidates(session, &candidates, method::COMPLETION_COMPLETE, Some(params), ctx).await
            }
            "ref/prompt" => {
                let name = params.pointer("/ref/name").and_then(Value::as_str).unwrap_or("");
                let Some((index, original)) = self.resolve_prompt(name) else {
                    return invalid(format!("Unknown prompt: {name}"));
                };
                params["ref"]["name"] = json!(original);
                self.forward(session, index, method::COMPLETION_COMPLETE, Some(params), ctx).await
            }
            other => invalid(format!("Unknown completion reference type: {other:?}")),
        }
    }

    /// `logging/setLevel`: remembered for the session and applied to every
    /// upstream session it uses (a shared upstream's level is shared).
    async fn set_level(self: &Arc<Self>, session: &Arc<GwSession>, params: Option<Value>) -> Outcome {
        let Some(level) = params.as_ref().and_then(|p| p.get("level")).filter(|l| l.is_string()).cloned() else {
            return invalid("logging/setLevel needs a string \"level\"");
        };
        session.state.set_log_level(level.clone());
        let live = session.state.live_connections();
        let mut targets = Vec::new();
        for up in self.upstreams.iter().filter(|u| u.has("logging")) {
            let peer = match up.config.sharing {
                Sharing::Shared => up.control(),
                Sharing::PerSession => live.iter().find(|(i, _)| *i == up.index).map(|(_, p)| p.clone()),
            };
            targets.extend(peer);
        }
        let never = tokio_util::sync::CancellationToken::new();
        let calls =
            targets.iter().map(|p| p.call(method::LOGGING_SET_LEVEL, Some(json!({"level": level})), None, &never));
        for (peer, result) in targets.iter().zip(futures::future::join_all(calls).await) {
            match result {
                Ok(outcome) if outcome.error_code().is_some() => {
                    // An invalid level is the client's mistake: say so.
                    return outcome;
                }
                Err(e) => tracing::debug!(upstream = %peer.label(), error = %e, "logging/setLevel not applied"),
                Ok(_) => {}
            }
        }
        Outcome::Result(json!({}))
    }
}

/// The synthesized describe tool: the same bodies as the resource, and the
/// same authorization.
fn describe_tool(session: &GwSession, view: &CatalogView, arguments: Option<&Value>) -> Outcome {
    match disclosure::parse_describe_args(arguments) {
        Err(_) => Outcome::Result(disclosure::describe_args_error(&view.catalog)),
        Ok(names) => {
            let described = disclosure::describe(&view.catalog, &names);
            session.state.authorize(fingerprints(view, described.authorized));
            Outcome::Result(disclosure::describe_tool_result(&described.body))
        }
    }
}

fn fingerprints(view: &CatalogView, names: Vec<String>) -> Vec<(String, u64)> {
    names.into_iter().filter_map(|n| view.catalog.get(&n).map(|e| e.fingerprint).map(|f| (n, f))).collect()
}
