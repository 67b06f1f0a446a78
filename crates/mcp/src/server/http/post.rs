//! `POST`: one JSON-RPC message (or a 2025-03-26 batch) from the client.

use std::sync::Arc;

use axum::response::Response;
use http::{HeaderMap, HeaderValue, StatusCode, header};

use super::answer::{self, Streamed};
use super::body::ReadBody;
use super::reply::{Reply, boxed};
use super::{EmptyResponse, HttpState, accepts_all, accepts_all_of, check_version_value, media_type, reply};
use crate::jsonrpc::{Body, Message, Response as RpcResponse, codes};
use crate::protocol;
use crate::server::caller::Caller;
use crate::server::engine::era::{self, Era};
use crate::server::engine::{Accepted, Refusal};
use crate::server::handler::{Handler, TraceHeaders};

pub async fn handle<H: Handler, B: ReadBody>(
    state: Arc<HttpState<H>>,
    request: http::Request<B>,
    caller: Caller,
) -> Reply {
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    let seen = PostHeaders::read(headers);
    if !seen.accepts_all(&["application/json", "text/event-stream"]) {
        return boxed(reply::error(
            StatusCode::NOT_ACCEPTABLE,
            codes::SERVER_ERROR,
            "Not Acceptable: Accept must list both application/json and text/event-stream",
        ));
    }
    let json_body = seen
        .content_type
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| media_type(v.as_bytes()).eq_ignore_ascii_case(b"application/json"));
    if !json_body {
        return boxed(reply::error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            codes::SERVER_ERROR,
            "Unsupported Media Type: Content-Type must be application/json",
        ));
    }
    let bytes = match super::body::read(
        body,
        seen.content_length,
        state.options.max_body_bytes,
        state.options.body_read_timeout,
    )
    .await
    {
        Ok(b) => b,
        Err(e) => return boxed(e.into_response()),
    };
    let version_header = seen.version;
    let version = version_header.map(|v| protocol::header::text(v.as_bytes()));
    let body = match era::of_post(Body::decode(&bytes), version.as_deref()) {
        Era::Handshake(body) => body,
        Era::Sessionless(request) => {
            return super::sessionless::serve(state, request, headers, seen.trace(), caller).await;
        }
        Era::Refused(response, status) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
            return boxed(reply::json(status, &Message::Response(response)));
        }
        Era::Dropped | Era::Cancel(_) => return boxed(StatusCode::ACCEPTED.into_response_empty()),
    };
    let id = seen.session_id.map(|v| v.to_str().unwrap_or_default());
    // A request that names a session must speak a revision toolgate knows;
    // one without a session is refused by the engine (with its id, which a
    // 2026-era probe needs to fall back). A malformed body is answered as
    // such, whatever it names.
    if body.is_ok()
        && !era::opens_session(&body)
        && id.is_some()
        && let Err(r) = check_version_value(version_header)
    {
        return boxed(r.into_response());
    }
    let session = state.engine.session_of(&body, id, &caller).await;
    match state.engine.accept(session, body, &caller).await {
        Accepted::Answered { responses, refusal, batch } => boxed(answered(responses, refusal, batch)),
        Accepted::Initialized { session, response } => {
            let mut r = reply::json(StatusCode::OK, &Message::Response(response));
            if let Ok(v) = HeaderValue::from_str(session.id()) {
                r.headers_mut().insert(protocol::header::SESSION_ID, v);
            }
            boxed(r)
        }
        Accepted::Run { session, requests, answered, batch } => {
            let streamed = Streamed::Session(session.clone());
            let remote = seen.trace();
            answer::respond(&state, session, requests, answered, batch, remote, streamed).await
        }
    }
}

/// The request headers a POST reads, found in one walk over them. Each
/// lookup in a `HeaderMap` hashes its name and probes: the seven a POST
/// made cost about 1,000 instructions, more than walking the handful of
/// headers a request has. A lookup's rule holds: the first value of a
/// name is the one read.
struct PostHeaders<'a> {
    headers: &'a HeaderMap,
    /// The first `Accept` value, and whether there are more.
    accept: Option<&'a HeaderValue>,
    more_accept: bool,
    content_type: Option<&'a HeaderValue>,
    content_length: Option<&'a HeaderValue>,
    version: Option<&'a HeaderValue>,
    session_id: Option<&'a HeaderValue>,
    traceparent: Option<&'a HeaderValue>,
    tracestate: Option<&'a HeaderValue>,
}

