//! The sessionless (2026-07-28, "modern") era of the engine: the per-request
//! validation ladder, `server/discover`, and the transient session a modern
//! request runs in.
//!
//! A transport that saw a request claim the modern era (its `params._meta`
//! names a protocol version) hands it to [`Engine::accept_modern`] with the
//! routing headers it carried (none on stdio). The checks run in the order
//! the TypeScript SDK and the conformance suite expect:
//!
//! - a. the `_meta` envelope (protocol version and client capabilities) →
//!   `-32602` naming what is missing (HTTP 400); its `clientInfo` moves out
//!   of the request into [`ModernContext::client_info`] (each leg onward
//!   names its own client);
//! - b. `MCP-Protocol-Version` present and equal to the envelope's → `-32020`;
//! - c. a revision toolgate serves → `-32022` with `{supported, requested}`;
//! - d. `Mcp-Method` present and equal to the body's `method` → `-32020`;
//! - e. `Mcp-Name` (for `tools/call`, `prompts/get`, `resources/read`) present
//!   and equal to `params.name`/`params.uri` once decoded → `-32020`;
//! - f. a method the modern era removed → `-32601` (HTTP 404); methods it
//!   does not know go to the application, whose `-32601` is also a 404
//!   (a gateway forwards what it does not know);
//! - then `server/discover` is answered here, with the application's
//!   [`Handler::discover`], and anything else runs on a transient session
//!   built by [`Handler::sessionless`]: never stored, never named by an
//!   `Mcp-Session-Id`, dropped once answered.
//!
//! What a modern request's answer gets on the way out ([`Engine::run`] does
//! it, see [`stamp`]): `resultType` (`"complete"` when the application's
//! result has none), the cache hints on cacheable results
//! ([`Handler::cache_hints`], where the result has none of its own; a
//! `private` hint wins), the server's own identity in
//! `_meta["io.modelcontextprotocol/serverInfo"]` on every result
//! ([`Handler::server_info`]; one the result carried, an upstream's, moves to
//! `dev.toolgate/upstreamServerInfo`), and a resource-not-found `-32002` from
//! an older server becomes `-32602` with `data.uri`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value, json};

use super::Engine;
use crate::jsonrpc::{ErrorObject, Outcome, Request, Response, codes, member};
use crate::protocol::modern::{self, Envelope, header, meta, result};
use crate::server::caller::Caller;
use crate::server::handler::{Handler, ModernContext};
use crate::server::limits;
use crate::server::session::Session;

/// The routing headers of a modern HTTP request, as sent (stdio has none).
/// Each is the request's own header value, shared rather than copied.
#[derive(Debug, Clone, Default)]
pub struct RoutingHeaders {
    /// `MCP-Protocol-Version` (optional white space is trimmed when it is
    /// compared).
    pub protocol_version: Option<http::HeaderValue>,
    /// `Mcp-Method`, raw.
    pub method: Option<http::HeaderValue>,
    /// `Mcp-Name`, raw (trimmed and base64-decoded when checked).
    pub name: Option<http::HeaderValue>,
    /// The `Mcp-Param-*` headers, as sent (the engine cannot check them: it
    /// does not know the tools' schemas; they reach the application in
    /// [`ModernContext::param_headers`]). Empty, without an allocation, when
    /// the request carries none.
    pub params: Vec<(http::HeaderName, http::HeaderValue)>,
}

impl RoutingHeaders {
    /// The routing headers of an HTTP request (of a name sent twice, the
    /// first value, as a lookup finds it).
    pub fn from_headers(headers: &http::HeaderMap) -> Self {
        // One pass over the request's headers: three lookups would hash
        // each name, and the `Mcp-Param-*` ones need a pass anyway.
        let mut routing = Self::default();
        for (name, value) in headers {
            let slot = match name.as_str() {
                header::METHOD => &mut routing.method,
                header::NAME => &mut routing.name,
                _ if *name == crate::protocol::header::PROTOCOL_VERSION => &mut routing.protocol_version,
                n if n.starts_with(header::PARAM_PREFIX) => {
                    routing.params.push((name.clone(), value.clone()));
                    continue;
                }
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(value.clone());
            }
        }
        routing
    }

