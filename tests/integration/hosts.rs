//! Real hosts in front of the search listing (issue 38). A host (Claude Code,
//! Codex, Cursor, an agent SDK) declares to its model exactly the tools of
//! `tools/list` and refuses a call of any other name, so with `[disclosure]
//! listing = "search"` every tool the model finds is reached through the
//! call tool. SDK clients call any name and so cannot show this; these tests
//! run a host's own tool loop with a scripted model:
//!
//! - pydantic-ai's `Agent` with `FunctionModel` (tests/python/host_loop.py),
//!   whose tool manager refuses unlisted names itself, in both eras: the
//!   FastMCP client told `legacy` (the `initialize` handshake, 2025-11-25)
//!   or left at its default `auto` (2026-07-28 after `server/discover`);
//! - a host loop on the TypeScript SDK v2 pinned to 2026-07-28
//!   (tests/node/host_loop_v2.mjs), which calls only names from its
//!   `listTools()`;
//!
//! over Streamable HTTP and over `toolgate stdio`, in front of three real
//! servers: `@modelcontextprotocol/server-everything`, `mcp-server-time`
//! and the project's fixture, all over stdio. The model searches for each
//! task, fetches every tool found, tries one found name directly (the host
//! refuses it, nothing is sent) and calls every found tool through
//! `call_tool` with arguments built from the fetched schema. Each test
//! checks the host's report: every tool found was described and called
//! with the upstream's answer (the real result of the tools whose answers
//! are known), the direct name refused by the host, nothing unlisted sent;
//! over HTTP also `/metrics`: every forwarded `tools/call` was routed.

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, ensure};
use serde_json::{Value, json};
use tokio::process::Command;

use crate::common::*;
use crate::interop_matrix::peers::{everything_js, node22};
use crate::metrics::{Scrape, scrape};

/// How long one host run may take (Python imports pydantic-ai, toolgate
/// starts three upstreams).
const HOST_TIMEOUT: Duration = Duration::from_secs(120);

/// The message the echo tools are asked to repeat.
const MESSAGE: &str = "hello from a host";

const SEARCH_LISTING: &str = "[disclosure]\nlisting = \"search\"\n";

/// The listing a host sees: the three tools toolgate synthesizes, no pinned ones.
const LISTED: [&str; 3] = ["call_tool", "describe_tools", "search_tools"];

/// The real servers toolgate is in front of, all over stdio.
fn upstreams() -> String {
    format!(
        "{}{}{}",
        stdio_upstream("everything", "node", &[&everything_js(), "stdio"], ""),
        stdio_upstream("time", &python(), &["-m", "mcp_server_time", "--local-timezone", "UTC"], ""),
        fixture_upstream("fixture", &[], ""),
    )
}