impl<'a> PostHeaders<'a> {
    fn read(headers: &'a HeaderMap) -> Self {
        let mut seen = Self {
            headers,
            accept: None,
            more_accept: false,
            content_type: None,
            content_length: None,
            version: None,
            session_id: None,
            traceparent: None,
            tracestate: None,
        };
        for (name, value) in headers {
            let slot = if name == header::ACCEPT {
                seen.more_accept |= seen.accept.is_some();
                &mut seen.accept
            } else if name == header::CONTENT_TYPE {
                &mut seen.content_type
            } else if name == header::CONTENT_LENGTH {
                &mut seen.content_length
            } else if name == protocol::header::PROTOCOL_VERSION {
                &mut seen.version
            } else if name == protocol::header::SESSION_ID {
                &mut seen.session_id
            } else if name == protocol::header::TRACEPARENT {
                &mut seen.traceparent
            } else if name == protocol::header::TRACESTATE {
                &mut seen.tracestate
            } else {
                continue;
            };
            slot.get_or_insert(value);
        }
        seen
    }

    /// [`accepts_all`] of the request's `Accept` values.
    fn accepts_all(&self, wanted: &[&str]) -> bool {
        if self.more_accept {
            return accepts_all(self.headers, wanted);
        }
        accepts_all_of(|| self.accept.into_iter(), wanted)
    }

    /// The request's trace context, as [`TraceHeaders::from_headers`] reads it.
    fn trace(&self) -> Option<TraceHeaders> {
        TraceHeaders::from_values(self.traceparent, self.tracestate)
    }
}

/// The HTTP status of a body the engine refused (200 if it did not).
pub(super) fn refusal_status(refusal: Option<Refusal>) -> StatusCode {
    match refusal {
        None => StatusCode::OK,
        Some(Refusal::SessionUnknown) => StatusCode::NOT_FOUND,
        Some(Refusal::TooManySessions) => StatusCode::TOO_MANY_REQUESTS,
        Some(Refusal::ShuttingDown | Refusal::StoreUnavailable) => StatusCode::SERVICE_UNAVAILABLE,
        Some(
            Refusal::Malformed
            | Refusal::SessionRequired
            | Refusal::AlreadyInitialized
            | Refusal::NotInitialized
            | Refusal::BatchNotAllowed,
        ) => StatusCode::BAD_REQUEST,
    }
}

/// The answer to a body the engine answered itself.
fn answered(mut responses: Vec<RpcResponse>, refusal: Option<Refusal>, batch: bool) -> Response {
    let status = refusal_status(refusal);
    if responses.is_empty() {
        return StatusCode::ACCEPTED.into_response_empty();
    }
    if batch {
        return refusal_response(status, refusal, &responses.into_iter().map(Message::Response).collect::<Vec<_>>());
    }
    match responses.pop() {
        Some(r) => refusal_response(status, refusal, &Message::Response(r)),
        None => StatusCode::ACCEPTED.into_response_empty(),
    }
}

/// How long a client should wait before retrying a request refused because
/// the shared state store is unreachable (the store's own wait is 2 s).
pub(super) const STORE_RETRY_AFTER: HeaderValue = HeaderValue::from_static("1");

/// A JSON answer with `status`; a refusal the client may retry soon
/// ([`Refusal::StoreUnavailable`]) also says when (`Retry-After`).
pub(super) fn refusal_response<T: serde::Serialize + ?Sized>(
    status: StatusCode,
    refusal: Option<Refusal>,
    body: &T,
) -> Response {
    let mut response = reply::json(status, body);
    if refusal == Some(Refusal::StoreUnavailable) {
        response.headers_mut().insert(header::RETRY_AFTER, STORE_RETRY_AFTER);
    }
    response
}

#[cfg(test)]
mod tests;
