//! Which revision a client message belongs to: the handshake era (a session
//! that `initialize` opened) or the sessionless 2026-07-28 era. The engine
//! decides it for every transport; a transport only frames bytes into
//! bodies and says what else it knows: the `MCP-Protocol-Version` header of
//! a Streamable HTTP `POST` ([`of_post`]), or the era a connection is pinned
//! to (stdio: [`Pinned`]). A message *claims* the modern era with its
//! envelope, `params._meta` naming a protocol version.
//!
//! **A `POST`** is decided on its own, body first (as the TypeScript SDK
//! does), in this order:
//!
//! 1. a batch is handshake-era; one with an element claiming the modern era
//!    is refused (400 `-32600`);
//! 2. a response is handshake-era (an answer to a session's request);
//! 3. `initialize` without a claim is handshake-era, unless the header names
//!    a modern revision (400 `-32020`);
//! 4. anything with a claim is modern (a modern notification is dropped:
//!    202; cancelling is closing the response stream);
//! 5. without a claim, a header naming a revision that is not a handshake
//!    one makes a malformed modern request (400 `-32602`, the envelope is
//!    missing), or a modern notification (dropped);
//! 6. everything else is handshake-era.
//!
//! **A connection** (stdio) is pinned by its first request, once (as the
//! Python SDK's dual-era loop and the TypeScript SDK's `serveStdio` do): a
//! first request claiming the modern era that is not `initialize` pins it
//! modern; any other first request pins it to the handshake era. Afterwards
//! each era refuses the other's traffic with the Python SDK's errors:
//! `initialize` on a modern connection gets `-32022` naming the revisions
//! served, an enveloped request on a handshake-era connection `-32600`. On
//! a modern connection `notifications/cancelled` cancels a request; other
//! notifications and responses mean nothing and are dropped.

use serde_json::Value;

use crate::jsonrpc::{Body, DecodeError, ErrorObject, Id, Message, Request, Response, codes};
use crate::protocol::{method, modern};

/// The HTTP status of a message refused for its era.
const BAD_REQUEST: u16 = 400;

/// Where a client's body goes.
#[derive(Debug)]
pub enum Era {
    /// The handshake era: the body, for the session logic
    /// ([`Engine::accept`](super::Engine::accept)).
    Handshake(Result<Body, DecodeError>),
    /// A sessionless request ([`Engine::accept_modern`](super::Engine::accept_modern)).
    Sessionless(Request),
    /// Cancel the sessionless request with this id (a connection's
    /// `notifications/cancelled`).
    Cancel(Id),
    /// Refused for its era: the response, and the HTTP status it calls for.
    Refused(Response, u16),
    /// Nothing to do: a notification that means nothing in the sessionless
    /// era (HTTP answers it 202).
    Dropped,
}

/// Whether a message's `params` claim the modern era.
fn claims(params: Option<&Value>) -> bool {
    modern::claim(params).is_some()
}

fn batch_refused() -> Response {
    let e = ErrorObject::new(
        codes::INVALID_REQUEST,
        "Invalid request: JSON-RPC batches are not part of the 2026-07-28 revision",
    );
    Response::error(None, e)
}

