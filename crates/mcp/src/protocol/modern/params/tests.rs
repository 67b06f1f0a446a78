//! The annotation rules, the value encoding and the server-side check of
//! `Mcp-Param-*` headers.

use serde_json::json;

use super::*;

fn tool(schema: Value) -> Map<String, Value> {
    json!({"name": "t", "inputSchema": schema}).as_object().cloned().unwrap_or_default()
}

fn names(specs: &[ParamHeader]) -> Vec<&str> {
    specs.iter().map(|s| s.header.as_str()).collect()
}

#[test]
fn valid_annotations_are_found_with_their_paths_and_types() {
    let specs = annotations(&tool(json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "nested": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
            "query": {"type": "string"}
        }
    })))
    .expect("valid");
    assert_eq!(names(&specs), ["mcp-param-region", "mcp-param-priority", "mcp-param-verbose", "mcp-param-zone"]);
    assert_eq!(specs[3].path, ["nested", "zone"]);
    assert_eq!(specs[1].kind, ParamKind::Integer);
    assert!(annotations(&tool(json!({"type": "object"}))).expect("no annotations").is_empty());
}
#[test]
fn invalid_annotations_are_refused_with_the_reason() {
    let prop = |p: Value| json!({"type": "object", "properties": {"a": p}});
    let cases = [
        (prop(json!({"type": "string", "x-mcp-header": ""})), "empty"),
        (prop(json!({"type": "string", "x-mcp-header": "Has Space"})), "valid header name"),
        (prop(json!({"type": "string", "x-mcp-header": "Has:Colon"})), "valid header name"),
        (prop(json!({"type": "string", "x-mcp-header": "Région"})), "valid header name"),
        (prop(json!({"type": "string", "x-mcp-header": "Tab\t"})), "valid header name"),
        (prop(json!({"type": "number", "x-mcp-header": "Num"})), "type `number`"),
        (prop(json!({"type": "object", "x-mcp-header": "Obj"})), "type `object`"),
        (prop(json!({"type": "array", "items": {"type": "string"}, "x-mcp-header": "Arr"})), "type `array`"),
        (prop(json!({"type": "null", "x-mcp-header": "Nul"})), "type `null`"),
        (
            json!({"type": "object", "properties": {
                "a": {"type": "string", "x-mcp-header": "Dup"},
                "b": {"type": "string", "x-mcp-header": "dup"}}}),
            "declared twice",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}}}),
            "reachable",
        ),
        (
            json!({"type": "object", "anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "Any"}}}]}),
            "reachable",
        ),
        (
            json!({"type": "object", "$defs": {"x": {"type": "string", "x-mcp-header": "Def"}},
                   "properties": {"a": {"$ref": "#/$defs/x"}}}),
            "reachable",
        ),
    ];
    for (schema, reason) in cases {
        let err = annotations(&tool(schema.clone())).expect_err(&schema.to_string()).to_string();
        assert!(err.contains(reason), "{schema}: {err}");
    }
}
#[test]
fn values_are_plain_when_safe_and_base64_otherwise() {
    let plain = |s: &str| encode_value(s).to_str().map(str::to_owned).unwrap_or_default();
    assert_eq!(plain("us-west1"), "us-west1");
    assert_eq!(plain("us west 1"), "us west 1");
    assert_eq!(plain(""), "");
    // base64 of the UTF-8 bytes, in lowercase markers.
    assert_eq!(plain("日本語"), "=?base64?5pel5pys6Kqe?=");
    assert_eq!(plain(" lead"), "=?base64?IGxlYWQ=?=");
    assert_eq!(plain("trail "), "=?base64?dHJhaWwg?=");
    assert_eq!(plain("a\tb"), "=?base64?YQli?=");
    assert_eq!(plain("a\r\nb"), "=?base64?YQ0KYg==?=");
    assert_eq!(plain("x\u{1}"), "=?base64?eAE=?=");
    // A plain value that looks like the sentinel is encoded too.
    assert_eq!(plain("=?base64?abc?="), "=?base64?PT9iYXNlNjQ/YWJjPz0=?=");
    assert_eq!(plain("=?base64?abc"), "=?base64?abc");
}
fn sent(pairs: &[(&'static str, &'static str)]) -> Vec<(HeaderName, HeaderValue)> {
    pairs.iter().map(|(n, v)| (HeaderName::from_static(n), HeaderValue::from_static(v))).collect()
}

