//! OAuth toward a protected upstream (`auth = "oauth"`) on the real binary,
//! against a real authorization server (`oidc-provider`,
//! tests/node/oauth_as.mjs: PKCE, dynamic registration, resource
//! indicators, rotating refresh tokens, revocation) and an MCP upstream that
//! is an RFC 9728 protected resource and echoes each request's subject
//! (tests/node/identity_server.mjs). A scripted browser
//! (tests/node/user_agent.mjs) follows toolgate's consent link, signs in,
//! consents and lands on toolgate's callback:
//! - a 2025-11-25 client with URL-mode elicitation gets `-32042`, then
//!   `notifications/elicitation/complete`, and its retry succeeds;
//! - a 2026-07-28 client gets an `InputRequiredResult`, retried with its
//!   `requestState` until consent is given;
//! - a client without URL mode gets the link as a tool error;
//! - each user reaches the upstream as themselves, and a refused token is
//!   refreshed once and the call sent again;
//! - a tampered, replayed or unknown consent link is refused with a page;
//! - two replicas share the sealed tokens in Redis and refresh once, and
//!   `toolgate oauth list|revoke` manage them.

use std::time::Duration;

use anyhow::{Result, anyhow, ensure};
use futures::future::join_all;
use serde_json::{Value, json};

use crate::common::*;
use crate::identity::{NodePeer, get_json, holds_a_jwt, log_keeps_secrets, post, sessionless_describe, wait_up};
use crate::interop_matrix::peers::node22;

const SERVICE_TOKEN: &str = "service-token-for-the-oauth-catalog";
const CLIENT_SECRET: &str = "toolgate-client-secret-7f3a";
const ALICE_KEY: &str = "alice-key-0123456789abcdef";
const BOB_KEY: &str = "bob-key-0123456789abcdef00";
const CAROL_KEY: &str = "carol-key-0123456789abcdef0";
/// `[state] encryption_keys` of the Redis tests (32 bytes, base64).
const ENCRYPTION_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

/// The protected upstream, trusting `issuer` (its metadata names it).
async fn protected(issuer: &str) -> Result<NodePeer> {
    let args = ["--authorization-server", issuer, "--audience", "self", "--service-token", SERVICE_TOKEN];
    NodePeer::start("identity_server.mjs", &args).await
}

/// Runs the scripted browser on `link` as `login`; its JSON report.
async fn browse(link: &str, login: &str, more: &[&str]) -> Result<Value> {
    let script = repo_path("tests/node/user_agent.mjs").display().to_string();
    let out = tokio::process::Command::new(node22())
        .args([script.as_str(), link, "--login", login])
        .args(more)
        .output()
        .await?;
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim())
        .map_err(|e| anyhow!("user agent printed {text:?} ({e}); stderr: {}", String::from_utf8_lossy(&out.stderr)))
}

/// Once a client wrote a consent link to `signal`, follows it as `login`,
/// then creates `wait` (the client's cue to retry); the browser's report.
async fn browse_when_signalled(signal: &std::path::Path, wait: &std::path::Path, login: &str) -> Result<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !signal.exists() {
        ensure!(tokio::time::Instant::now() < deadline, "the client never signalled a link");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let link = std::fs::read_to_string(signal)?;
    let page = browse(link.trim(), login, &[]).await?;
    std::fs::write(wait, "")?;
    Ok(page)
}

/// An authorization server (with dynamic registration), the protected
/// upstream, and a toolgate in front of it with the upstream up.
async fn one_gateway() -> Result<(NodePeer, NodePeer, Toolgate)> {
    let auth_server = NodePeer::start("oauth_as.mjs", &[]).await?;
    let up = protected(&auth_server.at("issuer")).await?;
    let gw = Toolgate::start_raw(&config(free_port(), "", "", &up)).await?;
    wait_up(&gw, "prot").await?;
    Ok((auth_server, up, gw))
}

