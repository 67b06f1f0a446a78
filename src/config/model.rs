//! The configuration model: what users write in `toolgate.toml`.
//!
//! Every struct denies unknown keys so that a typo fails loudly at startup
//! instead of being silently ignored. The `///` docs of the types and fields
//! here become the descriptions of the JSON Schema (`toolgate
//! config-schema`) and of the book's configuration reference, so they are
//! written for users, in Markdown, without rustdoc links; each key's default
//! comes from serde. The rules each value must follow are checked by
//! [`Config::validate`] (see `validate.rs`), and [`load`](super::load())
//! resolves relative paths against the config file's directory.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The whole configuration file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// How toolgate serves its clients.
    #[serde(default)]
    pub server: ServerConfig,
    /// How progressive disclosure presents tools.
    #[serde(default)]
    pub disclosure: DisclosureConfig,
    /// The upstream MCP servers, in the order their tools are listed.
    #[serde(default, rename = "upstream")]
    pub upstreams: Vec<UpstreamConfig>,
    /// Client authentication and per-client policy (HTTP only).
    #[serde(default)]
    pub auth: super::AuthConfig,
    /// Prometheus metrics.
    #[serde(default)]
    pub metrics: super::MetricsConfig,
    /// OpenTelemetry traces.
    #[serde(default)]
    pub tracing: super::TracingConfig,
    /// Shared state (the grant store of sessionless clients).
    #[serde(default)]
    pub state: super::StateConfig,
    /// Held upstream calls of 2026-07-28 clients (multi-round-trip
    /// translation in front of handshake-era upstreams).
    #[serde(default)]
    pub mrtr: super::MrtrConfig,
    /// The concerns toolgate declares to clients (concern-based filtering).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("default" = []))]
    pub concerns: Vec<super::ConcernConfig>,
    /// `[[limits]]`: per-tool budgets for every client, the write-tool default and the
    /// identical-call breaker (see the book's "Limits and defaults").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<super::ToolLimit>,
    /// `[audit]`: the audit trail of description fetches, calls, refusals, searches, drift and
    /// concern changes.
    #[serde(default)]
    pub audit: super::AuditConfig,
    /// `[identity]`: toolgate as the issuer of the identity assertions upstreams are shown.
    #[serde(default)]
    pub identity: super::IdentityConfig,
    /// `[oauth]`: toolgate as the OAuth client of protected upstreams (`auth = "oauth"`).
    #[serde(default)]
    pub oauth: super::OAuthConfig,
}

