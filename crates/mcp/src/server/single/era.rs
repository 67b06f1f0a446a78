//! The era of a stdio connection: its first request pins it, once (as the
//! Python SDK's dual-era loop and the TypeScript SDK's `serveStdio` do).
//!
//! A first request carrying the modern envelope (`params._meta` naming a
//! protocol version) that is not `initialize` opens a modern connection;
//! any other first request opens a handshake-era one. Afterwards each era
//! refuses the other's traffic with the Python SDK's errors: `initialize` on
//! a modern connection gets `-32022` naming the revisions served, an
//! enveloped request on a handshake-era connection gets `-32600`.
//!
//! On a modern connection, `notifications/cancelled` cancels a request;
//! other notifications and responses mean nothing and are dropped.

use serde_json::Value;

use crate::jsonrpc::{Body, DecodeError, ErrorObject, Id, Message, Request, Response, codes};
use crate::protocol::{method, modern};

/// The era a connection is pinned to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Pinned {
    /// No request yet.
    #[default]
    Open,
    /// The handshake era: the engine's session logic.
    Legacy,
    /// The sessionless era.
    Modern,
}

/// Where one body goes.
pub(super) enum Route {
    /// To the engine's session logic.
    Legacy(Result<Body, DecodeError>),
    /// A modern request.
    Modern(Request),
    /// Cancel the modern request with this id.
    Cancel(Id),
    /// Answered here.
    Answer(Response),
    /// Nothing to do.
    Drop,
}

impl Pinned {
    /// Routes a body, pinning the era at the first request.
    pub(super) fn route(&mut self, body: Result<Body, DecodeError>) -> Route {
        match (*self, body) {
            (Pinned::Open, Ok(Body::Single(Message::Request(r)))) => {
                if r.method != method::INITIALIZE && modern::claim(r.params.as_ref()).is_some() {
                    *self = Pinned::Modern;
                    Route::Modern(r)
                } else {
                    *self = Pinned::Legacy;
                    Route::Legacy(Ok(Body::Single(Message::Request(r))))
                }
            }
            (Pinned::Open, body) => Route::Legacy(body),
            (Pinned::Legacy, Ok(Body::Single(Message::Request(r)))) if modern::claim(r.params.as_ref()).is_some() => {
                let e = ErrorObject::new(
                    codes::INVALID_REQUEST,
                    "Invalid request: this connection uses the initialize handshake; the 2026-07-28 envelope is not accepted on it",
                );
                Route::Answer(Response::error(Some(r.id), e))
            }
            (Pinned::Legacy, body) => Route::Legacy(body),
            (Pinned::Modern, Ok(Body::Single(Message::Request(r)))) if r.method == method::INITIALIZE => {
                let requested = r.params.as_ref().and_then(|p| p.get("protocolVersion")).and_then(Value::as_str);
                Route::Answer(Response::error(Some(r.id), modern::unsupported_version(requested.unwrap_or(""))))
            }
            (Pinned::Modern, Ok(Body::Single(Message::Request(r)))) => Route::Modern(r),
            (Pinned::Modern, Ok(Body::Single(Message::Notification(n)))) if n.method == method::CANCELLED => {
                match n.params.as_ref().and_then(|p| p.get("requestId")).and_then(Id::from_value) {
                    Some(id) => Route::Cancel(id),
                    None => Route::Drop,
                }
            }
            (Pinned::Modern, Ok(Body::Single(_))) => Route::Drop,
            (Pinned::Modern, Ok(Body::Batch(_))) => {
                let e = ErrorObject::new(
                    codes::INVALID_REQUEST,
                    "Invalid request: JSON-RPC batches are not part of the 2026-07-28 revision",
                );
                Route::Answer(Response::error(None, e))
            }
            (Pinned::Modern, Err(e)) => Route::Answer(e.to_response()),
        }
    }
}
