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
//!
//! The output is a bounded queue ([`Outbox`]): when the client reads slowly,
//! writing waits, which stops the driver from reading more input (the
//! client's own backpressure), while the requests' notifications pile up in
//! their bounded [`Downlink`] and the surplus is dropped. Responses are
//! never dropped.
//!
//! A stdio connection ([`Lifetime::Connection`]) may also speak the
//! sessionless 2026-07-28 era: its first request pins the era, as the engine
//! decides ([`era::Pinned`]).
//! Legacy HTTP+SSE is a handshake-era transport only.
//!
//! A connection's session lives as the transport says ([`Lifetime`]): as
//! long as the connection (stdio), or until it is idle too long (legacy
//! HTTP+SSE), when the connection ends with it.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::FuturesUnordered;
use futures::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::caller::Caller;
use super::engine::{Accepted, Engine, Hold, SessionRef, era};
use super::handler::Handler;
use super::replay::{self, Event};
use super::session::{Downlink, Frame, Session};
use crate::jsonrpc::{Body, DecodeError, Id, Message, Response};

/// Where a single-channel transport's messages go out, encoded: a bounded
/// queue, so a slow reader holds the driver back instead of growing memory.
pub type Outbox = mpsc::Sender<Arc<str>>;

/// How long requests still running when the input ends may take to finish.
pub const EOF_GRACE: Duration = Duration::from_secs(2);

/// How long the session of a connection lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// As long as the connection (stdio: the client's pipe); it never
    /// expires when idle.
    Connection,
    /// Until the connection ends or the session is idle for the store's
    /// idle timeout, whichever is first; any traffic, either way, counts as
    /// activity. An expired session ends its connection (legacy HTTP+SSE).
    Idle,
}

/// A connection open before its session exists (legacy HTTP+SSE): the place
/// it holds for that session ([`Engine::hold`]), and until when its
/// `initialize` may come. A connection that has not initialized by then, or
/// whose `initialize` failed (its place is gone), ends: an open connection
/// always stands for a session, counted like one.
pub struct Unopened {
    /// The session's place.
    pub hold: Hold,
    /// When the connection ends if it has not initialized.
    pub deadline: Instant,
}

/// The answers one body's requests produce: one response, or a batch's.
type Running = Pin<Box<dyn Future<Output = Answer> + Send>>;

enum Answer {
    One(Option<Response>),
    Batch(Vec<Response>),
    /// A modern request's answer (`None`: cancelled), by request id.
    Modern(Id, Option<Response>),
}