/// `[server]`: the downstream endpoint that MCP clients connect to (Streamable HTTP, and legacy
/// HTTP+SSE unless turned off).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Address and port to listen on. Port `0` picks a free port. On an address that is not
    /// loopback toolgate refuses to start without `[auth]` credentials, unless
    /// `auth.allow_anonymous = true`.
    pub listen: SocketAddr,
    /// Path of the MCP endpoint. Must start with `/`; no query, fragment or spaces.
    pub path: String,
    /// Accepted `Host` header values (`host` or `host:port`), against DNS rebinding (others get
    /// `403`). Empty: the loopback names `localhost`, `127.0.0.1` and `[::1]` on any port. `"*"`
    /// accepts any host. Entries must not be empty.
    pub allowed_hosts: Vec<String>,
    /// Accepted `Origin` header values, e.g. `"https://app.example.com"`. Requests without `Origin`
    /// are always accepted. Empty: `http(s)://` origins on the loopback names. `"*"` accepts any
    /// origin. Entries must not be empty.
    pub allowed_origins: Vec<String>,
    /// A client session with no traffic for this long is closed and its upstream sessions released.
    /// Must be > 0.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "super::schema::DurationText")]
    pub session_idle_timeout: Duration,
    /// Largest accepted request body, in bytes (4 MiB by default); larger ones get `413`. At least
    /// `1024`.
    #[schemars(range(min = super::validate::MIN_BODY_BYTES))]
    pub max_body_bytes: usize,
    /// How long a client session waits for upstreams that are still making their first connection
    /// attempt: `initialize` waits up to this long, and the session's later requests that need the
    /// catalog (`tools/list`, a call to a tool not listed yet) wait no longer than that first
    /// wait's end, so one session waits once. Must be > 0.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "super::schema::DurationText")]
    pub startup_timeout: Duration,
    /// Interval of keep-alive comments on open SSE streams. Must be > 0.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "super::schema::DurationText")]
    pub sse_keep_alive: Duration,
    /// Also serve the legacy HTTP+SSE transport (2024-11-05 clients): `GET /sse` opens the event
    /// stream, whose first `endpoint` event names `POST /messages?sessionId=…` for client messages.
    pub legacy_sse: bool,
    /// Page size of the merged `tools/list`, `resources/list`, `resources/templates/list` and
    /// `prompts/list` answers, with opaque cursors (`-32602` for a cursor toolgate did not issue).
    /// `0` serves each list whole in one page (some clients never follow `nextCursor`).
    pub page_size: usize,
    /// How long a request head may take to arrive, from its first byte (from the connection's
    /// opening, for its first request). A client sending half a header is cut off. Must be > 0.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "super::schema::DurationText")]
    pub header_read_timeout: Duration,
    /// How long a request body may take to arrive, in total: a body trickled a byte at a time gets
    /// `408` and the connection closes. Must be > 0.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "super::schema::DurationText")]
    pub body_read_timeout: Duration,
    /// How long a connection with no request in progress stays open (HTTP/1 keep-alive, HTTP/2 with
    /// no stream), apart from the slow-request cut-offs above. Must be > 0.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "super::schema::DurationText")]
    pub keep_alive_timeout: Duration,
    /// Most HTTP connections open at once. One more takes the place of the connection idle longest
    /// (no request in progress, no stream open); only when every one is busy is it closed as soon
    /// as it is accepted. At least `1`.
    #[schemars(range(min = 1))]
    pub max_connections: usize,
    /// Most HTTP connections of one peer: its address, or for a connection from a `trusted_proxies`
    /// address, the client address the proxy forwards in `X-Forwarded-For`. At the cap the peer's
    /// longest-idle connection gives way, as at `max_connections`. `0` (the default): no cap.
    pub max_connections_per_peer: usize,
    /// Proxies (addresses, or networks such as `"10.0.0.0/8"`) whose `X-Forwarded-For` is believed:
    /// the right-most address in it that is not a trusted proxy is the client, for
    /// `max_connections_per_peer` and for refusals. Empty (the default): every peer is its own
    /// client.
    pub trusted_proxies: Vec<String>,
    /// Most client sessions alive at once, over every transport. The next `initialize` gets HTTP
    /// `429` with a JSON-RPC error (`-32014`); a legacy `GET /sse` gets `429` before its stream
    /// opens. At least `1`.
    #[schemars(range(min = 1))]
    pub max_sessions: usize,
    /// Most requests one session may have in flight (each element of a batch counts); one more is
    /// answered at once with `-32014`. At least `1`.
    #[schemars(range(min = 1))]
    pub max_requests_per_session: usize,
    /// Most resource subscriptions one session may hold (`resources/subscribe`), and most URIs one
    /// `subscriptions/listen` stream may ask for; one more gets `-32014`. At least `1`.
    #[schemars(range(min = 1))]
    pub max_subscriptions_per_session: usize,
    /// Most notifications (progress, log messages) queued for one response stream of a client that
    /// reads slowly; past it further ones are dropped. Responses and server-to-client requests are
    /// never dropped. At least `1`.
    #[schemars(range(min = 1))]
    pub stream_buffer: usize,
    /// On SIGTERM or SIGINT: how long requests in progress may take to finish (new connections,
    /// sessions and requests are refused meanwhile) before sessions end and upstreams are stopped.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "super::schema::DurationText")]
    pub shutdown_grace: Duration,
    /// Threads of the async runtime. `0`: one per CPU the process may use (its CPU affinity and
    /// cgroup quota count; `TOKIO_WORKER_THREADS` overrides). On a small machine shared with the
    /// upstreams, `1` costs less CPU per call: a call then crosses fewer threads. At most `1024`;
    /// read at start only (a reload keeps the running value).
    #[schemars(range(max = super::validate::MAX_WORKER_THREADS))]
    pub worker_threads: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            path: "/mcp".into(),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            session_idle_timeout: Duration::from_secs(3600),
            max_body_bytes: 4 * 1024 * 1024,
            startup_timeout: Duration::from_secs(30),
            legacy_sse: true,
            page_size: 0,
            sse_keep_alive: Duration::from_secs(15),
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            keep_alive_timeout: Duration::from_secs(30),
            max_connections: 4096,
            max_connections_per_peer: 0,
            trusted_proxies: Vec::new(),
            max_sessions: 10_000,
            max_requests_per_session: 64,
            max_subscriptions_per_session: 256,
            stream_buffer: 256,
            shutdown_grace: Duration::from_secs(10),
            worker_threads: 0,
        }
    }
}

