//! Legacy HTTP+SSE upstreams (MCP 2024-11-05, `transport = "sse"`): toolgate
//! in front of toolgate's own legacy SSE server (which fronts the fixture),
//! and in front of the Python SDK's legacy SSE server. Everything the
//! upstream sends arrives on one stream, so progress is routed by token and
//! server-to-client requests by session.

use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use serde_json::{Value, json};

use crate::common::*;

/// TOML for a legacy SSE upstream.
fn sse_upstream(name: &str, url: &str, extra: &str) -> String {
    http_upstream(name, url, &format!("transport = \"sse\"\n{extra}"))
}

/// A passthrough toolgate in front of the fixture; its legacy SSE stream URL.
async fn inner_gateway(listen: &str) -> Result<(Toolgate, String)> {
    let inner = Toolgate::start_with(
        &fixture_upstream("fx", &[], "mode = \"passthrough\""),
        &format!("[server]\nlisten = \"{listen}\"\n"),
    )
    .await?;
    let sse = format!("{}/sse", inner.url.trim_end_matches("/mcp"));
    Ok((inner, sse))
}

/// Every message of `stream` up to the next one that is not a notification.
async fn next_non_notification(stream: &mut MessageStream) -> Result<Value> {
    loop {
        let m = stream.next().await?;
        if m.get("id").is_some() {
            return Ok(m);
        }
    }
}

#[tokio::test]
async fn a_legacy_sse_upstream_serves_tools_progress_and_sampling() -> Result<()> {
    let (_inner, sse) = inner_gateway("127.0.0.1:0").await?;
    let outer = Toolgate::start(&sse_upstream("inner", &sse, "")).await?;
    let c = Client::connected(&outer.url, json!({"sampling": {}})).await?;
    outer.wait_log("legacy SSE stream open upstream=inner", Duration::from_secs(10)).await?;

    // Listed minimally, described in full, called.
    let tools = c.result("tools/list", json!({})).await?["tools"].as_array().cloned().unwrap_or_default();
    let rich = tools.iter().find(|t| t["name"] == "fixture_rich_definition").ok_or_else(|| anyhow!("{tools:?}"))?;
    assert_eq!(rich["inputSchema"], json!({"type": "object"}), "{rich}");
    let body = c.read_descriptions("fixture_rich_definition,echo,test_tool_with_progress,test_sampling").await?;
    assert_eq!(body["fixture_rich_definition"]["x-vendor"], json!({"feature": "keep-me", "version": 3}));
    assert_eq!(c.call_tool("echo", json!({"text": "over legacy SSE"})).await?["content"][0]["text"], "over legacy SSE");

    // Progress comes back with the client's own token, of either JSON type.
    for token in [json!("legacy-sse"), json!(17)] {
        let (response, related) = c
            .exchange(
                "tools/call",
                json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": token}}),
            )
            .await?;
        assert!(response["result"]["content"].is_array(), "{response}");
        let progress: Vec<&Value> = related.iter().filter(|m| m["method"] == "notifications/progress").collect();
        assert!(progress.len() >= 3, "{related:?}");
        for p in progress {
            assert_eq!(p["params"]["progressToken"], token, "{p}");
        }
    }

    // Sampling: the inner's request arrives on the shared stream, with no
    // call attached; the per-session connection belongs to this client.
    let mut stream = c
        .open(&json!({"jsonrpc": "2.0", "id": "legacy-1", "method": "tools/call",
                      "params": {"name": "test_sampling", "arguments": {"prompt": "Say hi over SSE"}}}))
        .await?;
    let request = next_non_notification(&mut stream).await?;
    assert_eq!(request["method"], "sampling/createMessage", "{request}");
    assert_eq!(request["params"]["messages"][0]["content"]["text"], "Say hi over SSE", "{request}");
    let answer = json!({"role": "assistant", "content": {"type": "text", "text": "hi through a legacy hop"},
                        "model": "test-model", "stopReason": "endTurn"});
    assert_eq!(c.respond(&request["id"], answer).await?, reqwest::StatusCode::ACCEPTED);
    let response = next_non_notification(&mut stream).await?;
    assert_eq!(response["id"], "legacy-1");
    assert!(response["result"].to_string().contains("hi through a legacy hop"), "{response}");
    Ok(())
}

#[tokio::test]
async fn a_shared_legacy_sse_upstream_routes_progress_by_token() -> Result<()> {
    let (_inner, sse) = inner_gateway("127.0.0.1:0").await?;
    let outer = Toolgate::start(&sse_upstream("inner", &sse, "sharing = \"shared\"")).await?;
    let clients = [Client::connected(&outer.url, json!({})).await?, Client::connected(&outer.url, json!({})).await?];
    for c in &clients {
        c.read_descriptions("test_tool_with_progress,echo").await?;
    }
    // Both calls run at once over the one stream; each client hears only its own.
    let calls = clients.iter().zip(["first", "second"]).map(|(c, token)| async move {
        let params = json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": token}});
        (token, c.exchange("tools/call", params).await)
    });
    for (token, outcome) in futures::future::join_all(calls).await {
        let (response, related) = outcome?;
        assert!(response["result"]["content"].is_array(), "{response}");
        let progress: Vec<&Value> = related.iter().filter(|m| m["method"] == "notifications/progress").collect();
        assert!(progress.len() >= 3, "{related:?}");
        for p in progress {
            assert_eq!(p["params"]["progressToken"], token, "{p}");
        }
    }
    assert_eq!(clients[1].call_tool("echo", json!({"text": "shared"})).await?["content"][0]["text"], "shared");
    Ok(())
}

