//! The audit trail through the real binary: a session describes and calls
//! tools of the fixture (its definitions approved in a lockfile), and the
//! trail says which definition, by the lock's digest, the client was served
//! and called; secrets in arguments are redacted; a refusal says why; a
//! change of a session's concerns is written with the values now set; a
//! flood through a one-event queue drops events, counts them, and every
//! call is still answered.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use serde_json::{Value, json};

use crate::common::*;

fn config(lockfile: &Path, audit: &Path, extra: &str) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[metrics]\nenabled = true\n[disclosure]\nlock = {:?}\n\
         [audit]\nenabled = true\npath = {:?}\n{extra}\n{}",
        lockfile.display().to_string(),
        audit.display().to_string(),
        fixture_upstream("fx", &[], "")
    )
}

/// The lockfile (written by `toolgate lock`, the fixture's tools approved)
/// and the audit file, in `dir`.
async fn locked(dir: &Path) -> Result<(PathBuf, PathBuf)> {
    let (lockfile, trail) = (dir.join("toolgate.lock"), dir.join("audit.log"));
    let (ok, out) = crate::lock::lock(dir, &config(&lockfile, &trail, ""), &[]).await?;
    ensure!(ok, "{out}");
    Ok((lockfile, trail))
}

/// The events written so far, once there is one of each of `types`.
async fn events(path: &Path, types: &[&str]) -> Result<Vec<Value>> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let events: Vec<Value> = text.lines().map(serde_json::from_str).collect::<Result<_, _>>()?;
        if types.iter().all(|t| events.iter().any(|e| e["type"] == *t)) {
            return Ok(events);
        }
        ensure!(tokio::time::Instant::now() < deadline, "not every one of {types:?} in: {text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_trail_names_the_definition_each_call_was_shown_and_keeps_no_secret() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let (lockfile, trail) = locked(dir.path()).await?;
    let lock: Value = serde_json::from_str(&std::fs::read_to_string(&lockfile)?)?;
    let echo_digest = lock["upstreams"]["fx"]["tools"]["echo"]["digest"].as_str().context("echo's digest")?.to_owned();

    let gw = Toolgate::start_raw(&config(&lockfile, &trail, "")).await?;
    let mut c = Client::new(&gw.url);
    c.initialize(json!({})).await?;
    // A call before its description: refused by the gate.
    c.call_tool("echo", json!({"text": "too early"})).await?;
    c.call_tool("describe_tools", json!({"tools": ["echo"]})).await?;
    let answer = c.call_tool("echo", json!({"text": "hi", "api_token": "s3cret-value"})).await?;
    ensure!(answer["isError"] != true, "{answer}");

    let events = events(&trail, &["refusal", "describe", "call"]).await?;
    ensure!(
        !events.iter().any(|e| e["type"] == "drift"),
        "no drift: the definitions are the approved ones: {events:?}"
    );
    let by_type: HashMap<&str, &Value> = events.iter().map(|e| (e["type"].as_str().unwrap_or(""), e)).collect();
    let refusal = by_type.get("refusal").context("no refusal event")?;
    ensure!(refusal["reason"] == "gate" && refusal["granted"] == false && refusal["tool"] == "echo", "{refusal}");
    let describe = by_type.get("describe").context("no describe event")?;
    ensure!(
        describe["tools"][0]["tool"] == "echo" && describe["tools"][0]["digest"] == echo_digest.as_str(),
        "{describe}"
    );
    let call = by_type.get("call").with_context(|| format!("no call event: {events:?}"))?;
    ensure!(call["digest"] == echo_digest.as_str(), "the call names the definition described: {call}");
    ensure!(call["granted"] == true && call["outcome"] == "ok" && call["routed"] == false, "{call}");
    ensure!(call["principal"] == "anonymous" && call["upstream"] == "fx" && call["session"].is_string(), "{call}");
    ensure!(call["arguments"]["text"] == "hi", "{call}");
    ensure!(call["arguments"]["api_token"].as_str().is_some_and(|t| t.starts_with("redacted:")), "{call}");
    ensure!(call["schema"] == 1 && call["latency_ms"].is_number() && call["result_bytes"].is_number(), "{call}");
    let all = std::fs::read_to_string(&trail)?;
    ensure!(!all.contains("s3cret-value"), "a secret reached the trail: {all}");
    Ok(())
}

