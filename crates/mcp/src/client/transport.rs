//! The seam between a [`Peer`](super::Peer) and the wire: a [`Transport`]
//! moves JSON-RPC messages to one upstream session, and hands what comes back
//! to an [`Inbox`] (the peer). Transports never see the peer itself, and the
//! peer never knows which transport it drives: stdio, Streamable HTTP,
//! legacy HTTP+SSE, or an in-memory one for tests.

use futures::future::BoxFuture;
use http::HeaderMap;

use super::error::UpstreamError;
use crate::jsonrpc::{Message, Response};
use crate::protocol::Version;

/// Where a transport delivers what the upstream sends.
pub trait Inbox: Send + Sync {
    /// A message from the upstream. `call` is the request whose response
    /// stream carried it, when the transport knows (Streamable HTTP).
    fn deliver(&self, message: Message, call: Option<u64>);
    /// Whether request `call` still waits for its response.
    fn is_waiting(&self, call: u64) -> bool;
    /// Request `call` cannot be answered (its response stream broke).
    fn fail(&self, call: u64, error: UpstreamError);
    /// The connection is over; every call in flight fails.
    fn close(&self, reason: &str);
}

/// A connection to one upstream MCP session.
pub trait Transport: Send + Sync {
    /// Sends request `call` (the message carries that id). Resolves once it
    /// is sent, with its response when the exchange itself brought it back
    /// (a Streamable HTTP JSON answer, read in the caller's task); otherwise
    /// the response arrives through the [`Inbox`], as it always does on a
    /// transport that only [`send`](Self::send)s (the default).
    fn request<'a>(
        &'a self,
        call: u64,
        message: &'a Message,
    ) -> BoxFuture<'a, Result<Option<Response>, UpstreamError>> {
        let _ = call;
        Box::pin(async move { self.send(message).await.map(|()| None) })
    }

    /// Sends request `call` as a modern (sessionless) request: `text` is
    /// what goes on the wire, `message` with its envelope (see
    /// `modern::envelope::encode`), which `message` itself lacks. Over HTTP
    /// with the routing `headers`, no session id, no resumption; the others
    /// send the text as any message (the default). The headers are moved,
    /// not borrowed: a value made for this request (`Mcp-Name`) would be
    /// copied again by a clone.
    fn request_modern<'a>(
        &'a self,
        call: u64,
        message: &'a Message,
        text: Vec<u8>,
        headers: HeaderMap,
    ) -> BoxFuture<'a, Result<Option<Response>, UpstreamError>> {
        let _ = (call, headers);
        Box::pin(async move { self.send_text(message, text).await.map(|()| None) })
    }

    /// Whether requests carry HTTP headers (the modern routing headers go
    /// there, and cancellation is closing the response stream).
    fn carries_headers(&self) -> bool {
        false
    }

    /// Stops reading the response stream of modern request `call`, which
    /// tells an HTTP upstream the call is cancelled.
    fn abandon(&self, call: u64) {
        let _ = call;
    }

    /// Sends a notification or a response.
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), UpstreamError>> {
        self.send_text(message, message.encode().into_bytes())
    }

    /// Sends `text`, the encoding of `message` (of a modern request, with
    /// the envelope `message` lacks): what every message comes to.
    fn send_text<'a>(&'a self, message: &'a Message, text: Vec<u8>) -> BoxFuture<'a, Result<(), UpstreamError>>;

    /// The handshake is done: the revision it negotiated. Streamable HTTP
    /// sends it as a header from then on and opens its standalone stream.
    fn established(&self, version: Version) -> BoxFuture<'_, ()> {
        let _ = version;
        Box::pin(async {})
    }

    /// Whether each call has its own response stream (Streamable HTTP), so
    /// that what the upstream sends while serving a call can be attributed
    /// to it, even on a connection that several clients share.
    fn attributes_calls(&self) -> bool {
        false
    }

    /// Ends the connection the polite way (stdio: close stdin, then SIGTERM,
    /// then SIGKILL; Streamable HTTP: DELETE the session; legacy SSE: drop
    /// the stream).
    fn shutdown(&self) -> BoxFuture<'_, ()>;
}
