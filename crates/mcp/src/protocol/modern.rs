//! The names of the 2026-07-28 revision (the sessionless, "modern" era):
//! the request envelope in `_meta`, the routing headers, the result fields and
//! the error codes. Both legs use them: the server engine to validate what a
//! client sends, the upstream leg to build what toolgate sends.
//!
//! Beside the names: the few pure rules both legs apply to them (reading the
//! envelope, decoding a header value, the errors and HTTP statuses of the
//! revision), so neither leg spells them out again.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::jsonrpc::{ErrorObject, codes as rpc, member};

/// The modern revision's string.
pub const VERSION_2026_07_28: &str = "2026-07-28";

/// Every modern revision toolgate speaks, newest first (what `server/discover`
/// lists and what `-32022` names as supported).
pub const VERSIONS: [&str; 1] = [VERSION_2026_07_28];

/// Whether `version` is a modern revision toolgate speaks.
pub fn is_supported(version: &str) -> bool {
    VERSIONS.contains(&version)
}

pub mod params;

/// Reserved `_meta` keys.
pub mod meta {
    /// Request: the revision of this request (required).
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// Request: the client's capabilities for this request (required).
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// Request: the client's name and version (should).
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// Request: the lowest log level the client wants on this request's stream.
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// Result: the server's name and version (should, on every result).
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// Notification on a listen stream: the `subscriptions/listen` request id.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    /// Result (toolgate's own key, outside the reserved prefixes): the
    /// `serverInfo` an application's result carried (a gateway's upstream's),
    /// kept when the engine puts the server's own under [`SERVER_INFO`].
    pub const UPSTREAM_SERVER_INFO: &str = "dev.toolgate/upstreamServerInfo";
}

/// Methods that exist only in the modern era.
pub mod method {
    /// Replaces `initialize`: what the server speaks and offers.
    pub use crate::protocol::method::SERVER_DISCOVER;
    /// Replaces the GET stream and `resources/subscribe`.
    pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
    /// First message of a listen stream.
    pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
    /// Methods of the handshake era that the modern era removed: a modern
    /// request for one gets `-32601` (HTTP 404).
    pub const REMOVED: [&str; 5] =
        ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"];

    /// Methods whose results are cacheable (`ttlMs` and `cacheScope`).
    pub const CACHEABLE: [&str; 6] =
        [SERVER_DISCOVER, "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"];

    /// The `params` member `Mcp-Name` mirrors for `method`, if it has one.
    pub fn name_param(method: &str) -> Option<&'static str> {
        match method {
            "tools/call" | "prompts/get" => Some("name"),
            "resources/read" => Some("uri"),
            _ => None,
        }
    }
}

/// HTTP headers of the modern Streamable HTTP transport (lower case).
pub mod header {
    /// Mirrors the body's `method` on every request.
    pub const METHOD: &str = "mcp-method";
    /// Mirrors `params.name` (`tools/call`, `prompts/get`) or `params.uri`
    /// (`resources/read`).
    pub const NAME: &str = "mcp-name";
    /// Prefix of the headers that mirror arguments marked `x-mcp-header`.
    pub const PARAM_PREFIX: &str = "mcp-param-";
    /// The schema keyword that marks an argument to mirror in a header.
    pub const SCHEMA_KEYWORD: &str = "x-mcp-header";
    /// A header value that is not plain visible ASCII travels as
    /// `=?base64?<standard base64 of the UTF-8 bytes>?=`.
    pub const BASE64_PREFIX: &str = "=?base64?";
    /// The end of a base64 header value.
    pub const BASE64_SUFFIX: &str = "?=";
}

/// The requests an `InputRequiredResult` may carry (the server-to-client
/// requests of the handshake era).
pub mod input {
    /// Ask the user for input.
    pub const ELICITATION_CREATE: &str = "elicitation/create";
    /// Ask the client's model.
    pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
    /// Ask for the client's roots.
    pub const ROOTS_LIST: &str = "roots/list";
    /// All of them.
    pub const METHODS: [&str; 3] = [ELICITATION_CREATE, SAMPLING_CREATE_MESSAGE, ROOTS_LIST];

    /// The client capability an input request of `method` needs (a client
    /// is only sent the input requests it declared a capability for).
    pub fn capability(method: &str) -> Option<&'static str> {
        match method {
            ELICITATION_CREATE => Some("elicitation"),
            SAMPLING_CREATE_MESSAGE => Some("sampling"),
            ROOTS_LIST => Some("roots"),
            _ => None,
        }
    }
}

/// `server/discover` result fields.
pub mod discover {
    /// The revisions the server serves.
    pub const SUPPORTED_VERSIONS: &str = "supportedVersions";
    /// The server's capabilities.
    pub const CAPABILITIES: &str = "capabilities";
    /// Workflow instructions.
    pub const INSTRUCTIONS: &str = "instructions";
    /// The old (SEP-2575) place of the server's name and version: the body.
    pub const SERVER_INFO_BODY: &str = "serverInfo";
}

