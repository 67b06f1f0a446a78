use http::HeaderValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt as _;

use super::*;

const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// Runs `f` under a subscriber that gives spans OpenTelemetry contexts.
fn traced<T>(f: impl FnOnce() -> T) -> T {
    let provider = SdkTracerProvider::builder().build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
    let subscriber = tracing_subscriber::registry().with(layer);
    tracing::subscriber::with_default(subscriber, f)
}

/// What an upstream call under a request linked to the client gets in `_meta`.
fn forwarded(params: Option<Value>, remote: Option<&TraceHeaders>) -> Value {
    traced(|| {
        let request = tracing::debug_span!("request");
        link_to_client(&request, params.as_ref(), remote);
        let _entered = request.enter();
        let call = tracing::debug_span!("upstream call");
        inject(&call, Some(json!({"name": "t", "_meta": {"progressToken": 7}}))).unwrap_or(Value::Null)
    })
}

fn parts(traceparent: &Value) -> Vec<String> {
    traceparent.as_str().unwrap_or("").split('-').map(str::to_owned).collect()
}

#[test]
fn a_client_context_in_meta_is_the_parent() {
    let params = json!({"_meta": {"traceparent": format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"), "tracestate": "a=1"}});
    let out = forwarded(Some(params), None);
    let p = parts(&out["_meta"]["traceparent"]);
    assert_eq!(p.len(), 4, "{out}");
    assert_eq!(p[1], CLIENT_TRACE, "same trace");
    assert_ne!(p[2], CLIENT_SPAN, "toolgate's own span");
    assert_eq!(p[3], "01", "sampled, as the client decided");
    assert_eq!(out["_meta"]["tracestate"], "a=1");
    assert_eq!(out["_meta"]["progressToken"], 7, "the rest of _meta is kept");
    assert_eq!(out["name"], "t");
}

#[test]
fn the_http_header_is_the_fallback() {
    let headers = TraceHeaders {
        traceparent: HeaderValue::from_str(&format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01")).unwrap(),
        tracestate: None,
    };
    let out = forwarded(Some(json!({"name": "x"})), Some(&headers));
    assert_eq!(parts(&out["_meta"]["traceparent"])[1], CLIENT_TRACE);
    assert!(out["_meta"].get("tracestate").is_none(), "no empty tracestate: {out}");

    // `_meta` wins over the header.
    let other = "0af7651916cd43dd8448eb211c80319c";
    let params = json!({"_meta": {"traceparent": format!("00-{other}-b7ad6b7169203331-01")}});
    let out = forwarded(Some(params), Some(&headers));
    assert_eq!(parts(&out["_meta"]["traceparent"])[1], other);
}

#[test]
fn a_malformed_or_missing_context_starts_a_trace() {
    for params in [None, Some(json!({"_meta": {"traceparent": "garbage"}})), Some(json!({"_meta": {"traceparent": 5}}))]
    {
        let out = forwarded(params.clone(), None);
        let p = parts(&out["_meta"]["traceparent"]);
        assert_eq!(p.len(), 4, "{params:?}: {out}");
        assert_ne!(p[1], CLIENT_TRACE);
        assert_ne!(p[1], "0".repeat(32));
    }
}

#[test]
fn nothing_is_added_without_an_exporter() {
    // No OpenTelemetry layer: spans have no context to pass on.
    let params = Some(json!({"name": "t"}));
    let subscriber = tracing_subscriber::registry().with(tracing_subscriber::fmt::layer().with_writer(std::io::sink));
    let out =
        tracing::subscriber::with_default(subscriber, || inject(&tracing::info_span!("upstream call"), params.clone()));
    assert_eq!(out, params);
    assert_eq!(inject(&tracing::Span::none(), params.clone()), params);
}
