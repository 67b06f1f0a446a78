//! The names of the 2026-07-28 revision (the sessionless, "modern" era):
//! the request envelope in `_meta`, the routing headers, the result fields and
//! the error codes. Both legs use them: the server engine to validate what a
//! client sends, the upstream leg to build what toolgate sends.

/// The modern revision's string.
pub const VERSION_2026_07_28: &str = "2026-07-28";

/// Every modern revision toolgate speaks, newest first (what `server/discover`
/// lists and what `-32022` names as supported).
pub const VERSIONS: [&str; 1] = [VERSION_2026_07_28];

/// Whether `version` is a modern revision toolgate speaks.
pub fn is_supported(version: &str) -> bool {
    VERSIONS.contains(&version)
}

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
    /// Opens a header value that carries base64 of UTF-8 text (values that
    /// are not safe as plain header text).
    pub const BASE64_PREFIX: &str = "=?base64?";
    /// Closes a base64 header value.
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
