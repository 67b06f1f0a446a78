use serde_json::{Value, json};

use super::*;
use crate::catalog::test_entries as entries;

/// The entry of one tool of a progressive upstream, with `schema`.
fn entry(schema: Value) -> Arc<ToolEntry> {
    let tool = json!({"name": "t", "description": "A tool.", "inputSchema": schema});
    entries(json!({"name": "up"}), vec![tool]).remove(0)
}

/// The refusal's JSON body.
fn body(invalid: &InvalidArguments) -> Value {
    serde_json::from_str(invalid.text()).expect("the refusal is JSON")
}

/// The `(path, keyword)` of every listed error.
fn failures(invalid: &InvalidArguments) -> Vec<(String, String)> {
    let body = body(invalid);
    let errors = body["error"]["errors"].as_array().cloned().unwrap_or_default();
    let mut found: Vec<_> = errors
        .iter()
        .map(|e| (e["path"].as_str().unwrap_or("?").to_owned(), e["keyword"].as_str().unwrap_or("?").to_owned()))
        .collect();
    found.sort();
    found
}

fn rich_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "title": {"type": "string", "minLength": 1},
            "priority": {"type": "string", "enum": ["low", "normal", "high"]},
            "owner": {
                "type": "object",
                "properties": {"email": {"type": "string", "format": "email"}, "team": {"type": "string"}},
                "required": ["team"],
                "additionalProperties": false
            },
            "labels": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
            "estimate": {"$ref": "#/$defs/hours"}
        },
        "required": ["title", "priority"],
        "additionalProperties": false,
        "$defs": {"hours": {"type": "integer", "minimum": 1}}
    })
}

#[test]
fn a_valid_call_passes_and_an_invalid_one_names_every_failing_path() {
    let checker = Arguments::default();
    let entry = entry(rich_schema());
    let valid = json!({"title": "Fix", "priority": "high", "owner": {"team": "core"}, "labels": ["a"], "estimate": 2});
    assert_eq!(checker.check(&entry, Some(&valid)), Ok(()));

    let invalid = json!({
        "priority": "urgent",
        "owner": {"email": 7, "extra": true},
        "labels": ["a", 2],
        "estimate": 0,
        "typo": 1
    });
    let refused = checker.check(&entry, Some(&invalid)).expect_err("invalid");
    assert_eq!(
        failures(&refused),
        [
            ("", "additionalProperties"),
            ("", "required"),
            ("/estimate", "minimum"),
            ("/labels/1", "type"),
            ("/owner", "additionalProperties"),
            ("/owner", "required"),
            ("/owner/email", "type"),
            ("/priority", "enum"),
        ]
        .map(|(p, k)| (p.to_owned(), k.to_owned()))
    );
    assert_eq!(refused.errors, 8);
    let body = body(&refused);
    assert_eq!(body["error"]["code"], "INVALID_ARGUMENTS");
    assert_eq!(body["error"]["tool"], "t");
    assert!(body["error"]["message"].as_str().unwrap().contains("(8 errors)"), "{body}");
    assert!(body["error"].get("more_errors").is_none(), "all listed: {body}");
    let errors = body["error"]["errors"].as_array().unwrap();
    let of = |path: &str, keyword: &str| {
        errors.iter().find(|e| e["path"] == path && e["keyword"] == keyword).cloned().expect("listed")
    };
    // The part of the schema each failed, for the model to correct the call.
    let priority = of("/priority", "enum");
    assert_eq!(priority["expected"], json!(["low", "normal", "high"]));
    assert_eq!(priority["schema_path"], "/properties/priority/enum");
    assert!(priority["message"].as_str().unwrap().contains("urgent"), "{priority}");
    assert_eq!(of("", "required")["expected"], json!(["title", "priority"]));
    assert_eq!(of("/owner/email", "type")["expected"], "string");
    // Through a `$ref`, the excerpt is where the keyword is.
    assert_eq!(of("/estimate", "minimum")["expected"], 1, "{errors:?}");

    let result = refused.tool_result();
    assert_eq!(result["isError"], true);
    assert_eq!(result["content"][0]["type"], "text");
    assert_eq!(result["content"][0]["text"], refused.text());
}

#[test]
fn missing_or_null_arguments_are_an_empty_object() {
    let checker = Arguments::default();
    let rich = entry(rich_schema());
    for arguments in [None, Some(&Value::Null)] {
        let refused = checker.check(&rich, arguments).expect_err("title and priority are required");
        assert_eq!(failures(&refused), [("", "required"), ("", "required")].map(|(p, k)| (p.to_owned(), k.to_owned())));
        let body = body(&refused);
        let messages: Vec<&str> =
            body["error"]["errors"].as_array().unwrap().iter().filter_map(|e| e["message"].as_str()).collect();
        assert_eq!(messages, ["\"title\" is a required property", "\"priority\" is a required property"]);
    }
    let open = entry(json!({"type": "object"}));
    assert_eq!(checker.check(&open, None), Ok(()));
    // Arguments that are not an object are checked as sent.
    let refused = checker.check(&open, Some(&json!("text"))).expect_err("not an object");
    assert_eq!(failures(&refused), [("".to_owned(), "type".to_owned())]);
}

