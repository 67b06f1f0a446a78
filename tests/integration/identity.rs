//! Upstream identity on the real binary, against a real OpenID provider
//! (`oidc-provider`, tests/node/idp.mjs) and an upstream on the TypeScript
//! SDK that verifies every request's token and echoes its subject
//! (tests/node/identity_server.mjs):
//! - per-client `upstream_headers` and `upstream_env`;
//! - signed identity assertions, verified against toolgate's JWKS, and a
//!   rotated key;
//! - token exchange (RFC 8693): one exchange for many calls, expiry, a
//!   refusing provider, and two replicas sharing the sealed token in Redis.
//!
//! Every test also greps toolgate's log for the secrets it handled.

use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, ensure};
use futures::future::join_all;
use serde_json::{Value, json};

use crate::common::*;
use crate::interop_matrix::peers::node22;

const DOWNSTREAM_AUDIENCE: &str = "http://127.0.0.1/mcp";
const UPSTREAM_AUDIENCE: &str = "http://upstream.test";
const SERVICE_TOKEN: &str = "service-token-for-the-catalog";
const ALICE_KEY: &str = "alice-key-0123456789abcdef";
const BOB_KEY: &str = "bob-key-0123456789abcdef00";

/// A Node peer of tests/node that prints one JSON line when ready.
pub(crate) struct NodePeer {
    pub(crate) proc: Proc,
    pub(crate) ready: Value,
}

impl NodePeer {
    pub(crate) async fn start(script: &str, args: &[&str]) -> Result<Self> {
        let script_path = repo_path(&format!("tests/node/{script}")).display().to_string();
        let (proc, mut lines) = start_reporting(node22(), &[&[script_path.as_str()][..], args].concat())?;
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .map_err(|_| anyhow!("{script} did not get ready; logs:\n{}", proc.logs()))??
            .ok_or_else(|| anyhow!("{script} exited; logs:\n{}", proc.logs()))?;
        let ready = serde_json::from_str(&line).with_context(|| format!("{script} printed {line}"))?;
        Ok(Self { proc, ready })
    }

    pub(crate) fn at(&self, key: &str) -> String {
        self.ready[key].as_str().unwrap_or_default().to_owned()
    }
}

/// The identity provider.
async fn idp(exchange_ttl: u64) -> Result<NodePeer> {
    idp_with(exchange_ttl, &[]).await
}

/// The identity provider, with more flags.
async fn idp_with(exchange_ttl: u64, more: &[&str]) -> Result<NodePeer> {
    let ttl = exchange_ttl.to_string();
    let args = [&["--downstream-audience", DOWNSTREAM_AUDIENCE, "--exchange-ttl", &ttl][..], more].concat();
    NodePeer::start("idp.mjs", &args).await
}

/// The verifying upstream: tokens from `issuer`, whose keys are at `jwks`,
/// in `header` (`authorization` for a bearer token).
async fn upstream(jwks: &str, issuer: &str, audience: &str, header: &str) -> Result<NodePeer> {
    let args = ["--jwks", jwks, "--issuer", issuer, "--audience", audience, "--header", header];
    NodePeer::start("identity_server.mjs", &[&args[..], &["--service-token", SERVICE_TOKEN]].concat()).await
}

pub(crate) async fn get_json(url: &str) -> Result<Value> {
    Ok(reqwest::get(url).await?.error_for_status()?.json().await?)
}

pub(crate) async fn post(url: &str) -> Result<()> {
    reqwest::Client::new().post(url).send().await?.error_for_status()?;
    Ok(())
}

/// A client's access token from the provider (client credentials).
async fn user_token(idp: &NodePeer, user: &str) -> Result<String> {
    let answer: Value = reqwest::Client::new()
        .post(idp.at("token_endpoint"))
        .basic_auth(user, Some(format!("{user}-secret")))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("grant_type=client_credentials&resource={DOWNSTREAM_AUDIENCE}"))
        .send()
        .await?
        .json()
        .await?;
    answer["access_token"].as_str().map(str::to_owned).ok_or_else(|| anyhow!("no token: {answer}"))
}

