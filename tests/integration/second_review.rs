//! The findings of the second adversarial review of 2026-11 (shared notes,
//! `security-review-2026-11b.md`), each reproduced against the real binary:
//! 1. the listing of a session with its own toolset and a concern filter is
//!    kept with the session, not piled up gateway-wide;
//! 2. tasks on a shared upstream are their creator's alone (session and
//!    sessionless);
//! 3. a session id that is no id of toolgate's (a tombstone's) is an unknown
//!    session, never a store outage that rewrites every session;
//! 4. subscriptions are bounded per session, and each costs one short
//!    write to the shared store;
//! 5. undeclared concern names are logged once per request, escaped;
//! 6. what a session keeps of its client is bounded, and a refused log
//!    level is not kept;
//! 7. a URL elicitation's completion reaches the session that owns its id;
//! 8. a listen stream's resource subscriptions are bounded and counted in
//!    `calls_per_minute`;
//! 9. the separate metrics listener caps connections and times idle ones
//!    out;
//! 10. a session cannot make every search rebuild its own index;
//! 11. a `DELETE` during a Redis stall ends the session, truthfully.

use std::io::{Read as _, Write as _};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, ensure};
use futures::StreamExt as _;
use reqwest::StatusCode;
use serde_json::{Value, json};
use sse_stream::SseByteStream;

use crate::common::*;
use crate::interop_matrix::peers::everything_js;

const ALICE: &str = "alice-key-0123456789abcdef";
const BOB: &str = "bob-key-0123456789abcdef01";

const CONCERNS: &str = r#"
[[concerns]]
name = "security"
description = "Security level"
values = ["high", "low"]

[[concerns]]
name = "cost"
description = "What a call costs"
values = ["minimal", "moderate"]
default = "minimal"
"#;

/// A process's resident memory, in KiB.
fn rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| anyhow!("no VmRSS"))
}

fn alice_and_bob(policy: &str) -> String {
    format!("{}{}", client_entry("alice", ALICE, policy), client_entry("bob", BOB, policy))
}

/// A 2026-07-28 (sessionless) request of the holder of `key`; its answer.
async fn modern(gw_url: &str, key: &str, id: i64, method: &str, params: Value) -> Result<Value> {
    let c = Client::with_bearer(gw_url, key)?;
    let body = modern_body("second-review", json!(id), method, params);
    let name = body["params"]["name"].as_str().map(str::to_owned);
    let reply = c.send(modern_post(&c, &body, name.as_deref())).await?;
    reply.response(&json!(id)).cloned().ok_or_else(|| anyhow!("no answer to {method}: {reply:?}"))
}

// --- 1 ----------------------------------------------------------------------

#[tokio::test]
async fn a_session_with_its_own_toolset_and_concerns_keeps_one_listing_not_one_per_change() -> Result<()> {
    let upstream = fixture_upstream("fx", &["--many-tools", "600"], "protocol = \"2025-11-25\"");
    let gw = Toolgate::start_with(&upstream, CONCERNS).await?;
    let mut c = Client::new(&gw.url);
    c.initialize(json!({})).await?;
    c.result("concerns/update", json!({"concerns": {"security": "low"}})).await?;
    c.result("resources/read", json!({"uri": "resource:///tool_descriptions?tools=fixture_notify_list_changed"}))
        .await?;
    let change_and_list = async |c: &Client| -> Result<()> {
        c.call_tool("fixture_notify_list_changed", json!({})).await?;
        c.result("tools/list", json!({})).await?;
        Ok(())
    };
    for _ in 0..10 {
        change_and_list(&c).await?;
    }
    let before = rss_kib(gw.proc.pid())?;
    let rounds = 60;
    for _ in 0..rounds {
        change_and_list(&c).await?;
    }
    let grown = rss_kib(gw.proc.pid())?.saturating_sub(before);
    eprintln!("RSS grew by {} MiB over {rounds} toolset changes with a concern filter", grown / 1024);
    // Before: about 4.5 MB a change (one filtered catalog of 650 tools kept
    // per change), 270 MB here.
    ensure!(grown < 80 * 1024, "RSS grew by {} MiB over {rounds} changes", grown / 1024);
    Ok(())
}

// --- 2 ----------------------------------------------------------------------

fn shared_everything() -> String {
    format!(
        "[[upstream]]\nname = \"ev\"\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n\
         mode = \"passthrough\"\nsharing = \"shared\"\n",
        everything_js()
    )
}