#[test]
fn format_is_an_annotation_in_every_draft() {
    let checker = Arguments::default();
    for draft in
        [None, Some("http://json-schema.org/draft-07/schema#"), Some("https://json-schema.org/draft/2019-09/schema")]
    {
        let mut schema = json!({"type": "object", "properties": {
            "email": {"type": "string", "format": "email"},
            "when": {"type": "string", "format": "date-time"},
            "site": {"type": "string", "format": "uri"}
        }});
        if let Some(draft) = draft {
            schema["$schema"] = json!(draft);
        }
        let arguments = json!({"email": "not an address", "when": "yesterday", "site": "::"});
        assert_eq!(checker.check(&entry(schema), Some(&arguments)), Ok(()), "{draft:?}");
    }
}

#[test]
fn the_draft_is_the_one_schema_names() {
    let checker = Arguments::default();
    // draft-07: `dependencies`, and `items` as an array (a tuple).
    let draft7 = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "card": {"type": "string"},
            "billing_address": {"type": "string"},
            "point": {"type": "array", "items": [{"type": "number"}, {"type": "number"}], "additionalItems": false}
        },
        "dependencies": {"card": ["billing_address"]}
    });
    let draft7 = entry(draft7);
    assert_eq!(checker.check(&draft7, Some(&json!({"card": "4111", "billing_address": "x", "point": [1, 2]}))), Ok(()));
    let refused = checker.check(&draft7, Some(&json!({"card": "4111", "point": [1, "2", 3]}))).expect_err("invalid");
    assert_eq!(
        failures(&refused),
        [("", "dependencies"), ("/point", "additionalItems"), ("/point/1", "type")]
            .map(|(p, k)| (p.to_owned(), k.to_owned()))
    );

    // 2019-09: `dependentRequired`.
    let draft2019 = entry(json!({
        "$schema": "https://json-schema.org/draft/2019-09/schema",
        "type": "object",
        "dependentRequired": {"card": ["billing_address"]}
    }));
    let refused = checker.check(&draft2019, Some(&json!({"card": "4111"}))).expect_err("invalid");
    assert_eq!(failures(&refused), [("".to_owned(), "dependentRequired".to_owned())]);

    // No `$schema`: 2020-12, where `prefixItems` is the tuple; draft-07
    // does not know it.
    let tuple = json!({
        "type": "object",
        "properties": {"point": {"type": "array", "prefixItems": [{"type": "number"}]}}
    });
    let default = entry(tuple.clone());
    assert_eq!(checker.check(&default, Some(&json!({"point": [1, "y"]}))), Ok(()));
    let refused = checker.check(&default, Some(&json!({"point": ["x"]}))).expect_err("invalid");
    assert_eq!(failures(&refused), [("/point/0".to_owned(), "type".to_owned())]);
    let mut older = tuple;
    older["$schema"] = json!("http://json-schema.org/draft-07/schema#");
    assert_eq!(checker.check(&entry(older), Some(&json!({"point": ["x"]}))), Ok(()), "no prefixItems in draft-07");
}

#[test]
fn a_schema_that_does_not_compile_is_not_checked() {
    let checker = Arguments::default();
    let broken = [
        json!({"type": "objekt"}),
        json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "(unclosed"}}}),
        json!({"type": "object", "required": "a"}),
        json!({"$schema": "https://example.com/my-meta-schema", "type": "object"}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}),
        // `items` as an array is draft-07; under 2020-12 it is not a schema.
        json!({"type": "object", "properties": {"p": {"type": "array", "items": [{"type": "number"}]}}}),
        json!("not a schema"),
    ];
    for schema in broken {
        assert!(validator_for(&schema).is_err(), "{schema} does not compile");
        let entry = entry(schema.clone());
        assert_eq!(checker.check(&entry, Some(&json!({"a": 1, "p": ["x"]}))), Ok(()), "{schema}");
    }
}

#[test]
fn a_remote_ref_is_never_fetched() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    listener.set_nonblocking(true).expect("non-blocking");
    let port = listener.local_addr().expect("its address").port();
    let schema = json!({
        "type": "object",
        "properties": {"a": {"$ref": format!("http://127.0.0.1:{port}/schema.json")}}
    });
    let error = validator_for(&schema).expect_err("not resolvable offline");
    assert!(error.to_string().contains("127.0.0.1"), "{error}");
    assert_eq!(Arguments::default().check(&entry(schema), Some(&json!({"a": 1}))), Ok(()));
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("toolgate connected to the schema's host: {other:?}"),
    }
}

