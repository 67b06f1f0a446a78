//! OpenTelemetry traces from the real binary: an OTLP/HTTP collector
//! stand-in on loopback decodes what toolgate exports (the protobuf of
//! `opentelemetry-proto`), and an MCP upstream stand-in reports the trace
//! context it received. A tool call whose client sent a W3C `traceparent`
//! (in `_meta`, or as an HTTP header) is one server span in the client's
//! trace with a client span child for the upstream exchange, whose context
//! reaches the upstream in `_meta` and in the `traceparent` header. With
//! `[audit]`, each audit event also reaches the collector as a log record
//! whose body is the event's line in the audit file.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::SeverityNumber;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use parking_lot::Mutex;
use prost::Message as _;
use serde_json::{Value, json};

use crate::common::*;

/// A span as exported, flattened.
#[derive(Debug, Clone)]
struct Exported {
    service: String,
    name: String,
    kind: i32,
    trace_id: String,
    span_id: String,
    parent: String,
    attributes: Vec<(String, String)>,
}

impl Exported {
    fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// A log record as exported, flattened.
#[derive(Debug, Clone)]
struct Record {
    service: String,
    /// The request's `x-api-key` header.
    key: Option<String>,
    event_name: String,
    severity: i32,
    time_unix_nano: u64,
    body: String,
    attributes: Vec<(String, String)>,
}

impl Record {
    fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What the collector stand-in received.
#[derive(Clone, Default)]
struct Received {
    spans: Arc<Mutex<Vec<Exported>>>,
    logs: Arc<Mutex<Vec<Record>>>,
}

/// Starts an OTLP/HTTP collector stand-in (traces and logs); returns its
/// base URL and what it receives.
async fn collector() -> Result<(String, Received)> {
    let received = Received::default();
    let app = Router::new()
        .route("/v1/traces", post(export))
        .route("/v1/logs", post(export_logs))
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((url, received))
}

fn protobuf(headers: &HeaderMap) -> bool {
    headers.get("content-type").and_then(|v| v.to_str().ok()) == Some("application/x-protobuf")
}

/// An attribute's value as text.
fn text(v: &Option<AnyValue>) -> String {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        other => format!("{other:?}"),
    }
}

fn service_name(resource: &Option<opentelemetry_proto::tonic::resource::v1::Resource>) -> String {
    resource
        .iter()
        .flat_map(|r| &r.attributes)
        .find(|kv| kv.key == "service.name")
        .map(|kv| text(&kv.value))
        .unwrap_or_default()
}

fn flat(attributes: &[KeyValue]) -> Vec<(String, String)> {
    attributes.iter().map(|kv| (kv.key.clone(), text(&kv.value))).collect()
}

fn accepted() -> Response {
    (StatusCode::OK, [("content-type", "application/x-protobuf")], Vec::new()).into_response()
}

async fn export(State(received): State<Received>, headers: HeaderMap, body: Bytes) -> Response {
    if !protobuf(&headers) {
        return StatusCode::UNSUPPORTED_MEDIA_TYPE.into_response();
    }
    let Ok(request) = ExportTraceServiceRequest::decode(body) else { return StatusCode::BAD_REQUEST.into_response() };
    let spans = &received.spans;
    for resource in request.resource_spans {
        let service = service_name(&resource.resource);
        for scope in resource.scope_spans {
            for span in scope.spans {
                spans.lock().push(Exported {
                    service: service.clone(),
                    name: span.name,
                    kind: span.kind,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent: hex(&span.parent_span_id),
                    attributes: flat(&span.attributes),
                });
            }
        }
    }
    accepted()
}

async fn export_logs(State(received): State<Received>, headers: HeaderMap, body: Bytes) -> Response {
    if !protobuf(&headers) {
        return StatusCode::UNSUPPORTED_MEDIA_TYPE.into_response();
    }
    let Ok(request) = ExportLogsServiceRequest::decode(body) else { return StatusCode::BAD_REQUEST.into_response() };
    let key = headers.get("x-api-key").and_then(|v| v.to_str().ok()).map(str::to_owned);
    for resource in request.resource_logs {
        let service = service_name(&resource.resource);
        for scope in resource.scope_logs {
            for record in scope.log_records {
                received.logs.lock().push(Record {
                    service: service.clone(),
                    key: key.clone(),
                    event_name: record.event_name,
                    severity: record.severity_number,
                    time_unix_nano: record.time_unix_nano,
                    body: text(&record.body),
                    attributes: flat(&record.attributes),
                });
            }
        }
    }
    accepted()
}

/// Starts an MCP upstream stand-in over Streamable HTTP whose one tool,
/// `probe`, answers with the `traceparent` header and the `_meta` of the
/// call as it arrived.
async fn probe_upstream() -> Result<String> {
    let app = Router::new().route(
        "/mcp",
        post(probe).get(|| async { StatusCode::METHOD_NOT_ALLOWED }).delete(|| async { StatusCode::OK }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

async fn probe(headers: HeaderMap, body: Bytes) -> Response {
    let Ok(message) = serde_json::from_slice::<Value>(&body) else { return StatusCode::BAD_REQUEST.into_response() };
    let Some(id) = message.get("id").cloned() else { return StatusCode::ACCEPTED.into_response() };
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let result = match message["method"].as_str().unwrap_or("") {
        "initialize" => json!({
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "probe", "version": "1"},
        }),
        "tools/list" => json!({"tools": [{
            "name": "probe",
            "description": "Returns the trace context it received.",
            "inputSchema": {"type": "object"},
        }]}),
        "tools/call" => {
            let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
            let seen = json!({"traceparent": header("traceparent"), "tracestate": header("tracestate"), "meta": params["_meta"]});
            json!({"content": [{"type": "text", "text": seen.to_string()}]})
        }
        other => {
            let error = json!({"code": -32601, "message": format!("Method not found: {other}")});
            return json_response(json!({"jsonrpc": "2.0", "id": id, "error": error}));
        }
    };
    json_response(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn json_response(body: Value) -> Response {
    (StatusCode::OK, [("content-type", "application/json")], body.to_string()).into_response()
}

/// What the probe saw of one call.
fn seen(response: &Value) -> Result<Value> {
    let text =
        response["result"]["content"][0]["text"].as_str().with_context(|| format!("no probe answer: {response}"))?;
    Ok(serde_json::from_str(text)?)
}

/// The trace id and span id of a `traceparent` value.
fn ids(traceparent: &str) -> Result<(String, String)> {
    let parts: Vec<&str> = traceparent.split('-').collect();
    match parts.as_slice() {
        ["00", trace, span, _flags] if trace.len() == 32 && span.len() == 16 => {
            Ok((trace.to_string(), span.to_string()))
        }
        _ => bail!("not a traceparent: {traceparent}"),
    }
}

#[tokio::test]
async fn a_traced_tool_call_joins_the_clients_trace() -> Result<()> {
    let (collector_url, received) = collector().await?;
    let spans = received.spans;
    let upstream = probe_upstream().await?;
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[tracing]\notlp_endpoint = \"{collector_url}\"\nservice_name = \"gw-under-test\"\n\n{}",
        http_upstream("probe", &upstream, "mode = \"passthrough\"")
    );
    // Export every 100 ms rather than every 5 s.
    let gw = Toolgate::start_raw_env(&config, &[("OTEL_BSP_SCHEDULE_DELAY", "100")]).await?;
    let c = Client::connected(&gw.url, json!({})).await?;

    // The client's context in `_meta` (SEP-414).
    let (trace_a, parent_a) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let meta =
        json!({"traceparent": format!("00-{trace_a}-{parent_a}-01"), "tracestate": "vendor=a", "baggage": "user=1"});
    let answer = c.request("tools/call", json!({"name": "probe", "arguments": {}, "_meta": meta})).await?;
    let seen_a = seen(&answer)?;
    let header = seen_a["traceparent"].as_str().context("the upstream got no traceparent header")?;
    assert_eq!(seen_a["meta"]["traceparent"], header, "_meta and the header carry the same context: {seen_a}");
    let (trace, upstream_parent_a) = ids(header)?;
    assert_eq!(trace, trace_a, "the upstream is in the client's trace");
    assert_ne!(upstream_parent_a, parent_a, "its parent is toolgate's span, not the client's");
    assert_eq!(seen_a["meta"]["tracestate"], "vendor=a", "trace state carried: {seen_a}");
    assert_eq!(seen_a["tracestate"], "vendor=a");
    assert_eq!(seen_a["meta"]["baggage"], "user=1", "other _meta keys untouched");

    // The client's context as an HTTP header.
    let (trace_b, parent_b) = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let body =
        json!({"jsonrpc": "2.0", "id": 900, "method": "tools/call", "params": {"name": "probe", "arguments": {}}});
    let request = c
        .raw(reqwest::Method::POST)
        .header("traceparent", format!("00-{trace_b}-{parent_b}-01"))
        .body(body.to_string());
    let reply = c.send(request).await?;
    let seen_b = seen(reply.response(&json!(900)).context("no answer")?)?;
    let (trace, upstream_parent_b) = ids(seen_b["meta"]["traceparent"].as_str().context("no _meta.traceparent")?)?;
    assert_eq!(trace, trace_b);

    // No context: a trace of toolgate's own.
    c.result("tools/list", json!({})).await?;

    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let find = |spans: &[Exported], trace: &str, kind: SpanKind| {
        spans.iter().find(|s| s.trace_id == trace && s.kind == kind as i32).cloned()
    };
    let spans = loop {
        let got = spans.lock().clone();
        let complete = [trace_a, trace_b]
            .iter()
            .all(|t| find(&got, t, SpanKind::Server).is_some() && find(&got, t, SpanKind::Client).is_some())
            && got.iter().any(|s| s.name == "tools/list");
        if complete {
            break got;
        }
        if tokio::time::Instant::now() > deadline {
            bail!("spans missing; got {got:#?}\nlogs:\n{}", gw.logs());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    for (trace, client_parent, upstream_parent) in
        [(trace_a, parent_a, &upstream_parent_a), (trace_b, parent_b, &upstream_parent_b)]
    {
        let server = find(&spans, trace, SpanKind::Server).context("server span")?;
        let client = find(&spans, trace, SpanKind::Client).context("client span")?;
        assert_eq!(server.name, "tools/call");
        assert_eq!(server.parent, client_parent, "the request span's parent is the client's span");
        assert_eq!(server.service, "gw-under-test");
        assert_eq!(server.attribute("method"), Some("tools/call"));
        assert_eq!(server.attribute("tool"), Some("probe"));
        assert_eq!(server.attribute("upstream"), Some("probe"));
        assert!(server.attribute("session").is_some_and(|s| !s.is_empty()));
        assert_eq!(client.name, "tools/call");
        assert_eq!(client.parent, server.span_id, "the upstream exchange is a child of the request");
        assert_eq!(&client.span_id, upstream_parent, "the upstream got the exchange's own context");
        assert_eq!(client.attribute("upstream"), Some("probe"));
        let in_trace = spans.iter().filter(|s| s.trace_id == trace).count();
        assert_eq!(in_trace, 2, "one request span and one upstream span: {spans:#?}");
    }
    let list = spans.iter().find(|s| s.name == "tools/list").context("tools/list span")?;
    assert_eq!(list.parent, "", "a request without context starts a trace");
    assert_eq!(list.kind, SpanKind::Server as i32);
    Ok(())
}

#[tokio::test]
async fn without_tracing_configured_meta_passes_untouched() -> Result<()> {
    let upstream = probe_upstream().await?;
    let gw = Toolgate::start(&http_upstream("probe", &upstream, "mode = \"passthrough\"")).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let answer =
        c.request("tools/call", json!({"name": "probe", "arguments": {}, "_meta": {"traceparent": parent}})).await?;
    let got = seen(&answer)?;
    assert_eq!(got["meta"]["traceparent"], parent, "forwarded as the client sent it: {got}");
    assert_eq!(got["traceparent"], parent, "and mirrored in the header for HTTP instrumentation");
    let answer = c.request("tools/call", json!({"name": "probe", "arguments": {}})).await?;
    let got = seen(&answer)?;
    assert_eq!(got["meta"], Value::Null, "no _meta made up: {got}");
    assert_eq!(got["traceparent"], Value::Null);
    Ok(())
}

#[tokio::test]
async fn audit_events_are_log_records_with_the_lines_of_the_audit_file() -> Result<()> {
    let (collector_url, received) = collector().await?;
    let dir = tempfile::tempdir()?;
    let trail = dir.path().join("audit.log");
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[tracing]\notlp_endpoint = \"{collector_url}\"\n\
         service_name = \"gw-under-test\"\nheaders = {{ \"x-api-key\" = \"collector-key\" }}\n\
         [audit]\nenabled = true\npath = {:?}\n\n{}",
        trail.display().to_string(),
        fixture_upstream("fx", &[], "")
    );
    // Export log records every 100 ms rather than every second.
    let gw = Toolgate::start_raw_env(&config, &[("OTEL_BLRP_SCHEDULE_DELAY", "100")]).await?;
    let mut c = Client::new(&gw.url);
    c.initialize(json!({})).await?;
    c.call_tool("describe_tools", json!({"tools": ["echo"]})).await?;
    let answer = c.call_tool("echo", json!({"text": "hi", "api_token": "s3cret-value"})).await?;
    assert_ne!(answer["isError"], true, "{answer}");

    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    // The records of echo's description and call.
    let named = |records: &[Record], name: &str| {
        records.iter().find(|r| r.event_name == name && r.body.contains("\"echo\"")).cloned()
    };
    let (describe, call) = loop {
        let got = received.logs.lock().clone();
        if let (Some(describe), Some(call)) =
            (named(&got, "toolgate.audit.describe"), named(&got, "toolgate.audit.call"))
        {
            break (describe, call);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("log records missing; got {got:#?}\nlogs:\n{}", gw.logs());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    let text = std::fs::read_to_string(&trail)?;
    let lines: Vec<Value> = text.lines().map(serde_json::from_str).collect::<Result<_, _>>()?;
    let line = |kind: &str| {
        let echo = |l: &Value| l["tool"] == "echo" || l["tools"][0]["tool"] == "echo";
        lines.iter().find(|l| l["type"] == kind && echo(l)).cloned().with_context(|| format!("no {kind} in {text}"))
    };
    let call_body: Value =
        serde_json::from_str(&call.body).with_context(|| format!("the body is not JSON: {call:?}"))?;
    assert_eq!(call_body, line("call")?, "the call record's body is the call's line in the audit file");
    let describe_body: Value = serde_json::from_str(&describe.body)?;
    assert_eq!(describe_body, line("describe")?);
    assert!(!call.body.contains("s3cret-value"), "the redacted line, not the arguments: {call:?}");

    assert_eq!(call.attribute("audit.type"), Some("call"));
    assert_eq!(call.attribute("audit.tool"), Some("echo"));
    assert_eq!(call.attribute("audit.upstream"), Some("fx"));
    assert_eq!(call.attribute("audit.outcome"), Some("ok"));
    assert_eq!(call.attribute("audit.principal"), Some("anonymous"));
    assert_eq!(call.attribute("audit.schema"), Some("1"));
    assert_eq!(call.attribute("audit.digest"), call_body["digest"].as_str());
    assert_eq!(describe.attribute("audit.type"), Some("describe"));
    assert_eq!(call.severity, SeverityNumber::Info as i32);
    assert_eq!(call.service, "gw-under-test");
    assert_eq!(call.key.as_deref(), Some("collector-key"), "the [tracing] headers go with log exports too");
    let time = humantime::parse_rfc3339(call_body["time"].as_str().context("no time")?)?;
    let nanos = u64::try_from(time.duration_since(std::time::UNIX_EPOCH)?.as_nanos())?;
    assert_eq!(call.time_unix_nano / 1_000_000, nanos / 1_000_000, "timed at the event");
    let records = received.logs.lock().clone();
    assert!(
        records.iter().all(|r| r.event_name.starts_with("toolgate.audit.")),
        "only audit events are log records, no log lines: {records:#?}"
    );
    Ok(())
}
