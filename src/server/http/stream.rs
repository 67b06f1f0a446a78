//! SSE streams: the stream answering a POST, the standalone `GET` stream,
//! and resumption of either with `GET` + `Last-Event-ID`.
//!
//! Every event carries an id (`<stream>-<seq>`) and is kept in the session's
//! replay buffer, so a client whose connection broke can pick up where it
//! left off. Clients on 2025-11-25 or later also get a priming event (an id
//! with empty data, and the `retry` delay) first, so they can resume even a
//! stream that has not carried a message yet. Older clients do not: some of
//! them choke on empty data.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use futures::{Stream, StreamExt, stream};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use sse_stream::{KeepAlive, Sse, SseBody, Timer};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;

use super::{HttpState, accepts, reply, session_of};
use crate::jsonrpc::{Message, codes};
use crate::protocol::{self, Version};
use crate::server::handler::Handler;
use crate::server::replay::{self, event_id};
use crate::server::session::{Frame, Session};

/// The reconnection delay announced to clients that may resume.
const RETRY: Duration = Duration::from_millis(1000);

pub(super) type Item = Result<Sse, Infallible>;

fn to_event(e: replay::Event) -> Item {
    Ok(Sse::default().id(e.id).data(&*e.data))
}

/// An id, the retry delay and an empty `data:` line (not no data line: an
/// event without one is never dispatched to the client).
fn priming(stream: u64, version: Version) -> Option<Item> {
    (version >= Version::V2025_11_25).then(|| Ok(Sse::default().id(event_id(stream, 0)).retry_duration(RETRY).data("")))
}

/// The SSE stream answering a POST: `prelude` first, then the frames of its
/// requests until the engine marks their end. The frames go through the
/// session's replay buffer, so the work goes on (and can be resumed) if the
/// client's connection breaks.
pub fn request_stream<S: Send + Sync + 'static>(
    session: Arc<Session<S>>,
    prelude: Vec<Frame>,
    rx: mpsc::UnboundedReceiver<Frame>,
    keep_alive: Duration,
) -> Response {
    let (tx, events) = mpsc::unbounded_channel();
    let stream = session.replay().open(tx);
    let first = priming(stream, session.version());
    tokio::spawn(async move {
        let mut frames = stream::iter(prelude).chain(UnboundedReceiverStream::new(rx));
        while let Some(frame) = frames.next().await {
            let message = match frame {
                Frame::Message(m) => m,
                Frame::Final(r) => Message::Response(r),
                Frame::Stream => continue,
                Frame::End => break,
            };
            session.replay().push(stream, Arc::from(message.encode()));
        }
        session.replay().finish(stream);
    });
    let body = stream::iter(first).chain(UnboundedReceiverStream::new(events).map(to_event));
    sse(body, keep_alive)
}

/// `GET`: resumes the stream `Last-Event-ID` names, or opens the session's
/// standalone stream (one at a time: 409 for a second, as the TypeScript
/// SDK does).
pub fn open<H: Handler>(state: Arc<HttpState<H>>, headers: &HeaderMap) -> Response {
    if !accepts(headers, "text/event-stream") {
        return reply::error(
            StatusCode::NOT_ACCEPTABLE,
            codes::SERVER_ERROR,
            "Not Acceptable: Accept must list text/event-stream",
        );
    }
    let session = match session_of(&state, headers) {
        Ok(s) => s,
        Err(r) => return r.into_response(),
    };
    let (tx, events) = mpsc::unbounded_channel();
    let last_event_id = headers.get(protocol::header::LAST_EVENT_ID).and_then(|v| v.to_str().ok());
    let first = match last_event_id {
        Some(id) => {
            if let Err(e) = session.replay().resume(id, tx) {
                // Not 404: to a client that means its whole session is gone.
                return reply::error(StatusCode::BAD_REQUEST, codes::INVALID_REQUEST, &format!("Bad Request: {e}"));
            }
            None
        }
        None => {
            if !session.replay().attach_standalone(tx) {
                return reply::error(
                    StatusCode::CONFLICT,
                    codes::SERVER_ERROR,
                    "Conflict: a stream is already open for this session",
                );
            }
            priming(replay::STANDALONE, session.version())
        }
    };
    // Keep-alive ticks double as activity, so a client listening on its
    // stream is not expired as idle. The response ends when the stream does
    // (a resumed stream that finished) or the session ends.
    let listener = Listener {
        first,
        events,
        tick: tokio::time::interval_at(
            tokio::time::Instant::now() + state.options.keep_alive,
            state.options.keep_alive,
        ),
        store: Arc::downgrade(state.engine.store()),
        id: session.id().to_owned(),
        closed: session.closed().clone(),
    };
    sse(stream::unfold(listener, Listener::next), state.options.keep_alive)
}

struct Listener<S: Send + Sync + 'static> {
    first: Option<Item>,
    events: mpsc::UnboundedReceiver<replay::Event>,
    tick: tokio::time::Interval,
    store: std::sync::Weak<crate::server::SessionStore<S>>,
    id: String,
    closed: tokio_util::sync::CancellationToken,
}

impl<S: Send + Sync + 'static> Listener<S> {
    async fn next(mut self) -> Option<(Item, Self)> {
        if let Some(first) = self.first.take() {
            return Some((first, self));
        }
        loop {
            tokio::select! {
                event = self.events.recv() => return event.map(|e| (to_event(e), self)),
                _ = self.tick.tick() => {
                    if let Some(store) = self.store.upgrade() {
                        store.get(&self.id);
                    }
                }
                _ = self.closed.cancelled() => return None,
            }
        }
    }
}

/// An SSE response with keep-alive comments.
pub(super) fn sse(events: impl Stream<Item = Item> + Send + 'static, keep_alive: Duration) -> Response {
    let body = SseBody::<_, TokioTimer>::new_keep_alive(events, KeepAlive::new().interval(keep_alive));
    let mut response = Response::new(Body::new(body));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The keep-alive timer of an SSE body, on tokio's clock.
struct TokioTimer(Pin<Box<tokio::time::Sleep>>);

impl Future for TokioTimer {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl Timer for TokioTimer {
    fn reset(mut self: Pin<&mut Self>, instant: std::time::Instant) {
        self.0.as_mut().reset(tokio::time::Instant::from_std(instant));
    }

    fn from_duration(duration: Duration) -> Self {
        TokioTimer(Box::pin(tokio::time::sleep(duration)))
    }
}
