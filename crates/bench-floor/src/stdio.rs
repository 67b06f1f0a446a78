//! `toolgate-floor-stdio [--listen ADDR] COMMAND [ARG...]`: the floor of
//! the benchmark's stdio leg. Starts `COMMAND` once (a stdio MCP server,
//! shared by every client), initializes it, then for each POST:
//!
//! - a request: parses the JSON-RPC message, swaps its id for one of its
//!   own, writes it as one line to the child's stdin, and answers the POST
//!   with the child's response (routed back by that id, the client's id
//!   restored) as `application/json`;
//! - `initialize`: answers it itself, with the child's initialize result
//!   and a new `Mcp-Session-Id` (later requests must carry one);
//! - a notification: `notifications/initialized` is answered 202 (the
//!   child had its own); any other goes to the child as it came, 202;
//! - a response from the client: 202, dropped (the floor sends the client
//!   no requests).
//!
//! `DELETE` ends nothing and answers 204; `GET` (a listen stream) 405. One
//! message per POST, no batches. If the child exits, so does the floor.
//! See the crate's documentation.

// Two tasks for the child's pipes; no tracing at all.
#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};
use toolgate_bench_floor as floor;

#[global_allocator]
static ALLOCATOR: toolgate_alloc::Allocator = toolgate_alloc::Allocator;

/// The revision the floor initializes its child with (the benchmark
/// client's).
const VERSION: &str = "2025-11-25";
/// The most bytes of queued lines joined into one write to the child.
const JOIN_LIMIT: usize = 64 * 1024;

type Message = Map<String, Value>;

/// What a POSTed message is.
#[derive(PartialEq, Eq)]
enum Kind {
    Initialize,
    Initialized,
    Other,
    /// No method: a response from the client.
    Response,
}

struct Floor {
    /// The child's initialize result, given to every client.
    initialized: Value,
    /// Lines for the child's stdin, written by one task.
    lines: mpsc::UnboundedSender<Vec<u8>>,
    /// Requests sent to the child, by the floor's id.
    pending: Mutex<HashMap<u64, oneshot::Sender<Message>>>,
    next_id: AtomicU64,
    next_session: AtomicU64,
}

fn main() {
    let (listen, command) = floor::args();
    let Some((program, args)) = command.split_first() else {
        floor::fail("usage: toolgate-floor-stdio [--listen ADDR] COMMAND [ARG...]")
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    runtime.block_on(async {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| floor::fail(&format!("starting {program}: {e}")));
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            floor::fail("the child's pipes")
        };
        let mut stdout = BufReader::new(stdout);
        let initialized = handshake(&mut stdin, &mut stdout).await.unwrap_or_else(|e| floor::fail(&e));
        let (lines, queue) = mpsc::unbounded_channel();
        let floor = Arc::new(Floor {
            initialized,
            lines,
            pending: Mutex::default(),
            next_id: AtomicU64::new(1),
            next_session: AtomicU64::new(1),
        });
        tokio::spawn(write_lines(stdin, queue));
        tokio::spawn(route_answers(stdout, floor.clone()));
        let served = floor::serve(listen, move |req| handle(floor.clone(), req)).await;
        if let Err(e) = served {
            floor::fail(&format!("listening on {listen}: {e}"));
        }
    });
}

/// `initialize` (id 0) and `notifications/initialized`; the result.
async fn handshake(stdin: &mut ChildStdin, stdout: &mut BufReader<ChildStdout>) -> Result<Value, String> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "toolgate-floor-stdio", "version": "1"}}});
    stdin.write_all(format!("{init}\n").as_bytes()).await.map_err(|e| format!("writing initialize: {e}"))?;
    let mut line = String::new();
    let result = loop {
        line.clear();
        if stdout.read_line(&mut line).await.map_err(|e| e.to_string())? == 0 {
            return Err("the child exited before answering initialize".into());
        }
        let mut answer: Value = serde_json::from_str(&line).map_err(|e| format!("{e}: {line}"))?;
        if answer.get("id") == Some(&json!(0)) {
            match answer.get_mut("result") {
                Some(result) => break result.take(),
                None => return Err(format!("initialize failed: {line}")),
            }
        }
    };
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    stdin.write_all(format!("{note}\n").as_bytes()).await.map_err(|e| e.to_string())?;
    Ok(result)
}