fn every_capability() -> Value {
    json!({
        "sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {"listChanged": true},
        "tasks": {"list": {}, "cancel": {}, "requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}}},
    })
}

/// Starts a research task on `c`; its id.
async fn start_task(c: &Client, topic: &str) -> Result<String> {
    let created = c
        .result(
            "tools/call",
            json!({"name": "simulate-research-query", "arguments": {"topic": topic}, "task": {"ttl": 60000}}),
        )
        .await?;
    created["task"]["taskId"].as_str().map(str::to_owned).ok_or_else(|| anyhow!("no task: {created}"))
}

/// The error of an answer, with the task id it names replaced, to compare
/// the answers about two ids.
fn unknown_task(answer: &Value, id: &str) -> Value {
    let mut error = answer["error"].clone();
    if let Some(message) = error["message"].as_str() {
        error["message"] = json!(message.replace(id, "<id>"));
    }
    if error["data"]["taskId"] == id {
        error["data"]["taskId"] = json!("<id>");
    }
    error
}

#[tokio::test]
async fn tasks_of_a_shared_upstream_are_their_creators_alone() -> Result<()> {
    let gw = Toolgate::start_with(&shared_everything(), &alice_and_bob("")).await?;
    let mut alice = Client::with_bearer(&gw.url, ALICE)?;
    alice.initialize(every_capability()).await?;
    let mut bob = Client::with_bearer(&gw.url, BOB)?;
    bob.initialize(every_capability()).await?;
    let hers = start_task(&alice, "alice-secret-topic").await?;
    let his = start_task(&bob, "bob-topic").await?;

    // Alice sees and reads her own.
    let listed = alice.result("tasks/list", json!({})).await?;
    let ids: Vec<&str> =
        listed["tasks"].as_array().into_iter().flatten().filter_map(|t| t["taskId"].as_str()).collect();
    ensure!(ids == [hers.as_str()], "alice lists {ids:?}");
    ensure!(alice.result("tasks/get", json!({"taskId": hers})).await?["taskId"] == hers.as_str());

    // Bob lists his own only, and Alice's id is as unknown to him as a
    // made-up one, for every task method, in his session and sessionless.
    let listed = bob.result("tasks/list", json!({})).await?;
    let ids: Vec<&str> =
        listed["tasks"].as_array().into_iter().flatten().filter_map(|t| t["taskId"].as_str()).collect();
    ensure!(ids == [his.as_str()], "bob lists {ids:?}");
    let made_up = "00000000-0000-4000-8000-000000000000";
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let foreign = bob.request(method, json!({"taskId": hers})).await?;
        let unknown = bob.request(method, json!({"taskId": made_up})).await?;
        ensure!(foreign.get("result").is_none(), "bob's {method} of alice's task: {foreign}");
        ensure!(unknown_task(&foreign, &hers) == unknown_task(&unknown, made_up), "{foreign} vs {unknown}");
        let sessionless = modern(&gw.url, BOB, 7, method, json!({"taskId": hers})).await?;
        ensure!(sessionless.get("result").is_none(), "bob's sessionless {method}: {sessionless}");
        ensure!(unknown_task(&sessionless, &hers) == unknown_task(&unknown, made_up), "{sessionless}");
    }
    // Alice's task was not cancelled by Bob, and her result is hers.
    let status = alice.result("tasks/get", json!({"taskId": hers})).await?;
    ensure!(status["status"] != "cancelled", "{status}");

    // A sessionless client's task is its client's: Alice, sessionless, polls
    // hers; Bob, sessionless, cannot.
    let created = modern(
        &gw.url,
        ALICE,
        1,
        "tools/call",
        json!({"name": "simulate-research-query", "arguments": {"topic": "t"}, "task": {"ttl": 60000}}),
    )
    .await?;
    let id = created["result"]["task"]["taskId"].as_str().ok_or_else(|| anyhow!("no task: {created}"))?.to_owned();
    let own = modern(&gw.url, ALICE, 2, "tasks/get", json!({"taskId": id})).await?;
    ensure!(own["result"]["taskId"] == id.as_str(), "{own}");
    let foreign = modern(&gw.url, BOB, 3, "tasks/get", json!({"taskId": id})).await?;
    ensure!(foreign["error"]["code"] == -32602, "{foreign}");
    Ok(())
}

