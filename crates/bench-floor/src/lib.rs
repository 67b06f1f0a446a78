//! The floor of toolgate's overhead benchmark: what a gateway hop costs at
//! the least. Two bare forwarders, each about 200 lines of hyper and
//! serde_json, run by `benches/overhead` in the same rounds as toolgate:
//!
//! - `toolgate-floor-http URL`: forwards each request (method, path, body
//!   and end-to-end headers, byte for byte) over a pooled HTTP/1.1 client to
//!   the Streamable HTTP server at `URL`, and its response (status, headers,
//!   body or SSE stream) back, parsing nothing.
//! - `toolgate-floor-stdio COMMAND [ARG...]`: starts one stdio MCP server,
//!   initializes it, and forwards each JSON-RPC request of a POST body to it
//!   as one line under an id of its own; the answer is routed back by that
//!   id, given the client's id again and returned as the POST's JSON answer.
//!   It answers `initialize` itself (a new `Mcp-Session-Id`, the child's own
//!   initialize result).
//!
//! Both listen on `--listen ADDR` (default `127.0.0.1:0`), speak HTTP/1.1
//! and HTTP/2 (as toolgate does), set `TCP_NODELAY`, and print
//! `LISTENING http://ADDR/mcp` on stdout once they accept connections (as
//! `toolgate-fixture --http` does). Only for benchmarks: no limits, no
//! timeouts, no authentication.

// One task per connection; no tracing at all.
#![allow(clippy::disallowed_methods)]

use std::convert::Infallible;
use std::future::Future;
use std::io::Write as _;
use std::net::SocketAddr;

use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

/// The MCP endpoint's path, on the forwarders as on the fixture.
pub const PATH: &str = "/mcp";

/// Splits `--listen ADDR` off the command line; the rest are the
/// forwarder's own arguments.
pub fn args() -> (SocketAddr, Vec<String>) {
    let mut listen: SocketAddr = ([127, 0, 0, 1], 0).into();
    let mut rest = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--listen" if rest.is_empty() => {
                let addr = args.next().unwrap_or_default();
                listen = addr.parse().unwrap_or_else(|e| fail(&format!("--listen {addr:?}: {e}")));
            }
            _ => rest.push(a),
        }
    }
    (listen, rest)
}

/// Prints `message` and exits with status 2.
pub fn fail(message: &str) -> ! {
    eprintln!("{}: {message}", std::env::args().next().unwrap_or_default());
    std::process::exit(2)
}

/// Binds `listen`, prints `LISTENING http://ADDR/mcp` and serves every
/// connection with `handle` until the process ends.
pub async fn serve<F, Fut, B>(listen: SocketAddr, handle: F) -> std::io::Result<()>
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Response<B>, Infallible>> + Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let listener = TcpListener::bind(listen).await?;
    let mut out = std::io::stdout();
    writeln!(out, "LISTENING http://{}{PATH}", listener.local_addr()?)?;
    out.flush()?;
    let builder = auto::Builder::new(TokioExecutor::new());
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of descriptors and the like: a later accept may do.
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (builder, handle) = (builder.clone(), handle.clone());
        tokio::spawn(async move {
            let _ = builder.serve_connection(TokioIo::new(stream), service_fn(handle)).await;
        });
    }
}