    /// `MCP-Protocol-Version` as text, optional white space (spaces and
    /// tabs) trimmed.
    fn version(&self) -> Option<std::borrow::Cow<'_, str>> {
        let bytes = self.protocol_version.as_ref()?.as_bytes();
        let white = |b: &u8| matches!(b, b' ' | b'\t');
        let start = bytes.iter().position(|b| !white(b)).unwrap_or(bytes.len());
        let end = bytes.iter().rposition(|b| !white(b)).map_or(start, |e| e + 1);
        Some(crate::protocol::header::text(&bytes[start..end]))
    }
}

/// What the engine made of a modern request.
pub enum ModernAccepted<S: Send + Sync + 'static> {
    /// Answered without running anything: a refusal or `server/discover`.
    /// `status` is the HTTP status the answer goes with.
    Answered { response: Response, status: u16 },
    /// Run `request` on this transient session with [`Engine::run`].
    Run { session: Arc<Session<S>>, request: Request },
}

mod stamp;

pub use stamp::ServerInfo;
use stamp::Stamp;

/// Numbers transient sessions, for logs only (they are never looked up).
static SESSIONLESS: AtomicU64 = AtomicU64::new(1);

impl<H: Handler> Engine<H> {
    /// Takes a request that claims the modern era (see the module doc).
    pub async fn accept_modern(
        &self,
        mut request: Request,
        headers: Option<&RoutingHeaders>,
        caller: &Caller,
    ) -> ModernAccepted<H::State> {
        let refuse = |request: Request, error: ErrorObject, status: u16| ModernAccepted::Answered {
            response: Response::error(Some(request.id), error),
            status,
        };
        // a. The envelope (its `clientInfo` moves to the context).
        let envelope = match Envelope::take(request.params.as_mut()) {
            Ok(envelope) => envelope,
            Err(e) => return refuse(request, e, 400),
        };
        // b. The version header mirrors the envelope.
        if let Some(headers) = headers
            && let sent = headers.version()
            && sent.as_deref() != Some(envelope.version.as_str())
        {
            let e = modern::header_mismatch("MCP-Protocol-Version", sent.as_deref(), &envelope.version);
            return refuse(request, e, 400);
        }
        // c. A revision toolgate serves.
        if !modern::is_supported(&envelope.version) {
            let e = modern::unsupported_version(&envelope.version);
            return refuse(request, e, 400);
        }
        if let Some(headers) = headers
            && let Err(e) = check_routing(&request, headers)
        {
            return refuse(request, e, 400);
        }
        // f. What the modern era removed.
        if modern::method::REMOVED.contains(&request.method.as_str()) {
            let e = ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {} is not part of protocol version {}", request.method, envelope.version),
            );
            return refuse(request, e, 404);
        }
        // An application without listen streams: a clean -32601 (its
        // discover declares no `listChanged` and no `subscribe`).
        if request.method == modern::method::SUBSCRIPTIONS_LISTEN && !self.handler.serves_listen() {
            return refuse(request, super::listen::not_served(), 404);
        }
        if self.is_shutting_down() {
            return refuse(request, limits::shutting_down(), 503);
        }
        let ctx = ModernContext {
            version: envelope.version,
            capabilities: envelope.capabilities,
            client_info: envelope.client_info.unwrap_or(Value::Null),
            log_level: envelope.log_level,
            caller: caller.clone(),
            param_headers: headers.map(|h| h.params.clone()),
        };
        if request.method == modern::method::SERVER_DISCOVER {
            return match self.handler.discover(&ctx).await {
                Ok(discovery) => ModernAccepted::Answered {
                    response: Response::result(request.id, discover_result(discovery, self.handler.serves_listen())),
                    status: 200,
                },
                Err(e) => {
                    let status = modern::http_status(e.code);
                    refuse(request, e, status)
                }
            };
        }
        match self.handler.sessionless(&ctx).await {
            Ok(state) => {
                let id = transient_id(SESSIONLESS.fetch_add(1, Ordering::Relaxed));
                let session = Arc::new(Session::sessionless(id, ctx, state));
                ModernAccepted::Run { session, request }
            }
            Err(e) => {
                let status = if e.code == codes::INVALID_PARAMS { 400 } else { modern::http_status(e.code) };
                refuse(request, e, status)
            }
        }
    }

    /// What a modern request's outcome gets on the way out (see the module
    /// doc): `cacheable`, its method if its results are cacheable; `uri`,
    /// what a `resources/read` asked for.
    pub(super) fn finish_modern(
        &self,
        session: &Arc<Session<H::State>>,
        cacheable: Option<&'static str>,
        uri: Option<Value>,
        outcome: Outcome,
    ) -> Outcome {
        match outcome {
            Outcome::Error(mut error) => {
                if error.get("code").and_then(Value::as_i64) == Some(codes::RESOURCE_NOT_FOUND) {
                    error["code"] = json!(codes::INVALID_PARAMS);
                    let mut data = match error.get("data") {
                        Some(Value::Object(data)) => data.clone(),
                        _ => Map::new(),
                    };
                    if let Some(uri) = uri {
                        data.entry("uri").or_insert(uri);
                    }
                    error["data"] = Value::Object(data);
                }
                Outcome::Error(error)
            }
            outcome => {
                let cache = cacheable.map(|method| self.handler.cache_hints(session, method));
                Stamp { cache, server_info: self.server_info.as_ref() }.apply(outcome)
            }
        }
    }
}

