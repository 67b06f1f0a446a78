use std::collections::HashMap;
use std::time::Duration;

use serde_json::json;

use super::*;

fn metrics() -> Metrics {
    Metrics::new(vec![Arc::from("alpha"), Arc::from("beta")], true)
}

/// Every sample of a scrape: (name, labels, value).
fn samples(m: &Metrics) -> Vec<(String, HashMap<String, String>, f64)> {
    let text = m.render().expect("render");
    assert!(text.ends_with("# EOF\n"), "OpenMetrics text ends with # EOF");
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("parse");
    scrape
        .samples
        .into_iter()
        .map(|s| {
            let value = match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                prometheus_parse::Value::Histogram(buckets) => buckets.last().map_or(0.0, |b| b.count),
                prometheus_parse::Value::Summary(_) => f64::NAN,
            };
            (s.metric, s.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect(), value)
        })
        .collect()
}

fn value(m: &Metrics, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples(m)
        .into_iter()
        .find(|(n, l, _)| n == name && labels.iter().all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v)))
        .map(|(_, _, v)| v)
}

#[test]
fn names_follow_prometheus_conventions() {
    let m = metrics();
    m.request(Method::ToolsCall, Some(0), Outcome::Ok, Duration::from_millis(3), "anonymous");
    m.upstream_request(1, Method::ToolsList, &Ok(jsonrpc::Outcome::Result(json!({}))), Duration::from_millis(1));
    let text = m.render().unwrap();
    for line in text.lines().filter(|l| l.starts_with("# TYPE")) {
        let mut words = line.split_whitespace().skip(2);
        let (name, kind) = (words.next().unwrap(), words.next().unwrap());
        assert!(name.starts_with("toolgate_"), "{line}");
        if kind == "histogram" {
            assert!(name.ends_with("_seconds"), "durations in seconds: {line}");
        }
        if kind == "counter" {
            assert!(text.contains(&format!("\n{name}_total")), "a counter's samples end in _total: {name}");
        }
    }
    for banned in ["session=", "tool=", "id="] {
        assert!(!text.contains(banned), "no {banned} label");
    }
}

#[test]
fn a_request_counts_once_under_its_labels() {
    let m = metrics();
    m.request(Method::ToolsCall, Some(1), Outcome::ToolError, Duration::from_millis(3), "anonymous");
    m.request(Method::ToolsCall, Some(1), Outcome::ToolError, Duration::from_millis(300), "anonymous");
    m.request(Method::of("x-vendor/anything"), None, Outcome::Error, Duration::from_millis(1), "anonymous");
    let labels = [("method", "tools/call"), ("upstream", "beta"), ("outcome", "tool_error")];
    assert_eq!(value(&m, "toolgate_requests_total", &labels), Some(2.0));
    assert_eq!(value(&m, "toolgate_requests_total", &[("method", "other"), ("upstream", "")]), Some(1.0));
    assert_eq!(
        value(&m, "toolgate_request_duration_seconds", &[("method", "tools/call")]),
        Some(2.0),
        "the histogram counted both"
    );
    assert_eq!(
        value(&m, "toolgate_client_requests_total", &[("client", "anonymous"), ("outcome", "error")]),
        Some(1.0)
    );
    // Series nothing happened to are not made up.
    assert_eq!(value(&m, "toolgate_requests_total", &[("upstream", "alpha")]), None);
}

#[test]
fn per_upstream_counters_start_at_zero() {
    let m = metrics();
    for name in ["toolgate_upstream_restarts_total", "toolgate_gate_refusals_total", "toolgate_described_tools_total"] {
        for upstream in ["alpha", "beta"] {
            assert_eq!(value(&m, name, &[("upstream", upstream)]), Some(0.0), "{name} {upstream}");
        }
    }
    m.upstream_restarted(1);
    m.gate_refused(0);
    m.descriptions_fetched(Via::Tool, [0, 0, 1]);
    m.upstream_restarted(7); // not an upstream: ignored
    assert_eq!(value(&m, "toolgate_upstream_restarts_total", &[("upstream", "beta")]), Some(1.0));
    assert_eq!(value(&m, "toolgate_gate_refusals_total", &[("upstream", "alpha")]), Some(1.0));
    assert_eq!(value(&m, "toolgate_described_tools_total", &[("upstream", "alpha")]), Some(2.0));
    assert_eq!(value(&m, "toolgate_description_fetches_total", &[("via", "tool")]), Some(1.0));
    assert_eq!(value(&m, "toolgate_description_fetches_total", &[("via", "resource")]), Some(0.0));
}

#[test]
fn clients_past_the_cap_are_other() {
    let m = metrics();
    for i in 0..MAX_CLIENTS + 10 {
        m.request(Method::Ping, None, Outcome::Ok, Duration::ZERO, &format!("client-{i}"));
    }
    let clients: std::collections::HashSet<String> = samples(&m)
        .into_iter()
        .filter(|(n, _, _)| n == "toolgate_client_requests_total")
        .filter_map(|(_, l, _)| l.get("client").cloned())
        .collect();
    assert_eq!(clients.len(), MAX_CLIENTS + 1);
    assert!(clients.contains("other") && clients.contains("client-0"));
    assert_eq!(value(&m, "toolgate_client_requests_total", &[("client", "other")]), Some(10.0));
}

#[test]
fn catalog_gauges_show_the_newest_catalog() {
    let m = metrics();
    let counts = |tools: i64| CatalogCounts {
        tools: vec![tools, 1],
        full: vec![100 * tools, 50],
        served: vec![10 * tools, 50],
        describe_tool: 7,
    };
    // Before the first count there is no series, rather than a zero.
    assert_eq!(value(&m, "toolgate_catalog_tools", &[("upstream", "alpha")]), None);
    assert_eq!(value(&m, "toolgate_catalog_tokens", &[("upstream", "alpha"), ("form", "full")]), None);
    m.show_catalog_now(5, &counts(2));
    assert_eq!(value(&m, "toolgate_catalog_tools", &[("upstream", "alpha")]), Some(2.0));
    assert_eq!(value(&m, "toolgate_catalog_tokens", &[("upstream", "alpha"), ("form", "full")]), Some(200.0));
    assert_eq!(value(&m, "toolgate_catalog_tokens", &[("upstream", "beta"), ("form", "served")]), Some(50.0));
    assert_eq!(value(&m, "toolgate_catalog_describe_tool_tokens", &[]), Some(7.0));

    // An older catalog counted late does not replace a newer one's figures.
    m.show_catalog_now(4, &counts(9));
    assert_eq!(value(&m, "toolgate_catalog_tools", &[("upstream", "alpha")]), Some(2.0));
    m.show_catalog_now(6, &counts(3));
    assert_eq!(value(&m, "toolgate_catalog_tools", &[("upstream", "alpha")]), Some(3.0));
}
