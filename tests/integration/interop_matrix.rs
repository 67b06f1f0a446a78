//! Interoperability matrix: real client stacks (the Python SDK, the
//! TypeScript SDK, the MCP Inspector) over each downstream transport
//! (Streamable HTTP, legacy HTTP+SSE, stdio) in front of real public servers
//! (`@modelcontextprotocol/server-everything` over stdio and Streamable HTTP,
//! `mcp-server-time` over stdio). Every test runs the whole disclosure
//! workflow against one upstream and a plain passthrough call against another
//! (see `workflow`). Each upstream is in each mode somewhere in the matrix.
//! `era2026` holds the 2026-07-28 rows.

pub(crate) mod clients;
mod era2026;
pub(crate) mod peers;
mod workflow;

use std::path::Path;

use anyhow::{Context as _, Result, ensure};
use serde_json::json;

use clients::{Endpoint, Gateway, Outcome, Stack, Transport, inspector_cli};
use peers::Upstream;
use workflow::Scenario;

/// Concerns toolgate declares in every row, so every client stack meets
/// `capabilities.concerns` in the `initialize` result (an extension key the
/// SDKs must tolerate) and the workflow runs with them declared.
const CONCERNS: &str = "[[concerns]]\nname = \"security\"\ndescription = \"Security level required\"\n\
                        values = [\"high\", \"medium\", \"low\"]\ndefault = \"medium\"\n\n";

/// Runs `scenario` with `stack` over `transport`.
async fn run(stack: Stack, transport: Transport, scenario: Scenario) -> Result<()> {
    let (first, _first_server) = scenario.progressive.start("progressive").await?;
    let (second, _second_server) = scenario.passthrough.start("passthrough").await?;
    let gateway = Gateway::start(transport, &format!("{CONCERNS}{first}{second}")).await?;
    let endpoint = gateway.endpoint(transport);
    let report = stack.run(&endpoint, transport, &scenario.script()).await;
    let tail = || {
        let logs = gateway.logs();
        let lines: Vec<&str> = logs.lines().collect();
        let tail = lines[lines.len().saturating_sub(30)..].join("\n");
        format!("{stack:?} over {transport:?}; toolgate's last log lines:\n{tail}")
    };
    let report = report.with_context(tail)?;
    scenario.check(&report).with_context(|| format!("report: {report}\n{}", tail()))
}

// The Python SDK (mcp 2.3.0, tests/python/client_probe.py).

#[tokio::test]
async fn python_sdk_over_streamable_http() -> Result<()> {
    run(Stack::Python, Transport::Http, Scenario::full(Upstream::EverythingStdio, Upstream::Time)).await
}

#[tokio::test]
async fn python_sdk_over_legacy_sse() -> Result<()> {
    run(Stack::Python, Transport::Sse, Scenario::full(Upstream::Time, Upstream::EverythingHttp)).await
}

#[tokio::test]
async fn python_sdk_over_stdio() -> Result<()> {
    run(Stack::Python, Transport::Stdio, Scenario::full(Upstream::EverythingHttp, Upstream::EverythingStdio)).await
}

// The TypeScript SDK (@modelcontextprotocol/sdk, tests/node/client_probe.mjs).

#[tokio::test]
async fn typescript_sdk_over_streamable_http() -> Result<()> {
    run(Stack::TypeScript, Transport::Http, Scenario::full(Upstream::EverythingHttp, Upstream::Time)).await
}

#[tokio::test]
async fn typescript_sdk_over_legacy_sse() -> Result<()> {
    run(Stack::TypeScript, Transport::Sse, Scenario::full(Upstream::EverythingStdio, Upstream::EverythingHttp)).await
}

#[tokio::test]
async fn typescript_sdk_over_stdio() -> Result<()> {
    run(Stack::TypeScript, Transport::Stdio, Scenario::full(Upstream::Time, Upstream::EverythingStdio)).await
}

// The MCP Inspector (v2, `mcpdo`: one session held across commands; every
// command is a Node process, so the core scenario).

#[tokio::test]
async fn inspector_over_streamable_http() -> Result<()> {
    run(Stack::Inspector, Transport::Http, Scenario::core(Upstream::Time, Upstream::EverythingStdio)).await
}

#[tokio::test]
async fn inspector_over_legacy_sse() -> Result<()> {
    run(Stack::Inspector, Transport::Sse, Scenario::core(Upstream::EverythingHttp, Upstream::EverythingStdio)).await
}

