//! The stdio transport driven through a real pipe: framing, what bad lines
//! get, and how the end of input is handled.

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};

use super::*;
use crate::jsonrpc::{ErrorObject, Notification, Outcome, Request};
use crate::server::{InitContext, RequestCtx, ServerOffer, Session, SessionStore};

/// Answers `sleep` after `params.ms` milliseconds (or never, if cancelled
/// first), anything else at once with its method.
struct Sleeper;

impl Handler for Sleeper {
    type State = ();

    async fn initialize(self: &Arc<Self>, _: &InitContext) -> Result<(ServerOffer, ()), ErrorObject> {
        let offer = ServerOffer {
            capabilities: json!({}),
            server_info: json!({"name": "s", "version": "1"}),
            instructions: None,
        };
        Ok((offer, ()))
    }

    async fn request(self: &Arc<Self>, _: &Arc<Session<()>>, request: Request, ctx: RequestCtx) -> Outcome {
        if request.method == "sleep" {
            let ms = request.params.as_ref().and_then(|p| p["ms"].as_u64()).unwrap_or(0);
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                () = ctx.cancel.cancelled() => {}
            }
        }
        Outcome::Result(json!({"method": request.method}))
    }

    async fn notification(self: &Arc<Self>, _: &Arc<Session<()>>, _: Notification) {}

    async fn closed(self: &Arc<Self>, _: Arc<Session<()>>) {}
}

struct Pipe {
    writer: WriteHalf<DuplexStream>,
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    served: tokio::task::JoinHandle<io::Result<()>>,
}

impl Pipe {
    fn start() -> Pipe {
        let (store, ended) = SessionStore::new(Duration::from_secs(3600));
        let engine = Engine::start(Arc::new(Sleeper), Arc::new(store), ended);
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server);
        let served = crate::spawn(serve(engine, server_read, server_write));
        let (read, writer) = tokio::io::split(client);
        Pipe { writer, lines: BufReader::new(read).lines(), served }
    }

    async fn initialized(version: &str) -> Pipe {
        let mut pipe = Pipe::start();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": version, "capabilities": {}}});
        pipe.send(&format!("{init}\n")).await;
        assert_eq!(pipe.recv().await["result"]["protocolVersion"], version);
        pipe.send("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n").await;
        pipe
    }

    async fn send(&mut self, text: &str) {
        self.send_bytes(text.as_bytes()).await;
    }

    async fn send_bytes(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.expect("write");
        self.writer.flush().await.expect("flush");
    }

    async fn recv_within(&mut self, wait: Duration) -> Option<Value> {
        let line = tokio::time::timeout(wait, self.lines.next_line()).await.ok()?.expect("read")?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("invalid JSON {line:?}: {e}")))
    }

    async fn recv(&mut self) -> Value {
        self.recv_within(Duration::from_secs(10)).await.expect("an answer")
    }
}

fn code(message: &Value) -> i64 {
    message["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {message}"))
}

#[tokio::test]
async fn framing_skips_blank_lines_and_answers_garbage() {
    let mut p = Pipe::initialized("2025-06-18").await;
    p.send("\n   \r\n\t\n").await;
    p.send("{not json\n").await;
    let r = p.recv().await;
    assert_eq!((r["id"].clone(), code(&r)), (Value::Null, -32700));

    p.send("{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"ping\"}\n").await;
    let r = p.recv().await;
    assert_eq!((r["id"].clone(), code(&r)), (json!(7), -32600));

    // Batches are not part of 2025-06-18.
    p.send("[{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}]\n").await;
    assert_eq!(code(&p.recv().await), -32600);

    // CRLF line endings, and a string id echoed exactly.
    p.send("{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"ping\"}\r\n").await;
    assert_eq!(p.recv().await, json!({"jsonrpc": "2.0", "id": "abc", "result": {}}));
    assert!(p.recv_within(Duration::from_millis(200)).await.is_none(), "blank lines are not answered");
}

#[tokio::test]
async fn invalid_utf8_and_oversized_lines_are_refused_and_skipped() {
    let mut p = Pipe::initialized("2025-11-25").await;
    let mut bytes = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"".to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe]);
    bytes.extend_from_slice(b"\"}\n");
    p.send_bytes(&bytes).await;
    let r = p.recv().await;
    assert_eq!((r["id"].clone(), code(&r)), (Value::Null, -32700));

    // Written while the server reads, so the pipe never holds it all.
    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\",\"params\":{{\"x\":\"{}\"}}}}\n",
        "a".repeat(MAX_LINE)
    );
    let (mut writer, mut lines) = (p.writer, p.lines);
    let write = async move {
        writer.write_all(huge.as_bytes()).await.expect("write");
        writer.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n").await.expect("write");
        writer
    };
    let read = async {
        let first = lines.next_line().await.expect("read").expect("a line");
        let second = lines.next_line().await.expect("read").expect("a line");
        (first, second)
    };
    let (_writer, (first, second)) = tokio::join!(write, read);
    let first: Value = serde_json::from_str(&first).unwrap();
    assert_eq!((first["id"].clone(), code(&first)), (Value::Null, -32600));
    assert_eq!(
        serde_json::from_str::<Value>(&second).unwrap(),
        json!({"jsonrpc": "2.0", "id": 3, "result": {}}),
        "one error for the long line, then on"
    );
}

#[tokio::test]
async fn requests_running_at_eof_are_answered() {
    let mut p = Pipe::initialized("2025-11-25").await;
    p.send("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"sleep\",\"params\":{\"ms\":100}}\n").await;
    p.writer.shutdown().await.expect("shutdown");
    assert_eq!(p.recv().await, json!({"jsonrpc": "2.0", "id": 5, "result": {"method": "sleep"}}));
    let served = tokio::time::timeout(Duration::from_secs(5), p.served).await.expect("the server stops");
    served.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn requests_that_outlive_the_grace_are_dropped_at_eof() {
    let mut p = Pipe::initialized("2025-11-25").await;
    p.send("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"sleep\",\"params\":{\"ms\":600000}}\n").await;
    p.writer.shutdown().await.expect("shutdown");
    let started = tokio::time::Instant::now();
    p.served.await.unwrap().unwrap();
    let took = started.elapsed();
    assert!(took >= single::EOF_GRACE && took < single::EOF_GRACE * 2, "stopped after {took:?}");
    assert!(p.lines.next_line().await.unwrap().is_none(), "no answer, just the end of output");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// Whatever a peer writes, the server stays up and keeps answering.
    #[test]
    fn arbitrary_lines_never_break_the_session(lines in proptest::collection::vec("[^\n]{0,200}", 1..8)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let mut p = Pipe::initialized("2025-11-25").await;
            for line in &lines {
                p.send(&format!("{line}\n")).await;
            }
            p.send("{\"jsonrpc\":\"2.0\",\"id\":\"last\",\"method\":\"ping\"}\n").await;
            loop {
                let m = p.recv().await;
                if m["id"] == "last" {
                    assert_eq!(m["result"], json!({}));
                    break;
                }
            }
        });
    }
}