#[tokio::test]
async fn a_concerns_update_that_changes_the_sessions_values_is_in_the_trail() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let trail = dir.path().join("audit.log");
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[audit]\nenabled = true\npath = {:?}\n\
         [[concerns]]\nname = \"security\"\ndescription = \"Security level\"\nvalues = [\"high\", \"low\"]\n{}",
        trail.display().to_string(),
        fixture_upstream("fx", &[], "[upstream.tools.echo]\nconcerns = { security = \"high\" }\n")
    );
    let gw = Toolgate::start_raw(&config).await?;
    let mut c = Client::new(&gw.url);
    c.initialize(json!({})).await?;
    for sent in [json!({"security": "low"}), json!({"security": "low"}), json!({"security": "high"})] {
        ensure!(c.result("concerns/update", json!({"concerns": sent})).await? == json!({}));
    }
    // Written in order: once the last update's event is there, so are the others.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let concerns = loop {
        let text = std::fs::read_to_string(&trail).unwrap_or_default();
        let events: Vec<Value> = text.lines().map(serde_json::from_str).collect::<Result<_, _>>()?;
        let concerns: Vec<Value> = events.into_iter().filter(|e| e["type"] == "concerns").collect();
        if concerns.iter().any(|e| e["concerns"]["security"] == "high") {
            break concerns;
        }
        ensure!(tokio::time::Instant::now() < deadline, "no event of the last update: {text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // The same values sent again change nothing, and write nothing.
    ensure!(concerns.len() == 2, "{concerns:?}");
    ensure!(concerns[0]["concerns"] == json!({"security": "low"}), "{concerns:?}");
    ensure!(concerns[1]["concerns"] == json!({"security": "high"}), "{concerns:?}");
    let event = &concerns[0];
    ensure!(event["schema"] == 1 && event["principal"] == "anonymous" && event["client"] == "anonymous", "{event}");
    ensure!(event["session"].as_str() == c.session.as_deref() && event["session"].is_string(), "{event}");
    Ok(())
}

#[tokio::test]
async fn a_flood_through_a_tiny_queue_drops_events_and_every_call_is_answered() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let (lockfile, trail) = locked(dir.path()).await?;
    let gw = Toolgate::start_raw(&config(&lockfile, &trail, "queue = 1")).await?;
    let mut c = Client::new(&gw.url);
    c.initialize(json!({})).await?;
    c.call_tool("describe_tools", json!({"tools": ["echo"]})).await?;
    // Whether the writer falls behind a flood is up to the scheduler: one
    // flood usually overflows the queue, and a few more floods (every call
    // still answered) make it certain.
    let mut dropped = 0.0;
    for _flood in 0..10 {
        let calls = (0..200).map(|i| {
            let c = &c;
            async move { c.call_tool("echo", json!({"text": format!("{i} {}", "x".repeat(8000))})).await }
        });
        let answers = futures::future::join_all(calls).await;
        for answer in answers {
            let answer = answer?;
            ensure!(answer["isError"] != true, "{answer}");
        }
        let scrape = reqwest::get(format!("http://127.0.0.1:{}/metrics", gw.port())).await?.text().await?;
        dropped = scrape
            .lines()
            .find_map(|l| l.strip_prefix("toolgate_audit_dropped_total "))
            .context("no toolgate_audit_dropped_total")?
            .parse()?;
        if dropped > 0.0 {
            break;
        }
    }
    ensure!(dropped > 0.0, "nothing was dropped through a one-event queue in ten floods");
    Ok(())
}
