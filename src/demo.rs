//! The demo upstream: a small MCP server over stdio with realistic tools.

/// Serves the demo tools over stdin/stdout until stdin closes.
pub async fn run_stdio() -> std::io::Result<()> {
    Ok(())
}
