//! The call tool of the search listing (`[disclosure] call_tool_name`),
//! against the real binary in front of the fixture: it is listed with the
//! search and describe tools, and a call through it is the direct call of
//! the tool it names: the same result, the same gate (the upstream never
//! sees a refused call), the same policy (a hidden name answers like an
//! unknown one), one count in `calls_per_minute`, passthrough tools
//! ungated, progress, cancellation, an elicitation mid-call, a 2026-07-28
//! client's multi-round-trip retry, a task, and `activation = "list"`.

use std::time::Duration;

use anyhow::{Result, anyhow, ensure};
use serde_json::{Value, json};

use crate::common::*;
use crate::metrics::scrape;

const SEARCH: &str = "[disclosure]\nlisting = \"search\"\n";

/// The fixture as upstream `fx` (and, for tests that need a second one, a
/// passthrough `pt`), behind the search listing.
async fn gateway(sections: &str) -> Result<Toolgate> {
    let upstreams =
        format!("{}{}", fixture_upstream("fx", &[], ""), fixture_upstream("pt", &[], "mode = \"passthrough\""));
    Toolgate::start_with(&upstreams, &format!("{SEARCH}{sections}")).await
}

/// A call of `tool` through the call tool, as a `tools/call` body.
fn routed(id: Value, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "call_tool", "arguments": {"name": tool, "arguments": arguments}}})
}

/// The answer to a call of `tool` through the call tool.
async fn call_through(c: &Client, tool: &str, arguments: Value) -> Result<Value> {
    c.request("tools/call", json!({"name": "call_tool", "arguments": {"name": tool, "arguments": arguments}})).await
}

