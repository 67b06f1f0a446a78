//! Payloads the gateway answers with: the resource body, its `resources/read`
//! wrapping, the spec's error objects, describe-tool results and completions.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::selection::selection_uri;
use super::{MIME_TYPE, texts};
use crate::catalog::Catalog;

/// Most completion values one answer may carry (MCP limit).
const MAX_COMPLETIONS: usize = 100;

/// The answer to a request for full descriptions.
#[derive(Debug, Clone, PartialEq)]
pub struct Described {
    /// One object mapping each requested name to its full definition, or to a
    /// not-found entry (spec 6.3), in request order.
    pub body: Value,
    /// The requested names that resolved; the gateway authorizes these for the
    /// session.
    pub authorized: Vec<String>,
}

/// The full definitions of `names` (exposed names). Unknown names map to
/// `{"error": "Tool 'x' not found", "available_tools": [...]}`. The describe
/// tool's own name resolves to its definition.
pub fn describe(catalog: &Catalog, names: &[String]) -> Described {
    let mut body = serde_json::Map::with_capacity(names.len());
    let mut authorized = Vec::with_capacity(names.len());
    let mut available: Option<Value> = None;
    for name in names {
        let definition = match catalog.get(name) {
            Some(entry) => Some(entry.full.clone()),
            None if catalog.describe_tool_name() == Some(name.as_str()) => Some(texts::describe_tool_definition(name)),
            None => None,
        };
        match definition {
            Some(definition) => {
                authorized.push(name.clone());
                body.insert(name.clone(), definition);
            }
            None => {
                let available = available.get_or_insert_with(|| json!(catalog.names())).clone();
                body.insert(
                    name.clone(),
                    json!({"error": format!("Tool '{name}' not found"), "available_tools": available}),
                );
            }
        }
    }
    Described { body: Value::Object(body), authorized }
}

/// The spec 6.1 `MISSING_TOOL_SELECTION` object. Its examples use the
/// catalog's first tool names, or the spec's placeholders when it has none.
pub fn missing_selection(catalog: &Catalog) -> Value {
    let names = catalog.names();
    let examples: Vec<String> = match names.as_slice() {
        [] => vec![selection_uri(&["tool_name"]), selection_uri(&["tool1", "tool2"])],
        [only] => vec![selection_uri(&[only])],
        [first, second, ..] => vec![selection_uri(&[first]), selection_uri(&[first, second])],
    };
    json!({
        "error": {
            "code": "MISSING_TOOL_SELECTION",
            "message": "You must specify one or more tool names in the 'tools' parameter.",
            "examples": examples,
        }
    })
}

/// The `resources/read` result carrying `body` for `uri`.
pub fn read_result(uri: &str, body: &Value) -> Value {
    json!({
        "contents": [{
            "uri": uri,
            "mimeType": MIME_TYPE,
            "text": body.to_string(),
        }]
    })
}

/// The `tools/call` result refusing a tool whose description the session has
/// not fetched: the spec 6.2 object as text, `isError: true`, plus a `hint`
/// naming the describe tool when it is offered.
pub fn description_required(tool: &str, describe_tool: Option<&str>) -> Value {
    let mut error = json!({
        "code": "TOOL_DESCRIPTION_REQUIRED",
        "message": format!("Tool '{tool}' requires fetching its description before use."),
        "resource_uri": selection_uri(&[tool]),
    });
    if let Some(describe) = describe_tool {
        let args = json!({"tools": [tool]});
        error["hint"] = Value::String(format!("Or call the `{describe}` tool with {args}."));
    }
    tool_error(&json!({ "error": error }))
}

/// The describe tool's successful result.
pub fn describe_tool_result(body: &Value) -> Value {
    json!({"content": [{"type": "text", "text": body.to_string()}]})
}

/// The describe tool's error result when no tool was named: the
/// `MISSING_TOOL_SELECTION` object, `isError: true`.
pub fn describe_args_error(catalog: &Catalog) -> Value {
    tool_error(&missing_selection(catalog))
}

fn tool_error(body: &Value) -> Value {
    json!({"content": [{"type": "text", "text": body.to_string()}], "isError": true})
}

/// The `completion/complete` result for the template's `tools` argument.
/// `value` is what the user typed so far (`a,b,pa`); names starting with the
/// part after the last comma (ASCII case-insensitive) and not already listed
/// are offered, each as the whole new value (`a,b,path_tool`), since clients
/// replace the argument with the chosen value.
pub fn complete_tool_names(catalog: &Catalog, value: &str) -> Value {
    let (head, partial) = match value.rfind(',') {
        Some(i) => value.split_at(i + 1),
        None => ("", value),
    };
    let partial = partial.trim_start();
    let chosen: HashSet<&str> = head.split(',').map(str::trim).collect();
    let matches: Vec<&str> =
        catalog.names().into_iter().filter(|n| starts_with_ci(n, partial) && !chosen.contains(n)).collect();
    let values: Vec<String> = matches.iter().take(MAX_COMPLETIONS).map(|n| format!("{head}{n}")).collect();
    json!({
        "completion": {
            "values": values,
            "total": matches.len(),
            "hasMore": matches.len() > MAX_COMPLETIONS,
        }
    })
}

fn starts_with_ci(name: &str, prefix: &str) -> bool {
    name.as_bytes().get(..prefix.len()).is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
}
