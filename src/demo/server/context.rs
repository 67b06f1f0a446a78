//! What a running tool handler can do: report progress, log, send
//! notifications, and send requests to the client and await the answers.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::level::LogLevel;
use super::registry::Registry;
use super::session::Shared;
use crate::jsonrpc::{Id, Message, Notification, Outcome, Request};
use crate::protocol::{Version, method};

/// Why a request to the client produced no result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RequestError {
    /// The client answered with a JSON-RPC error (the `error` object).
    #[error("the client answered with an error: {0}")]
    Rpc(Value),
    /// The session ended before the client answered.
    #[error("the connection closed before the client answered")]
    Closed,
}

impl RequestError {
    /// The client's error message, or a description of the failure.
    pub fn message(&self) -> String {
        match self {
            RequestError::Rpc(e) => e.get("message").and_then(Value::as_str).unwrap_or("unknown error").to_owned(),
            RequestError::Closed => self.to_string(),
        }
    }
}

/// The handle a tool handler gets for the request it serves. Cheap to clone.
#[derive(Clone)]
pub struct RequestContext {
    pub(super) shared: Arc<Shared>,
    pub(super) registry: Arc<Registry>,
    pub(super) request_id: Id,
    pub(super) progress_token: Option<Value>,
}

impl RequestContext {
    /// The id of the client request being served.
    pub fn request_id(&self) -> &Id {
        &self.request_id
    }

    /// The request's `_meta.progressToken`, if the client sent one.
    pub fn progress_token(&self) -> Option<&Value> {
        self.progress_token.as_ref()
    }

    /// The registry the session serves (to add or remove tools at run time).
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The capabilities the client declared in `initialize` (`{}` before it).
    pub fn client_capabilities(&self) -> Value {
        self.shared.client.lock().capabilities.clone()
    }

    /// The protocol revision negotiated with this client.
    pub fn protocol_version(&self) -> Version {
        self.shared.client.lock().version
    }

    /// Whether the client is subscribed to `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.shared.subscriptions.lock().contains(uri)
    }

    /// Sends a notification, tagged as related to this request.
    pub fn notify(&self, method: &str, params: Option<Value>) {
        self.shared.send(Message::Notification(Notification::new(method, params)), Some(&self.request_id));
    }

    /// Sends a notification related to no request (on HTTP, the standalone
    /// stream), as servers do for events that outlive the call.
    pub fn notify_unrelated(&self, method: &str, params: Option<Value>) {
        self.shared.send(Message::Notification(Notification::new(method, params)), None);
    }

    /// Sends `notifications/progress` if the client asked for progress (sent a
    /// token); does nothing otherwise. Whole numbers go out as integers.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.progress_token else { return };
        let mut params = json!({"progressToken": token, "progress": number(progress)});
        if let Some(total) = total {
            params["total"] = number(total);
        }
        if let Some(message) = message {
            params["message"] = Value::String(message.to_owned());
        }
        self.notify(method::PROGRESS, Some(params));
    }

    /// Sends `notifications/message` unless the client asked for a higher
    /// minimum level with `logging/setLevel`.
    pub fn log(&self, level: LogLevel, data: impl Into<Value>) {
        if !self.shared.log_enabled(level) {
            return;
        }
        let mut params = json!({"level": level.as_str()});
        if let Some(logger) = &self.registry.info().logger {
            params["logger"] = Value::String(logger.clone());
        }
        params["data"] = data.into();
        self.notify(method::MESSAGE, Some(params));
    }

    /// Sends a request to the client (e.g. `sampling/createMessage`,
    /// `elicitation/create`, `roots/list`) and waits for its answer.
    ///
    /// If the handler is dropped while waiting (the call was cancelled), the
    /// server tells the client with `notifications/cancelled`.
    pub async fn request(&self, method: &str, params: Option<Value>) -> Result<Value, RequestError> {
        let (tx, rx) = oneshot::channel();
        let n = self.shared.register_pending(tx);
        let guard = PendingGuard { shared: &self.shared, n, related: &self.request_id };
        let request = Request { id: Id::number(n), method: method.to_owned(), params };
        self.shared.send(Message::Request(request), Some(&self.request_id));
        let outcome = rx.await;
        drop(guard);
        match outcome {
            Ok(Outcome::Error(e)) => Err(RequestError::Rpc(e)),
            Ok(ok) => Ok(ok.result_value().unwrap_or(Value::Null)),
            Err(_) => Err(RequestError::Closed),
        }
    }
}

/// Forgets a pending request when its waiter goes away; if the client had not
/// answered yet, tells it the request is cancelled.
struct PendingGuard<'a> {
    shared: &'a Shared,
    n: u64,
    related: &'a Id,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if self.shared.take_pending(self.n).is_some() {
            let params = json!({"requestId": self.n, "reason": "The tool call that sent this request was cancelled"});
            self.shared
                .send(Message::Notification(Notification::new(method::CANCELLED, Some(params))), Some(self.related));
        }
    }
}

/// `3.0` as `3`, so counters look like counters on the wire.
fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 { json!(x as i64) } else { json!(x) }
}
