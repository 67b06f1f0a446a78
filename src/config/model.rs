//! The configuration model: what users write in `toolgate.toml`.
//!
//! Every struct denies unknown keys so that a typo fails loudly at startup
//! instead of being silently ignored. Field docs give the TOML key's meaning
//! and default; the rules each value must follow are checked by
//! [`Config::validate`] (see `validate.rs`), and [`load`](super::load())
//! resolves relative paths against the config file's directory.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The whole configuration file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    pub concerns: Vec<super::ConcernConfig>,
}

/// `[server]`: the downstream listener.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Address to listen on. Default `127.0.0.1:8080`; port `0` picks a free port.
    /// Overridable as `TOOLGATE_SERVER__LISTEN`.
    pub listen: SocketAddr,
    /// Path of the Streamable HTTP endpoint; starts with `/`. Default `/mcp`.
    pub path: String,
    /// `Host` header values accepted (DNS-rebinding protection), as `host` or
    /// `host:port`. Empty (the default) accepts the loopback names
    /// `localhost`, `127.0.0.1` and `[::1]` on any port. `"*"` accepts any host.
    pub allowed_hosts: Vec<String>,
    /// `Origin` header values accepted, e.g. `https://app.example.com`. Requests
    /// without `Origin` are always accepted. Empty (the default) accepts
    /// `http(s)://` origins on the loopback names. `"*"` accepts any origin.
    pub allowed_origins: Vec<String>,
    /// A downstream session with no traffic for this long is closed and its
    /// upstream sessions released. Default `1h`; must be > 0.
    #[serde(with = "humantime_serde")]
    pub session_idle_timeout: Duration,
    /// Largest request body accepted, in bytes. Default 4 MiB; at least 1024.
    pub max_body_bytes: usize,
    /// How long requests that need the tool catalog (`initialize`,
    /// `tools/list`) wait for upstreams that are still starting. Default `30s`;
    /// must be > 0.
    #[serde(with = "humantime_serde")]
    pub startup_timeout: Duration,
    /// Interval of SSE keep-alive comments. Default `15s`; must be > 0.
    #[serde(with = "humantime_serde")]
    pub sse_keep_alive: Duration,
    /// Also serve the legacy HTTP+SSE transport (MCP 2024-11-05) for old
    /// clients: `GET /sse` opens the stream, `POST /messages?sessionId=…`
    /// carries client messages. Default `true`.
    pub legacy_sse: bool,
    /// Page size of `tools/list`, `resources/list`, `resources/templates/list`
    /// and `prompts/list` answers. `0` (the default) serves each list whole,
    /// in one page, which suits clients that never follow `nextCursor`.
    pub page_size: usize,
    /// How long a request head may take to arrive, from its first byte (from
    /// the connection's opening for its first request). Default `10s`; > 0.
    #[serde(with = "humantime_serde")]
    pub header_read_timeout: Duration,
    /// How long a request body may take to arrive, in total (408 after it).
    /// Default `30s`; > 0.
    #[serde(with = "humantime_serde")]
    pub body_read_timeout: Duration,
    /// How long a connection with no request in progress stays open (HTTP/1
    /// keep-alive, HTTP/2 with no stream). Default `60s`; > 0.
    #[serde(with = "humantime_serde")]
    pub keep_alive_timeout: Duration,
    /// Most HTTP connections open at once; more are closed as soon as they
    /// are accepted. Default 4096; at least 1.
    pub max_connections: usize,
    /// Most client sessions alive at once, over every transport; the next
    /// `initialize` gets HTTP 429 and a JSON-RPC error. Default 10000; at least 1.
    pub max_sessions: usize,
    /// Most requests one session may have in flight (each element of a batch
    /// counts); more are answered at once with a JSON-RPC error. Default 64;
    /// at least 1.
    pub max_requests_per_session: usize,
    /// Most notifications (progress, log messages) queued for one response
    /// stream of a client that reads slowly; past it they are dropped.
    /// Responses are never dropped. Default 256; at least 1.
    pub stream_buffer: usize,
    /// On SIGTERM or SIGINT, how long requests in progress may take to
    /// finish before sessions end and upstreams are stopped. Default `10s`.
    #[serde(with = "humantime_serde")]
    pub shutdown_grace: Duration,
    /// Threads of the async runtime that serves clients and upstreams. `0`
    /// (the default): one per CPU the process may run on (or
    /// `TOKIO_WORKER_THREADS`). Fewer threads than CPUs leave CPU to
    /// upstreams running beside toolgate and cost less per call: a call then
    /// crosses fewer threads. Read at start only.
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
            keep_alive_timeout: Duration::from_secs(60),
            max_connections: 4096,
            max_sessions: 10_000,
            max_requests_per_session: 64,
            stream_buffer: 256,
            shutdown_grace: Duration::from_secs(10),
            worker_threads: 0,
        }
    }
}

