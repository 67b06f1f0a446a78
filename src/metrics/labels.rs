//! Label values, each from a small closed set, so no series is created per
//! session, per argument or per unknown method name.

use std::sync::Arc;

use prometheus_client::encoding::{EncodeLabelValue, LabelValueEncoder};

use crate::jsonrpc;
use crate::protocol::method;
use crate::upstream::UpstreamError;

/// A label value: a fixed word, or a name from the configuration (an
/// upstream, a client).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Label {
    Static(&'static str),
    Name(Arc<str>),
}

impl EncodeLabelValue for Label {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        use std::fmt::Write as _;
        encoder.write_str(match self {
            Label::Static(s) => s,
            Label::Name(s) => s,
        })
    }
}

/// A label set of `N` labels.
pub type Labels<const N: usize> = [(&'static str, Label); N];

/// The method of a request, as a label: the MCP methods toolgate knows;
/// any other (vendor methods, typos) is `other`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    Initialize,
    Ping,
    ToolsList,
    ToolsCall,
    ResourcesList,
    ResourcesTemplatesList,
    ResourcesRead,
    ResourcesSubscribe,
    ResourcesUnsubscribe,
    PromptsList,
    PromptsGet,
    CompletionComplete,
    LoggingSetLevel,
    Other,
}

impl Method {
    /// How many there are (the size of tables indexed by method).
    pub const COUNT: usize = 14;

    /// The label of method `name`.
    pub fn of(name: &str) -> Method {
        match name {
            method::INITIALIZE => Method::Initialize,
            method::PING => Method::Ping,
            method::TOOLS_LIST => Method::ToolsList,
            method::TOOLS_CALL => Method::ToolsCall,
            method::RESOURCES_LIST => Method::ResourcesList,
            method::RESOURCES_TEMPLATES_LIST => Method::ResourcesTemplatesList,
            method::RESOURCES_READ => Method::ResourcesRead,
            method::RESOURCES_SUBSCRIBE => Method::ResourcesSubscribe,
            method::RESOURCES_UNSUBSCRIBE => Method::ResourcesUnsubscribe,
            method::PROMPTS_LIST => Method::PromptsList,
            method::PROMPTS_GET => Method::PromptsGet,
            method::COMPLETION_COMPLETE => Method::CompletionComplete,
            method::LOGGING_SET_LEVEL => Method::LoggingSetLevel,
            _ => Method::Other,
        }
    }

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Initialize => method::INITIALIZE,
            Method::Ping => method::PING,
            Method::ToolsList => method::TOOLS_LIST,
            Method::ToolsCall => method::TOOLS_CALL,
            Method::ResourcesList => method::RESOURCES_LIST,
            Method::ResourcesTemplatesList => method::RESOURCES_TEMPLATES_LIST,
            Method::ResourcesRead => method::RESOURCES_READ,
            Method::ResourcesSubscribe => method::RESOURCES_SUBSCRIBE,
            Method::ResourcesUnsubscribe => method::RESOURCES_UNSUBSCRIBE,
            Method::PromptsList => method::PROMPTS_LIST,
            Method::PromptsGet => method::PROMPTS_GET,
            Method::CompletionComplete => method::COMPLETION_COMPLETE,
            Method::LoggingSetLevel => method::LOGGING_SET_LEVEL,
            Method::Other => "other",
        }
    }

    pub(super) fn label(self) -> Label {
        Label::Static(self.as_str())
    }
}

/// How a client request ended, as the client saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// A result.
    Ok,
    /// A `tools/call` result with `isError: true` (the tool failed).
    ToolError,
    /// A JSON-RPC error.
    Error,
    /// A tool call refused by the disclosure gate (description not fetched).
    Refused,
    /// The client cancelled it.
    Cancelled,
}

impl Outcome {
    pub const COUNT: usize = 5;

    /// Every outcome, in table order.
    pub const ALL: [Outcome; Outcome::COUNT] =
        [Outcome::Ok, Outcome::ToolError, Outcome::Error, Outcome::Refused, Outcome::Cancelled];

