//! `POST`: one JSON-RPC message (or a 2025-03-26 batch) from the client.

use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use serde_json::Value;

use super::{EmptyResponse, HttpState, accepts, reply, session_of, stream};
use crate::jsonrpc::{DecodeError, ErrorObject, Message, Response as RpcResponse, codes};
use crate::protocol;
use crate::server::engine::{Engine, sessionless_error};
use crate::server::handler::Handler;
use crate::server::session::{Downlink, Frame, Session};

/// How long answers the application wants streamed ([`Frame::Stream`]) may
/// take and still go out as one JSON response: a fast tool call then costs
/// one write and no replay bookkeeping; a slower one is streamed (and
/// resumable) from then on, its priming event this much later.
const STREAM_GRACE: std::time::Duration = std::time::Duration::from_millis(50);

/// What the body held.
enum Body {
    Single(Message),
    /// Elements in order; invalid ones already turned into error responses.
    Batch(Vec<Result<Message, RpcResponse>>),
}

pub async fn handle<H: Handler>(state: Arc<HttpState<H>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    if !(accepts(headers, "application/json") && accepts(headers, "text/event-stream")) {
        return reply::error(
            StatusCode::NOT_ACCEPTABLE,
            codes::SERVER_ERROR,
            "Not Acceptable: Accept must list both application/json and text/event-stream",
        );
    }
    let json_body = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("application/json"));
    if !json_body {
        return reply::error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            codes::SERVER_ERROR,
            "Unsupported Media Type: Content-Type must be application/json",
        );
    }
    let bytes = match axum::body::to_bytes(body, state.options.max_body_bytes).await {
        Ok(b) => b,
        Err(_) => {
            return reply::error(
                StatusCode::PAYLOAD_TOO_LARGE,
                codes::INVALID_REQUEST,
                &format!("Payload Too Large: the limit is {} bytes", state.options.max_body_bytes),
            );
        }
    };
    let body = match parse(&bytes) {
        Ok(b) => b,
        Err(e) => return reply::json(StatusCode::BAD_REQUEST, &Message::Response(e.to_response())),
    };

    if let Body::Single(Message::Request(req)) = &body
        && req.method == crate::protocol::method::INITIALIZE
    {
        // Re-initializing a live session is a client bug (the TypeScript SDK
        // answers the same way); a stale id just gets a new session.
        let live = headers
            .get(protocol::header::SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .and_then(|id| state.engine.store().get(id));
        if live.is_some() {
            let e = ErrorObject::new(codes::INVALID_REQUEST, "Invalid Request: the session is already initialized");
            return reply::json(
                StatusCode::BAD_REQUEST,
                &Message::Response(RpcResponse::error(Some(req.id.clone()), e)),
            );
        }
        return initialize(&state, req.clone()).await;
    }
    let session = match session_of(&state, headers) {
        Ok(s) => s,
        Err(r) => {
            // A request without a session (e.g. the 2026-era `server/discover`
            // probe) gets a JSON-RPC error in the 400 body, which is what tells
            // dual-era clients to fall back to `initialize`.
            if let (Body::Single(Message::Request(req)), None) = (&body, headers.get(protocol::header::SESSION_ID)) {
                return reply::json(
                    StatusCode::BAD_REQUEST,
                    &Message::Response(sessionless_error(Some(req.id.clone()), &req.method)),
                );
            }
            return r.into_response();
        }
    };

    let (messages, mut answers, batch) = match body {
        Body::Single(m) => (vec![m], Vec::new(), false),
        Body::Batch(items) => {
            if !session.version().allows_batches() {
                return reply::error(
                    StatusCode::BAD_REQUEST,
                    codes::INVALID_REQUEST,
                    &format!(
                        "Invalid Request: JSON-RPC batches are not part of protocol version {}",
                        session.version()
                    ),
                );
            }
            let mut messages = Vec::new();
            let mut answers = Vec::new();
            for item in items {
                match item {
                    Ok(m) if Engine::<H>::is_initialize(&m) => {
                        let id = match &m {
                            Message::Request(r) => Some(r.id.clone()),
                            _ => None,
                        };
                        answers.push(RpcResponse::error(
                            id,
                            ErrorObject::new(codes::INVALID_REQUEST, "initialize must not be part of a batch"),
                        ));
                    }
                    Ok(m) => messages.push(m),
                    Err(resp) => answers.push(resp),
                }
            }
            (messages, answers, true)
        }
    };

    let (requests, others): (Vec<_>, Vec<_>) = messages.into_iter().partition(|m| matches!(m, Message::Request(_)));
    for m in others {
        // Notifications and responses need no stream; the engine consumes them.
        let (downlink, _) = Downlink::channel();
        state.engine.handle(&session, m, downlink).await;
    }
    if requests.is_empty() {
        if answers.is_empty() {
            return StatusCode::ACCEPTED.into_response_empty();
        }
        return reply::json(StatusCode::OK, &answers.into_iter().map(Message::Response).collect::<Vec<_>>());
    }
    respond(&state, session, requests, &mut answers, batch).await
}

