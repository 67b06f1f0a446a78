//! The answer to a `POST`'s requests, for both eras: one JSON response when
//! every response is ready before anything else has to be sent (and, for
//! work the application wants streamed, within [`STREAM_GRACE`]), else an
//! SSE stream. Only how a stream goes out differs ([`Streamed`]): in a
//! session it is resumable, with event ids; a sessionless 2026-07-28
//! request's has no ids, and closing it cancels the request.
//!
//! The requests run in this task while the answer may still be one JSON
//! response: a fast call then never leaves the connection's task (a task of
//! its own cost a spawn and a hand-off of the answer back, often a wake-up
//! of another worker thread). Once the answer is streamed, or if the client
//! goes away first, the requests move to a task of their own ([`Work`]),
//! so they finish whatever happens to this response (unless the client's
//! going away cancels them: sessionless requests).

use std::convert::Infallible;
use std::sync::Arc;

use axum::response::Response;
use futures::{StreamExt as _, stream};
use http::{HeaderValue, StatusCode};
use sse_stream::Sse;

use super::grace::STREAM_GRACE;
use super::reply::{Reply, boxed};
use super::{EmptyResponse, HttpState, reply};
use crate::jsonrpc::{Message, Outcome, Request, Response as RpcResponse};
use crate::protocol::modern;
use crate::server::handler::{Handler, TraceHeaders};
use crate::server::session::{Downlink, Frame, Frames, Session};

/// How an answer that has to be streamed goes out.
pub(super) enum Streamed<S: Send + Sync + 'static> {
    /// In a session: resumable ([`super::stream::request_stream`]).
    Session(Arc<Session<S>>),
    /// A sessionless request on its transient session: plain SSE, and the
    /// client's going away before the response cancels the request.
    Sessionless(CancelOnDrop<S>),
}

impl<S: Send + Sync + 'static> Streamed<S> {
    /// The stream: `prelude`, then the frames up to the requests' end.
    fn stream(self, prelude: Vec<Frame>, rx: Frames, keep_alive: std::time::Duration) -> Reply {
        boxed(match self {
            Streamed::Session(session) => super::stream::request_stream(session, prelude, rx, keep_alive),
            Streamed::Sessionless(guard) => sessionless_sse(prelude, rx, guard, keep_alive),
        })
    }

    /// The JSON answer of the responses (`batch`: as an array).
    fn json(self, finals: Vec<RpcResponse>, batch: bool) -> Reply {
        let status = self.answered(finals.first());
        json_answer(finals, batch, status)
    }

    /// The JSON answer of a POST's one request: no list is made for it.
    fn json_one(self, answer: RpcResponse) -> Reply {
        let status = self.answered(Some(&answer));
        json_single(answer, status)
    }

    /// The HTTP status of a JSON answer whose first response is `first`. A
    /// sessionless request is answered: its client's going away no longer
    /// cancels it.
    fn answered(self, first: Option<&RpcResponse>) -> StatusCode {
        match self {
            Streamed::Session(_) => StatusCode::OK,
            Streamed::Sessionless(mut guard) => {
                guard.disarm();
                // A modern error answers with the HTTP status its code calls for.
                match first.and_then(|r| r.outcome.error_code()) {
                    Some(code) => StatusCode::from_u16(modern::http_status(code)).unwrap_or(StatusCode::OK),
                    None => StatusCode::OK,
                }
            }
        }
    }

    /// The answer when every request was cancelled before it answered.
    fn cancelled(self, rx: Frames, keep_alive: std::time::Duration) -> Reply {
        boxed(match self {
            Streamed::Session(session) => super::stream::request_stream(session, vec![Frame::End], rx, keep_alive),
            Streamed::Sessionless(mut guard) => {
                guard.disarm();
                StatusCode::ACCEPTED.into_response_empty()
            }
        })
    }
}

/// Cancels the request of a transient session unless disarmed: dropped with
/// the response (the client went away), it is the client's cancellation.
pub(super) struct CancelOnDrop<S: Send + Sync + 'static>(Option<Arc<Session<S>>>);

impl<S: Send + Sync + 'static> CancelOnDrop<S> {
    /// Cancels `session`'s request if dropped armed.
    pub(super) fn new(session: Arc<Session<S>>) -> Self {
        Self(Some(session))
    }

    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl<S: Send + Sync + 'static> Drop for CancelOnDrop<S> {
    fn drop(&mut self) {
        if let Some(session) = self.0.take() {
            tracing::debug!(session = session.id(), "the client closed a modern request's stream: cancelled");
            session.close();
        }
    }
}

