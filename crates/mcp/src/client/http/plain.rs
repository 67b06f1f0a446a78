//! A lean HTTP/1.1 client for the hot path: POSTs to a plain `http://`
//! upstream over keep-alive connections driven directly by hyper.
//!
//! reqwest, which serves everything else (https, the standalone `GET`
//! stream, `DELETE`, notifications), spends about 40,000 instructions per
//! request on redirect and retry bookkeeping (it parses the URL again twice
//! per request): a third of what a proxied call costs toolgate. This client
//! is used only where reqwest would add nothing: an `http://` URL without
//! credentials, and no proxy configured in the environment.
//!
//! An idle connection has no task of its own: the call that takes it drives
//! it ([`Lease::drive`]) while it sends the request and reads a JSON answer,
//! so the exchange stays in the caller's task. A task driving the
//! connection would cost two hand-offs between tasks per call (request to
//! it, answer back), each often a wake-up of another worker thread. A
//! connection whose answer is read elsewhere (an SSE stream read on a task
//! of its own), or whose call was given up, gets a task of its own and is
//! reused from there, as before ([`Lease::detach`]).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderMap, HeaderValue, Request, Response, Uri, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::{Connection, SendRequest};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;

mod length;

/// Connections kept for reuse, idle or still reading a response.
const MAX_POOLED: usize = 256;
/// How long opening a connection may take (as for the reqwest client).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Environment variables that make reqwest use a proxy.
const PROXY_VARS: [&str; 6] = ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "https_proxy", "HTTPS_PROXY"];

/// One connection's I/O, driven by whoever polls it.
type Conn = Pin<Box<Connection<TokioIo<tokio::net::TcpStream>, Payload>>>;

/// A request body: the text as it was written, sent from its own buffer
/// (a `Bytes` made of it would cost an allocation of its own).
type Payload = Full<std::io::Cursor<Vec<u8>>>;

/// Why a POST failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PlainError {
    /// Nothing accepted the connection (the upstream is down).
    #[error("cannot connect to {authority}")]
    Connect {
        authority: String,
        #[source]
        source: std::io::Error,
    },
    /// The HTTP exchange failed.
    #[error("the HTTP exchange failed")]
    Http(#[from] hyper::Error),
    /// The request could not be built.
    #[error("the request could not be built")]
    Build(#[from] http::Error),
}

/// A pooled connection.
enum Pooled {
    /// Idle, with no task: the next call drives it.
    Idle(SendRequest<Payload>, Conn),
    /// Driven by a task of its own; ready again once its response is read
    /// (hyper reports it so).
    Detached(SendRequest<Payload>),
}

/// Keep-alive HTTP/1.1 connections to one upstream endpoint.
pub(crate) struct PlainClient {
    /// Host to connect to (an IPv6 address without brackets).
    host: String,
    port: u16,
    /// The `Host` header.
    authority: HeaderValue,
    /// The request target: path and query.
    target: Uri,
    /// Connections not in use by a call.
    pool: Mutex<Vec<Pooled>>,
}

/// A connection in use by one call. Dropped before [`Lease::release`] (an
/// answer not read to its end, a call given up), the connection gets a task
/// of its own that finishes the exchange, and is pooled from there.
pub(crate) struct Lease<'a> {
    client: &'a PlainClient,
    sender: Option<SendRequest<Payload>>,
    /// The connection's I/O while this call drives it; `None` once it
    /// closed, or for a connection driven by a task of its own.
    conn: Option<Conn>,
}