/// Serves one client connection opened by `caller` until `inbound` ends (or
/// its session does), writing everything to `outbox`: the session it
/// initializes belongs to `caller` (the anonymous caller on stdio; legacy
/// HTTP+SSE with authentication names one). An [`Unopened`] connection
/// holds its session's place from the start. Returns the session the
/// connection initialized, if any (the caller ends it).
pub async fn drive<H, I>(
    engine: &Arc<Engine<H>>,
    inbound: I,
    outbox: &Outbox,
    lifetime: Lifetime,
    caller: Caller,
    unopened: Option<Unopened>,
) -> Option<Arc<Session<H::State>>>
where
    H: Handler,
    I: Stream<Item = Result<Body, DecodeError>>,
{
    let mut inbound = std::pin::pin!(inbound);
    let limits = *engine.store().limits();
    let mut out = Writer { outbox, engine, session: None, lifetime, closed: CancellationToken::new() };
    let (downlink, mut frames) = Downlink::with_capacity(limits.stream_buffer);
    let (mut standalone_tx, mut standalone) = standalone_channel(limits.stream_buffer);
    let mut running: FuturesUnordered<Running> = FuturesUnordered::new();
    // Set when the input ended with requests still running.
    let mut ending: Option<Instant> = None;
    // The connection's era (stdio only) and its modern requests running.
    let mut pinned = if engine.handler().serves_modern() { era::Pinned::default() } else { era::Pinned::Handshake };
    let mut modern: HashMap<Id, Arc<Session<H::State>>> = HashMap::new();
    let initialize_by = unopened.as_ref().map(|u| u.deadline);
    let mut hold = unopened.map(|u| u.hold);
    loop {
        let closed = out.closed.clone();
        tokio::select! {
            biased;
            // The session ended under the connection (expired, or the
            // server shuts down): so does the connection.
            () = closed.cancelled() => break,
            Some(frame) = frames.recv() => out.frame(frame).await,
            event = standalone.recv(), if out.session.is_some() => match event {
                Some(event) => out.line(event.data).await,
                // The stream fell behind and was let go (its events stay
                // buffered): attach again, which replays them.
                None => {
                    (standalone_tx, standalone) = standalone_channel(limits.stream_buffer);
                    if let Some(s) = &out.session {
                        s.replay().attach_standalone(standalone_tx.clone());
                    }
                }
            },
            Some(answer) = running.next() => {
                // What the request sent before answering goes out first.
                while let Ok(frame) = frames.try_recv() {
                    out.frame(frame).await;
                }
                match answer {
                    Answer::One(Some(response)) => out.message(&Message::Response(response)).await,
                    Answer::One(None) => {}
                    Answer::Batch(responses) => out.batch(responses).await,
                    Answer::Modern(id, response) => {
                        modern.remove(&id);
                        if let Some(response) = response {
                            out.message(&Message::Response(response)).await;
                        }
                    }
                }
            }
            () = tokio::time::sleep_until(ending.unwrap_or_else(Instant::now)), if ending.is_some() => break,
            () = tokio::time::sleep_until(initialize_by.unwrap_or_else(Instant::now)),
                if initialize_by.is_some() && out.session.is_none() =>
            {
                tracing::debug!("closing a connection that sent no initialize in time");
                break;
            }
            () = outbox.closed(), if ending.is_some() => break,
            body = inbound.next(), if ending.is_none() => {
                let Some(body) = body else {
                    if running.is_empty() || outbox.is_closed() {
                        break;
                    }
                    ending = Some(Instant::now() + EOF_GRACE);
                    continue;
                };
                let body = match lifetime {
                    Lifetime::Connection => match pinned.of(body) {
                        era::Era::Handshake(body) => body,
                        era::Era::Sessionless(request) => {
                            match engine.accept_modern(request, None, &caller).await {
                                crate::server::ModernAccepted::Answered { response, .. } => {
                                    out.message(&Message::Response(response)).await;
                                }
                                crate::server::ModernAccepted::Run { session, request } => {
                                    let (engine, downlink, id) = (engine.clone(), downlink.clone(), request.id.clone());
                                    modern.insert(id.clone(), session.clone());
                                    running.push(Box::pin(async move {
                                        Answer::Modern(id, engine.run(&session, request, downlink).await)
                                    }));
                                }
                            }
                            continue;
                        }
                        era::Era::Cancel(id) => {
                            if let Some(session) = modern.remove(&id) {
                                tracing::debug!(%id, "client cancelled a modern request");
                                session.close();
                            }
                            continue;
                        }
                        era::Era::Refused(response, _) => {
                            out.message(&Message::Response(response)).await;
                            continue;
                        }
                        era::Era::Dropped => continue,
                    },
                    Lifetime::Idle => body,
                };
                let accepted = match &out.session {
                    Some(s) => {
                        // Any traffic keeps the session alive.
                        engine.store().touch(s.id());
                        engine.accept(SessionRef::Live(s.clone()), body, &caller).await
                    }
                    None => engine.accept_unbound(&mut hold, body, &caller).await,
                };
                match accepted {
                    Accepted::Answered { responses, batch: true, .. } if !responses.is_empty() => {
                        out.batch(responses).await
                    }
                    Accepted::Answered { responses, .. } => {
                        for r in responses {
                            out.message(&Message::Response(r)).await;
                        }
                    }
                    Accepted::Initialized { session: s, response } => {
                        if lifetime == Lifetime::Connection {
                            engine.store().pin(&s);
                        }
                        out.closed = s.closed().clone();
                        out.session = Some(s.clone());
                        out.message(&Message::Response(response)).await;
                        s.replay().attach_standalone(standalone_tx.clone());
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
                // Its `initialize` failed and took its place with it.
                if initialize_by.is_some() && hold.is_none() && out.session.is_none() {
                    break;
                }
            }
        }
        if ending.is_some() && running.is_empty() {
            break;
        }
    }
    out.session
}

fn standalone_channel(capacity: usize) -> (mpsc::Sender<Event>, mpsc::Receiver<Event>) {
    // Room for the whole replay buffer, which an attachment hands over at once.
    mpsc::channel(capacity.max(replay::STREAM_BUFFER))
}

/// The connection's way out.
struct Writer<'a, H: Handler> {
    outbox: &'a Outbox,
    engine: &'a Arc<Engine<H>>,
    session: Option<Arc<Session<H::State>>>,
    lifetime: Lifetime,
    /// Fires when the session ends (never before there is one).
    closed: CancellationToken,
}

impl<H: Handler> Writer<'_, H> {
    async fn frame(&self, frame: Frame) {
        match frame {
            Frame::Message(m) => self.message(&m).await,
            Frame::Final(r) => self.message(&Message::Response(r)).await,
            Frame::End => {}
        }
    }

    async fn message(&self, message: &Message) {
        self.line(Arc::from(message.encode())).await;
    }

    async fn batch(&self, responses: Vec<Response>) {
        if responses.is_empty() {
            return;
        }
        let messages: Vec<Message> = responses.into_iter().map(Message::Response).collect();
        match serde_json::to_string(&messages) {
            Ok(mut text) => {
                crate::jsonrpc::one_line(&mut text);
                self.line(Arc::from(text)).await
            }
            Err(e) => tracing::error!(error = %e, "cannot encode a batch answer"),
        }
    }

    /// Queues one line, waiting while the queue is full (unless the session
    /// ends meanwhile: then no one waits for it).
    async fn line(&self, line: Arc<str>) {
        tokio::select! {
            // A line that fits is queued even if the session just ended
            // (the answer of a request that finished during shutdown).
            biased;
            // A closed outbox means the client is gone; there is no one to tell.
            _ = self.outbox.send(line) => {}
            () = self.closed.cancelled() => return,
        }
        if self.lifetime == Lifetime::Idle
            && let Some(s) = &self.session
        {
            // Traffic either way keeps the session alive.
            self.engine.store().touch(s.id());
        }
    }
}