/// Runs `requests` on `session` and answers them, with `answers` (the
/// responses the engine already has) first: see the module doc.
pub(super) async fn respond<H: Handler>(
    state: &Arc<HttpState<H>>,
    session: Arc<Session<H::State>>,
    mut requests: Vec<Request>,
    answers: Vec<RpcResponse>,
    batch: bool,
    remote: Option<TraceHeaders>,
    streamed: Streamed<H::State>,
) -> Reply {
    let expected = requests.len() + answers.len();
    let (downlink, mut rx) = Downlink::with_capacity(state.engine.store().limits().stream_buffer);
    let engine = state.engine.clone();
    // The usual POST, one request not in a batch: its answer is taken from
    // the work as it finishes (not sent through the downlink and read back),
    // unless it went on to run elsewhere (see `Work`).
    let mut work = if expected == 1
        && !batch
        && let Some(r) = requests.pop()
    {
        let late = downlink.clone();
        Work::new(Some(late), move || async move { engine.run_traced(&session, r, downlink, remote.as_ref()).await })
    } else {
        Work::new(None, move || async move {
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
            downlink.end();
            None
        })
    };

    let keep_alive = state.options.keep_alive;
    let mut finals = answers;
    // The usual POST, one request not in a batch, is answered without a
    // list (`json_one`).
    if expected > 1 || batch {
        finals.reserve_exact(expected - finals.len());
    }
    // Set once the application asked for a stream: how long the answers
    // may still take to go out as plain JSON.
    let mut grace: Option<tokio::time::Instant> = None;
    // The work was polled in this very turn, and waits: polling it again
    // would only walk the whole request down to what it waits on.
    let mut just_polled = false;
    loop {
        let next = std::future::poll_fn(|cx| {
            if !std::mem::take(&mut just_polled)
                && let Some(answer) = work.poll(cx, &rx)
            {
                return std::task::Poll::Ready(Next::Answer(answer));
            }
            // Read in the same wake-up as the work that asked for it.
            if grace.is_none() && rx.take_stream_hint() {
                return std::task::Poll::Ready(Next::Stream);
            }
            rx.poll_recv(cx).map(Next::Frame)
        });
        let next = match grace {
            None => next.await,
            // The grace ends on the server's coarse clock, not on a timer of
            // this request's own (see `grace`).
            Some(until) => match select_first(next, state.grace.until(until)).await {
                Some(next) => next,
                None => {
                    work.detach();
                    let prelude: Vec<Frame> = finals.into_iter().map(Frame::Final).collect();
                    return streamed.stream(prelude, rx, keep_alive);
                }
            },
        };
        let frame = match next {
            // Work that may take a while (a forwarded tool call): streamed
            // (in a session, resumably), unless its answer is ready within
            // the grace period; then one JSON answer is cheaper for both sides.
            Next::Stream => {
                grace = Some(tokio::time::Instant::now() + STREAM_GRACE);
                just_polled = true;
                continue;
            }
            Next::Frame(frame) => frame,
            // Nothing went out before it: one JSON answer.
            Next::Answer(answer) => return streamed.json_one(answer),
        };
        match frame {
            Some(Frame::Final(r)) => {
                if expected == 1 && !batch {
                    return streamed.json_one(r);
                }
                finals.push(r);
                if finals.len() == expected {
                    return streamed.json(finals, batch);
                }
            }
            // Something must go out before the answer: answer with SSE.
            Some(frame @ Frame::Message(_)) => {
                work.detach();
                let mut prelude: Vec<Frame> = finals.into_iter().map(Frame::Final).collect();
                prelude.push(frame);
                return streamed.stream(prelude, rx, keep_alive);
            }
            Some(Frame::End) | None => {
                if finals.is_empty() {
                    // Every request was cancelled by the client: nothing to answer.
                    return streamed.cancelled(rx, keep_alive);
                }
                return streamed.json(finals, batch);
            }
        }
    }
}

/// What the answer loop wakes up to.
enum Next {
    /// The application asked for a streamed answer.
    Stream,
    /// A frame of the requests (`None`: every downlink is gone).
    Frame(Option<Frame>),
    /// The answer of a POST's one request, taken from its work.
    Answer(RpcResponse),
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
///
/// The work of a POST's one request yields its answer, which the answer
/// loop takes as it finishes ([`Work::poll`]). `late`, that request's
/// downlink, carries the answer (and then the end) when it cannot be taken
/// so: the work was detached, or frames it sent wait to go out first, or
/// there is no answer (the request was cancelled). The work of several
/// requests sends their answers and the end itself, and yields none.
struct Work {
    running: Option<std::pin::Pin<Box<dyn std::future::Future<Output = Option<RpcResponse>> + Send>>>,
    late: Option<Downlink>,
}

impl Work {
    /// The requests `make` starts, made in their box (see [`crate::boxed`]).
    fn new<F: std::future::Future<Output = Option<RpcResponse>> + Send + 'static>(
        late: Option<Downlink>,
        make: impl FnOnce() -> F,
    ) -> Self {
        use futures::FutureExt as _;
        // A panic ends the requests, as it would end their own task, not
        // the connection: the answer sees them end unanswered.
        let running =
            crate::boxed::pinned(|| std::panic::AssertUnwindSafe(make()).catch_unwind().map(|r| r.ok().flatten()));
        Self { running: Some(running), late }
    }