/// The id of the `n`th transient session, `sessionless-<n>` (one
/// allocation, the id's own).
fn transient_id(n: u64) -> Arc<str> {
    const PREFIX: &str = "sessionless-";
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(n);
    let mut buf = [0u8; PREFIX.len() + 20];
    buf[..PREFIX.len()].copy_from_slice(PREFIX.as_bytes());
    buf[PREFIX.len()..PREFIX.len() + digits.len()].copy_from_slice(digits.as_bytes());
    Arc::from(std::str::from_utf8(&buf[..PREFIX.len() + digits.len()]).unwrap_or(PREFIX))
}

/// d and e: `Mcp-Method` and `Mcp-Name` mirror the body.
fn check_routing(request: &Request, headers: &RoutingHeaders) -> Result<(), ErrorObject> {
    let sent_method = headers.method.as_ref().map(|m| crate::protocol::header::text(m.as_bytes()));
    if sent_method.as_deref() != Some(request.method.as_str()) {
        return Err(modern::header_mismatch("Mcp-Method", sent_method.as_deref(), &request.method));
    }
    let Some(param) = modern::method::name_param(&request.method) else { return Ok(()) };
    let body = request.params.as_ref().and_then(|p| member(p, param)).and_then(Value::as_str).unwrap_or_default();
    match headers.name.as_ref().map(http::HeaderValue::as_bytes) {
        None => Err(modern::header_mismatch("Mcp-Name", None, body)),
        Some(raw) => match modern::decode_header_value(raw) {
            Some(name) if name == body => Ok(()),
            Some(name) => Err(modern::header_mismatch("Mcp-Name", Some(&name), body)),
            None => Err(ErrorObject::new(modern::code::HEADER_MISMATCH, "Header mismatch: Mcp-Name is malformed")
                .with_data(json!({"mismatch": {"header": "Mcp-Name", "body": body}}))),
        },
    }
}

/// The `server/discover` result: the revisions served, what the application
/// offers, its cache hints, and its identity in `_meta`. Without listen
/// streams (`listens` false), nothing that needs one is declared
/// (`listChanged`, resource `subscribe`); with them, the application's
/// offer says what it delivers on them.
fn discover_result(discovery: crate::server::handler::Discovery, listens: bool) -> Value {
    let offer = discovery.offer;
    let mut capabilities = offer.capabilities;
    if !listens && let Value::Object(caps) = &mut capabilities {
        for kind in ["tools", "prompts", "resources"] {
            if let Some(Value::Object(cap)) = caps.get_mut(kind) {
                cap.remove("listChanged");
                cap.remove("subscribe");
            }
        }
    }
    let mut fields = Map::new();
    fields.insert(result::RESULT_TYPE.into(), json!(result::COMPLETE));
    fields.insert(modern::discover::SUPPORTED_VERSIONS.into(), json!(modern::VERSIONS));
    fields.insert(modern::discover::CAPABILITIES.into(), capabilities);
    if let Some(instructions) = offer.instructions {
        fields.insert(modern::discover::INSTRUCTIONS.into(), Value::String(instructions));
    }
    fields.insert(result::TTL_MS.into(), json!(discovery.hints.ttl_ms));
    fields.insert(result::CACHE_SCOPE.into(), json!(discovery.hints.scope.as_str()));
    fields.insert("_meta".into(), json!({meta::SERVER_INFO: offer.server_info}));
    Value::Object(fields)
}

#[cfg(test)]
#[test]
fn transient_ids_are_numbered_and_the_largest_fits() {
    assert_eq!(&*transient_id(7), "sessionless-7");
    assert_eq!(&*transient_id(u64::MAX), "sessionless-18446744073709551615");
}
