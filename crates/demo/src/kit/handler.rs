//! A [`Registry`] as the engine's [`Handler`]: the per-session state the
//! kit keeps (log level, subscriptions), and the answers to everything the
//! engine hands over. The engine has already answered `initialize` (with the
//! registry's [`offer`](Registry::offer)) and `ping`, and handles
//! `notifications/cancelled` by firing the request's cancellation token.
//!
//! Tool calls run inside the request the engine runs: a sync handler inline,
//! an async one until it finishes or the call is cancelled (then its future
//! is dropped, and the engine sends no response). A panicking handler is
//! answered with an internal error; the session goes on.

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt as _;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use toolgate_mcp::jsonrpc::{ErrorObject, Id, Notification, Outcome, Request, codes};
use toolgate_mcp::protocol::method;
use toolgate_mcp::protocol::modern::params::{self, ParamCheck};
use toolgate_mcp::server::{
    CacheHints, CacheScope, Discovery, Handler, InitContext, Listen, ModernContext, RequestCtx, ServerOffer, Session,
};

use super::context::RequestContext;
use super::envelope::{self, Envelope};
use super::level::LogLevel;
use super::registry::{Registry, Tool, ToolFailure, ToolHandler, ToolResult};
use super::result;

/// The engine's view of a registry.
pub struct RegistryHandler {
    registry: Arc<Registry>,
}

impl RegistryHandler {
    /// A handler serving `registry` to every session.
    pub fn new(registry: Arc<Registry>) -> Self {
        Self { registry }
    }

    /// The registry served.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }
}

/// What the kit keeps per session.
#[derive(Default)]
pub struct SessionState {
    /// The minimum level of `notifications/message`, once the client set one.
    log_level: Mutex<Option<LogLevel>>,
    /// Resource URIs the client subscribed to.
    subscriptions: Mutex<HashSet<String>>,
    /// Async tool calls running, by request id (a reused id is refused).
    running: Mutex<HashSet<Id>>,
}

impl SessionState {
    /// Whether a log message at `level` passes the client's minimum level.
    /// With no `logging/setLevel` yet, everything passes.
    pub fn log_enabled(&self, level: LogLevel) -> bool {
        self.log_level.lock().is_none_or(|min| level >= min)
    }

    /// Whether the client is subscribed to `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.subscriptions.lock().contains(uri)
    }
}

type KitSession = Session<SessionState>;

impl Handler for RegistryHandler {
    type State = SessionState;

    async fn initialize(self: &Arc<Self>, _: &InitContext) -> Result<(ServerOffer, SessionState), ErrorObject> {
        Ok((self.registry.offer(), SessionState::default()))
    }

    /// A 2026-07-28 client gets what `initialize` would offer, with the
    /// kit's cache hints.
    fn serves_modern(&self) -> bool {
        true
    }

    async fn discover(self: &Arc<Self>, _: &ModernContext) -> Result<Discovery, ErrorObject> {
        Ok(Discovery { offer: self.registry.offer(), hints: hints() })
    }

    /// A sessionless request's state: its `logLevel` in place of
    /// `logging/setLevel` (the engine drops every log message of a request
    /// without one), no subscriptions.
    async fn sessionless(self: &Arc<Self>, ctx: &ModernContext) -> Result<SessionState, ErrorObject> {
        let state = SessionState::default();
        let level = ctx.log_level.as_deref().and_then(LogLevel::parse);
        *state.log_level.lock() = level;
        Ok(state)
    }

    /// `subscriptions/listen`: what a modern request announces unrelated to
    /// itself ([`RequestContext::notify_unrelated`](super::RequestContext))
    /// reaches every stream that asked for it.
    fn serves_listen(&self) -> bool {
        true
    }