    /// Drives the requests here, until they are done or detached. The
    /// answer of a POST's one request is returned as it finishes, unless
    /// frames it sent wait in `rx` to go out before it (then it follows
    /// them down the downlink).
    fn poll(&mut self, cx: &mut std::task::Context<'_>, rx: &Frames) -> Option<RpcResponse> {
        let running = self.running.as_mut()?;
        let std::task::Poll::Ready(answer) = running.as_mut().poll(cx) else { return None };
        self.running = None;
        match (answer, self.late.take()) {
            (Some(answer), Some(_)) if rx.is_empty() => Some(answer),
            (answer, Some(late)) => {
                send_late(late, answer);
                None
            }
            (_, None) => None,
        }
    }

    /// Moves the requests to a task of their own.
    fn detach(&mut self) {
        if let Some(running) = self.running.take() {
            let late = self.late.take();
            // A plain spawn: the request span starts inside the engine, and
            // looking up the current span here would cost every POST for nothing.
            #[allow(clippy::disallowed_methods)]
            tokio::spawn(async move {
                let answer = running.await;
                if let Some(late) = late {
                    send_late(late, answer);
                }
            });
        }
    }
}

/// The one request's answer (if it has one), then the end, down its
/// downlink.
fn send_late(late: Downlink, answer: Option<RpcResponse>) {
    if let Some(answer) = answer {
        late.finish(answer);
    }
    late.end();
}

impl Drop for Work {
    fn drop(&mut self) {
        // Outside the runtime (at exit) there is nowhere to finish them.
        if tokio::runtime::Handle::try_current().is_ok() {
            self.detach();
        }
    }
}

fn json_answer(mut finals: Vec<RpcResponse>, batch: bool, status: StatusCode) -> Reply {
    if !batch {
        // Not a batch: one message, so at most one response.
        return match finals.pop() {
            Some(r) => json_single(r, status),
            None => boxed(StatusCode::ACCEPTED.into_response_empty()),
        };
    }
    let capacity = finals.iter().map(room_for).sum();
    boxed(reply::json_sized(status, &finals.into_iter().map(Message::Response).collect::<Vec<_>>(), capacity))
}

/// The JSON answer of one response outside a batch: a prepared result is
/// spliced into its envelope as text.
fn json_single(answer: RpcResponse, status: StatusCode) -> Reply {
    match answer {
        RpcResponse { id: Some(id), outcome: Outcome::Prepared(raw) } => reply::prepared(&id, raw),
        other => {
            let capacity = room_for(&other);
            boxed(reply::json_sized(status, &Message::Response(other), capacity))
        }
    }
}

/// Room for a response's text: a prepared result plus its envelope.
fn room_for(response: &RpcResponse) -> usize {
    match &response.outcome {
        Outcome::Prepared(raw) => raw.get().len() + 64,
        _ => 256,
    }
}

/// The SSE answer of a sessionless request: `prelude`, then its frames up to
/// and including the response. No ids (modern streams do not resume);
/// dropping the body before the response cancels the request.
fn sessionless_sse<S: Send + Sync + 'static>(
    prelude: Vec<Frame>,
    rx: Frames,
    guard: CancelOnDrop<S>,
    keep_alive: std::time::Duration,
) -> Response {
    let frames = stream::unfold((prelude.into_iter(), rx, Some(guard)), |(mut prelude, mut rx, guard)| async move {
        let mut guard = guard?;
        let frame = match prelude.next() {
            Some(frame) => Some(frame),
            None => rx.recv().await,
        };
        match frame {
            Some(Frame::Message(m)) => Some((m, (prelude, rx, Some(guard)))),
            Some(Frame::Final(r)) => {
                guard.disarm();
                Some((Message::Response(r), (prelude, rx, None)))
            }
            Some(Frame::End) | None => {
                guard.disarm();
                None
            }
        }
    });
    let mut response = super::stream::sse(frames.map(event), keep_alive);
    response.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

fn event(message: Message) -> Result<Sse, Infallible> {
    Ok(Sse::default().data(message.encode()))
}

#[cfg(test)]
mod tests;