/// Two replicas sharing `redis` (`sessions` local or shared), both serving
/// the first one's public URL, as behind a balancer; both up.
async fn two_replicas(redis: &RedisServer, sessions: &str, up: &NodePeer) -> Result<(Toolgate, Toolgate, u16)> {
    let state = format!(
        "[state]\nredis_url = {:?}\nsessions = {sessions:?}\nencryption_keys = [{ENCRYPTION_KEY:?}]",
        redis.url()
    );
    let port = free_port();
    let public = format!("[oauth]\npublic_url = \"http://127.0.0.1:{port}\"\n{state}");
    let a = Toolgate::start_raw(&config(port, "", &public, up)).await?;
    let b = Toolgate::start_raw(&config(free_port(), "", &public, up)).await?;
    wait_up(&a, "prot").await?;
    wait_up(&b, "prot").await?;
    Ok((a, b, port))
}

/// The subject the upstream saw on the call answered by `result`.
fn subject(result: &Value) -> String {
    json_of(result)["sub"].as_str().unwrap_or_default().to_owned()
}

/// The consent link in a tool error's text.
fn link_in(text: &str) -> Option<String> {
    let start = text.find("http://")?;
    Some(text[start..].split_whitespace().next()?.to_owned())
}

fn config(port: u16, issuer_client: &str, more: &str, up: &NodePeer) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:{port}\"\n{more}\n{}{}{}{}",
        client_entry("alice", ALICE_KEY, ""),
        client_entry("bob", BOB_KEY, ""),
        client_entry("carol", CAROL_KEY, ""),
        http_upstream(
            "prot",
            &up.at("url"),
            &format!(
                "auth = \"oauth\"\nheaders = {{ Authorization = \"Bearer {SERVICE_TOKEN}\" }}\n[upstream.oauth]\n{issuer_client}"
            )
        ),
    )
}

/// A sessionless (2026-07-28) call of `whoami` by the holder of `key`,
/// declaring URL-mode elicitation, with `extra` params (a retry's state).
async fn modern_call(url: &str, key: &str, id: i64, extra: Value) -> Result<Value> {
    let c = Client::with_bearer(url, key)?;
    let mut params = json!({"name": "whoami", "arguments": {}});
    for (k, v) in extra.as_object().into_iter().flatten() {
        params[k] = v.clone();
    }
    let mut body = modern_body("oauth-test", json!(id), "tools/call", params);
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"url": {}}});
    let reply = c.send(modern_post(&c, &body, Some("whoami"))).await?;
    let answer = reply.response(&json!(id)).cloned().ok_or_else(|| anyhow!("no answer: {reply:?}"))?;
    Ok(answer.get("result").or_else(|| answer.get("error")).cloned().unwrap_or(answer))
}

