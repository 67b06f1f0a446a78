//! The legacy HTTP+SSE transport (MCP 2024-11-05), client side.
//!
//! `GET <url>` opens one event stream that carries everything the server
//! sends. Its first event, `endpoint`, names the URI every client message is
//! POSTed to; it is resolved against the stream's URL and refused when it
//! points at another origin (as the TypeScript SDK does), so configured
//! credentials never go anywhere but the configured server. Server messages
//! arrive as `message` events; nothing on the wire ties one to a call except a
//! response's id, so the peer gets them with no call attached. The stream is
//! the connection: when it ends, the peer closes; shutting down just drops it
//! (this transport has no session to DELETE).

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use http::{HeaderMap, StatusCode, header};
use sse_stream::{Sse, SseByteStream};

use super::capped::CappedEvents;
use tokio_util::sync::CancellationToken;

use super::error::{Cause, UpstreamError, report};
use super::http::decode_body;
use super::target::{Credentials, HttpTarget, with_credentials};
use super::transport::{Inbox, Transport};
use crate::jsonrpc::Message;

/// Longest wait for the `endpoint` event (or the upstream's `timeout`, if shorter).
const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);
/// Characters of a peer's text quoted in logs and errors.
const SHOWN: usize = 200;

type Events = BoxStream<'static, Result<Sse, sse_stream::Error>>;

/// The sending half of one legacy SSE connection.
pub(crate) struct SseTransport {
    label: Arc<str>,
    client: reqwest::Client,
    /// Where messages are POSTed (from the `endpoint` event, same origin).
    endpoint: reqwest::Url,
    /// Headers from the configuration (never a downstream client's).
    headers: HeaderMap,
    /// Per-request credentials (a connection made for one client).
    credentials: Option<Credentials>,
    /// Bounds each POST, so a stuck server cannot hold a call past its timeout.
    timeout: Duration,
    inbox: Weak<dyn Inbox>,
    /// Stops the reader, which drops the stream.
    stop: CancellationToken,
}

/// An open stream whose endpoint is known, before the peer that reads it exists.
pub(crate) struct Opened {
    transport: SseTransport,
    events: Events,
}

/// Opens the event stream of `target.url` and waits for its `endpoint`
/// event (at most `timeout`, or [`ENDPOINT_TIMEOUT`] if shorter).
pub(crate) async fn open(
    target: &HttpTarget,
    label: &Arc<str>,
    client: reqwest::Client,
    timeout: Duration,
) -> Result<Opened, UpstreamError> {
    let wait = timeout.min(ENDPOINT_TIMEOUT);
    let opening = tokio::time::timeout(wait, connect_stream(&client, target, label)).await;
    let (endpoint, events) = opening
        .map_err(|_| start_error(label, format!("no endpoint event within {}", humantime::format_duration(wait))))??;
    tracing::debug!(upstream = %label, %endpoint, "legacy SSE stream open");
    let transport = SseTransport {
        label: label.clone(),
        client,
        endpoint,
        headers: target.headers.clone(),
        credentials: target.credentials.clone(),
        timeout,
        inbox: Weak::<NoInbox>::new(),
        stop: CancellationToken::new(),
    };
    Ok(Opened { transport, events })
}

/// A placeholder inbox type for the weak handle before the peer exists.
struct NoInbox;

impl Inbox for NoInbox {
    fn deliver(&self, _: Message, _: Option<u64>) {}
    fn is_waiting(&self, _: u64) -> bool {
        false
    }
    fn fail(&self, _: u64, _: UpstreamError) {}
    fn close(&self, _: &str) {}
}

fn start_error(label: &Arc<str>, reason: String) -> UpstreamError {
    UpstreamError::Start { upstream: label.clone(), source: Cause::msg(reason) }
}

/// `GET url` as an event stream, read up to its `endpoint` event.
async fn connect_stream(
    client: &reqwest::Client,
    target: &HttpTarget,
    label: &Arc<str>,
) -> Result<(reqwest::Url, Events), UpstreamError> {
    let url = &target.url;
    let headers = with_credentials(target.headers.clone(), target.credentials.as_ref(), label).await?;
    let start_error = |reason: String| start_error(label, reason);
    let response = client
        .get(url.clone())
        .headers(headers)
        .header(header::ACCEPT, "text/event-stream")
        .send()
        .await
        .map_err(|e| http_error(label, e))?;
    let status = response.status();
    if !status.is_success() {
        return Err(start_error(format!("the event stream request answered HTTP {status}")));
    }
    let content_type = response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !content_type.to_ascii_lowercase().starts_with("text/event-stream") {
        return Err(start_error(format!(
            "the event stream request answered {content_type:?}, not an event stream (is it a Streamable HTTP endpoint? \
             then use transport = \"streamable_http\")"
        )));
    }
    let stream = CappedEvents::new(response.bytes_stream(), target.max_message_bytes);
    let mut events: Events = Box::pin(SseByteStream::new(stream));
    loop {
        let event = match events.next().await {
            Some(Ok(event)) => event,
            Some(Err(e)) => {
                return Err(start_error(format!(
                    "the event stream broke before its endpoint event: {}",
                    stream_error(&e)
                )));
            }
            None => return Err(start_error("the event stream ended before its endpoint event".into())),
        };
        if event.event.as_deref() == Some("endpoint") {
            let endpoint = resolve_endpoint(url, event.data.as_deref().unwrap_or("")).map_err(start_error)?;
            return Ok((endpoint, events));
        }
        // The spec makes `endpoint` the first event; be lenient about
        // anything before it rather than guess where to POST.
        if let Some(data) = event.data.filter(|d| !d.trim().is_empty()) {
            tracing::warn!(upstream = %label, data = %shown(&data), "ignoring an event before the endpoint event");
        }
    }
}