// --- 3, 4, 6, 11: the shared store ---------------------------------------------

/// A toolgate sharing sessions in `redis`, with `extra` configuration, in
/// front of the fixture.
async fn shared_toolgate(redis: &RedisServer, extra: &str) -> Result<Toolgate> {
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{extra}\n[state]\nredis_url = \"{}\"\n{}",
        redis.url(),
        fixture_upstream("fx", &[], "")
    );
    Toolgate::start_raw(&config).await
}

async fn readyz(gw: &Toolgate) -> Result<Value> {
    let url = gw.url.replace("/mcp", "/readyz");
    Ok(reqwest::get(url).await?.json().await?)
}

#[tokio::test]
async fn a_session_id_of_another_form_is_unknown_and_never_a_store_outage() -> Result<()> {
    let Some(redis) = RedisServer::start() else { return Ok(()) };
    let gw = shared_toolgate(&redis, "").await?;
    // Sessions held here, that an outage would write back.
    let mut held = Vec::new();
    for _ in 0..20 {
        held.push(Client::connected(&gw.url, json!({})).await?);
    }
    let mut alice = Client::new(&gw.url);
    alice.initialize(json!({})).await?;
    let id = alice.session.clone().context("a session")?;
    ensure!(alice.delete().await? == StatusCode::OK);
    let writes_before = redis.info_number("total_commands_processed");
    for named in [format!("gone:{id}"), "x".to_owned(), "A".repeat(32), "0".repeat(128)] {
        let mut c = Client::new(&gw.url);
        c.session = Some(named.clone());
        c.version = alice.version.clone();
        let reply = c.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).await?;
        ensure!(reply.status == StatusCode::NOT_FOUND, "{named}: {reply:?}");
    }
    let ready = readyz(&gw).await?;
    ensure!(ready["state"] == "up", "{ready}");
    // Nothing is rewritten: a second later, Redis has seen only the
    // background's own few commands, not one write per session held.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let commands = redis.info_number("total_commands_processed") - writes_before;
    ensure!(commands < 15, "{commands} commands reached Redis");
    ensure!(!gw.logs().contains("writing back the shared sessions"), "{}", gw.logs());
    Ok(())
}

#[tokio::test]
async fn subscriptions_are_bounded_per_session_and_each_costs_one_short_write() -> Result<()> {
    let Some(redis) = RedisServer::start() else { return Ok(()) };
    let gw = shared_toolgate(&redis, "max_subscriptions_per_session = 40").await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let id = c.session.clone().context("a session")?;
    let pad = "p".repeat(1000);
    let subscribe =
        async |i: usize| c.request("resources/subscribe", json!({"uri": format!("test://x/{i}/{pad}")})).await;
    let mut written = Vec::new();
    for batch in 0..2 {
        let before = redis.info_number("total_net_input_bytes");
        for i in batch * 20..(batch + 1) * 20 {
            let answer = subscribe(i).await?;
            ensure!(answer.get("result").is_some(), "{answer}");
        }
        // The record's writes run in the background.
        tokio::time::sleep(Duration::from_millis(500)).await;
        written.push(redis.info_number("total_net_input_bytes") - before);
    }
    eprintln!("bytes into Redis for subscriptions 1-20 and 21-40: {written:?}");
    // Rewriting the whole list each time made the second batch cost about
    // three times the first.
    ensure!(written[1] * 2 < written[0] * 3, "{written:?}");
    ensure!(redis.command(&format!("HEXISTS toolgate:session:{id} s:test://x/0/{pad}")) == ":1");
    let over = subscribe(40).await?;
    ensure!(over["error"]["code"] == -32014, "{over}");
    let long = c.request("resources/subscribe", json!({"uri": format!("test://{}", "y".repeat(5000))})).await?;
    ensure!(long["error"]["code"] == -32602, "{long}");
    // An unsubscription removes its field, and makes room again.
    c.result("resources/unsubscribe", json!({"uri": format!("test://x/0/{pad}")})).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    ensure!(redis.command(&format!("HEXISTS toolgate:session:{id} s:test://x/0/{pad}")) == ":0");
    ensure!(subscribe(41).await?.get("result").is_some());
    Ok(())
}