/// An upstream token for `user`, exchanged by the test itself (a personal
/// token an operator would put in `upstream_headers`).
async fn upstream_token(idp: &NodePeer, user: &str) -> Result<String> {
    let subject = user_token(idp, user).await?;
    let form = format!(
        "grant_type=urn:ietf:params:oauth:grant-type:token-exchange&subject_token={subject}\
         &subject_token_type=urn:ietf:params:oauth:token-type:access_token&audience={UPSTREAM_AUDIENCE}"
    );
    let answer: Value = reqwest::Client::new()
        .post(idp.at("token_endpoint"))
        .basic_auth("toolgate", Some("toolgate-secret"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await?
        .json()
        .await?;
    answer["access_token"].as_str().map(str::to_owned).ok_or_else(|| anyhow!("no token: {answer}"))
}

/// The subject the upstream saw on the call of `whoami` answered by `result`.
fn subject(result: &Value) -> String {
    json_of(result)["sub"].as_str().unwrap_or_default().to_owned()
}

/// A sessionless (2026-07-28) call by the holder of `token`.
async fn sessionless_call(url: &str, token: &str, id: i64, tool: &str) -> Result<Value> {
    let c = Client::with_bearer(url, token)?;
    let body = modern_body("identity", json!(id), "tools/call", json!({"name": tool, "arguments": {}}));
    let reply = c.send(modern_post(&c, &body, Some(tool))).await?;
    let answer = reply.response(&json!(id)).cloned().ok_or_else(|| anyhow!("no answer: {reply:?}"))?;
    Ok(answer.get("result").or_else(|| answer.get("error")).cloned().unwrap_or(answer))
}

/// A sessionless read of `tool`'s description by the holder of `token` (its grant).
pub(crate) async fn sessionless_describe(url: &str, token: &str, tool: &str) -> Result<()> {
    let c = Client::with_bearer(url, token)?;
    let uri = format!("resource:///tool_descriptions?tools={tool}");
    let body = modern_body("identity", json!(0), "resources/read", json!({"uri": uri}));
    let reply = c.send(modern_post(&c, &body, Some(&uri))).await?;
    let answer = reply.response(&json!(0)).cloned().ok_or_else(|| anyhow!("no answer: {reply:?}"))?;
    ensure!(answer.get("result").is_some(), "{answer}");
    Ok(())
}

/// Each upstream session carried one subject, and none was two users'.
async fn sessions_never_mix(upstream: &NodePeer) -> Result<Value> {
    let url = upstream.at("url").replace("/mcp", "/test/subjects-per-session");
    let per_session = get_json(&url).await?;
    for (session, subjects) in per_session.as_object().into_iter().flatten() {
        ensure!(subjects.as_array().is_some_and(|s| s.len() == 1), "session {session} carried {subjects}");
    }
    Ok(per_session)
}

/// Waits until toolgate's connection to upstream `name` is up (its
/// `/readyz` says so).
pub(crate) async fn wait_up(gw: &Toolgate, name: &str) -> Result<()> {
    let url = format!("http://127.0.0.1:{}/readyz", gw.port());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let ready: Value = reqwest::get(&url).await?.json().await.unwrap_or_default();
        if ready["upstreams"][name] == "up" {
            return Ok(());
        }
        ensure!(tokio::time::Instant::now() < deadline, "upstream {name} never came up: {ready}\n{}", gw.logs());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `needles` appear nowhere in toolgate's log.
pub(crate) fn log_keeps_secrets(gw: &Toolgate, needles: &[&str]) -> Result<()> {
    let logs = gw.logs();
    for needle in needles {
        ensure!(!logs.contains(needle), "a secret reached the log: {}…", &needle[..needle.len().min(12)]);
    }
    ensure!(!holds_a_jwt(&logs), "a JWT reached the log:\n{logs}");
    Ok(())
}

/// Whether `text` holds a JWT: `eyJ` (the start of a base64url JSON
/// header) beginning three base64url parts joined by dots. A bare `eyJ`
/// proves nothing: random base64 (a sealed value, a nonce) holds one in
/// about every 260,000 characters.
pub(crate) fn holds_a_jwt(text: &str) -> bool {
    let base64url = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    let part = |p: &str| !p.is_empty() && p.bytes().all(base64url);
    text.match_indices("eyJ").any(|(at, _)| {
        let mut parts = text[at..].splitn(3, '.');
        let (header, payload) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
        let signature = parts.next().unwrap_or_default();
        part(header) && part(payload) && signature.bytes().next().is_some_and(base64url)
    })
}

#[test]
fn a_jwt_is_told_from_random_base64() {
    let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl";
    assert!(holds_a_jwt(jwt));
    assert!(holds_a_jwt(&format!("sent Bearer {jwt}, refused")));
    assert!(!holds_a_jwt("v1.0a1b2c3d.q8+/eyJk3Zx0=="));
    assert!(!holds_a_jwt("state eyJx. Then the next."));
}

#[tokio::test]
async fn per_client_headers_and_environments_reach_the_upstream_as_each_client() -> Result<()> {
    let idp = idp(300).await?;
    let up = upstream(&idp.at("jwks_uri"), &idp.at("issuer"), UPSTREAM_AUDIENCE, "authorization").await?;
    let (alice_up, bob_up) = (upstream_token(&idp, "alice").await?, upstream_token(&idp, "bob").await?);
    let config = |alice_up: &str| {
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n{}{}{}\n{}",
            client_entry(
                "alice",
                ALICE_KEY,
                &format!(
                    "upstream_headers = {{ verify = {{ Authorization = \"Bearer {alice_up}\" }} }}\n\
                 upstream_env = {{ kids = {{ TOOLGATE_FIXTURE_NAME = \"alice-env\" }} }}"
                ),
            ),
            client_entry(
                "bob",
                BOB_KEY,
                &format!(
                    "upstream_headers = {{ verify = {{ Authorization = \"Bearer {bob_up}\" }} }}\n\
                 upstream_env = {{ kids = {{ TOOLGATE_FIXTURE_NAME = \"bob-env\" }} }}"
                ),
            ),
            http_upstream(
                "verify",
                &up.at("url"),
                &format!("sharing = \"shared\"\nheaders = {{ Authorization = \"Bearer {SERVICE_TOKEN}\" }}")
            ),
            fixture_upstream("kids", &[], "sharing = \"shared\"\nmode = \"passthrough\""),
        )
    };
    let gw = Toolgate::start_raw(&config(&alice_up)).await?;
    let mut alice = Client::with_bearer(&gw.url, ALICE_KEY)?;
    alice.initialize(json!({})).await?;
    let mut bob = Client::with_bearer(&gw.url, BOB_KEY)?;
    bob.initialize(json!({})).await?;
    for (c, key) in [(&alice, ALICE_KEY), (&bob, BOB_KEY)] {
        c.read_descriptions("verify__whoami").await?;
        sessionless_describe(&gw.url, key, "verify__whoami").await?;
    }

    // 100 interleaved calls, in sessions and sessionless, each attributed to its caller.
    let calls = (0..100).map(|i| {
        let (alice, bob, url) = (&alice, &bob, gw.url.clone());
        async move {
            let (who, result) = match i % 4 {
                0 => ("alice", alice.call_tool("verify__whoami", json!({})).await?),
                1 => ("bob", bob.call_tool("verify__whoami", json!({})).await?),
                2 => ("alice", sessionless_call(&url, ALICE_KEY, i, "verify__whoami").await?),
                _ => ("bob", sessionless_call(&url, BOB_KEY, i, "verify__whoami").await?),
            };
            anyhow::Ok((who, result))
        }
    });
    for outcome in join_all(calls).await {
        let (who, result) = outcome?;
        ensure!(subject(&result) == who, "{who}'s call reached the upstream as {}", subject(&result));
    }
    let per_session = sessions_never_mix(&up).await?;
    let subjects: Vec<&Value> =
        per_session.as_object().into_iter().flatten().flat_map(|(_, s)| s.as_array()).flatten().collect();
    ensure!(subjects.contains(&&json!("service")), "the catalog connection keeps the upstream's own headers");

    // stdio: each client's own child, started with its environment.
    let alice_kid = alice.call_tool("kids__fixture_whoami", json!({})).await?;
    let bob_kid = bob.call_tool("kids__fixture_whoami", json!({})).await?;
    ensure!(json_of(&alice_kid)["server"] == "alice-env", "{alice_kid}");
    ensure!(json_of(&bob_kid)["server"] == "bob-env", "{bob_kid}");
    ensure!(json_of(&alice_kid)["pid"] != json_of(&bob_kid)["pid"], "alice and bob share a child");

    // A reload that changes alice's credentials closes her upstream sessions;
    // her next call opens one with the new ones (here, carol's token).
    let carol_up = upstream_token(&idp, "carol").await?;
    std::fs::write(&gw.config_path, config(&carol_up))?;
    gw.wait_log("configuration reloaded", Duration::from_secs(15)).await?;
    ensure!(subject(&alice.call_tool("verify__whoami", json!({})).await?) == "carol", "the new credential is used");
    ensure!(subject(&sessionless_call(&gw.url, ALICE_KEY, 500, "verify__whoami").await?) == "carol");
    ensure!(subject(&bob.call_tool("verify__whoami", json!({})).await?) == "bob", "bob's are unchanged");
    sessions_never_mix(&up).await?;

    log_keeps_secrets(&gw, &[&alice_up, &bob_up, &carol_up, ALICE_KEY, BOB_KEY, SERVICE_TOKEN])
}

/// A PKCS#8 PEM P-256 key made for the test.
fn signing_key() -> String {
    rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("a key").serialize_pem()
}

#[tokio::test]
async fn signed_assertions_verify_against_toolgates_jwks_and_survive_a_rotation() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let (first, second) = (dir.path().join("first.pem"), dir.path().join("second.pem"));
    std::fs::write(&first, signing_key())?;
    std::fs::write(&second, signing_key())?;
    let port = free_port();
    let issuer = format!("http://127.0.0.1:{port}");
    let jwks = format!("{issuer}/.well-known/jwks.json");
    let up = upstream(&jwks, &issuer, "https://tools.internal/verify", "x-toolgate-identity").await?;
    let config = |keys: &str| {
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n[identity]\nissuer = {issuer:?}\nsigning_keys = [{keys}]\n\
             {}{}{}",
            client_entry("alice", ALICE_KEY, "identity_claims = { team = \"platform\" }"),
            client_entry("bob", BOB_KEY, ""),
            http_upstream(
                "verify",
                &up.at("url"),
                "[upstream.identity]\nmode = \"assertion\"\nheader = \"X-Toolgate-Identity\"\n\
                 audience = \"https://tools.internal/verify\"\nclaims = { team = \"ops\", tier = 1 }"
            ),
        )
    };
    let mut gw = Toolgate::start_raw(&config(&format!("{first:?}"))).await?;
    wait_up(&gw, "verify").await?;
    let published = get_json(&jwks).await?;
    let first_kid = published["keys"][0]["kid"].as_str().unwrap_or_default().to_owned();
    ensure!(published["keys"].as_array().is_some_and(|k| k.len() == 1), "{published}");

    let mut alice = Client::with_bearer(&gw.url, ALICE_KEY)?;
    alice.initialize(json!({})).await?;
    alice.read_descriptions("whoami").await?;
    let seen = alice.call_tool("whoami", json!({})).await?;
    let claims = &json_of(&seen)["claims"];
    ensure!(subject(&seen) == "alice", "{seen}");
    ensure!(claims["iss"] == issuer.as_str() && claims["aud"] == "https://tools.internal/verify", "{claims}");
    ensure!(claims["team"] == "platform" && claims["tier"] == 1, "client claims win, upstream ones stay: {claims}");
    let lifetime = claims["exp"].as_u64().unwrap_or(0).saturating_sub(claims["iat"].as_u64().unwrap_or(0));
    ensure!(lifetime > 0 && lifetime <= 300 && claims["jti"].is_string(), "{claims}");
    let mut bob = Client::with_bearer(&gw.url, BOB_KEY)?;
    bob.initialize(json!({})).await?;
    bob.read_descriptions("whoami").await?;
    ensure!(subject(&bob.call_tool("whoami", json!({})).await?) == "bob");
    sessionless_describe(&gw.url, BOB_KEY, "whoami").await?;
    ensure!(subject(&sessionless_call(&gw.url, BOB_KEY, 7, "whoami").await?) == "bob");
    // The catalog's own connection presents the service subject.
    let seen: Value = get_json(&up.at("url").replace("/mcp", "/test/seen")).await?;
    let subjects: Vec<&str> = seen.as_array().into_iter().flatten().filter_map(|s| s["sub"].as_str()).collect();
    ensure!(subjects.contains(&"toolgate"), "{seen}");
    sessions_never_mix(&up).await?;

    // Rotation: the new key signs, the old one stays published.
    gw.kill().await?;
    drop(gw);
    let gw = Toolgate::start_raw(&config(&format!("{second:?}, {first:?}"))).await?;
    wait_up(&gw, "verify").await?;
    let published = get_json(&jwks).await?;
    let kids: Vec<&str> =
        published["keys"].as_array().into_iter().flatten().filter_map(|k| k["kid"].as_str()).collect();
    ensure!(kids.len() == 2 && kids[1] == first_kid, "{published}");
    let mut alice = Client::with_bearer(&gw.url, ALICE_KEY)?;
    alice.initialize(json!({})).await?;
    alice.read_descriptions("whoami").await?;
    ensure!(subject(&alice.call_tool("whoami", json!({})).await?) == "alice");
    let seen: Value = get_json(&up.at("url").replace("/mcp", "/test/seen")).await?;
    let last_kid = seen.as_array().and_then(|s| s.last()).map(|s| s["kid"].clone()).unwrap_or_default();
    ensure!(last_kid == kids[0], "the new key signs: {last_kid}");
    // No credential needed for the keys, but the Host check applies.
    let refused = reqwest::Client::new().get(&jwks).header("host", "evil.example").send().await?;
    ensure!(refused.status() == 403, "{}", refused.status());
    log_keeps_secrets(&gw, &[ALICE_KEY, BOB_KEY])
}

