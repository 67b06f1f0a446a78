use std::collections::HashMap;

use serde_json::{Value, json};

use super::*;
use crate::catalog::{Catalog, Extras, UpstreamTools};
use crate::config::{DisclosureConfig, UpstreamConfig};

/// Two progressive upstreams: `fs` (with an example) and `gh`.
fn catalog() -> Catalog {
    let fs: UpstreamConfig = serde_json::from_value(json!({"name": "fs", "command": "fs-server"})).unwrap();
    let gh: UpstreamConfig = serde_json::from_value(json!({"name": "gh", "command": "gh-server"})).unwrap();
    let fs_tools = vec![json!({
        "name": "read_file",
        "description": "Read a file. Only inside allowed folders.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        "annotations": {"readOnlyHint": true}
    })];
    let gh_tools =
        vec![json!({"name": "create_issue", "description": "Create an issue", "inputSchema": {"type": "object"}})];
    let fs_extras = HashMap::from([(
        "read_file".to_owned(),
        Extras { examples: Some(json!([{"path": "a.txt"}])), ..Extras::default() },
    )]);
    let none = HashMap::new();
    Catalog::build(
        &[
            UpstreamTools { config: &fs, tools: &fs_tools, extras: &fs_extras },
            UpstreamTools { config: &gh, tools: &gh_tools, extras: &none },
        ],
        &DisclosureConfig::default(),
    )
}

/// The JSON inside a tool result's single text block.
fn text_json(result: &Value) -> Value {
    serde_json::from_str(result["content"][0]["text"].as_str().expect("a text block")).expect("JSON text")
}

#[test]
fn resource_entry_snapshot() {
    let entry = resource_entry(Some("describe_tools"));
    insta::assert_json_snapshot!("resource_entry", entry);
    assert_eq!(entry["uri"], RESOURCE_URI);
    assert_eq!(entry["mimeType"], "application/json");
    let d = entry["description"].as_str().unwrap();
    for needed in [
        "tools/list",
        "SHORT",
        "resource:///tool_descriptions?tools=TOOL_NAME",
        "CANNOT",
        "TOOL1,TOOL2",
        "error",
        "`describe_tools`",
    ] {
        assert!(d.contains(needed), "missing {needed:?} in {d}");
    }
    let without = resource_entry(None);
    assert!(!without["description"].as_str().unwrap().contains("describe"), "no describe tool, no mention");
}

#[test]
fn template_entry_snapshot() {
    let entry = template_entry(Some("describe_tools"));
    insta::assert_json_snapshot!("template_entry", entry);
    assert_eq!(entry["uriTemplate"], "resource:///tool_descriptions?tools={tools}");
    assert!(!template_entry(None)["description"].as_str().unwrap().contains("describe_tools"));
}

#[test]
fn describe_body_snapshot() {
    let catalog = catalog();
    let described = describe(&catalog, &["fs__read_file".to_owned(), "nope".to_owned()]);
    insta::assert_json_snapshot!("describe_known_and_unknown", described.body);
    assert_eq!(described.authorized, ["fs__read_file"]);
    assert_eq!(described.body["fs__read_file"], catalog.get("fs__read_file").unwrap().full);
    assert_eq!(
        described.body["nope"],
        json!({"error": "Tool 'nope' not found", "available_tools": ["fs__read_file", "gh__create_issue"]})
    );
    let keys: Vec<&String> = described.body.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["fs__read_file", "nope"], "request order");
}

#[test]
fn describing_the_describe_tool_gives_its_definition() {
    let catalog = catalog();
    let described = describe(&catalog, &["describe_tools".to_owned()]);
    assert_eq!(described.body["describe_tools"], describe_tool_definition("describe_tools"));
    assert_eq!(described.authorized, ["describe_tools"]);
}

#[test]
fn missing_selection_snapshot() {
    let object = missing_selection(&catalog());
    insta::assert_json_snapshot!("missing_selection", object);
    assert_eq!(
        object["error"]["examples"],
        json!([
            "resource:///tool_descriptions?tools=fs__read_file",
            "resource:///tool_descriptions?tools=fs__read_file,gh__create_issue"
        ])
    );
}

#[test]
fn missing_selection_without_tools_is_the_spec_object() {
    assert_eq!(
        missing_selection(&Catalog::empty()),
        json!({
            "error": {
                "code": "MISSING_TOOL_SELECTION",
                "message": "You must specify one or more tool names in the 'tools' parameter.",
                "examples": [
                    "resource:///tool_descriptions?tools=tool_name",
                    "resource:///tool_descriptions?tools=tool1,tool2"
                ]
            }
        })
    );
}

