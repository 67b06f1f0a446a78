//! What a server offers: tools, resources, resource templates, prompts,
//! completions, and its identity. Independent of sessions and transports, so
//! one registry backs a stdio server or every session of an HTTP server.
//!
//! Definitions are kept as the exact JSON the server advertises, so fields the
//! kit does not know (`x-vendor`, `_meta`, `icons`, ...) are served as
//! written.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use indexmap::IndexMap;
use parking_lot::RwLock;
use serde_json::{Map, Value, json};

use toolgate_mcp::jsonrpc::ErrorObject;
use toolgate_mcp::protocol::modern::params::{self, ParamHeader};
use toolgate_mcp::server::ServerOffer;
use toolgate_mcp::uri_template::UriTemplate;

use super::context::RequestContext;
use super::envelope::Envelope;

/// A tool's outcome: a `CallToolResult` object, or a failure.
pub type ToolResult = Result<Value, ToolFailure>;

/// Why a tool call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolFailure {
    /// Reported to the model as a result with `isError: true` and this text
    /// (bad arguments, business-rule violations: things the model can fix).
    Tool(String),
    /// Reported as a JSON-RPC error (protocol-level problems).
    Protocol(ErrorObject),
}

impl ToolFailure {
    /// A tool-level failure with a message for the model.
    pub fn msg(message: impl Into<String>) -> Self {
        ToolFailure::Tool(message.into())
    }
}

