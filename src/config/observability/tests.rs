//! Unit tests of `observability.rs`.

use super::*;
// Loading reads TOOLGATE_* variables, which other tests set meanwhile.
use crate::config::load_str_jailed as load_str;

fn problems(text: &str) -> Vec<String> {
    match load_str(text) {
        Ok(_) => Vec::new(),
        Err(crate::config::ConfigError::Invalid(p)) => p.iter().map(ToString::to_string).collect(),
        Err(e) => vec![e.to_string()],
    }
}

#[test]
fn defaults_serve_metrics_on_the_main_listener_and_trace_nothing() {
    let config = load_str("").expect("empty config");
    assert_eq!(config.metrics, MetricsConfig { enabled: true, listen: None });
    assert!(!config.tracing.enabled());
    assert_eq!(config.tracing.traces_url(), None);
    assert_eq!(config.tracing.service_name, "toolgate");
}

#[test]
fn the_traces_path_is_appended_once() {
    let with = |e: &str| TracingConfig { otlp_endpoint: Some(e.into()), ..Default::default() }.traces_url();
    assert_eq!(with("http://127.0.0.1:4318").as_deref(), Some("http://127.0.0.1:4318/v1/traces"));
    assert_eq!(with("http://c:4318/").as_deref(), Some("http://c:4318/v1/traces"));
    assert_eq!(with("https://c/otlp/v1/traces").as_deref(), Some("https://c/otlp/v1/traces"));
}

#[test]
fn the_logs_path_is_appended_or_replaces_the_traces_path() {
    let with = |e: &str| TracingConfig { otlp_endpoint: Some(e.into()), ..Default::default() }.logs_url();
    assert_eq!(with("http://127.0.0.1:4318").as_deref(), Some("http://127.0.0.1:4318/v1/logs"));
    assert_eq!(with("http://c:4318/").as_deref(), Some("http://c:4318/v1/logs"));
    assert_eq!(with("https://c/otlp/v1/traces").as_deref(), Some("https://c/otlp/v1/logs"));
    assert_eq!(TracingConfig::default().logs_url(), None);
}

#[test]
fn every_problem_is_reported_with_its_path() {
    let found = problems(
        "[server]\nlisten = \"127.0.0.1:9000\"\n[metrics]\nlisten = \"127.0.0.1:9000\"\n\
         [tracing]\notlp_endpoint = \"ftp://x\"\nservice_name = \" \"\nsample_ratio = 1.5\n\
         headers = { \"bad name\" = \"v\" }\n",
    );
    let paths: Vec<&str> = found.iter().map(|p| p.split(':').next().unwrap_or("")).collect();
    for path in ["metrics.listen", "tracing.otlp_endpoint", "tracing.service_name", "tracing.sample_ratio"] {
        assert!(paths.contains(&path), "{path} missing from {found:?}");
    }
    assert!(found.iter().any(|p| p.starts_with("tracing.headers")), "{found:?}");
}

#[test]
fn unknown_keys_are_refused() {
    for text in ["[metrics]\nport = 9090\n", "[tracing]\nendpoint = \"http://x\"\n"] {
        let found = problems(text);
        assert!(!found.is_empty() && found[0].contains("unknown key"), "{text}: {found:?}");
    }
}

#[test]
fn a_port_zero_metrics_listener_may_share_the_address() {
    assert!(problems("[server]\nlisten = \"127.0.0.1:0\"\n[metrics]\nlisten = \"127.0.0.1:0\"\n").is_empty());
}
