//! The Streamable HTTP transport, client side.
//!
//! Every request is a POST whose answer is either one JSON message or an SSE
//! stream carrying related messages and then the response; the stream that
//! carried a message tells which call it belongs to. A stream that ends
//! before its response is resumed with `GET` + `Last-Event-ID` after the
//! server's `retry` delay. Messages that belong to no call arrive on the
//! standalone `GET` stream, opened after the handshake (unless the server
//! answers 405).
//!
//! POSTs to a plain `http://` endpoint go through [`plain`], a lean client
//! on hyper's connection API; everything else through reqwest.

mod plain;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use parking_lot::Mutex;
use sse_stream::SseByteStream;
use tokio_util::sync::CancellationToken;

use super::error::UpstreamError;
use super::peer::Peer;
use crate::config::UpstreamConfig;
use crate::jsonrpc::{Body, Id, Message, Outcome, Response};
use crate::protocol::{self, Version};

/// Default wait before resuming a broken stream when the server gave no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// Resumption attempts for one response stream.
const MAX_RESUMES: u32 = 5;
/// Longest pause between attempts to reopen the standalone stream.
const MAX_GET_BACKOFF: Duration = Duration::from_secs(30);
/// How long the handshake waits for the server to answer the first
/// standalone `GET` before the session is used anyway.
const STANDALONE_OPEN_WAIT: Duration = Duration::from_secs(1);

/// The client side of one Streamable HTTP session.
#[derive(Clone)]
pub(crate) struct HttpLink(Arc<Inner>);

struct Inner {
    label: Arc<str>,
    client: reqwest::Client,
    url: reqwest::Url,
    /// Headers from the configuration (credentials for this upstream only;
    /// a downstream `Authorization` never gets here).
    headers: HeaderMap,
    session_id: Mutex<Option<HeaderValue>>,
    version: OnceLock<Version>,
    stop: CancellationToken,
    /// The lean client for POSTs, when the URL allows it.
    plain: Option<plain::PlainClient>,
    /// `headers` plus the fixed headers of a POST (for the lean client).
    post_headers: HeaderMap,
}

