//! SSE streams: the per-request stream of a POST, and the standalone `GET`
//! stream for messages that belong to no request.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt, stream};
use http::{HeaderMap, StatusCode};
use tokio::sync::mpsc;
use tokio_stream::wrappers::{IntervalStream, UnboundedReceiverStream};

use super::{HttpState, accepts, reply, session_of};
use crate::jsonrpc::{Message, codes};
use crate::server::handler::Handler;
use crate::server::session::Frame;

fn event(message: &Message) -> Result<Event, Infallible> {
    Ok(Event::default().data(message.encode()))
}

/// The SSE stream answering a POST: `prelude` first, then frames until the
/// engine marks the end of the POST's requests.
pub fn request_stream(prelude: Vec<Frame>, rx: mpsc::UnboundedReceiver<Frame>, keep_alive: Duration) -> Response {
    let frames = stream::iter(prelude).chain(UnboundedReceiverStream::new(rx));
    let events = frames.take_while(|f| std::future::ready(!matches!(f, Frame::End))).filter_map(|f| {
        std::future::ready(match f {
            Frame::Message(m) => Some(event(&m)),
            Frame::Final(r) => Some(event(&Message::Response(r))),
            Frame::End => None,
        })
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(keep_alive)).into_response()
}

/// `GET`: opens the session's standalone stream. One at a time (409 for a
/// second one, as the TypeScript SDK does).
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
    let Some(rx) = session.attach_stream() else {
        return reply::error(
            StatusCode::CONFLICT,
            codes::SERVER_ERROR,
            "Conflict: a stream is already open for this session",
        );
    };
    let messages = UnboundedReceiverStream::new(rx).map(|m| event(&m));
    // Keep-alive ticks double as activity, so a client listening on its
    // stream is not expired as idle.
    let store = Arc::downgrade(state.engine.store());
    let id = session.id().to_owned();
    let closed = session.closed().clone();
    let mut tick = tokio::time::interval(state.options.keep_alive);
    tick.reset();
    let ticks = IntervalStream::new(tick).map(move |_| {
        if let Some(store) = store.upgrade() {
            store.get(&id);
        }
        Ok(Event::default().comment(""))
    });
    let events = stream::select(messages, ticks).take_until(async move { closed.cancelled().await });
    sse(events)
}

fn sse(events: impl Stream<Item = Result<Event, Infallible>> + Send + 'static) -> Response {
    Sse::new(events).into_response()
}