/// `[disclosure]`: how progressive disclosure presents tools: the minimal `tools/list` and the
/// descriptions resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DisclosureConfig {
    /// Longest description in the minimal `tools/list`, in characters; longer ones are shortened. A
    /// first sentence shorter than half of it is followed by the next sentence when both fit. At
    /// least `20`.
    #[schemars(range(min = super::validate::MIN_DESCRIPTION_CHARS))]
    pub description_max_chars: usize,
    /// Also offer a tool that returns full tool definitions, for clients that cannot read
    /// resources.
    pub describe_tool: bool,
    /// Name of that tool: 1 to 64 characters from `A-Z a-z 0-9 _ -`.
    pub describe_tool_name: String,
    /// Most tool names one description fetch (a `resources/read` of
    /// `resource:///tool_descriptions?tools=…`, or a `describe_tools` call) may name. More (or a
    /// name over 128 bytes) get a `TOO_MANY_TOOLS` (`TOOL_NAME_TOO_LONG`) error object and
    /// authorize nothing. At least `1`.
    #[schemars(range(min = 1))]
    pub max_tools_per_fetch: usize,
    /// Largest answer of a description fetch, in bytes (1 MiB by default). Definitions that would
    /// not fit are left out, and not authorized, with an entry saying to fetch them separately. At
    /// least `65536`.
    #[schemars(range(min = super::validate::MIN_ANSWER_BYTES))]
    pub max_answer_bytes: usize,
    /// Memory for rendered description answers kept for repeated fetches, weighed in bytes (16 MiB
    /// by default). `0` keeps none.
    pub cache_bytes: u64,
    /// How long a sessionless (2026-07-28) client's grant lasts: from its fetch, started again by
    /// each call through the gate and each new fetch. Session-based clients keep their grants for
    /// the session instead. Must be > 0.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "super::schema::DurationText")]
    pub grant_ttl: Duration,
    /// What `tools/list` shows: `all` (default) every tool a client may see;
    /// `search` only the `pinned` tools, the search tool and the describe
    /// tool (for catalogs of hundreds of tools); `auto` searches when the
    /// client's visible catalog has more than `search_above` tools.
    pub listing: Listing,
    /// With `search` (or `auto` when it searches): globs over exposed tool
    /// names of the tools still listed, in their usual form. Default none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pinned: Vec<String>,
    /// With `auto`: search when a client may see more than this many tools.
    /// Default 40 (the tool cap of common hosts); at least 1.
    #[schemars(range(min = 1))]
    pub search_above: usize,
    /// Name of the synthesized search tool, `^[A-Za-z0-9_-]{1,64}$`, not the
    /// describe tool's. Default `search_tools`.
    pub search_tool_name: String,
    /// With the search listing: name of the synthesized tool that calls a
    /// catalog tool by its exact name (`{"name": …, "arguments": {…}}`), as a
    /// direct call would, for hosts that call only listed tools;
    /// `^[A-Za-z0-9_-]{1,64}$`, not the describe or search tool's. Default
    /// `call_tool`.
    pub call_tool_name: String,
    /// With the search listing: how a host reaches the tools the model
    /// found. `call_tool` (default): through the call tool, and the listing
    /// never changes. `list`: a client with a session (an `Mcp-Session-Id`,
    /// or stdio) also gets each tool whose description its session fetched
    /// in its `tools/list`, followed by `notifications/tools/list_changed`,
    /// so its host calls it natively (a changing list defeats prompt
    /// caches). Sessionless clients always use the call tool.
    pub activation: Activation,
    /// A lockfile of approved tool definitions (`toolgate lock` writes one), relative to the
    /// configuration file. Unset: every definition is served as the upstream lists it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<std::path::PathBuf>,
    /// What a definition that drifted from the lock gets: `"hold"` (the default) serves the approved
    /// definition, refuses calls while its input schema differs and serves no new tool until it is
    /// approved; `"warn"` serves what the upstream says now. Either way the drift is logged and in
    /// `toolgate_tool_drift`.
    pub on_drift: crate::lock::OnDrift,
}

/// `[disclosure] activation`: how tools found by search become callable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    /// Through the call tool only; the listing never changes.
    #[default]
    CallTool,
    /// Also listed, for clients with a session, once described.
    List,
}

