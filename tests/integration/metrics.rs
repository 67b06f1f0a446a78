//! `GET /metrics` on the real binary: the scrape parses, and its series
//! move with real traffic (sessions, calls, gate refusals, description
//! fetches, an upstream crash and restart); `[metrics] listen` moves it to
//! a listener of its own; the Grafana dashboard only queries series a
//! scrape has.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::*;

/// One sample of a scrape.
#[derive(Debug, Clone)]
pub struct Sample {
    pub name: String,
    pub labels: HashMap<String, String>,
    pub value: f64,
}

/// A parsed scrape, with the metric families it declares (`# TYPE`).
#[derive(Debug)]
pub struct Scrape {
    pub samples: Vec<Sample>,
    pub families: BTreeSet<String>,
}

impl Scrape {
    /// The value of the sample `name` whose labels include `labels`.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples
            .iter()
            .find(|s| s.name == name && labels.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v)))
            .map(|s| s.value)
    }

    /// As [`Scrape::get`], 0 for a series not there yet.
    pub fn count(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.get(name, labels).unwrap_or(0.0)
    }
}

/// Scrapes `url` (with `Host: host` if given) and parses the text with a
/// Prometheus text-format parser.
pub async fn scrape(url: &str, host: Option<&str>) -> Result<Scrape> {
    let mut request = reqwest::Client::new().get(url);
    if let Some(host) = host {
        request = request.header("host", host);
    }
    let response = request.send().await?;
    if response.status() != StatusCode::OK {
        bail!("GET {url}: {}", response.status());
    }
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    if !content_type.starts_with("application/openmetrics-text") {
        bail!("unexpected content type {content_type:?}");
    }
    let text = response.text().await?;
    if !text.ends_with("# EOF\n") {
        bail!("the OpenMetrics text does not end with # EOF");
    }
    let families = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    let parsed = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))?;
    let samples = parsed
        .samples
        .into_iter()
        .map(|s| Sample {
            value: match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                // A histogram's count: its +Inf bucket.
                prometheus_parse::Value::Histogram(b) => b.last().map_or(0.0, |b| b.count),
                prometheus_parse::Value::Summary(_) => f64::NAN,
            },
            labels: s.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            name: s.metric,
        })
        .collect();
    Ok(Scrape { samples, families })
}

fn metrics_url(gw: &Toolgate) -> String {
    format!("http://127.0.0.1:{}/metrics", gw.port())
}

