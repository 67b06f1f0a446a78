//! The shared state over TLS: a real `redis-server` serving TLS with a
//! certificate signed by a CA made for the test, an ACL user with a
//! password, and toolgate replicas pointed at it with `rediss://`,
//! `ca_file` and the credentials from the environment. Sessions are shared
//! through it; a CA that did not sign the server's certificate, or a wrong
//! password, leave the store `down` and the requests that need it refused
//! with the retryable `-32019`, with the cause in the logs.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::*;

const USER: &str = "toolgate-replica";
const PASSWORD: &str = "tls-test-password-0123456789";

/// A toolgate whose `[state]` is the TLS Redis at `url`, trusting the CA in
/// `ca_file`, with the ACL credentials, if any, from the environment
/// (`${VAR}` in the configuration, as a deployment would have them).
async fn replica(url: &str, ca_file: &Path, credentials: Option<(&str, &str)>) -> Result<Toolgate> {
    let auth =
        if credentials.is_some() { "username = \"${REDIS_USERNAME}\"\npassword = \"${REDIS_PASSWORD}\"\n" } else { "" };
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n\n[state]\nredis_url = {url:?}\n{auth}ca_file = {ca:?}\n\n{}",
        fixture_upstream("fx", &[], ""),
        ca = ca_file.display().to_string(),
    );
    let env: Vec<(&str, &str)> = credentials
        .map(|(user, password)| vec![("REDIS_USERNAME", user), ("REDIS_PASSWORD", password)])
        .unwrap_or_default();
    Toolgate::start_raw_env(&config, &env).await
}

/// `/readyz` of `gw`.
async fn readyz(gw: &Toolgate) -> Result<Value> {
    let url = format!("http://127.0.0.1:{}/readyz", gw.port());
    Ok(reqwest::get(url).await?.json().await?)
}

/// Waits until `/readyz` reports the store as `state` (it is checked every
/// second), and returns the report.
async fn wait_state(gw: &Toolgate, state: &str) -> Result<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ready = readyz(gw).await?;
        if ready["state"] == state {
            return Ok(ready);
        }
        ensure!(Instant::now() < deadline, "the store never became {state}: {ready}\nlogs:\n{}", gw.logs());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A new session on `gw` is refused as the store being unavailable: HTTP
/// 503, `Retry-After`, `-32019`.
async fn initialize_is_refused(gw: &Toolgate) -> Result<()> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let reply = Client::new(&gw.url).post(&init).await?;
    ensure!(reply.status == StatusCode::SERVICE_UNAVAILABLE, "{reply:?}");
    ensure!(reply.headers.contains_key("retry-after"), "{reply:?}");
    let code = reply.messages.first().and_then(|m| m.pointer("/error/code")).and_then(Value::as_i64);
    ensure!(code == Some(-32019), "{reply:?}");
    Ok(())
}

#[tokio::test]
async fn sessions_are_shared_through_a_tls_redis_with_an_acl_user() -> Result<()> {
    let ca = TestCa::new("toolgate test CA");
    let Some(redis) = RedisServer::start_tls(&ca, Some((USER, PASSWORD))) else { return Ok(()) };
    let dir = tempfile::tempdir()?;
    let ca_file = dir.path().join("redis-ca.pem");
    ca.write(&ca_file);
    let a = replica(&redis.tls_url(), &ca_file, Some((USER, PASSWORD))).await?;
    let b = replica(&redis.tls_url(), &ca_file, Some((USER, PASSWORD))).await?;

    let on_a = Client::connected(&a.url, json!({})).await?;
    on_a.read_descriptions("echo").await?;
    // The record went to Redis over TLS, as the ACL user.
    let id = on_a.session.clone().unwrap_or_default();
    let exists = redis.command(&format!("EXISTS toolgate:session:{id}"));
    ensure!(exists == ":1", "no session record in Redis ({exists}); logs:\n{}", a.logs());

    // B never saw the session: it adopts it from Redis, grant included.
    let mut on_b = on_a.clone();
    on_b.url = b.url.clone();
    let result = on_b.call_tool("echo", json!({"text": "through TLS"})).await?;
    ensure!(text_of(&result) == "through TLS", "{result}\nB's logs:\n{}", b.logs());
    ensure!(b.logs().contains("session adopted from the shared store"), "B's logs:\n{}", b.logs());
    for gw in [&a, &b] {
        let ready = wait_state(gw, "up").await?;
        ensure!(ready["status"] == "ready", "{ready}");
    }

    // A DELETE on B reaches A over the TLS pub/sub connection.
    ensure!(on_b.delete().await? == StatusCode::OK);
    let deleted = Instant::now();
    while on_a.post(&json!({"jsonrpc": "2.0", "id": "p", "method": "ping"})).await?.status != StatusCode::NOT_FOUND {
        ensure!(deleted.elapsed() < Duration::from_secs(5), "A still serves the deleted session:\n{}", a.logs());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

#[tokio::test]
async fn a_ca_that_did_not_sign_the_redis_certificate_leaves_the_store_down_with_the_cause_logged() -> Result<()> {
    let ca = TestCa::new("toolgate test CA");
    let Some(redis) = RedisServer::start_tls(&ca, None) else { return Ok(()) };
    let dir = tempfile::tempdir()?;
    let other = dir.path().join("other-ca.pem");
    TestCa::new("another CA").write(&other);
    let gw = replica(&redis.tls_url(), &other, None).await?;

    let ready = wait_state(&gw, "down").await?;
    // Held sessions would go on: the replica itself stays ready.
    ensure!(ready["status"] == "ready", "{ready}");
    initialize_is_refused(&gw).await?;
    // The operator sees why: the certificate was refused, not Redis down.
    let logs = gw.logs();
    ensure!(
        logs.contains("the grant store (Redis) does not answer yet") && logs.contains("UnknownIssuer"),
        "logs:\n{logs}"
    );
    Ok(())
}

#[tokio::test]
async fn a_wrong_redis_password_leaves_the_store_down_with_the_cause_logged() -> Result<()> {
    let ca = TestCa::new("toolgate test CA");
    let Some(redis) = RedisServer::start_tls(&ca, Some((USER, PASSWORD))) else { return Ok(()) };
    let dir = tempfile::tempdir()?;
    let ca_file = dir.path().join("redis-ca.pem");
    ca.write(&ca_file);
    let gw = replica(&redis.tls_url(), &ca_file, Some((USER, "not-the-password"))).await?;

    let ready = wait_state(&gw, "down").await?;
    ensure!(ready["status"] == "ready", "{ready}");
    initialize_is_refused(&gw).await?;
    let logs = gw.logs();
    ensure!(
        logs.contains("the grant store (Redis) does not answer yet") && logs.contains("Password authentication failed"),
        "logs:\n{logs}"
    );
    // The password itself is never logged.
    ensure!(!logs.contains("not-the-password"), "logs:\n{logs}");
    Ok(())
}
