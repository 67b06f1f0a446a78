//! The `Mcp-Param-*` headers of SEP-2243 (2026-07-28): which arguments a
//! tool's `inputSchema` mirrors in headers (`x-mcp-header`), the rules that
//! make such an annotation valid (a client leaves a tool with an invalid one
//! out), how a value is written (plain, or `=?base64?…?=`), and how a server
//! checks the headers a client sent against the arguments. One set of value
//! rules for both sides: toolgate's upstream leg writes the headers with
//! them, and a server on the engine (the gateway, the fixture) checks them.

use std::collections::HashMap;

use base64::Engine as _;
use http::{HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::header;
use crate::jsonrpc::ErrorObject;

/// The JSON type of an annotated property.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// Sent as-is.
    String,
    /// Sent as a decimal number.
    Integer,
    /// Sent as `true` / `false`.
    Boolean,
}

/// One argument mirrored in a header: `Mcp-Param-<name>` carries the value
/// at `path` (property names from the arguments' root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The header, `mcp-param-<name>` (lower case; header names are
    /// case-insensitive).
    pub header: HeaderName,
    /// The property names leading to the argument.
    pub path: Vec<String>,
    /// Its declared type.
    pub kind: ParamKind,
}

/// Why a tool's `x-mcp-header` annotations are invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidAnnotation {
    /// The annotation is not a string, or an empty one.
    #[error("`x-mcp-header` at {at} is empty or not a string")]
    Empty { at: String },
    /// The name has characters a header name cannot have.
    #[error("`x-mcp-header` {name:?} at {at} is not a valid header name (RFC 9110 token characters only)")]
    Charset { name: String, at: String },
    /// Two annotations name the same header (case-insensitively).
    #[error("`x-mcp-header` {name:?} is declared twice (header names are case-insensitive)")]
    Duplicate { name: String },
    /// The property is not a string, an integer or a boolean.
    #[error(
        "`x-mcp-header` {name:?} at {at} is on a property of type {found}; only string, integer and boolean are allowed"
    )]
    Type { name: String, at: String, found: String },
    /// The annotation cannot be reached from the root through `properties` only.
    #[error("`x-mcp-header` at {at} is not reachable through `properties` alone")]
    Unreachable { at: String },
}

/// The headers a tool's `inputSchema` declares, or why its annotations are
/// invalid (then the tool must not be offered). Never follows `$ref`: a
/// reference is not a static path (and a network one is never fetched).
pub fn annotations(tool: &Map<String, Value>) -> Result<Vec<ParamHeader>, InvalidAnnotation> {
    let Some(schema) = tool.get("inputSchema") else { return Ok(Vec::new()) };
    let mut found = Vec::new();
    collect(schema, &mut Vec::new(), true, "inputSchema", &mut found)?;
    let mut seen: HashMap<String, ()> = HashMap::new();
    let mut out = Vec::with_capacity(found.len());
    for (name, path, kind, at) in found {
        if name.is_empty() {
            return Err(InvalidAnnotation::Empty { at });
        }
        if !name.bytes().all(is_tchar) {
            return Err(InvalidAnnotation::Charset { name, at });
        }
        let lower = name.to_ascii_lowercase();
        if seen.insert(lower.clone(), ()).is_some() {
            return Err(InvalidAnnotation::Duplicate { name });
        }
        let kind = match kind {
            Ok(kind) => kind,
            Err(found) => return Err(InvalidAnnotation::Type { name, at, found }),
        };
        let header = HeaderName::try_from(format!("{}{lower}", header::PARAM_PREFIX))
            .map_err(|_| InvalidAnnotation::Charset { name: name.clone(), at: at.clone() })?;
        out.push(ParamHeader { header, path, kind });
    }
    Ok(out)
}

type Found = (String, Vec<String>, Result<ParamKind, String>, String);

/// Walks a schema. `reachable`: the node is reached from the root through
/// `properties` only; an annotation anywhere else is invalid.
fn collect(
    node: &Value,
    path: &mut Vec<String>,
    reachable: bool,
    at: &str,
    out: &mut Vec<Found>,
) -> Result<(), InvalidAnnotation> {
    let Some(obj) = node.as_object() else {
        if let Some(items) = node.as_array() {
            for (i, item) in items.iter().enumerate() {
                collect(item, path, false, &format!("{at}/{i}"), out)?;
            }
        }
        return Ok(());
    };
    if let Some(annotation) = obj.get(header::SCHEMA_KEYWORD) {
        // The root itself (the arguments object) is no argument.
        if !reachable || path.is_empty() {
            return Err(InvalidAnnotation::Unreachable { at: at.to_owned() });
        }
        let Some(name) = annotation.as_str() else { return Err(InvalidAnnotation::Empty { at: at.to_owned() }) };
        out.push((name.to_owned(), path.clone(), kind_of(obj), at.to_owned()));
    }
    for (key, child) in obj {
        if key == header::SCHEMA_KEYWORD {
            continue;
        }
        if key == "properties"
            && let Some(props) = child.as_object()
        {
            for (name, prop) in props {
                path.push(name.clone());
                let r = collect(prop, path, reachable, &format!("{at}/properties/{name}"), out);
                path.pop();
                r?;
            }
            continue;
        }
        // Anything else (items, oneOf, $defs, …) is not a static path.
        if child.is_object() || child.is_array() {
            collect(child, path, false, &format!("{at}/{key}"), out)?;
        }
    }
    Ok(())
}

