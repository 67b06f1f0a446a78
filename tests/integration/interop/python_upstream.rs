//! A server written with the official Python SDK (mcp 2.3.0) behind
//! toolgate, over stdio and over Streamable HTTP: minimal listing, lossless
//! full definitions, exact results, prompts, resources, progress, logs and
//! the sampling round trip (client → toolgate → upstream → toolgate →
//! client and back). Both eras of the upstream leg: `initialize`
//! (`protocol = "2025-11-25"`) and the sessionless 2026-07-28 revision
//! (`auto` finds it), where sampling is an `InputRequiredResult` that
//! toolgate turns into a `sampling/createMessage` to the 2025 client.

use anyhow::{Result, anyhow};
use serde_json::{Value, json};

use crate::common::*;

const TOOLS: [&str; 4] = ["get_weather_forecast", "convert_currency", "ask_llm_summary", "count_down"];

fn upstream_script() -> String {
    repo_path("tests/python/upstream_server.py").display().to_string()
}

/// The upstream's own `tools/list`, read directly from a Python HTTP upstream.
async fn tools_of(url: &str) -> Result<Vec<Value>> {
    let direct = Client::connected(url, json!({})).await?;
    let list = direct.result("tools/list", json!({})).await?;
    list["tools"].as_array().cloned().ok_or_else(|| anyhow!("no tools: {list}"))
}

/// The next message of `stream` that is not a notification.
async fn next_non_notification(stream: &mut MessageStream) -> Result<Value> {
    loop {
        let m = stream.next().await?;
        if m.get("id").is_some() {
            return Ok(m);
        }
    }
}

