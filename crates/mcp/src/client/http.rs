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

mod lost;
mod plain;
#[cfg(test)]
mod tests;

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use parking_lot::Mutex;
use sse_stream::SseByteStream;

use super::capped::CappedEvents;
use tokio_util::sync::CancellationToken;

use super::error::{Cause, HttpStatus, UpstreamError, report};
use super::target::{HttpTarget, with_credentials};
use super::transport::{Inbox, Transport};
use crate::chunks::Chunks;
use crate::jsonrpc::{Body, Id, Message, Outcome, Response, member};
use crate::protocol::{self, Version};

/// A request's `traceparent` and `tracestate`, as header values.
type TraceValues = (HeaderValue, Option<HeaderValue>);

/// The W3C trace context of an outgoing request, from its
/// `_meta.traceparent` and `_meta.tracestate` (where the gateway put its
/// span's context), as HTTP header values: an HTTP upstream gets both, as
/// its HTTP instrumentation reads the headers.
pub fn trace_headers(message: &Message) -> Option<TraceValues> {
    let Message::Request(request) = message else { return None };
    let meta = member(request.params.as_ref()?, "_meta")?;
    let parent = HeaderValue::from_str(member(meta, protocol::header::TRACEPARENT_KEY)?.as_str()?).ok()?;
    let state = member(meta, protocol::header::TRACESTATE_KEY)
        .and_then(serde_json::Value::as_str)
        .and_then(|s| HeaderValue::from_str(s).ok());
    Some((parent, state))
}

/// Default wait before resuming a broken stream when the server gave no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// Resumption attempts for one response stream.
const MAX_RESUMES: u32 = 5;
/// Longest pause between attempts to reopen the standalone stream.
const MAX_GET_BACKOFF: Duration = Duration::from_secs(30);
/// How long the handshake waits for the server to answer the first
/// standalone `GET` before the session is used anyway.
const STANDALONE_OPEN_WAIT: Duration = Duration::from_secs(1);
/// Characters of an unexpected answer quoted in errors.
const SHOWN: usize = 200;

/// The client side of one Streamable HTTP session.
#[derive(Clone)]
pub(crate) struct HttpTransport(Arc<Inner>);

struct Inner {
    label: Arc<str>,
    client: reqwest::Client,
    /// The URL, and the configured headers (credentials for this upstream
    /// only; a downstream `Authorization` never gets here).
    target: Arc<HttpTarget>,
    session_id: Mutex<Option<HeaderValue>>,
    version: OnceLock<Version>,
    stop: CancellationToken,
    /// The lean client for POSTs, when the URL allows it.
    plain: Option<plain::PlainClient>,
    /// The configured headers plus the fixed headers of a POST (for the lean client).
    post_headers: HeaderMap,
    inbox: Weak<dyn Inbox>,
    /// The response streams of modern requests being read, by call: closing
    /// one is how a modern upstream hears of a cancellation.
    modern_streams: Mutex<foldhash::HashMap<u64, CancellationToken>>,
}

/// The extra headers of a modern request (`None`: a handshake-era one).
type Modern = Option<HeaderMap>;

