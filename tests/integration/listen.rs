//! `subscriptions/listen` served by toolgate to 2026-07-28 clients, over
//! Streamable HTTP and stdio, and resource subscriptions routed through a
//! 2026-07-28 upstream (the fixture, which toolgate probes as one) for
//! clients of both eras. The changes are real: the fixture's
//! `test_trigger_tool_change` mutates its tool list and announces it on its
//! own listen streams, toolgate's upstream listen hears it, crawls the tools
//! again and tells its listeners; `fixture_update_resource` sends
//! `notifications/resources/updated` to the fixture's listen streams that
//! asked for the URI (toolgate's, which carries its clients' URIs).

use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use futures::StreamExt as _;
use serde_json::{Value, json};
use sse_stream::SseByteStream;

use crate::common::*;
use crate::downstream::StdioGateway;
use crate::metrics::scrape_until;

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
const WATCHED: &str = "test://watched-resource";

/// The listen tests' server section and clients: alice, limited by
/// `alice_limit`, and bob, who may use everything.
const SERVER: &str = "[server]\nlisten = \"127.0.0.1:0\"\n";
const ALICE: &str = "listen-alice-0123456789abcdef";
const BOB: &str = "listen-bob-0123456789abcdefgh";

fn alice_and_bob(alice_limit: &str) -> String {
    format!("{}{}", client_entry("alice", ALICE, alice_limit), client_entry("bob", BOB, ""))
}

/// One `[[auth.clients]]` entry, with its key and any policy lines.
fn client_entry(name: &str, key: &str, policy: &str) -> String {
    format!("[[auth.clients]]\nname = \"{name}\"\napi_key = \"{key}\"\n{policy}\n\n")
}
/// How long a change may take to travel upstream → toolgate → listener on a
/// loaded machine.
const WITHIN: Duration = Duration::from_secs(20);

fn envelope() -> Value {
    toolgate_test_support::modern::envelope("listen-test", json!({}))
}

fn body(id: Value, method: &str, params: Value) -> Value {
    modern_body("listen-test", id, method, params)
}

/// A modern `tools/call`; its result.
async fn call(c: &Client, id: i64, tool: &str, arguments: Value) -> Result<Value> {
    let request = body(json!(id), "tools/call", json!({"name": tool, "arguments": arguments}));
    let reply = c.send(modern_post(c, &request, Some(tool))).await?;
    let response = reply.response(&json!(id)).ok_or_else(|| anyhow!("no answer: {reply:?}"))?;
    response.get("result").cloned().ok_or_else(|| anyhow!("{tool} failed: {response}"))
}

/// An open listen stream: its messages as they arrive.
struct Listening {
    headers: reqwest::header::HeaderMap,
    rx: tokio::sync::mpsc::UnboundedReceiver<Value>,
    task: tokio::task::JoinHandle<()>,
}

impl Listening {
    async fn open(c: &Client, id: Value, notifications: Value) -> Result<Listening> {
        let request = body(id, "subscriptions/listen", json!({"notifications": notifications}));
        let response = modern_post(c, &request, None).send().await?;
        let headers = response.headers().clone();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            let mut events = SseByteStream::new(response.bytes_stream());
            while let Some(Ok(event)) = events.next().await {
                if let Some(data) = event.data.filter(|d| !d.is_empty())
                    && let Ok(v) = serde_json::from_str::<Value>(&data)
                    && tx.send(v).is_err()
                {
                    return;
                }
            }
        });
        Ok(Listening { headers, rx, task })
    }

    async fn next_within(&mut self, d: Duration) -> Option<Value> {
        tokio::time::timeout(d, self.rx.recv()).await.ok().flatten()
    }

    /// Waits for a message with `method`; fails on any other one.
    async fn expect(&mut self, method: &str) -> Result<Value> {
        match self.next_within(WITHIN).await {
            Some(m) if m["method"] == method => Ok(m),
            Some(m) => bail!("expected {method}, got {m}"),
            None => bail!("no {method} within {WITHIN:?}"),
        }
    }

    /// Closes the stream (the client goes away).
    fn close(self) {
        self.task.abort();
    }
}

