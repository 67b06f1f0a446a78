//! How often a request's future is polled while its answer is built: once
//! when it starts, then only when what it waits on wakes it. Each poll
//! walks the whole request down (in toolgate: the gateway's layers and the
//! upstream client), so a poll nothing asked for is pure cost. Through the
//! real listener and endpoint, on a current-thread runtime, so that nothing
//! runs between the connection task's polls but what the test releases.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

use crate::jsonrpc::{ErrorObject, Notification, Outcome, Request};
use crate::server::Engine;
use crate::server::handler::{Handler, InitContext, RequestCtx, ServerOffer};
use crate::server::http::{Guard, HttpOptions, ListenOptions, Server, app};
use crate::server::session::Session;
use crate::server::store::SessionStore;

/// Answers every request once released; counts the polls of its requests'
/// futures before the release (none is needed: nothing woke them).
#[derive(Default)]
struct Gated {
    release: Notify,
    released: AtomicBool,
    polls_before_release: AtomicUsize,
    /// Asks for a streamed answer, as toolgate's forwarder does for a tool
    /// call (then the answer waits out the streaming grace).
    prefer_stream: bool,
    /// Sends a notification about the request, then answers at once,
    /// ungated: the answer is ready as the work finishes, with a frame
    /// waiting before it.
    notify_first: bool,
}

/// `inner`, counting the polls that come before the handler is released.
struct Counted<'a, F> {
    gated: &'a Gated,
    inner: Pin<Box<F>>,
}

impl<F: Future> Future for Counted<'_, F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if !self.gated.released.load(Ordering::SeqCst) {
            self.gated.polls_before_release.fetch_add(1, Ordering::SeqCst);
        }
        self.inner.as_mut().poll(cx)
    }
}

impl Handler for Gated {
    type State = ();

    async fn initialize(self: &Arc<Self>, _: &InitContext) -> Result<(ServerOffer, ()), ErrorObject> {
        let offer = ServerOffer {
            capabilities: json!({"tools": {}}),
            server_info: json!({"name": "gated", "version": "1"}),
            instructions: None,
        };
        Ok((offer, ()))
    }

    async fn request(self: &Arc<Self>, _: &Arc<Session<()>>, _: Request, ctx: RequestCtx) -> Outcome {
        if self.prefer_stream {
            ctx.downlink.prefer_stream();
        }
        if self.notify_first {
            let note = Notification { method: "notifications/message".into(), params: Some(json!({"data": "first"})) };
            assert!(ctx.downlink.send(note));
            return Outcome::Result(json!({"done": true}));
        }
        let this = self.clone();
        // Released by a task of its own: on this current-thread runtime it
        // runs only once the connection's task has yielded.
        let releaser = self.clone();
        crate::spawn(async move {
            releaser.released.store(true, Ordering::SeqCst);
            releaser.release.notify_one();
        });
        Counted { gated: self, inner: Box::pin(async move { this.release.notified().await }) }.await;
        Outcome::Result(json!({"done": true}))
    }

    async fn notification(self: &Arc<Self>, _: &Arc<Session<()>>, _: Notification) {}

    async fn closed(self: &Arc<Self>, _: Arc<Session<()>>) {}
}

async fn serve(handler: Arc<Gated>) -> (Server, std::net::SocketAddr) {
    let (store, ended) = SessionStore::new(Duration::from_secs(60));
    let engine = Engine::start(handler, Arc::new(store), ended);
    let options = HttpOptions {
        path: "/mcp".into(),
        guard: Guard::new(&[], &[]),
        max_body_bytes: 64 * 1024,
        body_read_timeout: Duration::from_secs(5),
        keep_alive: Duration::from_secs(15),
        legacy_sse: false,
        admit: None,
    };
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (Server::start(listener, app(engine, options), ListenOptions::default()), addr)
}

/// POSTs `body` on `tcp` and reads the whole answer (a JSON one: its
/// length is known).
async fn post(tcp: &mut TcpStream, body: &str, session: Option<&str>) -> String {
    let session = session.map(|s| format!("Mcp-Session-Id: {s}\r\nMCP-Protocol-Version: 2025-11-25\r\n"));
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{}Content-Length: {}\r\n\r\n{body}",
        session.unwrap_or_default(),
        body.len()
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut buf)).await.unwrap().unwrap();
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length: ").map(str::to_owned))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .expect("a JSON answer has a length");
            if got.len() >= end + 4 + length {
                return text;
            }
        }
    }
}

/// Opens a session on `tcp`; its id.
async fn open_session(tcp: &mut TcpStream) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let answer = post(tcp, &init.to_string(), None).await;
    let session = answer
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("mcp-session-id: ").map(str::to_owned))
        .expect("a session id");
    session.trim().to_owned()
}

/// Opens a session and makes one request; the polls of that request's
/// future before it was released.
async fn polls_before_release(prefer_stream: bool) -> usize {
    let handler = Arc::new(Gated { prefer_stream, ..Gated::default() });
    let (_server, addr) = serve(handler.clone()).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let session = open_session(&mut tcp).await;
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x", "arguments": {}}});
    let answer = post(&mut tcp, &call.to_string(), Some(&session)).await;
    assert!(answer.starts_with("HTTP/1.1 200") && answer.contains(r#""done":true"#), "{answer}");
    handler.polls_before_release.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "current_thread")]
async fn a_request_is_polled_once_until_what_it_waits_on_wakes_it() {
    // Reading the request's body wakes the connection's own body sender,
    // and the connection's task runs again: the request is not polled for it.
    assert_eq!(polls_before_release(false).await, 1);
}

#[tokio::test(flavor = "current_thread")]
async fn asking_for_a_stream_does_not_poll_the_request_again() {
    // The answer loop sets up the streaming grace, then waits: the request,
    // just polled, is not polled again until it is woken.
    assert_eq!(polls_before_release(true).await, 1);
}

/// A request's answer is taken from its work as it finishes, but not ahead
/// of what the request sent before it: then the answer is a stream, the
/// notification first.
#[tokio::test(flavor = "current_thread")]
async fn frames_sent_before_an_answer_go_out_first() {
    let handler = Arc::new(Gated { notify_first: true, ..Gated::default() });
    let (_server, addr) = serve(handler).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let session = open_session(&mut tcp).await;
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x", "arguments": {}}});
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n\
         MCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n\r\n{call}",
        call.to_string().len()
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains(r#""done":true"#) {
        let n = tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut buf)).await.unwrap().unwrap();
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got).to_ascii_lowercase();
    assert!(text.contains("content-type: text/event-stream"), "{text}");
    let (note, answer) = (text.find("notifications/message"), text.find(r#""done":true"#));
    assert!(note.is_some_and(|n| answer.is_some_and(|a| n < a)), "the notification first: {text}");
}