impl HttpTransport {
    /// A session with `target` whose messages go to `inbox`.
    pub(crate) fn new(
        target: &Arc<HttpTarget>,
        label: &Arc<str>,
        client: reqwest::Client,
        inbox: Weak<dyn Inbox>,
    ) -> Self {
        let plain = plain::PlainClient::for_url(&target.url);
        let mut post_headers = target.headers.clone();
        post_headers.insert(header::ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        post_headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Self(Arc::new(Inner {
            post_headers,
            label: label.clone(),
            client,
            plain,
            target: target.clone(),
            session_id: Mutex::new(None),
            version: OnceLock::new(),
            stop: CancellationToken::new(),
            inbox,
            modern_streams: Mutex::new(foldhash::HashMap::default()),
        }))
    }

    fn error(&self, make: fn(Arc<str>, Cause) -> UpstreamError, cause: Cause) -> UpstreamError {
        make(self.0.label.clone(), cause)
    }

    /// A reqwest failure, with the URL left out (a query can carry a key).
    fn http_error(&self, e: reqwest::Error) -> UpstreamError {
        // Nothing listens there (yet): the upstream is down, not broken.
        let make = if e.is_connect() {
            unavailable
        } else if lost::connection_lost(&e) {
            closed
        } else {
            http
        };
        self.error(make, Cause::new(e.without_url()))
    }

    fn plain_error(&self, e: plain::PlainError) -> UpstreamError {
        let make = if matches!(e, plain::PlainError::Connect { .. }) {
            unavailable
        } else if lost::connection_lost(&e) {
            closed
        } else {
            http
        };
        self.error(make, Cause::new(e))
    }

    /// Opens the standalone stream (once the session is initialized) and
    /// returns when the server has answered that first `GET` (or after
    /// [`STANDALONE_OPEN_WAIT`]). Waiting keeps the `GET` ahead of the
    /// session's first request, as SDK clients do: a server that hands a
    /// pending response to whichever `GET` arrives (the conformance suite's
    /// `sse-retry` server does) would otherwise give it to this stream
    /// instead of to the request's resumption.
    async fn open_standalone(&self) {
        let transport = self.clone();
        let (answered, wait) = tokio::sync::oneshot::channel();
        crate::spawn(async move { transport.standalone_stream(answered).await });
        let _ = tokio::time::timeout(STANDALONE_OPEN_WAIT, wait).await;
    }

    /// POSTs request `call`. A JSON answer is read here, in the caller's
    /// task (no hop to another task), and returned; an SSE stream, which may
    /// go on after the response and need resuming, is read on a task of its
    /// own, which delivers the response to the inbox.
    /// `trace`: the request's W3C trace context, sent as headers too.
    /// `modern`: a sessionless request's headers (no session id, no
    /// resumption, no session expiry).
    async fn exchange(
        &self,
        call: u64,
        body: Vec<u8>,
        trace: Option<TraceValues>,
        modern: Modern,
    ) -> Result<Option<Response>, UpstreamError> {
        let is_modern = modern.is_some();
        let response = match &self.0.plain {
            Some(plain) => {
                let mut headers = match modern {
                    // The routing headers' map has room for the POST's own.
                    Some(mut routing) => {
                        self.add_post_headers(&mut routing);
                        routing
                    }
                    None => self.plain_headers(),
                };
                if let Some((parent, state)) = trace {
                    headers.insert(protocol::header::TRACEPARENT, parent);
                    headers.extend(state.map(|s| (protocol::header::TRACESTATE, s)));
                }
                if self.0.target.credentials.is_some() {
                    headers = self.credentials(headers).await?;
                }
                let (response, lease) = plain.post(headers, body).await.map_err(|e| self.plain_error(e))?;
                Posted::Plain(response, lease)
            }
            None => {
                let mut post = match modern {
                    Some(routing) => self.post_modern(Bytes::from(body)).await?.headers(routing),
                    None => self.post(Bytes::from(body)).await?,
                };
                if let Some((parent, state)) = trace {
                    post = post.header(protocol::header::TRACEPARENT, parent);
                    if let Some(state) = state {
                        post = post.header(protocol::header::TRACESTATE, state);
                    }
                }
                Posted::Reqwest(post.send().await.map_err(|e| self.http_error(e))?)
            }
        };
        // A modern server mints no sessions; one that sends an id anyway
        // (the conformance mocks do) is not answered with it.
        if !is_modern
            && self.0.session_id.lock().is_none()
            && let Some(sid) = response.headers().get(protocol::header::SESSION_ID)
        {
            *self.0.session_id.lock() = Some(sid.clone());
        }
        let status = response.status();
        if status == StatusCode::NOT_FOUND && !is_modern && self.0.session_id.lock().is_some() {
            if let Some(inbox) = self.0.inbox.upgrade() {
                inbox.close("the upstream ended the session (HTTP 404)");
            }
            return Err(UpstreamError::SessionExpired { upstream: self.0.label.clone() });
        }
        if status == StatusCode::ACCEPTED {
            return Err(self.error(protocol_error, Cause::msg("answered a request with 202 Accepted")));
        }
        let content_type = response.headers().get(header::CONTENT_TYPE).map(HeaderValue::as_bytes).unwrap_or_default();
        let event_stream = b"text/event-stream";
        let is_stream = content_type.get(..event_stream.len()).is_some_and(|t| t.eq_ignore_ascii_case(event_stream));
        if status.is_success() && is_stream {
            let transport = self.clone();
            let stop = is_modern.then(|| {
                let token = CancellationToken::new();
                self.0.modern_streams.lock().insert(call, token.clone());
                token
            });
            match response {
                Posted::Reqwest(r) => {
                    crate::spawn(async move { transport.read_response_stream(r.bytes_stream(), call, stop).await });
                }
                Posted::Plain(r, lease) => {
                    use http_body_util::BodyExt as _;
                    lease.detach();
                    let stream = r.into_body().into_data_stream();
                    crate::spawn(async move { transport.read_response_stream(stream, call, stop).await });
                }
            }
            return Ok(None);
        }
        let challenge = (status == StatusCode::UNAUTHORIZED)
            .then(|| response.headers().get(header::WWW_AUTHENTICATE))
            .flatten()
            .and_then(|v| v.to_str().ok())
            .map(|v| v.chars().take(SHOWN).collect::<String>());
        let bytes = response.bytes(self).await?;
        let mut answer = None;
        for message in decode_body(&bytes) {
            match message {
                // A JSON-RPC error with a null id in answer to our POST is
                // the answer to that POST's request.
                Message::Response(r) if r.id.is_none() || r.id.as_ref().and_then(Id::as_u64) == Some(call) => {
                    answer = Some(Response { id: r.id.or_else(|| Some(Id::number(call))), outcome: r.outcome })
                }
                other => self.deliver(other, Some(call)),
            }
        }
        match answer {
            // A JSON-RPC error in an error status is still the answer.
            Some(answer) if status.is_success() || matches!(answer.outcome, Outcome::Error(_)) => Ok(Some(answer)),
            _ if !status.is_success() => {
                let shown: String = String::from_utf8_lossy(&bytes).chars().take(SHOWN).collect();
                Err(self.error(http, Cause::new(HttpStatus { status, body: shown, challenge })))
            }
            _ => Err(self.error(protocol_error, Cause::msg("the response body did not answer the request"))),
        }
    }

    fn deliver(&self, message: Message, call: Option<u64>) {
        if let Some(inbox) = self.0.inbox.upgrade() {
            inbox.deliver(message, call);
        }
    }

    fn is_waiting(&self, call: u64) -> bool {
        self.0.inbox.upgrade().is_some_and(|inbox| inbox.is_waiting(call))
    }

    fn is_closed(&self) -> bool {
        self.0.inbox.strong_count() == 0 || self.0.stop.is_cancelled()
    }

    /// Sends a notification or a response (answered with 202, no body).
    async fn send_other(&self, text: Vec<u8>) -> Result<(), UpstreamError> {
        let body = Bytes::from(text);
        let response = self.post(body).await?.send().await.map_err(|e| self.http_error(e))?;
        if response.status().is_success() {
            return Ok(());
        }
        if response.status() == StatusCode::NOT_FOUND && self.0.session_id.lock().is_some() {
            return Err(UpstreamError::SessionExpired { upstream: self.0.label.clone() });
        }
        Err(self.error(http, Cause::msg(format!("HTTP {}", response.status()))))
    }

    /// `req` with the configured headers, the session's, and the
    /// connection's credentials for this request.
    async fn with_session_headers(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<reqwest::RequestBuilder, UpstreamError> {
        let mut headers = self.0.target.headers.clone();
        if let Some(id) = self.0.session_id.lock().clone() {
            headers.insert(protocol::header::SESSION_ID, id);
        }
        if let Some(v) = self.0.version.get().filter(|v| v.has_version_header()) {
            headers.insert(protocol::header::PROTOCOL_VERSION, HeaderValue::from_static(v.as_str()));
        }
        Ok(req.headers(self.credentials(headers).await?))
    }

    /// `headers` with the connection's credentials for one request over
    /// them (none: as they are).
    async fn credentials(&self, headers: HeaderMap) -> Result<HeaderMap, UpstreamError> {
        with_credentials(headers, self.0.target.credentials.as_ref(), &self.0.label).await
    }

    async fn post(&self, body: Bytes) -> Result<reqwest::RequestBuilder, UpstreamError> {
        let req = self
            .0
            .client
            .post(self.0.target.url.clone())
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header(header::CONTENT_TYPE, "application/json")
            .body(body);
        self.with_session_headers(req).await
    }

    /// A modern POST: the configured headers, no session, no version header
    /// of the handshake (the caller adds the modern ones).
    async fn post_modern(&self, body: Bytes) -> Result<reqwest::RequestBuilder, UpstreamError> {
        let headers = self.credentials(self.0.target.headers.clone()).await?;
        Ok(self
            .0
            .client
            .post(self.0.target.url.clone())
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header(header::CONTENT_TYPE, "application/json")
            .headers(headers)
            .body(body))
    }

    async fn get(&self, last_event_id: Option<&str>) -> Result<reqwest::RequestBuilder, UpstreamError> {
        let mut req = self.0.client.get(self.0.target.url.clone()).header(header::ACCEPT, "text/event-stream");
        if let Some(id) = last_event_id {
            req = req.header(protocol::header::LAST_EVENT_ID, id);
        }
        self.with_session_headers(req).await
    }

    /// Adds the configured and fixed headers of a POST to `headers`.
    fn add_post_headers(&self, headers: &mut HeaderMap) {
        headers.extend(self.0.post_headers.iter().map(|(n, v)| (n.clone(), v.clone())));
    }

    /// The headers of a POST on the plain client (reqwest's builder adds the
    /// same ones in [`HttpTransport::post`]), with room for the session id,
    /// the protocol version, a credential, the call's trace context and the
    /// plain client's `Host` and `Content-Length`: a clone of the map would
    /// be full, and grow (a copy of its table) as each is added.
    fn plain_headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::with_capacity(self.0.post_headers.len() + 7);
        self.add_post_headers(&mut headers);
        if let Some(id) = self.0.session_id.lock().clone() {
            headers.insert(protocol::header::SESSION_ID, id);
        }
        if let Some(v) = self.0.version.get().filter(|v| v.has_version_header()) {
            headers.insert(protocol::header::PROTOCOL_VERSION, HeaderValue::from_static(v.as_str()));
        }
        headers
    }

    /// Reads a request's SSE stream, resuming it with `Last-Event-ID` when it
    /// ends before the response. A modern request's stream (`stop` is set) is
    /// never resumed, and `stop` closes it (the cancellation).
    async fn read_response_stream<E: std::error::Error + Send + Sync + 'static>(
        &self,
        stream: impl Stream<Item = Result<Bytes, E>> + Unpin,
        call: u64,
        stop: Option<CancellationToken>,
    ) {
        let mut cursor = StreamCursor::default();
        if let Some(stop) = stop {
            tokio::select! {
                _ = cursor.read(self, stream, Some(call)) => {}
                _ = stop.cancelled() => {}
                _ = self.0.stop.cancelled() => {}
            }
            self.0.modern_streams.lock().remove(&call);
            if self.is_waiting(call)
                && let Some(inbox) = self.0.inbox.upgrade()
            {
                let cause = Cause::msg("the response stream ended before the response");
                inbox.fail(call, UpstreamError::Closed { upstream: self.0.label.clone(), source: cause });
            }
            return;
        }
        cursor.read(self, stream, Some(call)).await;
        let mut resumes = 0;
        while self.is_waiting(call) && !self.is_closed() {
            let Some(last) = cursor.last_event_id.clone() else { break };
            if resumes == MAX_RESUMES {
                break;
            }
            resumes += 1;
            tokio::time::sleep(cursor.retry.unwrap_or(DEFAULT_RETRY)).await;
            tracing::debug!(upstream = %self.0.label, call, %last, "resuming a response stream");
            let request = match self.get(Some(&last)).await {
                Ok(request) => request,
                Err(e) => {
                    tracing::debug!(upstream = %self.0.label, error = %e.report(), "resumption not possible");
                    break;
                }
            };
            match request.send().await {
                Ok(r) if r.status().is_success() => cursor.read(self, r.bytes_stream(), Some(call)).await,
                Ok(r) => {
                    tracing::debug!(upstream = %self.0.label, status = %r.status(), "resumption refused");
                    break;
                }
                Err(e) => {
                    tracing::debug!(upstream = %self.0.label, error = %report(&e.without_url()), "resumption failed")
                }
            }
        }
        if self.is_waiting(call)
            && let Some(inbox) = self.0.inbox.upgrade()
        {
            let cause = Cause::msg("the response stream ended before the response");
            inbox.fail(call, UpstreamError::Closed { upstream: self.0.label.clone(), source: cause });
        }
    }

