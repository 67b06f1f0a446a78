//! The routing headers of a modern (2026-07-28) Streamable HTTP request:
//! `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, and the `Mcp-Param-*`
//! headers that mirror arguments whose property schema carries
//! `x-mcp-header` (the annotation and value rules are
//! [`crate::protocol::modern::params`], re-exported here).

// foldhash: these maps are looked up on every call (see Cargo.toml).
use foldhash::{HashMap, HashMapExt as _};
use std::sync::Arc;

use arc_swap::ArcSwap;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

use crate::jsonrpc::member;
use crate::protocol::modern::header;
pub use crate::protocol::modern::params::{
    InvalidAnnotation, ParamCheck, ParamHeader, ParamKind, annotations, check_client_params, encode_value, param_text,
};
use crate::protocol::{self, method};

/// The header of one mirrored argument, or `None` to omit it.
fn param_value(arguments: Option<&Map<String, Value>>, spec: &ParamHeader) -> Option<HeaderValue> {
    let text = param_text(arguments, spec)?;
    match spec.kind {
        ParamKind::String => Some(encode_value(&text)),
        // Digits, a sign, `true`, `false`: plain ASCII.
        ParamKind::Integer | ParamKind::Boolean => HeaderValue::from_str(&text).ok(),
    }
}

/// A header value of constant text, checked as any other and not copied
/// (`None` if it is not one).
fn constant_value(text: &'static str) -> Option<HeaderValue> {
    HeaderValue::from_maybe_shared(bytes::Bytes::from_static(text.as_bytes())).ok()
}

/// `Mcp-Method`: the methods a gateway forwards most, not copied.
fn method_value(request_method: &str) -> Option<HeaderValue> {
    const COMMON: [&str; 6] = [
        method::TOOLS_CALL,
        method::TOOLS_LIST,
        method::RESOURCES_READ,
        method::RESOURCES_LIST,
        method::PROMPTS_GET,
        method::PROMPTS_LIST,
    ];
    match COMMON.iter().find(|m| **m == request_method) {
        Some(m) => constant_value(m),
        None => HeaderValue::from_str(request_method).ok(),
    }
}

/// Every header of a modern POST: the protocol version, `Mcp-Method`,
/// `Mcp-Name` where the method has one, and the `Mcp-Param-*` headers of
/// `params` (a `tools/call`) per the tool's annotations. `client`: the
/// `Mcp-Param-*` headers the downstream client sent. Those the tool's schema
/// does not declare are forwarded unchanged (an intermediary must pass on
/// what it does not recognize); a declared one never is: toolgate generates
/// it from the arguments (or leaves it out with them), so it is never sent
/// twice. Nothing but `Mcp-Param-*` is ever taken from `client`.
///
/// The map has room for the transport's own headers too (content type,
/// `Accept`, credentials, trace context): the transport adds them to it
/// rather than copying these into a map of its own.
pub fn request_headers(
    version: &'static str,
    request_method: &str,
    params: Option<&Value>,
    tool: Option<&ToolRouting>,
    client: &[(HeaderName, HeaderValue)],
) -> HeaderMap {
    let declared = tool.map(|t| &*t.params).unwrap_or_default();
    let mut out = HeaderMap::with_capacity(TRANSPORT_ROOM + 3 + declared.len() + client.len());
    if let Some(v) = constant_value(version) {
        out.append(protocol::header::PROTOCOL_VERSION, v);
    }
    if let Some(v) = method_value(request_method) {
        out.append(HeaderName::from_static(header::METHOD), v);
    }
    let name_key = match request_method {
        method::TOOLS_CALL | method::PROMPTS_GET => Some("name"),
        method::RESOURCES_READ => Some("uri"),
        _ => None,
    };
    // A known tool's name was encoded once, as the table was built.
    match tool {
        Some(tool) if request_method == method::TOOLS_CALL => {
            out.append(HeaderName::from_static(header::NAME), tool.name.clone());
        }
        _ => {
            if let Some(name) = name_key.and_then(|k| member(params?, k)).and_then(Value::as_str) {
                out.append(HeaderName::from_static(header::NAME), encode_value(name));
            }
        }
    }
    let arguments =
        params.filter(|_| !declared.is_empty()).and_then(|p| member(p, "arguments")).and_then(Value::as_object);
    for spec in declared {
        if let Some(v) = param_value(arguments, spec) {
            out.append(spec.header.clone(), v);
        }
    }
    for (name, value) in client {
        let ours = declared.iter().any(|s| s.header == *name) || out.contains_key(name);
        if name.as_str().starts_with(header::PARAM_PREFIX) && !ours {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

/// Room, in a modern request's header map, for the headers its transport
/// adds: content type, `Accept`, a credential, `traceparent` and
/// `tracestate`, and the plain client's `Host` and `Content-Length` (a map
/// rounds its room up, which leaves some for configured headers). A map
/// without room for them would be rebuilt as they are added.
const TRANSPORT_ROOM: usize = 7;

/// What the routing headers of a call to one tool need, made once per crawl.
#[derive(Debug)]
pub struct ToolRouting {
    /// `Mcp-Name`: the tool's name, encoded (a call clones it, a count
    /// on shared bytes, rather than encoding it again).
    pub name: HeaderValue,
    /// The arguments it mirrors in headers (`x-mcp-header`); empty when it
    /// declares none, or invalid ones.
    pub params: Box<[ParamHeader]>,
}

impl ToolRouting {
    /// The routing of tool `name`, which mirrors `params`.
    pub fn new(name: &str, params: Vec<ParamHeader>) -> Self {
        Self { name: encode_value(name), params: params.into() }
    }
}

/// The routing headers of one upstream's tools, by upstream tool name:
/// rebuilt on every crawl, read by every modern `tools/call`.
#[derive(Default)]
pub struct ToolHeaders(ArcSwap<HashMap<String, Arc<ToolRouting>>>);

impl ToolHeaders {
    /// Replaces the table with the routing of `tools` (a tool with invalid
    /// annotations mirrors nothing). Every tool gets an entry when `names`
    /// (the upstream's leg sends routing headers, so its calls need each
    /// name's header); otherwise only those that mirror arguments, which a
    /// sessionless client's own headers are checked against whatever the
    /// leg, so a large catalog of a leg without headers holds no table.
    pub fn update(&self, tools: &[Value], names: bool) {
        let mut table = HashMap::new();
        for tool in tools.iter().filter_map(Value::as_object) {
            let Some(name) = tool.get("name").and_then(Value::as_str) else { continue };
            let params = annotations(tool).unwrap_or_default();
            if names || !params.is_empty() {
                table.insert(name.to_owned(), Arc::new(ToolRouting::new(name, params)));
            }
        }
        self.0.store(Arc::new(table));
    }

    /// The routing of tool `name`.
    pub fn get(&self, name: &str) -> Option<Arc<ToolRouting>> {
        self.0.load().get(name).cloned()
    }
}

#[cfg(test)]
mod tests;
