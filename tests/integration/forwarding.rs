//! Everything that is not progressive disclosure passes through: prompts,
//! resources, completions, progress, logs, server-to-client requests, and
//! failures of the upstream itself.

use std::time::Duration;

use anyhow::Result;
use serde_json::{Value, json};

use crate::common::*;

async fn fixture_gateway(extra: &str) -> Result<Toolgate> {
    Toolgate::start(&fixture_upstream("fx", &[], extra)).await
}

async fn authorized(gw: &Toolgate, capabilities: Value, tools: &str) -> Result<Client> {
    let c = Client::connected(&gw.url, capabilities).await?;
    c.read_descriptions(tools).await?;
    Ok(c)
}

#[tokio::test]
async fn prompts_resources_and_completions_pass_through() -> Result<()> {
    // The fixture is probed as a 2026-07-28 upstream: `resources/subscribe`
    // is held by toolgate and carried on its listen stream there, and
    // `logging/setLevel` is kept for the session's requests.
    let gw = fixture_gateway("").await?;
    let c = Client::connected(&gw.url, json!({})).await?;

    let prompts = c.result("prompts/list", json!({})).await?;
    let names: Vec<&str> = prompts["prompts"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
    assert!(names.contains(&"test_prompt_with_arguments"), "{names:?}");
    let prompt = c
        .result(
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "one", "arg2": "two"}}),
        )
        .await?;
    let text = prompt["messages"][0]["content"]["text"].as_str().unwrap_or("");
    assert!(text.contains("one") && text.contains("two"), "{prompt}");

    let read = c.result("resources/read", json!({"uri": "test://static-text"})).await?;
    assert_eq!(read["contents"][0]["uri"], "test://static-text");
    assert!(read["contents"][0]["text"].as_str().is_some_and(|t| !t.is_empty()));
    let templated = c.result("resources/read", json!({"uri": "test://template/42/data"})).await?;
    assert!(templated["contents"][0]["text"].as_str().unwrap_or("").contains("42"), "{templated}");
    let missing = c.request("resources/read", json!({"uri": "test://nope"})).await?;
    assert!(missing["error"].is_object(), "{missing}");

    let sub = c.result("resources/subscribe", json!({"uri": "test://watched-resource"})).await?;
    assert_eq!(sub, json!({}));
    assert_eq!(c.result("resources/unsubscribe", json!({"uri": "test://watched-resource"})).await?, json!({}));

    // Completions: the gateway's own template, and the upstream's prompt arguments.
    let own = c
        .result(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "resource:///tool_descriptions?tools={tools}"},
                   "argument": {"name": "tools", "value": "ech"}}),
        )
        .await?;
    assert_eq!(own["completion"]["values"], json!(["echo"]), "{own}");
    let upstream = c
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                   "argument": {"name": "arg1", "value": ""}}),
        )
        .await?;
    assert!(upstream["result"]["completion"]["values"].is_array(), "{upstream}");
    assert_eq!(c.result("logging/setLevel", json!({"level": "warning"})).await?, json!({}));
    Ok(())
}

#[tokio::test]
async fn progress_and_logs_arrive_on_the_request_stream_with_the_clients_token() -> Result<()> {
    // The fixture speaks both eras: a 2026-07-28 upstream leg. Its logs need
    // a per-request level, which the session's `logging/setLevel` (answered
    // by toolgate) supplies; `modern_params` tests the levels themselves.
    let gw = fixture_gateway("").await?;
    let c = authorized(&gw, json!({}), "test_tool_with_progress,test_tool_with_logging").await?;
    assert_eq!(c.result("logging/setLevel", json!({"level": "debug"})).await?, json!({}));
    for token in [json!("tok-1"), json!(7)] {
        let (response, related) = c
            .exchange(
                "tools/call",
                json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": token}}),
            )
            .await?;
        assert!(response["result"].is_object(), "{response}");
        let progress: Vec<&Value> = related.iter().filter(|m| m["method"] == "notifications/progress").collect();
        assert!(progress.len() >= 3, "{related:?}");
        for p in progress {
            assert_eq!(p["params"]["progressToken"], token, "the token keeps its value and JSON type");
        }
    }
    let (response, related) =
        c.exchange("tools/call", json!({"name": "test_tool_with_logging", "arguments": {}})).await?;
    assert!(response["result"].is_object());
    assert!(related.iter().filter(|m| m["method"] == "notifications/message").count() >= 3, "{related:?}");
    Ok(())
}