impl From<ErrorObject> for ToolFailure {
    fn from(e: ErrorObject) -> Self {
        ToolFailure::Protocol(e)
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
type SyncHandler = dyn Fn(Map<String, Value>) -> ToolResult + Send + Sync;
type AsyncHandler = dyn Fn(Map<String, Value>, RequestContext) -> BoxFuture<ToolResult> + Send + Sync;

/// How a tool runs.
#[derive(Clone)]
pub(super) enum ToolHandler {
    /// Runs inline in the request, no context and no cancellation: for fast,
    /// pure tools.
    Sync(Arc<SyncHandler>),
    /// Runs with a [`RequestContext`]; dropped when the call is cancelled.
    Async(Arc<AsyncHandler>),
}

/// A tool: its advertised definition and its handler.
#[derive(Clone)]
pub struct Tool {
    name: String,
    definition: Arc<Value>,
    /// The arguments its `inputSchema` mirrors in `Mcp-Param-*` headers
    /// (`x-mcp-header`; none when the annotations are invalid), which a
    /// 2026-07-28 client's headers are checked against.
    pub(super) param_headers: Arc<[ParamHeader]>,
    pub(super) handler: ToolHandler,
}

impl Tool {
    /// A tool whose handler runs inline (no context, no cancellation). Use it
    /// for quick, pure tools.
    pub fn sync<F>(definition: Value, handler: F) -> Tool
    where
        F: Fn(Map<String, Value>) -> ToolResult + Send + Sync + 'static,
    {
        Tool {
            name: name_of(&definition),
            param_headers: param_headers_of(&definition),
            definition: Arc::new(definition),
            handler: ToolHandler::Sync(Arc::new(handler)),
        }
    }

    /// A tool whose handler gets a [`RequestContext`] and may await; it is
    /// dropped (stopped) when the client cancels the call.
    pub fn new<F, Fut>(definition: Value, handler: F) -> Tool
    where
        F: Fn(Map<String, Value>, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult> + Send + 'static,
    {
        let handler: Arc<AsyncHandler> = Arc::new(move |args, ctx| Box::pin(handler(args, ctx)));
        Tool {
            name: name_of(&definition),
            param_headers: param_headers_of(&definition),
            definition: Arc::new(definition),
            handler: ToolHandler::Async(handler),
        }
    }

    /// The tool name (the definition's `name`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The definition exactly as advertised in `tools/list`.
    pub fn definition(&self) -> &Value {
        &self.definition
    }

    /// The same handler under another definition (its name included): a
    /// server whose definitions changed between releases.
    pub fn redefined(&self, definition: Value) -> Tool {
        Tool {
            name: name_of(&definition),
            param_headers: param_headers_of(&definition),
            definition: Arc::new(definition),
            handler: self.handler.clone(),
        }
    }
}

/// The `Mcp-Param-*` headers a tool definition declares (none if invalid).
fn param_headers_of(definition: &Value) -> Arc<[ParamHeader]> {
    definition.as_object().and_then(|tool| params::annotations(tool).ok()).unwrap_or_default().into()
}

/// Reads a resource: gets the URI and the template variables (empty for a
/// concrete resource), returns the `contents` array.
pub type ReadFn = Arc<dyn Fn(&str, &HashMap<String, String>) -> Result<Vec<Value>, ErrorObject> + Send + Sync>;

/// A concrete resource listed by `resources/list`.
#[derive(Clone)]
pub struct Resource {
    uri: String,
    definition: Value,
    read: ReadFn,
}

impl Resource {
    /// A resource; `definition` is the `resources/list` entry (with `uri`).
    pub fn new<F>(definition: Value, read: F) -> Resource
    where
        F: Fn(&str, &HashMap<String, String>) -> Result<Vec<Value>, ErrorObject> + Send + Sync + 'static,
    {
        let uri = definition.get("uri").and_then(Value::as_str).unwrap_or_default().to_owned();
        Resource { uri, definition, read: Arc::new(read) }
    }

    /// A resource whose contents never change.
    pub fn fixed(definition: Value, contents: Vec<Value>) -> Resource {
        Resource::new(definition, move |_, _| Ok(contents.clone()))
    }

    /// The resource URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }
}

/// A resource template listed by `resources/templates/list`.
#[derive(Clone)]
pub struct ResourceTemplate {
    template: UriTemplate,
    definition: Value,
    read: ReadFn,
}

impl ResourceTemplate {
    /// A template; `definition` is the `resources/templates/list` entry. Returns
    /// `None` if its `uriTemplate` is not a template whose variables can all
    /// be captured (`{name}` and `{+name}` expressions only).
    pub fn new<F>(definition: Value, read: F) -> Option<ResourceTemplate>
    where
        F: Fn(&str, &HashMap<String, String>) -> Result<Vec<Value>, ErrorObject> + Send + Sync + 'static,
    {
        let template =
            UriTemplate::parse(definition.get("uriTemplate")?.as_str()?).filter(UriTemplate::captures_all)?;
        Some(ResourceTemplate { template, definition, read: Arc::new(read) })
    }

    /// The parsed template.
    pub fn template(&self) -> &UriTemplate {
        &self.template
    }
}

/// Renders a prompt from its arguments into a `GetPromptResult` object.
pub type PromptFn = Arc<dyn Fn(&Map<String, Value>) -> Result<Value, ErrorObject> + Send + Sync>;

/// Renders a prompt from its arguments and the request's envelope (its
/// 2026 `_meta` and multi-round-trip fields).
type PromptWithEnvelopeFn = dyn Fn(&Map<String, Value>, &Envelope) -> Result<Value, ErrorObject> + Send + Sync;

/// A prompt listed by `prompts/list`.
#[derive(Clone)]
pub struct Prompt {
    name: String,
    definition: Value,
    get: Arc<PromptWithEnvelopeFn>,
}

impl Prompt {
    /// A prompt; `definition` is the `prompts/list` entry. Arguments marked
    /// `required` are checked before `get` runs.
    pub fn new<F>(definition: Value, get: F) -> Prompt
    where
        F: Fn(&Map<String, Value>) -> Result<Value, ErrorObject> + Send + Sync + 'static,
    {
        Prompt { name: name_of(&definition), definition, get: Arc::new(move |args, _| get(args)) }
    }

    /// A prompt that also reads the request's [`Envelope`] (a prompt that
    /// asks the client for input with a 2026 `InputRequiredResult`).
    pub fn with_envelope<F>(definition: Value, get: F) -> Prompt
    where
        F: Fn(&Map<String, Value>, &Envelope) -> Result<Value, ErrorObject> + Send + Sync + 'static,
    {
        Prompt { name: name_of(&definition), definition, get: Arc::new(get) }
    }

    /// The names of the required arguments.
    fn required(&self) -> impl Iterator<Item = &str> {
        self.definition
            .get("arguments")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|a| a.get("required").and_then(Value::as_bool) == Some(true))
            .filter_map(|a| a.get("name").and_then(Value::as_str))
    }
}

/// Answers `completion/complete`: gets the request params, returns the
/// `completion` object (`values`, `total`, `hasMore`).
pub type CompletionFn = Arc<dyn Fn(&Value) -> Result<Value, ErrorObject> + Send + Sync>;

/// The server's identity and the text it gives clients at initialization.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
    pub title: Option<String>,
    pub instructions: Option<String>,
    /// The `logger` field on `notifications/message`, if any.
    pub logger: Option<String>,
}

impl ServerInfo {
    /// An identity with just a name and version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self { name: name.into(), version: version.into(), title: None, instructions: None, logger: None }
    }
}

