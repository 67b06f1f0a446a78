use std::time::Instant;

use parking_lot::Mutex;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::*;
use crate::client::peer::Peer;
use crate::client::{Call, PeerEvents};
use crate::jsonrpc::{Notification, Request};

fn url(s: &str) -> reqwest::Url {
    reqwest::Url::parse(s).expect("test URL")
}

#[test]
fn endpoints_resolve_against_the_stream_url() {
    let base = url("http://127.0.0.1:8931/sse");
    let cases = [
        ("/messages?sessionId=abc", "http://127.0.0.1:8931/messages?sessionId=abc"),
        ("  /messages/?session_id=x y\n", "http://127.0.0.1:8931/messages/?session_id=x%20y"),
        ("messages?sessionId=1", "http://127.0.0.1:8931/messages?sessionId=1"),
        ("http://127.0.0.1:8931/other/path", "http://127.0.0.1:8931/other/path"),
    ];
    for (data, expected) in cases {
        assert_eq!(resolve_endpoint(&base, data).map(String::from), Ok(expected.to_owned()), "{data:?}");
    }
    // The default port, spelled out or not, is the same origin.
    let https = url("https://mcp.example.com/v1/sse");
    assert_eq!(
        resolve_endpoint(&https, "https://mcp.example.com:443/v1/messages").map(String::from),
        Ok("https://mcp.example.com/v1/messages".to_owned())
    );
}

#[test]
fn endpoints_on_another_origin_are_refused() {
    let base = url("http://127.0.0.1:8931/sse");
    for data in [
        "http://127.0.0.2:8931/messages",
        "http://127.0.0.1:8932/messages",
        "https://127.0.0.1:8931/messages",
        "//evil.example/messages",
        "http://evil.example/messages?sessionId=1",
        "data:text/plain,hello",
        "javascript:alert(1)",
    ] {
        let refused = resolve_endpoint(&base, data).expect_err(data);
        assert!(refused.contains("not on the event stream's origin http://127.0.0.1:8931"), "{data:?}: {refused}");
    }
    assert!(resolve_endpoint(&base, "  ").is_err());
    assert!(resolve_endpoint(&base, "http://[::1").is_err());
}

/// What the canned server answers.
struct Script {
    content_type: &'static str,
    /// The event stream's bytes.
    body: String,
    /// Keep the stream open after `body` (until the client drops it).
    hold_open: bool,
    /// Status of every POST.
    post_status: u16,
}

/// A request as received: the head (lowercased) and the body.
#[derive(Debug)]
struct Seen {
    head: String,
    body: String,
}

async fn bind() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    (listener, format!("http://127.0.0.1:{port}"))
}

/// Serves `script` on `listener`, one request per connection; reports every
/// request, and for a held stream when the client closed it.
fn serve(listener: TcpListener, script: Script) -> mpsc::UnboundedReceiver<Seen> {
    let (tx, rx) = mpsc::unbounded_channel();
    let script = Arc::new(script);
    crate::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (tx, script) = (tx.clone(), script.clone());
            crate::spawn(async move {
                let mut socket = BufReader::new(socket);
                let mut head = String::new();
                loop {
                    let mut line = String::new();
                    if socket.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    if line == "\r\n" {
                        break;
                    }
                    head.push_str(&line.to_ascii_lowercase());
                }
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                let mut body = vec![0; length];
                let _ = socket.read_exact(&mut body).await;
                let is_get = head.starts_with("get ");
                let _ = tx.send(Seen { head, body: String::from_utf8_lossy(&body).into_owned() });
                let socket = socket.get_mut();
                if is_get {
                    let start = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: {}\r\nconnection: close\r\n\r\n",
                        script.content_type
                    );
                    let _ = socket.write_all(start.as_bytes()).await;
                    let _ = socket.write_all(script.body.as_bytes()).await;
                    let _ = socket.flush().await;
                    if script.hold_open {
                        // Returns when the client goes away.
                        let mut rest = Vec::new();
                        let _ = socket.read_to_end(&mut rest).await;
                        let _ = tx.send(Seen { head: "stream closed".into(), body: String::new() });
                    }
                } else {
                    let answer =
                        format!("HTTP/1.1 {} Whatever\r\ncontent-length: 8\r\n\r\nAccepted", script.post_status);
                    let _ = socket.write_all(answer.as_bytes()).await;
                }
            });
        }
    });
    rx
}