#[tokio::test]
async fn the_legacy_sse_upstream_going_away_is_a_clear_error_and_coming_back_recovers() -> Result<()> {
    let (mut inner, sse) = inner_gateway("127.0.0.1:0").await?;
    let listen = format!("127.0.0.1:{}", inner.port());
    let outer = Toolgate::start(&sse_upstream("inner", &sse, "")).await?;
    let c = Client::connected(&outer.url, json!({})).await?;
    c.read_descriptions("echo,fixture_sleep").await?;
    let echo = |text: &str| json!({"name": "echo", "arguments": {"text": text}});
    assert_eq!(c.result("tools/call", echo("before")).await?["content"][0]["text"], "before");

    // A call in flight when the stream breaks fails with the reason.
    let slow = c.request("tools/call", json!({"name": "fixture_sleep", "arguments": {"ms": 20000}}));
    let kill = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        inner.kill().await
    };
    let started = std::time::Instant::now();
    let (in_flight, killed) = tokio::join!(slow, kill);
    killed?;
    let in_flight = in_flight?;
    assert!(started.elapsed() < Duration::from_secs(10), "the failure is prompt, not a timeout");
    assert_eq!(in_flight["error"]["code"], -32012, "{in_flight}");
    let message = in_flight["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("'inner'") && message.contains("event stream"), "{in_flight}");

    // While it is down: a JSON-RPC error naming the upstream, promptly.
    let started = std::time::Instant::now();
    let failed = c.request("tools/call", echo("while down")).await?;
    assert!(started.elapsed() < Duration::from_secs(5), "the failure is prompt, not a timeout");
    assert!(failed["error"]["code"].is_i64(), "a JSON-RPC error, not a result: {failed}");
    assert!(failed["error"]["message"].as_str().unwrap_or("").contains("'inner'"), "{failed}");
    assert_eq!(c.result("ping", json!({})).await?, json!({}));

    // Back on the same port: the supervisor reconnects, the session's own
    // connection is recreated on its next call.
    let _inner = inner_gateway(&listen).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let r = c.request("tools/call", echo("after")).await?;
        if r["result"]["content"][0]["text"] == "after" {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            bail!("no recovery after the inner gateway came back: {r}\nouter logs:\n{}", outer.logs());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let newcomer = Client::connected(&outer.url, json!({})).await?;
    newcomer.read_descriptions("echo").await?;
    assert_eq!(newcomer.result("tools/call", echo("new")).await?["content"][0]["text"], "new");
    Ok(())
}

/// The Python SDK's (mcp 2.3.0) legacy SSE server, `MCPServer.sse_app()`.
async fn python_sse_upstream() -> Result<(Proc, String)> {
    let script = repo_path("tests/python/upstream_server.py").display().to_string();
    start_http_server(&python(), &[&script, "sse", "--port", "0"]).await
}

#[tokio::test]
async fn python_sdk_legacy_sse_upstream() -> Result<()> {
    let (_upstream, url) = python_sse_upstream().await?;
    assert!(url.ends_with("/sse"), "{url}");
    let gw = Toolgate::start(&sse_upstream("py", &url, "")).await?;
    let c = Client::connected(&gw.url, json!({"sampling": {}})).await?;

    let tools = c.result("tools/list", json!({})).await?["tools"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["get_weather_forecast", "convert_currency", "ask_llm_summary", "count_down", "describe_tools"]);
    let body = c.read_descriptions("convert_currency,count_down,ask_llm_summary").await?;
    assert_eq!(body["convert_currency"]["inputSchema"]["required"], json!(["amount", "from", "to"]), "{body}");

    let converted = c.call_tool("convert_currency", json!({"amount": 100, "from": "USD", "to": "EUR"})).await?;
    assert_eq!(
        converted,
        json!({"content": [{"type": "text", "text": "100.00 USD = 90.00 EUR"}], "isError": false,
               "structuredContent": {"result": "100.00 USD = 90.00 EUR"}})
    );

    // Progress with the client's token; the logs, which carry no token,
    // reach the call too (this client's own upstream connection).
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
    let logs: Vec<&Value> = related.iter().filter(|m| m["method"] == "notifications/message").collect();
    assert_eq!(logs.len(), 3, "{related:?}");

    let mut stream = c
        .open(&json!({"jsonrpc": "2.0", "id": "py-sse", "method": "tools/call",
                      "params": {"name": "ask_llm_summary", "arguments": {"text": "legacy transports"}}}))
        .await?;
    let request = next_non_notification(&mut stream).await?;
    assert_eq!(request["method"], "sampling/createMessage", "{request}");
    let answer = json!({"role": "assistant", "content": {"type": "text", "text": "Old but served."},
                        "model": "test-model", "stopReason": "endTurn"});
    assert_eq!(c.respond(&request["id"], answer).await?, reqwest::StatusCode::ACCEPTED);
    let response = next_non_notification(&mut stream).await?;
    assert_eq!(response["id"], "py-sse");
    assert_eq!(response["result"]["content"], json!([{"type": "text", "text": "Old but served."}]), "{response}");
    Ok(())
}