impl HttpLink {
    /// A link to `config.url`. Fails on a bad URL or header.
    pub(crate) fn new(
        config: &UpstreamConfig,
        label: &Arc<str>,
        client: reqwest::Client,
    ) -> Result<Self, UpstreamError> {
        let (url, headers) = config_target(config, label)?;
        let plain = plain::PlainClient::for_url(&url);
        let mut post_headers = headers.clone();
        post_headers.insert(header::ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        post_headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok(Self(Arc::new(Inner {
            post_headers,
            label: label.clone(),
            client,
            plain,
            url,
            headers,
            session_id: Mutex::new(None),
            version: OnceLock::new(),
            stop: CancellationToken::new(),
        })))
    }

    /// Records the revision negotiated in the handshake, sent as
    /// `MCP-Protocol-Version` from then on.
    pub(crate) fn set_version(&self, version: Version) {
        let _ = self.0.version.set(version);
    }

    /// Opens the standalone stream (once the session is initialized) and
    /// returns when the server has answered that first `GET` (or after
    /// [`STANDALONE_OPEN_WAIT`]). Waiting keeps the `GET` ahead of the
    /// session's first request, as SDK clients do: a server that hands a
    /// pending response to whichever `GET` arrives (the conformance suite's
    /// `sse-retry` server does) would otherwise give it to this stream
    /// instead of to the request's resumption.
    pub(crate) async fn open_standalone(&self, peer: &Arc<Peer>) {
        let link = self.clone();
        let peer = Arc::downgrade(peer);
        let (answered, wait) = tokio::sync::oneshot::channel();
        tokio::spawn(async move { link.standalone_stream(peer, answered).await });
        let _ = tokio::time::timeout(STANDALONE_OPEN_WAIT, wait).await;
    }

    /// Sends request `id` and feeds its answer into `peer`. A JSON answer
    /// is read here, in the caller's task (no hop to another task); an SSE
    /// stream, which may go on after the response and need resuming, is
    /// read on a task of its own. Returns once the answer is in, or its
    /// stream handed over.
    pub(crate) async fn exchange(&self, peer: &Arc<Peer>, message: &Message, id: u64) {
        let body = Bytes::from(message.encode());
        self.request(peer.clone(), body, id).await;
    }

    /// Sends a notification or a response (answered with 202, no body).
    pub(crate) async fn send_other(&self, message: &Message) -> Result<(), UpstreamError> {
        let body = Bytes::from(message.encode());
        let response = self.post(body).send().await.map_err(|e| self.http_error(&e))?;
        if response.status().is_success() {
            return Ok(());
        }
        if response.status() == StatusCode::NOT_FOUND && self.0.session_id.lock().is_some() {
            return Err(UpstreamError::SessionExpired { upstream: self.0.label.clone() });
        }
        Err(UpstreamError::Http { upstream: self.0.label.clone(), detail: format!("HTTP {}", response.status()) })
    }

    fn http_error(&self, e: &reqwest::Error) -> UpstreamError {
        if e.is_connect() {
            // Nothing listens there (yet): the upstream is down, not broken.
            return UpstreamError::Unavailable { upstream: self.0.label.clone(), reason: error_chain(e) };
        }
        UpstreamError::Http { upstream: self.0.label.clone(), detail: error_chain(e) }
    }

    fn with_session_headers(&self, mut req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        req = req.headers(self.0.headers.clone());
        if let Some(id) = self.0.session_id.lock().clone() {
            req = req.header(protocol::header::SESSION_ID, id);
        }
        if let Some(v) = self.0.version.get().filter(|v| v.has_version_header()) {
            req = req.header(protocol::header::PROTOCOL_VERSION, v.as_str());
        }
        req
    }

    fn post(&self, body: Bytes) -> reqwest::RequestBuilder {
        let req = self
            .0
            .client
            .post(self.0.url.clone())
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header(header::CONTENT_TYPE, "application/json")
            .body(body);
        self.with_session_headers(req)
    }

    fn get(&self, last_event_id: Option<&str>) -> reqwest::RequestBuilder {
        let mut req = self.0.client.get(self.0.url.clone()).header(header::ACCEPT, "text/event-stream");
        if let Some(id) = last_event_id {
            req = req.header(protocol::header::LAST_EVENT_ID, id);
        }
        self.with_session_headers(req)
    }

    /// The headers of a POST on the plain client (reqwest's builder adds the
    /// same ones in [`HttpLink::post`]).
    fn plain_headers(&self) -> HeaderMap {
        let mut headers = self.0.post_headers.clone();
        if let Some(id) = self.0.session_id.lock().clone() {
            headers.insert(protocol::header::SESSION_ID, id);
        }
        if let Some(v) = self.0.version.get().filter(|v| v.has_version_header()) {
            headers.insert(protocol::header::PROTOCOL_VERSION, HeaderValue::from_static(v.as_str()));
        }
        headers
    }

    fn plain_error(&self, e: plain::PlainError) -> UpstreamError {
        match e {
            plain::PlainError::Connect { .. } => {
                UpstreamError::Unavailable { upstream: self.0.label.clone(), reason: e.to_string() }
            }
            other => UpstreamError::Http { upstream: self.0.label.clone(), detail: error_chain(&other) },
        }
    }

    /// POSTs request `id` and feeds what comes back into the peer.
    async fn request(&self, peer: Arc<Peer>, body: Bytes, id: u64) {
        let response = match &self.0.plain {
            Some(plain) => match plain.post(self.plain_headers(), body).await {
                Ok(r) => Posted::Plain(r),
                Err(e) => return peer.fail(id, self.plain_error(e)),
            },
            None => match self.post(body).send().await {
                Ok(r) => Posted::Reqwest(r),
                Err(e) => return peer.fail(id, self.http_error(&e)),
            },
        };
        if self.0.session_id.lock().is_none()
            && let Some(sid) = response.headers().get(protocol::header::SESSION_ID)
        {
            *self.0.session_id.lock() = Some(sid.clone());
        }
        let status = response.status();
        if status == StatusCode::NOT_FOUND && self.0.session_id.lock().is_some() {
            peer.fail(id, UpstreamError::SessionExpired { upstream: self.0.label.clone() });
            peer.close("the upstream ended the session (HTTP 404)");
            return;
        }
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if status == StatusCode::ACCEPTED {
            let detail = "answered a request with 202 Accepted".to_owned();
            return peer.fail(id, UpstreamError::Protocol { upstream: self.0.label.clone(), detail });
        }
        if content_type.starts_with("text/event-stream") && status.is_success() {
            let link = self.clone();
            match response {
                Posted::Reqwest(r) => {
                    tokio::spawn(async move { link.read_response_stream(&peer, r.bytes_stream(), id).await });
                }
                Posted::Plain(r) => {
                    use http_body_util::BodyExt as _;
                    let stream = r.into_body().into_data_stream();
                    tokio::spawn(async move { link.read_response_stream(&peer, stream, id).await });
                }
            }
            return;
        }
        let bytes = match response.bytes(self).await {
            Ok(b) => b,
            Err(e) => return peer.fail(id, e),
        };
        let messages = decode_body(&bytes);
        if messages.is_empty() || !status.is_success() {
            // A JSON-RPC error in an error status is still the answer.
            let answered = messages.iter().any(|m| matches!(m, Message::Response(_)));
            if !answered {
                let shown: String = String::from_utf8_lossy(&bytes).chars().take(200).collect();
                let detail = format!("HTTP {status}: {shown}");
                return peer.fail(id, UpstreamError::Http { upstream: self.0.label.clone(), detail });
            }
        }
        for m in messages {
            peer.dispatch(with_fallback_id(m, id), Some(id));
        }
        if peer.is_pending(id) {
            let detail = "the response body did not answer the request".to_owned();
            peer.fail(id, UpstreamError::Protocol { upstream: self.0.label.clone(), detail });
        }
    }

    /// Reads a request's SSE stream, resuming it with `Last-Event-ID` when it
    /// ends before the response.
    async fn read_response_stream<E: std::error::Error + Send + Sync + 'static>(
        &self,
        peer: &Arc<Peer>,
        stream: impl Stream<Item = Result<Bytes, E>> + Unpin,
        id: u64,
    ) {
        let mut cursor = StreamCursor::default();
        cursor.read(peer, stream, Some(id)).await;
        let mut resumes = 0;
        while peer.is_pending(id) && !peer.is_closed() {
            let Some(last) = cursor.last_event_id.clone() else { break };
            if resumes == MAX_RESUMES {
                break;
            }
            resumes += 1;
            tokio::time::sleep(cursor.retry.unwrap_or(DEFAULT_RETRY)).await;
            tracing::debug!(upstream = %self.0.label, id, %last, "resuming a response stream");
            match self.get(Some(&last)).send().await {
                Ok(r) if r.status().is_success() => cursor.read(peer, r.bytes_stream(), Some(id)).await,
                Ok(r) => {
                    tracing::debug!(upstream = %self.0.label, status = %r.status(), "resumption refused");
                    break;
                }
                Err(e) => tracing::debug!(upstream = %self.0.label, error = %error_chain(&e), "resumption failed"),
            }
        }
        if peer.is_pending(id) {
            let reason = "the response stream ended before the response".to_owned();
            peer.fail(id, UpstreamError::Closed { upstream: self.0.label.clone(), reason });
        }
    }

