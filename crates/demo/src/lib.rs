//! The demo upstream shipped with toolgate, and the small MCP server kit it
//! (and the conformance fixture, crate `toolgate-fixture`) is built with.
//!
//! - [`kit`]: a registry of tools, resources, resource templates, prompts
//!   and completions, served as an ordinary [`Handler`] on toolgate's MCP
//!   engine (`toolgate-mcp`), which owns the lifecycle and the transports.
//! - [`tracker`]: the demo upstream behind `toolgate demo-upstream`, an
//!   in-memory project tracker and knowledge base with long, realistic tool
//!   definitions, so progressive disclosure has something to save.
//!
//! The demo is offline and deterministic: no clock, no randomness, no
//! network; all state lives in memory for the life of the process.
//!
//! [`Handler`]: toolgate_mcp::server::Handler

#![forbid(unsafe_code)]

pub mod kit;
pub mod tracker;

/// Serves the demo tools over stdin/stdout until stdin closes.
pub async fn run_stdio() -> std::io::Result<()> {
    kit::serve_stdio(tracker::registry()).await
}

/// Serves the demo tools over Streamable HTTP (and legacy HTTP+SSE) at
/// `http://<listen>/mcp`, printing `LISTENING <url>` once it accepts
/// connections.
pub async fn run_http(listen: std::net::SocketAddr) -> std::io::Result<()> {
    kit::serve_http(tracker::registry(), listen, kit::print_listening).await
}