/// Everything a server offers. Tools can change at run time (the change is
/// announced by whoever makes it, through a [`RequestContext`]); the rest is
/// fixed once the registry is built.
pub struct Registry {
    info: ServerInfo,
    page_size: Option<usize>,
    /// How long a `subscriptions/listen` stream waits before it is
    /// acknowledged and starts hearing changes.
    listen_delay: std::time::Duration,
    tools: RwLock<IndexMap<String, Arc<Tool>>>,
    resources: IndexMap<String, Resource>,
    templates: Vec<ResourceTemplate>,
    prompts: IndexMap<String, Prompt>,
    completion: Option<CompletionFn>,
    /// The open `subscriptions/listen` streams.
    pub(super) listening: super::listen::Listening,
}

impl Registry {
    /// An empty registry.
    pub fn new(info: ServerInfo) -> Self {
        Self {
            info,
            page_size: None,
            listen_delay: std::time::Duration::ZERO,
            tools: RwLock::new(IndexMap::new()),
            resources: IndexMap::new(),
            templates: Vec::new(),
            prompts: IndexMap::new(),
            completion: None,
            listening: Default::default(),
        }
    }

    /// Splits every list result into pages of `n` items (`None` or 0: one page).
    pub fn with_page_size(mut self, n: Option<usize>) -> Self {
        self.page_size = n.filter(|&n| n > 0);
        self
    }

    /// Acknowledges each `subscriptions/listen` stream only `delay` after
    /// it opens (a test hook: a change made meanwhile is heard by nobody, as
    /// when a client lists before its stream is registered).
    pub fn with_listen_delay(mut self, delay: std::time::Duration) -> Self {
        self.listen_delay = delay;
        self
    }

    /// How long a listen stream waits before it is acknowledged.
    pub fn listen_delay(&self) -> std::time::Duration {
        self.listen_delay
    }

    /// Adds a tool (replacing one with the same name).
    pub fn with_tool(self, tool: Tool) -> Self {
        self.add_tool(tool);
        self
    }

    /// Adds a concrete resource.
    pub fn with_resource(mut self, resource: Resource) -> Self {
        self.resources.insert(resource.uri.clone(), resource);
        self
    }

    /// Adds a resource template.
    pub fn with_template(mut self, template: ResourceTemplate) -> Self {
        self.templates.push(template);
        self
    }

    /// Adds a prompt.
    pub fn with_prompt(mut self, prompt: Prompt) -> Self {
        self.prompts.insert(prompt.name.clone(), prompt);
        self
    }

    /// Answers `completion/complete` with `f` (and declares `completions`).
    pub fn with_completion<F>(mut self, f: F) -> Self
    where
        F: Fn(&Value) -> Result<Value, ErrorObject> + Send + Sync + 'static,
    {
        self.completion = Some(Arc::new(f));
        self
    }

    /// The server's identity.
    pub fn info(&self) -> &ServerInfo {
        &self.info
    }

    /// The page size for list results.
    pub fn page_size(&self) -> Option<usize> {
        self.page_size
    }

