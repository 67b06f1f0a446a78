use std::sync::Arc;

use serde_json::{Value, json};

use super::*;

#[test]
fn toolgate_s_own_requests_get_a_whole_envelope() {
    let mut params = None;
    stamp(&mut params, "2026-07-28", &json!({}), None);
    let m = &params.expect("params")["_meta"];
    assert_eq!(m[meta::PROTOCOL_VERSION], "2026-07-28");
    assert_eq!(m[meta::CLIENT_CAPABILITIES], json!({}));
    assert_eq!(m[meta::CLIENT_INFO]["name"], "toolgate");
    assert!(m.get(meta::LOG_LEVEL).is_none());
}

#[test]
fn a_legacy_session_s_capabilities_and_level_are_used_and_other_meta_survives() {
    let mut params = Some(json!({"name": "t", "_meta": {"progressToken": 7, "traceparent": "00-x", "vendor/k": 1}}));
    let client = ClientContext {
        capabilities: Some(json!({"elicitation": {}}).into()),
        log_level: Some(json!("debug")),
        ..Default::default()
    };
    stamp(&mut params, "2026-07-28", &json!({}), Some(&client));
    let p = params.expect("params");
    assert_eq!(p["name"], "t");
    let m = &p["_meta"];
    assert_eq!(m[meta::CLIENT_CAPABILITIES], json!({"elicitation": {}}));
    assert_eq!(m[meta::LOG_LEVEL], "debug");
    assert_eq!(
        (m["progressToken"].clone(), m["traceparent"].clone(), m["vendor/k"].clone()),
        (json!(7), json!("00-x"), json!(1))
    );
}

#[test]
fn a_modern_request_keeps_its_own_capabilities_and_level_but_gets_the_leg_s_version() {
    let mut params = Some(json!({"_meta": {
        meta::PROTOCOL_VERSION: "2026-07-28",
        meta::CLIENT_CAPABILITIES: {"sampling": {}},
        meta::LOG_LEVEL: "error",
        meta::CLIENT_INFO: {"name": "client"}
    }}));
    assert!(is_modern(params.as_ref()));
    let client = ClientContext {
        capabilities: Some(json!({"roots": {}}).into()),
        log_level: Some(json!("debug")),
        ..Default::default()
    };
    stamp(&mut params, "2026-07-28", &json!({}), Some(&client));
    let m = &params.expect("params")["_meta"];
    assert_eq!(m[meta::CLIENT_CAPABILITIES], json!({"sampling": {}}));
    assert_eq!(m[meta::LOG_LEVEL], "error");
    assert_eq!(m[meta::CLIENT_INFO]["name"], "toolgate");
    assert!(!is_modern(Some(&json!({"_meta": {}}))));
}

#[test]
fn only_param_headers_are_kept_from_the_client() {
    let mut headers = http::HeaderMap::new();
    headers.insert("mcp-param-x", HeaderValue::from_static("1"));
    headers.insert("authorization", HeaderValue::from_static("secret"));
    headers.insert("mcp-method", HeaderValue::from_static("tools/call"));
    let c = ClientContext::default().with_param_headers(&headers);
    assert_eq!(c.param_headers.len(), 1);
    assert_eq!(c.param_headers[0].0, "mcp-param-x");
}

/// The request `stamp` makes, as a tree, to compare with `encode`'s text.
fn stamped(request: &Request, version: &str, fallback: &Value, client: Option<&ClientContext>) -> Value {
    let mut params = request.params.clone();
    stamp(&mut params, version, fallback, client);
    let r = Request { id: request.id.clone(), method: request.method.clone(), params };
    crate::jsonrpc::Message::Request(r).to_value()
}

fn encoded(request: &Request, version: &str, fallback: &Value, client: Option<&ClientContext>) -> Value {
    let text = encode(request, version, fallback, client);
    serde_json::from_str(std::str::from_utf8(&text).expect("encode writes UTF-8")).expect("encode writes JSON")
}