    /// The outcome of a request of `method` that answered `outcome`.
    pub fn of(method: Method, outcome: &jsonrpc::Outcome, refused: bool, cancelled: bool) -> Outcome {
        if cancelled {
            Outcome::Cancelled
        } else if refused {
            Outcome::Refused
        } else if matches!(outcome, jsonrpc::Outcome::Error(_)) {
            Outcome::Error
        } else if method == Method::ToolsCall && is_tool_error(outcome) {
            Outcome::ToolError
        } else {
            Outcome::Ok
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::Error => "error",
            Outcome::Refused => "refused",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// How a call to an upstream ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UpstreamOutcome {
    /// A result.
    Ok,
    /// A `tools/call` result with `isError: true`.
    ToolError,
    /// A JSON-RPC error from the upstream.
    Error,
    /// No answer within the upstream's `timeout`.
    Timeout,
    /// Not connected, or it could not start.
    Unavailable,
    /// The connection closed (or the upstream forgot the session) before the answer.
    Closed,
    /// The HTTP exchange failed or the upstream broke the protocol.
    Failed,
    /// The client cancelled it.
    Cancelled,
    /// Every instance of a `per_session` upstream was in use (`max_instances`).
    Busy,
    /// No credential for the client (a token exchange refused): not sent.
    Credentials,
}

impl UpstreamOutcome {
    pub const COUNT: usize = 10;

    /// The outcome of a call of `method`.
    pub fn of(method: Method, result: &Result<jsonrpc::Outcome, UpstreamError>) -> UpstreamOutcome {
        match result {
            Ok(jsonrpc::Outcome::Error(_)) => UpstreamOutcome::Error,
            Ok(outcome) if method == Method::ToolsCall && is_tool_error(outcome) => UpstreamOutcome::ToolError,
            Ok(_) => UpstreamOutcome::Ok,
            Err(UpstreamError::Timeout { .. }) => UpstreamOutcome::Timeout,
            Err(UpstreamError::Unavailable { .. } | UpstreamError::Start { .. }) => UpstreamOutcome::Unavailable,
            Err(UpstreamError::Closed { .. } | UpstreamError::SessionExpired { .. }) => UpstreamOutcome::Closed,
            Err(UpstreamError::Http { .. } | UpstreamError::Protocol { .. }) => UpstreamOutcome::Failed,
            Err(UpstreamError::Cancelled) => UpstreamOutcome::Cancelled,
            Err(UpstreamError::Busy { .. }) => UpstreamOutcome::Busy,
            Err(UpstreamError::Credentials { .. }) => UpstreamOutcome::Credentials,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamOutcome::Ok => "ok",
            UpstreamOutcome::ToolError => "tool_error",
            UpstreamOutcome::Error => "error",
            UpstreamOutcome::Timeout => "timeout",
            UpstreamOutcome::Unavailable => "unavailable",
            UpstreamOutcome::Closed => "closed",
            UpstreamOutcome::Failed => "failed",
            UpstreamOutcome::Cancelled => "cancelled",
            UpstreamOutcome::Busy => "busy",
            UpstreamOutcome::Credentials => "credentials",
        }
    }
}

/// How a client fetched tool descriptions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Via {
    /// `resources/read` of `resource:///tool_descriptions?tools=…`.
    Resource,
    /// The `describe_tools` tool.
    Tool,
}

impl Via {
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Resource => "resource",
            Via::Tool => "tool",
        }
    }
}

/// Whether a `tools/call` result says the tool failed (`isError: true`).
/// Results from upstreams stay JSON text ([`jsonrpc::Outcome::Prepared`]),
/// their members found as they were decoded: the member is read from
/// those ([`raw_says_tool_error`]).
fn is_tool_error(outcome: &jsonrpc::Outcome) -> bool {
    match outcome {
        jsonrpc::Outcome::Result(v) => v.get("isError").and_then(serde_json::Value::as_bool) == Some(true),
        jsonrpc::Outcome::Prepared(raw) => raw_says_tool_error(raw),
        jsonrpc::Outcome::Error(_) => false,
    }
}

/// Whether a result held as text says the tool failed: its `isError`
/// member (the last, as a parser keeps) where its members are known, else
/// [`text_says_tool_error`].
pub(crate) fn raw_says_tool_error(raw: &jsonrpc::Raw) -> bool {
    match raw.object() {
        Some(object) => object.values_of("isError").last() == Some("true"),
        None => text_says_tool_error(raw.get()),
    }
}

/// Whether a result's JSON text has an `"isError"` member whose value is
/// `true`, with any whitespace around the colon. The usual result has no
/// such key, and is scanned once (it was twice, once per spacing), by
/// `contains`, whose search of a short needle is vectorized (`find` and
/// `match_indices` are not: under callgrind they cost half as much again).
/// A nested object with such a member is taken for the result's own.
pub(crate) fn text_says_tool_error(text: &str) -> bool {
    const KEY: &str = "\"isError\"";
    if !text.contains(KEY) {
        return false;
    }
    text.match_indices(KEY).any(|(at, _)| {
        let after = text[at + KEY.len()..].trim_start();
        after.strip_prefix(':').is_some_and(|value| value.trim_start().starts_with("true"))
    })
}

#[cfg(test)]
mod tests;
