//! The test and conformance fixture behind the `toolgate-fixture` binary.
//!
//! Three groups of features, each in its own file:
//! - [`conformance`]: what the official MCP conformance suite
//!   (`@modelcontextprotocol/conformance`) expects of its reference
//!   "everything" server (`examples/servers/typescript/everything-server.ts`),
//!   with the same names, arguments, contents and behaviour, so the suite can
//!   be run against toolgate with this fixture as the upstream.
//! - [`hooks`]: tools toolgate's own integration tests and benchmarks need
//!   (`echo`, `fixture_crash`, `fixture_sleep`, `fixture_whoami`, ...).
//! - [`synthetic`]: `--many-tools N` realistic filler tools for catalog-size
//!   benchmarks.

use std::sync::Arc;

use super::server::{Registry, ServerInfo, serve_stdio};

mod conformance;
mod hooks;
mod synthetic;

/// The serverInfo name of the conformance reference server.
pub const DEFAULT_NAME: &str = "mcp-conformance-test-server";

/// How to build the fixture.
#[derive(Clone)]
pub struct FixtureOptions {
    /// `serverInfo.name`.
    pub name: String,
    /// `instructions` in the initialize result.
    pub instructions: Option<String>,
    /// Page size for list results (`None`: everything in one page).
    pub tools_page_size: Option<usize>,
    /// How many synthetic tools to add.
    pub many_tools: usize,
    /// What `fixture_crash` does. The binary exits the process; tests replace
    /// it so they can call the tool without dying.
    pub crash: Arc<dyn Fn() + Send + Sync>,
}

impl Default for FixtureOptions {
    fn default() -> Self {
        Self {
            name: DEFAULT_NAME.to_owned(),
            instructions: None,
            tools_page_size: None,
            many_tools: 0,
            crash: Arc::new(|| std::process::exit(hooks::CRASH_EXIT_CODE)),
        }
    }
}

/// The fixture's registry.
pub fn registry(options: &FixtureOptions) -> Arc<Registry> {
    let mut info = ServerInfo::new(options.name.clone(), "1.0.0");
    info.instructions = options.instructions.clone();
    let registry = Registry::new(info).with_page_size(options.tools_page_size);
    let registry = conformance::register(registry);
    let registry = hooks::register(registry, options);
    Arc::new(synthetic::register(registry, options.many_tools))
}

/// Serves the fixture on stdin/stdout until stdin closes.
pub async fn run_stdio(options: &FixtureOptions) -> std::io::Result<()> {
    serve_stdio(registry(options)).await
}

/// Serves the fixture over Streamable HTTP at `http://<listen>/mcp`, printing
/// `LISTENING <url>` on stdout once it accepts connections.
pub async fn run_http(options: &FixtureOptions, listen: std::net::SocketAddr) -> std::io::Result<()> {
    super::server::serve_http(registry(options), listen, print_listening).await
}

/// The line test harnesses wait for.
pub fn print_listening(addr: std::net::SocketAddr) {
    use std::io::Write as _;
    let mut out = std::io::stdout();
    let _ = writeln!(out, "LISTENING http://{addr}/mcp");
    let _ = out.flush();
}

#[cfg(test)]
mod tests;
