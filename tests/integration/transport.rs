//! The Streamable HTTP transport: what the spec and the official SDKs
//! require of headers, bodies, streams and errors.

use std::time::Duration;

use anyhow::Result;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::common::*;

async fn gateway() -> Result<Toolgate> {
    Toolgate::start(&fixture_upstream("fx", &[], "")).await
}

#[tokio::test]
async fn bad_requests_get_clear_http_errors() -> Result<()> {
    let gw = gateway().await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();

    let json_only =
        c.bare(Method::POST).header("accept", "application/json").header("content-type", "application/json");
    let r = c.send(json_only.body(ping.clone())).await?;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE);
    let text = c
        .bare(Method::POST)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "text/plain");
    let r = c.send(text.body(ping.clone())).await?;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let r = c.send(c.raw(Method::POST).body("{not json")).await?;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.messages[0]["error"]["code"], -32700);
    let r = c.send(c.raw(Method::POST).body(r#"{"jsonrpc":"2.0","id":1}"#)).await?;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.messages[0]["error"]["code"], -32600);
    let huge =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"x":"{}"}}}}"#, "a".repeat(5 * 1024 * 1024));
    let r = c.send(c.raw(Method::POST).body(huge)).await?;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
    let mut bad_version = Client::new(&gw.url);
    bad_version.session = c.session.clone();
    bad_version.version = "1999-01-01".into();
    let r = bad_version.send(bad_version.raw(Method::POST).body(ping.clone())).await?;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "an unsupported MCP-Protocol-Version header");
    let r = c.send(c.raw(Method::PUT).body(ping.clone())).await?;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.headers["allow"], "GET, POST, DELETE");
    let r = c.post(&json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])).await?;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "batches are not part of 2025-11-25");
    // And the session still works after all that.
    assert!(c.result("ping", json!({})).await.is_ok());
    Ok(())
}

#[tokio::test]
async fn dns_rebinding_protection() -> Result<()> {
    let gw = gateway().await?;
    let c = Client::new(&gw.url);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = c.send(c.raw(Method::POST).header("host", "evil.example.com").body(init.to_string())).await?;
    // (reqwest lets an explicit Host header replace the one it derives from the URL.)
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = c.send(c.raw(Method::POST).header("origin", "http://evil.example.com").body(init.to_string())).await?;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = c.send(c.raw(Method::POST).header("origin", "http://localhost:3000").body(init.to_string())).await?;
    assert_eq!(r.status, StatusCode::OK, "a loopback origin is fine");
    Ok(())
}

#[tokio::test]
async fn batches_work_for_2025_03_26_clients() -> Result<()> {
    let gw = gateway().await?;
    let mut c = Client::new(&gw.url);
    c.version = "2025-03-26".into();
    let result = c.initialize(json!({})).await?;
    assert_eq!(result["protocolVersion"], "2025-03-26");
    let r = c
        .post(&json!([
            {"jsonrpc": "2.0", "id": "a", "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
            {"jsonrpc": "2.0", "id": "b", "method": "resources/read", "params": {"uri": "resource:///tool_descriptions?tools=echo"}},
            {"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "batched"}}},
            {"bad": true}
        ]))
        .await?;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.response(&json!("a")).unwrap()["result"], json!({}));
    assert!(r.response(&json!("b")).unwrap()["result"]["contents"].is_array());
    assert!(
        r.messages.iter().any(|m| m["error"]["code"] == -32600),
        "the invalid element is answered: {:?}",
        r.messages
    );
    // Requests in a batch run concurrently, so "c" may or may not see b's authorization; it is answered either way.
    assert!(r.response(&json!("c")).is_some());
    Ok(())
}

#[tokio::test]
async fn a_batch_of_one_is_answered_with_an_array_and_a_lone_request_without_one() -> Result<()> {
    let gw = gateway().await?;
    let mut c = Client::new(&gw.url);
    c.version = "2025-03-26".into();
    c.initialize(json!({})).await?;
    // Answered by the gateway's handler (not inline as `ping` is), with the
    // cached list as prepared text.
    let list = json!({"jsonrpc": "2.0", "id": "l", "method": "tools/list"});
    // A lone request's answer is a lone response; a batch of one, an array
    // of one (the answer of a one-request POST is built on a path of its own).
    for (body, array) in [(json!([list.clone()]), true), (list.clone(), false)] {
        let response = c.raw(Method::POST).body(body.to_string()).send().await?;
        assert_eq!(response.status(), StatusCode::OK);
        let answer: serde_json::Value = serde_json::from_str(&response.text().await?)?;
        let single = if array {
            assert_eq!(answer.as_array().map(Vec::len), Some(1), "{answer}");
            &answer[0]
        } else {
            &answer
        };
        assert_eq!(single["id"], "l", "{answer}");
        assert!(single["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{answer}");
    }
    Ok(())
}

#[tokio::test]
async fn a_2026_era_probe_gets_the_answer_that_makes_clients_fall_back() -> Result<()> {
    let gw = gateway().await?;
    let c = Client::new(&gw.url);
    let probe = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}});
    let r = c.send(c.raw(Method::POST).header("mcp-protocol-version", "2026-07-28").body(probe.to_string())).await?;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.messages[0]["id"], 1);
    let code = r.messages[0]["error"]["code"].as_i64().unwrap();
    assert_ne!(code, -32022, "not the modern UnsupportedProtocolVersion error, which would stop the fallback");
    Ok(())
}