#[tokio::test]
async fn each_user_consents_at_first_use_and_then_calls_as_themselves() -> Result<()> {
    let port = free_port();
    let callback = format!("http://127.0.0.1:{port}/oauth/callback");
    let client = format!("toolgate:{CLIENT_SECRET}:{callback}");
    let auth_server = NodePeer::start("oauth_as.mjs", &["--client", &client, "--no-dcr"]).await?;
    let issuer = auth_server.at("issuer");
    let up = protected(&issuer).await?;
    let settings = format!("client_id = \"toolgate\"\nclient_secret = \"{CLIENT_SECRET}\"");
    let gw = Toolgate::start_raw(&config(port, &settings, "", &up)).await?;
    wait_up(&gw, "prot").await?;

    // Alice, a 2025-11-25 session that takes URL-mode elicitation.
    let mut alice = Client::with_bearer(&gw.url, ALICE_KEY)?;
    alice.initialize(json!({"elicitation": {"url": {}}})).await?;
    alice.read_descriptions("whoami").await?;
    let mut events = alice.listen().await?;
    let first = alice.request("tools/call", json!({"name": "whoami", "arguments": {}})).await?;
    ensure!(first["error"]["code"] == -32042, "URL elicitation required: {first}");
    let asked = &first["error"]["data"]["elicitations"][0];
    let link = asked["url"].as_str().unwrap_or_default().to_owned();
    ensure!(asked["mode"] == "url" && link.starts_with(&format!("http://127.0.0.1:{port}/oauth/start/")), "{first}");
    let seen = get_json(&up.at("url").replace("/mcp", "/test/seen")).await?;
    ensure!(
        !seen.as_array().into_iter().flatten().any(|s| s["sub"] == "alice"),
        "nothing reached the upstream as alice before consent: {seen}"
    );
    let page = browse(&link, "alice", &[]).await?;
    ensure!(
        page["status"] == 200 && page["body"].as_str().is_some_and(|b| b.contains("Authorization complete")),
        "{page}"
    );
    ensure!(page["hops"].to_string().contains(&issuer), "the browser went through the authorization server: {page}");
    let complete = loop {
        let message = events.next_within(Duration::from_secs(10)).await.ok_or_else(|| anyhow!("no completion"))?;
        if message["method"] == "notifications/elicitation/complete" {
            break message;
        }
    };
    ensure!(complete["params"]["elicitationId"] == asked["elicitationId"], "{complete}");
    let retried = alice.call_tool("whoami", json!({})).await?;
    ensure!(subject(&retried) == "alice", "{retried}");

    // Bob, a client without URL mode: the link as a tool error the model can show.
    let mut bob = Client::with_bearer(&gw.url, BOB_KEY)?;
    bob.initialize(json!({})).await?;
    bob.read_descriptions("whoami").await?;
    let refused = bob.call_tool("whoami", json!({})).await?;
    let text = text_of(&refused).to_owned();
    ensure!(refused["isError"] == true && text.contains("open http://127.0.0.1:"), "{refused}");
    let link = link_in(&text).ok_or_else(|| anyhow!("no link in {text}"))?;
    // The link, tampered with, replayed or made up, is refused with a page.
    let made_up = reqwest::get(format!("http://127.0.0.1:{port}/oauth/start/not-a-flow")).await?;
    ensure!(made_up.status() == 404 && made_up.text().await?.contains("unknown"), "made-up link");
    let stopped = browse(&link, "bob", &["--stop-at-callback"]).await?;
    let callback_url = stopped["callback"].as_str().ok_or_else(|| anyhow!("{stopped}"))?.to_owned();
    let tampered = callback_url.replacen("state=", "state=x", 1);
    let answer = reqwest::get(&tampered).await?;
    ensure!(answer.status() == 404 || answer.status() == 400, "tampered state: {}", answer.status());
    let no_cookie = reqwest::get(&callback_url).await?;
    ensure!(no_cookie.status() == 400, "another browser's return is refused: {}", no_cookie.status());
    ensure!(no_cookie.text().await?.contains("this browser did not open"), "the page says why");
    // Bob's real consent (a new link: the flow is still open, the same link works again).
    let page = browse(&link, "bob", &[]).await?;
    ensure!(page["status"] == 200, "{page}");
    let replay = reqwest::get(&callback_url).await?;
    ensure!(replay.status() == 404, "a used flow is gone: {}", replay.status());
    ensure!(subject(&bob.call_tool("whoami", json!({})).await?) == "bob", "bob as bob");

    // Alice sessionless (2026-07-28): her kept token serves at once.
    sessionless_describe(&gw.url, ALICE_KEY, "whoami").await?;
    sessionless_describe(&gw.url, CAROL_KEY, "whoami").await?;
    let modern = modern_call(&gw.url, ALICE_KEY, 7, json!({})).await?;
    ensure!(subject(&modern) == "alice", "{modern}");

    // Carol, 2026-07-28: an InputRequiredResult; its retry asks again until she consents.
    let asked = modern_call(&gw.url, CAROL_KEY, 8, json!({})).await?;
    ensure!(asked["resultType"] == "input_required", "{asked}");
    let request = &asked["inputRequests"]["consent"];
    ensure!(request["method"] == "elicitation/create" && request["params"]["mode"] == "url", "{asked}");
    let state = asked["requestState"].clone();
    let retry = json!({"requestState": state, "inputResponses": {"consent": {"action": "accept"}}});
    let early = modern_call(&gw.url, CAROL_KEY, 9, retry.clone()).await?;
    ensure!(early["resultType"] == "input_required", "a retry before consent asks again: {early}");
    ensure!(early["inputRequests"]["consent"]["params"]["url"] == request["params"]["url"], "the same link");
    let link = request["params"]["url"].as_str().unwrap_or_default().to_owned();
    ensure!(browse(&link, "carol", &[]).await?["status"] == 200);
    let done = modern_call(&gw.url, CAROL_KEY, 10, retry).await?;
    ensure!(subject(&done) == "carol", "{done}");

    // The upstream refuses Alice's token: toolgate refreshes it once and sends the call again.
    let reject = up.at("url").replace("/mcp", "/test/reject?sub=alice");
    post(&reject).await?;
    let before = get_json(&format!("{issuer}/test/stats")).await?;
    let refreshed = alice.call_tool("whoami", json!({})).await?;
    ensure!(subject(&refreshed) == "alice", "refreshed and sent again: {refreshed}\n{}", gw.logs());
    let after = get_json(&format!("{issuer}/test/stats")).await?;
    ensure!(after["refreshes"].as_u64() == before["refreshes"].as_u64().map(|r| r + 1), "{before} → {after}");

    // Each user's calls reached the upstream as that user only.
    let calls = (0..30).map(|i| {
        let (alice, bob, url) = (&alice, &bob, gw.url.clone());
        async move {
            let (who, result) = match i % 3 {
                0 => ("alice", alice.call_tool("whoami", json!({})).await?),
                1 => ("bob", bob.call_tool("whoami", json!({})).await?),
                _ => ("carol", modern_call(&url, CAROL_KEY, 100 + i, json!({})).await?),
            };
            anyhow::Ok((who, result))
        }
    });
    for outcome in join_all(calls).await {
        let (who, result) = outcome?;
        ensure!(subject(&result) == who, "{who}'s call reached the upstream as {}", subject(&result));
    }
    let stats = get_json(&format!("{issuer}/test/stats")).await?;
    ensure!(stats["token_code"] == 3, "one code exchange per user: {stats}");
    log_keeps_secrets(&gw, &[SERVICE_TOKEN, CLIENT_SECRET, ALICE_KEY, BOB_KEY, CAROL_KEY])
}