#[test]
fn encode_writes_what_stamp_puts_in_and_leaves_the_request_alone() {
    let client = ClientContext {
        capabilities: Some(json!({"elicitation": {}}).into()),
        log_level: Some(json!("debug")),
        ..Default::default()
    };
    let request = Request {
        id: crate::jsonrpc::Id::number(7),
        method: "tools/call".into(),
        params: Some(json!({"name": "t", "arguments": {"a": [1, "x"]}, "_meta": {"progressToken": 3}})),
    };
    let before = request.clone();
    let text = encode(&request, "2026-07-28", &json!({"roots": {}}), Some(&client));
    assert_eq!(request, before, "the request is not changed");
    let v: Value = serde_json::from_str(std::str::from_utf8(&text).expect("UTF-8")).expect("JSON");
    assert_eq!(v["id"], 7);
    assert_eq!(v["params"]["arguments"], json!({"a": [1, "x"]}));
    let m = &v["params"]["_meta"];
    assert_eq!(m["progressToken"], 3);
    assert_eq!(m[meta::PROTOCOL_VERSION], "2026-07-28");
    assert_eq!(m[meta::CLIENT_CAPABILITIES], json!({"elicitation": {}}));
    assert_eq!(m[meta::CLIENT_INFO], client_info());
    assert_eq!(m[meta::LOG_LEVEL], "debug");
    assert_eq!(v, stamped(&request, "2026-07-28", &json!({"roots": {}}), Some(&client)));
    // No params, and params that are not an object, get an envelope alone.
    for params in [None, Some(json!([1, 2])), Some(json!({"_meta": 5}))] {
        let r = Request { params, ..request.clone() };
        assert_eq!(encoded(&r, "2026-07-28", &json!({}), None), stamped(&r, "2026-07-28", &json!({}), None));
    }
}

/// A JSON value of a few levels, with keys that collide with the envelope's.
fn value() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let key = prop_oneof![
        Just(meta::PROTOCOL_VERSION.to_owned()),
        Just(meta::CLIENT_CAPABILITIES.to_owned()),
        Just(meta::CLIENT_INFO.to_owned()),
        Just(meta::LOG_LEVEL.to_owned()),
        Just("_meta".to_owned()),
        "[a-z\"\\\\é]{0,6}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[ -~é]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 5, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((key.clone(), inner), 0..5)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

proptest::proptest! {
    /// Whatever the params, their `_meta` and the client's context, the text
    /// `encode` writes is the request `stamp` makes.
    #[test]
    fn encode_agrees_with_stamp(
        params in proptest::option::of(value()),
        meta_value in proptest::option::of(value()),
        capabilities in proptest::option::of(value()),
        log_level in proptest::option::of(value()),
        fallback in value(),
    ) {
        let mut params = params;
        if let (Some(Value::Object(p)), Some(m)) = (params.as_mut(), meta_value) {
            p.insert("_meta".into(), m);
        }
        let request = Request { id: crate::jsonrpc::Id::string("r"), method: "tools/call".into(), params };
        let client = ClientContext { capabilities: capabilities.map(Arc::new), log_level, ..Default::default() };
        for client in [None, Some(&client)] {
            proptest::prop_assert_eq!(
                encoded(&request, "2026-07-28", &fallback, client),
                stamped(&request, "2026-07-28", &fallback, client)
            );
        }
    }
}

#[test]
fn the_constant_text_needs_no_escapes() {
    for key in [meta::PROTOCOL_VERSION, meta::CLIENT_CAPABILITIES, meta::CLIENT_INFO, meta::LOG_LEVEL] {
        assert_eq!(serde_json::to_string(key).expect("a string"), format!("\"{key}\""));
    }
    assert_eq!(serde_json::from_str::<Value>(CLIENT_INFO_JSON).expect("JSON"), client_info());
}
