use serde_json::json;

use super::*;

#[test]
fn modern_only_fields_are_removed_and_the_rest_kept() {
    let mut o = Outcome::Result(json!({"resultType": "complete", "ttlMs": 5, "cacheScope": "public", "tools": [],
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "up"}, "vendor/k": 1}}));
    strip_modern_fields(&mut o);
    assert_eq!(o, Outcome::Result(json!({"tools": [], "_meta": {"vendor/k": 1}})));
    let raw = serde_json::value::RawValue::from_string(
        r#"{"resultType":"complete","content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{}}}"#.into(),
    )
    .expect("raw");
    let mut o = Outcome::Prepared(raw.into());
    strip_modern_fields(&mut o);
    assert_eq!(o.result_value(), Some(json!({"content": []})));

    // Raw text keeps its members' order and text; `_meta` keeps what is not
    // the upstream's identity.
    let raw = serde_json::value::RawValue::from_string(
        r#"{"content":[{"type":"text","text":"a \"b\""}],"resultType":"complete","ttlMs":0,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"},"k":[1, 2]},"isError":false}"#.into(),
    )
    .expect("raw");
    let mut o = Outcome::Prepared(raw.into());
    strip_modern_fields(&mut o);
    let Outcome::Prepared(stripped) = &o else { panic!("stays raw: {o:?}") };
    assert_eq!(stripped.get(), r#"{"content":[{"type":"text","text":"a \"b\""}],"_meta":{"k":[1,2]},"isError":false}"#);

    // An escaped key: parsed the long way, with the same result.
    let raw = serde_json::value::RawValue::from_string(r#"{"resultType":"complete","a\u0062":1}"#.into()).expect("raw");
    let mut o = Outcome::Prepared(raw.into());
    strip_modern_fields(&mut o);
    assert_eq!(o.result_value(), Some(json!({"ab": 1})));
}

#[test]
fn input_required_results_are_recognized_and_the_retry_echoes_the_state() {
    let o = Outcome::Result(json!({"resultType": "input_required",
        "inputRequests": {"confirm": {"method": "elicitation/create", "params": {"message": "ok?"}}},
        "requestState": "{\"step\": 1}"}));
    let ir = input_required(&o).expect("input required");
    assert_eq!(ir.state, Some(json!("{\"step\": 1}")));
    let (method, params) = as_client_request(&ir.requests["confirm"]).expect("a client request");
    assert_eq!((method.as_str(), params), ("elicitation/create", Some(json!({"message": "ok?"}))));
    assert!(as_client_request(&json!({"method": "tools/call"})).is_none());
    assert!(input_required(&Outcome::Result(json!({"resultType": "complete"}))).is_none());
    assert!(input_required(&Outcome::Result(json!({"content": []}))).is_none());

    let original = json!({"name": "t", "arguments": {}, "inputResponses": {"old": 1}, "requestState": "old"});
    let mut answers = Map::new();
    answers.insert("confirm".into(), json!({"action": "accept"}));
    let p = retry_params(Some(&original), answers, ir.state.as_ref());
    assert_eq!(
        p,
        json!({"name": "t", "arguments": {}, "inputResponses": {"confirm": {"action": "accept"}}, "requestState": "{\"step\": 1}"})
    );
    // No state from the server: none is invented.
    let p = retry_params(Some(&original), Map::new(), None);
    assert_eq!(p, json!({"name": "t", "arguments": {}}));
}

#[test]
fn failures_are_tool_errors_for_calls_and_json_rpc_errors_otherwise() {
    assert!(matches!(failure("tools/call", "x".into()), Outcome::Result(r) if r["isError"] == true));
    assert!(matches!(failure("prompts/get", "x".into()), Outcome::Error(_)));
}

#[test]
fn an_answer_read_as_text_is_told_an_input_request_or_a_final_result_stripped() {
    // Each case as text held whole, and as an answer decoded (its members
    // found then): the same outcome either way.
    let whole = |t: &str| Outcome::Prepared(serde_json::value::RawValue::from_string(t.into()).expect("raw").into());
    let decoded = |t: &str| {
        let message = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{t}}}"#);
        let Ok(crate::jsonrpc::Message::Response(r)) = crate::jsonrpc::Message::decode(message.as_bytes()) else {
            panic!("an answer: {message}")
        };
        r.outcome
    };
    for (raw, indexed) in [(&whole as &dyn Fn(&str) -> Outcome, false), (&decoded, true)] {
        let mut o =
            raw(r#"{"resultType":"input_required","inputRequests":{"k":{"method":"roots/list"}},"requestState":"s"}"#);
        let asked = settle_answer(&mut o).expect("an input request");
        assert_eq!(asked.state, Some(json!("s")));
        assert!(asked.requests.contains_key("k"));
        // Written with an escape: still one.
        let mut o = raw(r#"{"resultType":"input\u005frequired","inputRequests":{}}"#);
        assert!(settle_answer(&mut o).is_some());
        // Two `resultType`s: the last one counts, as in a tree.
        let mut o = raw(r#"{"resultType":"complete","resultType":"input_required","inputRequests":{}}"#);
        assert!(settle_answer(&mut o).is_some());

        // A final result, stripped as text; `input_required` in its content
        // does not make it a request.
        let mut o = raw(
            r#"{"content":[{"type":"text","text":"input_required"}], "resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{}}}"#,
        );
        assert_eq!(matches!(&o, Outcome::Prepared(r) if r.object().is_some()), indexed);
        assert!(settle_answer(&mut o).is_none());
        let Outcome::Prepared(stripped) = &o else { panic!("stays raw: {o:?}") };
        assert_eq!(stripped.get(), r#"{"content":[{"type":"text","text":"input_required"}]}"#);
        let object = stripped.object().expect("a stripped result is indexed");
        assert_eq!(object.iter().map(|(k, _)| k).collect::<Vec<_>>(), ["content"]);
        // Without a `resultType`: untouched.
        let text = r#"{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{}}}"#;
        let mut o = raw(text);
        assert!(settle_answer(&mut o).is_none());
        assert!(matches!(&o, Outcome::Prepared(r) if r.get() == text));
        // Only a top-level `resultType` counts, not the word in the content.
        let text =
            r#"{"content":[{"type":"text","text":"resultType"}],"_meta":{"io.modelcontextprotocol/serverInfo":{}}}"#;
        let mut o = raw(text);
        assert!(settle_answer(&mut o).is_none());
        assert!(matches!(&o, Outcome::Prepared(r) if r.get() == text));
        // An escaped key: read as a tree, with the same result.
        let mut o = raw(r#"{"resultType":"complete","a\u0062":1}"#);
        assert!(settle_answer(&mut o).is_none());
        assert_eq!(o.result_value(), Some(json!({"ab": 1})));
    }
}