#[tokio::test]
async fn replicas_share_sealed_tokens_register_once_refresh_once_and_revoke() -> Result<()> {
    let Some(redis) = RedisServer::start() else { return Ok(()) };
    // Tokens live 66 s: due for refresh (a minute before expiry) 6 s after
    // they are issued, so the refreshed one is not due again while the
    // concurrent calls below finish on a loaded machine.
    let auth_server = NodePeer::start("oauth_as.mjs", &["--access-ttl", "66"]).await?;
    let issuer = auth_server.at("issuer");
    let up = protected(&issuer).await?;
    let (a, b, _) = two_replicas(&redis, "local", &up).await?;

    // Alice asks on replica B; the link (the public URL: replica A) completes there.
    let mut on_b = Client::with_bearer(&b.url, ALICE_KEY)?;
    on_b.initialize(json!({})).await?;
    on_b.read_descriptions("whoami").await?;
    let refused = on_b.call_tool("whoami", json!({})).await?;
    let link = link_in(text_of(&refused)).ok_or_else(|| anyhow!("{refused}"))?;
    ensure!(browse(&link, "alice", &[]).await?["status"] == 200);
    let stats = get_json(&format!("{issuer}/test/stats")).await?;
    ensure!(stats["registrations"] == 1, "dynamic client registration, once: {stats}");
    ensure!(subject(&on_b.call_tool("whoami", json!({})).await?) == "alice", "B uses the token A stored");

    // The raw Redis values hold no token in the clear.
    let values = redis_values(&redis).await?;
    ensure!(!values.is_empty(), "tokens are kept in Redis");
    ensure!(values.iter().all(|v| !holds_a_jwt(v) && !v.contains(CLIENT_SECRET)), "{values:?}");

    // Once due, calls on both replicas at once refresh it once.
    tokio::time::sleep(Duration::from_secs(7)).await;
    let mut on_a = Client::with_bearer(&a.url, ALICE_KEY)?;
    on_a.initialize(json!({})).await?;
    on_a.read_descriptions("whoami").await?;
    let before = get_json(&format!("{issuer}/test/stats")).await?;
    let calls = (0..8).map(|i| {
        let c = if i % 2 == 0 { &on_a } else { &on_b };
        async move { c.call_tool("whoami", json!({})).await }
    });
    for result in join_all(calls).await {
        ensure!(subject(&result?) == "alice");
    }
    let after = get_json(&format!("{issuer}/test/stats")).await?;
    let refreshed = after["refreshes"].as_u64().unwrap_or(0) - before["refreshes"].as_u64().unwrap_or(0);
    ensure!(refreshed == 1, "one refresh across replicas, not {refreshed}: {before} → {after}");

    // `toolgate oauth list` names the authorization; `revoke` drops it at the server too.
    let listed = cli(&a, &["list"]).await?;
    ensure!(listed.contains("alice\tprot\t"), "{listed}");
    let revoked = cli(&a, &["revoke", "--client", "alice"]).await?;
    ensure!(revoked.contains("alice\tprot\trevoked"), "{revoked}");
    let stats = get_json(&format!("{issuer}/test/stats")).await?;
    ensure!(stats["revocations"].as_u64() >= Some(1), "revoked at the authorization server: {stats}");
    tokio::time::sleep(Duration::from_secs(6)).await; // replicas' short-lived copies lapse
    let again = on_a.call_tool("whoami", json!({})).await?;
    ensure!(again["isError"] == true && text_of(&again).contains("/oauth/start/"), "consent again: {again}");
    log_keeps_secrets(&a, &[SERVICE_TOKEN, ALICE_KEY])?;
    log_keeps_secrets(&b, &[SERVICE_TOKEN, ALICE_KEY])
}