fn names(list: &Value) -> Vec<&str> {
    list["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).collect()
}

#[tokio::test]
async fn the_call_tool_is_listed_and_a_call_through_it_is_the_direct_call() -> Result<()> {
    let gw = gateway("").await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let init = c.result("tools/list", json!({})).await?;
    ensure!(names(&init) == ["search_tools", "call_tool", "describe_tools"], "{init}");
    let instructions = gw
        .client()
        .post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        .await?;
    let text = instructions.response(&json!(0)).map(|r| r["result"]["instructions"].to_string()).unwrap_or_default();
    ensure!(text.contains("call_tool") && text.contains("search_tools"), "{text}");

    // Search finds it, describing grants it, and the call through the call
    // tool answers exactly what a direct call answers.
    let found = c.call_tool("search_tools", json!({"query": "echo the text back"})).await?;
    ensure!(text_of(&found).contains("fx__echo"), "{found}");
    c.call_tool("describe_tools", json!({"tools": ["fx__echo", "fx__test_tool_with_progress"]})).await?;
    let through = call_through(&c, "fx__echo", json!({"text": "hi"})).await?;
    let direct = c.request("tools/call", json!({"name": "fx__echo", "arguments": {"text": "hi"}})).await?;
    ensure!(through["result"] == direct["result"] && text_of(&through["result"]) == "hi", "{through} vs {direct}");
    let scraped = scrape(&gw.url.replace("/mcp", "/metrics"), None).await?;
    ensure!(
        scraped.get("toolgate_routed_calls_total", &[("upstream", "fx"), ("tool", "fx__echo")]) == Some(1.0),
        "the routed call is counted under the real tool"
    );

    // Progress of the routed call reaches the client.
    let mut stream = c
        .open(&json!({"jsonrpc": "2.0", "id": "p", "method": "tools/call", "params": {
            "name": "call_tool", "arguments": {"name": "fx__test_tool_with_progress", "arguments": {}},
            "_meta": {"progressToken": "tok"}}}))
        .await?;
    let first = stream.next().await?;
    ensure!(first["method"] == "notifications/progress" && first["params"]["progressToken"] == "tok", "{first}");
    loop {
        let m = stream.next().await?;
        if m["id"] == "p" {
            ensure!(m.get("result").is_some(), "{m}");
            break;
        }
    }
    Ok(())
}

#[tokio::test]
async fn the_gate_and_the_policy_hold_through_the_call_tool() -> Result<()> {
    let clients = format!(
        "{}{}",
        client_entry(
            "alice",
            "alice-key-0123456789abcdef",
            "deny_tools = [\"fx__fixture_crash\"]\ncalls_per_minute = 4"
        ),
        client_entry("bob", "bob-key-0123456789abcdef01", "")
    );
    let gw = gateway(&clients).await?;
    let mut alice = Client::with_bearer(&gw.url, "alice-key-0123456789abcdef")?;
    alice.initialize(json!({})).await?;

    // Undescribed: the gate's tool error, and the upstream never saw it.
    let refused = call_through(&alice, "fx__fixture_whoami", json!({})).await?;
    ensure!(refused["result"]["isError"] == true, "{refused}");
    ensure!(text_of(&refused["result"]).contains("TOOL_DESCRIPTION_REQUIRED"), "{refused}");

    // A hidden tool and an unknown one get the same answer.
    // Both are tool errors the model can correct from (a protocol error
    // would be one on the call tool the host listed).
    let hidden = call_through(&alice, "fx__fixture_crash", json!({})).await?;
    let unknown = call_through(&alice, "fx__no_such_tool", json!({})).await?;
    let redact = |v: &Value, name: &str| v["result"].to_string().replace(name, "<tool>");
    ensure!(redact(&hidden, "fx__fixture_crash") == redact(&unknown, "fx__no_such_tool"), "{hidden} vs {unknown}");
    ensure!(
        unknown["result"]["isError"] == true && text_of(&unknown["result"]).contains("Unknown tool: fx__no_such_tool"),
        "{unknown}"
    );

    // Routing to toolgate's own tool is a tool error, counted as a call:
    // with calls_per_minute = 4, that was Alice's fourth, and a description
    // fetch now is refused.
    let own = alice
        .request(
            "tools/call",
            json!({"name": "call_tool", "arguments": {"name": "search_tools", "arguments": {"query": "x"}}}),
        )
        .await?;
    ensure!(own["result"]["isError"] == true, "{own}");
    let limited = alice
        .request("resources/read", json!({"uri": "resource:///tool_descriptions?tools=fx__fixture_whoami"}))
        .await?;
    ensure!(limited["error"]["code"] == -32015, "{limited}");

    // So is a call without object arguments.
    let mut bob = Client::with_bearer(&gw.url, "bob-key-0123456789abcdef01")?;
    bob.initialize(json!({})).await?;
    for arguments in [
        json!({"name": "call_tool", "arguments": {}}),
        json!({"name": "describe_tools", "arguments": {"tools": ["fx__echo"]}}),
        json!({"name": "fx__echo", "arguments": "text"}),
        json!({"name": "fx__echo"}),
        json!({"arguments": {}}),
    ] {
        let answer = bob.request("tools/call", json!({"name": "call_tool", "arguments": arguments})).await?;
        ensure!(answer["result"]["isError"] == true, "{arguments}: {answer}");
    }

    // Bob describes and calls through the call tool: his is the upstream's
    // first call of whoami, so none of Alice's reached it.
    bob.read_descriptions("fx__fixture_whoami").await?;
    let whoami = call_through(&bob, "fx__fixture_whoami", json!({})).await?;
    ensure!(whoami["result"]["structuredContent"]["calls"] == 1, "{whoami}");

    // A passthrough tool needs no description, through the call tool too.
    let ungated = call_through(&bob, "pt__echo", json!({"text": "free"})).await?;
    ensure!(text_of(&ungated["result"]) == "free", "{ungated}");
    Ok(())
}

#[tokio::test]
async fn a_routed_call_is_counted_once_in_calls_per_minute() -> Result<()> {
    let gw = gateway(&client_entry("carol", "carol-key-0123456789abcdef", "calls_per_minute = 3")).await?;
    let mut carol = Client::with_bearer(&gw.url, "carol-key-0123456789abcdef")?;
    carol.initialize(json!({})).await?;
    carol.read_descriptions("fx__echo").await?;
    for _ in 0..2 {
        let ok = call_through(&carol, "fx__echo", json!({"text": "x"})).await?;
        ensure!(text_of(&ok["result"]) == "x", "{ok}");
    }
    let over = call_through(&carol, "fx__echo", json!({"text": "x"})).await?;
    ensure!(over["error"]["code"] == -32015, "{over}");
    Ok(())
}

#[tokio::test]
async fn cancelling_a_routed_call_cancels_the_upstream_call() -> Result<()> {
    let gw = gateway("").await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    c.read_descriptions("fx__fixture_sleep,fx__echo").await?;
    let mut body = routed(json!(99), "fx__fixture_sleep", json!({"ms": 5000}));
    body["params"]["_meta"] = json!({"progressToken": 5});
    let mut stream = c.open(&body).await?;
    let first = stream.next().await?;
    ensure!(first["method"] == "notifications/progress", "{first}");
    c.notify("notifications/cancelled", Some(json!({"requestId": 99, "reason": "user gave up"}))).await?;
    let started = std::time::Instant::now();
    while let Some(m) = stream.next_within(Duration::from_secs(3)).await {
        ensure!(m.get("result").is_none() && m.get("error").is_none(), "a cancelled request is not answered: {m}");
    }
    ensure!(started.elapsed() < Duration::from_millis(2900), "the stream closed after the cancellation");
    gw.wait_log("notifications/cancelled", Duration::from_secs(5)).await.ok();
    ensure!(text_of(&call_through(&c, "fx__echo", json!({"text": "on"})).await?["result"]) == "on");
    Ok(())
}

#[tokio::test]
async fn an_elicitation_mid_call_reaches_the_client_of_a_routed_call() -> Result<()> {
    let gw = gateway("").await?;
    let c = Client::connected(&gw.url, json!({"elicitation": {}})).await?;
    c.read_descriptions("fx__test_elicitation").await?;
    let mut stream = c.open(&routed(json!("e"), "fx__test_elicitation", json!({"message": "Your name?"}))).await?;
    let asked = stream.next().await?;
    ensure!(asked["method"] == "elicitation/create", "{asked}");
    c.respond(&asked["id"], json!({"action": "accept", "content": {"response": "Ada"}})).await?;
    let answer = stream.next().await?;
    ensure!(answer["id"] == "e" && text_of(&answer["result"]).contains("Ada"), "{answer}");
    Ok(())
}

#[tokio::test]
async fn a_2026_client_retries_a_routed_call_that_needed_input() -> Result<()> {
    let upstream = fixture_upstream("fx", &[], "protocol = \"2025-11-25\"");
    let gw = Toolgate::start_with(&upstream, SEARCH).await?;
    let c = gw.client();
    let send = async |body: &Value| -> Result<Value> {
        let reply = c.send(modern_post(&c, body, Some("call_tool"))).await?;
        reply.response(&body["id"]).cloned().ok_or_else(|| anyhow!("no answer: {reply:?}"))
    };
    let caps = json!({"elicitation": {}});
    let envelope = toolgate_test_support::modern::envelope("call-tool-test", caps);
    let describe = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "describe_tools", "arguments": {"tools": ["test_elicitation"]}, "_meta": envelope}});
    let described = c.send(modern_post(&c, &describe, Some("describe_tools"))).await?;
    ensure!(described.response(&json!(1)).is_some_and(|r| r.get("result").is_some()), "{described:?}");
    let mut first = routed(json!(2), "test_elicitation", json!({"message": "Your name?"}));
    first["params"]["_meta"] = envelope;
    let asked = send(&first).await?;
    ensure!(asked["result"]["resultType"] == "input_required", "{asked}");
    let requests = asked["result"]["inputRequests"].as_object().cloned().unwrap_or_default();
    let key = requests.keys().next().cloned().ok_or_else(|| anyhow!("no input request: {asked}"))?;
    let mut retry = first.clone();
    retry["id"] = json!(3);
    retry["params"]["inputResponses"] = json!({key: {"action": "accept", "content": {"response": "Ada"}}});
    retry["params"]["requestState"] = asked["result"]["requestState"].clone();
    let done = send(&retry).await?;
    ensure!(done["result"]["resultType"] == "complete" && text_of(&done["result"]).contains("Ada"), "{done}");
    Ok(())
}

