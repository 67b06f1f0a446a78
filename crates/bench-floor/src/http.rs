//! `toolgate-floor-http [--listen ADDR] URL`: the floor of the benchmark's
//! HTTP leg. Forwards every request to the Streamable HTTP server at `URL`
//! (its scheme and authority; the request's own path and query are kept)
//! over a pooled HTTP/1.1 client: method, body and end-to-end headers
//! (`Mcp-Session-Id`, `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`,
//! `Accept`, `Content-Type`, `Last-Event-ID`, ...) as they came, and the
//! upstream's status, headers and body (JSON or an SSE stream, streamed as
//! it arrives) back. Nothing is parsed or buffered; only the hop-by-hop
//! headers of each side stay on that side. See the crate's documentation.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{Either, Empty};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderName};
use hyper::http::uri::{Authority, Scheme};
use hyper::{Request, Response, StatusCode, Uri, Version};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use toolgate_bench_floor as floor;

#[global_allocator]
static ALLOCATOR: toolgate_alloc::Allocator = toolgate_alloc::Allocator;

/// Headers that belong to one connection, not to the message (RFC 9110,
/// 7.6.1), and `Host`, which the client sets for the upstream.
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::TRANSFER_ENCODING,
    header::TE,
    header::TRAILER,
    header::UPGRADE,
    header::HOST,
];

struct Upstream {
    client: Client<HttpConnector, Incoming>,
    scheme: Scheme,
    authority: Authority,
}

type Body = Either<Incoming, Empty<Bytes>>;

fn main() {
    let (listen, rest) = floor::args();
    let [url] = rest.as_slice() else { floor::fail("usage: toolgate-floor-http [--listen ADDR] URL") };
    let url: Uri = url.parse().unwrap_or_else(|e| floor::fail(&format!("{url:?}: {e}")));
    let (Some(scheme), Some(authority)) = (url.scheme().cloned(), url.authority().cloned()) else {
        floor::fail("URL needs a scheme and a host")
    };
    if scheme != Scheme::HTTP {
        floor::fail("only http:// upstreams");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    runtime.block_on(async {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        // HTTP/1.1 (the client's default), connections kept and reused.
        let client = Client::builder(TokioExecutor::new()).build(connector);
        let upstream = Arc::new(Upstream { client, scheme, authority });
        let served = floor::serve(listen, move |req| forward(upstream.clone(), req)).await;
        if let Err(e) = served {
            floor::fail(&format!("listening on {listen}: {e}"));
        }
    });
}

async fn forward(upstream: Arc<Upstream>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let (mut parts, body) = req.into_parts();
    let mut uri = Uri::builder().scheme(upstream.scheme.clone()).authority(upstream.authority.clone());
    if let Some(path) = parts.uri.path_and_query() {
        uri = uri.path_and_query(path.clone());
    }
    parts.uri = match uri.build() {
        Ok(uri) => uri,
        Err(_) => return Ok(status(StatusCode::BAD_REQUEST)),
    };
    // The client may have come over HTTP/2; the upstream leg is HTTP/1.1.
    parts.version = Version::HTTP_11;
    strip(&mut parts.headers);
    match upstream.client.request(Request::from_parts(parts, body)).await {
        Ok(response) => {
            let (mut parts, body) = response.into_parts();
            strip(&mut parts.headers);
            Ok(Response::from_parts(parts, Either::Left(body)))
        }
        Err(e) => {
            eprintln!("toolgate-floor-http: upstream: {e}");
            Ok(status(StatusCode::BAD_GATEWAY))
        }
    }
}

/// Leaves out the hop-by-hop headers (in place: the rest are not touched).
fn strip(headers: &mut HeaderMap) {
    for name in &HOP_BY_HOP {
        if headers.contains_key(name) {
            headers.remove(name);
        }
    }
}

fn status(code: StatusCode) -> Response<Body> {
    let mut response = Response::new(Either::Right(Empty::new()));
    *response.status_mut() = code;
    response
}
