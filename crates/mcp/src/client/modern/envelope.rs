//! The per-request envelope of a modern request (`params._meta`: protocol
//! version, client capabilities, client info, log level) and what the
//! downstream side tells the upstream leg about the client a call is for.
//!
//! A forwarded call gets its envelope as it is encoded ([`encode`]): the
//! members are written between the request's own, so the capabilities are
//! not copied into its params and `clientInfo` is never built as a tree.
//! [`stamp`] puts the same envelope into a params tree, for toolgate's own
//! requests and notifications.

use std::sync::Arc;

use http::{HeaderName, HeaderValue};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::jsonrpc::Request;
use crate::protocol::modern::meta;

/// What a forwarded call says about the downstream client it is made for.
/// The forwarder fills it; the upstream leg uses it only towards modern
/// upstreams.
#[derive(Debug, Clone, Default)]
pub struct ClientContext {
    /// The client's capabilities for this request. A modern downstream
    /// request carries its own in `_meta` (those win); for a 2025-era session
    /// these are the ones it declared at `initialize`, shared: a session
    /// works them out once. `None`: the connection's own (toolgate's).
    pub capabilities: Option<Arc<Value>>,
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
    #[cfg(any(test, feature = "test-util"))]
    pub fn with_param_headers<'a>(
        mut self,
        headers: impl IntoIterator<Item = (&'a HeaderName, &'a HeaderValue)>,
    ) -> Self {
        self.param_headers = headers
            .into_iter()
            .filter(|(n, _)| n.as_str().starts_with(crate::protocol::modern::header::PARAM_PREFIX))
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
        let caps = client.and_then(|c| c.capabilities.as_deref().cloned()).filter(Value::is_object);
        m.insert(meta::CLIENT_CAPABILITIES.into(), caps.unwrap_or_else(|| fallback.clone()));
    }
    m.insert(meta::CLIENT_INFO.into(), client_info());
    if !m.contains_key(meta::LOG_LEVEL)
        && let Some(level) = client.and_then(|c| c.log_level.clone()).filter(Value::is_string)
    {
        m.insert(meta::LOG_LEVEL.into(), level);
    }
}

/// `request` as JSON text with the envelope [`stamp`] would put into its
/// params (the same members, by the same rules), written while it is
/// serialized; the request itself is not changed. The envelope's keys and
/// toolgate's `clientInfo` are constant text, written as they are.
pub fn encode(request: &Request, version: &str, fallback: &Value, client: Option<&ClientContext>) -> Vec<u8> {
    let envelope = Envelope {
        version,
        capabilities: client.and_then(|c| c.capabilities.as_deref()).filter(|c| c.is_object()).unwrap_or(fallback),
        log_level: client.and_then(|c| c.log_level.as_ref()).filter(|l| l.is_string()),
    };
    // The envelope alone is about 300 bytes: room for it and small params.
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(request.id.as_json().as_bytes());
    out.extend_from_slice(br#","method":"#);
    write_json(&mut out, &request.method);
    out.extend_from_slice(br#","params":{"#);
    // Params that are not an object become an object, as `stamp` makes them.
    let own = request.params.as_ref().and_then(Value::as_object);
    let mut first = true;
    let mut stamped = false;
    for (key, value) in own.into_iter().flatten() {
        write_key(&mut out, &mut first, key);
        if key == "_meta" {
            envelope.write_meta(&mut out, value.as_object());
            stamped = true;
        } else {
            write_json(&mut out, value);
        }
    }
    if !stamped {
        write_key(&mut out, &mut first, "_meta");
        envelope.write_meta(&mut out, None);
    }
    out.extend_from_slice(b"}}");
    // UTF-8 (serde_json writes it, and so does everything above), left as
    // bytes: the transports send bytes, and checking it again cost a scan.
    out
}

/// What [`encode`] writes into `_meta` unless the request has its own.
struct Envelope<'a> {
    version: &'a str,
    capabilities: &'a Value,
    log_level: Option<&'a Value>,
}

impl Envelope<'_> {
    /// `_meta`: the request's own members but those the leg sets, then the
    /// envelope's.
    fn write_meta(&self, out: &mut Vec<u8>, own: Option<&Map<String, Value>>) {
        // One pass (a lookup would hash each key).
        let (mut own_capabilities, mut own_level) = (false, false);
        for (key, value) in own.into_iter().flatten() {
            own_capabilities |= key == meta::CLIENT_CAPABILITIES && value.is_object();
            own_level |= key == meta::LOG_LEVEL;
        }
        out.push(b'{');
        let mut first = true;
        for (key, value) in own.into_iter().flatten() {
            let replaced = key == meta::PROTOCOL_VERSION
                || key == meta::CLIENT_INFO
                || (key == meta::CLIENT_CAPABILITIES && !own_capabilities);
            if !replaced {
                write_key(out, &mut first, key);
                write_json(out, value);
            }
        }
        write_constant_key(out, &mut first, meta::PROTOCOL_VERSION);
        write_json(out, self.version);
        if !own_capabilities {
            write_constant_key(out, &mut first, meta::CLIENT_CAPABILITIES);
            write_json(out, self.capabilities);
        }
        write_constant_key(out, &mut first, meta::CLIENT_INFO);
        out.extend_from_slice(CLIENT_INFO_JSON.as_bytes());
        if let (false, Some(level)) = (own_level, self.log_level) {
            write_constant_key(out, &mut first, meta::LOG_LEVEL);
            write_json(out, level);
        }
        out.push(b'}');
    }
}

/// toolgate's `clientInfo` as JSON text (its name and version need no escapes).
const CLIENT_INFO_JSON: &str = concat!(r#"{"name":"toolgate","version":""#, env!("CARGO_PKG_VERSION"), r#""}"#);

fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Into memory, a string or a JSON value: nothing can fail.
    let _ = serde_json::to_writer(out, value);
}

/// An object's key (escaped), after a comma unless it is the first.
fn write_key(out: &mut Vec<u8>, first: &mut bool, key: &str) {
    if !std::mem::take(first) {
        out.push(b',');
    }
    write_json(out, key);
    out.push(b':');
}

/// One of the envelope's own keys, which need no escapes.
fn write_constant_key(out: &mut Vec<u8>, first: &mut bool, key: &'static str) {
    if !std::mem::take(first) {
        out.push(b',');
    }
    out.push(b'"');
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
}

#[cfg(test)]
mod tests;
