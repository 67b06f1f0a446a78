//! The modern (sessionless) path of the engine: the validation ladder in
//! its order, `server/discover`, and what a modern answer gets on the way out.

use super::*;
use crate::protocol::modern::{self, header, meta};
use crate::server::engine::{ModernAccepted, RoutingHeaders};
use http::HeaderValue;

fn envelope() -> Value {
    json!({meta::PROTOCOL_VERSION: "2026-07-28", meta::CLIENT_CAPABILITIES: {}})
}

fn request(method: &str, params: Value) -> Request {
    Request { id: Id::number(7), method: method.into(), params: Some(params) }
}

fn with_meta(mut params: Value) -> Value {
    params["_meta"] = envelope();
    params
}

fn headers(method: &str, name: Option<&str>) -> RoutingHeaders {
    RoutingHeaders {
        protocol_version: Some(HeaderValue::from_static("2026-07-28")),
        method: Some(HeaderValue::from_str(method).expect("a header value")),
        name: name.map(|n| HeaderValue::from_str(n).expect("a header value")),
        params: Vec::new(),
    }
}

/// The refusal's HTTP status, code and `data`, checking the id is echoed.
async fn refused(engine: &Engine<Echo>, r: Request, h: Option<&RoutingHeaders>) -> (u16, i64, Value) {
    match engine.accept_modern(r, h, &Caller::anonymous()).await {
        ModernAccepted::Answered { response, status } => {
            assert_eq!(response.id, Some(Id::number(7)), "every error echoes the request id");
            let Outcome::Error(e) = response.outcome else { panic!("not an error: {response:?}") };
            (status, e["code"].as_i64().unwrap(), e.get("data").cloned().unwrap_or(Value::Null))
        }
        ModernAccepted::Run { .. } => panic!("accepted"),
    }
}

async fn run(engine: &Arc<Engine<Echo>>, r: Request, h: &RoutingHeaders) -> (Response, Vec<Message>) {
    let ModernAccepted::Run { session, request } = engine.accept_modern(r, Some(h), &Caller::anonymous()).await else {
        panic!("refused")
    };
    assert!(session.is_sessionless());
    assert_eq!(engine.store().len(), 0, "a sessionless request stores no session");
    let (downlink, mut frames) = Downlink::channel();
    let response = engine.run(&session, request, downlink).await.expect("answered");
    let mut sent = Vec::new();
    while let Ok(frame) = frames.try_recv() {
        if let crate::server::Frame::Message(m) = frame {
            sent.push(m);
        }
    }
    (response, sent)
}

#[tokio::test]
async fn the_ladder_refuses_in_order_with_the_revision_codes() {
    let engine = engine();
    let list = headers("tools/list", None);
    // a. The envelope, whatever the headers say.
    let (status, code, data) = refused(&engine, request("tools/list", json!({})), Some(&list)).await;
    assert_eq!((status, code), (400, -32602));
    assert_eq!(data["envelope"]["missing"], json!(["_meta"]));
    let no_caps = json!({"_meta": {meta::PROTOCOL_VERSION: "2026-07-28"}});
    let (status, code, data) = refused(&engine, request("tools/list", no_caps), None).await;
    assert_eq!((status, code), (400, -32602));
    assert_eq!(data["envelope"]["missing"], json!([meta::CLIENT_CAPABILITIES]));
    // b. The version header: absent, or not the envelope's (before c).
    let no_header = RoutingHeaders { protocol_version: None, ..list.clone() };
    let (status, code, _) = refused(&engine, request("tools/list", with_meta(json!({}))), Some(&no_header)).await;
    assert_eq!((status, code), (400, -32020));
    let mut future = with_meta(json!({}));
    future["_meta"][meta::PROTOCOL_VERSION] = json!("v999.0.0");
    let (status, code, _) = refused(&engine, request("tools/list", future.clone()), Some(&list)).await;
    assert_eq!((status, code), (400, -32020), "a header/_meta mismatch is -32020, not -32022");
    // c. An unsupported revision names the supported ones.
    let v999 = RoutingHeaders { protocol_version: Some(HeaderValue::from_static("v999.0.0")), ..list.clone() };
    let (status, code, data) = refused(&engine, request("tools/list", future.clone()), Some(&v999)).await;
    assert_eq!((status, code), (400, -32022));
    assert_eq!(data, json!({"supported": modern::VERSIONS, "requested": "v999.0.0"}));
    // On stdio (no headers) c applies, b does not.
    let (_, code, _) = refused(&engine, request("tools/list", future), None).await;
    assert_eq!(code, -32022);
    // d. Mcp-Method.
    let wrong = headers("prompts/list", None);
    let (status, code, _) = refused(&engine, request("tools/list", with_meta(json!({}))), Some(&wrong)).await;
    assert_eq!((status, code), (400, -32020));
    let absent = RoutingHeaders { method: None, ..list.clone() };
    let (_, code, _) = refused(&engine, request("tools/list", with_meta(json!({}))), Some(&absent)).await;
    assert_eq!(code, -32020);
    // e. Mcp-Name: absent, different, malformed base64.
    let call = with_meta(json!({"name": "héllo", "arguments": {}}));
    for name in [None, Some("other"), Some("=?base64?***?=")] {
        let h = headers("tools/call", name);
        let (status, code, _) = refused(&engine, request("tools/call", call.clone()), Some(&h)).await;
        assert_eq!((status, code), (400, -32020), "Mcp-Name {name:?}");
    }
    // f. Removed methods are 404 -32601, even with every header right.
    for removed in modern::method::REMOVED {
        let h = headers(removed, None);
        let (status, code, _) = refused(&engine, request(removed, with_meta(json!({}))), Some(&h)).await;
        assert_eq!((status, code), (404, -32601), "{removed}");
    }
}