/// toolgate in front of the verifying upstream, trading JWT clients' tokens
/// at `idp` (`extra`: more TOML, e.g. `[state]`).
fn exchange_config(idp: &NodePeer, up: &NodePeer, mode: &str, extra: &str) -> String {
    format!(
        "[auth.jwt]\nissuer = {:?}\naudiences = [{DOWNSTREAM_AUDIENCE:?}]\njwks_url = {:?}\n{extra}\n{}",
        idp.at("issuer"),
        idp.at("jwks_uri"),
        http_upstream(
            "verify",
            &up.at("url"),
            &format!(
                "headers = {{ Authorization = \"Bearer {SERVICE_TOKEN}\" }}\n[upstream.identity]\n\
                 mode = {mode:?}\ntoken_endpoint = {:?}\nclient_id = \"toolgate\"\n\
                 client_secret = \"toolgate-secret\"\naudience = {UPSTREAM_AUDIENCE:?}",
                idp.at("token_endpoint")
            )
        ),
    )
}

async fn exchanges(idp: &NodePeer) -> Result<u64> {
    let stats = get_json(&format!("{}/test/stats", idp.at("issuer"))).await?;
    stats["exchanges"].as_u64().ok_or_else(|| anyhow!("{stats}"))
}

#[tokio::test]
async fn token_exchange_serves_many_calls_with_one_exchange_and_fails_clearly() -> Result<()> {
    let idp = idp(6).await?;
    let up = upstream(&idp.at("jwks_uri"), &idp.at("issuer"), UPSTREAM_AUDIENCE, "authorization").await?;
    let gw = Toolgate::start_with("", &exchange_config(&idp, &up, "token_exchange", "")).await?;
    let (alice_token, bob_token) = (user_token(&idp, "alice").await?, user_token(&idp, "bob").await?);
    let mut alice = Client::with_bearer(&gw.url, &alice_token)?;
    alice.initialize(json!({})).await?;
    alice.read_descriptions("whoami").await?;
    post(&format!("{}/test/delay?ms=300", idp.at("issuer"))).await?;
    let calls = join_all((0..10).map(|_| alice.call_tool("whoami", json!({})))).await;
    for call in calls {
        let result = call?;
        ensure!(subject(&result) == "alice", "{result}");
        ensure!(json_of(&result)["claims"]["act"]["sub"] == "toolgate", "{result}");
    }
    ensure!(exchanges(&idp).await? == 1, "10 concurrent calls made {} exchanges", exchanges(&idp).await?);
    post(&format!("{}/test/delay?ms=0", idp.at("issuer"))).await?;
    let mut bob = Client::with_bearer(&gw.url, &bob_token)?;
    bob.initialize(json!({})).await?;
    bob.read_descriptions("whoami").await?;
    ensure!(subject(&bob.call_tool("whoami", json!({})).await?) == "bob");
    sessionless_describe(&gw.url, &bob_token, "whoami").await?;
    ensure!(subject(&sessionless_call(&gw.url, &bob_token, 9, "whoami").await?) == "bob");
    ensure!(exchanges(&idp).await? == 2);
    // The exchanged token lives 6 s: it is renewed before it expires, not used past it.
    tokio::time::sleep(Duration::from_secs(5)).await;
    ensure!(subject(&alice.call_tool("whoami", json!({})).await?) == "alice");
    ensure!(exchanges(&idp).await? == 3, "expected a renewal");
    sessions_never_mix(&up).await?;

    // A provider that refuses: a clear error, and nothing reaches the upstream.
    post(&format!("{}/test/refuse", idp.at("issuer"))).await?;
    let carol_token = user_token(&idp, "carol").await?;
    let mut carol = Client::with_bearer(&gw.url, &carol_token)?;
    carol.initialize(json!({})).await?;
    carol.read_descriptions("whoami").await?;
    let refused = carol.request("tools/call", json!({"name": "whoami", "arguments": {}})).await?;
    let error = &refused["error"];
    ensure!(error["code"] == -32016, "{refused}");
    let message = error["message"].as_str().unwrap_or_default();
    ensure!(message.contains("verify") && message.contains("access_denied"), "{message}");
    ensure!(!holds_a_jwt(message), "{message}");
    // A provider that is down: the same, with why.
    post(&format!("{}/test/accept", idp.at("issuer"))).await?;
    let mut idp = idp;
    idp.proc.child.kill().await?;
    let down = carol.request("tools/call", json!({"name": "whoami", "arguments": {}})).await?;
    ensure!(down["error"]["code"] == -32016, "{down}");
    ensure!(down["error"]["message"].as_str().is_some_and(|m| m.contains("did not answer")), "{down}");
    let seen: Value = get_json(&up.at("url").replace("/mcp", "/test/seen")).await?;
    ensure!(!seen.to_string().contains("\"carol\""), "carol's call reached the upstream: {seen}");
    log_keeps_secrets(&gw, &[&alice_token, &bob_token, &carol_token, "toolgate-secret"])
}