/// `[disclosure]`: how the minimal tool list and the descriptions resource look.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DisclosureConfig {
    /// Longest minimal description, in characters. Default 160; at least 20.
    pub description_max_chars: usize,
    /// Offer the synthesized `describe_tools` tool for clients that cannot read
    /// resources. Default `true`.
    pub describe_tool: bool,
    /// Name of that tool, `^[A-Za-z0-9_-]{1,64}$`. Default `describe_tools`.
    pub describe_tool_name: String,
    /// Most tool names one description fetch (`resources/read` of the
    /// descriptions resource, or a `describe_tools` call) may name; more get
    /// an error. Default 64; at least 1.
    pub max_tools_per_fetch: usize,
    /// Largest answer of a description fetch, in bytes: definitions that do
    /// not fit are left out (and not authorized), with an entry saying to
    /// fetch them separately. Default 1 MiB; at least 65536.
    pub max_answer_bytes: usize,
    /// Memory for rendered description answers kept for repeated fetches,
    /// in bytes. Default 16 MiB; `0` keeps none.
    pub cache_bytes: u64,
    /// How long a sessionless client's grant (a fetched description that lets
    /// it call the tool) lasts after it was given or last used: each call
    /// through the gate and each fetch of the description starts it again.
    /// Session-based clients keep their grants for their session instead.
    /// Default `1h`; must be > 0.
    #[serde(with = "humantime_serde")]
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
    pub search_above: usize,
    /// Name of the synthesized search tool, `^[A-Za-z0-9_-]{1,64}$`, not the
    /// describe tool's. Default `search_tools`.
    pub search_tool_name: String,
}

/// `[disclosure] listing`: what `tools/list` shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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
        }
    }
}

impl DisclosureConfig {
    /// Whether a client may be shown the search listing.
    pub fn may_search(&self) -> bool {
        self.listing != Listing::All
    }
}

