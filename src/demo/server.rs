//! A small MCP server framework: just enough to serve the demo and the fixture.
//!
//! It is split so another transport (Streamable HTTP) can reuse everything
//! but the framing:
//! - [`Registry`] holds what the server offers (tools, resources, resource
//!   templates, prompts, completions) and its identity. It knows nothing of
//!   sessions or transports.
//! - [`Session`] is the protocol engine for one client: it takes decoded
//!   [`Message`](crate::jsonrpc::Message)s, answers them, runs tool handlers
//!   concurrently, tracks the log level, cancellation and the server's own
//!   requests to the client. Everything it sends comes out of one channel as
//!   [`Outgoing`] messages, each tagged with the client request it relates to
//!   (what a Streamable HTTP transport needs to pick the right stream).
//! - [`serve`] / [`serve_stdio`] is the stdio transport: newline-delimited
//!   JSON-RPC, logs only on stderr.
//! - [`serve_http`] serves a registry over Streamable HTTP through
//!   toolgate's own server engine.
//!
//! Tool handlers get a [`RequestContext`] to report progress, log, send
//! notifications, and ask the client things (sampling, elicitation, roots).

mod args;
mod context;
mod http;
mod level;
mod registry;
pub mod result;
mod session;
mod stdio;
mod uri_template;

pub use args::Args;
pub use context::{RequestContext, RequestError};
pub use http::{RegistryHandler, serve_http};
pub use level::LogLevel;
pub use registry::{
    CompletionFn, Prompt, PromptFn, ReadFn, Registry, Resource, ResourceTemplate, ServerInfo, Tool, ToolFailure,
    ToolResult,
};
pub use session::{Outgoing, Session};
pub use stdio::{ServeOptions, serve, serve_stdio};
pub use uri_template::UriTemplate;

#[cfg(test)]
mod tests;
