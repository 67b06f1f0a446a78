//! `[auth]` on the real binary: API keys (plain and hashed) and JWTs signed
//! by a key made here, with their JWKS served by a local HTTP server; the
//! 401 challenges and the Protected Resource Metadata; sessions that belong
//! to their client; per-client tool and upstream policy; per-client
//! `max_sessions` and `calls_per_minute`; and the refusal to serve anyone on
//! a non-loopback address without credentials.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result, anyhow};
use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair as _};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::StatusCode;
use reqwest::header::WWW_AUTHENTICATE;
use serde_json::{Value, json};

use crate::common::*;

const ALICE_KEY: &str = "alice-key-0123456789abcdef";
const BOB_KEY: &str = "bob-key-0123456789abcdef-bob";

fn sha256_hex(text: &str) -> String {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, text.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Two API-key clients: alice (key in the file) and bob (its SHA-256 only).
fn key_clients(alice_extra: &str, bob_extra: &str) -> String {
    format!(
        "[[auth.clients]]\nname = \"alice\"\napi_key = \"{ALICE_KEY}\"\n{alice_extra}\n\n\
         [[auth.clients]]\nname = \"bob\"\napi_key_sha256 = \"{}\"\n{bob_extra}\n",
        sha256_hex(BOB_KEY)
    )
}

fn endpoint(gw: &Toolgate, path: &str) -> String {
    let mut url = url::Url::parse(&gw.url).expect("toolgate's URL");
    url.set_path(path);
    url.to_string()
}

fn initialize_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "auth-tests", "version": "1"}}})
}

/// POSTs `initialize` with `authorization` (if any), raw.
async fn post_initialize(url: &str, authorization: Option<&str>) -> Result<reqwest::Response> {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(initialize_body().to_string());
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    Ok(request.send().await?)
}

fn challenge(response: &reqwest::Response) -> String {
    response.headers().get(WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
}

#[tokio::test]
async fn api_keys_are_required_and_checked_on_every_endpoint() -> Result<()> {
    let gw = Toolgate::start_with(&fixture_upstream("fx", &[], ""), &key_clients("", "")).await?;

    // No credential: 401 with a bare Bearer challenge and a JSON-RPC error body.
    let r = post_initialize(&gw.url, None).await?;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let www = challenge(&r);
    assert!(www.starts_with("Bearer"), "{www}");
    assert!(!www.contains("invalid_token"), "nothing was sent: {www}");
    assert!(!www.contains("resource_metadata"), "no [auth.jwt]: {www}");
    let body: Value = r.json().await?;
    assert_eq!(body["jsonrpc"], "2.0");
    assert!(body["error"]["message"].as_str().is_some_and(|m| m.contains("Unauthorized")), "{body}");

    // A wrong key (and a non-Bearer scheme): 401 invalid_token, the key never echoed.
    for authorization in ["Bearer not-the-right-key-at-all", "Basic YWxpY2U6c2VjcmV0"] {
        let r = post_initialize(&gw.url, Some(authorization)).await?;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{authorization}");
        let www = challenge(&r);
        assert!(www.starts_with("Bearer") && www.contains("error=\"invalid_token\""), "{www}");
        let text = r.text().await?;
        assert!(!text.contains("not-the-right-key"), "{text}");
    }

    // Health needs no credential.
    for path in ["/healthz", "/readyz"] {
        let r = reqwest::get(endpoint(&gw, path)).await?;
        assert_ne!(r.status(), StatusCode::UNAUTHORIZED, "{path}");
    }

    // The plain key and the hashed one both work, end to end.
    let mut alice = Client::with_bearer(&gw.url, ALICE_KEY)?;
    alice.initialize(json!({})).await?;
    alice.read_descriptions("echo").await?;
    let echo = alice.call_tool("echo", json!({"text": "hi alice"})).await?;
    assert!(echo.to_string().contains("hi alice"), "{echo}");
    let mut bob = Client::with_bearer(&gw.url, BOB_KEY)?;
    bob.initialize(json!({})).await?;
    let tools = bob.result("tools/list", json!({})).await?;
    assert!(tools["tools"].as_array().is_some_and(|t| !t.is_empty()), "{tools}");

    // Without the key, a live session's id is not enough.
    let mut anonymous = Client::new(&gw.url);
    anonymous.session = alice.session.clone();
    let reply = anonymous.post(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})).await?;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let r = anonymous.raw(method.clone()).header("accept", "text/event-stream").send().await?;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{method}");
    }

    // The legacy transport too.
    let sse = endpoint(&gw, "/sse");
    let r = reqwest::Client::new().get(&sse).header("accept", "text/event-stream").send().await?;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(challenge(&r).starts_with("Bearer"));
    let r = reqwest::Client::new()
        .post(endpoint(&gw, "/messages") + "?sessionId=whatever")
        .header("content-type", "application/json")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string())
        .send()
        .await?;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = reqwest::Client::new()
        .get(&sse)
        .header("accept", "text/event-stream")
        .header("authorization", format!("Bearer {ALICE_KEY}"))
        .send()
        .await?;
    assert_eq!(r.status(), StatusCode::OK);
    drop(r);

    // Credentials never reach the log.
    let logs = gw.logs();
    for secret in [ALICE_KEY, BOB_KEY, "not-the-right-key", "YWxpY2U6c2VjcmV0"] {
        assert!(!logs.contains(secret), "{secret} logged:\n{logs}");
    }
    Ok(())
}