#[tokio::test]
async fn inspector_over_stdio() -> Result<()> {
    run(Stack::Inspector, Transport::Stdio, Scenario::core(Upstream::EverythingStdio, Upstream::EverythingHttp)).await
}

/// One `inspector --cli` call to `gateway` over `transport`.
async fn one_shot(home: &Path, gateway: &Gateway, transport: Transport, method: &[&str]) -> Result<Outcome> {
    let mut args: Vec<String> = method.iter().map(|a| (*a).to_owned()).collect();
    args.extend(["--transport".to_owned(), transport.flag().to_owned()]);
    // The target goes last: after `--` everything is the stdio command.
    match gateway.endpoint(transport) {
        Endpoint::Url(url) => args.extend(["--server-url".to_owned(), url]),
        Endpoint::Command(argv) => {
            args.push("--".into());
            args.extend(argv);
        }
    }
    inspector_cli(home, &args.iter().map(String::as_str).collect::<Vec<_>>()).await
}

/// `inspector --cli` makes one call per process (a new session each time):
/// over each transport it sees the minimal list, is refused before fetching,
/// gets full definitions from describe_tools, and passthrough results.
#[tokio::test]
async fn inspector_cli_one_shot_calls() -> Result<()> {
    // No Python upstream here: each one-shot session would start its own.
    let (progressive, passthrough) = (Upstream::EverythingStdio, Upstream::EverythingHttp);
    let (first, _a) = progressive.start("progressive").await?;
    let (second, _b) = passthrough.start("passthrough").await?;
    let upstreams = format!("{first}{second}");
    let served = Gateway::start(Transport::Http, &upstreams).await?;
    let stdio = Gateway::start(Transport::Stdio, &upstreams).await?;
    let home = tempfile::tempdir()?;
    let (a, c) = (progressive.first(), passthrough.first());
    let (a_name, c_name) = (workflow::exposed(progressive, a.tool), workflow::exposed(passthrough, c.tool));

    // Streamable HTTP: the minimal list, and a refused call (exit 5: a tool error).
    let listed = one_shot(home.path(), &served, Transport::Http, &["--method", "tools/list"]).await?;
    ensure!(listed.code == 0, "tools/list exit {}: {}", listed.code, listed.stderr);
    let tools = listed.json()?["result"]["tools"].as_array().cloned().unwrap_or_default();
    let minimal = tools.iter().find(|t| t["name"] == a_name).with_context(|| format!("{a_name} listed"))?;
    ensure!(minimal["inputSchema"] == json!({"type": "object"}), "{minimal}");
    let verbatim = tools.iter().find(|t| t["name"] == c_name).with_context(|| format!("{c_name} listed"))?;
    for param in c.params {
        ensure!(verbatim["inputSchema"]["properties"][param].is_object(), "{verbatim}");
    }
    let args = a.arguments.to_string();
    let call = ["--method", "tools/call", "--tool-name", &a_name, "--tool-args-json", &args];
    let refused = one_shot(home.path(), &served, Transport::Http, &call).await?;
    ensure!(refused.code == 5, "refused call exit {}: {} {}", refused.code, refused.stdout, refused.stderr);
    let text = refused.json()?["result"]["content"][0]["text"].as_str().unwrap_or("").to_owned();
    ensure!(text.contains("TOOL_DESCRIPTION_REQUIRED"), "{text}");

    // Legacy SSE: a passthrough call needs no fetching.
    let args = c.arguments.to_string();
    let call = ["--method", "tools/call", "--tool-name", &c_name, "--tool-args-json", &args];
    let direct = one_shot(home.path(), &served, Transport::Sse, &call).await?;
    ensure!(direct.code == 0, "passthrough exit {}: {}", direct.code, direct.stderr);
    (c.check)(&direct.json()?["result"])?;

    // stdio: describe_tools returns the full definition.
    let args = json!({"tools": [a_name]}).to_string();
    let call = ["--method", "tools/call", "--tool-name", "describe_tools", "--tool-args-json", &args];
    let described = one_shot(home.path(), &stdio, Transport::Stdio, &call).await?;
    ensure!(described.code == 0, "describe_tools exit {}: {}", described.code, described.stderr);
    let body: serde_json::Value =
        serde_json::from_str(described.json()?["result"]["content"][0]["text"].as_str().unwrap_or(""))?;
    ensure!(body[&a_name]["inputSchema"]["properties"]["message"]["description"].is_string(), "{body}");
    Ok(())
}