#[tokio::test]
async fn names_in_base64_or_with_white_space_are_accepted() {
    let engine = engine();
    let call = with_meta(json!({"name": "héllo", "arguments": {}}));
    // "héllo" in base64, and surrounded by optional white space.
    for name in ["=?base64?aMOpbGxv?=", " \t=?base64?aMOpbGxv?= "] {
        let h = headers("tools/call", Some(name));
        let (response, _) = run(&engine, request("tools/call", call.clone()), &h).await;
        assert_eq!(response.outcome.result_value().unwrap()["method"], "tools/call");
    }
}

#[tokio::test]
async fn discover_answers_without_a_session() {
    let engine = engine();
    let h = headers("server/discover", None);
    let r = request("server/discover", with_meta(json!({})));
    let ModernAccepted::Answered { response, status } = engine.accept_modern(r, Some(&h), &Caller::anonymous()).await
    else {
        panic!("discover is answered by the engine")
    };
    assert_eq!(status, 200);
    let result = response.outcome.result_value().unwrap();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!(modern::VERSIONS));
    assert_eq!(result["ttlMs"], 5);
    assert_eq!(result["cacheScope"], "public");
    assert_eq!(result["instructions"], "be kind");
    assert_eq!(result["_meta"][meta::SERVER_INFO]["name"], "echo");
    // Nothing that needs a listen stream is declared.
    assert_eq!(result["capabilities"], json!({"tools": {}, "resources": {}}));
    assert_eq!(engine.store().len(), 0);
}

#[tokio::test]
async fn an_application_without_listen_streams_refuses_listen() {
    let engine = engine();
    let h = headers("subscriptions/listen", None);
    let r = request("subscriptions/listen", with_meta(json!({"notifications": {"toolsListChanged": true}})));
    let (status, code, _) = refused(&engine, r, Some(&h)).await;
    assert_eq!((status, code), (404, codes::METHOD_NOT_FOUND));
}

#[tokio::test]
async fn modern_answers_get_result_type_cache_hints_and_the_modern_not_found() {
    let engine = engine();
    let (response, _) = run(&engine, request("tools/list", with_meta(json!({}))), &headers("tools/list", None)).await;
    let result = response.outcome.result_value().unwrap();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["ttlMs"], 0);
    assert_eq!(result["cacheScope"], "private", "the handler's hint");
    // A method whose result is not cacheable gets only resultType.
    let (response, _) = run(&engine, request("vendor/x", with_meta(json!({}))), &headers("vendor/x", None)).await;
    let result = response.outcome.result_value().unwrap();
    assert_eq!(result["resultType"], "complete");
    assert!(result.get("ttlMs").is_none());
    // -32002 from an older server becomes -32602 with the uri.
    let read = with_meta(json!({"uri": "test://gone"}));
    let (response, _) =
        run(&engine, request("resources/read", read), &headers("resources/read", Some("test://gone"))).await;
    let Outcome::Error(e) = response.outcome else { panic!("an error") };
    assert_eq!(e["code"], -32602);
    assert_eq!(e["data"]["uri"], "test://gone");
}