/// `[disclosure] listing`: what `tools/list` shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Listing {
    /// Every tool the client may see.
    #[default]
    All,
    /// The pinned tools, the search tool and the describe tool.
    Search,
    /// `search` when the client's catalog has more than `search_above`
    /// tools, else `all`.
    Auto,
}

impl Default for DisclosureConfig {
    fn default() -> Self {
        Self {
            description_max_chars: 160,
            describe_tool: true,
            describe_tool_name: "describe_tools".into(),
            max_tools_per_fetch: 64,
            max_answer_bytes: 1024 * 1024,
            cache_bytes: 16 * 1024 * 1024,
            grant_ttl: Duration::from_secs(3600),
            listing: Listing::All,
            pinned: Vec::new(),
            search_above: 40,
            search_tool_name: "search_tools".into(),
            call_tool_name: "call_tool".into(),
            activation: Activation::CallTool,
            lock: None,
            on_drift: crate::lock::OnDrift::Hold,
        }
    }
}

impl DisclosureConfig {
    /// Whether a client may be shown the search listing.
    pub fn may_search(&self) -> bool {
        self.listing != Listing::All
    }
}

/// `[[upstream]]`: one upstream MCP server. Each sets exactly one of `command` (a stdio server) or
/// `url` (an HTTP server); the keys marked stdio or HTTP belong to that kind only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    /// Unique name, `[a-z0-9_-]+`. The default tool-name prefix.
    pub name: String,

    /// stdio: the program to run, looked up on `PATH`. Not empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// stdio: its arguments. An error on a `url` upstream.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("default" = []))]
    pub args: Vec<String>,
    /// stdio: extra environment variables for the child. An error on a `url` upstream.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(extend("default" = {}))]
    pub env: IndexMap<String, String>,
    /// stdio: pass toolgate's whole environment to the child. When `false`, only `HOME`, `LOGNAME`,
    /// `PATH`, `SHELL`, `TERM`, `USER`, `LANG`, `LC_ALL`, `TMPDIR`, `TZ`, the
    /// `XDG_CACHE_HOME`/`XDG_CONFIG_HOME`/`XDG_DATA_HOME`/`XDG_STATE_HOME` directories and the npm
    /// and uv settings (`NPM_CONFIG_*`, `npm_config_*`, `UV_*`) are passed, plus `env`. Settings
    /// that can hold a credential stay behind: names containing `auth`, `token`, `password`,
    /// `passwd`, `secret`, `key`, `cert`, `otp`, `username`, `email` or `credential`, per-registry
    /// npm keys (`//host/:_authToken`), and any value with a URL that has a user part
    /// (`https://user:pw@host`). An error on a `url` upstream.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schemars(extend("default" = false))]
    pub inherit_env: bool,
    /// stdio: working directory of the child. Must exist. Relative paths are relative to the config
    /// file's directory. Unset: toolgate's working directory. An error on a `url` upstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,

    /// HTTP: the endpoint, an `http://` or `https://` URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP: headers sent with every request, e.g. `Authorization = "Bearer ${TOKEN}"`. Names and
    /// values must be valid HTTP headers. An error on a `command` upstream.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(extend("default" = {}))]
    pub headers: IndexMap<String, String>,
    /// HTTP: `sse` is the legacy HTTP+SSE transport of protocol revision 2024-11-05: `url` is the
    /// event stream (usually ending in `/sse`), and messages are POSTed to the URI its first
    /// `endpoint` event names, which must be on the same origin (scheme, host, port) or the
    /// connection is refused. The `endpoint` event must arrive within 10 s (or `timeout`, if
    /// shorter). `headers` go on the stream request and on every POST. An error on a `command`
    /// upstream, even when set to its default.
    #[serde(default)]
    pub transport: HttpTransport,

    /// How this upstream's tools are presented: `progressive` (a minimal `tools/list`, full
    /// definitions on request, calls refused until the description was fetched) or `passthrough`
    /// (listed verbatim, never gated).
    #[serde(default)]
    pub mode: Mode,
    /// How client sessions map onto upstream sessions: `per_session` (each client session gets its
    /// own, for stdio its own child process, created on first use) or `shared` (one connection
    /// serves every session).
    #[serde(default)]
    pub sharing: Sharing,
    /// Tool (and prompt) name prefix, `[A-Za-z0-9_-]*`: names become `<prefix>__<name>`. Unset: the
    /// upstream name, applied only when more than one upstream is configured. Set explicitly:
    /// applied even with one upstream. `""` removes the prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// How long one request to this upstream may take; each progress notification of the request
    /// restarts it, so a long job that reports progress is not cut off. On timeout the upstream
    /// gets `notifications/cancelled` and the client `-32011`. Deadlines are checked every 50 ms,
    /// so a call is given up at most 50 ms late. Must be > 0.
    #[serde(default = "default_timeout", with = "humantime_serde")]
    #[schemars(with = "super::schema::DurationText")]
    pub timeout: Duration,
    /// Per-tool overrides, `[upstream.tools.<tool>]`, keyed by the upstream's own (unprefixed) tool
    /// name.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(extend("default" = {}))]
    pub tools: IndexMap<String, ToolOverride>,
    /// A directory of `<tool>.json` files (named by the upstream's own tool names) with extra
    /// material for the full descriptions. Must exist. Relative paths are relative to the config
    /// file's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub descriptions_dir: Option<PathBuf>,
    /// Largest message accepted from this upstream, in bytes (16 MiB by default): a stdout line (a
    /// longer one ends the connection), an HTTP response body or one SSE event (a larger one fails
    /// the call). At least `1024`.
    #[serde(default = "default_max_message_bytes")]
    #[schemars(range(min = super::validate::MIN_MESSAGE_BYTES))]
    pub max_message_bytes: usize,
    /// Give this upstream's per-session sessions the client's `roots`: declare the capability,
    /// relay its `roots/list` requests and `notifications/roots/list_changed`. Off by default: some
    /// servers (e.g. `@modelcontextprotocol/server-filesystem`) let the client's roots *replace*
    /// the directories their operator configured, so any client could widen the sandbox. Turn it on
    /// only for servers that use roots as hints.
    #[serde(default)]
    pub forward_roots: bool,
    /// stdio with `sharing = "per_session"`: most child processes serving sessions at once (the
    /// control connection's child is not counted). A session that finds every place taken waits up
    /// to `instance_wait`, then gets `-32013`; never an extra child. At least `1`.
    #[serde(default = "default_max_instances")]
    #[schemars(range(min = 1))]
    pub max_instances: usize,
    /// stdio with `sharing = "per_session"`: a session's child with no call for this long is
    /// stopped, freeing its place; the session gets a new child on its next call. Must be > 0.
    #[serde(default = "default_instance_idle_timeout", with = "humantime_serde")]
    #[schemars(with = "super::schema::DurationText")]
    pub instance_idle_timeout: Duration,
    /// stdio with `sharing = "per_session"`: how long a call waits for a free place when
    /// `max_instances` children run. `"0s"` fails at once.
    #[serde(default = "default_instance_wait", with = "humantime_serde")]
    #[schemars(with = "super::schema::DurationText")]
    pub instance_wait: Duration,
    /// The MCP era toolgate speaks to this upstream. `"auto"` probes with `server/discover`: a
    /// discover answer, or a `-32022` naming 2026-07-28 (then toolgate asks again at that version),
    /// makes it a sessionless 2026-07-28 upstream; any other answer (HTTP 400/404/405 without a
    /// modern JSON-RPC error, another JSON-RPC error; over stdio also silence for up to 10 s or the
    /// child exiting) falls back to `initialize`. The verdict is remembered for the upstream's
    /// other connections and probed afresh when its control connection restarts. `"2026-07-28"`
    /// refuses to fall back; `"2025-11-25"` never probes. Legacy HTTP+SSE upstreams (`transport =
    /// "sse"`) always `initialize`, and `"2026-07-28"` is an error there.
    #[serde(default)]
    pub protocol: UpstreamProtocol,
    /// How long telling this upstream that a call was abandoned (`notifications/cancelled`, after a
    /// timeout or the client's cancellation) may take; then toolgate gives up on it, so an upstream
    /// that never takes the notice holds neither the client nor shutdown. Must be > 0.
    #[serde(default = "default_cancel_timeout", with = "humantime_serde")]
    #[schemars(with = "super::schema::DurationText")]
    pub cancel_timeout: Duration,
    /// Concern values of every tool, prompt and resource of this upstream
    /// (declared `[[concerns]]` name → value); a tool's own entry wins, and
    /// the upstream's `_meta.concerns` on a primitive fills what neither
    /// sets. Default none.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(extend("default" = {}))]
    pub concerns: super::ConcernValues,
    /// Check the arguments of every call to this upstream's tools against the tool's full
    /// `inputSchema` before it goes upstream: an invalid call gets a tool error (`isError: true`,
    /// `INVALID_ARGUMENTS`) naming each failing argument, and never reaches the upstream. Unset:
    /// on for `progressive` upstreams, off for `passthrough` ones. `[upstream.tools.<tool>]` can
    /// set it per tool. A schema that does not compile is logged once and its tool is not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validate_arguments: Option<bool>,
    /// HTTP: what the upstream is shown of the client each call is for: a signed assertion, or a
    /// token from the client's identity provider (see `[upstream.identity]`). Unset: only
    /// `headers` (and the client's `upstream_headers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<super::UpstreamIdentity>,
    /// HTTP: `"oauth"` for an OAuth 2.1 protected upstream. Each authenticated client authorizes
    /// toolgate at its first call (a consent link, by URL elicitation where the client supports
    /// it), and its calls then carry its own access token. Lists come from `headers` (a service
    /// credential). See `[upstream.oauth]` and `[oauth]`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub auth: super::UpstreamAuth,
    /// `auth = "oauth"`: toolgate's client at the upstream's authorization server (all optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<super::UpstreamOAuth>,
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

