//! toolgate: a transparent MCP gateway that applies progressive disclosure to
//! tool definitions.
//!
//! The crate is laid out by responsibility:
//! - [`jsonrpc`], [`protocol`], [`server`] and [`upstream`]: re-exported
//!   from the `toolgate-mcp` engine crate (envelopes, revisions, the server
//!   engine and its downstream transports, and the client of upstream
//!   servers, `toolgate_mcp::client`).
//! - [`config`]: the TOML model, loading and validation.
//! - [`auth`]: client authentication (API keys, JWT), per-client tool policy
//!   and limits.
//! - [`catalog`]: the merged tool catalog (naming, minimal forms, extras).
//! - [`concerns`]: concern-based filtering (declarations, primitives'
//!   values, clients' configurations).
//! - [`disclosure`]: the `tool_descriptions` resource, the gate's refusals,
//!   the `describe_tools` fallback tool.
//! - [`tokens`]: token measurement of catalogs (`toolgate tokens`).
//! - [`import`]: other clients' MCP server lists as toolgate TOML (`toolgate import`).
//! - [`metrics`]: the Prometheus series and `GET /metrics`.
//! - [`grants`] and [`shared`]: description grants, and the state replicas
//!   share through Redis (sessions, messages between replicas).
//! - [`telemetry`]: logging, OpenTelemetry traces and W3C trace context.

#![forbid(unsafe_code)]

pub mod auth;
pub mod catalog;
pub mod concerns;
pub mod config;
pub mod disclosure;
pub mod gateway;
pub mod grants;
pub mod import;
pub mod metrics;
pub mod mrtr;
pub mod shared;
pub mod telemetry;
pub mod tokens;

pub use toolgate_mcp::client as upstream;
pub(crate) use toolgate_mcp::spawn;
pub use toolgate_mcp::{jsonrpc, protocol, server};