/// The era of a `POST`ed body, given its `MCP-Protocol-Version` header
/// (see the module doc).
pub fn of_post(body: Result<Body, DecodeError>, header: Option<&str>) -> Era {
    let header = header.map(|v| v.trim_matches([' ', '\t']));
    let modern_header = header.is_some_and(|h| !modern::is_handshake_version(h));
    let single = match body {
        Ok(Body::Batch(items)) => {
            let claimed = items.iter().any(|item| match item {
                Ok(Message::Request(r)) => claims(r.params.as_ref()),
                Ok(Message::Notification(n)) => claims(n.params.as_ref()),
                _ => false,
            });
            if claimed {
                return Era::Refused(batch_refused(), BAD_REQUEST);
            }
            return Era::Handshake(Ok(Body::Batch(items)));
        }
        Ok(Body::Single(message)) => message,
        other => return Era::Handshake(other),
    };
    match single {
        Message::Request(r) if claims(r.params.as_ref()) => Era::Sessionless(r),
        Message::Request(r) if r.method == method::INITIALIZE && modern_header => {
            let e = modern::header_mismatch(
                "MCP-Protocol-Version",
                header,
                "a handshake revision (initialize is not part of the 2026-07-28 revision)",
            );
            Era::Refused(Response::error(Some(r.id), e), BAD_REQUEST)
        }
        Message::Request(r) if modern_header => {
            let e = modern::Envelope::read(r.params.as_ref()).err().unwrap_or_else(|| {
                ErrorObject::invalid_params("Invalid params: the request has no params._meta envelope")
            });
            Era::Refused(Response::error(Some(r.id), e), BAD_REQUEST)
        }
        // No client notification means anything on the modern HTTP wire.
        Message::Notification(n) if modern_header || claims(n.params.as_ref()) => Era::Dropped,
        other => Era::Handshake(Ok(Body::Single(other))),
    }
}

/// Whether a handshake-era body opens a session (`initialize`) rather than
/// naming one: a stale session id on it just gets a new session.
pub fn opens_session(body: &Result<Body, DecodeError>) -> bool {
    matches!(body, Ok(Body::Single(Message::Request(r))) if r.method == method::INITIALIZE)
}

/// The era a connection is pinned to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pinned {
    /// No request yet.
    #[default]
    Open,
    /// The handshake era.
    Handshake,
    /// The sessionless era.
    Sessionless,
}

impl Pinned {
    /// The era of a body on the connection, pinning it at the first request
    /// (see the module doc).
    pub fn of(&mut self, body: Result<Body, DecodeError>) -> Era {
        match (*self, body) {
            (Pinned::Open, Ok(Body::Single(Message::Request(r)))) => {
                if r.method != method::INITIALIZE && claims(r.params.as_ref()) {
                    *self = Pinned::Sessionless;
                    Era::Sessionless(r)
                } else {
                    *self = Pinned::Handshake;
                    Era::Handshake(Ok(Body::Single(Message::Request(r))))
                }
            }
            (Pinned::Open, body) => Era::Handshake(body),
            (Pinned::Handshake, Ok(Body::Single(Message::Request(r)))) if claims(r.params.as_ref()) => {
                let e = ErrorObject::new(
                    codes::INVALID_REQUEST,
                    "Invalid request: this connection uses the initialize handshake; the 2026-07-28 envelope is not accepted on it",
                );
                Era::Refused(Response::error(Some(r.id), e), BAD_REQUEST)
            }
            (Pinned::Handshake, body) => Era::Handshake(body),
            (Pinned::Sessionless, Ok(Body::Single(Message::Request(r)))) if r.method == method::INITIALIZE => {
                let requested = r.params.as_ref().and_then(|p| p.get("protocolVersion")).and_then(Value::as_str);
                let e = modern::unsupported_version(requested.unwrap_or(""));
                Era::Refused(Response::error(Some(r.id), e), BAD_REQUEST)
            }
            (Pinned::Sessionless, Ok(Body::Single(Message::Request(r)))) => Era::Sessionless(r),
            (Pinned::Sessionless, Ok(Body::Single(Message::Notification(n)))) if n.method == method::CANCELLED => {
                match n.params.as_ref().and_then(|p| p.get("requestId")).and_then(Id::from_value) {
                    Some(id) => Era::Cancel(id),
                    None => Era::Dropped,
                }
            }
            (Pinned::Sessionless, Ok(Body::Single(_))) => Era::Dropped,
            (Pinned::Sessionless, Ok(Body::Batch(_))) => Era::Refused(batch_refused(), BAD_REQUEST),
            (Pinned::Sessionless, Err(e)) => Era::Refused(e.to_response(), BAD_REQUEST),
        }
    }
}

#[cfg(test)]
mod tests;