fn check_code(r: Result<(), ErrorObject>) -> Option<i64> {
    r.err().map(|e| e.code)
}

#[test]
fn client_param_headers_are_checked_against_the_arguments() {
    let specs = annotations(&tool(json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
        "query": {"type": "string"}
    }})))
    .expect("valid");
    let args = json!({"region": "Hello", "priority": 42, "verbose": true, "query": "q"});
    let full = [("mcp-param-region", "Hello"), ("mcp-param-priority", "42"), ("mcp-param-verbose", "true")];
    let check = |sent_pairs: &[(&'static str, &'static str)], args: &Value, mode| {
        check_code(check_client_params(&specs, args.as_object(), &sent(sent_pairs), mode))
    };
    use ParamCheck::{PresentOnly, Required};
    assert_eq!(check(&full, &args, Required), None);
    // Decoded and trimmed; integers compare as numbers; unknown headers are not checked.
    let ok = [
        ("mcp-param-region", "=?base64?SGVsbG8=?="),
        ("mcp-param-priority", " 42.0 "),
        ("mcp-param-verbose", "true"),
        ("mcp-param-other", "anything"),
    ];
    assert_eq!(check(&ok, &args, Required), None);
    // A missing prefix or suffix is literal text.
    let literal = json!({"region": "=?base64?SGVsbG8="});
    assert_eq!(check(&[("mcp-param-region", "=?base64?SGVsbG8=")], &literal, Required), None);
    // Mismatches, bad base64, raw non-ASCII, a header for an absent argument.
    for bad in [
        [("mcp-param-region", "hello"), full[1], full[2]],
        [("mcp-param-region", "=?base64?SGVsbG8?="), full[1], full[2]],
        [("mcp-param-region", "=?base64?SGVs!!!bG8=?="), full[1], full[2]],
        [full[0], ("mcp-param-priority", "43"), full[2]],
        [full[0], full[1], ("mcp-param-verbose", "TRUE")],
    ] {
        assert_eq!(check(&bad, &args, Required), Some(-32020), "{bad:?}");
        assert_eq!(check(&bad, &args, PresentOnly), Some(-32020), "{bad:?}");
    }
    let raw_utf8 = vec![(
        HeaderName::from_static("mcp-param-region"),
        HeaderValue::from_bytes("Héllo".as_bytes()).expect("obs-text is a valid header value"),
    )];
    let accented = json!({"region": "Héllo"});
    assert_eq!(check_code(check_client_params(&specs, accented.as_object(), &raw_utf8, PresentOnly)), Some(-32020));
    let twice = [full[0], ("mcp-param-region", "evil"), full[1], full[2]];
    assert_eq!(check(&twice, &args, PresentOnly), Some(-32020), "every copy must match");
    let absent = json!({"priority": 42, "verbose": true});
    assert_eq!(check(&full, &absent, PresentOnly), Some(-32020), "a header for an absent argument");
    // Missing headers: refused when the client saw the annotations, tolerated when it did not.
    assert_eq!(check(&full[1..], &args, Required), Some(-32020));
    assert_eq!(check(&full[1..], &args, PresentOnly), None);
    assert_eq!(check(&[], &args, PresentOnly), None);
    // No header is due for an absent or null argument.
    assert_eq!(check(&[], &json!({"region": null}), Required), None);
    let e = check_client_params(&specs, args.as_object(), &sent(&full[1..]), Required).expect_err("missing");
    assert!(e.message.contains("mcp-param-region"), "{}", e.message);
}