/// The URI an `endpoint` event names, resolved against the stream's URL.
/// Another origin (scheme, host, port) is refused: configured credentials
/// must not follow a server's redirection elsewhere.
pub(crate) fn resolve_endpoint(stream_url: &reqwest::Url, data: &str) -> Result<reqwest::Url, String> {
    let data = data.trim();
    if data.is_empty() {
        return Err("the endpoint event names no URI".into());
    }
    let endpoint =
        stream_url.join(data).map_err(|e| format!("the endpoint event's URI {:?} is invalid: {e}", shown(data)))?;
    if endpoint.origin() != stream_url.origin() {
        return Err(format!(
            "refusing the endpoint {:?}: it is not on the event stream's origin {}",
            shown(data),
            stream_url.origin().ascii_serialization()
        ));
    }
    Ok(endpoint)
}

impl Opened {
    /// Starts the task that feeds the stream's messages into `inbox`, and
    /// returns the transport.
    pub(crate) fn start(self, inbox: Weak<dyn Inbox>) -> SseTransport {
        let Opened { mut transport, events } = self;
        transport.inbox = inbox.clone();
        crate::spawn(read_events(events, inbox, transport.label.clone(), transport.stop.clone()));
        transport
    }
}

impl SseTransport {
    /// POSTs one message to the endpoint; the server accepts it (usually 202)
    /// and answers, if at all, on the stream.
    async fn post(&self, text: Vec<u8>) -> Result<(), UpstreamError> {
        if self.stop.is_cancelled() {
            return Err(UpstreamError::Closed {
                upstream: self.label.clone(),
                source: Cause::msg("shut down by toolgate"),
            });
        }
        let mut response = self
            .client
            .post(self.endpoint.clone())
            .headers(with_credentials(self.headers.clone(), self.credentials.as_ref(), &self.label).await?)
            .header(header::CONTENT_TYPE, "application/json")
            .timeout(self.timeout)
            .body(text)
            .send()
            .await
            .map_err(|e| match e.is_timeout() {
                true => UpstreamError::Timeout { upstream: self.label.clone(), after: self.timeout },
                false => http_error(&self.label, e),
            })?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        if status == StatusCode::NOT_FOUND {
            // The server no longer knows this connection (it restarted, or
            // dropped the stream): the connection is over.
            if let Some(inbox) = self.inbox.upgrade() {
                inbox.close("the upstream no longer knows this connection (HTTP 404)");
            }
            return Err(UpstreamError::SessionExpired { upstream: self.label.clone() });
        }
        // One chunk of the body is enough to say why; it is not read further.
        let body = match response.chunk().await {
            Ok(Some(chunk)) => shown(&String::from_utf8_lossy(&chunk)),
            _ => String::new(),
        };
        Err(UpstreamError::Http { upstream: self.label.clone(), source: Cause::msg(format!("HTTP {status}: {body}")) })
    }
}

impl Transport for SseTransport {
    fn send_text<'a>(&'a self, _message: &'a Message, text: Vec<u8>) -> BoxFuture<'a, Result<(), UpstreamError>> {
        Box::pin(self.post(text))
    }

    /// Drops the stream. (There is nothing to tell the server.)
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        self.stop.cancel();
        Box::pin(async {})
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        // Dropped without a shutdown: the reader must not hold the stream open.
        self.stop.cancel();
    }
}

/// Feeds the stream's messages into the peer until the stream ends (the peer
/// closes) or toolgate stops it.
async fn read_events(mut events: Events, inbox: Weak<dyn Inbox>, label: Arc<str>, stop: CancellationToken) {
    let reason = loop {
        let event = tokio::select! {
            event = events.next() => event,
            // A shutdown: the peer closes with its own reason.
            _ = stop.cancelled() => return,
        };
        let event = match event {
            Some(Ok(event)) => event,
            Some(Err(e)) => break format!("the event stream broke: {}", stream_error(&e)),
            None => break "the upstream closed the event stream".to_owned(),
        };
        let Some(inbox) = inbox.upgrade() else { return };
        match event.event.as_deref() {
            // An event without a type (or with an empty one) is a `message`.
            None | Some("" | "message") => {}
            Some(other) => {
                tracing::debug!(upstream = %label, event = other, "ignoring an event that is not a message");
                continue;
            }
        }
        let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else { continue };
        let mut none = true;
        for message in decode_body(data.as_bytes()) {
            none = false;
            inbox.deliver(message, None);
        }
        if none {
            tracing::warn!(upstream = %label, data = %shown(&data), "ignoring an event that is not JSON-RPC");
        }
    };
    tracing::debug!(upstream = %label, %reason, "legacy SSE stream ended");
    if let Some(inbox) = inbox.upgrade() {
        inbox.close(&reason);
    }
}

fn http_error(label: &Arc<str>, e: reqwest::Error) -> UpstreamError {
    let connect = e.is_connect();
    // The URL is left out: its query can carry a key.
    let source = Cause::new(e.without_url());
    if connect {
        // Nothing listens there (yet): the upstream is down, not broken.
        return UpstreamError::Unavailable { upstream: label.clone(), source };
    }
    UpstreamError::Http { upstream: label.clone(), source }
}

/// Why the stream failed: for a broken connection, the transport's own
/// chain of causes (the decoder's wrapper adds nothing).
fn stream_error(e: &sse_stream::Error) -> String {
    match e {
        sse_stream::Error::Body(inner) => report(inner.as_ref()).to_string(),
        other => other.to_string(),
    }
}

fn shown(text: &str) -> String {
    text.chars().take(SHOWN).collect()
}

#[cfg(test)]
mod tests;