    /// Keeps the standalone `GET` stream open while the peer lives;
    /// `answered` fires once the first attempt has its answer.
    async fn standalone_stream(&self, peer: std::sync::Weak<Peer>, answered: tokio::sync::oneshot::Sender<()>) {
        let mut cursor = StreamCursor::default();
        let mut backoff = DEFAULT_RETRY;
        let mut answered = Some(answered);
        loop {
            let Some(p) = peer.upgrade() else { return };
            if p.is_closed() || self.0.stop.is_cancelled() {
                return;
            }
            drop(p);
            let request = self.get(cursor.last_event_id.as_deref()).send();
            let response = tokio::select! {
                r = request => r,
                _ = self.0.stop.cancelled() => return,
            };
            if let Some(tx) = answered.take() {
                let _ = tx.send(());
            }
            match response {
                Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => {
                    tracing::debug!(upstream = %self.0.label, "upstream offers no standalone stream");
                    return;
                }
                Ok(r) if r.status().is_success() => {
                    backoff = DEFAULT_RETRY;
                    let Some(p) = peer.upgrade() else { return };
                    tokio::select! {
                        _ = cursor.read(&p, r.bytes_stream(), None) => {}
                        _ = self.0.stop.cancelled() => return,
                        _ = p.closed().cancelled() => return,
                    }
                }
                Ok(r) => {
                    tracing::debug!(upstream = %self.0.label, status = %r.status(), "standalone stream refused");
                    backoff = (backoff * 2).min(MAX_GET_BACKOFF);
                }
                Err(e) => {
                    tracing::debug!(upstream = %self.0.label, error = %error_chain(&e), "standalone stream failed");
                    backoff = (backoff * 2).min(MAX_GET_BACKOFF);
                }
            }
            let pause = cursor.retry.unwrap_or(DEFAULT_RETRY).max(backoff);
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = self.0.stop.cancelled() => return,
            }
        }
    }

    /// Ends the session: stops the standalone stream and DELETEs the session.
    pub(crate) async fn shutdown(&self) {
        self.0.stop.cancel();
        if self.0.session_id.lock().is_none() {
            return;
        }
        let req = self.with_session_headers(self.0.client.delete(self.0.url.clone()));
        let _ = tokio::time::timeout(Duration::from_secs(2), req.send()).await;
    }
}

