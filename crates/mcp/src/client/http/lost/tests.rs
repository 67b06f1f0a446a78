//! A Streamable HTTP upstream whose connection goes away mid-call, against
//! real sockets: both clients (the lean one for plain `http://`, reqwest for
//! the rest) report the upstream closing the connection (`-32012`), while
//! nothing listening stays "unavailable" and a bad answer stays an HTTP error.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::super::HttpTransport;
use crate::client::HttpTarget;
use crate::client::error::UpstreamError;
use crate::client::transport::{Inbox, Transport};
use crate::jsonrpc::{Message, Request, codes};

/// An inbox that drops everything: these calls end in the exchange itself.
struct Nowhere;

impl Inbox for Nowhere {
    fn deliver(&self, _: Message, _: Option<u64>) {}
    fn is_waiting(&self, _: u64) -> bool {
        false
    }
    fn fail(&self, _: u64, _: UpstreamError) {}
    fn close(&self, _: &str) {}
}

/// How the fake upstream treats the one request it reads.
#[derive(Clone, Copy)]
enum Ending {
    /// Closes the connection without answering (a killed process's socket).
    Close,
    /// Resets the connection (RST) without answering.
    Reset,
    /// Sends a response head promising 100 bytes, 10 of them, then closes.
    CutBody,
    /// Answers 500 with a body that is no JSON-RPC.
    ServerError,
}

/// Serves every connection on a loopback port as `ending` says; returns its
/// address.
async fn upstream(ending: Ending) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    crate::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            crate::spawn(async move {
                read_head(&mut tcp).await;
                match ending {
                    Ending::Close => drop(tcp),
                    Ending::Reset => {
                        // A zero linger does not block on drop (the reason
                        // for the deprecation): it sends RST at once.
                        #[allow(deprecated)]
                        let _ = tcp.set_linger(Some(Duration::ZERO));
                        drop(tcp);
                    }
                    Ending::CutBody => {
                        let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n";
                        let _ = tcp.write_all(format!("{head}{{\"jsonrpc\"").as_bytes()).await;
                        drop(tcp);
                    }
                    Ending::ServerError => {
                        let answer = "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\n\r\noops";
                        let _ = tcp.write_all(answer.as_bytes()).await;
                        let _ = tcp.shutdown().await;
                    }
                }
            });
        }
    });
    addr.to_string()
}

/// Reads a request head and as much of its body as has arrived.
async fn read_head(tcp: &mut TcpStream) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match tcp.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    // The body (a small JSON-RPC request) follows at once.
    let _ = tokio::time::timeout(Duration::from_millis(100), tcp.read(&mut buf)).await;
}

/// One `tools/call` to `url` on a fresh transport.
async fn call(url: &str) -> UpstreamError {
    let target = Arc::new(HttpTarget {
        url: url.parse().expect("url"),
        headers: http::HeaderMap::new(),
        max_message_bytes: 1024 * 1024,
        credentials: None,
    });
    let inbox: Arc<dyn Inbox> = Arc::new(Nowhere);
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let transport = HttpTransport::new(&target, &"up".into(), client, Arc::downgrade(&inbox) as Weak<dyn Inbox>);
    let request =
        Message::Request(Request { id: crate::jsonrpc::Id::number(1), method: "tools/call".into(), params: None });
    let outcome = tokio::time::timeout(Duration::from_secs(10), transport.request(1, &request)).await.expect("hung");
    outcome.expect_err("the exchange cannot succeed")
}

/// Both clients: the lean one (plain URL) and reqwest (a URL with
/// credentials is never sent through the lean one).
fn urls(addr: &str) -> [String; 2] {
    [format!("http://{addr}/mcp"), format!("http://user:pw@{addr}/mcp")]
}

#[tokio::test]
async fn a_connection_lost_mid_call_is_the_upstream_closing_it() {
    for ending in [Ending::Close, Ending::Reset, Ending::CutBody] {
        let addr = upstream(ending).await;
        for url in urls(&addr) {
            let e = call(&url).await;
            assert!(matches!(e, UpstreamError::Closed { .. }), "{url}: {}", e.report());
            assert_eq!(e.to_error_object().code, codes::UPSTREAM_CLOSED, "{url}: {}", e.report());
        }
    }
}

#[tokio::test]
async fn nothing_listening_and_bad_answers_keep_their_own_errors() {
    // A port with nothing behind it (bound, then released).
    let free = TcpListener::bind("127.0.0.1:0").await.expect("bind").local_addr().expect("addr").to_string();
    for url in urls(&free) {
        let e = call(&url).await;
        assert!(matches!(e, UpstreamError::Unavailable { .. }), "{url}: {}", e.report());
    }
    let addr = upstream(Ending::ServerError).await;
    for url in urls(&addr) {
        let e = call(&url).await;
        assert!(matches!(e, UpstreamError::Http { .. }), "{url}: {}", e.report());
        assert_eq!(e.to_error_object().code, codes::INTERNAL_ERROR, "{url}: {}", e.report());
    }
}