/// Runs the requests on their own task and answers with JSON if every
/// response is ready before anything else has to be sent (and, for work the
/// application wants streamed, within [`STREAM_GRACE`]), else with SSE.
async fn respond<H: Handler>(
    state: &Arc<HttpState<H>>,
    session: Arc<Session<H::State>>,
    requests: Vec<Message>,
    answers: &mut Vec<RpcResponse>,
    batch: bool,
) -> Response {
    let expected = requests.len() + answers.len();
    let (downlink, mut rx) = Downlink::channel();
    let engine = state.engine.clone();
    let stream_session = session.clone();
    tokio::spawn(async move {
        let mut requests = requests;
        if requests.len() == 1
            && let Some(m) = requests.pop()
        {
            // The usual case, without join_all's bookkeeping. Boxed, so the
            // task stays small (spawning moves it, and the gateway's request
            // future is large).
            if let Some(resp) = Box::pin(engine.handle(&session, m, downlink.clone())).await {
                downlink.finish(resp);
            }
        } else {
            let work = requests.into_iter().map(|m| {
                let (engine, session, downlink) = (engine.clone(), session.clone(), downlink.clone());
                async move {
                    if let Some(resp) = engine.handle(&session, m, downlink.clone()).await {
                        downlink.finish(resp);
                    }
                }
            });
            futures::future::join_all(work).await;
        }
        downlink.end();
    });

    let mut finals: Vec<RpcResponse> = std::mem::take(answers);
    // Set once the application asked for a stream: how long the answers
    // may still take to go out as plain JSON.
    let mut grace: Option<tokio::time::Instant> = None;
    loop {
        let frame = match grace {
            None => rx.recv().await,
            Some(until) => match tokio::time::timeout_at(until, rx.recv()).await {
                Ok(frame) => frame,
                Err(_) => {
                    let mut prelude: Vec<Frame> = finals.into_iter().map(Frame::Final).collect();
                    prelude.push(Frame::Stream);
                    return stream::request_stream(stream_session, prelude, rx, state.options.keep_alive);
                }
            },
        };
        match frame {
            Some(Frame::Final(r)) => {
                finals.push(r);
                if finals.len() == expected {
                    return json_answer(finals, batch);
                }
            }
            // Work that may take a while (a forwarded tool call): streamed,
            // and resumable, unless its answer is ready within the grace
            // period; then one JSON answer is cheaper for both sides.
            Some(Frame::Stream) => {
                grace.get_or_insert_with(|| tokio::time::Instant::now() + STREAM_GRACE);
            }
            // Something must go out before the answer: answer with SSE.
            Some(frame @ Frame::Message(_)) => {
                let mut prelude: Vec<Frame> = finals.into_iter().map(Frame::Final).collect();
                prelude.push(frame);
                return stream::request_stream(stream_session, prelude, rx, state.options.keep_alive);
            }
            Some(Frame::End) | None => {
                if finals.is_empty() {
                    // Every request was cancelled by the client: nothing to answer.
                    return stream::request_stream(stream_session, vec![Frame::End], rx, state.options.keep_alive);
                }
                return json_answer(finals, batch);
            }
        }
    }
}

fn json_answer(mut finals: Vec<RpcResponse>, batch: bool) -> Response {
    if let ([RpcResponse { id: Some(id), outcome: crate::jsonrpc::Outcome::Prepared(raw) }], false) =
        (finals.as_slice(), batch)
    {
        return reply::prepared(id, raw.clone());
    }
    // Room for the prepared results plus their envelopes.
    let capacity = finals
        .iter()
        .map(|r| match &r.outcome {
            crate::jsonrpc::Outcome::Prepared(raw) => raw.get().len() + 64,
            _ => 256,
        })
        .sum();
    if batch {
        reply::json_sized(StatusCode::OK, &finals.into_iter().map(Message::Response).collect::<Vec<_>>(), capacity)
    } else {
        match finals.pop() {
            Some(r) => reply::json_sized(StatusCode::OK, &Message::Response(r), capacity),
            None => StatusCode::ACCEPTED.into_response_empty(),
        }
    }
}

async fn initialize<H: Handler>(state: &Arc<HttpState<H>>, request: crate::jsonrpc::Request) -> Response {
    let (session, response) = state.engine.initialize(request).await;
    let mut r = reply::json(StatusCode::OK, &Message::Response(response));
    if let Some(session) = session
        && let Ok(v) = HeaderValue::from_str(session.id())
    {
        r.headers_mut().insert(protocol::header::SESSION_ID, v);
    }
    r
}

fn parse(bytes: &[u8]) -> Result<Body, DecodeError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'[') {
        return Message::decode(bytes).map(Body::Single);
    }
    let items: Vec<Value> = serde_json::from_slice(bytes).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            DecodeError::Parse(e)
        } else {
            DecodeError::Invalid { id: None, reason: e.to_string() }
        }
    })?;
    if items.is_empty() {
        return Err(DecodeError::Invalid { id: None, reason: "an empty batch".into() });
    }
    Ok(Body::Batch(items.into_iter().map(|v| Message::from_value(v).map_err(|e| e.to_response())).collect()))
}
