//! The sessionless 2026-07-28 era served beside the session-based revisions
//! on the same endpoint and over stdio: `server/discover`, sessionless
//! requests through the gateway to a 2025-era upstream (the demo upstream),
//! the revision's errors with their HTTP statuses, and the era pinning of a
//! stdio connection.

use anyhow::Result;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::common::*;
use crate::downstream::StdioGateway;

/// The `_meta` envelope of these tests' client.
fn envelope() -> Value {
    toolgate_test_support::modern::envelope("modern-test", json!({}))
}

/// A modern request body: `params` with the envelope in `_meta`.
fn body(id: i64, method: &str, params: Value) -> Value {
    modern_body("modern-test", json!(id), method, params)
}

/// POSTs `body` with the modern headers (`Mcp-Name` when given).
async fn post(c: &Client, body: &Value, name: Option<&str>) -> Result<Reply> {
    c.send(modern_post(c, body, name)).await
}

fn demo(extra: &str) -> String {
    stdio_upstream("demo", toolgate_exe(), &["demo-upstream"], extra)
}

#[tokio::test]
async fn discover_then_a_sessionless_workflow_through_the_gateway() -> Result<()> {
    let gw = Toolgate::start(&demo("")).await?;
    let c = gw.client();

    let r = post(&c, &body(1, "server/discover", json!({})), None).await?;
    assert_eq!(r.status, StatusCode::OK, "{r:?}");
    assert!(r.headers.get("mcp-session-id").is_none(), "no session is minted");
    let d = &r.messages[0]["result"];
    assert_eq!(d["resultType"], "complete");
    assert_eq!(d["supportedVersions"], json!([MODERN]));
    assert_eq!(d["ttlMs"], 0);
    assert_eq!(d["cacheScope"], "public", "no [auth]: answers do not differ per client");
    assert_eq!(d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "toolgate");
    assert!(d["capabilities"]["tools"].is_object());
    assert_eq!(d["capabilities"]["tools"]["listChanged"], true, "list changes arrive on subscriptions/listen");
    let instructions = d["instructions"].as_str().unwrap_or_default();
    assert!(instructions.contains("tool_descriptions"), "the workflow instructions: {instructions}");

    // A stale or foreign session id is ignored, never echoed.
    let list = body(2, "tools/list", json!({}));
    let r = c.send(modern_post(&c, &list, None).header("mcp-session-id", "bogus")).await?;
    assert_eq!(r.status, StatusCode::OK, "{r:?}");
    assert!(r.headers.get("mcp-session-id").is_none());
    let tools = &r.messages[0]["result"];
    assert_eq!(tools["resultType"], "complete");
    assert_eq!((tools["ttlMs"].clone(), tools["cacheScope"].clone()), (json!(0), json!("public")));
    let names: Vec<&str> = tools["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"list_projects") && names.contains(&"describe_tools"), "{names:?}");
    assert!(tools["tools"][0].get("outputSchema").is_none(), "the minimal list");

    // The gate applies without a session: refused before the description
    // is fetched, allowed after (grants are the client's, across requests).
    let call = body(3, "tools/call", json!({"name": "list_projects", "arguments": {}}));
    let r = post(&c, &call, Some("list_projects")).await?;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.messages[0]["result"]["resultType"], "complete");
    assert_eq!(json_of(&r.messages[0]["result"])["error"]["code"], "TOOL_DESCRIPTION_REQUIRED");
    let uri = "resource:///tool_descriptions?tools=list_projects";
    let r = post(&c, &body(4, "resources/read", json!({"uri": uri})), Some(uri)).await?;
    assert_eq!(r.status, StatusCode::OK, "{r:?}");
    let read = &r.messages[0]["result"];
    assert_eq!(read["resultType"], "complete");
    assert_eq!((read["ttlMs"].clone(), read["cacheScope"].clone()), (json!(0), json!("public")));
    assert!(read["contents"][0]["text"].as_str().unwrap_or_default().contains("list_projects"));
    let r = post(&c, &call, Some("list_projects")).await?;
    let result = &r.messages.last().unwrap()["result"];
    assert_eq!(result["resultType"], "complete");
    assert!(result.get("isError").is_none_or(|e| e == false), "{result}");
    assert!(result["content"][0]["text"].as_str().unwrap_or_default().len() > 10, "{result}");

    // A resource nobody has: the modern not-found, in-band.
    let gone = "resource:///nothing-here";
    let r = post(&c, &body(5, "resources/read", json!({"uri": gone})), Some(gone)).await?;
    assert_eq!(r.messages[0]["id"], 5);
    assert_eq!(r.messages[0]["error"]["code"], -32602, "{r:?}");

    // The session-based era is still served on the same endpoint.
    let legacy = Client::connected(&gw.url, json!({})).await?;
    let list = legacy.result("tools/list", json!({})).await?;
    assert!(list.get("resultType").is_none(), "2025 results are unchanged");
    assert!(legacy.result("ping", json!({})).await.is_ok());
    Ok(())
}

