//! `subscriptions/listen` (2026-07-28): a modern request whose answer is a
//! stream of notifications that stays open until the client closes it (HTTP:
//! drops the response stream; stdio: `notifications/cancelled`) or the
//! server ends it.
//!
//! The engine reads what the client asked for ([`Subscriptions`]) and hands
//! the application a [`Listen`] through [`Handler::listen`]: the
//! application acknowledges the subset it honours (the stream's first
//! message, `notifications/subscriptions/acknowledged`), sends what it has
//! for the listener with [`ListenSink::send`] (every notification tagged
//! with `_meta["io.modelcontextprotocol/subscriptionId"]`, the listen
//! request's id with its JSON type), and returns once [`Listen::ended`]
//! fires. A stream the server ends (shutdown, or the application returning
//! on its own) gets `notifications/cancelled` naming the listen request and
//! then the result `{"resultType":"complete","_meta":{subscriptionId}}`; one
//! the client ended gets nothing more (a cancelled request is not answered).
//!
//! Keep-alives are the transport's: the SSE answer of a modern request
//! sends comment lines at the listener's keep-alive interval
//! ([`HttpOptions::keep_alive`](crate::server::http::HttpOptions), toolgate's
//! `[server] sse_keep_alive`, 15 s by default).

use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::Engine;
use crate::jsonrpc::{ErrorObject, Id, Notification, Outcome, Request};
use crate::protocol::method;
use crate::protocol::modern::{listen, meta, method as modern_method};
use crate::server::handler::{Handler, RequestCtx};
use crate::server::session::{Downlink, Session};

/// What a `subscriptions/listen` request asks for (`params.notifications`),
/// or what a server honours of it. Unknown keys are ignored: the revision
/// makes every type opt-in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subscriptions {
    /// `toolsListChanged`: `notifications/tools/list_changed`.
    pub tools_list_changed: bool,
    /// `promptsListChanged`: `notifications/prompts/list_changed`.
    pub prompts_list_changed: bool,
    /// `resourcesListChanged`: `notifications/resources/list_changed`.
    pub resources_list_changed: bool,
    /// `resourceSubscriptions`: the URIs whose `notifications/resources/updated`
    /// are wanted (in the order sent, without duplicates).
    pub resource_subscriptions: Vec<String>,
}

impl Subscriptions {
    /// Reads `params.notifications` of a listen request. A `notifications`
    /// that is not an object, or a `resourceSubscriptions` that is not an
    /// array of strings, is `-32602`.
    pub fn read(params: Option<&Value>) -> Result<Self, ErrorObject> {
        let Some(asked) = params.and_then(|p| p.get(listen::NOTIFICATIONS)) else { return Ok(Self::default()) };
        let Value::Object(asked) = asked else {
            return Err(ErrorObject::invalid_params(
                "Invalid params: subscriptions/listen `notifications` must be an object",
            ));
        };
        let flag = |key: &str| asked.get(key).and_then(Value::as_bool) == Some(true);
        let mut uris: Vec<String> = Vec::new();
        match asked.get(listen::RESOURCE_SUBSCRIPTIONS) {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                for item in items {
                    let Some(uri) = item.as_str() else {
                        return Err(ErrorObject::invalid_params(
                            "Invalid params: `resourceSubscriptions` must be an array of URI strings",
                        ));
                    };
                    if !uris.iter().any(|u| u == uri) {
                        uris.push(uri.to_owned());
                    }
                }
            }
            Some(_) => {
                return Err(ErrorObject::invalid_params(
                    "Invalid params: `resourceSubscriptions` must be an array of URI strings",
                ));
            }
        }
        Ok(Self {
            tools_list_changed: flag(listen::TOOLS_LIST_CHANGED),
            prompts_list_changed: flag(listen::PROMPTS_LIST_CHANGED),
            resources_list_changed: flag(listen::RESOURCES_LIST_CHANGED),
            resource_subscriptions: uris,
        })
    }

    /// The wire form (`notifications` of the request or of the
    /// acknowledgement): only what is on.
    pub fn to_value(&self) -> Value {
        let mut fields = Map::new();
        for (on, key) in [
            (self.tools_list_changed, listen::TOOLS_LIST_CHANGED),
            (self.prompts_list_changed, listen::PROMPTS_LIST_CHANGED),
            (self.resources_list_changed, listen::RESOURCES_LIST_CHANGED),
        ] {
            if on {
                fields.insert(key.into(), Value::Bool(true));
            }
        }
        if !self.resource_subscriptions.is_empty() {
            fields.insert(listen::RESOURCE_SUBSCRIPTIONS.into(), json!(self.resource_subscriptions));
        }
        Value::Object(fields)
    }

    /// Whether a notification with `method` (and, for resource updates,
    /// `params.uri`) is one of the types asked for.
    pub fn wants(&self, method_name: &str, params: Option<&Value>) -> bool {
        match method_name {
            method::TOOLS_LIST_CHANGED => self.tools_list_changed,
            method::PROMPTS_LIST_CHANGED => self.prompts_list_changed,
            method::RESOURCES_LIST_CHANGED => self.resources_list_changed,
            method::RESOURCES_UPDATED => {
                let uri = params.and_then(|p| p.get("uri")).and_then(Value::as_str);
                uri.is_some_and(|uri| self.resource_subscriptions.iter().any(|u| u == uri))
            }
            _ => false,
        }
    }
}