#[tokio::test]
async fn log_messages_follow_the_request_log_level() {
    let engine = engine();
    let levels = |sent: Vec<Message>| -> Vec<String> {
        sent.into_iter()
            .filter_map(|m| match m {
                Message::Notification(n) => Some(n.params.unwrap()["level"].as_str().unwrap().to_owned()),
                _ => None,
            })
            .collect()
    };
    let (_, sent) = run(&engine, request("log", with_meta(json!({}))), &headers("log", None)).await;
    assert!(levels(sent).is_empty(), "no logLevel: no notifications/message at all");
    let mut params = with_meta(json!({}));
    params["_meta"][meta::LOG_LEVEL] = json!("info");
    let (_, sent) = run(&engine, request("log", params), &headers("log", None)).await;
    assert_eq!(levels(sent), ["info", "error"]);
}

#[tokio::test]
async fn param_headers_reach_the_application_untouched_and_only_over_http() {
    let engine = engine();
    let mut http_headers = http::HeaderMap::new();
    http_headers.insert("mcp-protocol-version", http::HeaderValue::from_static("2026-07-28"));
    http_headers.insert("mcp-method", http::HeaderValue::from_static("tools/call"));
    http_headers.insert("mcp-name", http::HeaderValue::from_static("echo"));
    http_headers.insert("Mcp-Param-Region", http::HeaderValue::from_static("=?base64?w6k=?="));
    http_headers.insert("authorization", http::HeaderValue::from_static("Bearer x"));
    let routing = RoutingHeaders::from_headers(&http_headers);
    let names: Vec<&str> = routing.params.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["mcp-param-region"], "only Mcp-Param-*");
    // The one pass finds what a lookup by each header's own name finds.
    assert_eq!(routing.protocol_version.as_ref(), http_headers.get(crate::protocol::header::PROTOCOL_VERSION));
    assert_eq!(routing.method.as_ref(), http_headers.get(header::METHOD));
    assert_eq!(routing.name.as_ref(), http_headers.get(header::NAME));
    http_headers.append("mcp-name", http::HeaderValue::from_static("second"));
    assert_eq!(RoutingHeaders::from_headers(&http_headers).name.unwrap(), "echo", "the first of two");
    let call = || request("tools/call", with_meta(json!({"name": "echo", "arguments": {"region": "é"}})));
    let accepted = engine.accept_modern(call(), Some(&routing), &Caller::anonymous()).await;
    let ModernAccepted::Run { session, .. } = accepted else { panic!("refused") };
    let sent = session.modern().and_then(|m| m.param_headers.clone()).expect("over HTTP: a list");
    assert_eq!(sent, routing.params, "as sent: the engine does not know the schema");
    // None sent: an empty list; no transport headers at all (stdio): none.
    let bare = headers("tools/call", Some("echo"));
    let ModernAccepted::Run { session, .. } = engine.accept_modern(call(), Some(&bare), &Caller::anonymous()).await
    else {
        panic!("refused")
    };
    assert_eq!(session.modern().and_then(|m| m.param_headers.as_ref().map(Vec::len)), Some(0));
    let ModernAccepted::Run { session, .. } = engine.accept_modern(call(), None, &Caller::anonymous()).await else {
        panic!("refused")
    };
    assert!(session.modern().is_some_and(|m| m.param_headers.is_none()));
}

#[tokio::test]
async fn modern_results_carry_the_servers_identity() {
    let engine = engine();
    let h = headers("tools/list", None);
    let (response, _) = run(&engine, request("tools/list", with_meta(json!({}))), &h).await;
    let result = response.outcome.result_value().unwrap();
    assert_eq!(result["_meta"][meta::SERVER_INFO], json!({"name": "echo", "version": "1"}), "{result}");
}