#[test]
fn the_switches_decide_which_tools_are_checked() {
    let tools = || {
        vec![
            json!({"name": "a", "inputSchema": {"type": "object", "required": ["x"]}}),
            json!({"name": "b", "inputSchema": {"type": "object", "required": ["x"]}}),
        ]
    };
    let checked = |config: Value| -> Vec<bool> {
        let checker = Arguments::default();
        entries(config, tools()).iter().map(|e| checker.check(e, None).is_err()).collect()
    };
    assert_eq!(checked(json!({"name": "up"})), [true, true], "progressive: on");
    assert_eq!(checked(json!({"name": "up", "mode": "passthrough"})), [false, false], "passthrough: off");
    assert_eq!(checked(json!({"name": "up", "validate_arguments": false})), [false, false]);
    assert_eq!(checked(json!({"name": "up", "mode": "passthrough", "validate_arguments": true})), [true, true]);
    assert_eq!(checked(json!({"name": "up", "tools": {"b": {"validate_arguments": false}}})), [true, false]);
    assert_eq!(
        checked(json!({"name": "up", "mode": "passthrough", "tools": {"a": {"validate_arguments": true}}})),
        [true, false]
    );
    assert_eq!(
        checked(json!({"name": "up", "validate_arguments": false, "tools": {"a": {"validate_arguments": true}}})),
        [true, false]
    );
}

#[test]
fn a_schema_is_compiled_once_per_definition() {
    let checker = Arguments::default();
    let first = entry(rich_schema());
    let again = entry(rich_schema());
    assert!(!Arc::ptr_eq(&first, &again) && first.fingerprint == again.fingerprint);
    for entry in [&first, &again, &first] {
        let _ = checker.check(entry, Some(&json!({})));
    }
    let changed = entry(json!({"type": "object"}));
    let _ = checker.check(&changed, None);
    checker.compiled.run_pending_tasks();
    assert_eq!(checker.compiled.entry_count(), 2);
}

#[test]
fn the_refusal_is_bounded_and_says_how_many_more_errors_there_were() {
    let checker = Arguments::default();
    let long = "k".repeat(5000);
    let entry = entry(json!({
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "integer", "description": long}}}
    }));
    let items: Vec<Value> = (0..2000).map(|i| json!(format!("{i}-{long}"))).collect();
    let refused = checker.check(&entry, Some(&json!({"items": items}))).expect_err("invalid");
    assert!(refused.text().len() <= MAX_TEXT, "{} bytes", refused.text().len());
    let body = body(&refused);
    let listed = body["error"]["errors"].as_array().unwrap().len();
    assert!(listed >= 1, "{body}");
    assert_eq!(refused.errors, MAX_COUNTED, "counted up to the bound");
    assert_eq!(body["error"]["more_errors"], MAX_COUNTED - listed);
    let first = &body["error"]["errors"][0];
    assert_eq!(first["path"], "/items/0");
    assert!(first["message"].as_str().unwrap().ends_with('…'), "{first}");
}

#[test]
fn truncation_keeps_whole_characters() {
    assert_eq!(truncated("short", 10), "short");
    let cut = truncated("ééééé", 6);
    assert!(cut.len() <= 6 && cut.ends_with('…'), "{cut}");
    assert_eq!(cut, "é…");
}

#[test]
fn an_entry_remembers_its_compiled_schema_but_the_cache_alone_keeps_it() {
    let checker = Arguments::default();
    let tool = entry(json!({"type": "object", "required": ["x"]}));
    assert!(tool.compiled.get().is_none(), "nothing compiled before the first check");
    assert!(checker.check(&tool, Some(&json!({}))).is_err());
    let kept = tool.compiled.get().expect("the entry remembers what it was checked with");
    let cached = checker.compiled.get(&tool.fingerprint).expect("and the cache holds it");
    assert!(Arc::ptr_eq(&kept, &cached), "the same compiled schema, not a second compile");
    assert!(checker.check(&tool, Some(&json!({"x": 1}))).is_ok(), "checked through the shortcut");
    assert_eq!((*tool).clone().compiled.get().map(|_| ()), None, "a copy of an entry starts without it");
    // The slot holds weakly: once nothing else holds a schema (the cache let
    // it go), the slot is empty and the next check looks it up again.
    let slot = CompiledSlot::default();
    slot.set(&kept);
    drop((kept, cached, checker));
    assert!(tool.compiled.get().is_none() && slot.get().is_none(), "a slot keeps nothing alive");
    let fresh = Arguments::default();
    assert!(fresh.check(&tool, Some(&json!({}))).is_err());
    assert!(tool.compiled.get().is_some(), "looked up and remembered again");
}
