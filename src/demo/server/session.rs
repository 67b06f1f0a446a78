//! The protocol engine for one client, independent of the transport.
//!
//! A transport feeds decoded messages to [`Session::handle`] and writes out
//! whatever arrives on the [`Outgoing`] channel. Requests other than
//! `tools/call` are answered inline, in arrival order (so a `logging/setLevel`
//! takes effect for the calls after it). Tool calls with an async handler run
//! on their own task, so a slow tool never blocks the session, and can be
//! cancelled with `notifications/cancelled`.

use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::FutureExt as _;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;
use tokio_util::task::TaskTracker;

use super::context::RequestContext;
use super::level::LogLevel;
use super::registry::{Handler, Registry, ToolFailure, ToolResult};
use super::result;
use crate::jsonrpc::{DecodeError, ErrorObject, Id, Message, Notification, Outcome, Request, Response, codes};
use crate::protocol::{Version, method};

/// A message for the client, with the id of the client request it belongs to
/// (its response, or a notification or request sent while serving it).
/// Streamable HTTP uses `related` to pick the stream; stdio ignores it.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    pub message: Message,
    pub related: Option<Id>,
}

/// What the client told us in `initialize`.
pub(super) struct ClientState {
    pub capabilities: Value,
    pub version: Version,
}

/// State shared between the session and its running handlers.
pub(super) struct Shared {
    out: mpsc::UnboundedSender<Outgoing>,
    log_level: Mutex<Option<LogLevel>>,
    /// Tool calls running on a task, by client request id.
    in_flight: Mutex<HashMap<Id, AbortHandle>>,
    /// Our requests to the client awaiting an answer, by the id we allocated.
    pending: Mutex<HashMap<u64, oneshot::Sender<Outcome>>>,
    next_id: AtomicU64,
    pub client: Mutex<ClientState>,
    pub subscriptions: Mutex<HashSet<String>>,
}

impl Shared {
    /// Queues a message for the client. A closed channel means the transport
    /// is gone; there is no one left to tell, so the message is dropped.
    pub fn send(&self, message: Message, related: Option<&Id>) {
        let _ = self.out.send(Outgoing { message, related: related.cloned() });
    }

    /// Whether a log message at `level` passes the client's minimum level.
    /// With no `logging/setLevel` yet, everything passes.
    pub fn log_enabled(&self, level: LogLevel) -> bool {
        self.log_level.lock().is_none_or(|min| level >= min)
    }

    /// Allocates an id for a request to the client and remembers its waiter.
    pub fn register_pending(&self, tx: oneshot::Sender<Outcome>) -> u64 {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.pending.lock().insert(n, tx);
        n
    }

    /// Forgets a pending request, returning its waiter if it was still there.
    pub fn take_pending(&self, n: u64) -> Option<oneshot::Sender<Outcome>> {
        self.pending.lock().remove(&n)
    }
}

/// One client's session. Cheap to clone; clones share the session.
#[derive(Clone)]
pub struct Session {
    registry: Arc<Registry>,
    shared: Arc<Shared>,
    tasks: TaskTracker,
}

impl Session {
    /// A session over `registry`, and the channel its outgoing messages come
    /// out of. The channel closes once the session and every handler it
    /// started are gone.
    pub fn new(registry: Arc<Registry>) -> (Session, mpsc::UnboundedReceiver<Outgoing>) {
        let (out, rx) = mpsc::unbounded_channel();
        let shared = Shared {
            out,
            log_level: Mutex::new(None),
            in_flight: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            client: Mutex::new(ClientState { capabilities: json!({}), version: Version::LATEST }),
            subscriptions: Mutex::new(HashSet::new()),
        };
        (Session { registry, shared: Arc::new(shared), tasks: TaskTracker::new() }, rx)
    }

