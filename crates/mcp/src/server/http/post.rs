//! `POST`: one JSON-RPC message (or a 2025-03-26 batch) from the client.

use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};

use super::grace::STREAM_GRACE;
use super::{EmptyResponse, HttpState, accepts_all, check_version_header, reply, session_id, stream};
use crate::jsonrpc::{Body, Message, Response as RpcResponse, codes};
use crate::protocol::{self, method};
use crate::server::caller::Caller;
use crate::server::engine::{Accepted, Refusal, SessionRef};
use crate::server::handler::{Handler, TraceHeaders};
use crate::server::session::{Downlink, Frame, Session};

pub async fn handle<H: Handler>(state: Arc<HttpState<H>>, request: Request, caller: Caller) -> Response {
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    if !accepts_all(headers, &["application/json", "text/event-stream"]) {
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
    let bytes =
        match super::body::read(body, headers, state.options.max_body_bytes, state.options.body_read_timeout).await {
            Ok(b) => b,
            Err(e) => return e.into_response(),
        };
    let body = match super::modern::classify(Body::decode(&bytes), headers) {
        super::modern::Era::Legacy(body) => body,
        super::modern::Era::Modern(request) => return super::modern::serve(state, request, headers, caller).await,
        super::modern::Era::Answered(response) => return response,
    };
    let session = match body {
        // `initialize` names no session (a stale id just gets a new one),
        // unless it names a live one: re-initializing is a client bug.
        Ok(Body::Single(Message::Request(ref r))) if r.method == method::INITIALIZE => {
            match session_id(headers).and_then(|id| state.engine.live_session(id, &caller)) {
                Some(live) => SessionRef::Live(live),
                None => SessionRef::Missing,
            }
        }
        // A malformed body is answered as such, whatever session it names.
        Err(_) => SessionRef::Missing,
        Ok(_) => {
            let id = session_id(headers);
            // A request that names a session must speak a revision toolgate
            // knows; one without a session is refused by the engine (with its
            // id, which a 2026-era probe needs to fall back).
            if id.is_some()
                && let Err(r) = check_version_header(headers)
            {
                return r.into_response();
            }
            state.engine.find_session(id, &caller).await
        }
    };
    match state.engine.accept_as(session, body, &caller).await {
        Accepted::Answered { responses, refusal, batch } => answered(responses, refusal, batch),
        Accepted::Initialized { session, response } => {
            let mut r = reply::json(StatusCode::OK, &Message::Response(response));
            if let Ok(v) = HeaderValue::from_str(session.id()) {
                r.headers_mut().insert(protocol::header::SESSION_ID, v);
            }
            r
        }
        Accepted::Run { session, requests, mut answered, batch } => {
            respond(&state, session, requests, &mut answered, batch, headers).await
        }
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

/// Runs the requests and answers with JSON if every response is ready
/// before anything else has to be sent (and, for work the application wants
/// streamed, within [`STREAM_GRACE`]), else with SSE.
///
/// The requests run in this task while the answer may still be one JSON
/// response: a fast call then never leaves the connection's task (a task of
/// its own cost a spawn and a hand-off of the answer back, often a wake-up
/// of another worker thread). Once the answer is streamed, or if the client
/// goes away first, the requests move to a task of their own ([`Work`]),
/// so they finish whatever happens to this response.
async fn respond<H: Handler>(
    state: &Arc<HttpState<H>>,
    session: Arc<Session<H::State>>,
    requests: Vec<crate::jsonrpc::Request>,
    answers: &mut Vec<RpcResponse>,
    batch: bool,
    headers: &http::HeaderMap,
) -> Response {
    let expected = requests.len() + answers.len();
    // The client's trace context, for a handler that traces requests.
    let remote = TraceHeaders::from_headers(headers);
    let (downlink, mut rx) = Downlink::with_capacity(state.engine.store().limits().stream_buffer);
    let engine = state.engine.clone();
    let stream_session = session.clone();
    let mut work = Work::new(async move {
        let mut requests = requests;
        if requests.len() == 1
            && let Some(r) = requests.pop()
        {
            // The usual case, without join_all's bookkeeping.
            if let Some(resp) = engine.run_traced(&session, r, downlink.clone(), remote.as_ref()).await {
                downlink.finish(resp);
            }
        } else {
            let work = requests.into_iter().map(|r| {
                let (engine, session, downlink) = (engine.clone(), session.clone(), downlink.clone());
                let remote = remote.clone();
                async move {
                    if let Some(resp) = engine.run_traced(&session, r, downlink.clone(), remote.as_ref()).await {
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
        let next = std::future::poll_fn(|cx| {
            work.poll(cx);
            rx.poll_recv(cx)
        });
        let frame = match grace {
            None => next.await,
            // The grace ends on the server's coarse clock, not on a timer of
            // this request's own (see `grace`).
            Some(until) => match select_first(next, state.grace.until(until)).await {
                Some(frame) => frame,
                None => {
                    work.detach();
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
                work.detach();
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

/// The frame `next` yields, or `None` if `ends` resolves first.
async fn select_first<F: std::future::Future>(
    next: F,
    ends: impl std::future::Future<Output = ()>,
) -> Option<F::Output> {
    tokio::select! {
        biased;
        frame = next => Some(frame),
        () = ends => None,
    }
}

/// A POST's requests, run in the connection's task until they must outlive
/// the answer being built: then (or when dropped unfinished, as when the
/// client goes away) they move to a task of their own.
struct Work(Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>>);

impl Work {
    fn new(work: impl std::future::Future<Output = ()> + Send + 'static) -> Self {
        use futures::FutureExt as _;
        // A panic ends the requests, as it would end their own task, not
        // the connection: the answer sees the downlink gone.
        Self(Some(Box::pin(std::panic::AssertUnwindSafe(work).catch_unwind().map(|_| ()))))
    }

    /// Drives the requests here, until they are done or detached.
    fn poll(&mut self, cx: &mut std::task::Context<'_>) {
        if let Some(work) = self.0.as_mut()
            && work.as_mut().poll(cx).is_ready()
        {
            self.0 = None;
        }
    }

    /// Moves the requests to a task of their own.
    fn detach(&mut self) {
        if let Some(work) = self.0.take() {
            // A plain spawn: the request span starts inside the engine, and
            // looking up the current span here would cost every POST for nothing.
            #[allow(clippy::disallowed_methods)]
            tokio::spawn(work);
        }
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        // Outside the runtime (at exit) there is nowhere to finish them.
        if tokio::runtime::Handle::try_current().is_ok() {
            self.detach();
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
