//! toolgate: a transparent MCP gateway that applies progressive disclosure to
//! tool definitions.
//!
//! The crate is laid out by responsibility:
//! - [`jsonrpc`] and [`protocol`]: envelopes, ids, error codes, revisions.
//! - [`config`]: the TOML model, loading and validation.
//! - [`auth`]: client authentication (API keys, JWT), per-client tool policy
//!   and limits.
//! - [`catalog`]: the merged tool catalog (naming, minimal forms, extras).
//! - [`disclosure`]: the `tool_descriptions` resource, the gate's refusals,
//!   the `describe_tools` fallback tool.
//! - [`demo`]: the demo upstream shipped with toolgate.
//! - [`tokens`]: token measurement of catalogs (`toolgate tokens`).

#![forbid(unsafe_code)]

pub mod auth;
pub mod catalog;
pub mod config;
pub mod demo;
pub mod disclosure;
pub mod gateway;
pub mod jsonrpc;
pub mod protocol;
pub mod server;
pub mod tokens;
pub mod upstream;