    async fn listen(self: &Arc<Self>, session: &Arc<KitSession>, listen: Listen) -> Result<(), ErrorObject> {
        let delay = self.registry.listen_delay();
        if !delay.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = listen.ended() => return Ok(()),
            }
        }
        self.registry.listening.hold(session, listen, &self.registry.capabilities()).await;
        Ok(())
    }

    fn cache_hints(self: &Arc<Self>, _: &Arc<KitSession>, _: &str) -> CacheHints {
        hints()
    }

    async fn request(self: &Arc<Self>, session: &Arc<KitSession>, request: Request, ctx: RequestCtx) -> Outcome {
        let Request { id: _, method: m, params } = &request;
        if m == method::TOOLS_CALL {
            return self.call_tool(session, request, ctx).await;
        }
        let params = params.as_ref();
        let registry = &self.registry;
        let answer = match m.as_str() {
            method::TOOLS_LIST => list("tools", registry.tool_definitions(), registry.page_size(), params),
            method::RESOURCES_LIST => list("resources", registry.resource_definitions(), registry.page_size(), params),
            method::RESOURCES_TEMPLATES_LIST => {
                list("resourceTemplates", registry.template_definitions(), registry.page_size(), params)
            }
            method::RESOURCES_READ => read_resource(registry, params),
            method::RESOURCES_SUBSCRIBE => subscribe(&session.state, params, true),
            method::RESOURCES_UNSUBSCRIBE => subscribe(&session.state, params, false),
            method::PROMPTS_LIST => list("prompts", registry.prompt_definitions(), registry.page_size(), params),
            method::PROMPTS_GET => get_prompt(registry, params),
            method::COMPLETION_COMPLETE => complete(registry, params),
            method::LOGGING_SET_LEVEL => set_level(&session.state, params),
            other => Err(ErrorObject::method_not_found(other)),
        };
        outcome(answer)
    }

    async fn notification(self: &Arc<Self>, _: &Arc<KitSession>, notification: Notification) {
        tracing::trace!(method = notification.method, "notification ignored");
    }

    async fn closed(self: &Arc<Self>, _: Arc<KitSession>) {}
}

impl RegistryHandler {
    async fn call_tool(&self, session: &Arc<KitSession>, request: Request, ctx: RequestCtx) -> Outcome {
        // Tool calls answer as a (resumable) stream on Streamable HTTP unless
        // they are quick, as toolgate's own do.
        ctx.downlink.prefer_stream();
        let id = request.id;
        let Call { tool, args, progress_token, envelope } = match Call::read(&self.registry, request.params) {
            Ok(call) => call,
            Err(e) => return Outcome::error(e),
        };
        // A 2026-07-28 request over HTTP: the headers mirroring arguments
        // must match them (`-32020`, which the engine answers with 400).
        if let Some(sent) = session.modern().and_then(|m| m.param_headers.as_deref())
            && !tool.param_headers.is_empty()
            && let Err(e) = params::check_client_params(&tool.param_headers, Some(&args), sent, ParamCheck::Required)
        {
            return Outcome::error(e);
        }
        let f = match &tool.handler {
            ToolHandler::Sync(f) => {
                let answer = std::panic::catch_unwind(AssertUnwindSafe(|| f(args)));
                return outcome(into_answer(answer.unwrap_or_else(|_| Err(panicked()))));
            }
            ToolHandler::Async(f) => f,
        };
        if !session.state.running.lock().insert(id.clone()) {
            let e = ErrorObject::new(codes::INVALID_REQUEST, format!("Request id {id} is already in use"));
            return Outcome::error(e);
        }
        let _running = Running { state: &session.state, id: id.clone() };
        let context = RequestContext {
            session: session.clone(),
            registry: self.registry.clone(),
            request_id: id,
            progress_token,
            envelope: Arc::new(envelope),
            downlink: ctx.downlink,
            cancel: ctx.cancel.clone(),
        };
        let call = AssertUnwindSafe(f(args, context)).catch_unwind();
        tokio::select! {
            answer = call => outcome(into_answer(answer.unwrap_or_else(|_| Err(panicked())))),
            // The engine answers nothing for a cancelled request; dropping
            // the call stops it (and withdraws its requests to the client).
            () = ctx.cancel.cancelled() => Outcome::error(ErrorObject::new(codes::INTERNAL_ERROR, "cancelled")),
        }
    }
}

/// Marks an async tool call as running while it lives.
struct Running<'a> {
    state: &'a SessionState,
    id: Id,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.state.running.lock().remove(&self.id);
    }
}

/// What a `tools/call` asks for.
struct Call {
    tool: Arc<Tool>,
    /// Taken from the params, not copied (a benchmark's `echo` moves its
    /// text into the answer).
    args: Map<String, Value>,
    progress_token: Option<Value>,
    /// The rest of the params: `_meta` and the multi-round-trip fields.
    envelope: Envelope,
}

impl Call {
    fn read(registry: &Registry, params: Option<Value>) -> Result<Call, ErrorObject> {
        let Some(Value::Object(mut params)) = params else {
            return Err(ErrorObject::invalid_params("tools/call needs params with a \"name\""));
        };
        let Some(Value::String(name)) = params.get("name") else {
            return Err(ErrorObject::invalid_params("tools/call needs a string \"name\""));
        };
        let tool = registry.tool(name).ok_or_else(|| ErrorObject::invalid_params(format!("Unknown tool: {name}")))?;
        let args = match params.remove("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m,
            Some(_) => return Err(ErrorObject::invalid_params("\"arguments\" must be an object")),
        };
        let progress_token = params.get("_meta").and_then(|m| m.get("progressToken")).cloned();
        Ok(Call { tool, args, progress_token, envelope: Envelope::new(params) })
    }
}

