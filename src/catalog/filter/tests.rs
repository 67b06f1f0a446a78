use std::collections::HashMap;

use serde_json::{Value, json};

use crate::catalog::{Catalog, UpstreamTools};
use crate::config::{DisclosureConfig, UpstreamConfig};

fn upstream(v: Value) -> UpstreamConfig {
    let mut v = v;
    v["command"] = json!("server");
    serde_json::from_value(v).expect("valid upstream config")
}

fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("Does {name}. In detail."),
           "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}})
}

/// A progressive upstream `a` (x, y, echo), and an unprefixed passthrough
/// `b` whose `echo` collides with nothing but whose `x` takes a suffix.
fn catalog() -> Catalog {
    let a = upstream(json!({"name": "a", "prefix": ""}));
    let b = upstream(json!({"name": "b", "prefix": "", "mode": "passthrough"}));
    let a_tools = vec![tool("x"), tool("y"), tool("echo")];
    let b_tools = vec![tool("x"), tool("z")];
    let none = HashMap::new();
    let views = [
        UpstreamTools { config: &a, tools: &a_tools, extras: &none },
        UpstreamTools { config: &b, tools: &b_tools, extras: &none },
    ];
    Catalog::build(&views, &DisclosureConfig::default())
}

fn listed(raw: &serde_json::value::RawValue) -> Vec<String> {
    let v: Value = serde_json::from_str(raw.get()).expect("a list result");
    v["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()
}

#[test]
fn a_narrowed_catalog_holds_exactly_the_kept_tools_under_their_names() {
    let full = catalog();
    assert_eq!(full.names(), ["x", "y", "echo", "x_2", "z"], "the collision takes a suffix");
    let visible = full.visible(|e| e.exposed != "y" && e.exposed != "x");
    // A hidden tool frees no name: b's x stays x_2.
    assert_eq!(visible.names(), ["echo", "x_2", "z"]);
    assert!(visible.get("x").is_none() && visible.get("y").is_none());
    assert_eq!(visible.get("x_2").map(|e| e.upstream), Some(1));
    // The minimal list agrees with it (the describe tool stays, last), and so
    // does the transparent forwarder's list (which never has it).
    assert_eq!(visible.describe_tool_name(), full.describe_tool_name());
    assert_eq!(listed(visible.list_result_raw()), ["echo", "x_2", "z", "describe_tools"]);
    assert_eq!(listed(visible.forwarded_list_raw()), ["echo", "x_2", "z"]);
    assert_eq!(visible.list_result()["tools"].as_array().map(Vec::len), Some(4));
    // Passthrough tools are listed in full, progressive ones minimal.
    let forwarded: Value = serde_json::from_str(visible.forwarded_list_raw().get()).expect("json");
    let z = &forwarded["tools"][2];
    assert_eq!(z["description"], "Does z. In detail.");
    assert!(visible.problems().is_empty());
}

#[test]
fn keeping_nothing_leaves_only_the_describe_tool() {
    let visible = catalog().visible(|_| false);
    assert!(visible.is_empty());
    assert_eq!(listed(visible.list_result_raw()), ["describe_tools"]);
}