/// The user's tasks: a query each, how many results to take, and the values
/// the task gives for parameters of those names. Chosen so the tools found
/// run without a human (no elicitation, sampling, long sleeps or crashes).
fn tasks() -> Value {
    json!([
        {"query": "echo my text back", "limit": 3, "values": {"message": MESSAGE, "text": MESSAGE}},
        {"query": "what is the current time in a timezone", "limit": 2,
         "values": {"timezone": "UTC", "source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}},
        {"query": "sum of two numbers", "limit": 1, "values": {"a": 2, "b": 3}},
        {"query": "get a tiny image", "limit": 2},
        {"query": "an embedded resource", "limit": 3},
        {"query": "test error handling", "limit": 1},
    ])
}

/// A host under test.
#[derive(Debug, Clone, Copy)]
enum Host {
    /// pydantic-ai with this FastMCP client mode (`legacy`, `auto`).
    PydanticAi(&'static str),
    /// The TypeScript SDK v2 host loop, pinned to 2026-07-28.
    TypeScriptV2,
}

/// Where the host finds toolgate.
enum Endpoint {
    Url(String),
    /// `toolgate stdio --config PATH`, launched by the host.
    Stdio(std::path::PathBuf),
}

impl Host {
    /// Runs the host with the tasks; returns its report.
    async fn run(self, endpoint: &Endpoint) -> Result<Value> {
        let mut command = match self {
            Host::PydanticAi(mode) => {
                let mut c = Command::new(python());
                c.arg(repo_path("tests/python/host_loop.py")).args(["--mode", mode]);
                c
            }
            Host::TypeScriptV2 => {
                let mut c = Command::new(node22());
                c.arg(repo_path("tests/node/host_loop_v2.mjs")).args(["--mode", "2026-07-28"]);
                c
            }
        };
        match endpoint {
            Endpoint::Url(url) => command.args(["--transport", "http", "--url", url]),
            Endpoint::Stdio(config) => {
                let argv = json!([toolgate_exe(), "stdio", "--config", config.display().to_string()]);
                command.args(["--transport", "stdio", "--command", &argv.to_string()])
            }
        };
        command.arg(tasks().to_string()).stdin(Stdio::null()).kill_on_drop(true);
        let output = tokio::time::timeout(HOST_TIMEOUT, command.output())
            .await
            .map_err(|_| anyhow!("{self:?} did not finish within {HOST_TIMEOUT:?}"))??;
        let stderr = String::from_utf8_lossy(&output.stderr);
        ensure!(output.status.success(), "{self:?} failed ({}): {stderr}", output.status);
        serde_json::from_slice(&output.stdout).with_context(|| format!("{self:?} printed no report; stderr:\n{stderr}"))
    }
}

/// The era a host must end up in: its mode and negotiated revision.
fn expect_era(report: &Value, modern: bool) -> Result<()> {
    let (mode, version) = if modern { ("modern", "2026-07-28") } else { ("legacy", "2025-11-25") };
    ensure!(report["mode_used"] == mode && report["negotiated_version"] == version, "era: {report}");
    Ok(())
}

fn names(value: &Value) -> Vec<String> {
    value.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect()
}

/// What a host did, in figures.
struct Summary {
    found: usize,
    described: usize,
    called: usize,
    failed: usize,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Summary { found, described, called, failed } = self;
        write!(
            f,
            "{found} tools found, {described} described, {called} called through call_tool ({failed} upstream errors)"
        )
    }
}

/// Checks a host's report: the search → describe → call workflow done for
/// every tool found, through the call tool, with the upstreams' answers.
fn check(report: &Value) -> Result<Summary> {
    ensure!(report["completed"] == true, "the run did not complete");
    // The host declared exactly the search listing to its model, and passed
    // toolgate's instructions on.
    let listed: BTreeSet<String> = names(&report["listed"]).into_iter().collect();
    ensure!(listed == LISTED.iter().map(|s| (*s).to_owned()).collect(), "listed: {}", report["listed"]);
    let instructions = report["instructions"].as_str().unwrap_or_default();
    ensure!(instructions.contains("`search_tools`") && instructions.contains("`call_tool`"), "{instructions}");

    // Every task's search found something, within its limit.
    let tasks = tasks();
    let searches = report["searches"].as_array().context("searches")?;
    ensure!(searches.len() == tasks.as_array().map_or(0, Vec::len), "one search a task: {searches:?}");
    for (search, task) in searches.iter().zip(tasks.as_array().into_iter().flatten()) {
        let found = names(&search["found"]);
        ensure!(search["query"] == task["query"], "{search}");
        ensure!(!found.is_empty() && found.len() as u64 <= task["limit"].as_u64().unwrap_or(10), "{search}");
    }

    // Every tool found was described and called through the call tool.
    let found = names(&report["found"]);
    let described = names(&report["described"]);
    let called = names(&report["called"]);
    let set = |v: &[String]| v.iter().cloned().collect::<BTreeSet<_>>();
    ensure!(set(&described) == set(&found), "described {described:?}, found {found:?}");
    ensure!(set(&called) == set(&found), "called {called:?}, found {found:?}");

    // What went over the wire: only listed names; one call_tool per tool found,
    // naming it exactly, with an arguments object.
    let wire = report["wire_calls"].as_array().context("wire_calls")?;
    ensure!(names(&report["unlisted_sent"]).is_empty(), "unlisted names sent: {}", report["unlisted_sent"]);
    for call in wire {
        ensure!(call["name"].as_str().is_some_and(|n| listed.contains(n)), "sent {call}");
    }
    let routed: Vec<&Value> = wire.iter().filter(|c| c["name"] == "call_tool").collect();
    let routed_names: Vec<String> =
        routed.iter().map(|c| c["arguments"]["name"].as_str().unwrap_or_default().to_owned()).collect();
    ensure!(routed.len() == found.len() && set(&routed_names) == set(&found), "call_tool of {routed_names:?}");
    for call in &routed {
        ensure!(call["arguments"]["arguments"].is_object(), "no arguments object: {call}");
    }

    // The direct call of a found name: refused by the host, never sent.
    let direct = &report["direct"];
    ensure!(direct["refused"] == true && direct["cause"] == "unknown_tool", "direct: {direct}");
    ensure!(found.first() == direct["name"].as_str().map(str::to_owned).as_ref(), "direct: {direct}");
    ensure!(direct["message"].as_str().is_some_and(|m| m.contains("Unknown tool")), "direct: {direct}");
    ensure!(!wire.iter().any(|c| c["name"] == direct["name"]), "the direct call was sent: {direct}");

    // Each call came back from its upstream: a result, or the upstream's own
    // tool error, never a refusal of toolgate's (gate, call tool, unknown name).
    let calls = &report["calls"];
    for name in &found {
        let call = &calls[name];
        if call["ok"] != true {
            let error = call["error"].to_string();
            for refusal in ["TOOL_DESCRIPTION_REQUIRED", "Unknown tool", "call_tool", "toolgate"] {
                ensure!(!error.contains(refusal), "{name}: toolgate refused the call: {call}");
            }
        }
    }
    // The real results of the tools whose answers are known (the tasks find them).
    let result = |name: &str| -> Result<&Value> {
        let call = &calls[name];
        ensure!(call["ok"] == true, "{name} was not found or failed: {call} (found {found:?})");
        Ok(&call["result"])
    };
    ensure!(result("everything__echo")? == &json!(format!("Echo: {MESSAGE}")), "{}", calls["everything__echo"]);
    ensure!(result("fixture__echo")? == &json!(MESSAGE), "{}", calls["fixture__echo"]);
    ensure!(result("everything__get-sum")? == "The sum of 2 and 3 is 5.", "{}", calls["everything__get-sum"]);
    let now = result("time__get_current_time")?;
    ensure!(now["timezone"] == "UTC" && now["datetime"].as_str().is_some_and(|d| d.ends_with("+00:00")), "{now}");
    let converted = result("time__convert_time")?;
    ensure!(converted["target"]["datetime"].as_str().is_some_and(|d| d.ends_with("T21:00:00+09:00")), "{converted}");
    ensure!(converted["time_difference"] == "+9.0h", "{converted}");
    let image = result("everything__get-tiny-image")?;
    ensure!(image.to_string().contains("image/png"), "{image}");
    // The fixture's tool error, as the upstream said it.
    let failing = &calls["fixture__test_error_handling"];
    ensure!(failing["ok"] == false, "{failing}");
    ensure!(failing["error"].to_string().contains("intentionally returns an error"), "{failing}");

    let failed = names(&report["failed"]);
    Ok(Summary { found: found.len(), described: described.len(), called: called.len(), failed: failed.len() })
}

/// Checks the scrape after a host run: every tool found routed once, and
/// every `tools/call` toolgate forwarded was a routed one; no gate refusal.
fn check_metrics(scrape: &Scrape, report: &Value) -> Result<()> {
    let found = names(&report["found"]);
    for name in &found {
        let upstream = name.split("__").next().unwrap_or_default();
        let routed = scrape.count("toolgate_routed_calls_total", &[("upstream", upstream), ("tool", name)]);
        ensure!(routed == 1.0, "toolgate_routed_calls_total of {name}: {routed}");
    }
    let sum = |metric: &str, labels: &[(&str, &str)]| -> f64 {
        scrape
            .samples
            .iter()
            .filter(|s| s.name == metric)
            .filter(|s| labels.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v)))
            .map(|s| s.value)
            .sum()
    };
    let routed = sum("toolgate_routed_calls_total", &[]);
    let forwarded = sum("toolgate_upstream_requests_total", &[("method", "tools/call")]);
    ensure!(routed == found.len() as f64, "routed {routed}, found {}", found.len());
    ensure!(forwarded == routed, "{forwarded} tools/call forwarded, {routed} routed");
    let refused = sum("toolgate_gate_refusals_total", &[]);
    ensure!(refused == 0.0, "{refused} gate refusals");
    Ok(())
}

