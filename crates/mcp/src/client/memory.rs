//! An upstream in this process: an MCP server engine (any
//! [`Handler`]) served over channels. Tests use it to drive the gateway's
//! routing, its gate and the id/progress/cancellation mapping against a real
//! MCP server, without processes or sockets.

use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;

use super::error::{Cause, UpstreamError};
use super::transport::{Inbox, Transport};
use crate::jsonrpc::{Body, DecodeError, Message, Response};
use crate::server::{Engine, Handler, single};

/// Opens in-process connections to an MCP server; each is a client
/// connection of its own (with its own session, as a child process would be).
#[derive(Clone)]
pub struct MemoryTarget(Arc<dyn Fn() -> Channels + Send + Sync>);

/// Both directions of one in-process connection.
struct Channels {
    to_server: mpsc::UnboundedSender<Result<Body, DecodeError>>,
    from_server: mpsc::Receiver<Arc<str>>,
}

impl MemoryTarget {
    /// Connections to `engine`, driven by the engine's own connection driver
    /// (the one stdio uses).
    pub fn serve<H: Handler>(engine: Arc<Engine<H>>) -> Self {
        Self(Arc::new(move || {
            let (to_server, inbound) = mpsc::unbounded_channel();
            // Bounded like stdio's output: the reader below drains it.
            let (outbox, from_server) = mpsc::channel(engine.store().limits().stream_buffer.max(1));
            let engine = engine.clone();
            crate::spawn(async move {
                if let Some(session) = single::drive(
                    &engine,
                    UnboundedReceiverStream::new(inbound),
                    &outbox,
                    single::Lifetime::Connection,
                    crate::server::Caller::anonymous(),
                    None,
                )
                .await
                {
                    engine.store().remove(session.id());
                }
            });
            Channels { to_server, from_server }
        }))
    }
}

/// One in-process connection.
pub(crate) struct MemoryTransport {
    label: Arc<str>,
    /// Taken on shutdown: the server sees the connection end.
    to_server: Mutex<Option<mpsc::UnboundedSender<Result<Body, DecodeError>>>>,
}

/// Opens a connection; what the server sends goes to `inbox`.
pub(crate) fn open(target: &MemoryTarget, label: &Arc<str>, inbox: Weak<dyn Inbox>) -> MemoryTransport {
    let Channels { to_server, mut from_server } = (target.0)();
    crate::spawn(async move {
        while let Some(text) = from_server.recv().await {
            let Some(inbox) = inbox.upgrade() else { return };
            match Body::decode(text.as_bytes()) {
                Ok(body) => body.into_messages(|_| {}).for_each(|m| inbox.deliver(m, None)),
                Err(e) => tracing::warn!(error = %e, "the in-process server sent something that is not JSON-RPC"),
            }
        }
        if let Some(inbox) = inbox.upgrade() {
            inbox.close("the in-process server closed the connection");
        }
    });
    MemoryTransport { label: label.clone(), to_server: Mutex::new(Some(to_server)) }
}

impl MemoryTransport {
    fn put(&self, message: &Message) -> Result<(), UpstreamError> {
        let sent = self.to_server.lock().as_ref().map(|tx| tx.send(Ok(Body::Single(message.clone()))));
        match sent {
            Some(Ok(())) => Ok(()),
            _ => Err(UpstreamError::Closed {
                upstream: self.label.clone(),
                source: Cause::msg("the connection is closed"),
            }),
        }
    }
}

impl Transport for MemoryTransport {
    fn request<'a>(
        &'a self,
        _call: u64,
        message: &'a Message,
    ) -> BoxFuture<'a, Result<Option<Response>, UpstreamError>> {
        let sent = self.put(message).map(|()| None);
        Box::pin(async move { sent })
    }

    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), UpstreamError>> {
        let sent = self.put(message);
        Box::pin(async move { sent })
    }

    /// The in-memory server takes messages, not text: the text (a modern
    /// request with its envelope) is decoded again.
    fn send_text<'a>(&'a self, _message: &'a Message, text: Vec<u8>) -> BoxFuture<'a, Result<(), UpstreamError>> {
        let sent = Message::decode(&text)
            .map_err(|e| UpstreamError::Protocol { upstream: self.label.clone(), source: Cause::msg(e.to_string()) })
            .and_then(|m| self.put(&m));
        Box::pin(async move { sent })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        self.to_server.lock().take();
        Box::pin(async {})
    }
}
