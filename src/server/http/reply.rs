//! Building HTTP responses that carry JSON-RPC payloads.

use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;

use crate::jsonrpc::{ErrorObject, Message, Response as RpcResponse};

/// A JSON body with `status`.
pub fn json<T: Serialize + ?Sized>(status: StatusCode, body: &T) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
    let mut r = Response::new(Body::from(bytes));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// An HTTP error carrying a JSON-RPC error without an id (the transport
/// rejected the request before reading it as a message).
pub fn error(status: StatusCode, code: i64, message: &str) -> Response {
    let body = Message::Response(RpcResponse::error(None, ErrorObject::new(code, message)));
    json(status, &body)
}
