//! Building HTTP responses that carry JSON-RPC payloads.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use http_body::{Frame, SizeHint};
use serde::Serialize;

use crate::jsonrpc::{ErrorObject, Id, Message, Raw, Response as RpcResponse};

/// The endpoint's answer: the usual JSON answer with its text whole, sent
/// as it is, or any other with axum's body. Boxed into axum's body, the
/// answer nearly every POST gets cost an allocation.
pub(crate) type Reply = http::Response<ReplyBody>;

/// The body of a [`Reply`].
pub(crate) type ReplyBody = http_body_util::Either<http_body_util::Full<Bytes>, Body>;

/// `response`, as a [`Reply`].
pub(crate) fn boxed(response: Response) -> Reply {
    response.map(http_body_util::Either::Right)
}

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

/// Prepared results up to this many bytes are copied into one buffer with
/// their envelope: for a typical proxied result that costs less than the
/// three allocations of holding on to it (its owner, the chunk list, the
/// body of chunks).
const COPIED_RESULT: usize = 4096;

/// The response to request `id` whose result is already JSON text (a
/// prepared `tools/list`, a cached description, a proxied result): the
/// envelope around it is written, and a large result is sent from where it
/// is held, without being copied into a new buffer.
pub(crate) fn prepared(id: &Id, result: Raw) -> Reply {
    use crate::jsonrpc::{PREPARED_HEAD as HEAD, PREPARED_RESULT as RESULT};
    use http_body_util::Either;
    let (id, text) = (id.as_json(), result.get());
    let body = if text.len() <= COPIED_RESULT {
        let mut bytes = Vec::with_capacity(HEAD.len() + id.len() + RESULT.len() + text.len() + 1);
        for part in [HEAD, id, RESULT, text, "}"] {
            bytes.extend_from_slice(part.as_bytes());
        }
        Either::Left(http_body_util::Full::new(Bytes::from(bytes)))
    } else {
        let head = Bytes::from([HEAD, id, RESULT].concat());
        Either::Right(Body::new(Chunks(VecDeque::from([head, Bytes::from_owner(result), Bytes::from_static(b"}")]))))
    };
    let mut r = http::Response::new(body);
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// A body of a few chunks of known size (sent with a `Content-Length`).
struct Chunks(VecDeque<Bytes>);

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.pop_front().map(|chunk| Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.0.iter().map(|c| c.len() as u64).sum())
    }
}

#[cfg(test)]
mod tests;
