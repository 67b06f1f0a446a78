//! Unit tests of `labels.rs`.

use super::*;
use serde_json::json;

#[test]
fn methods_round_trip_and_unknown_ones_collapse() {
    let known = [
        "initialize",
        "ping",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
    ];
    assert_eq!(known.len() + 1, Method::COUNT);
    for (i, name) in known.iter().enumerate() {
        let m = Method::of(name);
        assert_eq!(m.as_str(), *name);
        assert_eq!(m as usize, i, "table order");
    }
    for other in ["x-vendor/thing", "tools/call2", "", "Tools/List"] {
        assert_eq!(Method::of(other), Method::Other, "{other}");
    }
    assert_eq!(Method::Other as usize, Method::COUNT - 1);
}

#[test]
fn outcomes_of_results() {
    let ok = jsonrpc::Outcome::Result(json!({"content": []}));
    let failed = jsonrpc::Outcome::Result(json!({"content": [], "isError": true}));
    let raw = |s: &str| jsonrpc::Outcome::Prepared(serde_json::value::RawValue::from_string(s.into()).unwrap().into());
    let error = jsonrpc::Outcome::Error(json!({"code": -32602, "message": "bad"}));
    let call = Method::ToolsCall;
    assert_eq!(Outcome::of(call, &ok, false, false), Outcome::Ok);
    assert_eq!(Outcome::of(call, &failed, false, false), Outcome::ToolError);
    assert_eq!(Outcome::of(Method::ResourcesRead, &failed, false, false), Outcome::Ok, "tools/call only");
    assert_eq!(Outcome::of(call, &raw(r#"{"content":[],"isError":true}"#), false, false), Outcome::ToolError);
    assert_eq!(Outcome::of(call, &raw(r#"{"content": [], "isError": true}"#), false, false), Outcome::ToolError);
    assert_eq!(
        Outcome::of(call, &raw(r#"{"content":[{"type":"text","text":"\"isError\":true"}]}"#), false, false),
        Outcome::Ok,
        "inside a string"
    );
    assert_eq!(Outcome::of(call, &raw(r#"{"isError":false}"#), false, false), Outcome::Ok);
    // Any whitespace around the colon; the first mention need not be the member.
    assert_eq!(Outcome::of(call, &raw("{\"isError\" :\n\ttrue}"), false, false), Outcome::ToolError);
    assert_eq!(
        Outcome::of(call, &raw(r#"{"content":[{"type":"text","text":"isError"}],"isError":true}"#), false, false),
        Outcome::ToolError
    );
    assert_eq!(Outcome::of(call, &raw(r#"{"isError" : "true"}"#), false, false), Outcome::Ok);
    // A result decoded from an upstream's answer: its members are read,
    // and only its own `isError` counts (the last, as a parser keeps).
    let answered = |result: &str| {
        let text = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
        let Ok(jsonrpc::Message::Response(r)) = jsonrpc::Message::decode(text.as_bytes()) else { panic!("{text}") };
        assert!(matches!(&r.outcome, jsonrpc::Outcome::Prepared(raw) if raw.object().is_some()));
        r.outcome
    };
    assert_eq!(Outcome::of(call, &answered(r#"{"content":[], "isError" : true }"#), false, false), Outcome::ToolError);
    assert_eq!(Outcome::of(call, &answered(r#"{"content":[],"isError":false}"#), false, false), Outcome::Ok);
    assert_eq!(
        Outcome::of(call, &answered(r#"{"content":[{"type":"text","isError":true}]}"#), false, false),
        Outcome::Ok,
        "a nested member is not the result's"
    );
    assert_eq!(Outcome::of(call, &answered(r#"{"isError":true,"isError":false}"#), false, false), Outcome::Ok);
    assert_eq!(Outcome::of(call, &error, false, false), Outcome::Error);
    assert_eq!(Outcome::of(call, &failed, true, false), Outcome::Refused);
    assert_eq!(Outcome::of(call, &error, true, true), Outcome::Cancelled);
}

#[test]
fn outcomes_of_upstream_calls() {
    let up: Arc<str> = Arc::from("u");
    let cause = crate::upstream::Cause::msg("x");
    let cases = [
        (UpstreamError::Timeout { upstream: up.clone(), after: std::time::Duration::from_secs(1) }, "timeout"),
        (UpstreamError::Unavailable { upstream: up.clone(), source: cause.clone() }, "unavailable"),
        (UpstreamError::Start { upstream: up.clone(), source: cause.clone() }, "unavailable"),
        (UpstreamError::Closed { upstream: up.clone(), source: cause.clone() }, "closed"),
        (UpstreamError::SessionExpired { upstream: up.clone() }, "closed"),
        (UpstreamError::Http { upstream: up.clone(), source: cause.clone() }, "failed"),
        (UpstreamError::Protocol { upstream: up.clone(), source: cause }, "failed"),
        (UpstreamError::Cancelled, "cancelled"),
        (UpstreamError::Busy { upstream: up.clone(), max: 1, waited: std::time::Duration::ZERO }, "busy"),
    ];
    for (error, word) in cases {
        assert_eq!(UpstreamOutcome::of(Method::ToolsCall, &Err(error)).as_str(), word);
    }
    let error = jsonrpc::Outcome::Error(json!({"code": 1, "message": "m"}));
    assert_eq!(UpstreamOutcome::of(Method::PromptsGet, &Ok(error)), UpstreamOutcome::Error);
}
