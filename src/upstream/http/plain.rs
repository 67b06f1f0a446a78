//! A lean HTTP/1.1 client for the hot path: POSTs to a plain `http://`
//! upstream over keep-alive connections driven directly by hyper.
//!
//! reqwest, which serves everything else (https, the standalone `GET`
//! stream, `DELETE`, notifications), spends about 40,000 instructions per
//! request on redirect and retry bookkeeping (it parses the URL again twice
//! per request): a third of what a proxied call costs toolgate. This client
//! is used only where reqwest would add nothing: an `http://` URL without
//! credentials, and no proxy configured in the environment.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, Uri, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;

/// Connections kept for reuse, idle or still reading a response.
const MAX_POOLED: usize = 256;
/// How long opening a connection may take (as for the reqwest client).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Environment variables that make reqwest use a proxy.
const PROXY_VARS: [&str; 6] = ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "https_proxy", "HTTPS_PROXY"];

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

/// Keep-alive HTTP/1.1 connections to one upstream endpoint.
pub(crate) struct PlainClient {
    /// Host to connect to (an IPv6 address without brackets).
    host: String,
    port: u16,
    /// The `Host` header.
    authority: HeaderValue,
    /// The request target: path and query.
    target: Uri,
    /// Connections, each idle or busy with a response being read (hyper
    /// reports a connection ready again once its response body is done).
    pool: Mutex<Vec<SendRequest<Full<Bytes>>>>,
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

    /// POSTs `body` with `headers` and returns the response head; its body
    /// is read by the caller. A request that never reached a pooled
    /// connection (it closed meanwhile) is sent again on a new one.
    pub(crate) async fn post(&self, headers: HeaderMap, body: Bytes) -> Result<Response<Incoming>, PlainError> {
        let mut request = Request::post(self.target.clone()).body(Full::new(body))?;
        *request.headers_mut() = headers;
        request.headers_mut().insert(header::HOST, self.authority.clone());
        let mut fresh = false;
        loop {
            let mut sender = match self.idle().filter(|_| !fresh) {
                Some(sender) => sender,
                None => self.connect().await?,
            };
            match sender.try_send_request(request).await {
                Ok(response) => {
                    self.keep(sender);
                    return Ok(response);
                }
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

    /// A pooled connection ready for a request.
    fn idle(&self) -> Option<SendRequest<Full<Bytes>>> {
        let mut pool = self.pool.lock();
        pool.retain(|s| !s.is_closed());
        let ready = pool.iter().position(SendRequest::is_ready)?;
        Some(pool.swap_remove(ready))
    }

    /// Returns a connection to the pool; it is picked again once its
    /// response has been read.
    fn keep(&self, sender: SendRequest<Full<Bytes>>) {
        let mut pool = self.pool.lock();
        if pool.len() < MAX_POOLED {
            pool.push(sender);
        }
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, PlainError> {
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
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
        crate::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "upstream HTTP connection ended");
            }
        });
        sender.ready().await?;
        Ok(sender)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_urls_without_credentials() {
        if PROXY_VARS.iter().any(|v| std::env::var_os(v).is_some()) {
            return; // a proxy is configured: everything goes through reqwest
        }
        let client = |u: &str| PlainClient::for_url(&reqwest::Url::parse(u).unwrap());
        let c = client("http://127.0.0.1:8931/mcp?x=1").expect("plain http");
        assert_eq!((c.host.as_str(), c.port), ("127.0.0.1", 8931));
        assert_eq!(c.authority, "127.0.0.1:8931");
        assert_eq!(c.target, "/mcp?x=1");
        let v6 = client("http://[::1]:80/mcp").expect("IPv6");
        assert_eq!((v6.host.as_str(), v6.port), ("::1", 80));
        assert_eq!(v6.authority, "[::1]", "the default port is left out, as in the URL");
        assert!(client("https://example.com/mcp").is_none(), "TLS goes through reqwest");
        assert!(client("http://user:pw@127.0.0.1/mcp").is_none(), "credentials go through reqwest");
    }
}
