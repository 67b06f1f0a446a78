//! The findings of the adversarial review of 2026-11 (shared notes,
//! `security-review-2026-11.md`), each reproduced against the real binary:
//! 1. a reload that narrows a client's policy reaches requests admitted
//!    before it (a body still arriving) and legacy streams opened before it;
//! 2. uninitialized legacy streams count as sessions and expire;
//! 3. a `requestState` skips `calls_per_minute` only for the retry of the
//!    very call it was issued for;
//! 4. a name collision never moves a denied tool past the policy;
//! 5. the "upstream removed" hint goes only to clients that had the tool;
//! 6. `/metrics` on the main listener has the Host check and, with `[auth]`,
//!    needs a credential;
//! 7. sessionless clients with different credentials never share a
//!    `per_session` upstream's session.

use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::common::*;

/// How long a reload may take on a loaded machine.
const WITHIN: Duration = Duration::from_secs(30);

const SERVER: &str = "[server]\nlisten = \"127.0.0.1:0\"\n";

/// Replaces the file as editors do (a new file renamed over the old one).
fn replace_file(path: &std::path::Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("toml.new");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list[key].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).map(str::to_owned).collect()
}

fn base(gw: &Toolgate) -> String {
    gw.url.trim_end_matches("/mcp").to_owned()
}

