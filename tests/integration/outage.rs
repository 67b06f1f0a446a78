//! Upstreams that are slow to start or go away, from a client's and a
//! probe's point of view: one bounded start-up wait per client session (and
//! a log line saying how it ended), and `/readyz` through an outage.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::*;

#[tokio::test]
async fn a_client_waits_for_a_hanging_upstream_once() -> Result<()> {
    // `sleep` never answers `initialize`; its first attempt would only end
    // at its 20 s timeout.
    let upstreams =
        [fixture_upstream("fx", &[], ""), stdio_upstream("hangs", "sleep", &["30"], "timeout = \"20s\"")].concat();
    let gw = Toolgate::start_with(&upstreams, "[server]\nlisten = \"127.0.0.1:0\"\nstartup_timeout = \"2s\"\n").await?;

    let began = Instant::now();
    let c = Client::connected(&gw.url, json!({})).await?;
    let initialize = began.elapsed();
    assert!(initialize >= Duration::from_millis(1500), "initialize waited for the upstreams: {initialize:?}");

    let began = Instant::now();
    let tools = c.result("tools/list", json!({})).await?;
    let list = began.elapsed();
    // A second wait would take the whole 2 s again.
    assert!(list < Duration::from_millis(1500), "tools/list did not wait again: {list:?}");
    let names: Vec<&str> = tools["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"fx__echo"), "the started upstream's tools are served: {names:?}");

    gw.wait_log("start-up wait over", Duration::from_secs(5)).await?;
    let logs = gw.logs();
    let line = logs.lines().find(|l| l.contains("start-up wait over")).context("no line")?;
    assert!(line.contains("WARN") && line.contains("starting=hangs") && line.contains("startup_timeout"), "{line}");
    Ok(())
}

async fn readyz(gw: &Toolgate) -> Result<(StatusCode, Value)> {
    let response = reqwest::get(format!("http://127.0.0.1:{}/readyz", gw.port())).await?;
    Ok((response.status(), response.json().await?))
}

async fn wait_for_state(gw: &Toolgate, state: &str) -> Result<(StatusCode, Value)> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = readyz(gw).await?;
        // Past start-up (every first attempt over), and fx in `state`.
        if body["status"] != "starting" && body["upstreams"]["fx"] == state {
            return Ok((status, body));
        }
        if tokio::time::Instant::now() > deadline {
            bail!("fx never became {state}: {status} {body}\nlogs:\n{}", gw.logs());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn readiness_through_an_upstream_outage() -> Result<()> {
    // The fixture starts once; while the flag file exists, restarts fail.
    let dir = tempfile::tempdir()?;
    let flag = dir.path().join("started");
    let script = format!(
        "if [ -e '{flag}' ]; then echo 'refusing to start' >&2; exit 1; fi; touch '{flag}'; exec '{fixture}'",
        flag = flag.display(),
        fixture = fixture_exe()
    );
    let upstreams =
        [stdio_upstream("fx", "sh", &["-c", &script], "sharing = \"shared\""), fixture_upstream("other", &[], "")]
            .concat();
    let gw = Toolgate::start(&upstreams).await?;
    let (status, body) = wait_for_state(&gw, "up").await?;
    assert_eq!((status, &body["status"]), (StatusCode::OK, &json!("ready")), "{body}");

    // The upstream dies mid-call and cannot come back.
    let c = Client::connected(&gw.url, json!({})).await?;
    c.read_descriptions("fx__fixture_crash,fx__echo").await?;
    let crashed = c.request("tools/call", json!({"name": "fx__fixture_crash", "arguments": {}})).await?;
    assert!(crashed.get("error").is_some(), "{crashed}");
    let (status, body) = wait_for_state(&gw, "down").await?;
    // Ready still: the gateway serves the other upstream (and answers calls
    // to the one that is down with a clear error); every replica would be
    // in the same state, so taking this one out of service helps no one.
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"status": "ready", "upstreams": {"fx": "down", "other": "up"}}));
    let refused = c.request("tools/call", json!({"name": "fx__echo", "arguments": {"text": "x"}})).await?;
    assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains("'fx'")), "{refused}");
    // The supervisor tries again after its backoff, and fails again.
    let url = format!("http://127.0.0.1:{}/metrics", gw.port());
    let metrics = crate::metrics::scrape_until(&url, "a failed restart", |s| {
        s.count("toolgate_upstream_restarts_total", &[("upstream", "fx")]) >= 1.0
    })
    .await?;
    assert_eq!(metrics.get("toolgate_upstream_up", &[("upstream", "fx")]), Some(0.0));
    assert_eq!(metrics.get("toolgate_upstream_up", &[("upstream", "other")]), Some(1.0));
    assert!(gw.logs().contains("refusing to start"), "the restart ran and failed");

    // It may start again: the supervisor brings it back.
    std::fs::remove_file(&flag)?;
    wait_for_state(&gw, "up").await?;
    Ok(())
}