#[tokio::test]
async fn a_client_description_is_bounded_and_a_refused_log_level_is_not_kept() -> Result<()> {
    let Some(redis) = RedisServer::start() else { return Ok(()) };
    let gw = shared_toolgate(&redis, "").await?;
    let initialize = |info: Value| {
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info}})
    };
    let big = gw.client().post(&initialize(json!({"name": "x".repeat(20_000), "version": "1"}))).await?;
    let answer = big.response(&json!(0)).context("an answer")?;
    ensure!(answer["error"]["code"] == -32602, "{answer}");
    ensure!(big.headers.get("mcp-session-id").is_none());
    let fits = gw.client().post(&initialize(json!({"name": "x".repeat(15_000), "version": "1"}))).await?;
    ensure!(fits.status == StatusCode::OK && fits.headers.get("mcp-session-id").is_some(), "{fits:?}");

    let c = Client::connected(&gw.url, json!({})).await?;
    let id = c.session.clone().context("a session")?;
    let refused = c.request("logging/setLevel", json!({"level": "verbose"})).await?;
    ensure!(refused["error"]["code"] == -32602, "{refused}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let kept = redis.bulk(&format!("HGET toolgate:session:{id} log"));
    ensure!(kept.as_deref() == Some("null"), "{kept:?}");
    c.result("logging/setLevel", json!({"level": "debug"})).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let kept = redis.bulk(&format!("HGET toolgate:session:{id} log"));
    ensure!(kept.as_deref() == Some("\"debug\""), "{kept:?}");
    Ok(())
}

#[tokio::test]
async fn a_delete_during_a_redis_stall_ends_the_session_there_once_redis_answers() -> Result<()> {
    let Some(redis) = RedisServer::start() else { return Ok(()) };
    let gw = shared_toolgate(&redis, "").await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let id = c.session.clone().context("a session")?;
    redis.freeze();
    let status = c.delete().await?;
    redis.thaw();
    ensure!(status == StatusCode::OK, "DELETE during the stall: {status}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while redis.command(&format!("EXISTS toolgate:session:{id}")) != ":0"
        || redis.command(&format!("EXISTS toolgate:session:gone:{id}")) != ":1"
    {
        ensure!(Instant::now() < deadline, "the record was never ended:\n{}", gw.logs());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let again = c.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).await?;
    ensure!(again.status == StatusCode::NOT_FOUND, "{again:?}");
    Ok(())
}

// --- 5 ----------------------------------------------------------------------

#[tokio::test]
async fn undeclared_concern_names_are_logged_once_per_request_and_escaped() -> Result<()> {
    let gw = Toolgate::start_with(&fixture_upstream("fx", &[], ""), CONCERNS).await?;
    let c = Client::new(&gw.url);
    let forged =
        "zz\n2026-11-28T12:00:00.000000Z  INFO toolgate::gateway::reload: configuration reloaded FORGED-LINE\u{1b}[31m";
    let mut concerns: serde_json::Map<String, Value> = (0..60).map(|i| (format!("k{i}"), json!("v"))).collect();
    concerns.insert(forged.into(), json!("v"));
    let mut params = json!({});
    params["_meta"] = toolgate_test_support::modern::envelope("second-review", json!({}));
    params["_meta"]["concerns"] = Value::Object(concerns);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params});
    let reply = c.send(modern_post(&c, &body, None)).await?;
    ensure!(reply.response(&json!(1)).is_some_and(|r| r.get("result").is_some()), "{reply:?}");
    // A session's update and its notifications/initialized: a bad value is
    // not echoed in the log.
    let mut s = Client::new(&gw.url);
    s.initialize(json!({})).await?;
    s.result("concerns/update", json!({"concerns": {forged: "v"}})).await?;
    s.notify("notifications/initialized", Some(json!({"concerns": {"security": forged}}))).await?;
    // A method name is the client's too (it names the request's span).
    s.request("x\nFORGED-METHOD \u{1b}[31m", json!({})).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let logs = gw.logs();
    let warned = logs.lines().filter(|l| l.contains("does not declare")).count();
    ensure!(warned == 2, "{warned} warnings:\n{logs}");
    ensure!(!logs.lines().any(|l| l.contains("FORGED-LINE") && !l.contains("does not declare")), "{logs}");
    ensure!(!logs.lines().any(|l| l.starts_with("FORGED-METHOD")), "{logs}");
    ensure!(logs.contains("x\\nFORGED-METHOD"), "the method is logged, escaped:\n{logs}");
    ensure!(!logs.contains('\u{1b}'), "a raw escape reached the log");
    ensure!(logs.contains("concerns in notifications/initialized ignored"), "{logs}");
    // Too many names at once are refused outright.
    let many: serde_json::Map<String, Value> = (0..65).map(|i| (format!("k{i}"), json!("v"))).collect();
    let refused = s.request("concerns/update", json!({"concerns": many})).await?;
    ensure!(refused["error"]["code"] == -32602, "{refused}");
    Ok(())
}

