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
use futures::stream::BoxStream;
use http::{HeaderMap, StatusCode, header};
use sse_stream::{Sse, SseByteStream};
use tokio_util::sync::CancellationToken;

use super::error::UpstreamError;
use super::http::{config_target, decode_body, error_chain};
use super::peer::Peer;
use crate::config::UpstreamConfig;
use crate::jsonrpc::Message;

/// Longest wait for the `endpoint` event (or the upstream's `timeout`, if shorter).
const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);
/// Characters of a peer's text quoted in logs and errors.
const SHOWN: usize = 200;

type Events = BoxStream<'static, Result<Sse, sse_stream::Error>>;

/// The sending half of one legacy SSE connection.
pub(crate) struct SseLink {
    label: Arc<str>,
    client: reqwest::Client,
    /// Where messages are POSTed (from the `endpoint` event, same origin).
    endpoint: reqwest::Url,
    /// Headers from the configuration (never a downstream client's).
    headers: HeaderMap,
    /// Bounds each POST, so a stuck server cannot hold a call past its timeout.
    timeout: Duration,
    peer: Weak<Peer>,
    /// Stops the reader, which drops the stream.
    stop: CancellationToken,
}

/// An open stream whose endpoint is known, before the peer that reads it exists.
pub(crate) struct Opened {
    link: SseLink,
    events: Events,
}

/// Opens the event stream of `config.url` and waits for its `endpoint` event.
pub(crate) async fn open(
    config: &UpstreamConfig,
    label: &Arc<str>,
    client: reqwest::Client,
) -> Result<Opened, UpstreamError> {
    let (url, headers) = config_target(config, label)?;
    let wait = config.timeout.min(ENDPOINT_TIMEOUT);
    let opening = tokio::time::timeout(wait, connect_stream(&client, &url, &headers, label)).await;
    let (endpoint, events) = opening.map_err(|_| UpstreamError::Start {
        upstream: label.clone(),
        reason: format!("no endpoint event within {}", humantime::format_duration(wait)),
    })??;
    tracing::debug!(upstream = %label, %endpoint, "legacy SSE stream open");
    let link = SseLink {
        label: label.clone(),
        client,
        endpoint,
        headers,
        timeout: config.timeout,
        peer: Weak::new(),
        stop: CancellationToken::new(),
    };
    Ok(Opened { link, events })
}

/// `GET url` as an event stream, read up to its `endpoint` event.
async fn connect_stream(
    client: &reqwest::Client,
    url: &reqwest::Url,
    headers: &HeaderMap,
    label: &Arc<str>,
) -> Result<(reqwest::Url, Events), UpstreamError> {
    let start_error = |reason: String| UpstreamError::Start { upstream: label.clone(), reason };
    let response = client
        .get(url.clone())
        .headers(headers.clone())
        .header(header::ACCEPT, "text/event-stream")
        .send()
        .await
        .map_err(|e| http_error(label, &e))?;
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
    let mut events: Events = Box::pin(SseByteStream::new(response.bytes_stream()));
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
    /// Splits off the link and starts the task that feeds the stream's
    /// messages into `peer`.
    pub(crate) fn start(self, peer: Weak<Peer>) -> SseLink {
        let Opened { mut link, events } = self;
        link.peer = peer.clone();
        tokio::spawn(read_events(events, peer, link.label.clone(), link.stop.clone()));
        link
    }
}

impl SseLink {
    /// POSTs one message to the endpoint; the server accepts it (usually 202)
    /// and answers, if at all, on the stream.
    pub(crate) async fn send(&self, message: &Message) -> Result<(), UpstreamError> {
        if self.stop.is_cancelled() {
            return Err(UpstreamError::Closed { upstream: self.label.clone(), reason: "shut down by toolgate".into() });
        }
        let mut response = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .timeout(self.timeout)
            .body(message.encode())
            .send()
            .await
            .map_err(|e| match e.is_timeout() {
                true => UpstreamError::Timeout { upstream: self.label.clone(), after: self.timeout },
                false => http_error(&self.label, &e),
            })?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        if status == StatusCode::NOT_FOUND {
            // The server no longer knows this connection (it restarted, or
            // dropped the stream): the connection is over.
            if let Some(peer) = self.peer.upgrade() {
                peer.close("the upstream no longer knows this connection (HTTP 404)");
            }
            return Err(UpstreamError::SessionExpired { upstream: self.label.clone() });
        }
        // One chunk of the body is enough to say why; it is not read further.
        let body = match response.chunk().await {
            Ok(Some(chunk)) => shown(&String::from_utf8_lossy(&chunk)),
            _ => String::new(),
        };
        Err(UpstreamError::Http { upstream: self.label.clone(), detail: format!("HTTP {status}: {body}") })
    }

    /// Drops the stream. (There is nothing to tell the server.)
    pub(crate) async fn shutdown(&self) {
        self.stop.cancel();
    }
}

impl Drop for SseLink {
    fn drop(&mut self) {
        // Dropped without a shutdown: the reader must not hold the stream open.
        self.stop.cancel();
    }
}

/// Feeds the stream's messages into the peer until the stream ends (the peer
/// closes) or toolgate stops it.
async fn read_events(mut events: Events, peer: Weak<Peer>, label: Arc<str>, stop: CancellationToken) {
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
        let Some(peer) = peer.upgrade() else { return };
        match event.event.as_deref() {
            // An event without a type (or with an empty one) is a `message`.
            None | Some("" | "message") => {}
            Some(other) => {
                tracing::debug!(upstream = %label, event = other, "ignoring an event that is not a message");
                continue;
            }
        }
        let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else { continue };
        let messages = decode_body(data.as_bytes());
        if messages.is_empty() {
            tracing::warn!(upstream = %label, data = %shown(&data), "ignoring an event that is not JSON-RPC");
        }
        for message in messages {
            peer.dispatch(message, None);
        }
    };
    tracing::debug!(upstream = %label, %reason, "legacy SSE stream ended");
    if let Some(peer) = peer.upgrade() {
        peer.close(&reason);
    }
}

fn http_error(label: &Arc<str>, e: &reqwest::Error) -> UpstreamError {
    if e.is_connect() {
        // Nothing listens there (yet): the upstream is down, not broken.
        return UpstreamError::Unavailable { upstream: label.clone(), reason: error_chain(e) };
    }
    UpstreamError::Http { upstream: label.clone(), detail: error_chain(e) }
}

/// Why the stream failed: for a broken connection, the transport's own
/// chain of causes (the decoder's wrapper adds nothing).
fn stream_error(e: &sse_stream::Error) -> String {
    match e {
        sse_stream::Error::Body(inner) => error_chain(inner.as_ref()),
        other => other.to_string(),
    }
}

fn shown(text: &str) -> String {
    text.chars().take(SHOWN).collect()
}

#[cfg(test)]
mod tests;