/// `[[upstream]]`: one upstream MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    /// Unique name, `[a-z0-9_-]+`; the default tool-name prefix. Required.
    pub name: String,

    /// stdio: the program to run (looked up on `PATH`). Exactly one of
    /// `command` and `url` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// stdio: its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// stdio: extra environment variables.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub env: IndexMap<String, String>,
    /// stdio: pass toolgate's whole environment to the child. Default `false`:
    /// only `HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER`, `LANG`,
    /// `LC_ALL`, `TMPDIR` and `TZ` are passed, plus `env`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inherit_env: bool,
    /// stdio: working directory; must exist. After [`load`](super::load()) it is
    /// absolute (a relative path is taken from the config file's directory).
    /// Default: toolgate's working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,

    /// HTTP: the endpoint URL, `http://` or `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP: headers sent on every request (e.g. `Authorization`).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    /// HTTP: `streamable_http` (default) or `sse` (legacy HTTP+SSE, 2024-11-05).
    /// [`UpstreamConfig::target`] resolves `command`/`url`/`transport` into one.
    #[serde(default)]
    pub transport: HttpTransport,

    /// `progressive` (default) or `passthrough`.
    #[serde(default)]
    pub mode: Mode,
    /// `per_session` (default) or `shared`.
    #[serde(default)]
    pub sharing: Sharing,
    /// Tool and prompt name prefix, `[A-Za-z0-9_-]*`: names become
    /// `<prefix>__<name>`. Unset: the upstream name, applied only when more
    /// than one upstream is configured. Set explicitly: applied even with one
    /// upstream. `""` removes the prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// How long a request to this upstream may take; each progress
    /// notification restarts the clock. Default `60s`; must be > 0.
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
    /// Per-tool overrides, keyed by the upstream's own (unprefixed) tool name.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub tools: IndexMap<String, ToolOverride>,
    /// A folder of `<tool>.json` files with extras for the full descriptions;
    /// must exist. Absolute after [`load`](super::load()), like `cwd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub descriptions_dir: Option<PathBuf>,
    /// Largest message accepted from this upstream, in bytes (a stdout line,
    /// an HTTP response body, one SSE event). A larger one fails the call
    /// (stdio: ends the connection). Default 16 MiB; at least 1024.
    #[serde(default = "default_max_message_bytes")]
    pub max_message_bytes: usize,
    /// Declare the client's `roots` capability to this upstream's
    /// per-session sessions, so the upstream can ask the client for its
    /// roots. Default `false`: some servers (e.g. the reference filesystem
    /// server) let client roots replace their configured directories.
    #[serde(default)]
    pub forward_roots: bool,
    /// stdio, `per_session`: most child processes serving sessions at once
    /// (the control connection's child is not counted). Default 32; at least 1.
    #[serde(default = "default_max_instances")]
    pub max_instances: usize,
    /// stdio, `per_session`: a session's child with no call for this long is
    /// stopped, freeing its place (the session gets a new one on its next
    /// call). Default `10m`; > 0.
    #[serde(default = "default_instance_idle_timeout", with = "humantime_serde")]
    pub instance_idle_timeout: Duration,
    /// stdio, `per_session`: how long a call waits for a free place when
    /// `max_instances` children run; then it fails with `-32013`. Default
    /// `2s`; `0s` fails at once.
    #[serde(default = "default_instance_wait", with = "humantime_serde")]
    pub instance_wait: Duration,
    /// Which MCP era toolgate speaks to this upstream: `auto` (default:
    /// probe with `server/discover`, fall back to `initialize`),
    /// `2026-07-28` (sessionless only) or `2025-11-25` (`initialize` only).
    #[serde(default)]
    pub protocol: UpstreamProtocol,
    /// How long telling this upstream that a call was abandoned
    /// (`notifications/cancelled`) may take before toolgate gives up on it.
    /// Default `5s`; > 0.
    #[serde(default = "default_cancel_timeout", with = "humantime_serde")]
    pub cancel_timeout: Duration,
    /// Concern values of every tool, prompt and resource of this upstream
    /// (declared `[[concerns]]` name → value); a tool's own entry wins, and
    /// the upstream's `_meta.concerns` on a primitive fills what neither
    /// sets. Default none.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub concerns: super::ConcernValues,
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HttpTransport {
    /// Streamable HTTP (2025-03-26 and later).
    #[default]
    StreamableHttp,
    /// Legacy HTTP+SSE (2024-11-05).
    Sse,
}

/// `[[upstream]] protocol`: the MCP era toolgate speaks to an upstream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Minimal `tools/list`, full definitions from the resource, calls gated.
    #[default]
    Progressive,
    /// Full `tools/list`, no gate.
    Passthrough,
}

/// How downstream sessions map onto upstream sessions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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

/// `[upstream.tools.<tool>]`: overrides for one tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolOverride {
    /// The minimal description shown in `tools/list`; not empty. Default: the
    /// upstream's description, shortened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Usage examples added to the full description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub examples: Option<Value>,
    /// Usage notes added to the full description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_guidance: Option<Value>,
    /// Error documentation added to the full description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_guidance: Option<Value>,
    /// This tool's concern values (declared `[[concerns]]` name → value),
    /// over its upstream's. Default none.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub concerns: super::ConcernValues,
}