    /// One attempt to open the standalone `GET` stream.
    async fn get_standalone(&self, last_event_id: Option<&str>) -> Result<reqwest::Response, UpstreamError> {
        self.get(last_event_id).await?.send().await.map_err(|e| self.http_error(e))
    }

    /// Keeps the standalone `GET` stream open while the session lives;
    /// `answered` fires once the first attempt has its answer.
    async fn standalone_stream(&self, answered: tokio::sync::oneshot::Sender<()>) {
        let mut cursor = StreamCursor::default();
        let mut backoff = DEFAULT_RETRY;
        let mut answered = Some(answered);
        loop {
            if self.is_closed() {
                return;
            }
            let response = tokio::select! {
                r = self.get_standalone(cursor.last_event_id.as_deref()) => r,
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
                    tokio::select! {
                        _ = cursor.read(self, r.bytes_stream(), None) => {}
                        _ = self.0.stop.cancelled() => return,
                    }
                }
                Ok(r) => {
                    tracing::debug!(upstream = %self.0.label, status = %r.status(), "standalone stream refused");
                    backoff = (backoff * 2).min(MAX_GET_BACKOFF);
                }
                Err(e) => {
                    tracing::debug!(upstream = %self.0.label, error = %e.report(), "standalone stream failed");
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
}

impl Transport for HttpTransport {
    fn request<'a>(
        &'a self,
        call: u64,
        message: &'a Message,
    ) -> BoxFuture<'a, Result<Option<Response>, UpstreamError>> {
        // Boxed: the exchange is a large future.
        crate::boxed::pinned(|| self.exchange(call, message.encode().into_bytes(), trace_headers(message), None))
    }

    fn request_modern<'a>(
        &'a self,
        call: u64,
        message: &'a Message,
        text: Vec<u8>,
        headers: HeaderMap,
    ) -> BoxFuture<'a, Result<Option<Response>, UpstreamError>> {
        let trace = trace_headers(message);
        crate::boxed::pinned(|| self.exchange(call, text, trace, Some(headers)))
    }

    fn carries_headers(&self) -> bool {
        true
    }

    fn abandon(&self, call: u64) {
        if let Some(stop) = self.0.modern_streams.lock().remove(&call) {
            stop.cancel();
        }
    }

    fn send_text<'a>(&'a self, _message: &'a Message, text: Vec<u8>) -> BoxFuture<'a, Result<(), UpstreamError>> {
        Box::pin(self.send_other(text))
    }

    /// Sends `MCP-Protocol-Version` from now on and opens the standalone stream.
    fn established(&self, version: Version) -> BoxFuture<'_, ()> {
        let _ = self.0.version.set(version);
        Box::pin(self.open_standalone())
    }

    fn attributes_calls(&self) -> bool {
        true
    }

    /// Stops the standalone stream and DELETEs the session.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.0.stop.cancel();
            if self.0.session_id.lock().is_none() {
                return;
            }
            let delete = async {
                let req = self.with_session_headers(self.0.client.delete(self.0.target.url.clone())).await?;
                req.send().await.map_err(|e| self.http_error(e))
            };
            let _ = tokio::time::timeout(Duration::from_secs(2), delete).await;
        })
    }
}