#[tokio::test]
async fn the_jwt_bearer_grant_presents_each_client_as_itself() -> Result<()> {
    let idp = idp(300).await?;
    let up = upstream(&idp.at("jwks_uri"), &idp.at("issuer"), UPSTREAM_AUDIENCE, "authorization").await?;
    let gw = Toolgate::start_with("", &exchange_config(&idp, &up, "jwt_bearer", "")).await?;
    for user in ["alice", "bob"] {
        let token = user_token(&idp, user).await?;
        let mut c = Client::with_bearer(&gw.url, &token)?;
        c.initialize(json!({})).await?;
        c.read_descriptions("whoami").await?;
        ensure!(subject(&c.call_tool("whoami", json!({})).await?) == user);
    }
    let stats = get_json(&format!("{}/test/stats", idp.at("issuer"))).await?;
    ensure!(stats["jwt_bearer"] == 2 && stats["exchanges"] == 0, "{stats}");
    Ok(())
}

#[tokio::test]
async fn two_replicas_share_one_sealed_exchange_through_redis() -> Result<()> {
    let Some(redis) = RedisServer::start() else { return Ok(()) };
    let idp = idp(300).await?;
    let up = upstream(&idp.at("jwks_uri"), &idp.at("issuer"), UPSTREAM_AUDIENCE, "authorization").await?;
    let key = base64_key();
    let state = format!("[state]\nredis_url = {:?}\nsessions = \"local\"\nencryption_keys = [{key:?}]", redis.url());
    let config = exchange_config(&idp, &up, "token_exchange", &state);
    let (a, b) = (Toolgate::start_with("", &config).await?, Toolgate::start_with("", &config).await?);
    let alice_token = user_token(&idp, "alice").await?;
    for (i, gw) in [&a, &b, &a].into_iter().enumerate() {
        let mut alice = Client::with_bearer(&gw.url, &alice_token)?;
        alice.initialize(json!({})).await?;
        alice.read_descriptions("whoami").await?;
        let result = alice.call_tool("whoami", json!({})).await?;
        ensure!(subject(&result) == "alice", "call {i}: {result}\n{}", gw.logs());
    }
    let made = exchanges(&idp).await?;
    ensure!(made == 1, "two replicas made {made} exchanges\nA:\n{}\nB:\n{}", a.logs(), b.logs());
    let mut store = ::redis::Client::open(redis.url())?.get_multiplexed_async_connection().await?;
    let keys: Vec<String> = ::redis::cmd("KEYS").arg("toolgate:grant:identity:*").query_async(&mut store).await?;
    let place = keys.iter().find(|k| !k.ends_with(":lock")).context("no token in Redis")?;
    let raw: String = ::redis::cmd("GET").arg(place).query_async(&mut store).await?;
    ensure!(is_sealed(&raw) && !raw.contains("alice"), "the raw value: {raw}");
    for gw in [&a, &b] {
        log_keeps_secrets(gw, &[&alice_token, &key])?;
    }
    Ok(())
}