/// Scrapes until `check` holds (series that move after the answer, such as
/// an ended session or a restart), or fails with the last scrape.
pub async fn scrape_until(url: &str, what: &str, check: impl Fn(&Scrape) -> bool) -> Result<Scrape> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let s = scrape(url, None).await?;
        if check(&s) {
            return Ok(s);
        }
        if tokio::time::Instant::now() > deadline {
            bail!(
                "{what} did not happen; last scrape: {:#?}",
                s.samples
                    .iter()
                    .filter(|s| s.name.contains("session")
                        || s.name.contains("restart")
                        || s.name.contains("upstream_up"))
                    .collect::<Vec<_>>()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn series_move_with_real_traffic() -> Result<()> {
    // Shared, so the crash below takes down the gateway's own connection
    // (which the supervisor restarts).
    let gw = Toolgate::start(&fixture_upstream("fx", &[], "sharing = \"shared\"")).await?;
    let url = metrics_url(&gw);
    let before =
        scrape_until(&url, "the catalog counted", |s| s.count("toolgate_catalog_tools", &[("upstream", "fx")]) > 0.0)
            .await?;
    assert_eq!(before.get("toolgate_sessions_active", &[]), Some(0.0));
    assert_eq!(before.get("toolgate_upstream_up", &[("upstream", "fx")]), Some(1.0));
    assert_eq!(before.get("toolgate_build_info", &[("version", env!("CARGO_PKG_VERSION"))]), Some(1.0));
    let full = before.count("toolgate_catalog_tokens", &[("upstream", "fx"), ("form", "full")]);
    let served = before.count("toolgate_catalog_tokens", &[("upstream", "fx"), ("form", "served")]);
    assert!(served > 0.0 && served < full, "the served list is smaller: {served} of {full} tokens");

    let c = Client::connected(&gw.url, json!({})).await?;
    let s = scrape(&url, None).await?;
    assert_eq!(s.get("toolgate_sessions_active", &[]), Some(1.0));
    assert_eq!(s.get("toolgate_sessions_started_total", &[]), Some(1.0));
    assert_eq!(
        s.count("toolgate_requests_total", &[("method", "initialize"), ("upstream", ""), ("outcome", "ok")]),
        1.0
    );
    assert_eq!(s.get("toolgate_client_sessions_active", &[("client", "anonymous")]), Some(1.0));

    // Refused until the description is fetched.
    let refused = c.call_tool("echo", json!({"text": "hi"})).await?;
    assert_eq!(refused["isError"], true, "{refused}");
    let s = scrape(&url, None).await?;
    assert_eq!(s.get("toolgate_gate_refusals_total", &[("upstream", "fx")]), Some(1.0));
    assert_eq!(s.count("toolgate_requests_total", &[("method", "tools/call"), ("outcome", "refused")]), 1.0);
    assert_eq!(
        s.count("toolgate_upstream_requests_total", &[("method", "tools/call")]),
        0.0,
        "the upstream never saw it"
    );

    c.read_descriptions("echo,fixture_crash").await?;
    let answered = c.call_tool("echo", json!({"text": "hi"})).await?;
    assert_eq!(text_of(&answered), "hi");
    let s = scrape(&url, None).await?;
    assert_eq!(s.get("toolgate_description_fetches_total", &[("via", "resource")]), Some(1.0));
    assert_eq!(s.get("toolgate_described_tools_total", &[("upstream", "fx")]), Some(2.0));
    let ok = [("method", "tools/call"), ("upstream", "fx"), ("outcome", "ok")];
    assert_eq!(s.count("toolgate_requests_total", &ok), 1.0);
    assert_eq!(s.count("toolgate_upstream_requests_total", &ok), 1.0);
    assert_eq!(
        s.count("toolgate_client_requests_total", &[("client", "anonymous"), ("outcome", "ok")]),
        3.0,
        "initialize, the read, the call"
    );
    assert_eq!(s.count("toolgate_request_duration_seconds", &[("method", "tools/call")]), 2.0);
    assert_eq!(
        s.count("toolgate_upstream_request_duration_seconds", &[("upstream", "fx"), ("method", "tools/call")]),
        1.0
    );
    assert!(s.count("toolgate_upstream_connections", &[("upstream", "fx")]) >= 1.0);

    // The upstream dies in the middle of a call, and comes back.
    let crashed = c.request("tools/call", json!({"name": "fixture_crash", "arguments": {}})).await?;
    assert!(crashed.get("error").is_some(), "{crashed}");
    let s = scrape_until(&url, "the restart", |s| {
        s.count("toolgate_upstream_restarts_total", &[("upstream", "fx")]) >= 1.0
            && s.get("toolgate_upstream_up", &[("upstream", "fx")]) == Some(1.0)
    })
    .await?;
    assert_eq!(s.count("toolgate_upstream_requests_total", &[("method", "tools/call"), ("outcome", "closed")]), 1.0);
    assert_eq!(
        s.count("toolgate_requests_total", &[("method", "tools/call"), ("upstream", "fx"), ("outcome", "error")]),
        1.0
    );

    // The session ends.
    assert_eq!(c.delete().await?, StatusCode::OK);
    scrape_until(&url, "the session's end", |s| {
        s.get("toolgate_sessions_active", &[]) == Some(0.0) && s.get("toolgate_sessions_ended_total", &[]) == Some(1.0)
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_scraper_addressing_the_pod_by_ip_uses_the_metrics_listener() -> Result<()> {
    let gw = Toolgate::start_with(&fixture_upstream("fx", &[], ""), "[metrics]\nlisten = \"127.0.0.1:0\"\n").await?;
    let url = own_metrics_url(&gw).await?;
    let port = url::Url::parse(&url)?.port().context("a port")?;
    let s = scrape(&url, Some(&format!("10.1.2.3:{port}"))).await?;
    assert!(s.families.contains("toolgate_sessions_active"), "{:?}", s.families);
    // The main listener refuses that Host, for the MCP endpoint and (when it
    // serves them) the metrics alike (tests/integration/security_review.rs).
    let pod_ip = format!("10.1.2.3:{}", gw.port());
    let mcp = reqwest::Client::new().post(&gw.url).header("host", &pod_ip).body("{}").send().await?;
    assert_eq!(mcp.status(), StatusCode::FORBIDDEN);
    Ok(())
}

/// The address of the metrics listener of its own, from the log.
async fn own_metrics_url(gw: &Toolgate) -> Result<String> {
    gw.wait_log("serving metrics on", Duration::from_secs(10)).await?;
    let logs = gw.logs();
    let line = logs.lines().find(|l| l.contains("serving metrics on")).ok_or_else(|| anyhow!("no line"))?;
    Ok(line[line.find("http://").context("no URL")?..].trim().to_owned())
}

#[tokio::test]
async fn metrics_on_their_own_listener() -> Result<()> {
    let gw = Toolgate::start_with(&fixture_upstream("fx", &[], ""), "[metrics]\nlisten = \"127.0.0.1:0\"\n").await?;
    let url = own_metrics_url(&gw).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    c.result("tools/list", json!({})).await?;
    let s = scrape(&url, None).await?;
    assert_eq!(s.count("toolgate_requests_total", &[("method", "tools/list"), ("outcome", "ok")]), 1.0);
    let main = reqwest::get(metrics_url(&gw)).await?;
    assert_eq!(main.status(), StatusCode::NOT_FOUND, "not on the main listener then");

    let off = Toolgate::start_with(&fixture_upstream("fx", &[], ""), "[metrics]\nenabled = false\n").await?;
    assert_eq!(reqwest::get(metrics_url(&off)).await?.status(), StatusCode::NOT_FOUND);
    Ok(())
}

#[tokio::test]
async fn worker_threads_sizes_the_runtime() -> Result<()> {
    for threads in [1, 3] {
        let gw = Toolgate::start_with(
            &fixture_upstream("fx", &[], "mode = \"passthrough\""),
            &format!("[server]\nlisten = \"127.0.0.1:0\"\nworker_threads = {threads}\n"),
        )
        .await?;
        let c = Client::connected(&gw.url, json!({})).await?;
        let r = c.result("tools/call", json!({"name": "echo", "arguments": {"text": "on a sized runtime"}})).await?;
        assert_eq!(r["content"][0]["text"], "on a sized runtime");
        let s = scrape(&metrics_url(&gw), None).await?;
        assert_eq!(s.get("toolgate_runtime_workers", &[]), Some(f64::from(threads)), "worker_threads = {threads}");
    }
    Ok(())
}

/// Metric names a Grafana dashboard's queries use.
fn queried_metrics(dashboard: &Value) -> BTreeSet<String> {
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    if (k == "expr" || k == "query")
                        && let Some(expr) = v.as_str()
                    {
                        out.extend(metric_names(expr));
                    }
                    walk(v, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(dashboard, &mut out);
    out
}

/// The `toolgate_…` identifiers of a PromQL expression.
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("toolgate_") {
        let tail = &rest[at..];
        let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
        names.push(tail[..end].to_owned());
        rest = &tail[end..];
    }
    names
}

/// The series names a family declares in OpenMetrics text.
fn series_of(family: &str, kind_suffixes: &[&str]) -> Vec<String> {
    std::iter::once(family.to_owned()).chain(kind_suffixes.iter().map(|s| format!("{family}{s}"))).collect()
}

#[tokio::test]
async fn the_dashboard_queries_only_series_a_scrape_has() -> Result<()> {
    let text = std::fs::read_to_string(repo_path("deploy/grafana/toolgate.json"))?;
    let dashboard: Value = serde_json::from_str(&text).context("the dashboard is JSON")?;
    assert!(dashboard["panels"].as_array().is_some_and(|p| !p.is_empty()), "panels");
    let queried = queried_metrics(&dashboard);
    assert!(queried.len() >= 10, "{queried:?}");

    let gw = Toolgate::start(&fixture_upstream("fx", &[], "")).await?;
    // Request series appear with their first request: make one of each kind.
    let c = Client::connected(&gw.url, json!({})).await?;
    c.result("tools/list", json!({})).await?;
    c.read_descriptions("echo").await?;
    c.call_tool("echo", json!({"text": "hi"})).await?;
    let s = scrape_until(&metrics_url(&gw), "the catalog counted", |s| {
        s.count("toolgate_catalog_tools", &[("upstream", "fx")]) > 0.0
    })
    .await?;
    let mut known: BTreeSet<String> = BTreeSet::new();
    for family in &s.families {
        known.extend(series_of(family, &["_total", "_bucket", "_count", "_sum", "_info", "_created"]));
    }
    let missing: Vec<_> = queried.iter().filter(|m| !known.contains(*m)).collect();
    assert!(missing.is_empty(), "the dashboard queries series toolgate does not have: {missing:?}");
    Ok(())
}
