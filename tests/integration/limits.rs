//! The limits toolgate holds every client to, against the real binary: what
//! a client that holds connections without using them, sends too much, opens
//! too many sessions or requests, or uses a session slowly gets; and what a
//! SIGTERM does to a call in progress.

use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::common::*;
use crate::downstream::{LegacyClient, StdioGateway};

/// The fixture as a passthrough upstream: its tools can be called at once.
fn fixture() -> String {
    fixture_upstream("fx", &[], "mode = \"passthrough\"")
}

async fn start(server: &str) -> Result<Toolgate> {
    Toolgate::start_with(&fixture(), &format!("[server]\nlisten = \"127.0.0.1:0\"\n{server}\n")).await
}

/// Reads until the server closes the connection or `within` passes; returns
/// what arrived and whether it closed.
async fn read_to_close(tcp: &mut TcpStream, within: Duration) -> (String, bool) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, tcp.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return (String::from_utf8_lossy(&got).into_owned(), true),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&got).into_owned(), false),
        }
    }
}

#[tokio::test]
async fn a_body_trickled_a_byte_a_second_and_half_a_header_are_cut_off() -> Result<()> {
    let gw = start("header_read_timeout = \"2s\"\nbody_read_timeout = \"2s\"").await?;
    let port = gw.port();
    // A body declared 100,000 bytes long, sent a byte a second.
    let mut body = TcpStream::connect(("127.0.0.1", port)).await?;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n"
    );
    body.write_all(head.as_bytes()).await?;
    let (mut read, mut write) = body.into_split();
    let trickle = tokio::spawn(async move {
        for _ in 0..60 {
            if write.write_all(b" ").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    // Half a request head.
    let mut header = TcpStream::connect(("127.0.0.1", port)).await?;
    header.write_all(format!("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ").as_bytes()).await?;

    let started = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let closed = loop {
        match tokio::time::timeout(Duration::from_secs(10), read.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => break true,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => break false,
        }
    };
    let answer = String::from_utf8_lossy(&got);
    assert!(closed, "the trickling connection is still open after {:?}", started.elapsed());
    assert!(started.elapsed() < Duration::from_secs(6), "closed only after {:?}", started.elapsed());
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive within"), "{answer}");
    trickle.abort();

    let (answer, closed) = read_to_close(&mut header, Duration::from_secs(6)).await;
    assert!(closed, "the half-header connection is still open");
    assert!(!answer.contains("200 OK"), "{answer}");
    // toolgate still serves everyone else.
    Client::connected(&gw.url, json!({})).await?;
    Ok(())
}

#[tokio::test]
async fn bodies_over_max_body_bytes_get_413_with_a_json_rpc_error() -> Result<()> {
    let gw = start("max_body_bytes = 2048").await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let big = json!({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"pad": "x".repeat(4096)}});
    let reply = c.post(&big).await?;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(reply.messages[0]["error"]["code"], -32600, "{:?}", reply.messages);
    assert!(reply.messages[0]["error"]["message"].as_str().unwrap_or("").contains("2048"), "{:?}", reply.messages);
    // Chunked (no Content-Length): refused the same way.
    let chunks = futures::stream::iter((0..8).map(|_| Ok::<_, std::io::Error>(vec![b' '; 1024])));
    let reply = c.send(c.raw(reqwest::Method::POST).body(reqwest::Body::wrap_stream(chunks))).await?;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    // A body within the limit is served.
    assert!(c.request("ping", json!({})).await?.get("result").is_some());
    Ok(())
}

#[tokio::test]
async fn the_session_after_max_sessions_gets_429_until_one_ends() -> Result<()> {
    let gw = start("max_sessions = 2").await?;
    let first = Client::connected(&gw.url, json!({})).await?;
    let _second = Client::connected(&gw.url, json!({})).await?;
    let third = Client::new(&gw.url);
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let reply = third.post(&body).await?;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(reply.headers.get("mcp-session-id").is_none());
    let error = &reply.messages[0]["error"];
    assert_eq!(error["code"], -32014, "{:?}", reply.messages);
    assert!(error["message"].as_str().unwrap_or("").contains("at most 2"), "{error}");
    // The legacy transport is refused the same way, before its stream opens.
    let base = gw.url.trim_end_matches("/mcp").to_owned();
    let legacy = reqwest::Client::new().get(format!("{base}/sse")).header("accept", "text/event-stream").send().await?;
    assert_eq!(legacy.status(), StatusCode::TOO_MANY_REQUESTS);
    // Ending a session frees its place.
    assert_eq!(first.delete().await?, StatusCode::OK);
    Client::connected(&gw.url, json!({})).await?;
    Ok(())
}

#[tokio::test]
async fn a_session_gets_an_error_for_requests_past_its_in_flight_cap() -> Result<()> {
    let gw = start("max_requests_per_session = 2").await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let slow = |c: Client| async move { c.call_tool("test_tool_slow", json!({"durationMs": 1500})).await };
    let (a, b) = (tokio::spawn(slow(c.clone())), tokio::spawn(slow(c.clone())));
    tokio::time::sleep(Duration::from_millis(400)).await;
    let started = Instant::now();
    let refused = c.request("tools/call", json!({"name": "test_tool_fast", "arguments": {}})).await?;
    assert_eq!(refused["error"]["code"], -32014, "{refused}");
    assert!(started.elapsed() < Duration::from_millis(800), "refused only after {:?}", started.elapsed());
    // The two in flight are answered, and then there is room again.
    for done in [a.await??, b.await??] {
        assert!(text_of(&done).contains("completed after 1500"), "{done}");
    }
    let fast = c.call_tool("test_tool_fast", json!({})).await?;
    assert_eq!(text_of(&fast), "Fast tool completed");
    Ok(())
}

#[tokio::test]
async fn a_stdio_session_lives_as_long_as_its_pipe() -> Result<()> {
    let config = format!("[server]\nsession_idle_timeout = \"1s\"\n{}", fixture());
    let mut gw = StdioGateway::start(&config).await?;
    let (init, _) = gw
        .request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await?;
    assert!(init["result"].is_object(), "{init}");
    gw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
    // In use for three idle timeouts...
    for id in 2..10 {
        let (list, _) = gw.request(id, "tools/list", json!({})).await?;
        assert!(list["result"]["tools"].is_array(), "request {id}: {list}");
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    // ...and idle for two: the session is the pipe's, it is still there.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (call, _) = gw.request(10, "tools/call", json!({"name": "test_tool_fast", "arguments": {}})).await?;
    assert_eq!(text_of(&call["result"]), "Fast tool completed", "{call}");
    Ok(())
}

#[tokio::test]
async fn a_legacy_sse_session_lives_while_it_is_used() -> Result<()> {
    let gw = start("session_idle_timeout = \"1s\"").await?;
    let mut c = LegacyClient::connect(&gw).await?;
    let init = c
        .request(
            1,
            "initialize",
            json!({"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}),
        )
        .await?;
    assert!(init["result"].is_object(), "{init}");
    for id in 2..10 {
        let list = c.request(id, "tools/list", json!({})).await?;
        assert!(list["result"]["tools"].is_array(), "request {id}: {list}");
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    Ok(())
}

/// Sends SIGTERM to toolgate.
fn terminate(gw: &Toolgate) -> Result<()> {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(gw.proc.pid())?);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).context("SIGTERM")
}

#[tokio::test]
async fn sigterm_lets_a_call_in_progress_finish_and_refuses_new_sessions() -> Result<()> {
    let mut gw = start("shutdown_grace = \"10s\"").await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let call = tokio::spawn({
        let c = c.clone();
        async move { c.call_tool("test_tool_slow", json!({"durationMs": 2000})).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    terminate(&gw)?;
    gw.wait_log("shutting down", Duration::from_secs(5)).await?;
    // No new sessions meanwhile (refused, or the port is closed).
    let refused = Client::connected(&gw.url, json!({})).await;
    assert!(refused.is_err(), "a session started during shutdown");
    let done = call.await?.context("the call in progress was not answered")?;
    assert!(text_of(&done).contains("completed after 2000"), "{done}");
    let status = tokio::time::timeout(Duration::from_secs(10), gw.proc.child.wait()).await??;
    assert!(status.success(), "{status}");
    assert!(started.elapsed() < Duration::from_secs(8), "exit took {:?}", started.elapsed());
    Ok(())
}

#[tokio::test]
async fn sigterm_ends_a_call_that_outlasts_the_shutdown_grace() -> Result<()> {
    let mut gw = start("shutdown_grace = \"1s\"").await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let call = tokio::spawn({
        let c = c.clone();
        async move { c.call_tool("test_tool_slow", json!({"durationMs": 60000})).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    terminate(&gw)?;
    let status = tokio::time::timeout(Duration::from_secs(15), gw.proc.child.wait()).await??;
    assert!(status.success(), "{status}");
    // The grace, then the upstream's stop sequence, bounded.
    assert!(started.elapsed() < Duration::from_secs(8), "exit took {:?}", started.elapsed());
    let outcome: Result<Value> = call.await?;
    assert!(!outcome.as_ref().is_ok_and(|v| text_of(v).contains("completed")), "{outcome:?}");
    Ok(())
}

#[tokio::test]
async fn a_description_fetch_names_at_most_64_tools_and_unknown_names_stay_small() -> Result<()> {
    let gw = Toolgate::start(&fixture_upstream("fx", &[], "")).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let read = |uri: String| {
        let c = c.clone();
        async move {
            let result = c.result("resources/read", json!({"uri": uri})).await?;
            let text = result["contents"][0]["text"].as_str().context("no text")?.to_owned();
            anyhow::Ok((text.len(), serde_json::from_str::<Value>(&text)?))
        }
    };
    // 65 names, one of them real: refused as a whole, nothing authorized.
    let mut names: Vec<String> = (0..64).map(|i| format!("nope_{i}")).collect();
    names.push("test_simple_text".into());
    let (_, body) = read(format!("resource:///tool_descriptions?tools={}", names.join(","))).await?;
    assert_eq!(body["error"]["code"], "TOO_MANY_TOOLS", "{body}");
    let refused = c.call_tool("test_simple_text", json!({})).await?;
    assert_eq!(json_of(&refused)["error"]["code"], "TOOL_DESCRIPTION_REQUIRED", "{refused}");
    // 20,000 unknown names: refused, in a few hundred bytes.
    let many: Vec<String> = (0..20_000).map(|i| format!("u{i}")).collect();
    let (size, body) = read(format!("resource:///tool_descriptions?tools={}", many.join(","))).await?;
    assert_eq!(body["error"]["code"], "TOO_MANY_TOOLS");
    assert!(size < 1024, "{size} bytes");
    // 64: served; the catalog is listed once, not per unknown name.
    names.truncate(63);
    names.push("test_simple_text".into());
    let (size, body) = read(format!("resource:///tool_descriptions?tools={}", names.join(","))).await?;
    assert!(body["test_simple_text"]["inputSchema"].is_object(), "{body}");
    assert!(body["nope_0"]["available_tools"].as_array().is_some_and(|a| a.len() > 5), "{body}");
    assert!(body["nope_1"].get("available_tools").is_none(), "{body}");
    assert!(size < 16 * 1024, "{size} bytes");
    let called = c.call_tool("test_simple_text", json!({})).await?;
    assert!(called.get("isError").is_none_or(|e| e == false), "{called}");
    // `describe_tools` is held to the same limit.
    let over = c.call_tool("describe_tools", json!({"tools": many[..65]})).await?;
    assert_eq!(over["isError"], true, "{over}");
    assert_eq!(json_of(&over)["error"]["code"], "TOO_MANY_TOOLS", "{over}");
    Ok(())
}

/// The children toolgate runs now (processes whose parent it is).
fn children_of(pid: u32) -> usize {
    child_pids_of(pid).len()
}

/// The fields of `/proc/<pid>/stat` after the command name (which may hold
/// spaces): state, ppid, ...
fn stat_after_name(pid: &str) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')').map(|(_, rest)| rest.to_owned())
}

/// The pids of the processes whose parent is `pid`.
fn child_pids_of(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|child| {
            let ppid = stat_after_name(&child.to_string())
                .and_then(|after| after.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok()));
            ppid == Some(pid)
        })
        .collect()
}

/// Whether process `pid` still runs (a zombie waiting for its reaper does not).
fn runs(pid: u32) -> bool {
    stat_after_name(&pid.to_string())
        .and_then(|after| after.split_whitespace().next().map(|state| state != "Z" && state != "X"))
        .unwrap_or(false)
}

#[tokio::test]
async fn children_die_when_toolgate_is_killed() -> Result<()> {
    // The child is a shell that runs the fixture, then lingers: it does not
    // end when its standard input closes, so only the parent-death signal
    // can stop it once toolgate is gone.
    let script = format!("{} ; sleep 30", fixture_exe());
    let upstream = stdio_upstream("fx", "sh", &["-c", &script], "mode = \"passthrough\"");
    let mut gw = Toolgate::start_with(&upstream, "[server]\nlisten = \"127.0.0.1:0\"\n").await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    assert_eq!(text_of(&c.call_tool("test_tool_fast", json!({})).await?), "Fast tool completed");
    let children = child_pids_of(gw.proc.pid());
    assert!(!children.is_empty(), "no child process to watch");
    // SIGKILL: toolgate gets no chance to stop its children itself.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(gw.proc.pid())?);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).context("SIGKILL")?;
    tokio::time::timeout(Duration::from_secs(5), gw.proc.child.wait()).await??;
    let deadline = Instant::now() + Duration::from_secs(5);
    while children.iter().any(|&child| runs(child)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left: Vec<_> = children.iter().filter(|&&child| runs(child)).collect();
    assert!(left.is_empty(), "children still running after toolgate was killed: {left:?}");
    Ok(())
}

#[tokio::test]
async fn per_session_children_are_capped_and_idle_ones_reclaimed() -> Result<()> {
    let upstream = fixture_upstream(
        "fx",
        &[],
        "mode = \"passthrough\"\nsharing = \"per_session\"\nmax_instances = 2\ninstance_wait = \"500ms\"\n\
         instance_idle_timeout = \"1500ms\"",
    );
    let gw = Toolgate::start(&upstream).await?;
    let pid = gw.proc.pid();
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(Client::connected(&gw.url, json!({})).await?);
    }
    for c in &sessions[..2] {
        assert_eq!(text_of(&c.call_tool("test_tool_fast", json!({})).await?), "Fast tool completed");
    }
    // The control connection's child and two sessions' children.
    assert_eq!(children_of(pid), 3);
    let started = Instant::now();
    let refused = sessions[2].request("tools/call", json!({"name": "test_tool_fast", "arguments": {}})).await?;
    assert_eq!(refused["error"]["code"], -32013, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap_or("").contains("max_instances"), "{refused}");
    assert!(started.elapsed() < Duration::from_secs(3), "refused after {:?}", started.elapsed());
    assert_eq!(children_of(pid), 3, "an extra child was started");
    // Idle children are stopped, which frees their places.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(children_of(pid), 1, "idle children still run");
    assert_eq!(text_of(&sessions[2].call_tool("test_tool_fast", json!({})).await?), "Fast tool completed");
    assert_eq!(text_of(&sessions[0].call_tool("test_tool_fast", json!({})).await?), "Fast tool completed");
    assert_eq!(children_of(pid), 3);
    Ok(())
}

#[tokio::test]
async fn client_roots_reach_no_upstream_without_forward_roots() -> Result<()> {
    // A handshake-era upstream leg: the upstream asks with `roots/list`.
    let gw = Toolgate::start(&fixture_upstream("fx", &[], "mode = \"passthrough\"\nprotocol = \"2025-11-25\"")).await?;
    let c = Client::connected(&gw.url, json!({"roots": {"listChanged": true}})).await?;
    let started = Instant::now();
    let result = c.call_tool("fixture_roots", json!({})).await?;
    // The upstream was not told of the capability, and asking anyway is
    // refused by toolgate at once (the client is never asked).
    let text = text_of(&result);
    assert!(text.contains("declared: false"), "{result}");
    assert!(text.contains("forward_roots"), "{result}");
    assert!(started.elapsed() < Duration::from_secs(3), "took {:?}", started.elapsed());
    Ok(())
}

#[tokio::test]
async fn client_roots_reach_an_upstream_with_forward_roots() -> Result<()> {
    let upstream =
        fixture_upstream("fx", &[], "mode = \"passthrough\"\nforward_roots = true\nprotocol = \"2025-11-25\"");
    let gw = Toolgate::start(&upstream).await?;
    let c = Client::connected(&gw.url, json!({"roots": {"listChanged": true}})).await?;
    let id = json!("roots-call");
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": "fixture_roots", "arguments": {}}});
    let mut stream = c.open(&call).await?;
    let mut asked = 0;
    let result = loop {
        let message = stream.next().await.context("reading the answer to fixture_roots")?;
        if message["method"] == "roots/list" && message.get("id").is_some() {
            asked += 1;
            let roots = json!({"roots": [{"uri": "file:///work/project", "name": "project"}]});
            let status = c.respond(&message["id"], roots).await?;
            ensure!(status == reqwest::StatusCode::ACCEPTED, "answering {message}: HTTP {status}");
        } else if message["id"] == id {
            break message;
        }
    };
    // The upstream was told of the capability, asked, and got the client's roots.
    assert_eq!(asked, 1, "{result}");
    let answer = result["result"]["structuredContent"].clone();
    assert_eq!(answer["declared"], true, "{result}");
    assert_eq!(answer["result"]["roots"][0]["uri"], "file:///work/project", "{result}");
    Ok(())
}

#[tokio::test]
async fn upstream_messages_over_max_message_bytes_fail_the_call_not_toolgate() -> Result<()> {
    let (_fixture, url) = start_http_server(fixture_exe(), &["--http", "127.0.0.1:0"]).await?;
    let stdio = fixture_upstream("st", &[], "mode = \"passthrough\"\nmax_message_bytes = 65536");
    let http = http_upstream("ht", &url, "mode = \"passthrough\"\nmax_message_bytes = 65536");
    let gw = Toolgate::start(&format!("{stdio}\n{http}")).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let big = "x".repeat(100_000);
    // HTTP: the answer is too large; the call fails with a clear error.
    let failed = c.request("tools/call", json!({"name": "ht__echo", "arguments": {"text": big}})).await?;
    let message = failed["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("max_message_bytes"), "{failed}");
    // Within the limit, both work.
    for tool in ["ht__echo", "st__echo"] {
        let ok = c.call_tool(tool, json!({"text": "small"})).await?;
        assert_eq!(text_of(&ok), "small", "{ok}");
    }
    // stdio: a line over the limit ends that connection; the call fails.
    let failed = c.request("tools/call", json!({"name": "st__echo", "arguments": {"text": big}})).await?;
    assert!(failed.get("error").is_some(), "{failed}");
    Ok(())
}