// --- 7 ----------------------------------------------------------------------

#[tokio::test]
async fn a_url_elicitation_completion_reaches_the_session_that_owns_its_id() -> Result<()> {
    let (_fixture, url) = start_http_server(fixture_exe(), &["--http", "127.0.0.1:0"]).await?;
    let upstream =
        http_upstream("web", &url, "sharing = \"shared\"\nmode = \"passthrough\"\nprotocol = \"2025-11-25\"");
    let gw = Toolgate::start_with(&upstream, &alice_and_bob("")).await?;
    let url_mode = json!({"elicitation": {"url": {}}});
    let mut alice = Client::with_bearer(&gw.url, ALICE)?;
    alice.initialize(url_mode.clone()).await?;
    let mut bob = Client::with_bearer(&gw.url, BOB)?;
    bob.initialize(url_mode).await?;
    let mut alice_get = alice.listen().await?;
    let mut bob_get = bob.listen().await?;
    let call = |id: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "fixture_url_elicitation", "arguments": {"id": "victim-E"}}})
    };
    let mut alice_call = alice.open(&call("a")).await?;
    let alice_asked = alice_call.next().await.with_context(|| gw.logs())?;
    ensure!(alice_asked["method"] == "elicitation/create", "{alice_asked}");
    let mut bob_call = bob.open(&call("b")).await?;
    let bob_asked = bob_call.next().await.context("bob asked")?;
    ensure!(bob_asked["method"] == "elicitation/create", "{bob_asked}");

    let status = alice.respond(&alice_asked["id"], json!({"action": "accept"})).await?;
    ensure!(status == StatusCode::ACCEPTED, "{status} {alice_asked}");
    ensure!(alice_call.next().await.with_context(|| format!("alice's answer\n{}", gw.logs()))?["id"] == "a");
    let heard = alice_get.next().await.with_context(|| format!("alice's completion\n{}", gw.logs()))?;
    ensure!(heard["method"] == "notifications/elicitation/complete", "{heard}");
    ensure!(bob_get.next_within(Duration::from_millis(500)).await.is_none(), "bob heard alice's completion");
    // Bob's own completion, for the same id, is his.
    bob.respond(&bob_asked["id"], json!({"action": "accept"})).await?;
    ensure!(bob_call.next().await.context("bob's answer")?["id"] == "b");
    let heard = bob_get.next().await.with_context(|| format!("bob's completion\n{}", gw.logs()))?;
    ensure!(heard["method"] == "notifications/elicitation/complete", "{heard}");
    ensure!(alice_get.next_within(Duration::from_millis(500)).await.is_none(), "alice heard bob's completion");
    Ok(())
}

// --- 8 ----------------------------------------------------------------------

/// Opens a 2026 listen stream of the holder of `key` asking for `n`
/// resource subscriptions; its first message (the refusal, or the
/// acknowledgement of an accepted stream), after which it is dropped.
async fn listen_first(gw: &Toolgate, key: &str, n: usize) -> Result<Value> {
    let uris: Vec<String> = (0..n).map(|i| format!("test://static-text#{i}")).collect();
    let c = Client::with_bearer(&gw.url, key)?;
    let body = modern_body(
        "second-review",
        json!("L"),
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": uris}}),
    );
    let response = modern_post(&c, &body, None).send().await?;
    let sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .starts_with("text/event-stream");
    if !sse {
        return Ok(response.json().await?);
    }
    let mut events = SseByteStream::new(response.bytes_stream());
    let first = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(Ok(event)) = events.next().await {
            if let Some(data) = event.data.filter(|d| !d.is_empty()) {
                return serde_json::from_str::<Value>(&data).ok();
            }
        }
        None
    });
    first.await?.ok_or_else(|| anyhow!("the listen stream ended with no message"))
}