/// Where a listen stream's notifications go: cheap to clone, for the
/// application's registry of listeners.
#[derive(Debug, Clone)]
pub struct ListenSink {
    id: Id,
    downlink: Downlink,
}

impl ListenSink {
    /// The listen request's id (the stream's `subscriptionId`).
    pub fn id(&self) -> &Id {
        &self.id
    }

    /// Sends `notification` on the stream, tagged with its `subscriptionId`
    /// (added to `params._meta`; the rest of `params` is kept). Returns
    /// `false` once the stream is gone. A notification the stream's queue
    /// has no room for (a client that reads slowly) is dropped, as on any
    /// response stream.
    pub fn send(&self, notification: Notification) -> bool {
        let Notification { method, params } = notification;
        let mut params = match params {
            Some(Value::Object(p)) => p,
            _ => Map::new(),
        };
        let meta_field = params.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        if !meta_field.is_object() {
            *meta_field = Value::Object(Map::new());
        }
        if let Value::Object(m) = meta_field {
            m.insert(meta::SUBSCRIPTION_ID.into(), self.id.to_value());
        }
        self.downlink.send(Notification::new(method, Some(Value::Object(params))))
    }

    /// Whether the client has gone (its stream is closed).
    pub fn is_closed(&self) -> bool {
        self.downlink.is_closed()
    }
}

/// One open `subscriptions/listen` stream, as the application sees it.
pub struct Listen {
    sink: ListenSink,
    requested: Subscriptions,
    /// The request's cancellation (the client closed the stream or sent
    /// `notifications/cancelled`).
    cancel: CancellationToken,
    /// The engine's shutdown.
    stopping: CancellationToken,
}

impl Listen {
    /// What the client asked for.
    pub fn requested(&self) -> &Subscriptions {
        &self.requested
    }

    /// The listen request's id (the stream's `subscriptionId`).
    pub fn id(&self) -> &Id {
        &self.sink.id
    }

    /// Where notifications for this listener go.
    pub fn sink(&self) -> ListenSink {
        self.sink.clone()
    }

    /// Sends the stream's first message: the subset of what was asked for
    /// that the server honours. Call it once, before anything else.
    pub fn acknowledge(&self, honoured: &Subscriptions) -> bool {
        let params = json!({listen::NOTIFICATIONS: honoured.to_value()});
        self.sink.send(Notification::new(modern_method::SUBSCRIPTIONS_ACKNOWLEDGED, Some(params)))
    }

    /// Resolves once the stream should end: the client closed or cancelled
    /// it, or the server is shutting down.
    pub async fn ended(&self) {
        tokio::select! {
            _ = self.cancel.cancelled() => {}
            _ = self.stopping.cancelled() => {}
        }
    }
}

impl<H: Handler> Engine<H> {
    /// Runs a `subscriptions/listen` request of a transient (modern)
    /// session: the application's [`Handler::listen`] holds the stream; the
    /// engine answers once it returns (see the module doc).
    pub(super) async fn listen(&self, session: &Arc<Session<H::State>>, request: Request, ctx: RequestCtx) -> Outcome {
        let requested = match Subscriptions::read(request.params.as_ref()) {
            Ok(requested) => requested,
            Err(e) => return Outcome::error(e),
        };
        let sink = ListenSink { id: request.id.clone(), downlink: ctx.downlink.clone() };
        let listen = Listen { sink: sink.clone(), requested, cancel: ctx.cancel.clone(), stopping: self.stopping() };
        if let Err(e) = self.handler().listen(session, listen).await {
            return Outcome::error(e);
        }
        if !ctx.cancel.is_cancelled() {
            // The server ends the stream: say so, then answer.
            let params = json!({"requestId": request.id.to_value(), "reason": "the server ended the subscription"});
            sink.send(Notification::new(method::CANCELLED, Some(params)));
        }
        Outcome::Result(json!({"_meta": {meta::SUBSCRIPTION_ID: request.id.to_value()}}))
    }
}

/// The refusal of an application that serves no listen streams.
pub(crate) fn not_served() -> ErrorObject {
    ErrorObject::method_not_found(modern_method::SUBSCRIPTIONS_LISTEN)
}

#[cfg(test)]
mod tests;
