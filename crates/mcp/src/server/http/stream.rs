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

use super::{HttpState, accepts, reply, session_of};
use crate::jsonrpc::{Message, codes};
use crate::protocol::{self, Version};
use crate::server::caller::Caller;
use crate::server::handler::Handler;
use crate::server::replay::{self, event_id};
use crate::server::session::{Frame, Frames, Session};

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
/// requests until the engine marks their end. Every event is kept in the
/// session's replay buffer, so it can be resumed; the response body encodes
/// and sends the frames itself (no task in between), and if the client's
/// connection breaks, a task takes over and buffers the rest.
pub fn request_stream<S: Send + Sync + 'static>(
    session: Arc<Session<S>>,
    prelude: Vec<Frame>,
    rx: Frames,
    keep_alive: Duration,
) -> Response {
    let stream = session.replay().open();
    let first = priming(stream, session.version());
    let frames = RequestFrames { session, stream, prelude: prelude.into_iter(), rx: Some(rx) };
    sse(stream::iter(first).chain(frames), keep_alive)
}

/// The events of a request stream, read straight from the requests' frames.
struct RequestFrames<S: Send + Sync + 'static> {
    session: Arc<Session<S>>,
    stream: u64,
    prelude: std::vec::IntoIter<Frame>,
    /// `None` once the requests are done.
    rx: Option<Frames>,
}

impl<S: Send + Sync + 'static> Stream for RequestFrames<S> {
    type Item = Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        let frame = match self.prelude.next() {
            Some(frame) => Some(frame),
            None => match self.rx.as_mut() {
                Some(rx) => std::task::ready!(rx.poll_recv(cx)),
                None => return Poll::Ready(None),
            },
        };
        let message = match frame {
            Some(Frame::Message(m)) => m,
            Some(Frame::Final(r)) => Message::Response(r),
            Some(Frame::End) | None => {
                self.rx = None;
                self.session.replay().finish(self.stream);
                return Poll::Ready(None);
            }
        };
        let data: Arc<str> = Arc::from(message.encode());
        let own = self.session.replay().push_own(self.stream, data.clone());
        match own {
            Some(id) => Poll::Ready(Some(Ok(Sse::default().id(id).data(&*data)))),
            // A resumption took the stream over: this response ends, and
            // the rest goes to the new connection (see `Drop`).
            None => Poll::Ready(None),
        }
    }
}

impl<S: Send + Sync + 'static> Drop for RequestFrames<S> {
    /// The response ended before its requests did (the client went away, or
    /// resumed elsewhere): the rest goes through the replay buffer.
    fn drop(&mut self) {
        let Some(mut rx) = self.rx.take() else { return };
        let (session, stream) = (self.session.clone(), self.stream);
        session.replay().detach(stream);
        let prelude: Vec<Frame> = std::mem::take(&mut self.prelude).collect();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        // In a drop, outside any request (the response ended first): what it
        // leaves moves to the replay buffer on whatever runtime is current.
        #[allow(clippy::disallowed_methods)]
        runtime.spawn(async move {
            let mut frames = stream::iter(prelude).chain(stream::poll_fn(move |cx| rx.poll_recv(cx)));
            while let Some(frame) = frames.next().await {
                let message = match frame {
                    Frame::Message(m) => m,
                    Frame::Final(r) => Message::Response(r),
                    Frame::End => break,
                };
                session.replay().push(stream, Arc::from(message.encode()));
            }
            session.replay().finish(stream);
        });
    }
}

/// `GET`: resumes the stream `Last-Event-ID` names, or opens the session's
/// standalone stream (one at a time: 409 for a second, as the TypeScript
/// SDK does).
pub async fn open<H: Handler>(state: Arc<HttpState<H>>, headers: &HeaderMap, caller: &Caller) -> Response {
    if !accepts(headers, "text/event-stream") {
        return reply::error(
            StatusCode::NOT_ACCEPTABLE,
            codes::SERVER_ERROR,
            "Not Acceptable: Accept must list text/event-stream",
        );
    }
    let session = match session_of(&state, headers, caller).await {
        Ok(s) => s,
        Err(r) => return *r,
    };
    // Bounded: a client that reads slowly is let go and resumes (see `replay`).
    let (tx, events) = mpsc::channel(state.engine.store().limits().stream_buffer.max(replay::STREAM_BUFFER));
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
    events: mpsc::Receiver<replay::Event>,
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