/// Waits for the `n`th reload of the test's gateway to be logged.
async fn reloaded(gw: &Toolgate, n: usize) -> Result<()> {
    let deadline = tokio::time::Instant::now() + WITHIN;
    while gw.logs().matches("configuration reloaded").count() < n {
        if tokio::time::Instant::now() > deadline {
            bail!("no reload #{n}; logs:\n{}", gw.logs());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// A 2026 (sessionless) POST of `body` by the holder of `key`.
async fn modern(gw: &Toolgate, key: &str, body: &Value) -> Result<Value> {
    let c = Client::with_bearer(&gw.url, key)?;
    let name = body["params"]["name"].as_str().or_else(|| body["params"]["uri"].as_str());
    let reply = c.send(modern_post(&c, body, name)).await?;
    reply.response(&body["id"]).cloned().ok_or_else(|| anyhow!("no answer to {body}: {reply:?}"))
}

fn modern_request(id: i64, method: &str, params: Value) -> Value {
    modern_body("review", json!(id), method, params)
}

/// A legacy HTTP+SSE connection (2024-11-05) of the holder of `key`.
struct Legacy {
    events: EventStream,
    messages: url::Url,
    key: String,
    http: reqwest::Client,
}

impl Legacy {
    /// `GET /sse`: the connection, or the refusal's status.
    async fn open(gw: &Toolgate, key: &str) -> Result<Result<Legacy, StatusCode>> {
        let http = reqwest::Client::new();
        let response = http
            .get(format!("{}/sse", base(gw)))
            .header("accept", "text/event-stream")
            .header("authorization", format!("Bearer {key}"))
            .send()
            .await?;
        if response.status() != StatusCode::OK {
            return Ok(Err(response.status()));
        }
        let mut events = EventStream::new(response).await;
        let endpoint = events.next().await.ok_or_else(|| anyhow!("no endpoint event"))?;
        let messages = url::Url::parse(&gw.url)?.join(endpoint.data.trim())?;
        Ok(Ok(Legacy { events, messages, key: key.to_owned(), http }))
    }

    /// POSTs a request and returns its answer from the stream.
    async fn request(&mut self, id: i64, method: &str, params: Value) -> Result<Value> {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let posted = self
            .http
            .post(self.messages.clone())
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {}", self.key))
            .body(body.to_string())
            .send()
            .await?;
        if posted.status() != StatusCode::ACCEPTED {
            bail!("POST {method}: {}", posted.status());
        }
        while let Some(event) = self.events.next().await {
            let message: Value = serde_json::from_str(&event.data).context("a message event")?;
            if message["id"] == id {
                return Ok(message);
            }
        }
        bail!("the stream ended before the answer to {method}")
    }

    async fn initialize(&mut self) -> Result<Value> {
        let params = json!({"protocolVersion": "2024-11-05", "capabilities": {},
            "clientInfo": {"name": "review", "version": "1"}});
        let answer = self.request(0, "initialize", params).await?;
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.http
            .post(self.messages.clone())
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {}", self.key))
            .body(note.to_string())
            .send()
            .await?;
        Ok(answer)
    }

    /// Whether the server ends the stream within `within`.
    async fn ends_within(&mut self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, self.events.next()).await {
                Err(_) => return false,
                Ok(None) => return true,
                Ok(Some(_)) => {}
            }
        }
    }
}

// --- 1. policy reloads ------------------------------------------------------

const EVE: &str = "eve-key-0123456789abcdef000";

#[tokio::test]
async fn a_request_admitted_before_a_reload_never_caches_the_old_view() -> Result<()> {
    let config = |policy: &str| {
        format!(
            "{SERVER}{}{}{}",
            client_entry("eve", EVE, &format!("upstreams = [\"fx\"]\ntools = [\"fx__*\"]\n{policy}")),
            fixture_upstream("fx", &[], "mode = \"passthrough\""),
            fixture_upstream("fy", &[], "mode = \"passthrough\""),
        )
    };
    let gw = Toolgate::start_raw(&config("")).await?;
    let listed = modern(&gw, EVE, &modern_request(1, "tools/list", json!({}))).await?;
    assert!(names(&listed["result"], "tools").contains(&"fx__echo".to_owned()), "{listed}");

    // Admitted (headers read) under the old policy; the body still arriving.
    let body = modern_request(2, "tools/list", json!({})).to_string();
    let mut socket = tokio::net::TcpStream::connect(("127.0.0.1", gw.port())).await?;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {EVE}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: {MODERN}\r\nMcp-Method: tools/list\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        gw.port(),
        body.len()
    );
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(&body.as_bytes()[..10]).await?;
    // The operator revokes fx__echo.
    replace_file(&gw.config_path, &config("deny_tools = [\"fx__echo\"]"))?;
    reloaded(&gw, 1).await?;
    socket.write_all(&body.as_bytes()[10..]).await?;
    let mut answer = String::new();
    socket.read_to_string(&mut answer).await?;
    assert!(answer.contains("HTTP/1.1 200"), "{answer}");
    assert!(!answer.contains("\"fx__echo\""), "the straddling request runs under the new policy: {answer}");

    // Nothing cached the old view under the new catalog.
    let listed = modern(&gw, EVE, &modern_request(3, "tools/list", json!({}))).await?;
    let seen = names(&listed["result"], "tools");
    assert!(!seen.contains(&"fx__echo".to_owned()) && seen.contains(&"fx__test_simple_text".to_owned()), "{seen:?}");
    let mut session = Client::with_bearer(&gw.url, EVE)?;
    session.initialize(json!({})).await?;
    let seen = names(&session.result("tools/list", json!({})).await?, "tools");
    assert!(!seen.contains(&"fx__echo".to_owned()), "{seen:?}");
    let refused = session.request("tools/call", json!({"name": "fx__echo", "arguments": {"text": "x"}})).await?;
    assert!(refused.to_string().contains("Unknown tool"), "{refused}");
    Ok(())
}