/// `subscriptions/listen` params.
pub mod listen {
    /// The params key holding the notification types asked for.
    pub const NOTIFICATIONS: &str = "notifications";
    /// Asks for `notifications/tools/list_changed`.
    pub const TOOLS_LIST_CHANGED: &str = "toolsListChanged";
    /// Asks for `notifications/prompts/list_changed`.
    pub const PROMPTS_LIST_CHANGED: &str = "promptsListChanged";
    /// Asks for `notifications/resources/list_changed`.
    pub const RESOURCES_LIST_CHANGED: &str = "resourcesListChanged";
    /// URIs whose `notifications/resources/updated` are wanted.
    pub const RESOURCE_SUBSCRIPTIONS: &str = "resourceSubscriptions";
}

/// Result fields.
pub mod result {
    /// Required on every modern result.
    pub const RESULT_TYPE: &str = "resultType";
    /// `resultType` of an ordinary result.
    pub const COMPLETE: &str = "complete";
    /// `resultType` of a multi-round-trip answer.
    pub const INPUT_REQUIRED: &str = "input_required";
    /// Cacheable results: how long the result stays fresh, in milliseconds.
    pub const TTL_MS: &str = "ttlMs";
    /// Cacheable results: `"public"` or `"private"`.
    pub const CACHE_SCOPE: &str = "cacheScope";
    /// `InputRequiredResult`: the server's requests, by key.
    pub const INPUT_REQUESTS: &str = "inputRequests";
    /// `InputRequiredResult` and the retry's params: opaque server state.
    pub const REQUEST_STATE: &str = "requestState";
    /// The retry's params: the client's answers, by key.
    pub const INPUT_RESPONSES: &str = "inputResponses";
    /// `cacheScope`: any cache may serve the result to anyone.
    pub const PUBLIC: &str = "public";
    /// `cacheScope`: the result may differ by authorization context.
    pub const PRIVATE: &str = "private";
    /// The result fields only the modern era has: removed before a result
    /// reaches a client of an older revision.
    pub const MODERN_ONLY: [&str; 3] = [RESULT_TYPE, TTL_MS, CACHE_SCOPE];
    /// `-32022` `error.data`: the versions the server serves.
    pub const SUPPORTED: &str = "supported";
}

/// Error codes of the modern era (`-32020..=-32099` is reserved for the spec).
pub mod code {
    /// An `Mcp-*` header is missing, malformed or differs from the body (HTTP 400).
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability it did not declare (HTTP 400);
    /// `data: {requiredCapabilities: {<capability>: {}}}`.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// The request's revision is not served (HTTP 400);
    /// `data: {supported: [...], requested: "..."}`.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// Whether `version` is a revision of the handshake (`initialize`) era.
pub fn is_handshake_version(version: &str) -> bool {
    crate::protocol::Version::parse(version).is_some()
}

/// The request's claim to the modern era: `params._meta`'s protocol version
/// key, if present (whatever its value).
pub fn claim(params: Option<&Value>) -> Option<&Value> {
    member(member(params?, "_meta")?, meta::PROTOCOL_VERSION)
}

/// What a modern request's `_meta` envelope says.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// `protocolVersion`.
    pub version: String,
    /// `clientCapabilities`, as sent.
    pub capabilities: Value,
    /// `clientInfo`, if sent (it is a SHOULD).
    pub client_info: Option<Value>,
    /// `logLevel`, if sent.
    pub log_level: Option<String>,
}

impl Envelope {
    /// Reads the envelope of a request's `params`, or the `-32602` naming
    /// what is missing or malformed (`data: {envelope: {missing: [...]}}`).
    pub fn read(params: Option<&Value>) -> Result<Envelope, ErrorObject> {
        let meta = params.and_then(|p| member(p, "_meta")).and_then(Value::as_object);
        let Some(meta) = meta else {
            return Err(envelope_error(&["_meta"], "the request has no params._meta envelope"));
        };
        // One pass over `_meta` (the first of a key, as a lookup finds it).
        let (mut version, mut capabilities, mut client_info, mut log_level) = (None, None, None, None);
        for (key, value) in meta {
            let slot = match key.as_str() {
                meta::PROTOCOL_VERSION => &mut version,
                meta::CLIENT_CAPABILITIES => &mut capabilities,
                meta::CLIENT_INFO => &mut client_info,
                meta::LOG_LEVEL => &mut log_level,
                _ => continue,
            };
            slot.get_or_insert(value);
        }
        let version = version.and_then(Value::as_str);
        let capabilities = capabilities.filter(|c| c.is_object());
        let mut missing = Vec::new();
        if version.is_none() {
            missing.push(meta::PROTOCOL_VERSION);
        }
        if capabilities.is_none() {
            missing.push(meta::CLIENT_CAPABILITIES);
        }
        match (version, capabilities) {
            (Some(version), Some(capabilities)) => Ok(Envelope {
                version: version.to_owned(),
                capabilities: capabilities.clone(),
                client_info: client_info.filter(|i| i.is_object()).cloned(),
                log_level: log_level.and_then(Value::as_str).map(str::to_owned),
            }),
            _ => Err(envelope_error(&missing, "the _meta envelope lacks a required field")),
        }
    }