impl PlainClient {
    /// A client for `url`, if it is one this client serves.
    pub(crate) fn for_url(url: &reqwest::Url) -> Option<Self> {
        if url.scheme() != "http" || !url.username().is_empty() || url.password().is_some() {
            return None;
        }
        if PROXY_VARS.iter().any(|v| std::env::var_os(v).is_some()) {
            return None;
        }
        let host = match url.host()? {
            url::Host::Ipv6(addr) => addr.to_string(),
            other => other.to_string(),
        };
        let port = url.port_or_known_default()?;
        let authority = match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            (None, _) => return None,
        };
        let target = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        };
        Some(Self {
            host,
            port,
            authority: HeaderValue::from_str(&authority).ok()?,
            target: target.parse().ok()?,
            pool: Mutex::new(Vec::new()),
        })
    }

    /// POSTs `body` with `headers` and returns the response head, and the
    /// connection, which must be driven while the body is read
    /// ([`Lease::drive`]). A request that never reached a pooled connection
    /// (it closed meanwhile) is sent again on a new one.
    pub(crate) async fn post(
        &self,
        headers: HeaderMap,
        body: Vec<u8>,
    ) -> Result<(Response<Incoming>, Lease<'_>), PlainError> {
        let length = length::content_length(body.len());
        let mut request = Request::post(self.target.clone()).body(Full::new(std::io::Cursor::new(body)))?;
        *request.headers_mut() = headers;
        request.headers_mut().insert(header::HOST, self.authority.clone());
        request.headers_mut().insert(header::CONTENT_LENGTH, length);
        let mut fresh = false;
        loop {
            let mut lease = match self.idle().filter(|_| !fresh) {
                Some(lease) => lease,
                None => self.connect().await?,
            };
            let Some(sender) = lease.sender.as_mut() else { unreachable!("a lease holds its sender until dropped") };
            let sent = drive(&mut lease.conn, sender.try_send_request(request)).await;
            match sent {
                Ok(response) => return Ok((response, lease)),
                Err(mut e) => match e.take_message() {
                    Some(unsent) if !fresh => {
                        request = unsent;
                        fresh = true;
                    }
                    _ => return Err(e.into_error().into()),
                },
            }
        }
    }

    /// A pooled connection ready for a request; closed ones are dropped.
    fn idle(&self) -> Option<Lease<'_>> {
        let mut pool = self.pool.lock();
        // The newest first: its buffers are the likeliest to be warm.
        let mut i = pool.len();
        while i > 0 {
            i -= 1;
            let ready = match &mut pool[i] {
                Pooled::Idle(sender, conn) => {
                    // One poll lets it notice a close (or an idle timeout)
                    // that came while nobody drove it.
                    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
                    match conn.as_mut().poll(&mut cx) {
                        Poll::Ready(_) => None,
                        Poll::Pending => Some(sender.is_ready()),
                    }
                }
                Pooled::Detached(sender) => (!sender.is_closed()).then(|| sender.is_ready()),
            };
            match ready {
                None => {
                    pool.swap_remove(i);
                }
                Some(true) => {
                    let (sender, conn) = match pool.swap_remove(i) {
                        Pooled::Idle(sender, conn) => (sender, Some(conn)),
                        Pooled::Detached(sender) => (sender, None),
                    };
                    return Some(Lease { client: self, sender: Some(sender), conn });
                }
                Some(false) => {}
            }
        }
        None
    }

    fn keep(&self, pooled: Pooled) {
        let mut pool = self.pool.lock();
        if pool.len() < MAX_POOLED {
            pool.push(pooled);
        }
    }

    async fn connect(&self) -> Result<Lease<'_>, PlainError> {
        let connect_error = |source: std::io::Error| PlainError::Connect {
            authority: self.authority.to_str().unwrap_or_default().to_owned(),
            source,
        };
        let timed_out = || std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out");
        let tcp =
            tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect((self.host.as_str(), self.port)))
                .await
                .map_err(|_| connect_error(timed_out()))?
                .map_err(connect_error)?;
        // Requests and answers are small writes; Nagle would delay them.
        let _ = tcp.set_nodelay(true);
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
        let mut lease = Lease { client: self, sender: Some(sender), conn: Some(Box::pin(conn)) };
        let Some(sender) = lease.sender.as_mut() else { unreachable!("just set") };
        drive(&mut lease.conn, sender.ready()).await?;
        Ok(lease)
    }
}

impl Lease<'_> {
    /// Runs `work` (reading the response body) while driving the connection.
    pub(crate) async fn drive<F: Future>(&mut self, work: F) -> F::Output {
        drive(&mut self.conn, work).await
    }

    /// The answer has been read: the connection goes back to the pool idle,
    /// unless it closed.
    pub(crate) fn release(mut self) {
        let Some(sender) = self.sender.take() else { return };
        match self.conn.take() {
            Some(conn) => self.client.keep(Pooled::Idle(sender, conn)),
            None if !sender.is_closed() => self.client.keep(Pooled::Detached(sender)),
            None => {}
        }
    }

    /// The answer is read elsewhere (an SSE stream, on a task of its own):
    /// the connection gets a task that drives it, and is reused once its
    /// response is done.
    pub(crate) fn detach(mut self) {
        self.detach_conn();
    }

    fn detach_conn(&mut self) {
        let Some(sender) = self.sender.take() else { return };
        if let Some(conn) = self.conn.take() {
            // Dropped outside the runtime (at exit): the connection just closes.
            if tokio::runtime::Handle::try_current().is_err() {
                return;
            }
            crate::spawn(async move {
                if let Err(e) = conn.await {
                    tracing::debug!(error = %e, "upstream HTTP connection ended");
                }
            });
        }
        if !sender.is_closed() {
            self.client.keep(Pooled::Detached(sender));
        }
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.detach_conn();
    }
}

/// Runs `work` while driving `conn` (if this call drives it). When the
/// connection ends it is dropped, which fails whatever waits on it.
async fn drive<F: Future>(conn: &mut Option<Conn>, work: F) -> F::Output {
    let mut work = std::pin::pin!(work);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = work.as_mut().poll(cx) {
            return Poll::Ready(out);
        }
        let Some(c) = conn.as_mut() else { return Poll::Pending };
        if let Poll::Ready(ended) = c.as_mut().poll(cx) {
            if let Err(e) = ended {
                tracing::debug!(error = %e, "upstream HTTP connection ended");
            }
            *conn = None;
        }
        // What the connection just read may have completed the work: take
        // it now rather than after a wake-up of this task.
        work.as_mut().poll(cx)
    })
    .await
}

#[cfg(test)]
mod tests;
