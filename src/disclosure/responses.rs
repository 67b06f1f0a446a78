//! Payloads the gateway answers with: the resource body, its `resources/read`
//! wrapping, the spec's error objects, describe-tool results and completions.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::MIME_TYPE;
use super::selection::selection_uri;
use crate::catalog::Catalog;
use crate::catalog::{MAX_REQUESTED_NAME, describe_tool_definition, escaped_len};

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

/// Room an entry that is not a definition may take in an answer, escaped
/// (a "not found" or "not included" entry naming a tool of at most
/// [`MAX_REQUESTED_NAME`](MAX_REQUESTED_NAME) bytes).
const SMALL_ENTRY: usize = 4 * MAX_REQUESTED_NAME + 400;

/// The full definitions of `names` (exposed names), within the catalog's
/// [`FetchLimits`](super::FetchLimits). See [`describe_within`].
pub fn describe(catalog: &Catalog, names: &[String]) -> Described {
    describe_within(catalog, names, catalog.fetch_limits().body_budget(0))
}

/// The full definitions of `names`, in a body of at most `budget` bytes
/// (counted as sent: escaped inside a JSON string).
///
/// A selection over the limits (too many names, a name too long) gets one
/// error object and authorizes nothing. The first unknown name maps to
/// `{"error": "Tool 'x' not found", "available_tools": [...]}` (spec 6.3);
/// later ones point to it instead of repeating the list. A definition that
/// would not fit in the budget is left out, and not authorized, with an
/// entry saying to fetch it separately. The describe tool's own name
/// resolves to its definition.
pub fn describe_within(catalog: &Catalog, names: &[String], budget: usize) -> Described {
    let limits = catalog.fetch_limits();
    if let Some(refused) = limits.refusal(names) {
        return Described { body: refused, authorized: Vec::new() };
    }
    let mut body = serde_json::Map::with_capacity(names.len());
    let mut authorized = Vec::with_capacity(names.len());
    // The braces of the body.
    let mut used = 2;
    let mut listed_under: Option<&str> = None;
    for (i, name) in names.iter().enumerate() {
        // Room kept for the entries still to come, should none of them fit.
        let left = budget.saturating_sub(used + (names.len() - i - 1) * SMALL_ENTRY);
        let key = escaped_len(&Value::String(name.clone()).to_string()) + 2;
        let definition = match catalog.get(name) {
            Some(entry) => Some(entry.full.clone()),
            None if catalog.describe_tool_name() == Some(name.as_str()) => Some(describe_tool_definition(name)),
            None => None,
        };
        let entry = match definition {
            Some(definition) => {
                let size = escaped_len(&definition.to_string());
                if key + size <= left {
                    authorized.push(name.clone());
                    definition
                } else {
                    not_included(name, size, limits.max_answer_bytes)
                }
            }
            None => match listed_under {
                Some(first) => json!({
                    "error": format!("Tool '{name}' not found; the available tools are listed under '{first}'")
                }),
                None => {
                    listed_under = Some(name);
                    not_found(catalog, name, left.saturating_sub(key))
                }
            },
        };
        used += key + escaped_len(&entry.to_string());
        body.insert(name.clone(), entry);
    }
    Described { body: Value::Object(body), authorized }
}

/// The entry of a tool whose definition did not fit in the answer.
fn not_included(name: &str, size: usize, max_answer_bytes: usize) -> Value {
    let error = if size + 1024 > max_answer_bytes {
        format!(
            "Tool '{name}' not included: its definition ({size} bytes) is larger than an answer may be \
             ({max_answer_bytes} bytes, disclosure.max_answer_bytes)"
        )
    } else {
        format!(
            "Tool '{name}' not included: this answer would exceed {max_answer_bytes} bytes; fetch it in a separate request"
        )
    };
    json!({ "error": error })
}

/// The spec 6.3 not-found entry, listing as many available tools as fit in
/// `room` bytes (and how many more there are, if not all fit).
fn not_found(catalog: &Catalog, name: &str, room: usize) -> Value {
    let all = catalog.names();
    let mut used = 120 + escaped_len(name);
    let listed: Vec<&str> = all
        .iter()
        .copied()
        .take_while(|n| {
            used += escaped_len(n) + 6;
            used <= room
        })
        .collect();
    let mut entry = json!({"error": format!("Tool '{name}' not found"), "available_tools": listed});
    if listed.len() < all.len() {
        entry["more_tools"] = json!(all.len() - listed.len());
    }
    entry
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

/// The describe tool's error result for a selection over the
/// [`FetchLimits`](super::FetchLimits) (`isError: true`).
pub fn describe_refused(body: &Value) -> Value {
    tool_error(body)
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
