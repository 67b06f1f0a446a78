use serde_json::json;

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
        capabilities: Some(json!({"elicitation": {}})),
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
        capabilities: Some(json!({"roots": {}})),
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