    /// Adds or replaces a tool at run time. Returns whether it was new.
    pub fn add_tool(&self, tool: Tool) -> bool {
        self.tools.write().insert(tool.name.clone(), Arc::new(tool)).is_none()
    }

    /// Removes a tool at run time. Returns whether it existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.tools.write().shift_remove(name).is_some()
    }

    /// Looks a tool up by name.
    pub fn tool(&self, name: &str) -> Option<Arc<Tool>> {
        self.tools.read().get(name).cloned()
    }

    /// The tool names, in listing order.
    pub fn tool_names(&self) -> Vec<String> {
        self.tools.read().keys().cloned().collect()
    }

    /// The definitions `tools/list` advertises, in order.
    pub fn tool_definitions(&self) -> Vec<Value> {
        self.tools.read().values().map(|t| t.definition().clone()).collect()
    }

    /// The `resources/list` entries.
    pub fn resource_definitions(&self) -> Vec<Value> {
        self.resources.values().map(|r| r.definition.clone()).collect()
    }

    /// The `resources/templates/list` entries.
    pub fn template_definitions(&self) -> Vec<Value> {
        self.templates.iter().map(|t| t.definition.clone()).collect()
    }

    /// The `prompts/list` entries.
    pub fn prompt_definitions(&self) -> Vec<Value> {
        self.prompts.values().map(|p| p.definition.clone()).collect()
    }

    /// Reads a resource by URI: a concrete resource first, then the first
    /// template that matches. `None` if nothing serves the URI.
    pub fn read_resource(&self, uri: &str) -> Option<Result<Vec<Value>, ErrorObject>> {
        if let Some(r) = self.resources.get(uri) {
            return Some((r.read)(uri, &HashMap::new()));
        }
        self.templates.iter().find_map(|t| t.template.matches(uri).map(|vars| (t.read)(uri, &vars)))
    }

    /// Renders a prompt. `None` if there is no such prompt.
    pub fn get_prompt(
        &self,
        name: &str,
        args: &Map<String, Value>,
        envelope: &Envelope,
    ) -> Option<Result<Value, ErrorObject>> {
        let prompt = self.prompts.get(name)?;
        if let Some(missing) = prompt.required().find(|a| args.get(*a).is_none_or(Value::is_null)) {
            return Some(Err(ErrorObject::invalid_params(format!(
                "Missing required argument '{missing}' for prompt '{name}'"
            ))));
        }
        Some((prompt.get)(args, envelope))
    }

    /// Answers a completion request. `None` if completions are not offered.
    pub fn complete(&self, params: &Value) -> Option<Result<Value, ErrorObject>> {
        self.completion.as_ref().map(|f| f(params))
    }

    /// What the `initialize` result offers: this registry's capabilities,
    /// identity and instructions (the engine adds the negotiated revision).
    pub fn offer(&self) -> ServerOffer {
        let mut server_info = json!({"name": self.info.name, "version": self.info.version});
        if let Some(title) = &self.info.title {
            server_info["title"] = json!(title);
        }
        ServerOffer { capabilities: self.capabilities(), server_info, instructions: self.info.instructions.clone() }
    }

    /// The `capabilities` object for the `initialize` result: what this
    /// registry actually serves.
    pub fn capabilities(&self) -> Value {
        let mut caps = Map::new();
        caps.insert("tools".into(), json!({"listChanged": true}));
        if !self.resources.is_empty() || !self.templates.is_empty() {
            caps.insert("resources".into(), json!({"subscribe": true, "listChanged": true}));
        }
        if !self.prompts.is_empty() {
            caps.insert("prompts".into(), json!({"listChanged": true}));
        }
        caps.insert("logging".into(), json!({}));
        if self.completion.is_some() {
            caps.insert("completions".into(), json!({}));
        }
        Value::Object(caps)
    }
}

fn name_of(definition: &Value) -> String {
    let name = definition.get("name").and_then(Value::as_str).unwrap_or_default();
    debug_assert!(!name.is_empty(), "definitions need a name: {definition}");
    name.to_owned()
}