/// Opens the legacy stream at `url` as a configured upstream would.
async fn open_at(url: &str, timeout: &str) -> Result<Opened, UpstreamError> {
    let mut headers = http::HeaderMap::new();
    let mut key = http::HeaderValue::from_static("secret");
    key.set_sensitive(true);
    headers.insert("x-api-key", key);
    let target =
        HttpTarget { url: url.parse().expect("url"), headers, max_message_bytes: 16 * 1024 * 1024, credentials: None };
    let timeout = humantime::parse_duration(timeout).expect("timeout");
    open(&target, &label(), client(), timeout).await
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().expect("client")
}

fn label() -> Arc<str> {
    Arc::from("legacy")
}

fn sse_script(body: String, hold_open: bool, post_status: u16) -> Script {
    Script { content_type: "text/event-stream", body, hold_open, post_status }
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.expect("a request in time").expect("server alive")
}

#[tokio::test]
async fn open_waits_for_the_endpoint_and_sends_the_configured_headers() {
    let (listener, base) = bind().await;
    let body =
        ": keep-alive\n\nevent: noise\ndata: before the endpoint\n\nevent: endpoint\ndata: /messages?sessionId=abc\n\n";
    let mut seen = serve(listener, sse_script(body.into(), true, 202));
    let opened = open_at(&format!("{base}/sse"), "5s").await.expect("opened");
    assert_eq!(opened.transport.endpoint.as_str(), format!("{base}/messages?sessionId=abc"));
    let get = next(&mut seen).await;
    assert!(get.head.starts_with("get /sse "), "{}", get.head);
    assert!(get.head.contains("accept: text/event-stream"), "{}", get.head);
    assert!(get.head.contains("x-api-key: secret"), "{}", get.head);
}

#[tokio::test]
async fn open_refuses_an_endpoint_on_another_origin() {
    let (listener, base) = bind().await;
    let port = base.rsplit(':').next().unwrap_or_default();
    let body = format!("event: endpoint\ndata: http://127.0.0.2:{port}/messages?sessionId=abc\n\n");
    let _seen = serve(listener, sse_script(body, true, 202));
    let e = open_at(&format!("{base}/sse"), "5s").await.err().expect("refused");
    assert!(matches!(e, UpstreamError::Start { .. }), "{e:?}");
    assert!(e.report().to_string().contains("not on the event stream's origin"), "{}", e.report());
}

#[tokio::test]
async fn open_times_out_without_an_endpoint_event() {
    let (listener, base) = bind().await;
    let _seen = serve(listener, sse_script(": nothing yet\n\n".into(), true, 202));
    let started = Instant::now();
    let e = open_at(&format!("{base}/sse"), "300ms").await.err().expect("timed out");
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert!(e.report().to_string().contains("no endpoint event"), "{}", e.report());
}

#[tokio::test]
async fn open_fails_when_the_stream_ends_or_is_not_an_event_stream() {
    let (listener, base) = bind().await;
    let _seen = serve(listener, sse_script("event: message\ndata: {}\n\n".into(), false, 202));
    let e = open_at(&format!("{base}/sse"), "5s").await.err().expect("failed");
    assert!(e.report().to_string().contains("ended before its endpoint event"), "{}", e.report());

    let (listener, base) = bind().await;
    let script = Script { content_type: "application/json", body: "{}".into(), hold_open: false, post_status: 202 };
    let _seen = serve(listener, script);
    let e = open_at(&format!("{base}/mcp"), "5s").await.err().expect("failed");
    assert!(e.report().to_string().contains("not an event stream"), "{}", e.report());

    // Nothing listening: unavailable, not a protocol failure.
    let (listener, base) = bind().await;
    drop(listener);
    let e = open_at(&format!("{base}/sse"), "5s").await.err().expect("failed");
    assert!(matches!(e, UpstreamError::Unavailable { .. }), "{e:?}");
}

