//! Spawns the built `toolgate-fixture` binary and talks MCP to it over its
//! real stdin/stdout.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

struct Fixture {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Fixture {
    fn spawn(args: &[&str]) -> Fixture {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate-fixture"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn toolgate-fixture");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Fixture { child, stdin, stdout }
    }

    async fn send(&mut self, message: Value) {
        self.stdin.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn recv(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(Duration::from_secs(10), self.stdout.next_line()).await.expect("timeout");
        line.unwrap().map(|l| serde_json::from_str(&l).expect("stdout carries only JSON-RPC"))
    }

    async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        let r = self.recv().await.expect("an answer");
        assert_eq!(r["id"], id, "{r}");
        r
    }
}

#[tokio::test]
async fn initialize_list_and_call() {
    let mut f = Fixture::spawn(&["--name", "spawned", "--tools-page-size", "5"]);
    let init = f
        .request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "spawned");
    f.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;

    let page = f.request(2, "tools/list", json!({})).await;
    assert_eq!(page["result"]["tools"].as_array().unwrap().len(), 5);
    assert!(page["result"]["nextCursor"].is_string());

    let r = f.request(3, "tools/call", json!({"name": "echo", "arguments": {"text": "over a real pipe"}})).await;
    assert_eq!(r["result"], json!({"content": [{"type": "text", "text": "over a real pipe"}]}));

    let who = f.request(4, "tools/call", json!({"name": "fixture_whoami"})).await;
    assert_eq!(who["result"]["structuredContent"]["pid"], f.child.id().unwrap());

    drop(f.stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), f.child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "closing stdin ends the server cleanly: {status}");
}

#[tokio::test]
async fn fixture_crash_exits_without_answering() {
    let mut f = Fixture::spawn(&[]);
    f.request(1, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}})).await;
    f.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "fixture_crash"}})).await;
    assert_eq!(f.recv().await, None, "no answer, just EOF");
    let status = tokio::time::timeout(Duration::from_secs(10), f.child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(3));
}
