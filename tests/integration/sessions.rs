//! Downstream sessions: ids, lifecycle, isolation, and the upstream sessions
//! each one holds.

use std::time::Duration;

use anyhow::Result;
use reqwest::StatusCode;
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn lifecycle_missing_unknown_and_deleted_sessions() -> Result<()> {
    let gw = Toolgate::start(&fixture_upstream("fx", &[], "")).await?;
    let anonymous = Client::new(&gw.url);
    let r = anonymous.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await?;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "a request without a session is refused");

    let mut ghost = Client::new(&gw.url);
    ghost.session = Some("not-a-session".into());
    let r = ghost.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await?;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.messages[0]["error"]["code"], -32001);

    let c = Client::connected(&gw.url, json!({})).await?;
    let id = c.session.clone().unwrap();
    assert!(id.len() >= 32 && id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "unguessable visible-ASCII id: {id}");
    assert!(c.result("ping", json!({})).await?.as_object().unwrap().is_empty());
    let again = c
        .request(
            "initialize",
            json!({"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
        )
        .await?;
    assert_eq!(again["error"]["code"], -32600, "a session initializes once: {again}");

    assert_eq!(c.delete().await?, StatusCode::OK);
    let r = c.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await?;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "a deleted session is gone");
    assert_eq!(c.delete().await?, StatusCode::NOT_FOUND);
    Ok(())
}

#[tokio::test]
async fn interleaved_concurrent_sessions_stay_isolated() -> Result<()> {
    let gw = Toolgate::start(&fixture_upstream("fx", &[], "")).await?;
    let mut clients = Vec::new();
    for _ in 0..6 {
        clients.push(Client::connected(&gw.url, json!({})).await?);
    }
    // Even sessions fetch echo, odd ones fetch fixture_whoami, all at once.
    let fetches = clients
        .iter()
        .enumerate()
        .map(|(i, c)| async move { c.read_descriptions(if i % 2 == 0 { "echo" } else { "fixture_whoami" }).await });
    for r in futures::future::join_all(fetches).await {
        r?;
    }
    let calls = clients.iter().enumerate().map(|(i, c)| async move {
        let echo = c.call_tool("echo", json!({"text": format!("s{i}")})).await?;
        let who = c.call_tool("fixture_whoami", json!({})).await?;
        anyhow::Ok((i, echo, who))
    });
    for r in futures::future::join_all(calls).await {
        let (i, echo, who) = r?;
        if i % 2 == 0 {
            assert_eq!(echo["content"][0]["text"], format!("s{i}"));
            assert_eq!(json_of(&who)["error"]["code"], "TOOL_DESCRIPTION_REQUIRED", "session {i}");
        } else {
            assert_eq!(json_of(&echo)["error"]["code"], "TOOL_DESCRIPTION_REQUIRED", "session {i}");
            assert!(who["structuredContent"]["pid"].is_number(), "session {i}: {who}");
        }
    }
    Ok(())
}

#[tokio::test]
async fn per_session_upstreams_get_their_own_process_and_shared_ones_do_not() -> Result<()> {
    for (sharing, same) in [("per_session", false), ("shared", true)] {
        let gw = Toolgate::start(&fixture_upstream("fx", &[], &format!("sharing = \"{sharing}\""))).await?;
        let mut pids = Vec::new();
        for _ in 0..2 {
            let c = Client::connected(&gw.url, json!({})).await?;
            c.read_descriptions("fixture_whoami").await?;
            let who = c.call_tool("fixture_whoami", json!({})).await?;
            pids.push(who["structuredContent"]["pid"].clone());
        }
        assert_eq!(pids[0] == pids[1], same, "{sharing}: {pids:?}");
    }
    Ok(())
}

#[tokio::test]
async fn ending_a_session_stops_its_upstream_process() -> Result<()> {
    let gw = Toolgate::start(&fixture_upstream("fx", &[], "")).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    c.read_descriptions("fixture_whoami").await?;
    let pid = c.call_tool("fixture_whoami", json!({})).await?["structuredContent"]["pid"].as_i64().unwrap();
    assert!(process_alive(pid));
    assert_eq!(c.delete().await?, StatusCode::OK);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while process_alive(pid) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!process_alive(pid), "the per-session child {pid} was stopped");
    Ok(())
}

#[tokio::test]
async fn idle_sessions_expire_and_release_their_upstreams() -> Result<()> {
    let gw = Toolgate::start_with(
        &fixture_upstream("fx", &[], ""),
        "[server]\nlisten = \"127.0.0.1:0\"\nsession_idle_timeout = \"1s\"\n",
    )
    .await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    c.read_descriptions("fixture_whoami").await?;
    let pid = c.call_tool("fixture_whoami", json!({})).await?["structuredContent"]["pid"].as_i64().unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let r = c.post(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})).await?;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "the idle session expired");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while process_alive(pid) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!process_alive(pid), "the expired session's child was stopped");
    Ok(())
}

fn process_alive(pid: i64) -> bool {
    // A zombie still answers signal 0, so look at /proc state too.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.split_whitespace().nth(2).is_none_or(|s| s != "Z"),
        Err(_) => false,
    }
}

/// An HTTP upstream that restarts has forgotten every session (it answers
/// 404): the shared connection and a session's own one are both replaced,
/// and the call that met the 404 is sent again, once, on the new session.
#[tokio::test]
async fn calls_survive_an_http_upstream_that_forgot_its_sessions() -> Result<()> {
    let (mut fixture, url) = start_http_server(fixture_exe(), &["--http", "127.0.0.1:0"]).await?;
    let config = format!(
        "{}{}",
        // Upstream sessions exist in the handshake era only.
        http_upstream("shared", &url, "sharing = \"shared\"\nmode = \"passthrough\"\nprotocol = \"2025-11-25\""),
        http_upstream("own", &url, "mode = \"passthrough\"\nprotocol = \"2025-11-25\""),
    );
    let gw = Toolgate::start(&config).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    for tool in ["shared__echo", "own__echo"] {
        assert_eq!(text_of(&c.call_tool(tool, json!({"text": "before"})).await?), "before");
    }

    // The same address, a new process: no session survives.
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    fixture.child.kill().await?;
    let (_fixture, again) = start_http_server(fixture_exe(), &["--http", &addr]).await?;
    assert_eq!(again, url);

    for tool in ["shared__echo", "own__echo"] {
        let result = c.call_tool(tool, json!({"text": "after"})).await?;
        assert_eq!(text_of(&result), "after", "{tool}: {result}\n{}", gw.logs());
    }
    gw.wait_log("upstream session expired; retrying on a new one", Duration::from_secs(5)).await?;
    Ok(())
}