#[tokio::test]
async fn sessionless_tool_calls_reach_a_2025_upstream() -> Result<()> {
    // passthrough: no gate, so one request is the whole call. The demo
    // upstream is `per_session` by default: sessionless calls use its shared
    // (control) connection, no child per request.
    let gw = Toolgate::start(&demo("mode = \"passthrough\"")).await?;
    let c = gw.client();
    for id in [1, 2, 3] {
        let call = body(id, "tools/call", json!({"name": "list_projects", "arguments": {}}));
        let r = post(&c, &call, Some("list_projects")).await?;
        assert_eq!(r.status, StatusCode::OK, "{r:?}");
        let result = &r.messages.last().unwrap()["result"];
        assert_eq!(result["resultType"], "complete");
        assert!(result["content"][0]["text"].as_str().unwrap_or_default().len() > 10, "{result}");
        assert!(result.get("ttlMs").is_none(), "a tool result is not cacheable");
    }
    let spawned = gw.logs().matches("opened a per-session upstream session").count();
    assert_eq!(spawned, 0, "sessionless calls open no per-session upstream sessions");
    Ok(())
}

#[tokio::test]
async fn modern_errors_have_the_revision_codes_and_statuses() -> Result<()> {
    let gw = Toolgate::start(&demo("")).await?;
    let c = gw.client();
    let headers = |b: reqwest::RequestBuilder| {
        b.header("content-type", "application/json").header("accept", "application/json, text/event-stream")
    };
    let expect = |r: &Reply, status: StatusCode, code: i64, id: i64| {
        assert_eq!(r.status, status, "{r:?}");
        assert_eq!(r.messages[0]["error"]["code"], code, "{r:?}");
        assert_eq!(r.messages[0]["id"], id, "the error echoes the request id: {r:?}");
    };
    // No envelope but a modern header: a malformed modern request.
    let bare = json!({"jsonrpc": "2.0", "id": 101, "method": "server/discover", "params": {}});
    let r = post(&c, &bare, None).await?;
    expect(&r, StatusCode::BAD_REQUEST, -32602, 101);
    assert_eq!(r.messages[0]["error"]["data"]["envelope"]["missing"], json!(["_meta"]));
    // The envelope without its version header.
    let discover = body(102, "server/discover", json!({}));
    let r = c
        .send(headers(c.bare(Method::POST)).header("mcp-method", "server/discover").body(discover.to_string()))
        .await?;
    expect(&r, StatusCode::BAD_REQUEST, -32020, 102);
    // An unsupported revision, in both places.
    let mut future = body(301, "server/discover", json!({}));
    future["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let send = headers(c.bare(Method::POST))
        .header("mcp-protocol-version", "v999.0.0")
        .header("mcp-method", "server/discover");
    let r = c.send(send.body(future.to_string())).await?;
    expect(&r, StatusCode::BAD_REQUEST, -32022, 301);
    assert_eq!(r.messages[0]["error"]["data"], json!({"supported": [MODERN], "requested": "v999.0.0"}));
    // Header and body disagree on the version: -32020 first.
    let r = post(&c, &future, None).await?;
    expect(&r, StatusCode::BAD_REQUEST, -32020, 301);
    // Mcp-Method and Mcp-Name.
    let list = body(401, "tools/list", json!({}));
    let send =
        headers(c.bare(Method::POST)).header("mcp-protocol-version", MODERN).header("mcp-method", "prompts/list");
    expect(&c.send(send.body(list.to_string())).await?, StatusCode::BAD_REQUEST, -32020, 401);
    let call = body(402, "tools/call", json!({"name": "list_projects", "arguments": {}}));
    expect(&post(&c, &call, None).await?, StatusCode::BAD_REQUEST, -32020, 402);
    expect(&post(&c, &call, Some("=?base64?%%%?=")).await?, StatusCode::BAD_REQUEST, -32020, 402);
    // "list_projects" in base64, with optional white space: accepted.
    let r = post(&c, &call, Some(" =?base64?bGlzdF9wcm9qZWN0cw==?= ")).await?;
    assert_eq!(r.status, StatusCode::OK, "{r:?}");
    // Removed and unknown methods: 404 -32601 (the unknown one answered by
    // the upstream it was forwarded to).
    for (id, method) in [(500, "ping"), (501, "initialize"), (502, "logging/setLevel"), (503, "resources/subscribe")] {
        expect(
            &post(&c, &body(id, method, json!({"uri": "x", "level": "info"})), None).await?,
            StatusCode::NOT_FOUND,
            -32601,
            id,
        );
    }
    expect(&post(&c, &body(601, "unknown/method", json!({})), None).await?, StatusCode::NOT_FOUND, -32601, 601);
    // A modern notification is accepted and dropped.
    let note =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"_meta": envelope(), "requestId": 1}});
    assert_eq!(post(&c, &note, None).await?.status, StatusCode::ACCEPTED);
    // A batch claiming the modern era.
    let batch = json!([body(701, "tools/list", json!({}))]);
    let r = post(&c, &batch, None).await?;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.messages[0]["error"]["code"], -32600);
    // initialize with a modern header and no envelope.
    let init = json!({"jsonrpc": "2.0", "id": 801, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    expect(&post(&c, &init, None).await?, StatusCode::BAD_REQUEST, -32020, 801);
    // GET and DELETE without a session: the modern era is POST-only.
    for method in [Method::GET, Method::DELETE] {
        let r = c.send(c.bare(method).header("accept", "text/event-stream")).await?;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(r.headers["allow"], "POST");
    }
    Ok(())
}

#[tokio::test]
async fn a_stdio_connection_is_pinned_by_its_first_request() -> Result<()> {
    let mut gw = StdioGateway::start(&demo("")).await?;
    let (discover, _) = gw.request(1, "server/discover", json!({"_meta": envelope()})).await?;
    assert_eq!(discover["result"]["supportedVersions"], json!([MODERN]));
    let (list, _) = gw.request(2, "tools/list", json!({"_meta": envelope()})).await?;
    assert_eq!(list["result"]["resultType"], "complete");
    assert_eq!(list["result"]["cacheScope"], "public");
    let (missing, _) = gw.request(3, "tools/list", json!({})).await?;
    assert_eq!(missing["error"]["code"], -32602, "the envelope is required on a modern connection");
    let (init, _) = gw
        .request(
            4,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await?;
    assert_eq!(init["error"]["code"], -32022, "initialize on a modern connection");
    assert_eq!(init["error"]["data"]["supported"], json!([MODERN]));

    // A connection opened by initialize refuses the envelope.
    let mut legacy = StdioGateway::start(&demo("")).await?;
    let (init, _) = legacy
        .request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await?;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    legacy.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
    let (enveloped, _) = legacy.request(2, "tools/list", json!({"_meta": envelope()})).await?;
    assert_eq!(enveloped["error"]["code"], -32600);
    let (plain, _) = legacy.request(3, "tools/list", json!({})).await?;
    assert!(plain["result"]["tools"].is_array());
    Ok(())
}

#[tokio::test]
async fn progress_rides_the_request_stream_and_closing_it_cancels() -> Result<()> {
    let gw = Toolgate::start(&fixture_upstream("fx", &[], "mode = \"passthrough\"")).await?;
    let c = gw.client();
    let mut call = body(1, "tools/call", json!({"name": "test_tool_with_progress", "arguments": {}}));
    call["params"]["_meta"]["progressToken"] = json!("p1");
    let r = post(&c, &call, Some("test_tool_with_progress")).await?;
    assert_eq!(r.status, StatusCode::OK, "{r:?}");
    assert_eq!(r.content_type, "text/event-stream", "progress goes out before the answer");
    let progress: Vec<&Value> = r.related().into_iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert!(!progress.is_empty(), "{r:?}");
    assert!(progress.iter().all(|p| p["params"]["progressToken"] == "p1"));
    assert!(r.related().iter().all(|m| m["method"] != "notifications/message"), "no logLevel, no log messages");
    let result = &r.response(&json!(1)).expect("the answer")["result"];
    assert_eq!(result["resultType"], "complete");

    // A slow call whose stream the client closes is cancelled.
    let slow = body(2, "tools/call", json!({"name": "test_tool_slow", "arguments": {"durationMs": 20000}}));
    let response = modern_post(&c, &slow, Some("test_tool_slow")).send().await?;
    assert_eq!(response.headers()["content-type"], "text/event-stream", "a slow call is streamed");
    drop(response);
    gw.wait_log("closed a modern request's stream: cancelled", std::time::Duration::from_secs(20)).await?;
    Ok(())
}

#[tokio::test]
async fn with_auth_answers_are_private_and_follow_the_client_policy() -> Result<()> {
    const KEY: &str = "modern-key-0123456789abcdef";
    let auth = format!("[[auth.clients]]\nname = \"alice\"\napi_key = \"{KEY}\"\ntools = [\"list_projects\"]\n");
    let gw = Toolgate::start(&format!("{auth}\n{}", demo(""))).await?;
    let anonymous = gw.client();
    let r = post(&anonymous, &body(1, "server/discover", json!({})), None).await?;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "modern requests are authenticated too");
    let alice = Client::with_bearer(&gw.url, KEY)?;
    let r = post(&alice, &body(2, "server/discover", json!({})), None).await?;
    assert_eq!(r.messages[0]["result"]["cacheScope"], "private", "{r:?}");
    let r = post(&alice, &body(3, "tools/list", json!({})), None).await?;
    let tools = &r.messages[0]["result"];
    assert_eq!(tools["cacheScope"], "private");
    let names: Vec<&str> = tools["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"list_projects") && !names.contains(&"summarize_project"), "alice's view: {names:?}");
    Ok(())
}