#[tokio::test]
async fn the_standalone_stream_carries_list_changes() -> Result<()> {
    let gw = gateway().await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let mut stream = c.listen().await?;
    assert_eq!(stream.status, StatusCode::OK);
    assert!(stream.content_type.starts_with("text/event-stream"));
    let second = c.listen().await?;
    assert_eq!(second.status, StatusCode::CONFLICT, "one standalone stream per session");

    c.read_descriptions("fixture_notify_list_changed").await?;
    let added = c.call_tool("fixture_notify_list_changed", json!({})).await?;
    let name = added["structuredContent"]["added"].as_str().unwrap().to_owned();
    let note = stream.next().await?;
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    let tools = c.result("tools/list", json!({})).await?;
    assert!(tools["tools"].as_array().unwrap().iter().any(|t| t["name"] == name.as_str()), "the new tool is listed");
    assert!(stream.next_within(Duration::from_millis(300)).await.is_none(), "one notification per change");
    Ok(())
}

#[tokio::test]
async fn a_broken_response_stream_resumes_with_last_event_id() -> Result<()> {
    let gw = gateway().await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    c.read_descriptions("fixture_sleep").await?;
    let mut events = c
        .open_events(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                             "params": {"name": "fixture_sleep", "arguments": {"ms": 1500}, "_meta": {"progressToken": "p"}}}))
        .await?;
    // 2025-11-25 clients get a priming event first: an id, the retry delay, no data.
    let priming = events.next().await.expect("priming event");
    assert!(priming.data.is_empty() && priming.retry.is_some(), "{priming:?}");
    let primed = priming.id.clone().expect("the priming event has an id");
    let first = events.next().await.expect("a progress event");
    let progress: serde_json::Value = serde_json::from_str(&first.data)?;
    assert_eq!(progress["method"], "notifications/progress");
    let last_seen = first.id.clone().expect("events carry ids");
    assert_ne!(last_seen, primed);
    events.disconnect();

    // The call goes on; reconnecting picks up after the last event seen.
    let mut resumed = c.resume(&last_seen).await?;
    assert_eq!(resumed.status, StatusCode::OK);
    let mut messages = Vec::new();
    while let Some(e) = resumed.next().await {
        messages.push(serde_json::from_str::<serde_json::Value>(&e.data)?);
    }
    let response = messages.last().expect("the stream carried the response");
    assert_eq!(response["id"], 7);
    assert_eq!(response["result"]["content"][0]["text"], "slept 1500 ms");
    assert!(!messages.iter().any(|m| m == &progress), "events before Last-Event-ID are not replayed");
    assert!(messages.iter().filter(|m| m["method"] == "notifications/progress").count() >= 5, "{messages:?}");

    // A resumption of a stream that is gone is refused without ending the session.
    let gone = c.resume(&last_seen).await?;
    assert_eq!(gone.status, StatusCode::BAD_REQUEST);
    assert!(c.result("ping", json!({})).await.is_ok());
    Ok(())
}