/// Everything a client of toolgate should see of the Python upstream, whose
/// own tool definitions are `reference`. `modern`: the upstream leg speaks
/// 2026-07-28, where logs flow only for requests that name a level.
async fn check_python_upstream(gw: &Toolgate, reference: &[Value], modern: bool) -> Result<()> {
    let c = Client::connected(&gw.url, json!({"sampling": {}})).await?;
    if modern {
        // Remembered by toolgate and sent upstream as each request's logLevel.
        c.result("logging/setLevel", json!({"level": "info"})).await?;
    }

    // Listed minimally, in the upstream's order, titles kept.
    let tools = c.result("tools/list", json!({})).await?["tools"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, [&TOOLS[..], &["describe_tools"]].concat(), "{tools:?}");
    let ref_names: Vec<&str> = reference.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(ref_names, TOOLS, "the reference lists the same tools");
    for (listed, full) in tools.iter().zip(reference) {
        assert_eq!(listed["inputSchema"], json!({"type": "object"}), "{listed}");
        assert!(listed.get("outputSchema").is_none(), "{listed}");
        assert_eq!(listed["title"], full["title"]);
        let short = listed["description"].as_str().unwrap_or("");
        let long = full["description"].as_str().unwrap_or("");
        assert!(long.chars().count() > 160, "the upstream's descriptions are long: {long:?}");
        assert!(!short.is_empty() && short.chars().count() <= 160, "shortened: {short:?}");
    }

    // Before fetching, refused; the descriptions are the upstream's, field for field.
    let refused = c.call_tool("convert_currency", json!({"amount": 100, "from": "USD", "to": "EUR"})).await?;
    assert_eq!(json_of(&refused)["error"]["code"], "TOOL_DESCRIPTION_REQUIRED", "{refused}");
    let body = c.read_descriptions(&TOOLS.join(",")).await?;
    for full in reference {
        let name = full["name"].as_str().unwrap_or("");
        assert_eq!(&body[name], full, "the full definition of {name} is the upstream's own");
    }
    let forecast = &body["get_weather_forecast"];
    assert!(forecast["outputSchema"]["$defs"]["DayForecast"]["properties"]["high_c"].is_object(), "{forecast}");
    assert_eq!(forecast["inputSchema"]["properties"]["days"]["maximum"], 7);

    // Exact, deterministic results.
    let converted = c.call_tool("convert_currency", json!({"amount": 100, "from": "USD", "to": "EUR"})).await?;
    assert_eq!(
        converted,
        json!({"content": [{"type": "text", "text": "100.00 USD = 90.00 EUR"}], "isError": false,
               "structuredContent": {"result": "100.00 USD = 90.00 EUR"}})
    );
    let unknown = c.call_tool("convert_currency", json!({"amount": 1, "from": "XYZ", "to": "EUR"})).await?;
    assert_eq!(unknown["isError"], true, "{unknown}");
    assert_eq!(text_of(&unknown), "Error executing tool convert_currency: Unknown currency code: XYZ");
    let weather = c.call_tool("get_weather_forecast", json!({"city": "Paris", "days": 2})).await?;
    assert_eq!(
        weather["structuredContent"],
        json!({"city": "Paris", "days": [
            {"day": 0, "condition": "overcast", "high_c": 18, "low_c": 11, "precipitation_mm": 12},
            {"day": 1, "condition": "light rain", "high_c": 14, "low_c": 6, "precipitation_mm": 19}]}),
        "{weather}"
    );

    // Prompts and resources pass through.
    let prompts = c.result("prompts/list", json!({})).await?;
    assert_eq!(prompts["prompts"][0]["name"], "review_code", "{prompts}");
    let prompt = c
        .result(
            "prompts/get",
            json!({"name": "review_code", "arguments": {"language": "rust", "code": "fn main() {}"}}),
        )
        .await?;
    assert_eq!(
        prompt["messages"],
        json!([
            {"role": "user", "content": {"type": "text", "text": "Please review this rust code for bugs, style and security:"}},
            {"role": "user", "content": {"type": "text", "text": "```rust\nfn main() {}\n```"}}
        ])
    );
    let readme = c.result("resources/read", json!({"uri": "notes://readme"})).await?;
    assert_eq!(readme["contents"][0]["uri"], "notes://readme");
    assert_eq!(readme["contents"][0]["mimeType"], "text/plain");
    assert_eq!(
        readme["contents"][0]["text"],
        "Test notes server.\nThis resource is static text used by toolgate's integration tests.\nRead notes://{name} for a generated note.\n"
    );
    let note = c.result("resources/read", json!({"uri": "notes://groceries"})).await?;
    assert_eq!(note["contents"][0]["text"], "Note groceries: this is the deterministic body of note groceries.");

    // Progress with the client's own token (a number here), and the logs.
    let (response, related) = c
        .exchange("tools/call", json!({"name": "count_down", "arguments": {"n": 3}, "_meta": {"progressToken": 4711}}))
        .await?;
    assert_eq!(response["result"]["structuredContent"]["result"], "liftoff after 3 ticks", "{response}");
    let progress: Vec<Value> =
        related.iter().filter(|m| m["method"] == "notifications/progress").map(|m| m["params"].clone()).collect();
    assert_eq!(
        progress,
        [
            json!({"progressToken": 4711, "progress": 1, "total": 3, "message": "tick 3"}),
            json!({"progressToken": 4711, "progress": 2, "total": 3, "message": "tick 2"}),
            json!({"progressToken": 4711, "progress": 3, "total": 3, "message": "tick 1"}),
        ],
        "{related:?}"
    );
    let logs: Vec<Value> =
        related.iter().filter(|m| m["method"] == "notifications/message").map(|m| m["params"].clone()).collect();
    assert_eq!(
        logs,
        ["tick 3", "tick 2", "tick 1"].map(|t| json!({"level": "info", "logger": "count_down", "data": t})),
        "{related:?}"
    );

    // Sampling: the upstream's request reaches this client, its answer goes back.
    let mut stream = c
        .open(&json!({"jsonrpc": "2.0", "id": "sum-1", "method": "tools/call",
                      "params": {"name": "ask_llm_summary", "arguments": {"text": "toolgate forwards everything"}}}))
        .await?;
    let request = next_non_notification(&mut stream).await?;
    assert_eq!(request["method"], "sampling/createMessage", "{request}");
    assert_eq!(
        request["params"]["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Summarize in one sentence: toolgate forwards everything"}}])
    );
    assert_eq!(request["params"]["maxTokens"], 200);
    assert_eq!(request["params"]["systemPrompt"], "You write one-sentence summaries.");
    let answer = json!({"role": "assistant", "content": {"type": "text", "text": "A gateway that forwards."},
                        "model": "test-model", "stopReason": "endTurn"});
    assert_eq!(c.respond(&request["id"], answer).await?, reqwest::StatusCode::ACCEPTED);
    let response = next_non_notification(&mut stream).await?;
    assert_eq!(response["id"], "sum-1");
    assert_eq!(
        response["result"]["content"],
        json!([{"type": "text", "text": "A gateway that forwards."}]),
        "the sampled text comes back unchanged: {response}"
    );

    Ok(())
}