/// Records what a peer reports.
#[derive(Default)]
struct Recorder {
    notifications: Mutex<Vec<String>>,
    closed: Mutex<Option<String>>,
}

impl PeerEvents for Recorder {
    fn notification(&self, _peer: &Arc<Peer>, notification: Notification) {
        self.notifications.lock().push(notification.method);
    }

    fn request(&self, _peer: Arc<Peer>, request: Request, _cancel: CancellationToken) {
        self.notifications.lock().push(format!("request {}", request.method));
    }

    fn closed(&self, _peer: &Arc<Peer>, reason: &str) {
        *self.closed.lock() = Some(reason.to_owned());
    }
}

fn peer_over(opened: Opened, recorder: Arc<Recorder>) -> Arc<Peer> {
    Peer::new(label(), |inbox| Box::new(opened.start(inbox)), recorder, false)
}

#[tokio::test]
async fn messages_reach_the_peer_and_the_end_of_the_stream_closes_it() {
    let (listener, base) = bind().await;
    let body = concat!(
        "event: endpoint\ndata: /messages?sessionId=abc\n\n",
        // No event type: a message.
        "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/prompts/list_changed\"}\n\n",
        "event: other\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/ignored\"}\n\n",
        "event: message\ndata: not json\n\n",
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"roots/list\"}\n\n",
    );
    let _seen = serve(listener, sse_script(body.into(), false, 202));
    let opened = open_at(&format!("{base}/sse"), "5s").await.expect("opened");
    let recorder = Arc::new(Recorder::default());
    let peer = peer_over(opened, recorder.clone());
    tokio::time::timeout(Duration::from_secs(5), peer.closed().cancelled()).await.expect("closed in time");
    assert_eq!(
        *recorder.notifications.lock(),
        ["notifications/tools/list_changed", "notifications/prompts/list_changed", "request roots/list"]
    );
    assert_eq!(recorder.closed.lock().as_deref(), Some("the upstream closed the event stream"));
}

#[tokio::test]
async fn messages_are_posted_to_the_endpoint_and_shutdown_drops_the_stream() {
    let (listener, base) = bind().await;
    let mut seen = serve(listener, sse_script("event: endpoint\ndata: /messages?sessionId=abc\n\n".into(), true, 202));
    let opened = open_at(&format!("{base}/sse"), "5s").await.expect("opened");
    let recorder = Arc::new(Recorder::default());
    let peer = peer_over(opened, recorder.clone());
    next(&mut seen).await; // the GET
    peer.notify("notifications/initialized", None).await;
    let post = next(&mut seen).await;
    assert!(post.head.starts_with("post /messages?sessionid=abc "), "{}", post.head);
    assert!(post.head.contains("content-type: application/json"), "{}", post.head);
    assert!(post.head.contains("x-api-key: secret"), "{}", post.head);
    assert_eq!(post.body, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    peer.shutdown().await;
    assert_eq!(next(&mut seen).await.head, "stream closed");
    assert_eq!(recorder.closed.lock().as_deref(), Some("shut down by toolgate"));
}

#[tokio::test]
async fn a_forgotten_connection_fails_the_call_and_closes_the_peer() {
    let (listener, base) = bind().await;
    let _seen = serve(listener, sse_script("event: endpoint\ndata: /messages?sessionId=abc\n\n".into(), true, 404));
    let opened = open_at(&format!("{base}/sse"), "5s").await.expect("opened");
    let peer = peer_over(opened, Arc::new(Recorder::default()));
    let e = peer.call(Call::new("tools/list", None)).await.expect_err("failed");
    assert!(matches!(e, UpstreamError::SessionExpired { .. }), "{e:?}");
    assert!(peer.is_closed());
}