/// `toolgate oauth ARGS --config <gw's config>`'s standard output.
async fn cli(gw: &Toolgate, args: &[&str]) -> Result<String> {
    let config = gw.config_path.display().to_string();
    let out = tokio::process::Command::new(toolgate_exe())
        .arg("oauth")
        .args(&args[..1])
        .args(["--config", config.as_str()])
        .args(&args[1..])
        .output()
        .await?;
    ensure!(out.status.success(), "toolgate oauth {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Every string value in `redis`.
async fn redis_values(redis: &RedisServer) -> Result<Vec<String>> {
    let client = ::redis::Client::open(redis.url())?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let keys: Vec<String> = ::redis::cmd("KEYS").arg("*oauth:*").query_async(&mut conn).await?;
    let mut out = Vec::new();
    for key in keys {
        let kind: String = ::redis::cmd("TYPE").arg(&key).query_async(&mut conn).await?;
        if kind == "string" {
            out.push(::redis::cmd("GET").arg(&key).query_async(&mut conn).await?);
        }
    }
    Ok(out)
}

#[tokio::test]
async fn the_python_sdk_with_url_mode_hears_the_completion_and_its_retry_succeeds() -> Result<()> {
    let (_auth_server, _up, gw) = one_gateway().await?;
    let dir = tempfile::tempdir()?;
    let (signal, wait) = (dir.path().join("signal"), dir.path().join("wait"));
    let steps = json!([
        {"op": "read_resource", "uri": "resource:///tool_descriptions?tools=whoami"},
        {"op": "call_tool_url", "name": "whoami", "arguments": {},
         "signal": signal.display().to_string(), "wait": wait.display().to_string()},
    ]);
    let args = ["--mode", "legacy", "--url-elicitation", "--bearer", ALICE_KEY];
    let browser = browse_when_signalled(&signal, &wait, "alice");
    let (report, page) = tokio::join!(client_probe(&gw.url, &args, &steps), browser);
    let (report, page) = (report?, page?);
    ensure!(page["status"] == 200, "{page}");
    let step = &report["steps"][1];
    ensure!(step["elicitation_required"] == true, "the SDK saw -32042: {step}");
    ensure!(step["elicitations"][0]["mode"] == "url", "{step}");
    ensure!(step["complete"]["received"] == true, "the SDK heard elicitation/complete: {step}");
    ensure!(step["complete"]["params"]["elicitationId"] == step["elicitations"][0]["elicitationId"], "{step}");
    ensure!(step["ok"] == true && subject(&step["result"]) == "alice", "the retry succeeded as alice: {step}");
    log_keeps_secrets(&gw, &[SERVICE_TOKEN, ALICE_KEY])
}

#[tokio::test]
async fn an_upstream_that_refuses_a_call_with_resource_metadata_is_authorized_per_user() -> Result<()> {
    let auth_server = NodePeer::start("oauth_as.mjs", &[]).await?;
    let issuer = auth_server.at("issuer");
    // Its tools are listed to anyone; a call needs a user's token.
    let up = NodePeer::start(
        "identity_server.mjs",
        &["--authorization-server", &issuer, "--audience", "self", "--open-catalog"],
    )
    .await?;
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{}{}{}",
        client_entry("alice", ALICE_KEY, ""),
        client_entry("bob", BOB_KEY, ""),
        http_upstream("open", &up.at("url"), ""),
    );
    let gw = Toolgate::start_raw(&config).await?;
    wait_up(&gw, "open").await?;
    let mut alice = Client::with_bearer(&gw.url, ALICE_KEY)?;
    alice.initialize(json!({})).await?;
    alice.read_descriptions("whoami").await?;
    let asked = alice.call_tool("whoami", json!({})).await?;
    let link = link_in(text_of(&asked)).ok_or_else(|| anyhow!("consent asked after the 401: {asked}"))?;
    gw.wait_log("its clients now authorize toolgate for it", Duration::from_secs(5)).await?;
    ensure!(browse(&link, "alice", &[]).await?["status"] == 200);
    ensure!(subject(&alice.call_tool("whoami", json!({})).await?) == "alice", "alice's own token");

    // Bob refuses at the authorization server: the page says so, and he is asked again.
    let mut bob = Client::with_bearer(&gw.url, BOB_KEY)?;
    bob.initialize(json!({})).await?;
    bob.read_descriptions("whoami").await?;
    let asked = bob.call_tool("whoami", json!({})).await?;
    let link = link_in(text_of(&asked)).ok_or_else(|| anyhow!("{asked}"))?;
    let page = browse(&link, "bob", &["--deny"]).await?;
    ensure!(page["status"] == 400, "{page}");
    ensure!(page["body"].as_str().is_some_and(|b| b.contains("access_denied")), "the page names the refusal: {page}");
    let again = bob.call_tool("whoami", json!({})).await?;
    ensure!(again["isError"] == true && text_of(&again).contains("/oauth/start/"), "asked again: {again}");
    let stats = get_json(&format!("{issuer}/test/stats")).await?;
    ensure!(stats["denied"] == 1 && stats["token_code"] == 1, "{stats}");
    log_keeps_secrets(&gw, &[ALICE_KEY, BOB_KEY])
}

#[tokio::test]
async fn a_typescript_sdk_v2_client_retries_the_input_required_result_until_consent() -> Result<()> {
    let (_auth_server, _up, gw) = one_gateway().await?;
    let dir = tempfile::tempdir()?;
    let (signal, wait) = (dir.path().join("signal"), dir.path().join("wait"));
    let script = repo_path("tests/node/consent_v2.mjs").display().to_string();
    let (signal_arg, wait_arg) = (signal.display().to_string(), wait.display().to_string());
    let client = tokio::process::Command::new(node22())
        .args([script.as_str(), "--url", &gw.url, "--key", CAROL_KEY, "--tool", "whoami"])
        .args(["--signal", &signal_arg, "--wait", &wait_arg, "--timeout", "60"])
        .kill_on_drop(true)
        .output();
    let browser = browse_when_signalled(&signal, &wait, "carol");
    let (out, page) = tokio::join!(client, browser);
    let (out, page) = (out?, page?);
    ensure!(page["status"] == 200, "{page}");
    let text = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(text.trim())
        .map_err(|e| anyhow!("consent_v2.mjs printed {text:?} ({e}); {}", String::from_utf8_lossy(&out.stderr)))?;
    ensure!(out.status.success(), "{report}");
    let first = &report["wire"][0]["answer"];
    ensure!(first["resultType"] == "input_required", "an InputRequiredResult first: {report}");
    let id = first["inputRequests"]["consent"]["params"]["elicitationId"].as_str().unwrap_or_default();
    let retry_state = report["wire"][1]["requestState"].as_str().unwrap_or_default();
    ensure!(
        !id.is_empty() && retry_state == format!("toolgate-consent:{id}"),
        "the SDK sent toolgate's state back: {report}"
    );
    ensure!(
        report["result"]["structuredContent"]["sub"] == "carol",
        "the retry reached the upstream as carol: {report}"
    );
    log_keeps_secrets(&gw, &[CAROL_KEY])
}

#[tokio::test]
async fn the_consent_pages_work_in_a_real_headless_browser() -> Result<()> {
    let chromium = std::env::var("TOOLGATE_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if !std::path::Path::new(&chromium).exists() {
        ensure!(
            std::env::var_os("TOOLGATE_SKIP_BROWSER").is_some(),
            "no {chromium}: install Debian's chromium (`apt-get install --no-install-recommends chromium`), or set \
             TOOLGATE_SKIP_BROWSER=1"
        );
        return Ok(());
    }
    let (_auth_server, _up, gw) = one_gateway().await?;
    let script = repo_path("tests/python/browser_consent.py").display().to_string();
    for (key, login, deny) in [(ALICE_KEY, "alice", false), (BOB_KEY, "bob", true)] {
        let mut c = Client::with_bearer(&gw.url, key)?;
        c.initialize(json!({})).await?;
        c.read_descriptions("whoami").await?;
        let asked = c.call_tool("whoami", json!({})).await?;
        let link = link_in(text_of(&asked)).ok_or_else(|| anyhow!("{asked}"))?;
        let mut run = tokio::process::Command::new(python());
        run.args([script.as_str(), link.as_str(), "--login", login]).kill_on_drop(true);
        if deny {
            run.arg("--deny");
        }
        let out = tokio::time::timeout(Duration::from_secs(60), run.output()).await??;
        let text = String::from_utf8_lossy(&out.stdout);
        let page: Value = serde_json::from_str(text.trim()).map_err(|e| {
            anyhow!("browser_consent.py printed {text:?} ({e}); {}", String::from_utf8_lossy(&out.stderr))
        })?;
        let result = c.call_tool("whoami", json!({})).await?;
        if deny {
            ensure!(page["status"] == 400 && page["h1"] == "Authorization not completed", "{page}");
            ensure!(page["text"].as_str().is_some_and(|t| t.contains("access_denied")), "{page}");
            ensure!(result["isError"] == true, "no token after a refusal: {result}");
        } else {
            ensure!(page["status"] == 200 && page["h1"] == "Authorization complete", "{page}");
            ensure!(page["text"].as_str().is_some_and(|t| t.contains("close this window")), "{page}");
            ensure!(subject(&result) == "alice", "{result}");
        }
    }
    log_keeps_secrets(&gw, &[ALICE_KEY, BOB_KEY])
}

#[tokio::test]
async fn the_catalog_comes_from_client_credentials_or_from_an_authorized_client() -> Result<()> {
    // Client credentials: toolgate lists the tools with a token of its own.
    let port = free_port();
    let client = format!("toolgate:{CLIENT_SECRET}:http://127.0.0.1:{port}/oauth/callback");
    let auth_server = NodePeer::start("oauth_as.mjs", &["--client", &client]).await?;
    let issuer = auth_server.at("issuer");
    let up = NodePeer::start("identity_server.mjs", &["--authorization-server", &issuer, "--audience", "self"]).await?;
    let settings = format!(
        "[upstream.oauth]\nclient_id = \"toolgate\"\nclient_secret = \"{CLIENT_SECRET}\"\ncatalog = \"client_credentials\""
    );
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:{port}\"\n{}{}",
        client_entry("alice", ALICE_KEY, ""),
        http_upstream("prot", &up.at("url"), &format!("auth = \"oauth\"\n{settings}")),
    );
    let gw = Toolgate::start_raw(&config).await?;
    wait_up(&gw, "prot").await?;
    let stats = get_json(&format!("{issuer}/test/stats")).await?;
    ensure!(stats["client_credentials"].as_u64() >= Some(1), "{stats}");
    let seen = get_json(&up.at("url").replace("/mcp", "/test/seen")).await?;
    ensure!(seen.as_array().into_iter().flatten().all(|s| s["sub"] == "toolgate"), "the catalog as toolgate: {seen}");
    let mut alice = Client::with_bearer(&gw.url, ALICE_KEY)?;
    alice.initialize(json!({})).await?;
    alice.read_descriptions("whoami").await?;
    let link = link_in(text_of(&alice.call_tool("whoami", json!({})).await?)).ok_or_else(|| anyhow!("no link"))?;
    ensure!(browse(&link, "alice", &[]).await?["status"] == 200);
    ensure!(subject(&alice.call_tool("whoami", json!({})).await?) == "alice", "calls carry alice's own token");
    log_keeps_secrets(&gw, &[CLIENT_SECRET, ALICE_KEY])?;
    drop(gw);

    // An authorized client's token: nothing is listed until one consents,
    // which `toolgate oauth login` starts ahead of any call.
    let Some(redis) = RedisServer::start() else { return Ok(()) };
    let port = free_port();
    let auth_server = NodePeer::start("oauth_as.mjs", &[]).await?;
    let issuer = auth_server.at("issuer");
    let up = NodePeer::start("identity_server.mjs", &["--authorization-server", &issuer, "--audience", "self"]).await?;
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:{port}\"\n[state]\nredis_url = {:?}\nsessions = \"local\"\n\
         encryption_keys = [{ENCRYPTION_KEY:?}]\n{}{}",
        redis.url(),
        client_entry("alice", ALICE_KEY, ""),
        http_upstream("prot", &up.at("url"), "auth = \"oauth\"\n[upstream.oauth]\ncatalog = \"authorized_user\""),
    );
    let gw = Toolgate::start_raw(&config).await?;
    let ready: Value = reqwest::get(format!("http://127.0.0.1:{port}/readyz")).await?.json().await.unwrap_or_default();
    ensure!(ready["upstreams"]["prot"] != "up", "nothing to list with before anyone consents: {ready}");
    let link = cli(&gw, &["login", "--client", "alice", "--upstream", "prot"]).await?;
    ensure!(link.trim().starts_with(&format!("http://127.0.0.1:{port}/oauth/start/")), "{link}");
    ensure!(browse(link.trim(), "alice", &[]).await?["status"] == 200, "the running toolgate serves the CLI's link");
    wait_up(&gw, "prot").await?;
    let mut alice = Client::with_bearer(&gw.url, ALICE_KEY)?;
    alice.initialize(json!({})).await?;
    alice.read_descriptions("whoami").await?;
    ensure!(subject(&alice.call_tool("whoami", json!({})).await?) == "alice");
    log_keeps_secrets(&gw, &[ALICE_KEY])
}