    /// The registry this session serves.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// How many tool calls are running on their own task right now.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.lock().len()
    }

    /// Handles one message from the client.
    pub fn handle(&self, message: Message) {
        match message {
            Message::Request(r) => self.handle_request(r),
            Message::Notification(n) => self.handle_notification(n),
            Message::Response(r) => self.handle_response(r),
        }
    }

    /// Answers bytes that did not decode as a JSON-RPC message.
    pub fn handle_decode_error(&self, error: &DecodeError) {
        tracing::debug!(%error, "undecodable message");
        let response = error.to_response();
        let related = response.id.clone();
        self.shared.send(Message::Response(response), related.as_ref());
    }

    /// Sends an error that answers no particular request (`"id": null`).
    pub fn send_error(&self, error: ErrorObject) {
        self.shared.send(Message::Response(Response::error(None, error)), None);
    }

    /// Ends the session: fails the requests still waiting for the client,
    /// gives running handlers `grace` to finish (their responses still go
    /// out), then aborts the rest.
    pub async fn shutdown(&self, grace: Duration) {
        self.shared.pending.lock().clear();
        self.tasks.close();
        if tokio::time::timeout(grace, self.tasks.wait()).await.is_err() {
            for (_, handle) in self.shared.in_flight.lock().drain() {
                handle.abort();
            }
            let _ = tokio::time::timeout(Duration::from_millis(200), self.tasks.wait()).await;
        }
    }

    fn reply(&self, id: Id, outcome: Result<Value, ErrorObject>) {
        let response = match outcome {
            Ok(v) => Response::result(id, v),
            Err(e) => Response::error(Some(id), e),
        };
        let related = response.id.clone();
        self.shared.send(Message::Response(response), related.as_ref());
    }

    fn handle_request(&self, req: Request) {
        let Request { id, method: m, params } = req;
        let outcome = match m.as_str() {
            method::INITIALIZE => Ok(self.initialize(params.as_ref())),
            method::PING => Ok(json!({})),
            method::TOOLS_CALL => return self.call_tool(id, params),
            method::TOOLS_LIST => self.list("tools", self.registry.tool_definitions(), params.as_ref()),
            method::RESOURCES_LIST => self.list("resources", self.registry.resource_definitions(), params.as_ref()),
            method::RESOURCES_TEMPLATES_LIST => {
                self.list("resourceTemplates", self.registry.template_definitions(), params.as_ref())
            }
            method::RESOURCES_READ => self.read_resource(params.as_ref()),
            method::RESOURCES_SUBSCRIBE => self.subscribe(params.as_ref(), true),
            method::RESOURCES_UNSUBSCRIBE => self.subscribe(params.as_ref(), false),
            method::PROMPTS_LIST => self.list("prompts", self.registry.prompt_definitions(), params.as_ref()),
            method::PROMPTS_GET => self.get_prompt(params.as_ref()),
            method::COMPLETION_COMPLETE => self.complete(params.as_ref()),
            method::LOGGING_SET_LEVEL => self.set_level(params.as_ref()),
            other => Err(ErrorObject::method_not_found(other)),
        };
        self.reply(id, outcome);
    }

    fn handle_notification(&self, n: Notification) {
        match n.method.as_str() {
            method::CANCELLED => {
                let Some(id) = n.params.as_ref().and_then(|p| p.get("requestId")).and_then(Id::from_value) else {
                    return;
                };
                // Unknown or finished requests are ignored, as the spec allows.
                if let Some(handle) = self.shared.in_flight.lock().remove(&id) {
                    tracing::debug!(%id, "tool call cancelled by the client");
                    handle.abort();
                }
            }
            other => tracing::trace!(method = other, "notification ignored"),
        }
    }

    fn handle_response(&self, r: Response) {
        let waiter = r.id.as_ref().and_then(Id::as_u64).and_then(|n| self.shared.take_pending(n));
        match waiter {
            Some(tx) => {
                let _ = tx.send(r.outcome);
            }
            None => tracing::warn!(id = ?r.id, "response to no pending request"),
        }
    }

    fn initialize(&self, params: Option<&Value>) -> Value {
        let requested = params.and_then(|p| p.get("protocolVersion")).and_then(Value::as_str);
        let version = Version::negotiate(requested);
        let capabilities = params.and_then(|p| p.get("capabilities")).filter(|c| c.is_object()).cloned();
        *self.shared.client.lock() = ClientState { capabilities: capabilities.unwrap_or_else(|| json!({})), version };

        let info = self.registry.info();
        let mut server_info = json!({"name": info.name, "version": info.version});
        if let Some(title) = &info.title {
            server_info["title"] = json!(title);
        }
        let mut result = json!({
            "protocolVersion": version.as_str(),
            "capabilities": self.registry.capabilities(),
            "serverInfo": server_info,
        });
        if let Some(instructions) = &info.instructions {
            result["instructions"] = json!(instructions);
        }
        result
    }

    fn list(&self, key: &str, items: Vec<Value>, params: Option<&Value>) -> Result<Value, ErrorObject> {
        let start = match params.and_then(|p| p.get("cursor")) {
            None | Some(Value::Null) => 0,
            Some(Value::String(c)) => decode_cursor(c).ok_or_else(|| invalid_cursor(c))?,
            Some(other) => return Err(ErrorObject::invalid_params(format!("Invalid cursor: {other}"))),
        };
        // A cursor past the end (the list shrank since) gives an empty last page.
        let start = start.min(items.len());
        let end = self.registry.page_size().map_or(items.len(), |n| start.saturating_add(n).min(items.len()));
        let total = items.len();
        let page: Vec<Value> = items.into_iter().skip(start).take(end - start).collect();
        let mut result = Map::new();
        result.insert(key.to_owned(), Value::Array(page));
        if end < total {
            result.insert("nextCursor".into(), Value::String(encode_cursor(end)));
        }
        Ok(Value::Object(result))
    }

    fn read_resource(&self, params: Option<&Value>) -> Result<Value, ErrorObject> {
        let uri = required_str(params, "uri")?;
        match self.registry.read_resource(uri) {
            Some(contents) => Ok(json!({"contents": contents?})),
            // -32602 with the URI in `data`, as SEP-2164 settles it.
            None => {
                Err(ErrorObject::invalid_params(format!("Resource not found: {uri}")).with_data(json!({"uri": uri})))
            }
        }
    }

    fn subscribe(&self, params: Option<&Value>, on: bool) -> Result<Value, ErrorObject> {
        let uri = required_str(params, "uri")?;
        let mut subs = self.shared.subscriptions.lock();
        if on {
            subs.insert(uri.to_owned());
        } else {
            subs.remove(uri);
        }
        Ok(json!({}))
    }

    fn get_prompt(&self, params: Option<&Value>) -> Result<Value, ErrorObject> {
        let name = required_str(params, "name")?;
        let empty = Map::new();
        let args = match params.and_then(|p| p.get("arguments")) {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(m)) => m,
            Some(_) => return Err(ErrorObject::invalid_params("\"arguments\" must be an object")),
        };
        self.registry
            .get_prompt(name, args)
            .unwrap_or_else(|| Err(ErrorObject::invalid_params(format!("Unknown prompt: {name}"))))
    }

    fn complete(&self, params: Option<&Value>) -> Result<Value, ErrorObject> {
        let params = params.ok_or_else(|| ErrorObject::invalid_params("completion/complete needs params"))?;
        match self.registry.complete(params) {
            Some(completion) => Ok(json!({"completion": completion?})),
            None => Err(ErrorObject::method_not_found(method::COMPLETION_COMPLETE)),
        }
    }

    fn set_level(&self, params: Option<&Value>) -> Result<Value, ErrorObject> {
        let level = required_str(params, "level")?;
        let level = LogLevel::parse(level).ok_or_else(|| {
            ErrorObject::invalid_params(format!(
                "Invalid log level '{level}'; expected one of debug, info, notice, warning, error, critical, alert, emergency"
            ))
        })?;
        *self.shared.log_level.lock() = Some(level);
        Ok(json!({}))
    }

    fn call_tool(&self, id: Id, params: Option<Value>) {
        let mut params = match params {
            Some(Value::Object(p)) => p,
            _ => return self.reply(id, Err(ErrorObject::invalid_params("tools/call needs params with a \"name\""))),
        };
        let Some(Value::String(name)) = params.get("name") else {
            return self.reply(id, Err(ErrorObject::invalid_params("tools/call needs a string \"name\"")));
        };
        let Some(tool) = self.registry.tool(name) else {
            let e = ErrorObject::invalid_params(format!("Unknown tool: {name}"));
            return self.reply(id, Err(e));
        };
        let args = match params.remove("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m,
            Some(_) => return self.reply(id, Err(ErrorObject::invalid_params("\"arguments\" must be an object"))),
        };
        match &tool.handler {
            Handler::Sync(f) => {
                let outcome =
                    std::panic::catch_unwind(AssertUnwindSafe(|| f(args))).unwrap_or_else(|_| Err(panicked()));
                self.reply(id, into_response(outcome));
            }
            Handler::Async(f) => {
                let progress_token = params.get("_meta").and_then(|m| m.get("progressToken")).cloned();
                let ctx = RequestContext {
                    shared: self.shared.clone(),
                    registry: self.registry.clone(),
                    request_id: id.clone(),
                    progress_token,
                };
                let fut = AssertUnwindSafe(f(args, ctx)).catch_unwind();
                // Holding the lock while spawning makes the handle visible to
                // `notifications/cancelled` before the task can finish.
                let mut in_flight = self.shared.in_flight.lock();
                if in_flight.contains_key(&id) {
                    drop(in_flight);
                    let e = ErrorObject::new(codes::INVALID_REQUEST, format!("Request id {id} is already in use"));
                    return self.reply(id, Err(e));
                }
                let shared = self.shared.clone();
                let task_id = id.clone();
                let handle = self.tasks.spawn(async move {
                    let outcome = fut.await.unwrap_or_else(|_| Err(panicked()));
                    // Only answer if no cancellation took the entry first.
                    if shared.in_flight.lock().remove(&task_id).is_some() {
                        let response = match into_response(outcome) {
                            Ok(v) => Response::result(task_id.clone(), v),
                            Err(e) => Response::error(Some(task_id.clone()), e),
                        };
                        shared.send(Message::Response(response), Some(&task_id));
                    }
                });
                in_flight.insert(id, handle.abort_handle());
            }
        }
    }
}

fn into_response(outcome: ToolResult) -> Result<Value, ErrorObject> {
    match outcome {
        Ok(v) => Ok(v),
        Err(ToolFailure::Tool(message)) => Ok(result::error(message)),
        Err(ToolFailure::Protocol(e)) => Err(e),
    }
}

fn panicked() -> ToolFailure {
    ToolFailure::Protocol(ErrorObject::new(codes::INTERNAL_ERROR, "The tool handler failed unexpectedly"))
}

fn required_str<'a>(params: Option<&'a Value>, key: &str) -> Result<&'a str, ErrorObject> {
    params
        .and_then(|p| p.get(key))
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorObject::invalid_params(format!("Missing required string parameter \"{key}\"")))
}

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
