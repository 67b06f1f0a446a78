//! `GET /healthz` and `GET /readyz` on the main listener: liveness at once,
//! readiness once every upstream's first connection attempt is over (an
//! upstream that hangs keeps it `starting`, one that fails is `down` but
//! does not block it), and both outside the `Host` check so a kubelet can
//! probe by pod IP.

use std::time::Duration;

use anyhow::Result;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::*;

async fn probe(gw: &Toolgate, path: &str, host: &str) -> Result<(StatusCode, Value)> {
    let url = format!("http://127.0.0.1:{}{path}", gw.port());
    let response = reqwest::Client::new().get(url).header("host", host).send().await?;
    let status = response.status();
    Ok((status, response.json().await.unwrap_or(Value::Null)))
}

#[tokio::test]
async fn readiness_waits_for_every_upstream_first_attempt() -> Result<()> {
    // `sleep` never answers `initialize`: its first attempt ends at its
    // 3 s timeout. A missing program fails at once.
    let upstreams = [
        fixture_upstream("fx", &[], ""),
        stdio_upstream("hangs", "sleep", &["30"], "timeout = \"3s\""),
        stdio_upstream("missing", "/nonexistent/mcp-server", &[], ""),
    ]
    .concat();
    let gw = Toolgate::start(&upstreams).await?;
    let pod_ip = format!("10.1.2.3:{}", gw.port());

    assert_eq!(probe(&gw, "/healthz", &pod_ip).await?, (StatusCode::OK, json!({"status": "ok"})));
    let (status, body) = probe(&gw, "/readyz", &pod_ip).await?;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["status"], "starting");
    assert_eq!(body["upstreams"]["hangs"], "starting");

    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let ready = loop {
        let (status, body) = probe(&gw, "/readyz", &pod_ip).await?;
        if status == StatusCode::OK || tokio::time::Instant::now() > deadline {
            break (status, body);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        ready,
        (StatusCode::OK, json!({"status": "ready", "upstreams": {"fx": "up", "hangs": "down", "missing": "down"}})),
        "logs:\n{}",
        gw.logs()
    );

    // The MCP endpoint still refuses that Host.
    let refused = reqwest::Client::new()
        .post(&gw.url)
        .header("host", &pod_ip)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await?;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    Ok(())
}