#[tokio::test]
async fn a_consent_completed_on_another_replica_reaches_the_session_that_asked() -> Result<()> {
    let Some(redis) = RedisServer::start() else { return Ok(()) };
    let auth_server = NodePeer::start("oauth_as.mjs", &[]).await?;
    let up = protected(&auth_server.at("issuer")).await?;
    let (_a, b, port) = two_replicas(&redis, "shared", &up).await?;
    // Alice's session and its standalone stream are on B; the browser comes back to A.
    let mut alice = Client::with_bearer(&b.url, ALICE_KEY)?;
    alice.initialize(json!({"elicitation": {"url": {}}})).await?;
    alice.read_descriptions("whoami").await?;
    let mut events = alice.listen().await?;
    let asked = alice.request("tools/call", json!({"name": "whoami", "arguments": {}})).await?;
    let elicitation = &asked["error"]["data"]["elicitations"][0];
    let link = elicitation["url"].as_str().ok_or_else(|| anyhow!("{asked}"))?;
    ensure!(link.starts_with(&format!("http://127.0.0.1:{port}/")), "the public URL is replica A's: {link}");
    ensure!(browse(link, "alice", &[]).await?["status"] == 200);
    let complete = loop {
        let message = events.next_within(Duration::from_secs(10)).await.ok_or_else(|| anyhow!("no completion"))?;
        if message["method"] == "notifications/elicitation/complete" {
            break message;
        }
    };
    ensure!(complete["params"]["elicitationId"] == elicitation["elicitationId"], "{complete}");
    ensure!(subject(&alice.call_tool("whoami", json!({})).await?) == "alice");
    Ok(())
}
