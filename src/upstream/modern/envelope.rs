//! The per-request envelope of a modern request (`params._meta`: protocol
//! version, client capabilities, client info, log level) and what the
//! downstream side tells the upstream leg about the client a call is for.

use http::{HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use crate::protocol::modern::{header, meta};

/// What a forwarded call says about the downstream client it is made for.
/// The forwarder fills it; the upstream leg uses it only towards modern
/// upstreams.
#[derive(Debug, Clone, Default)]
pub struct ClientContext {
    /// The client's capabilities for this request. A modern downstream
    /// request carries its own in `_meta` (those win); for a 2025-era session
    /// these are the ones it declared at `initialize`. `None`: the
    /// connection's own (toolgate's).
    pub capabilities: Option<Value>,
    /// The log level the session asked for (`logging/setLevel`), stamped as
    /// `io.modelcontextprotocol/logLevel` unless the request has its own.
    pub log_level: Option<Value>,
    /// The `Mcp-Param-*` headers the client sent. Those toolgate does not
    /// generate from the tool's schema are forwarded unchanged.
    pub param_headers: Vec<(HeaderName, HeaderValue)>,
}

impl ClientContext {
    /// Keeps, of `headers`, the `Mcp-Param-*` ones (what a transport hands
    /// the forwarder is all of the request's headers).
    pub fn with_param_headers<'a>(
        mut self,
        headers: impl IntoIterator<Item = (&'a HeaderName, &'a HeaderValue)>,
    ) -> Self {
        self.param_headers = headers
            .into_iter()
            .filter(|(n, _)| n.as_str().starts_with(header::PARAM_PREFIX))
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect();
        self
    }
}

/// toolgate's `clientInfo` on the upstream leg.
pub fn client_info() -> Value {
    json!({"name": "toolgate", "version": env!("CARGO_PKG_VERSION")})
}

/// Whether `params` are those of a modern request (its `_meta` names a
/// protocol version: the spec's own test for the era of a request).
pub fn is_modern(params: Option<&Value>) -> bool {
    crate::protocol::modern::claim(params).is_some()
}

/// Puts the envelope into `params._meta`, keeping every other key:
/// `protocolVersion` is the leg's, `clientCapabilities` the request's own if it
/// has them, else the client's from `client`, else `fallback` (the
/// connection's); `clientInfo` is toolgate's; `logLevel` the request's own,
/// else the session's.
pub fn stamp(params: &mut Option<Value>, version: &str, fallback: &Value, client: Option<&ClientContext>) {
    if !params.as_ref().is_some_and(Value::is_object) {
        *params = Some(Value::Object(Map::new()));
    }
    let Some(Value::Object(p)) = params else { return };
    let meta_value = p.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if !meta_value.is_object() {
        *meta_value = Value::Object(Map::new());
    }
    let Value::Object(m) = meta_value else { return };
    m.insert(meta::PROTOCOL_VERSION.into(), Value::String(version.to_owned()));
    if !m.get(meta::CLIENT_CAPABILITIES).is_some_and(Value::is_object) {
        let caps = client.and_then(|c| c.capabilities.clone()).filter(Value::is_object);
        m.insert(meta::CLIENT_CAPABILITIES.into(), caps.unwrap_or_else(|| fallback.clone()));
    }
    m.insert(meta::CLIENT_INFO.into(), client_info());
    if !m.contains_key(meta::LOG_LEVEL)
        && let Some(level) = client.and_then(|c| c.log_level.clone()).filter(Value::is_string)
    {
        m.insert(meta::LOG_LEVEL.into(), level);
    }
}

#[cfg(test)]
mod tests;