#[tokio::test]
async fn sampling_round_trips_to_the_session_that_caused_it() -> Result<()> {
    let gw = fixture_gateway("").await?;
    let c = authorized(&gw, json!({"sampling": {}}), "test_sampling").await?;
    let bystander = authorized(&gw, json!({"sampling": {}}), "test_sampling").await?;
    let mut bystander_stream = bystander.listen().await?;

    let mut stream = c
        .open(&json!({"jsonrpc": "2.0", "id": "call-1", "method": "tools/call",
                      "params": {"name": "test_sampling", "arguments": {"prompt": "Say hi"}}}))
        .await?;
    let request = stream.next().await?;
    assert_eq!(request["method"], "sampling/createMessage", "{request}");
    assert!(request["id"].is_number() || request["id"].is_string());
    let answer = json!({"role": "assistant", "content": {"type": "text", "text": "hi from the client"},
                        "model": "test-model", "stopReason": "endTurn"});
    assert_eq!(c.respond(&request["id"], answer).await?, reqwest::StatusCode::ACCEPTED);
    let response = stream.next().await?;
    assert_eq!(response["id"], "call-1", "the client's id comes back exactly");
    assert!(response["result"].to_string().contains("hi from the client"), "{response}");
    assert!(
        bystander_stream.next_within(Duration::from_millis(300)).await.is_none(),
        "nothing leaked to other sessions"
    );
    Ok(())
}

#[tokio::test]
async fn a_client_without_sampling_gets_a_tool_error_not_a_hang() -> Result<()> {
    let gw = fixture_gateway("").await?;
    let c = authorized(&gw, json!({}), "test_sampling").await?;
    let r = c.call_tool("test_sampling", json!({"prompt": "x"})).await?;
    assert!(r["isError"] == true || r.get("error").is_some(), "{r}");
    Ok(())
}

