//! A small MCP server kit: just enough to write the demo and the fixture.
//!
//! The kit is an application on toolgate's MCP engine, not a server of its
//! own: the engine (`toolgate_mcp::server`) answers `initialize` and `ping`,
//! negotiates the revision, runs the transports (stdio, Streamable HTTP,
//! legacy HTTP+SSE), tracks cancellation and routes the client's answers to
//! server-to-client requests. The kit supplies:
//! - [`Registry`]: what the server offers (tools, resources, resource
//!   templates, prompts, completions) and its identity. It knows nothing of
//!   sessions or transports.
//! - [`RegistryHandler`]: the engine's [`Handler`] for a registry: it answers
//!   the list, read, get, complete, subscribe and `logging/setLevel`
//!   requests, and runs tool handlers (cancelled with the request).
//! - [`RequestContext`]: what a running tool handler can do: report
//!   progress, log (filtered by the session's level), send notifications,
//!   and ask the client things (sampling, elicitation, roots).
//! - [`serve_stdio`], [`serve_http`]: a registry on the engine's transports.
//!
//! [`Handler`]: toolgate_mcp::server::Handler

mod args;
mod context;
mod envelope;
mod handler;
mod level;
mod listen;
mod registry;
pub mod result;
mod serve;

pub use args::Args;
pub use context::{RequestContext, RequestError};
pub use envelope::{CACHE_TTL_MS, Envelope};
pub use handler::{RegistryHandler, SessionState};
pub use level::LogLevel;
pub use registry::{
    CompletionFn, Prompt, PromptFn, ReadFn, Registry, Resource, ResourceTemplate, ServerInfo, Tool, ToolFailure,
    ToolResult,
};
pub use serve::{engine, print_listening, serve, serve_http, serve_stdio};

#[cfg(test)]
mod tests;