#[tokio::test]
async fn a_session_belongs_to_the_client_that_started_it() -> Result<()> {
    let gw = Toolgate::start_with(&fixture_upstream("fx", &[], ""), &key_clients("", "")).await?;
    let mut alice = Client::with_bearer(&gw.url, ALICE_KEY)?;
    alice.initialize(json!({})).await?;
    // Bob with alice's session id: as if it did not exist.
    let mut bob = Client::with_bearer(&gw.url, BOB_KEY)?;
    bob.session = alice.session.clone();
    let reply = bob.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await?;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{reply:?}");
    let r = bob.raw(reqwest::Method::GET).header("accept", "text/event-stream").send().await?;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = bob.raw(reqwest::Method::DELETE).send().await?;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    // Alice's session is untouched.
    let tools = alice.result("tools/list", json!({})).await?;
    assert!(tools["tools"].is_array());

    // Legacy: bob cannot post into alice's connection.
    let http = reqwest::Client::new();
    let stream = http
        .get(endpoint(&gw, "/sse"))
        .header("accept", "text/event-stream")
        .header("authorization", format!("Bearer {ALICE_KEY}"))
        .send()
        .await?;
    assert_eq!(stream.status(), StatusCode::OK);
    let mut events = EventStream::new(stream).await;
    let endpoint_event =
        tokio::time::timeout(Duration::from_secs(10), events.next()).await?.ok_or_else(|| anyhow!("no endpoint"))?;
    let messages = endpoint_event.data;
    let messages_url = url::Url::parse(&gw.url)?.join(messages.trim())?;
    let post = |key: &'static str| {
        http.post(messages_url.clone())
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {key}"))
            .body(initialize_body().to_string())
            .send()
    };
    assert_eq!(post(BOB_KEY).await?.status(), StatusCode::NOT_FOUND);
    assert_eq!(post(ALICE_KEY).await?.status(), StatusCode::ACCEPTED);
    Ok(())
}

/// Two upstreams (the fixture `fx` and the demo `demo`) and a client that
/// may use only some of `fx`'s tools.
async fn policy_gateway(mode: &str, alice: &str) -> Result<Toolgate> {
    let upstreams = format!(
        "{}{}",
        fixture_upstream("fx", &[], &format!("sharing = \"shared\"\nmode = {mode:?}")),
        stdio_upstream("demo", toolgate_exe(), &["demo-upstream"], &format!("mode = {mode:?}"))
    );
    Toolgate::start_with(&upstreams, &key_clients(alice, "")).await
}