/// The answer to a POST, from either client.
enum Posted {
    Reqwest(reqwest::Response),
    Plain(http::Response<hyper::body::Incoming>),
}

impl Posted {
    fn status(&self) -> StatusCode {
        match self {
            Posted::Reqwest(r) => r.status(),
            Posted::Plain(r) => r.status(),
        }
    }

    fn headers(&self) -> &HeaderMap {
        match self {
            Posted::Reqwest(r) => r.headers(),
            Posted::Plain(r) => r.headers(),
        }
    }

    /// The whole body.
    async fn bytes(self, link: &HttpLink) -> Result<Bytes, UpstreamError> {
        match self {
            Posted::Reqwest(r) => r.bytes().await.map_err(|e| link.http_error(&e)),
            Posted::Plain(r) => {
                use http_body_util::BodyExt as _;
                match r.into_body().collect().await {
                    Ok(collected) => Ok(collected.to_bytes()),
                    Err(e) => Err(UpstreamError::Http { upstream: link.0.label.clone(), detail: error_chain(&e) }),
                }
            }
        }
    }
}

/// Where a stream left off, for resumption.
#[derive(Default)]
struct StreamCursor {
    last_event_id: Option<String>,
    retry: Option<Duration>,
}

impl StreamCursor {
    /// Feeds every message of an SSE stream into the peer, remembering the
    /// last event id and `retry`, until the stream ends or (for a request's
    /// stream) the response has arrived. Events with empty data (priming
    /// events) carry only those.
    async fn read<E: std::error::Error + Send + Sync + 'static>(
        &mut self,
        peer: &Arc<Peer>,
        stream: impl Stream<Item = Result<Bytes, E>> + Unpin,
        related: Option<u64>,
    ) {
        let mut events = SseByteStream::new(stream);
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(e) => e,
                Err(e) => {
                    tracing::debug!(upstream = %peer.label(), error = %e, "SSE stream broke");
                    return;
                }
            };
            if let Some(id) = event.id {
                self.last_event_id = Some(id);
            }
            if let Some(ms) = event.retry {
                self.retry = Some(Duration::from_millis(ms));
            }
            let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else { continue };
            for message in decode_body(data.as_bytes()) {
                peer.dispatch(message, related);
            }
            // A request's stream has nothing more to say once it carried the
            // response; stop reading even if the server keeps it open (a
            // resumed `GET` often is), so the connection is not held.
            if related.is_some_and(|id| !peer.is_pending(id)) {
                return;
            }
        }
    }
}

/// The URL and the configured headers of an HTTP upstream (both HTTP
/// transports). Fails on a bad URL or header.
pub(super) fn config_target(
    config: &UpstreamConfig,
    label: &Arc<str>,
) -> Result<(reqwest::Url, HeaderMap), UpstreamError> {
    let start_error = |reason: String| UpstreamError::Start { upstream: label.clone(), reason };
    let url = config.url.as_deref().unwrap_or_default();
    let url = reqwest::Url::parse(url).map_err(|e| start_error(format!("bad url {url:?}: {e}")))?;
    let mut headers = HeaderMap::new();
    for (k, v) in &config.headers {
        let name =
            HeaderName::from_bytes(k.as_bytes()).map_err(|e| start_error(format!("bad header name {k:?}: {e}")))?;
        let mut value =
            HeaderValue::from_str(v).map_err(|e| start_error(format!("bad value for header {k:?}: {e}")))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    Ok((url, headers))
}

/// Decodes a JSON body or SSE data: one message or a batch (elements that
/// are not messages are dropped).
pub(super) fn decode_body(bytes: &[u8]) -> Vec<Message> {
    Body::decode(bytes).map(|body| body.into_messages(|_| {})).unwrap_or_default()
}

/// A JSON-RPC error with a null id in answer to our POST is the answer to
/// that POST's request.
fn with_fallback_id(message: Message, id: u64) -> Message {
    match message {
        Message::Response(Response { id: None, outcome: outcome @ Outcome::Error(_) }) => {
            Message::Response(Response { id: Some(Id::number(id)), outcome })
        }
        other => other,
    }
}

/// An error with its sources, `outer: inner: …`.
pub(super) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
