//! What a running tool handler can do: report progress, log, send
//! notifications, and send requests to the client and await the answers.
//!
//! Everything goes out through the engine's session: messages related to
//! the call on the call's own stream (its SSE stream on Streamable HTTP),
//! falling back to the standalone stream once that is gone; server-to-client
//! requests through [`Session::request_client`], which routes the answer back
//! and withdraws the request if the call is cancelled.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolgate_mcp::jsonrpc::{Id, Message, Notification, Outcome};
use toolgate_mcp::protocol::{Version, method};
use toolgate_mcp::server::{ClientRequestError, Downlink, Session};

use super::envelope::Envelope;
use super::handler::SessionState;
use super::level::LogLevel;
use super::registry::Registry;

/// Why a request to the client produced no result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RequestError {
    /// The client answered with a JSON-RPC error (the `error` object).
    #[error("the client answered with an error: {0}")]
    Rpc(Value),
    /// The call was cancelled before the client answered.
    #[error("the call was cancelled before the client answered")]
    Cancelled,
    /// The session ended before the client answered.
    #[error("the connection closed before the client answered")]
    Closed,
}

impl RequestError {
    /// The client's error message, or a description of the failure.
    pub fn message(&self) -> String {
        match self {
            RequestError::Rpc(e) => e.get("message").and_then(Value::as_str).unwrap_or("unknown error").to_owned(),
            RequestError::Cancelled | RequestError::Closed => self.to_string(),
        }
    }
}

/// The handle a tool handler gets for the request it serves. Cheap to clone;
/// a clone may outlive the call (to notify later, unrelated to it).
#[derive(Clone)]
pub struct RequestContext {
    pub(super) session: Arc<Session<SessionState>>,
    pub(super) registry: Arc<Registry>,
    pub(super) request_id: Id,
    pub(super) progress_token: Option<Value>,
    /// The request's params other than `arguments` (the 2026 envelope).
    pub(super) envelope: Arc<Envelope>,
    /// The call's way back to the client.
    pub(super) downlink: Downlink,
    /// Fires when the client cancels the call (or the session ends).
    pub(super) cancel: CancellationToken,
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

    /// The capabilities the client declared: for a 2026-07-28 request, those
    /// in its `_meta` (for this request only); otherwise those of
    /// `initialize`.
    pub fn client_capabilities(&self) -> Value {
        if self.envelope.is_modern() {
            self.envelope.client_capabilities()
        } else {
            self.session.client_capabilities().clone()
        }
    }

    /// The request as the 2026-07-28 revision sees it: its `_meta` envelope
    /// and the retry fields of a multi-round-trip request.
    pub fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    /// The protocol revision negotiated with this client.
    pub fn protocol_version(&self) -> Version {
        self.session.version()
    }

    /// Whether the client is subscribed to `uri`.
    /// For a 2026-07-28 request: whether some listen stream asked for its
    /// updates.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        if self.session.is_sessionless() {
            return self.registry.listening.listens_to(uri);
        }
        self.session.state.is_subscribed(uri)
    }

    /// Sends a notification related to this request.
    pub fn notify(&self, method: &str, params: Option<Value>) {
        let note = Message::Notification(Notification::new(method, params));
        self.session.send_related(note, Some(&self.downlink));
    }

    /// Sends a notification related to no request (on HTTP, the standalone
    /// stream), as servers do for events that outlive the call.
    /// For a 2026-07-28 request (which has no standalone stream) it goes to
    /// the registry's `subscriptions/listen` streams that asked for its type.
    pub fn notify_unrelated(&self, method: &str, params: Option<Value>) {
        let note = Notification::new(method, params);
        if self.session.is_sessionless() {
            self.registry.listening.broadcast(&note);
        } else {
            self.session.notify(Message::Notification(note));
        }
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
    /// minimum level: with `logging/setLevel`, or for a 2026-07-28 request in
    /// its `_meta` (which logs nothing unless it names a level).
    pub fn log(&self, level: LogLevel, data: impl Into<Value>) {
        let enabled = if self.envelope.is_modern() {
            self.envelope.log_level().is_some_and(|min| level >= min)
        } else {
            self.session.state.log_enabled(level)
        };
        if !enabled {
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
    /// `elicitation/create`, `roots/list`) on this call's stream and waits
    /// for its answer.
    ///
    /// If the call is cancelled while waiting, the server tells the client
    /// with `notifications/cancelled`.
    pub async fn request(&self, method: &str, params: Option<Value>) -> Result<Value, RequestError> {
        match self.session.request_client(method, params, Some(&self.downlink), &self.cancel).await {
            Ok(Outcome::Error(e)) => Err(RequestError::Rpc(e)),
            Ok(ok) => Ok(ok.result_value().unwrap_or(Value::Null)),
            Err(ClientRequestError::Cancelled) => Err(RequestError::Cancelled),
            Err(ClientRequestError::SessionClosed) => Err(RequestError::Closed),
        }
    }
}

/// `3.0` as `3`, so counters look like counters on the wire.
fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 { json!(x as i64) } else { json!(x) }
}