#[tokio::test]
async fn a_legacy_stream_opened_before_a_reload_initializes_under_the_new_policy() -> Result<()> {
    let config = |upstreams: &str| {
        format!(
            "{SERVER}{}{}{}",
            client_entry("eve", EVE, &format!("upstreams = {upstreams}")),
            fixture_upstream("fx", &[], "mode = \"passthrough\""),
            fixture_upstream("fy", &[], "mode = \"passthrough\""),
        )
    };
    let gw = Toolgate::start_raw(&config(r#"["fx", "fy"]"#)).await?;
    let mut stream = Legacy::open(&gw, EVE).await?.map_err(|s| anyhow!("GET /sse: {s}"))?;
    // The operator takes upstream fy away from eve; the stream has not initialized yet.
    replace_file(&gw.config_path, &config(r#"["fx"]"#))?;
    reloaded(&gw, 1).await?;
    stream.initialize().await?;
    let prompts = stream.request(1, "prompts/list", json!({})).await?;
    let prompts = names(&prompts["result"], "prompts");
    assert!(prompts.iter().any(|p| p.starts_with("fx__")), "{prompts:?}");
    assert!(!prompts.iter().any(|p| p.starts_with("fy__")), "fy is no longer eve's: {prompts:?}");
    let tools = names(&stream.request(2, "tools/list", json!({})).await?["result"], "tools");
    assert!(!tools.iter().any(|t| t.starts_with("fy__")), "{tools:?}");
    let refused = stream.request(3, "prompts/get", json!({"name": "fy__test_simple_prompt"})).await?;
    assert!(refused.get("error").is_some(), "{refused}");
    Ok(())
}

// --- 2. uninitialized legacy streams -----------------------------------------

#[tokio::test]
async fn uninitialized_legacy_streams_count_against_max_sessions_and_expire() -> Result<()> {
    const MAL: &str = "mal-key-0123456789abcdef000";
    const BOB: &str = "bob-key-0123456789abcdef00";
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nbody_read_timeout = \"2s\"\n{}{}{}",
        client_entry("mal", MAL, "max_sessions = 2"),
        client_entry("bob", BOB, ""),
        fixture_upstream("fx", &[], "sharing = \"shared\""),
    );
    let gw = Toolgate::start_raw(&config).await?;
    let mut first = Legacy::open(&gw, MAL).await?.map_err(|s| anyhow!("{s}"))?;
    let _second = Legacy::open(&gw, MAL).await?.map_err(|s| anyhow!("{s}"))?;
    // Two open streams are mal's two sessions, initialized or not.
    assert_eq!(Legacy::open(&gw, MAL).await?.err(), Some(StatusCode::TOO_MANY_REQUESTS));
    // Nobody else is held up by them.
    let mut bob = Client::with_bearer(&gw.url, BOB)?;
    bob.initialize(json!({})).await?;
    // A stream that does not initialize within the body read timeout ends,
    // and gives its place back.
    assert!(first.ends_within(Duration::from_secs(10)).await, "the idle stream was not closed");
    let mut again = Legacy::open(&gw, MAL).await?.map_err(|s| anyhow!("a place was freed: {s}"))?;
    // One that initializes in time is a session like any other.
    again.initialize().await?;
    assert!(again.request(1, "tools/list", json!({})).await?["result"]["tools"].is_array());
    Ok(())
}

// --- 3. requestState and calls_per_minute ------------------------------------

#[tokio::test]
async fn a_request_state_skips_the_rate_limit_only_for_its_own_retry() -> Result<()> {
    const ALICE: &str = "alice-key-0123456789abcdef00";
    let config = format!(
        "{SERVER}{}{}",
        client_entry("alice", ALICE, "calls_per_minute = 2"),
        fixture_upstream("fx", &[], "protocol = \"2025-11-25\""),
    );
    let gw = Toolgate::start_raw(&config).await?;
    let caps = json!({"elicitation": {}});
    let with_caps = |mut body: Value| {
        body["params"]["_meta"] = toolgate_test_support::modern::envelope("review", caps.clone());
        body
    };
    let describe = |id: i64| {
        with_caps(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "describe_tools", "arguments": {"tools": ["test_elicitation"]}}}))
    };
    // Two calls a minute: the description, then the call, which asks for input.
    let described = modern(&gw, ALICE, &describe(1)).await?;
    assert!(text_of(&described["result"]).contains("inputSchema"), "{described}");
    let first = with_caps(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "test_elicitation", "arguments": {"message": "Whose?"}}}));
    let held = modern(&gw, ALICE, &first).await?;
    assert_eq!(held["result"]["resultType"], "input_required", "{held}");
    let state = held["result"]["requestState"].clone();

    // The state does not open the describe tool or the descriptions resource.
    let mut sneaky = describe(3);
    sneaky["params"]["requestState"] = state.clone();
    let refused = modern(&gw, ALICE, &sneaky).await?;
    assert_eq!(refused["error"]["code"], -32015, "{refused}");
    let read = with_caps(json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read",
        "params": {"uri": "resource:///tool_descriptions?tools=echo", "requestState": state}}));
    let refused = modern(&gw, ALICE, &read).await?;
    assert_eq!(refused["error"]["code"], -32015, "{refused}");
    // Nor another tool's call.
    let other = with_caps(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x"}, "requestState": state}}));
    assert_eq!(modern(&gw, ALICE, &other).await?["error"]["code"], -32015);

    // The retry of the held call is that call, counted once.
    let mut retry = first.clone();
    retry["id"] = json!(6);
    retry["params"]["inputResponses"] = json!({"r1": {"action": "accept", "content": {"response": "alice"}}});
    retry["params"]["requestState"] = state;
    let done = modern(&gw, ALICE, &retry).await?;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    Ok(())
}