/// The property's type, or what it is instead (for the warning).
fn kind_of(obj: &Map<String, Value>) -> Result<ParamKind, String> {
    match obj.get("type") {
        Some(Value::String(t)) => match t.as_str() {
            "string" => Ok(ParamKind::String),
            "integer" => Ok(ParamKind::Integer),
            "boolean" => Ok(ParamKind::Boolean),
            other => Err(format!("`{other}`")),
        },
        Some(other) => Err(other.to_string()),
        None => Err("(none)".into()),
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Encodes a value for an `Mcp-Name` or `Mcp-Param-*` header: plain when it is
/// safe printable ASCII without surrounding white space, otherwise (and when
/// the plain text would itself look like the sentinel) `=?base64?…?=`.
pub fn encode_value(value: &str) -> HeaderValue {
    let plain_ok = value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && value.trim_matches(' ') == value
        && !(value.starts_with(header::BASE64_PREFIX) && value.ends_with(header::BASE64_SUFFIX));
    if plain_ok && let Ok(v) = HeaderValue::from_str(value) {
        return v;
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
    let text = format!("{}{encoded}{}", header::BASE64_PREFIX, header::BASE64_SUFFIX);
    // Base64 and the markers are printable ASCII.
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// The text of one mirrored argument (before the header encoding), or
/// `None` when there is no header to send (absent, `null`, or of another
/// type than declared).
pub fn param_text(arguments: Option<&Map<String, Value>>, spec: &ParamHeader) -> Option<String> {
    let (first, rest) = spec.path.split_first()?;
    let mut value = arguments?.get(first)?;
    for key in rest {
        value = value.get(key)?;
    }
    match (spec.kind, value) {
        (_, Value::Null) => None,
        (ParamKind::String, Value::String(s)) => Some(s.clone()),
        (ParamKind::Integer, Value::Number(n)) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Some(i.to_string()),
            (_, Some(u), _) => Some(u.to_string()),
            // 42.0 is an integer in JSON Schema.
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => Some(format!("{}", f as i64)),
            _ => None,
        },
        (ParamKind::Boolean, Value::Bool(b)) => Some(b.to_string()),
        _ => None,
    }
}

/// Whether a client must send every header its tool declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamCheck {
    /// The client saw the full schema (`passthrough`): a declared header
    /// missing for an argument in the body is refused.
    Required,
    /// The client saw the minimal schema, which hides `x-mcp-header`
    /// (`progressive`): only the headers it sent are checked.
    PresentOnly,
}

/// Checks the `Mcp-Param-*` headers a client sent with a `tools/call` (the
/// server side of SEP-2243) against the arguments, with the same value rules
/// the upstream leg encodes them with: a sent header must decode
/// (`=?base64?…?=`, optional white space trimmed) to the argument's text (an
/// integer compared as a number, so `42.0` matches `42`), a header for an
/// argument that is absent or `null` is a mismatch, and with
/// [`ParamCheck::Required`] a missing header for a present argument is
/// refused. Every failure is `-32020` (HTTP 400). Headers the tool does not
/// declare are not checked (they are forwarded).
pub fn check_client_params(
    specs: &[ParamHeader],
    arguments: Option<&Map<String, Value>>,
    sent: &[(HeaderName, HeaderValue)],
    check: ParamCheck,
) -> Result<(), ErrorObject> {
    for spec in specs {
        let body = param_text(arguments, spec);
        let mut values = sent.iter().filter(|(name, _)| *name == spec.header).map(|(_, v)| v).peekable();
        if values.peek().is_none() {
            match body {
                Some(body) if check == ParamCheck::Required => {
                    return Err(super::header_mismatch(display_name(spec), None, &body));
                }
                _ => continue,
            }
        }
        // Sent twice: each must match (the upstream gets toolgate's own).
        for raw in values {
            check_value(spec, body.as_deref(), raw)?;
        }
    }
    Ok(())
}

/// One sent value of a declared header against the argument's text.
fn check_value(spec: &ParamHeader, body: Option<&str>, raw: &HeaderValue) -> Result<(), ErrorObject> {
    let Some(decoded) = decode_param(raw.as_bytes()) else {
        return Err(ErrorObject::new(
            super::code::HEADER_MISMATCH,
            format!("Header mismatch: {} is malformed (invalid characters or base64)", display_name(spec)),
        )
        .with_data(json!({"mismatch": {"header": display_name(spec), "body": body.unwrap_or_default()}})));
    };
    let matches = match (body, spec.kind) {
        (None, _) => false,
        (Some(body), ParamKind::Integer) => {
            decoded == body || decoded.parse::<f64>().ok().zip(body.parse::<f64>().ok()).is_some_and(|(a, b)| a == b)
        }
        (Some(body), _) => decoded == body,
    };
    if matches { Ok(()) } else { Err(super::header_mismatch(display_name(spec), Some(&decoded), body.unwrap_or(""))) }
}

/// `Mcp-Param-<name>` as the error names it.
fn display_name(spec: &ParamHeader) -> &str {
    spec.header.as_str()
}

/// A sent `Mcp-Param-*` value, decoded: `None` when it is malformed (a plain
/// value must be printable ASCII, as the encoding rules make it; base64 must
/// be valid and decode to UTF-8).
fn decode_param(raw: &[u8]) -> Option<std::borrow::Cow<'_, str>> {
    if !raw.iter().all(|&b| b == b'\t' || (0x20..0x7f).contains(&b)) {
        return None;
    }
    super::decode_header_value(raw)
}

#[cfg(test)]
mod tests;
