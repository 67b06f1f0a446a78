//! toolgate in front of toolgate: a passthrough toolgate serving the
//! fixture is the Streamable HTTP upstream of a progressive one. This runs
//! toolgate's HTTP upstream client against toolgate's own server, across
//! two hops for progress and for a sampling round trip, and through the
//! inner one going away and coming back on the same port.

use std::time::Duration;

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::common::*;

async fn inner_gateway(listen: &str) -> Result<Toolgate> {
    Toolgate::start_with(
        &fixture_upstream("fx", &[], "mode = \"passthrough\""),
        &format!("[server]\nlisten = \"{listen}\"\n"),
    )
    .await
}

#[tokio::test]
async fn progress_and_sampling_cross_two_gateways() -> Result<()> {
    let inner = inner_gateway("127.0.0.1:0").await?;
    let outer = Toolgate::start(&http_upstream("inner", &inner.url, "")).await?;
    let c = Client::connected(&outer.url, json!({"sampling": {}})).await?;

    // The outer applies progressive disclosure to the inner's verbatim list.
    let tools = c.result("tools/list", json!({})).await?["tools"].as_array().cloned().unwrap_or_default();
    let rich = tools.iter().find(|t| t["name"] == "fixture_rich_definition").expect("listed through both hops");
    assert_eq!(rich["inputSchema"], json!({"type": "object"}), "{rich}");
    let body = c.read_descriptions("fixture_rich_definition,test_tool_with_progress,test_sampling").await?;
    assert_eq!(body["fixture_rich_definition"]["x-vendor"], json!({"feature": "keep-me", "version": 3}));

    for token in [json!("two-hops"), json!(31)] {
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
            assert_eq!(p["params"]["progressToken"], token, "the client's token, unchanged after two hops");
        }
    }

    let mut stream = c
        .open(&json!({"jsonrpc": "2.0", "id": "chain-1", "method": "tools/call",
                      "params": {"name": "test_sampling", "arguments": {"prompt": "Say hi twice"}}}))
        .await?;
    let request = stream.next().await?;
    assert_eq!(request["method"], "sampling/createMessage", "{request}");
    assert_eq!(request["params"]["messages"][0]["content"]["text"], "Say hi twice", "{request}");
    let answer = json!({"role": "assistant", "content": {"type": "text", "text": "hi through two hops"},
                        "model": "test-model", "stopReason": "endTurn"});
    assert_eq!(c.respond(&request["id"], answer).await?, reqwest::StatusCode::ACCEPTED);
    let response = stream.next().await?;
    assert_eq!(response["id"], "chain-1");
    assert!(response["result"].to_string().contains("hi through two hops"), "{response}");
    Ok(())
}

#[tokio::test]
async fn the_inner_gateway_going_away_is_a_clear_error_and_coming_back_recovers() -> Result<()> {
    let mut inner = inner_gateway("127.0.0.1:0").await?;
    let listen = format!("127.0.0.1:{}", inner.port());
    let outer = Toolgate::start(&http_upstream("inner", &inner.url, "")).await?;
    let c = Client::connected(&outer.url, json!({})).await?;
    c.read_descriptions("echo").await?;
    let echo = |text: &str| json!({"name": "echo", "arguments": {"text": text}});
    assert_eq!(c.result("tools/call", echo("before")).await?["content"][0]["text"], "before");

    inner.kill().await?;
    let started = std::time::Instant::now();
    let failed = c.request("tools/call", echo("while down")).await?;
    assert!(started.elapsed() < Duration::from_secs(5), "the failure is prompt, not a timeout");
    let message = failed["error"]["message"].as_str().unwrap_or("");
    assert!(failed["error"]["code"].is_i64(), "a JSON-RPC error, not a result: {failed}");
    assert!(message.contains("'inner'"), "the error names the upstream: {failed}");

    // The outer keeps serving what does not need the inner one.
    assert_eq!(c.result("ping", json!({})).await?, json!({}));
    let tools = c.result("tools/list", json!({})).await?;
    assert!(tools["tools"].as_array().is_some_and(|t| !t.is_empty()), "{tools}");
    let newcomer = Client::connected(&outer.url, json!({})).await?;
    assert_eq!(newcomer.read_descriptions("echo").await?["echo"]["name"], "echo");

    // Back on the same port: calls work again, for the old session and a new one.
    let _inner = inner_gateway(&listen).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
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
    assert_eq!(newcomer.result("tools/call", echo("new")).await?["content"][0]["text"], "new");
    Ok(())
}