/// Whether `message` is the refusal of a request with error `code`.
fn refused_with(message: &Value, code: i64) -> bool {
    message["error"]["code"] == code
}

#[tokio::test]
async fn a_listen_stream_subscriptions_are_bounded_and_counted_in_calls_per_minute() -> Result<()> {
    let upstream = fixture_upstream("fx", &[], "mode = \"passthrough\"");
    let sections = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nmax_subscriptions_per_session = 50\n{}{}",
        client_entry("alice", ALICE, "calls_per_minute = 10"),
        client_entry("bob", BOB, "")
    );
    let gw = Toolgate::start_with(&upstream, &sections).await?;
    let over = listen_first(&gw, BOB, 51).await?;
    ensure!(refused_with(&over, -32014), "{over}");
    // Each URI takes a call from the client's calls_per_minute.
    let over_rate = listen_first(&gw, ALICE, 11).await?;
    ensure!(refused_with(&over_rate, -32015), "{over_rate}");
    let fits = listen_first(&gw, ALICE, 5).await?;
    ensure!(fits.get("error").is_none(), "{fits}");
    let spent = listen_first(&gw, ALICE, 6).await?;
    ensure!(refused_with(&spent, -32015), "{spent}");
    Ok(())
}

// --- 9 ----------------------------------------------------------------------

#[tokio::test]
async fn the_metrics_listener_caps_connections_and_closes_idle_ones() -> Result<()> {
    let port = free_port();
    let sections = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nheader_read_timeout = \"1s\"\n[metrics]\nlisten = \"127.0.0.1:{port}\"\n"
    );
    let gw = Toolgate::start_with(&fixture_upstream("fx", &[], ""), &sections).await?;
    gw.wait_log("serving metrics on", Duration::from_secs(10)).await?;
    let opened = Instant::now();
    let mut idle = Vec::new();
    for _ in 0..40 {
        let stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        idle.push(stream);
    }
    // Every idle connection is closed: those past the cap at once, the
    // rest when their header is overdue.
    let mut closed = 0;
    for stream in &mut idle {
        let mut byte = [0u8; 1];
        if matches!(stream.read(&mut byte), Ok(0) | Err(_)) {
            closed += 1;
        }
    }
    eprintln!("{closed} of 40 idle metrics connections closed within {:?}", opened.elapsed());
    ensure!(closed == 40, "{closed} of 40 closed");
    ensure!(opened.elapsed() < Duration::from_secs(5));
    // A scrape still works.
    let mut scrape = std::net::TcpStream::connect(("127.0.0.1", port))?;
    scrape.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")?;
    let mut answer = String::new();
    scrape.read_to_string(&mut answer)?;
    ensure!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    Ok(())
}

// --- 10 ---------------------------------------------------------------------

#[tokio::test]
async fn a_session_changing_its_toolset_cannot_make_every_search_rebuild_its_index() -> Result<()> {
    let upstream = fixture_upstream("fx", &["--many-tools", "300"], "protocol = \"2025-11-25\"");
    let gw = Toolgate::start_with(&upstream, "[disclosure]\nlisting = \"search\"\n").await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    c.result("resources/read", json!({"uri": "resource:///tool_descriptions?tools=fixture_notify_list_changed"}))
        .await?;
    let search = async |query: &str| c.call_tool("search_tools", json!({"query": query})).await;
    c.call_tool("fixture_notify_list_changed", json!({})).await?;
    // The session's own tool is found once its index is built (in the
    // background: a debug build takes seconds).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let found = search("a tool added at run time").await?;
        if text_of(&found).contains("fixture_added_1") {
            break;
        }
        ensure!(Instant::now() < deadline, "the session's own tool was never found: {found}\n{}", gw.logs());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let built = || gw.logs().matches("tool search index built").count();
    let before = built();
    let started = Instant::now();
    let rounds = 8;
    for _ in 0..rounds {
        c.call_tool("fixture_notify_list_changed", json!({})).await?;
        search("issues in a project").await?;
    }
    let rebuilt = built() - before;
    let allowed = 1 + usize::try_from(started.elapsed().as_secs() / 2).unwrap_or(usize::MAX);
    eprintln!("{rounds} toolset changes and searches in {:?}: {rebuilt} index builds", started.elapsed());
    ensure!(rebuilt <= allowed, "{rebuilt} builds in {:?} (at most {allowed})", started.elapsed());
    Ok(())
}