    /// [`Envelope::read`], moving `clientInfo` out of `_meta` instead of
    /// copying it: a server reads it from the envelope, and every leg onward
    /// names its own client (toolgate's `clientInfo` replaces it on a
    /// modern upstream's leg, and a handshake-era one gets no envelope).
    /// Everything else in `_meta` stays as sent.
    pub fn take(params: Option<&mut Value>) -> Result<Envelope, ErrorObject> {
        let Some(params) = params else { return Self::read(None) };
        // Found by a scan (the maps are small; a lookup would hash the long
        // keys), removed with one lookup.
        let meta = params.as_object_mut().and_then(|p| p.iter_mut().find(|(k, _)| *k == "_meta")).map(|(_, m)| m);
        let info = meta
            .and_then(Value::as_object_mut)
            .filter(|m| m.iter().any(|(k, v)| k == meta::CLIENT_INFO && v.is_object()))
            .and_then(|m| m.shift_remove(meta::CLIENT_INFO));
        // (A refused request is answered from its id alone: what was moved
        // out is not put back.)
        let mut envelope = Self::read(Some(params))?;
        envelope.client_info = info;
        Ok(envelope)
    }
}

fn envelope_error(missing: &[&str], why: &str) -> ErrorObject {
    ErrorObject::new(rpc::INVALID_PARAMS, format!("Invalid params: {why} ({})", missing.join(", ")))
        .with_data(json!({"envelope": {"missing": missing}}))
}

/// `-32022` for a revision toolgate does not serve, naming the ones it does.
pub fn unsupported_version(requested: &str) -> ErrorObject {
    ErrorObject::new(
        code::UNSUPPORTED_PROTOCOL_VERSION,
        format!("Unsupported protocol version {requested:?}; supported: {}", VERSIONS.join(", ")),
    )
    .with_data(json!({"supported": VERSIONS, "requested": requested}))
}

/// `-32020`: `header` is missing (`sent: None`), malformed, or differs from
/// the body's `body`.
pub fn header_mismatch(header: &str, sent: Option<&str>, body: &str) -> ErrorObject {
    let message = match sent {
        None => format!("Header mismatch: the {header} header is required and must be {body:?}"),
        Some(sent) => format!("Header mismatch: {header} is {sent:?} but the body says {body:?}"),
    };
    ErrorObject::new(code::HEADER_MISMATCH, message)
        .with_data(json!({"mismatch": {"header": header, "sent": sent, "body": body}}))
}

/// The value of an `Mcp-*` header: optional white space trimmed, and a
/// `=?base64?…?=` value decoded. `None` when the base64 is invalid or does
/// not decode to UTF-8 (a malformed header).
pub fn decode_header_value(raw: &[u8]) -> Option<std::borrow::Cow<'_, str>> {
    let text = std::str::from_utf8(raw).ok()?.trim_matches([' ', '\t']);
    match text.strip_prefix(header::BASE64_PREFIX).and_then(|t| t.strip_suffix(header::BASE64_SUFFIX)) {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).ok()?;
            String::from_utf8(bytes).ok().map(std::borrow::Cow::Owned)
        }
        // Plain text (the usual name) is the header's own, not copied.
        None => Some(std::borrow::Cow::Borrowed(text)),
    }
}

/// The HTTP status of a modern response carrying error `code` that did not
/// come from the envelope check (whose `-32602` is always 400): the
/// revision's own errors and malformed requests are 400, an unknown method
/// 404, everything else (a handler's `-32602` included, as the TypeScript
/// SDK does) 200 with the error in the body.
pub fn http_status(code: i64) -> u16 {
    match code {
        code::HEADER_MISMATCH | code::MISSING_REQUIRED_CLIENT_CAPABILITY | code::UNSUPPORTED_PROTOCOL_VERSION => 400,
        rpc::PARSE_ERROR | rpc::INVALID_REQUEST => 400,
        rpc::METHOD_NOT_FOUND => 404,
        _ => 200,
    }
}

/// The rank of a log level (`debug` lowest, `emergency` highest), for
/// comparing a message's level with a request's `logLevel`.
pub fn log_rank(level: &str) -> Option<u8> {
    super::LOG_LEVELS.iter().position(|l| *l == level).and_then(|p| u8::try_from(p).ok())
}

#[cfg(test)]
mod tests;