fn fixture(extra: &str) -> String {
    fixture_upstream("fx", &[], &format!("mode = \"passthrough\"\n{extra}"))
}

#[tokio::test]
async fn an_http_listen_stream_hears_what_it_asked_for_and_closing_it_frees_it() -> Result<()> {
    let gw = Toolgate::start(&fixture("")).await?;
    let c = gw.client();
    let discover = c.send(modern_post(&c, &body(json!(1), "server/discover", json!({})), None)).await?;
    let caps = &discover.messages[0]["result"]["capabilities"];
    assert_eq!(caps["tools"]["listChanged"], true, "{caps}");
    assert_eq!(caps["prompts"]["listChanged"], true, "{caps}");
    assert_eq!(caps["resources"]["subscribe"], true, "the fixture (2026-07-28) takes subscriptions: {caps}");

    let mut tools = Listening::open(&c, json!(7), json!({"toolsListChanged": true, "futureKind": true})).await?;
    assert_eq!(tools.headers["content-type"], "text/event-stream");
    assert_eq!(tools.headers["x-accel-buffering"], "no");
    assert!(tools.headers.get("mcp-session-id").is_none());
    let ack = tools.expect("notifications/subscriptions/acknowledged").await?;
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], 7, "the listen id, with its JSON type: {ack}");
    assert_eq!(ack["params"]["notifications"], json!({"toolsListChanged": true}), "the honoured subset");
    let mut prompts = Listening::open(&c, json!("p"), json!({"promptsListChanged": true})).await?;
    let ack = prompts.expect("notifications/subscriptions/acknowledged").await?;
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], "p");
    let url = format!("http://127.0.0.1:{}/metrics", gw.port());
    let gauge = |n: f64| move |s: &crate::metrics::Scrape| s.count("toolgate_listen_streams_active", &[]) == n;
    scrape_until(&url, "two listen streams open", gauge(2.0)).await?;

    // The fixture's tool list changes: toolgate re-lists it and tells the
    // stream that asked for tool changes, and only that one.
    let changed = call(&c, 2, "test_trigger_tool_change", json!({})).await?;
    assert!(changed["content"][0]["text"].as_str().unwrap_or("").contains("added"), "{changed}");
    let note = tools.expect("notifications/tools/list_changed").await?;
    assert_eq!(note["params"]["_meta"][SUBSCRIPTION_ID], 7, "{note}");
    let listed = c.send(modern_post(&c, &body(json!(3), "tools/list", json!({})), None)).await?;
    let names = listed.messages[0]["result"]["tools"].to_string();
    assert!(names.contains("test_trigger_added_tool"), "the catalog has the new tool: {names}");

    call(&c, 4, "test_trigger_prompt_change", json!({})).await?;
    let note = prompts.expect("notifications/prompts/list_changed").await?;
    assert_eq!(note["params"]["_meta"][SUBSCRIPTION_ID], "p", "{note}");
    assert!(tools.next_within(Duration::from_millis(500)).await.is_none(), "no prompt change for a tools stream");

    // Closing a stream frees it.
    tools.close();
    prompts.close();
    scrape_until(&url, "the listen streams closed", gauge(0.0)).await?;
    gw.wait_log("listen stream closed", WITHIN).await.ok();
    Ok(())
}

