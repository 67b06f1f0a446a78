//! toolgate: a transparent MCP gateway that applies progressive disclosure to
//! tool definitions.
//!
//! The crate is laid out by responsibility (the book's Architecture chapter,
//! `docs/src/architecture.md`, places each module in the house):
//! - [`gateway`]: the MCP application the server engine calls: each request
//!   resolved once, its layers (client policy, concerns, the search listing,
//!   progressive disclosure) and the forwarder to the upstreams, upstream
//!   supervision, hot reload, and sessions shared across replicas.
//! - [`jsonrpc`], [`protocol`], [`server`] and [`upstream`]: re-exported
//!   from the `toolgate-mcp` engine crate (envelopes, revisions, the server
//!   engine and its downstream transports, and the client of upstream
//!   servers, `toolgate_mcp::client`).
//! - [`config`]: the TOML model, loading, validation and its JSON Schema.
//! - [`audit`]: the audit trail (`[audit]`): which definition a model was
//!   shown, what it called, what was refused, written off the call path.
//! - [`auth`]: client authentication (API keys, JWT), per-client tool policy
//!   and limits.
//! - [`budgets`]: per-tool budgets (`[[limits]]`, the write-tool default,
//!   the identical-call breaker), in this process or shared in Redis.
//! - [`catalog`]: the merged tool catalog (naming, minimal forms, full
//!   definitions, argument checks).
//! - [`disclosure`]: the `tool_descriptions` resource, the gate's refusals,
//!   the `describe_tools` fallback tool.
//! - [`identity`]: what a connection made for one client presents to an
//!   upstream: signed identity assertions (and their JWK Set), tokens
//!   exchanged at the client's identity provider, sealed in Redis.
//! - [`oauth`]: OAuth toward protected upstreams: consent per user and
//!   upstream at first use, the public consent routes, users' tokens kept
//!   (sealed in Redis) and refreshed.
//! - [`grants`]: description grants, the tools a client may call, per
//!   session or in a store (memory or Redis) for sessionless clients.
//! - [`concerns`]: concern-based filtering (declarations, primitives'
//!   values, clients' configurations).
//! - [`mrtr`]: multi-round-trip translation for 2026-07-28 clients of
//!   handshake-era upstreams (the signed `requestState`, the held calls).
//! - [`shared`]: the state replicas share through Redis (the connection,
//!   session records, messages between replicas).
//! - [`metrics`]: the Prometheus series and `GET /metrics`.
//! - [`telemetry`]: logging, OpenTelemetry traces and W3C trace context.
//! - [`tokens`]: token measurement of catalogs (`toolgate tokens`,
//!   `toolgate forms`).
//! - [`lock`]: approved tool definitions: the lockfile, drift from it, and
//!   what is served under `on_drift`.
//! - [`import`]: other clients' MCP server lists as toolgate TOML (`toolgate import`).
//!
//! The `toolgate` binary (`src/main.rs`) is the command line over them, with
//! the global allocator of `crates/alloc` (`toolgate-alloc`).

#![forbid(unsafe_code)]

pub mod audit;
pub mod auth;
pub mod budgets;
pub mod catalog;
pub mod concerns;
pub mod config;
pub mod disclosure;
pub mod gateway;
pub mod grants;
pub mod identity;
pub mod import;
pub mod lock;
pub mod metrics;
pub mod mrtr;
pub mod oauth;
pub mod shared;
pub mod telemetry;
pub mod tokens;

pub use toolgate_mcp::client as upstream;
pub(crate) use toolgate_mcp::spawn;
pub use toolgate_mcp::{jsonrpc, protocol, server};