/// Whether `raw` has the form of a sealed value: `v1.`, a key id of 8 hex
/// digits, and base64 that holds no JWT.
fn is_sealed(raw: &str) -> bool {
    use base64::Engine as _;
    let mut parts = raw.splitn(3, '.');
    let (version, id, body) = (parts.next(), parts.next(), parts.next().unwrap_or_default());
    version == Some("v1")
        && id.is_some_and(|id| id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit()))
        && base64::engine::general_purpose::STANDARD.decode(body).is_ok()
        && !holds_a_jwt(raw)
}

/// A random AES-256 key, base64.
fn base64_key() -> String {
    use base64::Engine as _;
    let bytes: Vec<u8> = (0..32).map(|_| rand_byte()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn rand_byte() -> u8 {
    uuid::Uuid::new_v4().as_bytes()[0]
}

#[tokio::test]
async fn toolgate_authenticates_to_the_provider_with_its_signing_key_instead_of_a_secret() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let pem = signing_key();
    let key_path = dir.path().join("toolgate.pem");
    std::fs::write(&key_path, &pem)?;
    let public = toolgate::identity::SigningKey::from_pem(pem.as_bytes()).context("a usable key")?.public_jwk();
    let jwks = json!({"keys": [public]}).to_string();
    let idp = idp_with(300, &["--toolgate-jwks", &jwks]).await?;
    let up = upstream(&idp.at("jwks_uri"), &idp.at("issuer"), UPSTREAM_AUDIENCE, "authorization").await?;
    let config = exchange_config(&idp, &up, "token_exchange", &format!("[identity]\nsigning_keys = [{key_path:?}]"))
        .replace(
            "client_id = \"toolgate\"\nclient_secret = \"toolgate-secret\"",
            "client_id = \"toolgate-pk\"\nclient_auth = \"private_key_jwt\"",
        );
    ensure!(config.contains("private_key_jwt"), "{config}");
    let gw = Toolgate::start_with("", &config).await?;
    let token = user_token(&idp, "alice").await?;
    let mut alice = Client::with_bearer(&gw.url, &token)?;
    alice.initialize(json!({})).await?;
    alice.read_descriptions("whoami").await?;
    let result = alice.call_tool("whoami", json!({})).await?;
    ensure!(subject(&result) == "alice", "{result}");
    ensure!(json_of(&result)["claims"]["act"]["sub"] == "toolgate-pk", "{result}");
    ensure!(exchanges(&idp).await? == 1);
    log_keeps_secrets(&gw, &[&token])
}