const ALICE_POLICY: &str = "upstreams = [\"fx\"]\ntools = [\"fx__*\"]\ndeny_tools = [\"*__fixture_crash\"]";

fn tool_names(list: &Value) -> Vec<String> {
    list["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()
}

/// A client's answer about `name`, with the name replaced, to compare a
/// hidden tool's answer with an unknown one's.
fn anonymized(value: &Value, name: &str) -> String {
    value.to_string().replace(name, "NAME")
}

#[tokio::test]
async fn policy_hides_tools_everywhere_a_client_could_see_or_reach_them() -> Result<()> {
    let gw = policy_gateway("progressive", ALICE_POLICY).await?;
    let mut alice = Client::with_bearer(&gw.url, ALICE_KEY)?;
    let init = alice.initialize(json!({})).await?;
    let mut bob = Client::with_bearer(&gw.url, BOB_KEY)?;
    let bob_init = bob.initialize(json!({})).await?;

    // tools/list.
    let all = tool_names(&bob.result("tools/list", json!({})).await?);
    assert!(all.iter().any(|n| n == "fx__fixture_crash") && all.iter().any(|n| n.starts_with("demo__")), "{all:?}");
    let seen = tool_names(&alice.result("tools/list", json!({})).await?);
    assert!(seen.iter().any(|n| n == "fx__echo"), "{seen:?}");
    assert!(seen.iter().any(|n| n == "describe_tools"), "{seen:?}");
    assert!(!seen.iter().any(|n| n == "fx__fixture_crash" || n.starts_with("demo__")), "{seen:?}");
    assert!(seen.len() < all.len());

    // The descriptions resource: a hidden tool is reported like an unknown
    // one, and available_tools lists only what alice may see. (Each read
    // names one unknown tool: the first unknown name of a read carries the
    // catalog, later ones point to it.)
    let read = alice.read_descriptions("no_such_tool,fx__echo").await?;
    assert!(read["fx__echo"]["inputSchema"].is_object(), "{read}");
    let unknown = anonymized(&read["no_such_tool"], "no_such_tool");
    for hidden in ["fx__fixture_crash", "demo__list_projects"] {
        let answer = alice.read_descriptions(&format!("{hidden},fx__echo")).await?;
        assert_eq!(anonymized(&answer[hidden], hidden), unknown, "{answer}");
    }
    let several = alice.read_descriptions("fx__fixture_crash,no_such_tool").await?;
    let pointer = anonymized(&several["no_such_tool"], "no_such_tool");
    let several = alice.read_descriptions("other_unknown,no_such_tool").await?;
    assert_eq!(
        anonymized(&several["no_such_tool"], "no_such_tool").replace("other_unknown", "fx__fixture_crash"),
        pointer
    );
    let available: Vec<String> = serde_json::from_value(read["no_such_tool"]["available_tools"].clone())?;
    assert!(available.iter().all(|n| seen.contains(n)), "{available:?} vs {seen:?}");
    assert!(!available.iter().any(|n| n == "fx__fixture_crash"));
    // The bare resource's examples name visible tools only.
    let bare = alice.read_descriptions("").await?;
    assert!(!bare.to_string().contains("fixture_crash") && !bare.to_string().contains("demo__"), "{bare}");

    // describe_tools the same.
    let described = alice.call_tool("describe_tools", json!({"tools": ["fx__fixture_crash", "no_such_tool"]})).await?;
    let text = described.to_string();
    assert!(!text.contains("Test hook: exits"), "the hidden tool's description leaked: {text}");

    // tools/call: refused like an unknown tool; the crash hook never runs
    // (the upstream stays up for bob).
    let hidden = alice.request("tools/call", json!({"name": "fx__fixture_crash", "arguments": {}})).await?;
    let unknown = alice.request("tools/call", json!({"name": "fx__no_such_tool", "arguments": {}})).await?;
    assert!(hidden.get("error").is_some() || hidden["result"]["isError"] == true, "{hidden}");
    let strip = |v: &Value| {
        let mut v = v.clone();
        v.as_object_mut().map(|o| o.remove("id"));
        v
    };
    assert_eq!(anonymized(&strip(&hidden), "fx__fixture_crash"), anonymized(&strip(&unknown), "fx__no_such_tool"));
    let demo = alice.request("tools/call", json!({"name": "demo__list_projects", "arguments": {}})).await?;
    assert_eq!(anonymized(&strip(&demo), "demo__list_projects"), anonymized(&strip(&unknown), "fx__no_such_tool"));
    bob.read_descriptions("fx__fixture_whoami").await?;
    let whoami = bob.call_tool("fx__fixture_whoami", json!({})).await?;
    assert!(whoami.get("isError").is_none_or(|e| e == false), "the fixture is still up: {whoami}");

    // The demo upstream vanishes from resources, templates, prompts and completions.
    let listed = |c: &Client, method: &'static str| {
        let c = c.clone();
        async move { c.result(method, json!({})).await.map(|v| v.to_string()) }
    };
    for method in ["resources/list", "resources/templates/list", "prompts/list"] {
        let a = listed(&alice, method).await?;
        let b = listed(&bob, method).await?;
        assert!(b.contains("demo"), "bob sees the demo in {method}: {b}");
        assert!(!a.contains("demo://") && !a.contains("demo__"), "alice sees the demo in {method}: {a}");
    }
    let read = alice.request("resources/read", json!({"uri": "demo://team/roster"})).await?;
    assert!(read.get("error").is_some(), "{read}");
    let read = bob.request("resources/read", json!({"uri": "demo://team/roster"})).await?;
    assert!(read.get("result").is_some(), "{read}");
    let prompts = bob.result("prompts/list", json!({})).await?;
    let demo_prompt = prompts["prompts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str())
        .find(|n| n.starts_with("demo__"))
        .context("the demo has prompts")?
        .to_owned();
    let get = alice.request("prompts/get", json!({"name": demo_prompt})).await?;
    assert!(get.get("error").is_some(), "{get}");
    let complete = alice
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": demo_prompt}, "argument": {"name": "project", "value": ""}}),
        )
        .await?;
    assert!(complete.get("error").is_some(), "{complete}");
    // The offer names only what alice may use (the demo has instructions).
    assert!(bob_init["instructions"].as_str().is_some_and(|i| i.contains("## demo")), "{bob_init}");
    assert!(!init.to_string().contains("## demo"), "{init}");
    Ok(())
}