impl UpstreamConfig {
    /// Whether calls to the upstream's tool `tool` (its own name) are checked against the tool's
    /// `inputSchema`: the tool's `validate_arguments`, else the upstream's, else on for
    /// progressive upstreams only.
    pub fn validates_arguments(&self, tool: &str) -> bool {
        self.tools
            .get(tool)
            .and_then(|t| t.validate_arguments)
            .or(self.validate_arguments)
            .unwrap_or(self.mode == Mode::Progressive)
    }
}

fn default_timeout() -> Duration {
    Duration::from_secs(60)
}

fn default_cancel_timeout() -> Duration {
    Duration::from_secs(5)
}

fn default_max_message_bytes() -> usize {
    16 * 1024 * 1024
}

fn default_max_instances() -> usize {
    32
}

fn default_instance_idle_timeout() -> Duration {
    Duration::from_secs(600)
}

fn default_instance_wait() -> Duration {
    Duration::from_secs(2)
}

/// Which HTTP transport an `url` upstream speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HttpTransport {
    /// Streamable HTTP (2025-03-26 and later).
    #[default]
    StreamableHttp,
    /// Legacy HTTP+SSE (2024-11-05).
    Sse,
}

/// `[[upstream]] protocol`: the MCP era toolgate speaks to an upstream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum UpstreamProtocol {
    /// Probe with `server/discover`; a discover answer or a recognized
    /// modern error means 2026-07-28, anything else falls back to `initialize`.
    #[default]
    #[serde(rename = "auto")]
    Auto,
    /// The sessionless 2026-07-28 revision only (no probe fallback).
    #[serde(rename = "2026-07-28")]
    Modern,
    /// The handshake era only: `initialize`, as before 2026-07-28.
    #[serde(rename = "2025-11-25")]
    Legacy,
}