#[tokio::test]
async fn clients_reusing_ids_get_their_own_answers() -> Result<()> {
    for sharing in ["shared", "per_session"] {
        let gw = fixture_gateway(&format!("sharing = \"{sharing}\"")).await?;
        let mut clients = Vec::new();
        for _ in 0..4 {
            clients.push(authorized(&gw, json!({}), "echo,fixture_sleep").await?);
        }
        // Every client uses id 1 at the same time, and each call takes a while,
        // so they overlap upstream.
        let calls = clients.iter().enumerate().map(|(i, c)| async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": {"name": "echo", "arguments": {"text": format!("client {i}")}}});
            let slow = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": {"name": "fixture_sleep", "arguments": {"ms": 100 + 20 * i}}});
            let (a, b) = tokio::join!(c.post(&body), c.post(&slow));
            (i, a, b)
        });
        for (i, a, b) in futures::future::join_all(calls).await {
            let (a, b) = (a?, b?);
            assert_eq!(a.messages.last().unwrap()["id"], json!(1));
            assert_eq!(a.messages.last().unwrap()["result"]["content"][0]["text"], format!("client {i}"), "{sharing}");
            assert_eq!(
                b.messages.last().unwrap()["result"]["content"][0]["text"],
                format!("slept {} ms", 100 + 20 * i)
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn an_upstream_crash_mid_call_is_an_error_and_the_next_call_works() -> Result<()> {
    let gw = fixture_gateway("").await?;
    let c = authorized(&gw, json!({}), "fixture_crash,fixture_whoami").await?;
    let before = c.call_tool("fixture_whoami", json!({})).await?["structuredContent"]["pid"].clone();
    let crashed = c.request("tools/call", json!({"name": "fixture_crash", "arguments": {}})).await?;
    assert_eq!(crashed["error"]["code"], -32012, "{crashed}");
    assert!(crashed["error"]["message"].as_str().unwrap().contains("fx"), "the error names the upstream: {crashed}");
    let after = c.call_tool("fixture_whoami", json!({})).await?;
    assert!(after["structuredContent"]["pid"].is_number(), "{after}");
    assert_ne!(after["structuredContent"]["pid"], before, "a new upstream process serves the session");
    assert_eq!(after["structuredContent"]["calls"], 1);
    Ok(())
}

#[tokio::test]
async fn a_broken_upstream_fails_clearly_while_the_rest_keeps_serving() -> Result<()> {
    let upstreams = format!(
        "{}{}",
        fixture_upstream("good", &[], ""),
        stdio_upstream("broken", "/nonexistent/toolgate-test-binary", &[], "")
    );
    let gw = Toolgate::start(&upstreams).await?;
    let c = authorized(&gw, json!({}), "good__echo").await?;
    assert_eq!(c.call_tool("good__echo", json!({"text": "ok"})).await?["content"][0]["text"], "ok");
    gw.wait_log("upstream unavailable", Duration::from_secs(10)).await?;
    assert!(gw.logs().contains("broken"), "the log names the upstream");
    Ok(())
}

#[tokio::test]
async fn cancellation_reaches_the_upstream_and_no_response_follows() -> Result<()> {
    let gw = fixture_gateway("").await?;
    let c = authorized(&gw, json!({}), "fixture_sleep,echo").await?;
    let mut stream = c
        .open(&json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                      "params": {"name": "fixture_sleep", "arguments": {"ms": 5000}, "_meta": {"progressToken": 5}}}))
        .await?;
    let first = stream.next().await?;
    assert_eq!(first["method"], "notifications/progress", "{first}");
    c.notify("notifications/cancelled", Some(json!({"requestId": 99, "reason": "user gave up"}))).await?;
    let started = std::time::Instant::now();
    while let Some(m) = stream.next_within(Duration::from_secs(3)).await {
        assert!(m.get("result").is_none() && m.get("error").is_none(), "a cancelled request is not answered: {m}");
    }
    assert!(started.elapsed() < Duration::from_millis(2900), "the stream closed after the cancellation");
    // The session is still fine.
    assert_eq!(c.call_tool("echo", json!({"text": "still here"})).await?["content"][0]["text"], "still here");
    Ok(())
}

#[tokio::test]
async fn lists_follow_upstream_cursors_and_page_with_opaque_cursors() -> Result<()> {
    // The upstream pages by 3; toolgate follows every cursor.
    let whole = Toolgate::start(&fixture_upstream("fx", &["--tools-page-size", "3"], "")).await?;
    let c = Client::connected(&whole.url, json!({})).await?;
    let all = c.result("tools/list", json!({})).await?["tools"].as_array().cloned().unwrap();
    assert!(all.len() > 20 && c.result("tools/list", json!({})).await?.get("nextCursor").is_none(), "one page");
    let prompts = c.result("prompts/list", json!({})).await?["prompts"].as_array().cloned().unwrap();
    assert!(prompts.len() >= 4, "every upstream page of prompts: {prompts:?}");
    let bad = c.request("tools/list", json!({"cursor": "whatever"})).await?;
    assert_eq!(bad["error"]["code"], -32602);

    // With page_size, toolgate pages toward the client with its own cursors.
    let paged = Toolgate::start_with(
        &fixture_upstream("fx", &["--tools-page-size", "3"], ""),
        "[server]\nlisten = \"127.0.0.1:0\"\npage_size = 4\n",
    )
    .await?;
    let c = Client::connected(&paged.url, json!({})).await?;
    for (method, key, expected) in [("tools/list", "tools", &all), ("prompts/list", "prompts", &prompts)] {
        let mut seen = Vec::new();
        let mut params = json!({});
        loop {
            let page = c.result(method, params.clone()).await?;
            let items = page[key].as_array().cloned().unwrap();
            assert!(items.len() <= 4, "{method}: {page}");
            seen.extend(items);
            match page.get("nextCursor") {
                Some(cursor) => params = json!({"cursor": cursor}),
                None => break,
            }
        }
        assert_eq!(&seen, expected, "{method}: the pages add up to the whole list");
    }
    let first = c.result("tools/list", json!({})).await?;
    let cursor = first["nextCursor"].as_str().unwrap();
    let forged = format!("{}{}", cursor, "0");
    let r = c.request("tools/list", json!({"cursor": forged})).await?;
    assert_eq!(r["error"]["code"], -32602, "a cursor toolgate did not issue");
    let r = c.request("prompts/list", json!({"cursor": cursor})).await?;
    assert_eq!(r["error"]["code"], -32602, "a cursor of another list");
    Ok(())
}

#[tokio::test]
async fn url_elicitation_completions_reach_only_the_client_that_was_asked() -> Result<()> {
    // A shared HTTP upstream: its completion notice arrives unsolicited, on
    // toolgate's own standalone stream, and must still find its client.
    let (_fixture, url) = start_http_server(fixture_exe(), &["--http", "127.0.0.1:0"]).await?;
    // URL elicitation completions exist in the handshake era only.
    let gw = Toolgate::start(&http_upstream("fx", &url, "sharing = \"shared\"\nprotocol = \"2025-11-25\"")).await?;
    let caps = json!({"elicitation": {"form": {}, "url": {}}});
    let asked = authorized(&gw, caps.clone(), "fixture_url_elicitation").await?;
    let other = authorized(&gw, caps, "fixture_url_elicitation").await?;
    let mut asked_stream = asked.listen().await?;
    let mut other_stream = other.listen().await?;

    let mut call = asked
        .open(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "fixture_url_elicitation", "arguments": {"id": "el-42"}}}))
        .await?;
    let request = call.next().await?;
    assert_eq!(request["method"], "elicitation/create", "{request}");
    assert_eq!(request["params"]["elicitationId"], "el-42");
    asked.respond(&request["id"], json!({"action": "accept"})).await?;
    let response = call.next().await?;
    assert_eq!(response["result"]["structuredContent"]["answer"]["action"], "accept", "{response}");

    let done = asked_stream.next().await?;
    assert_eq!(done["method"], "notifications/elicitation/complete", "{done}");
    assert_eq!(done["params"]["elicitationId"], "el-42");
    assert!(other_stream.next_within(Duration::from_millis(500)).await.is_none(), "no other client hears it");
    Ok(())
}

#[tokio::test]
async fn the_upstream_timeout_applies_but_progress_restarts_it() -> Result<()> {
    let gw = fixture_gateway("timeout = \"1s\"").await?;
    let c = authorized(&gw, json!({}), "fixture_sleep").await?;
    let started = std::time::Instant::now();
    let silent = c.request("tools/call", json!({"name": "fixture_sleep", "arguments": {"ms": 2500}})).await?;
    assert_eq!(silent["error"]["code"], -32011, "{silent}");
    assert!(started.elapsed() < Duration::from_millis(2000), "it gave up after the timeout");
    let (talking, _) = c
        .exchange(
            "tools/call",
            json!({"name": "fixture_sleep", "arguments": {"ms": 2500}, "_meta": {"progressToken": 1}}),
        )
        .await?;
    assert_eq!(
        talking["result"]["content"][0]["text"], "slept 2500 ms",
        "a call that reports progress is not hung: {talking}"
    );
    Ok(())
}