#[tokio::test]
async fn python_sdk_upstream_over_stdio() -> Result<()> {
    let script = upstream_script();
    let upstream = stdio_upstream("py", &python(), &[&script, "stdio"], "protocol = \"2025-11-25\"");
    let (gw, reference) = tokio::try_join!(Toolgate::start(&upstream), async {
        // The same server over HTTP, read directly, is the reference for lossless definitions.
        let (proc, url) = python_http_upstream().await?;
        let tools = tools_of(&url).await?;
        drop(proc);
        anyhow::Ok(tools)
    })?;
    check_python_upstream(&gw, &reference, false).await
}

#[tokio::test]
async fn python_sdk_upstream_over_stdio_in_the_sessionless_revision() -> Result<()> {
    let script = upstream_script();
    let upstream = stdio_upstream("py", &python(), &[&script, "stdio"], "");
    let (gw, reference) = tokio::try_join!(Toolgate::start(&upstream), async {
        let (proc, url) = python_http_upstream().await?;
        let tools = tools_of(&url).await?;
        drop(proc);
        anyhow::Ok(tools)
    })?;
    gw.wait_log("upstream speaks the sessionless revision upstream=py", std::time::Duration::from_secs(20)).await?;
    check_python_upstream(&gw, &reference, true).await
}

#[tokio::test]
async fn python_sdk_upstream_over_streamable_http_in_the_sessionless_revision() -> Result<()> {
    let (_upstream, url) = python_http_upstream().await?;
    let gw = Toolgate::start(&http_upstream("py", &url, "")).await?;
    gw.wait_log("upstream speaks the sessionless revision upstream=py", std::time::Duration::from_secs(20)).await?;
    // The Python server checks MCP-Protocol-Version, Mcp-Method and Mcp-Name
    // against the body and the envelope in `_meta` (-32020/-32602 otherwise):
    // every call below passing is those headers being right.
    check_python_upstream(&gw, &tools_of(&url).await?, true).await?;
    a_client_that_cannot_sample_gets_an_error(&gw).await
}

#[tokio::test]
async fn python_sdk_upstream_over_streamable_http() -> Result<()> {
    // This server answers `server/discover` (2026-era); toolgate's upstream
    // client uses `initialize`, which it must also accept.
    let (_upstream, url) = python_http_upstream().await?;
    let gw = Toolgate::start(&http_upstream("py", &url, "protocol = \"2025-11-25\"")).await?;
    gw.wait_log("upstream session ready upstream=py version=2025-11-25", std::time::Duration::from_secs(10)).await?;
    check_python_upstream(&gw, &tools_of(&url).await?, false).await?;

    // A client that cannot sample gets an error, not a hang. (Over HTTP a
    // second session costs no new process, so it is checked here only.)
    a_client_that_cannot_sample_gets_an_error(&gw).await
}

/// A client without the sampling capability calls the upstream tool that
/// samples: it gets an error, not a hang.
async fn a_client_that_cannot_sample_gets_an_error(gw: &Toolgate) -> Result<()> {
    let plain = Client::connected(&gw.url, json!({})).await?;
    plain.read_descriptions("ask_llm_summary").await?;
    let r = plain.call_tool("ask_llm_summary", json!({"text": "x"})).await?;
    assert!(r["isError"] == true || r["error"].is_object(), "{r}");
    Ok(())
}