#[tokio::test]
async fn resource_subscriptions_reach_listeners_and_2025_sessions_through_a_2026_upstream() -> Result<()> {
    let gw = Toolgate::start(&fixture("")).await?;
    let modern = gw.client();
    let mut listener =
        Listening::open(&modern, json!(9), json!({"resourceSubscriptions": [WATCHED, "test://nobody-serves-this"]}))
            .await?;
    let ack = listener.expect("notifications/subscriptions/acknowledged").await?;
    // Every URI toolgate could route; the fixture lists a template for
    // `test://template/…` only, so it is the only candidate for any URI.
    assert!(ack["params"]["notifications"]["resourceSubscriptions"].to_string().contains(WATCHED), "{ack}");

    // A 2025 client subscribes through the same 2026 upstream.
    let legacy = Client::connected(&gw.url, json!({})).await?;
    assert_eq!(legacy.result("resources/subscribe", json!({"uri": WATCHED})).await?, json!({}));
    let mut standalone = legacy.listen().await?;

    // The upstream's update reaches both.
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        let sent = call(&modern, 2, "fixture_update_resource", json!({"uri": WATCHED})).await?;
        if sent["structuredContent"]["sent"] == true {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            bail!("the upstream never heard of toolgate's subscription: {sent}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let update = listener.expect("notifications/resources/updated").await?;
    assert_eq!(update["params"]["uri"], WATCHED);
    assert_eq!(update["params"]["_meta"][SUBSCRIPTION_ID], 9);
    let update = standalone.next().await?;
    assert_eq!(update["method"], "notifications/resources/updated", "{update}");
    assert_eq!(update["params"]["uri"], WATCHED);
    assert!(update["params"].get("_meta").is_none_or(|m| m.get(SUBSCRIPTION_ID).is_none()), "{update}");

    // Once both let go, the upstream stops listening for the URI.
    assert_eq!(legacy.result("resources/unsubscribe", json!({"uri": WATCHED})).await?, json!({}));
    listener.close();
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        let sent = call(&modern, 3, "fixture_update_resource", json!({"uri": WATCHED})).await?;
        if sent["structuredContent"]["sent"] == false {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            bail!("the upstream still listens for {WATCHED} after every holder let go");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

#[tokio::test]
async fn a_stdio_listen_is_tagged_and_cancelled_with_notifications_cancelled() -> Result<()> {
    let mut gw = StdioGateway::start(&fixture("")).await?;
    gw.send(body(json!("L"), "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}))).await?;
    let (result, others) = gw
        .request(1, "tools/call", json!({"name": "test_trigger_tool_change", "arguments": {}, "_meta": envelope()}))
        .await?;
    assert!(result["result"].is_object(), "{result}");
    let mut seen = others;
    // The list change may come after the call's answer, or, when it came
    // before the upstream acknowledged toolgate's own listen stream, once
    // toolgate has listed again.
    let changed = |seen: &[Value]| seen.iter().any(|m| m["method"] == "notifications/tools/list_changed");
    let deadline = tokio::time::Instant::now() + WITHIN;
    while !changed(&seen) {
        if tokio::time::Instant::now() > deadline {
            bail!("no tools/list_changed on stdio: {seen:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let (_, more) = gw.request(2, "tools/list", json!({"_meta": envelope()})).await?;
        seen.extend(more);
    }
    assert_eq!(seen[0]["method"], "notifications/subscriptions/acknowledged", "{seen:?}");
    for note in &seen {
        assert_eq!(note["params"]["_meta"][SUBSCRIPTION_ID], "L", "{note}");
    }
    // The client ends it: no answer to a cancelled request, and the
    // connection goes on.
    gw.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "L"}})).await?;
    let (list, others) = gw.request(3, "tools/list", json!({"_meta": envelope()})).await?;
    assert!(list["result"]["tools"].is_array());
    assert!(others.iter().all(|m| m.get("id") != Some(&json!("L"))), "{others:?}");
    Ok(())
}

#[tokio::test]
async fn listen_streams_follow_the_client_policy_and_end_when_a_reload_removes_the_client() -> Result<()> {
    let clients = alice_and_bob("tools = [\"echo\"]");
    // Shared, so that bob's call changes the upstream's tools for everyone
    // (with `per_session` his sessionless calls have an upstream session of
    // their own, whose tools are his alone).
    let fx = fixture("sharing = \"shared\"");
    let gw = Toolgate::start_raw(&format!("{SERVER}{clients}{fx}")).await?;
    let alice = Client::with_bearer(&gw.url, ALICE)?;
    let bob = Client::with_bearer(&gw.url, BOB)?;
    let mut alice_tools = Listening::open(&alice, json!(1), json!({"toolsListChanged": true})).await?;
    let mut bob_tools = Listening::open(&bob, json!(1), json!({"toolsListChanged": true})).await?;
    alice_tools.expect("notifications/subscriptions/acknowledged").await?;
    bob_tools.expect("notifications/subscriptions/acknowledged").await?;

    // The upstream adds a tool alice's allowlist does not name: bob hears
    // of it, alice does not.
    call(&bob, 2, "test_trigger_tool_change", json!({})).await?;
    let note = bob_tools.expect("notifications/tools/list_changed").await?;
    assert_eq!(note["params"]["_meta"][SUBSCRIPTION_ID], 1);
    let heard = alice_tools.next_within(Duration::from_secs(1)).await;
    assert!(heard.is_none(), "alice cannot see the new tool: {heard:?}");

    // A reload takes alice out of [auth]: her stream ends, gracefully.
    let tmp = gw.config_path.with_extension("toml.new");
    std::fs::write(&tmp, format!("{SERVER}{}{fx}", client_entry("bob", BOB, "")))?;
    std::fs::rename(&tmp, &gw.config_path)?;
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        match alice_tools.next_within(deadline - tokio::time::Instant::now()).await {
            Some(m) if m.get("result").is_some() => {
                assert_eq!(m["id"], 1);
                assert_eq!(m["result"]["resultType"], "complete", "{m}");
                break;
            }
            Some(_) => continue,
            None => bail!("alice's stream did not end after her client was removed"),
        }
    }
    Ok(())
}

#[tokio::test]
async fn shutdown_ends_a_listen_stream_with_its_result() -> Result<()> {
    // A long grace: the stream must end at once, not when the grace runs out.
    let gw =
        Toolgate::start_with(&fixture(""), "[server]\nlisten = \"127.0.0.1:0\"\nshutdown_grace = \"60s\"\n").await?;
    let c = gw.client();
    let mut stream = Listening::open(&c, json!("s-1"), json!({"toolsListChanged": true})).await?;
    stream.expect("notifications/subscriptions/acknowledged").await?;
    let started = std::time::Instant::now();
    let pid = nix::unistd::Pid::from_raw(i32::try_from(gw.proc.pid())?);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM)?;
    let cancelled = stream.expect("notifications/cancelled").await?;
    assert_eq!(cancelled["params"]["requestId"], "s-1");
    assert_eq!(cancelled["params"]["_meta"][SUBSCRIPTION_ID], "s-1");
    let end = stream.next_within(WITHIN).await.ok_or_else(|| anyhow!("no result"))?;
    assert_eq!(end["id"], "s-1");
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert_eq!(end["result"]["_meta"][SUBSCRIPTION_ID], "s-1", "{end}");
    // Like every 2026 result, it names toolgate.
    assert_eq!(end["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "toolgate", "{end}");
    assert!(started.elapsed() < Duration::from_secs(30), "the stream held up the shutdown");
    Ok(())
}

#[tokio::test]
async fn a_tool_change_before_the_upstream_acknowledges_toolgates_listen_is_not_lost() -> Result<()> {
    // The fixture starts hearing a listen stream 3 s after it opens: a
    // change in that window is announced to nobody, and it comes after
    // toolgate's first crawl. toolgate lists again once its stream is
    // acknowledged.
    let upstream = fixture_upstream("fx", &["--listen-delay-ms", "3000"], "mode = \"passthrough\"");
    let gw = Toolgate::start(&upstream).await?;
    let c = gw.client();
    let mut listener = Listening::open(&c, json!(1), json!({"toolsListChanged": true})).await?;
    listener.expect("notifications/subscriptions/acknowledged").await?;
    let changed = call(&c, 2, "test_trigger_tool_change", json!({})).await?;
    assert!(changed["content"][0]["text"].as_str().unwrap_or("").contains("added"), "{changed}");
    listener.expect("notifications/tools/list_changed").await?;
    let listed = c.send(modern_post(&c, &body(json!(3), "tools/list", json!({})), None)).await?;
    let names = listed.messages[0]["result"]["tools"].to_string();
    assert!(names.contains("test_trigger_added_tool"), "the catalog has the new tool: {names}");
    // Listing again found a change, so the listener heard of it once; a
    // second listing that finds none tells nobody.
    assert!(listener.next_within(Duration::from_secs(1)).await.is_none(), "one change, one notification");
    Ok(())
}

#[tokio::test]
async fn a_client_limited_to_some_upstreams_hears_nothing_of_the_others_tools() -> Result<()> {
    let clients = alice_and_bob("upstreams = [\"fx\"]");
    for mode in ["passthrough", "progressive"] {
        let shared = format!("mode = \"{mode}\"\nsharing = \"shared\"");
        let upstreams = format!("{}{}", fixture_upstream("fx", &[], &shared), fixture_upstream("fy", &[], &shared));
        let gw = Toolgate::start_raw(&format!("{SERVER}{clients}{upstreams}")).await?;
        let (alice, bob) = (Client::with_bearer(&gw.url, ALICE)?, Client::with_bearer(&gw.url, BOB)?);
        let mut alice_listen = Listening::open(&alice, json!(1), json!({"toolsListChanged": true})).await?;
        let mut bob_listen = Listening::open(&bob, json!(1), json!({"toolsListChanged": true})).await?;
        alice_listen.expect("notifications/subscriptions/acknowledged").await?;
        bob_listen.expect("notifications/subscriptions/acknowledged").await?;
        let mut alice_session = Client::with_bearer(&gw.url, ALICE)?;
        alice_session.initialize(json!({})).await?;
        let mut alice_stream = alice_session.listen().await?;
        let trigger = |upstream: &str| format!("{upstream}__test_trigger_tool_change");
        if mode == "progressive" {
            let tools = json!([trigger("fx"), trigger("fy")]);
            call(&bob, 10, "describe_tools", json!({"tools": tools})).await?;
        }

        // fy (which alice may not use) changes its tools: bob hears of it.
        call(&bob, 2, &trigger("fy"), json!({})).await?;
        bob_listen.expect("notifications/tools/list_changed").await?;
        let heard = alice_listen.next_within(Duration::from_secs(2)).await;
        assert!(heard.is_none(), "{mode}: alice's listen stream heard of fy: {heard:?}");
        let heard = alice_stream.next_within(Duration::from_millis(500)).await;
        assert!(heard.is_none(), "{mode}: alice's session heard of fy: {heard:?}");

        // fx (hers) changes: she hears of it on both.
        call(&bob, 3, &trigger("fx"), json!({})).await?;
        alice_listen.expect("notifications/tools/list_changed").await?;
        let heard = alice_stream.next_within(WITHIN).await.ok_or_else(|| anyhow!("no list_changed on the session"))?;
        assert_eq!(heard["method"], "notifications/tools/list_changed");
    }
    Ok(())
}

#[tokio::test]
async fn a_session_with_its_own_toolset_hears_nothing_of_upstreams_it_cannot_use() -> Result<()> {
    let clients = alice_and_bob("upstreams = [\"fx\"]");
    // fx runs a child per session: alice's own changes only her toolset.
    let fx = fixture_upstream("fx", &[], "mode = \"passthrough\"\nprotocol = \"2025-11-25\"");
    let fy = fixture_upstream("fy", &[], "mode = \"passthrough\"\nsharing = \"shared\"");
    let gw = Toolgate::start_raw(&format!("{SERVER}{clients}{fx}{fy}")).await?;
    let mut alice = Client::with_bearer(&gw.url, ALICE)?;
    alice.initialize(json!({})).await?;
    let mut alice_stream = alice.listen().await?;
    alice.call_tool("fx__test_trigger_tool_change", json!({})).await?;
    let own = alice_stream.next_within(WITHIN).await.ok_or_else(|| anyhow!("no list_changed for her own change"))?;
    assert_eq!(own["method"], "notifications/tools/list_changed");
    let before = alice.result("tools/list", json!({})).await?;

    let bob = Client::with_bearer(&gw.url, BOB)?;
    let mut bob_listen = Listening::open(&bob, json!(1), json!({"toolsListChanged": true})).await?;
    bob_listen.expect("notifications/subscriptions/acknowledged").await?;
    call(&bob, 2, "fy__test_trigger_tool_change", json!({})).await?;
    bob_listen.expect("notifications/tools/list_changed").await?;
    let heard = alice_stream.next_within(Duration::from_secs(2)).await;
    assert!(heard.is_none(), "alice heard of fy: {heard:?}");
    assert_eq!(alice.result("tools/list", json!({})).await?, before, "and her list is what it was");
    Ok(())
}