fn outcome(answer: Result<Value, ErrorObject>) -> Outcome {
    match answer {
        Ok(v) => Outcome::Result(v),
        Err(e) => Outcome::error(e),
    }
}

fn into_answer(outcome: ToolResult) -> Result<Value, ErrorObject> {
    match outcome {
        Ok(v) => Ok(v),
        Err(ToolFailure::Tool(message)) => Ok(result::error(message)),
        Err(ToolFailure::Protocol(e)) => Err(e),
    }
}

fn panicked() -> ToolFailure {
    ToolFailure::Protocol(ErrorObject::new(codes::INTERNAL_ERROR, "The tool handler failed unexpectedly"))
}

/// One page of a list result, from the `cursor` the client sent.
fn list(key: &str, items: Vec<Value>, page_size: Option<usize>, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let start = match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => 0,
        Some(Value::String(c)) => decode_cursor(c).ok_or_else(|| invalid_cursor(c))?,
        Some(other) => return Err(ErrorObject::invalid_params(format!("Invalid cursor: {other}"))),
    };
    // A cursor past the end (the list shrank since) gives an empty last page.
    let start = start.min(items.len());
    let end = page_size.map_or(items.len(), |n| start.saturating_add(n).min(items.len()));
    let total = items.len();
    let page: Vec<Value> = items.into_iter().skip(start).take(end - start).collect();
    let mut result = Map::new();
    result.insert(key.to_owned(), Value::Array(page));
    if end < total {
        result.insert("nextCursor".into(), Value::String(encode_cursor(end)));
    }
    Ok(Value::Object(result))
}

fn read_resource(registry: &Registry, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let uri = required_str(params, "uri")?;
    match registry.read_resource(uri) {
        Some(contents) => Ok(json!({"contents": contents?})),
        // -32602 with the URI in `data`, as SEP-2164 settles it.
        None => Err(ErrorObject::invalid_params(format!("Resource not found: {uri}")).with_data(json!({"uri": uri}))),
    }
}

fn subscribe(state: &SessionState, params: Option<&Value>, on: bool) -> Result<Value, ErrorObject> {
    let uri = required_str(params, "uri")?;
    let mut subs = state.subscriptions.lock();
    if on {
        subs.insert(uri.to_owned());
    } else {
        subs.remove(uri);
    }
    Ok(json!({}))
}

fn get_prompt(registry: &Registry, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let name = required_str(params, "name")?;
    let empty = Map::new();
    let args = match params.and_then(|p| p.get("arguments")) {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(m)) => m,
        Some(_) => return Err(ErrorObject::invalid_params("\"arguments\" must be an object")),
    };
    registry
        .get_prompt(name, args, &Envelope::of(params))
        .unwrap_or_else(|| Err(ErrorObject::invalid_params(format!("Unknown prompt: {name}"))))
}

fn complete(registry: &Registry, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let params = params.ok_or_else(|| ErrorObject::invalid_params("completion/complete needs params"))?;
    match registry.complete(params) {
        Some(completion) => Ok(json!({"completion": completion?})),
        None => Err(ErrorObject::method_not_found(method::COMPLETION_COMPLETE)),
    }
}

fn set_level(state: &SessionState, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let level = required_str(params, "level")?;
    let level = LogLevel::parse(level).ok_or_else(|| {
        ErrorObject::invalid_params(format!(
            "Invalid log level '{level}'; expected one of debug, info, notice, warning, error, critical, alert, emergency"
        ))
    })?;
    *state.log_level.lock() = Some(level);
    Ok(json!({}))
}

fn required_str<'a>(params: Option<&'a Value>, key: &str) -> Result<&'a str, ErrorObject> {
    params
        .and_then(|p| p.get(key))
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorObject::invalid_params(format!("Missing required string parameter \"{key}\"")))
}

/// List cursors are the offset of the next page: `offset:<n>`.
const CURSOR_PREFIX: &str = "offset:";

fn encode_cursor(offset: usize) -> String {
    format!("{CURSOR_PREFIX}{offset}")
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    cursor.strip_prefix(CURSOR_PREFIX)?.parse().ok()
}

fn invalid_cursor(cursor: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("Invalid cursor: {cursor:?}"))
}

/// The kit's cache hints for 2026-07-28 lists, reads and discovery.
fn hints() -> CacheHints {
    CacheHints { ttl_ms: envelope::CACHE_TTL_MS, scope: CacheScope::Public }
}
