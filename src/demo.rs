//! The MCP servers shipped with toolgate: the demo upstream and the test fixture.
//!
//! - [`server`]: a small MCP server framework (a registry of tools, resources
//!   and prompts, a transport-independent session engine, a stdio transport).
//! - [`tracker`]: the demo upstream behind `toolgate demo-upstream`, an
//!   in-memory project tracker and knowledge base with long, realistic tool
//!   definitions, so progressive disclosure has something to save.
//! - [`fixture`]: the conformance and integration-test fixture behind the
//!   `toolgate-fixture` binary.
//!
//! Both servers are offline and deterministic: no clock, no randomness, no
//! network; all state lives in memory for the life of the process.

pub mod fixture;
pub mod server;
pub mod tracker;

#[cfg(test)]
mod test_client;

/// Serves the demo tools over stdin/stdout until stdin closes.
pub async fn run_stdio() -> std::io::Result<()> {
    server::serve_stdio(tracker::registry()).await
}

/// Serves the demo tools over Streamable HTTP at `http://<listen>/mcp`.
pub async fn run_http(listen: std::net::SocketAddr) -> std::io::Result<()> {
    server::serve_http(tracker::registry(), listen, fixture::print_listening).await
}