#[tokio::test]
async fn policy_applies_to_passthrough_upstreams_too() -> Result<()> {
    let gw = policy_gateway("passthrough", ALICE_POLICY).await?;
    let mut alice = Client::with_bearer(&gw.url, ALICE_KEY)?;
    alice.initialize(json!({})).await?;
    let seen = tool_names(&alice.result("tools/list", json!({})).await?);
    assert!(seen.iter().any(|n| n == "fx__echo"), "{seen:?}");
    assert!(!seen.iter().any(|n| n == "fx__fixture_crash" || n.starts_with("demo__")), "{seen:?}");
    let hidden = alice.request("tools/call", json!({"name": "fx__fixture_crash", "arguments": {}})).await?;
    assert!(hidden.get("error").is_some(), "{hidden}");
    let echo = alice.call_tool("fx__echo", json!({"text": "still here"})).await?;
    assert!(echo.to_string().contains("still here"), "{echo}");
    Ok(())
}

#[tokio::test]
async fn max_sessions_refuses_the_session_after_the_limit_with_429() -> Result<()> {
    let gw = Toolgate::start_with(&fixture_upstream("fx", &[], ""), &key_clients("max_sessions = 2", "")).await?;
    let mut first = Client::with_bearer(&gw.url, ALICE_KEY)?;
    first.initialize(json!({})).await?;
    let mut second = Client::with_bearer(&gw.url, ALICE_KEY)?;
    second.initialize(json!({})).await?;
    let third = Client::with_bearer(&gw.url, ALICE_KEY)?;
    let reply = third.post(&initialize_body()).await?;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS, "{reply:?}");
    let error = &reply.messages.first().context("a JSON-RPC body")?["error"];
    assert_eq!(error["code"], -32014, "{error}");
    assert!(error["message"].as_str().is_some_and(|m| m.contains("at most 2")), "{error}");
    // Bob is not counted against alice.
    let mut bob = Client::with_bearer(&gw.url, BOB_KEY)?;
    bob.initialize(json!({})).await?;
    // Ending a session frees its slot.
    assert!(first.delete().await?.is_success());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let reply = third.post(&initialize_body()).await?;
        if reply.status == StatusCode::OK {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the slot was not freed: {reply:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

#[tokio::test]
async fn calls_per_minute_refuses_calls_over_the_limit_before_the_upstream() -> Result<()> {
    let gw = Toolgate::start_with(
        &fixture_upstream("fx", &[], "sharing = \"shared\""),
        &key_clients("calls_per_minute = 3", ""),
    )
    .await?;
    let mut alice = Client::with_bearer(&gw.url, ALICE_KEY)?;
    alice.initialize(json!({})).await?;
    // A description fetch and two calls use the burst of 3.
    alice.read_descriptions("fixture_whoami").await?;
    for _ in 0..2 {
        let r = alice.call_tool("fixture_whoami", json!({})).await?;
        assert!(r.get("isError").is_none_or(|e| e == false), "{r}");
    }
    // The fourth is refused, saying when to retry; so is a description fetch.
    let refused = alice.request("tools/call", json!({"name": "fixture_whoami", "arguments": {}})).await?;
    let error = &refused["error"];
    assert_eq!(error["code"], -32015, "{refused}");
    assert!(error["message"].as_str().is_some_and(|m| m.contains("Rate limit") && m.contains("retry")), "{error}");
    assert!(error["data"]["retryAfterSeconds"].as_u64().is_some_and(|s| (1..=60).contains(&s)), "{error}");
    let read =
        alice.request("resources/read", json!({"uri": "resource:///tool_descriptions?tools=fixture_whoami"})).await?;
    assert_eq!(read["error"]["code"], -32015, "{read}");
    // Other requests are not limited.
    alice.result("tools/list", json!({})).await?;
    // The refused call never reached the upstream: bob's call is its third.
    let mut bob = Client::with_bearer(&gw.url, BOB_KEY)?;
    bob.initialize(json!({})).await?;
    bob.read_descriptions("fixture_whoami").await?;
    let whoami = bob.call_tool("fixture_whoami", json!({})).await?;
    assert_eq!(whoami["structuredContent"]["calls"], 3, "{whoami}");
    Ok(())
}

#[tokio::test]
async fn without_credentials_a_non_loopback_listen_address_refuses_to_start() -> Result<()> {
    let config = format!("[server]\nlisten = \"0.0.0.0:0\"\n\n{}", fixture_upstream("fx", &[], ""));
    let error = match Toolgate::start_raw(&config).await {
        Ok(_) => return Err(anyhow!("toolgate started on 0.0.0.0 without credentials")),
        Err(e) => e.to_string(),
    };
    assert!(error.contains("allow_anonymous") && error.contains("[auth.jwt]"), "{error}");
    // Opting in explicitly works (checked without binding: check-config).
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("toolgate.toml");
    std::fs::write(&path, format!("[auth]\nallow_anonymous = true\n\n{config}"))?;
    let out =
        tokio::process::Command::new(toolgate_exe()).args(["check-config", "--config"]).arg(&path).output().await?;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Ok(())
}

// ---------------------------------------------------------------------------
// JWT
// ---------------------------------------------------------------------------

/// An Ed25519 signing key made for this test, and its JWKS.
struct Issuer {
    pkcs8: Vec<u8>,
    public: Vec<u8>,
    kid: String,
}

const ISSUER: &str = "https://idp.test.example";
const AUDIENCE: &str = "http://127.0.0.1/mcp";

impl Issuer {
    fn new(kid: &str) -> Result<Issuer> {
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).map_err(|_| anyhow!("key generation"))?;
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).map_err(|_| anyhow!("key parsing"))?;
        Ok(Issuer { pkcs8: pkcs8.as_ref().to_vec(), public: pair.public_key().as_ref().to_vec(), kid: kid.into() })
    }

    fn jwks(&self) -> Value {
        json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": self.kid,
                          "x": URL_SAFE_NO_PAD.encode(&self.public)}]})
    }

    fn sign(&self, claims: &Value) -> Result<String> {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
        header.kid = Some(self.kid.clone());
        Ok(jsonwebtoken::encode(&header, claims, &jsonwebtoken::EncodingKey::from_ed_der(&self.pkcs8))?)
    }

    /// A valid token for `sub`, `exp` seconds from now.
    fn token(&self, sub: &str, exp: i64) -> Result<String> {
        self.sign(&json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "exp": now() + exp, "iat": now()}))
    }
}

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// Serves `jwks` at `http://127.0.0.1:<port>/jwks.json`.
async fn serve_jwks(jwks: Value) -> Result<String> {
    let body = jwks.to_string();
    let app = axum::Router::new().route(
        "/jwks.json",
        axum::routing::get(move || {
            let body = body.clone();
            async move { ([("content-type", "application/json")], body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/jwks.json", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

#[tokio::test]
async fn jwts_from_the_configured_issuer_are_accepted_and_map_to_client_policies() -> Result<()> {
    let issuer = Issuer::new("key-1")?;
    let jwks_url = serve_jwks(issuer.jwks()).await?;
    let auth = format!(
        "[auth.jwt]\nissuer = {ISSUER:?}\naudiences = [{AUDIENCE:?}]\njwks_url = {jwks_url:?}\n\
         scopes_supported = [\"mcp\"]\n\n\
         [[auth.clients]]\nname = \"carol\"\ntools = [\"echo\"]\n"
    );
    let gw = Toolgate::start_with(&fixture_upstream("fx", &[], ""), &auth).await?;

    // The metadata document, at the root well-known path and the one for /mcp.
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] {
        let r = reqwest::get(endpoint(&gw, path)).await?;
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        let document: Value = r.json().await?;
        assert_eq!(document["resource"], AUDIENCE, "{document}");
        assert_eq!(document["authorization_servers"], json!([ISSUER]), "{document}");
        assert_eq!(document["scopes_supported"], json!(["mcp"]), "{document}");
    }

    // Missing: the challenge points at the metadata.
    let r = post_initialize(&gw.url, None).await?;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let www = challenge(&r);
    assert!(www.contains("resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource/mcp\""), "{www}");
    assert!(!www.contains("invalid_token"), "{www}");

    // Bad tokens: expired, wrong audience, wrong issuer, signed by another key, garbage.
    let stranger = Issuer::new("key-1")?;
    let bad = [
        issuer.token("carol", -600)?,
        issuer.sign(
            &json!({"iss": ISSUER, "aud": "https://elsewhere.example/mcp", "sub": "carol", "exp": now() + 300}),
        )?,
        issuer.sign(&json!({"iss": "https://evil.example", "aud": AUDIENCE, "sub": "carol", "exp": now() + 300}))?,
        stranger.token("carol", 300)?,
        "not.a.jwt".to_owned(),
    ];
    for token in &bad {
        let r = post_initialize(&gw.url, Some(&format!("Bearer {token}"))).await?;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{token}");
        let www = challenge(&r);
        assert!(www.contains("error=\"invalid_token\"") && www.contains("resource_metadata="), "{www}");
    }

    // carol gets her entry's policy; dave (no entry, no "default") sees everything.
    let carol_token = issuer.token("carol", 300)?;
    let mut carol = Client::with_bearer(&gw.url, &carol_token)?;
    carol.initialize(json!({})).await?;
    let seen = tool_names(&carol.result("tools/list", json!({})).await?);
    assert!(seen.iter().any(|n| n == "echo") && !seen.iter().any(|n| n.starts_with("fixture_")), "{seen:?}");
    carol.read_descriptions("echo").await?;
    let echo = carol.call_tool("echo", json!({"text": "signed"})).await?;
    assert!(echo.to_string().contains("signed"), "{echo}");
    let mut dave = Client::with_bearer(&gw.url, &issuer.token("dave", 300)?)?;
    dave.initialize(json!({})).await?;
    let all = tool_names(&dave.result("tools/list", json!({})).await?);
    assert!(all.iter().any(|n| n == "fixture_whoami"), "{all:?}");

    // A fresh token for the same subject uses the same session; another subject's does not.
    let mut carol_again = Client::with_bearer(&gw.url, &issuer.token("carol", 200)?)?;
    carol_again.session = carol.session.clone();
    carol_again.version = carol.version.clone();
    carol_again.result("tools/list", json!({})).await?;
    let mut dave_steals = Client::with_bearer(&gw.url, &issuer.token("dave", 300)?)?;
    dave_steals.session = carol.session.clone();
    let reply = dave_steals.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await?;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);

    // Neither a token nor its signature reaches the log.
    let logs = gw.logs();
    let signature = carol_token.rsplit('.').next().unwrap_or_default();
    assert!(!logs.contains(&carol_token) && !logs.contains(signature), "a token was logged:\n{logs}");
    Ok(())
}

/// Every page of `tools/list`.
async fn all_tool_names(c: &Client) -> Result<Vec<String>> {
    let mut names = Vec::new();
    let mut params = json!({});
    for _ in 0..100 {
        let page = c.result("tools/list", params).await?;
        names.extend(tool_names(&page));
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(cursor) => params = json!({"cursor": cursor}),
            None => return Ok(names),
        }
    }
    Err(anyhow!("tools/list never ended"))
}

#[tokio::test]
async fn a_client_pages_through_and_hears_changes_of_only_what_it_may_see() -> Result<()> {
    let gw = Toolgate::start_with(
        &fixture_upstream("fx", &[], "sharing = \"shared\""),
        &format!(
            "[server]\nlisten = \"127.0.0.1:0\"\npage_size = 1\n\n{}",
            key_clients("tools = [\"echo\", \"fixture_added_2\"]", "")
        ),
    )
    .await?;
    let mut alice = Client::with_bearer(&gw.url, ALICE_KEY)?;
    alice.initialize(json!({})).await?;
    let mut bob = Client::with_bearer(&gw.url, BOB_KEY)?;
    bob.initialize(json!({})).await?;
    assert_eq!(all_tool_names(&alice).await?, ["echo", "describe_tools"], "one visible tool a page");
    let mut alice_hears = alice.listen().await?;
    let mut bob_hears = bob.listen().await?;
    assert_eq!(alice_hears.status, StatusCode::OK);

    // A tool alice may not see appears: only bob hears of it.
    bob.read_descriptions("fixture_notify_list_changed").await?;
    let added = bob.call_tool("fixture_notify_list_changed", json!({})).await?;
    assert_eq!(added["structuredContent"]["added"], "fixture_added_1", "{added}");
    let note = bob_hears.next().await?;
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    assert!(all_tool_names(&bob).await?.iter().any(|n| n == "fixture_added_1"));
    assert!(alice_hears.next_within(Duration::from_millis(800)).await.is_none(), "alice's list did not change");
    assert_eq!(all_tool_names(&alice).await?, ["echo", "describe_tools"]);

    // One she may see: she hears of it, and it is listed.
    bob.call_tool("fixture_notify_list_changed", json!({})).await?;
    let note = alice_hears.next().await?;
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    assert_eq!(all_tool_names(&alice).await?, ["echo", "fixture_added_2", "describe_tools"]);
    Ok(())
}

#[tokio::test]
async fn stdio_serves_the_local_user_without_auth() -> Result<()> {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("toolgate.toml");
    let text =
        format!("{}\n{}", key_clients("tools = [\"echo\"]\ncalls_per_minute = 1", ""), fixture_upstream("fx", &[], ""));
    std::fs::write(&config, text)?;
    let mut child = tokio::process::Command::new(toolgate_exe())
        .args(["stdio", "--config"])
        .arg(&config)
        .env("TOOLGATE_LOG", "info")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let mut lines = tokio::io::BufReader::new(child.stdout.take().context("stdout")?).lines();
    let mut ask = async |id: i64, method: &str, params: Value| -> Result<Value> {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string() + "\n";
        stdin.write_all(line.as_bytes()).await?;
        stdin.flush().await?;
        loop {
            let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
                .await??
                .ok_or_else(|| anyhow!("stdout closed"))?;
            let message: Value = serde_json::from_str(&line)?;
            if message["id"] == id {
                return Ok(message);
            }
        }
    };
    let init = ask(
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
                                          "clientInfo": {"name": "t", "version": "1"}}),
    )
    .await?;
    assert!(init["result"].is_object(), "{init}");
    // No credential, and neither the tool policy nor the rate limit applies.
    let list = ask(2, "tools/list", json!({})).await?;
    assert!(tool_names(&list["result"]).iter().any(|n| n == "fixture_whoami"), "{list}");
    ask(3, "resources/read", json!({"uri": "resource:///tool_descriptions?tools=echo"})).await?;
    for id in 4..7 {
        let echo = ask(id, "tools/call", json!({"name": "echo", "arguments": {"text": "local"}})).await?;
        assert!(echo["result"].to_string().contains("local"), "{echo}");
    }
    Ok(())
}

#[tokio::test]
async fn the_docker_configs_start_as_documented() -> Result<()> {
    let check = |file: &str, key: Option<&str>| {
        let mut command = tokio::process::Command::new(toolgate_exe());
        command
            .args(["check-config", "--config"])
            .arg(repo_path(file))
            .env_clear()
            .env("TOOLGATE_SERVER__LISTEN", "0.0.0.0:8080");
        if let Some(key) = key {
            command.env("TOOLGATE_API_KEY", key);
        }
        command.output()
    };
    // The image's demo opts in to serving without credentials.
    let demo = check("config/demo.toml", None).await?;
    assert!(demo.status.success(), "{}", String::from_utf8_lossy(&demo.stderr));
    // The compose example needs the key from toolgate.env.
    let without = check("docker/compose.toml", None).await?;
    assert!(!without.status.success());
    assert!(String::from_utf8_lossy(&without.stderr).contains("TOOLGATE_API_KEY"));
    let with = check("docker/compose.toml", Some("0123456789abcdef0123456789abcdef")).await?;
    assert!(with.status.success(), "{}", String::from_utf8_lossy(&with.stderr));
    let printed = String::from_utf8_lossy(&with.stdout);
    assert!(!printed.contains("0123456789abcdef0123456789abcdef"), "the key is redacted: {printed}");
    Ok(())
}

#[tokio::test]
async fn a_clients_credential_never_reaches_the_upstream() -> Result<()> {
    let (url, seen) = crate::security::recording_upstream().await?;
    let gw = Toolgate::start_with(
        &http_upstream("rec", &url, "headers = { Authorization = \"Bearer upstream-secret\" }"),
        &key_clients("", ""),
    )
    .await?;
    let mut alice = Client::with_bearer(&gw.url, ALICE_KEY)?;
    alice.initialize(json!({})).await?;
    alice.read_descriptions("whoami").await?;
    alice.call_tool("whoami", json!({})).await?;
    let seen = seen.lock().clone();
    assert!(seen.len() >= 4, "initialize, initialized, tools/list, tools/call at least: {}", seen.len());
    for headers in &seen {
        assert_eq!(headers["authorization"], "Bearer upstream-secret", "only the configured credential");
        assert!(!format!("{headers:?}").contains(ALICE_KEY), "{headers:?}");
    }
    assert!(!gw.logs().contains(ALICE_KEY));
    Ok(())
}