fn unavailable(upstream: Arc<str>, source: Cause) -> UpstreamError {
    UpstreamError::Unavailable { upstream, source }
}

fn closed(upstream: Arc<str>, source: Cause) -> UpstreamError {
    UpstreamError::Closed { upstream, source }
}

fn http(upstream: Arc<str>, source: Cause) -> UpstreamError {
    UpstreamError::Http { upstream, source }
}

fn protocol_error(upstream: Arc<str>, source: Cause) -> UpstreamError {
    UpstreamError::Protocol { upstream, source }
}

/// The answer to a POST, from either client (the lean one's with the
/// connection it came on, which its reader drives).
enum Posted<'a> {
    Reqwest(reqwest::Response),
    Plain(http::Response<hyper::body::Incoming>, plain::Lease<'a>),
}

impl Posted<'_> {
    fn status(&self) -> StatusCode {
        match self {
            Posted::Reqwest(r) => r.status(),
            Posted::Plain(r, _) => r.status(),
        }
    }

    fn headers(&self) -> &HeaderMap {
        match self {
            Posted::Reqwest(r) => r.headers(),
            Posted::Plain(r, _) => r.headers(),
        }
    }

    /// The whole body, of at most `max_message_bytes`.
    async fn bytes(self, transport: &HttpTransport) -> Result<Bytes, UpstreamError> {
        let limit = transport.0.target.max_message_bytes;
        let too_large = || {
            transport.error(http, Cause::msg(format!("the response is larger than {limit} bytes (max_message_bytes)")))
        };
        match self {
            Posted::Reqwest(mut r) => {
                if r.content_length().is_some_and(|n| n > limit as u64) {
                    return Err(too_large());
                }
                let mut body = Chunks::default();
                while let Some(chunk) = r.chunk().await.map_err(|e| transport.http_error(e))? {
                    if body.len() + chunk.len() > limit {
                        return Err(too_large());
                    }
                    body.push(chunk);
                }
                Ok(body.into_bytes())
            }
            Posted::Plain(r, mut lease) => {
                use http_body_util::BodyExt as _;
                let mut body = r.into_body();
                // Chunks, not `collect`: the usual answer is one chunk, kept
                // as it came.
                let read = lease
                    .drive(async {
                        let mut chunks = Chunks::default();
                        while let Some(frame) = body.frame().await {
                            let Ok(data) = frame?.into_data() else { continue };
                            if chunks.len() + data.len() > limit {
                                return Ok(None);
                            }
                            chunks.push(data);
                        }
                        Ok::<_, hyper::Error>(Some(chunks.into_bytes()))
                    })
                    .await;
                match read {
                    Ok(Some(bytes)) => {
                        lease.release();
                        Ok(bytes)
                    }
                    Ok(None) => Err(too_large()),
                    Err(e) => {
                        let make = if lost::connection_lost(&e) { closed } else { http };
                        Err(transport.error(make, Cause::msg(e.to_string())))
                    }
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
    /// Feeds every message of an SSE stream into the inbox, remembering the
    /// last event id and `retry`, until the stream ends or (for a request's
    /// stream) the response has arrived. Events with empty data (priming
    /// events) carry only those.
    async fn read<E: std::error::Error + Send + Sync + 'static>(
        &mut self,
        transport: &HttpTransport,
        stream: impl Stream<Item = Result<Bytes, E>> + Unpin,
        call: Option<u64>,
    ) {
        let mut events = SseByteStream::new(CappedEvents::new(stream, transport.0.target.max_message_bytes));
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(e) => e,
                Err(e) => {
                    tracing::debug!(upstream = %transport.0.label, error = %e, "SSE stream broke");
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
                transport.deliver(message, call);
            }
            // A request's stream has nothing more to say once it carried the
            // response; stop reading even if the server keeps it open (a
            // resumed `GET` often is), so the connection is not held.
            if call.is_some_and(|id| !transport.is_waiting(id)) {
                return;
            }
        }
    }
}

/// Decodes a JSON body or SSE data: one message or a batch (elements that
/// are not messages are dropped).
pub(super) fn decode_body(bytes: &[u8]) -> impl Iterator<Item = Message> {
    Body::decode(bytes).ok().into_iter().flat_map(|body| body.into_messages(|_| {}))
}
