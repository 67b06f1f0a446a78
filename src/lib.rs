//! toolgate: a transparent MCP gateway that applies progressive disclosure to
//! tool definitions.
//!
//! The crate is laid out by responsibility:
//! - [`jsonrpc`] and [`protocol`]: envelopes, ids, error codes, revisions.
//! - [`config`]: the TOML model, loading and validation.
//! - [`catalog`]: the merged tool catalog (naming, minimal forms, extras).
//! - [`disclosure`]: the `tool_descriptions` resource, the gate's refusals,
//!   the `describe_tools` fallback tool.
//! - [`demo`]: the demo upstream shipped with toolgate.
//! - [`tokens`]: token measurement of catalogs (`toolgate tokens`).
//! - [`import`]: other clients' MCP server lists as toolgate TOML (`toolgate import`).

#![forbid(unsafe_code)]

pub mod catalog;
pub mod config;
pub mod demo;
pub mod disclosure;
pub mod gateway;
pub mod import;
pub mod jsonrpc;
pub mod protocol;
pub mod server;
pub mod tokens;
pub mod upstream;