/// Writes the queued lines: a lone line as it is, lines queued together in
/// one write (up to about `JOIN_LIMIT` bytes).
async fn write_lines(mut stdin: ChildStdin, mut queue: mpsc::UnboundedReceiver<Vec<u8>>) {
    while let Some(mut out) = queue.recv().await {
        while out.len() < JOIN_LIMIT {
            let Ok(next) = queue.try_recv() else { break };
            out.extend_from_slice(&next);
        }
        if let Err(e) = stdin.write_all(&out).await {
            floor::fail(&format!("writing to the child: {e}"));
        }
    }
}

/// Reads the child's answers and hands each to the request with its id.
async fn route_answers(mut stdout: BufReader<ChildStdout>, floor: Arc<Floor>) {
    let mut line = Vec::new();
    loop {
        line.clear();
        match stdout.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => floor::fail("the child exited"),
            Ok(_) => {}
        }
        // Notifications and requests from the child have no waiting client.
        let Ok(message) = serde_json::from_slice::<Message>(&line) else { continue };
        if message.contains_key("method") {
            continue;
        }
        let Some(id) = message.get("id").and_then(Value::as_u64) else { continue };
        let waiting = floor.pending.lock().expect("pending table").remove(&id);
        if let Some(waiting) = waiting {
            let _ = waiting.send(message);
        }
    }
}

async fn handle(floor: Arc<Floor>, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    match *req.method() {
        Method::POST => {}
        Method::DELETE => return Ok(empty(StatusCode::NO_CONTENT)),
        _ => return Ok(empty(StatusCode::METHOD_NOT_ALLOWED)),
    }
    let has_session = req.headers().contains_key("mcp-session-id");
    let Ok(body) = req.into_body().collect().await.map(|b| b.to_bytes()) else {
        return Ok(empty(StatusCode::BAD_REQUEST));
    };
    let Ok(mut message) = serde_json::from_slice::<Message>(&body) else {
        return Ok(empty(StatusCode::BAD_REQUEST));
    };
    let kind = match message.get("method").and_then(Value::as_str) {
        None => Kind::Response,
        Some("initialize") => Kind::Initialize,
        Some("notifications/initialized") => Kind::Initialized,
        Some(_) => Kind::Other,
    };
    let Some(client_id) = message.get_mut("id") else {
        // A notification.
        if kind != Kind::Initialized {
            send(&floor, &message);
        }
        return Ok(empty(StatusCode::ACCEPTED));
    };
    match kind {
        Kind::Response | Kind::Initialized => return Ok(empty(StatusCode::ACCEPTED)),
        Kind::Initialize => {
            let answer = json!({"jsonrpc": "2.0", "id": client_id.take(), "result": floor.initialized});
            let session = floor.next_session.fetch_add(1, Ordering::Relaxed);
            let mut response = json_response(answer);
            let session = HeaderValue::from_str(&format!("floor-{session}")).expect("a valid header value");
            response.headers_mut().insert("mcp-session-id", session);
            return Ok(response);
        }
        Kind::Other if !has_session => return Ok(empty(StatusCode::BAD_REQUEST)),
        Kind::Other => {}
    }
    let id = floor.next_id.fetch_add(1, Ordering::Relaxed);
    let client_id = std::mem::replace(client_id, Value::from(id));
    let (tx, rx) = oneshot::channel();
    floor.pending.lock().expect("pending table").insert(id, tx);
    send(&floor, &message);
    match rx.await {
        Ok(mut answer) => {
            if let Some(id) = answer.get_mut("id") {
                *id = client_id;
            }
            Ok(json_response(Value::Object(answer)))
        }
        Err(_) => Ok(empty(StatusCode::BAD_GATEWAY)),
    }
}

/// Queues `message` for the child as one line.
fn send(floor: &Floor, message: &Message) {
    let mut line = serde_json::to_vec(message).expect("JSON values serialize");
    line.push(b'\n');
    let _ = floor.lines.send(line);
}

fn json_response(message: Value) -> Response<Full<Bytes>> {
    let body = serde_json::to_vec(&message).expect("JSON values serialize");
    let mut response = Response::new(Full::new(Bytes::from(body)));
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn empty(code: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = code;
    response
}
