//! `toolgate-fixture`: an MCP server over stdio for conformance runs and for
//! toolgate's integration tests and benchmarks. See `--help`.

use clap::Parser;
use toolgate::demo::fixture::{self, FixtureOptions};

const LONG_ABOUT: &str = "\
An MCP server over stdio (newline-delimited JSON-RPC on stdin/stdout, logs on stderr) used as an upstream in \
toolgate's tests.

It serves what the official MCP conformance suite expects of its reference \"everything\" server: tools test_* \
(text, image, audio, embedded resource, mixed content, logging, progress, errors, sampling, elicitation, \
SEP-1034 defaults, SEP-1330 enums, JSON Schema 2020-12, slow/fast tools for cancellation, dynamic tools), \
resources test://static-text, test://static-binary, test://watched-resource and the template \
test://template/{id}/data, prompts test_simple_prompt, test_prompt_with_arguments, \
test_prompt_with_embedded_resource, test_prompt_with_image, completions and logging/setLevel.

Test hooks: echo (returns `text` verbatim), fixture_crash (exits with code 3 mid-request), fixture_sleep (`ms`, \
progress, cancellable), fixture_whoami (pid and call counter), fixture_roots (asks the client for roots/list), \
fixture_notify_list_changed (adds a tool, sends tools/list_changed), fixture_update_resource (sends \
resources/updated), fixture_rich_definition (a definition full of unknown and newer fields).

Set RUST_LOG (e.g. RUST_LOG=debug) for more logging on stderr.";

#[derive(Parser)]
#[command(name = "toolgate-fixture", version, about = "MCP conformance and test fixture server (stdio)", long_about = LONG_ABOUT)]
struct Cli {
    /// Split tools/list (and the other lists) into pages of N items, to test cursor following.
    #[arg(long, value_name = "N")]
    tools_page_size: Option<usize>,
    /// Add N synthetic tools with realistic descriptions (for large-catalog benchmarks).
    #[arg(long, value_name = "N", default_value_t = 0)]
    many_tools: usize,
    /// The serverInfo name to report.
    #[arg(long, value_name = "NAME", default_value = fixture::DEFAULT_NAME)]
    name: String,
    /// The instructions to return from initialize.
    #[arg(long, value_name = "TEXT")]
    instructions: Option<String>,
    /// Serve Streamable HTTP on this address (e.g. 127.0.0.1:0) instead of
    /// stdio; prints `LISTENING http://ADDR/mcp` once it accepts connections.
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let options = FixtureOptions {
        name: cli.name,
        instructions: cli.instructions,
        tools_page_size: cli.tools_page_size,
        many_tools: cli.many_tools,
        ..FixtureOptions::default()
    };
    match cli.http {
        Some(addr) => fixture::run_http(&options, addr).await?,
        None => fixture::run_stdio(&options).await?,
    }
    Ok(())
}