#[tokio::test]
async fn with_activation_by_list_a_described_tool_is_listed_and_the_session_told() -> Result<()> {
    let gw = gateway("activation = \"list\"\n").await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let mut events = c.listen().await?;
    c.call_tool("describe_tools", json!({"tools": ["fx__echo"]})).await?;
    let told = events.next().await?;
    ensure!(told["method"] == "notifications/tools/list_changed", "{told}");
    let listed = c.result("tools/list", json!({})).await?;
    ensure!(names(&listed) == ["search_tools", "call_tool", "describe_tools", "fx__echo"], "{listed}");
    ensure!(text_of(&c.call_tool("fx__echo", json!({"text": "native"})).await?) == "native");
    // Describing it again changes nothing.
    c.call_tool("describe_tools", json!({"tools": ["fx__echo"]})).await?;
    ensure!(events.next_within(Duration::from_millis(500)).await.is_none(), "told twice");
    // A sessionless client's listing never changes.
    let modern = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {
        "_meta": toolgate_test_support::modern::envelope("t", json!({}))}});
    let reply = c.send(modern_post(&Client::new(&gw.url), &modern, None)).await?;
    let list = reply.response(&json!(1)).map(|r| r["result"].clone()).unwrap_or_default();
    ensure!(names(&list) == ["search_tools", "call_tool", "describe_tools"], "{list}");
    Ok(())
}

