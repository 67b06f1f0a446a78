//! Which tools a request names: the `tools` query parameter of the resource
//! URI and the `tools` argument of the describe tool.

use std::collections::HashSet;

use percent_encoding::{AsciiSet, CONTROLS, percent_decode_str, utf8_percent_encode};
use serde_json::Value;

use super::RESOURCE_URI;

#[cfg(test)]
mod tests;

/// What a descriptions-resource URI asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// No `tools` parameter, or one naming no tool.
    Missing,
    /// The named tools: percent-decoded, trimmed, non-empty, without duplicates,
    /// in request order.
    Tools(Vec<String>),
}

/// Characters escaped in a tool name placed in the `tools` query value: what
/// would end or split the value, plus what is not allowed in a URI.
const QUERY_VALUE: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'&')
    .add(b'+')
    .add(b',')
    .add(b'<')
    .add(b'>')
    .add(b'=')
    .add(b'?')
    .add(b'[')
    .add(b']')
    .add(b'\\')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// Parses a URI passed to `resources/read`. `None` unless it is the
/// descriptions resource: scheme `resource` (any case) and path
/// `/tool_descriptions` with an empty authority (`resource:///tool_descriptions`),
/// no authority (`resource:/tool_descriptions`), or, leniently for models that
/// drop a slash, `resource://tool_descriptions`. A query and a fragment are
/// allowed; query parameters other than `tools` are ignored, and several
/// `tools` parameters are merged. `+` stays a literal `+`.
pub fn parse_selection(uri: &str) -> Option<Selection> {
    let (scheme, rest) = uri.split_once(':')?;
    if !scheme.eq_ignore_ascii_case("resource") {
        return None;
    }
    let rest = rest.split_once('#').map_or(rest, |(before, _)| before);
    let (path, query) = match rest.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (rest, None),
    };
    if !matches!(path, "///tool_descriptions" | "/tool_descriptions" | "//tool_descriptions") {
        return None;
    }
    let values = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode_str(key).decode_utf8_lossy() == "tools").then_some(value)
        })
        .map(|value| percent_decode_str(value).decode_utf8_lossy().into_owned());
    let names = clean_names(values.flat_map(|v| v.split(',').map(str::to_owned).collect::<Vec<_>>()));
    Some(if names.is_empty() { Selection::Missing } else { Selection::Tools(names) })
}

/// The resource URI naming `names`, e.g. `resource:///tool_descriptions?tools=a,b`.
/// Names are percent-encoded where needed (`[A-Za-z0-9_.-]` never is).
pub fn selection_uri<S: AsRef<str>>(names: &[S]) -> String {
    let encoded: Vec<String> = names.iter().map(|n| utf8_percent_encode(n.as_ref(), QUERY_VALUE).to_string()).collect();
    format!("{RESOURCE_URI}?tools={}", encoded.join(","))
}

/// The tool names passed to the describe tool: `{"tools": ["a", "b"]}`, or,
/// as models sometimes send, `{"tools": "a,b"}`. Non-string array items are
/// ignored. `Err` (a message for the model) when no name is given.
pub fn parse_describe_args(arguments: Option<&Value>) -> Result<Vec<String>, String> {
    let names = match arguments.and_then(|a| a.get("tools")) {
        Some(Value::Array(items)) => clean_names(items.iter().filter_map(Value::as_str).map(str::to_owned)),
        Some(Value::String(list)) => clean_names(list.split(',').map(str::to_owned)),
        _ => Vec::new(),
    };
    if names.is_empty() {
        Err("You must specify one or more tool names in the 'tools' parameter.".to_owned())
    } else {
        Ok(names)
    }
}

/// Trims names, drops empty ones and duplicates (first occurrence wins).
fn clean_names(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen = HashSet::new();
    names.into_iter().map(|n| n.trim().to_owned()).filter(|n| !n.is_empty() && seen.insert(n.clone())).collect()
}
