//! Transports where one ordered channel carries everything between the
//! server and one client (stdio, legacy HTTP+SSE): no per-request streams,
//! so every frame of every request, the responses and the standalone
//! messages go down one pipe, in the order they were produced.
//!
//! [`drive`] is the whole connection: it hands each decoded body to the
//! engine, runs the requests concurrently on the connection's own task (in
//! arrival order up to their first wait, so a `logging/setLevel` applies to
//! the calls after it), and writes what comes out. When the client's input
//! ends while requests are still running, they get [`EOF_GRACE`] to finish
//! and be answered, as long as someone is still reading the output (a stdio
//! client that closed only its end of the pipe).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::FuturesUnordered;
use futures::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::caller::Caller;
use super::engine::{Accepted, Engine, SessionRef};
use super::handler::Handler;
use super::session::{Downlink, Frame, Session};
use crate::jsonrpc::{Body, DecodeError, Message, Response};

/// Where a single-channel transport's messages go out, encoded.
pub type Outbox = mpsc::UnboundedSender<Arc<str>>;

/// How long requests still running when the input ends may take to finish.
pub const EOF_GRACE: Duration = Duration::from_secs(2);

/// The answers one body's requests produce: one response, or a batch's.
type Running = Pin<Box<dyn Future<Output = Answer> + Send>>;

enum Answer {
    One(Option<Response>),
    Batch(Vec<Response>),
}

/// Serves one client connection until `inbound` ends, writing everything to
/// `outbox`. Returns the session the connection initialized, if any (the
/// caller ends it).
pub async fn drive<H, I>(engine: &Arc<Engine<H>>, inbound: I, outbox: &Outbox) -> Option<Arc<Session<H::State>>>
where
    H: Handler,
    I: Stream<Item = Result<Body, DecodeError>>,
{
    drive_as(engine, inbound, outbox, Caller::anonymous()).await
}

/// [`drive`] for a connection opened by `caller` (legacy HTTP+SSE with
/// authentication): the session it initializes belongs to `caller`.
pub async fn drive_as<H, I>(
    engine: &Arc<Engine<H>>,
    inbound: I,
    outbox: &Outbox,
    caller: Caller,
) -> Option<Arc<Session<H::State>>>
where
    H: Handler,
    I: Stream<Item = Result<Body, DecodeError>>,
{
    let mut inbound = std::pin::pin!(inbound);
    let mut session: Option<Arc<Session<H::State>>> = None;
    let (downlink, mut frames) = Downlink::channel();
    let (standalone_tx, mut standalone) = mpsc::unbounded_channel::<super::replay::Event>();
    let mut running: FuturesUnordered<Running> = FuturesUnordered::new();
    // Set when the input ended with requests still running.
    let mut ending: Option<Instant> = None;
    loop {
        tokio::select! {
            biased;
            Some(frame) = frames.recv() => write_frame(outbox, frame),
            Some(event) = standalone.recv() => send_encoded(outbox, event.data),
            Some(answer) = running.next() => {
                // What the request sent before answering goes out first.
                while let Ok(frame) = frames.try_recv() {
                    write_frame(outbox, frame);
                }
                match answer {
                    Answer::One(Some(response)) => send(outbox, &Message::Response(response)),
                    Answer::One(None) => {}
                    Answer::Batch(responses) => send_batch(outbox, responses),
                }
            }
            () = tokio::time::sleep_until(ending.unwrap_or_else(Instant::now)), if ending.is_some() => break,
            () = outbox.closed(), if ending.is_some() => break,
            body = inbound.next(), if ending.is_none() => {
                let Some(body) = body else {
                    if running.is_empty() || outbox.is_closed() {
                        break;
                    }
                    ending = Some(Instant::now() + EOF_GRACE);
                    continue;
                };
                let reference = match &session {
                    Some(s) => {
                        // Any traffic keeps the session alive.
                        engine.store().touch(s.id());
                        SessionRef::Live(s.clone())
                    }
                    None => SessionRef::Unbound,
                };
                match engine.accept_as(reference, body, &caller).await {
                    Accepted::Answered { responses, batch: true, .. } if !responses.is_empty() => {
                        send_batch(outbox, responses)
                    }
                    Accepted::Answered { responses, .. } => {
                        responses.into_iter().for_each(|r| send(outbox, &Message::Response(r)))
                    }
                    Accepted::Initialized { session: s, response } => {
                        send(outbox, &Message::Response(response));
                        s.replay().attach_standalone(standalone_tx.clone());
                        session = Some(s);
                    }
                    Accepted::Run { session: s, mut requests, answered, batch } => {
                        let (engine, downlink) = (engine.clone(), downlink.clone());
                        let work: Running = if batch {
                            Box::pin(async move {
                                let runs = requests.into_iter().map(|r| engine.run(&s, r, downlink.clone()));
                                let done = futures::future::join_all(runs).await;
                                Answer::Batch(answered.into_iter().chain(done.into_iter().flatten()).collect())
                            })
                        } else {
                            let request = requests.remove(0);
                            Box::pin(async move { Answer::One(engine.run(&s, request, downlink).await) })
                        };
                        running.push(work);
                    }
                }
            }
        }
        if ending.is_some() && running.is_empty() {
            break;
        }
    }
    session
}

fn write_frame(outbox: &Outbox, frame: Frame) {
    match frame {
        Frame::Message(m) => send(outbox, &m),
        Frame::Final(r) => send(outbox, &Message::Response(r)),
        Frame::Stream | Frame::End => {}
    }
}

fn send(outbox: &Outbox, message: &Message) {
    send_encoded(outbox, Arc::from(message.encode()));
}

fn send_batch(outbox: &Outbox, responses: Vec<Response>) {
    if responses.is_empty() {
        return;
    }
    let messages: Vec<Message> = responses.into_iter().map(Message::Response).collect();
    match serde_json::to_string(&messages) {
        Ok(text) => send_encoded(outbox, Arc::from(text)),
        Err(e) => tracing::error!(error = %e, "cannot encode a batch answer"),
    }
}

fn send_encoded(outbox: &Outbox, line: Arc<str>) {
    // A closed outbox means the client is gone; there is no one to tell.
    let _ = outbox.send(line);
}