// --- 4. name collisions --------------------------------------------------------

#[tokio::test]
async fn a_collision_never_moves_a_denied_tool_past_the_policy() -> Result<()> {
    const MAL: &str = "mal-key-0123456789abcdef000";
    const ADMIN: &str = "admin-key-0123456789abcdef0";
    let config = format!(
        "{SERVER}{}{}{}{}",
        client_entry("mal", MAL, "tools = [\"*\"]\ndeny_tools = [\"fixture_added_1\"]"),
        client_entry("admin", ADMIN, ""),
        fixture_upstream("a", &[], "prefix = \"\"\nprotocol = \"2025-11-25\"\nmode = \"passthrough\""),
        fixture_upstream(
            "b",
            &[],
            "prefix = \"\"\nprotocol = \"2025-11-25\"\nmode = \"passthrough\"\nsharing = \"shared\""
        ),
    );
    let gw = Toolgate::start_raw(&config).await?;
    let mut admin = Client::with_bearer(&gw.url, ADMIN)?;
    admin.initialize(json!({})).await?;
    // b (shared) grows `fixture_added_1` for everyone.
    admin.call_tool("fixture_notify_list_changed_2", json!({})).await?;
    let mut mal = Client::with_bearer(&gw.url, MAL)?;
    mal.initialize(json!({})).await?;
    let listed = |c: &Client| {
        let c = c.clone();
        async move { Ok::<_, anyhow::Error>(names(&c.result("tools/list", json!({})).await?, "tools")) }
    };
    let deadline = tokio::time::Instant::now() + WITHIN;
    while !listed(&admin).await?.contains(&"fixture_added_1".to_owned()) {
        if tokio::time::Instant::now() > deadline {
            bail!("b's new tool never appeared");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // mal's own session of a grows the same name, which pushes b's to `_2`.
    mal.call_tool("fixture_notify_list_changed", json!({})).await?;
    // Its session lists a's tools again once a says they changed.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let seen = listed(&mal).await?;
    assert!(!seen.iter().any(|n| n.starts_with("fixture_added_1")), "{seen:?}");
    for name in ["fixture_added_1", "fixture_added_1_2"] {
        let refused = mal.request("tools/call", json!({"name": name, "arguments": {}})).await?;
        assert!(refused.to_string().contains("Unknown tool"), "{name}: {refused}");
    }
    Ok(())
}

// --- 5. the removed-upstream hint ----------------------------------------------

#[tokio::test]
async fn the_removed_upstream_hint_goes_only_to_clients_that_had_the_tool() -> Result<()> {
    const ALICE: &str = "alice-key-0123456789abcdef00";
    const BOB: &str = "bob-key-0123456789abcdef00";
    let clients = format!("{}{}", client_entry("alice", ALICE, "upstreams = [\"fx\"]"), client_entry("bob", BOB, ""));
    let fx = fixture_upstream("fx", &[], "mode = \"passthrough\"");
    let hidden = fixture_upstream("hidden", &[], "mode = \"passthrough\"");
    let gw = Toolgate::start_raw(&format!("{SERVER}{clients}{fx}{hidden}")).await?;
    replace_file(&gw.config_path, &format!("{SERVER}{clients}{fx}"))?;
    reloaded(&gw, 1).await?;
    let message = |key: &'static str| {
        let url = gw.url.clone();
        async move {
            let mut c = Client::with_bearer(&url, key)?;
            c.initialize(json!({})).await?;
            let answer = c.request("tools/call", json!({"name": "hidden__echo", "arguments": {"text": "x"}})).await?;
            Ok::<_, anyhow::Error>(answer["error"]["message"].as_str().unwrap_or_default().to_owned())
        }
    };
    assert_eq!(message(ALICE).await?, "Unknown tool: hidden__echo", "alice was never allowed `hidden`");
    assert!(message(BOB).await?.contains("`hidden` was removed"), "bob had it");
    Ok(())
}

// --- 6. /metrics ---------------------------------------------------------------

async fn get_metrics(url: &str, host: Option<&str>, key: Option<&str>) -> Result<StatusCode> {
    let mut request = reqwest::Client::new().get(url);
    if let Some(host) = host {
        request = request.header("host", host);
    }
    if let Some(key) = key {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    Ok(request.send().await?.status())
}

#[tokio::test]
async fn metrics_on_the_main_listener_get_the_host_check_and_with_auth_a_credential() -> Result<()> {
    const ALICE: &str = "alice-key-0123456789abcdef00";
    let fx = fixture_upstream("fx", &[], "");
    let open = Toolgate::start_raw(&format!("{SERVER}{fx}")).await?;
    let url = format!("{}/metrics", base(&open));
    assert_eq!(get_metrics(&url, None, None).await?, StatusCode::OK);
    assert_eq!(get_metrics(&url, Some("evil.example"), None).await?, StatusCode::FORBIDDEN, "DNS rebinding");

    let authed = Toolgate::start_raw(&format!("{SERVER}{}{fx}", client_entry("alice", ALICE, ""))).await?;
    let url = format!("{}/metrics", base(&authed));
    assert_eq!(get_metrics(&url, None, None).await?, StatusCode::UNAUTHORIZED, "it names every client");
    assert_eq!(get_metrics(&url, None, Some("wrong-key-0123456789abcdef")).await?, StatusCode::UNAUTHORIZED);
    assert_eq!(get_metrics(&url, Some("evil.example"), Some(ALICE)).await?, StatusCode::FORBIDDEN);
    assert_eq!(get_metrics(&url, None, Some(ALICE)).await?, StatusCode::OK);

    // A listener of its own is for the scraper and open, as configured
    // (metrics.rs: `a_scraper_addressing_the_pod_by_ip_uses_the_metrics_listener`).
    Ok(())
}

// --- 7. sessionless clients and per_session upstreams --------------------------

#[tokio::test]
async fn sessionless_clients_with_different_keys_never_share_an_upstream_session() -> Result<()> {
    const BOB: &str = "bob-key-0123456789abcdef00";
    const DAVE: &str = "dave-key-0123456789abcdef0";
    let config = format!(
        "{SERVER}{}{}{}",
        client_entry("bob", BOB, ""),
        client_entry("dave", DAVE, ""),
        fixture_upstream("fx", &[], "mode = \"passthrough\"\nmax_instances = 4"),
    );
    let gw = Toolgate::start_raw(&config).await?;
    let (bob_pid, bob_calls) = whoami(&gw, BOB, 1).await?;
    let (dave_pid, dave_calls) = whoami(&gw, DAVE, 2).await?;
    let (bob_again, bob_calls_again) = whoami(&gw, BOB, 3).await?;
    assert_ne!(bob_pid, dave_pid, "bob and dave share an upstream session");
    assert_eq!((bob_calls, dave_calls), (json!(1), json!(1)));
    assert_eq!(bob_again, bob_pid, "a client keeps its upstream session across requests");
    assert_eq!(bob_calls_again, json!(2));
    Ok(())
}

/// The fixture's process id and call count, as a sessionless call of the
/// holder of `key` sees them.
async fn whoami(gw: &Toolgate, key: &str, id: i64) -> Result<(Value, Value)> {
    let body = modern_request(id, "tools/call", json!({"name": "fixture_whoami", "arguments": {}}));
    let answer = modern(gw, key, &body).await?;
    let result = &answer["result"]["structuredContent"];
    if !result["pid"].is_number() {
        bail!("fixture_whoami failed: {answer}");
    }
    Ok((result["pid"].clone(), result["calls"].clone()))
}