#[test]
fn refusal_snapshot() {
    let refusal = description_required("fs__read_file", Some("describe_tools"));
    insta::assert_json_snapshot!("description_required", refusal);
    assert_eq!(refusal["isError"], true);
    let error = &text_json(&refusal)["error"];
    assert_eq!(error["code"], "TOOL_DESCRIPTION_REQUIRED");
    assert_eq!(error["message"], "Tool 'fs__read_file' requires fetching its description before use.");
    assert_eq!(error["resource_uri"], "resource:///tool_descriptions?tools=fs__read_file");
    assert!(error["hint"].as_str().unwrap().contains("describe_tools"));
}

#[test]
fn refusal_without_describe_tool_is_the_spec_object() {
    let refusal = description_required("tool_name", None);
    assert_eq!(
        text_json(&refusal),
        json!({
            "error": {
                "code": "TOOL_DESCRIPTION_REQUIRED",
                "message": "Tool 'tool_name' requires fetching its description before use.",
                "resource_uri": "resource:///tool_descriptions?tools=tool_name"
            }
        })
    );
    assert_eq!(refusal["content"][0]["type"], "text");
    assert_eq!(refusal["isError"], true);
}

#[test]
fn read_result_wraps_compact_json() {
    let body = json!({"a": {"name": "a", "x": [1, 2]}});
    let uri = "resource:///tool_descriptions?tools=a";
    assert_eq!(
        read_result(uri, &body),
        json!({"contents": [{"uri": uri, "mimeType": "application/json", "text": r#"{"a":{"name":"a","x":[1,2]}}"#}]})
    );
}

#[test]
fn describe_tool_results() {
    let body = json!({"a": {"name": "a"}});
    assert_eq!(describe_tool_result(&body), json!({"content": [{"type": "text", "text": r#"{"a":{"name":"a"}}"#}]}));
    let error = describe_args_error(&catalog());
    assert_eq!(error["isError"], true);
    assert_eq!(text_json(&error), missing_selection(&catalog()));
}

#[test]
fn describe_tool_definition_shape() {
    let def = describe_tool_definition("describe_tools");
    assert_eq!(def["name"], "describe_tools");
    assert_eq!(def["inputSchema"]["required"], json!(["tools"]));
    assert_eq!(def["inputSchema"]["properties"]["tools"]["type"], "array");
    assert_eq!(def["inputSchema"]["properties"]["tools"]["items"], json!({"type": "string"}));
    assert_eq!(def["annotations"], json!({"readOnlyHint": true}));
    let d = def["description"].as_str().unwrap();
    assert!(d.contains("parameters") && d.contains("required before calling"), "{d}");
    // It is listed in every tools/list, so it must cost about as little as a
    // minimal form with a real schema (87 tokens before it was cut to this).
    let tokens = crate::tokens::projection_tokens(&def);
    assert!(tokens <= 60, "describe tool costs {tokens} tokens");
    assert!(d.chars().count() <= 160, "as short as a minimal description: {d}");
}

#[test]
fn instructions_explain_the_workflow() {
    let text = instructions(Some("describe_tools"));
    for needed in [
        "tools/list",
        "sufficient",
        "resource:///tool_descriptions?tools=TOOL_NAME",
        "`describe_tools`",
        "CANNOT",
        "Never fetch",
    ] {
        assert!(text.contains(needed), "missing {needed:?} in {text}");
    }
    assert!(!instructions(None).contains("describe_tools"));
    assert!(text.len() < 800, "keep it compact: {} bytes", text.len());
}

#[test]
fn completes_tool_names() {
    let catalog = catalog();
    let values = |v: &str| complete_tool_names(&catalog, v)["completion"]["values"].clone();
    assert_eq!(
        complete_tool_names(&catalog, "fs"),
        json!({"completion": {"values": ["fs__read_file"], "total": 1, "hasMore": false}})
    );
    assert_eq!(values(""), json!(["fs__read_file", "gh__create_issue"]));
    assert_eq!(values("GH"), json!(["gh__create_issue"]), "case-insensitive");
    assert_eq!(values("fs__read_file,"), json!(["fs__read_file,gh__create_issue"]), "listed names are not offered");
    assert_eq!(values("fs__read_file, g"), json!(["fs__read_file,gh__create_issue"]), "the typed part is replaced");
    assert_eq!(values("x"), json!([]));
}

#[test]
fn completions_stop_at_a_hundred() {
    let config: UpstreamConfig = serde_json::from_value(json!({"name": "big", "command": "x"})).unwrap();
    let tools: Vec<Value> =
        (0..150).map(|i| json!({"name": format!("t{i:03}"), "inputSchema": {"type": "object"}})).collect();
    let none = HashMap::new();
    let catalog = Catalog::build(
        &[UpstreamTools { config: &config, tools: &tools, extras: &none }],
        &DisclosureConfig::default(),
    );
    let result = complete_tool_names(&catalog, "t");
    assert_eq!(result["completion"]["values"].as_array().unwrap().len(), 100);
    assert_eq!(result["completion"]["values"][0], "t000");
    assert_eq!(result["completion"]["total"], 150);
    assert_eq!(result["completion"]["hasMore"], true);
}