/// `host` over Streamable HTTP; `modern`: the era it must end up in.
async fn over_http(host: Host, modern: bool) -> Result<()> {
    let gw = Toolgate::start_with(&upstreams(), SEARCH_LISTING).await?;
    let metrics = format!("http://127.0.0.1:{}/metrics", gw.port());
    let before = scrape(&metrics, None).await?;
    ensure!(before.count("toolgate_routed_calls_total", &[]) == 0.0, "routed calls before the run");
    let report = host.run(&Endpoint::Url(gw.url.clone())).await.with_context(|| tail(&gw.logs()))?;
    expect_era(&report, modern)?;
    let summary = check(&report).with_context(|| format!("report: {report}"))?;
    let after = scrape(&metrics, None).await?;
    check_metrics(&after, &report).with_context(|| format!("report: {report}\n{}", tail(&gw.logs())))?;
    eprintln!("{host:?} over Streamable HTTP: {summary}");
    Ok(())
}

/// `host` launching `toolgate stdio`.
async fn over_stdio(host: Host, modern: bool) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("toolgate.toml");
    std::fs::write(&config, format!("{SEARCH_LISTING}\n{}", upstreams()))?;
    let report = host.run(&Endpoint::Stdio(config)).await?;
    expect_era(&report, modern)?;
    let summary = check(&report).with_context(|| format!("report: {report}"))?;
    eprintln!("{host:?} over stdio: {summary}");
    Ok(())
}

fn tail(logs: &str) -> String {
    let lines: Vec<&str> = logs.lines().collect();
    format!("toolgate's last log lines:\n{}", lines[lines.len().saturating_sub(30)..].join("\n"))
}

#[tokio::test]
async fn pydantic_ai_2025_over_streamable_http() -> Result<()> {
    over_http(Host::PydanticAi("legacy"), false).await
}

#[tokio::test]
async fn pydantic_ai_2026_over_streamable_http() -> Result<()> {
    over_http(Host::PydanticAi("auto"), true).await
}

#[tokio::test]
async fn pydantic_ai_2025_over_stdio() -> Result<()> {
    over_stdio(Host::PydanticAi("legacy"), false).await
}

#[tokio::test]
async fn typescript_v2_2026_over_streamable_http() -> Result<()> {
    over_http(Host::TypeScriptV2, true).await
}

#[tokio::test]
async fn typescript_v2_2026_over_stdio() -> Result<()> {
    over_stdio(Host::TypeScriptV2, true).await
}