#[tokio::test]
async fn a_task_augmented_call_through_the_call_tool_creates_the_task_upstream() -> Result<()> {
    let upstream = format!(
        "[[upstream]]\nname = \"ev\"\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\nmode = \"passthrough\"\n",
        crate::interop_matrix::peers::everything_js()
    );
    let gw = Toolgate::start_with(&upstream, SEARCH).await?;
    let caps = json!({"tasks": {"list": {}, "cancel": {}, "requests": {"sampling": {"createMessage": {}}}}});
    let c = Client::connected(&gw.url, caps).await?;
    let created = c
        .result(
            "tools/call",
            json!({"name": "call_tool", "arguments": {"name": "simulate-research-query", "arguments": {"topic": "routing"}},
                   "task": {"ttl": 60000}}),
        )
        .await?;
    let id = created["task"]["taskId"].as_str().ok_or_else(|| anyhow!("no task: {created}"))?.to_owned();
    c.task_completed(&id, Duration::from_secs(60)).await?;
    let result = c.result("tasks/result", json!({"taskId": id})).await?;
    ensure!(text_of(&result).contains("routing"), "{result}");
    Ok(())
}

#[tokio::test]
async fn a_routed_call_has_its_arguments_checked_against_the_full_schema() -> Result<()> {
    let upstream = fixture_upstream("fx", &["--validation-tools"], "");
    let gw = Toolgate::start_with(&upstream, SEARCH).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    c.call_tool("describe_tools", json!({"tools": ["fixture_form", "fixture_calls_seen"]})).await?;
    let refused = call_through(&c, "fixture_form", json!({"priority": "urgent"})).await?;
    ensure!(refused["result"]["isError"] == true, "{refused}");
    let body = json_of(&refused["result"]);
    ensure!(body["error"]["code"] == "INVALID_ARGUMENTS" && body["error"]["tool"] == "fixture_form", "{body}");
    let seen = call_through(&c, "fixture_calls_seen", json!({})).await?;
    ensure!(seen["result"]["structuredContent"]["calls"]["fixture_form"] == 0, "the upstream saw no call: {seen}");
    let valid = json!({"title": "Routed", "priority": "high", "owner": {"team": "core"}});
    let reached = call_through(&c, "fixture_form", valid.clone()).await?;
    ensure!(reached["result"]["structuredContent"]["received"] == valid, "{reached}");
    Ok(())
}