/// How an upstream's tools are presented.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// A minimal `tools/list`, full definitions from the descriptions resource, calls refused until
    /// the description was fetched.
    #[default]
    Progressive,
    /// Tools listed verbatim, calls never gated.
    Passthrough,
}

/// How downstream sessions map onto upstream sessions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Sharing {
    /// Each downstream session gets its own upstream session (a child process
    /// for stdio), created on first use.
    #[default]
    PerSession,
    /// One upstream connection serves every session. Server-to-client
    /// requests (sampling, elicitation, roots) cannot be routed to one client
    /// over a shared stdio or legacy SSE connection, so they are not
    /// supported there.
    Shared,
}

/// `[upstream.tools.<tool>]`: overrides for one tool, keyed by the upstream's own (unprefixed) tool
/// name, which must not be empty. All keys are optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolOverride {
    /// Replaces the description shown in the minimal `tools/list`. Not empty. Unset: the upstream's
    /// description, shortened to `description_max_chars`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Usage examples added to the full description: any TOML value, usually an array.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub examples: Option<Value>,
    /// Usage notes added to the full description: any TOML value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_guidance: Option<Value>,
    /// What errors mean and how to recover, added to the full description: any TOML value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_guidance: Option<Value>,
    /// This tool's concern values (declared `[[concerns]]` name → value),
    /// over its upstream's. Default none.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(extend("default" = {}))]
    pub concerns: super::ConcernValues,
    /// Check this tool's call arguments against its full `inputSchema`, over the upstream's
    /// `validate_arguments`: `false` for a tool whose schema is wrong (it refuses calls the server
    /// would take). Unset: the upstream's setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validate_arguments: Option<bool>,
}
