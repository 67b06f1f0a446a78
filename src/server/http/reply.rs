//! Building HTTP responses that carry JSON-RPC payloads.

use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;

use crate::jsonrpc::{ErrorObject, Message, Response as RpcResponse};

/// A JSON body with `status`.
pub fn json<T: Serialize + ?Sized>(status: StatusCode, body: &T) -> Response {
    json_sized(status, body, 128)
}

/// A JSON body with `status`, written into a buffer of `capacity` bytes
/// (a large prepared result, e.g. a 1,000-tool `tools/list`, is then copied
/// once instead of through every doubling of the buffer).
pub fn json_sized<T: Serialize + ?Sized>(status: StatusCode, body: &T, capacity: usize) -> Response {
    let mut bytes = Vec::with_capacity(capacity);
    if serde_json::to_writer(&mut bytes, body).is_err() {
        bytes = b"{}".to_vec();
    }
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
