//! The W3C trace context (`traceparent`, `tracestate`) in a request's
//! `_meta` (SEP-414) and in HTTP headers: read from clients, written for
//! upstreams.

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator as _};
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::{Map, Value};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::protocol::header::{TRACEPARENT_KEY, TRACESTATE_KEY};
use crate::server::TraceHeaders;

/// A request's `_meta`, read as a carrier of trace context.
struct MetaExtractor<'a>(&'a Map<String, Value>);

impl Extractor for MetaExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key)?.as_str()
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// The trace headers of an HTTP request, as a carrier.
struct HeaderExtractor<'a>(&'a TraceHeaders);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            TRACEPARENT_KEY => self.0.traceparent.to_str().ok(),
            TRACESTATE_KEY => self.0.tracestate.as_ref()?.to_str().ok(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec![TRACEPARENT_KEY, TRACESTATE_KEY]
    }
}

/// A request's `_meta`, written as a carrier.
struct MetaInjector<'a>(&'a mut Map<String, Value>);

impl Injector for MetaInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        // An empty `tracestate` says nothing; leave the key out.
        if value.is_empty() {
            self.0.remove(key);
        } else {
            self.0.insert(key.to_owned(), Value::String(value));
        }
    }
}

/// See [`super::link_to_client`].
pub fn link_to_client(span: &tracing::Span, params: Option<&Value>, remote: Option<&TraceHeaders>) {
    let propagator = TraceContextPropagator::new();
    let meta = params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
        .filter(|m| m.get(TRACEPARENT_KEY).is_some_and(Value::is_string));
    let cx = match (meta, remote) {
        (Some(meta), _) => propagator.extract(&MetaExtractor(meta)),
        (None, Some(headers)) => propagator.extract(&HeaderExtractor(headers)),
        (None, None) => return,
    };
    // A malformed `traceparent` starts a trace of toolgate's own.
    if cx.span().span_context().is_valid() {
        // Fails only for a span without an OpenTelemetry layer: nothing to link.
        let _ = span.set_parent(cx);
    }
}

/// See [`super::inject`].
pub fn inject(span: &tracing::Span, params: Option<Value>) -> Option<Value> {
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        // Not exported (debug logging without an exporter).
        return params;
    }
    let mut params = match params {
        Some(Value::Object(map)) => map,
        None => Map::new(),
        // Not an object: the upstream will refuse it; nothing to add to.
        other => return other,
    };
    let meta = params.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        TraceContextPropagator::new().inject_context(&cx, &mut MetaInjector(meta));
    }
    Some(Value::Object(params))
}
